/*
 * subs.h - who follows a job: the subscriptions (job.subscribe) and the
 * requests that wait for a running job to leave its worker (job.pause,
 * job.cancel), and the fan-out of a job's news to them.
 *
 * The loop tells this module what happened to a job (a new epoch, its
 * history cut back, a new state) and it sends each follower what it is
 * owed, paced by the connection's output queue. Followers hold job and
 * connection ids and look them up again: a job removed or a connection
 * closed meanwhile is skipped. Loop thread only.
 */
#ifndef VKINR_SUBS_H
#define VKINR_SUBS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "jobs/queue.h"
#include "loop/server.h"
#include "loop/loop_state.h"

/* A connection following a job (subs.c's own). */
struct subscription;

/* conn follows job from the first epoch after since (its history from
 * there is replayed, then new epochs stream). conn must not follow job
 * already (subs_drop first). Returns the subscription, or NULL when out of
 * memory. */
struct subscription *subs_add(struct service *svc, uint64_t conn,
			      const struct job *job, int64_t since);
/* How many points of job's history s has still to send. */
int subs_replay_left(const struct subscription *s, const struct job *job);
/* Stops the subscriptions of conn (0: every connection) to job (NULL:
 * every job). */
void subs_drop(struct service *svc, uint64_t conn, const char *job);
/* How many jobs conn follows (0: the subscriptions of every connection). */
int subs_count(const struct service *svc, uint64_t conn);

/* The request rpc_id (NULL for a notification) of conn is answered with
 * the job's state once job leaves its worker; conn's next request waits
 * until then. Returns 0 or ERR_NOMEM. */
int subs_wait_state(struct service *svc, uint64_t conn, const cJSON *rpc_id,
		    const struct job *job);

/* News of a job: a new epoch was appended to its history; its history was
 * cut back (resumed from an older checkpoint); its state changed. */
void subs_job_progress(struct service *svc, const struct job *job);
void subs_job_truncated(struct service *svc, const struct job *job);
void subs_job_state(struct service *svc, const struct job *job);

/* Sends c what its subscriptions owe it, as far as its output queue
 * allows (after a request, and when c's output has drained). */
void subs_pump_conn(struct service *svc, struct peer_conn *c);
/* Whether c follows a job that has more to send. */
int subs_busy(const struct service *svc, const struct peer_conn *c);
/* conn has closed: its subscriptions and waiting requests are dropped. */
void subs_drop_conn(struct service *svc, uint64_t conn);
/* Drops everything (at exit). */
void subs_finish(struct service *svc);

#endif
