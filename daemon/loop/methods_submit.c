/*
 * methods_submit.c - job.submit: every training option read and checked
 * against the table of proto/params.h, the image and the init model
 * decoded off the loop (decode.c), then the job stored in the queue. A
 * small PNG alone is decoded at once, on the loop (decode_is_small): the
 * connection is not held, so the next request is read in the same turn
 * and a folder's images sent together are stored with one sync.
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
#include "loop/after.h"
#include "loop/commit.h"
#include "jobs/share.h"
#include "loop/events.h"
#include "formats/image_codec.h"
#include "proto/jsonrpc.h"
#include "proto/params.h"
#include "log.h"
#include "proto/protocol.h"
#include "loop/quota.h"
#include "loop/replies.h"
#include "formats/safetensors.h"
#include "loop/schedule.h"
#include "loop/subs.h"
#include "usertext.h"
#include "loop/views.h"
#include "nn/fit.h"

/* A training option (proto/params.h), checked against the table the
 * command lines also check, into cfg (or *job_value, for a row that is
 * the job's alone); untouched when absent. */
static int get_param(struct request *rq, const cJSON *params, enum param_id id,
		     struct nn_config *cfg, double *job_value)
{
	const struct param *l = &param_table[id];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, l->key);
	char what[64], err[256];
	int rc;

	if (!v)
		return 0;
	snprintf(what, sizeof(what), "\"%s\"", l->key);
	if (l->flags & PARAM_WORD) {
		if (!cJSON_IsString(v) || strlen(v->valuestring) >= 32)
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "%s must be a short "
					    "string, e.g. \"%s\"",
					    what, l->example);
		rc = nn_option_set(cfg, id, v->valuestring, what, err,
				   sizeof(err));
	} else {
		if (!cJSON_IsNumber(v))
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "%s must be a number", what);
		rc = nn_option_set_number(cfg, id, v->valuedouble, what, err,
					  sizeof(err));
		*job_value = v->valuedouble;
	}
	return rc ? methods_fail(rq, RPC_INVALID_PARAMS, "%s", err) : 0;
}

/* The init model (decoded) fits the job: its width, its dilations. */
static int check_init(struct request *rq, const struct nn_config *cfg,
		      struct job_params *p, int width_given)
{
	struct nn_config def;
	if (width_given && cfg->nf != p->cfg.nf)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"width\" is %d but the "
		    "init model has width %d; leave width out or make "
		    "them equal",
		    p->cfg.nf, cfg->nf);
	nn_config_defaults(&def, 0);
	if (cfg->nblocks != def.nblocks ||
	    memcmp(cfg->dilations, def.dilations, sizeof(int) * def.nblocks)) {
		char a[64], b[64];
		nn_config_dilations_string(cfg, a, sizeof(a));
		nn_config_dilations_string(&def, b, sizeof(b));
		return methods_fail(rq, RPC_BAD_MODEL,
				    "the init model has dilations "
				    "%s; jobs use %s",
				    a, b);
	}
	p->cfg.nf = cfg->nf;
	p->defaults &= ~(unsigned)JOB_DEFAULT_WIDTH; /* the init model's */
	job_resolve_auto(p, -1);
	return 0;
}

static int store_job(struct request *rq, struct pending *pd, cJSON **result);

/* "resize": {"width": W, "height": H} or {"max_side": N}, each 1 to
 * IMAGE_MAX_SIDE: the image scaled down to that before it is kept. */
static int get_resize(struct request *rq, const cJSON *params,
		      struct decode_job *d)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(params, "resize");
	static const char *const keys[] = { "width", "height", "max_side",
					    NULL };
	if (!r)
		return 0;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(r, "width");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(r, "height");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "max_side");
	int rc = cJSON_IsObject(r) ? methods_check_keys(rq, r, keys) : 0;
	if (rc)
		return rc;
#define RESIZE_OK(v)                                                           \
	(cJSON_IsNumber(v) && (v)->valuedouble == (int)(v)->valuedouble &&     \
	 (v)->valuedouble >= 1 && (v)->valuedouble <= IMAGE_MAX_SIDE)
	if (cJSON_IsObject(r) && m && !w && !h && RESIZE_OK(m)) {
		d->max_side = (int)m->valuedouble;
		return 0;
	}
	if (cJSON_IsObject(r) && !m && RESIZE_OK(w) && RESIZE_OK(h)) {
		d->resize_w = (int)w->valuedouble;
		d->resize_h = (int)h->valuedouble;
		return 0;
	}
