/*
 * fit.c - the training engine: one ConvSIREN fitted to one image on one
 * Vulkan device (see fit.h for the contract).
 *
 * At creation the fit plans its tiles, allocates every buffer once from an
 * arena (parameters, gradient, both Adam moments, the target, one
 * activation buffer per layer sized for the largest tile, two scratch
 * buffers and the partial-sum buffers) and records two programs: the epoch
 * (every tile forward, head, backward, with the gradient summed over tiles)
 * and the optimizer step (optim.c). An epoch is then: write the step size into a
 * small host-visible buffer, run the epoch, add up the squared errors on the
 * host in double, run the optimizer. Nothing is recorded or allocated per
 * epoch, and every reduction happens in a fixed order, so a run is
 * deterministic on a given device and a resumed run continues bit for bit.
 *
 * Memory per tile pixel: the pre-activations S0..S_B of every layer are
 * kept, plus two scratch buffers, Z and G. H = sin(w0 S) is recomputed
 * where needed (one sine per element, by activate.comp) and so is the
 * depthwise conv output Z in the backward pass. Forward, block k: H_k
 * into G, Z_k into Z, S_k+1 by the GEMM. Backward, block k: G holds dS_k+1,
 * H_k goes into S_B (free once the head has run), Z holds Z_k, then dZ_k,
 * and G is rewritten with dS_k.
 *
 * With loss terms besides the MSE (struct nn_recipe), the head runs in
 * halves around the loss passes (record_loss_head, shaders/loss.comp) and
 * the halo grows by the loss's radius; with MSE alone the fused head runs.
 */
#include "nn/fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "nn/fit_internal.h"
#include "nn/gemm.h"
#include "nn/optim.h"
#include "nn/passes.h"

