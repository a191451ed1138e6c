/*
 * record.c - recording a fit's programs: the epoch (every tile forward,
 * head and backward, the gradient summed over tiles, then the optimizer's
 * step from optim.c), once at creation, replayed after; the render
 * programs (record_render.c) replay its forward.
 *
 * The recorder takes the pipelines of the fit's variants (record_pipes.c,
 * nn/variants.h: CPU devices' row passes, GPUs' fused sines and strips,
 * the fp16 tensor-core path, the loss terms) and records the passes in the order
 * fit.c's paragraph describes, with a timestamp between stages for the
 * per-pass times. Used by fit.c alone, on the thread that owns the fit.
 */
#include "nn/record.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "nn/gemm.h"
#include "nn/optim.h"
#include "nn/passes.h"
#include "nn/recorder.h"

/* ------------------------------------------------------- GEMM splits */

int nn_nt_splits(const struct nn_fit *fit, int n)
{
	uint32_t rows, cols;
	gemm_variant_tile(fit->vars.gemm, "nt", &rows, &cols);
	int out_tiles = (int)(div_up((uint64_t)fit->cfg.nf, rows) *
			      div_up((uint64_t)fit->cfg.nf, cols));
	int target = gpu_info(fit->gpu)->is_cpu ? 8 : 1024;
	int splits = (target + out_tiles - 1) / out_tiles;
	int most = (int)div_up((uint64_t)n, 256);
	if (splits > most)
		splits = most;
	return splits < 1 ? 1 : splits;
}

/* ------------------------------------------------------------ recording */

/* Ends a stage: a barrier, then a timestamp; the time since the previous
 * timestamp is charged to pass. */
void nn_record_stage_end(struct recorder *r, enum nn_pass pass)
{
	struct nn_fit *fit = r->fit;
	gpu_program_barrier(r->prog);
	int ts = gpu_program_timestamp(r->prog);
	if (ts >= 0 && r->last_ts >= 0 && fit->nstages < fit->max_stages) {
		fit->stages[fit->nstages++] =
		    (struct stage_time){ r->prog, pass, r->last_ts, ts };
	}
	r->last_ts = ts;
}

struct pass_tile nn_record_tile_push(const struct nn_fit *fit,
				     const struct tile *t)
{
	struct pass_tile p = {
		.img_w = fit->width,
		.img_h = fit->height,
		.tx = t->region.x,
		.ty = t->region.y,
		.tw = t->region.w,
		.th = t->region.h,
		.cx = t->core.x,
		.cy = t->core.y,
		.cw = t->core.w,
		.ch = t->core.h,
		.n = t->region.w * t->region.h,
	};
	return p;
}

static void dispatch7(struct recorder *r, struct gpu_pipeline *pipe,
		      const struct gpu_buffer *const bufs[7], const void *push,
		      uint32_t push_bytes, uint32_t gx, uint32_t gy,
		      uint32_t gz)
{
	int n = 0;
	while (n < 7 && bufs[n])
		n++;
	if (r->rc == 0)
		r->rc = gpu_program_dispatch(r->prog, pipe, bufs, n, push,
					     push_bytes, gx, gy, gz);
}

void nn_record_dispatch(
    struct recorder *r, struct gpu_pipeline *pipe, const struct gpu_buffer *b0,
    const struct gpu_buffer *b1, const struct gpu_buffer *b2,
    const struct gpu_buffer *b3, const struct gpu_buffer *b4,
    const struct gpu_buffer *b5, const void *push, uint32_t push_bytes,
    uint32_t gx, uint32_t gy, uint32_t gz)
{
	const struct gpu_buffer *const bufs[7] = {
		b0, b1, b2, b3, b4, b5, NULL
	};
	dispatch7(r, pipe, bufs, push, push_bytes, gx, gy, gz);
}

