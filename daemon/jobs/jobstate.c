/*
 * jobstate.c - a job's state machine: the table of what each cause does
 * from each state, and the one call that makes a change.
 *
 * A cell left out of the table is a refusal. The worker's end wins from
 * every state (the job is running then: nothing else moves a running
 * job), and so does nothing else: a client's change of a running job
 * goes through its worker (JOBSTATE_WORKER).
 */
#include "jobs/jobstate.h"

#define TO(s)                                                                  \
	{                                                                      \
		JOBSTATE_TO, (s), 0                                            \
	}
#define STAYS                                                                  \
	{                                                                      \
		JOBSTATE_STAYS, 0, 0                                           \
	}
#define WORKER(f)                                                              \
	{                                                                      \
		JOBSTATE_WORKER, JOB_RUNNING, (f)                              \
	}
/* the worker's end: the same state from wherever the job is */
#define ENDED(s)                                                               \
	{                                                                      \
		[JOB_QUEUED] = TO(s), [JOB_RUNNING] = TO(s),                   \
		[JOB_PAUSED] = TO(s), [JOB_DONE] = TO(s),                      \
		[JOB_FAILED] = TO(s), [JOB_CANCELLED] = TO(s),                 \
	}

static const struct jobstate_step
    table[JOBSTATE_CAUSE_COUNT][JOB_CANCELLED + 1] = {
	    [JOBSTATE_PAUSE] =
		{
		    [JOB_QUEUED] = TO(JOB_PAUSED),
		    [JOB_RUNNING] = WORKER(JOBSTATE_FLAG_PAUSE),
		    [JOB_PAUSED] = STAYS,
		},
	    [JOBSTATE_RESUME] =
		{
		    [JOB_PAUSED] = TO(JOB_QUEUED),
		    [JOB_FAILED] = TO(JOB_QUEUED),
		    [JOB_QUEUED] = STAYS,
		    [JOB_RUNNING] = STAYS,
		},
	    [JOBSTATE_CANCEL] =
		{
		    [JOB_RUNNING] = WORKER(JOBSTATE_FLAG_CANCEL),
		    [JOB_QUEUED] = TO(JOB_CANCELLED),
		    [JOB_PAUSED] = TO(JOB_CANCELLED),
		    [JOB_CANCELLED] = STAYS, /* as pausing a paused job */
		},
	    [JOBSTATE_RETRY] =
		{
		    [JOB_FAILED] = STAYS,
		    [JOB_CANCELLED] = STAYS,
		},
	    [JOBSTATE_REMOVE] =
		{
		    [JOB_QUEUED] = STAYS,
		    [JOB_PAUSED] = STAYS,
		    [JOB_DONE] = STAYS,
		    [JOB_FAILED] = STAYS,
		    [JOB_CANCELLED] = STAYS,
		},
	    [JOBSTATE_START] = { [JOB_QUEUED] = TO(JOB_RUNNING) },
	    [JOBSTATE_ENDED_DONE] = ENDED(JOB_DONE),
	    [JOBSTATE_ENDED_FAILED] = ENDED(JOB_FAILED),
	    [JOBSTATE_ENDED_PAUSED] = ENDED(JOB_PAUSED),
	    [JOBSTATE_ENDED_CANCELLED] = ENDED(JOB_CANCELLED),
	    [JOBSTATE_ENDED_QUEUED] = ENDED(JOB_QUEUED),
	    [JOBSTATE_WRITTEN_BACK] = { [JOB_PAUSED] = TO(JOB_QUEUED) },
	    [JOBSTATE_WRITE_FAILED] = { [JOB_PAUSED] = TO(JOB_FAILED) },
	    [JOBSTATE_LET_DOWN] =
		{
		    [JOB_QUEUED] = TO(JOB_FAILED),
		    [JOB_PAUSED] = TO(JOB_FAILED),
		},
	    /* a run cut short by the stop (or a kill) runs again */
	    [JOBSTATE_RESTARTED] = { [JOB_RUNNING] = TO(JOB_QUEUED) },
};

struct jobstate_step jobstate_step(enum job_state from,
				   enum jobstate_cause cause)
{
	struct jobstate_step refused = { JOBSTATE_REFUSED, 0, 0 };
	if ((unsigned)cause >= JOBSTATE_CAUSE_COUNT ||
	    (unsigned)from > JOB_CANCELLED)
		return refused;
	return table[cause][from]; /* a cell left out: JOBSTATE_REFUSED */
}

struct jobstate_step jobstate_apply(struct queue *q, struct job *job,
				    enum jobstate_cause cause,
				    const char *error)
{
	struct jobstate_step step = jobstate_step(job->state, cause);
	if (step.kind == JOBSTATE_TO)
		queue_set_state(q, job, step.to, error);
	return step;
}
