/*
 * methods.c - what each request does.
 *
 * methods_line takes one framed line, parses and classifies it, finds the
 * method in the table below and calls it with the params object; the
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
	{ M_HELLO, m_hello },
	{ M_DAEMON_STATUS, m_status },
	{ M_JOB_SUBMIT, m_submit },
	{ M_JOB_LIST, m_list },
	{ M_JOB_GET, m_get },
	{ M_JOB_LOGS, m_logs },
	{ M_JOB_PAUSE, m_pause },
	{ M_JOB_RESUME, m_resume },
	{ M_JOB_CANCEL, m_cancel },
	{ M_JOB_REMOVE, m_remove },
	{ M_JOB_RENICE, m_renice },
	{ M_JOB_EXPORT, m_export },
	{ M_JOB_SUBSCRIBE, m_subscribe },
	{ M_JOB_UNSUBSCRIBE, m_unsubscribe },
	{ M_MODEL_RENDER, m_render },
};

#define NMETHODS (sizeof(method_table) / sizeof(method_table[0]))

/* ---------------------------------------------------------- dispatch */

static void unknown_method(struct request *rq)
{
	char list[512] = "";
	for (size_t i = 0; i < NMETHODS; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", i ? ", " : "", method_table[i].name);
	fail(rq, RPC_METHOD_NOT_FOUND,
	     "unknown method \"%s\"; the methods "
	     "are: %s",
	     rq->method, list);
}

static void dispatch(struct request *rq, const cJSON *msg)
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
		rc = fail(rq, RPC_INVALID_PARAMS,
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
		return;
	}
	answer(rq, rc, result);
}

static int blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return 0;
	return 1;
}

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
		send_error(
		    c, NULL, RPC_LIMIT, msg,
		    views_limit_data("LIMIT_LINE_BYTES", LIMIT_LINE_BYTES), 0);
		return;
	}
	if (blank(line, len))
		return;
	if (memchr(line, '\0', len)) {
		send_error(c, NULL, RPC_PARSE_ERROR,
			   "the line contains a NUL "
			   "byte; a message is one JSON object in UTF-8",
			   NULL, 0);
		return;
	}
	size_t bad = usertext_utf8_end(line, len);
	if (bad < len) {
		snprintf(msg, sizeof(msg),
			 "the line is not valid UTF-8 (byte %zu "
			 "of %zu); a message is one JSON object in UTF-8",
			 bad, len);
		send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return;
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
		send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return;
	}
	if (end && !blank(end, line + len - end)) {
		cJSON_Delete(obj);
		send_error(c, NULL, RPC_PARSE_ERROR,
			   "extra text after the JSON "
			   "object; send one object per line",
			   NULL, 0);
		return;
	}
	struct strict_id exact;
	if (strict_check(line, len, &exact, msg, sizeof(msg)) < 0) {
		cJSON_Delete(obj);
		send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return;
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
		send_error(c, NULL, RPC_INTERNAL_ERROR, "out of memory", NULL,
			   0);
		return;
	}
	id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	if (twice) {
		send_error(c, id_usable && !id_twice ? id : NULL,
			   RPC_INVALID_REQUEST, msg, NULL, 0);
	} else if (kind == RPC_KIND_INVALID) {
		snprintf(msg, sizeof(msg), "invalid request: %s", why);
		send_error(c, id_usable ? id : NULL, RPC_INVALID_REQUEST, msg,
			   NULL, 0);
	} else if (kind == RPC_KIND_REQUEST || kind == RPC_KIND_NOTIFICATION) {
		struct request rq = {
			.svc = svc,
			.c = c,
			.id = kind == RPC_KIND_REQUEST ? id : NULL,
			.method =
			    cJSON_GetObjectItemCaseSensitive(obj, "method")
				->valuestring,
		};
		dispatch(&rq, obj);
		if (!server_conn_closing(c))
			subs_pump_conn(svc, c);
	}
	/* results and errors from a client answer nothing: ignored */
	cJSON_Delete(obj);
}

void methods_closed(void *ctx, struct peer_conn *c)
{
	struct service *svc = ctx;
	uint64_t id = server_conn_id(c);
	subs_drop_conn(svc, id);
	replies_drop_conn(svc, id);
	/* renders and exports nobody will read are not made */
	for (int i = 0; i < svc->nslots; i++)
		worker_drop_requests(svc->slots[i].w, id);
}

int methods_busy(void *ctx, struct peer_conn *c) { return subs_busy(ctx, c); }

void methods_drained(void *ctx, struct peer_conn *c) { subs_pump_conn(ctx, c); }
