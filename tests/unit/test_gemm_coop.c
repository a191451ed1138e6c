/*
 * test_gemm_coop.c - the tensor-core GEMM (shaders/gemm_coop.comp) against
 * the plain-C reference, in its three forms, and the NV-to-KHR SPIR-V
 * translation that lets it run on devices with only the KHR extension.
 *
 * Every device runs the emulated families ("coop_emu" and "coop32_emu":
 * the same tilings with fp32 operands and plain arithmetic for the matrix
 * operations) at sizes that hit every edge: widths 16 to 512, pixel counts that are not a
 * multiple of any tile, a split of K whose last chunk and last step are
 * partial. Devices with tensor cores also run every fp16 family of
 * nn/gemm.h on the same sizes, on operands rounded to fp16 with rows
 * padded to 16 as the engine lays them out; lavapipe says skipped there.
 * The VK_NV_cooperative_matrix2 families (shaders/gemm_cm2.comp) are
 * checked the same way where the build embedded them (glslang 15, `make
 * gpu-tools`) and the device offers the extension; elsewhere that test
 * says skipped, and why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "gpu/shaders.h"
#include "gpu/spirv_khr.h"
#include "nn/gemm.h"
#include "nn/passes.h"
#include "ref/ref.h"
#include "unit/support_gpu.h"

/* widths and pixel counts: 851 = 37 x 23 and 300 are no multiple of any
 * tile, 40 is less than one; 144 leaves a partial block of rows; 512 is
 * the widest (kept to few pixels: the emulation is slow on lavapipe) */
static const struct {
	int nf, npix;
} sizes[] = {
	{ 16, 851 }, { 16, 300 }, { 48, 851 }, { 144, 300 }, { 512, 40 },
};

/* An operand of `rows` rows of `row` values, as the family reads it:
 * fp32 rows as they are, or fp16 rows padded to `pad` with zeros (the
 * floats are then replaced by their rounded values, for the reference). */
static struct gpu_buffer upload_operand(float *f, int rows, int row, int pad,
					int half)
{
	if (!half) {
		struct gpu_buffer b = test_buffer((size_t)rows * row);
		test_upload(&b, f, (size_t)rows * row);
		return b;
	}
	size_t count = (size_t)rows * pad + 16;
	_Float16 *h = calloc(count, sizeof(_Float16));
	for (int r = 0; r < rows; r++)
		for (int i = 0; i < row; i++) {
			h[(size_t)r * pad + i] =
			    (_Float16)f[(size_t)r * row + i];
			f[(size_t)r * row + i] = (float)h[(size_t)r * pad + i];
		}
	struct gpu_buffer b = test_buffer(count / 2 + 1);
	assert_int_equal(
	    gpu_upload(test_gpu, &b, 0, h, count * sizeof(_Float16)), 0);
	free(h);
	return b;
}

/* Sums split-K slices in order (the engine's reduce.comp does the same on
 * the device; here the host adds them, to check the slices alone). */
static void sum_slices(const float *part, int splits, int n, float *out)
{
	for (int i = 0; i < n; i++) {
		float s = 0;
		for (int z = 0; z < splits; z++)
			s += part[(size_t)z * n + i];
		out[i] = s;
	}
}

/* Runs form `form` of family v, which writes fp16, into bufs[2], poisoned
 * first so that every value must be written; returns its count values as
 * floats, name the shader's. */
static float *run_half_form(const struct gemm_variant *v, const char *form,
			    const struct gpu_buffer *const bufs[4],
			    const struct gemm_push *g, uint32_t gx, uint32_t gy,
			    size_t count, char name[48])
{
	gemm_shader_name(v, form, name, 48);
	_Float16 *h = malloc(count * sizeof(_Float16) + 16);
	for (size_t i = 0; i < count; i++)
		h[i] = (_Float16)1000.0f;
	assert_int_equal(
	    gpu_upload(test_gpu, bufs[2], 0, h, count * sizeof(_Float16)), 0);
	test_dispatch(name, (int)g->M, 30.0f, bufs, 4, g, sizeof(*g), gx, gy,
		      1);
	assert_int_equal(
	    gpu_download(test_gpu, bufs[2], 0, h, count * sizeof(_Float16)), 0);
	float *got = malloc(count * sizeof(float));
	for (size_t i = 0; i < count; i++)
		got[i] = (float)h[i];
	free(h);
	return got;
}

