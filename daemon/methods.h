/*
 * methods.h - the JSON-RPC methods: one function per method, the
 * subscriptions and the replies that wait on a worker.
 *
 * The first four are the server's callbacks (ctx is the service); the
 * others are called by daemon.c when a worker reports.
 */
#ifndef VKINR_METHODS_H
#define VKINR_METHODS_H

#include "service.h"

void methods_line(void *ctx, struct conn *c, char *line, size_t len,
		  int too_long);
void methods_closed(void *ctx, struct conn *c);
void methods_drained(void *ctx, struct conn *c);
/* Whether c still follows a job that has more to send (server_ops.busy). */
int methods_busy(void *ctx, struct conn *c);

/* A new epoch was appended to job's history. */
void methods_job_progress(struct service *svc, struct job *job);
/* job's history was cut back (resumed from an older checkpoint). */
void methods_job_truncated(struct service *svc, struct job *job);
/* job's state changed. */
void methods_job_state(struct service *svc, struct job *job);
/* A worker answered a render or export (ownership passes). */
void methods_reply(struct service *svc, struct work_request *req);
/* Drops everything that waits on the service (at exit). */
void methods_finish(struct service *svc);

#endif
