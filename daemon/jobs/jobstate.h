/*
 * jobstate.h - a job's state machine, in one table: what each cause
 * (a client's pause, resume, cancel, retry or remove; the scheduler's
 * start; the worker letting the job go; the daemon's write retries; a
 * job it waits for letting it down; a restart) does to a job in each
 * state.
 *
 * The loop asks jobstate_step what a cause would do and, for a change,
 * makes it with jobstate_apply; queue_set_state (queue.h) then records
 * it (times, device time, state.json) and is called from here alone.
 * What the loop says about a change (events, notifications, answers)
 * stays the loop's. Loop thread only.
 */
#ifndef VKINR_JOBSTATE_H
#define VKINR_JOBSTATE_H

#include "jobs/queue.h"

enum jobstate_cause {
	JOBSTATE_PAUSE,  /* job.pause */
	JOBSTATE_RESUME, /* job.resume */
	JOBSTATE_CANCEL, /* job.cancel */
	JOBSTATE_RETRY,  /* job.retry: a new job runs it again; it stays */
	JOBSTATE_REMOVE, /* job.remove: it goes, state and all */
	JOBSTATE_START,  /* handed to a worker (loop/schedule.c) */
	/* its worker let it go (loop/workevents.c), from whatever state */
	JOBSTATE_ENDED_DONE,
	JOBSTATE_ENDED_FAILED,
	JOBSTATE_ENDED_PAUSED,
	JOBSTATE_ENDED_CANCELLED,
	JOBSTATE_ENDED_QUEUED,
	/* paused by a failed write: its files written back, or not */
	JOBSTATE_WRITTEN_BACK,
	JOBSTATE_WRITE_FAILED,
	JOBSTATE_LET_DOWN,  /* a job it waits for (--after) will never be
			       done, or its list of them is damaged */
	JOBSTATE_RESTARTED, /* read back at the daemon's start */
	JOBSTATE_CAUSE_COUNT
};

enum jobstate_kind {
	JOBSTATE_REFUSED, /* not from this state: the caller says why */
	JOBSTATE_STAYS,   /* allowed, and the state stays as it is */
	JOBSTATE_TO,      /* the job takes state `to` */
	JOBSTATE_WORKER,  /* running: its worker is told (flag), and the
			     change comes when the worker lets it go */
};

/* What a running job's worker is told (JOBSTATE_WORKER). */
enum jobstate_flag { JOBSTATE_FLAG_PAUSE, JOBSTATE_FLAG_CANCEL };

struct jobstate_step {
	enum jobstate_kind kind;
	enum job_state to;       /* JOBSTATE_TO's */
	enum jobstate_flag flag; /* JOBSTATE_WORKER's */
};

/* What cause does to a job in state from (the table). */
struct jobstate_step jobstate_step(enum job_state from,
				   enum jobstate_cause cause);
/* The step for job and, when it is a change (JOBSTATE_TO), the change
 * made and recorded (queue_set_state, with error: why it failed or was
 * paused, else NULL). */
struct jobstate_step jobstate_apply(struct queue *q, struct job *job,
				    enum jobstate_cause cause,
				    const char *error);

#endif
