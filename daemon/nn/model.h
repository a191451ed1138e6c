/*
 * model.h - the ConvSIREN model: its configuration, where each parameter
 * lives in the flat parameter vector, its reproducible initialisation and
 * the learning-rate schedule.
 *
 * All parameters live in one flat float vector (and so do the gradient and
 * both Adam moments, with the same layout), so the optimizer is one pass
 * over one buffer. Each tensor starts at a multiple of NN_ALIGN floats.
 * Shapes and element order are those of the PyTorch peer (row-major):
 *
 *   first_w  [nf][2]       first.weight [nf,2,1,1]
 *   first_b  [nf]          first.bias
 *   dw[k]    [nf][3][3]    dw.k.weight  [nf,1,3,3]   (tap index ky*3+kx)
 *   pw_w[k]  [nf][nf]      pw.k.weight  [nf,nf,1,1]  ([out][in])
 *   pw_b[k]  [nf]          pw.k.bias
 *   out_w    [3][nf]       out.weight   [3,nf,1,1]
 *   out_b    [3]           out.bias
 *
 * This module knows nothing of Vulkan or sockets.
 */
#ifndef VKINR_NN_MODEL_H
#define VKINR_NN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/params.h"

#define NN_MAX_BLOCKS 8
#define NN_ALIGN 64
#define NN_MIN_WIDTH LIMIT_WIDTH_MIN /* proto/params.h: the client's too */
#define NN_MAX_WIDTH LIMIT_WIDTH_MAX
#define NN_W0 30.0f
/* The SSIM loss's Gaussian window: radius (11x11) and sigma; the loss
 * passes (shaders/loss.comp) have the same. */
#define NN_SSIM_RADIUS 5
#define NN_SSIM_SIGMA 1.5

/*
 * The training recipe. The learning rate is a function of the absolute
 * epoch alone: a linear warmup, a plateau at the peak, then a cosine or
 * linear decay to lr * lr_min_ratio at the job's last epoch (or an
 * exponential one, see NN_SCHEDULE_EXP), so a resumed
 * job never warms up again. Defaults were chosen by `make bench-quality`.
 */
enum nn_schedule {
	NN_SCHEDULE_CONSTANT =
	    0,                  /* lr throughout (what the PyTorch peer does) */
	NN_SCHEDULE_COSINE = 1, /* warmup, plateau, cosine decay to lr_min */
	NN_SCHEDULE_LINEAR = 2, /* warmup, plateau, linear decay to lr_min */
	/* warmup, plateau, then lr_min + (lr - lr_min) 2^(-e / half_life),
	 * e the epochs since the plateau: the rate at an epoch does not
	 * depend on the job's total, so the model is as good early in a
	 * long job as at the end of a short one */
	NN_SCHEDULE_EXP = 3,
	NN_SCHEDULE_COUNT
};
/* What moves the weights: Adam for all, or Muon (momentum orthogonalised
 * by Newton-Schulz) for the pointwise width x width weights and Adam for
 * the rest. */
enum nn_optimizer {
	NN_OPTIMIZER_ADAM = 0,
	NN_OPTIMIZER_MUON = 1,
	NN_OPTIMIZER_COUNT
};
/* A second copy of the weights kept on the device: none, or an
 * exponential moving average (decay ema_decay an epoch). Exports and the
 * reported PSNR take whichever of the live and averaged weights is better. */
enum nn_average { NN_AVERAGE_NONE = 0, NN_AVERAGE_EMA = 1, NN_AVERAGE_COUNT };

/* Arithmetic of the pointwise layers (the GEMMs); everything else, the
 * weights and Adam are fp32 always. */
