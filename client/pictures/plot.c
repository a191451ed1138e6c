/*
 * plot.c - PSNR (the model's, then the live one), MSE and learning rate
 * against epoch (or the wall clock's time, or training time), drawn through a canvas (SVG or PNG:
 * plot-internal.h), and the axes and colours the batch summary shares.
 *
 * One layout: four panels stacked, sharing the x axis, each with its own
 * range (MSE on a log10 scale), ticks at round values with a light grid
 * behind the curves, and its title above: psnr (the model's, the weights
 * an export writes), live psnr (each epoch's own, measured before its
 * step), mse and the learning rate. A legend names every job (id and
 * name), wrapped so that no two entries overlap, the picture growing
 * with it (up to PLOT_LEGEND_ROWS rows; a note says how many more were
 * left out). Every job has a colour of its own (plot_color). --smooth N
 * draws each point as the mean of the last N epochs' values (the
 * learning rate as it is). A plot of jobs without any epoch yet is one
 * sentence saying so, not empty axes. A line has at most PLOT_MAX_POINTS
 * points.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/errors.h"
#include "core/history.h"
#include "pictures/plot-internal.h"

#define PLOT_EMPTY_H 660
#define PLOT_GAP 40    /* between panels: the next one's title */
#define PLOT_BOTTOM 40 /* the x axis's labels */
#define PLOT_PANEL_H 109
#define PLOT_MAX_POINTS 2000
#define PLOT_PANELS 4
#define PANEL_MSE 2 /* drawn on a log10 scale */
#define PANEL_LR 3  /* never smoothed */
#define LEGEND_ROW 16
#define PLOT_LEGEND_ROWS 40

/* psnr: the model's (the weights an export writes); live: each epoch's
 * own, measured before its step */
static const char *const panel_title[PLOT_PANELS] = {
	"psnr (dB)", "live psnr (dB)", "mse (log scale)", "learning rate"
};

/* ---- colours ---- */

/* Ten colours told apart easily; past ten jobs, n hues around the
 * wheel, alternately lighter and darker, none the same. */
static const uint32_t palette[] = { 0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728,
				    0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f,
				    0xbcbd22, 0x17becf };
#define N_COLORS (int)(sizeof(palette) / sizeof(palette[0]))

static uint32_t hsv(double h, double s, double v)
{
	double c = v * s, hp = fmod(h, 1.0) * 6;
	double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = v - c;
	double r = 0, g = 0, b = 0;
	switch ((int)hp) {
	case 0:
		r = c, g = x;
		break;
	case 1:
		r = x, g = c;
		break;
	case 2:
		g = c, b = x;
		break;
	case 3:
		g = x, b = c;
		break;
	case 4:
		r = x, b = c;
		break;
	default:
		r = c, b = x;
	}
	return (uint32_t)lround((r + m) * 255) << 16 |
	       (uint32_t)lround((g + m) * 255) << 8 |
	       (uint32_t)lround((b + m) * 255);
}

uint32_t plot_color(int j, int n)
{
	if (n <= N_COLORS)
		return palette[j % N_COLORS];
	return hsv((double)j / n, j % 2 ? 0.85 : 0.65, j % 2 ? 0.60 : 0.90);
}

/* ---- axes ---- */

double plot_nice_step(double span)
{
	double raw = span / 5, mag = pow(10, floor(log10(raw)));
	double f = raw / mag;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

double plot_clock_step(double span)
{
	static const double steps[] = { 1,    2,    5,     10,    15,   30,
					60,   120,  300,   600,   900,  1800,
					3600, 7200, 10800, 21600, 43200 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i] * 6 >= span)
			return steps[i];
	return 86400 * fmax(1, plot_nice_step(span / 86400 * 5 / 6));
}

double plot_clock_floor(double t, double step)
{
	time_t at = (time_t)floor(t);
	struct tm tm;
	double off = localtime_r(&at, &tm) ? (double)tm.tm_gmtoff : 0;

	return floor((t + off) / step + 1e-9) * step - off;
}

