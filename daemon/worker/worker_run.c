/*
 * worker_run.c - one job's run on the worker thread.
 *
 * A run is a short loop over what each step came to (enum run_outcome):
 * on to the next epoch, build the fit again, or leave the worker. The fit
 * is built from the job's checkpoint when it has one, else from its
 * config (worker_load_fit); checkpoints are written every ckpt_epochs
 * epochs or ckpt_seconds seconds, and the exports when it is done. A lost
 * device is reopened and the job resumed from its checkpoint, a
 * divergence rolled back with half the rate, each a bounded number of
 * times; every other failure ends the job with a sentence (WORK_ENDED).
 * The steps are shared with a pack (worker_pack.c), which runs each of its
 * jobs exactly as a run alone would.
 */
#include "worker/worker.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "log.h"
#include "nn/package.h"
#include "nn/pack.h"
#include "formats/safetensors.h"
#include "util/image.h"
#include "worker/worker_internal.h"

/* Writes model.safetensors and recon.png for a finished job: the
 * export made with its pack (r->export), or one made now. */
static int save_exports(struct run *r, double *psnr)
{
	if (r->export)
		return worker_run_write_export(r);
	char model[4200], recon[4200];
	worker_path_in(r->job, NULL, JOBFILE_MODEL, model, sizeof(model));
	worker_path_in(r->job, NULL, JOBFILE_RECON, recon, sizeof(recon));
	return nn_fit_save_export(r->fit, model, recon, 0600, psnr, NULL);
}

int worker_run_write_export(struct run *r)
{
	char model[4200], recon[4200];
	worker_path_in(r->job, NULL, JOBFILE_MODEL, model, sizeof(model));
	worker_path_in(r->job, NULL, JOBFILE_RECON, recon, sizeof(recon));
	struct nn_export *ex = r->export;
	r->export = NULL;
	int rc = ex->rc;
	if (rc) {
		st_destroy(ex->model);
		image_destroy(ex->recon);
	} else {
		r->psnr = ex->psnr;
		rc = nn_export_save(ex->model, ex->recon, model, recon, 0600,
				    NULL);
	}
	free(ex);
	return rc;
}

/*
 * Whether the weights as they are now, which the export would write, reach
 * target PSNR. An epoch's PSNR is measured before its step updates the
 * weights, so it may pass the target while the model after the step does
 * not (or the other way): the stop rule asks the model itself, with one
 * forward pass, once the epoch's PSNR says it may be time.
 */
int worker_run_model_reaches(struct run *r, double target, int *reached)
{
	double psnr = NAN;
	int rc = nn_fit_export(r->fit, NULL, NULL, &psnr);

	*reached = rc == 0 && isfinite(psnr) && psnr >= target;
	return rc;
}

/* ------------------------------------------------------- a job's run */

enum run_outcome worker_run_ended(struct run *r, enum work_end end)
{
	r->end = end;
	return RUN_ENDED;
}

/* Builds the fit (again) and says so with WORK_STARTED. */
static enum run_outcome load(struct worker *w, struct run *r)
{
	const struct work_job *job = r->job;
	char err[512] = "";
	errno = 0;
	int rc = worker_load_fit(w, job->dir, job, r->lr, &r->target, &r->fit,
				 err, sizeof(err));
	if (rc == ERR_DEVICE_OOM && r->shared) {
		/* others train on this device: it is full, not faulty; the
		 * job waits in the queue until one leaves */
		pthread_mutex_lock(&w->lock);
		w->full = 1;
		pthread_mutex_unlock(&w->lock);
		worker_admit_alone(w, job->id); /* never again beside others */
		log_info("job %s: the device's memory is full with its pack; "
			 "back to the queue, to run alone once the worker is "
			 "free",
			 job->id);
		return worker_run_ended(r, WORK_END_QUEUED);
	}
	if (worker_device_fault(rc) && r->retries < WORKER_DEVICE_RETRIES) {
		log_warn("job %s: %s while loading; reopening the device "
			 "(retry %d of %d)",
			 job->id, error_message(rc), r->retries + 1,
			 WORKER_DEVICE_RETRIES);
		r->retries++;
		if (worker_reopen_device(w, err, sizeof(err)) == 0)
			return RUN_RELOAD;
	}
	if (rc) {
		/* no file descriptor left to read its files: a shortage,
		 * paused as a full disk is (the daemon retries) */
		int fds = worker_short_of_fds(errno, err);
		snprintf(r->msg, sizeof(r->msg), "cannot start: %s%s", err,
			 fds ? "; paused until file descriptors are free again"
			     : "");
		return worker_run_ended(r, fds ? WORK_END_PAUSED
					       : WORK_END_FAILED);
	}
	worker_publish_memory(w);
	struct work_event *ev = worker_event(WORK_STARTED, job->id);
	ev->epoch = r->last_ckpt_epoch = nn_fit_epoch(r->fit);
	ev->m.lr = nn_fit_config(r->fit)->lr;
	struct nn_fit_info info;
	nn_fit_get_info(r->fit, &info);
	snprintf(ev->message, sizeof(ev->message), "%s", info.precision);
	worker_post(w, ev);
	r->last_ckpt_time = worker_seconds();
	log_info("job %s: running from epoch %d to %d", job->id,
		 nn_fit_epoch(r->fit), job->cfg.epochs);
	return RUN_NEXT;
}

