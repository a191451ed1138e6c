/*
 * optim.c - the optimizer step on the device, after each epoch's summed
 * gradient: Muon for the pointwise width x width weights (when the recipe
 * asks for it), Adam for every other parameter, then the weight average.
 *
 * Muon, per block: momentum m = 0.95 m + g and its Nesterov form
 * g + 0.95 m, scaled to unit Frobenius norm, then five Newton-Schulz steps
 * X <- a X + (b A + c A^2) X with A = X X^T (a, b, c = 3.4445, -4.7750,
 * 2.0315), all in fp32: three products a step (ns_gemm.comp), every block
 * in one dispatch, the scaling folded into the first step's (the norm is
 * the trace of G G^T). The weight moves by lr * 0.2 sqrt(nf) times the
 * result (so that an update has about Adam's RMS and one rate serves both).
 * The momentum pass clears those gradients, so the Adam pass that follows
 * leaves the pointwise weights and their Adam moments at zero change.
 *
 * The average is an exponential moving average with the usual warmup of
 * its decay, min(decay, (1 + t) / (10 + t)), so early epochs are not
 * dominated by the initial weights.
 *
 * Before all of it, the best model kept (fit.h, struct nn_best): when the
 * host found the epoch's loss, measured on the weights before this step,
 * better than the best so far, the program's first pass copies them into
 * fit->best; otherwise that pass does nothing. A second, one-pass program
 * copies the average there instead, when its measurement wins.
 *
 * Everything is recorded once, into the fit's optimizer program; the
 * per-epoch scalars go through the host-visible step buffer:
 *   step[0] = lr / (1 - 0.9^t)   step[1] = sqrt(1 - 0.999^t)   (Adam)
 *   step[2] = 1 - EMA decay at t  step[3] = Muon's step size
 *   step[4] = 1: keep the weights as the best model, 0: not
 * Every sum runs in a fixed order: a run is deterministic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/fit_internal.h"
#include "nn/optim.h"
#include "nn/passes.h"

#define MUON_MOMENTUM 0.95f
#define NS_STEPS 5
#define NS_MATRICES 4    /* scratch matrices a block: X, X', A, B */
#define NS_TILE 64       /* ns_gemm.comp's block of outputs */
#define NS_SMALL_MOST 32 /* ns_small.comp's widest */
/* The symmetric products (A and B) dispatch the blocks on and above the
 * diagonal alone, about half. On the H200 (132 SMs) that pays once the
 * general grid holds more than about two workgroups an SM: with 4 blocks,
 * A and B take 119 and 102 us instead of 168 and 163 at NF 768, 229 and
 * 206 instead of 313 and 289 at NF 1024; but at NF 512 the 144
 * workgroups still leave some SMs two, and the mirrored stores make it 44
 * us against 43. */
#define NS_SYM_GROUPS 512
/* ns_gemm.comp's flags (push i3): a symmetric product; operands from the
 * unnormalised G, scaled by powers of 1 / s, s = sqrt(trace G G^T) */
#define NS_SYM 1
#define NS_FROM_G 2
#define NS_POW(l, r, d) ((l) << 2 | (r) << 4 | (d) << 6)
static const float ns_coeff[3] = { 3.4445f, -4.7750f, 2.0315f };
#define STEP_KEEP 4 /* the step buffer's keep flag */

uint64_t nn_optim_bytes(const struct nn_fit *fit)
{
	uint64_t nn = (uint64_t)fit->cfg.nf * fit->cfg.nf, bytes = 0;
	if (fit->cfg.recipe.optimizer == NN_OPTIMIZER_MUON)
		bytes +=
		    4 * nn * (uint64_t)fit->cfg.nblocks * (1 + NS_MATRICES);
	if (fit->cfg.recipe.average == NN_AVERAGE_EMA)
		bytes += 4 * (uint64_t)fit->layout.total;
	return bytes;
}

int nn_optim_alloc(struct nn_fit *fit)
{
	uint64_t nn = (uint64_t)fit->cfg.nf * fit->cfg.nf;
	int rc = 0;
	if (fit->cfg.recipe.optimizer == NN_OPTIMIZER_MUON) {
		rc = gpu_buffer_alloc(fit->arena, 4 * nn * fit->cfg.nblocks, 0,
				      &fit->muon_m);
		rc = rc ? rc
			: gpu_buffer_alloc(fit->arena,
					   4 * NS_MATRICES * nn *
					       fit->cfg.nblocks,
					   0, &fit->muon_x);
	}
	if (!rc && fit->cfg.recipe.average == NN_AVERAGE_EMA)
		rc = gpu_buffer_alloc(fit->arena, fit->layout.total * 4, 0,
				      &fit->average);
	return rc;
}