/* Adds chunked partial sums into the gradient (reduce.comp). */
static void reduce_into(struct recorder *r, const struct gpu_buffer *part,
			int chunks, int C, int J, int j0, int jcount,
			size_t dst, uint32_t dst_cs, uint32_t dst_js)
{
	struct reduce_push p = {
		.chunks = chunks,
		.j0 = j0,
		.channels = C,
		.taps = J,
		.jcount = jcount,
		.dst = (uint32_t)dst,
		.dst_cs = dst_cs,
		.dst_js = dst_js,
	};
	uint32_t groups = div_up((uint64_t)jcount * C, GROUP);
	uint32_t gy = div_up(groups, 65535);
	uint32_t gx = gy > 1 ? 65535 : groups;
	PASS(r, r->reduce, p, gx, gy, part, &r->fit->grad, NULL, NULL, NULL,
	     NULL);
}

/* Records a GEMM. a_grad / b_grad say which operand is a gradient, to be
 * loss-scaled on the fp16 path. */
static void gemm(struct recorder *r, struct gpu_pipeline *pipe,
		 const struct gpu_buffer *a, const struct gpu_buffer *b,
		 const struct gpu_buffer *c, struct gemm_push g,
		 uint32_t splits, int a_grad, int b_grad)
{
	float scale = r->v.half ? r->fit->grad_scale : 1.0f;
	g.a_scale = a_grad ? scale : 1.0f;
	g.b_scale = b_grad ? scale : 1.0f;
	g.out_scale = 1.0f / (g.a_scale * g.b_scale);
	uint32_t rows, cols;
	gemm_variant_tile(r->v.gemm, pipe == r->gemm_nt ? "nt" : "nn", &rows,
			  &cols);
	uint32_t gx = div_up(g.N, cols);
	uint32_t gy = div_up(g.M, rows);
	nn_record_dispatch(r, pipe, a, b, c, &r->fit->params, NULL, NULL, &g,
			   sizeof(g), gx, gy, splits);
}

static uint32_t padded(uint32_t n) { return (n + 15) / 16 * 16; }

/* The fp16 copies of the pointwise weights, for the tensor-core GEMMs. */
void nn_record_half_weights(struct recorder *r)
{
	struct nn_fit *fit = r->fit;
	uint32_t nn = (uint32_t)(fit->cfg.nf * fit->cfg.nf);
	if (!r->v.half)
		return;
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		struct to_f16_push p = { .n = (int)nn,
					 .src = (uint32_t)fit->layout.pw_w[k],
					 .dst = (uint32_t)k * nn };
		PASS(r, r->to_f16, p, div_up(nn, GROUP), 1, &fit->params,
		     &fit->p16, NULL, NULL, NULL, NULL);
	}
	nn_record_stage_end(r, NN_PASS_FIRST); /* timed with the first layer */
}

/* h = act(s) over a tile's activations, n pixels. */
static void record_activate(struct recorder *r, uint32_t n,
			    const struct gpu_buffer *s,
			    const struct gpu_buffer *h)
{
	uint32_t nf = (uint32_t)r->fit->cfg.nf;
	struct activate_push p = { .n = (int)n };
	if (r->v.cpu) { /* vec4s of the flat buffer, rows of 65535 groups */
		uint64_t count = (uint64_t)nf * n / 4;
		uint32_t groups = div_up(count, GROUP);
		uint32_t gy = div_up(groups, 65535);
		p.count = (int)count;
		PASS(r, r->activate, p, gy > 1 ? 65535 : groups, gy, s, h, NULL,
		     NULL, NULL, NULL);
	} else {
		PASS(r, r->activate, p, div_up(n, GROUP), nf, s, h, NULL, NULL,
		     NULL, NULL);
	}
	nn_record_stage_end(r, NN_PASS_ACTIVATE);
}

/* How a depthwise pass finds S_k: as it is (fp32, or the activation h on
 * CPU devices), fp32 while writing its fp16 copy to s[k] (the fp16
 * path's forward), or that copy (its backward). */
enum s_form { S_AS_IS, S_COPY, S_HALF };

