/*
 * image_codec.c - PNG in and out through libpng, for the daemon and its
 * tools, and the choice between PNG, JPEG (jpeg_codec.c) and WebP
 * (webp_codec.c) on input.
 *
 * Decoding works from memory (png_set_read_fn over the caller's buffer),
 * because images reach the daemon as base64 inside a request. Before libpng
 * sees the data, the signature and the IHDR chunk are read by hand, so a
 * zero or oversized image is refused with a sentence naming the limit, and
 * nothing is allocated for a decompression bomb that claims 20000x20000
 * pixels in a few bytes of IDAT. libpng enforces the same limits again
 * (png_set_user_limits), and bounds each ancillary chunk and their number
 * (png_set_chunk_malloc_max, png_set_chunk_cache_max).
 *
 * libpng's transformations turn every colour type and bit depth into RGB
 * with 8 or 16 bits a sample (palette and low-bit grey expanded, grey
 * copied to R, G and B, alpha stripped; gamma is ignored: the samples are
 * taken as they are stored). 8-bit samples become v / 255, 16-bit ones
 * v / 65535. A plain image is converted row by row; an interlaced one is
 * read whole (Adam7 fills each row in several passes) and then converted.
 *
 * libpng reports errors by longjmp. Only a small function calls setjmp,
 * and everything it or libpng changes lives in a struct owned by its
 * caller, so no local is clobbered by the jump and the caller frees
 * whatever was allocated on either path. A truncated or corrupt file
 * (short read, CRC or zlib error) comes back as ERR_FORMAT with libpng's
 * words inside a sentence for the user.
 *
 * JPEG is read in jpeg_codec.c, WebP in webp_codec.c; image_decode picks
 * the decoder by the file's first bytes, never by its name.
 *
 * Encoding writes 8-bit RGB into a growing memory buffer, with the same
 * setjmp arrangement.
 *
 * The image itself (struct image) and the terminal view are in
 * util/image.c, which the client shares without libpng.
 */
#include "formats/image_codec.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/codec_internal.h"
#include "proto/errors.h"
#include "util/fileio.h"

/* A PNG file larger than this is not read (64 Mi pixels of 16-bit RGBA,
 * stored uncompressed, take 512 MiB). */
#define PNG_MAX_FILE ((size_t)1 << 30)
/* Ancillary chunks (text, sPLT, unknown) kept at most. */
#define PNG_MAX_CACHED_CHUNKS 64

/* ==== libpng glue shared by both directions ============================ */

/* libpng's own buffers (a row, zlib's window, one ancillary chunk of at
 * most IMAGE_MAX_CHUNK) never need more than this. libpng 1.6.39 allocates
 * an ancillary chunk's stated length before it checks the chunk limit, so
 * without this a 60-byte file claiming a 2 GiB tEXt chunk costs 2 GiB. */
#define PNG_MAX_ALLOC ((size_t)IMAGE_MAX_CHUNK + (1u << 20))

/* The error and memory pointer handed to libpng. */
struct guard {
	char msg[160]; /* libpng's last error message */
	int oom;       /* an allocation failed */
	int too_large; /* ... because it was over PNG_MAX_ALLOC */
};

