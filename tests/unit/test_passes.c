/*
 * test_passes.c - every shader pass, run alone on the Vulkan device, against
 * the plain-C reference (tests/ref) on small, odd sizes: a 37x23 tile inside
 * a larger image, width 32, every dilation of the default list, GEMMs in all
 * three forms (with split K), the head (fused, and in halves around the
 * loss terms' passes), the reductions and Adam.
 *
 * Tolerances: the reference is double; the shaders are fp32 with sin(30 s),
 * so errors of a few 1e-5 relative are expected, and the tolerance is
 * 1e-4-ish: far below what a wrong index or tap would give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gemm.h"
#include "nn/model.h"
#include "nn/passes.h"
#include "nn/record.h"
#include "ref/ref.h"
#include "unit/support_gpu.h"

#define NF 32
#define W0 30.0f

/* A 37x23 tile at (5,4) of a 50x40 image, core (10,8) 25x13. */
static const struct ref_tile tile = {
	.img_w = 50,
	.img_h = 40,
	.tx = 5,
	.ty = 4,
	.tw = 37,
	.th = 23,
	.cx = 10,
	.cy = 8,
	.cw = 25,
	.ch = 13,
};
#define NPIX (37 * 23)

static struct pass_push tile_push(int dil)
{
	struct pass_push p = {
		.img_w = tile.img_w,
		.img_h = tile.img_h,
		.tx = tile.tx,
		.ty = tile.ty,
		.tw = tile.tw,
		.th = tile.th,
		.cx = tile.cx,
		.cy = tile.cy,
		.cw = tile.cw,
		.ch = tile.ch,
		.n = NPIX,
		.dil = dil,
	};
	return p;
}

/* Uploads act(S) = sin(w0 S), what activate.comp hands the conv passes. */
static void upload_activated(const struct gpu_buffer *b, const float *s,
			     size_t n)
{
	float *h = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		h[i] = sinf(W0 * s[i]);
	test_upload(b, h, n);
	free(h);
}

static void test_activate(void **state)
{
	test_need_gpu();
	float *s = malloc(NF * NPIX * 4), *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8);
	test_random(s, NF * NPIX, 5, -1, 1);
	struct gpu_buffer bs = test_buffer(NF * NPIX),
			  bh = test_buffer(NF * NPIX);
	test_upload(&bs, s, NF * NPIX);
	struct pass_push p = tile_push(0);
	const struct gpu_buffer *bufs[] = { &bs, &bh };
	test_dispatch("activate", NF, W0, bufs, 2, &p, sizeof(p),
		      (NPIX + 255) / 256, NF, 1);
	test_download(&bh, got, NF * NPIX);
	for (int i = 0; i < NF * NPIX; i++)
		want[i] = sin(W0 * (double)s[i]);
	test_close("activate", got, want, NF * NPIX, 2e-5, 0);

	/* the CPU devices' form: vec4s of the flat buffer, on two rows of
	 * workgroups (the second partly past the end) */
	memset(got, 0, NF * NPIX * 4);
	test_upload(&bh, got, NF * NPIX);
	p.i0 = NF * NPIX / 4;
	uint32_t groups = (NF * NPIX / 4 + 255) / 256;
	test_dispatch("activate_vec4", NF, W0, bufs, 2, &p, sizeof(p),
		      (groups + 1) / 2, 2, 1);
	test_download(&bh, got, NF * NPIX);
	test_close("activate_vec4", got, want, NF * NPIX, 2e-5, 0);
	free(s), free(got), free(want);
}

/* Adds chunks of partial sums (reduce.comp) into a fresh gradient of
 * J x C values and reads it back: grad[c * dst_cs + j * dst_js]. */
static void reduce_partials(const struct gpu_buffer *part, int chunks, int C,
			    int J, size_t dst_cs, size_t dst_js, float *out)
{
	struct gpu_buffer grad = test_buffer((size_t)J * C);
	struct pass_push r = { .n = chunks,
			       .i0 = 0,
			       .i1 = C,
			       .i2 = J,
			       .i3 = J,
			       .off0 = 0,
			       .off1 = (uint32_t)dst_cs,
			       .off2 = (uint32_t)dst_js };
	const struct gpu_buffer *red[] = { part, &grad };
	test_dispatch("reduce", NF, W0, red, 2, &r, sizeof(r),
		      (J * C + 255) / 256, 1, 1);
	test_download(&grad, out, (size_t)J * C);
}

/* Model parameters with random (not identity) dw taps. */
static float *random_params(const struct nn_layout *l,
			    const struct nn_config *cfg)
{
	float *p = calloc(l->total, sizeof(float));
	nn_init_params(cfg, l, p);
	for (int k = 0; k < l->nblocks; k++)
		test_random(p + l->dw[k], (size_t)l->nf * 9, 100 + k, -0.6f,
			    0.6f);
	return p;
}

static void setup_model(struct nn_config *cfg, struct nn_layout *l)
{
	nn_config_defaults(cfg, 0);
	cfg->nf = NF;
	cfg->seed = 7;
	nn_layout_init(l, cfg);
}

