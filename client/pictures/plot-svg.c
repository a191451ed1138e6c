/*
 * plot-svg.c - the plot's canvas as SVG: each operation one element
 * (<line> for two points, <polyline> for more, <polygon>, <rect>,
 * <text>), written as text to a stream, so that a browser, a paper or a
 * script (the tests read the elements back) takes it as it is. Text
 * widths are estimated: a sans-serif character of 12 px is about 7 px.
 */
#include <stdio.h>
#include <string.h>

#include "proto/errors.h"
#include "core/history.h"
#include "pictures/plot-internal.h"

#define PLOT_SVG_CHAR_W 7.0 /* at 12 px */

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

static double svg_text_width(void *ctx, double size, const char *s)
{
	return PLOT_SVG_CHAR_W * size / 12 * (double)strlen(s);
}

static int svg_begin(void *ctx, int width, int height)
{
	fprintf(ctx,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		width, height);
	return 0;
}

static void svg_line(void *ctx, const double *xy, int n, uint32_t rgb,
		     double width)
{
	FILE *out = ctx;
	if (n == 2) {
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke-width=\"%g\" stroke=\"#%06x\"/>\n",
			xy[0], xy[1], xy[2], xy[3], width, (unsigned)rgb);
		return;
	}
	fprintf(out,
		"<polyline fill=\"none\" stroke-width=\"%g\" "
		"stroke=\"#%06x\" points=\"",
		width, (unsigned)rgb);
	for (int i = 0; i < n; i++)
		fprintf(out, "%.1f,%.1f ", xy[2 * i], xy[2 * i + 1]);
	fputs("\"/>\n", out);
}

static void svg_polygon(void *ctx, const double *xy, int n, uint32_t rgb,
			double alpha)
{
	FILE *out = ctx;
	fprintf(out, "<polygon fill=\"#%06x\" fill-opacity=\"%.2f\" points=\"",
		(unsigned)rgb, alpha);
	for (int i = 0; i < n; i++)
		fprintf(out, "%.1f,%.1f ", xy[2 * i], xy[2 * i + 1]);
	fputs("\"/>\n", out);
}

static void svg_rect(void *ctx, double x, double y, double w, double h,
		     uint32_t fill, uint32_t stroke)
{
	FILE *out = ctx;
	fprintf(out,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%.1f\" fill=\"",
		x, y, w, h);
	if (fill == PLOT_NONE)
		fputs("none", out);
	else
		fprintf(out, "#%06x", (unsigned)fill);
	if (stroke != PLOT_NONE)
		fprintf(out, "\" stroke=\"#%06x", (unsigned)stroke);
	fputs("\"/>\n", out);
}

static void svg_text(void *ctx, double x, double y, enum plot_anchor a,
		     double size, uint32_t rgb, const char *s)
{
	static const char *const anchor[] = { "start", "middle", "end" };
	FILE *out = ctx;
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
	if (a != PLOT_START)
		fprintf(out, " text-anchor=\"%s\"", anchor[a]);
	if (size != PLOT_FONT)
		fprintf(out, " font-size=\"%g\"", size);
	if (rgb != PLOT_BLACK)
		fprintf(out, " fill=\"#%06x\"", (unsigned)rgb);
	fputc('>', out);
	xml_text(out, s);
	fputs("</text>\n", out);
}

int plot_svg(FILE *out, const struct history *h, int n,
	     const struct plot_opts *o)
{
	const struct plot_canvas cv = {
		.ctx = out,
		.text_width = svg_text_width,
		.begin = svg_begin,
		.line = svg_line,
		.polygon = svg_polygon,
		.rect = svg_rect,
		.text = svg_text,
	};
	int rc = plot_draw(&cv, h, n, o);
	if (!rc)
		fputs("</svg>\n", out);
	return rc;
}
