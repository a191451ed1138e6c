/*
 * fit.h - fitting a ConvSIREN to one image on one Vulkan device: the engine
 * behind `vkinrd --fit` and behind every job of the daemon.
 *
 * A fit owns its device buffers and its recorded command buffers (recorded
 * once for its tile plan, replayed every epoch). One call of nn_fit_step is
 * one epoch: every tile forward and backward, gradients summed over tiles,
 * one Adam step, metrics read back. A fit is used from one thread only: the
 * worker thread that owns the gpu_context.
 *
 * Checkpoints and model packages are safetensors files (daemon/safetensors.h);
 * this module builds and reads them, the caller writes them to disk.
 */
#ifndef VKINR_NN_FIT_H
#define VKINR_NN_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "nn/model.h"
#include "safetensors.h"

struct gpu_context;
struct nn_fit;

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
};
#define NN_AVERAGE_EVERY 10

/* Per-pass GPU time of the last epoch, from timestamp queries. */
#define NN_PASS_LIST(X)                                                      \
	X(FIRST, "first")                                                    \
	X(ACTIVATE, "activate")                                              \
	X(DWCONV, "dwconv")                                                  \
	X(PW_FORWARD, "pw_forward")                                          \
	X(HEAD, "head")                                                      \
	X(PW_GRAD_WEIGHT, "pw_grad_weight")                                  \
	X(PW_GRAD_DATA, "pw_grad_data")                                      \
	X(DWCONV_BACK, "dwconv_back")                                        \
	X(REDUCE, "reduce")                                                  \
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
 * package to start from (its nf and dilations must match cfg). Returns 0,
 * or a negative error code with a sentence in err (ERR_INVALID for a bad
 * config, ERR_DEVICE_OOM when even the smallest tile does not fit).
 */
int nn_fit_create(struct nn_fit **out, struct gpu_context *gpu,
		  const struct image *target, const struct nn_config *cfg,
		  const struct st_file *init, char *err, size_t errlen);
void nn_fit_destroy(struct nn_fit *fit);

/* Runs one epoch (and, on schedule, renders the average: psnr_average).
 * Returns 0, ERR_DEVICE_LOST, ERR_DEVICE_OOM, ERR_VULKAN,
 * or ERR_DIVERGED when the loss is not finite (the step is not applied). */
int nn_fit_step(struct nn_fit *fit, struct nn_metrics *m);

/* Epochs finished so far, and the target (changeable: a job extended). */
int nn_fit_epoch(const struct nn_fit *fit);
const struct nn_config *nn_fit_config(const struct nn_fit *fit);
void nn_fit_set_epochs(struct nn_fit *fit, int epochs);
/* Metrics of every finished epoch, oldest first. */
const struct nn_metrics *nn_fit_history(const struct nn_fit *fit, int *count);

/* Tile plan and device use, for logs, `status` and the benchmark. */
struct nn_fit_info {
	int tile_w, tile_h;     /* core size of a full tile */
	int tiles_x, tiles_y;
	double halo_overhead;   /* tile pixels computed / image pixels - 1 */
	uint64_t device_bytes;  /* device memory held by this fit */
	double pass_ms[NN_PASS_COUNT]; /* GPU time of the last epoch */
	double pass_bytes[NN_PASS_COUNT]; /* the fewest bytes each non-GEMM
					   * pass must move in an epoch */
	double gflop_per_epoch;
	const char *precision;  /* "fp32" or "fp16" (tensor cores) */
};
void nn_fit_get_info(const struct nn_fit *fit, struct nn_fit_info *info);

/*
 * Checkpoint: weights, both Adam moments, epoch, config and the metrics
 * history, with a checksum in the metadata. Restoring into a fit created
 * with the same target and config continues bit for bit.
 */
int nn_fit_checkpoint(struct nn_fit *fit, struct st_file **out);
int nn_fit_restore(struct nn_fit *fit, const struct st_file *ckpt, char *err,
		   size_t errlen);
/* The config stored in a checkpoint (to create the fit to restore into). */
int nn_checkpoint_config(const struct st_file *ckpt, struct nn_config *cfg,
			 char *err, size_t errlen);

/* The model package (docs/MODEL.md) and the reconstruction. Any output
 * pointer may be NULL. psnr is that of the current weights. */
int nn_fit_export(struct nn_fit *fit, struct st_file **model,
		  struct image **recon, double *psnr);

/* With an average in the recipe, nn_fit_export renders both the live and
 * the averaged weights and exports the better: "live" or "average" (also
 * in the package's "weights" metadata). */
const char *nn_fit_exported_weights(const struct nn_fit *fit);
/* The averaged weights' PSNR (ERR_INVALID when the recipe keeps none). */
int nn_fit_average_psnr(struct nn_fit *fit, double *psnr);

/*
 * Renders a model package on gpu at the size stored in it. With a target
 * (which must have that size) also returns the PSNR against it.
 */
int nn_render(struct gpu_context *gpu, const struct st_file *model,
	      const struct image *target, struct image **out, double *psnr,
	      char *err, size_t errlen);

/* Reads nf, dilations and the image size from a package's metadata and
 * shapes; checks every tensor's shape. */
int nn_package_config(const struct st_file *model, struct nn_config *cfg,
		      int *width, int *height, char *err, size_t errlen);

#endif