/* What a failed step comes to: a lost device (or its memory run out) is
 * reopened and the job resumed from its checkpoint, a divergence rolled
 * back to the checkpoint with half the rate, each a bounded number of
 * times; anything else fails the job. */
enum run_outcome worker_run_recover(struct worker *w, struct run *r, int rc)
{
	const struct work_job *job = r->job;
	char err[512] = "";
	if (worker_device_fault(rc) && r->retries < WORKER_DEVICE_RETRIES) {
		r->retries++;
		log_warn("job %s: %s at epoch %d; reopening the device and "
			 "resuming from the checkpoint (retry %d of %d)",
			 job->id, error_message(rc), nn_fit_epoch(r->fit) + 1,
			 r->retries, WORKER_DEVICE_RETRIES);
		nn_fit_destroy(r->fit);
		r->fit = NULL;
		if (worker_reopen_device(w, err, sizeof(err)) == 0)
			return RUN_RELOAD;
		snprintf(r->msg, sizeof(r->msg),
			 "%s, and the device could not "
			 "be reopened: %s",
			 error_message(rc), err);
		return worker_run_ended(r, WORK_END_FAILED);
	}
	if (rc == ERR_DIVERGED && r->rollbacks < WORKER_DIVERGE_RETRIES) {
		r->rollbacks++;
		r->lr = nn_fit_config(r->fit)->lr / 2;
		log_warn("job %s: training diverged at epoch %d (the loss is "
			 "not finite); back to the checkpoint of epoch %d with "
			 "lr %g (rollback %d of %d)",
			 job->id, nn_fit_epoch(r->fit) + 1, r->last_ckpt_epoch,
			 r->lr, r->rollbacks, WORKER_DIVERGE_RETRIES);
		nn_fit_destroy(r->fit);
		r->fit = NULL;
		return RUN_RELOAD;
	}
	if (rc == ERR_DIVERGED)
		snprintf(r->msg, sizeof(r->msg),
			 "training diverged at epoch "
			 "%d (the loss is not finite) after %d rollbacks to "
			 "its last checkpoint with the learning rate halved "
			 "each time, down to %g; submit it again with a lower "
			 "lr",
			 nn_fit_epoch(r->fit) + 1, r->rollbacks,
			 nn_fit_config(r->fit)->lr);
	else
		snprintf(r->msg, sizeof(r->msg), "epoch %d failed: %s",
			 nn_fit_epoch(r->fit) + 1, error_message(rc));
	return worker_run_ended(r, WORK_END_FAILED);
}

/* Every epoch has run, or the target is reached: the last checkpoint and
 * the exports. A full disk pauses the job (the daemon retries). */
enum run_outcome worker_run_finish(struct worker *w, struct run *r)
{
	worker_save_checkpoint(w, r);
	errno = 0;
	int rc = save_exports(r, &r->psnr);
	return worker_run_finished(w, r, rc, errno);
}

enum run_outcome worker_run_finished(struct worker *w, struct run *r, int rc,
				     int err)
{
	if (worker_device_fault(rc))
		return worker_run_recover(w, r, rc);
	if (rc) {
		int fds = worker_short_of_fds(err, NULL);
		snprintf(
		    r->msg, sizeof(r->msg),
		    "cannot write the exported "
		    "model into %.300s: %s%s",
		    r->job->dir, fds ? strerror(err) : error_message(rc),
		    rc == ERR_NO_SPACE ? "; paused until there is space again"
		    : fds ? "; paused until file descriptors are free again"
			  : "");
		return worker_run_ended(r, rc == ERR_NO_SPACE || fds
					       ? WORK_END_PAUSED
					       : WORK_END_FAILED);
	}
	return worker_run_ended(r, WORK_END_DONE);
}

/* The checkpoint due every ckpt_epochs epochs (ckpt_min_seconds apart at
 * least) or ckpt_seconds seconds. */
int worker_run_checkpoint_due(const struct worker *w, const struct run *r)
{
	double since = worker_seconds() - r->last_ckpt_time;
	int by_epochs =
	    nn_fit_epoch(r->fit) - r->last_ckpt_epoch >= w->ckpt_epochs &&
	    since >= w->ckpt_min_seconds;
	return by_epochs || since >= w->ckpt_seconds;
}

/* A full disk, or no file descriptor left: training on would only lose
 * more, so the job is paused with the reason (the daemon retries); any
 * other cause (the folder was removed) fails it. */
