/*
 * plot-internal.h - what the plot's modules share: the canvas both
 * formats draw through (plot-svg.c writes SVG elements, plot-cairo.c
 * paints pixels with cairo), the colours, and the panels' axes (plot.c),
 * which the curves (plot.c) and the batch summary (plot-summary.c) use.
 *
 * Coordinates are pixels from the top left; colours 0xRRGGBB.
 */
#ifndef VKINR_CLIENT_PLOT_INTERNAL_H
#define VKINR_CLIENT_PLOT_INTERNAL_H

#include <stdint.h>

#include "pictures/plot.h"

#define PLOT_W 900
#define PLOT_LEFT 90 /* room for the tick labels */
#define PLOT_RIGHT 20
#define PLOT_FONT 12       /* the labels' size in pixels */
#define PLOT_GRID 0xe4e4e4 /* the grid behind the curves */
#define PLOT_FRAME 0x999999
#define PLOT_DIM 0x555555
#define PLOT_BLACK 0x000000
#define PLOT_NONE 0xffffffffu /* no fill, no stroke */

enum plot_anchor { PLOT_START, PLOT_MIDDLE, PLOT_END };

/* The operations a picture is made of; ctx is the format's own. */
struct plot_canvas {
	void *ctx;
	/* the width of s at size pixels */
	double (*text_width)(void *ctx, double size, const char *s);
	/* the picture's size, known once the layout is made; called first */
	int (*begin)(void *ctx, int width, int height);
	/* a line through n points (xy: x0 y0 x1 y1 ...) */
	void (*line)(void *ctx, const double *xy, int n, uint32_t rgb,
		     double width);
	/* a filled polygon, alpha its opacity */
	void (*polygon)(void *ctx, const double *xy, int n, uint32_t rgb,
			double alpha);
	void (*rect)(void *ctx, double x, double y, double w, double h,
		     uint32_t fill, uint32_t stroke);
	/* y is the baseline */
	void (*text)(void *ctx, double x, double y, enum plot_anchor a,
		     double size, uint32_t rgb, const char *s);
};

/* One panel: its value range, widened to round ticks, and its place. */
struct plot_panel {
	double lo, hi;      /* value range (log10 on a log scale) */
	double tick0, step; /* the first tick and the distance between */
	int log;            /* a log10 scale: ticks at round values */
	int top, height;
};

/* Job j's colour of n: n distinct colours however many jobs there are. */
uint32_t plot_color(int j, int n);
/* A round step (1, 2 or 5 times a power of ten), about 5 over span. */
double plot_nice_step(double span);
/* Widens p->lo..hi (the data's range, or infinities: none) to ticks. */
void plot_panel_range(struct plot_panel *p);
/* The panel's ticks, as values of its scale; how many (up to max). */
int plot_panel_ticks(const struct plot_panel *p, double *out, int max);
double plot_panel_y(const struct plot_panel *p, double v);
/* How the x grid's values are labelled below a panel: not at all, as
 * numbers, or as the local time of day (Unix seconds; with the date when
 * the grid's step is a day or more). */
enum plot_xlabels { PLOT_XLABEL_NONE, PLOT_XLABEL_NUMBER, PLOT_XLABEL_CLOCK };
/* A panel's grid, tick labels and frame between x0 and x1, the x grid
 * at xs (nx of them) labelled below as xlabels says. */
void plot_panel_axes(const struct plot_canvas *cv, const struct plot_panel *p,
		     double x0, double x1, const double *xs,
		     const double *xvals, int nx, enum plot_xlabels xlabels);
/* A round step of the wall clock (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15,
 * 30 min, 1, 2, 3, 6, 12 h, days), about 6 over span seconds. */
double plot_clock_step(double span);
/* t rounded down to a multiple of step in local time (the hour's and
 * the day's ticks fall on the local hour and midnight). */
double plot_clock_floor(double t, double step);

/* The batch summary (plot-summary.c), drawn as plot_draw draws. */
int plot_summary_draw(const struct plot_canvas *cv, const struct history *h,
		      int n);
/* The picture: the curves, or with o->summary the batch summary.
 * 0 or ERR_NOMEM. */
int plot_draw(const struct plot_canvas *cv, const struct history *h, int n,
	      const struct plot_opts *o);

#endif
