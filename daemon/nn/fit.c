/*
 * fit.c - the training engine: one ConvSIREN fitted to one image on one
 * Vulkan device (see fit.h for the contract).
 *
 * At creation the fit plans its tiles, allocates every buffer once from an
 * arena (parameters, gradient, both Adam moments, the best model's
 * weights, the target, one activation buffer per layer sized for the
 * largest tile, two scratch buffers and the partial-sum buffers) and
 * records two programs (record.c): the epoch (every tile forward, head,
 * backward, with the gradient summed over tiles) and the optimizer step
 * (optim.c). An epoch is then: write the step size into a small
 * host-visible buffer, run the epoch, add up the squared errors on the
 * host in double, flag whether the weights just measured beat the best
 * model (fit.h, struct nn_best), run the optimizer, whose first pass then
 * keeps them. Nothing is recorded or allocated per epoch, and every
 * reduction happens in a fixed order, so a run is deterministic on a
 * given device and a resumed run continues bit for bit.
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
 * halves around the loss passes (record_loss_head in record.c,
 * shaders/loss.comp) and the halo grows by the loss's radius; with MSE
 * alone the fused head runs.
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
#include "nn/record.h"
#include "nn/variants.h"

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

/* ------------------------------------------------------------ planning */

/* auto takes the tensor cores where the device has them, fp32 elsewhere.
 * Gradient operands are scaled by the number of values the loss averages
 * (times 16), which brings them from ~1e-7 into fp16's range. */
static int choose_precision(struct nn_fit *fit, char *err, size_t errlen)
{
	const struct gpu_device_info *info = gpu_info(fit->gpu);
	enum nn_precision p = fit->cfg.precision;
	if (p == NN_PRECISION_FP16 && !info->has_tensor_cores) {
		snprintf(err, errlen,
			 "%s has no fp16 tensor-core path "
			 "(cooperative matrices 16x8x16): use --precision fp32",
			 info->name);
		return ERR_INVALID;
	}
	if (p == NN_PRECISION_AUTO)
		p = info->has_tensor_cores ? NN_PRECISION_FP16
					   : NN_PRECISION_FP32;
	fit->precision = p;
	/* the pass families, GEMM family and storage (variants.c); the
	 * exact renders' in fp32 */
	fit->vars = nn_variants_of(fit->gpu, p, fit->cfg.nf);
	fit->vars32 = nn_variants_of(fit->gpu, NN_PRECISION_FP32, fit->cfg.nf);
	/* The backward keeps dS in fp32 and fp16 and the data gradient
	 * writes dZ in fp32: dS in fp16 alone and dZ in fp16 too were
	 * measured slower on the H200 and removed (docs/BENCHMARKS.md). */
	/* the loss terms add to the gradient: heavy weights must not push the
	 * scaled fp16 copies past their range */
	const struct nn_recipe *rc = &fit->cfg.recipe;
	double weights = 1 + rc->loss_ssim + rc->loss_grad + rc->loss_chroma;
	fit->grad_scale =
	    (float)(16.0 * 3.0 * fit->width * fit->height / weights);
	return 0;
}

