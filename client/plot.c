/*
 * plot.c - PSNR (the model's, then the live one), MSE and learning rate
 * against epoch, in SVG or PNG.
 *
 * Both pictures come from one layout: four panels stacked, sharing the
 * epoch axis, each with its own range (MSE on a log10 scale), its bounds
 * written at the left and its title above. SVG is written as text: one
 * polyline per job and panel, thinned to at most PLOT_MAX_POINTS points.
 * PNG is drawn into a float image: lines by Bresenham's algorithm, text in
 * a 3x5 pixel font (digits, capitals and a few signs: enough for numbers
 * and titles) scaled up, then encoded by png8_encode.
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
#define PLOT_LEFT 90   /* room for the bounds */
#define PLOT_RIGHT 20
#define PLOT_TOP 40    /* room for the legend */
#define PLOT_GAP 40    /* between panels: the next one's title */
#define PLOT_BOTTOM 40 /* the epoch axis */
#define PLOT_MAX_POINTS 2000
#define PLOT_PANELS 4
#define PANEL_MSE 2 /* drawn on a log10 scale */

/* PSNR: the model's (the weights an export writes); live: each epoch's
 * own, measured before its step */
static const char *const panel_title[PLOT_PANELS] = {
	"PSNR (dB)", "live PSNR (dB)", "MSE (log scale)", "learning rate"};

static const float palette[][3] = {
	{0.12f, 0.47f, 0.71f}, {1.00f, 0.50f, 0.05f}, {0.17f, 0.63f, 0.17f},
	{0.84f, 0.15f, 0.16f}, {0.58f, 0.40f, 0.74f}, {0.55f, 0.34f, 0.29f},
	{0.89f, 0.47f, 0.76f}, {0.50f, 0.50f, 0.50f}, {0.74f, 0.74f, 0.13f},
	{0.09f, 0.75f, 0.81f},
};
#define N_COLORS (int)(sizeof palette / sizeof palette[0])

/* ---- the layout both formats share ---- */

struct panel {
	double lo, hi; /* value range (log10 for MSE) */
	int top, height;
};

struct layout {
	int max_epoch;
	struct panel p[PLOT_PANELS];
	int plot_w;
};

static double value_of(const struct history_row *r, int panel)
{
	switch (panel) {
	case 0: return r->psnr;
	case 1: return r->live_psnr;
	case PANEL_MSE: return r->mse > 0 ? log10(r->mse) : NAN;
	default: return r->lr;
	}
}

static void make_layout(const struct history *h, int n, struct layout *l)
{
	int height = (PLOT_H - PLOT_TOP - PLOT_BOTTOM -
		      (PLOT_PANELS - 1) * PLOT_GAP) / PLOT_PANELS;

	l->max_epoch = 1;
	l->plot_w = PLOT_W - PLOT_LEFT - PLOT_RIGHT;
	for (int k = 0; k < PLOT_PANELS; k++) {
		l->p[k].lo = INFINITY;
		l->p[k].hi = -INFINITY;
		l->p[k].top = PLOT_TOP + k * (height + PLOT_GAP);
		l->p[k].height = height;
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < h[j].n; i++) {
			const struct history_row *r = &h[j].rows[i];
			if (r->epoch > l->max_epoch)
				l->max_epoch = r->epoch;
			for (int k = 0; k < PLOT_PANELS; k++) {
				double v = value_of(r, k);
				if (!isfinite(v))
					continue;
				l->p[k].lo = fmin(l->p[k].lo, v);
				l->p[k].hi = fmax(l->p[k].hi, v);
			}
		}
	for (int k = 0; k < PLOT_PANELS; k++) {
		struct panel *p = &l->p[k];
		if (!isfinite(p->lo))
			p->lo = 0, p->hi = 1;
		if (p->hi - p->lo < 1e-12) {
			double pad = fabs(p->lo) * 0.05 + 1e-9;
			p->lo -= pad;
			p->hi += pad;
		}
	}
}

