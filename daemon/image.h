/*
 * image.h - RGB images in memory, and PNG in and out through libpng.
 *
 * An image is float RGB in [0, 1], row-major, 3 floats a pixel: what the
 * model is fitted to and what a reconstruction is. The loader accepts every
 * PNG colour type and bit depth (grey, grey+alpha, palette, RGB, RGBA; 1 to
 * 16 bits; interlaced), expands to RGB and drops alpha. It refuses, with a
 * sentence in err, a file that is not a PNG, is corrupt or truncated, or
 * exceeds the limits below (also enforced inside libpng through its user and
 * chunk limits, so a decompression bomb is stopped before it is inflated).
 */
#ifndef VKINR_IMAGE_H
#define VKINR_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Documented limits (README, man page). */
#define IMAGE_MAX_SIDE 16384            /* width and height, pixels */
#define IMAGE_MAX_PIXELS (64u << 20)    /* width * height */
#define IMAGE_MAX_CHUNK (8u << 20)      /* one ancillary chunk, bytes */

struct image {
	int width, height;
	float *rgb; /* width * height * 3 floats in [0, 1] */
};

/* Allocates an image of the given size, zeroed. NULL when out of memory. */
struct image *image_create(int width, int height);
/* Frees the image; image_destroy(NULL) does nothing. */
void image_destroy(struct image *img);

/*
 * Decodes a PNG held in memory. Returns 0 and sets *out, or a negative
 * error code (ERR_FORMAT, ERR_TOO_LARGE, ERR_NOMEM) with a sentence for the
 * user in err (errlen bytes, always NUL-terminated).
 */
int png_decode(const void *data, size_t size, struct image **out, char *err,
	       size_t errlen);
/* Reads and decodes a PNG file; ERR_IO with the reason when it can't. */
int png_load_file(const char *path, struct image **out, char *err,
		  size_t errlen);

/*
 * Encodes an image as an 8-bit RGB PNG (values clamped to [0, 1], rounded)
 * into a malloc'ed buffer. Returns 0 or a negative error code.
 */
int png_encode(const struct image *img, uint8_t **data, size_t *size);
/* Encodes and writes atomically (temp file, fsync, rename). */
int png_save_file(const struct image *img, const char *path);

/* Quick check of the 8-byte PNG signature, for clients that only route. */
int png_has_signature(const void *data, size_t size);

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
