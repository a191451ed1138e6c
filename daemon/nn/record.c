/*
 * record.c - recording a fit's programs: the epoch (every tile forward,
 * head and backward, the gradient summed over tiles, then the optimizer's
 * step from optim.c), once at creation, replayed after; the render
 * programs (record_render.c) replay its forward.
 *
 * The recorder looks up the pipelines the device and precision call for
 * (CPU devices' row passes, GPUs' fused sines and tiled convs, the fp16
 * tensor-core path, the loss terms) and records the passes in the order
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

/* ------------------------------------------------------ pass families */

/* CPU devices get the passes written for them (subgroup sums, the
 * depthwise conv by row segments); VKINR_PASSES=cpu|gpu overrides, so that
 * the tests check both families on any device. */
int nn_use_cpu_passes(const struct gpu_context *gpu)
{
	const char *env = getenv("VKINR_PASSES");
	if (env && !strcmp(env, "cpu"))
		return 1;
	if (env && !strcmp(env, "gpu"))
		return 0;
	return gpu_info(gpu)->is_cpu;
}

/* GPUs read S in the depthwise passes and take the sines there, which
 * saves the activate pass's read and write of every activation;
 * VKINR_FUSED_SINE=0 keeps that pass, to compare. */
int nn_use_fused_sines(const struct gpu_context *gpu)
{
	return !nn_use_cpu_passes(gpu) && !nn_env_is("VKINR_FUSED_SINE", "0");
}

/* GPUs with the fused sines do the depthwise passes by strips
 * (dwconv_strip.comp), the backward's two in one; VKINR_DW_STRIP=0 keeps
 * the per-pixel and block passes, to compare. */
int nn_use_strip_passes(const struct gpu_context *gpu)
{
	return nn_use_fused_sines(gpu) && !nn_env_is("VKINR_DW_STRIP", "0");
}

int nn_nt_splits(const struct nn_fit *fit, int n)
{
	uint32_t rows, cols;
	gemm_variant_tile(fit->gemm, "nt", &rows, &cols);
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

/* The loss terms' pipelines, when the recipe has any (record_loss_head). */
static int get_loss_pipelines(struct recorder *r, const uint32_t spec[2])
{
	struct gpu_context *gpu = r->fit->gpu;
	uint32_t pass = sizeof(struct pass_push);
	int rc = 0;
	r->has_loss_terms = nn_loss_has_terms(&r->fit->cfg.recipe);
	if (!r->has_loss_terms)
		return 0;
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "head_predict", 6, pass, spec, 2,
				   &r->head_predict);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "loss_terms", 4, pass, spec, 2,
				   &r->loss_terms_pass);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "loss_grad", 4, pass, spec, 2,
				   &r->loss_grad_pass);
	const char *back = r->half ? "head_back_f16" : "head_back";
	rc = rc ? rc
		: gpu_pipeline_get(gpu, back, r->half ? 7 : 6, pass, spec, 2,
				   &r->head_back);
	return rc;
}

