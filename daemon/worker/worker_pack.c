/*
 * worker_pack.c - a worker's jobs trained as one pack (nn/pack.h).
 *
 * When a worker may hold more than one job (--pack, and a device that can
 * run packs), the jobs handed over are taken as they come, while the pack
 * has room and the device memory, and all step at once; between two
 * epochs each job is checked, served and checkpointed, and leaves, just
 * as worker_run.c runs a job alone. A device fault takes every fit: the
 * device is reopened once and each job loaded again from its checkpoint;
 * memory that ran out with others on the device sends all but the first
 * back to the queue, each to run alone. Who joins, and how fast, is
 * worker_admit.c's.
 *
 * A pause or cancel (or a return to the queue, or the daemon's stop) is
 * answered within one pack epoch: the flags are read after each step,
 * before a boundary's exports and between two joiners' loads, and the
 * jobs they stop write their checkpoints and are told to the loop before
 * anything else is done. A job that leaves between a step and the next
 * boundary's exports keeps its fit until those have run (its run is
 * retired): the pack's programs of the last step still name it.
 */
#include "worker/worker.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/errors.h"
#include "log.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "formats/safetensors.h"
#include "util/image.h"
#include "util/fileio.h"
#include "util/path.h"
#include "worker/worker_internal.h"

/* What a pack keeps while it trains: its jobs, the arrays its steps and
 * boundaries work in (room for w->pack each), and its figures. */
struct pack_room {
	struct nn_pack *pack;
	struct run **runs;
	int n;
	/* the jobs that left at a boundary, told to the loop after its sync */
	struct run **left;
	/* the jobs told to the loop already whose fits the pack's last step
	 * took: freed once the next boundary's exports have run */
	struct run **retired;
	int nretired;
	struct nn_fit **fits;
	struct nn_metrics *m;
	int *rcs;
	/* what each writes at a boundary, and what that comes to */
	enum boundary_kind *kinds;
	enum run_outcome *outs, *dues;
	struct admit_pace pace;
	int steps, most;
	double began, stepping;
	double phases[NN_PACK_PHASES]; /* ms, summed over steps */
};

/* The retired runs freed: nothing of the pack reads their fits now. */
static void free_retired(struct pack_room *p)
{
	for (int i = 0; i < p->nretired; i++)
		worker_run_free(p->retired[i]);
	p->nretired = 0;
}

/* A fault of the device while a pack trains: every fit goes, the device
 * is reopened once, and each job is loaded again from its checkpoint
 * (or fails, past its retries); p->n says how many go on. */
static void pack_fault(struct worker *w, struct pack_room *p, int rc)
{
	char err[512] = "";
	struct run **runs = p->runs;
	int n = p->n;
	log_warn("worker %d: %s while training a pack of %d; reopening the "
		 "device and resuming each job from its checkpoint",
		 w->index, error_message(rc), n);
	nn_pack_destroy(p->pack);
	p->pack = NULL;
	free_retired(p); /* before their device goes */
	for (int i = 0; i < n; i++) {
		nn_fit_destroy(runs[i]->fit);
		runs[i]->fit = NULL;
	}
	int reopened = worker_reopen_device(w, err, sizeof(err)) == 0 &&
		       nn_pack_create(&p->pack, w->gpu) == 0;
	/* out of memory with others: the pack was too large, not the device
	 * faulty; the first job goes on, the others wait in the queue */
	int shrink = rc == ERR_DEVICE_OOM && n > 1;
	if (shrink) {
		pthread_mutex_lock(&w->lock);
		w->full = 1;
		pthread_mutex_unlock(&w->lock);
	}
	int kept = 0;
	for (int i = 0; i < n; i++) {
		struct run *r = runs[i];
		enum run_outcome o = RUN_ENDED;
		if (shrink && i > 0) {
			worker_admit_alone(w, r->job->id); /* no bouncing */
			r->end = WORK_END_QUEUED;
			worker_run_end(w, r);
			continue;
		}
		if (!reopened)
			snprintf(r->msg, sizeof(r->msg),
				 "%s, and the device "
				 "could not be reopened: %s",
				 error_message(rc), err);
		else if (++r->retries > WORKER_DEVICE_RETRIES)
			snprintf(r->msg, sizeof(r->msg), "%s, %d times",
				 error_message(rc), r->retries);
		else
			o = worker_run_load(w, r);
		if (o == RUN_ENDED) {
			if (!reopened || r->retries > WORKER_DEVICE_RETRIES)
				r->end = WORK_END_FAILED;
			worker_run_end(w, r);
		} else {
			runs[kept++] = r;
		}
	}
	p->n = kept;
}

