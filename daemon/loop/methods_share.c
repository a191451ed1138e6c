/*
 * methods_share.c - what a user may ask of the queue's order: job.renice
 * (a job's priority changed after submission), and the rule job.submit
 * and job.renice share for priorities above SHARE_PRIORITY_USER_MAX
 * (jobs/share.h: those go before everyone's, so only root and the
 * daemon's own user may give them).
 */
#include "loop/methods_common.h"

#include <stddef.h>
#include <stdio.h>

#include "jobs/share.h"
#include "loop/quota.h"
#include "loop/events.h"
#include "loop/schedule.h"
#include "loop/views.h"
#include "proto/params.h"

int methods_priority_refused(struct request *rq, int priority)
{
	uid_t uid = server_conn_uid(rq->c);
	if (priority <= SHARE_PRIORITY_USER_MAX || uid == 0 ||
	    uid == rq->svc->uid)
		return 0;
	rq->data = views_limit_data("priority", SHARE_PRIORITY_USER_MAX);
	return methods_fail(
	    rq, RPC_PERMISSION,
	    "priority %d is above %d: only root may put a job before "
	    "everyone's; a user's priority (-100 to %d) orders only "
	    "that user's own jobs",
	    priority, SHARE_PRIORITY_USER_MAX, SHARE_PRIORITY_USER_MAX);
}

int methods_batch_refused(struct request *rq, const char *batch)
{
	uid_t owner;
	if (!batch[0] || !queue_batch_foreign(rq->svc->queue, batch,
					      server_conn_uid(rq->c), &owner))
		return 0;
	rq->data = cJSON_CreateObject();
	cJSON_AddNumberToObject(rq->data, "owner", owner);
	return methods_fail(
	    rq, RPC_PERMISSION,
	    "batch %s holds jobs of uid %u: a batch names one user's "
	    "jobs only; choose another batch id",
	    batch, (unsigned)owner);
}

int methods_disk_refused(struct request *rq, size_t adding)
{
	uid_t uid = server_conn_uid(rq->c);
	long long bytes, files, max_bytes = quota_disk_bytes_per_uid();
	int max_files = quota_disk_files_per_uid();
	share_disk_use(rq->svc->queue, uid, &bytes, &files);
	/* a new job: its folder and about 8 files, what was sent */
	int over_bytes = bytes + (long long)adding > max_bytes;
	int over_files = files + JOBFILES_NEW > max_files;
	if (!over_bytes && !over_files)
		return 0;
	rq->data = views_limit_data(over_bytes ? "LIMIT_DISK_BYTES_PER_UID"
					       : "LIMIT_DISK_FILES_PER_UID",
				    over_bytes ? (double)max_bytes : max_files);
	cJSON_AddNumberToObject(rq->data, "bytes", (double)bytes);
	cJSON_AddNumberToObject(rq->data, "files", (double)files);
	cJSON_AddNumberToObject(rq->data, "adding", (double)adding);
	return methods_fail(
	    rq, RPC_LIMIT,
	    "uid %u's jobs hold %lld bytes in %lld files of the state "
	    "folder; with this job's %zu bytes that passes its quota of "
	    "%lld bytes and %d files (%s); remove ended jobs (vkinrctl "
	    "rm --state done)",
	    (unsigned)uid, bytes, files, adding, max_bytes, max_files,
	    over_bytes ? "LIMIT_DISK_BYTES_PER_UID"
		       : "LIMIT_DISK_FILES_PER_UID");
}

int methods_job_renice(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = { "job", "priority", NULL };
	struct job *job;
	int64_t priority = 0;
	const struct param *row = &param_table[PARAM_PRIORITY];
	int rc = methods_check_keys(rq, params, keys);
	if (rc || (rc = methods_get_job(rq, params, &job)) ||
	    (rc = methods_may_touch(rq, job)))
		return rc;
	if (!cJSON_GetObjectItemCaseSensitive(params, "priority"))
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "job.renice needs \"priority\" (%.0f to %.0f)", row->min,
		    row->max);
	if ((rc = methods_get_int(rq, params, "priority", row->min, row->max,
				  &priority)) ||
	    (rc = methods_priority_refused(rq, (int)priority)))
		return rc;
	if (job_state_is_final(job->state))
		return methods_fail(
		    rq, RPC_JOB_STATE,
		    "job %s is %s: it will not run again, so its "
		    "priority no longer matters",
		    job->id, job_state_name(job->state));
	int was = job->p.priority;
	if (was != (int)priority) {
		job->p.priority = (int)priority;
		queue_save_request(rq->svc->queue, job);
		events_note(rq->svc->queue, job, LOGL_NOTICE,
			    "priority %d -> %d by uid %u", was, (int)priority,
			    (unsigned)server_conn_uid(rq->c));
	}
	*result = views_job_state(job);
	cJSON_AddNumberToObject(*result, "priority", job->p.priority);
	cJSON_AddNumberToObject(*result, "was", was);
	/* a raised job may be due now; nothing running is preempted */
	schedule_jobs(rq->svc);
	return 0;
}
