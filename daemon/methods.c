/*
 * methods.c - what each request does.
 *
 * methods_line takes one framed line, parses and classifies it, finds the
 * method in the table below and calls it with the params object. A method
 * returns 0 and a result, a JSON-RPC error code and a message (always a
 * sentence saying what was wrong and how to fix it), or METHOD_DEFERRED
 * when the answer comes later (a worker renders or exports; a running job
 * is pausing or cancelling). Params are checked strictly: a missing,
 * mistyped, out-of-range or unknown field is refused by name.
 *
 * Subscriptions are pumped here: a subscription is a cursor into the job's
 * history, so replay and live streaming are one mechanism and a reader
 * only ever has SERVER_LOW_WATER of progress queued (see service.h).
 *
 * The job logic lives in queue.c, the transport in server.c; this file
 * only translates between them. Loop thread only.
 */
#include "methods.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "errors.h"
#include "fileio.h"
#include "image.h"
#include "jsonrpc.h"
#include "log.h"
#include "protocol.h"
#include "quota.h"
#include "recipe_json.h"
#include "safetensors.h"

#define METHOD_DEFERRED 1
#define MODEL_FILE_MAX (1u << 30)

struct request {
	struct service *svc;
	struct conn *c;
	const cJSON *id;   /* NULL for a notification: no reply */
	const char *method;
	char msg[1024];    /* the error's message */
	cJSON *data;       /* the error's data (optional) */
	int err_name;      /* errors.h code for data.name (0: from the code) */
};

typedef int (*method_fn)(struct request *rq, const cJSON *params,
			 cJSON **result);

/* ------------------------------------------------------------ errors */

static int fail(struct request *rq, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct request *rq, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rq->msg, sizeof(rq->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* The errors.h name that goes with a JSON-RPC code in data.name. */
static int code_error(int code)
{
	switch (code) {
	case RPC_PARSE_ERROR: return ERR_FORMAT;
	case RPC_INVALID_REQUEST: return ERR_INVALID;
	case RPC_METHOD_NOT_FOUND: return ERR_NOT_FOUND;
	case RPC_INVALID_PARAMS: return ERR_INVALID;
	case RPC_JOB_NOT_FOUND: return ERR_NOT_FOUND;
	case RPC_JOB_STATE: return ERR_STATE;
	case RPC_BAD_IMAGE: return ERR_FORMAT;
	case RPC_LIMIT: return ERR_TOO_LARGE;
	case RPC_PERMISSION: return ERR_PERMISSION;
	case RPC_BAD_MODEL: return ERR_FORMAT;
	case RPC_DEVICE: return ERR_VULKAN;
	case RPC_SHUTTING_DOWN: return ERR_BUSY;
	}
	return ERR_IO;
}

static void send_error(struct conn *c, const cJSON *id, int code,
		       const char *msg, cJSON *data, int err_name)
{
	if (!data)
		data = cJSON_CreateObject();
	if (!cJSON_GetObjectItem(data, "name"))
		cJSON_AddStringToObject(data, "name",
					error_name(err_name ? err_name
							    : code_error(code)));
	server_send(c, rpc_error_line(id, code, msg, data));
}

static cJSON *limit_data(const char *name, double value)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", error_name(ERR_TOO_LARGE));
	cJSON_AddStringToObject(d, "limit", name);
	cJSON_AddNumberToObject(d, "value", value);
	return d;
}

/* A PNG that png_decode refused: over a size limit is RPC_LIMIT naming
 * the limit (IMAGE_MAX_SIDE or IMAGE_MAX_PIXELS, from the IHDR that
 * png_decode checked; IMAGE_MAX_CHUNK when the size is within those),
 * anything else RPC_BAD_IMAGE. */
static int image_refused(struct request *rq, const char *key, int rc,
			 const char *err, const uint8_t *png, size_t size)
{
	if (rc != ERR_TOO_LARGE)
		return fail(rq, RPC_BAD_IMAGE, "\"%s\" was refused: %s", key,
			    err[0] ? err : error_message(rc));
	uint32_t w = 0, h = 0;
	if (size >= 24) {
		w = (uint32_t)png[16] << 24 | (uint32_t)png[17] << 16 |
		    (uint32_t)png[18] << 8 | png[19];
		h = (uint32_t)png[20] << 24 | (uint32_t)png[21] << 16 |
		    (uint32_t)png[22] << 8 | png[23];
	}
	if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || !w || !h)
		rq->data = limit_data("IMAGE_MAX_SIDE", IMAGE_MAX_SIDE);
	else if ((uint64_t)w * h > IMAGE_MAX_PIXELS)
		rq->data = limit_data("IMAGE_MAX_PIXELS", IMAGE_MAX_PIXELS);
	else
		rq->data = limit_data("IMAGE_MAX_CHUNK", IMAGE_MAX_CHUNK);
	return fail(rq, RPC_LIMIT, "\"%s\" was refused: %s", key,
		    err[0] ? err : error_message(rc));
}

/* ------------------------------------------------------------ params */

/* Refuses keys outside the list (NULL-terminated). */
static int check_keys(struct request *rq, const cJSON *params,
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
		char list[256] = "";
		for (const char *const *k = known; *k; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", k == known ? "" : ", ", *k);
		return fail(rq, RPC_INVALID_PARAMS,
			    "unknown parameter \"%s\" for %s; it takes: %s",
			    item->string, rq->method, list[0] ? list : "none");
	}
	return 0;
}

