/*
 * queue.h - the jobs: their parameters, states, metrics history, order and
 * persistence in the state folder.
 *
 * Used by the loop thread only. It knows nothing of sockets, JSON-RPC or
 * Vulkan: methods.c turns requests into calls here, schedule.c hands the
 * chosen job to a worker, workevents.c feeds back what the worker
 * reports.
 *
 * On disk: STATE_DIR/jobs/ID/, one folder a job (its files: jobfiles.h),
 * and STATE_DIR/next-id the next job number.
 */
#ifndef VKINR_QUEUE_H
#define VKINR_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "jobs/jobfiles.h"
#include "proto/params.h"
#include "nn/fit.h"

enum job_state {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_PAUSED,
	JOB_DONE,
	JOB_FAILED,
	JOB_CANCELLED,
};

const char *job_state_name(enum job_state state);
/* done, failed, cancelled: the job will not run again by itself. */
int job_state_is_final(enum job_state state);

#define JOB_NAME_MAX (LIMIT_NAME_BYTES + 1) /* proto/params.h */
#define JOB_BATCH_MAX 33 /* a batch id: 1 to 32 of [A-Za-z0-9_-] */
#define JOB_SOURCE_MAX (LIMIT_SOURCE_BYTES + 1)
#define JOB_KEY_MAX (LIMIT_KEY_BYTES + 1)
/* The most jobs one job waits for (job.submit's "after"). */
#define JOB_AFTER_MAX 16

/* A job's settings: the engine's config and the queue's own fields. */
struct job_params {
	/* How it trains: the table's defaults (proto/params.h) with the
	 * options given set over them, each checked against its row at
	 * submission. What waits for the width (JOB_DEFAULT_*) holds its
	 * placeholder until the width is known: nf 0, lr NN_LR_AUTO, the
	 * recipe's warmup NN_WARMUP_AUTO; job_resolve_auto then sets them,
	 * once (at submission when the width is given or the init model
	 * has one, else when the job first runs). */
	struct nn_config cfg;
	/* The table's words (rows PARAM_FIRST_WORD on) given, bit
	 * row - PARAM_FIRST_WORD: kept in request.json, the others being
	 * the default. */
	unsigned words_given;
	char name[JOB_NAME_MAX];
	int priority; /* higher runs first; ties in submission order */
	char batch
	    [JOB_BATCH_MAX]; /* "" when none; groups the jobs of one call */
	double
	    target_psnr; /* stop as done once an epoch reaches it; 0 = none */
	char source[JOB_SOURCE_MAX]; /* the client's path of the image, "" */
	char key[JOB_KEY_MAX];       /* the client's key of image + options */
	/* What the submitter left to the daemon (JOB_DEFAULT_*): shown as
	 * "(default)", and left to it again by job.retry. */
	unsigned defaults;
	/* The jobs it waits for (job.submit's "after", loop/after.c): it
	 * stays queued until each is done, and fails when one fails. */
	char after[JOB_AFTER_MAX][JOB_ID_MAX];
	int nafter;
	char retry_of[JOB_ID_MAX]; /* the job it retries (job.retry), "" */
};

_Static_assert(PARAM_WORD_COUNT <= 32, "a bit for each word of the table");

/* What waits for the width, set once it is known: the width given, or
 * with cpu_device 0 or 1 that device's default width (-1: no device
 * chooses here, and nothing is set while the width is not known); then
 * lr and the recipe's warmup, when auto, the width's (nn_resolve_auto).
 * The daemon's one call of it. */
void job_resolve_auto(struct job_params *p, int cpu_device);

enum {
	JOB_DEFAULT_WIDTH = 1, /* the device's default width */
	JOB_DEFAULT_LR = 2,    /* nn_default_lr of the width */
	JOB_DEFAULT_WARMUP = 4 /* nn_default_warmup of the width */
};
/* The names of the JOB_DEFAULT_* bits, as job objects and request.json
 * list them ("defaults"): "width", "lr", "warmup". */
extern const char *const job_default_names[3];

struct job {
	struct job *next;
	char id[JOB_ID_MAX]; /* "1", "2", ... never reused */
	uint64_t number;
	struct job_params p;
	enum job_state state;
	uid_t uid; /* SO_PEERCRED of the submitter */
	pid_t pid;
	int img_w, img_h;
	int has_init;
	double created, started, finished; /* Unix time; 0 = not yet */
	double seconds;          /* time spent running, earlier runs only */
	double run_start;        /* Unix time the current run began */
	int reached_epoch;       /* the epoch that reached target_psnr, 0 */
	char device[256];        /* where it runs or last ran */
	char precision[8];       /* the arithmetic it runs or last ran in:
				    * "fp16" (tensor cores) or "fp32" */
	char error[512];         /* why it failed */
	struct nn_metrics *hist; /* every finished epoch, in order */
	double *hist_time; /* beside hist: the Unix time the daemon recorded
			    * each epoch (0: kept before it was recorded) */
	int nhist, caphist;
	double best_psnr;
	double export_psnr; /* psnr of model.safetensors (done jobs) */
	int has_export;
	int worker;          /* index of the worker running it, or -1 */
	int metrics_fd;      /* open while the job runs, else -1 */
	int metrics_behind;  /* metrics.ndjson lacks epochs held here */
	int save_due;        /* state.json to be written at the end of
				      the loop's drain of events (a
				      checkpoint's; queue_save clears it) */
	int write_paused;    /* paused because a write failed; the
				      daemon retries and resumes it */
	int damaged;         /* its files failed the checks at start:
				      failed for good, it may only be removed */
	unsigned after_done; /* bit i: p.after[i] is done (loop/after.c) */
	int held;            /* queued, but waiting for p.after: queue_next
				passes it by */
	double wait_since;   /* when no worker admitted it, first since it
			      was queued (schedule.c); 0: not waiting */
};

