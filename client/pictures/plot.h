/*
 * plot.h - loss curves as pictures: PSNR (the model's and the live one),
 * MSE (log scale) and learning rate against epoch, the wall clock's
 * time or training time, one
 * panel each, one line per job, or a batch's summary (the mean and
 * spread of PSNR over epochs, a histogram of the final PSNRs); as SVG
 * (text, for a browser or a paper) or PNG (antialiased, real text:
 * cairo).
 */
#ifndef VKINR_CLIENT_PLOT_H
#define VKINR_CLIENT_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct history;

/* What the x axis shows: the epoch, the wall clock's time each epoch was
 * recorded (the metrics rows' "time"), or the training seconds so far. */
enum plot_x { PLOT_X_EPOCH, PLOT_X_CLOCK, PLOT_X_TRAINING };

struct plot_opts {
	enum plot_x x;
	int smooth; /* each point the mean of the last smooth epochs (1: raw) */
	int summary; /* the batch summary instead of the curves */
};

/* The final PSNRs of jobs (each one's last epoch, the model's): how many
 * jobs have one, their mean, standard deviation, least and most. */
struct plot_stats {
	int n;
	double mean, sd, min, max;
};
void plot_final_stats(const struct history *h, int n, struct plot_stats *s);

/* Writes the SVG document of the histories to out; 0 or ERR_NOMEM. */
int plot_svg(FILE *out, const struct history *h, int n,
	     const struct plot_opts *o);
/* Encodes the PNG of the histories; 0, ERR_NOMEM or ERR_IO. */
int plot_png(const struct history *h, int n, const struct plot_opts *o,
	     uint8_t **data, size_t *size);

#endif