/* A depthwise family's variant for how it finds S_k. */
static struct gpu_pipeline *by_form(enum s_form form, struct gpu_pipeline *copy,
				    struct gpu_pipeline *in,
				    struct gpu_pipeline *as_is)
{
	return form == S_COPY ? copy : form == S_HALF ? in : as_is;
}

/* The push block of block k's depthwise passes over a tile: its taps,
 * its dilation, the fp16 rows' length, the loss scale. */
static struct dw_push block_dw_push(const struct nn_fit *fit,
				    struct pass_tile tile, int k)
{
	struct dw_push p = {
		.tile = tile,
		.dil = fit->cfg.dilations[k],
		.w_off = (uint32_t)fit->layout.dw[k],
		.half_row = (int)padded((uint32_t)tile.n),
		.grad_scale = fit->grad_scale,
	};
	return p;
}

/* Z = the depthwise conv of block k over h = act(S_k). */
static void record_dwconv(struct recorder *r, struct pass_tile tile, int k,
			  const struct gpu_buffer *h, enum s_form form)
{
	struct nn_fit *fit = r->fit;
	uint32_t nf = (uint32_t)fit->cfg.nf, n = (uint32_t)tile.n;
	const struct gpu_buffer *out = r->v.half ? &fit->z16 : &fit->z;
	const struct gpu_buffer *copy = form == S_COPY ? &fit->s[k] : NULL;
	struct dw_push p = block_dw_push(fit, tile, k);
	if ((r->v.dw == NN_DW_STRIPS)) {
		/* two columns an invocation where the pairs align */
		int pairs = r->v.pairs && p.tile.tw % 2 == 0 &&
			    (p.dil == 1 || p.dil % 2 == 0);
		const struct dw_strip_pipes *d = &r->dws[dw_small(p.tile.tw)];
		struct gpu_pipeline *pipe =
		    pairs ? by_form(form, d->pair_copy, d->pair_in, d->pair)
			  : by_form(form, d->strip_copy, d->strip_in, d->strip);
		nn_record_dispatch(
		    r, pipe, &fit->params, h, out, copy, NULL, NULL, &p,
		    sizeof(p),
		    div_up((uint64_t)p.tile.tw / (pairs ? 2 : 1),
			   dw_group_x(p.tile.tw)),
		    div_up(dw_strips(p.tile.th, p.dil), dw_group_y(p.tile.tw)),
		    nf);
	} else if (nn_variants_rows(&r->v)) {
		p.segments = (int)row_segments(p.tile.tw);
		uint64_t units =
		    (r->v.dw == NN_DW_ROW_BLOCKS)
			? row_block_units(p.tile.tw, p.tile.th, p.dil)
			: (uint64_t)p.segments * (uint64_t)p.tile.th;
		PASS(r, r->dwconv_rows[k], p, div_up(units, ROW_GROUP), nf,
		     &fit->params, h, &fit->z, NULL, NULL, NULL);
	} else if ((r->v.dw == NN_DW_TILED) && p.dil <= DW_TILED_MAX_DIL) {
		struct gpu_pipeline *pipe =
		    by_form(form, r->dwconv_tiled_copy, r->dwconv_tiled_in,
			    r->dwconv_tiled);
		nn_record_dispatch(r, pipe, &fit->params, h, out, copy, NULL,
				   NULL, &p, sizeof(p),
				   div_up((uint64_t)p.tile.tw, DW_BLOCK_X),
				   div_up((uint64_t)p.tile.th, DW_BLOCK_Y), nf);
	} else {
		struct gpu_pipeline *pipe =
		    by_form(form, r->dwconv_copy, r->dwconv_in, r->dwconv);
		PASS(r, pipe, p, div_up(r->v.half ? padded(n) : n, GROUP), nf,
		     &fit->params, h, out, copy, NULL, NULL);
	}
	nn_record_stage_end(r, NN_PASS_DWCONV);
}

