/*
 * fit_cost.h - what a foreground fit (`vkinrd --fit`) costs before it
 * starts: --resize WxH and --max-side N scale the image down first, and a
 * fit whose epochs would be slow on a CPU device is refused with its
 * estimate (seconds an epoch, the whole run) unless --yes, with the
 * --max-side that would make it quick (fit_cost.c).
 */
#ifndef VKINR_FIT_COST_H
#define VKINR_FIT_COST_H

#include "util/image.h"

struct nn_fit;
struct gpu_context;

/* --resize WxH (width and height) or --max-side N (max_side); 0: none. */
struct fit_resize {
	int width, height, max_side;
};

/* Reads --resize's WxH or --max-side's N into r; -1 when it is not one
 * (said on stderr). */
int fit_resize_parse(const char *option, const char *text,
		     struct fit_resize *r);
/* The size w x h becomes under r (*nw, *nh); 1 when r would enlarge it
 * (left as it is then). */
int fit_resize_size(const struct fit_resize *r, int w, int h, int *nw, int *nh);
/* Scales *img down as r says (never up: a size larger than the image is
 * refused). 0, or 1 with the reason on stderr. */
int fit_resize_apply(const struct fit_resize *r, struct image **img,
		     const char *path, int quiet);
/* 0 when the fit may start; else, on a CPU device whose epochs would
 * take over NN_CPU_SLOW_EPOCH_S (nn/fit.h), the estimate is printed and the exit
 * status returned (2). yes: go on regardless. */
int fit_cost_check(const struct nn_fit *fit, const struct gpu_context *gpu,
		   const struct image *target, int epochs_left, int yes);
/* The same for several images (`--fit ... --out DIR`), before any is
 * fitted: n images of w[i] x h[i] pixels (as they will be fitted; 0: not
 * known) at width nf with nblocks blocks, epochs each. Refused (2) when
 * any of them would be slow; the largest is named (paths[i]). */
int fit_cost_check_many(const struct gpu_context *gpu, int nblocks, int nf,
			const int *w, const int *h, char *const *paths, int n,
			int epochs, int yes);

#endif
