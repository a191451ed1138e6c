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
 * The job logic lives in queue.c, the transport in server.c, who follows
 * a job in subs.c, the JSON of the answers in views.c and which worker
 * does what in schedule.c; this file only translates requests into calls
 * there. Loop thread only.
 */
#include "loop/methods.h"

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

#define METHOD_DEFERRED 1

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

static void send_error(struct conn *c, const cJSON *id, int code,
		       const char *msg, cJSON *data, int err_name)
{
	server_send(c, views_error_line(id, code, msg, data, err_name));
}

static int fail(struct request *rq, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct request *rq, int code, const char *fmt, ...)
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
 * PNG's IHDR or the JPEG's frame header states; IMAGE_MAX_CHUNK when the
 * size is within those), anything else RPC_BAD_IMAGE. */
static int image_refused(struct request *rq, const char *key, int rc,
			 const char *err, const uint8_t *bytes, size_t size)
{
	if (rc != ERR_TOO_LARGE)
		return fail(rq, RPC_BAD_IMAGE, "\"%s\" was refused: %s", key,
			    err[0] ? err : error_message(rc));
	uint32_t w = 0, h = 0;
	image_stated_size(bytes, size, &w, &h);
	if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || !w || !h)
		rq->data = views_limit_data("IMAGE_MAX_SIDE", IMAGE_MAX_SIDE);
	else if ((uint64_t)w * h > IMAGE_MAX_PIXELS)
		rq->data = views_limit_data("IMAGE_MAX_PIXELS",
					    IMAGE_MAX_PIXELS);
	else
		rq->data = views_limit_data("IMAGE_MAX_CHUNK", IMAGE_MAX_CHUNK);
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

/* A numeric job parameter, checked against the table the client also
 * checks (proto/params.h); *value keeps its default when it is absent. */
static int get_param(struct request *rq, const cJSON *params,
		     enum param_id id, double *value)
{
	const char *key = param_limits[id].key;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	char what[64], err[256];

	if (!v)
		return 0;
	snprintf(what, sizeof what, "\"%s\"", key);
	if (!cJSON_IsNumber(v))
		return fail(rq, RPC_INVALID_PARAMS, "%s must be a number",
			    what);
	if (param_check(id, v->valuedouble, what, err, sizeof err) < 0)
		return fail(rq, RPC_INVALID_PARAMS, "%s", err);
	*value = v->valuedouble;
	return 0;
}

/* An optional string kept for the client (source, key): UTF-8 text
 * without control characters that fits in buf. */
static int get_text(struct request *rq, const cJSON *params, const char *key,
		    char *buf, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size ||
	    !text_is_clean(v->valuestring, strlen(v->valuestring)))
		return fail(rq, RPC_INVALID_PARAMS, "\"%s\" must be a string of "
			    "at most %zu bytes of UTF-8 without control "
			    "characters", key, size - 1);
	snprintf(buf, size, "%s", v->valuestring);
	return 0;
}

/* An engine option that is a word (proto/params.h), checked as the client
 * checks it; buf stays "" when it is absent. */
static int get_text_param(struct request *rq, const cJSON *params,
			  enum text_param_id id, char *buf, size_t size)
{
	const char *key = text_params[id].key;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	char what[64], err[256];

	if (!v)
		return 0;
	snprintf(what, sizeof what, "\"%s\"", key);
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
		return fail(rq, RPC_INVALID_PARAMS, "%s must be a short string, "
			    "e.g. \"%s\"", what, text_params[id].example);
	if (text_param_check(id, v->valuestring, what, err, sizeof err) < 0)
		return fail(rq, RPC_INVALID_PARAMS, "%s", err);
	snprintf(buf, size, "%s", v->valuestring);
	return 0;
}

/* A {"KEY": BASE64} object's text, e.g. image.png, taken from params
 * (ownership passes: the request's JSON no longer holds it); decode.c
 * decodes it off the loop thread. */
