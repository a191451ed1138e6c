/*
 * worker.h - one thread per Vulkan device: it owns the gpu_context and runs
 * one job at a time through the engine, and renders and exports in turn
 * with the jobs.
 *
 * The loop thread and a worker meet only in the worker's locked hand-off:
 * the loop hands over a job (worker_start_job), sets flags (pause, cancel,
 * stop) and queues requests (render, export); the worker posts events
 * (ready, started, progress, checkpoint, ended, reply, exited) and calls
 * the wake function given to worker_create. Nothing passed across points
 * at the loop's data: a job travels as a self-contained work_job, events
 * carry job ids, a request its number. The worker knows nothing of the
 * protocol: it answers a request with 0 or a negative error code
 * (errors.h) and a sentence, which the loop puts on the wire.
 *
 * Checkpoints go to the job's folder every WORKER_CHECKPOINT_EPOCHS epochs
 * (but not more often than every WORKER_CHECKPOINT_MIN_SECONDS of the
 * job's time: a pack of small jobs runs 100 epochs in a second or two,
 * and their checkpoints cost more than the epochs they would save) and
 * every WORKER_CHECKPOINT_SECONDS seconds, and at every pause, stop,
 * cancel and finish. The environment variables VKINRD_CHECKPOINT_EPOCHS
 * (which then counts alone) and VKINRD_CHECKPOINT_SECONDS override them.
 * On device loss or out of device memory the worker recreates its
 * gpu_context and resumes the job from its checkpoint, at most
 * WORKER_DEVICE_RETRIES times per job. When training diverges (the loss is
 * not finite) it goes back to the last checkpoint with half the learning
 * rate, at most WORKER_DIVERGE_RETRIES times, then fails the job; the rate
 * in use travels in WORK_STARTED and in every later checkpoint. A
 * checkpoint that cannot be written (a full disk) fails the job; the
 * previous one stays, and a resume continues from it.
 */
#ifndef VKINR_WORKER_H
#define VKINR_WORKER_H

#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "gpu/gpu.h"

#include "jobs/jobfiles.h"
#include "nn/fit.h"
#include "nn/render_view.h"

#define WORKER_CHECKPOINT_EPOCHS 100
#define WORKER_SERVE_SHARE 0.15 /* of a running job's time, each uid's */
#define WORKER_CHECKPOINT_SECONDS 30.0
#define WORKER_CHECKPOINT_MIN_SECONDS 10.0
#define WORKER_DEVICE_RETRIES 3
#define WORKER_DIVERGE_RETRIES 3
/* Packs (nn/pack.h): the jobs one worker trains at once at most, and the
 * share of the device's memory budget their fits may take together. */
#define WORKER_PACK_MOST 1024
#define WORKER_PACK_MEMORY 0.6
/* Packs shared between users (worker_admit): a job joins only while the
 * pack's work an epoch stays within WORKER_PACK_FAIR times each uid's
 * own in it, its own uid's included (for that, the newest jobs of the
 * uids past their share go back to the queue, each uid keeping its
 * oldest), and the loads of joiners take at most WORKER_PACK_JOIN_SHARE
 * of a running pack's time; together another user's jobs make a job's
 * epochs at most WORKER_PACK_FAIR * (1 + WORKER_PACK_JOIN_SHARE) = 4
 * times longer than its own user's do. */
#define WORKER_PACK_FAIR 3.0
#define WORKER_PACK_JOIN_SHARE (1.0 / 3)

/* A job as the worker needs it: where its files are and its config. */
struct held;
struct work_job {
	/* the worker's entry for it (set when it is handed over): its
	 * flags read at every epoch without a search */
	struct held *held;
	char id[JOB_ID_MAX];
	char dir[4096];
	struct nn_config cfg; /* used when there is no checkpoint yet */
	int has_init;
	double target_psnr; /* > 0: done once an epoch's psnr reaches it */
	/* for a pack's admission (worker_estimate): its owner, its device
	 * memory and its work an epoch (GFLOP, its fit's own cost counted
	 * as so many pixels more) */
	uid_t uid;
	uint64_t bytes;
	double work;
};

enum work_flag {
	WORK_PAUSE = 1,  /* checkpoint, free the fit, report paused */
	WORK_CANCEL = 2, /* checkpoint, report cancelled */
	WORK_STOP = 4,   /* daemon stopping: checkpoint, report queued, exit */
	/* back to the queue, that another user's joiner has its share of
	 * the pack (worker_admit): checkpoint, report queued */
	WORK_REQUEUE = 8,
};
/* The flags that make a job leave the worker at its next boundary. */
#define WORK_LEAVE (WORK_PAUSE | WORK_CANCEL | WORK_STOP | WORK_REQUEUE)

enum work_request_kind { WORK_RENDER, WORK_EXPORT };

/* A render or export; the reply fields are filled by the worker. */
struct work_request {
	struct work_request *next;
	enum work_request_kind kind;
	/* the loop's bookkeeping: the worker reads uid (users take turns)
	 * and conn (worker_drop_requests), and gives number back */
	uint64_t number; /* the loop's name for the request */
	uint64_t conn;   /* the connection that asked */
	uid_t uid;
	/* export: the job, from the running fit or from its checkpoint */
	char job_id[JOB_ID_MAX];
	char dir[4096];
	/* render: at the package's size (has_view 0), else as view says */
	struct st_file *model;
	struct image *target;
	struct nn_view view;
	int has_view;
	struct nn_view_info view_info; /* reply, has_view: what was made */
	/* reply: rc 0, or a negative error code (errors.h) and a message
	 * for people */
	int rc;
	char message[1024];
	char *model_b64; /* export */
	char *png_b64;   /* export and render */
	double psnr;
	int has_psnr;
};