const char *nn_pass_name(enum nn_pass pass)
{
	static const char *names[] = {
#define X(id, name) name,
		NN_PASS_LIST(X)
#undef X
	};
	return pass < NN_PASS_COUNT ? names[pass] : "?";
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* ------------------------------------------------------------ planning */

/* The GEMM family: fp16 tensor cores for the fp16 path; for fp32, 64x64
 * tiles on CPU devices and small widths, 128x128 on GPUs. VKINR_GEMM=NAME
 * (see gemm.c) overrides with a family of the same operand precision, for
 * benchmarks and for the tests of the tensor-core tiling ("coop_emu"). */
static const struct gemm_variant *choose_gemm(const struct nn_fit *fit)
{
	int half = fit->precision == NN_PRECISION_FP16;
	const struct gemm_variant *v = gemm_variant_find(getenv("VKINR_GEMM"));
	if (v && v->half == half)
		return v;
	if (half)
		return gemm_variant_find("coop");
	if (gpu_info(fit->gpu)->is_cpu || fit->cfg.nf < 128)
		return gemm_variant_find("small");
	return gemm_variant_find("large");
}

/* CPU devices get the passes written for them (subgroup sums, the
 * depthwise conv by row segments); VKINR_PASSES=cpu|gpu overrides, so that
 * the tests check both families on any device. */
static int use_cpu_passes(const struct gpu_context *gpu)
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
static int use_fused_sines(const struct gpu_context *gpu)
{
	const char *fused = getenv("VKINR_FUSED_SINE");
	return !use_cpu_passes(gpu) && !(fused && !strcmp(fused, "0"));
}

/* auto takes the tensor cores where the device has them, fp32 elsewhere.
 * Gradient operands are scaled by the number of values the loss averages
 * (times 16), which brings them from ~1e-7 into fp16's range. */
static int choose_precision(struct nn_fit *fit, char *err, size_t errlen)
{
	const struct gpu_device_info *info = gpu_info(fit->gpu);
	enum nn_precision p = fit->cfg.precision;
	if (p == NN_PRECISION_FP16 && !info->has_tensor_cores) {
		snprintf(err, errlen, "%s has no fp16 tensor-core path "
			 "(cooperative matrices 16x8x16): use --precision fp32",
			 info->name);
		return ERR_INVALID;
	}
	if (p == NN_PRECISION_AUTO)
		p = info->has_tensor_cores ? NN_PRECISION_FP16 : NN_PRECISION_FP32;
	fit->precision = p;
	/* VKINR_HALF_STORAGE=0 keeps S in fp32 on the fp16 path, to compare */
	const char *half_s = getenv("VKINR_HALF_STORAGE");
	fit->half_storage = p == NN_PRECISION_FP16 && use_fused_sines(fit->gpu) &&
			    !(half_s && !strcmp(half_s, "0"));
	fit->gemm = choose_gemm(fit);
	/* the loss terms add to the gradient: heavy weights must not push the
	 * scaled fp16 copies past their range */
	const struct nn_recipe *rc = &fit->cfg.recipe;
	double weights = 1 + rc->loss_ssim + rc->loss_grad + rc->loss_chroma;
	fit->grad_scale = (float)(16.0 * 3.0 * fit->width * fit->height / weights);
	return 0;
}

static int nt_splits(const struct nn_fit *fit, int n)
{
	int out_tiles = (int)(div_up((uint64_t)fit->cfg.nf, fit->gemm->rows) *
			      div_up((uint64_t)fit->cfg.nf, fit->gemm->cols));
	int target = gpu_info(fit->gpu)->is_cpu ? 8 : 1024;
	int splits = (target + out_tiles - 1) / out_tiles;
	int most = (int)div_up((uint64_t)n, 256);
	if (splits > most)
		splits = most;
	return splits < 1 ? 1 : splits;
}

static int plan_tiles(struct nn_fit *fit, char *err, size_t errlen)
{
	const struct gpu_device_info *info = gpu_info(fit->gpu);
	uint64_t nf = (uint64_t)fit->cfg.nf, pixels = (uint64_t)fit->width * fit->height;
	struct tile_limits lim = {0};

	lim.budget_bytes = fit->cfg.mem_budget ? fit->cfg.mem_budget
					       : info->budget_bytes / 10 * 8;
	/* weights, gradient, moments, target and reconstruction, partial
	 * sums, and what the arena's shared blocks may leave unused */
	lim.fixed_bytes = 4 * fit->layout.total * 4 + 2 * pixels * 12 +
			  (96u << 20) + (256u << 20) + nn_optim_bytes(fit);
	/* S_0..S_B, Z (or dZ), dS; the fp16 path adds fp16 copies of Z and
	 * dS, and keeps S_0..S_B-1 in fp16 and no S_B (see alloc_buffers) */
	lim.bytes_per_pixel = 4 * nf * (uint64_t)(fit->cfg.nblocks + 3) + 16;
	if (nn_loss_has_terms(&fit->cfg.recipe))
		lim.bytes_per_pixel += 12 + 36; /* predictions, SSIM's terms */
	if (fit->precision == NN_PRECISION_FP16)
		lim.bytes_per_pixel += 2 * 2 * nf;
	if (fit->half_storage)
		lim.bytes_per_pixel -= 2 * nf * (uint64_t)fit->cfg.nblocks + 4 * nf;
	lim.max_pixels = info->max_storage_range / (4 * nf);
	if (lim.max_pixels > 65535ull * GROUP)
		lim.max_pixels = 65535ull * GROUP;
	lim.max_core = fit->cfg.max_tile;
	if (pixels * 12 > info->max_storage_range) {
		snprintf(err, errlen,
			 "the image (%dx%d) is larger than this device can hold "
			 "in one buffer", fit->width, fit->height);
		return ERR_TOO_LARGE;
	}
	/* the halo: the receptive field, plus the loss's reach from a core
	 * pixel, whose predictions must be exact too */
	int halo = nn_config_pad(&fit->cfg) + nn_loss_radius(&fit->cfg.recipe);
	int rc = tile_plan_make(&fit->plan, fit->width, fit->height, halo,
				&lim);
	if (rc == ERR_DEVICE_OOM)
		snprintf(err, errlen,
			 "not enough device memory for width %d even with small "
			 "tiles (budget %llu MiB)", fit->cfg.nf,
			 (unsigned long long)(lim.budget_bytes >> 20));
	return rc;
}

/* ------------------------------------------------------------ buffers */

/* The row segments of a tile row, and the chunks the backward row pass
 * sums a tile's segments in (dwconv_rows.comp). */
static uint32_t row_segments(int tw) { return div_up((uint64_t)tw, ROW_SEGMENT); }
static uint32_t row_chunks(int tw, int th)
{
	return div_up((uint64_t)row_segments(tw) * (uint64_t)th, ROW_CHUNK);
}

/* The loss terms' buffers (see fit_internal.h), when any term is on. */
static int alloc_loss_buffers(struct nn_fit *fit)
{
	struct gpu_arena *a = fit->arena;
	uint64_t n = (uint64_t)fit->plan.max_region_pixels;
	int rc = 0;
	if (!nn_loss_has_terms(&fit->cfg.recipe))
		return 0;
	rc = rc ? rc : gpu_buffer_alloc(a, 12 * n, 0, &fit->pred);
	rc = rc ? rc : gpu_buffer_alloc(a, 36 * n, 0, &fit->loss_coef);
	rc = rc ? rc : gpu_buffer_alloc(a, 12 * (uint64_t)fit->sse_count, 1,
					&fit->loss_sums);
	return rc;
}

static int alloc_buffers(struct nn_fit *fit)
{
	struct gpu_arena *a = fit->arena;
	uint64_t nf = (uint64_t)fit->cfg.nf, n = (uint64_t)fit->plan.max_region_pixels;
	uint64_t pixels = (uint64_t)fit->width * fit->height;
	uint64_t act = 4 * nf * n;
	int chunks = (int)div_up(n, REDUCE_CHUNK);
	int rc = 0;

	fit->sse_count = 0;
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile_rect *r = &fit->plan.tiles[i].region;
		fit->sse_count += (int)div_up((uint64_t)r->w * r->h, GROUP);
	}
	uint64_t part_a = (uint64_t)nt_splits(fit, (int)n) * nf * nf;
	if (part_a < (uint64_t)chunks * 3)
		part_a = (uint64_t)chunks * 3;
	int most_chunks = chunks; /* also the row passes' chunks of any tile */
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile_rect *t = &fit->plan.tiles[i].region;
		int c = (int)row_chunks(t->w, t->h);
		most_chunks = c > most_chunks ? c : most_chunks;
	}
	uint64_t part_b = (uint64_t)most_chunks * 9 * nf;

	uint64_t total = fit->layout.total * 4;
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->params);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->grad);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->adam_m);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->adam_v);
	rc = rc ? rc : gpu_buffer_alloc(a, 16, 1, &fit->step);
	rc = rc ? rc : gpu_buffer_alloc(a, pixels * 12, 0, &fit->target);
	/* the fp16 path with fused sines keeps S_0..S_B-1 in fp16 for the
	 * backward; the forward's fp32 S_k, and S_B, live in z meanwhile */
	for (int k = 0; k <= fit->cfg.nblocks; k++) {
		if (fit->half_storage && k == fit->cfg.nblocks)
			break;
		uint64_t bytes = fit->half_storage ? act / 2 : act;
		rc = rc ? rc : gpu_buffer_alloc(a, bytes, 0, &fit->s[k]);
	}
	rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->z);
	rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->g);
	rc = rc ? rc : gpu_buffer_alloc(a, 12 * n, 0, &fit->dy);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * part_a, 0, &fit->part_a);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * part_b, 0, &fit->part_b);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * (uint64_t)fit->sse_count, 1, &fit->sse);
	if (fit->precision == NN_PRECISION_FP16) {
		/* rows padded to 16 pixels; the padding must start as zeros */
		uint64_t half = 2 * nf * (n + 16);
		rc = rc ? rc : gpu_buffer_alloc(a, half, 0, &fit->z16);
		rc = rc ? rc : gpu_buffer_alloc(a, half, 0, &fit->g16);
		rc = rc ? rc : gpu_buffer_alloc(a, 2 * nf * nf * fit->cfg.nblocks, 0,
						&fit->p16);
		rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->z16);
		rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->g16);
	}
	rc = rc ? rc : alloc_loss_buffers(fit);
	return rc ? rc : nn_optim_alloc(fit);
}