/* Runs a first-layer variant into out on random parameters (returned,
 * with their layout in l). */
static float *run_first(const char *variant, const struct gpu_buffer *out,
			struct nn_layout *l)
{
	struct nn_config cfg;
	setup_model(&cfg, l);
	float *params = random_params(l, &cfg);
	struct gpu_buffer bp = test_buffer(l->total);
	test_upload(&bp, params, l->total);
	struct pass_push p = tile_push(0);
	p.off0 = (uint32_t)l->first_w;
	p.off1 = (uint32_t)l->first_b;
	const struct gpu_buffer *bufs[] = { &bp, out };
	test_dispatch(variant, NF, W0, bufs, 2, &p, sizeof(p),
		      (NPIX + 255) / 256, NF, 1);
	return params;
}

static void test_first(void **state)
{
	test_need_gpu();
	struct nn_layout l;
	struct gpu_buffer bs = test_buffer(NF * NPIX);
	float *params = run_first("first", &bs, &l);

	float *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8);
	test_download(&bs, got, NF * NPIX);
	ref_first(&l, params, &tile, want);
	test_close("first", got, want, NF * NPIX, 1e-6, 1e-5);
	free(got), free(want), free(params);
}

/* The depthwise passes, for dilations below, at and above the CPU row
 * segment (8), on a tile whose width is not a multiple of it: the GPUs'
 * per-pixel dwconv.comp and dwconv_back.comp, and the CPU devices'
 * dwconv_rows.comp and dwconv_blocks_cpu.comp (blocks of 4 rows, which
 * the 23 rows leave partial), whose backward also sums the conv weights'
 * gradient (over small chunks, so that several are added). */
static const int dilations[] = { 1, 2, 3, 4, 8, 11 };
#define ROW_SEGS ((37 + 7) / 8)
#define ROW_CHUNK_TEST 16
#define ROW_CHUNKS ((ROW_SEGS * 23 + ROW_CHUNK_TEST - 1) / ROW_CHUNK_TEST)
/* the most chunks of sums a backward pass of the test tile writes */
#define MOST_CHUNKS (ROW_CHUNKS > 64 ? ROW_CHUNKS : 64)

/* The forms of the depthwise passes: the GPUs' per pixel, the CPUs' by
 * row segments, the GPUs' per pixel from S (the sines taken in the pass),
 * by blocks in shared memory (from S; forward only), and by strips (from
 * S; the backward also sums the taps' gradient). */
enum dw_form {
	DW_PIXEL,
	DW_ROWS,
	DW_FROM_S,
	DW_BLOCKS,
	DW_STRIPS,
	DW_STRIPS_SMALL, /* the same in workgroups of 16 x 4 ("_x16") */
	DW_ROW_BLOCKS    /* the CPUs' by blocks of 4 rows of 8 pixels */
};
#define IS_STRIPS(form) ((form) == DW_STRIPS || (form) == DW_STRIPS_SMALL)

/* The grid of the strip passes over the test tile, for dilation d, in
 * workgroups of the default's shape or the small one's: the workgroups a
 * channel takes are the backward's chunks of sums. */
static uint32_t strip_groups_x(int small)
{
	uint32_t sx = small ? DW_SMALL_X : DW_STRIP_X;
	return (37 + sx - 1) / sx;
}
static uint32_t strip_groups_y(int d, int small)
{
	uint32_t sy = small ? DW_SMALL_Y : DW_STRIP_Y;
	uint32_t strips =
	    (uint32_t)d * (((23 + d - 1) / d + DW_STRIP - 1) / DW_STRIP);
	return (strips + sy - 1) / sy;
}

/* Runs the forward or backward (back) depthwise pass in a form, for
 * dilation d; returns the variant's name. */
static const char *dispatch_dw(enum dw_form form, int back, int d,
			       const struct gpu_buffer *const *bufs)
{
	static const char *const names[7][2] = {
		{ "dwconv", "dwconv_back" },
		{ "dwconv_rows", "dwconv_back_rows" },
		{ "dwconv_s", NULL },
		{ "dwconv_tiled_s", NULL },
		{ "dwconv_strip_s", "dwconv_back_strip" },
		{ "dwconv_strip_s_x16", "dwconv_back_strip_x16" },
		{ "dwconv_blocks_cpu", "dwconv_back_blocks_cpu" }
	};
	float w0 = W0;
	uint32_t spec[3] = { NF, 0, (uint32_t)d };
	memcpy(&spec[1], &w0, 4);
	struct pass_push p = tile_push(d);
	uint32_t gx = (NPIX + 255) / 256;
	const char *name = names[form][back];
	if (form == DW_ROWS) {
		p.i0 = ROW_CHUNK_TEST;
		p.i1 = NF;
		p.i2 = ROW_SEGS;
		gx = back ? ROW_CHUNKS : (ROW_SEGS * 23 + 63) / 64;
	}
	if (form == DW_ROW_BLOCKS) { /* the units: d ceil(23 / 4d) block
				      * rows of ROW_SEGS segments */
		uint32_t units = ROW_SEGS * d * ((23 + 4 * d - 1) / (4 * d));
		p.i0 = (int)((units + ROW_CHUNKS - 1) / ROW_CHUNKS);
		p.i1 = NF;
		p.i2 = ROW_SEGS;
		gx = back ? ROW_CHUNKS : (units + 63) / 64;
	}
	int rows = form == DW_ROWS || form == DW_ROW_BLOCKS;
	int nbufs = back ? 4 + (rows || IS_STRIPS(form)) : 3;
	if (IS_STRIPS(form)) {
		int small = form == DW_STRIPS_SMALL;
		test_dispatch_spec(name, spec, 2, bufs, nbufs, &p, sizeof(p),
				   strip_groups_x(small),
				   strip_groups_y(d, small), NF);
		return name;
	}
	if (form == DW_BLOCKS) {
		test_dispatch_spec(name, spec, 2, bufs, nbufs, &p, sizeof(p),
				   (37 + DW_BLOCK_X - 1) / DW_BLOCK_X,
				   (23 + DW_BLOCK_Y - 1) / DW_BLOCK_Y, NF);
		return name;
	}
	test_dispatch_spec(name, spec, rows ? 3 : 2, bufs, nbufs, &p, sizeof(p),
			   gx, NF, 1);
	return name;
}