void plot_panel_range(struct plot_panel *p)
{
	if (!isfinite(p->lo) || !isfinite(p->hi))
		p->lo = 0, p->hi = 1;
	if (p->hi - p->lo < 1e-12) {
		double pad = fabs(p->lo) * 0.05 + 1e-9;
		p->lo -= pad;
		p->hi += pad;
	}
	if (p->log) { /* round values, placed on the log scale */
		if (p->hi - p->lo > 1) { /* decades */
			p->lo = floor(p->lo), p->hi = ceil(p->hi);
			p->step = 0;
		} else {
			p->step =
			    plot_nice_step(pow(10, p->hi) - pow(10, p->lo));
			p->tick0 =
			    ceil(pow(10, p->lo) / p->step - 1e-9) * p->step;
		}
		return;
	}
	/* out to the ticks around the data */
	p->step = plot_nice_step(p->hi - p->lo);
	p->lo = floor(p->lo / p->step + 1e-9) * p->step;
	p->hi = ceil(p->hi / p->step - 1e-9) * p->step;
	p->tick0 = p->lo;
}

int plot_panel_ticks(const struct plot_panel *p, double *out, int max)
{
	int n = 0;
	if (p->log && p->step == 0) {
		for (double v = p->lo; v <= p->hi + 1e-9 && n < max; v += 1)
			out[n++] = v;
	} else if (p->log) {
		for (double v = p->tick0; log10(v) <= p->hi + 1e-9 && n < max;
		     v += p->step)
			if (v > 0)
				out[n++] = log10(v);
	} else {
		for (double v = p->tick0;
		     v <= p->hi + p->step * 1e-6 && n < max; v += p->step)
			out[n++] = v;
	}
	return n;
}

double plot_panel_y(const struct plot_panel *p, double v)
{
	return p->top + (p->hi - v) / (p->hi - p->lo) * p->height;
}

static int magnitude(double v) { return (int)floor(log10(v) + 1e-9); }

/* The ticks' labels: 10^v on a log scale, others as they are, no "-0".
 * Ticks a step apart get the decimals the step needs, more while two
 * neighbours would read the same (three significant digits made one
 * label of 14.76 ... 14.84 on a short run); values all below 1e-3 are
 * written as powers of ten. */
static void tick_texts(const struct plot_panel *p, const double *ticks, int n,
		       char (*out)[32])
{
	double big = 0, step = p->step;
	int d, e, same = 1;

	if (p->log && p->step == 0) { /* decades */
		for (int t = 0; t < n; t++)
			snprintf(out[t], sizeof(out[t]), "%.2g",
				 pow(10, ticks[t]));
		return;
	}
	for (int t = 0; t < n; t++)
		big = fmax(big, fabs(p->log ? pow(10, ticks[t]) : ticks[t]));
	e = big > 0 && big < 1e-3;
	d = step > 0 ? (e ? magnitude(big) - magnitude(step) : -magnitude(step))
		     : 3;
	for (d = d < 0 ? 0 : d; same && d < 12; d++) {
		same = 0;
		for (int t = 0; t < n; t++) {
			double v = p->log ? pow(10, ticks[t]) : ticks[t];
			if (fabs(v) < step * 1e-6 || fabs(v) < 1e-300)
				v = 0;
			snprintf(out[t], sizeof(out[t]),
				 e && v != 0 ? "%.*e" : "%.*f", v != 0 ? d : 0,
				 v);
			if (t && !strcmp(out[t], out[t - 1]))
				same = 1;
		}
	}
}

/* An x grid value's label: a number, or the local time of day (the
 * seconds only when the grid's step has them, the date when it is a day
 * or more). */
static void x_text(double v, double step, enum plot_xlabels how, char *buf,
		   size_t n)
{
	time_t at = (time_t)llround(v);
	struct tm tm;

	if (how != PLOT_XLABEL_CLOCK || !localtime_r(&at, &tm)) {
		snprintf(buf, n, "%.6g", v);
		return;
	}
	strftime(buf, n,
		 step >= 86400 ? "%m-%d"
		 : step >= 60  ? "%H:%M"
			       : "%H:%M:%S",
		 &tm);
}

