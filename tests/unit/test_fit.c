/*
 * test_fit.c - the whole engine on the Vulkan device: the gradient of a
 * fit against the reference, the tiled gradient against the untiled one,
 * determinism, checkpoint and resume bit for bit, export and render, and
 * that training really fits an image.
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
#include "ref/ref.h"
#include "unit/support_gpu.h"

static void small_config(struct nn_config *cfg, int nf)
{
	nn_config_defaults(cfg, 1);
	cfg->precision = NN_PRECISION_FP32; /* the fp16 test asks for fp16 */
	cfg->nf = nf;
	cfg->seed = 3;
	cfg->epochs = 100;
	cfg->lr = 1e-3;
	cfg->recipe.warmup = 5;
}

/* A model package for cfg with random dw taps, to start fits from, so the
 * off-centre taps take part in the gradient. */
static struct st_file *perturbed_package(const struct nn_config *cfg, int w,
					 int h, float **params_out)
{
	struct nn_layout l;
	nn_layout_init(&l, cfg);
	float *p = calloc(l.total, sizeof(float));
	nn_init_params(cfg, &l, p);
	for (int k = 0; k < cfg->nblocks; k++)
		test_random(p + l.dw[k], (size_t)cfg->nf * 9, 200 + k, -0.5f,
			    0.5f);
	struct nn_fit *fit;
	char err[256];
	struct image *img = test_image(w, h, 1);
	assert_int_equal(nn_fit_create_sized(&fit, test_gpu, w, h, img, cfg, p,
					     err, sizeof(err)),
			 0);
	struct st_file *pkg;
	assert_int_equal(nn_fit_export(fit, &pkg, NULL, NULL), 0);
	nn_fit_destroy(fit);
	image_destroy(img);
	*params_out = p;
	return pkg;
}

/* The gradient of one epoch program run, its sse, and (sums not NULL)
 * the loss terms' sums. */
static void gradient_of(const struct nn_config *cfg, const struct image *img,
			const float *params, float *grad, double *sse,
			double *sums, int *tiles)
{
	struct nn_fit *fit;
	char err[256];
	assert_int_equal(nn_fit_create_sized(&fit, test_gpu, img->width,
					     img->height, img, cfg, params, err,
					     sizeof(err)),
			 0);
	struct nn_fit_info info;
	nn_fit_get_info(fit, &info);
	*tiles = info.tiles_x * info.tiles_y;
	assert_int_equal(nn_fit_gradient(fit, grad, sse), 0);
	if (sums)
		nn_fit_loss_sums(fit, sums);
	nn_fit_destroy(fit);
}

/* Relative to each tensor's largest gradient: fp32 against double. */
static void compare_per_tensor(const struct nn_layout *l, const float *got,
			       const double *want, double tol)
{
	size_t starts[4 + 3 * NN_MAX_BLOCKS], counts[4 + 3 * NN_MAX_BLOCKS];
	int n = 0;
	size_t nf = (size_t)l->nf;
	starts[n] = l->first_w, counts[n++] = 2 * nf;
	starts[n] = l->first_b, counts[n++] = nf;
	for (int k = 0; k < l->nblocks; k++) {
		starts[n] = l->dw[k], counts[n++] = 9 * nf;
		starts[n] = l->pw_w[k], counts[n++] = nf * nf;
		starts[n] = l->pw_b[k], counts[n++] = nf;
	}
	starts[n] = l->out_w, counts[n++] = 3 * nf;
	starts[n] = l->out_b, counts[n++] = 3;
	for (int t = 0; t < n; t++) {
		double scale = 0;
		for (size_t i = 0; i < counts[t]; i++)
			scale = fmax(scale, fabs(want[starts[t] + i]));
		test_close("gradient tensor", got + starts[t], want + starts[t],
			   counts[t], tol * scale, 0);
	}
}

/* The fit's gradient (one tile) against the reference, with the sse within
 * sse_tol and each tensor within tensor_tol of its largest value. The
 * width is VKINR_TEST_WIDTH when set (a production width on a real GPU). */
