/*
 * conn.c - the transport of vkinrctl: a blocking Unix stream socket, NDJSON
 * framing (proto/framing.h) and JSON-RPC envelopes (proto/jsonrpc.h).
 *
 * Everything the daemon sends is read through one path, read_some(): bytes
 * go into the line buffer, each complete line is parsed and sorted into one
 * of two queues, answers (result or error) and notifications. conn_call
 * waits on the first queue, conn_next_notification on the second, so
 * progress that arrives while a call is outstanding is never lost and never
 * mistaken for its answer. Answers may be very long (an export carries two
 * files in base64), so the line limit on reading is CONN_MAX_ANSWER_BYTES;
 * on sending, a request longer than the daemon's documented limit is
 * refused here, before it is sent, with ERR_TOO_LARGE.
 *
 * Every call has a deadline (conn_open's timeout): a daemon that was
 * stopped (SIGSTOP) or hangs must not hang its client. Connecting and
 * sending use SO_SNDTIMEO (a Unix socket's connect waits on a full
 * backlog that long, then fails with EAGAIN); waiting for an answer uses
 * poll. A method whose answer waits for a worker (an export, a render, a
 * pause or cancel at the epoch boundary, a submission's decoding) may
 * rightly take longer: at its deadline a second connection asks the
 * daemon `hello`, and the call goes on waiting as long as that is
 * answered in time. Notifications (watch, wait) are waited for as long
 * as the caller asks.
 *
 * This module prints nothing and knows no command; it reports failures as
 * codes and sentences that the caller shows.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "proto/framing.h"
#include "proto/jsonrpc.h"
#include "proto/protocol.h"
#include "proto/text.h"

#define READ_CHUNK (256u << 10)

/* A FIFO of parsed messages. */
struct msg_queue {
	cJSON **items;
	size_t head, len, cap; /* items[head .. len) are queued */
};

struct client_conn {
	int fd;
	int next_id;
	struct line_buffer lines;
	char *chunk;              /* READ_CHUNK bytes for recv */
	struct msg_queue answers; /* results and errors, in order */
	struct msg_queue notifications;
	int eof;         /* the daemon closed its side */
	int bad_line;    /* the daemon sent a non-JSON-RPC line */
	int escape_text; /* text_escape_tree every message */
	int timeout_ms;  /* per call; -1: none */
	char *path;      /* the socket, for the liveness probe */

	int rpc_code; /* last JSON-RPC error */
	char *rpc_message;
	cJSON *rpc_data;
	char why[256]; /* last transport failure, in words */
};

/* ---------------------------------------------------------------------- */
/* Queues                                                                  */
/* ---------------------------------------------------------------------- */

static int queue_push(struct msg_queue *q, cJSON *msg)
{
	if (q->head > 0 && q->head == q->len)
		q->head = q->len = 0;
	if (q->len == q->cap) {
		if (q->head > 0) { /* slide down before growing */
			memmove(q->items, q->items + q->head,
				(q->len - q->head) * sizeof(*q->items));
			q->len -= q->head;
			q->head = 0;
		}
		if (q->len == q->cap) {
			size_t cap = q->cap ? q->cap * 2 : 16;
			cJSON **items = realloc(q->items, cap * sizeof(*items));
			if (!items)
				return ERR_NOMEM;
			q->items = items;
			q->cap = cap;
		}
	}
	q->items[q->len++] = msg;
	return 0;
}

static cJSON *queue_pop(struct msg_queue *q)
{
	if (q->head == q->len)
		return NULL;
	return q->items[q->head++];
}

static void queue_finish(struct msg_queue *q)
{
	cJSON *msg;
	while ((msg = queue_pop(q)))
		cJSON_Delete(msg);
	free(q->items);
}

/* ---------------------------------------------------------------------- */
/* Socket                                                                  */
/* ---------------------------------------------------------------------- */

