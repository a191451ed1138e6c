/*
 * test_png.c - unit tests of the PNG loader and writer (daemon/formats/image_codec.c).
 *
 * Every colour type and bit depth is written here with libpng's own write
 * API, as a 37x23 image (odd, so packed rows end mid-byte and Adam7 passes
 * are uneven) whose stored samples follow a known pattern that includes 0
 * and the largest value. The decoded floats must equal the stored values
 * exactly: v / 255 for 8 bits, v / 65535 for 16, low-bit grey scaled up to
 * 8 bits as libpng does, palette indices replaced by their colour, grey
 * copied to R, G and B, alpha and tRNS ignored.
 *
 * Refused files are written byte by byte, with a small CRC-32 of our own
 * and zlib "stored" blocks, so no compressor is needed: sizes of 0 and
 * over the limits in a valid IHDR (the decompression bomb is refused from
 * the header, before anything is allocated), a broken CRC, a cut file, a
 * wrong signature. Each must give the right code and a sentence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"
#include "formats/image_codec.h"
#include "unit/support_png.h"

#define W 37
#define H 23

/* ==== Writing test PNGs with libpng ==================================== */

struct variant {
	const char *name;
	int color_type, depth, interlace;
	int trns; /* write a tRNS chunk */
};

static int channels_of(int color_type)
{
	switch (color_type) {
	case PNG_COLOR_TYPE_GRAY_ALPHA:
		return 2;
	case PNG_COLOR_TYPE_RGB:
		return 3;
	case PNG_COLOR_TYPE_RGB_ALPHA:
		return 4;
	}
	return 1; /* grey, palette */
}

/* Palette sizes: full for 1, 2 and 4 bits, 200 of 256 for 8 bits. */
static int palette_size(int depth) { return depth == 8 ? 200 : 1 << depth; }

static png_color palette_colour(int i)
{
	png_color c = { (png_byte)(i * 37 + 5), (png_byte)(i * 91 + 17),
			(png_byte)(255 - i * 53) };
	return c;
}

/* The stored sample of channel c at (x, y), 0 .. 2^depth - 1 (a palette
 * index below palette_size). Pixel (0,0) is all 0, (1,0) the maximum. */
static unsigned sample(const struct variant *v, int x, int y, int c)
{
	unsigned max = (1u << v->depth) - 1, s;

	if (x == 0 && y == 0)
		return 0;
	if (v->color_type == PNG_COLOR_TYPE_PALETTE) {
		s = (unsigned)(x * 7 + y * 3 + x * y);
		return x == 1 && y == 0 ? (unsigned)palette_size(v->depth) - 1
					: s % (unsigned)palette_size(v->depth);
	}
	if (x == 1 && y == 0)
		return max;
	if (v->depth == 16)
		s = (unsigned)(x * 2731 + y * 6007 + c * 12345 + x * y * 97);
	else
		s = (unsigned)(x * 31 + y * 17 + c * 89 + x * y * 7 + 3);
	return s & max;
}

/* What the decoder must give for a stored grey or colour sample. */
static float expected_value(int depth, unsigned s)
{
	if (depth == 16)
		return (float)s / 65535.0f;
	if (depth < 8)
		s *= 255u / ((1u << depth) - 1); /* libpng's expansion */
	return (float)s / 255.0f;
}

static void expected_pixel(const struct variant *v, int x, int y, float *rgb)
{
	if (v->color_type == PNG_COLOR_TYPE_PALETTE) {
		png_color p = palette_colour((int)sample(v, x, y, 0));

		rgb[0] = p.red / 255.0f;
		rgb[1] = p.green / 255.0f;
		rgb[2] = p.blue / 255.0f;
	} else if (channels_of(v->color_type) <= 2) {
		rgb[0] = rgb[1] = rgb[2] =
		    expected_value(v->depth, sample(v, x, y, 0));
	} else {
		for (int c = 0; c < 3; c++)
			rgb[c] = expected_value(v->depth, sample(v, x, y, c));
	}
}