/* ------------------------------------------------------------ recording */

struct recorder {
	struct nn_fit *fit;
	struct gpu_program *prog;
	int last_ts;
	int rc;
	int half; /* the fp16 tensor-core path */
	struct gpu_pipeline *to_f16;
	struct gpu_pipeline *first, *activate, *dwconv, *dwconv_back, *head, *head_render,
		*reduce_sum, *reduce_dw, *reduce_first, *reduce_out, *reduce,
		*gemm_nn, *gemm_tn, *gemm_nt;
	/* CPU devices: vec4 sines, and the depthwise passes by row segments,
	 * one pipeline a block (the dilation is a specialization constant) */
	int cpu, rows;
	/* GPUs: the depthwise passes read S and take its sines themselves,
	 * and the forward one (tiled) goes by blocks through shared memory */
	int fused, tiled;
	struct gpu_pipeline *dwconv_tiled;
	/* the fp16 path's S_k in fp16: the forward convs copy S_k as they
	 * read it (fp32, from z), the backward passes read the copies */
	struct gpu_pipeline *dwconv_copy, *dwconv_tiled_copy, *dwconv_in,
		*dwconv_tiled_in;
	struct gpu_pipeline *dwconv_rows[NN_MAX_BLOCKS],
		*dwconv_back_rows[NN_MAX_BLOCKS];
	/* loss terms besides the MSE: the head in halves around loss.comp */
	int has_loss_terms;
	struct gpu_pipeline *head_predict, *loss_terms_pass, *loss_grad_pass,
		*head_back;
};

/* The loss terms' pipelines, when the recipe has any (record_loss_head). */
static int get_loss_pipelines(struct recorder *r, const uint32_t spec[2])
{
	struct gpu_context *gpu = r->fit->gpu;
	uint32_t pass = sizeof(struct pass_push);
	int rc = 0;
	r->has_loss_terms = nn_loss_has_terms(&r->fit->cfg.recipe);
	if (!r->has_loss_terms)
		return 0;
	rc = rc ? rc : gpu_pipeline_get(gpu, "head_predict", 6, pass, spec, 2,
					&r->head_predict);
	rc = rc ? rc : gpu_pipeline_get(gpu, "loss_terms", 4, pass, spec, 2,
					&r->loss_terms_pass);
	rc = rc ? rc : gpu_pipeline_get(gpu, "loss_grad", 4, pass, spec, 2,
					&r->loss_grad_pass);
	rc = rc ? rc : gpu_pipeline_get(gpu, r->half ? "head_back_f16" : "head_back",
					r->half ? 7 : 6, pass, spec, 2,
					&r->head_back);
	return rc;
}

