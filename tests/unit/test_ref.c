/*
 * test_ref.c - checks the double-precision reference of ConvSIREN
 * (tests/ref).
 *
 * The reference is what the GPU shaders are measured against, so it is
 * itself measured against things that need no trust in it:
 *
 *  - central finite differences of the loss, computed with the forward
 *    pass only, for a random sample of every tensor's entries (the
 *    depthwise taps are perturbed away from the identity first, so the
 *    off-centre taps and the zero padding matter);
 *  - the tiling argument of the spec: with a halo of PAD pixels the sum
 *    of the tiles' gradients is the whole image's gradient, and with one
 *    pixel less it is not (so the test can fail);
 *  - per-pass identities (identity taps, identity weights, the coordinate
 *    grid at the corners, the direction of a tap's displacement).
 *
 * (model.c's initialisation and learning-rate schedules are
 * test_model.c's.)
 *
 * Parameters are floats, so a finite difference perturbs one float by
 * 1e-4 of its size (at least 1e-6) and divides by the difference actually
 * stored (both perturbed values rounded to float); the loss is in double,
 * so what remains is the O(h^2) truncation of the central difference,
 * well inside the 1e-3 relative tolerance (sin(30 s) is curved enough
 * that a 1e-3 step is not, for the smallest gradients).
 *
 * Images are built by hand (struct image with a calloc'ed rgb array) so
 * that this test does not depend on the PNG module.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/model.h"
#include "ref/ref.h"
#include "unit/support_layout.h"

/* ------------------------------------------------------------ helpers */

static struct image *random_image(int width, int height, uint64_t seed)
{
	struct image *img = calloc(1, sizeof(*img));
	struct nn_rng rng;

	assert_non_null(img);
	img->width = width;
	img->height = height;
	img->rgb = calloc((size_t)width * height * 3, sizeof(float));
	assert_non_null(img->rgb);
	nn_rng_seed(&rng, seed);
	for (size_t i = 0; i < (size_t)width * height * 3; i++)
		img->rgb[i] = nn_rng_uniform(&rng, 0.0f, 1.0f);
	return img;
}

static void free_image(struct image *img)
{
	if (!img)
		return;
	free(img->rgb);
	free(img);
}

static void make_config(struct nn_config *cfg, int nf, const int *dilations,
			int nblocks)
{
	nn_config_defaults(cfg, 1);
	cfg->nf = nf;
	cfg->nblocks = nblocks;
	for (int k = 0; k < nblocks; k++)
		cfg->dilations[k] = dilations[k];
	cfg->seed = 1;
}

/* nn_init_params, then every depthwise tap moved by U(-0.3, 0.3). */
static float *perturbed_params(const struct nn_config *cfg,
			       const struct nn_layout *l)
{
	float *params = malloc(l->total * sizeof(float));
	struct nn_rng rng;

	assert_non_null(params);
	nn_init_params(cfg, l, params);
	nn_rng_seed(&rng, 12345);
	for (int k = 0; k < l->nblocks; k++) {
		float *taps = params + l->dw[k];
		for (int i = 0; i < l->nf * 9; i++)
			taps[i] += nn_rng_uniform(&rng, -0.3f, 0.3f);
	}
	return params;
}

/* The whole image as one tile with no halo. */
static struct ref_tile whole_tile(const struct image *img)
{
	struct ref_tile t = {
		.img_w = img->width,
		.img_h = img->height,
		.tw = img->width,
		.th = img->height,
		.cw = img->width,
		.ch = img->height,
	};
	return t;
}

/* The MSE, plus the recipe's loss terms when it has any. */
static double loss_of(const struct nn_config *cfg, const struct nn_layout *l,
		      const float *params, const struct image *target)
{
	size_t n = (size_t)target->width * target->height;
	int terms = nn_loss_has_terms(&cfg->recipe);
	double *y = terms ? calloc(3 * n, sizeof(double)) : NULL;
	double sse = ref_image_forward(cfg, l, params, target, y);
	double loss = sse / (3.0 * (double)n);
	if (terms) {
		struct ref_tile t = whole_tile(target);
		loss += ref_loss_terms(&cfg->recipe, &t, target, y, NULL, NULL);
	}
	free(y);
	return loss;
}