static uint8_t *write_variant(const struct variant *v, size_t *size)
{
	int ch = channels_of(v->color_type), bps = v->depth == 16 ? 2 : 1;
	size_t rowbytes = (size_t)W * ch * bps;
	uint8_t *pixels = malloc(rowbytes * H), *out;
	png_bytep rows[H];
	struct membuf buf = { 0 };
	png_structp png;
	png_infop info;

	assert_non_null(pixels);
	for (int y = 0; y < H; y++) {
		uint8_t *p = pixels + (size_t)y * rowbytes;

		rows[y] = p;
		for (int x = 0; x < W; x++)
			for (int c = 0; c < ch; c++) {
				unsigned s = sample(v, x, y, c);

				if (bps == 2) {
					*p++ = (uint8_t)(s >> 8);
					*p++ = (uint8_t)s;
				} else {
					*p++ = (uint8_t)s;
				}
			}
	}

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	assert_non_null(png);
	info = png_create_info_struct(png);
	assert_non_null(info);
	if (setjmp(png_jmpbuf(png)))
		fail_msg("libpng could not write the %s test image", v->name);
	membuf_attach(png, &buf);
	png_set_IHDR(png, info, W, H, v->depth, v->color_type, v->interlace,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (v->color_type == PNG_COLOR_TYPE_PALETTE) {
		png_color pal[256];
		png_byte alpha[256];
		int n = palette_size(v->depth);

		for (int i = 0; i < n; i++) {
			pal[i] = palette_colour(i);
			alpha[i] = (png_byte)(i * 29);
		}
		png_set_PLTE(png, info, pal, n);
		if (v->trns)
			png_set_tRNS(png, info, alpha, n > 3 ? n - 3 : n, NULL);
	} else if (v->trns) {
		png_color_16 key = { 0 };
		unsigned max = (1u << v->depth) - 1;

		key.gray = (png_uint_16)(5 & max);
		key.red = key.green = key.blue = (png_uint_16)(5 & max);
		png_set_tRNS(png, info, NULL, 0, &key);
	}
	png_write_info(png, info);
	if (v->depth < 8)
		png_set_packing(png);
	if (v->interlace == PNG_INTERLACE_ADAM7)
		png_set_interlace_handling(png);
	png_write_image(png, rows);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	free(pixels);

	/* Exactly sized, so ASan sees any read past the end. */
	out = malloc(buf.size);
	assert_non_null(out);
	memcpy(out, buf.data, buf.size);
	*size = buf.size;
	free(buf.data);
	return out;
}

/* ==== Every variant decodes exactly ==================================== */

#define V(name, type, depth, interlace, trns)                                  \
	{                                                                      \
		name, PNG_COLOR_TYPE_##type, depth, PNG_INTERLACE_##interlace, \
		    trns                                                       \
	}

static const struct variant variants[] = {
	V("grey 1", GRAY, 1, NONE, 0),
	V("grey 2", GRAY, 2, NONE, 0),
	V("grey 4", GRAY, 4, NONE, 0),
	V("grey 8", GRAY, 8, NONE, 0),
	V("grey 16", GRAY, 16, NONE, 0),
	V("grey 4 tRNS", GRAY, 4, NONE, 1),
	V("grey 8 tRNS", GRAY, 8, NONE, 1),
	V("grey 16 tRNS", GRAY, 16, NONE, 1),
	V("grey+alpha 8", GRAY_ALPHA, 8, NONE, 0),
	V("grey+alpha 16", GRAY_ALPHA, 16, NONE, 0),
	V("palette 1", PALETTE, 1, NONE, 0),
	V("palette 2", PALETTE, 2, NONE, 0),
	V("palette 4", PALETTE, 4, NONE, 0),
	V("palette 8", PALETTE, 8, NONE, 0),
	V("palette 1 tRNS", PALETTE, 1, NONE, 1),
	V("palette 2 tRNS", PALETTE, 2, NONE, 1),
	V("palette 4 tRNS", PALETTE, 4, NONE, 1),
	V("palette 8 tRNS", PALETTE, 8, NONE, 1),
	V("RGB 8", RGB, 8, NONE, 0),
	V("RGB 16", RGB, 16, NONE, 0),
	V("RGB 8 tRNS", RGB, 8, NONE, 1),
	V("RGB 16 tRNS", RGB, 16, NONE, 1),
	V("RGBA 8", RGB_ALPHA, 8, NONE, 0),
	V("RGBA 16", RGB_ALPHA, 16, NONE, 0),
	V("Adam7 RGB 8", RGB, 8, ADAM7, 0),
	V("Adam7 RGB 16", RGB, 16, ADAM7, 0),
	V("Adam7 palette 4", PALETTE, 4, ADAM7, 0),
	V("Adam7 palette 8 tRNS", PALETTE, 8, ADAM7, 1),
	V("Adam7 palette 1 tRNS", PALETTE, 1, ADAM7, 1),
	V("Adam7 grey 2", GRAY, 2, ADAM7, 0),
	V("Adam7 grey+alpha 8", GRAY_ALPHA, 8, ADAM7, 0),
	V("Adam7 RGBA 16", RGB_ALPHA, 16, ADAM7, 0),
};

static void check_variant(const struct variant *v)
{
	struct image *img = NULL;
	char err[256] = "";
	uint8_t *png;
	size_t size;
	int rc;

	png = write_variant(v, &size);
	assert_true(png_has_signature(png, size));
	rc = png_decode(png, size, &img, err, sizeof(err));
	if (rc)
		fail_msg("%s: png_decode gave %d: %s", v->name, rc, err);
	assert_non_null(img);
	assert_int_equal(img->width, W);
	assert_int_equal(img->height, H);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			const float *got = img->rgb + ((size_t)y * W + x) * 3;
			float want[3];

			expected_pixel(v, x, y, want);
			for (int c = 0; c < 3; c++)
				if (got[c] != want[c])
					fail_msg("%s: pixel (%d,%d) channel %d "
						 "is %.9g, not %.9g",
						 v->name, x, y, c, got[c],
						 want[c]);
		}
	/* The pattern reaches both ends of the range. */
	if (v->color_type != PNG_COLOR_TYPE_PALETTE) {
		assert_true(img->rgb[0] == 0.0f);
		assert_true(img->rgb[3] == 1.0f);
	}
	image_destroy(img);
	free(png);
}

