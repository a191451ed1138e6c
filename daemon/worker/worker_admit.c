/*
 * worker_admit.c - which jobs may join a worker's pack, and how fast.
 *
 * A pack is shared between users, and its epoch takes as long as all its
 * jobs' work together: one user's flood joining another's job would
 * stretch that job's epochs without bound, and fill the device's memory.
 * So a job joins a pack only when (worker_admit, asked by the loop
 * before it hands the job over):
 *
 * - the memory the pack's jobs hold and will hold (each job's estimate,
 *   worker_estimate, until it is loaded; then what its fit holds), with
 *   what the device holds beside them (the pack's own buffers, the
 *   staging), leaves room for its estimate within the pack's budget
 *   (WORKER_PACK_MEMORY of the device's); a job larger than that, or one
 *   that ran out of memory beside others, runs alone: it waits until the
 *   worker is empty, and nothing joins it;
 * - for every uid in the pack, the job's own included, the pack's work
 *   an epoch with it is at most WORKER_PACK_FAIR times that uid's own:
 *   another user's jobs make a job's epoch at most that many times
 *   longer than its own user's jobs make it. For the job's own uid (a
 *   job that joins, or rejoins after a resume, a pack that another
 *   user's jobs fill), the newest jobs of the other uid with the most
 *   work go back to the queue (flagged WORK_REQUEUE: each leaves at the
 *   pack's next boundary, with a checkpoint, and its log says why), each
 *   uid keeping its oldest, until the job has its share; when even that
 *   would not give it, the job waits (the pack drains). Jobs leaving the
 *   pack (paused, cancelled, sent back) count for no one's share and
 *   leave their memory to joiners (the pack frees their fits at its next
 *   boundary, before it loads one), but hold their places until they
 *   have gone: the worker never holds more jobs than --pack.
 *
 * Jobs coming and going take time too (loads: buffers, programs;
 * leaving: checkpoints, exports): a running pack that holds another
 * user's jobs loads joiners at its epoch boundaries only while that time,
 * beyond what a boundary where no job comes or goes takes, has been at
 * most WORKER_PACK_JOIN_SHARE of its epochs' time (struct admit_pace),
 * one at a boundary at most once that share is used; a joiner among its
 * own user's jobs alone (a dataset filling its pack) is not paced; none
 * joins once the daemon stops. A job paused or
 * cancelled before it was loaded leaves at once, unloaded. Worker thread,
 * but worker_admit and worker_estimate (the loop's); under the worker's
 * lock where said.
 */
#include "worker/worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nn/model.h"
#include "worker/worker_internal.h"

/* A fit's own cost an epoch beside its pixels' (its optimizer and its
 * dispatches), as so many pixels more: on lavapipe at width 16 a 16x16
 * fit costs 12 ms an epoch in a pack, a 32x32 one 19 ms. */
#define ADMIT_FIT_PIXELS 1024.0
/* What a pack holds beside its fits (its programs' buffers), until it is
 * measured: 6 MiB on lavapipe. */
#define ADMIT_PACK_BYTES (8u << 20)
/* uids counted apart in one pack; more share the last entry */
#define ADMIT_UIDS 64

void worker_estimate(struct work_job *job, uid_t uid, int width, int height)
{
	const struct nn_config *cfg = &job->cfg;
	struct nn_layout l;
	nn_layout_init(&l, cfg);
	uint64_t nf = (uint64_t)cfg->nf, blocks = (uint64_t)cfg->nblocks;
	uint64_t px = (uint64_t)width * (uint64_t)height;
	uint64_t total = (uint64_t)l.total;
	/* as the fit plans its tiles (nn/fit.c), the larger of its
	 * precisions and every optimizer's state, without the margin the
	 * planner keeps for its arena's blocks */
	uint64_t fixed = 6 * total * 4 + 2 * px * 12 + 4 * nf * nf * blocks * 5;
	uint64_t per_pixel = 4 * nf * (blocks + 3) + 16 + 48 + 4 * nf;
	uint64_t need = fixed + px * per_pixel;
	/* the arena's blocks, doubling from 1 MiB up to 256, a quarter
	 * more for what their alignment leaves, and 2 MiB of other memory
	 * types (a 16x16 fit holds 3 MiB, 64x64 7 MiB, 160x160 31 MiB on
	 * lavapipe at width 16: this says 3, 9 and 33) */
	uint64_t held = 0, block = 1u << 20;
	while (held < need + need / 4) {
		held += block;
		block = block < (256u << 20) ? 2 * block : block;
	}
	job->bytes = held + (2u << 20);
	job->uid = uid;
	job->work = nn_epoch_gflop(cfg->nblocks, cfg->nf, 1, 1) *
		    ((double)px + ADMIT_FIT_PIXELS);
}

