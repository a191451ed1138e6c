/*
 * pngshow.c - shows PNG images side by side in a terminal, two pixel rows
 * a character row (image_print_blocks, as `vkinrctl preview` does), scaled
 * down to at most COLS columns each. The demo uses it to show the target
 * next to vkinrd's reconstruction.
 *
 *   pngshow [-w COLS] A.png [B.png ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/image_codec.h"

#define MAX_IMAGES IMAGE_PRINT_MAX

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
		if (n == MAX_IMAGES ||
		    png_load_file(argv[i], &imgs[n], err, sizeof(err))) {
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
	image_print_blocks(stdout, (const struct image *const *)imgs, n, cols);
	for (int i = 0; i < n; i++)
		image_destroy(imgs[i]);
	return 0;
}