static void test_every_variant(void **state)
{
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		check_variant(&variants[i]);
}

/* ==== Encoding ========================================================= */

static float rounded(float v)
{
	if (!(v > 0.0f))
		return 0.0f;
	if (v >= 1.0f)
		return 1.0f;
	return (float)(int)(v * 255.0f + 0.5f) / 255.0f;
}

static struct image *test_image(void)
{
	struct image *img = image_create(W, H);

	assert_non_null(img);
	for (size_t i = 0; i < (size_t)W * H * 3; i++)
		img->rgb[i] = (float)(i % 301) / 270.0f - 0.05f;
	img->rgb[0] = -1.0f;
	img->rgb[1] = 2.0f;
	img->rgb[2] = NAN;
	img->rgb[3] = 0.5f;
	img->rgb[4] = 1.0f / 255.0f * 0.4999f;
	img->rgb[5] = INFINITY;
	return img;
}

static void test_encode_decode_round_trip(void **state)
{
	struct image *img = test_image(), *back;
	uint8_t *png, *png2;
	size_t size, size2;
	char err[256];

	assert_int_equal(png_encode(img, &png, &size), 0);
	assert_true(png_has_signature(png, size));
	/* 8-bit RGB, not interlaced: bytes 24..28 of the IHDR. */
	assert_int_equal(png[24], 8);
	assert_int_equal(png[25], PNG_COLOR_TYPE_RGB);
	assert_int_equal(png[28], PNG_INTERLACE_NONE);
	assert_int_equal(png_decode(png, size, &back, err, sizeof(err)), 0);
	assert_int_equal(back->width, W);
	assert_int_equal(back->height, H);
	for (size_t i = 0; i < (size_t)W * H * 3; i++)
		if (back->rgb[i] != rounded(img->rgb[i]))
			fail_msg("value %zu: %.9g decoded as %.9g, not %.9g", i,
				 img->rgb[i], back->rgb[i],
				 rounded(img->rgb[i]));
	assert_true(back->rgb[0] == 0.0f);
	assert_true(back->rgb[1] == 1.0f);
	assert_true(back->rgb[2] == 0.0f);
	assert_true(back->rgb[3] == 128.0f / 255.0f);
	assert_true(back->rgb[4] == 0.0f);
	assert_true(back->rgb[5] == 1.0f);
	/* A second trip changes nothing. */
	assert_int_equal(png_encode(back, &png2, &size2), 0);
	assert_int_equal(size, size2);
	assert_memory_equal(png, png2, size);
	free(png2);
	free(png);
	image_destroy(back);
	image_destroy(img);
}

