/*
 * render_view.c - a model package rendered at any size, or a region of it
 * (render_view.h; the method is docs/MODEL.md's "Rendering at another
 * size").
 *
 * The fine grid is the image at the integer scale s (s W x s H pixels),
 * and the network on it has every dilation times s. The region asked for
 * (in output pixels) needs a window of the fine grid: the same rectangle
 * at an integer scale, the fine pixels under it otherwise. The window goes
 * in bands of rows, so that the band's image buffers fit the budget, and
 * each band in tiles, each a core plus the receptive field's halo (the
 * scaled dilations' sum) clipped to the fine image, so that every core
 * pixel is exact. A band is one program, recorded from record.c's forward
 * and the render head writing each core into the band's window, then (not
 * an integer scale) resample.comp's box filter into the output band; the
 * band is read back into the output image. Every pass runs on the device.
 *
 * The render-only fit built here holds the weights, the tile's
 * activations and the band's images, none of the training's buffers, so
 * its tiles are as large as the budget allows. At scale 1 and the whole
 * image in one tile it records the same passes as nn_render, bit for bit.
 */
#include "nn/render_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "nn/fit_internal.h"
#include "nn/package.h"
#include "nn/passes.h"
#include "nn/record.h"
#include "nn/recorder.h"

/* The geometry of a render. */
struct view_geom {
	int w0, h0;         /* the package's image */
	int ow, oh;         /* the output image */
	int s, fw, fh;      /* the scale, the fine image */
	int exact;          /* output = fine grid */
	int cx, cy, cw, ch; /* the region, in output pixels */
	int pad;            /* the halo on the fine grid */
};

static int fail(char *err, size_t errlen, int rc, const char *fmt, int a, int b,
		int c, int d)
{
	snprintf(err, errlen, fmt, a, b, c, d);
	return rc;
}

static int ceil_div(int64_t a, int64_t b) { return (int)((a + b - 1) / b); }

/* The output size, the scale and the region from the view. */
static int view_geometry(const struct nn_view *v, int w0, int h0,
			 struct view_geom *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	g->w0 = w0;
	g->h0 = h0;
	if (v->scale < 0 || v->width < 0 || v->height < 0)
		return fail(err, errlen, ERR_INVALID,
			    "the scale and the size must be positive", 0, 0, 0,
			    0);
	if (v->scale > NN_VIEW_MAX_SCALE)
		return fail(err, errlen, ERR_INVALID,
			    "scale %d is over the largest, %d", v->scale,
			    NN_VIEW_MAX_SCALE, 0, 0);
	if (v->scale) {
		g->ow = (int)((int64_t)v->scale * w0 > NN_VIEW_MAX_SIDE
				  ? NN_VIEW_MAX_SIDE + 1
				  : v->scale * w0);
		g->oh = (int)((int64_t)v->scale * h0 > NN_VIEW_MAX_SIDE
				  ? NN_VIEW_MAX_SIDE + 1
				  : v->scale * h0);
	} else if (v->width || v->height) {
		g->ow = v->width;
		g->oh = v->height;
	} else {
		g->ow = w0;
		g->oh = h0;
	}
	if (g->ow < 1 || g->oh < 1 || g->ow > NN_VIEW_MAX_SIDE ||
	    g->oh > NN_VIEW_MAX_SIDE)
		return fail(err, errlen, ERR_INVALID,
			    "a render is 1 to %d pixels a side, not %dx%d",
			    NN_VIEW_MAX_SIDE, g->ow, g->oh, 0);
	int sx = ceil_div(g->ow, w0), sy = ceil_div(g->oh, h0);
	g->s = v->scale ? v->scale : sx > sy ? sx : sy;
	if (g->s > NN_VIEW_MAX_SCALE)
		return fail(err, errlen, ERR_INVALID,
			    "%dx%d is over %d times the model's size", g->ow,
			    g->oh, NN_VIEW_MAX_SCALE, 0);
	g->fw = g->s * w0;
	g->fh = g->s * h0;
	g->exact = g->fw == g->ow && g->fh == g->oh;
	if (v->crop_w || v->crop_h) {
		g->cx = v->crop_x;
		g->cy = v->crop_y;
		g->cw = v->crop_w;
		g->ch = v->crop_h;
		if (g->cw < 1 || g->ch < 1 || g->cx < 0 || g->cy < 0 ||
		    g->cx > g->ow - g->cw || g->cy > g->oh - g->ch) {
			/* the render's size, not only the model's: at
			 * --scale 8 a 48x30 model renders 384x240 */
			snprintf(err, errlen,
				 "the region %dx%d at %d,%d is not within "
				 "the render, %dx%d",
				 g->cw, g->ch, g->cx, g->cy, g->ow, g->oh);
			return ERR_INVALID;
		}
	} else {
		g->cw = g->ow;
		g->ch = g->oh;
	}
	if ((uint64_t)g->cw * g->ch > NN_VIEW_MAX_PIXELS)
		return fail(err, errlen, ERR_INVALID,
			    "%dx%d pixels are more than a render makes "
			    "(%d Mpixels)",
			    g->cw, g->ch, (int)(NN_VIEW_MAX_PIXELS >> 20), 0);
	return 0;
}