/* Whether id ran out of memory beside others here (under lock). */
static int must_run_alone(const struct worker *w, const char *id)
{
	for (int i = 0; i < WORKER_ALONE_IDS; i++)
		if (!strcmp(w->alone[i], id))
			return 1;
	return 0;
}

void worker_admit_alone(struct worker *w, const char *id)
{
	pthread_mutex_lock(&w->lock);
	if (!must_run_alone(w, id)) {
		snprintf(w->alone[w->nalone % WORKER_ALONE_IDS],
			 sizeof(w->alone[0]), "%s", id);
		w->nalone++;
	}
	pthread_mutex_unlock(&w->lock);
}

/* The bytes a held job counts for: what it holds once loaded, else its
 * estimate, at most what the fit plans its tiles for. */
static uint64_t held_bytes(const struct worker *w, uint64_t bytes)
{
	return w->fit_budget && bytes > w->fit_budget ? w->fit_budget : bytes;
}

/* Each uid's work in the worker's pack and its jobs there, and all the
 * work, without the jobs leaving it (paused, cancelled, sent back: they
 * go at the pack's next boundary) (under lock). */
struct admit_uids {
	uid_t uid[ADMIT_UIDS];
	double work[ADMIT_UIDS];
	int jobs[ADMIT_UIDS];
	int n;
	double total;
};

/* uid's entry in u, added when new (more than ADMIT_UIDS share the
 * last). */
static int uid_slot(struct admit_uids *u, uid_t uid)
{
	int i = 0;
	while (i < u->n && u->uid[i] != uid)
		i++;
	if (i == u->n && u->n < ADMIT_UIDS) {
		u->uid[i] = uid;
		u->work[i] = 0;
		u->jobs[i] = 0;
		u->n++;
	} else if (i == u->n) {
		i = u->n - 1;
	}
	return i;
}

static void count_uids(const struct worker *w, struct admit_uids *u)
{
	u->n = 0;
	u->total = 0;
	for (const struct held *h = w->held; h; h = h->next) {
		if (h->flags & WORK_LEAVE)
			continue;
		int i = uid_slot(u, h->uid);
		u->work[i] += h->work;
		u->jobs[i]++;
		u->total += h->work;
	}
}

/* The newest of uid's jobs in the pack that is not leaving it (under
 * lock). */
static struct held *newest_of(struct worker *w, uid_t uid)
{
	struct held *last = NULL;
	for (struct held *h = w->held; h; h = h->next)
		if (h->uid == uid && !(h->flags & WORK_LEAVE))
			last = h;
	return last;
}

/* The jobs flagged to leave, n of them, kept again (under lock). */
static void keep_all(struct held **plan, int n)
{
	for (int i = 0; i < n; i++)
		plan[i]->flags &= ~WORK_REQUEUE;
}

/*
 * The joiner (its uid's entry a in u, its work x) has its share of the
 * pack when the pack's work with it is at most WORKER_PACK_FAIR times
 * its uid's: while it has not, the newest job of the other uid with the
 * most work goes back to the queue (flagged WORK_REQUEUE, put in plan,
 * u counted without it), each uid keeping its oldest. Returns how many
 * go, or -1 (none flagged) when that cannot give the joiner its share
 * (under lock; plan has room for every held job).
 */
