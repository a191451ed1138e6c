/*
 * worker_thread.c - a worker's thread: created, run and joined.
 *
 * worker_main opens the device and posts WORK_READY (ok or why not), then
 * waits on the worker's condition variable for a job, a request or stop;
 * it serves requests while idle, runs a job alone (worker_run.c) or a
 * pack (worker_pack.c), and at stop hands back what it had not taken,
 * posts WORK_EXITED and releases the device. This file sits on top of
 * the worker's others: it calls them, none calls it.
 */
#include "worker/worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "proto/errors.h"
#include "log.h"
#include "nn/pack.h"
#include "worker/worker_internal.h"

/* The thread: opens the device, then takes jobs and requests until
 * stopped; a job alone runs through worker_run_job, several through
 * worker_run_pack. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char err[512] = "";
	struct work_event *ev = worker_event(WORK_READY, NULL);
	char name[16]; /* what top -H and /proc/PID/task/TID/comm show */
	snprintf(name, sizeof(name), "vkinrd-work%d", w->index);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	if (w->open_delay_ms > 0) { /* a driver slow to open, for tests */
		struct timespec d = { w->open_delay_ms / 1000,
				      w->open_delay_ms % 1000 * 1000000L };
		nanosleep(&d, NULL);
	}
	int rc = gpu_create(&w->gpu, w->selector, err, sizeof(err));
	if (rc) {
		w->gpu = NULL;
		worker_describe(rc, err, ev->message, sizeof(ev->message));
	} else {
		ev->ok = 1;
		ev->info = *gpu_info(w->gpu);
		worker_admit_device_opened(w);
		if (!nn_pack_supported(w->gpu)) {
			pthread_mutex_lock(&w->lock);
			w->pack = 1;
			pthread_mutex_unlock(&w->lock);
		}
	}
	worker_publish_memory(w);
	worker_post(w, ev);

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!(w->flags & WORK_STOP) && !worker_has_untaken(w) &&
		       !w->requests)
			pthread_cond_wait(&w->cond, &w->lock);
		/* one at a time: one that comes meanwhile takes its turn
		 * among those waiting (worker_request), not after them all */
		struct work_request *reqs = w->requests;
		if (reqs) {
			w->requests = reqs->next;
			reqs->next = NULL;
		}
		int stop = w->flags & WORK_STOP;
		pthread_mutex_unlock(&w->lock);

		worker_serve(w, reqs, NULL, NULL);
		if (reqs)
			worker_publish_memory(w);
		if (stop)
			break;
		if (!w->gpu) {
			worker_hand_back(w);
		} else if (w->pack > 1) {
			worker_run_pack(w);
		} else {
			struct work_job *job = worker_take_job(w);
			if (job)
				worker_run_job(w, job);
			free(job);
		}
	}
	worker_hand_back(w);
	/* Every job is on disk now: say so before releasing the device,
	 * which some drivers take seconds to do; the daemon waits for that
	 * only briefly (worker_join). */
	worker_post(w, worker_event(WORK_EXITED, NULL));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gpu_destroy(w->gpu);
	w->gpu = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms =
	    (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms > 500)
		log_warn("worker %d: releasing the device took %.0f ms",
			 w->index, ms);
	else
		log_debug("worker %d: device released in %.0f ms", w->index,
			  ms);
	worker_publish_memory(w);
	return NULL;
}

int worker_join(struct worker *w, const struct timespec *deadline)
{
	if (!w || !w->started)
		return 0;
	if (pthread_timedjoin_np(w->thread, NULL, deadline))
		return ERR_BUSY;
	w->started = 0;
	return 0;
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && atoi(v) > 0 ? atoi(v) : def;
}

int worker_create(struct worker **out, int index, const char *selector,
		  int pack, void (*wake)(void *wake_arg), void *wake_arg)
{
	*out = NULL;
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return ERR_NOMEM;
	w->index = index;
	w->pack = pack > 0 ? pack : WORKER_PACK_MOST;
	w->wake = wake;
	w->wake_arg = wake_arg;
	w->events_tail = &w->events;
	w->ckpt_epochs =
	    env_int("VKINRD_CHECKPOINT_EPOCHS", WORKER_CHECKPOINT_EPOCHS);
	w->ckpt_seconds = env_int("VKINRD_CHECKPOINT_SECONDS",
				  (int)WORKER_CHECKPOINT_SECONDS);
	/* an epoch interval asked for is kept to the epoch */
	w->ckpt_min_seconds = getenv("VKINRD_CHECKPOINT_EPOCHS")
				  ? 0
				  : WORKER_CHECKPOINT_MIN_SECONDS;
	w->open_delay_ms = env_int("VKINRD_OPEN_DELAY_MS", 0);
	if (selector && !(w->selector = strdup(selector))) {
		free(w);
		return ERR_NOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, worker_main, w)) {
		worker_destroy(w);
		return ERR_NOMEM;
	}
	w->started = 1;
	*out = w;
	return 0;
}

void worker_destroy(struct worker *w)
{
	if (!w)
		return;
	if (w->started) {
		worker_stop(w);
		pthread_join(w->thread, NULL);
	}
	while (w->held) {
		struct held *h = w->held;
		w->held = h->next;
		free(h->job);
		free(h);
	}
	while (w->requests) {
		struct work_request *req = w->requests;
		w->requests = req->next;
		work_request_destroy(req);
	}
	struct work_event *ev = w->events;
	while (ev) {
		struct work_event *next = ev->next;
		work_event_destroy(ev);
		ev = next;
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->selector);
	free(w);
}
