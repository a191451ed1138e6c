/*
 * fit_cost.c - a foreground fit's cost, before it starts (fit_cost.h).
 *
 * An epoch's work is known once the fit is made (nn_fit_info's GFLOP an
 * epoch). On a CPU device (lavapipe) the rate is about
 * NN_CPU_GFLOPS_PER_CORE a core (nn_cpu_gflops: measured on this
 * project's machines at the CPU device's default width; lavapipe uses
 * every core, or LP_NUM_THREADS), so a 1600x1200 photo at width 64 takes about a minute
 * an epoch on two cores: such a fit is refused, saying so, unless --yes,
 * and the --max-side that brings an epoch near FIT_COST_GOOD_EPOCH_S is
 * suggested. A GPU is not estimated: its epochs are fast. Several images
 * (fit_many.c) are estimated before the first is fitted, from the sizes
 * their headers state: the run is refused when any of them would be
 * slow, naming the largest, with the whole run's time (the fits of a
 * pack share the CPU's cores, so their times add up).
 *
 * --resize and --max-side scale the image down (util/image.c's box
 * filter) before anything is fitted: the model then has the new size.
 */
#include "front/fit_cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "nn/fit.h"

#define FIT_COST_GOOD_EPOCH_S 2. /* what --max-side is suggested for */

int fit_resize_parse(const char *option, const char *text, struct fit_resize *r)
{
	char *end;
	long a = strtol(text, &end, 10), b = 0;
	int ok;
	if (!strcmp(option, "max-side")) {
		ok = end != text && !*end && a >= 1 && a <= IMAGE_MAX_SIDE;
		*r = (struct fit_resize){ .max_side = (int)a };
	} else {
		ok = end != text && (*end == 'x' || *end == 'X');
		if (ok) {
			const char *h = end + 1;
			b = strtol(h, &end, 10);
			ok = end != h && !*end && a >= 1 && b >= 1 &&
			     a <= IMAGE_MAX_SIDE && b <= IMAGE_MAX_SIDE;
		}
		*r = (struct fit_resize){ .width = (int)a, .height = (int)b };
	}
	if (ok)
		return 0;
	fprintf(stderr, "vkinrd: bad value \"%s\" for --%s (%s)\n", text,
		option,
		strcmp(option, "max-side") ? "WIDTHxHEIGHT, e.g. 640x480"
					   : "pixels, 1 to 16384");
	return -1;
}

int fit_resize_size(const struct fit_resize *r, int w, int h, int *nw, int *nh)
{
	*nw = w, *nh = h;
	if (r->max_side && (w > r->max_side || h > r->max_side)) {
		double s = (double)r->max_side / (w > h ? w : h);
		*nw = (int)lround(w * s), *nh = (int)lround(h * s);
		*nw = *nw < 1 ? 1 : *nw, *nh = *nh < 1 ? 1 : *nh;
	} else if (r->width) {
		if (r->width > w || r->height > h)
			return 1;
		*nw = r->width, *nh = r->height;
	}
	return 0;
}

int fit_resize_apply(const struct fit_resize *r, struct image **img,
		     const char *path, int quiet)
{
	int w = (*img)->width, h = (*img)->height, nw, nh;
	if (fit_resize_size(r, w, h, &nw, &nh)) {
		fprintf(stderr,
			"vkinrd: %s is %dx%d: --resize %dx%d would "
			"enlarge it, and it only scales down\n",
			path, w, h, r->width, r->height);
		return 1;
	}
	if (nw == w && nh == h)
		return 0;
	struct image *small = image_scale_down(*img, nw, nh);
	if (!small) {
		fprintf(stderr, "vkinrd: out of memory scaling %s down\n",
			path);
		return 1;
	}
	if (!quiet)
		fprintf(stderr, "vkinrd: %s scaled from %dx%d to %dx%d\n", path,
			w, h, nw, nh);
	image_destroy(*img);
	*img = small;
	return 0;
}

