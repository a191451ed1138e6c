/*
 * server.c - the listening socket and its connections.
 *
 * Each connection frames its input with a line_buffer (LIMIT_LINE_BYTES a
 * line) and has its own output queue: a list of whole lines, of which at
 * most one batch is in a uv_write at a time. The queue is what lets the
 * daemon serve a slow reader without slowing anyone: above half of
 * LIMIT_SUBSCRIBER_BYTES it stops reading the connection's requests (so a
 * client that never reads its replies cannot make the daemon buffer them);
 * the subscription pump (subs.c) only adds progress while the queue is
 * below SERVER_LOW_WATER; and a connection that already has more than
 * LIMIT_SUBSCRIBER_BYTES queued when something else must be sent, or whose
 * output has not moved for SERVER_STALL_SECONDS, is dropped.
 *
 * Credentials come from SO_PEERCRED at accept and stay with the connection.
 * Connections are limited in all (LIMIT_CONNECTIONS), per uid
 * (LIMIT_CONNECTIONS_PER_UID) and by the file descriptors left (the last
 * QUOTA_FD_RESERVE under RLIMIT_NOFILE are the daemon's own); one over a
 * limit gets an error line and is closed, unless the daemon is full in
 * all while another uid holds more: then an idle connection of the uid
 * that holds the most gives way (server_share.c, which also decides whose
 * unfinished line is refused past LIMIT_PARTIAL_BYTES). The warnings of
 * refusals are rate-limited per uid (log_warn_uid).
 *
 * Loop thread only. It must not interpret a line.
 */
#include "loop/server.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/errors.h"
#include "proto/framing.h"
#include "proto/jsonrpc.h"
#include "log.h"
#include "proto/protocol.h"
#include "loop/quota.h"
#include "loop/server_internal.h"
#include "loop/server_share.h"
#include "util/socket_path.h"

static void conn_closed_cb(uv_handle_t *h);
static void flush(struct peer_conn *c);
static void update_reading(struct peer_conn *c);
static void start_reading(struct peer_conn *c);

/* --------------------------------------------------------- accessors */

uint64_t server_conn_id(const struct peer_conn *c) { return c->id; }
uid_t server_conn_uid(const struct peer_conn *c) { return c->uid; }
pid_t server_conn_pid(const struct peer_conn *c) { return c->pid; }
size_t server_conn_pending(const struct peer_conn *c) { return c->pending; }
int server_conn_closing(const struct peer_conn *c) { return c->closing; }
int server_connection_count(const struct server *s) { return s->nconns; }
int server_activated(const struct server *s) { return s->activated; }

struct peer_conn *server_find(struct server *s, uint64_t id)
{
	for (struct peer_conn *c = s->conns; c; c = c->next)
		if (c->id == id && !c->closing)
			return c;
	return NULL;
}

/* ------------------------------------------------------------ output */

static void free_msgs(struct out_msg *m)
{
	while (m) {
		struct out_msg *next = m->next;
		free(m->data);
		free(m);
		m = next;
	}
}

static void take_up_input(struct peer_conn *c);

static void write_cb(uv_write_t *req, int status)
{
	struct peer_conn *c = req->data;
	for (struct out_msg *m = c->inflight; m; m = m->next)
		c->pending -= m->len;
	free_msgs(c->inflight);
	c->inflight = NULL;
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("connection %llu: write failed: %s",
			  (unsigned long long)c->id, uv_strerror(status));
		server_conn_close(c);
		return;
	}
	c->last_moved = uv_now(c->s->loop);
	if (c->close_when_flushed && c->pending == 0) {
		server_conn_close(c);
		return;
	}
	flush(c);
	if (c->pending < SERVER_LOW_WATER) {
		if (c->s->ops->drained)
			c->s->ops->drained(c->s->ctx, c);
		if (!c->closing)
			take_up_input(c);
	}
}

