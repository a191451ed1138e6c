/*
 * pngshow.c - shows PNG images side by side in a terminal, two pixel rows
 * a character row ("▀" with 24-bit foreground and background colours),
 * scaled down to at most COLS columns each. The demo uses it to show the
 * target next to vkinrd's reconstruction.
 *
 *   pngshow [-w COLS] A.png [B.png ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

#define MAX_IMAGES 4

/* The mean colour of the source box behind output cell (cx, cy). */
static void box(const struct image *img, double scale, int cx, int cy,
		float rgb[3])
{
	int x0 = (int)(cx * scale), x1 = (int)((cx + 1) * scale);
	int y0 = (int)(cy * scale), y1 = (int)((cy + 1) * scale);
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1;
	double sum[3] = {0};
	int n = 0;
	for (int y = y0; y < y1 && y < img->height; y++)
		for (int x = x0; x < x1 && x < img->width; x++, n++)
			for (int c = 0; c < 3; c++)
				sum[c] += img->rgb[3 * ((size_t)y * img->width + x) + c];
	for (int c = 0; c < 3; c++) {
		double v = n ? sum[c] / n : 0;
		rgb[c] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
	}
}

int main(int argc, char **argv)
{
	struct image *imgs[MAX_IMAGES];
	int n = 0, cols = 48;
	char err[256];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-w") && i + 1 < argc) {
			cols = atoi(argv[++i]);
			continue;
		}
		if (n == MAX_IMAGES || png_load_file(argv[i], &imgs[n], err, sizeof(err))) {
			fprintf(stderr, "pngshow: %s: %s\n", argv[i],
				n == MAX_IMAGES ? "too many images" : err);
			return 1;
		}
		n++;
	}
	if (n == 0 || cols < 4) {
		fprintf(stderr, "usage: pngshow [-w COLS] A.png [B.png ...]\n");
		return 2;
	}
	double scale[MAX_IMAGES];
	int rows = 0;
	for (int i = 0; i < n; i++) {
		scale[i] = imgs[i]->width > cols ? (double)imgs[i]->width / cols : 1;
		int h = (int)(imgs[i]->height / scale[i]);
		rows = h > rows ? h : rows;
	}
	for (int y = 0; y < rows; y += 2) {
		for (int i = 0; i < n; i++) {
			int w = (int)(imgs[i]->width / scale[i]);
			for (int x = 0; x < w; x++) {
				float top[3], bottom[3];
				box(imgs[i], scale[i], x, y, top);
				box(imgs[i], scale[i], x, y + 1, bottom);
				printf("\x1b[38;2;%d;%d;%dm\x1b[48;2;%d;%d;%dm\u2580",
				       (int)(top[0] * 255), (int)(top[1] * 255),
				       (int)(top[2] * 255), (int)(bottom[0] * 255),
				       (int)(bottom[1] * 255), (int)(bottom[2] * 255));
			}
			printf("\x1b[0m  ");
		}
		printf("\n");
	}
	for (int i = 0; i < n; i++)
		image_destroy(imgs[i]);
	return 0;
}