static int get_pipelines(struct recorder *r)
{
	struct gpu_context *gpu = r->fit->gpu;
	float w0 = r->fit->cfg.w0;
	uint32_t spec[2] = {(uint32_t)r->fit->cfg.nf, 0};
	memcpy(&spec[1], &w0, 4);
	uint32_t pass = sizeof(struct pass_push), gemm = sizeof(struct gemm_push);
	int rc = 0;
#define GET(field, name, nb, push, ns)                                        \
	rc = rc ? rc : gpu_pipeline_get(gpu, name, nb, push, spec, ns, &r->field)
	r->cpu = use_cpu_passes(gpu);
	GET(first, "first", 2, pass, 2);
	GET(activate, r->cpu ? "activate_vec4" : "activate", 2, pass, 2);
	r->half = r->fit->precision == NN_PRECISION_FP16;
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
	GET(reduce_first, cpu ? "reduce_first_cpu" : "reduce_first", 3, pass, 2);
	GET(reduce_out, cpu ? "reduce_out_cpu" : "reduce_out", 3, pass, 2);
	/* and do the depthwise conv by row segments (see dwconv_rows.comp) */
	r->rows = r->cpu && !r->half;
	for (int k = 0; r->rows && k < r->fit->cfg.nblocks; k++) {
		uint32_t rspec[3] = {spec[0], spec[1],
				     (uint32_t)r->fit->cfg.dilations[k]};
		rc = rc ? rc : gpu_pipeline_get(gpu, "dwconv_rows", 3, pass, rspec,
						3, &r->dwconv_rows[k]);
		rc = rc ? rc : gpu_pipeline_get(gpu, "dwconv_back_rows", 5, pass,
						rspec, 3, &r->dwconv_back_rows[k]);
	}
	r->fused = use_fused_sines(gpu);
	r->fit->fused_sines = r->fused;
	r->fit->row_passes = r->rows;
	if (r->fused) {
		GET(dwconv, r->half ? "dwconv_s_f16" : "dwconv_s", 3, pass, 2);
		GET(reduce_dw, "reduce_dw_s", 3, pass, 2);
	}
	if (r->fit->half_storage) {
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
	const char *tiled = getenv("VKINR_DW_TILED");
	r->tiled = r->fused && !(tiled && !strcmp(tiled, "0")) &&
		   (!r->fit->half_storage || (tiled && !strcmp(tiled, "1")));
	if (r->tiled)
		GET(dwconv_tiled, r->half ? "dwconv_tiled_s_f16" : "dwconv_tiled_s",
		    3, pass, 2);
	if (r->tiled && r->fit->half_storage) {
		GET(dwconv_tiled_copy, "dwconv_tiled_s_f16_copy", 4, pass, 2);
		GET(dwconv_tiled_in, "dwconv_tiled_s_f16_in", 3, pass, 2);
	}
	GET(reduce, "reduce", 2, pass, 2);
	char nn[32], tn[32], nt[32];
	gemm_shader_name(r->fit->gemm, "nn", nn, sizeof(nn));
	gemm_shader_name(r->fit->gemm, "tn", tn, sizeof(tn));
	gemm_shader_name(r->fit->gemm, "nt", nt, sizeof(nt));
	GET(gemm_nn, nn, 4, gemm, 0);
	GET(gemm_tn, tn, 4, gemm, 0);
	GET(gemm_nt, nt, 4, gemm, 0);
#undef GET
	return rc ? rc : get_loss_pipelines(r, spec);
}

/* Ends a stage: a barrier, then a timestamp; the time since the previous
 * timestamp is charged to pass. */
static void stage_end(struct recorder *r, enum nn_pass pass)
{
	struct nn_fit *fit = r->fit;
	gpu_program_barrier(r->prog);
	int ts = gpu_program_timestamp(r->prog);
	if (ts >= 0 && r->last_ts >= 0 && fit->nstages < fit->max_stages) {
		fit->stages[fit->nstages++] = (struct stage_time){
			r->prog, pass, r->last_ts, ts};
	}
	r->last_ts = ts;
}

static struct pass_push tile_push(const struct nn_fit *fit,
				  const struct tile *t)
{
	struct pass_push p = {
		.img_w = fit->width, .img_h = fit->height,
		.tx = t->region.x, .ty = t->region.y,
		.tw = t->region.w, .th = t->region.h,
		.cx = t->core.x, .cy = t->core.y,
		.cw = t->core.w, .ch = t->core.h,
		.n = t->region.w * t->region.h,
	};
	return p;
}

static void dispatch7(struct recorder *r, struct gpu_pipeline *pipe,
		      const struct gpu_buffer *const bufs[7], const void *push,
		      uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz)
{
	int n = 0;
	while (n < 7 && bufs[n])
		n++;
	if (r->rc == 0)
		r->rc = gpu_program_dispatch(r->prog, pipe, bufs, n, push,
					     push_bytes, gx, gy, gz);
}

static void dispatch(struct recorder *r, struct gpu_pipeline *pipe,
		     const struct gpu_buffer *b0, const struct gpu_buffer *b1,
		     const struct gpu_buffer *b2, const struct gpu_buffer *b3,
		     const struct gpu_buffer *b4, const struct gpu_buffer *b5,
		     const void *push, uint32_t push_bytes, uint32_t gx,
		     uint32_t gy, uint32_t gz)
{
	const struct gpu_buffer *const bufs[7] = {b0, b1, b2, b3, b4, b5, NULL};
	dispatch7(r, pipe, bufs, push, push_bytes, gx, gy, gz);
}

#define PASS(r, pipe, push, gx, gy, ...)                                      \
	dispatch(r, pipe, __VA_ARGS__, &(push), sizeof(push), gx, gy, 1)

/* Adds chunked partial sums into the gradient (reduce.comp). */
static void reduce_into(struct recorder *r, const struct gpu_buffer *part,
			int chunks, int C, int J, int j0, int jcount,
			size_t dst, uint32_t dst_cs, uint32_t dst_js)
{
	struct pass_push p = {
		.n = chunks, .i0 = j0, .i1 = C, .i2 = J, .i3 = jcount,
		.off0 = (uint32_t)dst, .off1 = dst_cs, .off2 = dst_js,
	};
	uint32_t groups = div_up((uint64_t)jcount * C, GROUP);
	uint32_t gy = div_up(groups, 65535);
	uint32_t gx = gy > 1 ? 65535 : groups;
	PASS(r, r->reduce, p, gx, gy, part, &r->fit->grad, NULL, NULL, NULL, NULL);
}

/* Records a GEMM. a_grad / b_grad say which operand is a gradient, to be
 * loss-scaled on the fp16 path. */
static void gemm(struct recorder *r, struct gpu_pipeline *pipe,
		 const struct gpu_buffer *a, const struct gpu_buffer *b,
		 const struct gpu_buffer *c, struct gemm_push g, uint32_t splits,
		 int a_grad, int b_grad)
{
	float scale = r->half ? r->fit->grad_scale : 1.0f;
	g.a_scale = a_grad ? scale : 1.0f;
	g.b_scale = b_grad ? scale : 1.0f;
	g.out_scale = 1.0f / (g.a_scale * g.b_scale);
	uint32_t gx = div_up(g.N, r->fit->gemm->cols);
	uint32_t gy = div_up(g.M, r->fit->gemm->rows);
	dispatch(r, pipe, a, b, c, &r->fit->params, NULL, NULL, &g, sizeof(g),
		 gx, gy, splits);
}

static uint32_t padded(uint32_t n)
{
	return (n + 15) / 16 * 16;
}

static uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* The fp16 copies of the pointwise weights, for the tensor-core GEMMs. */
static void record_half_weights(struct recorder *r)
{
	struct nn_fit *fit = r->fit;
	uint32_t nn = (uint32_t)(fit->cfg.nf * fit->cfg.nf);
	if (!r->half)
		return;
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		struct pass_push p = {.n = (int)nn,
				      .off0 = (uint32_t)fit->layout.pw_w[k],
				      .off1 = (uint32_t)k * nn};
		PASS(r, r->to_f16, p, div_up(nn, GROUP), 1, &fit->params,
		     &fit->p16, NULL, NULL, NULL, NULL);
	}
	stage_end(r, NN_PASS_FIRST); /* timed with the first layer */
}

