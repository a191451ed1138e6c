/*
 * after.c - jobs that wait for others: job.submit's "after" kept in the
 * job's after.json, and moved on before each round of scheduling.
 *
 * A waiting job is an ordinary queued job with `held` set, which
 * queue_next passes by; nothing else in the queue knows of it. after.json
 * holds {"after": [IDS], "done": [IDS]}: the ids as submitted and those
 * seen done so far, so that removing a done job (which the list then no
 * longer has) releases its followers instead of failing them, before and
 * after a restart. A job that one of its jobs lets down (failed,
 * cancelled, removed undone) fails with a sentence naming it; resuming it
 * later waits again. Loop thread only.
 */
#include "loop/after.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs/jobfiles.h"
#include "jobs/jobstate.h"
#include "log.h"
#include "loop/events.h"
#include "loop/subs.h"

static unsigned all_bits(const struct job *job)
{
	return job->p.nafter >= 32 ? ~0u : (1u << job->p.nafter) - 1;
}

static int save(struct queue *q, const struct job *job)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *after = cJSON_AddArrayToObject(o, "after");
	cJSON *done = cJSON_AddArrayToObject(o, "done");
	for (int i = 0; i < job->p.nafter; i++) {
		cJSON_AddItemToArray(after,
				     cJSON_CreateString(job->p.after[i]));
		if (job->after_done & (1u << i))
			cJSON_AddItemToArray(
			    done, cJSON_CreateString(job->p.after[i]));
	}
	int rc = jobfiles_write_json(q->jobs_dir, job->id, JOBFILE_AFTER, o);
	if (rc)
		log_error("job %s: cannot write %s: %s", job->id, JOBFILE_AFTER,
			  strerror(errno));
	return rc;
}

static void id_list(const struct job *job, unsigned skip, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < job->p.nafter; i++)
		if (!(skip & (1u << i)))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
				 buf[0] ? ", " : "", job->p.after[i]);
}

int after_start(struct service *svc, struct job *job)
{
	char ids[JOB_AFTER_MAX * (JOB_ID_MAX + 2)];
	int rc = save(svc->queue, job);
	if (rc)
		return rc;
	job->held = 1; /* after_settle releases it once they are done */
	id_list(job, 0, ids, sizeof(ids));
	events_note(svc->queue, job, LOGL_INFO, "waits for job%s %s (--after)",
		    job->p.nafter > 1 ? "s" : "", ids);
	return 0;
}

/* after.json into job; -1 with a sentence in why when it is damaged. */
static int load_one(struct queue *q, struct job *job, char *why, size_t len)
{
	cJSON *o = jobfiles_read_json(q->jobs_dir, job->id, JOBFILE_AFTER);
	if (!o)
		return errno == ENOENT ? 0
				       : (snprintf(why, len, "not JSON"), -1);
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(o, "after");
	const cJSON *done = cJSON_GetObjectItemCaseSensitive(o, "done");
	const cJSON *v;
	int bad = !cJSON_IsArray(after) || !cJSON_IsArray(done) ||
		  cJSON_GetArraySize(after) > JOB_AFTER_MAX;
	job->p.nafter = 0;
	for (v = bad ? NULL : after->child; v && !bad; v = v->next) {
		bad = !cJSON_IsString(v) ||
		      !jobfiles_number(v->valuestring, strlen(v->valuestring));
		if (!bad)
			snprintf(job->p.after[job->p.nafter++], JOB_ID_MAX,
				 "%s", v->valuestring);
	}
	for (v = bad ? NULL : done->child; v; v = v->next)
		for (int i = 0; i < job->p.nafter; i++)
			if (cJSON_IsString(v) &&
			    !strcmp(v->valuestring, job->p.after[i]))
				job->after_done |= 1u << i;
	cJSON_Delete(o);
	if (bad) {
		job->p.nafter = 0;
		snprintf(why, len, "not a list of job ids");
		return -1;
	}
	job->held = job->after_done != all_bits(job);
	return 0;
}

void after_load(struct queue *q)
{
	for (struct job *job = q->head; job; job = job->next) {
		char why[64], err[256];
		if (!load_one(q, job, why, sizeof(why)) ||
		    job_state_is_final(job->state))
			continue;
		snprintf(err, sizeof(err),
			 "its %s is damaged (%s): which jobs it waits for "
			 "(--after) is not known",
			 JOBFILE_AFTER, why);
		log_error("job %s: %s; the job is marked failed", job->id, err);
		jobstate_apply(q, job, JOBSTATE_LET_DOWN, err);
	}
}

/* Why a job cannot wait any longer for dep (NULL: it can). */
static const char *let_down(const struct job *dep)
{
	if (!dep)
		return "is gone: it was removed before it was done";
	if (dep->state == JOB_FAILED)
		return "failed";
	if (dep->state == JOB_CANCELLED)
		return "was cancelled";
	return NULL;
}

static void settle_one(struct service *svc, struct job *job)
{
	struct queue *q = svc->queue;
	unsigned before = job->after_done;
	char why[256] = "";
	for (int i = 0; i < job->p.nafter; i++) {
		if (job->after_done & (1u << i))
			continue;
		const struct job *dep = queue_find(q, job->p.after[i]);
		const char *how = let_down(dep);
		if (dep && dep->state == JOB_DONE)
			job->after_done |= 1u << i;
		else if (how && job->state == JOB_QUEUED && !why[0])
			snprintf(why, sizeof(why),
				 "job %s, which it waits for (--after), %s",
				 job->p.after[i], how);
	}
	if (job->after_done != before)
		save(q, job);
	int was_held = job->held;
	job->held = job->after_done != all_bits(job);
	if (why[0]) {
		job->held = 0;
		events_note(q, job, LOGL_ERROR, "failed: %s", why);
		jobstate_apply(q, job, JOBSTATE_LET_DOWN, why);
		subs_job_state(svc, job);
	} else if (was_held && !job->held && job->state == JOB_QUEUED) {
		events_note(q, job, LOGL_INFO,
			    "the jobs it waits for are done; it may start");
	}
}

void after_settle(struct service *svc)
{
	for (struct job *job = svc->queue->head; job; job = job->next)
		if (job->p.nafter &&
		    (job->state == JOB_QUEUED || job->state == JOB_PAUSED))
			settle_one(svc, job);
}

void after_removing(struct service *svc, const struct job *dep)
{
	if (dep->state != JOB_DONE)
		return;
	for (struct job *job = svc->queue->head; job; job = job->next) {
		unsigned before = job->after_done;
		for (int i = 0; i < job->p.nafter; i++)
			if (!strcmp(job->p.after[i], dep->id))
				job->after_done |= 1u << i;
		if (job->after_done != before)
			save(svc->queue, job);
	}
}
