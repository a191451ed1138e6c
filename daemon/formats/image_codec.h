/*
 * image_codec.h - PNG in and out through libpng, JPEG in through libjpeg,
 * WebP in through libwebp, for the daemon and its tools (struct image itself is in util/image.h, which
 * the client shares). PNG is the only format written.
 *
 * The loader accepts every PNG colour type and bit depth (grey,
 * grey+alpha, palette, RGB, RGBA; 1 to 16 bits; interlaced), expands to
 * RGB and drops alpha. It refuses, with a sentence in err, a file that is
 * not a PNG, is corrupt or truncated, or exceeds the limits of
 * util/image.h (also enforced inside libpng through its user and chunk
 * limits, so a decompression bomb is stopped before it is inflated).
 * The JPEG loader (jpeg_codec.c) reads baseline and progressive, grey and
 * colour files, turned upright as their EXIF orientation says. It refuses
 * CMYK and arithmetic coding, a file shorter than its stated size needs
 * (2 bits a block sequential, 1 progressive), more than 100 scans, and
 * whatever libjpeg warns of as corrupt or truncated. The WebP loader
 * (webp_codec.c) reads lossy and lossless stills, alpha dropped, turned
 * upright as an EXIF chunk's orientation says; it
 * refuses animations, a lossy file shorter than one bit a macroblock, a
 * lossless one of more than 1024 pixels a byte, and whatever libwebp
 * finds truncated or corrupt.
 */
#ifndef VKINR_IMAGE_CODEC_H
#define VKINR_IMAGE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/image.h"

/*
 * Decodes a PNG held in memory. Returns 0 and sets *out, or a negative
 * error code (ERR_FORMAT, ERR_TOO_LARGE, ERR_NOMEM) with a sentence for the
 * user in err (errlen bytes, always NUL-terminated).
 */
int png_decode(const void *data, size_t size, struct image **out, char *err,
	       size_t errlen);
/* The same for a JPEG (errors as png_decode's). */
int jpeg_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen);
/* The same for a WebP. */
int webp_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen);
/* A PNG, a JPEG or a WebP, told apart by the first bytes (not by a file
 * name). */
int image_decode(const void *data, size_t size, struct image **out, char *err,
		 size_t errlen);
/* Width and height as a PNG's IHDR, a JPEG's frame header or a WebP's
 * header states them (before any decoding; for messages naming a limit).
 * 1 when found. */
int image_stated_size(const void *data, size_t size, uint32_t *w, uint32_t *h);
/* The same for a WebP alone (webp_codec.c). */
int webp_stated_size(const void *data, size_t size, uint32_t *w, uint32_t *h);
/* Reads and decodes a PNG, JPEG or WebP file; ERR_IO with the reason when it
 * can't (a FIFO, a device or a folder is refused at once, never waited
 * on). png_load_file is the older name, kept for its callers. */
int image_load_file(const char *path, struct image **out, char *err,
		    size_t errlen);
int png_load_file(const char *path, struct image **out, char *err,
		  size_t errlen);

/*
 * Encodes an image as an 8-bit RGB PNG (values clamped to [0, 1], rounded)
 * into a malloc'ed buffer. Returns 0 or a negative error code.
 */
int png_encode(const struct image *img, uint8_t **data, size_t *size);
/*
 * Encodes an image that came from a decoder so that decoding it again
 * gives the same floats: 8 bits a sample when every sample is one of
 * the 256 values v / 255, else 16 (v / 65535, what a 16-bit file decodes
 * to); grey when R = G = B everywhere, else RGB. What a job keeps of the
 * image it was submitted with.
 */
int png_encode_exact(const struct image *img, uint8_t **data, size_t *size);
/* Encodes and writes atomically (temp file, fsync, rename). */
int png_save_file(const struct image *img, const char *path);

#endif