/* An optional integer in [lo, hi]; 0 when absent (value untouched). */
static int get_int(struct request *rq, const cJSON *params, const char *key,
		   double lo, double hi, int64_t *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s\" must be an integer (got %s)", key,
			    cJSON_IsString(v) ? "a string"
			    : cJSON_IsNumber(v) ? "a fraction"
						: "another type");
	if (v->valuedouble < lo || v->valuedouble > hi)
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s\" must be between %.0f and %.0f (got %.17g)",
			    key, lo, hi, v->valuedouble);
	*value = (int64_t)v->valuedouble;
	return 0;
}

/* A {"KEY": BASE64} object's bytes, e.g. image.png. */
static int get_blob(struct request *rq, const cJSON *params,
		    const char *key, const char *sub, int required,
		    uint8_t **data, size_t *size)
{
	*data = NULL;
	*size = 0;
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!o) {
		if (required)
			return fail(rq, RPC_INVALID_PARAMS,
				    "\"%s\" is required: {\"%s\": BASE64}", key,
				    sub);
		return 0;
	}
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, sub);
	if (!cJSON_IsObject(o) || !cJSON_IsString(s))
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s\" must be an object {\"%s\": BASE64} (the "
			    "daemon never opens a path a client names)",
			    key, sub);
	int rc = base64_decode(s->valuestring, strlen(s->valuestring), data,
			       size);
	if (rc == ERR_NOMEM)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	if (rc)
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s.%s\" is not valid base64 (RFC 4648, with "
			    "padding)", key, sub);
	return 0;
}

static int may_touch(struct request *rq, const struct job *job)
{
	uid_t uid = server_conn_uid(rq->c);
	if (uid == 0 || uid == rq->svc->uid || uid == job->uid)
		return 0;
	rq->data = cJSON_CreateObject();
	cJSON_AddNumberToObject(rq->data, "owner", job->uid);
	return fail(rq, RPC_PERMISSION,
		    "job %s belongs to uid %u: only its owner and root may "
		    "use %s on it (others may only look: job.get, job.list, "
		    "job.subscribe)", job->id, (unsigned)job->uid, rq->method);
}

/* params.job: the id of an existing job (a number is accepted too). */
static int get_job(struct request *rq, const cJSON *params, struct job **out)
{
	char id[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "job");
	if (cJSON_IsString(v))
		snprintf(id, sizeof(id), "%s", v->valuestring);
	else if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
		 v->valuedouble < 1e15)
		snprintf(id, sizeof(id), "%.0f", v->valuedouble);
	else
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"job\" is required: the id of a job as "
			    "job.submit returned it, e.g. {\"job\": \"1\"}");
	*out = queue_find(rq->svc->queue, id);
	if (!*out)
		return fail(rq, RPC_JOB_NOT_FOUND,
			    "no job with id \"%s\"; job.list shows the jobs",
			    id);
	return 0;
}

/* ------------------------------------------------------- job objects */