static int plan_tiles(struct nn_fit *fit, char *err, size_t errlen)
{
	const struct gpu_device_info *info = gpu_info(fit->gpu);
	uint64_t nf = (uint64_t)fit->cfg.nf,
		 pixels = (uint64_t)fit->width * fit->height;
	struct tile_limits lim = { 0 };

	lim.budget_bytes = fit->cfg.mem_budget ? fit->cfg.mem_budget
					       : info->budget_bytes / 10 * 8;
	/* weights, gradient, moments, the best weights, target and
	 * reconstruction, partial sums, and what the arena's shared blocks
	 * may leave unused */
	lim.fixed_bytes = 5 * fit->layout.total * 4 + 2 * pixels * 12 +
			  (96u << 20) + (256u << 20) + nn_optim_bytes(fit);
	/* S_0..S_B, Z (or dZ), dS; the fp16 path adds fp16 copies of Z and
	 * dS, and keeps S_0..S_B-1 in fp16 and no S_B (see alloc_buffers) */
	lim.bytes_per_pixel = 4 * nf * (uint64_t)(fit->cfg.nblocks + 3) + 16;
	if (nn_loss_has_terms(&fit->cfg.recipe))
		lim.bytes_per_pixel += 12 + 36; /* predictions, SSIM's terms */
	if (fit->precision == NN_PRECISION_FP16)
		lim.bytes_per_pixel += 2 * 2 * nf;
	if (fit->vars.half_s)
		lim.bytes_per_pixel -=
		    2 * nf * (uint64_t)fit->cfg.nblocks + 4 * nf;
	lim.max_pixels = info->max_storage_range / (4 * nf);
	if (lim.max_pixels > 65535ull * GROUP)
		lim.max_pixels = 65535ull * GROUP;
	lim.max_core = fit->cfg.max_tile;
	if (pixels * 12 > info->max_storage_range) {
		snprintf(
		    err, errlen,
		    "the image (%dx%d) is larger than this device can hold "
		    "in one buffer",
		    fit->width, fit->height);
		return ERR_TOO_LARGE;
	}
	/* the halo: the receptive field, plus the loss's reach from a core
	 * pixel, whose predictions must be exact too */
	int halo = nn_config_pad(&fit->cfg) + nn_loss_radius(&fit->cfg.recipe);
	int rc =
	    nn_tile_plan_make(&fit->plan, fit->width, fit->height, halo, &lim);
	if (rc == ERR_DEVICE_OOM)
		snprintf(
		    err, errlen,
		    "not enough device memory for width %d even with small "
		    "tiles (budget %llu MiB)",
		    fit->cfg.nf, (unsigned long long)(lim.budget_bytes >> 20));
	return rc;
}

/* ------------------------------------------------------------ buffers */

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
	rc = rc ? rc
		: gpu_buffer_alloc(a, 12 * (uint64_t)fit->sse_count, 1,
				   &fit->loss_sums);
	return rc;
}

static int alloc_buffers(struct nn_fit *fit)
{
	struct gpu_arena *a = fit->arena;
	uint64_t nf = (uint64_t)fit->cfg.nf,
		 n = (uint64_t)fit->plan.max_region_pixels;
	uint64_t pixels = (uint64_t)fit->width * fit->height;
	uint64_t act = 4 * nf * n;
	int chunks = (int)div_up(n, REDUCE_CHUNK);
	int rc = 0;

	fit->sse_count = 0;
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile_rect *r = &fit->plan.tiles[i].region;
		fit->sse_count += (int)div_up((uint64_t)r->w * r->h, GROUP);
	}
	uint64_t part_a = (uint64_t)nn_nt_splits(fit, (int)n) * nf * nf;
	if (part_a < (uint64_t)chunks * 3)
		part_a = (uint64_t)chunks * 3;
	int most_chunks = chunks; /* also the depthwise passes' chunks */
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile_rect *t = &fit->plan.tiles[i].region;
		int c = (int)row_chunks(t->w, t->h);
		most_chunks = c > most_chunks ? c : most_chunks;
		for (int k = 0; k < fit->cfg.nblocks;
		     k++) { /* and the strips' */
			c = (int)dw_strip_chunks(t->w, t->h,
						 fit->cfg.dilations[k]);
			most_chunks = c > most_chunks ? c : most_chunks;
		}
	}
	uint64_t part_b = (uint64_t)most_chunks * 9 * nf;

	uint64_t total = fit->layout.total * 4;
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->params);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->grad);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->adam_m);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->adam_v);
	rc = rc ? rc : gpu_buffer_alloc(a, total, 0, &fit->best);
	rc = rc ? rc : gpu_buffer_alloc(a, NN_STEP_FLOATS * 4, 1, &fit->step);
	rc = rc ? rc : gpu_buffer_alloc(a, pixels * 12, 0, &fit->target);
	/* the fp16 path with fused sines keeps S_0..S_B-1 in fp16 for the
	 * backward; the forward's fp32 S_k, and S_B, live in z meanwhile */
	for (int k = 0; k <= fit->cfg.nblocks; k++) {
		if (fit->vars.half_s && k == fit->cfg.nblocks)
			break;
		uint64_t bytes = fit->vars.half_s ? act / 2 : act;
		rc = rc ? rc : gpu_buffer_alloc(a, bytes, 0, &fit->s[k]);
	}
	rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->z);
	rc = rc ? rc : gpu_buffer_alloc(a, act, 0, &fit->g);
	rc = rc ? rc : gpu_buffer_alloc(a, 12 * n, 0, &fit->dy);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * part_a, 0, &fit->part_a);
	rc = rc ? rc : gpu_buffer_alloc(a, 4 * part_b, 0, &fit->part_b);
	rc = rc ? rc
		: gpu_buffer_alloc(a, 4 * (uint64_t)fit->sse_count, 1,
				   &fit->sse);
	if (fit->precision == NN_PRECISION_FP16) {
		/* rows padded to 16 pixels; the padding must start as zeros */
		uint64_t half = 2 * nf * (n + 16);
		rc = rc ? rc : gpu_buffer_alloc(a, half, 0, &fit->z16);
		rc = rc ? rc : gpu_buffer_alloc(a, half, 0, &fit->g16);
		rc = rc ? rc
			: gpu_buffer_alloc(a, 2 * nf * nf * fit->cfg.nblocks, 0,
					   &fit->p16);
		rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->z16);
		rc = rc ? rc : gpu_fill_zero(fit->gpu, &fit->g16);
	}
	rc = rc ? rc : alloc_loss_buffers(fit);
	return rc ? rc : nn_optim_alloc(fit);
}