void work_request_destroy(struct work_request *req);

/* How a job left the worker. */
enum work_end {
	WORK_END_DONE,   /* every epoch run (or the target reached) */
	WORK_END_FAILED, /* message says why */
	WORK_END_PAUSED, /* asked, or a write failed (message says which) */
	WORK_END_CANCELLED,
	WORK_END_QUEUED, /* back to the queue: the worker stops, or has no
			     * device */
};

enum work_event_kind {
	WORK_READY,         /* device opened (ok) or not (message) */
	WORK_STARTED,       /* job loaded at epoch (from checkpoint or 0), m.lr,
			  * the precision it runs in as message */
	WORK_PROGRESS,      /* one epoch finished: m */
	WORK_PROGRESS_MANY, /* a pack's epoch finished: many[nmany], a
			     * job's epoch each, in the pack's order */
	WORK_CHECKPOINT,    /* checkpoint written at epoch */
	WORK_ENDED,         /* job left the worker: end says how */
	WORK_REPLY,         /* req answered */
	WORK_EXITED,        /* the thread is about to return */
};

/* One job's epoch of a pack's WORK_PROGRESS_MANY. */
struct work_progress {
	char job_id[JOB_ID_MAX];
	struct nn_metrics m;
};

struct work_event {
	struct work_event *next;
	enum work_event_kind kind;
	char job_id[JOB_ID_MAX];
	struct nn_metrics m;
	int epoch;
	enum work_end end;
	double psnr; /* ENDED done: psnr of the exported model */
	int has_psnr;
	int target_reached; /* ENDED done: stopped early at target_psnr */
	char message[1024]; /* READY failed, ENDED failed: why */
	int ok;             /* READY */
	struct gpu_device_info info; /* READY ok */
	struct work_request *req;    /* REPLY */
	struct work_progress *many;  /* PROGRESS_MANY */
	int nmany;
};

/* Frees an event and what it holds (its request, its progress list). */
void work_event_destroy(struct work_event *ev);

struct worker;

/* Starts the thread; it opens the device (selector as gpu_create) and
 * posts WORK_READY. wake(wake_arg) is called, from the worker's thread,
 * whenever an event is posted (it must be safe to call from any thread,
 * as uv_async_send is). */
int worker_create(struct worker **out, int index, const char *selector,
		  int pack, void (*wake)(void *wake_arg), void *wake_arg);
/* Asks the thread to stop (WORK_STOP), joins it and frees everything.
 * destroy(NULL) does nothing. */
void worker_destroy(struct worker *w);
/* Asks the thread to stop without waiting (it posts WORK_EXITED once its
 * job is checkpointed, then releases its device). */
void worker_stop(struct worker *w);
/* Waits for a stopped worker's thread to end, until deadline
 * (CLOCK_REALTIME); 0, or ERR_BUSY when it is still releasing its device. */
int worker_join(struct worker *w, const struct timespec *deadline);

/* Fills job's uid, bytes and work from its config (cfg set) and its
 * image's size. */
void worker_estimate(struct work_job *job, uid_t uid, int width, int height);
/* The jobs worker_admit sends back to the queue (flagged WORK_REQUEUE:
 * they leave at their next boundary) so that its joiner has its share of
 * the pack: ids[n] (malloc'd; free), and why, a sentence. */
struct work_evicted {
	char (*ids)[JOB_ID_MAX];
	int n;
	char why[256];
};
/* 0 when the worker takes job into its pack now (within its memory
 * budget, fair to the uids in it and to the job's own: see
 * WORKER_PACK_FAIR; ev, when not NULL, gets the jobs that leave for
 * it, else none does); else 1 and why it waits, a sentence (a job too
 * large to share a device waits for an empty worker; one that would be
 * short of its share, for the pack to drain). Called before
 * worker_start_job. */
int worker_admit(struct worker *w, const struct work_job *job, char *why,
		 size_t len, struct work_evicted *ev);
/* Hands a job over (ownership passes); the worker must have room
 * (worker_room) and admit it (worker_admit). */
void worker_start_job(struct worker *w, struct work_job *job);
/* How many more jobs the worker takes now: 1 when idle and 0 when busy
 * without packs; with packs, its pack's free places while its device's
 * memory holds more (0 once it is full, until a job leaves). */
int worker_room(struct worker *w);
/* How many jobs it has (handed over and not yet ended). */
int worker_jobs(struct worker *w);
/* Sets WORK_PAUSE or WORK_CANCEL for the job with that id, if the
 * worker has it; wakes the worker. */
void worker_flag(struct worker *w, const char *job_id, int flags);
/* Queues a request (ownership passes; it comes back in WORK_REPLY), in
 * turn with other users' waiting ones (a uid's k-th waiting request goes
 * after every other uid's k-th). While a job runs, the worker serves at
 * most one request per epoch, the users taking turns, and spends at most
 * WORKER_SERVE_SHARE of the job's time on each user's requests: a flood
 * of renders slows the job by a bounded share and another user's render
 * waits behind at most one of the flood's. */
void worker_request(struct worker *w, struct work_request *req);
/* How many requests of uid wait in the worker's queue (not yet started). */
int worker_count_requests(struct worker *w, uid_t uid);
/* Takes back the requests of connection conn that the worker has not
 * started (their client has gone); they are destroyed here. */
void worker_drop_requests(struct worker *w, uint64_t conn);
/* Takes every posted event, oldest first. */
struct work_event *worker_take_events(struct worker *w);
/* Device memory the worker's gpu_context holds, as the worker last
 * published it (after opening the device, each epoch, each request and
 * when a job leaves it). */
uint64_t worker_bytes_in_use(struct worker *w);

#endif