struct queue {
	/* how the daemon reaches the state folder and its jobs: by the
	 * locked folder's descriptor once queue_reach_locked has run, else
	 * by path; shown_*: the paths, for people */
	char *state_dir;
	char *jobs_dir;
	char *shown_state_dir, *shown_jobs_dir;
	struct job *head; /* in submission order */
	uint64_t next_number;
	/* next-id is behind next_number: written at the end of the group
	 * commit that stored the jobs (queue_save_next_number), once for
	 * all of them */
	int next_number_dirty;
	int count;
	/* the jobs by id, for queue_find: open addressing, a power of two
	 * slots, at most half of them used (the loop looks a job up at
	 * every epoch of every job) */
	struct job **index;
	size_t index_slots;
	struct share *share; /* each uid's device time lately (share.c) */
};

/* Creates the folders (0700) if missing and reloads every job; jobs that
 * were queued or running come back queued. */
int queue_create(struct queue **out, const char *state_dir, char *err,
		 size_t errlen);
void queue_destroy(struct queue *q);

/* Writes STATE/next-id if it is behind: before the sync that makes a
 * group of new jobs durable, and so before their ids are answered. */
void queue_save_next_number(struct queue *q);
/* Stores a new queued job: its folder, request, image and init model
 * (inside a batch of the caller's, next-id waits for
 * queue_save_next_number). */
int queue_submit(struct queue *q, const struct job_params *p, uid_t uid,
		 pid_t pid, const void *png, size_t png_size, int img_w,
		 int img_h, const void *init, size_t init_size,
		 struct job **out, char *err, size_t errlen);

/* Whether a batch id is well formed (1 to 32 of [A-Za-z0-9_-]). */
int job_batch_valid(const char *batch);
/* Adds the parameters kept as given, when given (source, key and the
 * engine's options), and the whole recipe, each key at the top level, to
 * a job's JSON: request.json and job objects. */
void job_params_add_given(cJSON *o, const struct job_params *p);
/* Sets each of the recipe's keys that request.json has at its top level
 * over r, checked against the table (a number as one, never through
 * text); 0, or ERR_INVALID with a sentence in err. */
int job_recipe_read(const cJSON *o, struct nn_recipe *r, char *err,
		    size_t errlen);
/* Time spent running so far, the current run included. */
double job_run_seconds(const struct job *job);

/*
 * From now on every file of the state folder, the loop's and the
 * workers' (queue_job_path), is reached through dir_fd, the folder the
 * daemon locked (as /proc/self/fd/N/...), not by its path: moved away,
 * with another folder put at its path, it is still the one written to,
 * however long the daemon takes to notice and stop. 0, or -1 (kept by
 * path) where /proc does not name dir_fd's folder.
 */
int queue_reach_locked(struct queue *q, int dir_fd);
/* A job file's path as people know it (for messages). */
int queue_job_shown(const struct queue *q, const struct job *job,
		    const char *file, char *buf, size_t len);
/* text with the locked folder's name (queue_reach_locked) put back as
 * its path, in place (len: text's room). */
void queue_shown_text(const struct queue *q, char *text, size_t len);

struct job *queue_find(struct queue *q, const char *id);
/* The queued job to run next, fair between users (share.h), or NULL; a
 * held job (waiting for others) is passed by. */
struct job *queue_next(struct queue *q);
/* The same, passing by the jobs of the nskip uids in skip. */
struct job *queue_next_except(struct queue *q, const uid_t *skip, int nskip);
int queue_count_uid(const struct queue *q, uid_t uid);
/* Whether a job of a uid other than uid has batch id batch; its owner in
 * *owner. */
int queue_batch_foreign(const struct queue *q, const char *batch, uid_t uid,
			uid_t *owner);
int queue_count_state(const struct queue *q, enum job_state state);

/* Records a change of state the state machine made (jobstate.c, its
 * only caller): sets times, device time, writes state.json. error: why it failed,
 * or why it was paused (a failed write), else NULL. */
int queue_set_state(struct queue *q, struct job *job, enum job_state state,
		    const char *error);
/* Rewrites request.json: after the settings left to the daemon (width,
 * lr, warmup) were chosen when the job started, so that a restart keeps
 * them. */
int queue_save_request(struct queue *q, struct job *job);
/* Rewrites state.json (after changing device, export_psnr...). */
int queue_save(struct queue *q, struct job *job);

/* Appends one epoch (to memory and metrics.ndjson), stamped with the wall
 * clock's time now. An epoch at or below
 * the last one first drops the history from there (a job that resumed from
 * an older checkpoint repeats those epochs). When the file cannot take it
 * (ERR_NO_SPACE, ERR_IO; errno says why) the epoch is kept in memory, the
 * file is left without a torn line, and nothing more is appended until
 * queue_write_back has rewritten it whole: the history has no gap. */
int queue_add_metrics(struct queue *q, struct job *job,
		      const struct nn_metrics *m);
/* Rewrites what the disk lacks (metrics.ndjson, state.json). */
int queue_write_back(struct queue *q, struct job *job);
/* Keeps epochs 1..epoch of the history, on disk too. */
int queue_truncate(struct queue *q, struct job *job, int epoch);

/* Deletes the job and its folder. */
int queue_remove(struct queue *q, struct job *job);

/* STATE_DIR/jobs/ID/FILE into buf. */
int queue_job_path(const struct queue *q, const struct job *job,
		   const char *file, char *buf, size_t len);

static inline int job_epoch(const struct job *job)
{
	return job->nhist ? job->hist[job->nhist - 1].epoch : 0;
}

#endif