static void add_num_or_null(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static cJSON *job_json(struct service *svc, const struct job *job)
{
	cJSON *o = cJSON_CreateObject();
	const struct nn_metrics *last =
		job->nhist ? &job->hist[job->nhist - 1] : NULL;
	cJSON_AddStringToObject(o, "id", job->id);
	cJSON_AddStringToObject(o, "name", job->p.name);
	cJSON_AddStringToObject(o, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(o, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(o, "epochs", job->p.epochs);
	add_num_or_null(o, "psnr", last ? last->psnr : NAN);
	add_num_or_null(o, "best_psnr", job->best_psnr);
	add_num_or_null(o, "mse", last ? last->mse : NAN);
	add_num_or_null(o, "ms", last ? last->ms : NAN);
	if (job->p.width)
		cJSON_AddNumberToObject(o, "width", job->p.width);
	else
		cJSON_AddNullToObject(o, "width");
	cJSON *img = cJSON_AddObjectToObject(o, "image");
	cJSON_AddNumberToObject(img, "width", job->img_w);
	cJSON_AddNumberToObject(img, "height", job->img_h);
	if (job->device[0])
		cJSON_AddStringToObject(o, "device", job->device);
	else
		cJSON_AddNullToObject(o, "device");
	if (job->state == JOB_FAILED)
		cJSON_AddStringToObject(o, "error", job->error);
	cJSON_AddNumberToObject(o, "lr", job->p.lr);
	cJSON_AddItemToObject(o, "recipe", recipe_to_json(&job->p.recipe));
	cJSON_AddNumberToObject(o, "seed", (double)job->p.seed);
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	if (job->p.batch[0])
		cJSON_AddStringToObject(o, "batch", job->p.batch);
	else
		cJSON_AddNullToObject(o, "batch");
	add_num_or_null(o, "target_psnr",
			job->p.target_psnr > 0 ? job->p.target_psnr : NAN);
	if (job->reached_epoch)
		cJSON_AddNumberToObject(o, "reached_epoch", job->reached_epoch);
	else
		cJSON_AddNullToObject(o, "reached_epoch");
	cJSON_AddNumberToObject(o, "seconds", job_run_seconds(job));
	if (job->worker >= 0)
		cJSON_AddNumberToObject(o, "worker", job->worker);
	else
		cJSON_AddNullToObject(o, "worker");
	cJSON_AddNumberToObject(o, "uid", job->uid);
	cJSON_AddBoolToObject(o, "init", job->has_init);
	add_num_or_null(o, "created", job->created);
	add_num_or_null(o, "started", job->started ? job->started : NAN);
	add_num_or_null(o, "finished", job->finished ? job->finished : NAN);
	if (job->has_export)
		add_num_or_null(o, "model_psnr", job->export_psnr);
	return o;
}

static cJSON *state_params(const struct job *job)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "job", job->id);
	cJSON_AddStringToObject(p, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(p, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(p, "epochs", job->p.epochs);
	if (job->state == JOB_FAILED)
		cJSON_AddStringToObject(p, "error", job->error);
	if (job->state == JOB_DONE && job->has_export)
		add_num_or_null(p, "psnr", job->export_psnr);
	return p;
}

static char *progress_line(const struct job *job, const struct nn_metrics *m)
{
	/* Built by hand: this is the one message sent per epoch per reader. */
	char buf[512];
	char psnr[32], mse[32], avg[64] = "";
	snprintf(psnr, sizeof(psnr), isfinite(m->psnr) ? "%.17g" : "null",
		 m->psnr);
	if (m->psnr_average > 0 && isfinite(m->psnr_average))
		snprintf(avg, sizeof(avg), ",\"psnr_average\":%.17g",
			 m->psnr_average);
	snprintf(mse, sizeof(mse), isfinite(m->mse) ? "%.17g" : "null", m->mse);
	int n = snprintf(buf, sizeof(buf),
			 "{\"jsonrpc\":\"2.0\",\"method\":\"" N_JOB_PROGRESS
			 "\",\"params\":{\"job\":\"%s\",\"epoch\":%d,"
			 "\"epochs\":%d,\"mse\":%s,\"psnr\":%s,\"lr\":%.17g,"
			 "\"ms\":%.6g%s}}\n",
			 job->id, m->epoch, job->p.epochs, mse, psnr, m->lr,
			 m->ms, avg);
	return n > 0 && (size_t)n < sizeof(buf) ? strdup(buf) : NULL;
}

/* ----------------------------------------------------- subscriptions */

static void pump(struct service *svc, struct subscription *sub,
		 struct conn *c, struct job *job)
{
	while (!server_conn_closing(c) &&
	       server_conn_pending(c) < SERVER_LOW_WATER) {
		if (sub->cursor < job->nhist) {
			/* Live points the reader fell behind on are thinned:
			 * skip to the newest. Replayed points are all sent. */
			if (sub->cursor >= sub->replay_end &&
			    job->nhist - sub->cursor > 1)
				sub->cursor = job->nhist - 1;
			if (server_send(c, progress_line(job, &job->hist[sub->cursor])))
				return;
			sub->cursor++;
		} else if (sub->state_dirty) {
			sub->state_dirty = 0;
			server_send(c, rpc_notification_line(N_JOB_STATE,
							     state_params(job)));
		} else {
			break;
		}
	}
}

static void pump_conn(struct service *svc, struct conn *c)
{
	uint64_t id = server_conn_id(c);
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (s->conn != id)
			continue;
		struct job *job = queue_find(svc->queue, s->job);
		if (job)
			pump(svc, s, c, job);
		if (server_conn_closing(c))
			return;
	}
}

static void pump_job(struct service *svc, struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (strcmp(s->job, job->id))
			continue;
		struct conn *c = server_find(svc->server, s->conn);
		if (c)
			pump(svc, s, c, job);
	}
}

void methods_job_progress(struct service *svc, struct job *job)
{
	pump_job(svc, job);
}

void methods_job_truncated(struct service *svc, struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next) {
		if (strcmp(s->job, job->id))
			continue;
		if (s->cursor > job->nhist)
			s->cursor = job->nhist;
		if (s->replay_end > job->nhist)
			s->replay_end = job->nhist;
	}
}

static void answer_waiters(struct service *svc, struct job *job)
{
	struct state_waiter **pp = &svc->waiters;
	while (*pp) {
		struct state_waiter *w = *pp;
		if (strcmp(w->job, job->id) || job->state == JOB_RUNNING) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		struct conn *c = server_find(svc->server, w->conn);
		if (c) {
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "job", job->id);
			cJSON_AddStringToObject(r, "state",
						job_state_name(job->state));
			server_send(c, rpc_result_line(w->rpc_id, r));
		}
		cJSON_Delete(w->rpc_id);
		free(w);
	}
}

void methods_job_state(struct service *svc, struct job *job)
{
	for (struct subscription *s = svc->subs; s; s = s->next)
		if (!strcmp(s->job, job->id))
			s->state_dirty = 1;
	pump_job(svc, job);
	answer_waiters(svc, job);
}

static void drop_subs(struct service *svc, uint64_t conn, const char *job)
{
	struct subscription **pp = &svc->subs;
	while (*pp) {
		struct subscription *s = *pp;
		if ((conn && s->conn != conn) || (job && strcmp(s->job, job))) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		free(s);
	}
}

static void drop_waiters(struct service *svc, uint64_t conn)
{
	struct state_waiter **pp = &svc->waiters;
	while (*pp) {
		struct state_waiter *w = *pp;
		if (conn && w->conn != conn) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		cJSON_Delete(w->rpc_id);
		free(w);
	}
}