static void check_dwconv(enum dw_form form)
{
	float *s = malloc(NF * NPIX * 4), *dw = malloc(NF * 9 * 4),
	      *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8);
	struct gpu_buffer bp = test_buffer(NF * 9), bs = test_buffer(NF * NPIX),
			  bz = test_buffer(NF * NPIX);
	for (size_t i = 0; i < sizeof(dilations) / sizeof(int); i++) {
		int d = dilations[i];
		if (form == DW_BLOCKS && d > DW_TILED_MAX_DIL)
			continue;
		test_random(s, NF * NPIX, 11 + d, -1, 1);
		test_random(dw, NF * 9, 21 + d, -1, 1);
		test_upload(&bp, dw, NF * 9);
		if (form == DW_FROM_S || form == DW_BLOCKS || IS_STRIPS(form))
			test_upload(&bs, s, NF * NPIX);
		else
			upload_activated(&bs, s, NF * NPIX);
		const struct gpu_buffer *bufs[] = { &bp, &bs, &bz };
		const char *variant = dispatch_dw(form, 0, d, bufs);
		test_download(&bz, got, NF * NPIX);
		double *sd = test_to_double(s, NF * NPIX);
		ref_dwconv(NF, &tile, d, dw, W0, sd, want);
		char what[48];
		snprintf(what, sizeof(what), "%s, dilation %d", variant, d);
		test_close(what, got, want, NF * NPIX, 2e-4, 1e-4);
		free(sd);
	}
	free(s), free(dw), free(got), free(want);
}

static void check_dwconv_back(enum dw_form form)
{
	float *s = malloc(NF * NPIX * 4), *dz = malloc(NF * NPIX * 4),
	      *dw = malloc(NF * 9 * 4);
	float *got = malloc(NF * NPIX * 4), *gotw = malloc(NF * 9 * 4);
	double *want = malloc(NF * NPIX * 8), *gdw = malloc(NF * 9 * 8);
	struct gpu_buffer bp = test_buffer(NF * 9), bs = test_buffer(NF * NPIX),
			  bdz = test_buffer(NF * NPIX),
			  bout = test_buffer(NF * NPIX),
			  part = test_buffer((size_t)MOST_CHUNKS * 9 * NF);
	for (size_t i = 0; i < sizeof(dilations) / sizeof(int); i++) {
		int d = dilations[i];
		test_random(s, NF * NPIX, 31 + d, -1, 1);
		test_random(dz, NF * NPIX, 41 + d, -1, 1);
		test_random(dw, NF * 9, 51 + d, -1, 1);
		test_upload(&bp, dw, NF * 9);
		test_upload(&bs, s, NF * NPIX);
		test_upload(&bdz, dz, NF * NPIX);
		const struct gpu_buffer *bufs[] = { &bp, &bs, &bdz, &bout,
						    &part };
		const char *variant = dispatch_dw(form, 1, d, bufs);
		test_download(&bout, got, NF * NPIX);
		double *sd = test_to_double(s, NF * NPIX),
		       *dzd = test_to_double(dz, NF * NPIX);
		memset(gdw, 0, NF * 9 * 8);
		ref_dwconv_back(NF, &tile, d, dw, W0, sd, dzd, want, gdw);
		char what[64];
		snprintf(what, sizeof(what), "%s dS, dilation %d", variant, d);
		test_close(what, got, want, NF * NPIX, 5e-4, 1e-4);
		if (form == DW_ROWS || form == DW_ROW_BLOCKS ||
		    IS_STRIPS(form)) {
			/* else reduce_dw sums these: test_reductions */
			int small = form == DW_STRIPS_SMALL;
			int chunks = form == DW_ROWS || form == DW_ROW_BLOCKS
					 ? ROW_CHUNKS
					 : (int)(strip_groups_x(small) *
						 strip_groups_y(d, small));
			assert_true(chunks <= MOST_CHUNKS);
			reduce_partials(&part, chunks, NF, 9, 9, 1, gotw);
			snprintf(what, sizeof(what), "%s ddw, dilation %d",
				 variant, d);
			test_close(what, gotw, gdw, NF * 9, 1e-4, 1e-4);
		}
		free(sd), free(dzd);
	}
	free(s), free(dz), free(dw), free(got), free(gotw), free(want),
	    free(gdw);
}

