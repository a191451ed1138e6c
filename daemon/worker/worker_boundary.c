/*
 * worker_boundary.c - the files a pack's jobs write at one epoch boundary,
 * written by several threads.
 *
 * When many jobs of a pack checkpoint or finish at the same boundary (a
 * dataset's thousand jobs end together), writing each one's checkpoint,
 * model and reconstruction in turn on the worker thread kept the device
 * idle for seconds. Here the device's part comes first, on the worker
 * thread: the state of every such job read back in one go
 * (nn_fits_read_ahead) and each checkpoint made from it; then the files
 * are encoded and written by up to parallel_threads() threads, which
 * touch neither the device nor the loop; then, on the worker thread
 * again and in the pack's order, each job's news is posted and its
 * outcome taken exactly as worker_run.c takes it for a job alone.
 * The writes join the boundary's batch of durability (fileio.h).
 */
#include "worker/worker.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "formats/safetensors.h"
#include "log.h"
#include "nn/fit.h"
#include "nn/package.h"
#include "util/fileio.h"
#include "util/parallel.h"
#include "worker/worker_internal.h"

/* Below this many jobs, the writes stay on the worker thread. */
#define BOUNDARY_THREADS_FROM 8

struct boundary_job {
	struct run *r;
	enum boundary_kind kind;
	struct st_file *ckpt;
	int ckpt_rc;
	int export_rc, export_errno;
};

struct boundary {
	struct boundary_job *jobs;
	atomic_long owed; /* the syncs the helper threads left out */
};

static void write_job(void *arg, int k)
{
	struct boundary *b = arg;
	struct boundary_job *bj = &b->jobs[k];
	int own = !fileio_batch_open();
	if (own)
		fileio_batch_begin();
	if (!bj->ckpt_rc)
		bj->ckpt_rc = worker_checkpoint_write(bj->r, bj->ckpt);
	if (bj->kind == BOUNDARY_FINISH) {
		errno = 0;
		bj->export_rc = worker_run_write_export(bj->r);
		bj->export_errno = errno;
	}
	if (own)
		atomic_fetch_add(&b->owed, fileio_batch_leave());
}

void worker_boundary_write(struct worker *w, struct run **runs,
			   const enum boundary_kind *kinds, int n,
			   enum run_outcome *out)
{
	struct boundary b = { .jobs = calloc((size_t)n, sizeof(*b.jobs)) };
	struct nn_fit **fits = calloc((size_t)n, sizeof(*fits));
	int *want = calloc((size_t)n, sizeof(*want));
	int count = 0;
	atomic_init(&b.owed, 0);
	if (!b.jobs || !fits || !want) { /* one at a time, as alone */
		for (int i = 0; i < n; i++) {
			struct run *r = runs[i];
			out[i] = RUN_NEXT;
			if (kinds[i] == BOUNDARY_STOP) {
				worker_save_checkpoint(w, r);
				out[i] = worker_run_stop(r);
			} else if (kinds[i] == BOUNDARY_FINISH) {
				out[i] = worker_run_finish(w, r);
			} else if (kinds[i] == BOUNDARY_DUE) {
				out[i] = worker_run_checkpointed(
				    w, r, worker_save_checkpoint(w, r));
			}
		}
		goto out;
	}
	for (int i = 0; i < n; i++) {
		want[i] = kinds[i] != BOUNDARY_NONE;
		if (want[i])
			fits[count++] = runs[i]->fit;
	}
	for (int k = 0; k < count; k++)
		want[k] = 1;
	if (count > 1) /* a failure leaves each to read its own */
		nn_fits_read_ahead(fits, count, want);
	for (int i = 0; i < n; i++)
		want[i] = kinds[i] != BOUNDARY_NONE;
	count = 0;
	for (int i = 0; i < n; i++) {
		out[i] = RUN_NEXT;
		if (!want[i])
			continue;
		/* a finish without its export made with the pack makes it
		 * on the device, here */
		if (kinds[i] == BOUNDARY_FINISH && !runs[i]->export) {
			out[i] = worker_run_finish(w, runs[i]);
			continue;
		}
		struct boundary_job *bj = &b.jobs[count++];
		*bj = (struct boundary_job){ .r = runs[i], .kind = kinds[i] };
		bj->ckpt_rc = nn_fit_checkpoint(runs[i]->fit, &bj->ckpt);
	}
	int threads = count >= BOUNDARY_THREADS_FROM ? parallel_threads() : 1;
	if (count > 1)
		log_debug("worker %d: %d jobs write their files at this "
			  "boundary, by %d threads",
			  w->index, count, threads);
	parallel_for(count, threads, write_job, &b);
	fileio_batch_owe(atomic_load(&b.owed));
	for (int i = 0, k = 0; i < n; i++) {
		if (!want[i] || k >= count || b.jobs[k].r != runs[i])
			continue;
		struct boundary_job *bj = &b.jobs[k++];
		struct run *r = bj->r;
		st_destroy(bj->ckpt);
		int rc = worker_checkpoint_done(w, r, bj->ckpt_rc);
		if (bj->kind == BOUNDARY_STOP)
			out[i] = worker_run_stop(r);
		else if (bj->kind == BOUNDARY_FINISH)
			out[i] = worker_run_finished(w, r, bj->export_rc,
						     bj->export_errno);
		else
			out[i] = worker_run_checkpointed(w, r, rc);
	}
out:
	free(b.jobs);
	free(fits);
	free(want);
}