enum nn_precision {
	/* fp16 where the device has tensor cores, with the last
	 * NN_FP32_FINISH of the epochs in fp32 (which keeps the end within
	 * 0.2 dB of an fp32 run or above it, for 7.5% more time than fp16
	 * throughout; a tenth cost 15%: tests/bench-h200/2026-12-02-second.md,
	 * calls 37, 38);
	 * fp32 elsewhere */
	NN_PRECISION_AUTO = 0,
	NN_PRECISION_FP32 = 1,
	NN_PRECISION_FP16 = 2, /* fp16 operands, fp32 accumulation */
};
#define NN_FP32_FINISH 0.05
/* Fits of at most this many pixels and this width skip auto's fp32
 * finish: at 32x32 (width 32) and 256x256 (width 128) fp16 throughout
 * ended 0.00-0.02 dB above it at 300 and 2000 epochs, and the rebuild is
 * most of such a job's host time in a dataset (tests/bench-h200/2026-12-02-third.md,
 * call 41). */
#define NN_FP16_ONLY_PIXELS (256 * 256)
#define NN_FP16_ONLY_WIDTH 128
#define NN_EARLY_CYCLE_RATIO 7.5
/* a job longer than recipe.decay ends at this fraction of the floor */
#define NN_DECAY_TAIL_RATIO 0.1
const char *nn_precision_name(enum nn_precision p);
/* Parses "auto", "fp32" or "fp16"; returns 0 or ERR_INVALID. */
int nn_precision_parse(const char *text, enum nn_precision *out);

/* How a job trains, besides lr: set and read by name (nn_recipe_set). */
struct nn_recipe {
	enum nn_optimizer optimizer;
	enum nn_schedule schedule;
	int warmup; /* warmup epochs (not when constant); NN_WARMUP_AUTO: by width */
	int plateau;         /* epochs at the peak after warmup */
	double lr_min_ratio; /* the decay's floor, a fraction of lr */
	int half_life;       /* exp: epochs that halve lr - floor */
	/* cosine and linear: a first, short cycle (warmup, plateau, decay to
	 * the floor by this epoch), then the rate warms up again and the main
	 * decay runs to the job's end, so that a long job holds a good model
	 * (the best one is kept) from early on. 0: none. Taken only when the
	 * job is at least NN_EARLY_CYCLE_RATIO times as long. */
	int early_cycle;
	/* cosine and linear: the main decay reaches the floor this many
	 * epochs after its start (or at the job's end, if sooner), then the
	 * rate falls on, by the same shape, to a tenth of the floor at the
	 * end. A longer job then trains as a shorter one and goes on from
	 * the floor, where a decay spread over the whole job held the rate
	 * high for thousands of epochs and ended lower. 0: the whole job. */
	int decay;
	enum nn_average average;
	double ema_decay; /* (0, 1): the average's decay an epoch */
	/* The loss: the mean squared error of the image (what mse and psnr
	 * report), plus these terms times their weights, each >= 0 (0: off,
	 * the default). Predictions and target are taken in [-1, 1] as the
	 * MSE is, and each term counted once, by its centre pixel:
	 *   ssim:   1 - mean SSIM of each colour channel, in an 11x11
	 *           Gaussian window (sigma 1.5) cut at the image border, on
	 *           values in [0, 1] (C1 = 0.01^2, C2 = 0.03^2)
	 *   grad:   the mean square of the error's finite differences
	 *           e(x+1,y) - e(x,y) and e(x,y+1) - e(x,y), per channel,
	 *           over 6 W H (a difference leaving the image counts 0)
	 *   chroma: the mean square of the error of R-G and B-G, over 2 W H */
	double loss_ssim, loss_grad, loss_chroma;
};

struct nn_config {
	int nf;                       /* width: multiple of 16, 16..1024 */
	int nblocks;                  /* 1..NN_MAX_BLOCKS */
	int dilations[NN_MAX_BLOCKS]; /* each 1..64 */
	float w0;                     /* 30 */
	double lr;                    /* peak learning rate; NN_LR_AUTO:
					  nn_default_lr(nf), set by the fit
					  (nn_resolve_auto), as the
					  recipe's NN_WARMUP_AUTO is */
	struct nn_recipe recipe;
	int epochs; /* target number of epochs */
	uint64_t seed;
	enum nn_precision precision;
	/* Tile planner overrides, for tests and small memories (0 = auto). */
	int max_tile;        /* cap on a tile's core side, pixels */
	uint64_t mem_budget; /* bytes of device memory to plan for */
};