static void check_gradient(int default_width, enum nn_precision precision,
			   double sse_tol, double tensor_tol)
{
	struct nn_config cfg;
	const char *width = getenv("VKINR_TEST_WIDTH");
	small_config(&cfg, width ? atoi(width) : default_width);
	cfg.precision = precision;
	struct image *img = test_image(37, 23, 2);
	float *params;
	struct st_file *pkg = perturbed_package(&cfg, 37, 23, &params);
	struct nn_layout l;
	nn_layout_init(&l, &cfg);
	float *grad = calloc(l.total, 4);
	double *want = calloc(l.total, 8), sse;
	int tiles;
	gradient_of(&cfg, img, params, grad, &sse, NULL, &tiles);
	assert_int_equal(tiles, 1);
	double want_sse = ref_image_grad(&cfg, &l, params, img, want);
	assert_true(fabs(sse - want_sse) < sse_tol * want_sse);
	compare_per_tensor(&l, grad, want, tensor_tol);
	free(grad), free(want), free(params);
	st_destroy(pkg);
	image_destroy(img);
}

/* Both families of passes (daemon/nn/fit.c picks by device type): the
 * GPU one (per-pixel depthwise passes, tree sums) and the CPU one (row
 * segments, subgroup sums), whichever device runs the test. */
static void test_gradient_matches_reference(void **state)
{
	test_need_gpu();
	const char *families[] = { "gpu", "cpu" };
	for (int i = 0; i < 2; i++) {
		print_message("# passes for %s devices\n", families[i]);
		test_switch("VKINR_PASSES", families[i]);
		check_gradient(16, NN_PRECISION_FP32, 1e-4, 2e-3);
	}
	test_switch("VKINR_PASSES", NULL);
	/* the tensor-core GEMMs' tiling in fp32 (see gemm_coop.comp) */
	print_message("# the GEMMs of the tensor-core path, emulated\n");
	test_switch("VKINR_GEMM", "coop_emu");
	check_gradient(16, NN_PRECISION_FP32, 1e-4, 2e-3);
	test_switch("VKINR_GEMM", NULL);
}

/* The fp16 tensor-core path against the reference: operands rounded to
 * fp16 (with loss scaling), so per tensor within 2% of its largest value. */
static void test_fp16_gradient_matches_reference(void **state)
{
	test_need_gpu();
	if (!gpu_info(test_gpu)->has_tensor_cores) {
		print_message("skipped: %s has no fp16 cooperative matrices\n",
			      gpu_info(test_gpu)->name);
		skip();
	}
	check_gradient(32, NN_PRECISION_FP16, 1e-2, 2e-2);
}

/* Every loss term on, with weights that make each count. */
static void every_term(struct nn_recipe *r)
{
	r->loss_ssim = 0.7;
	r->loss_grad = 1.3;
	r->loss_chroma = 0.9;
}

/* The fit's terms' sums against the reference's, on its predictions. */
static void check_terms_sums(const struct nn_config *cfg,
			     const struct nn_layout *l, const float *params,
			     const struct image *img, const double sums[3])
{
	int w = img->width, h = img->height;
	double *y = calloc((size_t)3 * w * h, 8), want[3];
	ref_image_forward(cfg, l, params, img, y);
	struct ref_tile t = {
		.img_w = w, .img_h = h, .tw = w, .th = h, .cw = w, .ch = h
	};
	ref_loss_terms(&cfg->recipe, &t, img, y, NULL, want);
	for (int j = 0; j < 3; j++)
		assert_true(fabs(sums[j] - want[j]) < 1e-4 * want[j]);
	free(y);
}

/* Tiled against untiled, ragged edge tiles (37 and 23 are no multiples of
 * the caps). With every loss term on (terms), the halo grows by the
 * loss's radius, and the untiled gradient and the terms' sums are also
 * checked against the reference. */
