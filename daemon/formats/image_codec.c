/*
 * image_codec.c - PNG in and out through libpng, for the daemon and its tools.
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
 * JPEG is read through libjpeg (libjpeg-turbo on Debian) with the same
 * care: the frame header's size is checked against the limits before any
 * pixel is decoded, libjpeg's memory is capped, and its errors come back by
 * longjmp as a sentence. Grey and YCbCr frames come out as RGB; CMYK ones
 * are refused. The EXIF orientation tag (APP1) is honoured, so a photo
 * taken upright on a phone is fitted upright: the decoded pixels are
 * mirrored or turned as the tag says. image_decode picks the decoder by
 * the file's first bytes, never by its name.
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
#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

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

static int check_size(uint32_t w, uint32_t h, char *err, size_t errlen)
{
	if (w == 0 || h == 0) {
		set_err(err, errlen,
			"the PNG says it is %" PRIu32 "x%" PRIu32
			" pixels: an image needs a width and a height of at "
			"least 1",
			w, h);
		return ERR_FORMAT;
	}
	if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE) {
		set_err(err, errlen,
			"the image is %" PRIu32 "x%" PRIu32
			" pixels, over the limit of %d pixels a side: scale it "
			"down",
			w, h, IMAGE_MAX_SIDE);
		return ERR_TOO_LARGE;
	}
	if ((uint64_t)w * h > IMAGE_MAX_PIXELS) {
		set_err(err, errlen,
			"the image is %" PRIu32 "x%" PRIu32
			" = %llu pixels, over the limit of %u pixels (%u Mi): "
			"scale it down",
			w, h, (unsigned long long)w * h, IMAGE_MAX_PIXELS,
			IMAGE_MAX_PIXELS >> 20);
		return ERR_TOO_LARGE;
	}
	return 0;
}

/* The signature and, when it comes first as it must, the IHDR's size. */
static int check_header(const uint8_t *p, size_t size, char *err, size_t errlen)
{
	static const uint8_t ihdr[8] = { 0, 0, 0, 13, 'I', 'H', 'D', 'R' };

	if (size == 0) {
		set_err(err, errlen, "the PNG is empty (0 bytes)");
		return ERR_FORMAT;
	}
	if (size < 8 && png_sig_cmp(p, 0, size) == 0) {
		set_err(err, errlen,
			"the PNG is truncated or corrupt (it ends after %zu "
			"bytes, inside the signature)",
			size);
		return ERR_FORMAT;
	}
	if (!png_has_signature(p, size)) {
		set_err(err, errlen, "not a PNG file (bad signature)");
		return ERR_FORMAT;
	}
	if (size >= 8 + 8 + 13 && !memcmp(p + 8, ihdr, 8))
		return check_size(be32(p + 16), be32(p + 20), err, errlen);
	return 0; /* libpng says what is wrong */
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
	rc = check_size(w, h, d->err, d->errlen);
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
		set_err(d->err, d->errlen,
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
		set_err(err, errlen,
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
			set_err(err, errlen,
				"out of memory while decoding the PNG");
		else if (d.guard.too_large)
			set_err(err, errlen,
				"a chunk of the PNG is larger than the limit "
				"of %u bytes",
				IMAGE_MAX_CHUNK);
		else if (d.guard.msg[0])
			set_err(err, errlen,
				"the PNG is truncated or corrupt (libpng: %s)",
				d.guard.msg);
		return rc;
	}
	*out = d.img;
	return 0;
}

/* ==== JPEG ============================================================ */

/* libjpeg may hold this much for one image (a progressive frame keeps
 * every coefficient: 128 bytes a pixel, at most, within the limits). */
#define JPEG_MAX_MEMORY ((long)1 << 30)

struct jpeg_reader {
	struct jpeg_error_mgr pub; /* first: libjpeg's error manager */
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
	struct jpeg_decompress_struct cinfo;
	uint8_t *pixels;   /* the decoded RGB rows, before turning */
	struct image *img; /* the result, freed by the caller */
	char *err;
	size_t errlen;
};

static void jpeg_on_error(j_common_ptr cinfo)
{
	struct jpeg_reader *r = (struct jpeg_reader *)cinfo->err;
	(*cinfo->err->format_message)(cinfo, r->msg);
	longjmp(r->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo)
{
	/* warnings (extraneous bytes, a corrupt marker it skips): ignored */
}

static uint32_t exif_u32(const uint8_t *p, int le)
{
	return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			(uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
		  : be32(p);
}

static unsigned exif_u16(const uint8_t *p, int le)
{
	return le ? (unsigned)(p[0] | p[1] << 8) : (unsigned)(p[0] << 8 | p[1]);
}

/* The EXIF orientation (1 to 8) of an APP1 marker's data, or 1. */
static int exif_orientation(const uint8_t *p, size_t n)
{
	if (n < 6 + 8 || memcmp(p, "Exif\0\0", 6))
		return 1;
	p += 6, n -= 6; /* the TIFF header: byte order, 42, IFD0's offset */
	int le = p[0] == 'I' && p[1] == 'I';
	if (!le && !(p[0] == 'M' && p[1] == 'M'))
		return 1;
	if (exif_u16(p + 2, le) != 42)
		return 1;
	uint32_t ifd = exif_u32(p + 4, le);
	if (ifd > n - 2)
		return 1;
	unsigned count = exif_u16(p + ifd, le);
	for (unsigned i = 0; i < count; i++) {
		size_t at = ifd + 2 + (size_t)i * 12;
		if (at + 12 > n)
			return 1;
		if (exif_u16(p + at, le) != 0x0112) /* Orientation */
			continue;
		unsigned v = exif_u16(p + at + 8, le); /* a SHORT, inline */
		return exif_u16(p + at + 2, le) == 3 && v >= 1 && v <= 8
			   ? (int)v
			   : 1;
	}
	return 1;
}

/* Source pixel of output pixel (x, y) of the turned image, for EXIF
 * orientation o of a w x h source. */
static size_t oriented_source(int o, int x, int y, int w, int h)
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

/* The steps that may longjmp. Returns 0, or a code with r->err set. */
static int jpeg_steps(struct jpeg_reader *r, const uint8_t *data, size_t size)
{
	struct jpeg_decompress_struct *c = &r->cinfo;
	int orientation = 1, rc;

	jpeg_create_decompress(c);
	c->mem->max_memory_to_use = JPEG_MAX_MEMORY;
	jpeg_mem_src(c, data, (unsigned long)size);
	jpeg_save_markers(c, JPEG_APP0 + 1, 0xffff);
	jpeg_read_header(c, TRUE);
	rc = check_size(c->image_width, c->image_height, r->err, r->errlen);
	if (rc)
		return rc;
	if (c->jpeg_color_space == JCS_CMYK ||
	    c->jpeg_color_space == JCS_YCCK) {
		set_err(r->err, r->errlen,
			"the JPEG is in CMYK, which vkinrd does not read: save "
			"it as RGB");
		return ERR_FORMAT;
	}
	for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next)
		if (m->marker == JPEG_APP0 + 1 &&
		    (orientation = exif_orientation(m->data, m->data_length)) !=
			1)
			break;
	c->out_color_space = JCS_RGB;
	jpeg_start_decompress(c);
	int w = (int)c->output_width, h = (int)c->output_height;
	if (c->output_components != 3) {
		set_err(r->err, r->errlen,
			"this JPEG layout is not supported "
			"(%d components after conversion to RGB)",
			c->output_components);
		return ERR_FORMAT;
	}
	r->pixels = malloc((size_t)w * h * 3);
	if (!r->pixels)
		return ERR_NOMEM;
	while (c->output_scanline < c->output_height) {
		JSAMPROW row = r->pixels + (size_t)c->output_scanline * w * 3;
		jpeg_read_scanlines(c, &row, 1);
	}
	jpeg_finish_decompress(c);

	int turned = orientation >= 5;
	r->img = turned ? image_create(h, w) : image_create(w, h);
	if (!r->img)
		return ERR_NOMEM;
	for (int y = 0; y < r->img->height; y++)
		for (int x = 0; x < r->img->width; x++) {
			const uint8_t *src =
			    r->pixels +
			    3 * oriented_source(orientation, x, y, w, h);
			float *dst =
			    r->img->rgb + 3 * ((size_t)y * r->img->width + x);
			for (int k = 0; k < 3; k++)
				dst[k] = src[k] / 255.0f;
		}
	return 0;
}

/* Calls setjmp; its only state is *r, which lives in the caller's frame. */
static int jpeg_guarded(struct jpeg_reader *r, const uint8_t *data, size_t size)
{
	if (setjmp(r->jump))
		return ERR_FORMAT;
	return jpeg_steps(r, data, size);
}

int jpeg_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen)
{
	struct jpeg_reader r;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!jpeg_has_signature(data, size)) {
		set_err(err, errlen,
			size ? "not a JPEG file (bad signature)"
			     : "the JPEG is empty (0 bytes)");
		return ERR_FORMAT;
	}
	memset(&r, 0, sizeof(r));
	r.err = err;
	r.errlen = errlen;
	r.cinfo.err = jpeg_std_error(&r.pub);
	r.pub.error_exit = jpeg_on_error;
	r.pub.output_message = jpeg_on_message;
	rc = jpeg_guarded(&r, data, size);
	jpeg_destroy_decompress(&r.cinfo);
	free(r.pixels);
	if (rc) {
		image_destroy(r.img);
		if (rc == ERR_NOMEM)
			set_err(err, errlen,
				"out of memory while decoding the JPEG");
		else if (r.msg[0])
			set_err(
			    err, errlen,
			    "the JPEG is truncated or corrupt (libjpeg: %s)",
			    r.msg);
		return rc;
	}
	*out = r.img;
	return 0;
}