static int wait_for_state(struct request *rq, struct job *job)
{
	if (!rq->id)
		return METHOD_DEFERRED; /* a notification: nobody to answer */
	struct state_waiter *w = calloc(1, sizeof(*w));
	if (!w || !(w->rpc_id = cJSON_Duplicate(rq->id, 1))) {
		free(w);
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	w->conn = server_conn_id(rq->c);
	snprintf(w->job, sizeof(w->job), "%s", job->id);
	w->next = rq->svc->waiters;
	rq->svc->waiters = w;
	return METHOD_DEFERRED;
}

/* ---------------------------------------------------- worker requests */

/* A worker for a render or an export of a job that is not running: an
 * idle one if there is, else any that has its device. */
static struct worker_slot *pick_worker(struct service *svc)
{
	struct worker_slot *any = NULL;
	for (int i = 0; i < svc->nslots; i++) {
		struct worker_slot *s = &svc->slots[i];
		if (!s->ok || s->exited)
			continue;
		if (!s->job[0])
			return s;
		if (!any)
			any = s;
	}
	return any;
}

static int defer_to_worker(struct request *rq, struct worker_slot *slot,
			   struct work_request *req)
{
	req->conn = server_conn_id(rq->c);
	req->rpc_id = rq->id ? cJSON_Duplicate(rq->id, 1) : NULL;
	worker_request(slot->w, req);
	return METHOD_DEFERRED;
}

void methods_reply(struct service *svc, struct work_request *req)
{
	struct conn *c = server_find(svc->server, req->conn);
	if (!c || !req->rpc_id) {
		work_request_destroy(req);
		return;
	}
	if (req->rpc_code) {
		send_error(c, req->rpc_id, req->rpc_code, req->message, NULL, 0);
		work_request_destroy(req);
		return;
	}
	cJSON *r = cJSON_CreateObject();
	if (req->kind == WORK_EXPORT) {
		cJSON *m = cJSON_AddObjectToObject(r, "model");
		cJSON_AddItemToObject(m, "safetensors",
				      cJSON_CreateStringReference(req->model_b64));
		cJSON *p = cJSON_AddObjectToObject(r, "recon");
		cJSON_AddItemToObject(p, "png",
				      cJSON_CreateStringReference(req->png_b64));
	} else {
		cJSON_AddItemToObject(r, "png",
				      cJSON_CreateStringReference(req->png_b64));
	}
	if (req->has_psnr)
		cJSON_AddNumberToObject(r, "psnr", req->psnr);
	else if (req->kind == WORK_EXPORT)
		cJSON_AddNullToObject(r, "psnr");
	server_send(c, rpc_result_line(req->rpc_id, r));
	work_request_destroy(req);
}

/* ----------------------------------------------------------- methods */

static cJSON *devices_json(struct service *svc)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < svc->nslots; i++) {
		struct worker_slot *s = &svc->slots[i];
		cJSON *d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "worker", i);
		if (s->ok) {
			cJSON_AddStringToObject(d, "name", s->device);
			cJSON_AddStringToObject(d, "type", s->type);
		} else {
			cJSON_AddNullToObject(d, "name");
		}
		cJSON_AddStringToObject(d, "state",
					!s->ready   ? "starting"
					: !s->ok    ? "unavailable"
					: s->job[0] ? "running"
						    : "idle");
		if (s->job[0])
			cJSON_AddStringToObject(d, "job", s->job);
		else
			cJSON_AddNullToObject(d, "job");
		cJSON_AddNumberToObject(d, "gpu_bytes",
					(double)worker_bytes_in_use(s->w));
		if (s->ready && !s->ok)
			cJSON_AddStringToObject(d, "error", s->error);
		cJSON_AddItemToArray(a, d);
	}
	return a;
}

static const char *first_device(struct service *svc)
{
	for (int i = 0; i < svc->nslots; i++)
		if (svc->slots[i].ok)
			return svc->slots[i].device;
	return NULL;
}

static int m_hello(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {"client", "protocol", NULL};
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "daemon", "vkinrd");
	cJSON_AddNumberToObject(r, "protocol", PROTOCOL_VERSION);
	cJSON_AddStringToObject(r, "version", VKINR_VERSION);
	const char *dev = first_device(rq->svc);
	if (dev)
		cJSON_AddStringToObject(r, "device", dev);
	else
		cJSON_AddNullToObject(r, "device");
	cJSON_AddNumberToObject(r, "uid", server_conn_uid(rq->c));
	*result = r;
	return 0;
}

static int m_status(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {NULL};
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	struct service *svc = rq->svc;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "daemon", "vkinrd");
	cJSON_AddStringToObject(r, "version", VKINR_VERSION);
	cJSON_AddNumberToObject(r, "protocol", PROTOCOL_VERSION);
	cJSON_AddNumberToObject(r, "pid", getpid());
	cJSON_AddNumberToObject(r, "uptime", (double)time(NULL) - svc->started);
	cJSON_AddNumberToObject(r, "started", svc->started);
	const char *dev = first_device(svc);
	if (dev)
		cJSON_AddStringToObject(r, "device", dev);
	else
		cJSON_AddNullToObject(r, "device");
	cJSON_AddItemToObject(r, "devices", devices_json(svc));
	cJSON_AddStringToObject(r, "state_dir", svc->opt->state_dir);
	cJSON_AddBoolToObject(r, "stopping", svc->stopping);
	cJSON *jobs = cJSON_AddObjectToObject(r, "jobs");
	for (int s = JOB_QUEUED; s <= JOB_CANCELLED; s++)
		cJSON_AddNumberToObject(jobs, job_state_name(s),
					queue_count_state(svc->queue, s));
	cJSON_AddNumberToObject(jobs, "total", svc->queue->count);
	cJSON_AddNumberToObject(r, "queue", queue_count_state(svc->queue,
							      JOB_QUEUED));
	cJSON_AddNumberToObject(r, "connections",
				server_connection_count(svc->server));
	int nsubs = 0;
	for (struct subscription *s = svc->subs; s; s = s->next)
		nsubs++;
	cJSON_AddNumberToObject(r, "subscriptions", nsubs);
	cJSON *lim = cJSON_AddObjectToObject(r, "limits");
	cJSON_AddNumberToObject(lim, "line_bytes", LIMIT_LINE_BYTES);
	cJSON_AddNumberToObject(lim, "connections", quota_connections());
	cJSON_AddNumberToObject(lim, "connections_per_uid",
				quota_connections_per_uid());
	cJSON_AddNumberToObject(lim, "jobs_per_uid", quota_jobs_per_uid());
	cJSON_AddNumberToObject(lim, "subscriber_bytes", LIMIT_SUBSCRIBER_BYTES);
	cJSON_AddNumberToObject(lim, "image_side", IMAGE_MAX_SIDE);
	cJSON_AddNumberToObject(lim, "image_pixels", IMAGE_MAX_PIXELS);
	*result = r;
	return 0;
}