static int plan_share(struct worker *w, struct admit_uids *u, int a, double x,
		      struct held **plan)
{
	int n = 0;
	while (u->total + x > WORKER_PACK_FAIR * (u->work[a] + x)) {
		int b = -1;
		for (int i = 0; i < u->n; i++)
			if (i != a && u->jobs[i] > 1 &&
			    (b < 0 || u->work[i] > u->work[b]))
				b = i;
		struct held *h = b >= 0 && plan ? newest_of(w, u->uid[b]) : 0;
		if (!h) {
			keep_all(plan, n);
			return -1;
		}
		h->flags |= WORK_REQUEUE;
		plan[n++] = h;
		u->work[b] -= h->work;
		u->jobs[b]--;
		u->total -= h->work;
	}
	return n;
}

/* Under lock: 0, or why the job waits: it, or a job in the pack, runs
 * alone (too large to share the device, or out of memory beside others
 * once). */
static int admits_beside(struct worker *w, const struct work_job *job,
			 char *why, size_t len)
{
	for (const struct held *h = w->held; h; h = h->next) {
		if (h->flags & WORK_LEAVE)
			continue; /* gone before the job loads */
		if (must_run_alone(w, h->id) ||
		    held_bytes(w, h->bytes) > w->budget) {
			snprintf(why, len,
				 "job %s runs alone on worker %d (too large "
				 "to share its device)",
				 h->id, w->index);
			return 1;
		}
	}
	uint64_t need = held_bytes(w, job->bytes);
	if (must_run_alone(w, job->id) || need > w->budget) {
		snprintf(why, len,
			 "it needs about %llu MiB of device memory, more than "
			 "a pack may share (%llu MiB)%s; it runs alone once "
			 "worker %d is free",
			 (unsigned long long)(need >> 20),
			 (unsigned long long)(w->budget >> 20),
			 must_run_alone(w, job->id)
			     ? ", and it ran out of memory beside others"
			     : "",
			 w->index);
		return 1;
	}
	return 0;
}

/* Under lock: 0, or why the job waits for the pack's memory. The jobs
 * leaving the pack count for nothing: the pack frees their fits at its
 * next boundary, before it loads a joiner (worker_pack.c). */
static int admits_memory(struct worker *w, const struct work_job *job,
			 char *why, size_t len)
{
	/* what its fits hold, or what the device holds in all (the pack's
	 * own, the staging) with the jobs not loaded yet, the larger */
	uint64_t held = w->base_bytes, in_use = w->bytes_in_use, leaving = 0;
	for (const struct held *h = w->held; h; h = h->next) {
		if (h->flags & WORK_LEAVE) {
			leaving += h->job ? 0 : held_bytes(w, h->bytes);
			continue;
		}
		if (h->job)
			in_use += held_bytes(w, h->bytes);
		held += held_bytes(w, h->bytes);
	}
	in_use = in_use > leaving ? in_use - leaving : 0;
	held = in_use > held ? in_use : held;
	uint64_t need = held_bytes(w, job->bytes);
	if (held + need > w->budget) {
		snprintf(why, len,
			 "it needs about %llu MiB of device memory and the "
			 "pack on worker %d holds %llu of its %llu MiB",
			 (unsigned long long)(need >> 20), w->index,
			 (unsigned long long)(held >> 20),
			 (unsigned long long)(w->budget >> 20));
		return 1;
	}
	return 0;
}

/* Under lock, u counted: 0 when the job has a place (the jobs sent back
 * for it keep theirs until they have gone) and, once they have left,
 * each other uid keeps its share; else why it waits. */
static int admits_share(struct worker *w, const struct work_job *job,
			const struct admit_uids *u, int a, char *why,
			size_t len)
{
	/* the jobs leaving hold their places until they have gone */
	if (w->full || w->nheld >= w->pack) {
		snprintf(why, len, "the pack on worker %d is full", w->index);
		return 1;
	}
	for (int i = 0; i < u->n; i++)
		if (i != a && u->jobs[i] > 0 &&
		    u->total + job->work > WORKER_PACK_FAIR * u->work[i]) {
			snprintf(why, len,
				 "in the pack on worker %d it would make uid "
				 "%u's epochs more than %g times longer than "
				 "its own jobs make them",
				 w->index, (unsigned)u->uid[i],
				 WORKER_PACK_FAIR);
			return 1;
		}
	return 0;
}