/* ------------------------------------------------------------ lifecycle */

static int upload_target(struct nn_fit *fit, const struct image *target)
{
	uint64_t bytes = (uint64_t)fit->width * fit->height * 12;
	if (target)
		return gpu_upload(fit->gpu, &fit->target, 0, target->rgb,
				  bytes);
	return gpu_fill_zero(fit->gpu, &fit->target);
}

int nn_fit_create_sized(struct nn_fit **out, struct gpu_context *gpu, int width,
			int height, const struct image *target,
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
	static uint64_t serials;
	fit->gpu = gpu;
	fit->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	fit->cfg = *cfg;
	nn_resolve_auto(&fit->cfg.nf, 0, &fit->cfg.lr, &fit->cfg.recipe);
	fit->width = width;
	fit->height = height;
	fit->has_target = target != NULL;
	fit->kept = (struct nn_best){ .psnr = 0, .epoch = -1 };
	/* VKINR_AVERAGE_EVERY and VKINR_FP32_FINISH override the two for
	 * measurements (tests/bench_precision.py), not for users */
	const struct gpu_switches *sw = gpu_switches(gpu);
	fit->average_every =
	    sw->average_every > 0 ? sw->average_every : NN_AVERAGE_EVERY;
	int small = (int64_t)width * height <= NN_FP16_ONLY_PIXELS &&
		    fit->cfg.nf <= NN_FP16_ONLY_WIDTH;
	fit->fp32_finish = sw->has_fp32_finish ? sw->fp32_finish
			   : small             ? 0
					       : NN_FP32_FINISH;
	nn_layout_init(&fit->layout, cfg);
	rc = choose_precision(fit, err, errlen);
	if (rc) {
		free(fit);
		return rc;
	}

	double t0 = now_ms();
	rc = plan_tiles(fit, err, errlen);
	rc = rc ? rc : gpu_arena_create(gpu, &fit->arena);
	rc = rc ? rc : alloc_buffers(fit);
	if (rc == ERR_DEVICE_OOM || rc == ERR_TOO_LARGE) {
		if (!*err)
			snprintf(err, errlen,
				 "out of device memory for a %dx%d image at "
				 "width %d",
				 width, height, cfg->nf);
		rc = ERR_DEVICE_OOM;
	}
	double t1 = now_ms();
	rc = rc ? rc : nn_record_epoch(fit);
	double t2 = now_ms();

	float *params = NULL;
	if (!rc) {
		params = malloc(fit->layout.total * sizeof(float));
		rc = params ? 0 : ERR_NOMEM;
	}
	if (!rc) {
		if (init_params)
			memcpy(params, init_params,
			       fit->layout.total * sizeof(float));
		else
			nn_init_params(cfg, &fit->layout, params);
		rc = gpu_upload(gpu, &fit->params, 0, params,
				fit->layout.total * sizeof(float));
	}
	rc = rc ? rc : nn_optim_reset(fit, params);
	free(params);
	rc = rc ? rc : upload_target(fit, target);
	fit->buffers_ms = (t1 - t0) + (now_ms() - t2);
	fit->programs_ms = t2 - t1;
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

/* Frees what the fit holds on the device and its plan; the host side
 * (config, epoch, history) stays. */
static void release_device(struct nn_fit *fit)
{
	gpu_program_destroy(fit->epoch_prog);
	gpu_program_destroy(fit->adam_prog);
	if (fit->quick_render_prog != fit->render_prog)
		gpu_program_destroy(fit->quick_render_prog);
	gpu_program_destroy(fit->render_prog);
	gpu_program_destroy(fit->avg_render_prog);
	gpu_program_destroy(fit->keep_average_prog);
	fit->epoch_prog = fit->adam_prog = fit->keep_average_prog = NULL;
	fit->render_prog = fit->quick_render_prog = fit->avg_render_prog = NULL;
	gpu_arena_destroy(fit->arena);
	fit->arena = NULL;
	nn_tile_plan_finish(&fit->plan);
	free(fit->stages);
	fit->stages = NULL;
}

void nn_fit_drop_read_ahead(struct nn_fit *fit)
{
	for (int i = 0; i < fit->nahead; i++)
		free(fit->ahead[i].data);
	fit->nahead = 0;
}

void nn_fit_destroy(struct nn_fit *fit)
{
	if (!fit)
		return;
	release_device(fit);
	nn_fit_drop_read_ahead(fit);
	free(fit->history);
	free(fit);
}

/* ------------------------------------------------- changing precision */

/* What a rebuild carries over, in host memory. */
struct carried {
	float *params, *m, *v, *muon_m, *average, *best;
	struct image *target;
};

static void carried_free(struct carried *c)
{
	free(c->params), free(c->m), free(c->v), free(c->muon_m);
	free(c->average), free(c->best);
	image_destroy(c->target);
}

/* A whole buffer to the host (*out NULL when the fit has none), and
 * back into a fit's buffer of the same role (nothing when either side
 * has none). */
static int download_buffer(struct nn_fit *fit, const struct gpu_buffer *b,
			   float **out)
{
	*out = NULL;
	if (!b->handle)
		return 0;
	*out = malloc(b->size);
	return *out ? gpu_download(fit->gpu, b, 0, *out, b->size) : ERR_NOMEM;
}

static int upload_buffer(struct nn_fit *fit, const struct gpu_buffer *b,
			 const float *data)
{
	return data && b->handle ? gpu_upload(fit->gpu, b, 0, data, b->size)
				 : 0;
}

static int carry_out(struct nn_fit *fit, struct carried *c)
{
	size_t bytes = fit->layout.total * sizeof(float);
	c->params = malloc(bytes), c->m = malloc(bytes), c->v = malloc(bytes);
	int rc = c->params && c->m && c->v ? 0 : ERR_NOMEM;
	rc = rc ? rc : nn_fit_read_params(fit, c->params, c->m, c->v);
	rc = rc ? rc : download_buffer(fit, &fit->muon_m, &c->muon_m);
	rc = rc ? rc : download_buffer(fit, &fit->average, &c->average);
	rc = rc ? rc : download_buffer(fit, &fit->best, &c->best);
	if (rc == 0 && fit->has_target) {
		c->target = image_create(fit->width, fit->height);
		rc = c->target ? 0 : ERR_NOMEM;
		rc =
		    rc ? rc
		       : gpu_download(fit->gpu, &fit->target, 0, c->target->rgb,
				      (uint64_t)fit->width * fit->height * 12);
	}
	return rc;
}

/* A fresh fit in precision p from what was carried, its history and
 * epoch those of fit. */
static int rebuild(const struct nn_fit *fit, const struct carried *c,
		   enum nn_precision p, struct nn_fit **out)
{
	struct nn_config cfg = fit->cfg;
	char err[256] = "";
	cfg.precision = p;
	int rc =
	    nn_fit_create_sized(out, fit->gpu, fit->width, fit->height,
				c->target, &cfg, c->params, err, sizeof(err));
	if (rc)
		return rc;
	struct nn_fit *fresh = *out;
	fresh->cfg.precision = fit->cfg.precision; /* what was asked */
	/* the run's rules as they were made at its start */
	fresh->fp32_finish = fit->fp32_finish;
	fresh->average_every = fit->average_every;
	rc = nn_fit_write_state(fresh, c->params, c->m, c->v, fit->epoch,
				fit->history, fit->nhistory);
	rc = rc ? rc : upload_buffer(fresh, &fresh->muon_m, c->muon_m);
	rc = rc ? rc : upload_buffer(fresh, &fresh->average, c->average);
	/* the best model, its weights and what is known of them */
	rc = rc ? rc : upload_buffer(fresh, &fresh->best, c->best);
	fresh->kept = fit->kept;
	memcpy(fresh->exported, fit->exported, sizeof(fresh->exported));
	if (rc) {
		nn_fit_destroy(fresh);
		*out = NULL;
	}
	return rc;
}

int nn_fit_set_precision(struct nn_fit *fit, enum nn_precision p)
{
	nn_fit_drop_read_ahead(fit); /* what it held changes */
	struct carried c = { 0 };
	enum nn_precision was = fit->precision;
	double start = now_ms(), switched = fit->switch_ms;
	int rc = carry_out(fit, &c);
	if (rc) {
		carried_free(&c);
		return rc;
	}
	/* the old device side goes first: both may not fit at once */
	release_device(fit);
	struct nn_fit *fresh = NULL;
	rc = rebuild(fit, &c, p, &fresh);
	int kept = rc == ERR_DEVICE_OOM && p != was;
	if (kept)
		rc = rebuild(fit, &c, was, &fresh);
	carried_free(&c);
	if (rc)
		return rc;
	fresh->precision_kept = kept;
	fresh->switch_ms = switched + (now_ms() - start);
	free(fit->history);
	*fit = *fresh;
	free(fresh);
	return 0;
}

/* The precision epoch t runs in: --precision auto on a device with tensor
 * cores takes fp16, and fp32 for the last NN_FP32_FINISH of the epochs
 * (none for small fits: NN_FP16_ONLY_PIXELS). */
static enum nn_precision precision_at(const struct nn_fit *fit, int t)
{
	if (fit->cfg.precision != NN_PRECISION_AUTO || fit->precision_kept ||
	    !gpu_info(fit->gpu)->has_tensor_cores)
		return fit->precision;
	int finish = (int)ceil(fit->cfg.epochs * fit->fp32_finish);
	return t > fit->cfg.epochs - finish ? NN_PRECISION_FP32
					    : NN_PRECISION_FP16;
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
		fit->pass_ms[s->pass] +=
		    gpu_program_elapsed_ms(s->prog, s->from, s->to);
	}
}

