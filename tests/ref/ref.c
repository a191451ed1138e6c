/*
 * ref.c - the plain-C, double-precision reference of every ConvSIREN pass
 * (see ref.h for the data layout and the math of each pass).
 *
 * Each pass is a direct transcription of its formula in ref.h: loops over
 * channels and tile pixels, sums in double, no blocking, no cleverness, so
 * that a reader can check it against the header line by line. It is the
 * yardstick the shaders are measured against, so it must stay obviously
 * right before it is fast; the loop orders are only chosen so that the
 * inner loop walks memory contiguously (channel-major rows of N pixels),
 * which keeps nf = 64 on a 64x64 image well under a second per gradient.
 *
 * Activation gradients (dY, dS, dZ) are written; parameter gradients are
 * added to (+=), so the gradients of several tiles sum into one vector.
 * ref_tile_grad keeps every forward buffer (S_0..S_n, Z_1..Z_n) for the
 * backward pass rather than recomputing. Out of memory aborts: this is
 * test code, and a reference that silently returns nothing is worse.
 *
 * This file must not depend on Vulkan or on anything of the daemon beyond
 * model.h's layout and util/image.h's struct.
 */
#include "ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static void *ref_alloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size);
	if (!p) {
		fprintf(stderr, "ref: out of memory (%zu x %zu bytes)\n", count,
			size);
		abort();
	}
	return p;
}

static double act(double w0, double s) { return sin(w0 * s); }

static double act_deriv(double w0, double s) { return w0 * cos(w0 * s); }

static size_t tile_pixels(const struct ref_tile *t)
{
	return (size_t)t->tw * (size_t)t->th;
}

static int in_core(const struct ref_tile *t, int x, int y)
{
	return x >= t->cx && x < t->cx + t->cw && y >= t->cy &&
	       y < t->cy + t->ch;
}

/*
 * Index in the tile of the pixel displaced by (dx, dy) from tile-local
 * (lx, ly), or -1 when it falls outside the tile (where activations are
 * zero).
 */
static long tile_neighbour(const struct ref_tile *t, int lx, int ly, int dx,
			   int dy)
{
	int nx = lx + dx, ny = ly + dy;
	if (nx < 0 || nx >= t->tw || ny < 0 || ny >= t->th)
		return -1;
	return (long)ny * t->tw + nx;
}

/* ------------------------------------------------------------ forward */

void ref_first(const struct nn_layout *l, const float *params,
	       const struct ref_tile *t, double *s0)
{
	size_t n = tile_pixels(t);
	const float *w = params + l->first_w;
	const float *b = params + l->first_b;

	for (int c = 0; c < l->nf; c++) {
		for (int ly = 0; ly < t->th; ly++) {
			for (int lx = 0; lx < t->tw; lx++) {
				int x = t->tx + lx, y = t->ty + ly;
				double u = (2.0 * x + 1.0) / t->img_w - 1.0;
				double v = (2.0 * y + 1.0) / t->img_h - 1.0;
				size_t p = (size_t)ly * t->tw + lx;
				s0[c * n + p] = (double)w[c * 2 + 0] * u +
						(double)w[c * 2 + 1] * v +
						(double)b[c];
			}
		}
	}
}

/* h[p] = act(s[p]) over one channel of the tile: each activation is
 * taken once, not once per tap. */
static void activate_channel(double w0, const double *s, size_t n, double *h)
{
	for (size_t p = 0; p < n; p++)
		h[p] = act(w0, s[p]);
}

/*
 * sum_t taps[t] * h[q + sign * displacement_t] at tile pixel (lx, ly):
 * sign +1 gathers what the depthwise conv reads (forward), sign -1 what
 * it wrote to (the transpose, backward). Outside the tile h reads 0.
 */
static double gather_taps(const struct ref_tile *t, int d, int sign,
			  const float *taps, const double *h, int lx, int ly)
{
	double sum = 0;

	for (int i = -1; i <= 1; i++) {
		for (int j = -1; j <= 1; j++) {
			int tap = (i + 1) * 3 + (j + 1);
			long q = tile_neighbour(t, lx, ly, sign * j * d,
						sign * i * d);
			if (q >= 0)
				sum += (double)taps[tap] * h[q];
		}
	}
	return sum;
}

