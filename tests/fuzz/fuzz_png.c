/*
 * fuzz_png.c - libFuzzer target: image_decode, the loader every image a
 * client submits goes through (daemon/formats/image_codec.c): PNG, and JPEG through
 * libjpeg with the EXIF orientation read by hand.
 *
 * A decoded image must have the size it claims, inside the documented
 * limits, and every sample in [0, 1]; anything else is refused with a
 * sentence. Either way nothing may leak or be read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "formats/image_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image *img = NULL;
	char err[512];
	int rc = image_decode(data, size, &img, err, sizeof(err));
	if (rc) {
		/* a refusal always says why */
		if (img || (rc != ERR_NOMEM && !err[0]))
			abort();
		return 0;
	}
	if (!img || img->width <= 0 || img->height <= 0 ||
	    img->width > IMAGE_MAX_SIDE || img->height > IMAGE_MAX_SIDE ||
	    (size_t)img->width * img->height > IMAGE_MAX_PIXELS)
		abort();
	size_t n = (size_t)img->width * img->height * 3;
	for (size_t i = 0; i < n; i++)
		if (!(img->rgb[i] >= 0.0f && img->rgb[i] <= 1.0f))
			abort();
	image_destroy(img);
	return 0;
}
