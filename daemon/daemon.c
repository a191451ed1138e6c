/*
 * daemon.c - daemon_run: the loop thread's wiring.
 *
 * It checks and locks the state folder (statedir.c: nobody else may
 * write there, and one daemon alone uses it), opens the state (queue), the
 * socket (server, whose callbacks are the
 * methods) and one worker per device selector, then runs the libuv loop.
 * Workers wake the loop through one uv_async_t; on_wake drains every
 * worker's events in order, each one turned into queue changes and
 * notifications by loop/workevents.c; schedule_jobs (schedule.c) then
 * hands the best queued job to each idle worker whose device is open.
 *
 * Signals (handle_signals): SIGHUP opens the log file again, SIGUSR1 and
 * SIGUSR2 log a status line, SIGTSTP is ignored (with a line), and
 * stopping is SIGTERM, SIGINT or SIGQUIT: the socket stops accepting, every worker is
 * told to stop (a running job checkpoints at its next epoch boundary and
 * goes back to queued), and once every worker has exited the loop's
 * handles are closed and daemon_run returns. If a worker has not exited
 * after DAEMON_STOP_SECONDS, or a second signal comes, the process exits
 * at once: every job is safe on disk at its last checkpoint anyway.
 *
 * The state folder is watched (state_watch, every DAEMON_WATCH_MS and at
 * each batch of worker events): when its path no longer names the folder
 * locked at start (moved or removed, another made at its path), the daemon
 * exits at once with an error, writing nothing more by that path.
 */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/errors.h"
#include "loop/after.h"
#include "loop/commit.h"
#include "loop/devwait.h"
#include "loop/events.h"
#include "log.h"
#include "loop/methods.h"
#include "loop/notify.h"
#include "proto/protocol.h"
#include "loop/replies.h"
#include "loop/schedule.h"
#include "loop/loop_state.h"
#include "jobs/statedir.h"
#include "loop/subs.h"
#include "loop/workevents.h"

#define DAEMON_STOP_SECONDS 10
#define DAEMON_RELEASE_SECONDS 1
#define DAEMON_WATCH_MS 2000

/* What daemon_run locked, watched while the loop runs. */
static struct {
	uv_timer_t timer;
	const struct statedir_lock *lock;
} state_watch;

static const struct server_ops server_ops = {
	.line = methods_line,
	.closed = methods_closed,
	.drained = methods_drained,
	.busy = methods_busy,
	.sending = methods_sending,
	.resumed = methods_resumed,
};

static void finish_stop(struct service *svc);

/* A worker's wake function: called from its thread, as uv_async_send
 * may be. */
static void wake_loop(void *async) { uv_async_send(async); }

/*
 * The state path names another folder than the one locked: moved or
 * removed, with perhaps a new one at its path that a second daemon may
 * have locked by now. Whatever is written by that path from now on, even
 * a stop's checkpoints, would land in a folder that is not ours, so the
 * process exits at once, as after DAEMON_STOP_SECONDS: every job is
 * durable in the folder that was moved, at its last checkpoint, and
 * resumes from there under a daemon started on it.
 */
static void state_check(struct service *svc)
{
	char err[1024];
	if (!state_watch.lock ||
	    !statedir_same(svc->opt->state_dir, state_watch.lock, err,
			   sizeof(err)))
		return;
	log_error("%s; exiting now, writing nothing more there (the jobs "
		  "stay where the folder went, each at its last checkpoint: "
		  "start vkinrd with that folder's new path as --state-dir to "
		  "go on with them)",
		  err);
	notify_send("STOPPING=1\nSTATUS=the state folder was moved away");
	fflush(stderr);
	_exit(1);
}

static void on_state_watch(uv_timer_t *t) { state_check(t->data); }

/*
 * The workers' events, drained. The files the events write (a job's
 * state.json at each change and checkpoint) are made durable together, at
 * the end of the loop's turn, by one sync of the state's file system
 * (commit.h), before their news goes out: a pack's thousand jobs ending at
 * one epoch cost one sync, not four thousand fsyncs.
 */
static void on_wake(uv_async_t *async)
{
	struct service *svc = async->data;
	state_check(svc); /* before the events' writes */
	commit_open(svc);
	for (int i = 0; i < svc->nslots; i++) {
		if (!svc->slots[i].w)
			continue;
		struct work_event *ev = worker_take_events(svc->slots[i].w);
		while (ev) {
			struct work_event *next = ev->next;
			workevents_handle(svc, i, ev);
			work_event_destroy(ev);
			ev = next;
		}
	}
	workevents_saved(svc); /* in the same sync as the rest */
	if (svc->stopping) {
		int running = 0;
		for (int i = 0; i < svc->nslots; i++)
			running += !svc->slots[i].exited;
		if (!running)
			finish_stop(svc);
	} else {
		schedule_jobs(svc); /* its state changes in the same sync */
	}
}