/* Where S_k is in the forward: s[k], or g in an exact render. */
static const struct gpu_buffer *s_at(const struct recorder *r, int k)
{
	return r->exact32 ? &r->fit->g : &r->fit->s[k];
}

/* Where S_B is after the forward: s[B], or z on the fp16 path with fp16
 * storage (read by the head and the out_w sums before z is written). */
const struct gpu_buffer *nn_record_last_s(const struct recorder *r)
{
	return r->v.half_s ? &r->fit->z : s_at(r, r->fit->cfg.nblocks);
}

void nn_record_forward(struct recorder *r, const struct tile *t)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct pass_tile tile = nn_record_tile_push(fit, t);
	uint32_t n = (uint32_t)tile.n, gx = div_up(n, GROUP);
	struct first_push p = { .tile = tile,
				.w_off = (uint32_t)l->first_w,
				.b_off = (uint32_t)l->first_b };
	/* fp16 storage: every S_k comes fp32 through z, and the conv that
	 * reads it keeps its fp16 copy in s[k] */
	int half_s = r->v.half_s;
	PASS(r, r->first, p, gx, nf, &fit->params,
	     half_s ? &fit->z : s_at(r, 0), NULL, NULL, NULL, NULL);
	nn_record_stage_end(r, NN_PASS_FIRST);
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		const struct gpu_buffer *next =
		    half_s ? &fit->z : s_at(r, k + 1);
		if (half_s) {
			record_dwconv(r, tile, k, &fit->z, S_COPY);
		} else if (r->v.fused) {
			record_dwconv(r, tile, k, s_at(r, k), S_AS_IS);
		} else {
			record_activate(r, n, &fit->s[k], &fit->g);
			record_dwconv(r, tile, k, &fit->g, S_AS_IS);
		}
		struct gemm_push g = {
			.M = nf,
			.N = n,
			.K = nf,
			.lda = nf,
			.ldb = n,
			.ldc = n,
			.a_off = (uint32_t)l->pw_w[k],
			.bias_off = (uint32_t)l->pw_b[k],
			.k_chunk = nf,
			.has_bias = 1,
		};
		if (r->v.half) {
			g.a_off = (uint32_t)k * nf * nf;
			g.ldb = padded(n);
			gemm(r, r->gemm_nn, &fit->p16, &fit->z16, next, g, 1, 0,
			     0);
		} else {
			gemm(r, r->gemm_nn, &fit->params, &fit->z, next, g, 1,
			     0, 0);
		}
		nn_record_stage_end(r, NN_PASS_PW_FORWARD);
	}
}

/* The head when the loss has terms besides the MSE: y of every tile pixel
 * (and the core's sse, as the fused head writes it), the terms' sums and
 * SSIM's coefficients, dY of every tile pixel, then dS4 (and its fp16
 * copy) from dY. p and bufs are the fused head's push block and buffers
 * (params, S_B, target, dS, dY, sse, fp16 dS). */
static void record_loss_head(struct recorder *r, struct head_push p,
			     const struct gpu_buffer *const bufs[7])
{
	struct nn_fit *fit = r->fit;
	const struct nn_recipe *recipe = &fit->cfg.recipe;
	const struct gpu_buffer *s4 = bufs[1];
	uint32_t gx = div_up((uint64_t)p.tile.n, GROUP);
	PASS(r, r->head_predict, p, gx, 1, &fit->params, s4, &fit->target,
	     &fit->pred, &fit->dy, &fit->sse);
	gpu_program_barrier(r->prog);
	struct loss_push lp = { .tile = p.tile,
				.sse_base = p.sse_base,
				.w_ssim = (float)recipe->loss_ssim,
				.w_grad = (float)recipe->loss_grad,
				.w_chroma = (float)recipe->loss_chroma };
	PASS(r, r->loss_terms_pass, lp, gx, 1, &fit->pred, &fit->target,
	     &fit->loss_coef, &fit->loss_sums, NULL, NULL);
	gpu_program_barrier(r->prog);
	PASS(r, r->loss_grad_pass, lp, gx, 1, &fit->pred, &fit->target,
	     &fit->loss_coef, &fit->dy, NULL, NULL);
	gpu_program_barrier(r->prog);
	dispatch7(r, r->head_back, bufs, &p, sizeof(p), gx, 1, 1);
}