int get_pipelines(struct recorder *r)
{
	struct gpu_context *gpu = r->fit->gpu;
	float w0 = r->fit->cfg.w0;
	uint32_t spec[2] = { (uint32_t)r->fit->cfg.nf, 0 };
	memcpy(&spec[1], &w0, 4);
	uint32_t pass = sizeof(struct pass_push),
		 gemm = sizeof(struct gemm_push);
	int rc = 0;
#define GET(field, name, nb, push, ns)                                         \
	rc = rc ? rc                                                           \
		: gpu_pipeline_get(gpu, name, nb, push, spec, ns, &r->field)
	r->cpu = nn_use_cpu_passes(gpu);
	GET(first, "first", 2, pass, 2);
	GET(activate, r->cpu ? "activate_vec4" : "activate", 2, pass, 2);
	r->half = r->fit->precision == NN_PRECISION_FP16 && !r->exact32;
	r->half_s = r->fit->half_storage && !r->exact32;
	r->gemm = r->exact32 ? r->fit->gemm32 : r->fit->gemm;
	if (r->half) {
		GET(to_f16, "to_f16", 2, pass, 2);
		GET(dwconv, "dwconv_f16", 3, pass, 2);
		GET(dwconv_back, "dwconv_back_f16", 5, pass, 2);
		GET(head, "head_f16", 7, pass, 2);
	} else {
		GET(dwconv, "dwconv", 3, pass, 2);
		GET(dwconv_back, "dwconv_back", 4, pass, 2);
		GET(head, "head", 6, pass, 2);
	}
	GET(head_render, "head_render", 6, pass, 2);
	/* CPU devices sum pixels with subgroup operations (see pixel_reduce) */
	int cpu = r->cpu;
	GET(reduce_sum, cpu ? "reduce_sum_cpu" : "reduce_sum", 3, pass, 2);
	GET(reduce_dw, cpu ? "reduce_dw_cpu" : "reduce_dw", 3, pass, 2);
	GET(reduce_first, cpu ? "reduce_first_cpu" : "reduce_first", 3, pass,
	    2);
	GET(reduce_out, cpu ? "reduce_out_cpu" : "reduce_out", 3, pass, 2);
	/* and do the depthwise conv by row segments (see dwconv_rows.comp) */
	r->rows = r->cpu && !r->half;
	/* by blocks of rows, half the loads (VKINR_DW_ROWS=1: by rows) */
	r->row_blocks = r->rows && !nn_env_is("VKINR_DW_ROWS", "1");
	for (int k = 0; r->rows && k < r->fit->cfg.nblocks; k++) {
		uint32_t rspec[3] = { spec[0], spec[1],
				      (uint32_t)r->fit->cfg.dilations[k] };
		rc = rc ? rc
			: gpu_pipeline_get(gpu,
					   r->row_blocks ? "dwconv_blocks_cpu"
							 : "dwconv_rows",
					   3, pass, rspec, 3,
					   &r->dwconv_rows[k]);
		rc = rc ? rc
			: gpu_pipeline_get(
			      gpu,
			      r->row_blocks ? "dwconv_back_blocks_cpu"
					    : "dwconv_back_rows",
			      5, pass, rspec, 3, &r->dwconv_back_rows[k]);
	}
	r->fused = nn_use_fused_sines(gpu);
	r->fit->fused_sines = r->fused;
	r->fit->row_passes = r->rows;
	if (r->fused) {
		GET(dwconv, r->half ? "dwconv_s_f16" : "dwconv_s", 3, pass, 2);
		GET(reduce_dw, "reduce_dw_s", 3, pass, 2);
	}
	if (r->half_s) {
		GET(dwconv_copy, "dwconv_s_f16_copy", 4, pass, 2);
		GET(dwconv_in, "dwconv_s_f16_in", 3, pass, 2);
		GET(dwconv_back, "dwconv_back_f16_in", 5, pass, 2);
		GET(reduce_dw, "reduce_dw_s_in", 3, pass, 2);
	}
	/* and the fp32 path's forward conv, for dilations that fit, by blocks
	 * (VKINR_DW_TILED=0: not, =1: the fp16 path's too). On the H200 that
	 * took the fp32 forward convs from 6.2 to 5.3 ms an epoch; the fp16
	 * path's, which also write S's fp16 copy, took 7.0 ms by blocks and
	 * 6.5 per pixel; the backward by blocks was slower than per pixel (7.9
	 * against 7.4 ms), so it stays per pixel. */
	r->tiled = r->fused && !nn_env_is("VKINR_DW_TILED", "0") &&
		   (!r->half_s || nn_env_is("VKINR_DW_TILED", "1"));
	if (r->tiled)
		GET(dwconv_tiled,
		    r->half ? "dwconv_tiled_s_f16" : "dwconv_tiled_s", 3, pass,
		    2);
	if (r->tiled && r->half_s) {
		GET(dwconv_tiled_copy, "dwconv_tiled_s_f16_copy", 4, pass, 2);
		GET(dwconv_tiled_in, "dwconv_tiled_s_f16_in", 3, pass, 2);
	}
	r->strips = nn_use_strip_passes(gpu);
	r->pairs = r->strips && !nn_env_is("VKINR_DW_PAIR", "0");
	for (int i = 0; r->strips && i < 2; i++) {
		struct dw_strip_pipes *d = &r->dws[i];
		const char *x = i ? "_x16" : "";
		char name[64];
#define GET_DW(field, base, nb)                                                \
	snprintf(name, sizeof(name), "%s%s", base, x);                         \
	rc = rc ? rc : gpu_pipeline_get(gpu, name, nb, pass, spec, 2, &(field))
		if (r->half_s) {
			GET_DW(d->strip_copy, "dwconv_strip_s_f16_copy", 4);
			GET_DW(d->strip_in, "dwconv_strip_s_f16_in", 3);
			GET_DW(d->back, "dwconv_back_strip_f16_in", 6);
		} else {
			GET_DW(d->strip,
			       r->half ? "dwconv_strip_s_f16"
				       : "dwconv_strip_s",
			       3);
			GET_DW(d->back,
			       r->half ? "dwconv_back_strip_f16"
				       : "dwconv_back_strip",
			       r->half ? 6 : 5);
		}
		if (r->pairs && r->half_s) {
			GET_DW(d->pair_copy, "dwconv_pair_s_f16_copy", 4);
			GET_DW(d->pair_in, "dwconv_pair_s_f16_in", 3);
		} else if (r->pairs) {
			GET_DW(d->pair,
			       r->half ? "dwconv_pair_s_f16" : "dwconv_pair_s",
			       3);
		}
#undef GET_DW
	}
	GET(reduce, "reduce", 2, pass, 2);
	char nn[32], tn[32], nt[32];
	gemm_shader_name(r->gemm, "nn", nn, sizeof(nn));
	gemm_shader_name(r->gemm, "tn", tn, sizeof(tn));
	gemm_shader_name(r->gemm, "nt", nt, sizeof(nt));
	GET(gemm_nn, nn, 4, gemm, 0);
	GET(gemm_tn, tn, 4, gemm, 0);
	GET(gemm_nt, nt, 4, gemm, 0);
	r->phase_out = r->half_s && r->fit->phase_out;
	if (r->phase_out) {
		char nnp[32];
		gemm_shader_name(r->gemm, "nnp", nnp, sizeof(nnp));
		GET(gemm_nnp, nnp, 4, gemm, 2);
		GET(first_phase, "first_phase", 2, pass, 2);
	}
#undef GET
	return rc ? rc : get_loss_pipelines(r, spec);
}