/* ---------------------------------------------------------- stopping */

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void finish_stop(struct service *svc)
{
	if (svc->stopping == 2)
		return;
	svc->stopping = 2;
	log_notice("stopped");
	subs_finish(svc);
	replies_finish(svc);
	devwait_finish(svc);
	commit_finish(svc);
	server_close(svc->server);
	svc->server = NULL;
	close_handle((uv_handle_t *)&svc->wake);
	for (size_t i = 0; i < sizeof(svc->signals) / sizeof(svc->signals[0]);
	     i++)
		if (svc->signals[i].data)
			close_handle((uv_handle_t *)&svc->signals[i]);
	close_handle((uv_handle_t *)&svc->stop_timer);
	close_handle((uv_handle_t *)&svc->retry_timer);
	close_handle((uv_handle_t *)&state_watch.timer);
}

static void on_stop_timeout(uv_timer_t *t)
{
	log_warn("workers did not stop within %d s; exiting now (jobs resume "
		 "from their last checkpoint)",
		 DAEMON_STOP_SECONDS);
	fflush(stderr);
	_exit(0);
}

static void on_stop_signal(uv_signal_t *sig, int signum)
{
	struct service *svc = sig->data;
	if (svc->stopping) {
		log_warn("second signal (%s); exiting now", strsignal(signum));
		fflush(stderr);
		_exit(0);
	}
	log_notice("signal %d (%s): checkpointing running jobs and stopping",
		   signum, strsignal(signum));
	svc->stopping = 1;
	devwait_wake(svc); /* what waits for a device is refused */
	notify_send("STOPPING=1\nSTATUS=checkpointing running jobs");
	server_stop_listening(svc->server);
	for (int i = 0; i < svc->nslots; i++)
		worker_stop(svc->slots[i].w);
	uv_timer_start(&svc->stop_timer, on_stop_timeout,
		       DAEMON_STOP_SECONDS * 1000, 0);
	uv_async_send(&svc->wake); /* finish now if no worker runs */
}

/* One line with what daemon.status says in short: jobs by state, what
 * each worker does, connections. */
static void log_status(struct service *svc, const char *why)
{
	char workers[512] = "";
	size_t n = 0;
	for (int i = 0; i < svc->nslots && n < sizeof(workers); i++) {
		const struct worker_slot *s = &svc->slots[i];
		n += (size_t)snprintf(workers + n, sizeof(workers) - n,
				      "%s%d %s%s", i ? ", " : "", i,
				      !s->ok      ? "unavailable"
				      : s->job[0] ? "running job "
						  : "idle",
				      s->ok ? s->job : "");
	}
	log_notice("%s: %d jobs (%d queued, %d running, %d paused, %d done, "
		   "%d failed, %d cancelled); workers: %s; %d connections, "
		   "%d subscriptions%s",
		   why, svc->queue->count,
		   queue_count_state(svc->queue, JOB_QUEUED),
		   queue_count_state(svc->queue, JOB_RUNNING),
		   queue_count_state(svc->queue, JOB_PAUSED),
		   queue_count_state(svc->queue, JOB_DONE),
		   queue_count_state(svc->queue, JOB_FAILED),
		   queue_count_state(svc->queue, JOB_CANCELLED), workers,
		   server_connection_count(svc->server), subs_count(svc, 0),
		   svc->stopping ? "; stopping" : "");
}

/* SIGHUP, as daemons take it: the log file opened again (logrotate moved
 * it); there is nothing else to reload, options and environment being
 * read once at start. Never a stop. */
static void on_hangup(uv_signal_t *sig, int signum)
{
	struct service *svc = sig->data;
	(void)signum;
	if (svc->notified_ready)
		notify_send("RELOADING=1");
	int rc = log_reopen();
	if (rc < 0)
		log_error("SIGHUP: cannot open the log file again (%s); "
			  "still writing to the old one",
			  log_open_error());
	else
		log_notice("SIGHUP: %s; nothing else to reload (options and "
			   "environment are read at start)",
			   rc ? "log file opened again"
			      : "no log file to reopen");
	log_status(svc, "SIGHUP");
	if (svc->notified_ready)
		notify_send("READY=1");
}

/* SIGUSR1, SIGUSR2: a status line in the log; nothing changes. */
static void on_status_signal(uv_signal_t *sig, int signum)
{
	log_status(sig->data, strsignal(signum));
}

/* SIGTSTP (^Z on the terminal it runs in): a daemon others use is not
 * suspended by a keystroke; SIGSTOP still stops it. */
static void on_terminal_stop(uv_signal_t *sig, int signum)
{
	(void)sig;
	log_notice("signal %d (%s) ignored: other users' clients would hang; "
		   "SIGTERM stops the daemon",
		   signum, strsignal(signum));
}