/* The forward writing the fp16 phase of S (form "nnp"): W0 S wrapped into
 * [-pi, pi], as far as fp16 and the GEMM's own rounding allow; compared
 * around the circle, since a value next to +-pi may wrap either way. */
static void check_phase(const struct gemm_variant *v,
			const struct gpu_buffer *const bufs[4],
			const struct gemm_push *g, uint32_t gx, uint32_t gy,
			const double *s, size_t count)
{
	char name[48];
	const float w0 =
	    30.0f; /* the shaders' specialization (run_half_form) */
	float *h = run_half_form(v, "nnp", bufs, g, gx, gy, count, name);
	double worst = 0;
	size_t at = 0;
	for (size_t i = 0; i < count; i++) {
		double x = w0 * s[i];
		double want = x - 2 * M_PI * round(x / (2 * M_PI));
		double d = fabs((double)h[i] - want);
		d = fmin(d, 2 * M_PI - d);
		if (!(d <= worst))
			worst = d, at = i;
	}
	free(h);
	/* fp16 holds [-pi, pi] to 2e-3; S's own error (1e-4) times w0 */
	if (!(worst <= 6e-3))
		fail_msg("%s nf %u, %u pixels: phase off by %g at %zu", name,
			 g->M, g->N, worst, at);
}

/* The data gradient writing dZ in fp16 (form "tnh"): the tn form's result
 * rounded to fp16, every value written (the output is poisoned first). */
static void check_half_dz(const struct gemm_variant *v,
			  const struct gpu_buffer *const bufs[4],
			  const struct gemm_push *g, uint32_t gx, uint32_t gy,
			  const double *want, size_t count)
{
	char name[48], what[96];
	float *got = run_half_form(v, "tnh", bufs, g, gx, gy, count, name);
	snprintf(what, sizeof(what), "%s nf %u, %u pixels", name, g->M, g->N);
	/* fp16 keeps 11 bits: 5e-4 relative, on top of the tn form's error */
	test_close(what, got, want, count, 2e-4, 1e-3);
	free(got);
}

