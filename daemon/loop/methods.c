/*
 * methods.c - what each request does.
 *
 * methods_line takes one framed line, parses and classifies it, finds the
 * method in the table below and calls it with the params object (a line
 * holding an array is a batch: see "batches" below); the
 * methods live one family a file (methods_common.h lists them). A method
 * returns 0 and a result, a JSON-RPC error code and a message (always a
 * sentence saying what was wrong and how to fix it), or METHOD_DEFERRED
 * when the answer comes later (a worker renders or exports; a running job
 * is pausing or cancelling). Params are checked strictly: a missing,
 * mistyped, out-of-range or unknown field is refused by name.
 *
 * The job logic lives in queue.c, the transport in server.c, who follows
 * a job in subs.c, the JSON of the answers in views.c and which worker
 * does what in schedule.c; this file only translates requests into calls
 * there. Loop thread only.
 */
#include "loop/methods_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loop/decode.h"
#include "proto/errors.h"
#include "loop/events.h"
#include "formats/image_codec.h"
#include "proto/jsonrpc.h"
#include "proto/params.h"
#include "proto/strict.h"
#include "log.h"
#include "proto/protocol.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "formats/safetensors.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "proto/text.h"
#include "usertext.h"
#include "loop/views.h"

static const struct method_entry {
	const char *name;
	method_fn fn;
} method_table[] = {
	{ M_HELLO, methods_hello },
	{ M_DAEMON_STATUS, methods_daemon_status },
	{ M_JOB_SUBMIT, methods_job_submit },
	{ M_JOB_LIST, methods_job_list },
	{ M_JOB_GET, methods_job_get },
	{ M_JOB_LOGS, methods_job_logs },
	{ M_JOB_PAUSE, methods_job_pause },
	{ M_JOB_RESUME, methods_job_resume },
	{ M_JOB_CANCEL, methods_job_cancel },
	{ M_JOB_REMOVE, methods_job_remove },
	{ M_JOB_RETRY, methods_job_retry },
	{ M_JOB_RENICE, methods_job_renice },
	{ M_JOB_EXPORT, methods_job_export },
	{ M_JOB_SUBSCRIBE, methods_job_subscribe },
	{ M_JOB_UNSUBSCRIBE, methods_job_unsubscribe },
	{ M_MODEL_RENDER, methods_model_render },
};

#define NMETHODS (sizeof(method_table) / sizeof(method_table[0]))

/* ---------------------------------------------------------- dispatch */

static void unknown_method(struct request *rq)
{
	char list[512] = "";
	for (size_t i = 0; i < NMETHODS; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", i ? ", " : "", method_table[i].name);
	methods_fail(rq, RPC_METHOD_NOT_FOUND,
		     "unknown method \"%s\"; the methods "
		     "are: %s",
		     rq->method, list);
}

/* Runs one request; 1 when its answer comes later (the connection is
 * held until then). */
static int dispatch(struct request *rq, const cJSON *msg)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	cJSON *empty = NULL, *result = NULL;
	int rc = RPC_METHOD_NOT_FOUND;
	const struct method_entry *m = NULL;
	for (size_t i = 0; i < NMETHODS; i++)
		if (!strcmp(method_table[i].name, rq->method))
			m = &method_table[i];
	if (!m) {
		unknown_method(rq);
	} else if (params && !cJSON_IsObject(params)) {
		rc = methods_fail(rq, RPC_INVALID_PARAMS,
				  "\"params\" of %s must be an "
				  "object with named fields",
				  rq->method);
	} else {
		if (!params)
			params = empty = cJSON_CreateObject();
		rc = m->fn(rq, params, &result);
	}
	cJSON_Delete(empty);
	if (rc == METHOD_DEFERRED) {
		server_conn_hold(rq->c); /* its next request waits for this */
		return 1;
	}
	methods_answer(rq, rc, result);
	return 0;
}

static void batch_start(struct service *svc, struct peer_conn *c,
			const char *line, size_t len, int n);

static int blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return 0;
	return 1;
}

/* One message (a line, or one request of a batch: in_batch); 1 when its
 * answer comes later. */
static int message(struct service *svc, struct peer_conn *c, const char *line,
		   size_t len, int in_batch);

void methods_line(void *ctx, struct peer_conn *c, char *line, size_t len,
		  int too_long)
{
	struct service *svc = ctx;
	char msg[256];
	if (too_long) {
		snprintf(msg, sizeof(msg),
			 "the line is longer than %u bytes "
			 "(LIMIT_LINE_BYTES); it was skipped",
			 LIMIT_LINE_BYTES);
		methods_send_error(
		    c, NULL, RPC_LIMIT, msg,
		    views_limit_data("LIMIT_LINE_BYTES", LIMIT_LINE_BYTES), 0);
		return;
	}
	if (blank(line, len))
		return;
	message(svc, c, line, len, 0);
}