static void flush(struct peer_conn *c)
{
	if (c->inflight || !c->out_head || c->closing || c->s->corked)
		return;
	int n = 0;
	struct out_msg **tail = &c->inflight;
	while (c->out_head && n < WRITE_BATCH) {
		struct out_msg *m = c->out_head;
		c->out_head = m->next;
		m->next = NULL;
		*tail = m;
		tail = &m->next;
		c->bufs[n++] = uv_buf_init(m->data, (unsigned)m->len);
	}
	if (!c->out_head)
		c->out_tail = NULL;
	c->wreq.data = c;
	int rc =
	    uv_write(&c->wreq, (uv_stream_t *)&c->pipe, c->bufs, n, write_cb);
	if (rc < 0) {
		for (struct out_msg *m = c->inflight; m; m = m->next)
			c->pending -= m->len;
		free_msgs(c->inflight);
		c->inflight = NULL;
		server_conn_close(c);
	}
}

void server_cork(struct server *s, int on)
{
	s->corked = on;
	if (on)
		return;
	for (struct peer_conn *c = s->conns; c; c = c->next)
		flush(c);
}

int server_send(struct peer_conn *c, char *line)
{
	if (!line)
		return ERR_NOMEM;
	if (c->closing) {
		free(line);
		return ERR_STATE;
	}
	if (c->s->ops->sending && c->s->ops->sending(c->s->ctx, c, line))
		return 0;
	struct out_msg *m = malloc(sizeof(*m));
	if (!m) {
		free(line);
		return ERR_NOMEM;
	}
	m->next = NULL;
	m->data = line;
	m->len = strlen(line);
	if (c->pending == 0)
		c->last_moved = uv_now(c->s->loop);
	c->pending += m->len;
	if (c->out_tail)
		c->out_tail->next = m;
	else
		c->out_head = m;
	c->out_tail = m;
	flush(c);
	update_reading(c);
	return 0;
}

void server_close_after_flush(struct peer_conn *c)
{
	if (c->closing)
		return;
	if (c->pending == 0) {
		server_conn_close(c);
		return;
	}
	c->close_when_flushed = 1;
	update_reading(c);
}

void server_conn_close(struct peer_conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->s->ops->closed)
		c->s->ops->closed(c->s->ctx, c);
	uv_close((uv_handle_t *)&c->pipe, conn_closed_cb);
}

static void maybe_free_server(struct server *s);

static void conn_closed_cb(uv_handle_t *h)
{
	struct peer_conn *c = (struct peer_conn *)h;
	struct server *s = c->s;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	free_msgs(c->out_head);
	free_msgs(c->inflight);
	framing_line_finish(&c->lb);
	free(c->stash);
	free(c);
	s->nhandles--;
	maybe_free_server(s);
}

/* ------------------------------------------------------------- input */

/*
 * A connection takes its next request only once the previous ones have
 * taken effect and their answers are not piling up: while a request's
 * answer is still to come (holds) or its output is above the high-water
 * mark, what it sends waits, unframed, in its stash (at most one read),
 * and its socket is not read. So requests act in the order sent, and a
 * client that does not read its replies only fills its own socket.
 */
static int input_held(const struct peer_conn *c)
{
	return c->holds > 0 || c->pending > SERVER_HIGH_WATER || c->closing ||
	       c->close_when_flushed;
}

static void update_reading(struct peer_conn *c)
{
	int want = !input_held(c) && !c->stash && !c->eof;
	if (want && !c->reading)
		start_reading(c);
	else if (!want && c->reading) {
		uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = 0;
	}
}

static int on_line(void *ctx, char *line, size_t len, int too_long)
{
	struct peer_conn *c = ctx;
	c->s->ops->line(c->s->ctx, c, line, len, too_long);
	return c->closing ? 1 : 0;
}

