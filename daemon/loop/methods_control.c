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

/* A change asked for by a client, of a job no worker holds: logged and
 * kept in the job's events as "paused", "resumed" or "cancelled", with
 * the uid that asked. */
static void set_state(struct request *rq, struct job *job, enum job_state state)
{
	struct service *svc = rq->svc;
	const char *what =
	    state == JOB_QUEUED ? "resumed" : job_state_name(state);
	job_event(svc->queue, job, LOGL_NOTICE, "%s by uid %u (was %s)", what,
		  (unsigned)server_conn_uid(rq->c), job_state_name(job->state));
	queue_set_state(svc->queue, job, state, NULL);
	subs_job_state(svc, job);
}

/* A pause or cancel of a running job: answered once the worker has let
 * it go (subs.c). */
static int wait_for_state(struct request *rq, struct job *job)
{
	if (subs_wait_state(rq->svc, server_conn_id(rq->c), rq->id, job))
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	return METHOD_DEFERRED;
}

int m_pause(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	switch (job->state) {
	case JOB_RUNNING:
		worker_flag(rq->svc->slots[job->worker].w, job->id, WORK_PAUSE);
		return wait_for_state(rq, job);
	case JOB_QUEUED:
		set_state(rq, job, JOB_PAUSED);
		break;
	case JOB_PAUSED:
		break;
	default:
		return fail(rq, RPC_JOB_STATE,
			    "job %s is %s; only a queued or "
			    "running job can be paused",
			    job->id, job_state_name(job->state));
	}
	*result = views_job_state(job);
	return 0;
}

int m_resume(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->damaged)
		return fail(rq, RPC_JOB_STATE,
			    "job %s cannot run again: %s; "
			    "remove it (job.remove)",
			    job->id, job->error);
	switch (job->state) {
	case JOB_PAUSED:
	case JOB_FAILED:
		set_state(rq, job, JOB_QUEUED);
		schedule_jobs(rq->svc);
		break;
	case JOB_QUEUED:
	case JOB_RUNNING:
		break;
	default:
		return fail(rq, RPC_JOB_STATE,
			    "job %s is %s; only a paused or "
			    "failed job can be resumed",
			    job->id, job_state_name(job->state));
	}
	*result = views_job_state(job);
	return 0;
}

int m_cancel(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	switch (job->state) {
	case JOB_RUNNING:
		worker_flag(rq->svc->slots[job->worker].w, job->id,
			    WORK_CANCEL);
		return wait_for_state(rq, job);
	case JOB_QUEUED:
	case JOB_PAUSED:
		set_state(rq, job, JOB_CANCELLED);
		schedule_jobs(rq->svc); /* what waits for it fails (after.c) */
		break;
	case JOB_CANCELLED: /* as pausing a paused job: already so */
		break;
	default:
		return fail(rq, RPC_JOB_STATE,
			    "job %s is %s already; there is "
			    "nothing to cancel",
			    job->id, job_state_name(job->state));
	}
	*result = views_job_state(job);
	return 0;
}

int m_remove(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->state == JOB_RUNNING)
		return fail(rq, RPC_JOB_STATE,
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
		p.width = 0;
	if (p.defaults & JOB_DEFAULT_LR)
		p.lr = NN_LR_AUTO;
	if (p.defaults & JOB_DEFAULT_WARMUP)
		p.recipe.warmup = NN_WARMUP_AUTO;
	if (p.width)
		nn_resolve_auto(&p.width, 0, &p.lr, &p.recipe);
	p.nafter = 0;
	snprintf(p.retry_of, sizeof(p.retry_of), "%s", old->id);
	return p;
}

int m_retry(struct request *rq, const cJSON *params, cJSON **result)
{
	struct service *svc = rq->svc;
	struct job *old, *job;
	uint8_t *png = NULL, *init = NULL;
	size_t png_size = 0, init_size = 0;
	char err[512] = "";
	int rc = touchable_job(rq, params, &old);
	if (rc)
		return rc;
	if (old->state != JOB_FAILED && old->state != JOB_CANCELLED)
		return fail(rq, RPC_JOB_STATE,
			    "job %s is %s; only a failed or cancelled job can "
			    "be retried%s",
			    old->id, job_state_name(old->state),
			    old->state == JOB_PAUSED
				? " (job.resume continues a paused one)"
				: "");
	if (old->damaged)
		return fail(rq, RPC_JOB_STATE,
			    "job %s cannot run again: %s; remove it "
			    "(job.remove)",
			    old->id, old->error);
	if (svc->stopping)
		return fail(rq, RPC_SHUTTING_DOWN,
			    "the daemon is stopping; retry once it is back");
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT,
			    "uid %u already has %d jobs (the limit, ended "
			    "ones included); remove the ended ones (vkinrctl "
			    "rm --state done)",
			    (unsigned)server_conn_uid(rq->c),
			    quota_jobs_per_uid());
	}
	if ((rc = read_job_file(svc->queue, old, JOBFILE_TARGET, &png,
				&png_size)) ||
	    (old->has_init && (rc = read_job_file(svc->queue, old, JOBFILE_INIT,
						  &init, &init_size)))) {
		free(png);
		return fail(rq, RPC_INTERNAL_ERROR,
			    "cannot read the inputs of job %s back: %s",
			    old->id,
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
		return fail(rq,
			    rc == ERR_NO_SPACE || rc == ERR_TOO_LARGE
				? RPC_LIMIT
				: RPC_INTERNAL_ERROR,
			    "%s", err);
	}
	job_event(svc->queue, old, LOGL_NOTICE, "retried as job %s by uid %u",
		  job->id, (unsigned)job->uid);
	job_event(svc->queue, job, LOGL_NOTICE,
		  "submitted by uid %u as a retry of job %s (%s): %dx%d, "
		  "%d epochs, seed %llu, priority %d",
		  (unsigned)job->uid, old->id, job_state_name(old->state),
		  job->img_w, job->img_h, job->p.epochs,
		  (unsigned long long)job->p.seed, job->p.priority);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddStringToObject(*result, "retry_of", old->id);
	if (job->p.batch[0])
		cJSON_AddStringToObject(*result, "batch", job->p.batch);
	schedule_jobs(svc);
	return 0;
}