static int message(struct service *svc, struct peer_conn *c, const char *line,
		   size_t len, int in_batch)
{
	char msg[256];
	int deferred = 0;
	if (memchr(line, '\0', len)) {
		methods_send_error(
		    c, NULL, RPC_PARSE_ERROR,
		    "the line contains a NUL "
		    "byte; a message is one JSON object in UTF-8",
		    NULL, 0);
		return 0;
	}
	size_t bad = usertext_utf8_end(line, len);
	if (bad < len) {
		snprintf(msg, sizeof(msg),
			 "the line is not valid UTF-8 (byte %zu "
			 "of %zu); a message is one JSON object in UTF-8",
			 bad, len);
		methods_send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return 0;
	}
	const char *end = NULL;
	cJSON *obj = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (!obj) {
		const char *at = cJSON_GetErrorPtr();
		size_t off =
		    at && at >= line && at <= line + len ? at - line : 0;
		snprintf(msg, sizeof(msg),
			 "not valid JSON (error near byte %zu "
			 "of %zu); send one JSON-RPC object per line",
			 off, len);
		methods_send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return 0;
	}
	if (end && !blank(end, line + len - end)) {
		cJSON_Delete(obj);
		methods_send_error(c, NULL, RPC_PARSE_ERROR,
				   "extra text after the JSON "
				   "object; send one object per line",
				   NULL, 0);
		return 0;
	}
	if (cJSON_IsArray(obj) && !in_batch) { /* a batch (JSON-RPC 2.0) */
		batch_start(svc, c, line, len, cJSON_GetArraySize(obj));
		cJSON_Delete(obj);
		return 0;
	}
	struct strict_id exact;
	if (strict_check(line, len, &exact, msg, sizeof(msg)) < 0) {
		cJSON_Delete(obj);
		methods_send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return 0;
	}
	const char *why = NULL;
	enum rpc_kind kind = rpc_classify(obj, &why);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	int id_usable = cJSON_IsNumber(id) || cJSON_IsString(id);
	const char *where = "", *twice = strict_duplicate(obj, &where);
	int id_twice = twice && !where[0] && !strcmp(twice, "id");
	if (twice) {
		/* cJSON keeps the first copy: a second "epochs" would be
		 * silently ignored, so neither is taken */
		snprintf(msg, sizeof(msg),
			 "invalid request: the key \"%.64s\" "
			 "is given twice%s%.64s%s; give each key once",
			 twice, where[0] ? " in \"" : "", where,
			 where[0] ? "\"" : "");
		usertext_sanitize(msg);
	}
	if (strict_keep_id(obj, &exact) < 0) { /* twice is gone now */
		cJSON_Delete(obj);
		methods_send_error(c, NULL, RPC_INTERNAL_ERROR, "out of memory",
				   NULL, 0);
		return 0;
	}
	id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	if (twice) {
		methods_send_error(c, id_usable && !id_twice ? id : NULL,
				   RPC_INVALID_REQUEST, msg, NULL, 0);
	} else if (kind == RPC_KIND_INVALID) {
		snprintf(msg, sizeof(msg), "invalid request: %s", why);
		methods_send_error(c, id_usable ? id : NULL,
				   RPC_INVALID_REQUEST, msg, NULL, 0);
	} else if (kind == RPC_KIND_REQUEST || kind == RPC_KIND_NOTIFICATION) {
		struct request rq = {
			.svc = svc,
			.c = c,
			.id = kind == RPC_KIND_REQUEST ? id : NULL,
			.method =
			    cJSON_GetObjectItemCaseSensitive(obj, "method")
				->valuestring,
		};
		deferred = dispatch(&rq, obj);
		if (!server_conn_closing(c))
			subs_pump_conn(svc, c);
	}
	/* results and errors from a client answer nothing: ignored */
	cJSON_Delete(obj);
	return deferred;
}

/* ------------------------------------------------------- batches */

/*
 * A batch (JSON-RPC 2.0): an array of requests, answered with one array of
 * their answers. Its requests run one after the other as lines would,
 * each through message(): one whose answer comes later holds the
 * connection, and the next runs once it is answered (methods_resumed).
 * While the batch is open every answer server_send is given for the
 * connection comes to methods_sending, which keeps it; notifications
 * (job.progress, job.state) go out as they come. Once every request has
 * been answered the answers go out as one line, in the order of their
 * requests, or nothing when all were notifications. A connection has at
 * most one open batch: its next line waits until the batch is answered.
 */
struct rpc_batch {
	struct rpc_batch *next;
	uint64_t conn;
	char **items; /* the requests' text, as sent */
	size_t *lens;
	int n, done;
	char *out; /* the answers so far, comma-separated */
	size_t out_len;
	int nout;
};

