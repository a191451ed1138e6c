/*
 * png8.h - the PNG the client reads and writes, through zlib alone, so
 * that vkinrctl does not link libpng.
 *
 * png8_decode reads what the daemon sends (a reconstruction: 8-bit RGB)
 * and, more widely, any non-interlaced grey, grey+alpha, RGB or RGBA PNG
 * of 8 or 16 bits a sample; alpha is dropped. Palette, low-bit and
 * interlaced images are refused with a sentence: the daemon never sends
 * them. png8_encode writes 8-bit RGB.
 */
#ifndef VKINR_PNG8_H
#define VKINR_PNG8_H

#include <stddef.h>
#include <stdint.h>

#include "util/image.h"

/* 0 and *out, or ERR_FORMAT / ERR_TOO_LARGE / ERR_NOMEM with a sentence
 * in err (errlen bytes, always NUL-terminated). */
int png8_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen);
/* An 8-bit RGB PNG in a malloc'ed buffer. 0 or ERR_NOMEM. */
int png8_encode(const struct image *img, uint8_t **data, size_t *size);

#endif