void plot_panel_axes(const struct plot_canvas *cv, const struct plot_panel *p,
		     double x0, double x1, const double *xs,
		     const double *xvals, int nx, enum plot_xlabels xlabels)
{
	double ticks[32], xy[4];
	char text[64], labels[32][32];
	int nticks = plot_panel_ticks(p, ticks, 32);

	tick_texts(p, ticks, nticks, labels);
	for (int t = 0; t < nticks; t++) {
		double y = plot_panel_y(p, ticks[t]);
		xy[0] = x0, xy[1] = y, xy[2] = x1, xy[3] = y;
		cv->line(cv->ctx, xy, 2, PLOT_GRID, 1);
		cv->text(cv->ctx, x0 - 6, y + 4, PLOT_END, PLOT_FONT,
			 PLOT_BLACK, labels[t]);
	}
	for (int i = 0; i < nx; i++) {
		xy[0] = xs[i], xy[1] = p->top, xy[2] = xs[i];
		xy[3] = p->top + p->height;
		cv->line(cv->ctx, xy, 2, PLOT_GRID, 1);
		if (xlabels != PLOT_XLABEL_NONE) {
			x_text(xvals[i], nx > 1 ? xvals[1] - xvals[0] : 1,
			       xlabels, text, sizeof(text));
			/* the last one inside the picture (a time is wide) */
			int wide =
			    xs[i] +
				cv->text_width(cv->ctx, PLOT_FONT, text) / 2 >
			    x1 + PLOT_RIGHT - 2;
			cv->text(cv->ctx, wide ? x1 + PLOT_RIGHT - 2 : xs[i],
				 p->top + p->height + 16,
				 wide ? PLOT_END : PLOT_MIDDLE, PLOT_FONT,
				 PLOT_BLACK, text);
		}
	}
	cv->rect(cv->ctx, x0, p->top, x1 - x0, p->height, PLOT_NONE,
		 PLOT_FRAME);
}

/* ---- the curves' layout ---- */

/* One legend entry: where it goes and what it says. */
struct entry {
	int x, y;
	char text[160];
};

struct layout {
	const struct plot_opts *o;
	double x_min, x_max, x_step; /* the x axis (Unix seconds for a clock) */
	struct plot_panel p[PLOT_PANELS];
	int plot_w, height, key_y; /* the picture's height, the key's line */
	int rows;                  /* rows in all histories */
	struct entry *legend;      /* one per job, NULL past the rows */
	int nlegend, hidden;       /* entries placed, jobs left out */
};

static double value_of(const struct history_row *r, int panel)
{
	switch (panel) {
	case 0:
		return r->psnr;
	case 1:
		return r->live_psnr;
	case PANEL_MSE:
		return r->mse > 0 ? log10(r->mse) : NAN;
	default:
		return r->lr;
	}
}

/* NAN for an epoch without a time (kept before the rows had one) */
static double x_value(const struct layout *l, const struct history_row *r)
{
	return l->o->x == PLOT_X_CLOCK      ? r->time
	       : l->o->x == PLOT_X_TRAINING ? r->seconds
					    : r->epoch;
}

/* The legend's entries, placed left to right and wrapped; returns the
 * height it takes. */
static int place_legend(const struct plot_canvas *cv, const struct history *h,
			int n, struct layout *l)
{
	int x = PLOT_LEFT, row = 0, swatch = 24;

	l->legend = calloc(n > 0 ? n : 1, sizeof(*l->legend));
	for (int j = 0; j < n && l->legend; j++) {
		struct entry *e = &l->legend[l->nlegend];
		snprintf(e->text, sizeof(e->text), "job %s %s%s", h[j].idtext,
			 h[j].name, h[j].n ? "" : " (no epochs yet)");
		int w = swatch +
			(int)ceil(cv->text_width(cv->ctx, PLOT_FONT, e->text)) +
			16;
		if (x + w > PLOT_W - PLOT_RIGHT && x > PLOT_LEFT)
			x = PLOT_LEFT, row++;
		if (row >= PLOT_LEGEND_ROWS) {
			l->hidden = n - j;
			break;
		}
		e->x = x, e->y = 6 + row * LEGEND_ROW;
		x += w;
		l->nlegend++;
	}
	return 6 + (row < PLOT_LEGEND_ROWS ? row + 1 : row) * LEGEND_ROW;
}

