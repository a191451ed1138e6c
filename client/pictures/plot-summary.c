/*
 * plot-summary.c - a batch's summary as one picture (`vkinrctl plot
 * --summary`): above, the PSNR (the model's) over epochs as the mean of
 * the jobs at each epoch (a job that had ended counts after its last
 * epoch at its final PSNR: a batch whose best jobs stop early at
 * --target-psnr does not seem to fall as they leave, and the curve ends
 * at the final PSNRs' mean), a band of one standard deviation
 * either side and thin lines at the least and the most; below, a
 * histogram of the jobs' final PSNRs (as list and show give them: the
 * exported model's once a job is done); and a line
 * of figures over both (how many jobs, the final PSNRs' mean, standard
 * deviation, least and most), which plot_final_stats also gives to
 * --json.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "core/history.h"
#include "pictures/plot-internal.h"

#define SUM_H 640
#define SUM_CURVE_TOP 64
#define SUM_CURVE_H 240
#define SUM_HIST_TOP 390
#define SUM_HIST_H 190
#define SUM_MAX_POINTS 2000
#define SUM_BAND 0x1f77b4 /* the mean's colour, the band lighter */
#define SUM_EDGE 0x7f7f7f

/* A job's final PSNR: as show and list give it (the exported model's),
 * else its last epoch's; NAN if it has no epoch. */
static double final_psnr(const struct history *h)
{
	if (!h->n)
		return NAN;
	return isfinite(h->psnr) ? h->psnr : h->rows[h->n - 1].psnr;
}

void plot_final_stats(const struct history *h, int n, struct plot_stats *s)
{
	double sum = 0, sq = 0;

	memset(s, 0, sizeof(*s));
	s->min = INFINITY, s->max = -INFINITY;
	for (int j = 0; j < n; j++) {
		double v = final_psnr(&h[j]);
		if (!isfinite(v))
			continue;
		s->n++, sum += v;
		s->min = fmin(s->min, v), s->max = fmax(s->max, v);
	}
	if (!s->n) {
		s->mean = s->sd = s->min = s->max = NAN;
		return;
	}
	s->mean = sum / s->n;
	for (int j = 0; j < n; j++) { /* two passes: no cancellation */
		double v = final_psnr(&h[j]);
		if (isfinite(v))
			sq += (v - s->mean) * (v - s->mean);
	}
	s->sd = s->n > 1 ? sqrt(sq / (s->n - 1)) : 0;
}

/* Per epoch (1..epochs): how many jobs count there (those that reached
 * it, and those ended before it), the mean, standard deviation, least
 * and most of their PSNRs. */
struct by_epoch {
	int epochs;
	int *count;
	double *mean, *sd, *min, *max;
};

static int gather(const struct history *h, int n, struct by_epoch *e)
{
	e->epochs = 0;
	for (int j = 0; j < n; j++)
		if (h[j].n && h[j].rows[h[j].n - 1].epoch > e->epochs)
			e->epochs = h[j].rows[h[j].n - 1].epoch;
	size_t len = (size_t)e->epochs + 1;
	e->count = calloc(len, sizeof(*e->count));
	e->mean = calloc(len, sizeof(double));
	e->sd = calloc(len, sizeof(double));
	e->min = malloc(len * sizeof(double));
	e->max = malloc(len * sizeof(double));
	if (!e->count || !e->mean || !e->sd || !e->min || !e->max)
		return ERR_NOMEM;
	for (size_t i = 0; i < len; i++)
		e->min[i] = INFINITY, e->max[i] = -INFINITY;
	for (int pass = 0; pass < 2; pass++) /* sums, then deviations */
		for (int j = 0; j < n; j++) {
			int last = h[j].n ? h[j].rows[h[j].n - 1].epoch : 0;
			int tail = h[j].ended ? e->epochs - last : 0;
			for (int i = 0; i < h[j].n + tail; i++) {
				int row = i < h[j].n,
				    k = row ? h[j].rows[i].epoch
					    : last + 1 + i - h[j].n;
				double v =
				    row ? h[j].rows[i].psnr : final_psnr(&h[j]);
				if (k < 1 || k > e->epochs || !isfinite(v))
					continue;
				if (pass) {
					double d = v - e->mean[k] / e->count[k];
					e->sd[k] += d * d;
					continue;
				}
				e->count[k]++;
				e->mean[k] += v;
				e->min[k] = fmin(e->min[k], v);
				e->max[k] = fmax(e->max[k], v);
			}
		}
	for (int k = 1; k <= e->epochs; k++) {
		int c = e->count[k];
		if (!c)
			continue;
		e->mean[k] /= c;
		e->sd[k] = c > 1 ? sqrt(e->sd[k] / (c - 1)) : 0;
	}
	return 0;
}

