/*
 * methods_control.c - the methods that change a job's state: job.pause,
 * job.resume, job.cancel and job.remove (a running job's change is
 * answered once its worker has made it), and job.retry, which runs a
 * failed or cancelled job again from scratch as a new job.
 */
#include "loop/methods_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/errors.h"
#include "jobs/jobstate.h"
#include "loop/after.h"
#include "loop/events.h"
#include "util/fileio.h"
#include "formats/image_codec.h"
#include "proto/jsonrpc.h"
#include "proto/params.h"
#include "log.h"
#include "proto/protocol.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "formats/safetensors.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "usertext.h"
#include "loop/views.h"

/* A change asked for by a client: what the state machine says
 * (jobs/jobstate.h). A change of a job no worker holds is made now, and
 * logged and kept in the job's events as "paused", "resumed" or
 * "cancelled", with the uid that asked; a running job's worker is told,
 * and the request answered once the worker has let the job go (subs.c).
 * A refusal says "job ID is STATE" and then refused. Returns 0 (the job's
 * state in *result), METHOD_DEFERRED, or an error. */
static int change_state(struct request *rq, struct job *job,
			enum jobstate_cause cause, const char *refused,
			cJSON **result)
{
	struct service *svc = rq->svc;
	struct jobstate_step step = jobstate_step(job->state, cause);
	switch (step.kind) {
	case JOBSTATE_REFUSED:
		return methods_fail(rq, RPC_JOB_STATE, "job %s is %s%s",
				    job->id, job_state_name(job->state),
				    refused);
	case JOBSTATE_WORKER:
		worker_flag(svc->slots[job->worker].w, job->id,
			    step.flag == JOBSTATE_FLAG_PAUSE ? WORK_PAUSE
							     : WORK_CANCEL);
		if (subs_wait_state(svc, server_conn_id(rq->c), rq->id, job))
			return methods_fail(rq, RPC_INTERNAL_ERROR,
					    "out of memory");
		return METHOD_DEFERRED;
	case JOBSTATE_TO:
		events_note(
		    svc->queue, job, LOGL_NOTICE, "%s by uid %u (was %s)",
		    step.to == JOB_QUEUED ? "resumed" : job_state_name(step.to),
		    (unsigned)server_conn_uid(rq->c),
		    job_state_name(job->state));
		jobstate_apply(svc->queue, job, cause, NULL);
		subs_job_state(svc, job);
		/* a resumed job may start; what waits for a cancelled one
		 * fails (after.c) */
		if (cause != JOBSTATE_PAUSE)
			schedule_jobs(svc);
		break;
	case JOBSTATE_STAYS:
		break;
	}
	*result = views_job_state(job);
	return 0;
}

int methods_job_pause(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_touchable_job(rq, params, &job);
	if (rc)
		return rc;
	return change_state(rq, job, JOBSTATE_PAUSE,
			    "; only a queued or running job can be paused",
			    result);
}

int methods_job_resume(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->damaged)
		return methods_fail(rq, RPC_JOB_STATE,
				    "job %s cannot run again: %s; "
				    "remove it (job.remove)",
				    job->id, job->error);
	return change_state(rq, job, JOBSTATE_RESUME,
			    "; only a paused or failed job can be resumed",
			    result);
}

int methods_job_cancel(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_touchable_job(rq, params, &job);
	if (rc)
		return rc;
	return change_state(rq, job, JOBSTATE_CANCEL,
			    " already; there is nothing to cancel", result);
}

