/*
 * test_optim.c - the optimizer passes on the Vulkan device against the
 * plain-C reference (tests/ref/optim_ref.c): Newton-Schulz alone, then
 * whole optimizer steps (Adam; Muon with Adam; the weight average) taken
 * by a real fit; the best model kept, and the export of the best of the
 * weights; and what old or foreign checkpoints give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/fit.h"
#include "nn/package.h"
#include "nn/fit_internal.h"
#include "nn/passes.h"
#include "ref/ref.h"
#include "unit/support_gpu.h"

static void recipe_config(struct nn_config *cfg, int nf,
			  enum nn_optimizer optimizer, enum nn_average average)
{
	nn_config_defaults(cfg, 1);
	cfg->precision = NN_PRECISION_FP32;
	cfg->nf = nf;
	cfg->seed = 5;
	cfg->epochs = 40;
	cfg->lr = 2e-3;
	cfg->recipe.warmup = 3;
	cfg->recipe.optimizer = optimizer;
	cfg->recipe.average = average;
}

/* Newton-Schulz on the device (the products of ns_gemm.comp) through a
 * scratch laid out as a Muon fit's, the products dispatched as optim.c's
 * ns_product does: blocks of 64 x 64 outputs; a symmetric product only
 * the blocks that hold some (r, c) with r <= c, row block by row block. */
enum { NS_BATCH = 2, NS_MATRICES = 4 };

struct ns_config {
	int sym;    /* A and B as symmetric products */
	int from_g; /* the first step from G, as optim.c (else from X) */
};

static void ns_dispatch(const char *variant, int nf, int flags,
			const struct gpu_buffer *scratch, struct ns_push *p)
{
	uint32_t tiles = div_up(nf, 64), gx = tiles, gy = tiles;
	if (flags & 1) {
		gx = tiles * (tiles + 1) / 2;
		gy = 1;
	}
	p->flags = flags;
	const struct gpu_buffer *bufs[1] = { scratch };
	test_dispatch(variant, nf, 30.0f, bufs, 1, p, sizeof(*p), gx, gy,
		      NS_BATCH);
}

/* Five steps from the G (from_g) or X = G / (|G|_F + 1e-7) at the start of
 * each matrix of x (NS_BATCH of NS_MATRICES nf x nf each); x comes back
 * with the result there, then X', A and B. */
static void ns_device(int nf, const struct ns_config *cfg, float *x)
{
	size_t nn = (size_t)nf * nf, stride = NS_MATRICES * nn;
	struct gpu_buffer scratch = test_buffer(NS_BATCH * stride);
	test_upload(&scratch, x, NS_BATCH * stride);
	static const float abc[3] = { 3.4445f, -4.7750f, 2.0315f };
	uint32_t cur = 0, next = (uint32_t)nn, a = 2 * (uint32_t)nn,
		 b = 3 * (uint32_t)nn;
	for (int s = 0; s < 5; s++) {
		/* optim.c's flags: 1 symmetric, 2 from G, 2-bit powers of
		 * 1 / |G| for L, R and D at bits 2, 4, 6 */
		int g = s == 0 && cfg->from_g ? 2 : 0;
		struct {
			uint32_t l, r, d, c;
			float p, q;
			const char *variant;
			int flags;
		} steps[3] = {
			{ cur, cur, a, a, 0.0f, 1.0f, "ns_gemm_trans",
			  cfg->sym },
			{ a, a, a, b, abc[1], abc[2], "ns_gemm",
			  cfg->sym | g | (g ? 2 << 2 | 2 << 4 | 2 << 6 : 0) },
			{ b, cur, cur, next, abc[0], 1.0f, "ns_gemm",
			  g | (g ? 1 << 4 | 1 << 6 : 0) },
		};
		for (int i = 0; i < 3; i++) {
			struct ns_push p = { .gg = a,
					     .l = steps[i].l,
					     .r = steps[i].r,
					     .d = steps[i].d,
					     .c = steps[i].c,
					     .p = steps[i].p,
					     .q = steps[i].q,
					     .stride = (int32_t)stride };
			ns_dispatch(steps[i].variant, nf, steps[i].flags,
				    &scratch, &p);
		}
		uint32_t t = cur;
		cur = next;
		next = t;
	}
	test_download(&scratch, x, NS_BATCH * stride);
	if (cur)
		for (int z = 0; z < NS_BATCH; z++)
			memcpy(x + z * stride, x + z * stride + cur, nn * 4);
}