int nn_optim_reset(struct nn_fit *fit, const float *params)
{
	int rc = gpu_fill_zero(fit->gpu, &fit->grad);
	rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->adam_m);
	rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->adam_v);
	if (!rc && fit->muon_m.handle)
		rc = gpu_fill_zero(fit->gpu, &fit->muon_m);
	if (!rc && fit->average.handle)
		rc = gpu_upload(fit->gpu, &fit->average, 0, params,
				fit->layout.total * sizeof(float));
	/* no best measured yet (fit->kept.epoch < 0): the weights stand in */
	return rc ? rc
		  : gpu_upload(fit->gpu, &fit->best, 0, params,
			       fit->layout.total * sizeof(float));
}

/* ------------------------------------------------------------ recording */

struct optim_recorder {
	struct nn_fit *fit;
	struct gpu_program *prog;
	int rc;
};

/* A dispatch with no barrier after it: the caller puts one where the next
 * dispatch reads or writes what this one writes (each barrier is a wait
 * for the device to drain, which a small fit's optimizer is made of). */
static void dispatch(struct optim_recorder *r, struct gpu_pipeline *pipe,
		     const struct gpu_buffer *const *bufs, int n, const void *p,
		     uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz)
{
	if (r->rc == 0)
		r->rc = gpu_program_dispatch(r->prog, pipe, bufs, n, p,
					     push_bytes, gx, gy, gz);
}

/* A dispatch, then a barrier. */
static void run(struct optim_recorder *r, struct gpu_pipeline *pipe,
		const struct gpu_buffer *const *bufs, int n, const void *p,
		uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz)
{
	dispatch(r, pipe, bufs, n, p, push_bytes, gx, gy, gz);
	gpu_program_barrier(r->prog);
}

/* C = p D + q L R(^T) on NF x NF matrices of the scratch buffer, for
 * every block at once (block k's matrices lie k * stride floats further).
 * NS_SYM: L R(^T) and D are symmetric, and only the blocks that hold some
 * (r, c) with r <= c are dispatched, row block i's from column block i on
 * (the shader stores each of those outputs at (c, r) too). NS_FROM_G: L,
 * R and D are scaled as NS_POW says by 1 / s, s = sqrt(trace G G^T) + 1e-7
 * with G G^T at offset gg. */
static void ns_product(struct optim_recorder *r, struct gpu_pipeline *pipe,
		       int flags, uint32_t l, uint32_t rr, uint32_t d,
		       uint32_t c, float p, float q, uint32_t stride,
		       uint32_t gg)
{
	const struct gpu_buffer *bufs[1] = { &r->fit->muon_x };
	uint32_t nf = (uint32_t)r->fit->cfg.nf, tiles = div_up(nf, NS_TILE);
	uint32_t gx = tiles, gy = tiles;
	if (flags & NS_SYM) {
		gx = tiles * (tiles + 1) / 2;
		gy = 1;
	}
	struct ns_push push = { .gg = gg,
				.l = l,
				.r = rr,
				.d = d,
				.c = c,
				.p = p,
				.q = q,
				.stride = (int32_t)stride,
				.flags = flags };
	run(r, pipe, bufs, 1, &push, sizeof(push), gx, gy,
	    (uint32_t)r->fit->cfg.nblocks);
}

/* Each block's weights take their step from its orthogonalised update,
 * at offset x of its scratch matrices (the blocks' dispatches touch
 * apart weights: one barrier after them all). */
static void record_update(struct optim_recorder *r, struct gpu_pipeline *update,
			  const struct gpu_buffer *const bufs[5], uint32_t x)
{
	struct nn_fit *fit = r->fit;
	uint32_t nn = (uint32_t)(fit->cfg.nf * fit->cfg.nf);
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		struct muon_push p = { .w_off = (uint32_t)fit->layout.pw_w[k],
				       .x_off =
					   (uint32_t)k * NS_MATRICES * nn + x };
		dispatch(r, update, bufs, 5, &p, sizeof(p), div_up(nn, GROUP),
			 1, 1);
	}
	gpu_program_barrier(r->prog);
}

