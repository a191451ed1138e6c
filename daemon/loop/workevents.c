/*
 * workevents.c - the workers' events on the loop thread: each turned into
 * a change of the queue (through the state machine, jobs/jobstate.h, for
 * a job's state) and the news its followers are owed (subs.c).
 *
 * A job whose history or checkpoint could not be written is paused with
 * the reason (the worker checkpoints at its next epoch boundary); every
 * RETRY_MS the loop writes back what the disk lacks and, once that
 * works, queues the job again. Its history stays whole meanwhile: the
 * epochs are kept in memory, and the run resumes from its checkpoint.
 * Out of file descriptors (EMFILE, ENFILE) is a shortage that passes, as
 * a full disk is: waited out the same way.
 */
#include "loop/workevents.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "jobs/jobstate.h"
#include "jobs/share.h"
#include "log.h"
#include "loop/devwait.h"
#include "loop/events.h"
#include "loop/notify.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "proto/errors.h"
#include "proto/protocol.h"

#define RETRY_MS 3000

static int shortage(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EMFILE || e == ENFILE;
}

static void pause_for_write(struct service *svc, struct worker_slot *slot,
			    struct job *job, const char *file)
{
	if (job->write_paused)
		return;
	char path[4200];
	queue_job_shown(svc->queue, job, file, path, sizeof(path));
	int space = errno == ENOSPC || errno == EDQUOT;
	int fds = errno == EMFILE || errno == ENFILE;
	snprintf(job->error, sizeof(job->error),
		 "cannot write %.300s: %s; "
		 "paused%s",
		 path, strerror(errno),
		 space ? " until there is space again"
		 : fds ? " until file descriptors are free again"
		       : "");
	job->write_paused = 1;
	log_error("job %s: %s", job->id, job->error);
	worker_flag(slot->w, job->id, WORK_PAUSE);
}

/* Whether uid's jobs hold more of the state folder than its quota
 * (LIMIT_DISK_*_PER_UID, as job.submit checks): what its running jobs
 * wrote since (checkpoints, histories, exports) counts too; why in why. */
static int over_quota(struct service *svc, uid_t uid, char *why, size_t len)
{
	long long bytes, files, max_bytes = quota_disk_bytes_per_uid();
	int max_files = quota_disk_files_per_uid();
	share_disk_use(svc->queue, uid, &bytes, &files);
	if (bytes <= max_bytes && files <= max_files)
		return 0;
	snprintf(why, len,
		 "uid %u's jobs hold %lld bytes in %lld files of the state "
		 "folder, past its quota of %lld bytes and %d files (%s); "
		 "paused until they hold less (vkinrctl rm --state done)",
		 (unsigned)uid, bytes, files, max_bytes, max_files,
		 bytes > max_bytes ? "LIMIT_DISK_BYTES_PER_UID"
				   : "LIMIT_DISK_FILES_PER_UID");
	return 1;
}

/* A running job grew its uid's files past the quota: it is paused with
 * the reason, and queued again by the retry once they are back under. */
static void pause_for_quota(struct service *svc, struct worker_slot *slot,
			    struct job *job)
{
	char why[sizeof(job->error)];
	if (job->write_paused || !over_quota(svc, job->uid, why, sizeof(why)))
		return;
	snprintf(job->error, sizeof(job->error), "%s", why);
	job->write_paused = 1;
	log_warn("job %s: %s", job->id, job->error);
	worker_flag(slot->w, job->id, WORK_PAUSE);
}

static void on_retry(uv_timer_t *t)
{
	struct service *svc = t->data;
	int waiting = 0;
	char why[512];
	for (struct job *job = svc->queue->head; job; job = job->next) {
		if (!job->write_paused || job->state != JOB_PAUSED)
			continue;
		if (over_quota(svc, job->uid, why, sizeof(why))) {
			waiting++;
			continue;
		}
		if (queue_write_back(svc->queue, job)) {
			if (shortage(errno)) {
				waiting++;
				continue;
			}
			/* not a matter of space (the folder was removed?):
			 * waiting will not help */
			char why[sizeof(job->error)];
			snprintf(why, sizeof(why),
				 "%.400s; retrying failed: %s", job->error,
				 strerror(errno));
			job->write_paused = 0;
			events_note(svc->queue, job, LOGL_ERROR, "failed: %s",
				    why);
			jobstate_apply(svc->queue, job, JOBSTATE_WRITE_FAILED,
				       why);
			subs_job_state(svc, job);
			continue;
		}
		job->write_paused = 0;
		events_note(svc->queue, job, LOGL_INFO,
			    "its files can be written again; queued");
		jobstate_apply(svc->queue, job, JOBSTATE_WRITTEN_BACK, NULL);
		subs_job_state(svc, job);
	}
	if (!waiting)
		uv_timer_stop(t);
	schedule_jobs(svc);
}