/* A recipe with every loss term on, for the checks that take one. */
static const struct nn_recipe every_term = {
	.loss_ssim = 0.7,
	.loss_grad = 1.3,
	.loss_chroma = 0.9,
};

/* ------------------------------------------------- finite differences */

#define FD_SAMPLES 40
#define FD_REL_STEP 1e-4
#define FD_MIN_STEP 1e-6
#define FD_REL_TOL 1e-3

/*
 * The central difference of the loss in params[i]. The step is relative
 * to the parameter, with a floor for parameters at or near zero; the
 * divisor is the difference of the two floats actually stored.
 */
static double central_difference(const struct nn_config *cfg,
				 const struct nn_layout *l, float *params,
				 size_t i, const struct image *target)
{
	float saved = params[i];
	double step = fmax(FD_REL_STEP * fabs(saved), FD_MIN_STEP);
	float up = (float)(saved + step), down = (float)(saved - step);
	double loss_up, loss_down;

	params[i] = up;
	loss_up = loss_of(cfg, l, params, target);
	params[i] = down;
	loss_down = loss_of(cfg, l, params, target);
	params[i] = saved;
	return (loss_up - loss_down) / ((double)up - (double)down);
}

/* Distinct random indices into a tensor of count entries: the first
 * samples entries of a partial Fisher-Yates shuffle. */
static size_t *sample_indices(struct nn_rng *rng, size_t count, size_t samples)
{
	size_t *order = malloc(count * sizeof(size_t));

	assert_non_null(order);
	for (size_t i = 0; i < count; i++)
		order[i] = i;
	for (size_t s = 0; s < samples; s++) {
		size_t r = s + nn_rng_next(rng) % (count - s);
		size_t swap = order[s];
		order[s] = order[r];
		order[r] = swap;
	}
	return order;
}

/*
 * Compares grad with finite differences on up to FD_SAMPLES entries of
 * one tensor; returns the worst relative error seen. The floor of 1e-6
 * of the tensor's largest gradient absorbs entries whose gradient is
 * (nearly) zero, where a relative error means nothing.
 */
static double check_tensor(const struct nn_config *cfg,
			   const struct nn_layout *l, float *params,
			   const struct image *target, const double *grad,
			   const struct test_tensor *tn, struct nn_rng *pick)
{
	size_t samples = tn->count < FD_SAMPLES ? tn->count : FD_SAMPLES;
	size_t *order = sample_indices(pick, tn->count, samples);
	const double *g = grad + tn->offset;
	double grad_scale = 0, worst = 0;

	for (size_t i = 0; i < tn->count; i++)
		grad_scale = fmax(grad_scale, fabs(g[i]));
	assert_true(grad_scale > 0);
	for (size_t s = 0; s < samples; s++) {
		size_t i = order[s];
		double fd =
		    central_difference(cfg, l, params, tn->offset + i, target);
		double floor = 1e-6 * grad_scale;
		double err = fabs(fd - g[i]);

		worst = fmax(worst, err / (fabs(g[i]) + floor));
		if (err > FD_REL_TOL * fabs(g[i]) + floor)
			print_error("%s[%zu]: analytic %.10e, finite "
				    "difference %.10e\n",
				    tn->name, i, g[i], fd);
		assert_true(err <= FD_REL_TOL * fabs(g[i]) + floor);
	}
	free(order);
	return worst;
}

