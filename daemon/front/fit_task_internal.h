/*
 * fit_task_internal.h - what fit_task.c (the task, its pack) and
 * fit_task_files.c (the results on disk) share. Nobody else includes it.
 */
#ifndef VKINR_FIT_TASK_INTERNAL_H
#define VKINR_FIT_TASK_INTERNAL_H

#include "nn/fit.h"

struct gpu_context;
struct image;
struct nn_export;

struct task {
	const char *manifest, *out, *device;
	int shard, shards;    /* this task is shard of shards */
	int slot, slots;      /* and this process slot of slots (GPUs) */
	struct nn_config cfg; /* nf 0: the device's width */
	int allow_cpu, quiet;
	double target_psnr; /* 0: none */
	char settings[512]; /* what a finished result must match */
	struct gpu_context *gpu;
	int done, skipped, failed;
};

/* OUT made if missing and checked (outfile.h's walk); 0, or 1 said on
 * stderr. */
int fit_task_check_out(const char *out);
/* Whether OUT/NAME/result.json says done with these settings. */
int fit_task_already_done(const struct task *t, const char *dir);
/* result.json says failed, with why; said on stderr, counted. */
void fit_task_record_failure(struct task *t, const char *dir, const char *name,
			     const char *file, const char *why);
/* The package and reconstruction (ex: made with the pack's others, or
 * NULL: made now), the metrics, then result.json. */
int fit_task_write_result(struct task *t, const char *dir, const char *name,
			  const char *file, struct nn_fit *fit,
			  const struct image *target, int resumed_from,
			  struct nn_export *ex);

#endif