static void make_layout(const struct plot_canvas *cv, const struct history *h,
			int n, struct layout *l)
{
	double x_lo = INFINITY;

	l->x_max = l->o->x == PLOT_X_TRAINING ? 1e-3 : 1;
	if (l->o->x == PLOT_X_CLOCK)
		l->x_max = -INFINITY;
	l->plot_w = PLOT_W - PLOT_LEFT - PLOT_RIGHT;
	l->key_y = place_legend(cv, h, n, l);
	int top = l->key_y + LEGEND_ROW + 24;
	for (int k = 0; k < PLOT_PANELS; k++) {
		l->p[k].lo = INFINITY;
		l->p[k].hi = -INFINITY;
		l->p[k].log = k == PANEL_MSE;
		l->p[k].top = top + k * (PLOT_PANEL_H + PLOT_GAP);
		l->p[k].height = PLOT_PANEL_H;
	}
	/* 900x660 with one row of legend, taller by the rows past it */
	l->height = PLOT_EMPTY_H + l->key_y - (6 + LEGEND_ROW);
	for (int j = 0; j < n; j++)
		for (int i = 0; i < h[j].n; i++) {
			const struct history_row *r = &h[j].rows[i];
			if (!isfinite(x_value(l, r)))
				continue; /* no time: not drawn */
			l->rows++;
			x_lo = fmin(x_lo, x_value(l, r));
			l->x_max = fmax(l->x_max, x_value(l, r));
			for (int k = 0; k < PLOT_PANELS; k++) {
				double v = value_of(r, k);
				if (!isfinite(v))
					continue;
				l->p[k].lo = fmin(l->p[k].lo, v);
				l->p[k].hi = fmax(l->p[k].hi, v);
			}
		}
	if (l->o->x == PLOT_X_CLOCK && l->rows) { /* round times around */
		double hi = l->x_max;
		l->x_step = plot_clock_step(fmax(hi - x_lo, 1));
		l->x_min = plot_clock_floor(x_lo, l->x_step);
		l->x_max = plot_clock_floor(hi, l->x_step);
		if (l->x_max < hi - 1e-9 || l->x_max <= l->x_min)
			l->x_max += l->x_step;
	} else {
		l->x_step = plot_nice_step(l->x_max);
		if (l->o->x == PLOT_X_EPOCH) /* whole epochs */
			l->x_step = fmax(1, round(l->x_step));
		l->x_max = ceil(l->x_max / l->x_step - 1e-9) * l->x_step;
	}
	for (int k = 0; k < PLOT_PANELS; k++)
		plot_panel_range(&l->p[k]);
}

static double x_of(const struct layout *l, double x)
{
	return PLOT_LEFT + (x - l->x_min) / (l->x_max - l->x_min) * l->plot_w;
}

/* The sentence shown instead of empty axes. */
static void empty_text(const struct history *h, int n, char *buf, size_t len)
{
	int epochs = 0;

	for (int j = 0; j < n; j++)
		epochs += h[j].n;
	if (epochs) /* --time, epochs kept before they had their time */
		snprintf(buf, len,
			 "no epoch of these jobs has its wall-clock time "
			 "(kept before the daemon recorded it): plot them "
			 "without --time");
	else if (n == 1)
		snprintf(buf, len,
			 "job %s (%s) has no epochs yet: nothing to "
			 "plot until it has run",
			 h[0].idtext, h[0].name);
	else
		snprintf(buf, len,
			 "none of these %d jobs has an epoch yet: "
			 "nothing to plot until they have run",
			 n);
}

/* Job j's line on panel k, smoothed as asked; xy holds 2 * (n + 1)
 * doubles. */
static void draw_series(const struct plot_canvas *cv, const struct layout *l,
			const struct history *h, int j, int n, int k,
			double *xy)
{
	int smooth = k == PANEL_LR || l->o->smooth < 1 ? 1 : l->o->smooth;
	int thin = h->n / PLOT_MAX_POINTS + 1, np = 0, in = 0, first = 0;
	double sum = 0;

	for (int i = 0; i < h->n; i++) {
		double v = value_of(&h->rows[i], k);
		if (!isfinite(v) || !isfinite(x_value(l, &h->rows[i])))
			continue;
		/* the window: the last `smooth` finite values */
		sum += v, in++;
		while (in > smooth) {
			double old = value_of(&h->rows[first++], k);
			if (isfinite(old))
				sum -= old, in--;
		}
		if (i % thin && i != h->n - 1)
			continue;
		xy[2 * np] = x_of(l, x_value(l, &h->rows[i]));
		xy[2 * np + 1] = plot_panel_y(&l->p[k], sum / in);
		np++;
	}
	if (np)
		cv->line(cv->ctx, xy, np, plot_color(j, n), 1.5);
}

