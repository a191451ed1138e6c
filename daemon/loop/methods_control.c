/*
 * methods_control.c - the methods that change a job's state: job.pause,
 * job.resume, job.cancel and job.remove (a running job's change is
 * answered once its worker has made it).
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
#include "loop/events.h"
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
	queue_remove(rq->svc->queue, job);
	return 0;
}
