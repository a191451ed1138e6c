/*
 * methods_read.c - the methods that read: hello, daemon.status, job.list,
 * job.get, job.logs, job.subscribe and job.unsubscribe.
 */
#include "loop/methods_common.h"

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
#include "jobs/share.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "formats/safetensors.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "usertext.h"
#include "loop/views.h"

static const char *first_device(struct service *svc)
{
	for (int i = 0; i < svc->nslots; i++)
		if (svc->slots[i].ok)
			return svc->slots[i].device;
	return NULL;
}

int methods_hello(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = { "client", "protocol", NULL };
	int rc = methods_check_keys(rq, params, keys);
	if (rc)
		return rc;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "daemon", "vkinrd");
	cJSON_AddNumberToObject(r, "protocol", PROTOCOL_VERSION);
	cJSON_AddStringToObject(r, "version", VKINR_VERSION);
	const char *dev = first_device(rq->svc);
	if (dev)
		cJSON_AddStringToObject(r, "device", dev);
	else
		cJSON_AddNullToObject(r, "device");
	cJSON_AddNumberToObject(r, "uid", server_conn_uid(rq->c));
	*result = r;
	return 0;
}

int methods_daemon_status(struct request *rq, const cJSON *params,
			  cJSON **result)
{
	static const char *const keys[] = { NULL };
	int rc = methods_check_keys(rq, params, keys);
	if (rc)
		return rc;
	struct service *svc = rq->svc;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "daemon", "vkinrd");
	cJSON_AddStringToObject(r, "version", VKINR_VERSION);
	cJSON_AddNumberToObject(r, "protocol", PROTOCOL_VERSION);
	cJSON_AddNumberToObject(r, "pid", getpid());
	cJSON_AddNumberToObject(r, "uptime", (double)time(NULL) - svc->started);
	cJSON_AddNumberToObject(r, "started", svc->started);
	const char *dev = first_device(svc);
	if (dev)
		cJSON_AddStringToObject(r, "device", dev);
	else
		cJSON_AddNullToObject(r, "device");
	cJSON_AddItemToObject(r, "devices", views_devices(svc));
	cJSON_AddStringToObject(r, "state_dir", svc->opt->state_dir);
	cJSON_AddBoolToObject(r, "stopping", svc->stopping);
	cJSON *jobs = cJSON_AddObjectToObject(r, "jobs");
	for (int s = JOB_QUEUED; s <= JOB_CANCELLED; s++)
		cJSON_AddNumberToObject(jobs, job_state_name(s),
					queue_count_state(svc->queue, s));
	cJSON_AddNumberToObject(jobs, "total", svc->queue->count);
	cJSON_AddNumberToObject(r, "queue",
				queue_count_state(svc->queue, JOB_QUEUED));
	cJSON_AddNumberToObject(r, "connections",
				server_connection_count(svc->server));
	cJSON_AddNumberToObject(r, "subscriptions", subs_count(svc, 0));
	cJSON *lim = cJSON_AddObjectToObject(r, "limits");
	cJSON_AddNumberToObject(lim, "line_bytes", LIMIT_LINE_BYTES);
	cJSON_AddNumberToObject(lim, "connections", quota_connections());
	cJSON_AddNumberToObject(lim, "connections_per_uid",
				quota_connections_per_uid());
	cJSON_AddNumberToObject(lim, "jobs_per_uid", quota_jobs_per_uid());
	cJSON_AddNumberToObject(lim, "requests_per_uid",
				quota_requests_per_uid());
	cJSON_AddNumberToObject(lim, "subscriber_bytes",
				LIMIT_SUBSCRIBER_BYTES);
	cJSON_AddNumberToObject(lim, "image_side", IMAGE_MAX_SIDE);
	cJSON_AddNumberToObject(lim, "image_pixels", IMAGE_MAX_PIXELS);
	cJSON_AddNumberToObject(lim, "disk_bytes_per_uid",
				(double)quota_disk_bytes_per_uid());
	cJSON_AddNumberToObject(lim, "disk_files_per_uid",
				quota_disk_files_per_uid());
	/* the caller's own share: its disk and its device time lately */
	uid_t uid = server_conn_uid(rq->c);
	long long bytes, files;
	share_disk_use(svc->queue, uid, &bytes, &files);
	cJSON *mine = cJSON_AddObjectToObject(r, "mine");
	cJSON_AddNumberToObject(mine, "uid", uid);
	cJSON_AddNumberToObject(mine, "disk_bytes", (double)bytes);
	cJSON_AddNumberToObject(mine, "disk_files", (double)files);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	cJSON_AddNumberToObject(
	    mine, "device_seconds",
	    share_recent(svc->queue, uid, ts.tv_sec + ts.tv_nsec * 1e-9));
	*result = r;
	return 0;
}

