/*
 * loop_state.h - what the loop thread owns, shared by daemon.c (wiring),
 * workevents.c (worker events), methods.c (requests), subs.c (who follows a job),
 * schedule.c (jobs to workers) and views.c (the answers' JSON).
 *
 * Loop thread only; workers see none of it.
 */
#ifndef VKINR_LOOP_STATE_H
#define VKINR_LOOP_STATE_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "options.h"
#include "jobs/queue.h"
#include "loop/server.h"
#include "worker/worker.h"

/* The loop's view of one worker. */
struct worker_slot {
	struct worker *w;
	int ready; /* WORK_READY arrived */
	int ok;    /* ... and the device opened */
	int exited;
	int is_cpu;
	char device[256];
	char type[16];
	char error[1024];
	char job[JOB_ID_MAX]; /* the job it runs, "" when idle */
};

/* The lists below are their modules' own: subs.c walks the subscriptions
 * and the waiting requests, replies.c the pending replies. */
struct subscription;
struct state_waiter;
struct pending_reply;
struct pending;

struct service {
	uv_loop_t *loop;
	const struct daemon_options *opt;
	struct server *server;
	struct queue *queue;
	struct worker_slot slots[DAEMON_MAX_DEVICES];
	int nslots;
	uv_async_t wake;
	uv_signal_t signals[8]; /* the ones the daemon handles (daemon.c) */
	uv_timer_t stop_timer;
	uv_timer_t
	    retry_timer; /* jobs paused by a failed write (workevents.c) */
	int stopping;
	int notified_ready; /* READY=1 sent to systemd (notify.c) */
	double started;     /* Unix time */
	uid_t uid;          /* the daemon's own */
	struct subscription *subs;
	struct state_waiter *waiters;
	struct pending_reply *replies;
	struct pending *device_waiters; /* waiting for a device (devwait.c) */
	uv_timer_t device_timer;        /* ... the first of their deadlines */
	int device_timer_on;
	uint64_t last_request;     /* the number of the last work request */
	struct rpc_batch *batches; /* batches being answered (methods.c) */
	/* the turn's group commit (commit.c) */
	uv_check_t commit_check;
	uv_idle_t commit_idle;
	int commit_open;
	int commit_ready;  /* commit_init done */
	int commit_jobs;   /* jobs stored in the open group */
	int commit_urgent; /* it holds an answer a client waits on */
	/* the jobs whose checkpoint came in the events being drained: their
	 * state.json is written once the drain ends, unless a state change
	 * of the same drain wrote it (a job's last checkpoint and its end
	 * mostly come together: one write, not two) */
	char (*save_due)[JOB_ID_MAX];
	int nsave_due, capsave_due;
	/* the queued job no worker admits now, and why, as last said
	 * (schedule.c: said once, not at every round) */
	char waiting_job[JOB_ID_MAX];
	char waiting_why[64];
};

#endif