int nn_view_check(const struct nn_view *view, int w0, int h0,
		  struct nn_view_info *info, char *err, size_t errlen)
{
	struct view_geom g;
	int rc = view_geometry(view, w0, h0, &g, err, errlen);
	if (rc == 0 && info)
		*info = (struct nn_view_info){ g.ow, g.oh, g.s, g.exact, 0, 0 };
	return rc;
}

/* The fine columns (or rows) under output pixels [o0, o1) of n, on a fine
 * axis of f pixels. */
static void fine_span(int o0, int o1, int n, int f, int *lo, int *hi)
{
	*lo = (int)((int64_t)o0 * f / n);
	*hi = ceil_div((int64_t)o1 * f, n);
}

/* The render-only fit and what its bands share. */
struct view_fit {
	struct nn_fit fit; /* width x height: the fine image */
	struct view_geom g;
	int band_rows;      /* output rows a band (the last may be fewer) */
	int core_w, core_h; /* a tile's core */
	struct gpu_buffer fine, band, sse, dummy;
	struct gpu_pipeline *resample;
	int tiles;
};

/* The tile core and band height that fit the budget; the buffers. */
static int view_alloc(struct view_fit *vf, uint64_t budget, char *err,
		      size_t errlen)
{
	struct nn_fit *fit = &vf->fit;
	const struct gpu_device_info *info = gpu_info(fit->gpu);
	const struct view_geom *g = &vf->g;
	uint64_t nf = (uint64_t)fit->cfg.nf;
	int fused = fit->vars.fused;
	/* the images: the fine window and the output band, at most a
	 * quarter of the budget and what one dispatch covers */
	uint64_t img_px = budget / 4 / 24;
	uint64_t most = info->max_storage_range / 12;
	if (info->max_allocation / 12 < most)
		most = info->max_allocation / 12;
	if (most > 65535ull * GROUP)
		most = 65535ull * GROUP;
	if (img_px > most)
		img_px = most;
	int win_w = g->cw, rows;
	if (!g->exact) {
		int lo, hi;
		fine_span(g->cx, g->cx + g->cw, g->ow, g->fw, &lo, &hi);
		win_w = hi - lo;
	}
	/* fine rows a band of r output rows needs: at most r fh / oh + 2 */
	double per_row = g->exact ? 1.0 : (double)g->fh / g->oh;
	rows = (int)(((double)(img_px / (uint64_t)win_w) - 2) / per_row);
	if (rows > g->ch)
		rows = g->ch;
	if ((uint64_t)rows * g->cw > img_px)
		rows = (int)(img_px / (uint64_t)g->cw);
	if (rows < 1)
		return fail(err, errlen, ERR_DEVICE_OOM,
			    "a row of %d pixels does not fit the device's "
			    "budget",
			    win_w, 0, 0, 0);
	vf->band_rows = rows;
	int lo, hi;
	fine_span(0, rows, g->oh, g->fh, &lo, &hi);
	int win_h = g->exact ? rows : hi - lo + 1;
	uint64_t fine_px = (uint64_t)win_w * win_h;
	uint64_t band_px = g->exact ? 0 : (uint64_t)g->cw * rows;

	/* the tiles: S_0..S_B and Z (and H where the sines are not fused)
	 * a pixel, with what is left */
	uint64_t per_px = 4 * nf * (uint64_t)(fit->cfg.nblocks + 2 + !fused);
	/* and what the arena's blocks may leave unused */
	uint64_t slack = budget / 16 < (64u << 20) ? budget / 16 : (64u << 20);
	uint64_t fixed =
	    fit->layout.total * 4 + 12 * (fine_px + band_px) + slack;
	if (fixed >= budget)
		return fail(err, errlen, ERR_DEVICE_OOM,
			    "not enough device memory for a render of width %d",
			    fit->cfg.nf, 0, 0, 0);
	uint64_t tile_px = (budget - fixed) / per_px;
	if (tile_px > info->max_storage_range / (4 * nf))
		tile_px = info->max_storage_range / (4 * nf);
	if (tile_px > 65535ull * GROUP)
		tile_px = 65535ull * GROUP;
	int cw = win_w, ch = win_h;
	for (;;) {
		int64_t rw = cw + 2 * g->pad, rh = ch + 2 * g->pad;
		rw = rw < g->fw ? rw : g->fw;
		rh = rh < g->fh ? rh : g->fh;
		if ((uint64_t)(rw * rh) <= tile_px)
			break;
		if (cw < 8 && ch < 8)
			return fail(err, errlen, ERR_DEVICE_OOM,
				    "not enough device memory for width %d "
				    "even with small tiles (halo %d)",
				    fit->cfg.nf, g->pad, 0, 0);
		if (cw >= ch)
			cw = (cw + 1) / 2;
		else
			ch = (ch + 1) / 2;
	}
	vf->core_w = cw;
	vf->core_h = ch;
	int64_t rw = cw + 2 * g->pad, rh = ch + 2 * g->pad;
	uint64_t n = (uint64_t)(rw < g->fw ? rw : g->fw) *
		     (uint64_t)(rh < g->fh ? rh : g->fh);
	uint64_t act = 4 * nf * n;

	struct gpu_arena *a;
	int rc = gpu_arena_create(fit->gpu, &a);
	if (rc)
		return rc;
	fit->arena = a;
	rc = gpu_buffer_alloc(a, fit->layout.total * 4, 0, &fit->params);
	for (int k = 0; k <= fit->cfg.nblocks; k++)
		rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->s[k]);
	rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->z);
	rc = rc ? rc : gpu_buffer_alloc(a, fused ? 16 : act, 0, &fit->g);
	rc = rc ? rc : gpu_buffer_alloc(a, 12 * fine_px, 0, &vf->fine);
	if (band_px)
		rc = rc ? rc : gpu_buffer_alloc(a, 12 * band_px, 0, &vf->band);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * div_up(n, GROUP), 1, &vf->sse);
	rc = rc ? rc : gpu_buffer_alloc(a, 16, 0, &vf->dummy);
	if (rc == ERR_DEVICE_OOM)
		fail(err, errlen, rc,
		     "out of device memory for a render of width %d",
		     fit->cfg.nf, 0, 0, 0);
	return rc;
}

