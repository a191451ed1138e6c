/*
 * test_passes_train.c - the passes of a training step after the convs,
 * run alone on the Vulkan device against the plain-C reference (tests/ref)
 * on the test tile (support_passes.h): GEMMs in all three forms (with
 * split K), the head (fused, and in halves around the loss terms' passes),
 * the pixel reductions and Adam.
 *
 * Tolerances: the reference is double; the shaders are fp32 with sin(30 s),
 * so errors of a few 1e-5 relative are expected, and the tolerance is
 * 1e-4-ish: far below what a wrong index or tap would give.
 */
#include "unit/support_passes.h"

/* GEMM in its three forms against the reference pointwise functions, for
 * the small-tile variants (suffix ""), the large ones ("_large") and the CPU
 * devices' ("_cpu"); rows x cols is a workgroup's block of outputs. */
static void check_gemm(const char *suffix, uint32_t rows, uint32_t cols,
		       uint32_t nt_rows, uint32_t nt_cols, double tol)
{
	float *w = malloc(NF * NF * 4), *b = malloc(NF * 4),
	      *z = malloc(NF * NPIX * 4);
	float *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8);
	test_random(w, NF * NF, 61, -0.3f, 0.3f);
	test_random(b, NF, 62, -1, 1);
	test_random(z, NF * NPIX, 63, -1, 1);
	/* params buffer: w at 0, b at NF*NF */
	struct gpu_buffer bp = test_buffer(NF * NF + NF),
			  bz = test_buffer(NF * NPIX),
			  bc = test_buffer(NF * NPIX);
	test_upload(&bp, w, NF * NF);
	assert_int_equal(gpu_upload(test_gpu, &bp, NF * NF * 4, b, NF * 4), 0);
	test_upload(&bz, z, NF * NPIX);
	double *zd = test_to_double(z, NF * NPIX);

	/* forward: S = W Z + b */
	struct gemm_push g = { .M = NF,
			       .N = NPIX,
			       .K = NF,
			       .lda = NF,
			       .ldb = NPIX,
			       .ldc = NPIX,
			       .bias_off = NF * NF,
			       .k_chunk = NF,
			       .has_bias = 1,
			       .a_scale = 1,
			       .b_scale = 1,
			       .out_scale = 1 };
	const struct gpu_buffer *bufs[] = { &bp, &bz, &bc, &bp };
	char name[32];
	snprintf(name, sizeof(name), "gemm_nn%s", suffix);
	test_dispatch(name, NF, W0, bufs, 4, &g, sizeof(g),
		      (NPIX + cols - 1) / cols, (NF + rows - 1) / rows, 1);
	test_download(&bc, got, NF * NPIX);
	ref_pointwise(NF, NPIX, w, b, zd, want);
	test_close("gemm_nn", got, want, NF * NPIX, 1e-5 + tol, 1e-5 + tol);

	/* data gradient: dZ = W^T dS (dS = z here) */
	struct gemm_push gt = { .M = NF,
				.N = NPIX,
				.K = NF,
				.lda = NF,
				.ldb = NPIX,
				.ldc = NPIX,
				.k_chunk = NF,
				.a_scale = 1,
				.b_scale = 1,
				.out_scale = 1 };
	snprintf(name, sizeof(name), "gemm_tn%s", suffix);
	test_dispatch(name, NF, W0, bufs, 4, &gt, sizeof(gt),
		      (NPIX + cols - 1) / cols, (NF + rows - 1) / rows, 1);
	test_download(&bc, got, NF * NPIX);
	ref_pointwise_back_data(NF, NPIX, w, zd, want);
	test_close("gemm_tn", got, want, NF * NPIX, 1e-5 + tol, 1e-5 + tol);

	/* weight gradient with split K, then the ordered reduce into grad */
	float *ds = malloc(NF * NPIX * 4);
	test_random(ds, NF * NPIX, 64, -1, 1);
	double *dsd = test_to_double(ds, NF * NPIX);
	struct gpu_buffer bds = test_buffer(NF * NPIX);
	test_upload(&bds, ds, NF * NPIX);
	uint32_t k_chunk = 128, splits = (NPIX + k_chunk - 1) / k_chunk;
	struct gpu_buffer part = test_buffer(splits * NF * NF);
	struct gemm_push gn = { .M = NF,
				.N = NF,
				.K = NPIX,
				.lda = NPIX,
				.ldb = NPIX,
				.ldc = NF,
				.k_chunk = k_chunk,
				.a_scale = 1,
				.b_scale = 1,
				.out_scale = 1 };
	const struct gpu_buffer *nt[] = { &bds, &bz, &part, &bp };
	snprintf(name, sizeof(name), "gemm_nt%s", suffix);
	test_dispatch(name, NF, W0, nt, 4, &gn, sizeof(gn),
		      (NF + nt_cols - 1) / nt_cols,
		      (NF + nt_rows - 1) / nt_rows, splits);
	float *gotw = malloc(NF * NF * 4);
	reduce_partials(&part, (int)splits, NF * NF, 1, 1, 0, gotw);
	double *gw = calloc(NF * NF, 8), *gb = calloc(NF, 8);
	ref_pointwise_back_weight(NF, NPIX, dsd, zd, gw, gb);
	test_close("gemm_nt + reduce", gotw, gw, NF * NF, 1e-4 + 30 * tol,
		   1e-5 + tol);

	free(w), free(b), free(z), free(got), free(want), free(zd), free(ds),
	    free(dsd), free(gw), free(gb), free(gotw);
}

