/*
 * package.h - a fit's state in and out of files: opening a fit (from a
 * checkpoint, a model package or the seed), its checkpoints, its model
 * package (docs/MODEL.md) and reconstruction, and rendering a package.
 *
 * Checkpoints and model packages are safetensors files (safetensors.h);
 * this module builds and reads them, the caller writes them to disk (but
 * for the export, written here once for the daemon and `--fit`). Used
 * from the thread that owns the gpu_context, as the fit is.
 */
#ifndef VKINR_NN_PACKAGE_H
#define VKINR_NN_PACKAGE_H

#include <stddef.h>

#include "util/image.h"
#include "nn/fit.h"
#include "nn/model.h"
#include "formats/safetensors.h"

/* What the caller's config replaces in a checkpoint's when resuming. */
#define NN_TAKE_EPOCHS 1u /* the target epochs */
#define NN_TAKE_TILING 2u /* max_tile and mem_budget */
#define NN_TAKE_LR                                                             \
	4u /* the learning rate (a rollback after a
			   * divergence; the next checkpoint carries it) */

/*
 * The one way to open a fit of target on gpu: resumed from the checkpoint
 * ckpt when there is one (bit for bit, in the checkpoint's config but for
 * the fields named in take, which come from *cfg); else started from the
 * model package init when there is one; else from *cfg's seed. *cfg is
 * then the config the fit was created with. Returns 0, or a negative
 * error code with a sentence in err (left empty by some device errors)
 * and *out NULL.
 */
int nn_fit_open(struct nn_fit **out, struct gpu_context *gpu,
		const struct image *target, const struct st_file *ckpt,
		const struct st_file *init, struct nn_config *cfg,
		unsigned take, char *err, size_t errlen);

/*
 * Checkpoint: weights, both Adam moments, the recipe's state, the best
 * model, epoch, config and the metrics history, with a checksum in the
 * metadata. Restoring into a fit created
 * with the same target and config continues bit for bit.
 */
int nn_fit_checkpoint(struct nn_fit *fit, struct st_file **out);
/* The state that the next nn_fit_checkpoint of each fit whose want[i] is
 * set reads, read back for all of them with one wait (a pack's jobs that
 * end at one epoch): the checkpoints are the same, made without a wait
 * each. What was read is dropped by the fit's next step. */
int nn_fits_read_ahead(struct nn_fit *const *fits, int n, const int *want);
int nn_fit_restore(struct nn_fit *fit, const struct st_file *ckpt, char *err,
		   size_t errlen);
/* The config stored in a checkpoint (to create the fit to restore into). */
int nn_checkpoint_config(const struct st_file *ckpt, struct nn_config *cfg,
			 char *err, size_t errlen);

/* The model package (docs/MODEL.md) and the reconstruction of the best
 * of the weights there are (see nn_fit_exported_weights). Any output
 * pointer may be NULL. psnr is that of the exported weights. The fit's
 * state is left as it was. */
int nn_fit_export(struct nn_fit *fit, struct st_file **model,
		  struct image **recon, double *psnr);

/*
 * nn_fit_export written to files, each atomically: the package to
 * model_path (mode 0600) and the reconstruction as a PNG to recon_path
 * (recon_mode); a NULL path is neither built nor written. On a failed
 * write, *failed (when not NULL) is the path that failed, else NULL.
 */
int nn_fit_save_export(struct nn_fit *fit, const char *model_path,
		       const char *recon_path, unsigned recon_mode,
		       double *psnr, const char **failed);
/* The same for an export made already (nn_pack_export's): model and
 * recon (either NULL: not written) are written and freed. */
int nn_export_save(struct st_file *model, struct image *recon,
		   const char *model_path, const char *recon_path,
		   unsigned recon_mode, const char **failed);

/* nn_fit_export renders the live weights, the average (when the recipe
 * keeps one) and the best model kept (nn_fit_best), and exports the best
 * of them: "live", "average" or "best (SOURCE, epoch N)", SOURCE live or
 * average and N the epoch whose end the weights are (also the package's
 * "weights" metadata). */
const char *nn_fit_exported_weights(const struct nn_fit *fit);

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

/* The package's weights as a flat parameter vector laid out for cfg (its
 * nf and dilations must be the package's); *params is malloc'd. */
int nn_package_params(const struct st_file *model, const struct nn_config *cfg,
		      float **params, char *err, size_t errlen);

#endif
