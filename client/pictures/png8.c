/*
 * png8.c - see png8.h. A PNG is the 8-byte signature, then chunks (length,
 * type, data, CRC-32 of type and data): IHDR first, the zlib stream split
 * over IDAT chunks, IEND last. Decoding checks each CRC, joins the IDATs,
 * inflates them into rows of one filter byte and the samples, and undoes
 * each row's filter (none, sub, up, average, Paeth) against the row above.
 * The stream must inflate to exactly the size IHDR implies, so a short or
 * padded stream is refused, and the size is checked against the limits of
 * util/image.h before anything is allocated for it.
 *
 * Encoding writes every row unfiltered and compresses them at zlib's
 * default level: plots are small, flat images that compress well anyway.
 */
#include "pictures/png8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "proto/errors.h"

static int fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ==== Decoding ========================================================= */

/* What IHDR says. */
struct png8_header {
	uint32_t width, height;
	int channels;     /* 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA */
	int sample_bytes; /* 1 or 2 */
};

static int read_ihdr(const uint8_t *d, uint32_t len, struct png8_header *h,
		     char *err, size_t errlen)
{
	static const int channels_of[7] = { 1, 0, 3, 0, 2, 0, 4 };
	int depth, colour;

	if (len != 13)
		return fail(ERR_FORMAT, err, errlen,
			    "the PNG's header is "
			    "%u bytes, not 13",
			    (unsigned)len);
	h->width = be32(d);
	h->height = be32(d + 4);
	depth = d[8];
	colour = d[9];
	if (h->width == 0 || h->height == 0)
		return fail(ERR_FORMAT, err, errlen,
			    "the PNG says it has no "
			    "pixels (%ux%u)",
			    (unsigned)h->width, (unsigned)h->height);
	if (h->width > IMAGE_MAX_SIDE || h->height > IMAGE_MAX_SIDE ||
	    (uint64_t)h->width * h->height > IMAGE_MAX_PIXELS)
		return fail(ERR_TOO_LARGE, err, errlen,
			    "the PNG is %ux%u "
			    "pixels, over the limit of %d a side and %u in "
			    "all",
			    (unsigned)h->width, (unsigned)h->height,
			    IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS);
	if (colour > 6 || !channels_of[colour] || (depth != 8 && depth != 16) ||
	    d[10] != 0 || d[11] != 0 || d[12] != 0)
		return fail(ERR_FORMAT, err, errlen,
			    "the PNG is of a form "
			    "vkinrctl does not read (colour type %d, %d bits, "
			    "interlace %d): the daemon sends 8-bit RGB",
			    colour, depth, d[12]);
	h->channels = channels_of[colour];
	h->sample_bytes = depth / 8;
	return 0;
}

/* Walks the chunks; returns the joined IDAT data (malloc'ed). */
static int read_chunks(const uint8_t *p, size_t size, struct png8_header *h,
		       uint8_t **idat, size_t *idat_size, char *err,
		       size_t errlen)
{
	size_t at = 8, have = 0;
	int seen_header = 0, rc = 0;
	uint8_t *joined = NULL;

	while (!rc) {
		if (size - at < 12) {
			rc = fail(ERR_FORMAT, err, errlen,
				  "the PNG is cut "
				  "short (no IEND chunk)");
			break;
		}
		uint32_t len = be32(p + at);
		const uint8_t *type = p + at + 4, *data = p + at + 8;
		if (len > size - at - 12) {
			rc = fail(ERR_FORMAT, err, errlen,
				  "the PNG is cut "
				  "short (a chunk runs past its end)");
			break;
		}
		if ((uint32_t)crc32(0, type, len + 4) != be32(data + len)) {
			rc = fail(ERR_FORMAT, err, errlen,
				  "the PNG is corrupt "
				  "(a chunk's CRC does not match)");
			break;
		}
		at += 12 + (size_t)len;
		if (!seen_header) {
			if (memcmp(type, "IHDR", 4))
				rc = fail(ERR_FORMAT, err, errlen,
					  "the PNG "
					  "does not start with its header");
			else
				rc = read_ihdr(data, len, h, err, errlen);
			seen_header = 1;
		} else if (!memcmp(type, "IDAT", 4)) {
			uint8_t *more = realloc(joined, have + len + 1);
			if (!more) {
				rc = ERR_NOMEM;
				break;
			}
			joined = more;
			memcpy(joined + have, data, len);
			have += len;
		} else if (!memcmp(type, "IEND", 4)) {
			break;
		} else if (!memcmp(type, "PLTE", 4) || !(type[0] & 0x20)) {
			/* a critical chunk this reader does not know */
			rc = fail(ERR_FORMAT, err, errlen,
				  "the PNG holds a "
				  "%.4s chunk, which vkinrctl does not read",
				  (const char *)type);
		}
	}
	if (!rc && !joined)
		rc = fail(ERR_FORMAT, err, errlen,
			  "the PNG holds no image "
			  "data");
	if (rc) {
		free(joined);
		return rc;
	}
	*idat = joined;
	*idat_size = have;
	return 0;
}

static uint8_t paeth(uint8_t a, uint8_t b, uint8_t c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undoes one row's filter in place; prior is the row above (unfiltered)
 * or NULL for the first row. */
static int unfilter(int filter, uint8_t *row, const uint8_t *prior, size_t len,
		    size_t bpp)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t a = i >= bpp ? row[i - bpp] : 0;
		uint8_t b = prior ? prior[i] : 0;
		uint8_t c = prior && i >= bpp ? prior[i - bpp] : 0;
		switch (filter) {
		case 0:
			break;
		case 1:
			row[i] = (uint8_t)(row[i] + a);
			break;
		case 2:
			row[i] = (uint8_t)(row[i] + b);
			break;
		case 3:
			row[i] = (uint8_t)(row[i] + ((a + b) >> 1));
			break;
		case 4:
			row[i] = (uint8_t)(row[i] + paeth(a, b, c));
			break;
		default:
			return ERR_FORMAT;
		}
	}
	return 0;
}