/* An error line, then the connection closes. */
static void refuse_input(struct peer_conn *c, const char *limit, double value,
			 const char *msg)
{
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "name", error_name(ERR_TOO_LARGE));
	cJSON_AddStringToObject(data, "limit", limit);
	cJSON_AddNumberToObject(data, "value", value);
	log_warn_uid(c->uid, "connection %llu (uid %u): %s",
		     (unsigned long long)c->id, (unsigned)c->uid, msg);
	c->refused = 1;
	server_send(c, rpc_error_line(NULL, RPC_LIMIT, msg, data));
	server_close_after_flush(c);
}

/* Unfinished lines are bounded per uid and in all, as well as per line;
 * past the limit in all, the uid holding the most gives way
 * (server_share.c). -1 when c itself is refused. */
static int check_partial(struct peer_conn *c)
{
	char msg[300];
	const char *limit;
	double value;
	if (c->lb.len == 0) {
		c->partial_since = 0;
		return 0;
	}
	if (!c->partial_since)
		c->partial_since = uv_now(c->s->loop);
	struct peer_conn *v =
	    server_share_partial(c->s, c, msg, sizeof(msg), &limit, &value);
	if (v)
		refuse_input(v, limit, value, msg);
	return v == c ? -1 : 0;
}

/* Frames data a line at a time while the connection takes requests;
 * returns how much it used. */
static size_t frame(struct peer_conn *c, const char *data, size_t n)
{
	size_t used = 0;
	while (used < n && !input_held(c)) {
		const char *nl = memchr(data + used, '\n', n - used);
		size_t chunk = nl ? (size_t)(nl - data - used) + 1 : n - used;
		int rc =
		    framing_line_feed(&c->lb, data + used, chunk, on_line, c);
		used += chunk;
		if (rc == ERR_NOMEM && !c->closing)
			server_conn_close(c);
		if (rc || check_partial(c))
			return n;
	}
	return used;
}

/* The client has closed its side (or will send nothing more): a last line
 * without its '\n' is a request all the same. */
static void end_of_input(struct peer_conn *c)
{
	if (c->lb.len > 0 && !c->lb.skipping)
		framing_line_feed(&c->lb, "\n", 1, on_line, c);
	c->lb.len = 0;
	c->partial_since = 0;
}

/* Once the client has closed its side, the connection closes when every
 * request read has been answered in full: nothing held back, nothing
 * owed (ops->busy: e.g. a subscription to a job still running), nothing
 * left to write. */
static void maybe_finish(struct peer_conn *c)
{
	if (!c->eof || c->closing || c->stash || c->holds || c->pending)
		return;
	if (c->s->ops->busy && c->s->ops->busy(c->s->ctx, c))
		return;
	server_conn_close(c);
}

/* Frames what the stash holds if the connection takes requests again,
 * then reads on. */
static void take_up_input(struct peer_conn *c)
{
	while (c->stash && !input_held(c)) {
		char *stash = c->stash;
		size_t len = c->stash_len;
		c->stash = NULL;
		c->stash_len = 0;
		size_t used = frame(c, stash, len);
		if (used < len && !c->closing) {
			c->stash = stash;
			memmove(c->stash, c->stash + used, len - used);
			c->stash_len = len - used;
		} else {
			free(stash);
		}
	}
	if (c->closing)
		return;
	if (c->eof && !c->stash && !input_held(c))
		end_of_input(c);
	if (c->closing)
		return;
	update_reading(c);
	maybe_finish(c);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct peer_conn *c = (struct peer_conn *)h;
	*buf = uv_buf_init(c->s->readbuf, sizeof(c->s->readbuf));
}

/* At end of input: whether the client closed its socket altogether (a
 * Unix socket whose peer is closed reports POLLHUP) rather than only its
 * writing side (shutdown(SHUT_WR): it still reads the answers). */