/* The same five steps from G in one dispatch (ns_small.comp, widths up to
 * 32), as optim.c runs it for small fits; x as for ns_device. */
static void ns_device_small(const char *variant, int nf, float *x)
{
	size_t nn = (size_t)nf * nf, stride = NS_MATRICES * nn;
	struct gpu_buffer scratch = test_buffer(NS_BATCH * stride);
	test_upload(&scratch, x, NS_BATCH * stride);
	static const float abc[3] = { 3.4445f, -4.7750f, 2.0315f };
	struct ns_small_push p = { .x_off = 0,
				   .out_off =
				       (uint32_t)nn, /* X' after five steps */
				   .c0 = abc[0],
				   .c1 = abc[1],
				   .c2 = abc[2],
				   .stride = (int32_t)stride };
	const struct gpu_buffer *bufs[1] = { &scratch };
	test_dispatch(variant, nf, 30.0f, bufs, 1, &p, sizeof(p), 1, 1,
		      NS_BATCH);
	test_download(&scratch, x, NS_BATCH * stride);
	for (int z = 0; z < NS_BATCH; z++)
		memcpy(x + z * stride, x + z * stride + nn, nn * 4);
}

/* The orthogonalisation alone, on random matrices, for both GEMM variants
 * (and, to width 32, ns_small.comp's one dispatch), against the reference: at widths below, between and above the shader's
 * 64-wide blocks, two matrices a dispatch (the batch of blocks); as
 * optim.c runs it (symmetric products, the first step from G), from X,
 * and with every product general. The symmetric products' A and B are
 * symmetric bit for bit, and a run again gives the same bits. */