static int record_muon(struct optim_recorder *r)
{
	struct nn_fit *fit = r->fit;
	struct gpu_context *gpu = fit->gpu;
	uint32_t nf = (uint32_t)fit->cfg.nf, nn = nf * nf;
	uint32_t spec[2] = { nf, float_bits(fit->cfg.w0) };
	uint32_t muon = sizeof(struct muon_push), ns = sizeof(struct ns_push);
	struct gpu_pipeline *momentum, *update, *gemm, *gemm_t;
	int rc =
	    gpu_pipeline_get(gpu, "muon_momentum", 5, muon, spec, 2, &momentum);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "muon_update", 5, muon, spec, 2,
				   &update);
	rc = rc ? rc : gpu_pipeline_get(gpu, "ns_gemm", 1, ns, spec, 2, &gemm);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "ns_gemm_trans", 1, ns, spec, 2,
				   &gemm_t);
	if (rc)
		return rc;
	const struct gpu_buffer *bufs[5] = { &fit->params, &fit->grad,
					     &fit->muon_m, &fit->muon_x,
					     &fit->step };
	/* scratch, per block: two X in turn, A = X X^T, B = b A + c A^2 */
	const uint32_t xa = 0, xb = nn, a = 2 * nn, b = 3 * nn;
	const uint32_t stride = NS_MATRICES * nn;
	/* the blocks' momenta are apart, and apart from the best model's
	 * copy of the weights before them (record_keep): one barrier */
	struct muon_push p = { .momentum = MUON_MOMENTUM };
	for (int k = 0; k < fit->cfg.nblocks; k++) {
		p.w_off = (uint32_t)fit->layout.pw_w[k];
		p.x_off = (uint32_t)k * stride + xa;
		p.m_off = (uint32_t)k * nn;
		dispatch(r, momentum, bufs, 5, &p, sizeof(p), div_up(nn, GROUP),
			 1, 1);
	}
	gpu_program_barrier(r->prog);
	/* X = G / s, s = |G|_F + 1e-7 = sqrt(trace G G^T) + 1e-7, is never
	 * written (muon.comp's NORM pass took 0.25 ms at NF 512, one
	 * workgroup a block): the first step computes G G^T, then takes A
	 * and X from it and G, scaled as they are read. A = X X^T and B =
	 * b A + c A^2 are symmetric. */
	if (nf <= NS_SMALL_MOST) {
		/* the five steps in one dispatch (ns_small.comp): the chain of
		 * 15 products is what a small fit's optimizer waits on */
		struct gpu_pipeline *small;
		uint32_t out = NS_STEPS % 2 ? xb : xa;
		const char *ns_name =
		    fit->vars.ns_lanes ? "ns_small_cpu" : "ns_small";
		rc = gpu_pipeline_get(gpu, ns_name, 1,
				      sizeof(struct ns_small_push), spec, 2,
				      &small);
		if (rc)
			return rc;
		struct ns_small_push nsp = {
			.x_off = xa,
			.out_off = out,
			.c0 = ns_coeff[0],
			.c1 = ns_coeff[1],
			.c2 = ns_coeff[2],
			.stride = (int32_t)stride,
		};
		const struct gpu_buffer *scratch[1] = { &fit->muon_x };
		run(r, small, scratch, 1, &nsp, sizeof(nsp), 1, 1,
		    (uint32_t)fit->cfg.nblocks);
		record_update(r, update, bufs, out);
		return r->rc;
	}
	uint32_t tiles = div_up(nf, NS_TILE), x = xa, next = xb;
	int sym = tiles * tiles * (uint32_t)fit->cfg.nblocks >= NS_SYM_GROUPS
		      ? NS_SYM
		      : 0;
	for (int s = 0; s < NS_STEPS; s++) {
		int g = s ? 0 : NS_FROM_G;
		ns_product(r, gemm_t, sym, x, x, a, a, 0.0f, 1.0f, stride, 0);
		ns_product(r, gemm, sym | g | (g ? NS_POW(2, 2, 2) : 0), a, a,
			   a, b, ns_coeff[1], ns_coeff[2], stride, a);
		ns_product(r, gemm, g | (g ? NS_POW(0, 1, 1) : 0), b, x, x,
			   next, ns_coeff[0], 1.0f, stride, a);
		uint32_t t = x;
		x = next;
		next = t;
	}
	record_update(r, update, bufs, x);
	return r->rc;
}

