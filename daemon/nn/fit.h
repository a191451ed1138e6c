/*
 * fit.h - fitting a ConvSIREN to one image on one Vulkan device: the engine
 * behind `vkinrd --fit` and behind every job of the daemon.
 *
 * A fit owns its device buffers and its recorded command buffers (recorded
 * once for its tile plan, replayed every epoch). One call of nn_fit_step is
 * one epoch: every tile forward and backward, gradients summed over tiles,
 * one optimizer step as the recipe says (by default Muon for the pointwise
 * weights and Adam for the rest, then the weight average; nn/optim.h), the
 * best model kept, metrics read back. A fit is used from one thread only: the
 * worker thread that owns the gpu_context.
 *
 * Creating a fit, and its checkpoints and model packages, are in
 * nn/package.h.
 */
#ifndef VKINR_NN_FIT_H
#define VKINR_NN_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model.h"

struct gpu_context;
struct image;
struct nn_fit;
struct st_file;

struct nn_metrics {
	int epoch;   /* absolute, from 1 */
	double mse;  /* [0, 1] scale: loss / 4 */
	double psnr; /* -10 log10(mse) */
	double lr;   /* the rate used for this epoch's step */
	double ms;   /* wall time of the epoch */
	/* the averaged weights' PSNR after this epoch's step, measured every
	 * NN_AVERAGE_EVERY epochs and at the last when the recipe keeps an
	 * average; 0 otherwise (not in checkpoints' history) */
	double psnr_average;
	/* the best model's PSNR so far (nn_fit_best): the running maximum of
	 * every psnr and psnr_average measured up to this epoch; it never
	 * decreases (0 in histories written before it existed) */
	double psnr_best;
};
/* A render of the average costs about a third of an epoch (the forward
 * alone): every 20 epochs keeps its share of a job's time small
 * (docs/BENCHMARKS.md, "The average's render"). */
#define NN_AVERAGE_EVERY 20

/*
 * The best model: every epoch measures the live weights (psnr), and now
 * and then the average (psnr_average); whenever a measurement beats all
 * before it, those weights are copied, on the device, into the fit's best
 * copy. The export, the reported PSNR and --target-psnr take that model.
 *
 * Its epoch counts the optimizer steps its weights had taken: the epoch
 * whose END they are. Epoch t's psnr measures the weights before epoch t's
 * step, so the live weights kept at epoch t are "epoch t - 1" (0: the
 * initial weights); the average measured after epoch t's step is "epoch t".
 */
enum nn_best_source { NN_BEST_LIVE, NN_BEST_AVERAGE };
struct nn_best {
	double psnr;
	int epoch; /* -1: nothing measured yet (a fresh fit, or a checkpoint
		    * from before the best was kept) */
	enum nn_best_source source;
};
const char *nn_best_source_name(enum nn_best_source source);

/* Per-pass GPU time of the last epoch, from timestamp queries. */
#define NN_PASS_LIST(X)                                                        \
	X(FIRST, "first")                                                      \
	X(ACTIVATE, "activate")                                                \
	X(DWCONV, "dwconv")                                                    \
	X(PW_FORWARD, "pw_forward")                                            \
	X(HEAD, "head")                                                        \
	X(PW_GRAD_WEIGHT, "pw_grad_weight")                                    \
	X(PW_GRAD_DATA, "pw_grad_data")                                        \
	X(DWCONV_BACK, "dwconv_back")                                          \
	X(REDUCE, "reduce")                                                    \
	X(OPTIMIZER, "optimizer")
enum nn_pass {
#define X(id, name) NN_PASS_##id,
	NN_PASS_LIST(X)
#undef X
	    NN_PASS_COUNT
};
const char *nn_pass_name(enum nn_pass pass);

/*
 * Creates a fit of cfg to target on gpu. init, when not NULL, is a model
 * package to start from (its nf and dilations must match cfg; package.c
 * reads it, and defines this). Returns 0, or a negative error code with a
 * sentence in err (ERR_INVALID for a bad config, ERR_DEVICE_OOM when even
 * the smallest tile does not fit). A checkpoint to resume from goes
 * through nn_fit_open (package.h).
 */
int nn_fit_create(struct nn_fit **out, struct gpu_context *gpu,
		  const struct image *target, const struct nn_config *cfg,
		  const struct st_file *init, char *err, size_t errlen);
void nn_fit_destroy(struct nn_fit *fit);

/* Runs one epoch (and, on schedule, renders the average: psnr_average),
 * keeping the best model (psnr_best).
 * Returns 0, ERR_DEVICE_LOST, ERR_DEVICE_OOM, ERR_VULKAN,
 * or ERR_DIVERGED when the loss is not finite (the step is not applied). */
int nn_fit_step(struct nn_fit *fit, struct nn_metrics *m);
/* Rebuilds the fit's device side in another precision (FP32 or FP16),
 * carrying the weights, the optimizer's state, the average and the
 * metrics over; nn_fit_step does it for --precision auto. When the new
 * precision does not fit the device, the fit stays as it was. For tests
 * and nn_fit_step; 0 or a negative error code (the fit then unusable). */
int nn_fit_set_precision(struct nn_fit *fit, enum nn_precision p);

/* Epochs finished so far, and the target (changeable: a job extended). */
int nn_fit_epoch(const struct nn_fit *fit);
const struct nn_config *nn_fit_config(const struct nn_fit *fit);
void nn_fit_set_epochs(struct nn_fit *fit, int epochs);
/* Metrics of every finished epoch, oldest first. */
const struct nn_metrics *nn_fit_history(const struct nn_fit *fit, int *count);

/* Tile plan and device use, for logs, `status` and the benchmark. */
struct nn_fit_info {
	int tile_w, tile_h; /* core size of a full tile */
	int tiles_x, tiles_y;
	double halo_overhead;  /* tile pixels computed / image pixels - 1 */
	uint64_t device_bytes; /* device memory held by this fit */
	double pass_ms[NN_PASS_COUNT];    /* GPU time of the last epoch */
	double pass_bytes[NN_PASS_COUNT]; /* the fewest bytes each non-GEMM
					   * pass must move in an epoch */
	double gflop_per_epoch;
	const char *precision; /* "fp32" or "fp16" (tensor cores) */
	/* host time of its device side: made (buffers and their first
	 * data, then the programs recorded) and rebuilt in another
	 * precision, all of its rebuilds together */
	double buffers_ms, programs_ms, switch_ms;
};
void nn_fit_get_info(const struct nn_fit *fit, struct nn_fit_info *info);

/* Estimates before a fit is made, for a job that would be slow: an
 * epoch's GFLOP for a width x height image (nblocks blocks of width nf;
 * the halo of tiles left out), and the CPU device's rate in GFLOP/s
 * (about NN_CPU_GFLOPS_PER_CORE a core, as measured on lavapipe at its
 * default width; LP_NUM_THREADS, when set, taken as the cores). An epoch
 * over NN_CPU_SLOW_EPOCH_S is slow: a fit is refused without --yes. */
#define NN_CPU_GFLOPS_PER_CORE 1.5
#define NN_CPU_SLOW_EPOCH_S 10.0
double nn_epoch_gflop(int nblocks, int nf, int width, int height);
double nn_cpu_gflops(int *cores);

/* Renders the averaged weights: their PSNR (ERR_INVALID when the recipe
 * keeps no average). */
int nn_fit_average_psnr(struct nn_fit *fit, double *psnr);

/* The best model measured so far (see struct nn_best). */
void nn_fit_best(const struct nn_fit *fit, struct nn_best *best);

#endif