static int get_b64(struct request *rq, const cJSON *params, const char *key,
		   const char *sub, int required, char **text)
{
	*text = NULL;
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!o) {
		if (required)
			return fail(rq, RPC_INVALID_PARAMS,
				    "\"%s\" is required: {\"%s\": BASE64}", key,
				    sub);
		return 0;
	}
	cJSON *s = cJSON_GetObjectItemCaseSensitive(o, sub);
	if (!cJSON_IsObject(o) || !cJSON_IsString(s))
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s\" must be an object {\"%s\": BASE64} (the "
			    "daemon never opens a path a client names)",
			    key, sub);
	for (const cJSON *k = o->child; k; k = k->next)
		if (strcmp(k->string, sub))
			return fail(rq, RPC_INVALID_PARAMS,
				    "unknown parameter \"%.64s\" in \"%s\"; it "
				    "takes only \"%s\": {\"%s\": BASE64}",
				    k->string, key, sub, sub);
	*text = s->valuestring;
	s->valuestring = NULL; /* cJSON_Delete skips a NULL string */
	return 0;
}

/* The key of an image object: {"jpeg": B64} for a JPEG, else
 * {"png": B64} (the daemon tells the two apart by their bytes anyway). */
static const char *image_key(const cJSON *params, const char *key)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, key);
	return cJSON_GetObjectItemCaseSensitive(o, "jpeg") ? "jpeg" : "png";
}

/* A decoded input that was refused: bad base64, or what its decoder said. */
static int input_refused(struct request *rq, const char *key,
			 const char *sub, const struct decode_input *in)
{
	if (in->rc == ERR_NOMEM)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	if (in->bad_base64)
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"%s.%s\" is not valid base64 (RFC 4648, with "
			    "padding)", key, sub);
	if (strcmp(sub, "safetensors"))
		return image_refused(rq, key, in->rc, in->err, in->bytes,
				     in->size);
	return fail(rq, RPC_BAD_MODEL, "\"%s\" was refused: %s", key,
		    in->err[0] ? in->err : error_message(in->rc));
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
		    "job.logs, "
		    "job.subscribe)", job->id, (unsigned)job->uid, rq->method);
}

/* params.job: the id of an existing job, as the string job.submit gave
 * or as an exact integer; anything else (a fraction, a number beyond
 * 2^53 that JSON cannot carry exactly) is refused rather than rounded
 * onto another job. */