static double x_of(const struct layout *l, int epoch)
{
	return PLOT_LEFT + (double)epoch / l->max_epoch * l->plot_w;
}

static double y_of(const struct panel *p, double v)
{
	return p->top + (p->hi - v) / (p->hi - p->lo) * p->height;
}

/* A bound as written at the axis: MSE as 10^v, others as they are. */
static void bound_text(int panel, double v, char *buf, size_t n)
{
	snprintf(buf, n, "%.3g", panel == PANEL_MSE ? pow(10, v) : v);
}

/* ---- SVG ---- */

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

static void svg_color(FILE *out, int j)
{
	const float *c = palette[j % N_COLORS];
	fprintf(out, "#%02x%02x%02x", (int)(c[0] * 255), (int)(c[1] * 255),
		(int)(c[2] * 255));
}

void plot_svg(FILE *out, const struct history *h, int n)
{
	struct layout l;
	char text[64];

	make_layout(h, n, &l);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		     "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		PLOT_W, PLOT_H);
	for (int j = 0; j < n && j < 8; j++) {
		fprintf(out, "<text x=\"%d\" y=\"18\" fill=\"", PLOT_LEFT + j * 100);
		svg_color(out, j);
		fputs("\">job ", out);
		xml_text(out, h[j].idtext);
		fputc(' ', out);
		xml_text(out, h[j].name);
		fputs("</text>\n", out);
	}
	for (int k = 0; k < PLOT_PANELS; k++) {
		const struct panel *p = &l.p[k];
		fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", PLOT_LEFT,
			p->top - 6, panel_title[k]);
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			     "fill=\"none\" stroke=\"#999\"/>\n",
			PLOT_LEFT, p->top, l.plot_w, p->height);
		bound_text(k, p->hi, text, sizeof text);
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s"
			     "</text>\n", PLOT_LEFT - 6, p->top + 12, text);
		bound_text(k, p->lo, text, sizeof text);
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s"
			     "</text>\n", PLOT_LEFT - 6, p->top + p->height, text);
		for (int j = 0; j < n; j++) {
			int step = h[j].n / PLOT_MAX_POINTS + 1;
			fputs("<polyline fill=\"none\" stroke-width=\"1.5\" "
			      "stroke=\"", out);
			svg_color(out, j);
			fputs("\" points=\"", out);
			for (int i = 0; i < h[j].n; i += step) {
				double v = value_of(&h[j].rows[i], k);
				if (isfinite(v))
					fprintf(out, "%.1f,%.1f ",
						x_of(&l, h[j].rows[i].epoch),
						y_of(p, v));
			}
			fputs("\"/>\n", out);
		}
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\">0</text>\n", PLOT_LEFT,
		PLOT_H - PLOT_BOTTOM + 16);
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">epoch %d"
		     "</text>\n</svg>\n", PLOT_W - PLOT_RIGHT,
		PLOT_H - PLOT_BOTTOM + 16, l.max_epoch);
}

/* ---- PNG ---- */