/* The largest side allowed goes through both ways. */
static void test_widest_image(void **state)
{
	struct image *img = image_create(IMAGE_MAX_SIDE, 2), *back;
	uint8_t *png;
	size_t size;
	char err[256];

	assert_non_null(img);
	for (size_t i = 0; i < (size_t)IMAGE_MAX_SIDE * 2 * 3; i++)
		img->rgb[i] = (float)(i % 256) / 255.0f;
	assert_int_equal(png_encode(img, &png, &size), 0);
	assert_int_equal(png_decode(png, size, &back, err, sizeof(err)), 0);
	assert_int_equal(back->width, IMAGE_MAX_SIDE);
	assert_memory_equal(back->rgb, img->rgb,
			    (size_t)IMAGE_MAX_SIDE * 2 * 3 * sizeof(float));
	image_destroy(back);
	image_destroy(img);
	free(png);
}

static void test_encode_refuses_bad_images(void **state)
{
	struct image empty = { 0, 0, NULL };
	uint8_t *png = (uint8_t *)1;
	size_t size = 1;

	assert_int_equal(png_encode(NULL, &png, &size), ERR_INVALID);
	assert_null(png);
	assert_int_equal(png_encode(&empty, &png, &size), ERR_INVALID);
	assert_null(image_create(0, 5));
	assert_null(image_create(5, -1));
	image_destroy(NULL);
}

static void test_save_and_load_file(void **state)
{
	char dir[] = "/tmp/test_png.XXXXXX", path[256], err[256];
	struct image *img = test_image(), *back;
	struct stat st;
	mode_t old = umask(022);

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.png", dir);
	assert_int_equal(png_save_file(img, path), 0);
	assert_int_equal(png_save_file(img, path), 0); /* over the first */
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(png_load_file(path, &back, err, sizeof(err)), 0);
	for (size_t i = 0; i < (size_t)W * H * 3; i++)
		assert_true(back->rgb[i] == rounded(img->rgb[i]));
	image_destroy(back);
	unlink(path);

	err[0] = '\0';
	assert_int_equal(png_load_file(path, &back, err, sizeof(err)), ERR_IO);
	assert_null(back);
	assert_non_null(strstr(err, "out.png"));
	rmdir(dir);
	image_destroy(img);
}

/* ==== Hand-made files ================================================== */