/* Under lock: 0, or why the job waits; ev, when not NULL, gets the jobs
 * sent back to the queue for it. */
static int admits(struct worker *w, const struct work_job *job, char *why,
		  size_t len, struct work_evicted *ev)
{
	if (w->full) {
		snprintf(why, len, "the pack on worker %d is full", w->index);
		return 1;
	}
	if (!w->nheld)
		return 0; /* alone: the fit plans its tiles for the device */
	if (admits_beside(w, job, why, len))
		return 1;
	struct admit_uids u;
	count_uids(w, &u);
	double before = u.total + job->work;
	int a = uid_slot(&u, job->uid);
	double own = u.work[a] + job->work;
	struct held **plan =
	    ev ? calloc((size_t)w->nheld + 1, sizeof(*plan)) : NULL;
	int n = plan_share(w, &u, a, job->work, plan);
	if (n < 0) {
		snprintf(why, len,
			 "in the pack on worker %d its epochs would be %.1f "
			 "times longer than its own uid's jobs make them (at "
			 "most %g), and sending the other uids' newest jobs "
			 "back to the queue (each keeps its oldest) would not "
			 "make up for it; it waits for the pack to drain",
			 w->index, before / own, WORKER_PACK_FAIR);
		free(plan);
		return 1;
	}
	/* the memory and the places once the jobs sent back have gone */
	if (admits_memory(w, job, why, len) ||
	    admits_share(w, job, &u, a, why, len)) {
		keep_all(plan, n);
		free(plan);
		return 1;
	}
	if (n && ev) {
		ev->ids = calloc((size_t)n, sizeof(*ev->ids));
		for (int i = 0; ev->ids && i < n; i++)
			snprintf(ev->ids[ev->n++], sizeof(ev->ids[0]), "%s",
				 plan[i]->id);
		snprintf(ev->why, sizeof(ev->why),
			 "back to the queue from the pack on worker %d, so "
			 "that uid %u's job %s has its share there: the "
			 "pack's work was %.1f times that uid's (at most %g)",
			 w->index, (unsigned)job->uid, job->id, before / own,
			 WORKER_PACK_FAIR);
		pthread_cond_signal(&w->cond);
	}
	free(plan);
	return 0;
}