/* The band of output rows [oy, oy + rows): tiles over its fine window,
 * the window into the output band (resampled when not exact), read back
 * into out. */
static int view_band(struct view_fit *vf, int oy, int rows, struct image *out)
{
	struct nn_fit *fit = &vf->fit;
	const struct view_geom *g = &vf->g;
	int wx = g->cx, wy = oy, ww = g->cw, wh = rows;
	if (!g->exact) {
		int x1, y1;
		fine_span(g->cx, g->cx + g->cw, g->ow, g->fw, &wx, &x1);
		fine_span(oy, oy + rows, g->oh, g->fh, &wy, &y1);
		ww = x1 - wx;
		wh = y1 - wy;
	}
	struct recorder r = { .fit = fit };
	struct gpu_program *prog = NULL;
	int rc = nn_record_pipelines(&r);
	rc = rc ? rc : nn_record_begin(&r, 0, &prog);
	if (rc)
		return rc;
	for (int ty = wy; ty < wy + wh; ty += vf->core_h) {
		for (int tx = wx; tx < wx + ww; tx += vf->core_w) {
			struct tile t;
			t.core.x = tx;
			t.core.y = ty;
			t.core.w = wx + ww - tx < vf->core_w ? wx + ww - tx
							     : vf->core_w;
			t.core.h = wy + wh - ty < vf->core_h ? wy + wh - ty
							     : vf->core_h;
			int x0 = tx - g->pad, y0 = ty - g->pad;
			int x1 = tx + t.core.w + g->pad;
			int y1 = ty + t.core.h + g->pad;
			t.region.x = x0 < 0 ? 0 : x0;
			t.region.y = y0 < 0 ? 0 : y0;
			t.region.w = (x1 > g->fw ? g->fw : x1) - t.region.x;
			t.region.h = (y1 > g->fh ? g->fh : y1) - t.region.y;
			nn_record_forward(&r, &t);
			struct head_push p = {
				.tile = nn_record_tile_push(fit, &t),
				.w_off = (uint32_t)fit->layout.out_w,
				.b_off = (uint32_t)fit->layout.out_b,
				.view_w = (uint32_t)ww,
				.view_x = wx,
				.view_y = wy,
			};
			PASS(&r, r.head_render, p,
			     div_up((uint64_t)p.tile.n, GROUP), 1, &fit->params,
			     nn_record_last_s(&r), &vf->dummy, &vf->fine,
			     &vf->dummy, &vf->sse);
			nn_record_stage_end(&r, NN_PASS_HEAD);
			vf->tiles++;
		}
	}
	if (!g->exact) {
		struct resample_push p = {
			.tile = { .img_w = g->fw,
				  .img_h = g->fh,
				  .tx = wx,
				  .ty = wy,
				  .tw = ww,
				  .th = wh,
				  .cx = g->cx,
				  .cy = oy,
				  .cw = g->cw,
				  .ch = rows,
				  .n = g->cw * rows },
			.out_w = g->ow,
			.out_h = g->oh,
		};
		PASS(&r, vf->resample, p, div_up((uint64_t)p.tile.n, GROUP), 1,
		     &vf->fine, &vf->band, NULL, NULL, NULL, NULL);
		nn_record_stage_end(&r, NN_PASS_HEAD);
	}
	rc = r.rc ? r.rc : gpu_program_end(prog);
	rc = rc ? rc : gpu_program_run(prog);
	gpu_program_destroy(prog);
	uint64_t count = (uint64_t)g->cw * rows * 3;
	float *dst = out->rgb + (uint64_t)(oy - g->cy) * g->cw * 3;
	rc = rc ? rc
		: gpu_download(fit->gpu, g->exact ? &vf->fine : &vf->band, 0,
			       dst, count * 4);
	for (uint64_t i = 0; rc == 0 && i < count; i++)
		dst[i] = (dst[i] + 1.0f) * 0.5f;
	return rc;
}