/* terms: the loss terms' weights (NULL: MSE alone). */
static void check_finite_differences(const int *dilations, int nblocks,
				     float w0, const struct nn_recipe *terms)
{
	struct nn_config cfg;
	struct nn_layout l;
	struct test_tensor tensors[TEST_MAX_TENSORS];
	struct image *target = random_image(13, 9, 77);
	struct nn_rng pick;
	float *params;
	double *grad;
	double sse, loss, worst = 0;
	int ntensors;

	make_config(&cfg, 16, dilations, nblocks);
	cfg.w0 = w0;
	/* no terms: the MSE alone (the defaults add chroma) */
	struct nn_recipe none = { 0 };
	if (!terms)
		terms = &none;
	cfg.recipe.loss_ssim = terms->loss_ssim;
	cfg.recipe.loss_grad = terms->loss_grad;
	cfg.recipe.loss_chroma = terms->loss_chroma;
	int mse_only = terms == &none;
	nn_layout_init(&l, &cfg);
	params = perturbed_params(&cfg, &l);
	grad = calloc(l.total, sizeof(double));
	assert_non_null(grad);

	sse = ref_image_grad(&cfg, &l, params, target, grad);
	loss = loss_of(&cfg, &l, params, target);
	if (mse_only)
		assert_true(fabs(sse / (3.0 * 13 * 9) - loss) < 1e-12);

	nn_rng_seed(&pick, 2024);
	ntensors = test_layout_tensors(&l, tensors);
	for (int ti = 0; ti < ntensors; ti++)
		worst = fmax(worst, check_tensor(&cfg, &l, params, target, grad,
						 &tensors[ti], &pick));
	print_message("%d blocks, w0 %g: worst relative error %.2e\n", nblocks,
		      w0, worst);
	free(grad);
	free(params);
	free_image(target);
}

static void test_fd_dilations_1_2(void **state)
{
	static const int dilations[] = { 1, 2 };
	(void)state;
	check_finite_differences(dilations, 2, NN_W0, NULL);
}

static void test_fd_dilations_default(void **state)
{
	static const int dilations[] = { 1, 2, 4, 8 };
	(void)state;
	check_finite_differences(dilations, 4, NN_W0, NULL);
}

/* w0 comes from the config in every pass, the head included. */
static void test_fd_other_w0(void **state)
{
	static const int dilations[] = { 3, 1 };
	(void)state;
	check_finite_differences(dilations, 2, 20.0f, NULL);
}

/* --------------------------------------------------- tiled = untiled */

#define TILED_REL_TOL 1e-9

/*
 * Sums ref_tile_grad over a tiling of the image into cores of core_w x
 * core_h (ragged at the right and bottom), each grown by halo on every
 * side and clipped. Returns the sum of the tiles' sse.
 */
static double tiled_grad(const struct nn_config *cfg, const struct nn_layout *l,
			 const float *params, const struct image *target,
			 int core_w, int core_h, int halo, double *grad)
{
	int w = target->width, h = target->height;
	double sse = 0;

	for (int cy = 0; cy < h; cy += core_h) {
		for (int cx = 0; cx < w; cx += core_w) {
			struct ref_tile t = { .img_w = w, .img_h = h };
			int x1, y1;

			t.cx = cx;
			t.cy = cy;
			t.cw = cx + core_w <= w ? core_w : w - cx;
			t.ch = cy + core_h <= h ? core_h : h - cy;
			t.tx = cx - halo > 0 ? cx - halo : 0;
			t.ty = cy - halo > 0 ? cy - halo : 0;
			x1 = cx + t.cw + halo < w ? cx + t.cw + halo : w;
			y1 = cy + t.ch + halo < h ? cy + t.ch + halo : h;
			t.tw = x1 - t.tx;
			t.th = y1 - t.ty;
			sse += ref_tile_grad(cfg, l, params, target, &t, grad);
		}
	}
	return sse;
}

/* The largest |a - b| relative to |b| over all entries, with a floor of
 * 1e-6 of the vector's largest entry for entries that are (nearly) 0. */
static double worst_relative_error(const double *a, const double *b, size_t n)
{
	double scale = 0, worst = 0;

	for (size_t i = 0; i < n; i++)
		scale = fmax(scale, fabs(b[i]));
	for (size_t i = 0; i < n; i++)
		worst = fmax(worst,
			     fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-6 * scale));
	return worst;
}