int worker_admit(struct worker *w, const struct work_job *job, char *why,
		 size_t len, struct work_evicted *ev)
{
	if (ev)
		*ev = (struct work_evicted){ 0 };
	pthread_mutex_lock(&w->lock);
	int rc = admits(w, job, why, len, ev);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* ------------------------------------------------- the worker's side */

void worker_admit_device_opened(struct worker *w)
{
	const struct gpu_device_info *info = gpu_info(w->gpu);
	const char *env = getenv("VKINRD_PACK_MEMORY_BYTES"); /* for tests */
	uint64_t budget =
	    env && strtoull(env, NULL, 10) > 0
		? strtoull(env, NULL, 10)
		: (uint64_t)(info->budget_bytes * WORKER_PACK_MEMORY);
	uint64_t base = gpu_bytes_in_use(w->gpu) + ADMIT_PACK_BYTES;
	pthread_mutex_lock(&w->lock);
	w->budget = budget;
	w->fit_budget = info->budget_bytes / 10 * 8;
	w->base_bytes = base;
	pthread_mutex_unlock(&w->lock);
}

/* What the device holds beside the fits (the pack's own, the staging),
 * the most seen: counted for every admission (under lock). */
static void measure_base(struct worker *w, uint64_t in_use)
{
	uint64_t fits = 0;
	for (const struct held *h = w->held; h; h = h->next)
		if (!h->job)
			fits += h->bytes;
	if (in_use > fits && in_use - fits > w->base_bytes)
		w->base_bytes = in_use - fits;
}

/* Ends, unloaded, each job handed over and not taken whose pause,
 * cancel or return to the queue came meanwhile (or every one, at the
 * daemon's stop: back to the queue). */
static void drop_flagged(struct worker *w)
{
	for (;;) {
		struct work_job *job = NULL;
		int flags = 0;
		pthread_mutex_lock(&w->lock);
		for (struct held *h = w->held; h && !job; h = h->next) {
			flags = (w->flags & WORK_STOP) | h->flags;
			if (h->job && (flags & WORK_LEAVE)) {
				job = h->job;
				h->job = NULL;
			}
		}
		pthread_mutex_unlock(&w->lock);
		if (!job)
			return;
		enum work_end end = flags & WORK_STOP     ? WORK_END_QUEUED
				    : flags & WORK_CANCEL ? WORK_END_CANCELLED
				    : flags & WORK_PAUSE  ? WORK_END_PAUSED
							  : WORK_END_QUEUED;
		worker_release_held(w, job->id);
		worker_post_ended(w, job->id, end, NULL);
		free(job);
	}
}

/* Whether every job the pack runs is the next joiner's user's: its load
 * then holds up only that user's own jobs (a dataset filling its pack),
 * and is not paced. */
static int joiner_among_own(struct worker *w)
{
	int found = 0, own = 1;
	uid_t next = 0;
	pthread_mutex_lock(&w->lock);
	for (struct held *h = w->held; h && !found; h = h->next)
		if (h->job) {
			next = h->uid;
			found = 1;
		}
	for (struct held *h = w->held; h && found; h = h->next)
		if (!h->job && h->uid != next)
			own = 0;
	pthread_mutex_unlock(&w->lock);
	return own;
}

int worker_admit_may_join(struct worker *w, const struct admit_pace *pace,
			  int n)
{
	drop_flagged(w);
	if (n == 0)
		return 1; /* nothing runs that a load would hold up */
	return pace->credit >= 0 || joiner_among_own(w);
}

void worker_admit_joined(struct worker *w, struct admit_pace *pace,
			 struct run *r, int running, double seconds)
{
	pace->changed = 1;
	if (running) {
		pace->credit -= seconds;
		pace->loads += seconds;
	}
	struct nn_fit_info info;
	nn_fit_get_info(r->fit, &info);
	uint64_t in_use = gpu_bytes_in_use(w->gpu);
	log_debug(
	    "job %s: joined a pack of %d in %.3f s; its fit holds %llu "
	    "bytes (estimated %llu), the device %llu",
	    r->job->id, running, seconds, (unsigned long long)info.device_bytes,
	    (unsigned long long)r->job->bytes, (unsigned long long)in_use);
	pthread_mutex_lock(&w->lock);
	if (r->job->held)
		r->job->held->bytes = info.device_bytes;
	measure_base(w, in_use);
	if (in_use > w->budget)
		w->full = 1;
	pthread_mutex_unlock(&w->lock);
}

void worker_admit_stepped(struct worker *w, struct admit_pace *pace,
			  double seconds, int n)
{
	uint64_t in_use = gpu_bytes_in_use(w->gpu);
	pthread_mutex_lock(&w->lock);
	measure_base(w, in_use);
	pthread_mutex_unlock(&w->lock);
	/* the boundary before this epoch: one where no job came or went
	 * says what the pack's own cost (its events, its checkpoints); past
	 * that, what jobs coming and going cost (their loads, already
	 * charged, their checkpoints and exports) is charged too */
	double now = worker_seconds(),
	       boundary = now - seconds - pace->last_end;
	if (pace->last_end > 0 && !pace->changed && n == pace->last_n)
		pace->quiet = pace->quiet > 0
				  ? 0.8 * pace->quiet + 0.2 * boundary
				  : boundary;
	else if (pace->last_end > 0 && boundary > pace->quiet + pace->loads)
		pace->credit -= boundary - pace->quiet - pace->loads;
	double most = seconds * WORKER_PACK_JOIN_SHARE;
	pace->credit += most;
	if (pace->credit > most)
		pace->credit = most;
	pace->last_end = now;
	pace->last_n = n;
	pace->loads = 0;
	pace->changed = 0;
}