/* The defaults a job gets for what its submitter left out. */
static void job_defaults(struct job_params *p)
{
	struct nn_config cfg;
	nn_config_defaults(&cfg, 0);
	memset(p, 0, sizeof(*p));
	p->epochs = cfg.epochs;
	p->lr = cfg.lr;
	p->recipe = cfg.recipe;
	p->seed = cfg.seed;
	p->width = 0; /* the device's default, chosen when it runs */
}

static int check_init(struct request *rq, const uint8_t *data, size_t size,
		      struct job_params *p, int width_given)
{
	struct st_file *model = NULL;
	struct nn_config cfg, def;
	char err[512] = "";
	int w, h;
	int rc = st_decode(data, size, &model, err, sizeof(err));
	if (!rc)
		rc = nn_package_config(model, &cfg, &w, &h, err, sizeof(err));
	st_destroy(model);
	if (rc)
		return fail(rq, RPC_BAD_MODEL, "\"init\" is not a model package "
			    "vkinrd can start from: %s", err);
	if (width_given && cfg.nf != p->width)
		return fail(rq, RPC_INVALID_PARAMS, "\"width\" is %d but the "
			    "init model has width %d; leave width out or make "
			    "them equal", p->width, cfg.nf);
	nn_config_defaults(&def, 0);
	if (cfg.nblocks != def.nblocks ||
	    memcmp(cfg.dilations, def.dilations, sizeof(int) * def.nblocks)) {
		char a[64], b[64];
		nn_config_dilations_string(&cfg, a, sizeof(a));
		nn_config_dilations_string(&def, b, sizeof(b));
		return fail(rq, RPC_BAD_MODEL, "the init model has dilations "
			    "%s; jobs use %s", a, b);
	}
	p->width = cfg.nf;
	return 0;
}

/* job.submit's "recipe": known keys, values in range. */
static int check_recipe(struct request *rq, const cJSON *recipe,
			struct job_params *p)
{
	struct nn_config cfg;
	char err[256];
	nn_config_defaults(&cfg, 0);
	cfg.lr = p->lr;
	if (recipe_from_json(recipe, &p->recipe, err, sizeof(err)))
		return fail(rq, RPC_INVALID_PARAMS, "%s", err);
	cfg.recipe = p->recipe;
	if (nn_config_check(&cfg, err, sizeof(err)))
		return fail(rq, RPC_INVALID_PARAMS, "\"recipe\": %s", err);
	return 0;
}

static int m_submit(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {"image", "epochs", "width", "lr",
					   "seed", "name", "priority", "init",
					   "batch", "target_psnr", "recipe",
					   NULL};
	struct service *svc = rq->svc;
	uint8_t *png = NULL, *init = NULL;
	size_t png_size = 0, init_size = 0;
	struct image *img = NULL;
	struct job_params p;
	int64_t v;
	char err[512] = "";
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	if (svc->stopping)
		return fail(rq, RPC_SHUTTING_DOWN, "the daemon is stopping; "
			    "submit again once it is back");
	job_defaults(&p);
	if ((v = p.epochs, rc = get_int(rq, params, "epochs", 1, JOB_EPOCHS_MAX, &v)))
		return rc;
	p.epochs = (int)v;
	v = 0;
	if ((rc = get_int(rq, params, "width", NN_MIN_WIDTH, NN_MAX_WIDTH, &v)))
		return rc;
	p.width = (int)v;
	if (p.width % 16)
		return fail(rq, RPC_INVALID_PARAMS, "\"width\" must be a "
			    "multiple of 16 (got %d)", p.width);
	v = (int64_t)p.seed;
	if ((rc = get_int(rq, params, "seed", 0, 9007199254740992.0, &v)))
		return rc;
	p.seed = (uint64_t)v;
	v = 0;
	if ((rc = get_int(rq, params, "priority", JOB_PRIORITY_MIN,
			  JOB_PRIORITY_MAX, &v)))
		return rc;
	p.priority = (int)v;
	const cJSON *lr = cJSON_GetObjectItemCaseSensitive(params, "lr");
	if (lr) {
		if (!cJSON_IsNumber(lr) || !(lr->valuedouble > 0) ||
		    !(lr->valuedouble <= 1))
			return fail(rq, RPC_INVALID_PARAMS, "\"lr\" must be a "
				    "number above 0 and at most 1, e.g. 1e-4");
		p.lr = lr->valuedouble;
	}
	const cJSON *recipe = cJSON_GetObjectItemCaseSensitive(params, "recipe");
	if (recipe && (rc = check_recipe(rq, recipe, &p)))
		return rc;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	if (name) {
		if (!cJSON_IsString(name))
			return fail(rq, RPC_INVALID_PARAMS,
				    "\"name\" must be a string");
		if (strlen(name->valuestring) >= JOB_NAME_MAX)
			return fail(rq, RPC_INVALID_PARAMS, "\"name\" is longer "
				    "than %d bytes", JOB_NAME_MAX - 1);
		snprintf(p.name, sizeof(p.name), "%s", name->valuestring);
	}
	const cJSON *batch = cJSON_GetObjectItemCaseSensitive(params, "batch");
	if (batch) {
		if (!cJSON_IsString(batch) || !job_batch_valid(batch->valuestring))
			return fail(rq, RPC_INVALID_PARAMS, "\"batch\" must be a "
				    "string of 1 to %d letters, digits, '_' or "
				    "'-', e.g. \"b3f9a2c\"", JOB_BATCH_MAX - 1);
		snprintf(p.batch, sizeof(p.batch), "%s", batch->valuestring);
	}
	const cJSON *target = cJSON_GetObjectItemCaseSensitive(params,
							       "target_psnr");
	if (target) {
		if (!cJSON_IsNumber(target) || !(target->valuedouble > 0) ||
		    !(target->valuedouble <= JOB_TARGET_PSNR_MAX))
			return fail(rq, RPC_INVALID_PARAMS, "\"target_psnr\" "
				    "must be a number of dB above 0 and at most "
				    "%g, e.g. 30", JOB_TARGET_PSNR_MAX);
		p.target_psnr = target->valuedouble;
	}
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) {
		rq->data = limit_data("LIMIT_JOBS_PER_UID", quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT, "uid %u already has %d jobs (the "
			    "limit); remove finished ones with job.remove",
			    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}

	if ((rc = get_blob(rq, params, "image", "png", 1, &png, &png_size)))
		goto out;
	rc = png_decode(png, png_size, &img, err, sizeof(err));
	if (rc) {
		rc = image_refused(rq, "image", rc, err, png, png_size);
		goto out;
	}
	if ((rc = get_blob(rq, params, "init", "safetensors", 0, &init,
			   &init_size)))
		goto out;
	if (init && (rc = check_init(rq, init, init_size, &p, p.width != 0)))
		goto out;

	struct job *job;
	rc = queue_submit(svc->queue, &p, server_conn_uid(rq->c),
			  server_conn_pid(rq->c), png, png_size, img->width,
			  img->height, init, init_size, &job, err, sizeof(err));
	if (rc) {
		log_error("job.submit: %s", err);
		rc = fail(rq, rc == ERR_NO_SPACE ? RPC_LIMIT : RPC_INTERNAL_ERROR,
			  "%s", err);
		goto out;
	}
	log_info("job %s submitted by uid %u: %dx%d, %d epochs, width %d, "
		 "lr %g, seed %llu, priority %d", job->id, (unsigned)job->uid,
		 job->img_w, job->img_h, job->p.epochs, job->p.width,
		 job->p.lr, (unsigned long long)job->p.seed, job->p.priority);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	if (job->p.batch[0])
		cJSON_AddStringToObject(*result, "batch", job->p.batch);
	service_schedule(svc);
out:
	free(png);
	free(init);
	image_destroy(img);
	return rc;
}