/* terms: the loss terms' weights (NULL: MSE alone); they widen the halo
 * by the loss's radius. */
static void check_tiled(const int *dilations, int nblocks,
			const struct nn_recipe *terms)
{
	struct nn_config cfg;
	struct nn_layout l;
	struct image *target = random_image(37, 23, 5);
	float *params;
	double *whole, *tiled, *short_halo;
	double whole_sse, tiled_sse, short_sse, err;
	int pad;

	make_config(&cfg, 16, dilations, nblocks);
	if (terms) {
		cfg.recipe.loss_ssim = terms->loss_ssim;
		cfg.recipe.loss_grad = terms->loss_grad;
		cfg.recipe.loss_chroma = terms->loss_chroma;
	}
	nn_layout_init(&l, &cfg);
	pad = nn_config_pad(&cfg) + nn_loss_radius(&cfg.recipe);
	params = perturbed_params(&cfg, &l);
	whole = calloc(l.total, sizeof(double));
	tiled = calloc(l.total, sizeof(double));
	short_halo = calloc(l.total, sizeof(double));
	assert_non_null(whole);
	assert_non_null(tiled);
	assert_non_null(short_halo);

	whole_sse = ref_image_grad(&cfg, &l, params, target, whole);
	tiled_sse = tiled_grad(&cfg, &l, params, target, 8, 7, pad, tiled);
	err = worst_relative_error(tiled, whole, l.total);
	print_message("PAD %d: sse %.12g tiled %.12g, worst relative error "
		      "%.2e\n",
		      pad, whole_sse, tiled_sse, err);
	assert_true(fabs(tiled_sse - whole_sse) <= 1e-12 * whole_sse);
	assert_true(err <= TILED_REL_TOL);

	/* One pixel less of halo must show: the test is able to fail. */
	short_sse =
	    tiled_grad(&cfg, &l, params, target, 8, 7, pad - 1, short_halo);
	err = worst_relative_error(short_halo, whole, l.total);
	print_message("halo PAD-1: sse %.12g, worst relative error %.2e\n",
		      short_sse, err);
	assert_true(err > 1e-6);

	free(whole);
	free(tiled);
	free(short_halo);
	free(params);
	free_image(target);
}

static void test_tiled_default(void **state)
{
	static const int dilations[] = { 1, 2, 4, 8 };
	(void)state;
	check_tiled(dilations, 4, NULL);
}

static void test_tiled_1_2(void **state)
{
	static const int dilations[] = { 1, 2 };
	(void)state;
	check_tiled(dilations, 2, NULL);
}

/* ---------------------------------------------------- per-pass checks */

/* A 9x7 tile at (4, 3) of a 20x11 image, its core inside. */
static const struct ref_tile small_tile = {
	.img_w = 20,
	.img_h = 11,
	.tx = 4,
	.ty = 3,
	.tw = 9,
	.th = 7,
	.cx = 6,
	.cy = 4,
	.cw = 4,
	.ch = 3,
};

static double *random_doubles(size_t n, uint64_t seed, double bound)
{
	double *v = malloc(n * sizeof(double));
	struct nn_rng rng;

	assert_non_null(v);
	nn_rng_seed(&rng, seed);
	for (size_t i = 0; i < n; i++)
		v[i] = nn_rng_uniform(&rng, (float)-bound, (float)bound);
	return v;
}

static void test_dwconv_identity(void **state)
{
	const struct ref_tile *t = &small_tile;
	int nf = 16, n = t->tw * t->th;
	float dw[16 * 9] = { 0 };
	double *s = random_doubles((size_t)nf * n, 3, 0.2);
	double *z = malloc((size_t)nf * n * sizeof(double));

	(void)state;
	assert_non_null(z);
	for (int c = 0; c < nf; c++)
		dw[c * 9 + 4] = 1.0f;
	ref_dwconv(nf, t, 2, dw, NN_W0, s, z);
	for (int i = 0; i < nf * n; i++)
		assert_true(z[i] == sin(30.0 * s[i]));
	free(s);
	free(z);
}

