/*
 * dashboard.h - what the parts of `vkinrctl dashboard` share: the store of
 * jobs and their metrics that the daemon link fills (dashboard-link.c),
 * the stream of events the page follows, the HTTP server that serves the
 * page and its API (dashboard-http.c), and the page's files, embedded at
 * build time (the generated web assets).
 *
 * Threads: the link runs in its own thread and is the only writer of the
 * store; the HTTP server (libmicrohttpd, a thread per connection) reads it.
 * One mutex guards the store and the event ring; a condition variable
 * wakes the event streams when an event is added.
 */
#ifndef VKINR_CLIENT_DASHBOARD_H
#define VKINR_CLIENT_DASHBOARD_H

#include <pthread.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The events the ring keeps for streams that fall behind; one further
 * behind is sent a new snapshot instead. */
#define DASH_RING_EVENTS 4096
/* The most jobs the dashboard follows (the daemon's limit on the jobs one
 * connection may follow, LIMIT_JOBS_PER_UID). */
#define DASH_MAX_JOBS 1000
/* How often the link asks for the job list (new jobs, states). */
#define DASH_LIST_MS 2000
/* The most bytes of body any request may carry. */
#define DASH_MAX_BODY 4096

/* One epoch of a job, as job.progress gave it. */
struct dash_point {
	int epoch;
	double psnr; /* the model's (psnr_best; psnr before a daemon had it) */
	double live; /* the epoch's own psnr */
	double mse, lr, ms;
	double t;    /* training seconds up to this epoch (the ms summed) */
	double time; /* the wall clock's when the daemon recorded the epoch
		      * (Unix seconds); NAN for an epoch kept before that */
};

struct dash_job {
	char id[32];
	cJSON *obj; /* the job object, as job.list last gave it, updated */
	struct dash_point *pts;
	int n, cap;
	int subscribed; /* on the link's current connection */
	int seen;       /* in the last job.list */
};

struct dash_event {
	unsigned long long seq;
	char *text; /* a whole SSE frame, "event: ...\ndata: ...\n\n" */
};

struct dash {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int stopping;

	/* the store (under lock) */
	struct dash_job *jobs;
	int njobs, capjobs;
	int connected;  /* the link holds a connection to the daemon */
	char why[256];  /* why it does not, in words */
	unsigned uid;   /* this process's, the only one the server serves */
	char *socket;   /* the daemon's socket */
	int timeout_ms; /* for the calls of the link and of the server */

	/* the events (under lock): ring[seq % DASH_RING_EVENTS] */
	struct dash_event ring[DASH_RING_EVENTS];
	unsigned long long next_seq; /* the seq the next event gets */

	pthread_t link_thread;
	int link_started;

	char token[64]; /* hex of random bytes */
	int port;
	struct MHD_Daemon *http;
};

/* ---- the store and the events (dashboard-link.c) ---- */

int dash_init(struct dash *d, const char *socket, int timeout_ms);
/* Stops the link (when started) and frees everything. */
void dash_finish(struct dash *d);
/* Starts the thread that follows the daemon. 0 or a negative code. */
int dash_link_start(struct dash *d);

/* With d->lock held: the job of that id, or NULL. */
struct dash_job *dash_find(struct dash *d, const char *id);
/* With d->lock held: a snapshot as SSE frames, malloc'd ("reset": the
 * daemon's state and every job object; then one "history" a job), and
 * the seq of the first event after it in *next. */
char *dash_snapshot(struct dash *d, unsigned long long *next);
/* With d->lock held: {"connected":..,"jobs":[...]}, printed. */
char *dash_jobs_json(struct dash *d);
/* With d->lock held: a job's history as arrays, printed; NULL if none. */
char *dash_history_json(struct dash *d, const char *id);

/* ---- the page (the generated assets) ---- */

struct dash_asset {
	const char *path; /* "/", "/dashboard.js", ... */
	const char *type; /* Content-Type */
	const unsigned char *data;
	size_t size;
};
/* Ended by an entry whose path is NULL. */
extern const struct dash_asset dash_assets[];

/* ---- the server (dashboard-http.c) ---- */

/* Makes the token, binds 127.0.0.1:port (0: any free port) and serves;
 * d->port is then the port. 0, or -1 with why (whylen) said. */
int dash_http_start(struct dash *d, int port, char *why, size_t whylen);
void dash_http_stop(struct dash *d);
/* Whether given is the token; compares in time that does not depend on
 * where they differ. */
int dash_token_equal(const char *given, const char *token);

#endif
