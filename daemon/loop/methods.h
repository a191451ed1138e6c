/*
 * methods.h - the JSON-RPC methods: the server's callbacks (ctx is the
 * service), which find each request's method in the table and run it.
 */
#ifndef VKINR_METHODS_H
#define VKINR_METHODS_H

#include "loop/loop_state.h"

void methods_line(void *ctx, struct peer_conn *c, char *line, size_t len,
		  int too_long);
void methods_closed(void *ctx, struct peer_conn *c);
void methods_drained(void *ctx, struct peer_conn *c);
/* Whether c still follows a job that has more to send (server_ops.busy). */
int methods_busy(void *ctx, struct peer_conn *c);
/* A line about to be queued on c: 1 when a batch took it (an answer to
 * one of its requests, sent with the others as one array line). */
int methods_sending(void *ctx, struct peer_conn *c, char *line);
/* c takes requests again: a batch's next request runs. */
void methods_resumed(void *ctx, struct peer_conn *c);

#endif
