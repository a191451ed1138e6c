/*
 * codec_internal.h - what the PNG (image_codec.c), JPEG (jpeg_codec.c)
 * and WebP (webp_codec.c) decoders share: the sentence in the caller's buffer and the size check
 * against util/image.h's limits. Not for use outside daemon/formats/.
 */
#ifndef VKINR_CODEC_INTERNAL_H
#define VKINR_CODEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* printf into err (errlen bytes; nothing when err is NULL). */
void codec_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 0 when a w x h image of the given format ("PNG", "JPEG", "WebP") is within the
 * limits; else ERR_FORMAT (no pixels) or ERR_TOO_LARGE, with the sentence
 * naming the limit in err. */
int codec_check_size(const char *format, uint32_t w, uint32_t h, char *err,
		     size_t errlen);

#endif