static void check_tiled(int terms)
{
	struct nn_config cfg;
	small_config(&cfg, 16);
	if (terms)
		every_term(&cfg.recipe);
	struct image *img = test_image(37, 23, 4);
	float *params;
	struct st_file *pkg = perturbed_package(&cfg, 37, 23, &params);
	struct nn_layout l;
	nn_layout_init(&l, &cfg);
	float *whole = calloc(l.total, 4), *tiled = calloc(l.total, 4);
	double *want = calloc(l.total, 8), sse_whole, sse_tiled;
	double sums_whole[3], sums_tiled[3];
	int tiles;
	gradient_of(&cfg, img, params, whole, &sse_whole, sums_whole, &tiles);
	assert_int_equal(tiles, 1);
	if (terms) {
		double want_sse = ref_image_grad(&cfg, &l, params, img, want);
		assert_true(fabs(sse_whole - want_sse) < 1e-4 * want_sse);
		compare_per_tensor(&l, whole, want, 2e-3);
		check_terms_sums(&cfg, &l, params, img, sums_whole);
	}

	for (int cap = 8; cap <= 16; cap += 8) {
		struct nn_config tcfg = cfg;
		tcfg.max_tile = cap;
		gradient_of(&tcfg, img, params, tiled, &sse_tiled, sums_tiled,
			    &tiles);
		assert_true(tiles > 1);
		assert_true(fabs(sse_whole - sse_tiled) < 1e-5 * sse_whole);
		for (int j = 0; j < 3; j++)
			assert_true(fabs(sums_whole[j] - sums_tiled[j]) <=
				    1e-5 * sums_whole[j]);
		for (size_t i = 0; i < l.total; i++)
			want[i] = whole[i];
		compare_per_tensor(&l, tiled, want, 1e-4);
	}
	free(whole), free(tiled), free(want), free(params);
	st_destroy(pkg);
	image_destroy(img);
}

static void test_tiled_gradient_equals_untiled(void **state)
{
	test_need_gpu();
	check_tiled(0);
	/* and with the GPUs' passes (by strips, their sums chunked by tile) */
	test_switch("VKINR_PASSES", "gpu");
	check_tiled(0);
	test_switch("VKINR_PASSES", NULL);
}

static void test_loss_terms_gradient(void **state)
{
	test_need_gpu();
	check_tiled(1);
}

static void run_epochs(struct nn_fit *fit, int n, struct nn_metrics *out)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(nn_fit_step(fit, &out[i]), 0);
}

/* Two fits that kept the same best model, bit for bit: the one of last's
 * psnr_best. */
static void assert_same_best(struct nn_fit *a, struct nn_fit *b,
			     const struct nn_metrics *last)
{
	struct nn_best best_a, best_b;
	nn_fit_best(a, &best_a);
	nn_fit_best(b, &best_b);
	assert_true(best_a.psnr == best_b.psnr &&
		    best_a.psnr == last->psnr_best);
	assert_int_equal(best_a.epoch, best_b.epoch);
	assert_int_equal(best_a.source, best_b.source);
	float *wa = malloc(a->best.size), *wb = malloc(b->best.size);
	test_download(&a->best, wa, a->best.size / sizeof(float));
	test_download(&b->best, wb, b->best.size / sizeof(float));
	assert_memory_equal(wa, wb, a->best.size);
	free(wa), free(wb);
}

/* Resumes at epoch 5 of 12 and compares every epoch; with the recipe's
 * state (Muon's momentum, the average, the schedule's position) when it
 * has one, and the best model kept (its weights, PSNR, epoch, source and
 * each epoch's psnr_best). */