/* h = act(s) over a tile's activations. */
static void record_activate(struct recorder *r, struct pass_push p,
			    const struct gpu_buffer *s, const struct gpu_buffer *h)
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
	if (r->rows) {
		p.i2 = (int)row_segments(p.tw);
		PASS(r, r->dwconv_rows[k], p,
		     div_up((uint64_t)p.i2 * (uint64_t)p.th, ROW_GROUP), nf,
		     &fit->params, h, &fit->z, NULL, NULL, NULL);
	} else if (r->tiled && p.dil <= DW_TILED_MAX_DIL) {
		struct gpu_pipeline *pipe = form == S_COPY   ? r->dwconv_tiled_copy
					    : form == S_HALF ? r->dwconv_tiled_in
							     : r->dwconv_tiled;
		dispatch(r, pipe, &fit->params, h, out, copy, NULL, NULL, &p,
			 sizeof(p), div_up((uint64_t)p.tw, DW_BLOCK_X),
			 div_up((uint64_t)p.th, DW_BLOCK_Y), nf);
	} else {
		struct gpu_pipeline *pipe = form == S_COPY   ? r->dwconv_copy
					    : form == S_HALF ? r->dwconv_in
							     : r->dwconv;
		PASS(r, pipe, p, div_up(r->half ? padded(n) : n, GROUP), nf,
		     &fit->params, h, out, copy, NULL, NULL);
	}
	stage_end(r, NN_PASS_DWCONV);
}

/* Where S_B is after the forward: s[B], or z on the fp16 path with fp16
 * storage (read by the head and the out_w sums before z is written). */
static const struct gpu_buffer *last_s(const struct nn_fit *fit)
{
	return fit->half_storage ? &fit->z : &fit->s[fit->cfg.nblocks];
}

static void record_forward(struct recorder *r, const struct tile *t)
{
	struct nn_fit *fit = r->fit;
	const struct nn_layout *l = &fit->layout;
	uint32_t nf = (uint32_t)fit->cfg.nf;
	struct pass_push p = tile_push(fit, t);
	uint32_t n = (uint32_t)p.n, gx = div_up(n, GROUP);

	p.off0 = (uint32_t)l->first_w;
	p.off1 = (uint32_t)l->first_b;
	/* fp16 storage: every S_k comes fp32 through z, and the conv that
	 * reads it keeps its fp16 copy in s[k] */
	int half_s = fit->half_storage;
	PASS(r, r->first, p, gx, nf, &fit->params, half_s ? &fit->z : &fit->s[0],
	     NULL, NULL, NULL, NULL);
	stage_end(r, NN_PASS_FIRST);
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		const struct gpu_buffer *next = &fit->s[k + 1];
		if (half_s) {
			record_dwconv(r, p, k, &fit->z, S_COPY);
			next = &fit->z;
		} else if (r->fused) {
			record_dwconv(r, p, k, &fit->s[k], S_AS_IS);
		} else {
			record_activate(r, p, &fit->s[k], &fit->g);
			record_dwconv(r, p, k, &fit->g, S_AS_IS);
		}
		struct gemm_push g = {
			.M = nf, .N = n, .K = nf, .lda = nf, .ldb = n, .ldc = n,
			.a_off = (uint32_t)l->pw_w[k], .bias_off = (uint32_t)l->pw_b[k],
			.k_chunk = nf, .has_bias = 1,
		};
		if (r->half) {
			g.a_off = (uint32_t)k * nf * nf;
			g.ldb = padded(n);
			gemm(r, r->gemm_nn, &fit->p16, &fit->z16, next, g, 1, 0, 0);
		} else {
			gemm(r, r->gemm_nn, &fit->params, &fit->z, next, g, 1, 0, 0);
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
	uint32_t splits = (uint32_t)nt_splits(fit, (int)n);
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
	const struct gpu_buffer *head_bufs[7] = {
		&fit->params, last_s(fit), &fit->target, &fit->g, &fit->dy,
		&fit->sse, r->half ? &fit->g16 : NULL};
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
	PASS(r, r->reduce_out, rp, chunks, nf, &fit->dy, last_s(fit), &fit->part_b,
	     NULL, NULL, NULL);
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
		const struct gpu_buffer *h = r->fused ? &fit->s[k] : &fit->s[nb];
		if (!r->fused && (!r->rows || k != nb - 1))
			record_activate(r, p, &fit->s[k], h);
		p.dil = fit->cfg.dilations[k];
		p.off0 = (uint32_t)l->dw[k];
		p.i3 = (int)n_pad;
		p.off3 = float_bits(fit->grad_scale);
		if (k != nb - 1) /* Z of the last block is still there */
			record_dwconv(r, p, k, h,
				      fit->half_storage ? S_HALF : S_AS_IS);
		struct gemm_push gw = {
			.M = nf, .N = nf, .K = n, .lda = n, .ldb = n, .ldc = nf,
			.k_chunk = k_chunk,
		};
		if (r->half) {
			gw.K = gw.lda = gw.ldb = n_pad;
			gemm(r, r->gemm_nt, &fit->g16, &fit->z16, &fit->part_a, gw,
			     splits, 1, 0);
		} else {
			gemm(r, r->gemm_nt, &fit->g, &fit->z, &fit->part_a, gw, splits,
			     1, 0);
		}
		rp = p;
		rp.i0 = REDUCE_CHUNK;
		rp.i1 = (int)nf;
		PASS(r, r->reduce_sum, rp, chunks, nf, &fit->g, &fit->g,
		     &fit->part_b, NULL, NULL, NULL);
		stage_end(r, NN_PASS_PW_GRAD_WEIGHT);
		reduce_into(r, &fit->part_a, (int)splits, (int)(nf * nf), 1, 0, 1,
			    l->pw_w[k], 1, 0);
		reduce_into(r, &fit->part_b, chunks, (int)nf, 1, 0, 1, l->pw_b[k],
			    1, 0);
		struct gemm_push gd = {
			.M = nf, .N = n, .K = nf, .lda = nf, .ldb = n, .ldc = n,
			.a_off = (uint32_t)l->pw_w[k], .k_chunk = nf,
		};
		if (r->half) {
			gd.a_off = (uint32_t)k * nf * nf;
			gd.ldb = n_pad;
			gemm(r, r->gemm_tn, &fit->p16, &fit->g16, &fit->z, gd, 1, 0, 1);
		} else {
			gemm(r, r->gemm_tn, &fit->params, &fit->g, &fit->z, gd, 1, 0, 1);
		}
		stage_end(r, NN_PASS_PW_GRAD_DATA);
		int dw_chunks = chunks;
		if (r->rows) { /* dS and the dw taps' sums in one pass */
			struct pass_push bp = p;
			bp.i0 = ROW_CHUNK;
			bp.i1 = (int)nf;
			bp.i2 = (int)row_segments(p.tw);
			dw_chunks = (int)row_chunks(p.tw, p.th);
			PASS(r, r->dwconv_back_rows[k], bp, dw_chunks, nf,
			     &fit->params, &fit->s[k], &fit->z, &fit->g,
			     &fit->part_b, NULL);
		} else {
			PASS(r, r->reduce_dw, rp, chunks, nf, &fit->z, h,
			     &fit->part_b, NULL, NULL, NULL);
			PASS(r, r->dwconv_back, p, gx, nf, &fit->params, &fit->s[k],
			     &fit->z, &fit->g, r->half ? &fit->g16 : NULL, NULL);
		}
		stage_end(r, NN_PASS_DWCONV_BACK);
		reduce_into(r, &fit->part_b, dw_chunks, (int)nf, 9, 0, 9, l->dw[k],
			    9, 1);
		stage_end(r, NN_PASS_REDUCE);
	}

	rp = p;
	rp.i0 = REDUCE_CHUNK;
	rp.i1 = (int)nf;
	PASS(r, r->reduce_first, rp, chunks, nf, &fit->g, &fit->g, &fit->part_b,
	     NULL, NULL, NULL);
	stage_end(r, NN_PASS_REDUCE);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 0, 2, l->first_w, 2, 1);
	reduce_into(r, &fit->part_b, chunks, (int)nf, 3, 2, 1, l->first_b, 1, 0);
	stage_end(r, NN_PASS_REDUCE);
}

