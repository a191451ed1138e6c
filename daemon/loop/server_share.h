/*
 * server_share.h - who gives way between uids when the connections or
 * the unfinished lines reach a limit in all (server_share.c). server.c
 * asks and acts (refuses, closes); loop thread only.
 */
#ifndef VKINR_SERVER_SHARE_H
#define VKINR_SERVER_SHARE_H

#include <stddef.h>
#include <sys/types.h>

struct server;
struct peer_conn;

/* Connections that count against the limits: open, neither closing nor
 * refused; of uid, or of every uid when any. */
int server_share_count(const struct server *s, uid_t uid, int any);
/* A connection c just accepted finds the daemon full (in all, or its
 * file descriptors): the connection to close in its place, an idle one
 * (nothing held, owed or half-sent) of the uid holding the most, when
 * that uid holds more than c's uid will; NULL when c must be refused. */
struct peer_conn *server_share_make_room(struct server *s,
					 const struct peer_conn *c);
/* After c's unfinished line grew: NULL when every limit holds, else the
 * connection to refuse (c itself past its uid's share; past the limit in
 * all, the largest unfinished line of the uid holding the most, so that
 * uids that hold little are never refused for others' lines), with the
 * sentence, the limit's name and its value. */
struct peer_conn *server_share_partial(struct server *s, struct peer_conn *c,
				       char *msg, size_t msglen,
				       const char **limit, double *value);

#endif
