/*
 * worker_internal.h - what the worker's files share and nobody else
 * includes: the worker's fields, a job's run, and the steps one file
 * takes from another. Calls run one way, down this list:
 * worker_thread.c (the thread), worker_pack.c (a pack of jobs),
 * worker_boundary.c (a pack's files at a boundary, by threads),
 * worker_run.c (one job's run), worker_serve.c (renders and exports
 * between epochs), worker_fit.c (a job's fit and files, the device),
 * worker_admit.c (who joins a pack, how fast), worker.c (the hand-off
 * with the loop, under the lock).
 *
 * Worker thread only, except the fields under w->lock (worker.c).
 */
#ifndef VKINR_WORKER_INTERNAL_H
#define VKINR_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker/worker.h"

struct st_file;

#define WORKER_ALONE_IDS 32

struct worker {
	int index;
	char *selector;
	void (*wake)(void *arg);
	void *wake_arg;
	pthread_t thread;
	int started;

	/* the hand-off, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct held *held; /* the jobs it has, oldest first */
	int nheld;
	int full;                      /* its pack fills the device's memory */
	int flags;                     /* WORK_STOP */
	struct work_request *requests; /* FIFO */
	struct work_event *events, **events_tail;
	uint64_t bytes_in_use; /* gpu_bytes_in_use, as published */
	/* admission (worker_admit.c): the pack's memory budget, the most a
	 * fit plans its tiles for, what the device held when opened, and
	 * the jobs that ran out of memory beside others (the latest
	 * WORKER_ALONE_IDS) */
	uint64_t budget, fit_budget, base_bytes;
	char alone[WORKER_ALONE_IDS][JOB_ID_MAX];
	int nalone;

	/* the thread's own */
	int pack; /* jobs at once at most (1: no packs) */
	struct gpu_context *gpu;
	int ckpt_epochs;
	double ckpt_seconds;
	double ckpt_min_seconds; /* between two by the epoch rule */
	int open_delay_ms; /* VKINRD_OPEN_DELAY_MS: a slow device, for tests */
};

/* A job the loop handed over: its flags, and the job until the thread
 * takes it (NULL after). */
struct held {
	struct held *next;
	char id[JOB_ID_MAX];
	int flags;
	struct work_job *job;
	/* for admission (worker_admit.c): its owner, its work an epoch, and
	 * its device memory (estimated until it is loaded, then its fit's) */
	uid_t uid;
	double work;
	uint64_t bytes;
};

#define WORKER_SERVE_UIDS 8

/* One job being run: the fit and what is needed to rebuild it. */
struct run {
	struct work_job *job;
	struct image *target;
	struct nn_fit *fit;
	struct nn_fit *stepped; /* in a pack: the fit its last step took */
	int last_ckpt_epoch;
	double last_ckpt_time;
	int write_errno; /* why the last checkpoint could not be written */
	double train_seconds, serve_seconds; /* since it started here */
	uid_t last_uid;                      /* whose request was served last */
	int served_any;
	/* the seconds each uid's requests took (the most recent
	 * WORKER_SERVE_UIDS uids; a uid pushed out starts again at 0) */
	struct {
		uid_t uid;
		double seconds;
	} served[WORKER_SERVE_UIDS];
	int retries;   /* device lost or out of memory, reopened */
	int rollbacks; /* diverged, back to the checkpoint */
	double lr;     /* after a rollback, the lowered rate; else 0 */
	int reached;   /* the model reached target_psnr */
	int shared;    /* in a pack with others (the device is theirs
				too: a fault is handled for all) */
	/* its export made already with the pack's other jobs ending at
	 * this boundary (nn_pack_export), which worker_run_finish writes; NULL:
	 * worker_run_finish makes it */
	struct nn_export *export;
	int flags; /* the job's flags (WORK_CANCEL, ...) at this boundary */
	/* how it ended */
	enum work_end end;
	double psnr;   /* done: the exported model's */
	char msg[600]; /* failed, or paused by a failed write: why */
};