/* Fills the documented defaults, the table's (proto/params.h): nf 512
 * (64 on a CPU device), dilations 1,2,4,8, w0 30, lr by width
 * (NN_LR_AUTO), Muon with Adam, a cosine schedule after a warmup by width
 * (NN_WARMUP_AUTO) down to a tenth, an EMA of the weights (0.99), 1000
 * epochs, seed 0. */
void nn_config_defaults(struct nn_config *cfg, int cpu_device);
/* The width a device gets when none is asked: 512, 64 on a CPU device. */
int nn_default_width(int cpu_device);
/* The recipe of every job before recipes were recorded (checkpoint format
 * 1, saved jobs without one): Adam, cosine after a 50-epoch warmup to a
 * tenth, no average. */
void nn_recipe_version1(struct nn_recipe *r);
/* Checks every value against the table's bounds (proto/params.h: lr and
 * warmup may still be auto, epochs 0 for a render); returns 0 or
 * ERR_INVALID with the table's sentence in err (recipe.c). */
int nn_config_check(const struct nn_config *cfg, char *err, size_t errlen);

/*
 * The table's rows in the config (recipe.c): each row that lives in
 * struct nn_config (nn_option_in_config: all but priority and
 * target_psnr) is set from a command line's text (numbers, words, "auto"
 * where the row takes it) or from a number on the wire, checked against
 * the row's bounds with its sentence naming the value as what; 0 or
 * ERR_INVALID. A row outside the config is checked only.
 */
int nn_option_in_config(enum param_id id);
int nn_option_set(struct nn_config *cfg, enum param_id id, const char *text,
		  const char *what, char *err, size_t errlen);
int nn_option_set_number(struct nn_config *cfg, enum param_id id, double v,
			 const char *what, char *err, size_t errlen);
/* The row's value: a number (a word's index), or as text. */
double nn_option_number(const struct nn_config *cfg, enum param_id id);
void nn_option_text(const struct nn_config *cfg, enum param_id id, char *buf,
		    size_t len);
/* Every row's default into cfg (the auto ones as auto, width 0). */
void nn_config_from_table(struct nn_config *cfg);
/* Receptive-field radius: the sum of the dilations. */
int nn_config_pad(const struct nn_config *cfg);
/* How far the loss reaches from a pixel: 5 with SSIM on, 1 with grad
 * alone, else 0. A tile's halo is nn_config_pad + this, so that every
 * prediction a core pixel's loss reads is exact. */
int nn_loss_radius(const struct nn_recipe *r);
/* Whether any loss term besides the MSE is on. */
int nn_loss_has_terms(const struct nn_recipe *r);
/* "1,2,4,8" */
void nn_config_dilations_string(const struct nn_config *cfg, char *buf,
				size_t len);
/* Parses "1,2,4,8" into cfg; returns 0 or ERR_INVALID. */
int nn_config_parse_dilations(struct nn_config *cfg, const char *text);

struct nn_layout {
	int nf, nblocks;
	size_t first_w, first_b;
	size_t dw[NN_MAX_BLOCKS], pw_w[NN_MAX_BLOCKS], pw_b[NN_MAX_BLOCKS];
	size_t out_w, out_b;
	size_t total; /* floats in the flat vector, padded */
};

void nn_layout_init(struct nn_layout *l, const struct nn_config *cfg);

/*
 * The project's PRNG: SplitMix64, seeded with the job's seed. A uniform
 * draw in [lo, hi) is lo + (hi - lo) * ((x >> 40) * 2^-24), computed in
 * double and rounded to float. Tensors are drawn in this order, each in
 * row-major order: first_w, first_b, then per block pw_w[k], pw_b[k], then
 * out_w. dw[k] is the identity tap, out_b zero. Padding floats are zero.
 */
