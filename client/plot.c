/*
 * plot.c - PSNR (the model's, then the live one), MSE and learning rate
 * against epoch (or training time), in SVG or PNG.
 *
 * Both pictures come from one layout: four panels stacked, sharing the x
 * axis, each with its own range (MSE on a log10 scale), ticks at round
 * values with a light grid behind the curves, and its title above: psnr
 * (the model's, the weights an export writes), live psnr (each epoch's
 * own, measured before its step), mse and the learning rate. A legend
 * names each job (id and name), wrapped so that no two entries overlap.
 * A plot of jobs without any epoch yet is one sentence saying so, not
 * empty axes. SVG is written as text: one polyline per job and panel,
 * thinned to at most PLOT_MAX_POINTS points. PNG is
 * drawn into a float image: lines by Bresenham's algorithm, text in a 3x5
 * pixel font (digits, letters drawn as capitals, a few signs) scaled up,
 * then encoded by png8_encode.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "history.h"
#include "png8.h"
#include "plot.h"

#define PLOT_W 900
#define PLOT_H 660
#define PLOT_LEFT 90 /* room for the tick labels */
#define PLOT_RIGHT 20
#define PLOT_GAP 40    /* between panels: the next one's title */
#define PLOT_BOTTOM 40 /* the x axis's labels */
#define PLOT_MAX_POINTS 2000
#define PLOT_PANELS 4
#define PANEL_MSE 2 /* drawn on a log10 scale */
#define LEGEND_ROW 16
#define LEGEND_MAX_ROWS 4
#define SVG_CHAR_W 7 /* a 12 px sans-serif character, roughly */
#define TICKS 5      /* about this many ticks an axis */

/* psnr: the model's (the weights an export writes); live: each epoch's
 * own, measured before its step */
static const char *const panel_title[PLOT_PANELS] = {
	"psnr (dB)", "live psnr (dB)", "mse (log scale)", "learning rate"
};

static const float palette[][3] = {
	{ 0.12f, 0.47f, 0.71f }, { 1.00f, 0.50f, 0.05f },
	{ 0.17f, 0.63f, 0.17f }, { 0.84f, 0.15f, 0.16f },
	{ 0.58f, 0.40f, 0.74f }, { 0.55f, 0.34f, 0.29f },
	{ 0.89f, 0.47f, 0.76f }, { 0.50f, 0.50f, 0.50f },
	{ 0.74f, 0.74f, 0.13f }, { 0.09f, 0.75f, 0.81f },
};
#define N_COLORS (int)(sizeof(palette) / sizeof(palette[0]))

/* ---- the layout both formats share ---- */

struct panel {
	double lo, hi;      /* value range (log10 for MSE), widened to ticks */
	double tick0, step; /* the first tick and the distance between */
	int top, height;
};

/* One legend entry: where it goes and what it says. */
struct entry {
	int x, y;
	char text[160];
};