/* The three forms of one family at width nf and npix pixels. */
static void check_family(const struct gemm_variant *v, int nf, int npix)
{
	int half = v->half;
	int ld = half ? (npix + 15) / 16 * 16 : npix; /* activation rows */
	size_t act = (size_t)nf * npix;
	float *w = malloc((size_t)nf * nf * 4), *b = malloc((size_t)nf * 4);
	float *z = malloc(act * 4), *ds = malloc(act * 4),
	      *got = malloc(act * 4);
	double *want = malloc(act * 8);
	uint64_t seed = (uint64_t)nf * 1000 + (uint64_t)npix;
	test_random(w, (size_t)nf * nf, seed + 1, -0.3f, 0.3f);
	test_random(b, (size_t)nf, seed + 2, -1, 1);
	test_random(z, act, seed + 3, -1, 1);
	test_random(ds, act, seed + 4, -1, 1);
	struct gpu_buffer bw = upload_operand(w, nf, nf, nf, half);
	struct gpu_buffer bz = upload_operand(z, nf, npix, ld, half);
	struct gpu_buffer bds = upload_operand(ds, nf, npix, ld, half);
	struct gpu_buffer bbias = test_buffer((size_t)nf + 8);
	/* the bias at an offset, as in the parameter vector */
	assert_int_equal(gpu_upload(test_gpu, &bbias, 8 * 4, b, (size_t)nf * 4),
			 0);
	struct gpu_buffer bc = test_buffer(act);
	double *zd = test_to_double(z, act), *dsd = test_to_double(ds, act);
	char name[48], what[96];
	uint32_t gx = (uint32_t)(npix + v->cols - 1) / v->cols;
	uint32_t gy = (uint32_t)(nf + v->rows - 1) / v->rows;

	/* forward with bias */
	struct gemm_push g = { .M = nf,
			       .N = npix,
			       .K = nf,
			       .lda = nf,
			       .ldb = ld,
			       .ldc = npix,
			       .bias_off = 8,
			       .k_chunk = nf,
			       .has_bias = 1,
			       .a_scale = 1,
			       .b_scale = 1,
			       .out_scale = 1 };
	const struct gpu_buffer *nn[] = { &bw, &bz, &bc, &bbias };
	gemm_shader_name(v, "nn", name, sizeof(name));
	test_dispatch(name, nf, 30.0f, nn, 4, &g, sizeof(g), gx, gy, 1);
	test_download(&bc, got, act);
	ref_pointwise(nf, npix, w, b, zd, want);
	snprintf(what, sizeof(what), "%s nf %d, %d pixels", name, nf, npix);
	test_close(what, got, want, act, 1e-4, 1e-4);
	if (v->half_out)
		check_phase(v, nn, &g, gx, gy, want, act);

	/* data gradient, with the loss scale undone in the epilogue */
	g.has_bias = 0;
	g.out_scale = 0.5f;
	const struct gpu_buffer *tn[] = { &bw, &bds, &bc, &bbias };
	gemm_shader_name(v, "tn", name, sizeof(name));
	test_dispatch(name, nf, 30.0f, tn, 4, &g, sizeof(g), gx, gy, 1);
	test_download(&bc, got, act);
	ref_pointwise_back_data(nf, npix, w, dsd, want);
	for (size_t i = 0; i < act; i++)
		want[i] *= 0.5;
	snprintf(what, sizeof(what), "%s nf %d, %d pixels", name, nf, npix);
	test_close(what, got, want, act, 1e-4, 1e-4);
	if (v->half_out)
		check_half_dz(v, tn, &g, gx, gy, want, act);

	/* weight gradient, K split in chunks of 96 (not a multiple of BK:
	 * the last step of each chunk is partial, and so is the last chunk) */
	uint32_t k_chunk = 96, kdim = (uint32_t)(half ? ld : npix);
	uint32_t splits = (kdim + k_chunk - 1) / k_chunk;
	size_t nn2 = (size_t)nf * nf;
	struct gpu_buffer part = test_buffer(splits * nn2);
	struct gemm_push gn = { .M = nf,
				.N = nf,
				.K = kdim,
				.lda = ld,
				.ldb = ld,
				.ldc = nf,
				.k_chunk = k_chunk,
				.a_scale = 1,
				.b_scale = 1,
				.out_scale = 1 };
	const struct gpu_buffer *nt[] = { &bds, &bz, &part, &bbias };
	gemm_shader_name(v, "nt", name, sizeof(name));
	uint32_t nt_rows, nt_cols;
	gemm_variant_tile(v, "nt", &nt_rows, &nt_cols);
	test_dispatch(name, nf, 30.0f, nt, 4, &gn, sizeof(gn),
		      (uint32_t)(nf + nt_cols - 1) / nt_cols,
		      (uint32_t)(nf + nt_rows - 1) / nt_rows, splits);
	float *slices = malloc(splits * nn2 * 4), *gotw = malloc(nn2 * 4);
	test_download(&part, slices, splits * nn2);
	sum_slices(slices, (int)splits, (int)nn2, gotw);
	double *gw = calloc(nn2, 8), *gb = calloc((size_t)nf, 8);
	ref_pointwise_back_weight(nf, npix, dsd, zd, gw, gb);
	snprintf(what, sizeof(what), "%s nf %d, %d pixels, %u splits", name, nf,
		 npix, splits);
	test_close(what, gotw, gw, nn2, 1e-3, 1e-4);

	free(w), free(b), free(z), free(ds), free(got), free(want), free(zd),
	    free(dsd), free(slices), free(gotw), free(gw), free(gb);
}

static void check_sizes(const struct gemm_variant *v)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
		check_family(v, sizes[i].nf, sizes[i].npix);
}

static void test_coop_tiling_emulated(void **state)
{
	test_need_gpu();
	check_sizes(gemm_variant_find("coop_emu"));
	/* the small tiling runs widths up to 32: its checks stop at 48, so
	 * its row blocks still see a partial one */
	const struct gemm_variant *small = gemm_variant_find("coop32_emu");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
		if (sizes[i].nf <= 48)
			check_family(small, sizes[i].nf, sizes[i].npix);
}

static void test_coop_tensor_cores(void **state)
{
	test_need_gpu();
	const struct gpu_device_info *info = gpu_info(test_gpu);
	if (!info->has_tensor_cores) {
		print_message("skipped: %s has no fp16 cooperative matrices\n",
			      info->name);
		skip();
	}
	print_message("# through VK_%s_cooperative_matrix\n",
		      !strcmp(info->coopmat_api, "khr") ? "KHR" : "NV");
	for (const struct gemm_variant *v = gemm_variants; v->name; v++)
		if (v->half && !v->cm2 &&
		    gemm_variant_runs(v, info->coopmat_api))
			check_sizes(v);
}