static void test_newton_schulz_matches_reference(void **state)
{
	test_need_gpu();
	static const int widths[] = { 16, 32, 48, 80, 144, 272 };
	static const struct ns_config cfgs[] = {
		{ 1, 1 }, /* as optim.c */
		{ 1, 0 },
		{ 0, 1 },
		{ 0, 0 },
	};
	for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
		int nf = widths[w];
		size_t nn = (size_t)nf * nf, stride = NS_MATRICES * nn;
		size_t all = NS_BATCH * stride;
		double *g = malloc(nn * sizeof(double));
		double *want = malloc(NS_BATCH * nn * sizeof(double));
		float *g0 = calloc(all, sizeof(float));
		float *x0 = calloc(all, sizeof(float));
		float *x = malloc(all * sizeof(float));

		/* per matrix of the batch: X, X', A, B as in optim.c; G (of
		 * norm about 20) or X = G / |G| first */
		for (int z = 0; z < NS_BATCH; z++) {
			test_random_double(g, nn, 11 + nf + z, -1, 1);
			for (size_t i = 0; i < nn; i++)
				g[i] *= 35.0 / nf;
			ref_newton_schulz(nf, g, want + z * nn);
			double norm = 0;
			for (size_t i = 0; i < nn; i++)
				norm += g[i] * g[i];
			for (size_t i = 0; i < nn; i++) {
				g0[z * stride + i] = (float)g[i];
				x0[z * stride + i] =
				    (float)(g[i] / (sqrt(norm) + 1e-7));
			}
		}
		for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
			const float *from = cfgs[c].from_g ? g0 : x0;
			memcpy(x, from, all * sizeof(float));
			ns_device(nf, &cfgs[c], x);
			for (int z = 0; z < NS_BATCH; z++)
				test_close("newton-schulz", x + z * stride,
					   want + z * nn, nn, 2e-4, 2e-4);
			for (int z = 0; z < NS_BATCH && cfgs[c].sym; z++)
				for (int m = 2; m < 4; m++) {
					const float *s =
					    x + z * stride + m * nn;
					for (int i = 0; i < nf; i++)
						for (int j = 0; j < i; j++)
							assert_memory_equal(
							    &s[i * nf + j],
							    &s[j * nf + i], 4);
				}
			if (c == 0 && nf <= 32) {
				/* the one-dispatch form: the chain's values */
				float *small = malloc(all * sizeof(float));
				memcpy(small, g0, all * sizeof(float));
				ns_device_small("ns_small", nf, small);
				double *chain = test_to_double(x, all);
				for (int z = 0; z < NS_BATCH; z++) {
					test_close(
					    "ns_small", small + z * stride,
					    want + z * nn, nn, 2e-4, 2e-4);
					test_close("ns_small against the chain",
						   small + z * stride,
						   chain + z * stride, nn, 1e-5,
						   1e-5);
				}
				/* lavapipe's form (ns_small_cpu.comp): the
				 * same sums in the same order */
				if (nf <= 16 &&
				    gpu_info(test_gpu)->subgroup_size == 8) {
					float *lanes =
					    malloc(all * sizeof(float));
					memcpy(lanes, g0, all * sizeof(float));
					ns_device_small("ns_small_cpu", nf,
							lanes);
					for (int z = 0; z < NS_BATCH; z++)
						test_close("ns_small_cpu",
							   lanes + z * stride,
							   want + z * nn, nn,
							   2e-4, 2e-4);
					for (int z = 0; z < NS_BATCH; z++)
						assert_memory_equal(
						    lanes + z * stride,
						    small + z * stride,
						    nn * sizeof(float));
					free(lanes);
				}
				free(small), free(chain);
			}
			if (c == 0) {
				float *again = malloc(all * sizeof(float));
				memcpy(again, from, all * sizeof(float));
				ns_device(nf, &cfgs[c], again);
				assert_memory_equal(again, x,
						    all * sizeof(float));
				free(again);
			}
		}
		free(g0), free(x0), free(x), free(g), free(want);
	}
}

static struct nn_fit *create_fit(const struct nn_config *cfg,
				 const struct image *img)
{
	struct nn_fit *fit;
	char err[256];
	assert_int_equal(
	    nn_fit_create(&fit, test_gpu, img, cfg, NULL, err, sizeof(err)), 0);
	return fit;
}

static float *download(const struct gpu_buffer *b)
{
	size_t n = b->size / sizeof(float);
	float *f = malloc(b->size);
	test_download(b, f, n);
	return f;
}

/* A few epochs in (so every moment is non-zero), one more step against
 * the reference taken from the same state and the same gradient. */