#undef RESIZE_OK
	return methods_fail(
	    rq, RPC_INVALID_PARAMS,
	    "\"resize\" must be {\"width\": W, \"height\": H} or "
	    "{\"max_side\": N}, integers from 1 to %d",
	    IMAGE_MAX_SIDE);
}

/* "after": the ids of 1 to JOB_AFTER_MAX jobs the new one waits for, each
 * one that can still be done (a done one counts as met at once). */
static int get_after(struct request *rq, const cJSON *params,
		     struct job_params *p)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(params, "after"), *v;
	if (!a)
		return 0;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 ||
	    cJSON_GetArraySize(a) > JOB_AFTER_MAX)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"after\" must be a list of 1 to %d job ids, "
		    "e.g. [\"12\", \"14\"]",
		    JOB_AFTER_MAX);
	cJSON_ArrayForEach(v, a)
	{
		char id[JOB_ID_MAX] = "";
		if (cJSON_IsString(v) && strlen(v->valuestring) < sizeof(id))
			snprintf(id, sizeof(id), "%s", v->valuestring);
		else if (cJSON_IsNumber(v) && v->valuedouble >= 1 &&
			 v->valuedouble <= (double)JOB_NUMBER_MAX &&
			 v->valuedouble == floor(v->valuedouble))
			snprintf(id, sizeof(id), "%.0f", v->valuedouble);
		else if (!cJSON_IsString(v))
			return methods_fail(
			    rq, RPC_INVALID_PARAMS,
			    "\"after\" holds job ids such as "
			    "\"12\", as job.submit returned them");
		const struct job *dep = queue_find(rq->svc->queue, id);
		if (!dep)
			return methods_fail(rq, RPC_JOB_NOT_FOUND,
					    "\"after\": no job with id \"%s\"",
					    cJSON_IsString(v) ? v->valuestring
							      : id);
		if (dep->state == JOB_FAILED || dep->state == JOB_CANCELLED)
			return methods_fail(rq, RPC_JOB_STATE,
					    "\"after\": job %s is %s, so a job "
					    "waiting for it would never start; "
					    "resume or retry it first",
					    dep->id,
					    job_state_name(dep->state));
		int twice = 0;
		for (int i = 0; i < p->nafter; i++)
			twice |= !strcmp(p->after[i], dep->id);
		if (!twice)
			snprintf(p->after[p->nafter++], JOB_ID_MAX, "%s",
				 dep->id);
	}
	return 0;
}

static void submit_decoded(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct peer_conn *c = methods_pending_request(pd, &rq);
	if (c) {
		cJSON *result = NULL;
		int rc = store_job(&rq, pd, &result);
		methods_answer(&rq, rc, result);
		server_conn_release(c);
	}
	methods_pending_free(pd);
}