static void test_dwconv(void **state)
{
	test_need_gpu();
	check_dwconv(DW_PIXEL);
	check_dwconv(DW_FROM_S);
	check_dwconv(DW_BLOCKS);
	check_dwconv(DW_STRIPS);
	check_dwconv(DW_STRIPS_SMALL);
}

static void test_dwconv_back(void **state)
{
	test_need_gpu();
	check_dwconv_back(DW_PIXEL);
	check_dwconv_back(DW_STRIPS);
	check_dwconv_back(DW_STRIPS_SMALL);
}

static void test_dwconv_rows(void **state)
{
	test_need_gpu();
	check_dwconv(DW_ROWS);
	check_dwconv(DW_ROW_BLOCKS);
}

static void test_dwconv_back_rows(void **state)
{
	test_need_gpu();
	check_dwconv_back(DW_ROWS);
	check_dwconv_back(DW_ROW_BLOCKS);
}

/* GEMM in its three forms against the reference pointwise functions, for
 * the small-tile variants (suffix ""), the large ones ("_large") and the CPU
 * devices' ("_cpu"); rows x cols is a workgroup's block of outputs. */
static void check_gemm(const char *suffix, uint32_t rows, uint32_t cols,
		       double tol)
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
		      (NF + cols - 1) / cols, (NF + rows - 1) / rows, splits);
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
	check_gemm("", 64, 64, 0);
	check_gemm("_large", 128, 128, 0);
	const struct gemm_variant *cpu = gemm_variant_find("cpu");
	if (gpu_info(test_gpu)->subgroup_size >= 8)
		check_gemm("_cpu", cpu->rows, cpu->cols, 0);
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
	struct pass_push p = tile_push(0);
	p.off0 = (uint32_t)l.out_w;
	p.off1 = (uint32_t)l.out_b;
	p.i1 = 1;
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
	 * in rows of i2 values, the padding zeroed; the fp32 dS4 untouched */
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
		p.i2 = PAD;
		memcpy(&p.off2, &loss_scale, 4);
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
	struct pass_push p = { .img_w = lt.img_w,
			       .img_h = lt.img_h,
			       .tx = lt.tx,
			       .ty = lt.ty,
			       .tw = lt.tw,
			       .th = lt.th,
			       .cx = lt.cx,
			       .cy = lt.cy,
			       .cw = lt.cw,
			       .ch = lt.ch,
			       .n = NPIX,
			       .off0 = (uint32_t)l.out_w,
			       .off1 = (uint32_t)l.out_b,
			       .i1 = 1 };
	const struct gpu_buffer *head[] = { &bp, &bs, &bt, &by, &bdy, &bsse };
	test_dispatch("head_predict", NF, W0, head, 6, &p, sizeof(p), groups, 1,
		      1);
	struct pass_push lp = p;
	float w[3] = { (float)terms.loss_ssim, (float)terms.loss_grad,
		       (float)terms.loss_chroma };
	memcpy(&lp.off0, &w[0], 4);
	memcpy(&lp.off1, &w[1], 4);
	memcpy(&lp.off2, &w[2], 4);
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

/* The pixel reductions (bias, dw taps, first layer, out layer) followed by
 * the ordered reduce into the gradient, against the reference. */