static int m_list(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {NULL};
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	cJSON *r = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(r, "jobs");
	for (struct job *job = rq->svc->queue->head; job; job = job->next)
		cJSON_AddItemToArray(a, job_json(rq->svc, job));
	*result = r;
	return 0;
}

static const char *const job_only[] = {"job", NULL};

static int m_get(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = check_keys(rq, params, job_only);
	if (rc || (rc = get_job(rq, params, &job)))
		return rc;
	*result = job_json(rq->svc, job);
	return 0;
}

static cJSON *job_state_result(const struct job *job)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "job", job->id);
	cJSON_AddStringToObject(r, "state", job_state_name(job->state));
	return r;
}

/* The job named by params (which hold only "job") of a method that acts
 * on it: it must exist and the caller must own it (or be root). */
static int touchable_job(struct request *rq, const cJSON *params,
			 struct job **out)
{
	int rc = check_keys(rq, params, job_only);
	if (rc || (rc = get_job(rq, params, out)))
		return rc;
	return may_touch(rq, *out);
}

static void set_state(struct service *svc, struct job *job,
		      enum job_state state)
{
	queue_set_state(svc->queue, job, state, NULL);
	methods_job_state(svc, job);
}

static int m_pause(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	switch (job->state) {
	case JOB_RUNNING:
		worker_flag(rq->svc->slots[job->worker].w, job->id, WORK_PAUSE);
		return wait_for_state(rq, job);
	case JOB_QUEUED:
		set_state(rq->svc, job, JOB_PAUSED);
		break;
	case JOB_PAUSED:
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s; only a queued or "
			    "running job can be paused", job->id,
			    job_state_name(job->state));
	}
	*result = job_state_result(job);
	return 0;
}

static int m_resume(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	switch (job->state) {
	case JOB_PAUSED:
	case JOB_FAILED:
		set_state(rq->svc, job, JOB_QUEUED);
		service_schedule(rq->svc);
		break;
	case JOB_QUEUED:
	case JOB_RUNNING:
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s; only a paused or "
			    "failed job can be resumed", job->id,
			    job_state_name(job->state));
	}
	*result = job_state_result(job);
	return 0;
}

static int m_cancel(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	switch (job->state) {
	case JOB_RUNNING:
		worker_flag(rq->svc->slots[job->worker].w, job->id, WORK_CANCEL);
		return wait_for_state(rq, job);
	case JOB_QUEUED:
	case JOB_PAUSED:
		set_state(rq->svc, job, JOB_CANCELLED);
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s already; there is "
			    "nothing to cancel", job->id,
			    job_state_name(job->state));
	}
	*result = job_state_result(job);
	return 0;
}

static int m_remove(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->state == JOB_RUNNING)
		return fail(rq, RPC_JOB_STATE, "job %s is running; cancel it "
			    "(job.cancel) before removing it", job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddBoolToObject(*result, "removed", 1);
	drop_subs(rq->svc, 0, job->id);
	log_info("job %s removed", job->id);
	queue_remove(rq->svc->queue, job);
	return 0;
}