/* tap_grad[t] += g * h[p + displacement_t] for tile pixel p = (lx, ly). */
static void scatter_tap_grads(const struct ref_tile *t, int d, double g,
			      const double *h, int lx, int ly, double *tap_grad)
{
	for (int i = -1; i <= 1; i++) {
		for (int j = -1; j <= 1; j++) {
			long q = tile_neighbour(t, lx, ly, j * d, i * d);
			if (q >= 0)
				tap_grad[(i + 1) * 3 + (j + 1)] += g * h[q];
		}
	}
}

void ref_dwconv(int nf, const struct ref_tile *t, int d, const float *dw,
		float w0, const double *s, double *z)
{
	size_t n = tile_pixels(t);
	double *h = ref_alloc(n, sizeof(double));

	for (int c = 0; c < nf; c++) {
		activate_channel(w0, s + c * n, n, h);
		for (int ly = 0; ly < t->th; ly++)
			for (int lx = 0; lx < t->tw; lx++)
				z[c * n + (size_t)ly * t->tw + lx] =
				    gather_taps(t, d, +1, dw + c * 9, h, lx,
						ly);
	}
	free(h);
}

void ref_pointwise(int nf, int n, const float *w, const float *b,
		   const double *z, double *s)
{
	for (int c = 0; c < nf; c++) {
		double *s_c = s + (size_t)c * n;
		for (int p = 0; p < n; p++)
			s_c[p] = (double)b[c];
		for (int j = 0; j < nf; j++) {
			double w_cj = (double)w[c * nf + j];
			const double *z_j = z + (size_t)j * n;
			for (int p = 0; p < n; p++)
				s_c[p] += w_cj * z_j[p];
		}
	}
}

/*
 * The head with an explicit w0. ref_head's declaration has no w0 (struct
 * nn_layout does not carry it), so the public ref_head uses NN_W0 and
 * ref_tile_grad calls this with cfg->w0, keeping every pass of one
 * network on the same w0. dy and ds4 may be NULL (forward only, as
 * ref_image_forward uses it); target is required.
 */
static double head_pass(const struct nn_layout *l, const float *params,
			double w0, const struct ref_tile *t,
			const struct image *target, const double *s4, double *y,
			double *dy, double *ds4)
{
	size_t n = tile_pixels(t);
	int nf = l->nf;
	const float *ow = params + l->out_w;
	const float *ob = params + l->out_b;
	double scale = 2.0 / (3.0 * (double)t->img_w * (double)t->img_h);
	double sse = 0;

	for (int ly = 0; ly < t->th; ly++) {
		for (int lx = 0; lx < t->tw; lx++) {
			int x = t->tx + lx, yy = t->ty + ly;
			size_t p = (size_t)ly * t->tw + lx;
			int core = in_core(t, x, yy);
			const float *rgb =
			    target->rgb + ((size_t)yy * target->width + x) * 3;
			double grad_out[3];

			for (int o = 0; o < 3; o++) {
				double pred = (double)ob[o];
				for (int c = 0; c < nf; c++)
					pred += (double)ow[o * nf + c] *
						act(w0, s4[c * n + p]);
				if (y)
					y[o * n + p] = pred;
				grad_out[o] = 0;
				if (core) {
					double e = pred - (2.0 * rgb[o] - 1.0);
					sse += e * e;
					grad_out[o] = scale * e;
				}
				if (dy)
					dy[o * n + p] = grad_out[o];
			}
			if (!ds4)
				continue;
			for (int c = 0; c < nf; c++) {
				double back = 0;
				for (int o = 0; o < 3; o++)
					back += (double)ow[o * nf + c] *
						grad_out[o];
				ds4[c * n + p] =
				    act_deriv(w0, s4[c * n + p]) * back;
			}
		}
	}
	return sse;
}

static void head_back(const struct nn_layout *l, const float *params, double w0,
		      size_t n, const double *s4, const double *dy, double *ds4)
{
	const float *ow = params + l->out_w;
	int nf = l->nf;
	for (int c = 0; c < nf; c++) {
		for (size_t p = 0; p < n; p++) {
			double back = 0;
			for (int o = 0; o < 3; o++)
				back += (double)ow[o * nf + c] * dy[o * n + p];
			ds4[c * n + p] = act_deriv(w0, s4[c * n + p]) * back;
		}
	}
}

void ref_head_back(const struct nn_layout *l, const float *params, int n,
		   const double *s4, const double *dy, double *ds4)
{
	head_back(l, params, NN_W0, (size_t)n, s4, dy, ds4);
}

double ref_head(const struct nn_layout *l, const float *params,
		const struct ref_tile *t, const struct image *target,
		const double *s4, double *y, double *dy, double *ds4)
{
	return head_pass(l, params, NN_W0, t, target, s4, y, dy, ds4);
}