struct layout {
	int x_time; /* x is training seconds, not epochs */
	double x_max, x_step;
	struct panel p[PLOT_PANELS];
	int plot_w, top, key_y; /* the panels' top, the key's line */
	int rows;               /* rows in all histories */
	struct entry *legend;   /* one per job, NULL past the rows */
	int nlegend, hidden;    /* entries placed, jobs left out */
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

static double x_value(const struct layout *l, const struct history_row *r)
{
	return l->x_time ? r->seconds : r->epoch;
}

/* A round step (1, 2 or 5 times a power of ten) giving about TICKS ticks
 * over span. */
static double nice_step(double span)
{
	double raw = span / TICKS, mag = pow(10, floor(log10(raw)));
	double f = raw / mag;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* The legend's entries, placed left to right and wrapped, char_w the
 * width of a character; returns the height it takes. */
static int place_legend(const struct history *h, int n, struct layout *l,
			int char_w)
{
	int x = PLOT_LEFT, row = 0, swatch = 24;

	l->legend = calloc(n > 0 ? n : 1, sizeof(*l->legend));
	for (int j = 0; j < n && l->legend; j++) {
		struct entry *e = &l->legend[l->nlegend];
		snprintf(e->text, sizeof(e->text), "job %s %s%s", h[j].idtext,
			 h[j].name, h[j].n ? "" : " (no epochs yet)");
		int w = swatch + char_w * (int)strlen(e->text) + 16;
		if (x + w > PLOT_W - PLOT_RIGHT && x > PLOT_LEFT)
			x = PLOT_LEFT, row++;
		if (row >= LEGEND_MAX_ROWS) {
			l->hidden = n - j;
			break;
		}
		e->x = x, e->y = 6 + row * LEGEND_ROW;
		x += w;
		l->nlegend++;
	}
	return 6 + (row + 1) * LEGEND_ROW; /* the key's row */
}

static void make_layout(const struct history *h, int n, int x_time, int char_w,
			struct layout *l)
{
	memset(l, 0, sizeof(*l));
	l->x_time = x_time;
	l->x_max = x_time ? 1e-3 : 1;
	l->plot_w = PLOT_W - PLOT_LEFT - PLOT_RIGHT;
	l->key_y = place_legend(h, n, l, char_w);
	l->top = l->key_y + LEGEND_ROW + 24;
	int height =
	    (PLOT_H - l->top - PLOT_BOTTOM - (PLOT_PANELS - 1) * PLOT_GAP) /
	    PLOT_PANELS;
	for (int k = 0; k < PLOT_PANELS; k++) {
		l->p[k].lo = INFINITY;
		l->p[k].hi = -INFINITY;
		l->p[k].top = l->top + k * (height + PLOT_GAP);
		l->p[k].height = height;
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < h[j].n; i++) {
			const struct history_row *r = &h[j].rows[i];
			l->rows++;
			l->x_max = fmax(l->x_max, x_value(l, r));
			for (int k = 0; k < PLOT_PANELS; k++) {
				double v = value_of(r, k);
				if (!isfinite(v))
					continue;
				l->p[k].lo = fmin(l->p[k].lo, v);
				l->p[k].hi = fmax(l->p[k].hi, v);
			}
		}
	l->x_step = nice_step(l->x_max);
	l->x_max = ceil(l->x_max / l->x_step - 1e-9) * l->x_step;
	for (int k = 0; k < PLOT_PANELS; k++) {
		struct panel *p = &l->p[k];
		if (!isfinite(p->lo))
			p->lo = 0, p->hi = 1;
		if (p->hi - p->lo < 1e-12) {
			double pad = fabs(p->lo) * 0.05 + 1e-9;
			p->lo -= pad;
			p->hi += pad;
		}
		if (k ==
		    PANEL_MSE) { /* MSE: round values, placed on the log scale */
			if (p->hi - p->lo > 1) { /* decades */
				p->lo = floor(p->lo), p->hi = ceil(p->hi);
				p->step = 0;
			} else {
				p->step =
				    nice_step(pow(10, p->hi) - pow(10, p->lo));
				p->tick0 =
				    ceil(pow(10, p->lo) / p->step - 1e-9) *
				    p->step;
			}
			continue;
		}
		/* out to the ticks around the data */
		p->step = nice_step(p->hi - p->lo);
		p->lo = floor(p->lo / p->step + 1e-9) * p->step;
		p->hi = ceil(p->hi / p->step - 1e-9) * p->step;
		p->tick0 = p->lo;
	}
}

/* A panel's ticks, as values of its scale (log10 for MSE); how many. */
static int panel_ticks(int k, const struct panel *p, double *out, int max)
{
	int n = 0;
	if (k == PANEL_MSE && p->step == 0) {
		for (double v = p->lo; v <= p->hi + 1e-9 && n < max; v += 1)
			out[n++] = v;
	} else if (k == PANEL_MSE) {
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

static double x_of(const struct layout *l, double x)
{
	return PLOT_LEFT + x / l->x_max * l->plot_w;
}

static double y_of(const struct panel *p, double v)
{
	return p->top + (p->hi - v) / (p->hi - p->lo) * p->height;
}

/* A tick's label: MSE as 10^v, others as they are (no "-0"). */
static void tick_text(int panel, double v, char *buf, size_t n)
{
	if (fabs(v) < 1e-12)
		v = 0;
	snprintf(buf, n, panel == PANEL_MSE ? "%.2g" : "%.3g",
		 panel == PANEL_MSE ? pow(10, v) : v);
}

/* The x axis's label. */
static const char *x_title(const struct layout *l)
{
	return l->x_time ? "training time (s)" : "epoch";
}

/* The sentence shown instead of empty axes. */
static void empty_text(const struct history *h, int n, char *buf, size_t len)
{
	if (n == 1)
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

/* ---- SVG ---- */

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

static void svg_color(FILE *out, int j)
{
	const float *c = palette[j % N_COLORS];
	fprintf(out, "#%02x%02x%02x", (int)(c[0] * 255), (int)(c[1] * 255),
		(int)(c[2] * 255));
}

static void svg_series(FILE *out, const struct layout *l, const struct panel *p,
		       const struct history *h, int j, int panel)
{
	int step = h->n / PLOT_MAX_POINTS + 1;
	fputs("<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"", out);
	svg_color(out, j);
	fputs("\" points=\"", out);
	for (int i = 0; i < h->n; i += step) {
		const struct history_row *r = &h->rows[i];
		double v = value_of(r, panel);
		if (isfinite(v))
			fprintf(out, "%.1f,%.1f ", x_of(l, x_value(l, r)),
				y_of(p, v));
	}
	fputs("\"/>\n", out);
}

void plot_svg(FILE *out, const struct history *h, int n, int x_time)
{
	struct layout l;
	char text[256];

	make_layout(h, n, x_time, SVG_CHAR_W, &l);
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		PLOT_W, PLOT_H);
	if (l.rows == 0) {
		empty_text(h, n, text, sizeof(text));
		fprintf(out,
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
			"font-size=\"16\">",
			PLOT_W / 2, PLOT_H / 2);
		xml_text(out, text);
		fputs("</text>\n</svg>\n", out);
		free(l.legend);
		return;
	}
	for (int e = 0; e < l.nlegend; e++) {
		fprintf(out,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke-width=\"3\" stroke=\"",
			l.legend[e].x, l.legend[e].y + 8, l.legend[e].x + 18,
			l.legend[e].y + 8);
		svg_color(out, e);
		fprintf(out, "\"/>\n<text x=\"%d\" y=\"%d\">",
			l.legend[e].x + 24, l.legend[e].y + 12);
		xml_text(out, l.legend[e].text);
		fputs("</text>\n", out);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"#555\">%s%s</text>\n",
		PLOT_LEFT, l.key_y + 12,
		"psnr: the model's (the weights an export writes); live "
		"psnr: each epoch's own",
		l.hidden ? "; more jobs not named" : "");
	for (int k = 0; k < PLOT_PANELS; k++) {
		const struct panel *p = &l.p[k];
		fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", PLOT_LEFT,
			p->top - 6, panel_title[k]);
		double ticks[32];
		int nticks = panel_ticks(k, p, ticks, 32);
		for (int t = 0; t < nticks; t++) {
			double y = y_of(p, ticks[t]);
			tick_text(k, ticks[t], text, sizeof(text));
			fprintf(out,
				"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
				"y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n"
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
				"%s</text>\n",
				PLOT_LEFT, y, PLOT_LEFT + l.plot_w, y,
				PLOT_LEFT - 6, y + 4, text);
		}
		for (double x = 0; x <= l.x_max + l.x_step * 1e-6;
		     x += l.x_step) {
			fprintf(out,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
				"y2=\"%d\" stroke=\"#e4e4e4\"/>\n",
				x_of(&l, x), p->top, x_of(&l, x),
				p->top + p->height);
			if (k == PLOT_PANELS - 1)
				fprintf(out,
					"<text x=\"%.1f\" y=\"%d\" "
					"text-anchor=\"middle\">%.6g</text>\n",
					x_of(&l, x), p->top + p->height + 16,
					x);
		}
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			"fill=\"none\" stroke=\"#999\"/>\n",
			PLOT_LEFT, p->top, l.plot_w, p->height);
		for (int j = 0; j < n; j++)
			svg_series(out, &l, p, &h[j], j, k);
	}
	fprintf(out,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n"
		"</svg>\n",
		PLOT_LEFT + l.plot_w / 2, PLOT_H - 6, x_title(&l));
	free(l.legend);
}

/* ---- PNG ---- */

/* A 3x5 font: five rows of three bits, top row first, high bit left. */
static unsigned glyph(char c)
{
	static const struct {
		char c;
		unsigned short rows[5];
	} font[] = {
		{ '0', { 7, 5, 5, 5, 7 } }, { '1', { 2, 6, 2, 2, 7 } },
		{ '2', { 7, 1, 7, 4, 7 } }, { '3', { 7, 1, 7, 1, 7 } },
		{ '4', { 5, 5, 7, 1, 1 } }, { '5', { 7, 4, 7, 1, 7 } },
		{ '6', { 7, 4, 7, 5, 7 } }, { '7', { 7, 1, 1, 1, 1 } },
		{ '8', { 7, 5, 7, 5, 7 } }, { '9', { 7, 5, 7, 1, 7 } },
		{ '.', { 0, 0, 0, 0, 2 } }, { '-', { 0, 0, 7, 0, 0 } },
		{ '+', { 0, 2, 7, 2, 0 } }, { '(', { 2, 4, 4, 4, 2 } },
		{ ')', { 2, 1, 1, 1, 2 } }, { 'A', { 7, 5, 7, 5, 5 } },
		{ 'B', { 6, 5, 6, 5, 6 } }, { 'C', { 7, 4, 4, 4, 7 } },
		{ 'D', { 6, 5, 5, 5, 6 } }, { 'E', { 7, 4, 6, 4, 7 } },
		{ 'F', { 7, 4, 6, 4, 4 } }, { 'G', { 7, 4, 5, 5, 7 } },
		{ 'H', { 5, 5, 7, 5, 5 } }, { 'I', { 7, 2, 2, 2, 7 } },
		{ 'J', { 1, 1, 1, 5, 7 } }, { 'K', { 5, 5, 6, 5, 5 } },
		{ 'L', { 4, 4, 4, 4, 7 } }, { 'M', { 5, 7, 7, 5, 5 } },
		{ 'N', { 6, 5, 5, 5, 5 } }, { 'O', { 7, 5, 5, 5, 7 } },
		{ 'P', { 7, 5, 7, 4, 4 } }, { 'Q', { 7, 5, 5, 7, 1 } },
		{ 'R', { 6, 5, 6, 5, 5 } }, { 'S', { 7, 4, 7, 1, 7 } },
		{ 'T', { 7, 2, 2, 2, 2 } }, { 'U', { 5, 5, 5, 5, 7 } },
		{ 'V', { 5, 5, 5, 5, 2 } }, { 'W', { 5, 5, 7, 7, 5 } },
		{ 'X', { 5, 5, 2, 5, 5 } }, { 'Y', { 5, 5, 2, 2, 2 } },
		{ 'Z', { 7, 1, 2, 4, 7 } }, { '_', { 0, 0, 0, 0, 7 } },
		{ ':', { 0, 2, 0, 2, 0 } }, { ';', { 0, 2, 0, 2, 4 } },
		{ ',', { 0, 0, 0, 2, 4 } }, { '\'', { 2, 2, 0, 0, 0 } },
		{ '/', { 1, 1, 2, 4, 4 } }, { '%', { 5, 1, 2, 4, 5 } },
	};
	if (c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	for (size_t i = 0; i < sizeof(font) / sizeof(font[0]); i++)
		if (font[i].c == c) {
			unsigned bits = 0;
			for (int r = 0; r < 5; r++)
				bits = bits << 3 | font[i].rows[r];
			return bits;
		}
	return c == ' ' ? 0 : 0x7FFF; /* unknown: a full box */
}

#define FONT_SCALE 2
#define CHAR_W ((3 + 1) * FONT_SCALE)

static void put(struct image *img, int x, int y, const float *rgb)
{
	if (x < 0 || y < 0 || x >= img->width || y >= img->height)
		return;
	memcpy(&img->rgb[3 * ((size_t)y * img->width + x)], rgb,
	       3 * sizeof(float));
}

static void draw_text(struct image *img, int x, int y, const char *s,
		      const float *rgb)
{
	for (; *s; s++, x += CHAR_W) {
		unsigned bits = glyph(*s);
		for (int r = 0; r < 5; r++)
			for (int c = 0; c < 3; c++)
				if (bits >> ((4 - r) * 3 + (2 - c)) & 1)
					for (int d = 0;
					     d < FONT_SCALE * FONT_SCALE; d++)
						put(img,
						    x + c * FONT_SCALE +
							d % FONT_SCALE,
						    y + r * FONT_SCALE +
							d / FONT_SCALE,
						    rgb);
	}
}

static void draw_line(struct image *img, int x0, int y0, int x1, int y1,
		      const float *rgb)
{
	int dx = abs(x1 - x0), dy = -abs(y1 - y0);
	int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;

	for (;;) {
		put(img, x0, y0, rgb);
		if (x0 == x1 && y0 == y1)
			return;
		int e2 = 2 * err;
		if (e2 >= dy) {
			err += dy;
			x0 += sx;
		}
		if (e2 <= dx) {
			err += dx;
			y0 += sy;
		}
	}
}

int plot_png(const struct history *h, int n, int x_time, uint8_t **data,
	     size_t *size)
{
	static const float black[3] = { 0, 0, 0 },
			   grey[3] = { 0.6f, 0.6f, 0.6f },
			   light[3] = { 0.9f, 0.9f, 0.9f },
			   dim[3] = { 0.35f, 0.35f, 0.35f };
	struct image *img = image_create(PLOT_W, PLOT_H);
	struct layout l;
	char text[256];
	int rc;

	if (!img)
		return ERR_NOMEM;
	for (size_t i = 0; i < (size_t)PLOT_W * PLOT_H * 3; i++)
		img->rgb[i] = 1.0f;
	make_layout(h, n, x_time, CHAR_W, &l);
	if (l.rows == 0) {
		empty_text(h, n, text, sizeof(text));
		draw_text(img, (PLOT_W - CHAR_W * (int)strlen(text)) / 2,
			  PLOT_H / 2, text, black);
		goto encode;
	}
	for (int e = 0; e < l.nlegend; e++) {
		const float *c = palette[e % N_COLORS];
		for (int t = 0; t < 3; t++)
			draw_line(img, l.legend[e].x, l.legend[e].y + 4 + t,
				  l.legend[e].x + 18, l.legend[e].y + 4 + t, c);
		draw_text(img, l.legend[e].x + 24, l.legend[e].y,
			  l.legend[e].text, black);
	}
	snprintf(text, sizeof(text), "%s%s",
		 "psnr: the model's (what export writes); live psnr: each "
		 "epoch's own",
		 l.hidden ? "; more jobs not named" : "");
	draw_text(img, PLOT_LEFT, l.key_y, text, dim);
	for (int k = 0; k < PLOT_PANELS; k++) {
		const struct panel *p = &l.p[k];
		int x0 = PLOT_LEFT, x1 = PLOT_LEFT + l.plot_w;
		int y0 = p->top, y1 = p->top + p->height;

		draw_text(img, PLOT_LEFT, p->top - 16, panel_title[k], black);
		double ticks[32];
		int nticks = panel_ticks(k, p, ticks, 32);
		for (int t = 0; t < nticks; t++) {
			int y = (int)lround(y_of(p, ticks[t]));
			draw_line(img, x0, y, x1, y, light);
			draw_line(img, x0 - 4, y, x0, y, grey);
			tick_text(k, ticks[t], text, sizeof(text));
			draw_text(img, x0 - 8 - CHAR_W * (int)strlen(text),
				  y - 5, text, black);
		}
		for (double x = 0; x <= l.x_max + l.x_step * 1e-6;
		     x += l.x_step) {
			int px = (int)lround(x_of(&l, x));
			draw_line(img, px, y0, px, y1, light);
			draw_line(img, px, y1, px, y1 + 4, grey);
			if (k == PLOT_PANELS - 1) {
				snprintf(text, sizeof(text), "%.6g", x);
				draw_text(img,
					  px - CHAR_W * (int)strlen(text) / 2,
					  y1 + 8, text, black);
			}
		}
		draw_line(img, x0, y0, x1, y0, grey);
		draw_line(img, x0, y1, x1, y1, grey);
		draw_line(img, x0, y0, x0, y1, grey);
		draw_line(img, x1, y0, x1, y1, grey);
		for (int j = 0; j < n; j++) {
			int have = 0, px = 0, py = 0;
			for (int i = 0; i < h[j].n; i++) {
				const struct history_row *r = &h[j].rows[i];
				double v = value_of(r, k);
				if (!isfinite(v))
					continue;
				int x = (int)lround(x_of(&l, x_value(&l, r)));
				int y = (int)lround(y_of(p, v));
				if (have && x == px && y == py)
					continue;
				if (have)
					draw_line(img, px, py, x, y,
						  palette[j % N_COLORS]);
				else
					put(img, x, y, palette[j % N_COLORS]);
				px = x, py = y, have = 1;
			}
		}
	}
	draw_text(img,
		  PLOT_LEFT + l.plot_w / 2 -
		      CHAR_W * (int)strlen(x_title(&l)) / 2,
		  PLOT_H - 14, x_title(&l), black);
encode:
	free(l.legend);
	rc = png8_encode(img, data, size);
	image_destroy(img);
	return rc;
}
