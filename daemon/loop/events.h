/*
 * events.h - what happened to each job, for the operator and the owner.
 *
 * events_note writes one log line ("job ID: TEXT", log.h) and appends the
 * same TEXT, with the time, to the job's events.ndjson: one JSON object
 * per line, {"time": UNIX_SECONDS, "text": "..."}, one write(2) per line
 * on a file opened O_APPEND without following a symbolic link. The file
 * lives in the job's folder, so it survives a restart and goes with
 * job.remove. events_read gives them back for job.logs.
 *
 * Loop thread only.
 */
#ifndef VKINR_EVENTS_H
#define VKINR_EVENTS_H

#include <cjson/cJSON.h>

#include "log.h"
#include "jobs/queue.h"

/* Logs "job ID: TEXT" at level and keeps TEXT in the job's events; a
 * failed append is logged (as a warning) and otherwise ignored: the
 * events are a record, never a reason to stop a job. */
void events_note(struct queue *q, const struct job *job, enum log_level level,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The job's events, oldest first, as a new JSON array of {time, text}
 * (the newest EVENTS_READ_MAX bytes of them; a torn line is skipped).
 * A job without events gives an empty array. 0 or ERR_IO, ERR_NOMEM. */
int events_read(struct queue *q, const struct job *job, cJSON **out);

#endif