static int peer_gone(struct peer_conn *c)
{
	uv_os_fd_t fd;
	struct pollfd p = { .events = POLLOUT };
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd))
		return 0;
	p.fd = fd;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct peer_conn *c = (struct peer_conn *)stream;
	if (nread == UV_EOF) {
		if (peer_gone(c)) {
			/* closed, not half-closed: nobody will read answers,
			 * so what its requests still wait for is dropped */
			server_conn_close(c);
			return;
		}
		c->eof = 1;
		take_up_input(c);
		return;
	}
	if (nread < 0) {
		log_debug("connection %llu: read failed: %s",
			  (unsigned long long)c->id, uv_strerror(nread));
		server_conn_close(c);
		return;
	}
	size_t used = frame(c, buf->base, (size_t)nread);
	if (used < (size_t)nread && !c->closing) {
		/* held: keep the rest, unread, until the connection may go on */
		c->stash = malloc((size_t)nread - used);
		if (!c->stash) {
			server_conn_close(c);
			return;
		}
		memcpy(c->stash, buf->base + used, (size_t)nread - used);
		c->stash_len = (size_t)nread - used;
	}
	if (!c->closing)
		update_reading(c);
}

static void start_reading(struct peer_conn *c)
{
	if (uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb) == 0)
		c->reading = 1;
}

static void resume_cb(uv_idle_t *idle)
{
	struct server *s = idle->data;
	uv_idle_stop(idle);
	struct peer_conn *c = s->conns;
	while (c) {
		struct peer_conn *next = c->next;
		if (c->resume_due && !c->closing) {
			c->resume_due = 0;
			if (s->ops->resumed)
				s->ops->resumed(s->ctx, c);
			if (!c->closing)
				take_up_input(c);
		}
		c = next;
	}
}

void server_conn_hold(struct peer_conn *c)
{
	c->holds++;
	update_reading(c);
}

void server_conn_release(struct peer_conn *c)
{
	if (c->holds > 0)
		c->holds--;
	if (c->holds || c->closing)
		return;
	/* later: this may run inside another connection's request */
	c->resume_due = 1;
	uv_idle_start(&c->s->resume_idle, resume_cb);
}

/* -------------------------------------------------------- accepting */

static void refuse(struct peer_conn *c, const char *limit_name, int limit)
{
	char msg[200];
	snprintf(msg, sizeof(msg),
		 "too many connections (%s is %d%s); close some and retry",
		 limit_name, limit,
		 strcmp(limit_name, "RLIMIT_NOFILE")
		     ? ""
		     : ": the daemon keeps the last file descriptors for its "
		       "own files");
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "name", error_name(ERR_TOO_LARGE));
	cJSON_AddStringToObject(data, "limit", limit_name);
	cJSON_AddNumberToObject(data, "value", limit);
	log_warn_uid(c->uid, "connection from uid %u refused: %s",
		     (unsigned)c->uid, msg);
	c->refused = 1;
	server_send(c, rpc_error_line(NULL, RPC_LIMIT, msg, data));
	server_close_after_flush(c);
}

/* The daemon is full when c comes: an idle connection of the uid that
 * holds the most closes in its place, if that uid holds more than c's;
 * 1 when one did. */
