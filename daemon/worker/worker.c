/*
 * worker.c - the GPU thread of one device: its hand-off with the loop.
 *
 * The thread (worker_thread.c) opens its device, posts WORK_READY, then
 * waits on a condition variable for a job, a request or stop. A job runs
 * epoch by epoch; between two epochs the thread takes the flags and the
 * requests under the lock, so a pause, cancel, export or render waits at
 * most one epoch. The lock is held only to move pointers and flags, never
 * across an engine call.
 *
 * This file is that hand-off, the lowest of the worker's files: the jobs
 * held, their flags, the requests and the events, all under the lock,
 * called from the loop (worker.h) and from the thread. A job alone runs
 * in worker_run.c, several as a pack in worker_pack.c; the requests are
 * served by worker_serve.c. Every failure of a job ends in WORK_ENDED with
 * WORK_END_FAILED and a message for people; a request is answered with 0
 * or an errors.h code and a sentence. Only the thread calls gpu_* and
 * nn_*; it writes the job's checkpoint and exports into the job's folder,
 * and reads its target and init files; it touches no socket, no queue
 * data and no JSON-RPC.
 */
#include "worker/worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "formats/safetensors.h"
#include "util/image.h"
#include "worker/worker_internal.h"

double worker_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void work_request_destroy(struct work_request *req)
{
	if (!req)
		return;
	st_destroy(req->model);
	image_destroy(req->target);
	free(req->model_b64);
	free(req->png_b64);
	free(req);
}

void work_event_destroy(struct work_event *ev)
{
	if (!ev)
		return;
	work_request_destroy(ev->req);
	free(ev->many);
	free(ev);
}

/* ------------------------------------------------------ the hand-off */

void worker_post(struct worker *w, struct work_event *ev)
{
	pthread_mutex_lock(&w->lock);
	ev->next = NULL;
	*w->events_tail = ev;
	w->events_tail = &ev->next;
	pthread_mutex_unlock(&w->lock);
	w->wake(w->wake_arg);
}

struct work_event *worker_event(enum work_event_kind kind, const char *job_id)
{
	struct work_event *ev = calloc(1, sizeof(*ev));
	if (!ev) {
		/* Nothing sensible is left to do without memory for a few
		 * hundred bytes; the loop would lose track of the job. */
		log_error("out of memory posting a worker event");
		abort();
	}
	ev->kind = kind;
	if (job_id)
		snprintf(ev->job_id, sizeof(ev->job_id), "%s", job_id);
	return ev;
}

void worker_post_ended(struct worker *w, const char *job_id, enum work_end end,
		       const char *message)
{
	struct work_event *ev = worker_event(WORK_ENDED, job_id);
	ev->end = end;
	if (message)
		snprintf(ev->message, sizeof(ev->message), "%s", message);
	worker_post(w, ev);
}

/* Publishes the device memory in use for daemon.status (worker thread). */
void worker_publish_memory(struct worker *w)
{
	uint64_t bytes = w->gpu ? gpu_bytes_in_use(w->gpu) : 0;
	pthread_mutex_lock(&w->lock);
	w->bytes_in_use = bytes;
	pthread_mutex_unlock(&w->lock);
}

uint64_t worker_bytes_in_use(struct worker *w)
{
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	uint64_t bytes = w->bytes_in_use;
	pthread_mutex_unlock(&w->lock);
	return bytes;
}

struct work_event *worker_take_events(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	struct work_event *list = w->events;
	w->events = NULL;
	w->events_tail = &w->events;
	pthread_mutex_unlock(&w->lock);
	return list;
}

