/*
 * recorder.h - the state of one recording and the helpers that record
 * passes with it, shared by record.c (the pipelines, the epoch: forward,
 * head, backward), record_render.c (the render programs, which replay
 * record.c's forward) and render_view.c (renders at any size: the same
 * forward on a finer grid). Nobody else includes it.
 */
#ifndef VKINR_NN_RECORDER_H
#define VKINR_NN_RECORDER_H

#include <stdint.h>

#include "gpu/gpu.h"
#include "nn/fit_internal.h"
#include "nn/gemm.h"
#include "nn/passes.h"
#include "nn/variants.h"

/* One program being recorded for fit: the choices it records (fit->vars,
 * or fit->vars32 for an exact render), the pipelines of those choices
 * (nn_record_pipelines), and the first error (rc), after which nothing
 * more is recorded. */
struct recorder {
	struct nn_fit *fit;
	struct gpu_program *prog;
	int last_ts;
	int rc;
	/* an fp32 forward of an fp16 fit (its exact render), whose S_k go
	 * fp32 through g (Z through z) */
	int exact32;
	struct nn_variants v;
	struct gpu_pipeline *to_f16;
	struct gpu_pipeline *first, *activate, *dwconv, *dwconv_back, *head,
	    *head_render, *reduce_sum, *reduce_dw, *reduce_first, *reduce_out,
	    *reduce, *gemm_nn, *gemm_tn, *gemm_nt;
	/* NN_DW_TILED: the forward by blocks through shared memory */
	struct gpu_pipeline *dwconv_tiled;
	/* NN_DW_STRIPS: the backward conv and its taps' sums in one pass,
	 * and the forward two columns an invocation where the pairs align
	 * (dwconv_pair.comp): [0] for any tile, [1] for tiles up to
	 * DW_SMALL_MAX columns (workgroups of 16 x 4, record.h) */
	struct dw_strip_pipes {
		struct gpu_pipeline *strip, *strip_copy, *strip_in, *back;
		struct gpu_pipeline *pair, *pair_copy, *pair_in;
	} dws[2];
	/* v.half_s: the forward convs copy S_k as they read it (fp32, from
	 * z), the backward passes read the copies */
	struct gpu_pipeline *dwconv_copy, *dwconv_tiled_copy, *dwconv_in,
	    *dwconv_tiled_in;
	/* NN_DW_ROWS, NN_DW_ROW_BLOCKS: one pipeline a block (the dilation
	 * is a specialization constant) */
	struct gpu_pipeline *dwconv_rows[NN_MAX_BLOCKS],
	    *dwconv_back_rows[NN_MAX_BLOCKS];
	/* loss terms besides the MSE: the head in halves around loss.comp */
	int has_loss_terms;
	struct gpu_pipeline *head_predict, *loss_terms_pass, *loss_grad_pass,
	    *head_back;
};

/* Sets r->v and builds the pipelines it calls for. */
int nn_record_pipelines(struct recorder *r);
/* Starts recording r into a new program *out (timestamps: how many). */
int nn_record_begin(struct recorder *r, int timestamps,
		    struct gpu_program **out);
/* Ends a stage: a barrier, then a timestamp; the time since the previous
 * timestamp is charged to pass. */
void nn_record_stage_end(struct recorder *r, enum nn_pass pass);
/* The tile geometry of tile t's passes. */
struct pass_tile nn_record_tile_push(const struct nn_fit *fit,
				     const struct tile *t);
/* Records pipe over up to six buffers (NULL ends the list). */
void nn_record_dispatch(
    struct recorder *r, struct gpu_pipeline *pipe, const struct gpu_buffer *b0,
    const struct gpu_buffer *b1, const struct gpu_buffer *b2,
    const struct gpu_buffer *b3, const struct gpu_buffer *b4,
    const struct gpu_buffer *b5, const void *push, uint32_t push_bytes,
    uint32_t gx, uint32_t gy, uint32_t gz);
#define PASS(r, pipe, push, gx, gy, ...)                                       \
	nn_record_dispatch(r, pipe, __VA_ARGS__, &(push), sizeof(push), gx,    \
			   gy, 1)
/* The fp16 copies of the pointwise weights (the fp16 path). */
void nn_record_half_weights(struct recorder *r);
/* The forward of tile t: the first layer, then every block. */
void nn_record_forward(struct recorder *r, const struct tile *t);
/* Where S_B is after the forward. */
const struct gpu_buffer *nn_record_last_s(const struct recorder *r);

#endif
