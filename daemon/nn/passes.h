/*
 * passes.h - the push-constant blocks of the shaders, as C structs. They
 * must match shaders/common.glsl (struct Pass) and shaders/gemm.comp
 * (struct Gemm) field for field.
 */
#ifndef VKINR_NN_PASSES_H
#define VKINR_NN_PASSES_H

#include <stdint.h>
#include <string.h>

struct pass_push {
	int32_t img_w, img_h, tx, ty;
	int32_t tw, th, cx, cy;
	int32_t cw, ch, n, dil;
	uint32_t off0, off1, off2, off3;
	int32_t i0, i1, i2, i3;
};

struct gemm_push {
	uint32_t M, N, K;
	uint32_t lda, ldb, ldc;
	uint32_t a_off, b_off, c_off, bias_off;
	uint32_t k_chunk, has_bias;
	float a_scale, b_scale, out_scale; /* loss scaling, tensor-core path */
};

/* Workgroups that cover a items, b each. */
static inline uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* A float's bits, for the push constants' integer fields. */
static inline uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* The pixels one pixel_reduce workgroup sums (the GEMMs' tiles are in
 * nn/gemm.h). */
#define REDUCE_CHUNK 4096

/* GPUs' depthwise passes by blocks (dwconv_tiled.comp): the block of a
 * workgroup, and the largest dilation its shared memory holds */
#define DW_BLOCK_X 64
#define DW_BLOCK_Y 16
#define DW_TILED_MAX_DIL 8
#define GROUP 256

/* GPUs' depthwise passes by strips (dwconv_strip.comp,
 * dwconv_back_strip.comp): a workgroup is DW_STRIP_X columns by
 * DW_STRIP_Y strips, a strip DW_STRIP rows of one residue of the
 * dilation. */
#define DW_STRIP_X 32
#define DW_STRIP_Y 8
#define DW_STRIP 8

/* CPU devices' depthwise passes (dwconv_rows.comp): pixels of a row
 * segment, segments of a summed chunk, invocations of a workgroup. */
#define ROW_SEGMENT 8
#define ROW_CHUNK (REDUCE_CHUNK / ROW_SEGMENT)
#define ROW_GROUP 64

#endif
