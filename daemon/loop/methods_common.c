/*
 * methods_common.c - what every family of methods shares (see
 * methods_common.h): the error sentence, the strict readers of params
 * (a missing, mistyped, out-of-range or unknown field is refused by
 * name), the job a request names, and the hand-off to a worker or to
 * decode.c, and the answer sent back.
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

#include "proto/errors.h"
#include "loop/events.h"
#include "formats/image_codec.h"
#include "proto/jsonrpc.h"
#include "proto/params.h"
#include "log.h"
#include "proto/protocol.h"
#include "proto/text.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "formats/safetensors.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "usertext.h"
#include "loop/views.h"

/* ------------------------------------------------------------ errors */

void methods_send_error(struct peer_conn *c, const cJSON *id, int code,
			const char *msg, cJSON *data, int err_name)
{
	server_send(c, views_error_line(id, code, msg, data, err_name));
}

int methods_fail(struct request *rq, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rq->msg, sizeof(rq->msg), fmt, ap);
	va_end(ap);
	usertext_sanitize(rq->msg); /* it may quote (and cut) client text */
	return code;
}

/* An image that image_decode refused: over a size limit is RPC_LIMIT
 * naming the limit (IMAGE_MAX_SIDE or IMAGE_MAX_PIXELS, from the size the
 * PNG's IHDR, the JPEG's frame header or the WebP's header states; IMAGE_MAX_CHUNK when the
 * size is within those), anything else RPC_BAD_IMAGE. */
static int image_refused(struct request *rq, const char *key, int rc,
			 const char *err, const uint8_t *bytes, size_t size)
{
	if (rc != ERR_TOO_LARGE)
		return methods_fail(rq, RPC_BAD_IMAGE, "\"%s\" was refused: %s",
				    key, err[0] ? err : error_message(rc));
	uint32_t w = 0, h = 0;
	image_stated_size(bytes, size, &w, &h);
	if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || !w || !h)
		rq->data = views_limit_data("IMAGE_MAX_SIDE", IMAGE_MAX_SIDE);
	else if ((uint64_t)w * h > IMAGE_MAX_PIXELS)
		rq->data =
		    views_limit_data("IMAGE_MAX_PIXELS", IMAGE_MAX_PIXELS);
	else
		rq->data = views_limit_data("IMAGE_MAX_CHUNK", IMAGE_MAX_CHUNK);
	return methods_fail(rq, RPC_LIMIT, "\"%s\" was refused: %s", key,
			    err[0] ? err : error_message(rc));
}

/* ------------------------------------------------------------ params */

/* Refuses keys outside the list (NULL-terminated). */
int methods_check_keys(struct request *rq, const cJSON *params,
		       const char *const *known)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, params)
	{
		int ok = 0;
		for (const char *const *k = known; *k; k++)
			ok |= !strcmp(item->string, *k);
		if (ok)
			continue;
		char list[512] = ""; /* every key of job.submit fits */
		for (const char *const *k = known; *k; k++)
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s",
				 k == known ? "" : ", ", *k);
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "unknown parameter \"%s\" for %s; it takes: %s",
		    item->string, rq->method, list[0] ? list : "none");
	}
	return 0;
}

/* An optional integer in [lo, hi]; 0 when absent (value untouched). */
int methods_get_int(struct request *rq, const cJSON *params, const char *key,
		    double lo, double hi, int64_t *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "\"%s\" must be an integer (got %s)", key,
				    cJSON_IsString(v)   ? "a string"
				    : cJSON_IsNumber(v) ? "a fraction"
							: "another type");
	if (v->valuedouble < lo || v->valuedouble > hi)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"%s\" must be between %.0f and %.0f (got %.17g)", key, lo,
		    hi, v->valuedouble);
	*value = (int64_t)v->valuedouble;
	return 0;
}

/* An optional string kept for the client (source, key): UTF-8 text
 * without control characters that fits in buf. */
int methods_get_text(struct request *rq, const cJSON *params, const char *key,
		     char *buf, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size ||
	    !text_is_clean(v->valuestring, strlen(v->valuestring)))
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"%s\" must be a string of "
		    "at most %zu bytes of UTF-8 without control "
		    "characters",
		    key, size - 1);
	snprintf(buf, size, "%s", v->valuestring);
	return 0;
}

/* A {"KEY": BASE64} object's text, e.g. image.png, taken from params
 * (ownership passes: the request's JSON no longer holds it); decode.c
 * decodes it off the loop thread. */
