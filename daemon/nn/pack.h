/*
 * pack.h - many fits trained as one program: a dataset at the GPU's speed.
 *
 * A pack steps several fits an epoch at a time, each exactly as
 * nn_fit_step would (its own image, weights, optimizer state, schedule,
 * epochs, loss terms and metrics), but with each pass dispatched once for
 * all of them: the fits whose programs were recorded alike (same width,
 * dilations, precision, recipe and tile count; image sizes may differ) form
 * a group, and each group runs packed programs (gpu_pack_program_create)
 * in which every fit is a slot. A fit alone in its group runs its own
 * programs. Results are those of each fit alone, bit for bit.
 *
 * The caller names the fits of each epoch: a fit joins by being named, and
 * leaves by not being named (the packed programs are recorded again when
 * the list changes, which costs a few milliseconds, not an epoch). Used on
 * the thread that owns the fits' gpu_context.
 */
#ifndef VKINR_NN_PACK_H
#define VKINR_NN_PACK_H

#include "nn/fit.h"

struct gpu_context;
struct nn_pack;

/* Whether the device runs packed programs (buffer device addresses). */
int nn_pack_supported(const struct gpu_context *gpu);

/* How many fits like the one on the device now (the first of a
 * dataset, built alone) train together within 60% of its memory, at
 * most most; 1 without packs. */
int nn_pack_room(struct gpu_context *gpu, int most);

int nn_pack_create(struct nn_pack **out, struct gpu_context *gpu);
void nn_pack_destroy(struct nn_pack *pack);

/*
 * One epoch of each of the n fits, as nn_fit_step: rcs[i] and m[i] are
 * what nn_fit_step(fits[i], &m[i]) would have returned and filled. Returns
 * 0, or an error of the device (ERR_DEVICE_LOST, ERR_DEVICE_OOM, ...) that
 * leaves every fit's epoch undone or unknown: then each fit is to be
 * rebuilt from its checkpoint, as after a failed nn_fit_step.
 */
int nn_pack_step(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		 struct nn_metrics *m, int *rcs);

/*
 * The exports of the fits whose want[i] is set, as nn_fit_export(fits[i],
 * ...) would make them one by one, bit for bit, but, for the fits of the
 * last step, rendered by the pack's programs and read back together: a
 * handful of submissions for any number of fits (a fit the last step did
 * not take is exported alone). out[i] gets the
 * model package (when models), the reconstruction (when recons), the
 * PSNR of the weights exported, and rc: 0 or why that fit's export
 * failed. Returns 0, or an error of the device that failed every export.
 */
struct st_file;
struct image;
struct nn_export {
	struct st_file *model;
	struct image *recon;
	double psnr;
	int rc;
};
int nn_pack_export(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		   const int *want, int models, int recons,
		   struct nn_export *out);

/* Whether the last step took fit (as it is now; hint: the place in that
 * step's list to look first, or -1); and the exact render of those of
 * fits[0..n) whose flag is set, each group's packed program
 * at once (pack_export.c): ERR_INVALID when one was not in the last
 * step. */
/* The pack lets go of a fit that is about to be destroyed outside it (a
 * job that diverged, or whose device failed, reloads from its
 * checkpoint): its slot runs no more and nothing of the pack reads it
 * again; the next step takes the new list as it is. fit is compared, never
 * read. */
void nn_pack_forget(struct nn_pack *pack, const struct nn_fit *fit);
int nn_pack_holds(const struct nn_pack *pack, const struct nn_fit *fit,
		  int hint);
int nn_pack_render(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		   const int *flag);

/* Groups and fits of the last step, for logs and the benchmark. */
void nn_pack_shape(const struct nn_pack *pack, int *groups, int *fits);
/* How many times the pack's programs were recorded from scratch (a list
 * of fits that joined, left or changed while the programs had room for
 * them costs none). */
int nn_pack_builds(const struct nn_pack *pack);

/* The GPU time of each pass in the last step's epoch and optimizer step,
 * summed over the groups (the pack's programs carry the fits'
 * timestamps): what --timings reports for a pack. */
void nn_pack_pass_ms(const struct nn_pack *pack, double ms[NN_PASS_COUNT]);

/* The host's clock through the last step, by phase: the fits' steps
 * begun (and the groups built when the list changed), the epoch programs
 * submitted and waited for, the losses read, the optimizer programs
 * submitted and waited for, and the rest (averages, history). */
enum nn_pack_phase {
	NN_PACK_BEGIN,
	NN_PACK_EPOCH_RUN,
	NN_PACK_MEASURE,
	NN_PACK_OPTIM_RUN,
	NN_PACK_AFTER,
	NN_PACK_PHASES
};
void nn_pack_host_ms(const struct nn_pack *pack, double ms[NN_PACK_PHASES]);

#endif