static int give_way(struct server *s, struct peer_conn *c)
{
	struct peer_conn *v = server_share_make_room(s, c);
	if (!v)
		return 0;
	char msg[200];
	snprintf(msg, sizeof(msg),
		 "closed to make room for another uid's connection: uid %u "
		 "holds the most of the daemon's connections (%d)",
		 (unsigned)v->uid, server_share_count(s, v->uid, 0));
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "name", error_name(ERR_TOO_LARGE));
	cJSON_AddStringToObject(data, "limit", "LIMIT_CONNECTIONS");
	cJSON_AddNumberToObject(data, "value", quota_connections());
	log_warn_uid(v->uid, "connection %llu (uid %u): %s",
		     (unsigned long long)v->id, (unsigned)v->uid, msg);
	v->refused = 1;
	server_send(v, rpc_error_line(NULL, RPC_LIMIT, msg, data));
	server_close_after_flush(v);
	return 1;
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct server *s = listener->data;
	if (status < 0) {
		log_warn("accept: %s", uv_strerror(status));
		return;
	}
	struct peer_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->s = s;
	uv_pipe_init(s->loop, &c->pipe, 0);
	s->nhandles++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	c->id = ++s->next_id;
	framing_line_init(&c->lb, LIMIT_LINE_BYTES);
	c->last_moved = uv_now(s->loop);
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0) {
		server_conn_close(c);
		return;
	}
	uv_os_fd_t fd;
	struct ucred cred = { 0 };
	socklen_t len = sizeof(cred);
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->uid = cred.uid;
		c->pid = cred.pid;
	} else {
		log_warn("SO_PEERCRED: %s; connection refused",
			 strerror(errno));
		server_conn_close(c);
		return;
	}
	log_debug("connection %llu: uid %u pid %d", (unsigned long long)c->id,
		  (unsigned)c->uid, (int)c->pid);
	long nofile = quota_descriptors_short(fd);
	int full = nofile || server_share_count(s, 0, 1) > quota_connections();
	if (server_share_count(s, c->uid, 0) > quota_connections_per_uid())
		refuse(c, "LIMIT_CONNECTIONS_PER_UID",
		       quota_connections_per_uid());
	else if (full && !give_way(s, c))
		/* what the daemon's own files need comes first */
		refuse(c, nofile ? "RLIMIT_NOFILE" : "LIMIT_CONNECTIONS",
		       nofile ? (int)nofile : quota_connections());
	else
		start_reading(c);
}

static void stall_cb(uv_timer_t *t)
{
	struct server *s = t->data;
	uint64_t now = uv_now(s->loop);
	log_uid_tick();
	struct peer_conn *c = s->conns;
	while (c) {
		struct peer_conn *next = c->next;
		/* a uv_write ends only once all of it is written: a slow
		 * reader's progress shows as libuv's queue getting shorter */
		size_t queued =
		    uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
		if (queued < c->queue_seen)
			c->last_moved = now;
		c->queue_seen = queued;
		if (!c->closing && !c->reading && !c->eof && peer_gone(c)) {
			/* a held connection reads nothing, so it sees no end
			 * of input: its client leaving is noticed here */
			log_debug("connection %llu: closed by its client while "
				  "held",
				  (unsigned long long)c->id);
			server_conn_close(c);
		} else if (!c->closing && c->partial_since && c->lb.len &&
			   !c->eof && now - c->partial_since > s->line_ms) {
			char msg[160];
			snprintf(msg, sizeof(msg),
				 "a request line was left "
				 "unfinished for %llu s (VKINRD_LINE_SECONDS); "
				 "end each request with a newline",
				 (unsigned long long)(s->line_ms / 1000));
			refuse_input(c, "VKINRD_LINE_SECONDS",
				     (double)(s->line_ms / 1000), msg);
		} else if (c->eof && !c->resume_due && !c->pending) {
			/* e.g. its subscription's job was removed */
			maybe_finish(c);
		} else if (!c->closing && c->pending > 0 &&
			   now - c->last_moved > s->stall_ms) {
			log_info(
			    "connection %llu (uid %u): dropped, its output "
			    "has not moved for %llu s",
			    (unsigned long long)c->id, (unsigned)c->uid,
			    (unsigned long long)(s->stall_ms / 1000));
			server_conn_close(c);
		}
		c = next;
	}
}

/* Binds path (socket_path_prepare first: a stale socket replaced, a live
 * one refused, the folder made), for its owner alone. */
static int bind_path(struct server *s, const char *path, char *err,
		     size_t errlen)
{
	int rc = socket_path_prepare(path, err, errlen);
	if (rc)
		return rc;
	mode_t old = umask(0177);
	rc = uv_pipe_bind(&s->listener, path);
	umask(old);
	if (rc < 0) {
		snprintf(err, errlen, "cannot create the socket %s: %s%s", path,
			 uv_strerror(rc),
			 rc == UV_EACCES || rc == UV_EPERM || rc == UV_EROFS
			     ? socket_path_access_hint()
			     : "");
		return ERR_IO;
	}
	/* no chmod after: the umask made it 0600 as it appeared, and a chmod
	 * now would undo one its owner made as soon as it saw the socket */
	s->path = strdup(path);
	return 0;
}

