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

struct pass_push nn_record_tile_push(const struct nn_fit *fit,
				     const struct tile *t)
{
	struct pass_push p = {
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
	struct pass_push p = {
		.n = chunks,
		.i0 = j0,
		.i1 = C,
		.i2 = J,
		.i3 = jcount,
		.off0 = (uint32_t)dst,
		.off1 = dst_cs,
		.off2 = dst_js,
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
		struct pass_push p = { .n = (int)nn,
				       .off0 = (uint32_t)fit->layout.pw_w[k],
				       .off1 = (uint32_t)k * nn };
		PASS(r, r->to_f16, p, div_up(nn, GROUP), 1, &fit->params,
		     &fit->p16, NULL, NULL, NULL, NULL);
	}
	nn_record_stage_end(r, NN_PASS_FIRST); /* timed with the first layer */
}

/* h = act(s) over a tile's activations. */
static void record_activate(struct recorder *r, struct pass_push p,
			    const struct gpu_buffer *s,
			    const struct gpu_buffer *h)
{
	uint32_t nf = (uint32_t)r->fit->cfg.nf, n = (uint32_t)p.n;
	if (r->v.cpu) { /* vec4s of the flat buffer, rows of 65535 groups */
		uint64_t count = (uint64_t)nf * n / 4;
		uint32_t groups = div_up(count, GROUP);
		uint32_t gy = div_up(groups, 65535);
		p.i0 = (int)count;
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

/* Z = the depthwise conv of block k over h = act(S_k). */
static void record_dwconv(struct recorder *r, struct pass_push p, int k,
			  const struct gpu_buffer *h, enum s_form form)
{
	struct nn_fit *fit = r->fit;
	uint32_t nf = (uint32_t)fit->cfg.nf, n = (uint32_t)p.n;
	const struct gpu_buffer *out = r->v.half ? &fit->z16 : &fit->z;
	const struct gpu_buffer *copy = form == S_COPY ? &fit->s[k] : NULL;
	p.off0 = (uint32_t)fit->layout.dw[k];
	p.dil = fit->cfg.dilations[k];
	p.i3 = (int)padded(n);
	if ((r->v.dw == NN_DW_STRIPS)) {
		/* two columns an invocation where the pairs align */
		int pairs = r->v.pairs && p.tw % 2 == 0 &&
			    (p.dil == 1 || p.dil % 2 == 0);
		const struct dw_strip_pipes *d = &r->dws[dw_small(p.tw)];
		struct gpu_pipeline *pipe =
		    pairs ? by_form(form, d->pair_copy, d->pair_in, d->pair)
			  : by_form(form, d->strip_copy, d->strip_in, d->strip);
		nn_record_dispatch(
		    r, pipe, &fit->params, h, out, copy, NULL, NULL, &p,
		    sizeof(p),
		    div_up((uint64_t)p.tw / (pairs ? 2 : 1), dw_group_x(p.tw)),
		    div_up(dw_strips(p.th, p.dil), dw_group_y(p.tw)), nf);
	} else if (nn_variants_rows(&r->v)) {
		p.i2 = (int)row_segments(p.tw);
		uint64_t units = (r->v.dw == NN_DW_ROW_BLOCKS)
				     ? row_block_units(p.tw, p.th, p.dil)
				     : (uint64_t)p.i2 * (uint64_t)p.th;
		PASS(r, r->dwconv_rows[k], p, div_up(units, ROW_GROUP), nf,
		     &fit->params, h, &fit->z, NULL, NULL, NULL);
	} else if ((r->v.dw == NN_DW_TILED) && p.dil <= DW_TILED_MAX_DIL) {
		struct gpu_pipeline *pipe =
		    by_form(form, r->dwconv_tiled_copy, r->dwconv_tiled_in,
			    r->dwconv_tiled);
		nn_record_dispatch(r, pipe, &fit->params, h, out, copy, NULL,
				   NULL, &p, sizeof(p),
				   div_up((uint64_t)p.tw, DW_BLOCK_X),
				   div_up((uint64_t)p.th, DW_BLOCK_Y), nf);
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
	struct pass_push p = nn_record_tile_push(fit, t);
	uint32_t n = (uint32_t)p.n, gx = div_up(n, GROUP);

	p.off0 = (uint32_t)l->first_w;
	p.off1 = (uint32_t)l->first_b;
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
			record_dwconv(r, p, k, &fit->z, S_COPY);
		} else if (r->v.fused) {
			record_dwconv(r, p, k, s_at(r, k), S_AS_IS);
		} else {
			record_activate(r, p, &fit->s[k], &fit->g);
			record_dwconv(r, p, k, &fit->g, S_AS_IS);
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
static void record_loss_head(struct recorder *r, struct pass_push p,
			     const struct gpu_buffer *const bufs[7])
{
	struct nn_fit *fit = r->fit;
	const struct nn_recipe *recipe = &fit->cfg.recipe;
	const struct gpu_buffer *s4 = bufs[1];
	uint32_t gx = div_up((uint64_t)p.n, GROUP);
	PASS(r, r->head_predict, p, gx, 1, &fit->params, s4, &fit->target,
	     &fit->pred, &fit->dy, &fit->sse);
	gpu_program_barrier(r->prog);
	struct pass_push lp = p;
	lp.off0 = float_bits((float)recipe->loss_ssim);
	lp.off1 = float_bits((float)recipe->loss_grad);
	lp.off2 = float_bits((float)recipe->loss_chroma);
	PASS(r, r->loss_terms_pass, lp, gx, 1, &fit->pred, &fit->target,
	     &fit->loss_coef, &fit->loss_sums, NULL, NULL);
	gpu_program_barrier(r->prog);
	PASS(r, r->loss_grad_pass, lp, gx, 1, &fit->pred, &fit->target,
	     &fit->loss_coef, &fit->dy, NULL, NULL);
	gpu_program_barrier(r->prog);
	dispatch7(r, r->head_back, bufs, &p, sizeof(p), gx, 1, 1);
}

/* What the backward passes of one tile share: the push block (its
 * fields carried from pass to pass as the backward sets them), the
 * pixels (and the padded row of the fp16 path), the workgroups of the
 * per-pixel passes, the chunks of the sums and the weight gradient's
 * k-splits. */
struct tile_back {
	struct pass_push p;
	uint32_t n, n_pad, gx, splits, k_chunk;
	int chunks;
};

/* The head: loss, dY, dS of the last layer, then out_w and out_b. */
static void record_head_backward(struct recorder *r, struct tile_back *b,
				 int sse_base)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct pass_push *p = &b->p;
	int chunks = b->chunks;
	p->off0 = (uint32_t)l->out_w;
	p->off1 = (uint32_t)l->out_b;
	p->i0 = sse_base;
	p->i1 = 1;
	p->i2 = (int)b->n_pad;
	p->off2 = float_bits(fit->grad_scale);
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
		record_loss_head(r, *p, head_bufs);
	else
		dispatch7(r, r->head, head_bufs, p, sizeof(*p), b->gx, 1, 1);
	nn_record_stage_end(r, NN_PASS_HEAD);
	p->i2 = 0;
	p->off2 = 0;
	struct pass_push rp = *p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
	PASS(r, r->reduce_out, rp, chunks, nf, &fit->dy, nn_record_last_s(r),
	     &fit->part_b, NULL, NULL, NULL);
	rp.i1 = 3;
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
	struct pass_push rp = b->p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
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
	struct pass_push p = b->p;
	int dw_chunks = b->chunks;
	if (nn_variants_rows(&r->v)) { /* dS and the taps' sums in one pass */
		struct pass_push bp = p;
		bp.i0 = ROW_CHUNK;
		bp.i1 = (int)nf;
		bp.i2 = (int)row_segments(p.tw);
		dw_chunks = (int)row_chunks(p.tw, p.th);
		if (r->v.dw ==
		    NN_DW_ROW_BLOCKS) /* the same chunks, of blocks */
			bp.i0 = (int)div_up(row_block_units(p.tw, p.th, p.dil),
					    (uint64_t)dw_chunks);
		PASS(r, r->dwconv_back_rows[k], bp, dw_chunks, nf, &fit->params,
		     &fit->s[k], &fit->z, &fit->g, &fit->part_b, NULL);
	} else if (r->v.dw == NN_DW_STRIPS) {
		/* the same, by strips: params, S, dZ, then dS in fp32 and
		 * (fp16 path) fp16, then the sums */
		dw_chunks = (int)dw_strip_chunks(p.tw, p.th, p.dil);
		const struct gpu_buffer *bufs[7] = { &fit->params, &fit->s[k],
						     &fit->z, &fit->g };
		int nbufs = 4;
		if (r->v.half)
			bufs[nbufs++] = &fit->g16;
		bufs[nbufs] = &fit->part_b;
		dispatch7(r, r->dws[dw_small(p.tw)].back, bufs, &p, sizeof(p),
			  div_up((uint64_t)p.tw, dw_group_x(p.tw)),
			  div_up(dw_strips(p.th, p.dil), dw_group_y(p.tw)), nf);
	} else {
		struct pass_push rp = p;
		rp.i0 = REDUCE_CHUNK;
		rp.i1 = (int)nf;
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
	struct pass_push rp = b->p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
	rp.i3 = (int)b->n_pad;
	rp.off3 = float_bits(fit->grad_scale);
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
	struct tile_back b = { .p = nn_record_tile_push(fit, t) };
	struct pass_push *p = &b.p;
	b.n = (uint32_t)p->n;
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
			record_activate(r, *p, &fit->s[k], h);
		p->dil = fit->cfg.dilations[k];
		p->off0 = (uint32_t)fit->layout.dw[k];
		p->i3 = (int)b.n_pad;
		p->off3 = float_bits(fit->grad_scale);
		if (k != nb - 1) /* Z of the last block is still there */
			record_dwconv(r, *p, k, h,
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