static int begin_program(struct recorder *r, int timestamps,
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

static int record_epoch(struct nn_fit *fit)
{
	struct recorder r = {.fit = fit};
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
		sse_base += (int)div_up((uint64_t)t->region.w * t->region.h, GROUP);
	}
	rc = rc ? rc : r.rc;
	rc = rc ? rc : gpu_program_end(fit->epoch_prog);
	if (rc)
		return rc;

	return nn_optim_record(fit);
}

/* The render program: forward and the render head for every tile, writing
 * the prediction of each core into the whole-image output. */
static int record_render(struct nn_fit *fit)
{
	struct recorder r = {.fit = fit};
	int rc = get_pipelines(&r);
	uint64_t pixels = (uint64_t)fit->width * fit->height;
	if (!rc && !fit->image_out.handle)
		rc = gpu_buffer_alloc(fit->arena, pixels * 12, 0, &fit->image_out);
	rc = rc ? rc : begin_program(&r, 0, &fit->render_prog);
	if (rc)
		return rc;
	int saved = fit->nstages;
	int sse_base = 0;
	record_half_weights(&r);
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile *t = &fit->plan.tiles[i];
		record_forward(&r, t);
		struct pass_push p = tile_push(fit, t);
		p.off0 = (uint32_t)fit->layout.out_w;
		p.off1 = (uint32_t)fit->layout.out_b;
		p.i0 = sse_base;
		p.i1 = fit->has_target;
		PASS(&r, r.head_render, p, div_up((uint64_t)p.n, GROUP), 1,
		     &fit->params, last_s(fit), &fit->target,
		     &fit->image_out, &fit->dy, &fit->sse);
		stage_end(&r, NN_PASS_HEAD);
		sse_base += (int)div_up((uint64_t)p.n, GROUP);
	}
	fit->nstages = saved; /* render stages are not timed */
	rc = r.rc;
	return rc ? rc : gpu_program_end(fit->render_prog);
}

/* ------------------------------------------------------------ lifecycle */

static int upload_target(struct nn_fit *fit, const struct image *target)
{
	uint64_t bytes = (uint64_t)fit->width * fit->height * 12;
	if (target)
		return gpu_upload(fit->gpu, &fit->target, 0, target->rgb, bytes);
	return gpu_fill_zero(fit->gpu, &fit->target);
}

int nn_fit_create_sized(struct nn_fit **out, struct gpu_context *gpu,
			int width, int height, const struct image *target,
			const struct nn_config *cfg, const float *init_params,
			char *err, size_t errlen)
{
	struct nn_fit *fit;
	int rc = nn_config_check(cfg, err, errlen);
	*out = NULL;
	if (rc)
		return rc;
	if (width < 1 || height < 1) {
		snprintf(err, errlen, "the image is empty");
		return ERR_INVALID;
	}
	fit = calloc(1, sizeof(*fit));
	if (!fit)
		return ERR_NOMEM;
	fit->gpu = gpu;
	fit->cfg = *cfg;
	if (fit->cfg.lr == NN_LR_AUTO)
		fit->cfg.lr = nn_default_lr(cfg->nf);
	fit->width = width;
	fit->height = height;
	fit->has_target = target != NULL;
	nn_layout_init(&fit->layout, cfg);
	rc = choose_precision(fit, err, errlen);
	if (rc) {
		free(fit);
		return rc;
	}

	rc = plan_tiles(fit, err, errlen);
	rc = rc ? rc : gpu_arena_create(gpu, &fit->arena);
	rc = rc ? rc : alloc_buffers(fit);
	if (rc == ERR_DEVICE_OOM || rc == ERR_TOO_LARGE) {
		if (!*err)
			snprintf(err, errlen,
				 "out of device memory for a %dx%d image at width %d",
				 width, height, cfg->nf);
		rc = ERR_DEVICE_OOM;
	}
	rc = rc ? rc : record_epoch(fit);

	float *params = NULL;
	if (!rc) {
		params = malloc(fit->layout.total * sizeof(float));
		rc = params ? 0 : ERR_NOMEM;
	}
	if (!rc) {
		if (init_params)
			memcpy(params, init_params, fit->layout.total * sizeof(float));
		else
			nn_init_params(cfg, &fit->layout, params);
		rc = gpu_upload(gpu, &fit->params, 0, params,
				fit->layout.total * sizeof(float));
	}
	rc = rc ? rc : nn_optim_reset(fit, params);
	free(params);
	rc = rc ? rc : upload_target(fit, target);
	if (rc) {
		if (!*err)
			snprintf(err, errlen, "cannot set up the fit: %s",
				 error_message(rc));
		nn_fit_destroy(fit);
		return rc;
	}
	*out = fit;
	return 0;
}

