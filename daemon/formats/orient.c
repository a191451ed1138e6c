/*
 * orient.c - the EXIF orientation of a photo, read by libexif (Debian's),
 * and the decoded pixels turned upright as it says: what a camera or a
 * phone writes when it stores the sensor's rows as they came and notes
 * how the picture should be shown. The JPEG decoder passes its APP1
 * marker (which starts "Exif\0\0"), the WebP decoder its EXIF chunk (the
 * TIFF data alone, as the WebP container specifies, or with that prefix,
 * as some writers put it).
 *
 * Anything libexif cannot read, a tag that is not one SHORT or a value
 * outside 1 to 8 is orientation 1: the pixels as stored. libexif is told
 * not to "fix" the data it reads (which would add default tags).
 */
#include <stdlib.h>
#include <string.h>

#include <libexif/exif-data.h>

#include "formats/codec_internal.h"

int orient_from_exif(const uint8_t *data, size_t size)
{
	static const uint8_t header[6] = { 'E', 'x', 'i', 'f', 0, 0 };
	uint8_t *copy = NULL;
	int o = 1;

	if (!data || size < 8 || size > ORIENT_EXIF_MAX)
		return 1;
	if (memcmp(data, header, 6)) { /* TIFF alone: libexif wants the
					* "Exif\0\0" header first */
		if (!(copy = malloc(size + 6)))
			return 1;
		memcpy(copy, header, 6);
		memcpy(copy + 6, data, size);
		data = copy, size += 6;
	}
	ExifData *ed = exif_data_new();
	if (ed) {
		exif_data_unset_option(ed,
				       EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
		exif_data_load_data(ed, data, (unsigned)size);
		ExifEntry *e = exif_content_get_entry(ed->ifd[EXIF_IFD_0],
						      EXIF_TAG_ORIENTATION);
		if (e && e->format == EXIF_FORMAT_SHORT && e->components == 1 &&
		    e->data && e->size >= 2) {
			int v = exif_get_short(e->data,
					       exif_data_get_byte_order(ed));
			o = v >= 1 && v <= 8 ? v : 1;
		}
		exif_data_unref(ed);
	}
	free(copy);
	return o;
}

/* Source pixel of output pixel (x, y) of the turned image, for EXIF
 * orientation o of a w x h source. */
static size_t source_of(int o, int x, int y, int w, int h)
{
	int sx, sy;
	switch (o) {
	case 2:
		sx = w - 1 - x, sy = y;
		break; /* mirrored */
	case 3:
		sx = w - 1 - x, sy = h - 1 - y;
		break; /* turned 180 */
	case 4:
		sx = x, sy = h - 1 - y;
		break; /* flipped */
	case 5:
		sx = y, sy = x;
		break; /* transposed */
	case 6:
		sx = y, sy = h - 1 - x;
		break; /* turned 90 right */
	case 7:
		sx = w - 1 - y, sy = h - 1 - x;
		break; /* transversed */
	case 8:
		sx = w - 1 - y, sy = x;
		break; /* turned 90 left */
	default:
		sx = x, sy = y;
	}
	return (size_t)sy * (size_t)w + (size_t)sx;
}

struct image *orient_image(const uint8_t *rgb, int w, int h, int o)
{
	struct image *img = o >= 5 ? image_create(h, w) : image_create(w, h);
	if (!img)
		return NULL;
	for (int y = 0; y < img->height; y++)
		for (int x = 0; x < img->width; x++) {
			const uint8_t *src = rgb + 3 * source_of(o, x, y, w, h);
			float *dst =
			    img->rgb + 3 * ((size_t)y * img->width + x);
			for (int k = 0; k < 3; k++)
				dst[k] = src[k] / 255.0f;
		}
	return img;
}
