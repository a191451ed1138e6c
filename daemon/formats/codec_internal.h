/*
 * codec_internal.h - what the PNG (image_codec.c), JPEG (jpeg_codec.c)
 * and WebP (webp_codec.c) decoders share: the sentence in the caller's
 * buffer and the size check against util/image.h's limits
 * (codec_common.c), and the EXIF orientation (orient.c). Not for use
 * outside daemon/formats/.
 */
#ifndef VKINR_CODEC_INTERNAL_H
#define VKINR_CODEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/image.h"

/* printf into err (errlen bytes; nothing when err is NULL). */
void codec_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 0 when a w x h image of the given format ("PNG", "JPEG", "WebP") is within the
 * limits; else ERR_FORMAT (no pixels) or ERR_TOO_LARGE, with the sentence
 * naming the limit in err. */
int codec_check_size(const char *format, uint32_t w, uint32_t h, char *err,
		     size_t errlen);

/* EXIF data bigger than this is not read (a JPEG's APP1 holds 64 KiB) */
#define ORIENT_EXIF_MAX (1u << 20)

/* The EXIF orientation, 1 to 8 (1: as stored), of EXIF data: "Exif\0\0"
 * and the TIFF data, or the TIFF data alone; 1 when there is none or it
 * cannot be read. */
int orient_from_exif(const uint8_t *data, size_t size);
/* The w x h 8-bit RGB pixels as an image turned upright for orientation
 * o (h x w for 5 to 8); NULL when out of memory. */
struct image *orient_image(const uint8_t *rgb, int w, int h, int o);

#endif
