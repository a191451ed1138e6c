/*
 * schedule.c - jobs and requests to workers.
 *
 * A worker trains as many jobs at once as it has room for (worker_room:
 * one without packs, else up to its pack's size) and admits
 * (worker_admit: within its pack's memory budget, and fair to the other
 * uids in the pack and to the job's own: the newest jobs of another uid
 * may go back to the queue for it, each told why in its log);
 * schedule_jobs gives each worker the next jobs queue_next picks (fair
 * between users, then priority and submission order: see jobs/share.h;
 * a job still waiting for others is held: after.c), marks them running
 * and tells their followers. The next job that no worker admits waits,
 * said once in its log; the jobs of the uids behind it in the fair share
 * may pass it for a while (start_next), then its workers drain until it
 * fits (or runs alone). Renders and exports go to an idle worker when
 * there is one, else they take turns with a running job between its
 * epochs (worker.h). The engine's config is the job's own (made and
 * checked at submission); what waits for the device's width is chosen
 * here when the job first runs.
 * Loop thread only.
 */
#include "loop/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobstate.h"
#include "jobs/share.h"
#include "loop/after.h"
#include "loop/commit.h"
#include "loop/events.h"
#include "log.h"
#include "loop/subs.h"
#include "loop/views.h"
#include "worker/worker.h"

int schedule_default_width(const struct service *svc)
{
	int kind = -1;
	for (int i = 0; i < svc->nslots; i++) {
		const struct worker_slot *s = &svc->slots[i];
		if (!s->ok || s->exited)
			continue;
		if (kind >= 0 && kind != s->is_cpu)
			return 0;
		kind = s->is_cpu;
	}
	if (kind < 0)
		return 0;
	return nn_default_width(kind);
}

/* The engine's config for job on a device (is_cpu: lavapipe and the like,
 * whose default width differs). The width and what waits for it, when
 * left to the daemon, are chosen here and kept in the job's parameters. */
static void job_config(struct job *job, int is_cpu, struct nn_config *cfg)
{
	/* the width is known now, and what waits for it */
	job_resolve_auto(&job->p, is_cpu);
	*cfg = job->p.cfg;
}

/* The job as worker slot's device runs it (its config for that kind of
 * device), with what the pack's admission needs; NULL without memory. */
static struct work_job *work_job_for(struct service *svc,
				     struct worker_slot *slot, struct job *job)
{
	struct work_job *wj = calloc(1, sizeof(*wj));
	if (!wj)
		return NULL;
	snprintf(wj->id, sizeof(wj->id), "%s", job->id);
	queue_job_path(svc->queue, job, NULL, wj->dir, sizeof(wj->dir));
	struct job_params given = job->p;
	job_config(job, slot->is_cpu, &wj->cfg);
	/* what was left to the daemon is chosen now: kept, so that a
	 * restart neither shows nor trains anything else */
	if (given.cfg.nf != job->p.cfg.nf || given.cfg.lr != job->p.cfg.lr ||
	    given.cfg.recipe.warmup != job->p.cfg.recipe.warmup)
		queue_save_request(svc->queue, job);
	wj->has_init = job->has_init;
	wj->target_psnr = job->p.target_psnr;
	worker_estimate(wj, job->uid, job->img_w, job->img_h);
	return wj;
}

/* Hands wj (job's) to worker i. */
static void start_on(struct service *svc, struct job *job, struct work_job *wj,
		     int i)
{
	struct worker_slot *slot = &svc->slots[i];
	job->worker = i;
	snprintf(job->device, sizeof(job->device), "%s", slot->device);
	snprintf(slot->job, sizeof(slot->job), "%s", job->id);
	jobstate_apply(svc->queue, job, JOBSTATE_START, NULL);
	char settings[160];
	views_settings_text(&job->p, settings, sizeof(settings));
	events_note(svc->queue, job, LOGL_NOTICE,
		    "starting on %s (worker %d): %s", slot->device, i,
		    settings);
	worker_start_job(slot->w, wj);
	subs_job_state(svc, job);
}

/* Says once (not at every round) why job waits for a worker. */
static void say_waiting(struct service *svc, struct job *job, const char *why)
{
	if (!strcmp(svc->waiting_job, job->id) &&
	    !strncmp(svc->waiting_why, why, sizeof(svc->waiting_why) - 1))
		return;
	snprintf(svc->waiting_job, sizeof(svc->waiting_job), "%s", job->id);
	snprintf(svc->waiting_why, sizeof(svc->waiting_why), "%s", why);
	events_note(svc->queue, job, LOGL_INFO, "waits: %s", why);
}

/* Says in their logs why the jobs that worker_admit sent back to the
 * queue leave their pack (they go at its next boundary). */