static void check_step(enum nn_optimizer optimizer, enum nn_average average,
		       int nf)
{
	struct nn_config cfg;
	recipe_config(&cfg, nf, optimizer, average);
	struct image *img = test_image(21, 17, 3);
	struct nn_fit *fit = create_fit(&cfg, img);
	struct nn_metrics m;
	for (int i = 0; i < 4; i++)
		assert_int_equal(nn_fit_step(fit, &m), 0);
	const struct nn_layout *l = &fit->layout;
	float *p0 = download(&fit->params), *m0 = download(&fit->adam_m);
	float *v0 = download(&fit->adam_v);
	float *mu0 = fit->muon_m.handle ? download(&fit->muon_m) : NULL;
	float *avg0 = fit->average.handle ? download(&fit->average) : NULL;
	float *gradf = malloc(l->total * sizeof(float));
	double sse;
	assert_int_equal(nn_fit_gradient(fit, gradf, &sse), 0);
	assert_int_equal(nn_fit_step(fit, &m), 0);

	struct ref_optim s = { test_to_double(p0, l->total),
			       test_to_double(m0, l->total),
			       test_to_double(v0, l->total),
			       mu0 ? test_to_double(mu0, fit->muon_m.size / 4)
				   : NULL,
			       avg0 ? test_to_double(avg0, l->total) : NULL };
	double *grad = test_to_double(gradf, l->total);
	/* the rate the fit took, its image's scale included */
	ref_optim_step(&cfg, l, 5, m.lr, grad, &s);

	/* the change of each weight, relative to the largest change */
	float *p1 = download(&fit->params);
	double *delta = malloc(l->total * sizeof(double));
	float *got = malloc(l->total * sizeof(float));
	double most = 0;
	for (size_t i = 0; i < l->total; i++) {
		delta[i] = s.params[i] - p0[i];
		got[i] = p1[i] - p0[i];
		most = fmax(most, fabs(delta[i]));
	}
	test_close("weight change", got, delta, l->total, 1e-3 * most, 0);
	if (avg0) {
		float *a1 = download(&fit->average);
		test_close("average", a1, s.average, l->total, 1e-6, 1e-5);
		free(a1);
	}
	if (mu0) {
		float *mu1 = download(&fit->muon_m);
		test_close("muon momentum", mu1, s.muon_m, fit->muon_m.size / 4,
			   1e-7, 1e-5);
		free(mu1);
	}
	free(p0), free(m0), free(v0), free(mu0), free(avg0), free(gradf);
	free(p1), free(delta), free(got), free(grad);
	free(s.params), free(s.m), free(s.v), free(s.muon_m), free(s.average);
	nn_fit_destroy(fit);
	image_destroy(img);
}

static void test_adam_step_matches_reference(void **state)
{
	test_need_gpu();
	check_step(NN_OPTIMIZER_ADAM, NN_AVERAGE_NONE, 16);
}

static void test_muon_ema_step_matches_reference(void **state)
{
	test_need_gpu();
	check_step(NN_OPTIMIZER_MUON, NN_AVERAGE_EMA, 16);
	/* two blocks of the products a side, the second part past NF */
	check_step(NN_OPTIMIZER_MUON, NN_AVERAGE_EMA, 80);
}

/* The best model's weights rendered now. */
static double best_psnr_now(struct nn_fit *fit)
{
	float *live = NULL;
	double psnr = 0;
	assert_int_equal(nn_fit_swap_in(fit, &fit->best, &live), 0);
	assert_int_equal(nn_fit_render(fit, NULL, &psnr), 0);
	assert_int_equal(nn_fit_swap_out(fit, live), 0);
	return psnr;
}

/* The export takes the best of the live, averaged and best-kept weights,
 * says which, and the package renders to the PSNR it claims. */
static void test_export_takes_the_better_weights(void **state)
{
	test_need_gpu();
	struct nn_config cfg;
	recipe_config(&cfg, 16, NN_OPTIMIZER_MUON, NN_AVERAGE_EMA);
	struct image *img = test_image(20, 16, 4);
	struct nn_fit *fit = create_fit(&cfg, img);
	struct nn_metrics m;
	char err[256];
	for (int i = 0; i < 30; i++)
		assert_int_equal(nn_fit_step(fit, &m), 0);
	double avg, live, best, exported, rendered;
	struct st_file *pkg;
	assert_int_equal(nn_fit_average_psnr(fit, &avg), 0);
	assert_int_equal(nn_fit_render(fit, NULL, &live), 0);
	best = best_psnr_now(fit);
	assert_int_equal(nn_fit_export(fit, &pkg, NULL, &exported), 0);
	assert_true(exported == fmax(fmax(avg, live), best));
	struct nn_best kept;
	nn_fit_best(fit, &kept);
	char best_name[64];
	snprintf(best_name, sizeof(best_name), "best (%s, epoch %d)",
		 nn_best_source_name(kept.source), kept.epoch);
	const char *which = best > fmax(avg, live) ? best_name
			    : avg > live           ? "average"
						   : "live";
	assert_string_equal(nn_fit_exported_weights(fit), which);
	assert_string_equal(st_get_meta(pkg, "weights"), which);
	assert_string_equal(st_get_meta(pkg, "optimizer"), "muon");
	assert_string_equal(st_get_meta(pkg, "average"), "ema");
	assert_int_equal(
	    nn_render(test_gpu, pkg, img, NULL, &rendered, err, sizeof(err)),
	    0);
	assert_true(fabs(rendered - exported) < 1e-6);
	/* the live weights are back in place: training goes on from them */
	double again;
	assert_int_equal(nn_fit_render(fit, NULL, &again), 0);
	assert_true(again == live);
	st_destroy(pkg);
	nn_fit_destroy(fit);
	image_destroy(img);
}