static void draw_legend(const struct plot_canvas *cv, const struct layout *l,
			int n)
{
	char text[192];

	for (int e = 0; e < l->nlegend; e++) {
		double xy[4] = { l->legend[e].x, l->legend[e].y + 8,
				 l->legend[e].x + 18, l->legend[e].y + 8 };
		cv->line(cv->ctx, xy, 2, plot_color(e, n), 3);
		cv->text(cv->ctx, l->legend[e].x + 24, l->legend[e].y + 12,
			 PLOT_START, PLOT_FONT, PLOT_BLACK, l->legend[e].text);
	}
	if (l->hidden)
		snprintf(text, sizeof(text), "; %d more jobs not named",
			 l->hidden);
	else
		text[0] = 0;
	char key[256];
	snprintf(key, sizeof(key),
		 "psnr: the model's (the weights an export writes); live "
		 "psnr: each epoch's own%s%s",
		 l->o->smooth > 1 ? "; smoothed" : "", text);
	cv->text(cv->ctx, PLOT_LEFT, l->key_y + 12, PLOT_START, PLOT_FONT,
		 PLOT_DIM, key);
}

/* What the x axis shows: "epoch", "training time (s)", or "wall-clock
 * time (local), from 2026-12-03 05:40:12" (the first epoch's). */
static void x_title(const struct layout *l, char *buf, size_t n)
{
	char day[64] = "";
	time_t at = (time_t)floor(l->x_min);
	struct tm tm;

	if (l->o->x != PLOT_X_CLOCK) {
		snprintf(buf, n, "%s",
			 l->o->x == PLOT_X_TRAINING ? "training time (s)"
						    : "epoch");
		return;
	}
	if (localtime_r(&at, &tm))
		strftime(day, sizeof(day), "%Y-%m-%d %Z", &tm);
	snprintf(buf, n, "wall-clock time (local; %s)", day);
}

int plot_draw(const struct plot_canvas *cv, const struct history *h, int n,
	      const struct plot_opts *o)
{
	struct layout l = { .o = o };
	char text[256];
	double xs[64], xv[64], *xy;
	int nx = 0, most = 0, rc;

	if (o->summary)
		return plot_summary_draw(cv, h, n);
	make_layout(cv, h, n, &l);
	if (!l.legend)
		return ERR_NOMEM;
	if (l.rows == 0) {
		free(l.legend);
		if ((rc = cv->begin(cv->ctx, PLOT_W, PLOT_EMPTY_H)))
			return rc;
		empty_text(h, n, text, sizeof(text));
		cv->text(cv->ctx, PLOT_W / 2, PLOT_EMPTY_H / 2, PLOT_MIDDLE, 16,
			 PLOT_BLACK, text);
		return 0;
	}
	for (int j = 0; j < n; j++)
		most = h[j].n > most ? h[j].n : most;
	if (!(xy = malloc((2 * (size_t)most + 2) * sizeof(*xy))) ||
	    (rc = cv->begin(cv->ctx, PLOT_W, l.height))) {
		free(xy);
		free(l.legend);
		return xy ? rc : ERR_NOMEM;
	}
	draw_legend(cv, &l, n);
	for (double x = l.x_min; x <= l.x_max + l.x_step * 1e-6 && nx < 64;
	     x += l.x_step, nx++)
		xs[nx] = x_of(&l, x), xv[nx] = x;
	for (int k = 0; k < PLOT_PANELS; k++) {
		const struct plot_panel *p = &l.p[k];
		cv->text(cv->ctx, PLOT_LEFT, p->top - 6, PLOT_START, PLOT_FONT,
			 PLOT_BLACK, panel_title[k]);
		plot_panel_axes(cv, p, PLOT_LEFT, PLOT_LEFT + l.plot_w, xs, xv,
				nx,
				k < PLOT_PANELS - 1    ? PLOT_XLABEL_NONE
				: o->x == PLOT_X_CLOCK ? PLOT_XLABEL_CLOCK
						       : PLOT_XLABEL_NUMBER);
		for (int j = 0; j < n; j++)
			draw_series(cv, &l, &h[j], j, n, k, xy);
	}
	x_title(&l, text, sizeof(text));
	cv->text(cv->ctx, PLOT_LEFT + l.plot_w / 2, l.height - 6, PLOT_MIDDLE,
		 PLOT_FONT, PLOT_BLACK, text);
	free(xy);
	free(l.legend);
	return 0;
}