static void test_gemm(void **state)
{
	test_need_gpu();
	check_gemm("", 64, 64, 64, 64, 0);
	check_gemm("_large", 128, 128, 128, 128, 0);
	/* the CPU families, "cpu16" at a width past its own (two blocks of
	 * rows, two of the weight gradient's columns) */
	static const char *cpu_families[] = { "cpu", "cpu16" };
	for (int i = 0; i < 2 && gpu_info(test_gpu)->subgroup_size >= 8; i++) {
		const struct gemm_variant *v =
		    gemm_variant_find(cpu_families[i]);
		uint32_t nt_rows, nt_cols;
		gemm_variant_tile(v, "nt", &nt_rows, &nt_cols);
		char suffix[16];
		snprintf(suffix, sizeof(suffix), "_%s", v->name);
		check_gemm(suffix, v->rows, v->cols, nt_rows, nt_cols, 0);
	}
}

static void test_head(void **state)
{
	test_need_gpu();
	struct nn_config cfg;
	struct nn_layout l;
	setup_model(&cfg, &l);
	float *params = random_params(&l, &cfg);
	struct image *target = test_image(tile.img_w, tile.img_h, 5);
	float *s4 = malloc(NF * NPIX * 4);
	test_random(s4, NF * NPIX, 71, -1, 1);
	struct gpu_buffer bp = test_buffer(l.total),
			  bs = test_buffer(NF * NPIX),
			  bt = test_buffer(tile.img_w * tile.img_h * 3),
			  bds = test_buffer(NF * NPIX),
			  bdy = test_buffer(3 * NPIX),
			  bsse = test_buffer((NPIX + 255) / 256);
	test_upload(&bp, params, l.total);
	test_upload(&bs, s4, NF * NPIX);
	test_upload(&bt, target->rgb, tile.img_w * tile.img_h * 3);
	struct head_push p = { .tile = test_tile(),
			       .w_off = (uint32_t)l.out_w,
			       .b_off = (uint32_t)l.out_b,
			       .has_target = 1 };
	const struct gpu_buffer *bufs[] = { &bp, &bs, &bt, &bds, &bdy, &bsse };
	test_dispatch("head", NF, W0, bufs, 6, &p, sizeof(p),
		      (NPIX + 255) / 256, 1, 1);

	double *s4d = test_to_double(s4, NF * NPIX), *dy = malloc(3 * NPIX * 8),
	       *ds4 = malloc(NF * NPIX * 8);
	double sse = ref_head(&l, params, &tile, target, s4d, NULL, dy, ds4);
	float *got = malloc(NF * NPIX * 4), sse_parts[(NPIX + 255) / 256];
	test_download(&bdy, got, 3 * NPIX);
	double scale = 2.0 / (3.0 * tile.img_w * tile.img_h);
	test_close("head dY", got, dy, 3 * NPIX, 1e-5 * scale, 1e-4);
	test_download(&bds, got, NF * NPIX);
	test_close("head dS4", got, ds4, NF * NPIX, 1e-4 * scale, 1e-4);
	test_download(&bsse, sse_parts, (NPIX + 255) / 256);
	double total = 0;
	for (int i = 0; i < (NPIX + 255) / 256; i++)
		total += sse_parts[i];
	assert_true(fabs(total - sse) <= 1e-4 * sse);

	/* the fp16 path's head with dS4 in fp16 alone: times the loss scale,
	 * in rows of ds_row values, the padding zeroed; the fp32 dS4 untouched */
	if (gpu_info(test_gpu)->has_float16_storage) {
		enum { PAD = (NPIX + 15) / 16 * 16 };
		const float loss_scale = 1024.0f;
		struct gpu_buffer b16 = test_buffer(NF * PAD / 2 + 1);
		float poison[NF * NPIX];
		for (int i = 0; i < NF * NPIX; i++)
			poison[i] = 7.0f;
		test_upload(&bds, poison, NF * NPIX);
		_Float16 *h = malloc(NF * PAD * sizeof(*h));
		for (int i = 0; i < NF * PAD; i++)
			h[i] = (_Float16)1000.0f;
		assert_int_equal(
		    gpu_upload(test_gpu, &b16, 0, h, NF * PAD * sizeof(*h)), 0);
		p.ds_row = PAD;
		p.ds_scale = loss_scale;
		const struct gpu_buffer *hb[] = { &bp,  &bs,   &bt, &bds,
						  &bdy, &bsse, &b16 };
		test_dispatch("head_f16_only", NF, W0, hb, 7, &p, sizeof(p),
			      (PAD + 255) / 256, 1, 1);
		assert_int_equal(
		    gpu_download(test_gpu, &b16, 0, h, NF * PAD * sizeof(*h)),
		    0);
		for (int c = 0; c < NF; c++) {
			for (int i = 0; i < NPIX; i++)
				got[c * NPIX + i] =
				    (float)h[c * PAD + i] / loss_scale;
			for (int i = NPIX; i < PAD; i++)
				assert_true(h[c * PAD + i] == 0);
		}
		test_close("head_f16_only dS4", got, ds4, NF * NPIX,
			   1e-3 * scale, 2e-3);
		test_download(&bds, got, NF * NPIX);
		for (int i = 0; i < NF * NPIX; i++)
			assert_true(got[i] == 7.0f);
		free(h);
	}

	free(params), free(s4), free(s4d), free(dy), free(ds4), free(got);
	image_destroy(target);
}