static void note_evicted(struct service *svc, struct work_evicted *ev)
{
	for (int i = 0; i < ev->n; i++) {
		struct job *job = queue_find(svc->queue, ev->ids[i]);
		if (job)
			events_note(svc->queue, job, LOGL_INFO, "%s", ev->why);
	}
	free(ev->ids);
}

/* How long a job that no worker admits lets others pass it (below):
 * VKINRD_PASS_SECONDS, for the tests, else SCHEDULE_PASS_SECONDS. */
static double pass_seconds(void)
{
	const char *v = getenv("VKINRD_PASS_SECONDS");
	double s = v ? strtod(v, NULL) : 0;
	return s > 0 ? s : SCHEDULE_PASS_SECONDS;
}

/* The jobs worker i may take now: its own room (worker_room), less the
 * jobs it has let go whose end the loop has not read yet (the worker
 * drops a job before it posts the end): they count as running here
 * until then, and a worker never has more running than its pack. */
static int room_of(struct service *svc, int i)
{
	struct worker *w = svc->slots[i].w;
	int room = worker_room(w), held = worker_jobs(w), running = 0;
	if (room < 1)
		return 0;
	for (const struct job *job = svc->queue->head; job; job = job->next)
		running += job->state == JOB_RUNNING && job->worker == i;
	return running > held ? room - (running - held) : room;
}

/*
 * Gives job to the worker with room that has the fewest jobs and admits
 * it (worker_admit: its pack's memory, fairness between the uids in it),
 * so that jobs spread over the workers before any pack grows: 0 when one
 * took it, 1 when none admits it (why in why), 2 when no worker has room.
 */
static int place(struct service *svc, struct job *job, char *why, size_t len)
{
	int tried[DAEMON_MAX_DEVICES] = { 0 }, roomy = 0;
	for (;;) {
		int best = -1, fewest = 0;
		for (int i = 0; i < svc->nslots; i++) {
			struct worker_slot *slot = &svc->slots[i];
			if (tried[i] || !slot->ok || slot->exited ||
			    room_of(svc, i) < 1)
				continue;
			int jobs = worker_jobs(slot->w);
			if (best < 0 || jobs < fewest) {
				best = i;
				fewest = jobs;
			}
		}
		if (best < 0)
			return roomy ? 1 : 2;
		tried[best] = 1;
		roomy++;
		struct work_job *wj = work_job_for(svc, &svc->slots[best], job);
		if (!wj)
			return 2;
		struct work_evicted ev;
		int rc = worker_admit(svc->slots[best].w, wj, why, len, &ev);
		note_evicted(svc, &ev);
		if (rc) {
			free(wj);
			continue;
		}
		start_on(svc, job, wj, best);
		return 0;
	}
}

/*
 * Starts the next queued job some worker admits; 1 when none does now.
 * The next job in the fair order (queue_next) that no worker admits
 * waits, said once in its log, and holds back the jobs of its own uid
 * (their order is that user's) and of every uid with more jobs running
 * than its uid has: those are ahead of it already, and what they add to
 * its worker (their work in its pack, their memory) is what it waits to
 * see go. The jobs of the other uids may pass it, each uid's next in the
 * fair order, while it has waited less than pass_seconds(); after that
 * nothing passes it, so that its workers drain: a job that cannot be
 * placed now does not hold another uid's that can, and its own wait is
 * bounded all the same.
 */
static int start_next(struct service *svc)
{
	uid_t skip[SCHEDULE_PASS_UIDS];
	int nskip = 0, running = 0;
	char why[512] = "";
	struct job *first = NULL, *job;
	double now = uv_now(svc->loop) / 1000.0;
	while ((job = queue_next_except(svc->queue, skip, nskip))) {
		if (first && share_running(svc->queue, job->uid) > running)
			return 1;
		int rc = place(svc, job, why, sizeof(why));
		if (rc == 0)
			return 0;
		if (rc == 2)
			return 1; /* no worker has room */
		if (!job->wait_since)
			job->wait_since = now;
		if (!first) {
			first = job;
			running = share_running(svc->queue, job->uid);
			say_waiting(svc, job, why);
		}
		if (now - first->wait_since >= pass_seconds() ||
		    nskip == SCHEDULE_PASS_UIDS)
			return 1;
		skip[nskip++] = job->uid;
	}
	return 1;
}

void schedule_jobs(struct service *svc)
{
	/* a pause or cancel answered in this turn goes out first: starting
	 * jobs writes each one's files */
	commit_flush(svc);
	if (svc->stopping)
		return;
	after_settle(svc); /* who waits for whom (--after), first */
	while (!start_next(svc))
		;
}

struct worker_slot *schedule_pick_worker(struct service *svc)
{
	struct worker_slot *any = NULL;
	for (int i = 0; i < svc->nslots; i++) {
		struct worker_slot *s = &svc->slots[i];
		if (!s->ok || s->exited)
			continue;
		if (!worker_jobs(s->w))
			return s;
		if (!any)
			any = s;
	}
	return any;
}