enum run_outcome worker_run_checkpointed(struct worker *w, struct run *r,
					 int rc)
{
	if (!rc)
		return RUN_NEXT;
	if (worker_device_fault(rc)) /* reading the weights back */
		return worker_run_recover(w, r, rc);
	int space = rc == ERR_NO_SPACE;
	int fds = worker_short_of_fds(r->write_errno, NULL);
	snprintf(r->msg, sizeof(r->msg),
		 "cannot write %.300s/"
		 "checkpoint.safetensors at epoch %d: %s; %s",
		 r->job->dir, nn_fit_epoch(r->fit),
		 r->write_errno ? strerror(r->write_errno) : error_message(rc),
		 space ? "paused until there is space again"
		 : fds ? "paused until file descriptors are free again"
		       : "the job cannot go on");
	return worker_run_ended(r, space || fds ? WORK_END_PAUSED
						: WORK_END_FAILED);
}

enum boundary_kind worker_run_kind(struct run *r, int flags)
{
	r->flags = flags;
	if (flags & WORK_LEAVE)
		return BOUNDARY_STOP;
	if (r->reached || nn_fit_epoch(r->fit) >= r->job->cfg.epochs)
		return BOUNDARY_FINISH;
	return BOUNDARY_NONE;
}

enum run_outcome worker_run_stop(struct run *r)
{
	return worker_run_ended(r, r->flags & WORK_CANCEL  ? WORK_END_CANCELLED
				   : r->flags & WORK_PAUSE ? WORK_END_PAUSED
							   : WORK_END_QUEUED);
}

enum run_outcome worker_run_after_step(struct worker *w, struct run *r,
				       const struct nn_metrics *m, int rc,
				       int *due)
{
	const struct work_job *job = r->job;
	*due = 0;
	/* the best model measured so far says it may be time; the export
	 * (which takes that one, or better) decides */
	if (!rc && job->target_psnr > 0 && isfinite(m->psnr_best) &&
	    m->psnr_best >= job->target_psnr)
		rc = worker_run_model_reaches(r, job->target_psnr, &r->reached);
	if (rc)
		return worker_run_recover(w, r, rc);
	*due = worker_run_checkpoint_due(w, r);
	return RUN_NEXT;
}

/* One epoch boundary and one epoch: a request served, the flags obeyed,
 * the end checked, the step, its news, the stop rule and the checkpoint;
 * a pack takes the same steps for each of its jobs (worker_pack.c). */
static enum run_outcome epoch(struct worker *w, struct run *r)
{
	switch (worker_run_kind(r, worker_serve_due(w, &r, 1))) {
	case BOUNDARY_STOP:
		worker_save_checkpoint(w, r);
		return worker_run_stop(r);
	case BOUNDARY_FINISH:
		return worker_run_finish(w, r);
	default:
		break;
	}
	struct nn_metrics m;
	double t = worker_seconds();
	int rc = nn_fit_step(r->fit, &m), due;
	r->train_seconds += worker_seconds() - t;
	if (!rc) {
		struct work_event *ev = worker_event(WORK_PROGRESS, r->job->id);
		ev->m = m;
		worker_post(w, ev);
		worker_publish_memory(w);
	}
	enum run_outcome o = worker_run_after_step(w, r, &m, rc, &due);
	if (o != RUN_NEXT || !due)
		return o;
	return worker_run_checkpointed(w, r, worker_save_checkpoint(w, r));
}

/* Says how the job left the worker (WORK_ENDED). */
static void post_end(struct worker *w, const struct run *r)
{
	worker_release_held(w, r->job->id);
	struct work_event *ev = worker_event(WORK_ENDED, r->job->id);
	ev->end = r->end;
	if (r->end == WORK_END_DONE) {
		ev->psnr = r->psnr;
		ev->has_psnr = isfinite(r->psnr);
		ev->target_reached = r->reached;
		ev->epoch = nn_fit_epoch(r->fit);
	} else {
		snprintf(ev->message, sizeof(ev->message), "%s", r->msg);
	}
	worker_post(w, ev);
}

/* Runs one job until it leaves the worker (WORK_ENDED posted). */
void worker_run_job(struct worker *w, struct work_job *job)
{
	struct run r = { .job = job, .psnr = NAN };
	enum run_outcome o = RUN_RELOAD;
	while (o != RUN_ENDED)
		o = o == RUN_RELOAD ? load(w, &r) : epoch(w, &r);
	post_end(w, &r);
	nn_fit_destroy(r.fit);
	image_destroy(r.target);
	worker_publish_memory(w);
}

void worker_run_tell_end(struct worker *w, const struct run *r)
{
	post_end(w, r);
}

void worker_run_free(struct run *r)
{
	if (r->export) { /* made, then not written (the job left first) */
		st_destroy(r->export->model);
		image_destroy(r->export->recon);
		free(r->export);
	}
	nn_fit_destroy(r->fit);
	image_destroy(r->target);
	free(r->job);
	free(r);
}

/* The job leaves the worker: WORK_ENDED, and its run freed. */
void worker_run_end(struct worker *w, struct run *r)
{
	worker_run_tell_end(w, r);
	worker_run_free(r);
}

/* Builds the run's fit until it has one or has ended. */
enum run_outcome worker_run_load(struct worker *w, struct run *r)
{
	enum run_outcome o;
	while ((o = load(w, r)) == RUN_RELOAD)
		;
	return o;
}
