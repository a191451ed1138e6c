/*
 * plot-cairo.c - the plot's canvas as pixels, painted by cairo (Debian's
 * libcairo2): antialiased lines and real text in the system's sans-serif
 * font (through fontconfig), then encoded by cairo's own PNG writer into
 * memory. Lines of one pixel sit on pixel centres, so the grid and the
 * frames are sharp. Once the picture is encoded, cairo's and fontconfig's
 * caches are let go (both set themselves up again if asked): vkinrctl
 * ends without leaks for the sanitizer build to report.
 */
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "core/history.h"
#include "pictures/plot-internal.h"

struct plot_cairo {
	cairo_surface_t *surface;
	cairo_t *cr; /* a 1x1 scratch one until begin: text is measured */
};

/* The growing buffer cairo writes the PNG into. */
struct plot_png_buf {
	uint8_t *data;
	size_t size, cap;
	int failed;
};

static void set_rgb(cairo_t *cr, uint32_t rgb, double alpha)
{
	cairo_set_source_rgba(cr, (rgb >> 16 & 255) / 255.0,
			      (rgb >> 8 & 255) / 255.0, (rgb & 255) / 255.0,
			      alpha);
}

static void set_font(cairo_t *cr, double size)
{
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
			       CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

static double pc_text_width(void *ctx, double size, const char *s)
{
	struct plot_cairo *c = ctx;
	cairo_text_extents_t ext;
	set_font(c->cr, size);
	cairo_text_extents(c->cr, s, &ext);
	return ext.x_advance;
}

static int pc_begin(void *ctx, int width, int height)
{
	struct plot_cairo *c = ctx;
	cairo_surface_t *s =
	    cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
	cairo_t *cr = cairo_create(s);
	if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
		cairo_destroy(cr);
		cairo_surface_destroy(s);
		return ERR_NOMEM;
	}
	cairo_destroy(c->cr);
	cairo_surface_destroy(c->surface);
	c->surface = s, c->cr = cr;
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	return 0;
}

/* A one-pixel line's coordinate, on a pixel's centre. */
static double snap(double v, double width)
{
	return width <= 1 ? (double)(long)v + 0.5 : v;
}

static void pc_line(void *ctx, const double *xy, int n, uint32_t rgb,
		    double width)
{
	cairo_t *cr = ((struct plot_cairo *)ctx)->cr;
	cairo_new_path(cr);
	for (int i = 0; i < n; i++)
		cairo_line_to(cr, snap(xy[2 * i], width),
			      snap(xy[2 * i + 1], width));
	if (n == 1) /* a single point: a dot */
		cairo_rel_line_to(cr, 0.01, 0);
	cairo_set_line_width(cr, width);
	cairo_set_line_cap(cr,
			   n == 1 ? CAIRO_LINE_CAP_ROUND : CAIRO_LINE_CAP_BUTT);
	set_rgb(cr, rgb, 1);
	cairo_stroke(cr);
}

static void pc_polygon(void *ctx, const double *xy, int n, uint32_t rgb,
		       double alpha)
{
	cairo_t *cr = ((struct plot_cairo *)ctx)->cr;
	cairo_new_path(cr);
	for (int i = 0; i < n; i++)
		cairo_line_to(cr, xy[2 * i], xy[2 * i + 1]);
	cairo_close_path(cr);
	set_rgb(cr, rgb, alpha);
	cairo_fill(cr);
}

static void pc_rect(void *ctx, double x, double y, double w, double h,
		    uint32_t fill, uint32_t stroke)
{
	cairo_t *cr = ((struct plot_cairo *)ctx)->cr;
	if (fill != PLOT_NONE) {
		cairo_rectangle(cr, x, y, w, h);
		set_rgb(cr, fill, 1);
		cairo_fill(cr);
	}
	if (stroke != PLOT_NONE) {
		cairo_rectangle(cr, snap(x, 1), snap(y, 1), (long)w, (long)h);
		cairo_set_line_width(cr, 1);
		set_rgb(cr, stroke, 1);
		cairo_stroke(cr);
	}
}

static void pc_text(void *ctx, double x, double y, enum plot_anchor a,
		    double size, uint32_t rgb, const char *s)
{
	cairo_t *cr = ((struct plot_cairo *)ctx)->cr;
	cairo_text_extents_t ext;
	set_font(cr, size);
	cairo_text_extents(cr, s, &ext);
	if (a == PLOT_MIDDLE)
		x -= ext.x_advance / 2;
	else if (a == PLOT_END)
		x -= ext.x_advance;
	cairo_move_to(cr, x, y);
	set_rgb(cr, rgb, 1);
	cairo_show_text(cr, s);
}

static cairo_status_t write_png(void *closure, const unsigned char *data,
				unsigned int len)
{
	struct plot_png_buf *b = closure;
	if (b->size + len > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		while (cap < b->size + len)
			cap *= 2;
		uint8_t *more = realloc(b->data, cap);
		if (!more) {
			b->failed = 1;
			return CAIRO_STATUS_NO_MEMORY;
		}
		b->data = more, b->cap = cap;
	}
	memcpy(b->data + b->size, data, len);
	b->size += len;
	return CAIRO_STATUS_SUCCESS;
}

int plot_png(const struct history *h, int n, const struct plot_opts *o,
	     uint8_t **data, size_t *size)
{
	struct plot_cairo c;
	struct plot_png_buf buf = { 0 };
	const struct plot_canvas cv = {
		.ctx = &c,
		.text_width = pc_text_width,
		.begin = pc_begin,
		.line = pc_line,
		.polygon = pc_polygon,
		.rect = pc_rect,
		.text = pc_text,
	};
	int rc;

	c.surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
	c.cr = cairo_create(c.surface);
	rc = cairo_status(c.cr) == CAIRO_STATUS_SUCCESS
		 ? plot_draw(&cv, h, n, o)
		 : ERR_NOMEM;
	if (!rc) {
		cairo_surface_flush(c.surface);
		if (cairo_surface_write_to_png_stream(
			c.surface, write_png, &buf) != CAIRO_STATUS_SUCCESS)
			rc = buf.failed ? ERR_NOMEM : ERR_IO;
	}
	cairo_destroy(c.cr);
	cairo_surface_destroy(c.surface);
	cairo_debug_reset_static_data();
	FcFini();
	if (rc) {
		free(buf.data);
		return rc;
	}
	*data = buf.data;
	*size = buf.size;
	return 0;
}