static void run_reduce(const char *variant, const struct gpu_buffer *x,
		       const struct gpu_buffer *y, int C, int J, int dil,
		       size_t dst_cs, size_t dst_js, float *out)
{
	/* a small chunk, so that several chunks are added */
	int chunk = 128, chunks = (NPIX + chunk - 1) / chunk;
	struct gpu_buffer part = test_buffer((size_t)chunks * J * C);
	struct pass_push p = tile_push(dil);
	p.i0 = chunk;
	p.i1 = C;
	const struct gpu_buffer *bufs[] = { x, y, &part };
	test_dispatch(variant, NF, W0, bufs, 3, &p, sizeof(p), chunks, C, 1);
	reduce_partials(&part, chunks, C, J, dst_cs, dst_js, out);
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
		struct pass_push push = { .n = COUNT };
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

/* ------------------------------------------------ fp16 storage of S */

/* The tensor-core path keeps S_k as fp16 phases (W0 S wrapped into
 * [-pi, pi]): its forward convs read fp32 S and write the copy (COPY_S),
 * its backward passes read the copy (IN_F16), and Z comes out fp16 in rows
 * of n_pad. Checked where the device has 16-bit storage buffers (lavapipe
 * has), against the reference fed the S that the fp16 phase stands for. */
#define NPAD ((NPIX + 15) / 16 * 16)

static struct gpu_buffer half_buffer(size_t halves)
{
	return test_buffer(halves / 2 + 1);
}

/* The fp16 phase of s, as common.glsl's phase() makes it. */
static float phase16(float s)
{
	float x = W0 * s;
	x -= 6.28318531f * roundf(x * 0.159154943f);
	return (float)(_Float16)x;
}

/* Uploads the fp16 phases of S; f then holds the S they stand for. */
static void upload_phases(const struct gpu_buffer *b, float *f, size_t n)
{
	_Float16 *h = malloc(n * sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		h[i] = (_Float16)phase16(f[i]);
		f[i] = (float)h[i] / W0; /* what the shader sees */
	}
	assert_int_equal(gpu_upload(test_gpu, b, 0, h, n * sizeof(*h)), 0);
	free(h);
}

/* n values out of rows of `row` halves, `rows` rows of `len` values. */
static void download_half(const struct gpu_buffer *b, float *f, int rows,
			  int len, int row)
{
	_Float16 *h = malloc((size_t)rows * row * sizeof(*h));
	assert_int_equal(
	    gpu_download(test_gpu, b, 0, h, (size_t)rows * row * sizeof(*h)),
	    0);
	for (int r = 0; r < rows; r++)
		for (int i = 0; i < len; i++)
			f[(size_t)r * len + i] = (float)h[(size_t)r * row + i];
	free(h);
}

/* The pixel sums over an fp16 dS in rows of NPAD, times the loss scale
 * (reduce_sum_f16, reduce_first_f16). */
static void run_reduce_half(const char *variant, const struct gpu_buffer *x,
			    float scale, int J, size_t dst_cs, size_t dst_js,
			    float *out)
{
	int chunk = 128, chunks = (NPIX + chunk - 1) / chunk;
	struct gpu_buffer part = test_buffer((size_t)chunks * J * NF);
	struct pass_push p = tile_push(0);
	p.i0 = chunk;
	p.i1 = NF;
	p.i3 = NPAD;
	memcpy(&p.off3, &scale, 4);
	const struct gpu_buffer *bufs[] = { x, x, &part };
	test_dispatch(variant, NF, W0, bufs, 3, &p, sizeof(p), chunks, NF, 1);
	reduce_partials(&part, chunks, NF, J, dst_cs, dst_js, out);
}

/* The fp16 path's backward with dS in fp16 alone: dwconv_back_strip_f16_only
 * reads dZ in fp32, dwconv_back_strip_f16_dz in fp16 times the loss scale
 * (as the data gradient's GEMM writes it with HALF_OUT); both write dS
 * times the scale in fp16 alone, every value and the padding. Then the
 * biases' and the first layer's sums read that fp16 dS. sd: the S that
 * the fp16 phases in bcopy stand for. */
static void check_half_ds(struct pass_push p, int d, const float *dw,
			  const struct gpu_buffer *bp,
			  const struct gpu_buffer *bcopy, const float *dz,
			  const double *sd, uint32_t gx, uint32_t gy,
			  int dz_half)
{
	size_t count = (size_t)NF * NPIX, padded = (size_t)NF * NPAD;
	const float scale = 8.0f;
	const char *variant =
	    dz_half ? "dwconv_back_strip_f16_dz" : "dwconv_back_strip_f16_only";
	_Float16 *h = malloc(padded * sizeof(*h));
	double *dzd = malloc(count * 8), *want = malloc(count * 8);
	double *gdw = calloc(NF * 9, 8), *dsd = malloc(count * 8);
	float *got = malloc(count * 4), *gotw = malloc(NF * 9 * 4);
	for (size_t i = 0; i < count; i++) {
		h[i] = (_Float16)(dz[i] * scale);
		dzd[i] = dz_half ? (double)h[i] / scale : dz[i];
	}
	struct gpu_buffer bdz =
			      dz_half ? half_buffer(count) : test_buffer(count),
			  b16 = half_buffer(padded),
			  part = test_buffer((size_t)gx * gy * 9 * NF);
	if (dz_half)
		assert_int_equal(
		    gpu_upload(test_gpu, &bdz, 0, h, count * sizeof(*h)), 0);
	else
		test_upload(&bdz, dz, count);
	for (size_t i = 0; i < padded; i++) /* poisoned: all must be written */
		h[i] = (_Float16)1000.0f;
	assert_int_equal(gpu_upload(test_gpu, &b16, 0, h, padded * sizeof(*h)),
			 0);
	p.i3 = NPAD;
	memcpy(&p.off3, &scale, 4);
	const struct gpu_buffer *bk[] = { bp, bcopy, &bdz, &b16, &part };
	uint32_t spec[2] = { NF, 0 };
	float w0 = W0;
	memcpy(&spec[1], &w0, 4);
	test_dispatch_spec(variant, spec, 2, bk, 5, &p, sizeof(p), gx, gy, NF);
	char what[80];
	ref_dwconv_back(NF, &tile, d, dw, W0, sd, dzd, want, gdw);
	assert_int_equal(
	    gpu_download(test_gpu, &b16, 0, h, padded * sizeof(*h)), 0);
	for (int c = 0; c < NF; c++) {
		for (int i = 0; i < NPIX; i++) {
			size_t at = (size_t)c * NPIX + i;
			got[at] = (float)h[(size_t)c * NPAD + i];
			dsd[at] = got[at] / scale;
			want[at] *= scale;
		}
		for (int i = NPIX; i < NPAD; i++)
			assert_true(h[(size_t)c * NPAD + i] == 0);
	}
	snprintf(what, sizeof(what), "%s dS, dilation %d", variant, d);
	test_close(what, got, want, count, 1e-2, 2e-3);
	reduce_partials(&part, (int)(gx * gy), NF, 9, 9, 1, gotw);
	snprintf(what, sizeof(what), "%s taps, dilation %d", variant, d);
	test_close(what, gotw, gdw, NF * 9, 1e-4, 1e-4);

	/* the sums of the fp16 dS: biases, first layer (weights u, v; bias) */
	double bias[NF] = { 0 }, gfw[NF * 2] = { 0 }, gfb[NF] = { 0 },
	       want3[3 * NF];
	for (int c = 0; c < NF; c++)
		for (int i = 0; i < NPIX; i++)
			bias[c] += dsd[(size_t)c * NPIX + i];
	run_reduce_half("reduce_sum_f16", &b16, scale, 1, 1, 0, gotw);
	test_close("reduce_sum_f16", gotw, bias, NF, 1e-4, 1e-5);
	ref_first_back(NF, &tile, dsd, gfw, gfb);
	for (int c = 0; c < NF; c++) {
		want3[c * 3] = gfw[2 * c];
		want3[c * 3 + 1] = gfw[2 * c + 1];
		want3[c * 3 + 2] = gfb[c];
	}
	run_reduce_half("reduce_first_f16", &b16, scale, 3, 3, 1, gotw);
	test_close("reduce_first_f16", gotw, want3, 3 * NF, 1e-4, 1e-5);
	free(h), free(dzd), free(want), free(gdw), free(dsd), free(got),
	    free(gotw);
}

/* The first layer writing S0 as its fp16 phase (first_phase), against the
 * reference's S0 around the circle (a value next to +-pi may wrap either
 * way). */
static void check_first_phase(void)
{
	struct nn_layout l;
	struct gpu_buffer bs = half_buffer(NF * NPIX);
	float *params = run_first("first_phase", &bs, &l);
	float *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8), worst = 0;
	download_half(&bs, got, NF, NPIX, NPIX);
	ref_first(&l, params, &tile, want);
	for (int i = 0; i < NF * NPIX; i++) {
		double x = W0 * want[i];
		double d =
		    fabs(got[i] - (x - 2 * M_PI * round(x / (2 * M_PI))));
		worst = fmax(worst, fmin(d, 2 * M_PI - d));
	}
	print_message("first_phase: off by %g at worst\n", worst);
	assert_true(worst <= 3e-3); /* fp16 holds [-pi, pi] to 2e-3 */
	free(got), free(want), free(params);
}

