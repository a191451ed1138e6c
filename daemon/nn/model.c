/*
 * model.c - ConvSIREN configuration, parameter layout, initialisation and
 * learning-rate schedule (see model.h for the contract).
 *
 * The initialisation must give the same weights for a seed on every
 * machine, so it uses the project's own PRNG (SplitMix64) and draws in a
 * fixed, documented order; no libc random function is involved.
 */
#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

int nn_default_width(int cpu_device) { return cpu_device ? 64 : 512; }

void nn_config_defaults(struct nn_config *cfg, int cpu_device)
{
	memset(cfg, 0, sizeof(*cfg));
	/* every option's default, from the table (proto/params.h), measured
	 * with `make bench-quality` (see README); lr and the warmup wait for
	 * the width */
	nn_config_from_table(cfg);
	cfg->nf = nn_default_width(cpu_device);
	cfg->w0 = NN_W0;
}

void nn_recipe_version1(struct nn_recipe *r)
{
	*r = (struct nn_recipe){ .optimizer = NN_OPTIMIZER_ADAM,
				 .schedule = NN_SCHEDULE_COSINE,
				 .warmup = 50,
				 .lr_min_ratio = 0.1,
				 .half_life = 200,
				 .average = NN_AVERAGE_NONE,
				 .ema_decay = 0.99 };
}

const char *nn_precision_name(enum nn_precision p)
{
	switch (p) {
	case NN_PRECISION_FP32:
		return "fp32";
	case NN_PRECISION_FP16:
		return "fp16";
	default:
		return "auto";
	}
}

int nn_precision_parse(const char *text, enum nn_precision *out)
{
	static const enum nn_precision all[] = { NN_PRECISION_AUTO,
						 NN_PRECISION_FP32,
						 NN_PRECISION_FP16 };
	for (int i = 0; i < 3; i++) {
		if (!strcmp(text, nn_precision_name(all[i]))) {
			*out = all[i];
			return 0;
		}
	}
	return ERR_INVALID;
}

int nn_config_pad(const struct nn_config *cfg)
{
	int pad = 0;
	for (int k = 0; k < cfg->nblocks; k++)
		pad += cfg->dilations[k];
	return pad;
}

int nn_loss_has_terms(const struct nn_recipe *r)
{
	return r->loss_ssim > 0 || r->loss_grad > 0 || r->loss_chroma > 0;
}

int nn_loss_radius(const struct nn_recipe *r)
{
	if (r->loss_ssim > 0)
		return NN_SSIM_RADIUS;
	return r->loss_grad > 0 ? 1 : 0;
}

static size_t align_up(size_t n)
{
	return (n + NN_ALIGN - 1) / NN_ALIGN * NN_ALIGN;
}

void nn_layout_init(struct nn_layout *l, const struct nn_config *cfg)
{
	size_t nf = (size_t)cfg->nf, at = 0;
	memset(l, 0, sizeof(*l));
	l->nf = cfg->nf;
	l->nblocks = cfg->nblocks;
	l->first_w = at, at = align_up(at + nf * 2);
	l->first_b = at, at = align_up(at + nf);
	for (int k = 0; k < cfg->nblocks; k++) {
		l->dw[k] = at, at = align_up(at + nf * 9);
		l->pw_w[k] = at, at = align_up(at + nf * nf);
		l->pw_b[k] = at, at = align_up(at + nf);
	}
	l->out_w = at, at = align_up(at + 3 * nf);
	l->out_b = at, at = align_up(at + 3);
	l->total = at;
}

/* ---------------------------------------------------------------- PRNG */

void nn_rng_seed(struct nn_rng *r, uint64_t seed) { r->state = seed; }

uint64_t nn_rng_next(struct nn_rng *r)
{
	uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

float nn_rng_uniform(struct nn_rng *r, float lo, float hi)
{
	double u = (double)(nn_rng_next(r) >> 40) * (1.0 / 16777216.0);
	return (float)(lo + ((double)hi - lo) * u);
}

static void fill_uniform(struct nn_rng *r, float *dst, size_t n, float bound)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = nn_rng_uniform(r, -bound, bound);
}

void nn_init_params(const struct nn_config *cfg, const struct nn_layout *l,
		    float *params)
{
	size_t nf = (size_t)l->nf;
	float pw_bound = sqrtf(6.0f / (float)nf) / cfg->w0;
	struct nn_rng rng;

	memset(params, 0, l->total * sizeof(float));
	nn_rng_seed(&rng, cfg->seed);
	fill_uniform(&rng, params + l->first_w, nf * 2, 0.5f);
	fill_uniform(&rng, params + l->first_b, nf, 1.0f / sqrtf(2.0f));
	for (int k = 0; k < l->nblocks; k++) {
		for (size_t c = 0; c < nf; c++)
			params[l->dw[k] + c * 9 + 4] = 1.0f;
		fill_uniform(&rng, params + l->pw_w[k], nf * nf, pw_bound);
		fill_uniform(&rng, params + l->pw_b[k], nf,
			     1.0f / sqrtf((float)nf));
	}
	fill_uniform(&rng, params + l->out_w, 3 * nf, pw_bound);
}

/* ----------------------------------------------------------- schedule */

/* The peak rates measured best at these widths (`make bench-quality`,
 * 400 epochs: four photos, two at width 512; README), interpolated
 * between them on a log-log scale and falling as 1 / width past 512. */
static const struct {
	int nf;
	double lr;
} measured_lr[] = {
	{ 16, 6e-3 },
	{ 32, 6e-3 },
	{ 64, 6e-3 * M_SQRT1_2 },
	{ 128, 3e-3 },
	{ 256, 1.5e-3 * 3 * M_SQRT1_2 / 2 },
	{ 512, 7.5e-4 },
};
#define MEASURED_LR_COUNT ((int)(sizeof(measured_lr) / sizeof(measured_lr[0])))