struct nn_rng {
	uint64_t state;
};
void nn_rng_seed(struct nn_rng *r, uint64_t seed);
uint64_t nn_rng_next(struct nn_rng *r);
float nn_rng_uniform(struct nn_rng *r, float lo, float hi);

/* Writes the initial parameters (l->total floats) for cfg->seed. */
void nn_init_params(const struct nn_config *cfg, const struct nn_layout *l,
		    float *params);

/*
 * The recipe by name (recipe.c): the table's rows that live in struct
 * nn_recipe, KEY = VALUE in checkpoints and model packages and "KEY":
 * VALUE in request.json. Keys: optimizer, schedule, warmup, plateau,
 * lr_min, half_life, early_cycle, average, ema_decay, and the loss terms'
 * weights ssim, grad, chroma.
 */
/* The i-th key, from 0; NULL past the last. */
const char *nn_recipe_key(int i);
/* Sets one key from its text (- for _; the warmup also -1, auto, as saved
 * files spell it), checked against the table; returns 0, or ERR_INVALID
 * with a sentence in err (unknown key or bad value). */
int nn_recipe_set(struct nn_recipe *r, const char *key, const char *value,
		  char *err, size_t errlen);
/* The same for the i-th key from a number (a word's is refused). */
int nn_recipe_set_number(struct nn_recipe *r, int i, double v, char *err,
			 size_t errlen);
/* The key's value as text (round-trips through nn_recipe_set). */
void nn_recipe_get(const struct nn_recipe *r, const char *key, char *buf,
		   size_t len);
/* The i-th key's value as a number (a word's: its index), and whether
 * the key is a word. */
double nn_recipe_number(const struct nn_recipe *r, int i);
int nn_recipe_is_word(int i);
/* "optimizer adam schedule cosine warmup 50 ..." for logs and people. */
void nn_recipe_describe(const struct nn_recipe *r, char *buf, size_t len);

/* The default peak rate depends on the width: wider networks want smaller
 * steps. The rates measured best with `make bench-quality` (6e-3 at widths
 * 16 and 32, 4.2e-3 at 64, 3e-3 at 128, 1.6e-3 at 256, 7.5e-4 at 512),
 * log-log interpolated between them, 7.5e-4 x 512 / nf past 512. */
#define NN_LR_AUTO 0.0
double nn_default_lr(int nf);

/* The default warmup depends on the width too: 50 epochs at width 16
 * (whose rate, 6e-3, is the highest), 10 above. */
#define NN_WARMUP_AUTO (-1)
int nn_default_warmup(int nf);

/* The one place the defaults that wait are resolved: *nf 0 ("auto")
 * becomes the device's width (nn_default_width), then *lr when NN_LR_AUTO
 * and the recipe's warmup when NN_WARMUP_AUTO become the width's. */
void nn_resolve_auto(int *nf, int cpu_device, double *lr,
		     struct nn_recipe *recipe);

/* Small images want smaller steps: a fit of fewer than
 * NN_LR_FULL_PIXELS pixels at a width above NN_LR_SCALE_FROM_WIDTH
 * multiplies every epoch's rate by sqrt(pixels / NN_LR_FULL_PIXELS), at
 * least NN_LR_LEAST_SCALE (the measurements behind it are in model.c). */
#define NN_LR_FULL_PIXELS 1440
#define NN_LR_LEAST_SCALE 0.5
#define NN_LR_SCALE_FROM_WIDTH 16
double nn_lr_pixel_scale(int nf, int64_t pixels);

/* Learning rate for the absolute epoch (1-based) of a job (before the
 * image's scale, nn_lr_pixel_scale). */
double nn_lr_at(const struct nn_config *cfg, int epoch);
/* The epoch that ends the early cycle (recipe.early_cycle) when this job
 * takes one, else 0. */
int nn_early_cycle(const struct nn_config *cfg);

#endif
