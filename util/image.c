/*
 * image.c - float RGB images in memory, and their view on a terminal.
 *
 * No PNG coding here: the daemon decodes and encodes through libpng
 * (daemon/formats/image_codec.c), the client through zlib alone (client/pictures/png8.c), and
 * both share this much: the struct, its limits, the signature check, the
 * rounding to 8 bits and image_print_blocks.
 */
#include "util/image.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const uint8_t png_signature[8] = { 0x89, 'P',  'N',  'G',
					  '\r', '\n', 0x1a, '\n' };

struct image *image_create(int width, int height)
{
	struct image *img;
	size_t n;

	if (width <= 0 || height <= 0 ||
	    (size_t)width > SIZE_MAX / 3 / sizeof(float) / (size_t)height)
		return NULL;
	n = (size_t)width * (size_t)height * 3;
	img = malloc(sizeof(*img));
	if (!img)
		return NULL;
	img->rgb = calloc(n, sizeof(float));
	if (!img->rgb) {
		free(img);
		return NULL;
	}
	img->width = width;
	img->height = height;
	return img;
}

void image_destroy(struct image *img)
{
	if (!img)
		return;
	free(img->rgb);
	free(img);
}

int png_has_signature(const void *data, size_t size)
{
	return size >= sizeof(png_signature) &&
	       !memcmp(data, png_signature, sizeof(png_signature));
}

int jpeg_has_signature(const void *data, size_t size)
{
	const uint8_t *p = data;
	return size >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
}

int webp_has_signature(const void *data, size_t size)
{
	const uint8_t *p = data;
	return size >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4);
}

size_t image_suffix_len(const char *name)
{
	static const char *const suffixes[] = { ".png", ".jpg", ".jpeg",
						".webp" };
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
		size_t k = strlen(suffixes[i]);
		if (n > k && !strcasecmp(name + n - k, suffixes[i]))
			return k;
	}
	return 0;
}

int image_is_recon_name(const char *name)
{
	size_t n = strlen(name), k = strlen(".recon.png");
	return n > k && !strcasecmp(name + n - k, ".recon.png");
}

/* One axis of image_scale_down: n source samples (stride apart, 3
 * floats each) into m, each the mean of the source span it covers. */
static void scale_line(const float *src, size_t src_stride, int n, float *dst,
		       size_t dst_stride, int m)
{
	double span = (double)n / m;
	for (int i = 0; i < m; i++) {
		double a = i * span, b = (i + 1) * span, sum[3] = { 0, 0, 0 };
		for (int k = (int)a; k < n && k < b; k++) {
			double w = (k + 1 < b ? k + 1 : b) - (k > a ? k : a);
			for (int c = 0; c < 3; c++)
				sum[c] += w * src[(size_t)k * src_stride + c];
		}
		for (int c = 0; c < 3; c++)
			dst[(size_t)i * dst_stride + c] =
			    (float)(sum[c] / span);
	}
}

struct image *image_scale_down(const struct image *img, int width, int height)
{
	if (!img || width < 1 || height < 1 || width > img->width ||
	    height > img->height)
		return NULL;
	struct image *rows = image_create(width, img->height);
	struct image *out = rows ? image_create(width, height) : NULL;
	if (!out) {
		image_destroy(rows);
		return NULL;
	}
	for (int y = 0; y < img->height; y++) /* across, then down */
		scale_line(img->rgb + (size_t)y * img->width * 3, 3, img->width,
			   rows->rgb + (size_t)y * width * 3, 3, width);
	for (int x = 0; x < width; x++)
		scale_line(rows->rgb + (size_t)x * 3, (size_t)width * 3,
			   img->height, out->rgb + (size_t)x * 3,
			   (size_t)width * 3, height);
	image_destroy(rows);
	return out;
}

uint8_t image_byte(float v)
{
	if (!(v > 0.0f)) /* NaN too */
		return 0;
	if (v >= 1.0f)
		return 255;
	return (uint8_t)(v * 255.0f + 0.5f);
}

/* The mean colour of the source box behind output cell (cx, cy). */
static void box_mean(const struct image *img, double scale, int cx, int cy,
		     float rgb[3])
{
	int x0 = (int)(cx * scale), x1 = (int)((cx + 1) * scale);
	int y0 = (int)(cy * scale), y1 = (int)((cy + 1) * scale);
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1;
	double sum[3] = { 0 };
	int n = 0;
	for (int y = y0; y < y1 && y < img->height; y++)
		for (int x = x0; x < x1 && x < img->width; x++, n++)
			for (int c = 0; c < 3; c++)
				sum[c] +=
				    img->rgb[3 * ((size_t)y * img->width + x) +
					     c];
	for (int c = 0; c < 3; c++) {
		double v = n ? sum[c] / n : 0;
		rgb[c] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
	}
}

void image_print_blocks(FILE *out, const struct image *const *imgs, int n,
			int cols)
{
	double scale[IMAGE_PRINT_MAX];
	int rows = 0;

	if (n > IMAGE_PRINT_MAX)
		n = IMAGE_PRINT_MAX;
	for (int i = 0; i < n; i++) {
		scale[i] =
		    imgs[i]->width > cols ? (double)imgs[i]->width / cols : 1;
		int h = (int)(imgs[i]->height / scale[i]);
		rows = h > rows ? h : rows;
	}
	for (int y = 0; y < rows; y += 2) {
		for (int i = 0; i < n; i++) {
			int w = (int)(imgs[i]->width / scale[i]);
			for (int x = 0; x < w; x++) {
				float top[3], bottom[3];
				box_mean(imgs[i], scale[i], x, y, top);
				box_mean(imgs[i], scale[i], x, y + 1, bottom);
				fprintf(
				    out,
				    "\x1b[38;2;%d;%d;%dm\x1b[48;2;%d;%d;%"
				    "dm\u2580",
				    (int)(top[0] * 255), (int)(top[1] * 255),
				    (int)(top[2] * 255), (int)(bottom[0] * 255),
				    (int)(bottom[1] * 255),
				    (int)(bottom[2] * 255));
			}
			fputs("\x1b[0m  ", out);
		}
		fputc('\n', out);
	}
}