void nn_fit_destroy(struct nn_fit *fit)
{
	if (!fit)
		return;
	gpu_program_destroy(fit->epoch_prog);
	gpu_program_destroy(fit->adam_prog);
	gpu_program_destroy(fit->render_prog);
	gpu_arena_destroy(fit->arena);
	tile_plan_finish(&fit->plan);
	free(fit->stages);
	free(fit->history);
	free(fit);
}

/* ------------------------------------------------------------ training */

static double sum_sse(const struct nn_fit *fit)
{
	const float *part = fit->sse.mapped;
	double sum = 0;
	for (int i = 0; i < fit->sse_count; i++)
		sum += part[i];
	return sum;
}

void nn_fit_loss_sums(const struct nn_fit *fit, double sums[3])
{
	const float *part = fit->loss_sums.mapped;
	sums[0] = sums[1] = sums[2] = 0;
	for (int i = 0; part && i < fit->sse_count; i++)
		for (int j = 0; j < 3; j++)
			sums[j] += part[3 * i + j];
}

static void collect_pass_times(struct nn_fit *fit)
{
	memset(fit->pass_ms, 0, sizeof(fit->pass_ms));
	for (int i = 0; i < fit->nstages; i++) {
		const struct stage_time *s = &fit->stages[i];
		fit->pass_ms[s->pass] += gpu_program_elapsed_ms(s->prog, s->from, s->to);
	}
}

static int append_history(struct nn_fit *fit, const struct nn_metrics *m)
{
	if (fit->nhistory == fit->history_cap) {
		int cap = fit->history_cap ? fit->history_cap * 2 : 256;
		struct nn_metrics *h = realloc(fit->history, (size_t)cap * sizeof(*h));
		if (!h)
			return ERR_NOMEM;
		fit->history = h;
		fit->history_cap = cap;
	}
	fit->history[fit->nhistory++] = *m;
	return 0;
}

int nn_fit_step(struct nn_fit *fit, struct nn_metrics *m)
{
	int t = fit->epoch + 1;
	double lr = nn_lr_at(&fit->cfg, t);
	double start = now_ms();

	nn_optim_prepare(fit, t, lr);
	int rc = gpu_program_run(fit->epoch_prog);
	if (rc)
		return rc;
	double sse = sum_sse(fit);
	double mse = sse / (3.0 * fit->width * fit->height) / 4.0;
	if (!isfinite(mse)) {
		/* drop this epoch's gradient; the weights stay as they were */
		rc = gpu_fill_zero(fit->gpu, &fit->grad);
		return rc ? rc : ERR_DIVERGED;
	}
	rc = gpu_program_run(fit->adam_prog);
	if (rc)
		return rc;
	collect_pass_times(fit);
	fit->epoch = t;
	m->epoch = t;
	m->mse = mse;
	m->psnr = mse > 0 ? -10 * log10(mse) : 999;
	m->lr = lr;
	m->psnr_average = 0;
	if (fit->average.handle &&
	    (t % NN_AVERAGE_EVERY == 0 || t == fit->cfg.epochs) &&
	    (rc = nn_fit_average_psnr(fit, &m->psnr_average)))
		return rc;
	m->ms = now_ms() - start;
	return append_history(fit, m);
}

int nn_fit_gradient(struct nn_fit *fit, float *grad, double *sse)
{
	int rc = gpu_program_run(fit->epoch_prog);
	rc = rc ? rc : gpu_download(fit->gpu, &fit->grad, 0, grad,
				    fit->layout.total * sizeof(float));
	*sse = sum_sse(fit);
	return rc ? rc : gpu_fill_zero(fit->gpu, &fit->grad);
}

int nn_fit_epoch(const struct nn_fit *fit)
{
	return fit->epoch;
}

const struct nn_config *nn_fit_config(const struct nn_fit *fit)
{
	return &fit->cfg;
}

void nn_fit_set_epochs(struct nn_fit *fit, int epochs)
{
	fit->cfg.epochs = epochs;
}

const struct nn_metrics *nn_fit_history(const struct nn_fit *fit, int *count)
{
	*count = fit->nhistory;
	return fit->history;
}

/* The fewest bytes each pass that is not a GEMM must move through device
 * memory in an epoch (every operand read once, every result written once;
 * e = nf x the pixels of all tiles), to set against its time. */
