/*
 * support_passes.h - what the tests of the shader passes share
 * (test_passes.c, test_passes_train.c, test_passes_fp16.c): the test tile
 * (37x23 inside a 50x40 image, width 32), its push constants, the model's
 * parameters, the first layer's run, the dilations and the strips' grid,
 * and the reductions of partial sums. Included by those files alone.
 */
#ifndef VKINR_TEST_SUPPORT_PASSES_H
#define VKINR_TEST_SUPPORT_PASSES_H

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

/* The test tile's geometry, as the passes read it. */
static inline struct pass_tile test_tile(void)
{
	struct pass_tile p = {
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
	};
	return p;
}

/* The depthwise passes' push block over the test tile, dilation dil. */
static inline struct dw_push dw_tile_push(int dil)
{
	struct dw_push p = { .tile = test_tile(), .dil = dil };
	return p;
}

/* Uploads act(S) = sin(w0 S), what activate.comp hands the conv passes. */
static inline void upload_activated(const struct gpu_buffer *b, const float *s,
				    size_t n)
{
	float *h = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		h[i] = sinf(W0 * s[i]);
	test_upload(b, h, n);
	free(h);
}

/* Adds chunks of partial sums (reduce.comp) into a fresh gradient of
 * J x C values and reads it back: grad[c * dst_cs + j * dst_js]. */
static inline void reduce_partials(const struct gpu_buffer *part, int chunks,
				   int C, int J, size_t dst_cs, size_t dst_js,
				   float *out)
{
	struct gpu_buffer grad = test_buffer((size_t)J * C);
	struct reduce_push r = { .chunks = chunks,
				 .j0 = 0,
				 .channels = C,
				 .taps = J,
				 .jcount = J,
				 .dst = 0,
				 .dst_cs = (uint32_t)dst_cs,
				 .dst_js = (uint32_t)dst_js };
	const struct gpu_buffer *red[] = { part, &grad };
	test_dispatch("reduce", NF, W0, red, 2, &r, sizeof(r),
		      (J * C + 255) / 256, 1, 1);
	test_download(&grad, out, (size_t)J * C);
}

/* Model parameters with random (not identity) dw taps. */
static inline float *random_params(const struct nn_layout *l,
				   const struct nn_config *cfg)
{
	float *p = calloc(l->total, sizeof(float));
	nn_init_params(cfg, l, p);
	for (int k = 0; k < l->nblocks; k++)
		test_random(p + l->dw[k], (size_t)l->nf * 9, 100 + k, -0.6f,
			    0.6f);
	return p;
}

static inline void setup_model(struct nn_config *cfg, struct nn_layout *l)
{
	nn_config_defaults(cfg, 0);
	cfg->nf = NF;
	cfg->seed = 7;
	nn_layout_init(l, cfg);
}

/* Runs a first-layer variant into out on random parameters (returned,
 * with their layout in l). */
static inline float *run_first(const char *variant,
			       const struct gpu_buffer *out,
			       struct nn_layout *l)
{
	struct nn_config cfg;
	setup_model(&cfg, l);
	float *params = random_params(l, &cfg);
	struct gpu_buffer bp = test_buffer(l->total);
	test_upload(&bp, params, l->total);
	struct first_push p = { .tile = test_tile(),
				.w_off = (uint32_t)l->first_w,
				.b_off = (uint32_t)l->first_b };
	const struct gpu_buffer *bufs[] = { &bp, out };
	test_dispatch(variant, NF, W0, bufs, 2, &p, sizeof(p),
		      (NPIX + 255) / 256, NF, 1);
	return params;
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
static inline uint32_t strip_groups_x(int small)
{
	uint32_t sx = small ? DW_SMALL_X : DW_STRIP_X;
	return (37 + sx - 1) / sx;
}
static inline uint32_t strip_groups_y(int d, int small)
{
	uint32_t sy = small ? DW_SMALL_Y : DW_STRIP_Y;
	uint32_t strips =
	    (uint32_t)d * (((23 + d - 1) / d + DW_STRIP - 1) / DW_STRIP);
	return (strips + sy - 1) / sy;
}

/* The pixel reductions (bias, dw taps, first layer, out layer) followed by
 * the ordered reduce into the gradient, against the reference. */
static inline void run_reduce(const char *variant, const struct gpu_buffer *x,
			      const struct gpu_buffer *y, int C, int J, int dil,
			      size_t dst_cs, size_t dst_js, float *out)
{
	/* a small chunk, so that several chunks are added */
	int chunk = 128, chunks = (NPIX + chunk - 1) / chunk;
	struct gpu_buffer part = test_buffer((size_t)chunks * J * C);
	struct pixel_sum_push p = {
		.tile = test_tile(), .dil = dil, .chunk = chunk, .channels = C
	};
	const struct gpu_buffer *bufs[] = { x, y, &part };
	test_dispatch(variant, NF, W0, bufs, 3, &p, sizeof(p), chunks, C, 1);
	reduce_partials(&part, chunks, C, J, dst_cs, dst_js, out);
}

#endif
