/*
 * watch-internal.h - the two files of `vkinrctl watch`, one module: the
 * loop that follows the jobs (watch.c) and the views that show them
 * (watch-show.c). The arrow runs one way: the loop tells the views what
 * happened through the watch_show_* calls below, and the views call
 * nothing of the loop. A struct wjob is one job as the watch knows it, a
 * struct watch the whole watch; the loop changes their facts, the views
 * read them and keep their own marks (what they printed, and when), which
 * the loop never touches.
 */
#ifndef VKINR_CLIENT_WATCH_INTERNAL_H
#define VKINR_CLIENT_WATCH_INTERNAL_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/format.h"
#include "proto/protocol.h"
#include "views/watch.h"

#define SPARK_WIDTH 14 /* bars at most; fewer in a narrow terminal */
#define SPARK_MIN 6    /* ... and at least, or none */
#define REDRAW_MS 100
#define PLAIN_INTERVAL 1.0 /* seconds between two lines of one job */
#define QUIET_AFTER 2.0    /* seconds without news before asking job.get */
#define WAIT_POLL 0.5      /* how often `wait` asks about one job */
#define WAIT_LIST_POLL 0.2 /* ... and with one job.list for many */
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

	double asked_at; /* when job.get was last called for it */
	double news_at;  /* when a notification about it arrived */
	int offline;     /* the daemon is gone: its state is not known */

	/* the views' own */
	double printed_at; /* plain mode: when its last line went out */
	int printed_epoch; /* ... and which epoch it showed */
	char told[16];     /* plain mode: the last state it printed */
};

struct watch {
	struct client *cl;
	enum watch_mode mode;
	FILE *out;
	struct wjob *jobs;
	int n;
	double news_at; /* when the last notification arrived */

	/* the views' own */
	int lines;       /* lines the live view drew last time */
	int dirty;       /* the live view is out of date */
	double drawn_at; /* when the live view was last drawn */
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

/* What the loop tells the views (watch-show.c). A new job to show; the
 * start of following (plain mode: each job's state); a notification as
 * it came (--json prints it); a job's new point, or its state, perhaps
 * changed (plain mode prints it, throttled; the live view is marked out of
 * date); anything else changed; the daemon gone (the live view redrawn
 * at once); a turn of the loop (the live view redrawn when due, points
 * the throttle held back printed). */
void watch_show_init_job(struct wjob *j);
void watch_show_start(struct watch *w);
void watch_show_notification(struct watch *w, const cJSON *msg);
void watch_show_progress(struct watch *w, struct wjob *j);
void watch_show_state(struct watch *w, struct wjob *j);
void watch_show_changed(struct watch *w);
void watch_show_redraw(struct watch *w);
void watch_show_tick(struct watch *w);
/* How long the loop may wait for news (wait seconds at most) before a
 * view has something due. */
double watch_show_wait(const struct watch *w, double wait);
/* The last word of each view, once every job has ended. */
void watch_show_end(struct watch *w);

#endif