static void release(struct by_epoch *e)
{
	free(e->count);
	free(e->mean);
	free(e->sd);
	free(e->min);
	free(e->max);
}

static double sx(double v, double lo, double hi)
{
	return PLOT_LEFT +
	       (v - lo) / (hi - lo) * (PLOT_W - PLOT_LEFT - PLOT_RIGHT);
}

/* The x grid of lo..hi at step: positions and values; how many. */
static int x_grid(double lo, double hi, double step, double *xs, double *xv)
{
	int nx = 0;
	for (double x = lo; x <= hi + step * 1e-6 && nx < 64; x += step, nx++)
		xs[nx] = sx(x, lo, hi), xv[nx] = fabs(x) < 1e-12 ? 0 : x;
	return nx;
}

/* The upper panel: mean, band and extremes over epochs. */
static int draw_curve(const struct plot_canvas *cv, const struct by_epoch *e,
		      int jobs)
{
	struct plot_panel p = { .lo = INFINITY, .hi = -INFINITY };
	double xs[64], xv[64], *xy, *lo, *hi, *mid;
	int thin = e->epochs / SUM_MAX_POINTS + 1, np = 0;
	double x_max = e->epochs,
	       x_step = fmax(1, round(plot_nice_step(x_max)));
	char title[160];

	for (int k = 1; k <= e->epochs; k++)
		if (e->count[k]) {
			p.lo = fmin(p.lo, e->min[k]);
			p.hi = fmax(p.hi, e->max[k]);
		}
	p.top = SUM_CURVE_TOP, p.height = SUM_CURVE_H;
	plot_panel_range(&p);
	x_max = ceil(x_max / x_step - 1e-9) * x_step;
	size_t cap = 2 * ((size_t)e->epochs / thin + 2);
	xy = malloc(5 * cap * sizeof(*xy)); /* the band: twice the points */
	if (!xy)
		return ERR_NOMEM;
	mid = xy + 2 * cap, lo = mid + cap, hi = lo + cap;
	snprintf(title, sizeof(title),
		 "psnr (dB) of %d jobs over epochs (an ended job at its "
		 "final one): the mean, one standard deviation, the least and "
		 "the most",
		 jobs);
	cv->text(cv->ctx, PLOT_LEFT, p.top - 6, PLOT_START, PLOT_FONT,
		 PLOT_BLACK, title);
	int nx = x_grid(0, x_max, x_step, xs, xv);
	plot_panel_axes(cv, &p, PLOT_LEFT, PLOT_W - PLOT_RIGHT, xs, xv, nx,
			PLOT_XLABEL_NUMBER);
	for (int k = 1; k <= e->epochs; k++) {
		if (!e->count[k] || (k % thin && k != e->epochs))
			continue;
		double x = sx(k, 0, x_max);
		mid[2 * np] = lo[2 * np] = hi[2 * np] = x;
		mid[2 * np + 1] = plot_panel_y(&p, e->mean[k]);
		lo[2 * np + 1] = plot_panel_y(&p, e->min[k]);
		hi[2 * np + 1] = plot_panel_y(&p, e->max[k]);
		xy[2 * np] = x;
		xy[2 * np + 1] = plot_panel_y(&p, e->mean[k] + e->sd[k]);
		np++;
	}
	/* the band: mean + sd forward, mean - sd back */
	int nb = np;
	for (int i = np - 1, k = e->epochs; i >= 0 && k >= 1; k--) {
		if (!e->count[k] || (k % thin && k != e->epochs))
			continue;
		xy[2 * nb] = mid[2 * i];
		xy[2 * nb + 1] = plot_panel_y(&p, e->mean[k] - e->sd[k]);
		nb++, i--;
	}
	if (np) {
		cv->polygon(cv->ctx, xy, nb, SUM_BAND, 0.25);
		cv->line(cv->ctx, lo, np, SUM_EDGE, 1);
		cv->line(cv->ctx, hi, np, SUM_EDGE, 1);
		cv->line(cv->ctx, mid, np, SUM_BAND, 2);
	}
	cv->text(cv->ctx, (PLOT_LEFT + PLOT_W - PLOT_RIGHT) / 2.0,
		 p.top + p.height + 34, PLOT_MIDDLE, PLOT_FONT, PLOT_BLACK,
		 "epoch");
	free(xy);
	return 0;
}

