/*
 * test_passes.c - the convolution passes, run alone on the Vulkan device,
 * against the plain-C reference (tests/ref) on small, odd sizes (the tile
 * of support_passes.h): the first layer, the activation, and the depthwise
 * convs forward and backward in every form, for every dilation of the
 * test's list. The GEMMs, head, loss, reductions and Adam are
 * test_passes_train.c's; the fp16 storage of S test_passes_fp16.c's.
 *
 * Tolerances: the reference is double; the shaders are fp32 with sin(30 s),
 * so errors of a few 1e-5 relative are expected, and the tolerance is
 * 1e-4-ish: far below what a wrong index or tap would give.
 */
#include "unit/support_passes.h"

static void test_activate(void **state)
{
	test_need_gpu();
	float *s = malloc(NF * NPIX * 4), *got = malloc(NF * NPIX * 4);
	double *want = malloc(NF * NPIX * 8);
	test_random(s, NF * NPIX, 5, -1, 1);
	struct gpu_buffer bs = test_buffer(NF * NPIX),
			  bh = test_buffer(NF * NPIX);
	test_upload(&bs, s, NF * NPIX);
	struct activate_push p = { .n = NPIX };
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
	p.count = NF * NPIX / 4;
	uint32_t groups = (NF * NPIX / 4 + 255) / 256;
	test_dispatch("activate_vec4", NF, W0, bufs, 2, &p, sizeof(p),
		      (groups + 1) / 2, 2, 1);
	test_download(&bh, got, NF * NPIX);
	test_close("activate_vec4", got, want, NF * NPIX, 2e-5, 0);
	free(s), free(got), free(want);
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
	struct dw_push p = dw_tile_push(d);
	uint32_t gx = (NPIX + 255) / 256;
	const char *name = names[form][back];
	if (form == DW_ROWS) {
		p.chunk = ROW_CHUNK_TEST;
		p.channels = NF;
		p.segments = ROW_SEGS;
		gx = back ? ROW_CHUNKS : (ROW_SEGS * 23 + 63) / 64;
	}
	if (form == DW_ROW_BLOCKS) { /* the units: d ceil(23 / 4d) block
				      * rows of ROW_SEGS segments */
		uint32_t units = ROW_SEGS * d * ((23 + 4 * d - 1) / (4 * d));
		p.chunk = (int)((units + ROW_CHUNKS - 1) / ROW_CHUNKS);
		p.channels = NF;
		p.segments = ROW_SEGS;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first),
		cmocka_unit_test(test_activate),
		cmocka_unit_test(test_dwconv),
		cmocka_unit_test(test_dwconv_back),
		cmocka_unit_test(test_dwconv_rows),
		cmocka_unit_test(test_dwconv_back_rows),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