/*
 * Tap 5 is (i, j) = (0, +1): it reads d pixels to the right; tap 7 is
 * (+1, 0): d pixels below. Beyond the tile it reads zero.
 */
static void test_dwconv_displacement(void **state)
{
	const struct ref_tile *t = &small_tile;
	int nf = 16, n = t->tw * t->th, d = 2;
	float dw[16 * 9] = { 0 };
	double *s = random_doubles((size_t)nf * n, 4, 0.2);
	double *z = malloc((size_t)nf * n * sizeof(double));

	(void)state;
	assert_non_null(z);
	for (int c = 0; c < nf; c++)
		dw[c * 9 + (c % 2 ? 5 : 7)] = 1.0f;
	ref_dwconv(nf, t, d, dw, NN_W0, s, z);
	for (int c = 0; c < nf; c++) {
		int dx = c % 2 ? d : 0, dy = c % 2 ? 0 : d;
		for (int y = 0; y < t->th; y++) {
			for (int x = 0; x < t->tw; x++) {
				int sx = x + dx, sy = y + dy;
				double want = 0;
				int q = sy * t->tw + sx;
				if (sx < t->tw && sy < t->th)
					want = sin(30.0 * s[c * n + q]);
				assert_true(z[c * n + y * t->tw + x] == want);
			}
		}
	}
	free(s);
	free(z);
}

static void test_pointwise_identity(void **state)
{
	int nf = 16, n = 50;
	float w[16 * 16] = { 0 }, b[16];
	double *z = random_doubles((size_t)nf * n, 5, 1.0);
	double *s = malloc((size_t)nf * n * sizeof(double));

	(void)state;
	assert_non_null(s);
	for (int c = 0; c < nf; c++) {
		w[c * nf + c] = 1.0f;
		b[c] = 0.25f * c - 1.0f;
	}
	ref_pointwise(nf, n, w, b, z, s);
	for (int c = 0; c < nf; c++)
		for (int p = 0; p < n; p++)
			assert_true(s[c * n + p] == z[c * n + p] + b[c]);
	free(z);
	free(s);
}

/* Channel 0 is u, channel 1 is v, channel 2 is 1 (the bias alone). */
static void test_first_coordinates(void **state)
{
	struct nn_config cfg;
	struct nn_layout l;
	float *params;
	double *s0;
	const int W = 20, H = 11;
	struct ref_tile whole = {
		.img_w = W,
		.img_h = H,
		.tw = W,
		.th = H,
		.cw = W,
		.ch = H,
	};
	const struct ref_tile *part = &small_tile;
	size_t n = (size_t)W * H;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.nf = 16;
	nn_layout_init(&l, &cfg);
	params = calloc(l.total, sizeof(float));
	s0 = calloc(16 * n, sizeof(double));
	assert_non_null(params);
	assert_non_null(s0);
	params[l.first_w + 0 * 2 + 0] = 1.0f;
	params[l.first_w + 1 * 2 + 1] = 1.0f;
	params[l.first_b + 2] = 1.0f;

	ref_first(&l, params, &whole, s0);
	assert_true(fabs(s0[0] - (1.0 / W - 1)) < 1e-15);
	assert_true(fabs(s0[n] - (1.0 / H - 1)) < 1e-15);
	assert_true(fabs(s0[n - 1] - (1 - 1.0 / W)) < 1e-15);
	assert_true(fabs(s0[2 * n - 1] - (1 - 1.0 / H)) < 1e-15);
	assert_true(fabs(s0[W - 1] - (1 - 1.0 / W)) < 1e-15);
	assert_true(fabs(s0[n + W - 1] - (1.0 / H - 1)) < 1e-15);
	assert_true(s0[2 * n] == 1.0 && s0[3 * n - 1] == 1.0);

	/* A tile uses image coordinates, not its own. */
	ref_first(&l, params, part, s0);
	n = (size_t)part->tw * part->th;
	assert_true(fabs(s0[0] - ((2.0 * 4 + 1) / W - 1)) < 1e-15);
	assert_true(fabs(s0[n] - ((2.0 * 3 + 1) / H - 1)) < 1e-15);
	assert_true(fabs(s0[n - 1] - ((2.0 * 12 + 1) / W - 1)) < 1e-15);
	assert_true(fabs(s0[2 * n - 1] - ((2.0 * 9 + 1) / H - 1)) < 1e-15);
	free(params);
	free(s0);
}