/* test_dwconv_pairs at dilation d in one workgroup shape. */
struct pair_form {
	const char *pair, *strip;
	int in16, out16, copy;
};
static void
check_pairs_at(const struct pair_form *forms, size_t nforms, int small, int d,
	       const struct pass_push *pp, const struct gpu_buffer *bp,
	       const struct gpu_buffer *bs32, const struct gpu_buffer *bs16,
	       const struct gpu_buffer *bz, const struct gpu_buffer *bz16,
	       const struct gpu_buffer *bcopy, const float *s, float *got,
	       float *ref, double *want)
{
	enum { W = 38, H = 23, N = W * H, NP = (N + 15) / 16 * 16 };
	size_t count = (size_t)NF * N;
	struct pass_push p = *pp;
	float w0 = W0;
	uint32_t spec[2] = { NF, 0 };
	memcpy(&spec[1], &w0, 4);
	uint32_t sx = small ? DW_SMALL_X : DW_STRIP_X;
	uint32_t gy = strip_groups_y(d, small); /* the same 23 rows */
	for (size_t f = 0; f < nforms; f++) {
		const struct gpu_buffer *out = forms[f].out16 ? bz16 : bz;
		const struct gpu_buffer *bufs[] = { bp,
						    forms[f].in16 ? bs16 : bs32,
						    out, bcopy };
		float *results[2] = { ref, got };
		char pair_name[64], strip_name[64];
		snprintf(pair_name, sizeof(pair_name), "%s%s", forms[f].pair,
			 small ? "_x16" : "");
		snprintf(strip_name, sizeof(strip_name), "%s%s", forms[f].strip,
			 small ? "_x16" : "");
		for (int pair = 0; pair < 2; pair++) {
			uint32_t cols =
			    pair ? (W / 2 + sx - 1) / sx : (W + sx - 1) / sx;
			test_dispatch_spec(pair ? pair_name : strip_name, spec,
					   2, bufs, 3 + forms[f].copy, &p,
					   sizeof(p), cols, gy, NF);
			if (forms[f].out16)
				download_half(out, results[pair], NF, N, NP);
			else
				test_download(out, results[pair], count);
		}
		for (size_t i = 0; i < count; i++)
			want[i] = ref[i];
		char what[96];
		snprintf(what, sizeof(what), "%s Z, dilation %d", pair_name, d);
		test_close(what, got, want, count, 1e-6,
			   forms[f].out16 ? 1e-3 : 1e-6);
		if (forms[f].copy) {
			download_half(bcopy, got, NF, N, N);
			for (size_t i = 0; i < count; i++)
				want[i] = phase16(s[i]);
			snprintf(what, sizeof(what), "%s copy, dilation %d",
				 pair_name, d);
			test_close(what, got, want, count, 4e-3, 0);
		}
	}
}

