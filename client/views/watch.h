/*
 * watch.h - following jobs until they end: the engine behind `watch`,
 * `wait`, and `submit --watch / --wait`.
 */
#ifndef VKINR_CLIENT_WATCH_H
#define VKINR_CLIENT_WATCH_H

#include <stdio.h>

#include <cjson/cJSON.h>

struct client;

enum watch_mode {
	WATCH_LIVE,   /* a terminal: one line per job, redrawn in place */
	WATCH_PLAIN,  /* not a terminal: appended lines, throttled per job */
	WATCH_JSON,   /* NDJSON of every notification, on stdout */
	WATCH_QUIET,  /* wait: no progress; a summary when all have ended */
	WATCH_SILENT, /* wait without the summary (submit -q --wait) */
};

/* LIVE or PLAIN for out (by isatty and $TERM), or JSON with --json. */
enum watch_mode watch_pick_mode(const struct client *cl, FILE *out);

/*
 * Follows the jobs (a cJSON array of ids) until every one has ended,
 * showing them on out as mode says. Returns the exit status: 0 when all
 * ended done, 1 when any failed, was cancelled or disappeared, 3 or 69
 * when the daemon refused or went away (already reported).
 */
int watch_jobs(struct client *cl, const cJSON *ids, enum watch_mode mode,
	       FILE *out);

#endif