/* The head in halves around the loss passes (every loss term on):
 * head_predict, loss_terms, loss_grad, head_back, against ref_head and
 * ref_loss_terms. The tile touches the image's left border; elsewhere its
 * halo covers the core and SSIM's radius. */
static void test_loss_passes(void **state)
{
	static const struct ref_tile lt = {
		.img_w = 50,
		.img_h = 40,
		.tx = 0,
		.ty = 3,
		.tw = 37,
		.th = 23,
		.cx = 0,
		.cy = 9,
		.cw = 30,
		.ch = 11,
	};
	const struct nn_recipe terms = { .loss_ssim = 0.7,
					 .loss_grad = 1.3,
					 .loss_chroma = 0.9 };
	test_need_gpu();
	struct nn_config cfg;
	struct nn_layout l;
	setup_model(&cfg, &l);
	float *params = random_params(&l, &cfg);
	struct image *target = test_image(lt.img_w, lt.img_h, 9);
	float *s4 = malloc(NF * NPIX * 4);
	test_random(s4, NF * NPIX, 72, -0.05f, 0.05f);
	int groups = (NPIX + 255) / 256;
	struct gpu_buffer bp = test_buffer(l.total),
			  bs = test_buffer(NF * NPIX),
			  bt = test_buffer(lt.img_w * lt.img_h * 3),
			  by = test_buffer(3 * NPIX),
			  bcoef = test_buffer(9 * NPIX),
			  bsums = test_buffer(3 * groups),
			  bds = test_buffer(NF * NPIX),
			  bdy = test_buffer(3 * NPIX),
			  bsse = test_buffer(groups);
	test_upload(&bp, params, l.total);
	test_upload(&bs, s4, NF * NPIX);
	test_upload(&bt, target->rgb, lt.img_w * lt.img_h * 3);
	struct head_push p = { .tile = { .img_w = lt.img_w,
					 .img_h = lt.img_h,
					 .tx = lt.tx,
					 .ty = lt.ty,
					 .tw = lt.tw,
					 .th = lt.th,
					 .cx = lt.cx,
					 .cy = lt.cy,
					 .cw = lt.cw,
					 .ch = lt.ch,
					 .n = NPIX },
			       .w_off = (uint32_t)l.out_w,
			       .b_off = (uint32_t)l.out_b,
			       .has_target = 1 };
	const struct gpu_buffer *head[] = { &bp, &bs, &bt, &by, &bdy, &bsse };
	test_dispatch("head_predict", NF, W0, head, 6, &p, sizeof(p), groups, 1,
		      1);
	struct loss_push lp = { .tile = p.tile,
				.sse_base = p.sse_base,
				.w_ssim = (float)terms.loss_ssim,
				.w_grad = (float)terms.loss_grad,
				.w_chroma = (float)terms.loss_chroma };
	const struct gpu_buffer *sums[] = { &by, &bt, &bcoef, &bsums };
	test_dispatch("loss_terms", NF, W0, sums, 4, &lp, sizeof(lp), groups, 1,
		      1);
	const struct gpu_buffer *grad[] = { &by, &bt, &bcoef, &bdy };
	test_dispatch("loss_grad", NF, W0, grad, 4, &lp, sizeof(lp), groups, 1,
		      1);
	const struct gpu_buffer *back[] = { &bp, &bs, &bt, &bds, &bdy, &bsse };
	test_dispatch("head_back", NF, W0, back, 6, &p, sizeof(p), groups, 1,
		      1);

	double *s4d = test_to_double(s4, NF * NPIX), *y = malloc(3 * NPIX * 8),
	       *dy = malloc(3 * NPIX * 8), *ds4 = malloc(NF * NPIX * 8);
	double want_sums[3];
	double sse = ref_head(&l, params, &lt, target, s4d, y, dy, NULL);
	ref_loss_terms(&terms, &lt, target, y, dy, want_sums);
	ref_head_back(&l, params, NPIX, s4d, dy, ds4);

	float *got = malloc(NF * NPIX * 4), parts[3 * ((NPIX + 255) / 256)];
	test_download(&by, got, 3 * NPIX);
	test_close("predictions", got, y, 3 * NPIX, 1e-5, 1e-5);
	double scale = 0;
	for (int i = 0; i < 3 * NPIX; i++)
		scale = fmax(scale, fabs(dy[i]));
	test_download(&bdy, got, 3 * NPIX);
	test_close("loss dY", got, dy, 3 * NPIX, 1e-4 * scale, 1e-3);
	test_download(&bds, got, NF * NPIX);
	scale = 0;
	for (int i = 0; i < NF * NPIX; i++)
		scale = fmax(scale, fabs(ds4[i]));
	test_close("loss dS4", got, ds4, NF * NPIX, 1e-4 * scale, 1e-3);
	test_download(&bsse, parts, groups);
	double total = 0, got_sums[3] = { 0, 0, 0 };
	for (int i = 0; i < groups; i++)
		total += parts[i];
	assert_true(fabs(total - sse) <= 1e-4 * sse);
	test_download(&bsums, parts, 3 * groups);
	for (int i = 0; i < groups; i++)
		for (int j = 0; j < 3; j++)
			got_sums[j] += parts[3 * i + j];
	for (int j = 0; j < 3; j++) {
		print_message("term %d: sum %.8g, reference %.8g\n", j,
			      got_sums[j], want_sums[j]);
		assert_true(fabs(got_sums[j] - want_sums[j]) <=
			    1e-4 * fabs(want_sums[j]));
	}
	free(params), free(s4), free(s4d), free(y), free(dy), free(ds4),
	    free(got);
	image_destroy(target);
}