/* What the backward passes of one tile share: the tile, its pixels (and
 * the padded row of the fp16 path), the workgroups of the per-pixel
 * passes, the chunks of the sums and the weight gradient's k-splits. */
struct tile_back {
	struct pass_tile tile;
	uint32_t n, n_pad, gx, splits, k_chunk;
	int chunks;
};

/* The push block of the pixel sums over a tile, channels channels. */
static struct pixel_sum_push pixel_sum_push(const struct tile_back *b,
					    uint32_t channels)
{
	struct pixel_sum_push p = { .tile = b->tile,
				    .chunk = REDUCE_CHUNK,
				    .channels = (int)channels };
	return p;
}

/* The head: loss, dY, dS of the last layer, then out_w and out_b. */
static void record_head_backward(struct recorder *r, const struct tile_back *b,
				 int sse_base)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	int chunks = b->chunks;
	struct head_push hp = { .tile = b->tile,
				.w_off = (uint32_t)l->out_w,
				.b_off = (uint32_t)l->out_b,
				.sse_base = sse_base,
				.has_target = 1,
				.ds_row = (int)b->n_pad,
				.ds_scale = fit->grad_scale };
	const struct gpu_buffer *head_bufs[7] = {
		&fit->params,
		nn_record_last_s(r),
		&fit->target,
		&fit->g,
		&fit->dy,
		&fit->sse,
		r->v.half ? &fit->g16 : NULL
	};
	if (r->has_loss_terms)
		record_loss_head(r, hp, head_bufs);
	else
		dispatch7(r, r->head, head_bufs, &hp, sizeof(hp), b->gx, 1, 1);
	nn_record_stage_end(r, NN_PASS_HEAD);
	struct pixel_sum_push rp = pixel_sum_push(b, nf);
	PASS(r, r->reduce_out, rp, chunks, nf, &fit->dy, nn_record_last_s(r),
	     &fit->part_b, NULL, NULL, NULL);
	rp.channels = 3;
	PASS(r, r->reduce_sum, rp, chunks, 3, &fit->dy, &fit->dy, &fit->part_a,
	     NULL, NULL, NULL);
	nn_record_stage_end(r, NN_PASS_REDUCE);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 0, 3, l->out_w, 1, nf);
	reduce_into(r, &fit->part_a, chunks, 3, 1, 0, 1, l->out_b, 1, 0);
	nn_record_stage_end(r, NN_PASS_REDUCE);
}

/* Block k's pointwise layer: the weight gradient (split K) and the bias
 * sums, then the data gradient dZ (into z). */
static void record_pw_backward(struct recorder *r, const struct tile_back *b,
			       int k)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf, n = b->n;
	struct gemm_push gw = {
		.M = nf,
		.N = nf,
		.K = n,
		.lda = n,
		.ldb = n,
		.ldc = nf,
		.k_chunk = b->k_chunk,
	};
	if (r->v.half) {
		gw.K = gw.lda = gw.ldb = b->n_pad;
		gemm(r, r->gemm_nt, &fit->g16, &fit->z16, &fit->part_a, gw,
		     b->splits, 1, 0);
	} else {
		gemm(r, r->gemm_nt, &fit->g, &fit->z, &fit->part_a, gw,
		     b->splits, 1, 0);
	}
	struct pixel_sum_push rp = pixel_sum_push(b, nf);
	PASS(r, r->reduce_sum, rp, b->chunks, nf, &fit->g, &fit->g,
	     &fit->part_b, NULL, NULL, NULL);
	nn_record_stage_end(r, NN_PASS_PW_GRAD_WEIGHT);
	reduce_into(r, &fit->part_a, (int)b->splits, (int)(nf * nf), 1, 0, 1,
		    l->pw_w[k], 1, 0);
	reduce_into(r, &fit->part_b, b->chunks, (int)nf, 1, 0, 1, l->pw_b[k], 1,
		    0);
	struct gemm_push gd = {
		.M = nf,
		.N = n,
		.K = nf,
		.lda = nf,
		.ldb = n,
		.ldc = n,
		.a_off = (uint32_t)l->pw_w[k],
		.k_chunk = nf,
	};
	if (r->v.half) {
		gd.a_off = (uint32_t)k * nf * nf;
		gd.ldb = b->n_pad;
		gemm(r, r->gemm_tn, &fit->p16, &fit->g16, &fit->z, gd, 1, 0, 1);
	} else {
		gemm(r, r->gemm_tn, &fit->params, &fit->g, &fit->z, gd, 1, 0,
		     1);
	}
	nn_record_stage_end(r, NN_PASS_PW_GRAD_DATA);
}