static uint32_t crc32_of(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Appends a chunk with a correct CRC; returns the new length. */
static size_t put_chunk(uint8_t *out, size_t len, const char *type,
			const uint8_t *data, uint32_t n)
{
	put32(out + len, n);
	memcpy(out + len + 4, type, 4);
	if (n)
		memcpy(out + len + 8, data, n);
	put32(out + len + 8 + n, crc32_of(0, out + len + 4, n + 4));
	return len + 12 + n;
}

/* A zlib stream of one stored block (no compression needed). */
static size_t zlib_stored(uint8_t *out, const uint8_t *raw, uint16_t n)
{
	uint32_t a = 1, b = 0;

	out[0] = 0x78;
	out[1] = 0x01;
	out[2] = 0x01; /* final block, stored */
	out[3] = (uint8_t)n;
	out[4] = (uint8_t)(n >> 8);
	out[5] = (uint8_t)~n;
	out[6] = (uint8_t)(~n >> 8);
	memcpy(out + 7, raw, n);
	for (uint16_t i = 0; i < n; i++) {
		a = (a + raw[i]) % 65521;
		b = (b + a) % 65521;
	}
	put32(out + 7 + n, b << 16 | a);
	return 11u + n;
}

/*
 * An 8-bit RGB PNG claiming width x height, whose IDAT holds one row of
 * `rows` rows of real data (filter 0, then bytes 0, 1, 2...). With a size
 * over the limits that is a decompression bomb: a tiny file for a huge
 * image. Returns a malloc'ed buffer.
 */
static uint8_t *handmade(uint32_t width, uint32_t height, uint32_t rows,
			 size_t *size)
{
	static const uint8_t sig[8] = { 137, 'P', 'N', 'G', 13, 10, 26, 10 };
	uint8_t ihdr[13] = { 0 }, raw[512], idat[600];
	uint8_t *out = malloc(8 + 25 + 12 + sizeof(idat) + 12);
	size_t len = 8, rawlen = 0;

	assert_non_null(out);
	memcpy(out, sig, 8);
	put32(ihdr, width);
	put32(ihdr + 4, height);
	ihdr[8] = 8;                  /* bit depth */
	ihdr[9] = PNG_COLOR_TYPE_RGB; /* colour type */
	len = put_chunk(out, len, "IHDR", ihdr, 13);
	for (uint32_t r = 0; r < rows; r++) {
		raw[rawlen++] = 0;
		for (uint32_t i = 0; i < width * 3 && rawlen < sizeof(raw);
		     i++, rawlen++)
			raw[rawlen] = (uint8_t)(rawlen * 7);
	}
	assert_true(rawlen <= sizeof(raw));
	len = put_chunk(out, len, "IDAT", idat,
			(uint32_t)zlib_stored(idat, raw, (uint16_t)rawlen));
	len = put_chunk(out, len, "IEND", NULL, 0);
	*size = len;
	return out;
}

static void test_handmade_valid_control(void **state)
{
	struct image *img;
	char err[256];
	uint8_t *png;
	size_t size;

	/* The hand-made writer is right: a 3x2 image of it decodes. */
	png = handmade(3, 2, 2, &size);
	assert_int_equal(png_decode(png, size, &img, err, sizeof(err)), 0);
	assert_int_equal(img->width, 3);
	assert_int_equal(img->height, 2);
	assert_true(img->rgb[0] == (uint8_t)(1 * 7) / 255.0f);
	image_destroy(img);
	free(png);
}

static void expect_refused(const void *data, size_t size, int code,
			   const char *what, const char *needle)
{
	struct image *img = (struct image *)1;
	char err[256] = "";
	int rc = png_decode(data, size, &img, err, sizeof(err));

	if (rc != code)
		fail_msg("%s: expected %s, got %s (%s)", what, error_name(code),
			 error_name(rc), err);
	assert_null(img);
	if (!err[0])
		fail_msg("%s: refused without a message", what);
	if (needle && !strstr(err, needle))
		fail_msg("%s: the message \"%s\" does not mention \"%s\"", what,
			 err, needle);
	if (getenv("TEST_VERBOSE"))
		print_message("refused %s: %s\n", what, err);
}

static void test_refuse_short_and_foreign(void **state)
{
	static const struct variant rgb = V("RGB 8", RGB, 8, NONE, 0);
	uint8_t *png, *garbage;
	size_t size;

	png = write_variant(&rgb, &size);
	expect_refused(png, 0, ERR_FORMAT, "empty", NULL);
	expect_refused(png, 7, ERR_FORMAT, "7 bytes", NULL);
	expect_refused(png, 8, ERR_FORMAT, "the signature only", NULL);
	expect_refused("GIF89a\x01\x00\x01\x00\x00\x00\x00;", 14, ERR_FORMAT,
		       "a GIF", "not a PNG");
	expect_refused("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01", 12, ERR_FORMAT,
		       "a JPEG", "not a PNG");
	/* Garbage after a valid signature. */
	garbage = malloc(200);
	assert_non_null(garbage);
	memcpy(garbage, png, 8);
	for (int i = 8; i < 200; i++)
		garbage[i] = (uint8_t)(i * 73 + 11);
	expect_refused(garbage, 200, ERR_FORMAT, "garbage after the signature",
		       NULL);
	free(garbage);
	free(png);
}

/* Offset of the first byte of the first chunk of that type. */
static size_t find_chunk(const uint8_t *png, size_t size, const char *type)
{
	size_t at = 8;

	while (at + 12 <= size) {
		uint32_t n = (uint32_t)png[at] << 24 | png[at + 1] << 16 |
			     png[at + 2] << 8 | png[at + 3];

		if (!memcmp(png + at + 4, type, 4))
			return at;
		at += 12 + n;
	}
	fail_msg("no %s chunk", type);
	return 0;
}

static void test_refuse_truncated_and_corrupt(void **state)
{
	static const struct variant rgb = V("RGB 16", RGB, 16, NONE, 0);
	static const struct variant adam7 = V("Adam7 RGB 8", RGB, 8, ADAM7, 0);
	uint8_t *png, *copy;
	size_t size, idat;

	png = write_variant(&rgb, &size);
	copy = malloc(size);
	assert_non_null(copy);

	expect_refused(png, size / 2, ERR_FORMAT, "cut halfway", "truncated");
	expect_refused(png, 40, ERR_FORMAT, "cut inside the first IDAT",
		       "truncated");
	expect_refused(png, size - 12, ERR_FORMAT, "no IEND", "truncated");
	expect_refused(png, 20, ERR_FORMAT, "cut inside the IHDR", "truncated");

	/* One flipped byte inside the IDAT data. libpng inflates as it
	 * reads, so zlib may object before the chunk's CRC is checked;
	 * either way the file is refused as corrupt. */
	idat = find_chunk(png, size, "IDAT");
	for (size_t at = 0; at < 40; at += 3) {
		memcpy(copy, png, size);
		copy[idat + 8 + at] ^= 0x40;
		expect_refused(copy, size, ERR_FORMAT, "a flipped IDAT byte",
			       "corrupt");
	}
	/* The last data byte (zlib's checksum) flipped, then the CRC
	 * itself: only the CRC check can tell. */
	{
		uint32_t n = (uint32_t)png[idat] << 24 | png[idat + 1] << 16 |
			     png[idat + 2] << 8 | png[idat + 3];

		memcpy(copy, png, size);
		copy[idat + 8 + n - 1] ^= 0x01;
		expect_refused(copy, size, ERR_FORMAT,
			       "the last IDAT byte flipped", "corrupt");
		memcpy(copy, png, size);
		copy[idat + 8 + n] ^= 0x01;
		expect_refused(copy, size, ERR_FORMAT, "a flipped IDAT CRC",
			       "CRC");
	}

	/* One flipped bit in the IHDR's height: its CRC fails. */
	memcpy(copy, png, size);
	copy[8 + 8 + 7] ^= 0x01;
	expect_refused(copy, size, ERR_FORMAT, "a flipped IHDR bit", "CRC");
	free(copy);
	free(png);

	png = write_variant(&adam7, &size);
	expect_refused(png, size * 2 / 3, ERR_FORMAT, "interlaced, cut",
		       "truncated");
	free(png);
}

static void test_refuse_bad_sizes(void **state)
{
	uint8_t *png;
	size_t size;

	png = handmade(0, 23, 1, &size);
	expect_refused(png, size, ERR_FORMAT, "width 0", NULL);
	free(png);
	png = handmade(37, 0, 0, &size);
	expect_refused(png, size, ERR_FORMAT, "height 0", NULL);
	free(png);
	png = handmade(100000, 23, 1, &size);
	expect_refused(png, size, ERR_TOO_LARGE, "width 100000", "16384");
	free(png);
	png = handmade(23, IMAGE_MAX_SIDE + 1, 1, &size);
	expect_refused(png, size, ERR_TOO_LARGE, "height 16385", "16384");
	free(png);
	png = handmade(0x80000000u, 1, 0, &size);
	expect_refused(png, size, ERR_TOO_LARGE, "width 2^31", "16384");
	free(png);
	/* Decompression bombs: a few hundred bytes claiming huge images. */
	png = handmade(20000, 20000, 1, &size);
	assert_true(size < 1000);
	expect_refused(png, size, ERR_TOO_LARGE, "20000x20000 bomb", "limit");
	free(png);
	png = handmade(IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS / IMAGE_MAX_SIDE + 1, 1,
		       &size);
	expect_refused(png, size, ERR_TOO_LARGE, "over the pixel limit",
		       "67108864");
	free(png);
}

/* small (a 3x2 hand-made PNG) with a chunk of n bytes of type kind
 * before its IDAT, and tail bytes after its IEND. */
static uint8_t *with_extra(const char *kind, size_t n, size_t tail,
			   size_t *size)
{
	uint8_t *small, *png, *data;
	size_t len, idat;

	small = handmade(3, 2, 2, &len);
	idat = find_chunk(small, len, "IDAT");
	png = malloc(len + n + 12 + tail);
	data = calloc(1, n + 8);
	assert_non_null(png);
	assert_non_null(data);
	memcpy(data, "Comment", 8); /* a text chunk's keyword, NUL */
	memset(data + 8, 'x', n > 8 ? n - 8 : 0);
	memcpy(png, small, idat);
	*size = kind ? put_chunk(png, idat, kind, data, (uint32_t)n) : idat;
	memcpy(png + *size, small + idat, len - idat);
	*size += len - idat;
	memset(png + *size, 0xab, tail);
	*size += tail;
	free(data);
	free(small);
	return png;
}

/* A chunk over IMAGE_MAX_CHUNK, text or private (which libpng would skip
 * unread), and more than that after IEND, are refused as over the limit
 * before libpng allocates anything; within the limit they pass. */
static void test_chunk_limit(void **state)
{
	static const char *const kinds[] = { "tEXt", "zTXt", "prIv", "iCCP" };
	struct image *img;
	uint8_t *png;
	size_t size;
	char err[256];

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		png = with_extra(kinds[i], IMAGE_MAX_CHUNK + 1, 0, &size);
		expect_refused(png, size, ERR_TOO_LARGE, kinds[i], kinds[i]);
		free(png);
	}
	png = with_extra(NULL, 0, IMAGE_MAX_CHUNK + 1, &size);
	expect_refused(png, size, ERR_TOO_LARGE, "bytes after IEND",
		       "after its end");
	free(png);

	png = with_extra("prIv", IMAGE_MAX_CHUNK, 4096, &size);
	assert_int_equal(png_decode(png, size, &img, err, sizeof(err)), 0);
	assert_int_equal(img->width, 3);
	image_destroy(img);
	free(png);
}