static int get_job(struct request *rq, const cJSON *params, struct job **out)
{
	char id[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "job");
	if (cJSON_IsString(v) && strlen(v->valuestring) < sizeof(id))
		snprintf(id, sizeof(id), "%s", v->valuestring);
	else if (cJSON_IsString(v))
		return fail(rq, RPC_JOB_NOT_FOUND, "no job has an id of %zu "
			    "bytes; job ids are numbers such as \"12\" "
			    "(job.list shows them)", strlen(v->valuestring));
	else if (cJSON_IsNumber(v) && v->valuedouble >= 1 &&
		 v->valuedouble < 9007199254740992.0 &&
		 v->valuedouble == floor(v->valuedouble))
		snprintf(id, sizeof(id), "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v))
		return fail(rq, RPC_INVALID_PARAMS, "\"job\" must be a job id "
			    "as job.submit returned it, e.g. \"12\" (got the "
			    "number %.17g, which is not one)", v->valuedouble);
	else
		return fail(rq, RPC_INVALID_PARAMS,
			    "\"job\" is required: the id of a job as "
			    "job.submit returned it, e.g. {\"job\": \"1\"}");
	*out = queue_find(rq->svc->queue, id);
	if (!*out)
		return fail(rq, RPC_JOB_NOT_FOUND,
			    "no job with id \"%s\"", id);
	return 0;
}

/* ---------------------------------------------------- worker requests */

/* Queues req for slot's worker, unless its uid has LIMIT_REQUESTS_PER_UID
 * requests waiting already (across connections and workers): then it is
 * refused at once, so that one user cannot pile up work the workers serve
 * between epochs. */
static int defer_to_worker(struct request *rq, struct worker_slot *slot,
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
		return fail(rq, RPC_LIMIT, "uid %u has %d renders and exports "
			    "waiting for a worker already (the limit); retry "
			    "when one is answered", (unsigned)uid, waiting);
	}
	req->conn = server_conn_id(rq->c);
	req->uid = uid;
	if (replies_add(svc, req->conn, rq->id, req)) {
		work_request_destroy(req);
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	worker_request(slot->w, req);
	return METHOD_DEFERRED;
}

/* ----------------------------------------------------------- methods */

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
	cJSON_AddItemToObject(r, "devices", views_devices(svc));
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
	cJSON_AddNumberToObject(r, "subscriptions", subs_count(svc, 0));
	cJSON *lim = cJSON_AddObjectToObject(r, "limits");
	cJSON_AddNumberToObject(lim, "line_bytes", LIMIT_LINE_BYTES);
	cJSON_AddNumberToObject(lim, "connections", quota_connections());
	cJSON_AddNumberToObject(lim, "connections_per_uid",
				quota_connections_per_uid());
	cJSON_AddNumberToObject(lim, "jobs_per_uid", quota_jobs_per_uid());
	cJSON_AddNumberToObject(lim, "requests_per_uid",
				quota_requests_per_uid());
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

/* The init model (decoded) fits the job: its width, its dilations. */
static int check_init(struct request *rq, const struct nn_config *cfg,
		      struct job_params *p, int width_given)
{
	struct nn_config def;
	if (width_given && cfg->nf != p->width)
		return fail(rq, RPC_INVALID_PARAMS, "\"width\" is %d but the "
			    "init model has width %d; leave width out or make "
			    "them equal", p->width, cfg->nf);
	nn_config_defaults(&def, 0);
	if (cfg->nblocks != def.nblocks ||
	    memcmp(cfg->dilations, def.dilations, sizeof(int) * def.nblocks)) {
		char a[64], b[64];
		nn_config_dilations_string(cfg, a, sizeof(a));
		nn_config_dilations_string(&def, b, sizeof(b));
		return fail(rq, RPC_BAD_MODEL, "the init model has dilations "
			    "%s; jobs use %s", a, b);
	}
	p->width = cfg->nf;
	p->defaults &= ~(unsigned)JOB_DEFAULT_WIDTH; /* the init model's */
	nn_width_defaults(p->width, &p->lr, &p->recipe);
	return 0;
}

/* A request whose inputs are being decoded (decode.c); its connection
 * waits meanwhile. */
struct pending {
	struct decode_job d;     /* first: the decode's address is ours */
	struct service *svc;
	uint64_t conn;
	cJSON *rpc_id;           /* NULL for a notification */
	const char *method;
	struct job_params p;     /* job.submit */
	int width_given;
	char job_id[JOB_ID_MAX]; /* job.export */
};

static void answer(struct request *rq, int rc, cJSON *result);

/* Starts decoding for rq: METHOD_DEFERRED, or an error. */
static int start_decode(struct request *rq, struct pending *pd,
			void (*done)(struct decode_job *d))
{
	pd->svc = rq->svc;
	pd->conn = server_conn_id(rq->c);
	pd->method = !strcmp(rq->method, M_JOB_SUBMIT)	  ? M_JOB_SUBMIT
		     : !strcmp(rq->method, M_JOB_EXPORT) ? M_JOB_EXPORT
							 : M_MODEL_RENDER;
	pd->d.done = done;
	if ((rq->id && !(pd->rpc_id = cJSON_Duplicate(rq->id, 1))) ||
	    decode_start(rq->svc->loop, &pd->d)) {
		cJSON_Delete(pd->rpc_id);
		decode_finish(&pd->d);
		free(pd);
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	return METHOD_DEFERRED;
}

/* The request again, on the loop, once decoded; c is NULL when its
 * connection has gone (or the daemon is stopping). */
static struct conn *pending_request(struct pending *pd, struct request *rq)
{
	struct service *svc = pd->svc;
	struct conn *c = svc->stopping < 2 ? server_find(svc->server, pd->conn)
					   : NULL; /* 2: the server is gone */
	*rq = (struct request){.svc = svc, .c = c, .id = pd->rpc_id,
			       .method = pd->method};
	return c;
}

static void pending_free(struct pending *pd)
{
	cJSON_Delete(pd->rpc_id);
	decode_finish(&pd->d);
	free(pd);
}

static int store_job(struct request *rq, struct pending *pd, cJSON **result);

static void submit_decoded(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct conn *c = pending_request(pd, &rq);
	if (c) {
		cJSON *result = NULL;
		int rc = store_job(&rq, pd, &result);
		answer(&rq, rc, result);
		server_conn_release(c);
	}
	pending_free(pd);
}

static int m_submit(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {"image", "epochs", "width", "lr",
					   "seed", "name", "priority", "init",
					   "batch", "target_psnr", "source",
					   "key", "warmup", "schedule",
					   "precision", "dilations",
					   "optimizer", "average", "plateau",
					   "lr_min", "half_life", "ema_decay",
					   "early_cycle",
					   "ssim",
					   "grad", "chroma", NULL};
	struct service *svc = rq->svc;
	struct job_params p;
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	if (svc->stopping)
		return fail(rq, RPC_SHUTTING_DOWN, "the daemon is stopping; "
			    "submit again once it is back");
	job_defaults(&p);
	double num[PARAM_COUNT] = {
		[PARAM_EPOCHS] = p.epochs, [PARAM_WIDTH] = 0, [PARAM_LR] = p.lr,
		[PARAM_SEED] = (double)p.seed, [PARAM_PRIORITY] = 0,
		[PARAM_TARGET_PSNR] = 0};
	for (int i = 0; i < PARAM_COUNT; i++)
		if ((rc = get_param(rq, params, i, &num[i])))
			return rc;
	p.epochs = (int)num[PARAM_EPOCHS];
	p.width = (int)num[PARAM_WIDTH];
	p.lr = num[PARAM_LR];
	p.seed = (uint64_t)num[PARAM_SEED];
	p.priority = (int)num[PARAM_PRIORITY];
	p.target_psnr = num[PARAM_TARGET_PSNR];
	for (int i = 0; i < TEXT_PARAM_COUNT; i++)
		if ((rc = get_text_param(rq, params, i, p.text[i],
					 sizeof(p.text[i]))))
			return rc;
	/* the recipe: the defaults with the keys given set over them (each
	 * already in its range; nn_config_check weighs them together) */
	struct nn_config cfg;
	char err[256];
	nn_config_defaults(&cfg, 0);
	cfg.lr = p.lr;
	if (job_recipe_read(params, &p.recipe, err, sizeof(err)))
		return fail(rq, RPC_INVALID_PARAMS, "%s", err);
	cfg.recipe = p.recipe;
	if (nn_config_check(&cfg, err, sizeof(err)))
		return fail(rq, RPC_INVALID_PARAMS, "%s", err);
	p.defaults = (!p.width ? JOB_DEFAULT_WIDTH : 0) |
		     (p.lr == NN_LR_AUTO ? JOB_DEFAULT_LR : 0) |
		     (p.recipe.warmup == NN_WARMUP_AUTO ? JOB_DEFAULT_WARMUP : 0);
	/* the default rate and warmup depend on the width: known now when
	 * given */
	if (p.width)
		nn_width_defaults(p.width, &p.lr, &p.recipe);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	if (name) {
		if (!cJSON_IsString(name))
			return fail(rq, RPC_INVALID_PARAMS,
				    "\"name\" must be a string");
		char why[128];
		if (usertext_check(name->valuestring, JOB_NAME_MAX - 1, why,
				   sizeof(why)))
			return fail(rq, RPC_INVALID_PARAMS, "\"name\" %s", why);
		snprintf(p.name, sizeof(p.name), "%s", name->valuestring);
	}
	if ((rc = get_text(rq, params, "source", p.source, sizeof(p.source))) ||
	    (rc = get_text(rq, params, "key", p.key, sizeof(p.key))))
		return rc;
	const cJSON *batch = cJSON_GetObjectItemCaseSensitive(params, "batch");
	if (batch) {
		if (!cJSON_IsString(batch) || !job_batch_valid(batch->valuestring))
			return fail(rq, RPC_INVALID_PARAMS, "\"batch\" must be a "
				    "string of 1 to %d letters, digits, '_' or "
				    "'-', e.g. \"b3f9a2c\"", JOB_BATCH_MAX - 1);
		snprintf(p.batch, sizeof(p.batch), "%s", batch->valuestring);
	}
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT, "uid %u already has %d jobs (the "
			    "limit, ended ones included); remove the ended "
			    "ones (vkinrctl rm --state done)",
			    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}

	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	pd->p = p;
	pd->width_given = p.width != 0;
	if ((rc = get_b64(rq, params, "image", image_key(params, "image"), 1,
			  &pd->d.png.b64)) ||
	    (rc = get_b64(rq, params, "init", "safetensors", 0,
			  &pd->d.model.b64))) {
		pending_free(pd);
		return rc;
	}
	return start_decode(rq, pd, submit_decoded);
}

/* job.submit, its image and init decoded: checks them and stores the job. */
static int store_job(struct request *rq, struct pending *pd, cJSON **result)
{
	struct service *svc = rq->svc;
	struct decode_job *d = &pd->d;
	char err[512] = "";
	int rc;
	if (svc->stopping)
		return fail(rq, RPC_SHUTTING_DOWN, "the daemon is stopping; "
			    "submit again once it is back");
	if (d->png.rc)
		return input_refused(rq, "image", "image", &d->png);
	if (d->model.rc)
		return input_refused(rq, "init", "safetensors", &d->model);
	if (d->model.bytes &&
	    (rc = check_init(rq, &d->cfg, &pd->p, pd->width_given)))
		return rc;
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) { /* others may have landed meanwhile */
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT, "uid %u already has %d jobs (the "
			    "limit); remove finished ones with job.remove",
			    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}
	struct job *job;
	rc = queue_submit(svc->queue, &pd->p, server_conn_uid(rq->c),
			  server_conn_pid(rq->c), d->png.bytes, d->png.size,
			  d->image->width, d->image->height, d->model.bytes,
			  d->model.size, &job, err, sizeof(err));
	if (rc) {
		log_error("job.submit: %s", err);
		return fail(rq, rc == ERR_NO_SPACE || rc == ERR_TOO_LARGE
				    ? RPC_LIMIT : RPC_INTERNAL_ERROR,
			    "%s", err);
	}
	struct job_params shown =
		views_job_settings(job, schedule_default_width(svc));
	char settings[160];
	views_settings_text(&shown, settings, sizeof settings);
	job_event(svc->queue, job, LOGL_NOTICE, "submitted by uid %u: %dx%d, "
		  "%d epochs, %s, seed %llu, priority %d",
		  (unsigned)job->uid, job->img_w, job->img_h, job->p.epochs,
		  settings, (unsigned long long)job->p.seed, job->p.priority);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	if (job->p.batch[0])
		cJSON_AddStringToObject(*result, "batch", job->p.batch);
	schedule_jobs(svc);
	return 0;
}