static void test_coopmat2(void **state)
{
	test_need_gpu();
	const struct gpu_device_info *info = gpu_info(test_gpu);
	if (!gpu_shader_find("gemm_nn_cm2")) {
		print_message(
		    "skipped: this build has no VK_NV_cooperative_matrix2 "
		    "shaders (glslang 15: make gpu-tools)\n");
		skip();
	}
	if (!info->has_coopmat2) {
		print_message(
		    "skipped: %s does not offer VK_NV_cooperative_matrix2 "
		    "as gemm_cm2.comp needs it\n",
		    info->name);
		skip();
	}
	int seen = 0;
	for (const struct gemm_variant *v = gemm_variants; v->name; v++)
		if (v->cm2 && gemm_variant_runs_on(v, info)) {
			print_message("# %s\n", v->name);
			check_sizes(v);
			seen++;
		}
	assert_true(seen >= 1);
}

/* ------------------------------------------------- SPIR-V translation */

#define OP(op, wc) (((uint32_t)(wc) << 16) | (op))

/* A hand-made module with one of each NV instruction; ids: 1 uint, 2 bool
 * true, 3 false, 4 half, 5 float, 6-9 constants 16, 8, 3 (subgroup),
 * 10 A type (16x16 half), 11 B type (16x8 half), 12 C type (16x8 float),
 * 13 a pointer, 14 stride, 20.. values. */
static const uint32_t nv_module[] = {
	0x07230203,  0x00010500, 0,
	30,          0,          OP(17, 2),
	5357, /* Capability */
	OP(10, 8),   0x5f565053, 0x635f564e,
	0x65706f6f,  0x69746172, 0x6d5f6576,
	0x69727461,  0x00000078, /* "SPV_NV_cooperative_matrix" */
	OP(21, 4),   1,          32,
	0,                          /* uint */
	OP(41, 3),   15,         2, /* true (type 15) */
	OP(42, 3),   15,         3, /* false */
	OP(43, 4),   1,          6,
	16,          OP(43, 4),  1,
	7,           8,          OP(43, 4),
	1,           8,          3,
	OP(5358, 6), 10,         4,
	8,           6,          6, /* A 16x16 */
	OP(5358, 6), 11,         4,
	8,           6,          7, /* B 16x8 */
	OP(5358, 6), 12,         5,
	8,           6,          7, /* C 16x8 */
	OP(5359, 6), 10,         20,
	13,          14,         3, /* load A row-major */
	OP(5359, 8), 11,         21,
	13,          14,         2,
	0x18,        9, /* load B col-major + access */
	OP(5359, 6), 12,         22,
	13,          14,         3, /* load C */
	OP(5361, 6), 12,         23,
	20,          21,         22, /* mul-add */
	OP(5360, 5), 13,         23,
	14,          2, /* store col-major */
	OP(5362, 4), 1,          24,
	12, /* length */
};

static const uint32_t khr_module[] = {
	0x07230203,  0x00010500,  0,           33,
	0,           OP(17, 2),   6022,        OP(10, 8),
	0x5f565053,  0x5f52484b,  0x706f6f63,  0x74617265,
	0x5f657669,  0x7274616d,  0x00007869, /* "SPV_KHR_cooperative_matrix" */
	OP(21, 4),   1,           32,          0,
	OP(41, 3),   15,          2,           OP(42, 3),
	15,          3,           OP(43, 4),   1,
	6,           16,          OP(43, 4),   1,
	7,           8,           OP(43, 4),   1,
	8,           3,           OP(43, 4),   1,
	30,          0, /* the added constants */
	OP(43, 4),   1,           31,          1,
	OP(43, 4),   1,           32,          2,
	OP(4456, 7), 10,          4,           8,
	6,           6,           30, /* use A */
	OP(4456, 7), 11,          4,           8,
	6,           7,           31, /* use B */
	OP(4456, 7), 12,          5,           8,
	6,           7,           32, /* accumulator */
	OP(4457, 6), 10,          20,          13,
	30,          14, /* layout row, stride */
	OP(4457, 8), 11,          21,          13,
	31,          14,          0x18,        9,
	OP(4457, 6), 12,          22,          13,
	30,          14,          OP(4459, 6), 12,
	23,          20,          21,          22,
	OP(4458, 5), 13,          23,          31,
	14,          OP(4460, 4), 1,           24,
	12,
};