/* The cause a worker's end is to the state machine. */
static const enum jobstate_cause end_cause[] = {
	[WORK_END_DONE] = JOBSTATE_ENDED_DONE,
	[WORK_END_FAILED] = JOBSTATE_ENDED_FAILED,
	[WORK_END_PAUSED] = JOBSTATE_ENDED_PAUSED,
	[WORK_END_CANCELLED] = JOBSTATE_ENDED_CANCELLED,
	[WORK_END_QUEUED] = JOBSTATE_ENDED_QUEUED,
};

static void handle_ended(struct service *svc, struct worker_slot *slot,
			 struct work_event *ev)
{
	slot->job[0] = '\0';
	struct job *job = queue_find(svc->queue, ev->job_id);
	if (!job)
		return;
	queue_shown_text(svc->queue, ev->message, sizeof(ev->message));
	job->worker = -1;
	enum jobstate_cause cause =
	    (unsigned)ev->end < sizeof(end_cause) / sizeof(end_cause[0])
		? end_cause[ev->end]
		: JOBSTATE_ENDED_FAILED;
	enum job_state end = jobstate_step(job->state, cause).to;
	if (end == JOB_DONE) {
		job->export_psnr = ev->psnr;
		job->has_export = 1;
		job->reached_epoch = ev->target_reached ? ev->epoch : 0;
		if (ev->target_reached)
			events_note(svc->queue, job, LOGL_NOTICE,
				    "reached its target psnr %g at epoch %d",
				    job->p.target_psnr, ev->epoch);
	}
	if (end == JOB_PAUSED && (ev->message[0] || job->write_paused)) {
		/* a write failed (here or in the worker): retried later */
		if (ev->message[0])
			snprintf(job->error, sizeof(job->error), "%.500s",
				 ev->message);
		job->write_paused = 1;
		events_note(svc->queue, job, LOGL_ERROR, "paused: %s",
			    job->error);
		jobstate_apply(svc->queue, job, cause, job->error);
		subs_job_state(svc, job);
		uv_timer_start(&svc->retry_timer, on_retry, RETRY_MS, RETRY_MS);
		return;
	}
	if (end == JOB_FAILED)
		events_note(svc->queue, job, LOGL_ERROR, "failed: %s",
			    ev->message);
	else
		events_note(svc->queue, job, LOGL_NOTICE, "%s at epoch %d",
			    job_state_name(end), job_epoch(job));
	jobstate_apply(svc->queue, job, cause, ev->message);
	subs_job_state(svc, job);
}

/* Where the daemon listens, for its ready line: under socket activation
 * the socket systemd passed (fd 3, which server.c listens on), named by
 * its own address, not the --socket path it was not bound to. */
static void ready_where(struct service *svc, char *where, size_t len)
{
	struct sockaddr_un a;
	socklen_t n = sizeof(a);
	memset(&a, 0, sizeof(a));
	if (!svc->server || !server_activated(svc->server))
		snprintf(where, len, "%s", svc->opt->socket_path);
	else if (getsockname(3, (struct sockaddr *)&a, &n) == 0 &&
		 a.sun_family == AF_UNIX &&
		 n > offsetof(struct sockaddr_un, sun_path) && a.sun_path[0])
		snprintf(where, len, "%.*s (from systemd)",
			 (int)(n - offsetof(struct sockaddr_un, sun_path)),
			 a.sun_path);
	else
		snprintf(where, len, "the socket from systemd");
}

/* Only once every worker has opened its device or given up on it does
 * daemon.status show real devices, and a job submitted right away starts
 * on one. */
void workevents_maybe_ready(struct service *svc)
{
	if (svc->notified_ready || svc->stopping)
		return;
	int up = 0;
	for (int i = 0; i < svc->nslots; i++) {
		if (!svc->slots[i].ready)
			return;
		up += svc->slots[i].ok;
	}
	svc->notified_ready = 1;
	char msg[128];
	snprintf(msg, sizeof(msg),
		 "READY=1\nSTATUS=%d of %d devices up, %d jobs", up,
		 svc->nslots, svc->queue->count);
	int rc = notify_send(msg);
	if (rc)
		log_warn("cannot notify systemd through $NOTIFY_SOCKET: %s",
			 error_message(rc));
	char devices[512] = "";
	for (int i = 0; i < svc->nslots; i++)
		if (svc->slots[i].ok &&
		    strlen(devices) + strlen(svc->slots[i].device) + 3 <
			sizeof(devices))
			snprintf(devices + strlen(devices),
				 sizeof(devices) - strlen(devices), "%s%s",
				 devices[0] ? "; " : "", svc->slots[i].device);
	char where[sizeof(((struct sockaddr_un *)0)->sun_path) + 32];
	ready_where(svc, where, sizeof(where));
	log_notice("vkinrd %s ready on %s: %d of %d devices up (%s); state "
		   "%s, %d jobs",
		   VKINR_VERSION, where, up, svc->nslots,
		   devices[0] ? devices : "none", svc->opt->state_dir,
		   svc->queue->count);
}

