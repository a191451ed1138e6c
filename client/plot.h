/*
 * plot.h - loss curves as pictures: PSNR (the last epoch's and the
 * model's), MSE (log scale) and learning rate against epoch or training
 * time, one panel each, one line per job, as SVG (text, for
 * a browser or a paper) or PNG (pixels, zlib through png8.h).
 */
#ifndef VKINR_CLIENT_PLOT_H
#define VKINR_CLIENT_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct history;

/* Writes the SVG document of the histories to out; x_time: training
 * seconds on the x axis instead of epochs. */
void plot_svg(FILE *out, const struct history *h, int n, int x_time);
/* Encodes the PNG of the histories; 0 or ERR_NOMEM. */
int plot_png(const struct history *h, int n, int x_time, uint8_t **data,
	     size_t *size);

#endif