/* SO_SNDTIMEO (connect, send) of timeout_ms, when there is one. */
static void set_send_timeout(int fd, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
	if (timeout_ms > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A connected socket to path, or -1 with why set. */
static int connect_to(const char *path, int timeout_ms, char *why,
		      size_t whylen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (!*path) {
		snprintf(why, whylen, "the socket path is empty");
		errno = EINVAL;
		return -1;
	}
	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(why, whylen,
			 "the path is longer than a Unix socket allows "
			 "(%zu bytes)",
			 sizeof(addr.sun_path) - 1);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	set_send_timeout(fd, timeout_ms);
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno == EINTR)
			continue;
		int saved = errno;
		char dir[sizeof(addr.sun_path)];
		const char *slash = strrchr(path, '/');
		snprintf(dir, sizeof(dir), "%.*s",
			 slash && slash != path ? (int)(slash - path) : 1,
			 slash ? path : ".");
		struct stat st;
		if (saved == ENOENT && stat(dir, &st))
			snprintf(why, whylen, "its folder %s: %s", dir,
				 strerror(errno));
		else if (saved == EAGAIN || saved == EWOULDBLOCK)
			snprintf(why, whylen,
				 "it accepted no connection "
				 "within %g s: it may be stopped (SIGSTOP) or "
				 "overloaded; --call-timeout S or "
				 "VKINR_CALL_TIMEOUT gives it longer",
				 timeout_ms / 1000.0);
		else
			snprintf(why, whylen, "%s", strerror(saved));
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int conn_open(const char *path, int timeout_ms, struct client_conn **out,
	      char *why, size_t whylen)
{
	struct client_conn *c;
	int fd;

	*out = NULL;
	if ((fd = connect_to(path, timeout_ms, why, whylen)) < 0)
		return errno == EINVAL || errno == ENAMETOOLONG ? ERR_INVALID
								: ERR_IO;
	c = calloc(1, sizeof(*c));
	if (c)
		c->chunk = malloc(READ_CHUNK);
	if (c)
		c->path = strdup(path);
	if (!c || !c->chunk || !c->path) {
		if (c) {
			free(c->chunk);
			free(c->path);
		}
		free(c);
		close(fd);
		snprintf(why, whylen, "%s", error_message(ERR_NOMEM));
		return ERR_NOMEM;
	}
	c->fd = fd;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : -1;
	framing_line_init(&c->lines, CONN_MAX_ANSWER_BYTES);
	*out = c;
	return 0;
}

void conn_escape_text(struct client_conn *c) { c->escape_text = 1; }

void conn_close(struct client_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	framing_line_finish(&c->lines);
	queue_finish(&c->answers);
	queue_finish(&c->notifications);
	free(c->chunk);
	free(c->path);
	free(c->rpc_message);
	cJSON_Delete(c->rpc_data);
	free(c);
}

static int send_all(struct client_conn *c, const char *data, size_t n)
{
	while (n > 0) {
		ssize_t k = send(c->fd, data, n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				snprintf(c->why, sizeof(c->why),
					 "vkinrd read "
					 "nothing of the request for %g s",
					 c->timeout_ms / 1000.0);
				return CLIENT_ERR_TIMEOUT;
			}
			snprintf(c->why, sizeof(c->why),
				 "sending to vkinrd failed: %s",
				 strerror(errno));
			return ERR_IO;
		}
		data += k;
		n -= (size_t)k;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                 */
/* ---------------------------------------------------------------------- */

/* line_fn: sorts one line from the daemon into its queue. */
static int on_line(void *ctx, char *line, size_t len, int too_long)
{
	struct client_conn *c = ctx;
	const char *why = NULL;
	cJSON *msg;

	if (too_long) {
		snprintf(c->why, sizeof(c->why),
			 "vkinrd sent a line longer than %u MiB",
			 CONN_MAX_ANSWER_BYTES >> 20);
		c->bad_line = 1;
		return 0;
	}
	if (len == 0)
		return 0;
	msg = cJSON_ParseWithLength(line, len);
	if (!msg) {
		snprintf(c->why, sizeof(c->why),
			 "vkinrd sent a line that is not JSON (%zu bytes)",
			 len);
		c->bad_line = 1;
		return 0;
	}
	if (c->escape_text && text_escape_tree(msg) < 0) {
		cJSON_Delete(msg);
		return ERR_NOMEM;
	}
	switch (rpc_classify(msg, &why)) {
	case RPC_KIND_NOTIFICATION:
		return queue_push(&c->notifications, msg);
	case RPC_KIND_RESULT:
	case RPC_KIND_ERROR:
		return queue_push(&c->answers, msg);
	default:
		/* A request from the daemon, or garbage: neither is ours. */
		snprintf(c->why, sizeof(c->why),
			 "vkinrd sent a message the client does not "
			 "understand (%s)",
			 why ? why : "unexpected kind");
		cJSON_Delete(msg);
		return 0;
	}
}

/*
 * Reads what is available, waiting up to timeout_ms (-1: forever). Returns
 * 0 (possibly with nothing new on timeout) or a negative code.
 */
static int read_some(struct client_conn *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int rc;

	if (c->eof) {
		snprintf(c->why, sizeof(c->why),
			 "vkinrd closed the connection");
		return ERR_IO;
	}
	for (;;) {
		rc = poll(&pfd, 1, timeout_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			snprintf(c->why, sizeof(c->why), "poll: %s",
				 strerror(errno));
			return ERR_IO;
		}
		if (rc == 0)
			return 0;
		break;
	}
	do
		n = recv(c->fd, c->chunk, READ_CHUNK, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		snprintf(c->why, sizeof(c->why),
			 "reading from vkinrd failed: %s", strerror(errno));
		return ERR_IO;
	}
	if (n == 0) {
		c->eof = 1;
		snprintf(c->why, sizeof(c->why),
			 "vkinrd closed the connection");
		return ERR_IO;
	}
	rc = framing_line_feed(&c->lines, c->chunk, (size_t)n, on_line, c);
	return rc < 0 ? rc : 0;
}

static int answer_matches(const cJSON *msg, int id)
{
	const cJSON *mid = cJSON_GetObjectItemCaseSensitive(msg, "id");

	/* An error with a null id answers a request the daemon could not
	 * read; the client has only one outstanding, so it is ours. */
	if (!mid || cJSON_IsNull(mid))
		return 1;
	return cJSON_IsNumber(mid) && mid->valuedouble == (double)id;
}

static void keep_error(struct client_conn *c, const cJSON *msg)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(err, "message");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(err, "data");

	free(c->rpc_message);
	cJSON_Delete(c->rpc_data);
	c->rpc_code = cJSON_IsNumber(code) ? code->valueint : 0;
	c->rpc_message =
	    strdup(cJSON_IsString(text) ? text->valuestring : "(no message)");
	c->rpc_data = data ? cJSON_Duplicate(data, 1) : NULL;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the daemon's answer to method may wait for a worker's epoch
 * boundary (or for an image to be decoded), and so rightly take longer
 * than the timeout while the daemon is well. */
static int may_wait_for_worker(const char *method)
{
	static const char *const slow[] = { M_JOB_EXPORT, M_MODEL_RENDER,
					    M_JOB_PAUSE, M_JOB_CANCEL,
					    M_JOB_SUBMIT };
	for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++)
		if (!strcmp(method, slow[i]))
			return 1;
	return 0;
}

/* Whether the daemon answers `hello` on a second connection within the
 * timeout: it is alive, and a slow answer is only waiting for a worker. */
static int daemon_answers(const struct client_conn *c)
{
	static const char hello[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" M_HELLO "\"}\n";
	char why[256], buf[4096];
	long long deadline = now_ms() + c->timeout_ms;
	int fd = connect_to(c->path, c->timeout_ms, why, sizeof(why)), ok = 0;

	if (fd < 0)
		return 0;
	if (send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL) ==
	    (ssize_t)(sizeof(hello) - 1)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left;
		while (!ok && (left = deadline - now_ms()) > 0) {
			int n = poll(&pfd, 1, (int)left);
			if (n < 0 && errno == EINTR)
				continue;
			ssize_t k = n > 0 ? recv(fd, buf, sizeof(buf), 0) : -1;
			if (k <= 0)
				break;
			ok = memchr(buf, '\n', (size_t)k) != NULL;
		}
	}
	close(fd);
	return ok;
}

/* ---------------------------------------------------------------------- */
/* Calls                                                                   */
/* ---------------------------------------------------------------------- */

int conn_call(struct client_conn *c, const char *method, cJSON *params,
	      cJSON **result)
{
	int id, rc = conn_send(c, method, params, &id);
	*result = NULL;
	return rc < 0 ? rc : conn_await(c, id, method, result);
}

int conn_send(struct client_conn *c, const char *method, cJSON *params, int *id)
{
	char *line;
	size_t len;
	int rc;

	*id = ++c->next_id;
	line = rpc_request_line(*id, method, params);
	if (!line)
		return ERR_NOMEM;
	len = strlen(line);
	if (len > LIMIT_LINE_BYTES) {
		snprintf(c->why, sizeof(c->why),
			 "the request is %zu MiB; vkinrd accepts at most "
			 "%u MiB on one line",
			 (len + (1u << 20) - 1) >> 20, LIMIT_LINE_BYTES >> 20);
		free(line);
		return ERR_TOO_LARGE;
	}
	rc = send_all(c, line, len);
	free(line);
	return rc < 0 ? rc : 0;
}

int conn_await(struct client_conn *c, int id, const char *method,
	       cJSON **result)
{
	long long deadline = c->timeout_ms > 0 ? now_ms() + c->timeout_ms : -1;
	cJSON *msg;
	int rc;

	*result = NULL;
	for (;;) {
		while ((msg = queue_pop(&c->answers))) {
			if (!answer_matches(msg, id)) {
				cJSON_Delete(msg); /* a stale answer */
				continue;
			}
			if (cJSON_HasObjectItem(msg, "error")) {
				keep_error(c, msg);
				cJSON_Delete(msg);
				return CLIENT_ERR_RPC;
			}
			*result = cJSON_DetachItemFromObjectCaseSensitive(
			    msg, "result");
			cJSON_Delete(msg);
			if (!*result)
				*result = cJSON_CreateNull();
			return *result ? 0 : ERR_NOMEM;
		}
		if (c->bad_line) {
			c->bad_line = 0;
			return ERR_FORMAT;
		}
		if (deadline >= 0 && now_ms() >= deadline) {
			if (!may_wait_for_worker(method) ||
			    !daemon_answers(c)) {
				snprintf(c->why, sizeof(c->why),
					 "vkinrd did not "
					 "answer %s within %g s",
					 method, c->timeout_ms / 1000.0);
				return CLIENT_ERR_TIMEOUT;
			}
			deadline = now_ms() + c->timeout_ms; /* it is alive */
		}
		if ((rc = read_some(
			 c, deadline < 0 ? -1 : (int)(deadline - now_ms()))) <
		    0)
			return rc;
	}
}

int conn_next_notification(struct client_conn *c, int timeout_ms, cJSON **msg)
{
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	int rc, wait;

	for (;;) {
		if ((*msg = queue_pop(&c->notifications)))
			return 0;
		if (c->bad_line) {
			c->bad_line = 0;
			return ERR_FORMAT;
		}
		wait = -1;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			if (left <= 0)
				return 0;
			wait = (int)left;
		}
		if ((rc = read_some(c, wait)) < 0)
			return rc;
	}
}

int conn_last_error(const struct client_conn *c, const char **message,
		    const cJSON **data)
{
	if (message)
		*message = c->rpc_message ? c->rpc_message : "(no message)";
	if (data)
		*data = c->rpc_data;
	return c->rpc_code;
}

const char *conn_why(const struct client_conn *c)
{
	return c->why[0] ? c->why : "unknown failure";
}