/* Ends a stage: a barrier, then a timestamp; the time since the previous
 * timestamp is charged to pass. */
void stage_end(struct recorder *r, enum nn_pass pass)
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

struct pass_push tile_push(const struct nn_fit *fit, const struct tile *t)
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

void dispatch(struct recorder *r, struct gpu_pipeline *pipe,
	      const struct gpu_buffer *b0, const struct gpu_buffer *b1,
	      const struct gpu_buffer *b2, const struct gpu_buffer *b3,
	      const struct gpu_buffer *b4, const struct gpu_buffer *b5,
	      const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
	      uint32_t gz)
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
	float scale = r->half ? r->fit->grad_scale : 1.0f;
	g.a_scale = a_grad ? scale : 1.0f;
	g.b_scale = b_grad ? scale : 1.0f;
	g.out_scale = 1.0f / (g.a_scale * g.b_scale);
	uint32_t rows, cols;
	gemm_variant_tile(r->gemm, pipe == r->gemm_nt ? "nt" : "nn", &rows,
			  &cols);
	uint32_t gx = div_up(g.N, cols);
	uint32_t gy = div_up(g.M, rows);
	dispatch(r, pipe, a, b, c, &r->fit->params, NULL, NULL, &g, sizeof(g),
		 gx, gy, splits);
}

static uint32_t padded(uint32_t n) { return (n + 15) / 16 * 16; }

/* The fp16 copies of the pointwise weights, for the tensor-core GEMMs. */
void record_half_weights(struct recorder *r)
{
	struct nn_fit *fit = r->fit;
	uint32_t nn = (uint32_t)(fit->cfg.nf * fit->cfg.nf);
	if (!r->half)
		return;
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		struct pass_push p = { .n = (int)nn,
				       .off0 = (uint32_t)fit->layout.pw_w[k],
				       .off1 = (uint32_t)k * nn };
		PASS(r, r->to_f16, p, div_up(nn, GROUP), 1, &fit->params,
		     &fit->p16, NULL, NULL, NULL, NULL);
	}
	stage_end(r, NN_PASS_FIRST); /* timed with the first layer */
}