static int append_history(struct nn_fit *fit, const struct nn_metrics *m)
{
	if (fit->nhistory == fit->history_cap) {
		int cap = fit->history_cap ? fit->history_cap * 2 : 256;
		struct nn_metrics *h =
		    realloc(fit->history, (size_t)cap * sizeof(*h));
		if (!h)
			return ERR_NOMEM;
		fit->history = h;
		fit->history_cap = cap;
	}
	fit->history[fit->nhistory++] = *m;
	return 0;
}

/* Does a measurement of psnr beat the best model so far? */
static int beats_best(const struct nn_fit *fit, double psnr)
{
	return isfinite(psnr) && (fit->kept.epoch < 0 || psnr > fit->kept.psnr);
}

int nn_step_begin(struct nn_fit *fit, struct nn_step *st)
{
	nn_fit_drop_read_ahead(fit); /* the step changes what it holds */
	st->t = fit->epoch + 1;
	st->lr =
	    nn_lr_at(&fit->cfg, st->t) *
	    nn_lr_pixel_scale(fit->cfg.nf, (int64_t)fit->width * fit->height);
	st->start_ms = now_ms();
	st->keep = 0;
	st->packed = 0;
	enum nn_precision p = precision_at(fit, st->t);
	int rc = p != fit->precision ? nn_fit_set_precision(fit, p) : 0;
	if (rc)
		return rc;
	nn_optim_prepare(fit, st->t, st->lr);
	return 0;
}