/* ----------------------------------------------------------- backward */

void ref_pointwise_back_data(int nf, int n, const float *w, const double *ds,
			     double *dz)
{
	for (int j = 0; j < nf; j++) {
		double *dz_j = dz + (size_t)j * n;
		for (int p = 0; p < n; p++)
			dz_j[p] = 0;
		for (int c = 0; c < nf; c++) {
			double w_cj = (double)w[c * nf + j];
			const double *ds_c = ds + (size_t)c * n;
			for (int p = 0; p < n; p++)
				dz_j[p] += w_cj * ds_c[p];
		}
	}
}

void ref_pointwise_back_weight(int nf, int n, const double *ds, const double *z,
			       double *gw, double *gb)
{
	for (int c = 0; c < nf; c++) {
		const double *ds_c = ds + (size_t)c * n;
		double bias_sum = 0;
		for (int p = 0; p < n; p++)
			bias_sum += ds_c[p];
		gb[c] += bias_sum;
		for (int j = 0; j < nf; j++) {
			const double *z_j = z + (size_t)j * n;
			double dot = 0;
			for (int p = 0; p < n; p++)
				dot += ds_c[p] * z_j[p];
			gw[c * nf + j] += dot;
		}
	}
}

void ref_dwconv_back(int nf, const struct ref_tile *t, int d, const float *dw,
		     float w0, const double *sprev, const double *dz,
		     double *dsprev, double *gdw)
{
	size_t n = tile_pixels(t);
	double *h = ref_alloc(n, sizeof(double));

	for (int c = 0; c < nf; c++) {
		const double *sprev_c = sprev + c * n;
		const double *dz_c = dz + c * n;
		double tap_grad[9] = { 0 };

		activate_channel(w0, sprev_c, n, h);
		for (int ly = 0; ly < t->th; ly++) {
			for (int lx = 0; lx < t->tw; lx++) {
				size_t p = (size_t)ly * t->tw + lx;
				double into = gather_taps(t, d, -1, dw + c * 9,
							  dz_c, lx, ly);
				dsprev[c * n + p] =
				    act_deriv(w0, sprev_c[p]) * into;
				scatter_tap_grads(t, d, dz_c[p], h, lx, ly,
						  tap_grad);
			}
		}
		for (int tap = 0; tap < 9; tap++)
			gdw[c * 9 + tap] += tap_grad[tap];
	}
	free(h);
}

void ref_first_back(int nf, const struct ref_tile *t, const double *ds0,
		    double *gw, double *gb)
{
	size_t n = tile_pixels(t);

	for (int c = 0; c < nf; c++) {
		double gu = 0, gv = 0, gbias = 0;
		for (int ly = 0; ly < t->th; ly++) {
			for (int lx = 0; lx < t->tw; lx++) {
				int x = t->tx + lx, y = t->ty + ly;
				double u = (2.0 * x + 1.0) / t->img_w - 1.0;
				double v = (2.0 * y + 1.0) / t->img_h - 1.0;
				double g = ds0[c * n + (size_t)ly * t->tw + lx];
				gu += g * u;
				gv += g * v;
				gbias += g;
			}
		}
		gw[c * 2 + 0] += gu;
		gw[c * 2 + 1] += gv;
		gb[c] += gbias;
	}
}

void ref_out_back(int nf, int n, float w0, const double *dy, const double *s4,
		  double *gw, double *gb)
{
	double *h = ref_alloc((size_t)n, sizeof(double));

	for (int o = 0; o < 3; o++) {
		const double *dy_o = dy + (size_t)o * n;
		double bias_sum = 0;
		for (int p = 0; p < n; p++)
			bias_sum += dy_o[p];
		gb[o] += bias_sum;
	}
	for (int c = 0; c < nf; c++) {
		activate_channel(w0, s4 + (size_t)c * n, (size_t)n, h);
		for (int o = 0; o < 3; o++) {
			const double *dy_o = dy + (size_t)o * n;
			double dot = 0;
			for (int p = 0; p < n; p++)
				dot += dy_o[p] * h[p];
			gw[o * nf + c] += dot;
		}
	}
	free(h);
}

/* ----------------------------------------------------- whole networks */

/*
 * The forward activations of one tile: s[0] = S_0 (first layer), and for
 * block k = 1..nblocks z[k] = Z_k (after the depthwise conv) and s[k] = S_k
 * (after the pointwise). z[0] is unused.
 */