static int m_list(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {NULL};
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	cJSON *r = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(r, "jobs");
	int default_width = schedule_default_width(rq->svc);
	for (struct job *job = rq->svc->queue->head; job; job = job->next)
		cJSON_AddItemToArray(a, views_job(job, default_width));
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
	*result = views_job(job, schedule_default_width(rq->svc));
	return 0;
}

/* Anyone may read a job's events, as its job object (see Access): they
 * say what job.get and job.subscribe show, with times. */
static int m_logs(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	cJSON *events;
	int rc = check_keys(rq, params, job_only);
	if (rc || (rc = get_job(rq, params, &job)))
		return rc;
	if ((rc = job_events_read(rq->svc->queue, job, &events)))
		return fail(rq, RPC_INTERNAL_ERROR, "cannot read the events of "
			    "job %s: %s", job->id, rc == ERR_IO ?
			    strerror(errno) : error_message(rc));
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddItemToObject(*result, "events", events);
	return 0;
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

/* A change asked for by a client, of a job no worker holds: logged and
 * kept in the job's events as "paused", "resumed" or "cancelled", with
 * the uid that asked. */
static void set_state(struct request *rq, struct job *job,
		      enum job_state state)
{
	struct service *svc = rq->svc;
	const char *what = state == JOB_QUEUED ? "resumed"
					       : job_state_name(state);
	job_event(svc->queue, job, LOGL_NOTICE, "%s by uid %u (was %s)", what,
		  (unsigned)server_conn_uid(rq->c), job_state_name(job->state));
	queue_set_state(svc->queue, job, state, NULL);
	subs_job_state(svc, job);
}

/* A pause or cancel of a running job: answered once the worker has let
 * it go (subs.c). */
static int wait_for_state(struct request *rq, struct job *job)
{
	if (subs_wait_state(rq->svc, server_conn_id(rq->c), rq->id, job))
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	return METHOD_DEFERRED;
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
		set_state(rq, job, JOB_PAUSED);
		break;
	case JOB_PAUSED:
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s; only a queued or "
			    "running job can be paused", job->id,
			    job_state_name(job->state));
	}
	*result = views_job_state(job);
	return 0;
}