/*
 * The best model kept: a fit at a learning rate high enough that its PSNR
 * falls back now and then, run until it first falls 1 dB below the best
 * (so that the best is older than the last epoch); where it never falls
 * within its epochs (devices round differently: on an H200 it did not at
 * 6e-3), check_best says so and the test tries twice the rate. Every epoch, the weights before the step are
 * copied on the host; the device's best copy must be them, bit for bit,
 * exactly when the epoch's PSNR beat every measurement before (or the
 * average, when its measurement did), and stay as it was otherwise.
 * psnr_best is the running maximum of psnr and psnr_average, and the
 * export, when it takes the best model, renders to psnr_best.
 */
static int check_best(enum nn_average average, double lr)
{
	struct nn_config cfg;
	recipe_config(&cfg, 16, NN_OPTIMIZER_ADAM, average);
	cfg.epochs = 200;
	/* the rate the fit takes: a small image's scale undone */
	cfg.lr = lr / nn_lr_pixel_scale(cfg.nf, 20 * 16);
	cfg.recipe.warmup = 0;
	struct image *img = test_image(20, 16, 7);
	struct nn_fit *fit = create_fit(&cfg, img);
	size_t total = fit->layout.total;
	struct nn_metrics m;
	double running = 0;
	int drops = 0, from_average = 0;
	float *kept = download(&fit->best);
	for (int t = 1; t <= cfg.epochs && !drops; t++) {
		float *before = download(&fit->params);
		assert_int_equal(nn_fit_step(fit, &m), 0);
		struct nn_best b;
		nn_fit_best(fit, &b);
		int live_won = t == 1 || m.psnr > running;
		running = fmax(running, m.psnr);
		if (live_won) {
			memcpy(kept, before, total * sizeof(float));
		}
		if (m.psnr_average > running) {
			running = m.psnr_average;
			float *avg = download(&fit->average);
			memcpy(kept, avg, total * sizeof(float));
			free(avg);
			assert_int_equal(b.source, NN_BEST_AVERAGE);
			assert_int_equal(b.epoch, t);
			from_average++;
		} else if (live_won) {
			assert_int_equal(b.source, NN_BEST_LIVE);
			assert_int_equal(b.epoch, t - 1);
		}
		assert_true(m.psnr_best == running);
		assert_true(b.psnr == running);
		if (m.psnr < running - 1.0)
			drops++;
		float *best = download(&fit->best);
		assert_memory_equal(best, kept, total * sizeof(float));
		free(best);
		free(before);
	}
	if (!drops) {
		print_message("lr %g: the PSNR never fell 1 dB in %d epochs\n",
			      lr, cfg.epochs);
		free(kept);
		nn_fit_destroy(fit);
		image_destroy(img);
		return 0;
	}
	/* the point of it: the live weights fell back, the best did not */
	print_message("epoch %d: %.2f dB, more than 1 dB below the best, "
		      "%.2f dB (%d bests from the average)\n",
		      m.epoch, m.psnr, running, from_average);
	int n;
	const struct nn_metrics *h = nn_fit_history(fit, &n);
	for (int i = 1; i < n; i++)
		assert_true(h[i].psnr_best >= h[i - 1].psnr_best);

	struct nn_best b;
	nn_fit_best(fit, &b);
	double live, avg = 0, exported, rendered;
	assert_int_equal(nn_fit_render(fit, NULL, &live), 0);
	if (average != NN_AVERAGE_NONE)
		assert_int_equal(nn_fit_average_psnr(fit, &avg), 0);
	struct st_file *pkg;
	char err[256];
	assert_int_equal(nn_fit_export(fit, &pkg, NULL, &exported), 0);
	assert_int_equal(
	    nn_render(test_gpu, pkg, img, NULL, &rendered, err, sizeof(err)),
	    0);
	assert_true(fabs(rendered - exported) < 1e-6);
	assert_true(exported >= fmax(live, avg));
	assert_true(exported >= m.psnr_best - 1e-3);
	print_message("exported %s: %.4f dB (live now %.4f, average %.4f)\n",
		      st_get_meta(pkg, "weights"), exported, live, avg);
	if (exported > fmax(live, avg)) {
		/* the best model won: measured in training, rendered now */
		assert_true(b.epoch < cfg.epochs);
		assert_true(!strncmp(st_get_meta(pkg, "weights"), "best (", 6));
		assert_true(fabs(exported - m.psnr_best) < 1e-3);
	}
	free(kept);
	st_destroy(pkg);
	nn_fit_destroy(fit);
	image_destroy(img);
	return 1;
}