int methods_get_b64(struct request *rq, const cJSON *params, const char *key,
		    const char *sub, int required, char **text)
{
	*text = NULL;
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!o) {
		if (required)
			return methods_fail(
			    rq, RPC_INVALID_PARAMS,
			    "\"%s\" is required: {\"%s\": BASE64}", key, sub);
		return 0;
	}
	cJSON *s = cJSON_GetObjectItemCaseSensitive(o, sub);
	if (!cJSON_IsObject(o) || !cJSON_IsString(s))
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"%s\" must be an object {\"%s\": BASE64} (the "
		    "daemon never opens a path a client names)",
		    key, sub);
	for (const cJSON *k = o->child; k; k = k->next)
		if (strcmp(k->string, sub))
			return methods_fail(
			    rq, RPC_INVALID_PARAMS,
			    "unknown parameter \"%.64s\" in \"%s\"; it "
			    "takes only \"%s\": {\"%s\": BASE64}",
			    k->string, key, sub, sub);
	*text = s->valuestring;
	s->valuestring = NULL; /* cJSON_Delete skips a NULL string */
	return 0;
}

/* The key of an image object: {"jpeg": B64} for a JPEG, {"webp": B64}
 * for a WebP, else {"png": B64} (the daemon tells them apart by their
 * bytes anyway). */
const char *methods_image_key(const cJSON *params, const char *key)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, key);
	if (cJSON_GetObjectItemCaseSensitive(o, "jpeg"))
		return "jpeg";
	return cJSON_GetObjectItemCaseSensitive(o, "webp") ? "webp" : "png";
}

/* A decoded input that was refused: bad base64, or what its decoder said. */
int methods_input_refused(struct request *rq, const char *key, const char *sub,
			  const struct decode_input *in)
{
	if (in->rc == ERR_NOMEM)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	if (in->bad_base64)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"%s.%s\" is not valid base64 (RFC 4648, with "
		    "padding)",
		    key, sub);
	if (strcmp(sub, "safetensors"))
		return image_refused(rq, key, in->rc, in->err, in->bytes,
				     in->size);
	return methods_fail(rq, RPC_BAD_MODEL, "\"%s\" was refused: %s", key,
			    in->err[0] ? in->err : error_message(in->rc));
}

int methods_may_touch(struct request *rq, const struct job *job)
{
	uid_t uid = server_conn_uid(rq->c);
	if (uid == 0 || uid == rq->svc->uid || uid == job->uid)
		return 0;
	rq->data = cJSON_CreateObject();
	cJSON_AddNumberToObject(rq->data, "owner", job->uid);
	return methods_fail(
	    rq, RPC_PERMISSION,
	    "job %s belongs to uid %u: only its owner and root may "
	    "use %s on it (others may only look: job.get, job.list, "
	    "job.logs, "
	    "job.subscribe)",
	    job->id, (unsigned)job->uid, rq->method);
}

/* params.job: the id of an existing job, as the string job.submit gave
 * or as an exact integer; anything else (a fraction, a number beyond
 * 2^53 that JSON cannot carry exactly) is refused rather than rounded
 * onto another job. */
int methods_job_id_text(const cJSON *v, char id[METHODS_ID_TEXT])
{
	if (cJSON_IsString(v) && strlen(v->valuestring) < METHODS_ID_TEXT) {
		snprintf(id, METHODS_ID_TEXT, "%s", v->valuestring);
		return METHODS_ID_OK;
	}
	if (cJSON_IsString(v))
		return METHODS_ID_LONG;
	if (cJSON_IsNumber(v) && v->valuedouble >= 1 &&
	    v->valuedouble < 9007199254740992.0 &&
	    v->valuedouble == floor(v->valuedouble)) {
		snprintf(id, METHODS_ID_TEXT, "%.0f", v->valuedouble);
		return METHODS_ID_OK;
	}
	return cJSON_IsNumber(v) ? METHODS_ID_BAD_NUMBER : METHODS_ID_NONE;
}

int methods_get_job(struct request *rq, const cJSON *params, struct job **out)
{
	char id[METHODS_ID_TEXT];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "job");
	int kind = methods_job_id_text(v, id);
	if (kind == METHODS_ID_LONG)
		return methods_fail(rq, RPC_JOB_NOT_FOUND,
				    "no job has an id of %zu "
				    "bytes; job ids are numbers such as \"12\" "
				    "(job.list shows them)",
				    strlen(v->valuestring));
	else if (kind == METHODS_ID_BAD_NUMBER)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"job\" must be a job id "
		    "as job.submit returned it, e.g. \"12\" (got the "
		    "number %.17g, which is not one)",
		    v->valuedouble);
	else if (kind == METHODS_ID_NONE)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"job\" is required: the id of a job as "
		    "job.submit returned it, e.g. {\"job\": \"1\"}");
	*out = queue_find(rq->svc->queue, id);
	if (!*out)
		return methods_fail(rq, RPC_JOB_NOT_FOUND,
				    "no job with id \"%s\"", id);
	return 0;
}