static int m_resume(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (job->damaged)
		return fail(rq, RPC_JOB_STATE, "job %s cannot run again: %s; "
			    "remove it (job.remove)", job->id, job->error);
	switch (job->state) {
	case JOB_PAUSED:
	case JOB_FAILED:
		set_state(rq, job, JOB_QUEUED);
		schedule_jobs(rq->svc);
		break;
	case JOB_QUEUED:
	case JOB_RUNNING:
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s; only a paused or "
			    "failed job can be resumed", job->id,
			    job_state_name(job->state));
	}
	*result = views_job_state(job);
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
		set_state(rq, job, JOB_CANCELLED);
		break;
	case JOB_CANCELLED: /* as pausing a paused job: already so */
		break;
	default:
		return fail(rq, RPC_JOB_STATE, "job %s is %s already; there is "
			    "nothing to cancel", job->id,
			    job_state_name(job->state));
	}
	*result = views_job_state(job);
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
			    "first, then remove it", job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	cJSON_AddBoolToObject(*result, "removed", 1);
	subs_drop(rq->svc, 0, job->id);
	log_notice("job %s removed", job->id);
	queue_remove(rq->svc->queue, job);
	return 0;
}

/* Why a job that is not running has nothing to export: it never ran, or
 * it ran some epochs but its weights went before a checkpoint kept them
 * (the checkpoint is the only copy of a job no worker holds). */