double nn_default_lr(int nf)
{
	if (nf <= measured_lr[0].nf)
		return measured_lr[0].lr;
	for (int i = 1; i < MEASURED_LR_COUNT; i++) {
		if (nf > measured_lr[i].nf)
			continue;
		double t =
		    log((double)nf / measured_lr[i - 1].nf) /
		    log((double)measured_lr[i].nf / measured_lr[i - 1].nf);
		return exp(log(measured_lr[i - 1].lr) +
			   t * log(measured_lr[i].lr / measured_lr[i - 1].lr));
	}
	const int last = MEASURED_LR_COUNT - 1;
	return measured_lr[last].lr * measured_lr[last].nf / nf;
}

/* Measured with `make bench-quality` (four photos, 400 epochs): at width
 * 16 a 50-epoch warmup adds 0.05 to 0.34 dB on every photo; from width 32
 * up it does not help. */
int nn_default_warmup(int nf) { return nf <= 16 ? 50 : 10; }

void nn_resolve_auto(int *nf, int cpu_device, double *lr,
		     struct nn_recipe *recipe)
{
	if (*nf == 0)
		*nf = nn_default_width(cpu_device);
	if (*lr == NN_LR_AUTO)
		*lr = nn_default_lr(*nf);
	if (recipe->warmup == NN_WARMUP_AUTO)
		recipe->warmup = nn_default_warmup(*nf);
}

/* Measured on lavapipe (400-epoch fits of six wallpapers at widths 16 to
 * 64): on images of 360 pixels (24x15) and 160 (16x10) the width's rate
 * took the live PSNR to about 27 dB by epoch 13, then knocked it back to
 * 21-27 dB for the rest of the run (Path, at widths 32 and 64, seeds
 * 0 and 1), and half of it ended 4 to 33 dB higher on every photo; at
 * 1440 pixels (48x30) the two are within 2 dB either way. At width 16
 * (whose warmup is 50 epochs and whose Muon step is the smallest) the
 * width's rate did not stall, and half of it ended 3 to 5 dB lower. */
double nn_lr_pixel_scale(int nf, int64_t pixels)
{
	if (nf <= NN_LR_SCALE_FROM_WIDTH || pixels >= NN_LR_FULL_PIXELS)
		return 1;
	double s = sqrt((double)pixels / NN_LR_FULL_PIXELS);
	return s > NN_LR_LEAST_SCALE ? s : NN_LR_LEAST_SCALE;
}

int nn_early_cycle(const struct nn_config *cfg)
{
	const struct nn_recipe *r = &cfg->recipe;
	int e = r->early_cycle;
	if ((r->schedule != NN_SCHEDULE_COSINE &&
	     r->schedule != NN_SCHEDULE_LINEAR) ||
	    e <= r->warmup + r->plateau ||
	    cfg->epochs < NN_EARLY_CYCLE_RATIO * e)
		return 0;
	return e;
}

/* The decay's shape at t in [0, 1]: from 1 to 0. */
static double decay_shape(enum nn_schedule schedule, double t)
{
	if (t > 1)
		t = 1;
	return schedule == NN_SCHEDULE_LINEAR ? 1 - t
					      : 0.5 * (1 + cos(M_PI * t));
}

double nn_lr_at(const struct nn_config *cfg, int epoch)
{
	if (cfg->recipe.schedule == NN_SCHEDULE_CONSTANT)
		return cfg->lr;
	double floor = cfg->lr * cfg->recipe.lr_min_ratio;
	/* A cycle runs from start to end; the main one (the only one without
	 * an early cycle) warms up from the early cycle's floor. */
	int start = 0, end = cfg->epochs, early = nn_early_cycle(cfg);
	int in_early_cycle = early && epoch <= early;
	double rise_from = 0;
	if (in_early_cycle)
		end = early;
	else if (early)
		start = early, rise_from = floor;
	/* Warmup and plateau depend on the config alone, never on the total,
	 * so extending a job does not start its warmup again. */
	int warmup = cfg->recipe.warmup, hold = warmup + cfg->recipe.plateau;
	int e = epoch - start;
	if (warmup > 0 && e <= warmup)
		return rise_from + (cfg->lr - rise_from) * e / warmup;
	if (e <= hold)
		return cfg->lr;
	if (cfg->recipe.schedule == NN_SCHEDULE_EXP)
		return floor +
		       (cfg->lr - floor) *
			   pow(0.5, (double)(e - hold) / cfg->recipe.half_life);
	/* the main decay ends at the floor after recipe.decay epochs; the
	 * tail after it falls from the floor to a tenth of it (a tail held
	 * at the floor ended 19-27 dB lower at 6000 epochs and width 256:
	 * tests/bench-h200/2026-12-07-eleventh.md, call 67) */
	int decay_end = end;
	if (!in_early_cycle && cfg->recipe.decay > 0 &&
	    (int64_t)start + cfg->recipe.decay < end)
		decay_end = start + cfg->recipe.decay;
	if (epoch > decay_end && decay_end < end) {
		double t = (double)(epoch - decay_end) / (end - decay_end);
		return floor * (NN_DECAY_TAIL_RATIO +
				(1 - NN_DECAY_TAIL_RATIO) *
				    decay_shape(cfg->recipe.schedule, t));
	}
	int span = decay_end - start - hold;
	double t = span > 0 ? (double)(e - hold) / span : 1;
	return floor + (cfg->lr - floor) * decay_shape(cfg->recipe.schedule, t);
}
