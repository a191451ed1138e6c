/*
 * codec_common.c - what the PNG, JPEG and WebP decoders share
 * (codec_internal.h): the sentence written into the caller's buffer and
 * the image's size checked against util/image.h's limits. A file of its
 * own, so that the decoders call down into it and never each other.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "proto/errors.h"
#include "util/image.h"
#include "formats/codec_internal.h"

void codec_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int codec_check_size(const char *format, uint32_t w, uint32_t h, char *err,
		     size_t errlen)
{
	if (w == 0 || h == 0) {
		codec_set_err(
		    err, errlen,
		    "the %s says it is %" PRIu32 "x%" PRIu32
		    " pixels: an image needs a width and a height of at "
		    "least 1",
		    format, w, h);
		return ERR_FORMAT;
	}
	if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE) {
		codec_set_err(
		    err, errlen,
		    "the image is %" PRIu32 "x%" PRIu32
		    " pixels, over the limit of %d pixels a side: scale it "
		    "down",
		    w, h, IMAGE_MAX_SIDE);
		return ERR_TOO_LARGE;
	}
	if ((uint64_t)w * h > IMAGE_MAX_PIXELS) {
		codec_set_err(
		    err, errlen,
		    "the image is %" PRIu32 "x%" PRIu32
		    " = %llu pixels, over the limit of %u pixels (%u Mi): "
		    "scale it down",
		    w, h, (unsigned long long)w * h, IMAGE_MAX_PIXELS,
		    IMAGE_MAX_PIXELS >> 20);
		return ERR_TOO_LARGE;
	}
	return 0;
}
