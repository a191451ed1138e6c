/*
 * passes.h - the push constants of the passes, as C structs: one a pass
 * family, named for what its fields mean there. Each struct is the field
 * list of shaders/push.h, the one text the shaders' blocks are made of
 * too (common.glsl, gemm_push.glsl), so the two sides cannot drift.
 */
#ifndef VKINR_NN_PASSES_H
#define VKINR_NN_PASSES_H

#include <stdint.h>
#include <string.h>

#include "shaders/push.h"

/* The tile geometry every tile pass reads (push.h's PUSH_TILE). */
struct pass_tile {
	PUSH_TILE(PUSH_C_FIELD)
};

PUSH_STRUCT(first_push, PUSH_FIRST);
PUSH_STRUCT(head_push, PUSH_HEAD);
PUSH_STRUCT(loss_push, PUSH_LOSS);
PUSH_STRUCT(resample_push, PUSH_RESAMPLE);
PUSH_STRUCT(dw_push, PUSH_DW);
PUSH_STRUCT(pixel_sum_push, PUSH_PIXEL_SUM);
PUSH_STRUCT(reduce_push, PUSH_REDUCE);
PUSH_STRUCT(activate_push, PUSH_ACTIVATE);
PUSH_STRUCT(to_f16_push, PUSH_TO_F16);
PUSH_STRUCT(params_push, PUSH_PARAMS);
PUSH_STRUCT(muon_push, PUSH_MUON);
PUSH_STRUCT(ns_push, PUSH_NS);
PUSH_STRUCT(ns_small_push, PUSH_NS_SMALL);
PUSH_STRUCT(gemm_push, PUSH_GEMM);

/* Every field at the word its list names, and no struct longer than the
 * 24 words a packed slot's lane loads read (shaders/packed.glsl); never
 * called, checked as it compiles. */
static inline void nn_pass_push_checks(void)
{
	PUSH_CHECK(pass_tile, PUSH_TILE)
	PUSH_CHECK(first_push, PUSH_FIRST)
	PUSH_CHECK(head_push, PUSH_HEAD)
	PUSH_CHECK(loss_push, PUSH_LOSS)
	PUSH_CHECK(resample_push, PUSH_RESAMPLE)
	PUSH_CHECK(dw_push, PUSH_DW)
	PUSH_CHECK(pixel_sum_push, PUSH_PIXEL_SUM)
	PUSH_CHECK(reduce_push, PUSH_REDUCE)
	PUSH_CHECK(activate_push, PUSH_ACTIVATE)
	PUSH_CHECK(to_f16_push, PUSH_TO_F16)
	PUSH_CHECK(params_push, PUSH_PARAMS)
	PUSH_CHECK(muon_push, PUSH_MUON)
	PUSH_CHECK(ns_push, PUSH_NS)
	PUSH_CHECK(ns_small_push, PUSH_NS_SMALL)
	PUSH_CHECK(gemm_push, PUSH_GEMM)
	_Static_assert(sizeof(struct head_push) <= 24 * 4, "head_push");
	_Static_assert(sizeof(struct dw_push) <= 24 * 4, "dw_push");
	_Static_assert(sizeof(struct gemm_push) <= 24 * 4, "gemm_push");
}

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