static void test_reductions(void **state)
{
	test_need_gpu();
	float *a = malloc(NF * NPIX * 4), *b = malloc(NF * NPIX * 4),
	      *got = malloc(NF * 9 * 4);
	test_random(a, NF * NPIX, 81, -1, 1);
	test_random(b, NF * NPIX, 82, -1, 1);
	double *ad = test_to_double(a, NF * NPIX),
	       *bd = test_to_double(b, NF * NPIX);
	struct gpu_buffer ba = test_buffer(NF * NPIX),
			  bb = test_buffer(NF * NPIX),
			  bh = test_buffer(NF * NPIX);
	test_upload(&ba, a, NF * NPIX);
	test_upload(&bb, b, NF * NPIX);
	upload_activated(&bh, b, NF * NPIX);
	double *w = calloc(NF * NF, 8), *bias = calloc(NF, 8),
	       *dsp = malloc(NF * NPIX * 8);

	/* biases: sum over pixels */
	run_reduce("reduce_sum", &ba, &ba, NF, 1, 0, 1, 0, got);
	ref_pointwise_back_weight(NF, NPIX, ad, bd, w, bias);
	test_close("reduce_sum", got, bias, NF, 1e-4, 1e-5);

	/* dw taps for each dilation: X = dZ (a), Y = Sprev (b) */
	float dw_zero[NF * 9] = { 0 };
	for (int d = 1; d <= 8; d *= 2) {
		memset(w, 0, NF * 9 * 8);
		run_reduce("reduce_dw", &ba, &bh, NF, 9, d, 9, 1, got);
		ref_dwconv_back(NF, &tile, d, dw_zero, W0, bd, ad, dsp, w);
		test_close("reduce_dw", got, w, NF * 9, 1e-4, 1e-4);
		run_reduce("reduce_dw_s", &ba, &bb, NF, 9, d, 9, 1, got);
		test_close("reduce_dw_s", got, w, NF * 9, 1e-4, 1e-4);
	}

	/* first layer: X = dS0 */
	double gfw[NF * 2] = { 0 }, gfb[NF] = { 0 }, want3[3 * NF];
	run_reduce("reduce_first", &ba, &ba, NF, 3, 0, 3, 1, got);
	ref_first_back(NF, &tile, ad, gfw, gfb);
	for (int c = 0; c < NF; c++) {
		want3[c * 3] = gfw[2 * c];
		want3[c * 3 + 1] = gfw[2 * c + 1];
		want3[c * 3 + 2] = gfb[c];
	}
	test_close("reduce_first", got, want3, 3 * NF, 1e-4, 1e-5);

	/* out layer: X = dY (3 x NPIX, first rows of a), Y = S4 (b) */
	double gow[3 * NF] = { 0 }, gob[3] = { 0 };
	run_reduce("reduce_out", &ba, &bb, NF, 3, 0, 1, NF, got);
	ref_out_back(NF, NPIX, W0, ad, bd, gow, gob);
	test_close("reduce_out", got, gow, 3 * NF, 1e-4, 1e-4);

	free(a), free(b), free(ad), free(bd), free(got), free(w), free(bias),
	    free(dsp);
}

