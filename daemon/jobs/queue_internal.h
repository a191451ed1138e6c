/*
 * queue_internal.h - what queue.c (the jobs in memory, their writes) and
 * queue_load.c (reading them back at start) share; nobody else includes
 * it. Loop thread only.
 */
#ifndef VKINR_QUEUE_INTERNAL_H
#define VKINR_QUEUE_INTERNAL_H

#include <stdint.h>

#include "jobs/queue.h"

/* A job record with its number and id and nothing else (NULL: no memory). */
struct job *queue_job_alloc(uint64_t number);
/* Inserts job keeping the list sorted by number (submission order). */
void queue_insert_sorted(struct queue *q, struct job *job);
/* The state of a state name, or -1. */
int queue_state_parse(const char *name);

/* The history: an epoch appended (0 or ERR_NOMEM), the epochs after epoch
 * dropped, metrics.ndjson written again from what is in memory. */
int queue_hist_push(struct job *job, const struct nn_metrics *m, double time);
void queue_hist_cut(struct job *job, int epoch);
int queue_rewrite_metrics(struct queue *q, struct job *job);

#endif