static struct rpc_batch *batch_of(struct service *svc, uint64_t conn)
{
	for (struct rpc_batch *b = svc->batches; b; b = b->next)
		if (b->conn == conn)
			return b;
	return NULL;
}

static void batch_free(struct service *svc, struct rpc_batch *b)
{
	for (struct rpc_batch **pp = &svc->batches; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	for (int i = 0; i < b->n; i++)
		free(b->items[i]);
	free(b->items);
	free(b->lens);
	free(b->out);
	free(b);
}

/* The text of each element of a JSON array that cJSON has parsed: the
 * top-level commas, outside strings. */
static int split_items(struct rpc_batch *b, const char *line, size_t len)
{
	size_t i = 0, start;
	int depth = 0, k = 0;
	while (i < len && line[i] != '[')
		i++;
	start = ++i;
	for (; i < len && k < b->n; i++) {
		char ch = line[i];
		if (ch == '"') {
			for (i++; i < len && line[i] != '"'; i++)
				i += line[i] == '\\';
		} else if (ch == '[' || ch == '{') {
			depth++;
		} else if ((ch == ']' || ch == '}') && depth > 0) {
			depth--;
		} else if ((ch == ',' || ch == ']') && depth == 0) {
			b->lens[k] = i - start;
			if (!(b->items[k] = strndup(line + start, i - start)))
				return -1;
			k++;
			start = i + 1;
		}
	}
	return k == b->n ? 0 : -1;
}

/* Runs the batch's requests until one waits, or sends its answers. */
static void batch_pump(struct service *svc, struct peer_conn *c,
		       struct rpc_batch *b)
{
	while (b->done < b->n && !server_conn_closing(c)) {
		int i = b->done++;
		if (message(svc, c, b->items[i], b->lens[i], 1))
			return; /* methods_resumed goes on */
	}
	char *line = NULL;
	if (b->nout && asprintf(&line, "[%s]\n", b->out) < 0)
		line = NULL;
	int nout = b->nout;
	batch_free(svc, b); /* closed before its line is sent */
	if (nout && !server_conn_closing(c))
		server_send(c, line);
	else
		free(line);
}

static void batch_start(struct service *svc, struct peer_conn *c,
			const char *line, size_t len, int n)
{
	if (n == 0) {
		methods_send_error(
		    c, NULL, RPC_INVALID_REQUEST,
		    "invalid request: an empty batch; a batch is an "
		    "array of one or more requests",
		    NULL, 0);
		return;
	}
	struct rpc_batch *b = calloc(1, sizeof(*b));
	if (b) {
		b->conn = server_conn_id(c);
		b->n = n;
		b->items = calloc(n, sizeof(*b->items));
		b->lens = calloc(n, sizeof(*b->lens));
		b->next = svc->batches;
		svc->batches = b;
	}
	if (!b || !b->items || !b->lens || split_items(b, line, len)) {
		if (b)
			batch_free(svc, b);
		methods_send_error(c, NULL, RPC_INTERNAL_ERROR, "out of memory",
				   NULL, 0);
		return;
	}
	batch_pump(svc, c, b);
}

int methods_sending(void *ctx, struct peer_conn *c, char *line)
{
	struct rpc_batch *b = batch_of(ctx, server_conn_id(c));
	/* the daemon's notifications start so (jsonrpc.c): not answers */
	static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\"";
	if (!b || !strncmp(line, note, sizeof(note) - 1))
		return 0;
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	char *out = realloc(b->out, b->out_len + n + 2);
	if (out) {
		if (b->nout)
			out[b->out_len++] = ',';
		memcpy(out + b->out_len, line, n);
		b->out_len += n;
		out[b->out_len] = '\0';
		b->out = out;
		b->nout++;
	}
	free(line);
	return 1;
}

void methods_resumed(void *ctx, struct peer_conn *c)
{
	struct rpc_batch *b = batch_of(ctx, server_conn_id(c));
	if (b)
		batch_pump(ctx, c, b);
}

void methods_closed(void *ctx, struct peer_conn *c)
{
	struct service *svc = ctx;
	uint64_t id = server_conn_id(c);
	struct rpc_batch *b = batch_of(svc, id);
	if (b)
		batch_free(svc, b);
	subs_drop_conn(svc, id);
	replies_drop_conn(svc, id);
	/* renders and exports nobody will read are not made */
	for (int i = 0; i < svc->nslots; i++)
		worker_drop_requests(svc->slots[i].w, id);
}

int methods_busy(void *ctx, struct peer_conn *c)
{
	return subs_busy(ctx, c) || batch_of(ctx, server_conn_id(c));
}

void methods_drained(void *ctx, struct peer_conn *c) { subs_pump_conn(ctx, c); }