/* A done job's exports are files; read and send them. */
static int export_files(struct request *rq, struct job *job, cJSON **result)
{
	char path[4200];
	uint8_t *model = NULL, *png = NULL;
	size_t model_size, png_size;
	struct queue *q = rq->svc->queue;
	int rc = queue_job_path(q, job, "model.safetensors", path, sizeof(path));
	if (!rc)
		rc = fileio_read(path, &model, &model_size, MODEL_FILE_MAX);
	if (!rc)
		rc = queue_job_path(q, job, "recon.png", path, sizeof(path));
	if (!rc)
		rc = fileio_read(path, &png, &png_size, MODEL_FILE_MAX);
	if (rc) {
		free(model);
		return rc;
	}
	char *m64 = base64_encode(model, model_size);
	char *p64 = base64_encode(png, png_size);
	free(model);
	free(png);
	if (!m64 || !p64) {
		free(m64);
		free(p64);
		return ERR_NOMEM;
	}
	cJSON *r = cJSON_CreateObject();
	cJSON *m = cJSON_AddObjectToObject(r, "model");
	cJSON_AddItemToObject(m, "safetensors", cJSON_CreateString(m64));
	cJSON *p = cJSON_AddObjectToObject(r, "recon");
	cJSON_AddItemToObject(p, "png", cJSON_CreateString(p64));
	add_num_or_null(r, "psnr", job->export_psnr);
	free(m64);
	free(p64);
	*result = r;
	return 0;
}

static int m_export(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	struct service *svc = rq->svc;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->state == JOB_DONE && job->has_export &&
	    export_files(rq, job, result) == 0)
		return 0;

	struct worker_slot *slot = NULL;
	if (job->state == JOB_RUNNING) {
		slot = &svc->slots[job->worker];
	} else {
		char path[4200];
		struct stat st;
		queue_job_path(svc->queue, job, "checkpoint.safetensors", path,
			       sizeof(path));
		if (stat(path, &st))
			return fail(rq, RPC_JOB_STATE, "job %s has not run yet; "
				    "there is no model to export", job->id);
		slot = pick_worker(svc);
		if (!slot)
			return fail(rq, RPC_DEVICE, "no device is available to "
				    "render the export");
	}
	struct work_request *req = calloc(1, sizeof(*req));
	if (!req)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	req->kind = WORK_EXPORT;
	snprintf(req->job_id, sizeof(req->job_id), "%s", job->id);
	queue_job_path(svc->queue, job, NULL, req->dir, sizeof(req->dir));
	return defer_to_worker(rq, slot, req);
}