/* Block k's depthwise conv: dS from dZ, and its taps' sums; h is act(S_k)
 * for the per-pixel sums. */
static void record_dw_backward(struct recorder *r, const struct tile_back *b,
			       int k, const struct gpu_buffer *h)
{
	struct nn_fit *fit = r->fit;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct dw_push p = block_dw_push(fit, b->tile, k);
	int tw = p.tile.tw, th = p.tile.th;
	int dw_chunks = b->chunks;
	if (nn_variants_rows(&r->v)) { /* dS and the taps' sums in one pass */
		struct dw_push bp = p;
		bp.chunk = ROW_CHUNK;
		bp.channels = (int)nf;
		bp.segments = (int)row_segments(tw);
		dw_chunks = (int)row_chunks(tw, th);
		if (r->v.dw ==
		    NN_DW_ROW_BLOCKS) /* the same chunks, of blocks */
			bp.chunk = (int)div_up(row_block_units(tw, th, p.dil),
					       (uint64_t)dw_chunks);
		PASS(r, r->dwconv_back_rows[k], bp, dw_chunks, nf, &fit->params,
		     &fit->s[k], &fit->z, &fit->g, &fit->part_b, NULL);
	} else if (r->v.dw == NN_DW_STRIPS) {
		/* the same, by strips: params, S, dZ, then dS in fp32 and
		 * (fp16 path) fp16, then the sums */
		dw_chunks = (int)dw_strip_chunks(tw, th, p.dil);
		const struct gpu_buffer *bufs[7] = { &fit->params, &fit->s[k],
						     &fit->z, &fit->g };
		int nbufs = 4;
		if (r->v.half)
			bufs[nbufs++] = &fit->g16;
		bufs[nbufs] = &fit->part_b;
		dispatch7(r, r->dws[dw_small(tw)].back, bufs, &p, sizeof(p),
			  div_up((uint64_t)tw, dw_group_x(tw)),
			  div_up(dw_strips(th, p.dil), dw_group_y(tw)), nf);
	} else {
		struct pixel_sum_push rp = pixel_sum_push(b, nf);
		rp.dil = p.dil;
		PASS(r, r->reduce_dw, rp, b->chunks, nf, &fit->z, h,
		     &fit->part_b, NULL, NULL, NULL);
		PASS(r, r->dwconv_back, p, b->gx, nf, &fit->params, &fit->s[k],
		     &fit->z, &fit->g, r->v.half ? &fit->g16 : NULL, NULL);
	}
	nn_record_stage_end(r, NN_PASS_DWCONV_BACK);
	reduce_into(r, &fit->part_b, dw_chunks, (int)nf, 9, 0, 9,
		    fit->layout.dw[k], 9, 1);
	nn_record_stage_end(r, NN_PASS_REDUCE);
}