static void check_resume(const struct nn_recipe *recipe)
{
	struct nn_config cfg;
	small_config(&cfg, 16);
	cfg.epochs = 12;
	if (recipe)
		cfg.recipe = *recipe;
	struct image *img = test_image(29, 19, 6);
	char err[256];
	struct nn_fit *a, *b;
	struct nn_metrics ma[12], mb[12];

	assert_int_equal(
	    nn_fit_create(&a, test_gpu, img, &cfg, NULL, err, sizeof(err)), 0);
	run_epochs(a, 12, ma);

	assert_int_equal(
	    nn_fit_create(&b, test_gpu, img, &cfg, NULL, err, sizeof(err)), 0);
	run_epochs(b, 5, mb);
	struct nn_best saved, restored;
	nn_fit_best(b, &saved);
	size_t wbytes = b->best.size;
	float *w5 = malloc(wbytes), *w = malloc(wbytes);
	test_download(&b->best, w5, wbytes / sizeof(float));
	struct st_file *ck;
	uint8_t *bytes;
	size_t size;
	assert_int_equal(nn_fit_checkpoint(b, &ck), 0);
	assert_int_equal(st_encode(ck, &bytes, &size), 0);
	st_destroy(ck);
	nn_fit_destroy(b);

	struct st_file *loaded;
	assert_int_equal(st_decode(bytes, size, &loaded, err, sizeof(err)), 0);
	struct nn_config ccfg;
	assert_int_equal(nn_checkpoint_config(loaded, &ccfg, err, sizeof(err)),
			 0);
	assert_int_equal(
	    nn_fit_create(&b, test_gpu, img, &ccfg, NULL, err, sizeof(err)), 0);
	assert_int_equal(nn_fit_restore(b, loaded, err, sizeof(err)), 0);
	assert_int_equal(nn_fit_epoch(b), 5);
	/* the best model as it was when the checkpoint was taken */
	nn_fit_best(b, &restored);
	assert_true(saved.epoch >= 0 && restored.psnr == saved.psnr &&
		    restored.epoch == saved.epoch &&
		    restored.source == saved.source);
	test_download(&b->best, w, wbytes / sizeof(float));
	assert_memory_equal(w, w5, wbytes);
	free(w5), free(w);
	run_epochs(b, 7, mb + 5);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(ma[i].epoch, mb[i].epoch);
		assert_true(ma[i].mse == mb[i].mse); /* bit for bit */
		assert_true(ma[i].lr == mb[i].lr);
		assert_true(ma[i].psnr_best == mb[i].psnr_best);
	}
	int n;
	const struct nn_metrics *h = nn_fit_history(b, &n);
	assert_int_equal(n, 12);
	assert_int_equal(h[11].epoch, 12);
	for (int i = 0; i < 12; i++)
		assert_true(h[i].psnr_best == ma[i].psnr_best);
	assert_same_best(a, b, &ma[11]);
	if (cfg.recipe.average != NN_AVERAGE_NONE) {
		double avg_a, avg_b;
		assert_int_equal(nn_fit_average_psnr(a, &avg_a), 0);
		assert_int_equal(nn_fit_average_psnr(b, &avg_b), 0);
		assert_true(avg_a == avg_b);
	}

	/* a damaged checkpoint is refused */
	bytes[size - 3] ^= 0x55;
	struct st_file *bad;
	if (st_decode(bytes, size, &bad, err, sizeof(err)) == 0) {
		assert_int_equal(nn_fit_restore(b, bad, err, sizeof(err)),
				 ERR_CHECKSUM);
		st_destroy(bad);
	}
	free(bytes);
	st_destroy(loaded);
	nn_fit_destroy(a);
	nn_fit_destroy(b);
	image_destroy(img);
}

static void test_resume_is_exact(void **state)
{
	test_need_gpu();
	check_resume(NULL);
	/* Muon, the average, a plateau and a linear decay */
	struct nn_recipe r = {
		.optimizer = NN_OPTIMIZER_MUON,
		.schedule = NN_SCHEDULE_LINEAR,
		.warmup = 2,
		.plateau = 3,
		.lr_min_ratio = 0.2,
		.half_life = 200,
		.average = NN_AVERAGE_EMA,
		.ema_decay = 0.9,
	};
	check_resume(&r);
	/* every loss term, on the default optimizer */
	struct nn_config d;
	small_config(&d, 16);
	every_term(&d.recipe);
	check_resume(&d.recipe);
}

/* Rebuilding a fit's device side mid-run (what --precision auto does to
 * finish in fp32) carries everything over: here in the same precision,
 * so the run must go on bit for bit, Muon's momentum, the average and
 * the best model included. On tensor-core devices: an auto run of 40 epochs (the last 2
 * in fp32, as a fit larger than NN_FP16_ONLY_PIXELS has) equals an fp16
 * run switched by hand after 38, and a fit this small stays in fp16. */
