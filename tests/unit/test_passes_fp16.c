/*
 * test_passes_fp16.c - the tensor-core path's fp16 storage of S, pass by
 * pass, on the test tile (support_passes.h), against the reference fed the
 * S that the fp16 phase stands for; and the depthwise passes by pairs
 * against the strips.
 *
 * Tolerances: the reference is double; the shaders are fp32 with sin(30 s),
 * so errors of a few 1e-5 relative are expected, and the tolerance is
 * 1e-4-ish: far below what a wrong index or tap would give.
 */
#include "unit/support_passes.h"

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
	struct pixel_sum_push p = { .tile = test_tile(),
				    .chunk = chunk,
				    .channels = NF,
				    .x_row = NPAD,
				    .x_scale = scale };
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
static void check_half_ds(struct dw_push p, int d, const float *dw,
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
	p.half_row = NPAD;
	p.grad_scale = scale;
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
	       const struct dw_push *pp, const struct gpu_buffer *bp,
	       const struct gpu_buffer *bs32, const struct gpu_buffer *bs16,
	       const struct gpu_buffer *bz, const struct gpu_buffer *bz16,
	       const struct gpu_buffer *bcopy, const float *s, float *got,
	       float *ref, double *want)
{
	enum { W = 38, H = 23, N = W * H, NP = (N + 15) / 16 * 16 };
	size_t count = (size_t)NF * N;
	struct dw_push p = *pp;
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
		struct dw_push p = dw_tile_push(d);
		p.tile.tw = W, p.tile.th = H, p.tile.n = N, p.half_row = NP;
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
		struct dw_push p = dw_tile_push(d);
		p.half_row = NPAD;
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
				p.grad_scale = scale;
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
				p.grad_scale = 0;
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
		cmocka_unit_test(test_fp16_storage),
		cmocka_unit_test(test_dwconv_pairs),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
