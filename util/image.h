/*
 * image.h - RGB images in memory, shared by the daemon and the client.
 *
 * An image is float RGB in [0, 1], row-major, 3 floats a pixel: what the
 * model is fitted to and what a reconstruction is. The PNG coders are the
 * daemon's (daemon/formats/image_codec.h, libpng) and the client's (client/pictures/png8.h, zlib);
 * the limits below bound what either accepts.
 */
#ifndef VKINR_UTIL_IMAGE_H
#define VKINR_UTIL_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Documented limits (README, man page). */
#define IMAGE_MAX_SIDE 16384         /* width and height, pixels */
#define IMAGE_MAX_PIXELS (64u << 20) /* width * height */
#define IMAGE_MAX_CHUNK (8u << 20)   /* one ancillary chunk, bytes */

struct image {
	int width, height;
	float *rgb; /* width * height * 3 floats in [0, 1] */
};

/* Allocates an image of the given size, zeroed. NULL when out of memory. */
struct image *image_create(int width, int height);
/* Frees the image; image_destroy(NULL) does nothing. */
void image_destroy(struct image *img);

/* img scaled down to width x height (each no larger than img's): every
 * output pixel the mean of the source area it covers (box filter with
 * fractional edges). NULL when out of memory or asked to enlarge. */
struct image *image_scale_down(const struct image *img, int width, int height);

/* v in [0, 1] as an 8-bit sample: clamped (NaN is 0), rounded. */
uint8_t image_byte(float v);

/* Quick check of the 8-byte PNG signature, for clients that only route. */
int png_has_signature(const void *data, size_t size);
/* JPEG's start of image (FF D8 FF). */
int jpeg_has_signature(const void *data, size_t size);
/* WebP's RIFF header ("RIFF", a size, "WEBP"). */
int webp_has_signature(const void *data, size_t size);
/* The length of name's image suffix (".png", ".jpg", ".jpeg", ".webp",
 * any case), or 0: how a folder's images are told from its other files. */
size_t image_suffix_len(const char *name);
/* Whether name is an export's reconstruction, NAME.recon.png (any case):
 * a folder's such files are left out of a submission or a --fit DIR, so
 * that exporting into the folder of the photos and submitting it again
 * does not fit the reconstructions too (a file named alone is taken). */
int image_is_recon_name(const char *name);

/*
 * Prints up to IMAGE_PRINT_MAX images side by side on a 24-bit colour
 * terminal, two pixel rows a character row ("▀", foreground the upper
 * pixel, background the lower), each scaled down (box mean) to at most
 * cols columns: `vkinrctl preview` and the demo's pngshow.
 */
#define IMAGE_PRINT_MAX 4
void image_print_blocks(FILE *out, const struct image *const *imgs, int n,
			int cols);

#endif