/*
 * The files that the pack's jobs wrote at one epoch boundary (their
 * checkpoints, their exports) are made durable together by one sync of
 * the state's file system, not two fsyncs a file (fileio_batch_begin).
 * The sync goes through the jobs' folder (above a job's own, which may
 * be gone by then), named before the jobs may leave; n > 0.
 */
static char *boundary_begin(struct run **runs)
{
	fileio_batch_begin();
	return path_parent(runs[0]->job->dir);
}

static void boundary_end(struct worker *w, char *jobs_dir)
{
	if (!jobs_dir) { /* no memory for the name: every file system */
		fileio_batch_end("/");
		sync();
		return;
	}
	if (fileio_batch_end(jobs_dir))
		log_warn("worker %d: cannot make the jobs' files in %s "
			 "durable: %s",
			 w->index, jobs_dir, strerror(errno));
	free(jobs_dir);
}

/*
 * The flags of each job at this boundary (r->flags), and the exports of
 * the jobs that finish here made together (nn_pack_export: a few
 * submissions for any number of jobs), for worker_boundary_write to
 * write; kinds[i] says what each job writes. fits: room for n. A failed
 * batch leaves each job to make its own.
 */
static void prepare_exports(struct nn_pack *pack, struct worker *w,
			    struct run **runs, int n, struct nn_fit **fits,
			    enum boundary_kind *kinds)
{
	int any = 0;
	int *want = n > 0 ? calloc((size_t)n, sizeof(*want)) : NULL;
	for (int i = 0; i < n; i++) {
		struct run *r = runs[i];
		fits[i] = r->fit;
		kinds[i] = worker_run_kind(r, worker_flags_of(w, r->job));
		any += kinds[i] == BOUNDARY_FINISH;
		if (want)
			want[i] = kinds[i] == BOUNDARY_FINISH;
	}
	struct nn_export *ex =
	    any > 1 && want ? calloc((size_t)n, sizeof(*ex)) : NULL;
	if (ex && nn_pack_export(pack, fits, n, want, 1, 1, ex)) {
		free(ex);
		ex = NULL;
	}
	for (int i = 0; ex && i < n; i++) {
		if (!want[i])
			continue;
		runs[i]->export = malloc(sizeof(*runs[i]->export));
		if (runs[i]->export) {
			*runs[i]->export = ex[i];
		} else {
			st_destroy(ex[i].model);
			image_destroy(ex[i].recon);
		}
	}
	free(ex);
	free(want);
}

/* One progress event for the whole pack's epoch (the jobs whose step
 * went well), not one a job: a thousand jobs an epoch cost the loop one
 * wake-up. */
static void post_progress(struct worker *w, struct run **runs, int n,
			  const struct nn_metrics *m, const int *rcs)
{
	struct work_event *ev = worker_event(WORK_PROGRESS_MANY, NULL);
	ev->many = n > 0 ? malloc((size_t)n * sizeof(*ev->many)) : NULL;
	for (int i = 0; i < n; i++) {
		if (rcs[i])
			continue;
		if (!ev->many) { /* no memory for the list: one by one */
			struct work_event *one =
			    worker_event(WORK_PROGRESS, runs[i]->job->id);
			one->m = m[i];
			worker_post(w, one);
			continue;
		}
		struct work_progress *p = &ev->many[ev->nmany++];
		snprintf(p->job_id, sizeof(p->job_id), "%s", runs[i]->job->id);
		p->m = m[i];
	}
	if (ev->nmany)
		worker_post(w, ev);
	else
		work_event_destroy(ev);
}

/*
 * The files kinds[i] says each of the pack's jobs writes
 * (worker_boundary_write), made durable together, then what each comes
 * to: a job to load again is loaded, one that ends leaves p->runs (the
 * others keep their order) and is told to the loop after the sync. outs:
 * what the step made of each job where kinds[i] writes nothing (NULL:
 * only the writes count). A run that ends is freed now (free_now) or
 * retired, when the pack's last step took its fit and its next exports
 * may still read it. n > 0; returns the jobs left.
 */
/* The fits of the last step that their runs destroyed since (a
 * divergence or a device fault: worker_run_recover, before a reload)
 * taken out of the pack, before anything of it reads them again. */
static void forget_dropped(struct pack_room *p)
{
	for (int i = 0; i < p->n; i++) {
		struct run *r = p->runs[i];
		if (r->stepped && r->fit != r->stepped) {
			nn_pack_forget(p->pack, r->stepped);
			r->stepped = NULL;
		}
	}
}