static void handle_signals(struct service *svc)
{
	static const struct {
		int signum;
		uv_signal_cb cb;
	} table[] = {
		{ SIGTERM, on_stop_signal },   { SIGINT, on_stop_signal },
		{ SIGQUIT, on_stop_signal },   { SIGHUP, on_hangup },
		{ SIGUSR1, on_status_signal }, { SIGUSR2, on_status_signal },
		{ SIGTSTP, on_terminal_stop },
	};
	_Static_assert(sizeof(table) / sizeof(table[0]) <=
			   sizeof(svc->signals) / sizeof(svc->signals[0]),
		       "one uv_signal_t per handled signal");
	/* no handler to run: a file over RLIMIT_FSIZE is a write error
	 * (EFBIG) like a full disk, and reading or writing the terminal
	 * from the background never stops the daemon (SIGPIPE is ignored
	 * from the start) */
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		uv_signal_init(svc->loop, &svc->signals[i]);
		svc->signals[i].data = svc;
		uv_signal_start(&svc->signals[i], table[i].cb, table[i].signum);
	}
}

/* Joins the stopped workers, waiting DAEMON_RELEASE_SECONDS at most for
 * them to release their devices: every job is on disk by now, so a driver
 * slow to tear down does not hold the stop up; the process exits and the
 * kernel releases what is left. */
static void release_devices(struct service *svc)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += DAEMON_RELEASE_SECONDS;
	for (int i = 0; i < svc->nslots; i++) {
		if (worker_join(svc->slots[i].w, &deadline) == 0) {
			worker_destroy(svc->slots[i].w);
			continue;
		}
		log_warn("worker %d is still releasing its device after %d s; "
			 "exiting without waiting (every job is on disk)",
			 i, DAEMON_RELEASE_SECONDS);
		fflush(stderr);
		_exit(0);
	}
}

/* -------------------------------------------------------------- run */

int daemon_run(const struct daemon_options *opt)
{
	char err[1024] = "";
	uv_loop_t loop;
	struct service *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	umask(077);
	log_set_verbose(opt->verbose);
	svc->opt = opt;
	svc->uid = getuid();
	svc->started = (double)time(NULL);
	uv_loop_init(&loop);
	svc->loop = &loop;

	struct statedir_lock lock = { -1, -1 };
	int rc = statedir_check(opt->state_dir, err, sizeof(err));
	if (!rc)
		rc = statedir_lock(opt->state_dir, &lock, err, sizeof(err));
	if (!rc)
		rc =
		    queue_create(&svc->queue, opt->state_dir, err, sizeof(err));
	if (rc) {
		log_error("%s", err);
		goto out;
	}
	after_load(svc->queue);
	/* every file of the folder through the locked descriptor from now
	 * on: state_check stops the daemon once the path names another
	 * folder, and meanwhile nothing goes there (jobs/queue.h) */
	if (queue_reach_locked(svc->queue, lock.dir_fd))
		log_warn("cannot reach the state folder %s through /proc: its "
			 "files are written by path",
			 opt->state_dir);
	log_info("state in %s: %d jobs", opt->state_dir, svc->queue->count);
	rc = server_create(&svc->server, &loop, opt->socket_path, &server_ops,
			   svc, err, sizeof(err));
	if (rc) {
		log_error("%s", err);
		goto out;
	}
	uv_async_init(&loop, &svc->wake, on_wake);
	svc->wake.data = svc;
	commit_init(svc);
	handle_signals(svc);
	uv_timer_init(&loop, &svc->stop_timer);
	uv_timer_init(&loop, &svc->retry_timer);
	svc->retry_timer.data = svc;
	devwait_init(svc);
	state_watch.lock = &lock;
	uv_timer_init(&loop, &state_watch.timer);
	state_watch.timer.data = svc;
	uv_timer_start(&state_watch.timer, on_state_watch, DAEMON_WATCH_MS,
		       DAEMON_WATCH_MS);

	svc->nslots = opt->ndevices > 0 ? opt->ndevices : 1;
	if (svc->nslots > DAEMON_MAX_DEVICES)
		svc->nslots = DAEMON_MAX_DEVICES;
	for (int i = 0; i < svc->nslots; i++) {
		const char *sel = opt->ndevices > 0 ? opt->devices[i] : NULL;
		rc = worker_create(&svc->slots[i].w, i, sel, opt->pack,
				   wake_loop, &svc->wake);
		if (rc) {
			log_error("cannot start worker %d: %s", i,
				  error_message(rc));
			svc->slots[i].ready = svc->slots[i].exited = 1;
			snprintf(svc->slots[i].error,
				 sizeof(svc->slots[i].error), "%s",
				 error_message(rc));
		}
	}

	workevents_maybe_ready(svc); /* when no worker could even start */
	uv_run(&loop, UV_RUN_DEFAULT);
	rc = 0;
	release_devices(svc);
out:
	if (rc) {
		for (int i = 0; i < svc->nslots; i++)
			worker_destroy(svc->slots[i].w);
		server_close(svc->server);
		uv_run(&loop, UV_RUN_DEFAULT);
	}
	queue_destroy(svc->queue);
	state_watch.lock = NULL;
	statedir_unlock(&lock);
	uv_loop_close(&loop);
	free(svc->save_due);
	free(svc);
	return rc ? 1 : 0;
}