struct forward_buffers {
	double *s[NN_MAX_BLOCKS + 1];
	double *z[NN_MAX_BLOCKS + 1];
};

static void forward_run(const struct nn_config *cfg, const struct nn_layout *l,
			const float *params, const struct ref_tile *t,
			struct forward_buffers *f)
{
	size_t n = tile_pixels(t), nf = (size_t)l->nf;

	memset(f, 0, sizeof(*f));
	f->s[0] = ref_alloc(nf * n, sizeof(double));
	ref_first(l, params, t, f->s[0]);
	for (int k = 0; k < l->nblocks; k++) {
		f->z[k + 1] = ref_alloc(nf * n, sizeof(double));
		f->s[k + 1] = ref_alloc(nf * n, sizeof(double));
		ref_dwconv(l->nf, t, cfg->dilations[k], params + l->dw[k],
			   cfg->w0, f->s[k], f->z[k + 1]);
		ref_pointwise(l->nf, (int)n, params + l->pw_w[k],
			      params + l->pw_b[k], f->z[k + 1], f->s[k + 1]);
	}
}

static void forward_free(struct forward_buffers *f)
{
	for (int k = 0; k <= NN_MAX_BLOCKS; k++) {
		free(f->s[k]);
		free(f->z[k]);
	}
}

double ref_tile_grad(const struct nn_config *cfg, const struct nn_layout *l,
		     const float *params, const struct image *target,
		     const struct ref_tile *t, double *grad)
{
	size_t n = tile_pixels(t), nf = (size_t)l->nf;
	int nb = l->nblocks;
	struct forward_buffers f;
	double *dy = ref_alloc(3 * n, sizeof(double));
	double *ds = ref_alloc(nf * n, sizeof(double));
	double *dz = ref_alloc(nf * n, sizeof(double));
	double sse;

	forward_run(cfg, l, params, t, &f);
	if (nn_loss_has_terms(&cfg->recipe)) {
		/* the MSE's dY, the terms' added, then dS of every pixel */
		double *y = ref_alloc(3 * n, sizeof(double));
		sse = head_pass(l, params, cfg->w0, t, target, f.s[nb], y, dy,
				NULL);
		ref_loss_terms(&cfg->recipe, t, target, y, dy, NULL);
		head_back(l, params, cfg->w0, n, f.s[nb], dy, ds);
		free(y);
	} else {
		sse = head_pass(l, params, cfg->w0, t, target, f.s[nb], NULL,
				dy, ds);
	}
	ref_out_back(l->nf, (int)n, cfg->w0, dy, f.s[nb], grad + l->out_w,
		     grad + l->out_b);

	/* Block k (from 0) maps S[k] to S[k + 1]: ds holds dS[k + 1] on
	 * entry to its iteration and dS[k] after it. */
	for (int k = nb - 1; k >= 0; k--) {
		ref_pointwise_back_weight(l->nf, (int)n, ds, f.z[k + 1],
					  grad + l->pw_w[k], grad + l->pw_b[k]);
		ref_pointwise_back_data(l->nf, (int)n, params + l->pw_w[k], ds,
					dz);
		ref_dwconv_back(l->nf, t, cfg->dilations[k], params + l->dw[k],
				cfg->w0, f.s[k], dz, ds, grad + l->dw[k]);
	}
	ref_first_back(l->nf, t, ds, grad + l->first_w, grad + l->first_b);

	forward_free(&f);
	free(dy);
	free(ds);
	free(dz);
	return sse;
}

static struct ref_tile whole_image_tile(const struct image *img)
{
	struct ref_tile t = {
		.img_w = img->width,
		.img_h = img->height,
		.tx = 0,
		.ty = 0,
		.tw = img->width,
		.th = img->height,
		.cx = 0,
		.cy = 0,
		.cw = img->width,
		.ch = img->height,
	};
	return t;
}

double ref_image_grad(const struct nn_config *cfg, const struct nn_layout *l,
		      const float *params, const struct image *target,
		      double *grad)
{
	struct ref_tile t = whole_image_tile(target);
	return ref_tile_grad(cfg, l, params, target, &t, grad);
}

double ref_image_forward(const struct nn_config *cfg, const struct nn_layout *l,
			 const float *params, const struct image *target,
			 double *y)
{
	struct ref_tile t = whole_image_tile(target);
	struct forward_buffers f;
	double sse;

	forward_run(cfg, l, params, &t, &f);
	sse = head_pass(l, params, cfg->w0, &t, target, f.s[l->nblocks], y,
			NULL, NULL);
	forward_free(&f);
	return sse;
}