/* seconds as "45 s", "12 min", "3.5 h" */
static const char *duration(double s, char *buf, size_t n)
{
	if (s < 90)
		snprintf(buf, n, "%.0f s", s);
	else if (s < 5400)
		snprintf(buf, n, "%.0f min", s / 60);
	else
		snprintf(buf, n, "%.1f h", s / 3600);
	return buf;
}

int fit_cost_check(const struct nn_fit *fit, const struct gpu_context *gpu,
		   const struct image *target, int epochs_left, int yes)
{
	struct nn_fit_info info;
	if (yes || !gpu_info(gpu)->is_cpu)
		return 0;
	nn_fit_get_info(fit, &info);
	int cores;
	double rate = nn_cpu_gflops(&cores);
	double epoch_s = info.gflop_per_epoch / rate;
	if (epoch_s <= NN_CPU_SLOW_EPOCH_S)
		return 0;
	int side =
	    target->width > target->height ? target->width : target->height;
	int suggest = (int)(side * sqrt(FIT_COST_GOOD_EPOCH_S / epoch_s));
	suggest = suggest >= 32 ? suggest / 16 * 16 : 16;
	char each[32], all[32], small[32];
	double small_s =
	    epoch_s * ((double)suggest * suggest) / ((double)side * side);
	/* the run's time at that size too: a photo wants thousands of
	 * epochs, and 2 s an epoch is then hours */
	fprintf(stderr,
		"vkinrd: this fit would be slow on %s, a CPU device: about %s "
		"an epoch, %s for %d epochs (%.1f GFLOP an epoch for %dx%d "
		"pixels, at about %.1f GFLOP/s on %d cores).\n"
		"Run it anyway with --yes, or scale the image down first: "
		"--max-side %d takes about %.0f s an epoch (%s for the %d).\n",
		gpu_info(gpu)->name, duration(epoch_s, each, sizeof(each)),
		duration(epoch_s * epochs_left, all, sizeof(all)), epochs_left,
		info.gflop_per_epoch, target->width, target->height, rate,
		cores, suggest, small_s,
		duration(small_s * epochs_left, small, sizeof(small)),
		epochs_left);
	return 2;
}

int fit_cost_check_many(const struct gpu_context *gpu, int nblocks, int nf,
			const int *w, const int *h, char *const *paths, int n,
			int epochs, int yes)
{
	int cores, slow = 0, big = -1;
	double rate, total = 0, worst = 0;

	if (yes || !gpu_info(gpu)->is_cpu)
		return 0;
	rate = nn_cpu_gflops(&cores);
	for (int i = 0; i < n; i++) {
		double s = nn_epoch_gflop(nblocks, nf, w[i], h[i]) / rate;
		total += s * epochs;
		slow += s > NN_CPU_SLOW_EPOCH_S;
		if (s > worst)
			worst = s, big = i;
	}
	if (!slow)
		return 0;
	int side = w[big] > h[big] ? w[big] : h[big];
	int suggest = (int)(side * sqrt(FIT_COST_GOOD_EPOCH_S / worst));
	suggest = suggest >= 32 ? suggest / 16 * 16 : 16;
	char each[32], all[32];
	fprintf(stderr,
		"vkinrd: %d of these %d images would be slow on %s, a CPU "
		"device: the largest, %s (%dx%d), about %s an epoch; all %d "
		"about %s for %d epochs each (at about %.1f GFLOP/s on %d "
		"cores).\n"
		"Run them anyway with --yes, or scale them down first: "
		"--max-side %d takes about %.0f s an epoch for the largest.\n",
		slow, n, gpu_info(gpu)->name, paths[big], w[big], h[big],
		duration(worst, each, sizeof(each)), n,
		duration(total, all, sizeof(all)), epochs, rate, cores, suggest,
		worst * ((double)suggest * suggest) / ((double)side * side));
	return 2;
}
