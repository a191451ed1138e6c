/*
 * watch-internal.h - what the two halves of `vkinrctl watch` share: the
 * loop that follows the jobs (watch.c) and the views that show them
 * (watch-show.c). A struct wjob is one job as the watch knows it, a struct
 * watch the whole watch; both are changed by the loop and read by the
 * views (which only mark what they printed, and when).
 */
#ifndef VKINR_CLIENT_WATCH_INTERNAL_H
#define VKINR_CLIENT_WATCH_INTERNAL_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "format.h"
#include "proto/protocol.h"
#include "watch.h"

#define SPARK_WIDTH 14 /* bars at most; fewer in a narrow terminal */
#define SPARK_MIN 6    /* ... and at least, or none */
#define REDRAW_MS 100
#define PLAIN_INTERVAL 1.0 /* seconds between two lines of one job */
#define QUIET_AFTER 2.0    /* seconds without news before asking job.get */
#define WAIT_POLL 0.5      /* how often `wait` asks */
#define LIST_POLL_OVER 8   /* past this many jobs, `wait` uses job.list */
#define MS_SMOOTHING 0.2   /* weight of a new epoch time in the average */

struct wjob {
	cJSON *id; /* as the daemon spells it */
	char idtext[64];
	char name[512]; /* as printed: escaped, so up to 4 bytes one */
	char state[16]; /* a job state, or "removed" */
	char *error;    /* why it failed, when known */
	cJSON *last;    /* the latest job object from job.get */

	int epoch, epochs; /* last finished, target */
	/* psnr: the last epoch's live figure; best: the model's, the
	 * weights an export writes (what every command calls PSNR) */
	double psnr, best, mse, lr;
	double model_psnr;  /* the exported model's, once known (NAN) */
	double run_s;       /* seconds it has run, as of run_at ... */
	double run_at;      /* ... when running (now_s), else 0 */
	double target_psnr; /* 0: none */
	double ms;          /* smoothed wall time of one epoch */
	int have_metrics;
	struct fmt_series series; /* PSNR over the run so far */
	int ended;
	int replay_left; /* replayed epochs still to come (job.subscribe) */

	double printed_at; /* plain mode: when its last line went out */
	int printed_epoch; /* ... and which epoch it showed */
	char told[16];     /* plain mode: the last state it printed */
	double asked_at;   /* when job.get was last called for it */
	double news_at;    /* when a notification about it arrived */
	int offline;       /* the daemon is gone: its state is not known */
};

struct watch {
	struct client *cl;
	enum watch_mode mode;
	FILE *out;
	struct wjob *jobs;
	int n;
	int lines;       /* lines the live view drew last time */
	int dirty;       /* the live view is out of date */
	double drawn_at; /* when the live view was last drawn */
	double news_at;  /* when the last notification arrived */
};

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int is_running_state(const struct wjob *j)
{
	return !j->ended && !strcmp(j->state, S_RUNNING);
}

/* The live view, redrawn in place (w->dirty cleared). */
void watch_draw_live(struct watch *w);
/* Plain mode: one job's latest point, its change of state, and the points
 * held back by the throttle once their time came (force: all of them). */
void watch_plain_progress(struct watch *w, struct wjob *j);
void watch_plain_state(struct watch *w, struct wjob *j);
void watch_plain_catch_up(struct watch *w, int force);
/* --json: a notification as one event object on stdout. */
void watch_json_event(const cJSON *msg);
/* The last word of each view, once every job has ended. */
void watch_show_end(struct watch *w);

#endif