int nn_step_measure(struct nn_fit *fit, struct nn_step *st,
		    struct nn_metrics *m)
{
	double sse = sum_sse(fit);
	double mse = sse / (3.0 * fit->width * fit->height) / 4.0;
	if (!isfinite(mse)) {
		/* drop this epoch's gradient; the weights stay as they were */
		int rc = gpu_fill_zero(fit->gpu, &fit->grad);
		return rc ? rc : ERR_DIVERGED;
	}
	double psnr = mse > 0 ? -10 * log10(mse) : 999;
	/* the weights just measured are those before this epoch's step: the
	 * optimizer program copies them into the best first when they beat it */
	st->keep = beats_best(fit, psnr);
	nn_optim_keep_live(fit, st->keep);
	m->mse = mse;
	m->psnr = psnr;
	return 0;
}

void nn_step_applied(struct nn_fit *fit, const struct nn_step *st,
		     struct nn_metrics *m)
{
	int t = st->t;
	if (st->keep)
		fit->kept = (struct nn_best){ m->psnr, t - 1, NN_BEST_LIVE };
	if (!st->packed)
		collect_pass_times(fit);
	fit->epoch = t;
	m->epoch = t;
	m->lr = st->lr;
	m->psnr_average = 0;
}

int nn_step_average_due(const struct nn_fit *fit, const struct nn_step *st)
{
	return fit->average.handle &&
	       (st->t % fit->average_every == 0 || st->t == fit->cfg.epochs);
}

