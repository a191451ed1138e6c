/*
 * test_png8.c - unit tests of the client's PNG coder (client/pictures/png8.c)
 * against the daemon's (daemon/formats/image_codec.c, libpng): what one writes, the
 * other reads back to the same 8-bit samples, both ways. libpng chooses
 * its own row filters, so the daemon's PNG exercises png8's unfiltering
 * on a picture with edges and gradients. Grey and RGBA images of 8 and
 * 16 bits are written with libpng's own API. Refused inputs: not a PNG,
 * cut short, a broken CRC, an interlaced image; each with a sentence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <png.h>

#include "client/pictures/png8.h"
#include "formats/image_codec.h"
#include "proto/errors.h"
#include "unit/support_png.h"

#define W 37
#define H 23

/* A picture with gradients and hard edges, already on the 8-bit grid. */
static struct image *picture(void)
{
	struct image *img = image_create(W, H);
	assert_non_null(img);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			float *px = img->rgb + 3 * (y * W + x);
			px[0] = (float)((x * 7) % 256) / 255.0f;
			px[1] = (float)(((x / 5 + y / 3) % 2) * 255) / 255.0f;
			px[2] = (float)((y * 11 + x) % 256) / 255.0f;
		}
	return img;
}

static void assert_same_bytes(const struct image *a, const struct image *b)
{
	assert_int_equal(a->width, b->width);
	assert_int_equal(a->height, b->height);
	for (size_t i = 0; i < (size_t)a->width * a->height * 3; i++)
		assert_int_equal(image_byte(a->rgb[i]), image_byte(b->rgb[i]));
}

/* What encode writes, decode reads back to the same 8-bit samples. */
static void
round_trip(int (*encode)(const struct image *, uint8_t **, size_t *),
	   int (*decode)(const void *, size_t, struct image **, char *, size_t))
{
	struct image *img = picture(), *back = NULL;
	uint8_t *png;
	size_t size;
	char err[256];

	assert_int_equal(encode(img, &png, &size), 0);
	assert_int_equal(decode(png, size, &back, err, sizeof(err)), 0);
	assert_same_bytes(img, back);
	free(png);
	image_destroy(back);
	image_destroy(img);
}

static void png8_written_libpng_read(void **state)
{
	round_trip(png8_encode, png_decode);
}

static void libpng_written_png8_read(void **state)
{
	round_trip(png_encode, png8_decode);
}

/* ---- other forms, written with libpng -------------------------------- */

/* Sample (x, y, c) of the pattern, at the given depth. */
static unsigned pattern(int x, int y, int c, int depth)
{
	unsigned max = depth == 16 ? 65535u : 255u;
	return (unsigned)(x * 977 + y * 131 + c * 4099) % (max + 1);
}

static struct membuf write_png(int colour, int depth, int interlace)
{
	struct membuf b = { 0 };
	int channels = colour == PNG_COLOR_TYPE_GRAY         ? 1
		       : colour == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
		       : colour == PNG_COLOR_TYPE_RGB        ? 3
							     : 4;
	int bytes = depth / 8;
	png_structp png =
	    png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	uint8_t *row = malloc((size_t)W * channels * bytes);

	assert_non_null(row);
	membuf_attach(png, &b);
	png_set_IHDR(png, info, W, H, depth, colour, interlace,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	int passes = png_set_interlace_handling(png);
	for (int pass = 0; pass < passes; pass++)
		for (int y = 0; y < H; y++) {
			for (int x = 0; x < W; x++)
				for (int c = 0; c < channels; c++) {
					unsigned v = pattern(x, y, c, depth);
					uint8_t *s =
					    row + (x * channels + c) * bytes;
					if (bytes == 2) {
						s[0] = (uint8_t)(v >> 8);
						s[1] = (uint8_t)v;
					} else {
						s[0] = (uint8_t)v;
					}
				}
			png_write_row(png, row);
		}
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	free(row);
	return b;
}

static void check_form(int colour, int depth)
{
	struct membuf b = write_png(colour, depth, PNG_INTERLACE_NONE);
	struct image *img = NULL;
	char err[256];
	float max = depth == 16 ? 65535.0f : 255.0f;
	int grey = colour == PNG_COLOR_TYPE_GRAY ||
		   colour == PNG_COLOR_TYPE_GRAY_ALPHA;

	assert_int_equal(png8_decode(b.data, b.size, &img, err, sizeof(err)),
			 0);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			for (int c = 0; c < 3; c++)
				assert_float_equal(
				    img->rgb[3 * (y * W + x) + c],
				    (float)pattern(x, y, grey ? 0 : c, depth) /
					max,
				    1e-7);
	image_destroy(img);
	free(b.data);
}

static void grey_and_alpha_forms(void **state)
{
	check_form(PNG_COLOR_TYPE_GRAY, 8);
	check_form(PNG_COLOR_TYPE_GRAY, 16);
	check_form(PNG_COLOR_TYPE_GRAY_ALPHA, 8);
	check_form(PNG_COLOR_TYPE_RGB, 16);
	check_form(PNG_COLOR_TYPE_RGB_ALPHA, 8);
	check_form(PNG_COLOR_TYPE_RGB_ALPHA, 16);
}

/* ---- refused ---------------------------------------------------------- */

static void refuses(const uint8_t *data, size_t size, int code,
		    const char *words)
{
	struct image *img = NULL;
	char err[256] = "";
	assert_int_equal(png8_decode(data, size, &img, err, sizeof(err)), code);
	assert_null(img);
	if (!strstr(err, words))
		fail_msg("\"%s\" does not say \"%s\"", err, words);
}

static void refused_inputs(void **state)
{
	struct image *img = picture();
	uint8_t *png;
	size_t size;

	refuses((const uint8_t *)"GIF89a, not a PNG", 17, ERR_FORMAT,
		"not a PNG");
	assert_int_equal(png8_encode(img, &png, &size), 0);
	refuses(png, size - 20, ERR_FORMAT, "cut short");
	png[20] ^= 1; /* inside IHDR: its CRC no longer matches */
	refuses(png, size, ERR_FORMAT, "CRC");
	free(png);
	image_destroy(img);

	struct membuf b = write_png(PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7);
	refuses(b.data, b.size, ERR_FORMAT, "does not read");
	free(b.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(png8_written_libpng_read),
		cmocka_unit_test(libpng_written_png8_read),
		cmocka_unit_test(grey_and_alpha_forms),
		cmocka_unit_test(refused_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