static int settle(struct worker *w, struct pack_room *p,
		  const enum run_outcome *outs, int free_now)
{
	int nleft = 0, kept = 0;
	char *jobs_dir = boundary_begin(p->runs);
	worker_boundary_write(w, p->runs, p->kinds, p->n, p->dues);
	forget_dropped(p);
	for (int k = 0; k < p->n; k++) {
		struct run *r = p->runs[k];
		enum run_outcome o = !outs || p->kinds[k] != BOUNDARY_NONE
					 ? p->dues[k]
					 : outs[k];
		if (o == RUN_RELOAD)
			o = worker_run_load(w, r);
		if (o == RUN_ENDED)
			p->left[nleft++] = r;
		else
			p->runs[kept++] = r;
	}
	p->n = kept;
	boundary_end(w, jobs_dir);
	for (int k = 0; k < nleft; k++) {
		if (free_now) {
			worker_run_end(w, p->left[k]);
			continue;
		}
		worker_run_tell_end(w, p->left[k]);
		p->retired[p->nretired++] = p->left[k];
	}
	return p->n;
}

/* The jobs whose flags make them leave (a pause, a cancel, a return to
 * the queue, the daemon's stop) write their checkpoints and are told to
 * the loop now, before the rest of the boundary (the exports of the jobs
 * that finish may take long); their runs are retired. */
static void answer_stops(struct worker *w, struct pack_room *p)
{
	int any = 0;
	for (int i = 0; i < p->n; i++) {
		struct run *r = p->runs[i];
		r->flags = worker_flags_of(w, r->job);
		p->kinds[i] =
		    r->flags & WORK_LEAVE ? BOUNDARY_STOP : BOUNDARY_NONE;
		any |= p->kinds[i] == BOUNDARY_STOP;
	}
	if (any)
		settle(w, p, NULL, 0);
}

/* An epoch boundary of the pack's jobs: a request served (serve), the
 * stops answered, the ends' exports made (the retired fits freed after
 * them), the files written, and the jobs that leave told to the loop
 * after the sync. The jobs left stay in p->runs, in order. */
static void boundary(struct worker *w, struct pack_room *p, int serve)
{
	if (serve)
		worker_serve_due(w, p->runs, p->n);
	answer_stops(w, p);
	if (p->n)
		prepare_exports(p->pack, w, p->runs, p->n, p->fits, p->kinds);
	free_retired(p); /* those exports were the last to read their fits */
	if (!p->n)
		return;
	for (int i = 0; i < p->n; i++)
		p->runs[i]->shared = p->n > 1;
	settle(w, p, NULL, 1);
}

/* The jobs handed over join the pack, while it has room and admission
 * lets them (worker_admit.c), each loaded (or ended, when it cannot be);
 * a flag to leave on a job of the pack stops the loads, for the
 * boundary after them to answer it. */
static void join_waiting(struct worker *w, struct pack_room *p)
{
	struct work_job *job;
	while (p->n < w->pack && !worker_any_leaving(w) &&
	       worker_admit_may_join(w, &p->pace, p->n) &&
	       (job = worker_take_job(w))) {
		struct run *r = calloc(1, sizeof(*r));
		if (!r) {
			worker_release_held(w, job->id);
			worker_post_ended(w, job->id, WORK_END_QUEUED, NULL);
			free(job);
			continue;
		}
		*r =
		    (struct run){ .job = job, .psnr = NAN, .shared = p->n > 0 };
		double t = worker_seconds();
		if (worker_run_load(w, r) == RUN_ENDED) {
			worker_run_end(w, r);
			continue;
		}
		worker_admit_joined(w, &p->pace, r, p->n, worker_seconds() - t);
		p->runs[p->n++] = r;
	}
}

/* One epoch of every job of the pack, timed (*seconds); 0, or the fault
 * of the device that took the whole pack's. */
static int step(struct worker *w, struct pack_room *p, double *seconds)
{
	for (int i = 0; i < p->n; i++)
		p->fits[i] = p->runs[i]->stepped = p->runs[i]->fit;
	double t = worker_seconds();
	int rc = nn_pack_step(p->pack, p->fits, p->n, p->m, p->rcs);
	p->steps++;
	p->most = p->n > p->most ? p->n : p->most;
	*seconds = worker_seconds() - t;
	p->stepping += *seconds;
	double ph[NN_PACK_PHASES];
	nn_pack_host_ms(p->pack, ph);
	for (int k = 0; k < NN_PACK_PHASES; k++)
		p->phases[k] += ph[k];
	worker_admit_stepped(w, &p->pace, *seconds, p->n);
	for (int i = 0; rc == 0 && i < p->n; i++)
		if (worker_device_fault(p->rcs[i]))
			rc = p->rcs[i];
	return rc;
}

/* After a step of seconds: its news, each job's step taken as a run alone
 * takes it (worker_run.c), the checkpoints due written, and the jobs
 * flagged to leave stopped now, a pack epoch at most after their flag
 * (their runs retired: the next exports may read their fits). */