int server_create(struct server **out, uv_loop_t *loop, const char *path,
		  const struct server_ops *ops, void *ctx, char *err,
		  size_t errlen)
{
	*out = NULL;
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->loop = loop;
	s->ops = ops;
	s->ctx = ctx;
	const char *stall = getenv("VKINRD_STALL_SECONDS");
	s->stall_ms =
	    (stall && atoi(stall) > 0 ? atoi(stall) : SERVER_STALL_SECONDS) *
	    1000ull;
	const char *line = getenv("VKINRD_LINE_SECONDS");
	s->line_ms =
	    (line && atoi(line) > 0 ? atoi(line) : SERVER_LINE_SECONDS) *
	    1000ull;
	uv_pipe_init(loop, &s->listener, 0);
	s->listener.data = s;
	s->nhandles++;
	uv_timer_init(loop, &s->stall_timer);
	s->stall_timer.data = s;
	s->nhandles++;
	uv_idle_init(loop, &s->resume_idle);
	s->resume_idle.data = s;
	s->nhandles++;

	int rc;
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (pid && fds && atol(pid) == (long)getpid() && atoi(fds) >= 1) {
		rc = uv_pipe_open(&s->listener, 3);
		if (rc < 0) {
			snprintf(err, errlen,
				 "cannot use the socket passed by "
				 "systemd (fd 3): %s",
				 uv_strerror(rc));
			rc = ERR_IO;
		}
		s->activated = 1;
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
	} else {
		rc = bind_path(s, path, err, errlen);
	}
	if (!rc) {
		int lrc =
		    uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
		if (lrc < 0) {
			snprintf(err, errlen, "cannot listen on %s: %s",
				 s->activated ? "fd 3" : path,
				 uv_strerror(lrc));
			rc = ERR_IO;
		}
	}
	if (rc) {
		server_close(s);
		return rc;
	}
	s->listening = 1;
	uv_timer_start(&s->stall_timer, stall_cb, 1000, 1000);
	log_info("listening on %s",
		 s->activated ? "the socket from systemd" : path);
	*out = s;
	return 0;
}

static void server_handle_closed(uv_handle_t *h)
{
	struct server *s = h->data;
	s->nhandles--;
	maybe_free_server(s);
}

void server_stop_listening(struct server *s)
{
	if (!s || !s->listening)
		return;
	s->listening = 0;
	uv_close((uv_handle_t *)&s->listener, server_handle_closed);
	if (s->path) {
		unlink(s->path);
		free(s->path);
		s->path = NULL;
	}
}

static int server_closing_flag(struct server *s) { return s->ops == NULL; }

static void maybe_free_server(struct server *s)
{
	if (server_closing_flag(s) && s->nhandles == 0)
		free(s);
}

void server_close(struct server *s)
{
	if (!s)
		return;
	if (s->listening) {
		server_stop_listening(s);
	} else if (!uv_is_closing((uv_handle_t *)&s->listener)) {
		uv_close((uv_handle_t *)&s->listener, server_handle_closed);
	}
	if (s->path) {
		unlink(s->path);
		free(s->path);
		s->path = NULL;
	}
	uv_close((uv_handle_t *)&s->stall_timer, server_handle_closed);
	uv_close((uv_handle_t *)&s->resume_idle, server_handle_closed);
	struct peer_conn *c = s->conns;
	while (c) {
		struct peer_conn *next = c->next;
		server_conn_close(c);
		c = next;
	}
	s->ops = NULL; /* from now on the server frees itself */
	maybe_free_server(s);
}