/*
 * A run is a loop over what the last step came to: an epoch went well
 * (on to the next), the fit must be built again (the device was reopened,
 * or the learning rate halved after a divergence), or the job leaves the
 * worker (done, paused, cancelled, stopped or failed: r->end and r->msg
 * say which and why). Each step below returns one of them.
 */
enum run_outcome {
	RUN_NEXT,   /* an epoch ran (or a fit was loaded): go on */
	RUN_RELOAD, /* build the fit again (from the checkpoint, if any) */
	RUN_ENDED,  /* the job leaves the worker: r->end, r->msg */
};

/* worker.c: the hand-off; each takes w->lock itself, but where said */
double worker_seconds(void); /* monotonic */
struct work_event *worker_event(enum work_event_kind kind, const char *job_id);
void worker_post(struct worker *w, struct work_event *ev);
void worker_post_ended(struct worker *w, const char *job_id, enum work_end end,
		       const char *message);
void worker_publish_memory(struct worker *w);
struct work_job *worker_take_job(struct worker *w);
void worker_release_held(struct worker *w, const char *job_id);
/* The seconds r spent serving uid's requests. */
double worker_served(const struct run *r, uid_t uid);
/* Adds seconds to what r served uid. */
void worker_add_served(struct run *r, uid_t uid, double seconds);
int worker_take_due(struct worker *w, struct run *r, struct work_request **req);
int worker_flags_of(struct worker *w, const struct work_job *job);
void worker_hand_back(struct worker *w);
int worker_has_untaken(struct worker *w); /* under lock */
/* Whether a job the thread has taken is flagged to leave (WORK_LEAVE),
 * or the daemon stops: a pack then loads no more joiners before its
 * next boundary answers it. */
int worker_any_leaving(struct worker *w);

/* worker_admit.c: who joins a pack, and how fast (worker_admit and
 * worker_estimate are the loop's, in worker.h) */
struct admit_pace {
	double credit;       /* seconds joiners may still take; < 0: none now */
	double last_end;     /* when the last epoch ended (worker_seconds) */
	double quiet;        /* a boundary's time when no job comes or goes */
	double loads;        /* seconds of loads charged since the last epoch */
	int last_n, changed; /* the last epoch's jobs; one joined since */
};
/* The device was opened: the budgets. */
void worker_admit_device_opened(struct worker *w);
/* Whether a pack of n running jobs loads another now (jobs paused or
 * cancelled before they were loaded leave first). */
int worker_admit_may_join(struct worker *w, const struct admit_pace *pace,
			  int n);
/* r was loaded in seconds, beside running others (> 0) or not. */
void worker_admit_joined(struct worker *w, struct admit_pace *pace,
			 struct run *r, int running, double seconds);
/* The pack stepped an epoch in seconds. */
void worker_admit_stepped(struct worker *w, struct admit_pace *pace,
			  double seconds, int n);
/* id ran out of memory beside others: it runs alone from now on. */
void worker_admit_alone(struct worker *w, const char *id);

/* worker_serve.c */
void worker_serve(struct worker *w, struct work_request *reqs,
		  const char *job_id, struct nn_fit *fit);
int worker_serve_due(struct worker *w, struct run **runs, int n);

/* worker_fit.c: a job's fit and files, the device */
int worker_path_in(const struct work_job *job, const char *dir,
		   const char *file, char *buf, size_t len);
int worker_load_fit(struct worker *w, const char *dir,
		    const struct work_job *job, double lr,
		    struct image **target, struct nn_fit **fit, char *err,
		    size_t errlen);
int worker_save_checkpoint(struct worker *w, struct run *r);
/* worker_save_checkpoint's steps: the file made (nn_fit_checkpoint, on
 * the worker thread), written into the job's folder (any thread; sets
 * r->write_errno), then done: a failure logged, else the epoch recorded
 * and WORK_CHECKPOINT posted (worker thread). Both return rc or 0. */