/* ---------------------------------------------------- worker requests */

/* Queues req for slot's worker, unless its uid has LIMIT_REQUESTS_PER_UID
 * requests waiting already (across connections and workers): then it is
 * refused at once, so that one user cannot pile up work the workers serve
 * between epochs. */
int methods_defer_to_worker(struct request *rq, struct worker_slot *slot,
			    struct work_request *req)
{
	struct service *svc = rq->svc;
	uid_t uid = server_conn_uid(rq->c);
	int waiting = 0;
	for (int i = 0; i < svc->nslots; i++)
		waiting += worker_count_requests(svc->slots[i].w, uid);
	if (waiting >= quota_requests_per_uid()) {
		work_request_destroy(req);
		rq->data = views_limit_data("LIMIT_REQUESTS_PER_UID",
					    quota_requests_per_uid());
		return methods_fail(
		    rq, RPC_LIMIT,
		    "uid %u has %d renders and exports "
		    "waiting for a worker already (the limit); retry "
		    "when one is answered",
		    (unsigned)uid, waiting);
	}
	req->conn = server_conn_id(rq->c);
	req->uid = uid;
	if (replies_add(svc, req->conn, rq->id, req)) {
		work_request_destroy(req);
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	worker_request(slot->w, req);
	return METHOD_DEFERRED;
}

/* The job named by params (which hold only "job") of a method that acts
 * on it: it must exist and the caller must own it (or be root). */
int methods_touchable_job(struct request *rq, const cJSON *params,
			  struct job **out)
{
	int rc = methods_check_keys(rq, params, methods_job_only);
	if (rc || (rc = methods_get_job(rq, params, out)))
		return rc;
	return methods_may_touch(rq, *out);
}

const char *const methods_job_only[] = { "job", NULL };

/* ------------------------------------------------ decoding inputs */

/* Starts decoding for rq: METHOD_DEFERRED, or an error. */
int methods_pending_bind(struct request *rq, struct pending *pd)
{
	pd->svc = rq->svc;
	pd->conn = server_conn_id(rq->c);
	pd->method = !strcmp(rq->method, M_JOB_SUBMIT)   ? M_JOB_SUBMIT
		     : !strcmp(rq->method, M_JOB_EXPORT) ? M_JOB_EXPORT
							 : M_MODEL_RENDER;
	if (rq->id && !(pd->rpc_id = cJSON_Duplicate(rq->id, 1)))
		return -1;
	return 0;
}

int methods_start_decode(struct request *rq, struct pending *pd,
			 void (*done)(struct decode_job *d))
{
	pd->d.done = done;
	if (methods_pending_bind(rq, pd) ||
	    decode_start(rq->svc->loop, &pd->d)) {
		cJSON_Delete(pd->rpc_id);
		decode_finish(&pd->d);
		free(pd);
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	return METHOD_DEFERRED;
}

/* The request again, on the loop, once decoded; c is NULL when its
 * connection has gone (or the daemon is stopping). */
struct peer_conn *methods_pending_request(struct pending *pd,
					  struct request *rq)
{
	struct service *svc = pd->svc;
	struct peer_conn *c = svc->stopping < 2
				  ? server_find(svc->server, pd->conn)
				  : NULL; /* 2: the server is gone */
	*rq = (struct request){
		.svc = svc, .c = c, .id = pd->rpc_id, .method = pd->method
	};
	return c;
}

void methods_pending_free(struct pending *pd)
{
	cJSON_Delete(pd->rpc_id);
	decode_finish(&pd->d);
	free(pd);
}

/* Sends a method's result or error (nothing for a notification). */
void methods_answer(struct request *rq, int rc, cJSON *result)
{
	if (rc == 0 && rq->id)
		server_send(rq->c, rpc_result_line(rq->id, result));
	else if (rc == 0)
		cJSON_Delete(result);
	else if (rq->id)
		methods_send_error(rq->c, rq->id, rc, rq->msg, rq->data,
				   rq->err_name);
	else
		cJSON_Delete(rq->data);
	if (rc && rc != RPC_INTERNAL_ERROR)
		log_debug("%s from uid %u: %s", rq->method,
			  (unsigned)server_conn_uid(rq->c), rq->msg);
}
