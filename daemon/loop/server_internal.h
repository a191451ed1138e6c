/*
 * server_internal.h - the connection and server records that server.c
 * (which acts on them) and server_share.c (which decides, between uids,
 * who gives way when a limit is reached) share; nobody else includes it.
 * Loop thread only.
 */
#ifndef VKINR_SERVER_INTERNAL_H
#define VKINR_SERVER_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "loop/server.h"
#include "proto/framing.h"

#define WRITE_BATCH 64

struct out_msg {
	struct out_msg *next;
	char *data;
	size_t len;
};

struct peer_conn {
	uv_pipe_t pipe; /* first: the handle's address is the conn's */
	struct server *s;
	struct peer_conn *prev, *next;
	uint64_t id;
	uid_t uid;
	pid_t pid;
	struct line_buffer lb;
	struct out_msg *out_head, *out_tail; /* waiting */
	struct out_msg *inflight;            /* in the uv_write */
	uv_write_t wreq;
	uv_buf_t bufs[WRITE_BATCH];
	size_t pending;      /* bytes waiting + in flight */
	uint64_t last_moved; /* uv_now when output last moved */
	size_t queue_seen;   /* libuv's write queue size at the last look */
	int reading, closing, close_when_flushed;
	int holds;   /* requests whose answer is still to come */
	int eof;     /* the client closed its side */
	char *stash; /* input read but not yet framed (held back) */
	size_t stash_len;
	uint64_t partial_since; /* uv_now when the unfinished line began */
	int resume_due;         /* the idle handle will take its input up */
	int refused;            /* refused or given way: counts for no limit */
};

struct server {
	uv_loop_t *loop;
	uv_pipe_t listener;
	uv_timer_t stall_timer;
	uv_idle_t resume_idle; /* takes up held input outside any callback */
	int listening, activated, nhandles;
	char *path; /* unlinked at close when we created it */
	const struct server_ops *ops;
	void *ctx;
	struct peer_conn *conns;
	int nconns;
	uint64_t next_id;
	uint64_t stall_ms, line_ms;
	int corked; /* output held (server_cork) */
	char readbuf[64 << 10];
};

#endif