static void pass_bytes(const struct nn_fit *fit, double *bytes)
{
	double e = (double)fit->cfg.nf * (double)fit->plan.computed_pixels;
	double nb = fit->cfg.nblocks, copy = fit->precision == NN_PRECISION_FP16;
	double z = copy ? 2 : 4; /* Z as the GEMM reads it */
	int fused = fit->fused_sines, rows = fit->row_passes;
	memset(bytes, 0, NN_PASS_COUNT * sizeof(*bytes));
	bytes[NN_PASS_FIRST] = 4 * e;
	if (!fused) /* read S, write H: forward, and backward but the row
		     * passes' last block */
		bytes[NN_PASS_ACTIVATE] = 8 * e * (2 * nb - (rows ? 1 : 0));
	bytes[NN_PASS_DWCONV] = (4 + z) * e * (2 * nb - 1); /* + recomputes */
	bytes[NN_PASS_HEAD] = (8 + 2 * copy) * e;   /* S_B in, dS out (+fp16) */
	/* the taps' sums read dZ and H (or S); dS: S, dZ in, dS out (+fp16) */
	bytes[NN_PASS_DWCONV_BACK] = (rows ? 16 : 20) * e * nb + 2 * copy * e * nb;
	if (fit->half_storage) { /* forward: + the copy; backward: S in fp16 */
		bytes[NN_PASS_DWCONV] = (4 + 2 + z) * e * nb + (2 + z) * e * (nb - 1);
		bytes[NN_PASS_DWCONV_BACK] -= 2 * 2 * e * nb;
	}
	bytes[NN_PASS_REDUCE] = 4 * e * (nb + 2);  /* biases, out_w, first */
	bytes[NN_PASS_OPTIMIZER] = 7.0 * 4 * (double)fit->layout.total;
}

void nn_fit_get_info(const struct nn_fit *fit, struct nn_fit_info *info)
{
	memset(info, 0, sizeof(*info));
	info->tile_w = fit->plan.core_w;
	info->tile_h = fit->plan.core_h;
	info->tiles_x = fit->plan.tiles_x;
	info->tiles_y = fit->plan.tiles_y;
	info->halo_overhead = (double)fit->plan.computed_pixels /
				      ((double)fit->width * fit->height) - 1;
	info->device_bytes = gpu_arena_bytes(fit->arena);
	memcpy(info->pass_ms, fit->pass_ms, sizeof(info->pass_ms));
	double nf = fit->cfg.nf;
	info->gflop_per_epoch = 6.0 * fit->cfg.nblocks * nf * nf *
				(double)fit->plan.computed_pixels * 1e-9;
	info->precision = nn_precision_name(fit->precision);
	pass_bytes(fit, info->pass_bytes);
}

/* ------------------------------------------------- weights in and out */

int nn_fit_read_params(struct nn_fit *fit, float *params, float *m, float *v)
{
	uint64_t bytes = fit->layout.total * sizeof(float);
	int rc = params ? gpu_download(fit->gpu, &fit->params, 0, params, bytes) : 0;
	rc = rc || !m ? rc : gpu_download(fit->gpu, &fit->adam_m, 0, m, bytes);
	rc = rc || !v ? rc : gpu_download(fit->gpu, &fit->adam_v, 0, v, bytes);
	return rc;
}

int nn_fit_write_state(struct nn_fit *fit, const float *params,
		       const float *m, const float *v, int epoch,
		       const struct nn_metrics *history, int nhistory)
{
	uint64_t bytes = fit->layout.total * sizeof(float);
	int rc = gpu_upload(fit->gpu, &fit->params, 0, params, bytes);
	rc = rc ? rc : gpu_upload(fit->gpu, &fit->adam_m, 0, m, bytes);
	rc = rc ? rc : gpu_upload(fit->gpu, &fit->adam_v, 0, v, bytes);
	rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->grad);
	if (rc)
		return rc;
	fit->epoch = epoch;
	fit->nhistory = 0;
	for (int i = 0; i < nhistory && rc == 0; i++)
		rc = append_history(fit, &history[i]);
	return rc;
}

int nn_fit_render(struct nn_fit *fit, struct image **recon, double *psnr)
{
	int rc = fit->render_prog ? 0 : record_render(fit);
	rc = rc ? rc : gpu_program_run(fit->render_prog);
	if (rc)
		return rc;
	if (psnr) {
		double mse = sum_sse(fit) / (3.0 * fit->width * fit->height) / 4.0;
		*psnr = mse > 0 ? -10 * log10(mse) : 999;
	}
	if (!recon)
		return 0;
	struct image *img = image_create(fit->width, fit->height);
	if (!img)
		return ERR_NOMEM;
	uint64_t count = (uint64_t)fit->width * fit->height * 3;
	rc = gpu_download(fit->gpu, &fit->image_out, 0, img->rgb, count * 4);
	if (rc) {
		image_destroy(img);
		return rc;
	}
	for (uint64_t i = 0; i < count; i++)
		img->rgb[i] = (img->rgb[i] + 1.0f) * 0.5f;
	*recon = img;
	return 0;
}

/*
 * The averaged weights go through fit->params for rendering: the live
 * weights are kept on the host meanwhile and put back after, so the
 * recorded programs serve both. Cheap next to an epoch, and only done
 * when asked (exports, evaluations).
 */
int nn_fit_swap_average_in(struct nn_fit *fit, float **live)
{
	size_t bytes = fit->layout.total * sizeof(float);
	float *avg = malloc(bytes);
	*live = malloc(bytes);
	int rc = avg && *live ? 0 : ERR_NOMEM;
	rc = rc ? rc : nn_fit_read_params(fit, *live, NULL, NULL);
	rc = rc ? rc : gpu_download(fit->gpu, &fit->average, 0, avg, bytes);
	rc = rc ? rc : gpu_upload(fit->gpu, &fit->params, 0, avg, bytes);
	free(avg);
	return rc;
}

int nn_fit_swap_average_out(struct nn_fit *fit, float *live)
{
	int rc = live ? gpu_upload(fit->gpu, &fit->params, 0, live,
				   fit->layout.total * sizeof(float))
		      : ERR_NOMEM;
	free(live);
	return rc;
}

int nn_fit_average_psnr(struct nn_fit *fit, double *psnr)
{
	float *live = NULL;
	if (!fit->average.handle)
		return ERR_INVALID;
	int rc = nn_fit_swap_average_in(fit, &live);
	rc = rc ? rc : nn_fit_render(fit, NULL, psnr);
	int back = nn_fit_swap_average_out(fit, live);
	return rc ? rc : back;
}