double nn_fit_psnr_of_sse(const struct nn_fit *fit)
{
	double mse = sum_sse(fit) / (3.0 * fit->width * fit->height) / 4.0;
	return mse > 0 ? -10 * log10(mse) : 999;
}

int nn_step_average_measured(struct nn_fit *fit, struct nn_metrics *m)
{
	m->psnr_average = nn_fit_psnr_of_sse(fit);
	return m->psnr_average > 0 && beats_best(fit, m->psnr_average);
}

void nn_step_average_kept(struct nn_fit *fit, const struct nn_step *st,
			  const struct nn_metrics *m)
{
	fit->kept = (struct nn_best){ m->psnr_average, st->t, NN_BEST_AVERAGE };
}

int nn_step_end(struct nn_fit *fit, const struct nn_step *st,
		struct nn_metrics *m)
{
	m->psnr_best = fit->kept.psnr;
	m->ms = now_ms() - st->start_ms;
	return append_history(fit, m);
}

int nn_fit_step(struct nn_fit *fit, struct nn_metrics *m)
{
	struct nn_step st;
	int rc = nn_step_begin(fit, &st);
	rc = rc ? rc : gpu_program_run(fit->epoch_prog);
	rc = rc ? rc : nn_step_measure(fit, &st, m);
	rc = rc ? rc : gpu_program_run(fit->adam_prog);
	if (rc)
		return rc;
	nn_step_applied(fit, &st, m);
	if (nn_step_average_due(fit, &st)) {
		rc = nn_fit_record_renders(fit);
		rc = rc ? rc : gpu_program_run(fit->avg_render_prog);
		if (rc)
			return rc;
		if (nn_step_average_measured(fit, m)) {
			if ((rc = gpu_program_run(fit->keep_average_prog)))
				return rc;
			nn_step_average_kept(fit, &st, m);
		}
	}
	return nn_step_end(fit, &st, m);
}

const char *nn_best_source_name(enum nn_best_source source)
{
	return source == NN_BEST_AVERAGE ? "average" : "live";
}

void nn_fit_best(const struct nn_fit *fit, struct nn_best *best)
{
	*best = fit->kept;
}

int nn_fit_gradient(struct nn_fit *fit, float *grad, double *sse)
{
	int rc = gpu_program_run(fit->epoch_prog);
	rc = rc ? rc
		: gpu_download(fit->gpu, &fit->grad, 0, grad,
			       fit->layout.total * sizeof(float));
	*sse = sum_sse(fit);
	return rc ? rc : gpu_fill_zero(fit->gpu, &fit->grad);
}

int nn_fit_epoch(const struct nn_fit *fit) { return fit->epoch; }

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

/* ------------------------------------------------- weights in and out */

int nn_fit_read_params(struct nn_fit *fit, float *params, float *m, float *v)
{
	uint64_t bytes = fit->layout.total * sizeof(float);
	int rc =
	    params ? gpu_download(fit->gpu, &fit->params, 0, params, bytes) : 0;
	rc = rc || !m ? rc : gpu_download(fit->gpu, &fit->adam_m, 0, m, bytes);
	rc = rc || !v ? rc : gpu_download(fit->gpu, &fit->adam_v, 0, v, bytes);
	return rc;
}

int nn_fit_write_state(struct nn_fit *fit, const float *params, const float *m,
		       const float *v, int epoch,
		       const struct nn_metrics *history, int nhistory)
{
	nn_fit_drop_read_ahead(fit); /* what it held changes */
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

int nn_fit_record_renders(struct nn_fit *fit)
{
	return fit->render_prog && fit->quick_render_prog &&
		       (fit->avg_render_prog || !fit->average.handle)
		   ? 0
		   : nn_record_render(fit);
}