static void test_adam(void **state)
{
	test_need_gpu();
	enum { COUNT = 1000 };
	float p[COUNT], g[COUNT], got[COUNT];
	double pd[COUNT], m[COUNT] = { 0 }, v[COUNT] = { 0 };
	test_random(p, COUNT, 91, -1, 1);
	for (int i = 0; i < COUNT; i++)
		pd[i] = p[i];
	struct gpu_buffer bp = test_buffer(COUNT), bg = test_buffer(COUNT),
			  bm = test_buffer(COUNT), bv = test_buffer(COUNT),
			  bstep = test_buffer(4);
	test_upload(&bp, p, COUNT);
	double lr = 1e-3;
	for (int t = 1; t <= 3; t++) {
		test_random(g, COUNT, 92 + t, -0.1f, 0.1f);
		test_upload(&bg, g, COUNT);
		double bc1 = 1 - pow(0.9, t), bc2 = 1 - pow(0.999, t);
		float step[2] = { (float)(lr / bc1), (float)sqrt(bc2) };
		test_upload(&bstep, step, 2);
		struct params_push push = { .n = COUNT };
		const struct gpu_buffer *bufs[] = { &bp, &bg, &bm, &bv,
						    &bstep };
		test_dispatch("adam", NF, W0, bufs, 5, &push, sizeof(push),
			      (COUNT + 255) / 256, 1, 1);
		for (int i = 0; i < COUNT; i++) {
			m[i] = 0.9 * m[i] + 0.1 * g[i];
			v[i] = 0.999 * v[i] + 0.001 * (double)g[i] * g[i];
			pd[i] -=
			    lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + 1e-8);
		}
	}
	test_download(&bp, got, COUNT);
	test_close("adam params", got, pd, COUNT, 1e-6, 1e-5);
	test_download(&bg, got, COUNT);
	for (int i = 0; i < COUNT; i++)
		assert_true(got[i] == 0.0f); /* gradient cleared */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_loss_passes),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_adam),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