static void test_best_model_is_kept(void **state)
{
	test_need_gpu();
	static const enum nn_average averages[2] = { NN_AVERAGE_EMA,
						     NN_AVERAGE_NONE };
	for (int i = 0; i < 2; i++) {
		int fell = 0;
		for (double lr = 6e-3; !fell && lr < 0.1; lr *= 2)
			fell = check_best(averages[i], lr);
		assert_true(fell);
	}
}

/* The checksum version 1 wrote: FNV-1a over its four tensors. */
static void set_old_checksum(struct st_file *f)
{
	static const char *const names[] = { "params", "adam_m", "adam_v",
					     "metrics" };
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 4; i++) {
		const struct st_tensor *t = st_find(f, names[i]);
		const unsigned char *p = t->data;
		for (size_t j = 0; j < t->nbytes; j++)
			h = (h ^ p[j]) * 0x100000001b3ull;
	}
	char sum[32];
	snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)h);
	assert_int_equal(st_set_meta(f, "checksum", sum), 0);
}

/* A version 1 checkpoint (no recipe keys, no Muon, average or best
 * state) still loads, the live weights standing in for the best until the
 * next epoch measures them; a newer version fails with a message naming
 * it. */
static void test_old_and_new_checkpoint_versions(void **state)
{
	test_need_gpu();
	struct nn_config cfg, got;
	recipe_config(&cfg, 16, NN_OPTIMIZER_ADAM, NN_AVERAGE_NONE);
	struct image *img = test_image(12, 10, 2);
	struct nn_fit *fit = create_fit(&cfg, img);
	struct nn_metrics m;
	char err[256];
	assert_int_equal(nn_fit_step(fit, &m), 0);
	struct st_file *ck;
	assert_int_equal(nn_fit_checkpoint(fit, &ck), 0);

	/* what version 1 wrote: its own keys only */
	struct st_file *v1 = st_create();
	static const char *const v1_keys[] = {
		"format", "epoch", "width",     "height",   "dilations",
		"nf",     "w0",    "lr",        "warmup",   "schedule",
		"epochs", "seed",  "precision", "max_tile", "mem_budget"
	};
	for (size_t i = 0; i < sizeof(v1_keys) / sizeof(v1_keys[0]); i++)
		assert_int_equal(
		    st_set_meta(v1, v1_keys[i], st_get_meta(ck, v1_keys[i])),
		    0);
	assert_int_equal(st_set_meta(v1, "version", "1"), 0);
	assert_int_equal(st_set_meta(v1, "lr_min_ratio", "0.25"), 0);
	static const char *const tensors[] = { "params", "adam_m", "adam_v",
					       "metrics" };
	for (int i = 0; i < 4; i++) {
		const struct st_tensor *t = st_find(ck, tensors[i]);
		assert_int_equal(
		    st_add(v1, t->name, t->dtype, t->ndim, t->shape, t->data),
		    0);
	}
	assert_int_equal(nn_checkpoint_config(v1, &got, err, sizeof(err)), 0);
	assert_int_equal(got.recipe.optimizer, NN_OPTIMIZER_ADAM);
	assert_int_equal(got.recipe.average, NN_AVERAGE_NONE);
	assert_true(got.recipe.lr_min_ratio == 0.25);
	set_old_checksum(v1);
	assert_int_equal(nn_fit_restore(fit, v1, err, sizeof(err)), 0);
	struct nn_best b;
	nn_fit_best(fit, &b);
	assert_int_equal(b.epoch, -1);
	assert_true(b.psnr == 0);
	float *best = download(&fit->best), *live = download(&fit->params);
	assert_memory_equal(best, live, fit->best.size);
	free(best), free(live);
	assert_int_equal(nn_fit_step(fit, &m), 0);
	nn_fit_best(fit, &b);
	assert_int_equal(b.epoch, 1);
	assert_true(b.psnr == m.psnr && m.psnr_best == m.psnr);

	/* version 2 written before the loss terms: no ssim, grad, chroma
	 * keys; it trained on the MSE alone, whatever today's defaults */
	struct st_file *v2 = st_create();
	for (int i = 0; i < ck->nmeta; i++) {
		const char *key = ck->meta[i].key;
		if (strcmp(key, "ssim") && strcmp(key, "grad") &&
		    strcmp(key, "chroma") && strcmp(key, "early_cycle") &&
		    strcmp(key, "decay"))
			assert_int_equal(
			    st_set_meta(v2, key, ck->meta[i].value), 0);
	}
	assert_int_equal(nn_checkpoint_config(v2, &got, err, sizeof(err)), 0);
	assert_true(got.recipe.loss_ssim == 0 && got.recipe.loss_grad == 0 &&
		    got.recipe.loss_chroma == 0);
	/* nor the early cycle's key: it had none */
	assert_int_equal(got.recipe.early_cycle, 0);
	/* nor the decay's: its decay spanned the job */
	assert_int_equal(got.recipe.decay, 0);
	/* and one written since keeps what it says */
	assert_int_equal(st_set_meta(v2, "chroma", "0.5"), 0);
	assert_int_equal(st_set_meta(v2, "early_cycle", "400"), 0);
	assert_int_equal(nn_checkpoint_config(v2, &got, err, sizeof(err)), 0);
	assert_true(got.recipe.loss_chroma == 0.5);
	assert_int_equal(got.recipe.early_cycle, 400);
	st_destroy(v2);

	assert_int_equal(st_set_meta(ck, "version", "3"), 0);
	assert_int_equal(nn_checkpoint_config(ck, &got, err, sizeof(err)),
			 ERR_FORMAT);
	assert_non_null(strstr(err, "version 3"));
	st_destroy(v1);
	st_destroy(ck);
	nn_fit_destroy(fit);
	image_destroy(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_newton_schulz_matches_reference),
		cmocka_unit_test(test_adam_step_matches_reference),
		cmocka_unit_test(test_muon_ema_step_matches_reference),
		cmocka_unit_test(test_export_takes_the_better_weights),
		cmocka_unit_test(test_best_model_is_kept),
		cmocka_unit_test(test_old_and_new_checkpoint_versions),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