/* job.list: every job, or those of "jobs" (an array of ids, as strings
 * or numbers: wait asks for its own jobs, not the daemon's whole history),
 * in the order asked; an id of no job is left out. */
int methods_job_list(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = { "jobs", NULL };
	int rc = methods_check_keys(rq, params, keys);
	if (rc)
		return rc;
	const cJSON *only = cJSON_GetObjectItemCaseSensitive(params, "jobs");
	if (only && (!cJSON_IsArray(only) ||
		     cJSON_GetArraySize(only) > JOB_LIST_IDS_MAX))
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "\"jobs\" must be an array of at most %d "
				    "job ids, e.g. [\"1\", \"2\"]",
				    JOB_LIST_IDS_MAX);
	cJSON *r = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(r, "jobs");
	int default_width = schedule_default_width(rq->svc);
	if (!only) {
		for (struct job *job = rq->svc->queue->head; job;
		     job = job->next)
			cJSON_AddItemToArray(a, views_job(job, default_width));
		*result = r;
		return 0;
	}
	const cJSON *v;
	cJSON_ArrayForEach(v, only)
	{
		char id[METHODS_ID_TEXT] = "";
		int kind = methods_job_id_text(v, id);
		if (kind != METHODS_ID_OK && kind != METHODS_ID_LONG) {
			cJSON_Delete(r);
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "\"jobs\" holds job ids, e.g. "
					    "[\"1\", \"2\"]");
		}
		struct job *job = kind == METHODS_ID_OK
				      ? queue_find(rq->svc->queue, id)
				      : NULL;
		if (job)
			cJSON_AddItemToArray(a, views_job(job, default_width));
	}
	*result = r;
	return 0;
}

int methods_job_get(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_check_keys(rq, params, methods_job_only);
	if (rc || (rc = methods_get_job(rq, params, &job)))
		return rc;
	*result = views_job(job, schedule_default_width(rq->svc));
	return 0;
}

/* Anyone may read a job's events, as its job object (see Access): they
 * say what job.get and job.subscribe show, with times. */
int methods_job_logs(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	cJSON *events;
	int rc = methods_check_keys(rq, params, methods_job_only);
	if (rc || (rc = methods_get_job(rq, params, &job)))
		return rc;
	if ((rc = events_read(rq->svc->queue, job, &events)))
		return methods_fail(rq, RPC_INTERNAL_ERROR,
				    "cannot read the events of "
				    "job %s: %s",
				    job->id,
				    rc == ERR_IO ? strerror(errno)
						 : error_message(rc));
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddItemToObject(*result, "events", events);
	return 0;
}

int methods_job_subscribe(struct request *rq, const cJSON *params,
			  cJSON **result)
{
	static const char *const keys[] = { "job", "since", NULL };
	struct service *svc = rq->svc;
	struct job *job;
	int64_t since = 0;
	int rc = methods_check_keys(rq, params, keys);
	if (rc || (rc = methods_get_job(rq, params, &job)) ||
	    (rc = methods_get_int(rq, params, "since", 0, 1e12, &since)))
		return rc;
	uint64_t conn = server_conn_id(rq->c);
	subs_drop(svc, conn, job->id);
	int nsubs = subs_count(svc, conn);
	if (nsubs >= quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return methods_fail(rq, RPC_LIMIT,
				    "this connection follows %d jobs "
				    "already (the limit)",
				    nsubs);
	}
	struct subscription *s = subs_add(svc, conn, job, since);
	if (!s)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "job", job->id);
	cJSON_AddStringToObject(r, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(r, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(r, "epochs", job->p.cfg.epochs);
	cJSON_AddNumberToObject(r, "replay", subs_replay_left(s, job));
	*result = r;
	return 0; /* the replay follows the result (pumped after it) */
}

int methods_job_unsubscribe(struct request *rq, const cJSON *params,
			    cJSON **result)
{
	struct job *job;
	int rc = methods_check_keys(rq, params, methods_job_only);
	if (rc || (rc = methods_get_job(rq, params, &job)))
		return rc;
	subs_drop(rq->svc, server_conn_id(rq->c), job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	return 0;
}