static void test_precision_change_is_exact(void **state)
{
	test_need_gpu();
	struct nn_config cfg;
	small_config(&cfg, 16);
	cfg.epochs = 10;
	struct image *img = test_image(29, 19, 6);
	char err[256];
	struct nn_fit *a, *b;
	struct nn_metrics ma[40], mb[40];
	assert_int_equal(
	    nn_fit_create(&a, test_gpu, img, &cfg, NULL, err, sizeof(err)), 0);
	run_epochs(a, 10, ma);
	assert_int_equal(
	    nn_fit_create(&b, test_gpu, img, &cfg, NULL, err, sizeof(err)), 0);
	run_epochs(b, 4, mb);
	struct nn_best before, after;
	nn_fit_best(b, &before);
	float *w4 = malloc(b->best.size), *w = malloc(b->best.size);
	test_download(&b->best, w4, b->best.size / sizeof(float));
	assert_int_equal(nn_fit_set_precision(b, NN_PRECISION_FP32), 0);
	assert_int_equal(nn_fit_epoch(b), 4);
	/* the best model as it was */
	nn_fit_best(b, &after);
	assert_true(before.epoch >= 0 && after.psnr == before.psnr &&
		    after.epoch == before.epoch &&
		    after.source == before.source);
	test_download(&b->best, w, b->best.size / sizeof(float));
	assert_memory_equal(w, w4, b->best.size);
	free(w4), free(w);
	run_epochs(b, 6, mb + 4);
	for (int i = 0; i < 10; i++)
		assert_true(ma[i].mse == mb[i].mse && ma[i].lr == mb[i].lr &&
			    ma[i].psnr_best == mb[i].psnr_best);
	assert_same_best(a, b, &ma[9]);
	double avg_a, avg_b;
	assert_int_equal(nn_fit_average_psnr(a, &avg_a), 0);
	assert_int_equal(nn_fit_average_psnr(b, &avg_b), 0);
	assert_true(avg_a == avg_b);
	int n;
	nn_fit_history(b, &n);
	assert_int_equal(n, 10);
	nn_fit_destroy(a);
	nn_fit_destroy(b);

	if (gpu_info(test_gpu)->has_tensor_cores) {
		/* NN_FP32_FINISH of 40 epochs: the last 2 */
		enum { ALL = 40, FP32 = 2 };
		assert_int_equal((int)ceil(ALL * NN_FP32_FINISH), FP32);
		struct nn_fit_info info;
		cfg.epochs = ALL;
		cfg.precision = NN_PRECISION_AUTO;
		/* a fit this small (NN_FP16_ONLY_PIXELS) stays in fp16 */
		print_message("# auto, a small fit: fp16 throughout\n");
		assert_int_equal(nn_fit_create(&a, test_gpu, img, &cfg, NULL,
					       err, sizeof(err)),
				 0);
		run_epochs(a, ALL, ma);
		nn_fit_get_info(a, &info);
		assert_string_equal(info.precision, "fp16");
		nn_fit_destroy(a);
		/* the finish of a larger one, asked of this one */
		print_message("# auto: fp16, then fp32 for the last 2 of 40\n");
		test_switch("VKINR_FP32_FINISH", "0.05");
		assert_int_equal(nn_fit_create(&a, test_gpu, img, &cfg, NULL,
					       err, sizeof(err)),
				 0);
		test_switch("VKINR_FP32_FINISH", NULL);
		run_epochs(a, ALL - FP32, ma);
		nn_fit_get_info(a, &info);
		assert_string_equal(info.precision, "fp16");
		run_epochs(a, FP32, ma + ALL - FP32);
		nn_fit_get_info(a, &info);
		assert_string_equal(info.precision, "fp32");
		cfg.precision = NN_PRECISION_FP16;
		assert_int_equal(nn_fit_create(&b, test_gpu, img, &cfg, NULL,
					       err, sizeof(err)),
				 0);
		run_epochs(b, ALL - FP32, mb);
		assert_int_equal(nn_fit_set_precision(b, NN_PRECISION_FP32), 0);
		run_epochs(b, FP32, mb + ALL - FP32);
		for (int i = 0; i < ALL; i++)
			assert_true(ma[i].mse == mb[i].mse);
		assert_true(ma[ALL - 1].mse != ma[ALL - 3].mse);
		nn_fit_destroy(a);
		nn_fit_destroy(b);
	}
	image_destroy(img);
}

/* A short fit trains, exports a package, and the package renders on a
 * fresh fit to the export's image and PSNR: fp32 both ways, also for an
 * fp16 fit, whose exports render in fp32 as the package defines. */
