/*
 * subs.c - subscriptions, waiting requests and the fan-out of a job's news.
 *
 * A subscription is a cursor into the job's history, so replay and live
 * streaming are one mechanism: pump sends from the cursor while the
 * connection has less than SERVER_LOW_WATER queued, and the server's
 * drained callback pumps again. Epochs before replay_end (what existed at
 * subscribe time) are all sent; later ones are thinned to the newest when
 * the reader is behind. A state change marks each subscription's state as
 * due and is sent after the epochs before it.
 *
 * A waiter is a pause or cancel of a running job: the worker checkpoints
 * at its next epoch boundary, and the answer goes out when the job's new
 * state comes back, synced before the turn's other work (commit_urgent).
 * Loop thread only.
 */
#include "loop/subs.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "proto/jsonrpc.h"
#include "proto/protocol.h"
#include "loop/commit.h"
#include "loop/views.h"

/* A connection following a job: the history is sent from next, paced by
 * the connection's output queue; epochs before replay_end (what existed at
 * subscribe time) are all sent, later ones are thinned when the reader is
 * behind (the newest is always sent). */
struct subscription {
	struct subscription *next;
	uint64_t conn;
	char job[JOB_ID_MAX];
	int cursor; /* index into the job's history of the next point */
	int replay_end;
	int state_dirty; /* a job.state notification is due */
};

/* A request answered when a running job leaves the worker (pause,
 * cancel). */
struct state_waiter {
	struct state_waiter *next;
	uint64_t conn;
	cJSON *rpc_id;
	char job[JOB_ID_MAX];
};

/* ----------------------------------------------------- subscriptions */

struct subscription *subs_add(struct service *svc, uint64_t conn,
			      const struct job *job, int64_t since)
{
	struct subscription *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->conn = conn;
	snprintf(s->job, sizeof(s->job), "%s", job->id);
	while (s->cursor < job->nhist && job->hist[s->cursor].epoch <= since)
		s->cursor++;
	s->replay_end = job->nhist;
	s->state_dirty = job_state_is_final(job->state);
	struct subscription **pp = &svc->subs;
	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
	return s;
}

int subs_replay_left(const struct subscription *s, const struct job *job)
{
	return job->nhist - s->cursor;
}

void subs_drop(struct service *svc, uint64_t conn, const char *job)
{
	struct subscription **pp = &svc->subs;
	while (*pp) {
		struct subscription *s = *pp;
		if ((conn && s->conn != conn) || (job && strcmp(s->job, job))) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		free(s);
	}
}

int subs_count(const struct service *svc, uint64_t conn)
{
	int n = 0;
	for (const struct subscription *s = svc->subs; s; s = s->next)
		n += !conn || s->conn == conn;
	return n;
}

static void pump(struct subscription *sub, struct peer_conn *c,
		 const struct job *job)
{
	while (!server_conn_closing(c) &&
	       server_conn_pending(c) < SERVER_LOW_WATER) {
		if (sub->cursor < job->nhist) {
			/* Live points the reader fell behind on are thinned:
			 * skip to the newest. Replayed points are all sent. */
			if (sub->cursor >= sub->replay_end &&
			    job->nhist - sub->cursor > 1)
				sub->cursor = job->nhist - 1;
			const struct nn_metrics *m = &job->hist[sub->cursor];
			if (server_send(
				c, views_progress_line(
				       job, m, job->hist_time[sub->cursor])))
				return;
			sub->cursor++;
		} else if (sub->state_dirty) {
			sub->state_dirty = 0;
			cJSON *params = views_state_params(job);
			server_send(c,
				    rpc_notification_line(N_JOB_STATE, params));
		} else {
			break;
		}
	}
}

void subs_pump_conn(struct service *svc, struct peer_conn *c)
{
	uint64_t id = server_conn_id(c);
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (s->conn != id)
			continue;
		struct job *job = queue_find(svc->queue, s->job);
		if (job)
			pump(s, c, job);
		if (server_conn_closing(c))
			return;
	}
}

static void pump_job(struct service *svc, const struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (strcmp(s->job, job->id))
			continue;
		struct peer_conn *c = server_find(svc->server, s->conn);
		if (c)
			pump(s, c, job);
	}
}

int subs_busy(const struct service *svc, const struct peer_conn *c)
{
	uint64_t id = server_conn_id(c);
	for (const struct subscription *s = svc->subs; s; s = s->next) {
		if (s->conn != id)
			continue;
		struct job *job = queue_find(svc->queue, s->job);
		if (job && (!job_state_is_final(job->state) || s->state_dirty ||
			    s->cursor < job->nhist))
			return 1;
	}
	return 0;
}

/* ----------------------------------------------------------- waiters */

int subs_wait_state(struct service *svc, uint64_t conn, const cJSON *rpc_id,
		    const struct job *job)
{
	/* a notification waits too (rpc_id NULL), so that the next request
	 * on its connection acts after it */
	struct state_waiter *w = calloc(1, sizeof(*w));
	if (!w || (rpc_id && !(w->rpc_id = cJSON_Duplicate(rpc_id, 1)))) {
		free(w);
		return ERR_NOMEM;
	}
	w->conn = conn;
	snprintf(w->job, sizeof(w->job), "%s", job->id);
	w->next = svc->waiters;
	svc->waiters = w;
	return 0;
}

static void answer_waiters(struct service *svc, const struct job *job)
{
	struct state_waiter **pp = &svc->waiters;
	while (*pp) {
		struct state_waiter *w = *pp;
		if (strcmp(w->job, job->id) || job->state == JOB_RUNNING) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		struct peer_conn *c = server_find(svc->server, w->conn);
		if (c)
			server_conn_release(c);
		if (c && w->rpc_id) {
			server_send(c, rpc_result_line(w->rpc_id,
						       views_job_state(job)));
			commit_urgent(svc); /* out before the turn's rest */
		}
		cJSON_Delete(w->rpc_id);
		free(w);
	}
}

static void drop_waiters(struct service *svc, uint64_t conn)
{
	struct state_waiter **pp = &svc->waiters;
	while (*pp) {
		struct state_waiter *w = *pp;
		if (conn && w->conn != conn) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		cJSON_Delete(w->rpc_id);
		free(w);
	}
}

/* ------------------------------------------------------- a job's news */

void subs_job_progress(struct service *svc, const struct job *job)
{
	pump_job(svc, job);
}

void subs_job_truncated(struct service *svc, const struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (strcmp(s->job, job->id))
			continue;
		if (s->cursor > job->nhist)
			s->cursor = job->nhist;
		if (s->replay_end > job->nhist)
			s->replay_end = job->nhist;
	}
}

void subs_job_state(struct service *svc, const struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next)
		if (!strcmp(s->job, job->id))
			s->state_dirty = 1;
	pump_job(svc, job);
	answer_waiters(svc, job);
}

/* --------------------------------------------------------------- end */

void subs_drop_conn(struct service *svc, uint64_t conn)
{
	subs_drop(svc, conn, NULL);
	drop_waiters(svc, conn);
}

void subs_finish(struct service *svc)
{
	subs_drop(svc, 0, NULL);
	drop_waiters(svc, 0);
}
