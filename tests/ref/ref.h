/*
 * ref.h - a plain-C, double-precision reference of every ConvSIREN pass.
 *
 * The GPU shaders are tested against these functions on small sizes, and
 * these functions are tested against finite differences. They use exactly
 * the data layout of the shaders, so a test can feed both the same buffers:
 *
 * A tile is a rectangle of the image, (tx, ty, tw, th) in image pixels,
 * already clipped to the image; its core is (cx, cy, cw, ch), inside it.
 * N = tw * th. Pixel (x, y) of the image is index p = (y - ty) * tw + (x - tx)
 * of the tile. Activations are channel-major: X[c * N + p]. Activations at
 * positions outside the tile read as zero (zero padding at the image border;
 * at interior tile edges the halo absorbs the error).
 *
 * act(s) = sin(w0 s); act'(s) = w0 cos(w0 s). Tap t = (i + 1) * 3 + (j + 1)
 * for row offset i and column offset j in {-1, 0, 1}, displacement
 * (j * d, i * d).
 *
 * Parameters and gradients are flat vectors with the nn_layout of model.h.
 * Gradients are accumulated (+=), never overwritten, so tiles can be summed.
 */
#ifndef VKINR_REF_H
#define VKINR_REF_H

#include "nn/model.h"
#include "util/image.h"

struct ref_tile {
	int img_w, img_h;   /* whole image */
	int tx, ty, tw, th; /* tile region (core + halo, clipped) */
	int cx, cy, cw, ch; /* core */
};

/* S0[c,p] = first_w[c][0] * u + first_w[c][1] * v + first_b[c],
 * u = (2x + 1) / W - 1, v = (2y + 1) / H - 1 (image coordinates). */
void ref_first(const struct nn_layout *l, const float *params,
	       const struct ref_tile *t, double *s0);

/* Z[c,p] = sum_t dw[c][t] * act(S[c, p + displacement_t]) for dilation d. */
void ref_dwconv(int nf, const struct ref_tile *t, int d, const float *dw,
		float w0, const double *s, double *z);

/* S[c,p] = sum_j w[c][j] * Z[j,p] + b[c]  (w is nf x nf, [out][in]). */
void ref_pointwise(int nf, int n, const float *w, const float *b,
		   const double *z, double *s);

/*
 * The head: y[o] = sum_c out_w[o][c] act(S4[c,p]) + out_b[o]. On core
 * pixels, e = y - (2 rgb - 1); sse += sum_o e^2; dY[o,p] = 2 e / (3 W H).
 * Elsewhere dY = 0. dS4[c,p] = act'(S4[c,p]) * sum_o out_w[o][c] dY[o,p].
 * Also writes y (3 x N, may be NULL). Returns the core's sse.
 */
double ref_head(const struct nn_layout *l, const float *params,
		const struct ref_tile *t, const struct image *target,
		const double *s4, double *y, double *dy, double *ds4);

/* dS4[c,p] = act'(S4[c,p]) * sum_o out_w[o][c] dY[o,p], every pixel: the
 * head's second half when the loss has terms besides the MSE. */
void ref_head_back(const struct nn_layout *l, const float *params, int n,
		   const double *s4, const double *dy, double *ds4);

/*
 * The loss terms besides the MSE (loss_ref.c; their definitions are at
 * struct nn_recipe in model.h) on one tile, for the prediction y (3 x N,
 * [-1, 1], as ref_head writes it): each term counted by its centre pixel
 * in the core. Adds their gradient into dy (3 x N, may be NULL), writes
 * their raw sums (chroma, grad, 1 - SSIM) into sums (may be NULL) and
 * returns their weighted loss.
 */
double ref_loss_terms(const struct nn_recipe *r, const struct ref_tile *t,
		      const struct image *target, const double *y, double *dy,
		      double sums[3]);

/* dZ[j,p] = sum_c w[c][j] dS[c,p]. */
void ref_pointwise_back_data(int nf, int n, const float *w, const double *ds,
			     double *dz);
/* gw[c][j] += sum_p dS[c,p] Z[j,p];  gb[c] += sum_p dS[c,p]. */
void ref_pointwise_back_weight(int nf, int n, const double *ds, const double *z,
			       double *gw, double *gb);

/*
 * Through the depthwise conv and the previous activation:
 * dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - displacement_t]
 * gdw[c][t] += sum_p dZ[c,p] act(Sprev[c, p + displacement_t]).
 */
void ref_dwconv_back(int nf, const struct ref_tile *t, int d, const float *dw,
		     float w0, const double *sprev, const double *dz,
		     double *dsprev, double *gdw);

/* gw[c][0] += sum_p dS0[c,p] u;  gw[c][1] += ... v;  gb[c] += sum dS0. */
void ref_first_back(int nf, const struct ref_tile *t, const double *ds0,
		    double *gw, double *gb);

/* gw[o][c] += sum_p dY[o,p] act(S4[c,p]);  gb[o] += sum_p dY[o,p]. */
void ref_out_back(int nf, int n, float w0, const double *dy, const double *s4,
		  double *gw, double *gb);

/*
 * The whole network on one tile: forward, head, backward. Adds the
 * gradient of the loss (the mean over the image's 3 W H values, plus the
 * recipe's loss terms, so summing every tile of a tiling gives the
 * whole-image gradient) into grad (l->total doubles) and returns the
 * core's sum of squared errors.
 */
double ref_tile_grad(const struct nn_config *cfg, const struct nn_layout *l,
		     const float *params, const struct image *target,
		     const struct ref_tile *t, double *grad);

/* The whole image as one tile with no halo: loss = sse / (3 W H). */
double ref_image_grad(const struct nn_config *cfg, const struct nn_layout *l,
		      const float *params, const struct image *target,
		      double *grad);

/* Forward only, whole image: the prediction in [-1, 1] scale, 3 x W x H
 * channel-major (may be NULL), returns the sse against target. */
double ref_image_forward(const struct nn_config *cfg, const struct nn_layout *l,
			 const float *params, const struct image *target,
			 double *y);

/* ------------------------------------------------ optimizer (optim_ref.c) */

/* Newton-Schulz as Muon runs it: out = NS5(g / (|g|_F + 1e-7)), n x n. */
void ref_newton_schulz(int n, const double *g, double *out);

/* The optimizer's state, l->total doubles each, except muon_m (nblocks
 * nf x nf); muon_m and average may be NULL when the recipe has none. */
struct ref_optim {
	double *params, *m, *v, *muon_m, *average;
};
/* One step at epoch t (1-based) and rate lr for cfg's recipe. */
void ref_optim_step(const struct nn_config *cfg, const struct nn_layout *l,
		    int t, double lr, const double *grad, struct ref_optim *s);

#endif