/* h = act(s) over a tile's activations. */
static void record_activate(struct recorder *r, struct pass_push p,
			    const struct gpu_buffer *s,
			    const struct gpu_buffer *h)
{
	uint32_t nf = (uint32_t)r->fit->cfg.nf, n = (uint32_t)p.n;
	if (r->cpu) { /* vec4s of the flat buffer, rows of 65535 groups */
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
	stage_end(r, NN_PASS_ACTIVATE);
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
	const struct gpu_buffer *out = r->half ? &fit->z16 : &fit->z;
	const struct gpu_buffer *copy = form == S_COPY ? &fit->s[k] : NULL;
	p.off0 = (uint32_t)fit->layout.dw[k];
	p.dil = fit->cfg.dilations[k];
	p.i3 = (int)padded(n);
	if (r->strips) {
		/* two columns an invocation where the pairs align */
		int pairs =
		    r->pairs && p.tw % 2 == 0 && (p.dil == 1 || p.dil % 2 == 0);
		const struct dw_strip_pipes *d = &r->dws[dw_small(p.tw)];
		struct gpu_pipeline *pipe =
		    pairs ? by_form(form, d->pair_copy, d->pair_in, d->pair)
			  : by_form(form, d->strip_copy, d->strip_in, d->strip);
		dispatch(
		    r, pipe, &fit->params, h, out, copy, NULL, NULL, &p,
		    sizeof(p),
		    div_up((uint64_t)p.tw / (pairs ? 2 : 1), dw_group_x(p.tw)),
		    div_up(dw_strips(p.th, p.dil), dw_group_y(p.tw)), nf);
	} else if (r->rows) {
		p.i2 = (int)row_segments(p.tw);
		uint64_t units = r->row_blocks
				     ? row_block_units(p.tw, p.th, p.dil)
				     : (uint64_t)p.i2 * (uint64_t)p.th;
		PASS(r, r->dwconv_rows[k], p, div_up(units, ROW_GROUP), nf,
		     &fit->params, h, &fit->z, NULL, NULL, NULL);
	} else if (r->tiled && p.dil <= DW_TILED_MAX_DIL) {
		struct gpu_pipeline *pipe =
		    by_form(form, r->dwconv_tiled_copy, r->dwconv_tiled_in,
			    r->dwconv_tiled);
		dispatch(r, pipe, &fit->params, h, out, copy, NULL, NULL, &p,
			 sizeof(p), div_up((uint64_t)p.tw, DW_BLOCK_X),
			 div_up((uint64_t)p.th, DW_BLOCK_Y), nf);
	} else {
		struct gpu_pipeline *pipe =
		    by_form(form, r->dwconv_copy, r->dwconv_in, r->dwconv);
		PASS(r, pipe, p, div_up(r->half ? padded(n) : n, GROUP), nf,
		     &fit->params, h, out, copy, NULL, NULL);
	}
	stage_end(r, NN_PASS_DWCONV);
}

/* Where S_k is in the forward: s[k], or g in an exact render. */
static const struct gpu_buffer *s_at(const struct recorder *r, int k)
{
	return r->exact32 ? &r->fit->g : &r->fit->s[k];
}

/* Where S_B is after the forward: s[B], or z on the fp16 path with fp16
 * storage (read by the head and the out_w sums before z is written). */
const struct gpu_buffer *last_s(const struct recorder *r)
{
	return r->half_s ? &r->fit->z : s_at(r, r->fit->cfg.nblocks);
}

void record_forward(struct recorder *r, const struct tile *t)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct pass_push p = tile_push(fit, t);
	uint32_t n = (uint32_t)p.n, gx = div_up(n, GROUP);

	p.off0 = (uint32_t)l->first_w;
	p.off1 = (uint32_t)l->first_b;
	/* fp16 storage: every S_k comes fp32 through z, and the conv that
	 * reads it keeps its fp16 copy in s[k]; or (phase_out) the first
	 * layer and the GEMMs before blocks 1..B-1 write that copy, the fp16
	 * phase, themselves */
	int half_s = r->half_s;
	if (r->phase_out)
		PASS(r, r->first_phase, p, gx, nf, &fit->params, &fit->s[0],
		     NULL, NULL, NULL, NULL);
	else
		PASS(r, r->first, p, gx, nf, &fit->params,
		     half_s ? &fit->z : s_at(r, 0), NULL, NULL, NULL, NULL);
	stage_end(r, NN_PASS_FIRST);
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		const struct gpu_buffer *next = s_at(r, k + 1);
		int phase_in = r->phase_out;
		int phase_next = r->phase_out && k + 1 < fit->cfg.nblocks;
		if (phase_in) {
			record_dwconv(r, p, k, &fit->s[k], S_HALF);
		} else if (half_s) {
			record_dwconv(r, p, k, &fit->z, S_COPY);
		} else if (r->fused) {
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
		if (half_s)
			next = phase_next ? &fit->s[k + 1] : &fit->z;
		if (r->half) {
			g.a_off = (uint32_t)k * nf * nf;
			g.ldb = padded(n);
			gemm(r, phase_next ? r->gemm_nnp : r->gemm_nn,
			     &fit->p16, &fit->z16, next, g, 1, 0, 0);
		} else {
			gemm(r, r->gemm_nn, &fit->params, &fit->z, next, g, 1,
			     0, 0);
		}
		stage_end(r, NN_PASS_PW_FORWARD);
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

static void record_tile_backward(struct recorder *r, const struct tile *t,
				 int sse_base)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	int nb = fit->cfg.nblocks;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct pass_push p = tile_push(fit, t);
	uint32_t n = (uint32_t)p.n, gx = div_up(n, GROUP);
	int chunks = (int)div_up(n, REDUCE_CHUNK);
	uint32_t splits = (uint32_t)nn_nt_splits(fit, (int)n);
	uint32_t k_step = fit->gemm->k_step;
	uint32_t k_chunk = div_up(div_up(n, splits), k_step) * k_step;
	splits = div_up(n, k_chunk);
	/* the fp16 path runs K over the padded row: ceil(n_pad / k_chunk) is
	 * the same number of splits, as k_chunk is a multiple of 16 */

	/* head: loss, dY, dS of the last layer, then out_w and out_b */
	uint32_t n_pad = padded(n);
	p.off0 = (uint32_t)l->out_w;
	p.off1 = (uint32_t)l->out_b;
	p.i0 = sse_base;
	p.i1 = 1;
	p.i2 = (int)n_pad;
	p.off2 = float_bits(fit->grad_scale);
	const struct gpu_buffer *head_bufs[7] = { &fit->params,
						  last_s(r),
						  &fit->target,
						  &fit->g,
						  &fit->dy,
						  &fit->sse,
						  r->half ? &fit->g16 : NULL };
	if (r->has_loss_terms)
		record_loss_head(r, p, head_bufs);
	else
		dispatch7(r, r->head, head_bufs, &p, sizeof(p), gx, 1, 1);
	stage_end(r, NN_PASS_HEAD);
	p.i2 = 0;
	p.off2 = 0;
	struct pass_push rp = p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
	PASS(r, r->reduce_out, rp, chunks, nf, &fit->dy, last_s(r),
	     &fit->part_b, NULL, NULL, NULL);
	rp.i1 = 3;
	PASS(r, r->reduce_sum, rp, chunks, 3, &fit->dy, &fit->dy, &fit->part_a,
	     NULL, NULL, NULL);
	stage_end(r, NN_PASS_REDUCE);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 0, 3, l->out_w, 1, nf);
	reduce_into(r, &fit->part_a, chunks, 3, 1, 0, 1, l->out_b, 1, 0);
	stage_end(r, NN_PASS_REDUCE);

	for (int k = nb - 1; k >= 0; k--) {
		/* h = act(S_k) feeds Z's recompute and, per pixel, reduce_dw
		 * (s[nb] is free after the head); the row passes of the last
		 * block need neither, and the fused passes read S_k itself */
		const struct gpu_buffer *h =
		    r->fused ? &fit->s[k] : &fit->s[nb];
		if (!r->fused && (!r->rows || k != nb - 1))
			record_activate(r, p, &fit->s[k], h);
		p.dil = fit->cfg.dilations[k];
		p.off0 = (uint32_t)l->dw[k];
		p.i3 = (int)n_pad;
		p.off3 = float_bits(fit->grad_scale);
		if (k != nb - 1) /* Z of the last block is still there */
			record_dwconv(r, p, k, h, r->half_s ? S_HALF : S_AS_IS);
		struct gemm_push gw = {
			.M = nf,
			.N = nf,
			.K = n,
			.lda = n,
			.ldb = n,
			.ldc = nf,
			.k_chunk = k_chunk,
		};
		if (r->half) {
			gw.K = gw.lda = gw.ldb = n_pad;
			gemm(r, r->gemm_nt, &fit->g16, &fit->z16, &fit->part_a,
			     gw, splits, 1, 0);
		} else {
			gemm(r, r->gemm_nt, &fit->g, &fit->z, &fit->part_a, gw,
			     splits, 1, 0);
		}
		rp = p;
		rp.i0 = REDUCE_CHUNK;
		rp.i1 = (int)nf;
		PASS(r, r->reduce_sum, rp, chunks, nf, &fit->g, &fit->g,
		     &fit->part_b, NULL, NULL, NULL);
		stage_end(r, NN_PASS_PW_GRAD_WEIGHT);
		reduce_into(r, &fit->part_a, (int)splits, (int)(nf * nf), 1, 0,
			    1, l->pw_w[k], 1, 0);
		reduce_into(r, &fit->part_b, chunks, (int)nf, 1, 0, 1,
			    l->pw_b[k], 1, 0);
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
		if (r->half) {
			gd.a_off = (uint32_t)k * nf * nf;
			gd.ldb = n_pad;
			gemm(r, r->gemm_tn, &fit->p16, &fit->g16, &fit->z, gd,
			     1, 0, 1);
		} else {
			gemm(r, r->gemm_tn, &fit->params, &fit->g, &fit->z, gd,
			     1, 0, 1);
		}
		stage_end(r, NN_PASS_PW_GRAD_DATA);
		int dw_chunks = chunks;
		if (r->rows) { /* dS and the dw taps' sums in one pass */
			struct pass_push bp = p;
			bp.i0 = ROW_CHUNK;
			bp.i1 = (int)nf;
			bp.i2 = (int)row_segments(p.tw);
			dw_chunks = (int)row_chunks(p.tw, p.th);
			if (r->row_blocks) /* the same chunks, of blocks */
				bp.i0 = (int)div_up(
				    row_block_units(p.tw, p.th, p.dil),
				    (uint64_t)dw_chunks);
			PASS(r, r->dwconv_back_rows[k], bp, dw_chunks, nf,
			     &fit->params, &fit->s[k], &fit->z, &fit->g,
			     &fit->part_b, NULL);
		} else if (r->strips) { /* the same, by strips: params, S, dZ,
					 * then dS in fp32 and (fp16 path) fp16,
					 * then the sums */
			dw_chunks = (int)dw_strip_chunks(p.tw, p.th, p.dil);
			const struct gpu_buffer *bufs[7] = { &fit->params,
							     &fit->s[k],
							     &fit->z, &fit->g };
			int nbufs = 4;
			if (r->half)
				bufs[nbufs++] = &fit->g16;
			bufs[nbufs] = &fit->part_b;
			dispatch7(
			    r, r->dws[dw_small(p.tw)].back, bufs, &p, sizeof(p),
			    div_up((uint64_t)p.tw, dw_group_x(p.tw)),
			    div_up(dw_strips(p.th, p.dil), dw_group_y(p.tw)),
			    nf);
		} else {
			PASS(r, r->reduce_dw, rp, chunks, nf, &fit->z, h,
			     &fit->part_b, NULL, NULL, NULL);
			PASS(r, r->dwconv_back, p, gx, nf, &fit->params,
			     &fit->s[k], &fit->z, &fit->g,
			     r->half ? &fit->g16 : NULL, NULL);
		}
		stage_end(r, NN_PASS_DWCONV_BACK);
		reduce_into(r, &fit->part_b, dw_chunks, (int)nf, 9, 0, 9,
			    l->dw[k], 9, 1);
		stage_end(r, NN_PASS_REDUCE);
	}

	rp = p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
	rp.i3 = (int)n_pad;
	rp.off3 = float_bits(fit->grad_scale);
	PASS(r, r->reduce_first, rp, chunks, nf, &fit->g, &fit->g, &fit->part_b,
	     NULL, NULL, NULL);
	stage_end(r, NN_PASS_REDUCE);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 0, 2, l->first_w, 2,
		    1);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 2, 1, l->first_b, 1,
		    0);
	stage_end(r, NN_PASS_REDUCE);
}

int begin_program(struct recorder *r, int timestamps, struct gpu_program **out)
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
	int rc = get_pipelines(&r);
	if (rc)
		return rc;
	fit->max_stages = stage_budget(fit) + 4;
	fit->stages = calloc((size_t)fit->max_stages, sizeof(*fit->stages));
	if (!fit->stages)
		return ERR_NOMEM;

	rc = begin_program(&r, fit->max_stages + 1, &fit->epoch_prog);
	record_half_weights(&r);
	int sse_base = 0;
	for (int i = 0; rc == 0 && i < fit->plan.count; i++) {
		const struct tile *t = &fit->plan.tiles[i];
		record_forward(&r, t);
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