/* png_encode_exact gives back the floats it was given when they came
 * from a decoder: 8-bit ones in 8 bits, 16-bit ones in 16, grey as
 * grey. */
static void test_encode_exact(void **state)
{
	struct image *img = image_create(W, H), *back;
	uint8_t *png;
	size_t size;
	char err[256];

	assert_non_null(img);
	for (int pass = 0; pass < 3; pass++) {
		/* 0: 8-bit RGB, 1: 16-bit RGB, 2: 16-bit grey */
		for (size_t i = 0; i < (size_t)W * H * 3; i++) {
			size_t v = pass == 2 ? i / 3 : i;
			img->rgb[i] = pass ? (float)(v * 977 % 65536) / 65535.0f
					   : (float)(v * 7 % 256) / 255.0f;
		}
		assert_int_equal(png_encode_exact(img, &png, &size), 0);
		assert_int_equal(png[24], pass ? 16 : 8);
		assert_int_equal(png[25], pass == 2 ? PNG_COLOR_TYPE_GRAY
						    : PNG_COLOR_TYPE_RGB);
		assert_int_equal(png_decode(png, size, &back, err, sizeof(err)),
				 0);
		assert_memory_equal(back->rgb, img->rgb,
				    (size_t)W * H * 3 * sizeof(float));
		image_destroy(back);
		free(png);
	}
	image_destroy(img);
}

static void test_signature_check(void **state)
{
	static const uint8_t sig[8] = { 137, 'P', 'N', 'G', 13, 10, 26, 10 };

	assert_true(png_has_signature(sig, 8));
	assert_false(png_has_signature(sig, 7));
	assert_false(png_has_signature("GIF89a..", 8));
	assert_false(png_has_signature(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_variant),
		cmocka_unit_test(test_encode_decode_round_trip),
		cmocka_unit_test(test_widest_image),
		cmocka_unit_test(test_encode_refuses_bad_images),
		cmocka_unit_test(test_save_and_load_file),
		cmocka_unit_test(test_handmade_valid_control),
		cmocka_unit_test(test_refuse_short_and_foreign),
		cmocka_unit_test(test_refuse_truncated_and_corrupt),
		cmocka_unit_test(test_refuse_bad_sizes),
		cmocka_unit_test(test_chunk_limit),
		cmocka_unit_test(test_encode_exact),
		cmocka_unit_test(test_signature_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
