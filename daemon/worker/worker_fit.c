/*
 * worker_fit.c - a job's fit built from its folder, its checkpoint written
 * back, and the device under it reopened.
 *
 * worker_load_fit opens a fit from the job's checkpoint when there is one
 * (bit for bit), else from its config and init package; it also serves
 * an export of a job that is not loaded. worker_save_checkpoint writes
 * checkpoint.safetensors and posts WORK_CHECKPOINT, in three steps that a
 * pack's boundary takes apart (worker_boundary.c: the files written by
 * several threads). A lost device (or its
 * memory run out) is cured, if at all, by a new gpu_context. Worker
 * thread only; the steps of a run (worker_run.c), a pack (worker_pack.c)
 * and the requests (worker_serve.c) all build on these.
 */
#include "worker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"
#include "formats/image_codec.h"
#include "log.h"
#include "nn/package.h"
#include "formats/safetensors.h"
#include "worker/worker_internal.h"

int worker_path_in(const struct work_job *job, const char *dir,
		   const char *file, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", job ? job->dir : dir, file);
	return n < 0 || (size_t)n >= len ? ERR_TOO_LARGE : 0;
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/*
 * Builds a fit for the job in dir (nn_fit_open): from checkpoint.safetensors
 * when there is one (bit-exact continuation, the job's epochs and tiling),
 * else from job->cfg (and init, if any).
 * Without job (an export), a checkpoint is required: ERR_NOT_FOUND.
 * lr, when above 0, replaces the learning rate (a rollback after a
 * divergence); the next checkpoint then carries it.
 */
int worker_load_fit(struct worker *w, const char *dir,
		    const struct work_job *job, double lr,
		    struct image **target, struct nn_fit **fit, char *err,
		    size_t errlen)
{
	char path[4200];
	struct st_file *ckpt = NULL, *init = NULL;
	struct nn_config cfg = job ? job->cfg : (struct nn_config){ 0 };
	unsigned take = job ? NN_TAKE_EPOCHS | NN_TAKE_TILING : 0;
	int rc;

	*fit = NULL;
	if (!*target) {
		worker_path_in(NULL, dir, JOBFILE_TARGET, path, sizeof(path));
		rc = png_load_file(path, target, err, errlen);
		if (rc)
			return rc;
	}
	worker_path_in(NULL, dir, JOBFILE_CHECKPOINT, path, sizeof(path));
	if (file_exists(path)) {
		rc = st_load_file(path, &ckpt, err, errlen);
		if (rc)
			return rc;
	} else if (!job) {
		snprintf(err, errlen,
			 "it has no checkpoint yet (it has not run)");
		return ERR_NOT_FOUND;
	} else if (job->has_init) {
		worker_path_in(NULL, dir, JOBFILE_INIT, path, sizeof(path));
		rc = st_load_file(path, &init, err, errlen);
		if (rc)
			return rc;
	}
	if (lr > 0) {
		cfg.lr = lr;
		take |= NN_TAKE_LR;
	}
	rc = nn_fit_open(fit, w->gpu, *target, ckpt, init, &cfg, take, err,
			 errlen);
	st_destroy(ckpt);
	st_destroy(init);
	if (rc && !err[0])
		snprintf(err, errlen, "%s", error_message(rc));
	else if (!rc && job)
		nn_fit_set_epochs(*fit, job->cfg.epochs);
	return rc;
}

int worker_checkpoint_write(struct run *r, const struct st_file *ckpt)
{
	char path[4200];
	worker_path_in(r->job, NULL, JOBFILE_CHECKPOINT, path, sizeof(path));
	errno = 0;
	int rc = st_save_file(ckpt, path);
	r->write_errno = rc ? errno : 0;
	return rc;
}

int worker_checkpoint_done(struct worker *w, struct run *r, int rc)
{
	if (rc) {
		log_error("job %s: checkpoint at epoch %d failed: %s",
			  r->job->id, nn_fit_epoch(r->fit), error_message(rc));
		return rc;
	}
	r->last_ckpt_epoch = nn_fit_epoch(r->fit);
	r->last_ckpt_time = worker_seconds();
	struct work_event *ev = worker_event(WORK_CHECKPOINT, r->job->id);
	ev->epoch = r->last_ckpt_epoch;
	worker_post(w, ev);
	return 0;
}

int worker_save_checkpoint(struct worker *w, struct run *r)
{
	struct st_file *ckpt = NULL;
	int rc = nn_fit_checkpoint(r->fit, &ckpt);
	if (!rc)
		rc = worker_checkpoint_write(r, ckpt);
	st_destroy(ckpt);
	return worker_checkpoint_done(w, r, rc);
}

/* Replaces a lost gpu_context by a new one. */
int worker_reopen_device(struct worker *w, char *err, size_t errlen)
{
	gpu_destroy(w->gpu);
	w->gpu = NULL;
	sleep(1);
	return gpu_create(&w->gpu, w->selector, err, errlen);
}

/* What reopening the device may cure: a lost device, or device memory
 * that ran out (a new context starts with all of it free). */
int worker_short_of_fds(int err, const char *text)
{
	if (err == EMFILE || err == ENFILE)
		return 1;
	return text && (strstr(text, strerror(EMFILE)) ||
			strstr(text, strerror(ENFILE)));
}

int worker_device_fault(int rc)
{
	return rc == ERR_DEVICE_LOST || rc == ERR_DEVICE_OOM;
}

void worker_describe(int rc, const char *err, char *msg, size_t len)
{
	snprintf(msg, len, "%s", err && err[0] ? err : error_message(rc));
}