static void on_error(png_structp png, png_const_charp msg)
{
	struct guard *g = png_get_error_ptr(png);

	snprintf(g->msg, sizeof(g->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
	/* Benign problems (a bad ancillary chunk, which libpng skips). */
}

static png_voidp on_malloc(png_structp png, png_alloc_size_t n)
{
	struct guard *g = png_get_mem_ptr(png);
	void *p = n > PNG_MAX_ALLOC ? NULL : malloc(n);

	if (!p) {
		g->oom = 1;
		g->too_large = n > PNG_MAX_ALLOC;
	}
	return p;
}

static void on_free(png_structp png, png_voidp p) { free(p); }

/* ==== Decoding ========================================================= */

struct decoder {
	struct guard guard; /* first: libpng's error and memory pointer */
	png_structp png;
	png_infop info;
	const uint8_t *data; /* the PNG file in memory */
	size_t size, pos;
	struct image *img; /* the result, freed by the caller on failure */
	uint8_t *row;      /* one row of samples (non-interlaced) */
	uint8_t *pixels;   /* every row of samples (interlaced) */
	png_bytep *rows;   /* pointers into pixels */
	char *err;         /* the caller's message buffer */
	size_t errlen;
};

static void read_fn(png_structp png, png_bytep out, size_t n)
{
	struct decoder *d = png_get_io_ptr(png);

	if (n > d->size - d->pos)
		png_error(png, "unexpected end of file");
	memcpy(out, d->data + d->pos, n);
	d->pos += n;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int chunk_type_ok(const uint8_t *type)
{
	for (int i = 0; i < 4; i++)
		if (!((type[i] >= 'A' && type[i] <= 'Z') ||
		      (type[i] >= 'a' && type[i] <= 'z')))
			return 0;
	return 1;
}

/* Every chunk's stated length against IMAGE_MAX_CHUNK (the image data
 * excepted: IDAT is bounded by what the image's size inflates to), and
 * what follows IEND against the same: libpng skips an unknown chunk of
 * any length, and a text chunk over its limit, without a word, and reads
 * nothing after IEND, so neither would be noticed otherwise. A chunk cut
 * short or with a bad type is left to libpng to name. */
static int check_chunks(const uint8_t *p, size_t size, char *err, size_t errlen)
{
	size_t at = 8;
	while (size - at >= 8) {
		uint32_t len = be32(p + at);
		const uint8_t *type = p + at + 4;
		size_t room = size - at;
		if (!chunk_type_ok(type))
			return 0;
		if (len > IMAGE_MAX_CHUNK && memcmp(type, "IDAT", 4)) {
			codec_set_err(
			    err, errlen,
			    "the PNG's %.4s chunk is %" PRIu32
			    " bytes, over the limit of %u bytes (%u MiB) for "
			    "one chunk: save the image without it",
			    (const char *)type, len, IMAGE_MAX_CHUNK,
			    IMAGE_MAX_CHUNK >> 20);
			return ERR_TOO_LARGE;
		}
		if (room < 12 || len > room - 12)
			return 0;
		at += 12 + (size_t)len;
		if (!memcmp(type, "IEND", 4)) {
			if (size - at <= IMAGE_MAX_CHUNK)
				return 0; /* a few bytes after the end pass */
			codec_set_err(
			    err, errlen,
			    "the PNG has %zu bytes after its end (IEND), over "
			    "the limit of %u bytes (%u MiB) for one chunk: "
			    "save the image again",
			    size - at, IMAGE_MAX_CHUNK, IMAGE_MAX_CHUNK >> 20);
			return ERR_TOO_LARGE;
		}
	}
	return 0;
}

/* The signature and, when it comes first as it must, the IHDR's size;
 * then the chunks' lengths. */
static int check_header(const uint8_t *p, size_t size, char *err, size_t errlen)
{
	static const uint8_t ihdr[8] = { 0, 0, 0, 13, 'I', 'H', 'D', 'R' };

	if (size == 0) {
		codec_set_err(err, errlen, "the PNG is empty (0 bytes)");
		return ERR_FORMAT;
	}
	if (size < 8 && png_sig_cmp(p, 0, size) == 0) {
		codec_set_err(
		    err, errlen,
		    "the PNG is truncated or corrupt (it ends after %zu "
		    "bytes, inside the signature)",
		    size);
		return ERR_FORMAT;
	}
	if (!png_has_signature(p, size)) {
		codec_set_err(err, errlen, "not a PNG file (bad signature)");
		return ERR_FORMAT;
	}
	if (size >= 8 + 8 + 13 && !memcmp(p + 8, ihdr, 8)) {
		int rc = codec_check_size("PNG", be32(p + 16), be32(p + 20),
					  err, errlen);
		if (rc)
			return rc;
	}
	return check_chunks(p, size, err, errlen);
}

static void convert_row(const uint8_t *row, float *dst, int width, int channels,
			int depth)
{
	if (depth == 8) {
		for (int x = 0; x < width; x++, row += channels, dst += 3)
			for (int c = 0; c < 3; c++)
				dst[c] = row[c] / 255.0f;
	} else {
		for (int x = 0; x < width; x++, row += 2 * channels, dst += 3)
			for (int c = 0; c < 3; c++)
				dst[c] = (row[2 * c] << 8 | row[2 * c + 1]) /
					 65535.0f;
	}
}

/* The steps that may longjmp. Returns 0, or a code with d->err set. */
static int decode_steps(struct decoder *d)
{
	png_structp png = d->png;
	png_infop info = d->info;
	png_uint_32 w, h;
	int depth, ctype, interlace, passes, channels, rc;
	size_t rowbytes;

	png_set_read_fn(png, d, read_fn);
	png_set_user_limits(png, IMAGE_MAX_SIDE, IMAGE_MAX_SIDE);
	png_set_chunk_malloc_max(png, IMAGE_MAX_CHUNK);
	png_set_chunk_cache_max(png, PNG_MAX_CACHED_CHUNKS);
	png_read_info(png, info);
	png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
	rc = codec_check_size("PNG", w, h, d->err, d->errlen);
	if (rc)
		return rc;

	if (ctype == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (!(ctype & PNG_COLOR_MASK_COLOR))
		png_set_gray_to_rgb(png);
	png_set_strip_alpha(png);
	passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);

	channels = png_get_channels(png, info);
	depth = png_get_bit_depth(png, info);
	rowbytes = png_get_rowbytes(png, info);
	if ((channels != 3 && channels != 4) || (depth != 8 && depth != 16) ||
	    rowbytes != (size_t)w * channels * depth / 8) {
		codec_set_err(
		    d->err, d->errlen,
		    "this PNG layout is not supported (%d channels of %d "
		    "bits after expansion)",
		    channels, depth);
		return ERR_FORMAT;
	}

	d->img = image_create((int)w, (int)h);
	if (!d->img)
		return ERR_NOMEM;
	if (passes == 1) {
		d->row = malloc(rowbytes);
		if (!d->row)
			return ERR_NOMEM;
		for (png_uint_32 y = 0; y < h; y++) {
			png_read_row(png, d->row, NULL);
			convert_row(d->row, d->img->rgb + (size_t)y * w * 3,
				    (int)w, channels, depth);
		}
	} else {
		d->pixels = malloc(rowbytes * h);
		d->rows = malloc(h * sizeof(*d->rows));
		if (!d->pixels || !d->rows)
			return ERR_NOMEM;
		for (png_uint_32 y = 0; y < h; y++)
			d->rows[y] = d->pixels + (size_t)y * rowbytes;
		png_read_image(png, d->rows);
		for (png_uint_32 y = 0; y < h; y++)
			convert_row(d->rows[y], d->img->rgb + (size_t)y * w * 3,
				    (int)w, channels, depth);
	}
	/* Reads up to IEND, so a file cut after its pixel data or with a
	 * broken CRC further on is refused too. */
	png_read_end(png, NULL);
	return 0;
}

/* Calls setjmp; its only state is *d, which lives in the caller's frame. */
static int decode_guarded(struct decoder *d)
{
	if (setjmp(png_jmpbuf(d->png)))
		return d->guard.too_large ? ERR_TOO_LARGE
		       : d->guard.oom     ? ERR_NOMEM
					  : ERR_FORMAT;
	return decode_steps(d);
}

int png_decode(const void *data, size_t size, struct image **out, char *err,
	       size_t errlen)
{
	struct decoder d;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	rc = check_header(data, size, err, errlen);
	if (rc)
		return rc;

	memset(&d, 0, sizeof(d));
	d.data = data;
	d.size = size;
	d.err = err;
	d.errlen = errlen;
	d.png =
	    png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &d.guard, on_error,
				     on_warning, &d.guard, on_malloc, on_free);
	if (d.png)
		d.info = png_create_info_struct(d.png);
	if (!d.png || !d.info) {
		png_destroy_read_struct(d.png ? &d.png : NULL, NULL, NULL);
		codec_set_err(err, errlen,
			      "out of memory while starting to read the PNG");
		return ERR_NOMEM;
	}
	rc = decode_guarded(&d);
	png_destroy_read_struct(&d.png, &d.info, NULL);
	free(d.row);
	free(d.rows);
	free(d.pixels);
	if (rc) {
		image_destroy(d.img);
		if (rc == ERR_NOMEM)
			codec_set_err(err, errlen,
				      "out of memory while decoding the PNG");
		else if (d.guard.too_large)
			codec_set_err(
			    err, errlen,
			    "a chunk of the PNG is larger than the limit "
			    "of %u bytes",
			    IMAGE_MAX_CHUNK);
		else if (d.guard.msg[0])
			codec_set_err(
			    err, errlen,
			    "the PNG is truncated or corrupt (libpng: %s)",
			    d.guard.msg);
		return rc;
	}
	*out = d.img;
	return 0;
}

int image_decode(const void *data, size_t size, struct image **out, char *err,
		 size_t errlen)
{
	if (jpeg_has_signature(data, size))
		return jpeg_decode(data, size, out, err, errlen);
	if (webp_has_signature(data, size))
		return webp_decode(data, size, out, err, errlen);
	if (size >= 8 && !png_has_signature(data, size)) {
		*out = NULL;
		codec_set_err(err, errlen,
			      "neither a PNG, a JPEG nor a WebP file (by its "
			      "first bytes)");
		return ERR_FORMAT;
	}
	return png_decode(data, size, out, err, errlen);
}

/* The size a PNG's IHDR, a JPEG's frame header or a WebP's header
 * states; 0 when the data holds none where it should. */
int image_stated_size(const void *data, size_t size, uint32_t *w, uint32_t *h)
{
	const uint8_t *p = data;
	*w = *h = 0;
	if (png_has_signature(data, size) && size >= 24) {
		*w = be32(p + 16), *h = be32(p + 20);
		return 1;
	}
	if (webp_has_signature(data, size))
		return webp_stated_size(data, size, w, h);
	if (!jpeg_has_signature(data, size))
		return 0;
	for (size_t at = 2; at + 4 <= size;) {
		if (p[at] != 0xff)
			return 0;
		uint8_t m = p[at + 1];
		size_t len = (size_t)p[at + 2] << 8 | p[at + 3];
		if (m == 0xff) {
			at++;
			continue;
		}
		if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 &&
		    m != 0xcc) { /* a start of frame */
			if (at + 9 > size)
				return 0;
			*h = (uint32_t)p[at + 5] << 8 | p[at + 6];
			*w = (uint32_t)p[at + 7] << 8 | p[at + 8];
			return 1;
		}
		at += 2 + len;
	}
	return 0;
}

int png_load_file(const char *path, struct image **out, char *err,
		  size_t errlen)
{
	return image_load_file(path, out, err, errlen);
}

int image_load_file(const char *path, struct image **out, char *err,
		    size_t errlen)
{
	uint8_t *data;
	size_t size;
	int rc;

	*out = NULL;
	rc = fileio_read_regular(path, &data, &size, PNG_MAX_FILE);
	if (rc == ERR_TOO_LARGE) {
		codec_set_err(
		    err, errlen,
		    "%s is larger than the limit of %zu bytes for an image "
		    "file",
		    path, PNG_MAX_FILE);
		return rc;
	}
	if (rc == ERR_INVALID) {
		codec_set_err(err, errlen,
			      "cannot read %s: it is %s, not a file", path,
			      fileio_kind(path));
		return ERR_IO;
	}
	if (rc) {
		codec_set_err(err, errlen, "cannot read %s: %s", path,
			      strerror(errno));
		return rc == ERR_NOMEM ? rc : ERR_IO;
	}
	rc = image_decode(data, size, out, err, errlen);
	free(data);
	return rc;
}

/* ==== Encoding ========================================================= */

struct encoder {
	struct guard guard; /* first: libpng's error and memory pointer */
	png_structp png;
	png_infop info;
	const struct image *img;
	int depth;    /* 8 or 16 bits a sample */
	int grey;     /* one sample a pixel (R = G = B everywhere) */
	uint8_t *out; /* the PNG being written */
	size_t size, cap;
	uint8_t *row; /* one row of samples */
};

static void write_fn(png_structp png, png_bytep in, size_t n)
{
	struct encoder *e = png_get_io_ptr(png);

	if (n > e->cap - e->size) {
		size_t cap = e->cap ? e->cap : 65536;
		uint8_t *p;

		while (n > cap - e->size) {
			if (cap > SIZE_MAX / 2) {
				e->guard.oom = 1;
				png_error(png,
					  "the PNG is too large for memory");
			}
			cap *= 2;
		}
		p = realloc(e->out, cap);
		if (!p) {
			e->guard.oom = 1;
			png_error(png, "out of memory");
		}
		e->out = p;
		e->cap = cap;
	}
	memcpy(e->out + e->size, in, n);
	e->size += n;
}

static void flush_fn(png_structp png) {}

/* One row of e's image as e's samples (grey takes R). */
static void fill_row(struct encoder *e, const float *src)
{
	int step = e->grey ? 3 : 1;
	size_t n = (size_t)e->img->width * 3;
	uint8_t *row = e->row;
	for (size_t i = 0; i < n; i += step) {
		if (e->depth == 8) {
			*row++ = image_byte(src[i]);
			continue;
		}
		float v = src[i] > 0 ? src[i] : 0; /* NaN: 0 */
		unsigned u = v < 1 ? (unsigned)lrintf(v * 65535.0f) : 65535;
		*row++ = (uint8_t)(u >> 8);
		*row++ = (uint8_t)u;
	}
}

static int encode_steps(struct encoder *e)
{
	const struct image *img = e->img;

	png_set_write_fn(e->png, e, write_fn, flush_fn);
	png_set_IHDR(e->png, e->info, (png_uint_32)img->width,
		     (png_uint_32)img->height, e->depth,
		     e->grey ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	/* zlib's level 3, not its default 6: much quicker for a file a
	 * little larger (docs/BENCHMARKS.md, "Datasets as packs"), and a
	 * dataset's outputs are encoded one after the other on the device's
	 * thread */
	png_set_compression_level(e->png, 3);
	png_write_info(e->png, e->info);
	for (int y = 0; y < img->height; y++) {
		fill_row(e, img->rgb + (size_t)y * img->width * 3);
		png_write_row(e->png, e->row);
	}
	png_write_end(e->png, NULL);
	return 0;
}

static int encode_guarded(struct encoder *e)
{
	if (setjmp(png_jmpbuf(e->png)))
		return e->guard.oom ? ERR_NOMEM : ERR_INVALID;
	return encode_steps(e);
}

static int encode(const struct image *img, int depth, int grey, uint8_t **data,
		  size_t *size)
{
	struct encoder e;
	int rc;

	*data = NULL;
	*size = 0;
	if (!img || !img->rgb || img->width <= 0 || img->height <= 0 ||
	    img->width > IMAGE_MAX_SIDE || img->height > IMAGE_MAX_SIDE)
		return ERR_INVALID;
	memset(&e, 0, sizeof(e));
	e.img = img;
	e.depth = depth;
	e.grey = grey;
	e.row = malloc((size_t)img->width * 3 * (depth / 8));
	if (!e.row)
		return ERR_NOMEM;
	e.png =
	    png_create_write_struct_2(PNG_LIBPNG_VER_STRING, &e.guard, on_error,
				      on_warning, &e.guard, on_malloc, on_free);
	if (e.png)
		e.info = png_create_info_struct(e.png);
	if (!e.png || !e.info) {
		png_destroy_write_struct(e.png ? &e.png : NULL, NULL);
		free(e.row);
		return ERR_NOMEM;
	}
	rc = encode_guarded(&e);
	png_destroy_write_struct(&e.png, &e.info);
	free(e.row);
	if (rc) {
		free(e.out);
		return rc;
	}
	*data = e.out;
	*size = e.size;
	return 0;
}

int png_encode(const struct image *img, uint8_t **data, size_t *size)
{
	return encode(img, 8, 0, data, size);
}

int png_encode_exact(const struct image *img, uint8_t **data, size_t *size)
{
	int exact8 = 1, grey = 1;
	size_t n = img && img->rgb ? (size_t)img->width * img->height : 0;
	for (size_t i = 0; i < n && (exact8 || grey); i++) {
		const float *px = img->rgb + 3 * i;
		grey &= px[0] == px[1] && px[1] == px[2];
		for (int c = 0; c < 3; c++)
			exact8 &= image_byte(px[c]) / 255.0f == px[c];
	}
	return encode(img, exact8 ? 8 : 16, grey, data, size);
}

int png_save_file(const struct image *img, const char *path)
{
	uint8_t *data;
	size_t size;
	int rc;

	rc = png_encode(img, &data, &size);
	if (rc)
		return rc;
	rc = fileio_write_atomic(path, data, size, 0644);
	free(data);
	return rc;
}
