/*
 * after.h - jobs that wait for others (job.submit's "after", `vkinrctl
 * submit --after`): such a job stays queued, held, until every job it
 * waits for is done, and fails, saying which and why, when one of them
 * fails, is cancelled or is removed before it is done.
 *
 * The list and which of it is done live in the job's after.json
 * (jobfiles.h), so that a restart keeps them; after_settle, called before
 * each round of scheduling, moves them on. Loop thread only.
 */
#ifndef VKINR_AFTER_H
#define VKINR_AFTER_H

#include "jobs/queue.h"
#include "loop/loop_state.h"

/* A job just stored with p.after set: writes after.json and logs what it
 * waits for. 0, or the error code of the write (the caller removes it). */
int after_start(struct service *svc, struct job *job);
/* Reads every job's after.json back, at start (a damaged one is logged
 * and the job fails at the next after_settle, naming it). */
void after_load(struct queue *q);
/* Releases the held jobs whose jobs are done, and fails the queued ones
 * one of whose jobs failed, was cancelled or is gone. */
void after_settle(struct service *svc);
/* dep is about to be removed: the jobs waiting for it note it done when
 * it is (so that removing a done job releases them); otherwise they fail
 * at the next after_settle. */
void after_removing(struct service *svc, const struct job *dep);

#endif