/* best = weights, when step[flag] is not zero (flag < 0: always); with
 * no barrier after it when the next dispatches write neither (Muon's
 * momenta, which read and clear the gradient alone). */
static void record_keep(struct optim_recorder *r, struct gpu_pipeline *keep,
			const struct gpu_buffer *weights, int flag, int barrier)
{
	const struct gpu_buffer *bufs[3] = { weights, &r->fit->best,
					     &r->fit->step };
	struct params_push p = { .n = (int)r->fit->layout.total, .flag = flag };
	dispatch(r, keep, bufs, 3, &p, sizeof(p),
		 div_up(r->fit->layout.total, GROUP), 1, 1);
	if (barrier)
		gpu_program_barrier(r->prog);
}

/* The program that copies the average into the best, alone. */
static int record_keep_average(struct nn_fit *fit, struct gpu_pipeline *keep)
{
	struct optim_recorder r = { .fit = fit };
	int rc = gpu_program_create(fit->gpu, 0, &fit->keep_average_prog);
	if (rc)
		return rc;
	r.prog = fit->keep_average_prog;
	record_keep(&r, keep, &fit->average, -1, 1);
	return r.rc ? r.rc : gpu_program_end(r.prog);
}

int nn_optim_record(struct nn_fit *fit)
{
	struct optim_recorder r = { .fit = fit };
	struct gpu_context *gpu = fit->gpu;
	uint32_t spec[2] = { (uint32_t)fit->cfg.nf, float_bits(fit->cfg.w0) };
	uint32_t push = sizeof(struct params_push);
	struct gpu_pipeline *adam, *keep, *average = NULL;
	int rc = gpu_program_create(gpu, 2, &fit->adam_prog);
	rc = rc ? rc : gpu_pipeline_get(gpu, "adam", 5, push, spec, 2, &adam);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "keep_best", 3, push, spec, 2, &keep);
	if (!rc && fit->average.handle)
		rc = gpu_pipeline_get(gpu, "average", 3, push, spec, 2,
				      &average);
	if (!rc && average)
		rc = record_keep_average(fit, keep);
	if (rc)
		return rc;
	r.prog = fit->adam_prog;
	int from = gpu_program_timestamp(r.prog);
	record_keep(&r, keep, &fit->params, STEP_KEEP, !fit->muon_m.handle);
	if (fit->muon_m.handle && (rc = record_muon(&r)))
		return rc;

	struct params_push p = { .n = (int)fit->layout.total };
	uint32_t groups = div_up(fit->layout.total, GROUP);
	const struct gpu_buffer *adam_bufs[5] = { &fit->params, &fit->grad,
						  &fit->adam_m, &fit->adam_v,
						  &fit->step };
	run(&r, adam, adam_bufs, 5, &p, sizeof(p), groups, 1, 1);
	if (average) {
		const struct gpu_buffer *avg_bufs[3] = { &fit->params,
							 &fit->average,
							 &fit->step };
		run(&r, average, avg_bufs, 3, &p, sizeof(p), groups, 1, 1);
	}
	int to = gpu_program_timestamp(r.prog);
	if (from >= 0 && to >= 0 && fit->nstages < fit->max_stages)
		fit->stages[fit->nstages++] =
		    (struct stage_time){ r.prog, NN_PASS_OPTIMIZER, from, to };
	return r.rc ? r.rc : gpu_program_end(r.prog);
}

void nn_optim_prepare(struct nn_fit *fit, int t, double lr)
{
	const struct nn_recipe *rc = &fit->cfg.recipe;
	float *step = fit->step.mapped;
	double bc1 = 1 - pow(0.9, t), bc2 = 1 - pow(0.999, t);
	double decay = (1.0 + t) / (10.0 + t);
	if (decay > rc->ema_decay)
		decay = rc->ema_decay;
	step[0] = (float)(lr / bc1);
	step[1] = (float)sqrt(bc2);
	step[2] = (float)(1 - decay);
	step[3] = (float)(lr * 0.2 * sqrt((double)fit->cfg.nf));
	step[STEP_KEEP] = 0;
}

void nn_optim_keep_live(struct nn_fit *fit, int keep)
{
	float *step = fit->step.mapped;
	step[STEP_KEEP] = keep ? 1.0f : 0.0f;
}