int methods_job_submit(struct request *rq, const cJSON *params, cJSON **result)
{
	/* the job's own keys, then every training option's */
	static const char *const own[] = { "image", "name",   "init",
					   "batch", "source", "key",
					   "after", "resize", "yes" };
	const char *keys[sizeof(own) / sizeof(own[0]) + PARAM_COUNT + 1];
	struct service *svc = rq->svc;
	struct job_params p = { 0 };
	int n = 0, rc;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		keys[n++] = own[i];
	for (int i = 0; i < PARAM_COUNT; i++)
		keys[n++] = param_table[i].key;
	keys[n] = NULL;
	if ((rc = methods_check_keys(rq, params, keys)))
		return rc;
	if (svc->stopping)
		return methods_fail(rq, RPC_SHUTTING_DOWN,
				    "the daemon is stopping; "
				    "submit again once it is back");
	/* the engine's defaults with the width, lr and warmup auto, the
	 * options given set over them, each checked against its row */
	struct nn_config *cfg = &p.cfg;
	double job_value[PARAM_COUNT] = { 0 };
	nn_config_defaults(cfg, 0);
	cfg->nf = 0; /* the device's, unless given */
	for (int i = 0; i < PARAM_COUNT; i++) {
		if ((rc = get_param(rq, params, i, cfg, &job_value[i])))
			return rc;
		if (i >= PARAM_FIRST_WORD &&
		    cJSON_HasObjectItem(params, param_table[i].key))
			p.words_given |= 1u << (i - PARAM_FIRST_WORD);
	}
	p.priority = (int)job_value[PARAM_PRIORITY];
	p.target_psnr = job_value[PARAM_TARGET_PSNR];
	p.defaults =
	    (!cfg->nf ? JOB_DEFAULT_WIDTH : 0) |
	    (cfg->lr == NN_LR_AUTO ? JOB_DEFAULT_LR : 0) |
	    (cfg->recipe.warmup == NN_WARMUP_AUTO ? JOB_DEFAULT_WARMUP : 0);
	/* the default rate and warmup depend on the width: known now when
	 * given */
	job_resolve_auto(&p, -1);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	if (name) {
		if (!cJSON_IsString(name))
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "\"name\" must be a string");
		char why[128];
		if (usertext_check(name->valuestring, JOB_NAME_MAX - 1, why,
				   sizeof(why)))
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "\"name\" %s", why);
		snprintf(p.name, sizeof(p.name), "%s", name->valuestring);
	}
	if ((rc = methods_get_text(rq, params, "source", p.source,
				   sizeof(p.source))) ||
	    (rc = methods_get_text(rq, params, "key", p.key, sizeof(p.key))) ||
	    (rc = get_after(rq, params, &p)))
		return rc;
	const cJSON *batch = cJSON_GetObjectItemCaseSensitive(params, "batch");
	if (batch) {
		if (!cJSON_IsString(batch) ||
		    !job_batch_valid(batch->valuestring))
			return methods_fail(
			    rq, RPC_INVALID_PARAMS,
			    "\"batch\" must be a "
			    "string of 1 to %d letters, digits, '_' or "
			    "'-', e.g. \"b3f9a2c\"",
			    JOB_BATCH_MAX - 1);
		snprintf(p.batch, sizeof(p.batch), "%s", batch->valuestring);
	}
	if ((rc = methods_batch_refused(rq, p.batch)) ||
	    (rc = methods_priority_refused(rq, p.priority)) ||
	    (rc = methods_disk_refused(rq, 0)))
		return rc;
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) {
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return methods_fail(
		    rq, RPC_LIMIT,
		    "uid %u already has %d jobs (the "
		    "limit, ended ones included); remove the ended "
		    "ones (vkinrctl rm --state done)",
		    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}

	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	pd->p = p;
	pd->width_given = p.cfg.nf != 0;
	pd->d.store_image = 1; /* the decoded image, not the bytes sent */
	const cJSON *yes = cJSON_GetObjectItemCaseSensitive(params, "yes");
	if (yes && !cJSON_IsBool(yes)) {
		methods_pending_free(pd);
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "\"yes\" must be true or false");
	}
	pd->yes = cJSON_IsTrue(yes);
	if ((rc = get_resize(rq, params, &pd->d)) ||
	    (rc = methods_get_b64(rq, params, "image",
				  methods_image_key(params, "image"), 1,
				  &pd->d.png.b64)) ||
	    (rc = methods_get_b64(rq, params, "init", "safetensors", 0,
				  &pd->d.model.b64))) {
		methods_pending_free(pd);
		return rc;
	}
	if (decode_is_small(&pd->d)) { /* stored now, in this turn */
		decode_run(&pd->d);
		rc = store_job(rq, pd, result);
		methods_pending_free(pd);
		return rc;
	}
	return methods_start_decode(rq, pd, submit_decoded);
}

/* A job that would be slow: every worker on a CPU device, an epoch of
 * this image at this width estimated over NN_CPU_SLOW_EPOCH_S. Refused
 * (RPC_LIMIT) with the estimate and a max_side that would be quick,
 * unless "yes"; 0 otherwise. */
static int slow_refused(struct request *rq, const struct pending *pd,
			const struct image *img)
{
	struct service *svc = rq->svc;
	int cpus = 0, cores;
	for (int i = 0; i < svc->nslots; i++) {
		const struct worker_slot *s = &svc->slots[i];
		if (s->ok && !s->exited && !s->is_cpu)
			return 0;
		cpus += s->ok && !s->exited;
	}
	if (pd->yes || !cpus)
		return 0;
	struct nn_config cfg;
	nn_config_defaults(&cfg, 1);
	int nf = pd->p.cfg.nf ? pd->p.cfg.nf : cfg.nf;
	double epoch =
	    nn_epoch_gflop(cfg.nblocks, nf, img->width, img->height) /
	    nn_cpu_gflops(&cores);
	if (epoch <= NN_CPU_SLOW_EPOCH_S)
		return 0;
	int side = img->width > img->height ? img->width : img->height;
	int good = (int)(side * sqrt(2.0 / epoch));
	good = good >= 32 ? good / 16 * 16 : 16;
	rq->data = views_limit_data("CPU_EPOCH_SECONDS", NN_CPU_SLOW_EPOCH_S);
	return methods_fail(
	    rq, RPC_LIMIT,
	    "this %dx%d image would be slow on the daemon's CPU "
	    "device: about %.0f s an epoch at width %d, %.1f h for %d "
	    "epochs (about %.1f GFLOP/s on %d cores); submit it with "
	    "--yes (\"yes\": true in job.submit), or scaled down with "
	    "--max-side %d, about %.0f s an epoch (\"resize\": "
	    "{\"max_side\": %d})",
	    img->width, img->height, epoch, nf, epoch * pd->p.cfg.epochs / 3600,
	    pd->p.cfg.epochs, nn_cpu_gflops(NULL), cores, good,
	    epoch * good * good / ((double)side * side), good);
}

