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

/* A fault of the device while a pack trains: every fit goes, the device
 * is reopened once, and each job is loaded again from its checkpoint
 * (or fails, past its retries). */
static int pack_fault(struct worker *w, struct run **runs, int n, int rc,
		      struct nn_pack **pack)
{
	char err[512] = "";
	log_warn("worker %d: %s while training a pack of %d; reopening the "
		 "device and resuming each job from its checkpoint",
		 w->index, error_message(rc), n);
	nn_pack_destroy(*pack);
	*pack = NULL;
	for (int i = 0; i < n; i++) {
		nn_fit_destroy(runs[i]->fit);
		runs[i]->fit = NULL;
	}
	int reopened = worker_reopen_device(w, err, sizeof(err)) == 0 &&
		       nn_pack_create(pack, w->gpu) == 0;
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
	return kept;
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
	int *want = calloc((size_t)n, sizeof(*want));
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

/* The arrays a boundary works in, room for the pack each. */
struct boundary_room {
	struct run **left;
	struct nn_fit **fits;
	enum boundary_kind *kinds;
	enum run_outcome *outs;
};

/* An epoch boundary of the pack's n jobs: a request served (serve), the
 * flags obeyed, the ends' exports made, the files written, and the jobs
 * that leave told to the loop after the sync. Returns the jobs left,
 * in runs' order. */
static int boundary(struct worker *w, struct nn_pack *pack, struct run **runs,
		    int n, int serve, struct boundary_room *bb)
{
	int nleft = 0;
	if (serve)
		worker_serve_due(w, runs, n);
	prepare_exports(pack, w, runs, n, bb->fits, bb->kinds);
	char *jobs_dir = boundary_begin(runs);
	worker_boundary_write(w, runs, bb->kinds, n, bb->outs);
	for (int i = 0, k = 0; k < n; k++) {
		struct run *r = runs[k];
		r->shared = n > 1;
		enum run_outcome o = bb->outs[k];
		if (o == RUN_RELOAD)
			o = worker_run_load(w, r);
		if (o == RUN_ENDED)
			bb->left[nleft++] = r;
		else
			runs[i++] = r;
	}
	n -= nleft;
	boundary_end(w, jobs_dir);
	for (; nleft > 0; nleft--)
		worker_run_end(w, bb->left[nleft - 1]);
	return n;
}

/* The jobs handed over join a pack of n, while it has room and
 * admission lets them (worker_admit.c), each loaded (or ended, when it
 * cannot be); returns the pack's jobs now. */
static int join_waiting(struct worker *w, struct admit_pace *pace,
			struct run **runs, int n)
{
	struct work_job *job;
	while (n < w->pack && worker_admit_may_join(w, pace, n) &&
	       (job = worker_take_job(w))) {
		struct run *r = calloc(1, sizeof(*r));
		if (!r) {
			worker_release_held(w, job->id);
			worker_post_ended(w, job->id, WORK_END_QUEUED, NULL);
			free(job);
			continue;
		}
		*r = (struct run){ .job = job, .psnr = NAN, .shared = n > 0 };
		double t = worker_seconds();
		if (worker_run_load(w, r) == RUN_ENDED) {
			worker_run_end(w, r);
			continue;
		}
		worker_admit_joined(w, pace, r, n, worker_seconds() - t);
		runs[n++] = r;
	}
	return n;
}

/*
 * Trains the jobs handed over as one pack (nn/pack.h) until none is left:
 * between two epochs jobs join (taken as they come, while the pack has
 * room and the device memory) and leave (done, paused, cancelled,
 * stopped, failed), each exactly as worker_run_job would run it alone.
 */
void worker_run_pack(struct worker *w)
{
	struct run **runs = calloc((size_t)w->pack, sizeof(*runs));
	/* the jobs that left at a boundary, told to the loop after its sync */
	struct run **left = calloc((size_t)w->pack, sizeof(*left));
	int nleft = 0;
	struct nn_fit **fits = calloc((size_t)w->pack, sizeof(*fits));
	struct nn_metrics *m = calloc((size_t)w->pack, sizeof(*m));
	int *rcs = calloc((size_t)w->pack, sizeof(*rcs));
	/* what each writes at a boundary, and what that comes to */
	enum boundary_kind *kinds = calloc((size_t)w->pack, sizeof(*kinds));
	enum run_outcome *outs = calloc((size_t)w->pack, sizeof(*outs));
	enum run_outcome *dues = calloc((size_t)w->pack, sizeof(*dues));
	struct nn_pack *pack = NULL;
	int n = 0;
	if (!runs || !left || !fits || !m || !rcs || !kinds || !outs || !dues ||
	    nn_pack_create(&pack, w->gpu)) {
		log_error("worker %d: out of memory for a pack", w->index);
		worker_hand_back(w);
		goto out;
	}
	struct boundary_room bb = { left, fits, kinds, outs };
	struct admit_pace pace = { 0 };
	int steps = 0, most = 0;
	double began = worker_seconds(), stepping = 0;
	double phases[NN_PACK_PHASES] = { 0 }; /* ms, summed over steps */
	for (;;) {
		/* the flags first: a pause or cancel is obeyed before the
		 * joiners load (which may take long) */
		if (n)
			n = boundary(w, pack, runs, n, 1, &bb);
		int had = n;
		n = join_waiting(w, &pace, runs, n);
		int joined = n - had;
		/* the joiners' own flags, and those loaded at their end */
		if (joined)
			n = boundary(w, pack, runs, n, 0, &bb);
		if (!n) {
			if (joined)
				continue;
			break;
		}
		for (int i = 0; i < n; i++)
			fits[i] = runs[i]->fit;
		double t = worker_seconds();
		int rc = nn_pack_step(pack, fits, n, m, rcs);
		steps++;
		most = n > most ? n : most;
		double dt = worker_seconds() - t;
		stepping += dt;
		double ph[NN_PACK_PHASES];
		nn_pack_host_ms(pack, ph);
		for (int k = 0; k < NN_PACK_PHASES; k++)
			phases[k] += ph[k];
		worker_admit_stepped(w, &pace, dt, n);
		for (int i = 0; rc == 0 && i < n; i++)
			if (worker_device_fault(rcs[i]))
				rc = rcs[i];
		if (rc) {
			n = pack_fault(w, runs, n, rc, &pack);
			if (!pack) {
				for (int i = 0; i < n; i++)
					worker_run_end(w, runs[i]);
				n = 0;
				break;
			}
			continue;
		}
		post_progress(w, runs, n, m, rcs);
		char *jobs_dir = boundary_begin(runs);
		for (int i = 0; i < n; i++) {
			struct run *r = runs[i];
			int due;
			r->train_seconds += dt;
			/* as a run alone takes them (worker_run.c) */
			outs[i] =
			    worker_run_after_step(w, r, &m[i], rcs[i], &due);
			kinds[i] = due ? BOUNDARY_DUE : BOUNDARY_NONE;
		}
		worker_boundary_write(w, runs, kinds, n, dues);
		for (int i = 0, k = 0; k < n; k++) {
			struct run *r = runs[k];
			enum run_outcome o =
			    kinds[k] == BOUNDARY_DUE ? dues[k] : outs[k];
			if (o == RUN_RELOAD)
				o = worker_run_load(w, r);
			if (o == RUN_ENDED)
				left[nleft++] = r;
			else
				runs[i++] = r;
		}
		n -= nleft;
		boundary_end(w, jobs_dir);
		for (; nleft > 0; nleft--)
			worker_run_end(w, left[nleft - 1]);
		worker_publish_memory(w);
	}
	if (steps > 0 && pack)
		log_notice(
		    "worker %d: a pack of up to %d jobs trained %d epochs "
		    "(%.2f s, of which %.2f s in its steps: ms a step begin "
		    "%.2f, epoch %.2f, measure %.2f, optimizer %.2f, after "
		    "%.2f); its programs were recorded %d times",
		    w->index, most, steps, worker_seconds() - began, stepping,
		    phases[NN_PACK_BEGIN] / steps,
		    phases[NN_PACK_EPOCH_RUN] / steps,
		    phases[NN_PACK_MEASURE] / steps,
		    phases[NN_PACK_OPTIM_RUN] / steps,
		    phases[NN_PACK_AFTER] / steps, nn_pack_builds(pack));
out:
	nn_pack_destroy(pack);
	free(runs);
	free(left);
	free(fits);
	free(m);
	free(rcs);
	free(kinds);
	free(outs);
	free(dues);
	worker_publish_memory(w);
}