/* The first layer's weights and biases from dS_0. */
static void record_first_backward(struct recorder *r, const struct tile_back *b)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	int chunks = b->chunks;
	struct pixel_sum_push rp = pixel_sum_push(b, nf);
	rp.x_row = (int)b->n_pad;
	rp.x_scale = fit->grad_scale;
	PASS(r, r->reduce_first, rp, chunks, nf, &fit->g, &fit->g, &fit->part_b,
	     NULL, NULL, NULL);
	nn_record_stage_end(r, NN_PASS_REDUCE);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 0, 2, l->first_w, 2,
		    1);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 2, 1, l->first_b, 1,
		    0);
	nn_record_stage_end(r, NN_PASS_REDUCE);
}

static void record_tile_backward(struct recorder *r, const struct tile *t,
				 int sse_base)
{
	struct nn_fit *fit = r->fit;
	int nb = fit->cfg.nblocks;
	struct tile_back b = { .tile = nn_record_tile_push(fit, t) };
	b.n = (uint32_t)b.tile.n;
	b.gx = div_up(b.n, GROUP);
	b.chunks = (int)div_up(b.n, REDUCE_CHUNK);
	uint32_t splits = (uint32_t)nn_nt_splits(fit, (int)b.n);
	uint32_t k_step = fit->vars.gemm->k_step;
	b.k_chunk = div_up(div_up(b.n, splits), k_step) * k_step;
	b.splits = div_up(b.n, b.k_chunk);
	/* the fp16 path runs K over the padded row: ceil(n_pad / k_chunk) is
	 * the same number of splits, as k_chunk is a multiple of 16 */
	b.n_pad = padded(b.n);

	record_head_backward(r, &b, sse_base);
	for (int k = nb - 1; k >= 0; k--) {
		/* h = act(S_k) feeds Z's recompute and, per pixel, reduce_dw
		 * (s[nb] is free after the head); the row passes of the last
		 * block need neither, and the fused passes read S_k itself */
		const struct gpu_buffer *h =
		    r->v.fused ? &fit->s[k] : &fit->s[nb];
		if (!r->v.fused && (!nn_variants_rows(&r->v) || k != nb - 1))
			record_activate(r, b.n, &fit->s[k], h);
		if (k != nb - 1) /* Z of the last block is still there */
			record_dwconv(r, b.tile, k, h,
				      r->v.half_s ? S_HALF : S_AS_IS);
		record_pw_backward(r, &b, k);
		record_dw_backward(r, &b, k, h);
	}
	record_first_backward(r, &b);
}

int nn_record_begin(struct recorder *r, int timestamps,
		    struct gpu_program **out)
{
	int rc = gpu_program_create(r->fit->gpu, timestamps, out);
	r->prog = *out;
	r->rc = rc;
	r->last_ts = rc ? -1 : gpu_program_timestamp(r->prog);
	return rc;
}

static int stage_budget(const struct nn_fit *fit)
{
	return fit->plan.count * (8 * fit->cfg.nblocks + 16) + 8;
}

int nn_record_epoch(struct nn_fit *fit)
{
	struct recorder r = { .fit = fit };
	int rc = nn_record_pipelines(&r);
	if (rc)
		return rc;
	fit->max_stages = stage_budget(fit) + 4;
	fit->stages = calloc((size_t)fit->max_stages, sizeof(*fit->stages));
	if (!fit->stages)
		return ERR_NOMEM;

	rc = nn_record_begin(&r, fit->max_stages + 1, &fit->epoch_prog);
	nn_record_half_weights(&r);
	int sse_base = 0;
	for (int i = 0; rc == 0 && i < fit->plan.count; i++) {
		const struct tile *t = &fit->plan.tiles[i];
		nn_record_forward(&r, t);
		record_tile_backward(&r, t, sse_base);
		sse_base +=
		    (int)div_up((uint64_t)t->region.w * t->region.h, GROUP);
	}
	rc = rc ? rc : r.rc;
	rc = rc ? rc : gpu_program_end(fit->epoch_prog);
	if (rc)
		return rc;

	return nn_optim_record(fit);
}