static int m_subscribe(struct request *rq, const cJSON *params,
		       cJSON **result)
{
	static const char *const keys[] = {"job", "since", NULL};
	struct service *svc = rq->svc;
	struct job *job;
	int64_t since = 0;
	int rc = check_keys(rq, params, keys);
	if (rc || (rc = get_job(rq, params, &job)) ||
	    (rc = get_int(rq, params, "since", 0, 1e12, &since)))
		return rc;
	uint64_t conn = server_conn_id(rq->c);
	drop_subs(svc, conn, job->id);
	int nsubs = 0;
	for (struct subscription *s = svc->subs; s; s = s->next)
		nsubs += s->conn == conn;
	if (nsubs >= quota_jobs_per_uid()) {
		rq->data = limit_data("LIMIT_JOBS_PER_UID", quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT, "this connection follows %d jobs "
			    "already (the limit)", nsubs);
	}
	struct subscription *s = calloc(1, sizeof(*s));
	if (!s)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	s->conn = conn;
	snprintf(s->job, sizeof(s->job), "%s", job->id);
	while (s->cursor < job->nhist && job->hist[s->cursor].epoch <= since)
		s->cursor++;
	s->replay_end = job->nhist;
	s->state_dirty = job_state_is_final(job->state);
	struct subscription **pp = &svc->subs;
	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "job", job->id);
	cJSON_AddStringToObject(r, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(r, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(r, "epochs", job->p.epochs);
	cJSON_AddNumberToObject(r, "replay", job->nhist - s->cursor);
	*result = r;
	return 0; /* the replay follows the result (pumped after it) */
}

static int m_unsubscribe(struct request *rq, const cJSON *params,
			 cJSON **result)
{
	struct job *job;
	int rc = check_keys(rq, params, job_only);
	if (rc || (rc = get_job(rq, params, &job)))
		return rc;
	drop_subs(rq->svc, server_conn_id(rq->c), job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	return 0;
}

static int m_render(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {"model", "target", NULL};
	uint8_t *model = NULL, *png = NULL;
	size_t model_size, png_size;
	char err[512] = "";
	struct nn_config cfg;
	int w = 0, h = 0;
	struct work_request *req = NULL;
	int rc = check_keys(rq, params, keys);
	if (rc || (rc = get_blob(rq, params, "model", "safetensors", 1, &model,
				 &model_size)) ||
	    (rc = get_blob(rq, params, "target", "png", 0, &png, &png_size)))
		goto out;
	if (!(req = calloc(1, sizeof(*req)))) {
		rc = fail(rq, RPC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	req->kind = WORK_RENDER;
	rc = st_decode(model, model_size, &req->model, err, sizeof(err));
	if (!rc)
		rc = nn_package_config(req->model, &cfg, &w, &h, err, sizeof(err));
	if (rc) {
		rc = fail(rq, RPC_BAD_MODEL, "\"model\" was refused: %s", err);
		goto out;
	}
	if (png) {
		rc = png_decode(png, png_size, &req->target, err, sizeof(err));
		if (rc) {
			rc = image_refused(rq, "target", rc, err, png, png_size);
			goto out;
		}
		if (req->target->width != w || req->target->height != h) {
			rc = fail(rq, RPC_INVALID_PARAMS, "\"target\" is %dx%d "
				  "but the model renders %dx%d", req->target->width,
				  req->target->height, w, h);
			goto out;
		}
	}
	struct worker_slot *slot = pick_worker(rq->svc);
	if (!slot) {
		rc = fail(rq, RPC_DEVICE, "no device is available to render");
		goto out;
	}
	rc = defer_to_worker(rq, slot, req);
	req = NULL;
out:
	work_request_destroy(req);
	free(model);
	free(png);
	return rc;
}

static const struct method_entry {
	const char *name;
	method_fn fn;
} method_table[] = {
	{M_HELLO, m_hello},
	{M_DAEMON_STATUS, m_status},
	{M_JOB_SUBMIT, m_submit},
	{M_JOB_LIST, m_list},
	{M_JOB_GET, m_get},
	{M_JOB_PAUSE, m_pause},
	{M_JOB_RESUME, m_resume},
	{M_JOB_CANCEL, m_cancel},
	{M_JOB_REMOVE, m_remove},
	{M_JOB_EXPORT, m_export},
	{M_JOB_SUBSCRIBE, m_subscribe},
	{M_JOB_UNSUBSCRIBE, m_unsubscribe},
	{M_MODEL_RENDER, m_render},
};

#define NMETHODS (sizeof(method_table) / sizeof(method_table[0]))

/* ---------------------------------------------------------- dispatch */

static void unknown_method(struct request *rq)
{
	char list[512] = "";
	for (size_t i = 0; i < NMETHODS; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 i ? ", " : "", method_table[i].name);
	fail(rq, RPC_METHOD_NOT_FOUND, "unknown method \"%s\"; the methods "
	     "are: %s", rq->method, list);
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
		rc = fail(rq, RPC_INVALID_PARAMS, "\"params\" of %s must be an "
			  "object with named fields", rq->method);
	} else {
		if (!params)
			params = empty = cJSON_CreateObject();
		rc = m->fn(rq, params, &result);
	}
	cJSON_Delete(empty);
	if (rc == METHOD_DEFERRED)
		return;
	if (rc == 0 && rq->id)
		server_send(rq->c, rpc_result_line(rq->id, result));
	else if (rc == 0)
		cJSON_Delete(result);
	else if (rq->id)
		send_error(rq->c, rq->id, rc, rq->msg, rq->data, rq->err_name);
	else
		cJSON_Delete(rq->data);
	if (rc && rc != RPC_INTERNAL_ERROR)
		log_debug("%s from uid %u: %s", rq->method,
			  (unsigned)server_conn_uid(rq->c), rq->msg);
}

/* Where s stops being UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), or len when it is. cJSON takes any bytes in a
 * string and would echo them back in an error's message. */
static size_t utf8_end(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		unsigned c = p[i];
		int n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1
			: c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3
			: -1;
		if (n < 0 || len - i <= (size_t)n)
			return i;
		unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		for (int k = 1; k <= n; k++) {
			unsigned b = p[i + k];
			if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
				return i;
		}
		i += (size_t)n + 1;
	}
	return len;
}

static int blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return 0;
	return 1;
}

void methods_line(void *ctx, struct conn *c, char *line, size_t len,
		  int too_long)
{
	struct service *svc = ctx;
	char msg[256];
	if (too_long) {
		snprintf(msg, sizeof(msg), "the line is longer than %u bytes "
			 "(LIMIT_LINE_BYTES); it was skipped", LIMIT_LINE_BYTES);
		send_error(c, NULL, RPC_LIMIT, msg,
			   limit_data("LIMIT_LINE_BYTES", LIMIT_LINE_BYTES), 0);
		return;
	}
	if (blank(line, len))
		return;
	if (memchr(line, '\0', len)) {
		send_error(c, NULL, RPC_PARSE_ERROR, "the line contains a NUL "
			   "byte; a message is one JSON object in UTF-8",
			   NULL, 0);
		return;
	}
	size_t bad = utf8_end(line, len);
	if (bad < len) {
		snprintf(msg, sizeof(msg), "the line is not valid UTF-8 (byte %zu "
			 "of %zu); a message is one JSON object in UTF-8", bad,
			 len);
		send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return;
	}
	const char *end = NULL;
	cJSON *obj = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (!obj) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= line && at <= line + len ? at - line : 0;
		snprintf(msg, sizeof(msg), "not valid JSON (error near byte %zu "
			 "of %zu); send one JSON-RPC object per line", off, len);
		send_error(c, NULL, RPC_PARSE_ERROR, msg, NULL, 0);
		return;
	}
	if (end && !blank(end, line + len - end)) {
		cJSON_Delete(obj);
		send_error(c, NULL, RPC_PARSE_ERROR, "extra text after the JSON "
			   "object; send one object per line", NULL, 0);
		return;
	}
	const char *why = NULL;
	enum rpc_kind kind = rpc_classify(obj, &why);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	if (kind == RPC_KIND_INVALID) {
		snprintf(msg, sizeof(msg), "invalid request: %s", why);
		send_error(c, cJSON_IsNumber(id) || cJSON_IsString(id) ? id : NULL,
			   RPC_INVALID_REQUEST, msg, NULL, 0);
	} else if (kind == RPC_KIND_REQUEST || kind == RPC_KIND_NOTIFICATION) {
		struct request rq = {
			.svc = svc,
			.c = c,
			.id = kind == RPC_KIND_REQUEST ? id : NULL,
			.method = cJSON_GetObjectItemCaseSensitive(obj, "method")
					  ->valuestring,
		};
		dispatch(&rq, obj);
		if (!server_conn_closing(c))
			pump_conn(svc, c);
	}
	/* results and errors from a client answer nothing: ignored */
	cJSON_Delete(obj);
}

void methods_closed(void *ctx, struct conn *c)
{
	struct service *svc = ctx;
	uint64_t id = server_conn_id(c);
	drop_subs(svc, id, NULL);
	drop_waiters(svc, id);
}

void methods_drained(void *ctx, struct conn *c)
{
	pump_conn(ctx, c);
}

void methods_finish(struct service *svc)
{
	drop_subs(svc, 0, NULL);
	drop_waiters(svc, 0);
}