static float sample(const uint8_t *p, int bytes)
{
	return bytes == 1 ? p[0] / 255.0f
			  : (float)((p[0] << 8) | p[1]) / 65535.0f;
}

/* The unfiltered rows as float RGB (grey copied, alpha dropped). */
static void to_rgb(const uint8_t *raw, const struct png8_header *h,
		   size_t stride, struct image *img)
{
	int bpp = h->channels * h->sample_bytes, sb = h->sample_bytes;
	for (uint32_t y = 0; y < h->height; y++) {
		const uint8_t *row = raw + y * stride + 1;
		float *dst = img->rgb + (size_t)y * h->width * 3;
		for (uint32_t x = 0; x < h->width; x++, dst += 3) {
			const uint8_t *px = row + (size_t)x * bpp;
			if (h->channels <= 2) {
				dst[0] = dst[1] = dst[2] = sample(px, sb);
			} else {
				for (int c = 0; c < 3; c++)
					dst[c] = sample(px + c * sb, sb);
			}
		}
	}
}

int png8_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen)
{
	struct png8_header h = { 0 };
	uint8_t *idat = NULL, *raw = NULL;
	size_t idat_size, stride, bpp;
	uLongf raw_size;
	int rc;

	*out = NULL;
	if (!png_has_signature(data, size))
		return fail(ERR_FORMAT, err, errlen,
			    "not a PNG (its first "
			    "bytes are not the PNG signature)");
	rc = read_chunks(data, size, &h, &idat, &idat_size, err, errlen);
	if (rc)
		return rc;
	bpp = (size_t)h.channels * h.sample_bytes;
	stride = 1 + bpp * h.width;
	raw_size = (uLongf)(stride * h.height);
	if (!(raw = malloc(raw_size + 1))) {
		free(idat);
		return ERR_NOMEM;
	}
	/* one byte of room: a stream that inflates to more is refused */
	uLongf got = raw_size + 1;
	int z = uncompress(raw, &got, idat, (uLong)idat_size);
	free(idat);
	if (z != Z_OK || got != raw_size) {
		free(raw);
		return z == Z_MEM_ERROR
			   ? ERR_NOMEM
			   : fail(ERR_FORMAT, err, errlen,
				  "the PNG's image data "
				  "is corrupt or of the wrong size");
	}
	for (uint32_t y = 0; y < h.height && !rc; y++) {
		uint8_t *row = raw + y * stride;
		rc = unfilter(row[0], row + 1, y ? row + 1 - stride : NULL,
			      stride - 1, bpp);
	}
	if (rc) {
		free(raw);
		return fail(ERR_FORMAT, err, errlen,
			    "the PNG names a row "
			    "filter that does not exist");
	}
	struct image *img = image_create((int)h.width, (int)h.height);
	if (img)
		to_rgb(raw, &h, stride, img);
	free(raw);
	if (!img)
		return ERR_NOMEM;
	*out = img;
	return 0;
}

/* ==== Encoding ========================================================= */

/* Appends one chunk at p; returns the bytes written. */
static size_t put_chunk(uint8_t *p, const char *type, const uint8_t *data,
			uint32_t len)
{
	put_be32(p, len);
	memcpy(p + 4, type, 4);
	if (len)
		memmove(p + 8, data, len);
	put_be32(p + 8 + len, (uint32_t)crc32(0, p + 4, len + 4));
	return 12 + (size_t)len;
}

int png8_encode(const struct image *img, uint8_t **data, size_t *size)
{
	size_t stride = 1 + (size_t)img->width * 3;
	size_t raw_size = stride * (size_t)img->height;
	uint8_t *raw = malloc(raw_size), *png = NULL, ihdr[13];
	uLongf packed;

	if (!raw)
		return ERR_NOMEM;
	for (int y = 0; y < img->height; y++) {
		uint8_t *row = raw + (size_t)y * stride;
		const float *src = img->rgb + (size_t)y * img->width * 3;
		row[0] = 0; /* no filter */
		for (size_t i = 0; i < (size_t)img->width * 3; i++)
			row[1 + i] = image_byte(src[i]);
	}
	packed = compressBound((uLong)raw_size);
	/* signature, IHDR, IDAT and IEND around the compressed rows */
	png = malloc(8 + 25 + 12 + packed + 12);
	if (!png ||
	    compress(png + 8 + 25 + 8, &packed, raw, (uLong)raw_size) != Z_OK) {
		free(raw);
		free(png);
		return ERR_NOMEM;
	}
	free(raw);
	memcpy(png, "\x89PNG\r\n\x1a\n", 8);
	put_be32(ihdr, (uint32_t)img->width);
	put_be32(ihdr + 4, (uint32_t)img->height);
	ihdr[8] = 8; /* bits a sample */
	ihdr[9] = 2; /* RGB */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	size_t at = 8;
	at += put_chunk(png + at, "IHDR", ihdr, 13);
	at += put_chunk(png + at, "IDAT", png + at + 8, (uint32_t)packed);
	at += put_chunk(png + at, "IEND", NULL, 0);
	*data = png;
	*size = at;
	return 0;
}