/*
 * Checks the head's outputs at tile pixel p = (lx, ly) against a direct
 * evaluation; returns that pixel's squared error (0 off the core).
 */
static double check_head_pixel(const struct nn_layout *l, const float *params,
			       const struct ref_tile *t,
			       const struct image *target, const double *s4,
			       const double *y, const double *dy,
			       const double *ds4, int lx, int ly)
{
	int n = t->tw * t->th, p = ly * t->tw + lx, nf = l->nf;
	int x = t->tx + lx, yy = t->ty + ly;
	int core = x >= t->cx && x < t->cx + t->cw && yy >= t->cy &&
		   yy < t->cy + t->ch;
	const float *rgb = target->rgb + (yy * t->img_w + x) * 3;
	double scale = 2.0 / (3.0 * t->img_w * t->img_h), sse = 0;

	for (int o = 0; o < 3; o++) {
		double want = params[l->out_b + o], e;
		for (int c = 0; c < nf; c++)
			want += params[l->out_w + o * nf + c] *
				sin(30.0 * s4[c * n + p]);
		assert_true(fabs(y[o * n + p] - want) < 1e-14);
		e = want - (2.0 * rgb[o] - 1);
		if (core) {
			sse += e * e;
			assert_true(fabs(dy[o * n + p] - scale * e) < 1e-15);
		} else {
			assert_true(dy[o * n + p] == 0);
		}
	}
	for (int c = 0; !core && c < nf; c++)
		assert_true(ds4[c * n + p] == 0);
	return sse;
}

/* The head: y everywhere, dY = 2 e / (3 W H) on the core and 0 off it. */
static void test_head_core_only(void **state)
{
	const struct ref_tile *t = &small_tile;
	struct nn_config cfg;
	struct nn_layout l;
	struct image *target = random_image(t->img_w, t->img_h, 9);
	size_t n = (size_t)t->tw * t->th;
	float *params;
	double *s4 = random_doubles(16 * n, 6, 0.1);
	double *y = malloc(3 * n * sizeof(double));
	double *dy = malloc(3 * n * sizeof(double));
	double *ds4 = malloc(16 * n * sizeof(double));
	double sse, want_sse = 0;

	(void)state;
	assert_true(y && dy && ds4);
	nn_config_defaults(&cfg, 1);
	cfg.nf = 16;
	nn_layout_init(&l, &cfg);
	params = perturbed_params(&cfg, &l);
	sse = ref_head(&l, params, t, target, s4, y, dy, ds4);
	for (int ly = 0; ly < t->th; ly++)
		for (int lx = 0; lx < t->tw; lx++)
			want_sse += check_head_pixel(&l, params, t, target, s4,
						     y, dy, ds4, lx, ly);
	assert_true(want_sse > 0);
	assert_true(fabs(sse - want_sse) < 1e-12);
	free(params);
	free(s4);
	free(y);
	free(dy);
	free(ds4);
	free_image(target);
}

/* ------------------------------------------------------- loss terms */

/* The whole network's gradient with every loss term on, against finite
 * differences, and tiled (halo grown by the loss's radius) against
 * untiled. */
static void test_fd_loss_terms(void **state)
{
	static const int dilations[] = { 1, 2 };
	(void)state;
	check_finite_differences(dilations, 2, NN_W0, &every_term);
}