static void after_step(struct worker *w, struct pack_room *p, double seconds)
{
	post_progress(w, p->runs, p->n, p->m, p->rcs);
	for (int i = 0; i < p->n; i++) {
		struct run *r = p->runs[i];
		int due;
		r->train_seconds += seconds;
		p->outs[i] =
		    worker_run_after_step(w, r, &p->m[i], p->rcs[i], &due);
		r->flags = worker_flags_of(w, r->job);
		if (p->outs[i] == RUN_NEXT && (r->flags & WORK_LEAVE))
			p->kinds[i] = BOUNDARY_STOP;
		else
			p->kinds[i] = due ? BOUNDARY_DUE : BOUNDARY_NONE;
	}
	forget_dropped(p);
	settle(w, p, p->outs, 0);
	worker_publish_memory(w);
}

/* The pack's arrays and its nn_pack; 0, or 1 without memory. */
static int pack_open(struct worker *w, struct pack_room *p)
{
	size_t n = (size_t)w->pack;
	*p = (struct pack_room){ .began = worker_seconds() };
	p->runs = calloc(n, sizeof(*p->runs));
	p->left = calloc(n, sizeof(*p->left));
	p->retired = calloc(n, sizeof(*p->retired));
	p->fits = calloc(n, sizeof(*p->fits));
	p->m = calloc(n, sizeof(*p->m));
	p->rcs = calloc(n, sizeof(*p->rcs));
	p->kinds = calloc(n, sizeof(*p->kinds));
	p->outs = calloc(n, sizeof(*p->outs));
	p->dues = calloc(n, sizeof(*p->dues));
	if (!p->runs || !p->left || !p->retired || !p->fits || !p->m ||
	    !p->rcs || !p->kinds || !p->outs || !p->dues)
		return 1;
	return nn_pack_create(&p->pack, w->gpu) != 0;
}

/* What the pack did, said once it has no job left. */
static void log_pack(struct worker *w, const struct pack_room *p)
{
	if (p->steps < 1 || !p->pack)
		return;
	const double *ph = p->phases;
	log_notice("worker %d: a pack of up to %d jobs trained %d epochs "
		   "(%.2f s, of which %.2f s in its steps: ms a step begin "
		   "%.2f, epoch %.2f, measure %.2f, optimizer %.2f, after "
		   "%.2f); its programs were recorded %d times",
		   w->index, p->most, p->steps, worker_seconds() - p->began,
		   p->stepping, ph[NN_PACK_BEGIN] / p->steps,
		   ph[NN_PACK_EPOCH_RUN] / p->steps,
		   ph[NN_PACK_MEASURE] / p->steps,
		   ph[NN_PACK_OPTIM_RUN] / p->steps,
		   ph[NN_PACK_AFTER] / p->steps, nn_pack_builds(p->pack));
}

static void pack_close(struct worker *w, struct pack_room *p)
{
	nn_pack_destroy(p->pack);
	free_retired(p);
	free(p->runs);
	free(p->left);
	free(p->retired);
	free(p->fits);
	free(p->m);
	free(p->rcs);
	free(p->kinds);
	free(p->outs);
	free(p->dues);
	worker_publish_memory(w);
}

/*
 * Trains the jobs handed over as one pack (nn/pack.h) until none is left:
 * between two epochs jobs join (taken as they come, while the pack has
 * room and the device memory) and leave (done, paused, cancelled,
 * stopped, failed), each exactly as worker_run_job would run it alone.
 */
void worker_run_pack(struct worker *w)
{
	struct pack_room p;
	if (pack_open(w, &p)) {
		log_error("worker %d: out of memory for a pack", w->index);
		worker_hand_back(w);
		pack_close(w, &p);
		return;
	}
	for (;;) {
		/* the flags first: a pause or cancel is obeyed before the
		 * joiners load (which may take long) */
		if (p.n)
			boundary(w, &p, 1);
		free_retired(&p);
		int had = p.n;
		join_waiting(w, &p);
		int joined = p.n - had;
		/* the joiners' own flags, and those loaded at their end */
		if (joined)
			boundary(w, &p, 0);
		if (!p.n) {
			if (joined)
				continue;
			break;
		}
		double seconds;
		int rc = step(w, &p, &seconds);
		if (rc) {
			pack_fault(w, &p, rc);
			if (!p.pack) {
				for (int i = 0; i < p.n; i++)
					worker_run_end(w, p.runs[i]);
				p.n = 0;
				break;
			}
			continue;
		}
		after_step(w, &p, seconds);
	}
	log_pack(w, &p);
	pack_close(w, &p);
}