int image_decode(const void *data, size_t size, struct image **out, char *err,
		 size_t errlen)
{
	if (jpeg_has_signature(data, size))
		return jpeg_decode(data, size, out, err, errlen);
	if (size >= 8 && !png_has_signature(data, size)) {
		*out = NULL;
		set_err(err, errlen,
			"neither a PNG nor a JPEG file (by its first bytes)");
		return ERR_FORMAT;
	}
	return png_decode(data, size, out, err, errlen);
}

/* The size a PNG's IHDR or a JPEG's frame header states; 0 when the data
 * holds neither where it should. */
int image_stated_size(const void *data, size_t size, uint32_t *w, uint32_t *h)
{
	const uint8_t *p = data;
	*w = *h = 0;
	if (png_has_signature(data, size) && size >= 24) {
		*w = be32(p + 16), *h = be32(p + 20);
		return 1;
	}
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
		set_err(err, errlen,
			"%s is larger than the limit of %zu bytes for an image "
			"file",
			path, PNG_MAX_FILE);
		return rc;
	}
	if (rc == ERR_INVALID) {
		set_err(err, errlen, "cannot read %s: it is %s, not a file",
			path, fileio_kind(path));
		return ERR_IO;
	}
	if (rc) {
		set_err(err, errlen, "cannot read %s: %s", path,
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
	uint8_t *out; /* the PNG being written */
	size_t size, cap;
	uint8_t *row; /* one row of 8-bit RGB */
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

static int encode_steps(struct encoder *e)
{
	const struct image *img = e->img;

	png_set_write_fn(e->png, e, write_fn, flush_fn);
	png_set_IHDR(e->png, e->info, (png_uint_32)img->width,
		     (png_uint_32)img->height, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_write_info(e->png, e->info);
	for (int y = 0; y < img->height; y++) {
		const float *src = img->rgb + (size_t)y * img->width * 3;

		for (size_t i = 0; i < (size_t)img->width * 3; i++)
			e->row[i] = image_byte(src[i]);
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

int png_encode(const struct image *img, uint8_t **data, size_t *size)
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
	e.row = malloc((size_t)img->width * 3);
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