static void test_spirv_known_words(void **state)
{
	uint32_t *out;
	size_t n;
	assert_int_equal(
	    spirv_nv_to_khr(nv_module, sizeof(nv_module) / 4, &out, &n), 0);
	assert_int_equal(n, sizeof(khr_module) / 4);
	for (size_t i = 0; i < n; i++)
		if (out[i] != khr_module[i])
			fail_msg("word %zu: got 0x%08x, want 0x%08x", i, out[i],
				 khr_module[i]);
	free(out);
	assert_true(spirv_uses_coopmat_nv(nv_module, sizeof(nv_module) / 4));
	assert_false(spirv_uses_coopmat_nv(khr_module, sizeof(khr_module) / 4));
}

/* A and B of one type (as in 16x16x16) cannot both be: refused. */
static void test_spirv_refuses_shared_type(void **state)
{
	uint32_t m[sizeof(nv_module) / 4];
	memcpy(m, nv_module, sizeof(m));
	/* load the B operand (id 21) with A's type (10) */
	for (size_t i = 5; i < sizeof(m) / 4; i += m[i] >> 16)
		if ((m[i] & 0xffff) == 5359 && m[i + 2] == 21)
			m[i + 1] = 10;
	uint32_t *out = NULL;
	size_t n;
	assert_int_equal(spirv_nv_to_khr(m, sizeof(m) / 4, &out, &n),
			 ERR_INVALID);
	assert_null(out);
}

/* Whether shader is one of a family that only VK_NV_cooperative_matrix
 * runs (the 16x16x16 shape, which the translation refuses). */
static int nv_only_shader(const char *shader)
{
	static const char *const forms[] = { "nn", "tn", "nt" };
	for (const struct gemm_variant *v = gemm_variants; v->name; v++)
		for (int f = 0; v->nv_only && f < 3; f++) {
			char name[64];
			gemm_shader_name(v, forms[f], name, sizeof(name));
			size_t len = strlen(name);
			/* its packed twin (NAME_pk) too */
			if (!strncmp(name, shader, len) &&
			    (!shader[len] || !strcmp(shader + len, "_pk")))
				return 1;
		}
	return 0;
}

/* Every embedded tensor-core shader translates, and keeps its size
 * apart from one word a matrix type and the three constants; the
 * NV-only ones are refused. */

/* Checks the tensor-core shaders of table t (see below). */
static void check_translations(const struct shader_blob *t, int *seen,
			       int *refused)
{
	for (const struct shader_blob *s = t; s->name; s++) {
		size_t words = s->size / 4;
		if (!spirv_uses_coopmat_nv(s->code, words))
			continue;
		uint32_t *out;
		size_t n;
		int rc = spirv_nv_to_khr(s->code, words, &out, &n);
		if (nv_only_shader(s->name)) {
			if (!rc)
				fail_msg("%s (16x16x16) translated", s->name);
			(*refused)++;
			continue;
		}
		if (rc)
			fail_msg("%s does not translate", s->name);
		assert_int_equal(n, words + 3 * 4 + 3);
		for (size_t i = 5; i < n; i += out[i] >> 16)
			if ((out[i] & 0xffff) >= 5357 &&
			    (out[i] & 0xffff) <= 5362)
				fail_msg("%s: NV opcode left at word %zu",
					 s->name, i);
		free(out);
		(*seen)++;
	}
}

static void test_spirv_embedded_shaders(void **state)
{
	int seen = 0, refused = 0;
	check_translations(shader_table, &seen, &refused);
	assert_non_null(shader_table_bench); /* the tests link it */
	check_translations(shader_table_bench, &seen, &refused);
	assert_true(seen >= 3);
	assert_true(refused >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spirv_known_words),
		cmocka_unit_test(test_spirv_refuses_shared_type),
		cmocka_unit_test(test_spirv_embedded_shaders),
		cmocka_unit_test(test_coop_tiling_emulated),
		cmocka_unit_test(test_coop_tensor_cores),
		cmocka_unit_test(test_coopmat2),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