int worker_checkpoint_write(struct run *r, const struct st_file *ckpt);
int worker_checkpoint_done(struct worker *w, struct run *r, int rc);
int worker_reopen_device(struct worker *w, char *err, size_t errlen);
int worker_device_fault(int rc);
/* Whether errno err, or the sentence text (NULL: none), says the process
 * or the system ran out of file descriptors (EMFILE, ENFILE). */
int worker_short_of_fds(int err, const char *text);
void worker_describe(int rc, const char *err, char *msg, size_t len);

/* What a job does at an epoch boundary, besides training on (the steps
 * of an epoch that a run alone and a pack share, worker_run.c). */
enum boundary_kind {
	BOUNDARY_NONE,   /* nothing to write */
	BOUNDARY_STOP,   /* r->flags pause, cancel or stop: a checkpoint */
	BOUNDARY_FINISH, /* done: the last checkpoint and the exports */
	BOUNDARY_DUE,    /* a checkpoint due (worker_run_checkpoint_due) */
};

/* worker_run.c: the steps of a run */
int worker_run_model_reaches(struct run *r, double target, int *reached);
enum run_outcome worker_run_ended(struct run *r, enum work_end end);
/* The epoch boundary's steps that a run alone (worker_run.c) and a pack
 * (worker_pack.c) share: what the job's flags (kept in r->flags) and its
 * epochs make of this boundary (stop, finish, or train on); a stop's end
 * as the flags say; and after a step (rc its result, m its metrics),
 * what it comes to: a failed step recovered, the target PSNR's rule
 * asked, and *due whether a checkpoint is due now. */
enum boundary_kind worker_run_kind(struct run *r, int flags);
enum run_outcome worker_run_stop(struct run *r);
enum run_outcome worker_run_after_step(struct worker *w, struct run *r,
				       const struct nn_metrics *m, int rc,
				       int *due);
enum run_outcome worker_run_recover(struct worker *w, struct run *r, int rc);
enum run_outcome worker_run_finish(struct worker *w, struct run *r);
/* worker_run_finish's steps once the checkpoint is written: the exports
 * made with the pack written (any thread, r->export set; errno says why
 * when it fails), then what that comes to (worker thread), given the
 * write's rc and errno. */
int worker_run_write_export(struct run *r);
enum run_outcome worker_run_finished(struct worker *w, struct run *r, int rc,
				     int err);
/* Whether a checkpoint is due now (every ckpt_epochs epochs, at least
 * ckpt_min_seconds apart, or ckpt_seconds seconds), and what a
 * checkpoint's rc comes to (r->write_errno says why it failed). */
int worker_run_checkpoint_due(const struct worker *w, const struct run *r);
enum run_outcome worker_run_checkpointed(struct worker *w, struct run *r,
					 int rc);
enum run_outcome worker_run_load(struct worker *w, struct run *r);
void worker_run_end(struct worker *w, struct run *r);
/* worker_run_end's two halves: WORK_ENDED posted (the job has left the
 * worker), and the run freed, which a pack may do later (its fit is in
 * the pack's last step until the pack's next exports have run). */
void worker_run_tell_end(struct worker *w, const struct run *r);
void worker_run_free(struct run *r);
void worker_run_job(struct worker *w, struct work_job *job);

/* worker_boundary.c: what a pack's jobs write at one boundary */
/* Writes what kinds[i] says for each of runs[0..n), the files by several
 * threads when there are many, and sets out[i] to what each comes to
 * (RUN_NEXT for BOUNDARY_NONE), as worker_run.c's steps would alone. */
void worker_boundary_write(struct worker *w, struct run **runs,
			   const enum boundary_kind *kinds, int n,
			   enum run_outcome *out);

/* worker_pack.c */
void worker_run_pack(struct worker *w);

#endif