/* The lower panel: how many jobs ended in each bin of final PSNR. */
static int draw_histogram(const struct plot_canvas *cv, const struct history *h,
			  int n, const struct plot_stats *s)
{
	struct plot_panel x = { .lo = s->min, .hi = s->max };
	struct plot_panel p = { .lo = 0 };
	double xs[64], xv[64];
	int *count, most = 1;

	plot_panel_range(&x); /* the bins' edges: half a tick step wide */
	double width = x.step / 2;
	int bins = (int)lround((x.hi - x.lo) / width);
	if (bins < 1)
		bins = 1;
	if (!(count = calloc(bins, sizeof(*count))))
		return ERR_NOMEM;
	for (int j = 0; j < n; j++) {
		double v = final_psnr(&h[j]);
		if (!isfinite(v))
			continue;
		int b = (int)floor((v - x.lo) / width);
		b = b < 0 ? 0 : b >= bins ? bins - 1 : b;
		if (++count[b] > most)
			most = count[b];
	}
	p.hi = most;
	p.top = SUM_HIST_TOP, p.height = SUM_HIST_H;
	plot_panel_range(&p);
	if (p.step < 1) { /* whole jobs */
		p.step = 1, p.tick0 = 0, p.hi = ceil(p.hi);
	}
	cv->text(cv->ctx, PLOT_LEFT, p.top - 6, PLOT_START, PLOT_FONT,
		 PLOT_BLACK,
		 "jobs by final psnr (dB), as list and show "
		 "give it");
	int nx = x_grid(x.lo, x.hi, x.step, xs, xv);
	plot_panel_axes(cv, &p, PLOT_LEFT, PLOT_W - PLOT_RIGHT, xs, xv, nx,
			PLOT_XLABEL_NUMBER);
	for (int b = 0; b < bins; b++) {
		if (!count[b])
			continue;
		double x0 = sx(x.lo + b * width, x.lo, x.hi);
		double x1 = sx(x.lo + (b + 1) * width, x.lo, x.hi);
		double y = plot_panel_y(&p, count[b]);
		cv->rect(cv->ctx, x0 + 1, y, x1 - x0 - 2, p.top + p.height - y,
			 SUM_BAND, PLOT_NONE);
	}
	cv->text(cv->ctx, (PLOT_LEFT + PLOT_W - PLOT_RIGHT) / 2.0,
		 p.top + p.height + 34, PLOT_MIDDLE, PLOT_FONT, PLOT_BLACK,
		 "final psnr (dB)");
	free(count);
	return 0;
}

int plot_summary_draw(const struct plot_canvas *cv, const struct history *h,
		      int n)
{
	struct plot_stats s;
	struct by_epoch e = { 0 };
	char text[256];
	int rc;

	plot_final_stats(h, n, &s);
	if ((rc = cv->begin(cv->ctx, PLOT_W, SUM_H)))
		return rc;
	if (!s.n) {
		snprintf(text, sizeof(text),
			 "none of these %d jobs has an epoch yet: nothing to "
			 "sum up until they have run",
			 n);
		cv->text(cv->ctx, PLOT_W / 2, SUM_H / 2, PLOT_MIDDLE, 16,
			 PLOT_BLACK, text);
		return 0;
	}
	snprintf(text, sizeof(text),
		 "%d job%s: final psnr mean %.2f dB, standard deviation "
		 "%.2f dB, least %.2f dB, most %.2f dB",
		 s.n, s.n == 1 ? "" : "s", s.mean, s.sd, s.min, s.max);
	cv->text(cv->ctx, PLOT_LEFT, 24, PLOT_START, 14, PLOT_BLACK, text);
	if (!(rc = gather(h, n, &e)))
		rc = draw_curve(cv, &e, s.n);
	if (!rc)
		rc = draw_histogram(cv, h, n, &s);
	release(&e);
	return rc;
}
