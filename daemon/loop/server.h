/*
 * server.h - the Unix socket, its connections, their framing and their
 * output queues. The transport only: what a line means is the caller's
 * business (methods.c), through the three callbacks below.
 *
 * Loop thread only.
 */
#ifndef VKINR_SERVER_H
#define VKINR_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "proto/protocol.h"

/* Below this much queued output a connection counts as keeping up: reading
 * its requests resumes and the drained callback fires. */
#define SERVER_LOW_WATER (64u << 10)
/* Above this much queued output a connection's next request waits (its
 * input is not read) until the output is back below SERVER_LOW_WATER. */
#define SERVER_HIGH_WATER (LIMIT_SUBSCRIBER_BYTES / 2)
/* A connection that has output queued and reads none of it for this long
 * is dropped (VKINRD_STALL_SECONDS overrides it); one that reads slowly
 * is not. */
#define SERVER_STALL_SECONDS 60
/* A request line left unfinished this long closes its connection
 * (VKINRD_LINE_SECONDS overrides it). */
#define SERVER_LINE_SECONDS 60

struct server;
struct peer_conn;

struct server_ops {
	/* One line (NUL-terminated, without '\n'), or too_long with none. */
	void (*line)(void *ctx, struct peer_conn *c, char *line, size_t len,
		     int too_long);
	/* The connection is closing; it is freed after this returns. */
	void (*closed)(void *ctx, struct peer_conn *c);
	/* Queued output fell below SERVER_LOW_WATER. */
	void (*drained)(void *ctx, struct peer_conn *c);
	/* Whether something is still owed to c (e.g. a subscription to a
	 * job that runs): a client that closed its side is kept until not. */
	int (*busy)(void *ctx, struct peer_conn *c);
	/* A line server_send is given: 1 when this took it (ownership
	 * passes; a batch keeps its answers), 0 to queue it. */
	int (*sending)(void *ctx, struct peer_conn *c, char *line);
	/* c takes requests again, before its waiting input is read. */
	void (*resumed)(void *ctx, struct peer_conn *c);
};

/*
 * Listens on path (created mode 0600; a stale socket file is replaced, a
 * live one is an error), or on fd 3 when systemd passed it (LISTEN_PID is
 * this process and LISTEN_FDS >= 1). Returns 0 or an error with a sentence
 * in err.
 */
int server_create(struct server **out, uv_loop_t *loop, const char *path,
		  const struct server_ops *ops, void *ctx, char *err,
		  size_t errlen);
/* Stops accepting; open connections go on. */
void server_stop_listening(struct server *s);
/* Closes every handle; the server frees itself once the loop has run their
 * close callbacks. server_close(NULL) does nothing. */
void server_close(struct server *s);

/* Holds every connection's output while on (the loop's group commit,
 * commit.c), and sends what was held when turned off. */
void server_cork(struct server *s, int on);

/*
 * Queues line (malloc'ed, ending in '\n'; ownership passes) on c. Returns
 * 0, or ERR_STATE when c is closing. Output is never refused for its size:
 * a connection over SERVER_HIGH_WATER sends no new request until it has
 * read its replies, which bounds it.
 */
int server_send(struct peer_conn *c, char *line);
/* A request of c will be answered later: c's next request waits until
 * server_conn_release (requests on one connection act in order). */
void server_conn_hold(struct peer_conn *c);
void server_conn_release(struct peer_conn *c);
/* Closes c after its queued output has been written. */
void server_close_after_flush(struct peer_conn *c);
void server_conn_close(struct peer_conn *c);

uint64_t server_conn_id(const struct peer_conn *c);
uid_t server_conn_uid(const struct peer_conn *c);
pid_t server_conn_pid(const struct peer_conn *c);
size_t server_conn_pending(const struct peer_conn *c);
int server_conn_closing(const struct peer_conn *c);
struct peer_conn *server_find(struct server *s, uint64_t id);
int server_connection_count(const struct server *s);
int server_activated(const struct server *s);

#endif