/* job.submit, its image and init decoded: checks them and stores the job. */
static int store_job(struct request *rq, struct pending *pd, cJSON **result)
{
	struct service *svc = rq->svc;
	struct decode_job *d = &pd->d;
	char err[512] = "";
	int rc;
	if (svc->stopping)
		return methods_fail(rq, RPC_SHUTTING_DOWN,
				    "the daemon is stopping; "
				    "submit again once it is back");
	if (d->png.rc)
		return methods_input_refused(rq, "image", "image", &d->png);
	if (d->model.rc)
		return methods_input_refused(rq, "init", "safetensors",
					     &d->model);
	if (d->model.bytes &&
	    (rc = check_init(rq, &d->cfg, &pd->p, pd->width_given)))
		return rc;
	/* after the init model, whose width the job takes */
	if ((rc = slow_refused(rq, pd, d->image)))
		return rc;
	if ((rc = methods_batch_refused(rq, pd->p.batch)) || /* ditto */
	    (rc = methods_disk_refused(rq, d->png.size + d->model.size)))
		return rc;
	if (queue_count_uid(svc->queue, server_conn_uid(rq->c)) >=
	    quota_jobs_per_uid()) { /* others may have landed meanwhile */
		rq->data = views_limit_data("LIMIT_JOBS_PER_UID",
					    quota_jobs_per_uid());
		return methods_fail(
		    rq, RPC_LIMIT,
		    "uid %u already has %d jobs (the "
		    "limit); remove finished ones with job.remove",
		    (unsigned)server_conn_uid(rq->c), quota_jobs_per_uid());
	}
	struct job *job;
	commit_open(svc); /* durable, with the turn's others, before the
			     answer goes out */
	rc = queue_submit(svc->queue, &pd->p, server_conn_uid(rq->c),
			  server_conn_pid(rq->c), d->png.bytes, d->png.size,
			  d->image->width, d->image->height, d->model.bytes,
			  d->model.size, &job, err, sizeof(err));
	svc->commit_jobs++;
	if (rc) {
		log_error("job.submit: %s", err);
		return methods_fail(rq,
				    rc == ERR_NO_SPACE || rc == ERR_TOO_LARGE
					? RPC_LIMIT
					: RPC_INTERNAL_ERROR,
				    "%s", err);
	}
	/* until the next walk: what was sent, each file a block at least */
	share_disk_add(svc->queue, job->uid,
		       (long long)(d->png.size + d->model.size) +
			   4096ll * JOBFILES_NEW,
		       JOBFILES_NEW);
	struct job_params shown =
	    views_job_settings(job, schedule_default_width(svc));
	char settings[160];
	views_settings_text(&shown, settings, sizeof(settings));
	events_note(svc->queue, job, LOGL_NOTICE,
		    "submitted by uid %u: %dx%d, "
		    "%d epochs, %s, seed %llu, priority %d",
		    (unsigned)job->uid, job->img_w, job->img_h,
		    job->p.cfg.epochs, settings,
		    (unsigned long long)job->p.cfg.seed, job->p.priority);
	if (job->p.nafter && (rc = after_start(svc, job))) {
		log_error("job %s: removed again", job->id);
		queue_remove(svc->queue, job);
		return methods_fail(
		    rq, RPC_INTERNAL_ERROR,
		    "cannot store the list of jobs it waits for: %s",
		    error_message(rc));
	}
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "job", job->id);
	if (job->p.batch[0])
		cJSON_AddStringToObject(*result, "batch", job->p.batch);
	/* the size kept, after "resize": the client says it at submission */
	cJSON *size = cJSON_AddObjectToObject(*result, "image");
	cJSON_AddNumberToObject(size, "width", job->img_w);
	cJSON_AddNumberToObject(size, "height", job->img_h);
	schedule_jobs(svc);
	return 0;
}