static int no_checkpoint(struct request *rq, const struct job *job)
{
	int epoch = job_epoch(job);
	const char *why;

	if (!epoch && !job->started)
		return fail(rq, RPC_JOB_STATE, "job %s has not run yet; there "
			    "is no model to export", job->id);
	switch (job->state) {
	case JOB_QUEUED:
		why = "the daemon stopped before its first checkpoint "
		      "(written every 100 epochs and every 30 s), so its "
		      "epochs were lost and it starts again from epoch 0 "
		      "when a worker takes it; export it once it runs";
		break;
	case JOB_PAUSED:
		why = job->write_paused
			      ? "its checkpoint could not be written (see its "
				"error); the daemon retries, and queues it "
				"again once it can write"
			      : "it was paused before a checkpoint was kept; "
				"resume it and export it while it runs";
		break;
	case JOB_FAILED:
		why = "it failed before a checkpoint was written (see its "
		      "error)";
		break;
	default:
		why = "it stopped before a checkpoint was written";
		break;
	}
	if (!epoch) /* a restart cut its history back to no checkpoint */
		return fail(rq, RPC_JOB_STATE, "job %s has run but has no "
			    "checkpoint to export from: %s", job->id, why);
	return fail(rq, RPC_JOB_STATE, "job %s ran %d epochs but has no "
		    "checkpoint to export from: %s", job->id, epoch, why);
}

/* An export made by a worker: from the running fit, or rendered from the
 * job's checkpoint. */