/* A 3x5 font: five rows of three bits, top row first, high bit left. */
static unsigned glyph(char c)
{
	static const struct { char c; unsigned short rows[5]; } font[] = {
		{'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}},
		{'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 7, 1, 7}},
		{'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}},
		{'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}},
		{'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}},
		{'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
		{'+', {0, 2, 7, 2, 0}}, {'(', {2, 4, 4, 4, 2}},
		{')', {2, 1, 1, 1, 2}}, {'A', {7, 5, 7, 5, 5}},
		{'B', {6, 5, 6, 5, 6}}, {'C', {7, 4, 4, 4, 7}},
		{'D', {6, 5, 5, 5, 6}}, {'E', {7, 4, 6, 4, 7}},
		{'F', {7, 4, 6, 4, 4}}, {'G', {7, 4, 5, 5, 7}},
		{'H', {5, 5, 7, 5, 5}}, {'I', {7, 2, 2, 2, 7}},
		{'J', {1, 1, 1, 5, 7}}, {'K', {5, 5, 6, 5, 5}},
		{'L', {4, 4, 4, 4, 7}}, {'M', {5, 7, 7, 5, 5}},
		{'N', {6, 5, 5, 5, 5}}, {'O', {7, 5, 5, 5, 7}},
		{'P', {7, 5, 7, 4, 4}}, {'Q', {7, 5, 5, 7, 1}},
		{'R', {6, 5, 6, 5, 5}}, {'S', {7, 4, 7, 1, 7}},
		{'T', {7, 2, 2, 2, 2}}, {'U', {5, 5, 5, 5, 7}},
		{'V', {5, 5, 5, 5, 2}}, {'W', {5, 5, 7, 7, 5}},
		{'X', {5, 5, 2, 5, 5}}, {'Y', {5, 5, 2, 2, 2}},
		{'Z', {7, 1, 2, 4, 7}}, {'_', {0, 0, 0, 0, 7}},
	};
	if (c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
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
					for (int d = 0; d < FONT_SCALE * FONT_SCALE; d++)
						put(img, x + c * FONT_SCALE + d % FONT_SCALE,
						    y + r * FONT_SCALE + d / FONT_SCALE, rgb);
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

int plot_png(const struct history *h, int n, uint8_t **data, size_t *size)
{
	static const float black[3] = {0, 0, 0}, grey[3] = {0.6f, 0.6f, 0.6f};
	struct image *img = image_create(PLOT_W, PLOT_H);
	struct layout l;
	char text[64];
	int rc;

	if (!img)
		return ERR_NOMEM;
	for (size_t i = 0; i < (size_t)PLOT_W * PLOT_H * 3; i++)
		img->rgb[i] = 1.0f;
	make_layout(h, n, &l);
	for (int j = 0; j < n && j < 8; j++) {
		snprintf(text, sizeof text, "JOB %s", h[j].idtext);
		draw_text(img, PLOT_LEFT + j * 100, 4, text, palette[j % N_COLORS]);
	}
	for (int k = 0; k < PLOT_PANELS; k++) {
		const struct panel *p = &l.p[k];
		int x0 = PLOT_LEFT, x1 = PLOT_LEFT + l.plot_w;
		int y0 = p->top, y1 = p->top + p->height;

		draw_text(img, PLOT_LEFT, p->top - 16, panel_title[k], black);
		draw_line(img, x0, y0, x1, y0, grey);
		draw_line(img, x0, y1, x1, y1, grey);
		draw_line(img, x0, y0, x0, y1, grey);
		draw_line(img, x1, y0, x1, y1, grey);
		bound_text(k, p->hi, text, sizeof text);
		draw_text(img, x0 - 6 - CHAR_W * (int)strlen(text), y0, text, black);
		bound_text(k, p->lo, text, sizeof text);
		draw_text(img, x0 - 6 - CHAR_W * (int)strlen(text), y1 - 10, text,
			  black);
		for (int j = 0; j < n; j++) {
			int have = 0, px = 0, py = 0;
			for (int i = 0; i < h[j].n; i++) {
				double v = value_of(&h[j].rows[i], k);
				if (!isfinite(v))
					continue;
				int x = (int)lround(x_of(&l, h[j].rows[i].epoch));
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
	draw_text(img, PLOT_LEFT, PLOT_H - PLOT_BOTTOM + 8, "0", black);
	snprintf(text, sizeof text, "EPOCH %d", l.max_epoch);
	draw_text(img, PLOT_W - PLOT_RIGHT - CHAR_W * (int)strlen(text),
		  PLOT_H - PLOT_BOTTOM + 8, text, black);
	rc = png8_encode(img, data, size);
	image_destroy(img);
	return rc;
}