/* The forward by pairs of columns (dwconv_pair.comp) against the one by
 * strips, which the tests above check against the C reference: the same
 * outputs (Z, and the fp16 copy of S), on a tile of even width (38x23),
 * for dilations 1, 2, 4 and 8, in each of the four forms. */
static void test_dwconv_pairs(void **state)
{
	test_need_gpu();
	enum { W = 38, H = 23, N = W * H, NP = (N + 15) / 16 * 16 };
	static const struct pair_form forms[] = {
		{ "dwconv_pair_s", "dwconv_strip_s", 0, 0, 0 },
		{ "dwconv_pair_s_f16", "dwconv_strip_s_f16", 0, 1, 0 },
		{ "dwconv_pair_s_f16_copy", "dwconv_strip_s_f16_copy", 0, 1,
		  1 },
		{ "dwconv_pair_s_f16_in", "dwconv_strip_s_f16_in", 1, 1, 0 },
	};
	if (!gpu_info(test_gpu)->has_float16_storage)
		skip();
	size_t count = (size_t)NF * N;
	float *s = malloc(count * 4), *dw = malloc(NF * 9 * 4);
	float *got = malloc(count * 4), *ref = malloc(count * 4);
	double *want = malloc(count * 8);
	struct gpu_buffer bp = test_buffer(NF * 9), bs32 = test_buffer(count),
			  bs16 = half_buffer(count), bz = test_buffer(count),
			  bz16 = half_buffer((size_t)NF * NP),
			  bcopy = half_buffer(count);
	for (int d = 1; d <= 8; d *= 2) {
		struct pass_push p = tile_push(d);
		p.tw = W, p.th = H, p.n = N, p.i3 = NP;
		test_random(s, count, 71 + d, -1, 1);
		test_random(dw, NF * 9, 72 + d, -1, 1);
		test_upload(&bp, dw, NF * 9);
		test_upload(&bs32, s, count);
		memcpy(got, s,
		       count * 4); /* upload_phases rounds what it has */
		upload_phases(&bs16, got, count);
		/* the default workgroups, then the small planes' ("_x16") */
		for (int small = 0; small < 2; small++)
			check_pairs_at(forms, sizeof(forms) / sizeof(forms[0]),
				       small, d, &p, &bp, &bs32, &bs16, &bz,
				       &bz16, &bcopy, s, got, ref, want);
	}
	free(s), free(dw), free(got), free(ref), free(want);
}