/* A running job's epoch: its history and its followers' news. */
static void on_progress(struct service *svc, struct worker_slot *slot,
			const char *job_id, const struct nn_metrics *m)
{
	struct job *job = queue_find(svc->queue, job_id);
	if (!job || job->state != JOB_RUNNING)
		return;
	if (queue_add_metrics(svc->queue, job, m))
		pause_for_write(svc, slot, job, JOBFILE_METRICS);
	subs_job_progress(svc, job);
}

/* A checkpointed job's state.json, written by workevents_saved once the
 * loop has drained its events; at once when the list cannot grow. */
static void save_after_drain(struct service *svc, struct job *job)
{
	if (job->save_due)
		return;
	if (svc->nsave_due == svc->capsave_due) {
		int cap = svc->capsave_due ? 2 * svc->capsave_due : 64;
		char(*ids)[JOB_ID_MAX] =
		    realloc(svc->save_due, (size_t)cap * sizeof(*ids));
		if (!ids) {
			queue_save(svc->queue, job);
			return;
		}
		svc->save_due = ids;
		svc->capsave_due = cap;
	}
	snprintf(svc->save_due[svc->nsave_due++], JOB_ID_MAX, "%s", job->id);
	job->save_due = 1;
}

void workevents_saved(struct service *svc)
{
	for (int i = 0; i < svc->nsave_due; i++) {
		struct job *job = queue_find(svc->queue, svc->save_due[i]);
		if (job && job->save_due)
			queue_save(svc->queue, job);
	}
	svc->nsave_due = 0;
}

void workevents_handle(struct service *svc, int index, struct work_event *ev)
{
	struct worker_slot *slot = &svc->slots[index];
	struct job *job;
	switch (ev->kind) {
	case WORK_READY:
		slot->ready = 1;
		slot->ok = ev->ok;
		if (ev->ok) {
			snprintf(slot->device, sizeof(slot->device), "%s",
				 ev->info.name);
			snprintf(slot->type, sizeof(slot->type), "%s",
				 ev->info.type_name ? ev->info.type_name : "");
			slot->is_cpu = ev->info.is_cpu;
			log_info("worker %d: %s (%s)", index, slot->device,
				 slot->type);
		} else {
			snprintf(slot->error, sizeof(slot->error), "%s",
				 ev->message);
			log_error(
			    "worker %d: no device: %s; its jobs stay queued",
			    index, ev->message);
		}
		workevents_maybe_ready(svc);
		devwait_wake(svc); /* renders and exports waiting for it */
		break;
	case WORK_STARTED:
		job = queue_find(svc->queue, ev->job_id);
		if (job) {
			queue_truncate(svc->queue, job, ev->epoch);
			subs_job_truncated(svc, job);
			if (ev->m.lr > 0 && ev->m.lr != job->p.cfg.lr) {
				job->p.cfg.lr =
				    ev->m.lr; /* lowered after a divergence */
				queue_save_request(svc->queue, job);
			}
			snprintf(job->precision, sizeof(job->precision), "%.7s",
				 ev->message);
		}
		break;
	case WORK_PROGRESS:
		on_progress(svc, slot, ev->job_id, &ev->m);
		break;
	case WORK_PROGRESS_MANY:
		for (int i = 0; i < ev->nmany; i++)
			on_progress(svc, slot, ev->many[i].job_id,
				    &ev->many[i].m);
		break;
	case WORK_CHECKPOINT:
		log_debug("job %s: checkpoint at epoch %d", ev->job_id,
			  ev->epoch);
		job = queue_find(svc->queue, ev->job_id);
		if (job && job->state == JOB_RUNNING) {
			save_after_drain(svc, job); /* its seconds so far */
			pause_for_quota(svc, slot, job);
		}
		break;
	case WORK_ENDED:
		handle_ended(svc, slot, ev);
		break;
	case WORK_REPLY:
		replies_answer(svc, ev->req);
		ev->req = NULL;
		break;
	case WORK_EXITED:
		slot->exited = 1;
		break;
	}
}