static void test_tiled_loss_terms(void **state)
{
	static const int dilations[] = { 1, 2 };
	(void)state;
	check_tiled(dilations, 2, &every_term);
}

/* ref_loss_terms's dY against central differences of its loss in y, each
 * term alone and all together, on a core inside the image (windows cut by
 * the border on two sides only). */
static void test_loss_terms_fd(void **state)
{
	struct image *target = random_image(16, 14, 31);
	struct ref_tile t = whole_tile(target);
	size_t n = 16 * 14;
	struct nn_recipe alone[4] = { { .loss_ssim = 1 },
				      { .loss_grad = 1 },
				      { .loss_chroma = 1 },
				      every_term };
	double *y = random_doubles(3 * n, 8, 1.0), *dy = malloc(3 * n * 8);
	(void)state;
	t.cx = 3, t.cy = 2, t.cw = 10, t.ch = 9;
	for (int r = 0; r < 4; r++) {
		double worst = 0, scale = 0, sums[3];
		for (size_t i = 0; i < 3 * n; i++)
			dy[i] = 0;
		double loss =
		    ref_loss_terms(&alone[r], &t, target, y, dy, sums);
		assert_true(loss > 0);
		for (size_t i = 0; i < 3 * n; i++)
			scale = fmax(scale, fabs(dy[i]));
		for (size_t i = 0; i < 3 * n; i++) {
			double saved = y[i], h = 1e-5;
			y[i] = saved + h;
			double up = ref_loss_terms(&alone[r], &t, target, y,
						   NULL, NULL);
			y[i] = saved - h;
			double down = ref_loss_terms(&alone[r], &t, target, y,
						     NULL, NULL);
			y[i] = saved;
			double fd = (up - down) / (2 * h);
			worst = fmax(worst, fabs(fd - dy[i]) /
						(fabs(dy[i]) + 1e-6 * scale));
			assert_true(fabs(fd - dy[i]) <=
				    1e-4 * fabs(dy[i]) + 1e-6 * scale);
		}
		print_message("loss terms %g %g %g: loss %.6g, worst relative "
			      "error %.2e\n",
			      alone[r].loss_ssim, alone[r].loss_grad,
			      alone[r].loss_chroma, loss, worst);
	}
	free(y), free(dy);
	free_image(target);
}

/* ------------------------------------------------------------- speed */

/* nf 64 on 64x64 with the default dilations: one gradient, finite. */
static void test_size_64(void **state)
{
	static const int dilations[] = { 1, 2, 4, 8 };
	struct nn_config cfg;
	struct nn_layout l;
	struct image *target = random_image(64, 64, 11);
	float *params;
	double *grad, sse;

	(void)state;
	make_config(&cfg, 64, dilations, 4);
	nn_layout_init(&l, &cfg);
	params = perturbed_params(&cfg, &l);
	grad = calloc(l.total, sizeof(double));
	assert_non_null(grad);
	sse = ref_image_grad(&cfg, &l, params, target, grad);
	assert_true(isfinite(sse) && sse > 0);
	for (size_t i = 0; i < l.total; i++)
		assert_true(isfinite(grad[i]));
	free(grad);
	free(params);
	free_image(target);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwconv_identity),
		cmocka_unit_test(test_dwconv_displacement),
		cmocka_unit_test(test_pointwise_identity),
		cmocka_unit_test(test_first_coordinates),
		cmocka_unit_test(test_head_core_only),
		cmocka_unit_test(test_fd_dilations_1_2),
		cmocka_unit_test(test_fd_dilations_default),
		cmocka_unit_test(test_fd_other_w0),
		cmocka_unit_test(test_tiled_default),
		cmocka_unit_test(test_tiled_1_2),
		cmocka_unit_test(test_loss_terms_fd),
		cmocka_unit_test(test_fd_loss_terms),
		cmocka_unit_test(test_tiled_loss_terms),
		cmocka_unit_test(test_size_64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