static void test_fp16_storage(void **state)
{
	test_need_gpu();
	if (!gpu_info(test_gpu)->has_float16_storage)
		skip();
	size_t count = (size_t)NF * NPIX;
	float *s = malloc(count * 4), *dw = malloc(NF * 9 * 4),
	      *got = malloc(count * 4);
	float *dz = malloc(count * 4), *gotw = malloc(NF * 9 * 4);
	double *want = malloc(count * 8), *gdw = malloc(NF * 9 * 8);
	struct gpu_buffer bp = test_buffer(NF * 9), bs = test_buffer(count),
			  bz = half_buffer((size_t)NF * NPAD),
			  bcopy = half_buffer(count), bdz = test_buffer(count),
			  bout = test_buffer(count),
			  b16 = half_buffer((size_t)NF * NPAD),
			  part = test_buffer((size_t)ROW_CHUNKS * 9 * NF);
	float w0 = W0;
	uint32_t spec[2] = { NF, 0 };
	memcpy(&spec[1], &w0, 4);
	check_first_phase();
	for (int d = 1; d <= 8; d *= 2) {
		struct pass_push p = tile_push(d);
		p.i3 = NPAD;
		test_random(s, count, 91 + d, -1, 1);
		test_random(dw, NF * 9, 92 + d, -1, 1);
		test_upload(&bp, dw, NF * 9);
		/* per pixel, by blocks, by strips */
		for (int form = 0; form <= 2; form++) {
			int tiled = form == 1, strips = form == 2;
			static const char *const family[3] = {
				"dwconv_s_f16", "dwconv_tiled_s_f16",
				"dwconv_strip_s_f16"
			};
			uint32_t gx = tiled ? (37 + DW_BLOCK_X - 1) / DW_BLOCK_X
				      : strips ? strip_groups_x(0)
					       : (NPAD + 255) / 256;
			uint32_t gy = tiled ? (23 + DW_BLOCK_Y - 1) / DW_BLOCK_Y
				      : strips ? strip_groups_y(d, 0)
					       : NF;
			uint32_t gz = tiled || strips ? NF : 1;
			char name[48], what[80];

			/* forward: fp32 S in, fp16 Z and the fp16 copy out */
			test_upload(&bs, s, count);
			snprintf(name, sizeof(name), "%s_copy", family[form]);
			const struct gpu_buffer *fw[] = { &bp, &bs, &bz,
							  &bcopy };
			test_dispatch_spec(name, spec, 2, fw, 4, &p, sizeof(p),
					   gx, gy, gz);
			double *sd = test_to_double(s, count);
			ref_dwconv(NF, &tile, d, dw, W0, sd, want);
			download_half(&bz, got, NF, NPIX, NPAD);
			snprintf(what, sizeof(what), "%s Z, dilation %d", name,
				 d);
			test_close(what, got, want, count, 3e-3, 2e-3);
			download_half(&bcopy, got, NF, NPIX, NPIX);
			for (size_t i = 0; i < count; i++)
				want[i] = phase16(s[i]);
			snprintf(what, sizeof(what), "%s copy, dilation %d",
				 name, d);
			test_close(what, got, want, count, 4e-3, 0);
			free(sd);

			/* backward's recompute: the fp16 copy in */
			float *s16 = malloc(count * 4);
			memcpy(s16, s, count * 4);
			upload_phases(&bcopy, s16, count);
			snprintf(name, sizeof(name), "%s_in", family[form]);
			const struct gpu_buffer *in[] = { &bp, &bcopy, &bz };
			test_dispatch_spec(name, spec, 2, in, 3, &p, sizeof(p),
					   gx, gy, gz);
			sd = test_to_double(s16, count);
			ref_dwconv(NF, &tile, d, dw, W0, sd, want);
			download_half(&bz, got, NF, NPIX, NPAD);
			snprintf(what, sizeof(what), "%s Z, dilation %d", name,
				 d);
			test_close(what, got, want, count, 3e-3, 2e-3);

			if (!tiled) {
				/* dS from the fp16 S, and the taps' sums: two
				 * passes per pixel, one by strips */
				test_random(dz, count, 93 + d, -1, 1);
				test_upload(&bdz, dz, count);
				float scale = 4.0f;
				p.off3 = 0;
				memcpy(&p.off3, &scale, 4);
				const struct gpu_buffer *bk[] = { &bp,  &bcopy,
								  &bdz, &bout,
								  &b16, &part };
				snprintf(name, sizeof(name), "%s",
					 strips ? "dwconv_back_strip_f16_in"
						: "dwconv_back_f16_in");
				if (strips)
					test_dispatch_spec(name, spec, 2, bk, 6,
							   &p, sizeof(p), gx,
							   gy, gz);
				else
					test_dispatch_spec(
					    name, spec, 2, bk, 5, &p, sizeof(p),
					    (NPAD + 255) / 256, NF, 1);
				double *dzd = test_to_double(dz, count);
				memset(gdw, 0, NF * 9 * 8);
				ref_dwconv_back(NF, &tile, d, dw, W0, sd, dzd,
						want, gdw);
				test_download(&bout, got, count);
				snprintf(what, sizeof(what),
					 "%s dS, dilation %d", name, d);
				test_close(what, got, want, count, 5e-4, 1e-4);
				download_half(&b16, got, NF, NPIX, NPAD);
				for (size_t i = 0; i < count; i++)
					want[i] *= scale;
				snprintf(what, sizeof(what),
					 "%s fp16 dS, dilation %d", name, d);
				test_close(what, got, want, count, 1e-2, 2e-3);
				if (strips)
					reduce_partials(&part, (int)(gx * gy),
							NF, 9, 9, 1, gotw);
				else
					run_reduce("reduce_dw_s_in", &bdz,
						   &bcopy, NF, 9, d, 9, 1,
						   gotw);
				snprintf(what, sizeof(what),
					 "%s taps, dilation %d",
					 strips ? name : "reduce_dw_s_in", d);
				test_close(what, gotw, gdw, NF * 9, 1e-4, 1e-4);
				for (int dz_half = 0; strips && dz_half <= 1;
				     dz_half++)
					check_half_ds(p, d, dw, &bp, &bcopy, dz,
						      sd, gx, gy, dz_half);
				free(dzd);
				p.off3 = 0;
			}
			free(sd), free(s16);
		}
	}
	free(s), free(dw), free(got), free(dz), free(gotw), free(want),
	    free(gdw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first),
		cmocka_unit_test(test_activate),
		cmocka_unit_test(test_dwconv),
		cmocka_unit_test(test_dwconv_back),
		cmocka_unit_test(test_dwconv_rows),
		cmocka_unit_test(test_dwconv_back_rows),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_loss_passes),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_fp16_storage),
		cmocka_unit_test(test_dwconv_pairs),
		cmocka_unit_test(test_adam),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