int methods_job_remove(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (jobstate_step(job->state, JOBSTATE_REMOVE).kind == JOBSTATE_REFUSED)
		return methods_fail(rq, RPC_JOB_STATE,
				    "job %s is running; cancel it "
				    "first, then remove it",
				    job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddBoolToObject(*result, "removed", 1);
	subs_drop(rq->svc, 0, job->id);
	log_notice("job %s removed", job->id);
	after_removing(rq->svc, job);
	queue_remove(rq->svc->queue, job);
	schedule_jobs(rq->svc); /* what waited for it moves on (after.c) */
	return 0;
}

/* A file of the job's folder, whole; 0 or a negative code (errno). */
static int read_job_file(struct queue *q, const struct job *job,
			 const char *file, uint8_t **data, size_t *size)
{
	char path[4096];
	int rc = queue_job_path(q, job, file, path, sizeof(path));
	return rc ? rc
		  : fileio_read_regular(path, data, size, LIMIT_LINE_BYTES);
}

/* The settings of a job to run again from scratch: what was left to the
 * daemon is left to it again (the device then chooses), the rest as
 * given; no jobs to wait for. */
static struct job_params retry_params(const struct job *old)
{
	struct job_params p = old->p;
	if (p.defaults & JOB_DEFAULT_WIDTH)
		p.cfg.nf = 0;
	if (p.defaults & JOB_DEFAULT_LR)
		p.cfg.lr = NN_LR_AUTO;
	if (p.defaults & JOB_DEFAULT_WARMUP)
		p.cfg.recipe.warmup = NN_WARMUP_AUTO;
	job_resolve_auto(&p, -1);
	p.nafter = 0;
	snprintf(p.retry_of, sizeof(p.retry_of), "%s", old->id);
	return p;
}

int methods_job_retry(struct request *rq, const cJSON *params, cJSON **result)
{
	struct service *svc = rq->svc;
	struct job *old, *job;
	uint8_t *png = NULL, *init = NULL;
	size_t png_size = 0, init_size = 0;
	char err[512] = "";
	int rc = methods_touchable_job(rq, params, &old);
	if (rc)
		return rc;
	if (jobstate_step(old->state, JOBSTATE_RETRY).kind == JOBSTATE_REFUSED)
		return methods_fail(
		    rq, RPC_JOB_STATE,
		    "job %s is %s; only a failed or cancelled job can "
		    "be retried%s",
		    old->id, job_state_name(old->state),
		    old->state == JOB_PAUSED
			? " (job.resume continues a paused one)"
			: "");
	if (old->damaged)
		return methods_fail(rq, RPC_JOB_STATE,
				    "job %s cannot run again: %s; remove it "
				    "(job.remove)",
				    old->id, old->error);
	if (svc->stopping)
		return methods_fail(
		    rq, RPC_SHUTTING_DOWN,
		    "the daemon is stopping; retry once it is back");
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return methods_fail(
		    rq, RPC_LIMIT,
		    "uid %u already has %d jobs (the limit, ended "
		    "ones included); remove the ended ones (vkinrctl "
		    "rm --state done)",
		    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}
	if ((rc = read_job_file(svc->queue, old, JOBFILE_TARGET, &png,
				&png_size)) ||
	    (old->has_init && (rc = read_job_file(svc->queue, old, JOBFILE_INIT,
						  &init, &init_size)))) {
		free(png);
		return methods_fail(
		    rq, RPC_INTERNAL_ERROR,
		    "cannot read the inputs of job %s back: %s", old->id,
		    rc == ERR_IO ? strerror(errno) : error_message(rc));
	}
	struct job_params p = retry_params(old);
	rc = queue_submit(svc->queue, &p, server_conn_uid(rq->c),
			  server_conn_pid(rq->c), png, png_size, old->img_w,
			  old->img_h, init, init_size, &job, err, sizeof(err));
	free(png);
	free(init);
	if (rc) {
		log_error("job.retry: %s", err);
		return methods_fail(rq,
				    rc == ERR_NO_SPACE || rc == ERR_TOO_LARGE
					? RPC_LIMIT
					: RPC_INTERNAL_ERROR,
				    "%s", err);
	}
	events_note(svc->queue, old, LOGL_NOTICE, "retried as job %s by uid %u",
		    job->id, (unsigned)job->uid);
	events_note(svc->queue, job, LOGL_NOTICE,
		    "submitted by uid %u as a retry of job %s (%s): %dx%d, "
		    "%d epochs, seed %llu, priority %d",
		    (unsigned)job->uid, old->id, job_state_name(old->state),
		    job->img_w, job->img_h, job->p.cfg.epochs,
		    (unsigned long long)job->p.cfg.seed, job->p.priority);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddStringToObject(*result, "retry_of", old->id);
	if (job->p.batch[0])
		cJSON_AddStringToObject(*result, "batch", job->p.batch);
	schedule_jobs(svc);
	return 0;
}