static void check_fits_and_exports(enum nn_precision precision)
{
	struct nn_config cfg;
	small_config(&cfg, 32);
	cfg.precision = precision;
	cfg.epochs = 150;
	cfg.lr = 1e-3;
	struct image *img = test_image(24, 20, 8);
	char err[256];
	struct nn_fit *fit;
	struct nn_metrics m;
	assert_int_equal(
	    nn_fit_create(&fit, test_gpu, img, &cfg, NULL, err, sizeof(err)),
	    0);
	double first = 0;
	for (int i = 0; i < cfg.epochs; i++) {
		assert_int_equal(nn_fit_step(fit, &m), 0);
		if (i == 0)
			first = m.psnr;
	}
	print_message("PSNR %.2f dB after %d epochs (from %.2f)\n", m.psnr,
		      cfg.epochs, first);
	assert_true(m.psnr > 25.0);
	/* the PSNR the fit reports is its best model's (the average measured
	 * only every NN_AVERAGE_EVERY epochs and at the last); in fp16 that
	 * measurement was of the fp16 forward, the export renders in fp32 */
	struct nn_best best;
	nn_fit_best(fit, &best);
	assert_true(best.psnr == m.psnr_best);

	struct st_file *pkg;
	struct image *recon, *rendered;
	double psnr, rendered_psnr;
	assert_int_equal(nn_fit_export(fit, &pkg, &recon, &psnr), 0);
	assert_true(psnr > 25.0);
	print_message("reported %.4f dB, exported %.4f dB\n", m.psnr_best,
		      psnr);
	/* the export takes the best model, or the live or averaged weights
	 * of the end when they render better: never less than reported */
	assert_true(psnr > m.psnr_best -
			       (precision == NN_PRECISION_FP16 ? 0.5 : 1e-3));
	assert_string_equal(st_get_meta(pkg, "format"), "vkinr-convsiren");
	assert_non_null(st_find(pkg, "pw.3.weight"));
	assert_int_equal(st_find(pkg, "first.weight")->shape[1], 2);

	/* the package renders the same image on a fresh fit */
	uint8_t *bytes;
	size_t size;
	assert_int_equal(st_encode(pkg, &bytes, &size), 0);
	struct st_file *again;
	assert_int_equal(st_decode(bytes, size, &again, err, sizeof(err)), 0);
	assert_int_equal(nn_render(test_gpu, again, img, &rendered,
				   &rendered_psnr, err, sizeof(err)),
			 0);
	assert_true(fabs(rendered_psnr - psnr) < 1e-6);
	for (int i = 0; i < 24 * 20 * 3; i++)
		assert_true(fabs(rendered->rgb[i] - recon->rgb[i]) < 1e-6);
	/* and the reconstruction agrees with the target to the PSNR */
	double se = 0;
	for (int i = 0; i < 24 * 20 * 3; i++)
		se += pow(recon->rgb[i] - img->rgb[i], 2);
	double recon_psnr = -10 * log10(se / (24 * 20 * 3));
	assert_true(fabs(recon_psnr - psnr) < 0.01);

	free(bytes);
	st_destroy(again);
	st_destroy(pkg);
	image_destroy(recon);
	image_destroy(rendered);
	nn_fit_destroy(fit);
	image_destroy(img);
}

static void test_training_fits_and_exports(void **state)
{
	test_need_gpu();
	check_fits_and_exports(NN_PRECISION_FP32);
	if (gpu_info(test_gpu)->has_tensor_cores) {
		print_message("# the same in fp16\n");
		check_fits_and_exports(NN_PRECISION_FP16);
	}
}

static void test_bad_config_is_refused(void **state)
{
	test_need_gpu();
	struct nn_config cfg;
	small_config(&cfg, 24); /* not a multiple of 16 */
	struct image *img = test_image(8, 8, 1);
	char err[256] = "";
	struct nn_fit *fit;
	assert_int_equal(
	    nn_fit_create(&fit, test_gpu, img, &cfg, NULL, err, sizeof(err)),
	    ERR_INVALID);
	assert_non_null(strstr(err, "multiple of 16"));
	image_destroy(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradient_matches_reference),
		cmocka_unit_test(test_fp16_gradient_matches_reference),
		cmocka_unit_test(test_tiled_gradient_equals_untiled),
		cmocka_unit_test(test_loss_terms_gradient),
		cmocka_unit_test(test_resume_is_exact),
		cmocka_unit_test(test_precision_change_is_exact),
		cmocka_unit_test(test_training_fits_and_exports),
		cmocka_unit_test(test_bad_config_is_refused),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