static int export_by_worker(struct request *rq, struct job *job)
{
	struct service *svc = rq->svc;
	struct worker_slot *slot = NULL;
	if (job->state == JOB_RUNNING) {
		slot = &svc->slots[job->worker];
	} else {
		char path[4200];
		struct stat st;
		queue_job_path(svc->queue, job, JOBFILE_CHECKPOINT, path,
			       sizeof(path));
		if (stat(path, &st))
			return no_checkpoint(rq, job);
		slot = schedule_pick_worker(svc);
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

/* A done job's export files, read and encoded (decode.c): sent; if they
 * could not be read, a worker makes the export from the checkpoint. */
static void export_read(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct conn *c = pending_request(pd, &rq);
	struct job *job = c ? queue_find(pd->svc->queue, pd->job_id) : NULL;
	int rc = 0;
	cJSON *r = NULL;
	if (c && !job) {
		rc = fail(&rq, RPC_JOB_NOT_FOUND, "job %s was removed meanwhile",
			  pd->job_id);
	} else if (c && d->read_rc) {
		rc = export_by_worker(&rq, job);
	} else if (c) {
		r = views_export_result(d->model_b64, d->png_b64);
		views_add_number(r, "psnr", job->export_psnr);
	}
	if (c && rc != METHOD_DEFERRED) {
		answer(&rq, rc, r); /* printed before pd's strings go */
		server_conn_release(c);
	}
	pending_free(pd);
}

static int m_export(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (!(job->state == JOB_DONE && job->has_export))
		return export_by_worker(rq, job);
	char path[4200];
	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	snprintf(pd->job_id, sizeof(pd->job_id), "%s", job->id);
	queue_job_path(rq->svc->queue, job, JOBFILE_MODEL, path,
		       sizeof(path));
	pd->d.read_model = strdup(path);
	queue_job_path(rq->svc->queue, job, JOBFILE_RECON, path, sizeof(path));
	pd->d.read_png = strdup(path);
	if (!pd->d.read_model || !pd->d.read_png) {
		pending_free(pd);
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	return start_decode(rq, pd, export_read);
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
	subs_drop(svc, conn, job->id);
	int nsubs = subs_count(svc, conn);
	if (nsubs >= quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return fail(rq, RPC_LIMIT, "this connection follows %d jobs "
			    "already (the limit)", nsubs);
	}
	struct subscription *s = subs_add(svc, conn, job, since);
	if (!s)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
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
	subs_drop(rq->svc, server_conn_id(rq->c), job->id);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	return 0;
}

/* model.render, its model (and target) decoded: hands it to a worker. */
static int render_decoded_request(struct request *rq, struct pending *pd)
{
	struct decode_job *d = &pd->d;
	if (d->model.rc)
		return input_refused(rq, "model", "safetensors", &d->model);
	if (d->png.rc)
		return input_refused(rq, "target", "image", &d->png);
	if (d->image && (d->image->width != d->model_w ||
			 d->image->height != d->model_h))
		return fail(rq, RPC_INVALID_PARAMS, "\"target\" is %dx%d but "
			    "the model renders %dx%d", d->image->width,
			    d->image->height, d->model_w, d->model_h);
	struct worker_slot *slot = schedule_pick_worker(rq->svc);
	if (!slot)
		return fail(rq, RPC_DEVICE, "no device is available to render");
	struct work_request *req = calloc(1, sizeof(*req));
	if (!req)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	req->kind = WORK_RENDER;
	req->model = d->package;
	req->target = d->image;
	d->package = NULL;
	d->image = NULL;
	return defer_to_worker(rq, slot, req);
}

static void render_decoded(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct conn *c = pending_request(pd, &rq);
	if (c) {
		int rc = render_decoded_request(&rq, pd);
		if (rc != METHOD_DEFERRED) {
			answer(&rq, rc, NULL);
			server_conn_release(c);
		} /* else the worker's reply releases it */
	}
	pending_free(pd);
}

static int m_render(struct request *rq, const cJSON *params, cJSON **result)
{
	static const char *const keys[] = {"model", "target", NULL};
	int rc = check_keys(rq, params, keys);
	if (rc)
		return rc;
	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	pd->d.keep_package = 1;
	if ((rc = get_b64(rq, params, "model", "safetensors", 1,
			  &pd->d.model.b64)) ||
	    (rc = get_b64(rq, params, "target", image_key(params, "target"), 0,
			  &pd->d.png.b64))) {
		pending_free(pd);
		return rc;
	}
	return start_decode(rq, pd, render_decoded);
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
	{M_JOB_LOGS, m_logs},
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
	if (rc == METHOD_DEFERRED) {
		server_conn_hold(rq->c); /* its next request waits for this */
		return;
	}
	answer(rq, rc, result);
}

/* Sends a method's result or error (nothing for a notification). */
static void answer(struct request *rq, int rc, cJSON *result)
{
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
			   views_limit_data("LIMIT_LINE_BYTES",
					    LIMIT_LINE_BYTES), 0);
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
	size_t bad = usertext_utf8_end(line, len);
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
		snprintf(msg, sizeof(msg), "invalid request: the key \"%.64s\" "
			 "is given twice%s%.64s%s; give each key once", twice,
			 where[0] ? " in \"" : "", where, where[0] ? "\"" : "");
		usertext_sanitize(msg);
	}
	if (strict_keep_id(obj, &exact) < 0) { /* twice is gone now */
		cJSON_Delete(obj);
		send_error(c, NULL, RPC_INTERNAL_ERROR, "out of memory", NULL, 0);
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
			.method = cJSON_GetObjectItemCaseSensitive(obj, "method")
					  ->valuestring,
		};
		dispatch(&rq, obj);
		if (!server_conn_closing(c))
			subs_pump_conn(svc, c);
	}
	/* results and errors from a client answer nothing: ignored */
	cJSON_Delete(obj);
}

void methods_closed(void *ctx, struct conn *c)
{
	struct service *svc = ctx;
	uint64_t id = server_conn_id(c);
	subs_drop_conn(svc, id);
	replies_drop_conn(svc, id);
	/* renders and exports nobody will read are not made */
	for (int i = 0; i < svc->nslots; i++)
		worker_drop_requests(svc->slots[i].w, id);
}

int methods_busy(void *ctx, struct conn *c)
{
	return subs_busy(ctx, c);
}

void methods_drained(void *ctx, struct conn *c)
{
	subs_pump_conn(ctx, c);
}