/* The render-only fit of model on the fine grid of g. */
static int view_fit_init(struct view_fit *vf, struct gpu_context *gpu,
			 const struct nn_config *cfg, const float *params,
			 uint64_t budget, char *err, size_t errlen)
{
	struct nn_fit *fit = &vf->fit;
	fit->gpu = gpu;
	fit->cfg = *cfg;
	for (int k = 0; k < cfg->nblocks; k++)
		fit->cfg.dilations[k] = cfg->dilations[k] * vf->g.s;
	fit->width = vf->g.fw;
	fit->height = vf->g.fh;
	fit->precision = NN_PRECISION_FP32;
	nn_layout_init(&fit->layout, &fit->cfg);
	fit->vars = fit->vars32 =
	    nn_variants_of(gpu, NN_PRECISION_FP32, fit->cfg.nf);
	vf->g.pad = nn_config_pad(&fit->cfg);
	int rc = view_alloc(vf, budget, err, errlen);
	rc = rc ? rc
		: gpu_upload(gpu, &fit->params, 0, params,
			     fit->layout.total * sizeof(float));
	uint32_t spec[2] = { (uint32_t)cfg->nf, 0 };
	memcpy(&spec[1], &cfg->w0, 4);
	rc = rc || vf->g.exact ? rc
			       : gpu_pipeline_get(gpu, "resample", 2,
						  sizeof(struct resample_push),
						  spec, 2, &vf->resample);
	return rc;
}

int nn_render_view(struct gpu_context *gpu, const struct st_file *model,
		   const struct nn_view *view, struct image **out,
		   struct nn_view_info *info, char *err, size_t errlen)
{
	struct nn_config cfg;
	int w0, h0;
	float *params = NULL;
	struct image *img = NULL;
	*out = NULL;
	if (errlen)
		err[0] = 0;
	int rc = nn_package_config(model, &cfg, &w0, &h0, err, errlen);
	if (rc)
		return rc;
	cfg.epochs = 0;
	cfg.precision = NN_PRECISION_FP32;
	struct view_fit *vf = calloc(1, sizeof(*vf));
	if (!vf)
		return ERR_NOMEM;
	rc = view_geometry(view, w0, h0, &vf->g, err, errlen);
	rc = rc ? rc : nn_package_params(model, &cfg, &params, err, errlen);
	if (rc == 0 && !(img = image_create(vf->g.cw, vf->g.ch)))
		rc = ERR_NOMEM;
	const struct gpu_device_info *dev = gpu_info(gpu);
	uint64_t budget =
	    view->mem_budget ? view->mem_budget : dev->budget_bytes / 10 * 8;
	rc =
	    rc ? rc : view_fit_init(vf, gpu, &cfg, params, budget, err, errlen);
	int bands = 0;
	for (int oy = vf->g.cy; rc == 0 && oy < vf->g.cy + vf->g.ch;
	     oy += vf->band_rows, bands++) {
		int rows = vf->g.cy + vf->g.ch - oy < vf->band_rows
			       ? vf->g.cy + vf->g.ch - oy
			       : vf->band_rows;
		rc = view_band(vf, oy, rows, img);
	}
	if (rc == 0 && info)
		*info =
		    (struct nn_view_info){ vf->g.ow,    vf->g.oh, vf->g.s,
					   vf->g.exact, bands,    vf->tiles };
	if (rc && !err[0])
		snprintf(err, errlen, "the render failed: %s",
			 error_message(rc));
	gpu_arena_destroy(vf->fit.arena);
	free(vf);
	free(params);
	if (rc)
		image_destroy(img);
	else
		*out = img;
	return rc;
}