void worker_start_job(struct worker *w, struct work_job *job)
{
	struct held *h = calloc(1, sizeof(*h));
	if (!h) {
		log_error("out of memory handing job %s to worker %d", job->id,
			  w->index);
		abort(); /* as event_new: the loop would lose track of it */
	}
	snprintf(h->id, sizeof(h->id), "%s", job->id);
	h->job = job;
	h->uid = job->uid;
	h->work = job->work;
	h->bytes = job->bytes;
	job->held = h;
	pthread_mutex_lock(&w->lock);
	struct held **pp = &w->held;
	while (*pp)
		pp = &(*pp)->next;
	*pp = h;
	w->nheld++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int worker_jobs(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	int n = w->nheld;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/* A job leaving at the next boundary (paused, cancelled, sent back to
 * the queue) keeps its place until it has gone: the worker never holds
 * more than its pack's size, and the loop never counts more running
 * there. */
int worker_room(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	int room = w->full ? 0 : w->pack - w->nheld;
	pthread_mutex_unlock(&w->lock);
	return room > 0 ? room : 0;
}

/* The held entry of a job (under lock). */
static struct held *find_held(struct worker *w, const char *job_id)
{
	for (struct held *h = w->held; h; h = h->next)
		if (!strcmp(h->id, job_id))
			return h;
	return NULL;
}

/* A job's flags and the daemon's stop (under lock): through its entry,
 * so that a pack of many jobs reads each one's without a search. */
static int held_flags(struct worker *w, const struct work_job *job)
{
	struct held *h = job->held ? job->held : find_held(w, job->id);
	return (w->flags & WORK_STOP) | (h ? h->flags : 0);
}

void worker_flag(struct worker *w, const char *job_id, int flags)
{
	pthread_mutex_lock(&w->lock);
	struct held *h = find_held(w, job_id);
	if (h)
		h->flags |= flags;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* The job leaves the worker: its entry goes (before WORK_ENDED is
 * posted, so the loop never sees room the worker has not). */
void worker_release_held(struct worker *w, const char *job_id)
{
	pthread_mutex_lock(&w->lock);
	for (struct held **pp = &w->held; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, job_id))
			continue;
		struct held *h = *pp;
		*pp = h->next;
		free(h->job);
		free(h);
		w->nheld--;
		w->full = 0;
		break;
	}
	pthread_mutex_unlock(&w->lock);
}

/* The oldest job handed over and not yet taken (ownership stays with
 * its held entry), or NULL. */
struct work_job *worker_take_job(struct worker *w)
{
	struct work_job *job = NULL;
	pthread_mutex_lock(&w->lock);
	for (struct held *h = w->held; h && !job; h = h->next)
		if (h->job) {
			job = h->job;
			h->job = NULL;
		}
	pthread_mutex_unlock(&w->lock);
	return job;
}

/* The requests wait in rounds: a uid's k-th waiting request is in round
 * k, and a new one goes after the last request of its round or an
 * earlier one, so that uids alternate and one uid's requests never wait
 * behind more than one of each other uid's. */
static int round_of(const struct work_request *head,
		    const struct work_request *req)
{
	int k = 0;
	for (const struct work_request *r = head; r != req; r = r->next)
		k += r->uid == req->uid;
	return k;
}

void worker_request(struct worker *w, struct work_request *req)
{
	pthread_mutex_lock(&w->lock);
	int mine = 0;
	for (struct work_request *r = w->requests; r; r = r->next)
		mine += r->uid == req->uid;
	struct work_request **pp = &w->requests;
	while (*pp && round_of(w->requests, *pp) <= mine)
		pp = &(*pp)->next;
	req->next = *pp;
	*pp = req;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void worker_stop(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->flags |= WORK_STOP;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* The seconds r served uid's requests. */
double worker_served(const struct run *r, uid_t uid)
{
	for (int i = 0; i < WORKER_SERVE_UIDS; i++)
		if (r->served[i].seconds > 0 && r->served[i].uid == uid)
			return r->served[i].seconds;
	return 0;
}

void worker_add_served(struct run *r, uid_t uid, double seconds)
{
	int slot = 0;
	for (int i = 0; i < WORKER_SERVE_UIDS; i++) {
		if (r->served[i].seconds > 0 && r->served[i].uid == uid) {
			slot = i;
			break;
		}
		if (r->served[i].seconds < r->served[slot].seconds)
			slot = i; /* the least served gives way */
	}
	if (r->served[slot].uid != uid)
		r->served[slot].seconds = 0;
	r->served[slot].uid = uid;
	r->served[slot].seconds += seconds > 1e-9 ? seconds : 1e-9;
}

/* Whether uid's requests are within their share of r's time: each uid
 * has its own, so one uid's long renders use up only its own turn. */
static int may_serve(const struct run *r, uid_t uid)
{
	return worker_served(r, uid) <=
	       WORKER_SERVE_SHARE * (r->train_seconds + r->serve_seconds);
}

/* Takes the flags at an epoch boundary, and the request to serve there:
 * the first waiting (worker_request keeps them in turns between users)
 * of a user other than the last one served whose share of the run's time
 * is not used up, else the first of any such user; none when every
 * waiting user has used its share. */
int worker_take_due(struct worker *w, struct run *r, struct work_request **req)
{
	*req = NULL;
	pthread_mutex_lock(&w->lock);
	int flags = held_flags(w, r->job);
	struct work_request **pick = NULL;
	for (struct work_request **pp = &w->requests; *pp; pp = &(*pp)->next) {
		if (!may_serve(r, (*pp)->uid))
			continue;
		if (!r->served_any || (*pp)->uid != r->last_uid) {
			pick = pp;
			break;
		}
		if (!pick)
			pick = pp;
	}
	if (pick) {
		*req = *pick;
		*pick = (*req)->next;
		(*req)->next = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	return flags;
}

int worker_count_requests(struct worker *w, uid_t uid)
{
	int n = 0;
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	for (struct work_request *req = w->requests; req; req = req->next)
		n += req->uid == uid;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void worker_drop_requests(struct worker *w, uint64_t conn)
{
	if (!w)
		return;
	struct work_request *dropped = NULL;
	pthread_mutex_lock(&w->lock);
	struct work_request **pp = &w->requests;
	while (*pp) {
		struct work_request *req = *pp;
		if (req->conn != conn) {
			pp = &req->next;
			continue;
		}
		*pp = req->next;
		req->next = dropped;
		dropped = req;
	}
	pthread_mutex_unlock(&w->lock);
	if (dropped)
		log_info(
		    "worker %d: connection %llu closed; its request not yet "
		    "served is dropped",
		    w->index, (unsigned long long)conn);
	while (dropped) {
		struct work_request *next = dropped->next;
		work_request_destroy(dropped);
		dropped = next;
	}
}
/* Whether a job was handed over and not yet taken (under lock). */
int worker_has_untaken(struct worker *w)
{
	for (struct held *h = w->held; h; h = h->next)
		if (h->job)
			return 1;
	return 0;
}

int worker_any_leaving(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	int any = (w->flags & WORK_STOP) != 0;
	for (const struct held *h = w->held; h && !any; h = h->next)
		any = !h->job && (h->flags & WORK_LEAVE);
	pthread_mutex_unlock(&w->lock);
	return any;
}

/* Every job handed over and not taken goes back to the queue. */
void worker_hand_back(struct worker *w)
{
	struct work_job *job;
	while ((job = worker_take_job(w))) {
		worker_release_held(w, job->id);
		worker_post_ended(w, job->id, WORK_END_QUEUED, NULL);
		free(job);
	}
}
/* The flags of a job at an epoch boundary (the daemon's stop too). */
int worker_flags_of(struct worker *w, const struct work_job *job)
{
	pthread_mutex_lock(&w->lock);
	int flags = held_flags(w, job);
	pthread_mutex_unlock(&w->lock);
	return flags;
}
