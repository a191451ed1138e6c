/*
 * views.c - the JSON the daemon answers with, built from the loop's data.
 *
 * A job object carries every field of the job as PROTOCOL.md lists it,
 * null where there is no value yet (JSON has no NaN); the progress line is
 * printed by hand, being the one message sent per epoch per reader. The
 * error line adds data.name, errors.h's name for the failure, so a client
 * can tell the cases apart without parsing the message. Nothing here
 * sends or changes anything.
 */
#include "loop/views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "proto/jsonrpc.h"
#include "proto/protocol.h"
#include "worker/worker.h"

/* ------------------------------------------------------------ errors */

/* The errors.h name that goes with a JSON-RPC code in data.name. */
static int code_error(int code)
{
	switch (code) {
	case RPC_PARSE_ERROR:
		return ERR_FORMAT;
	case RPC_INVALID_REQUEST:
		return ERR_INVALID;
	case RPC_METHOD_NOT_FOUND:
		return ERR_NOT_FOUND;
	case RPC_INVALID_PARAMS:
		return ERR_INVALID;
	case RPC_JOB_NOT_FOUND:
		return ERR_NOT_FOUND;
	case RPC_JOB_STATE:
		return ERR_STATE;
	case RPC_BAD_IMAGE:
		return ERR_FORMAT;
	case RPC_LIMIT:
		return ERR_TOO_LARGE;
	case RPC_PERMISSION:
		return ERR_PERMISSION;
	case RPC_BAD_MODEL:
		return ERR_FORMAT;
	case RPC_DEVICE:
		return ERR_VULKAN;
	case RPC_SHUTTING_DOWN:
		return ERR_BUSY;
	}
	return ERR_IO;
}

char *views_error_line(const cJSON *id, int code, const char *msg, cJSON *data,
		       int err_name)
{
	if (!data)
		data = cJSON_CreateObject();
	if (!err_name)
		err_name = code_error(code);
	if (!cJSON_GetObjectItem(data, "name"))
		cJSON_AddStringToObject(data, "name", error_name(err_name));
	return rpc_error_line(id, code, msg, data);
}

cJSON *views_limit_data(const char *name, double value)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", error_name(ERR_TOO_LARGE));
	cJSON_AddStringToObject(d, "limit", name);
	cJSON_AddNumberToObject(d, "value", value);
	return d;
}

/* ------------------------------------------------------------- jobs */

void views_add_number(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

struct job_params views_job_settings(const struct job *job, int default_width)
{
	struct job_params p = job->p;
	if (!p.cfg.nf && default_width)
		p.cfg.nf = default_width;
	job_resolve_auto(&p, -1);
	return p;
}

void views_settings_text(const struct job_params *p, char *buf, size_t len)
{
	char width[48], lr[48], warmup[48];
	const char *def = " (default)";
	if (p->cfg.nf)
		snprintf(width, sizeof(width), "%d", p->cfg.nf);
	else
		snprintf(width, sizeof(width), "by device");
	if (p->cfg.lr != NN_LR_AUTO)
		snprintf(lr, sizeof(lr), "%g", p->cfg.lr);
	else
		snprintf(lr, sizeof(lr), "by width");
	if (p->cfg.recipe.warmup != NN_WARMUP_AUTO)
		snprintf(warmup, sizeof(warmup), "%d", p->cfg.recipe.warmup);
	else
		snprintf(warmup, sizeof(warmup), "by width");
	snprintf(buf, len, "width %s%s, lr %s%s, warmup %s%s", width,
		 p->defaults & JOB_DEFAULT_WIDTH ? def : "", lr,
		 p->defaults & JOB_DEFAULT_LR ? def : "", warmup,
		 p->defaults & JOB_DEFAULT_WARMUP ? def : "");
}

cJSON *views_job(const struct job *job, int default_width)
{
	/* what the job will use, never a placeholder: null when not known
	 * yet (the device that runs it chooses the width) */
	struct job_params shown = views_job_settings(job, default_width);
	cJSON *o = cJSON_CreateObject();
	const struct nn_metrics *last =
	    job->nhist ? &job->hist[job->nhist - 1] : NULL;
	cJSON_AddStringToObject(o, "id", job->id);
	cJSON_AddStringToObject(o, "name", job->p.name);
	cJSON_AddStringToObject(o, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(o, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(o, "epochs", job->p.cfg.epochs);
	/* One PSNR: the model's, the weights an export writes (the best
	 * model, struct nn_best; a done job's exported model, which infer
	 * measures too). The last epoch's own figure, measured before its
	 * step, is live_psnr. best_psnr is psnr again, for clients of old. */
	double psnr = job->has_export ? job->export_psnr : job->best_psnr;
	views_add_number(o, "psnr", psnr);
	views_add_number(o, "live_psnr", last ? last->psnr : NAN);
	views_add_number(o, "best_psnr", psnr);
	views_add_number(o, "mse", last ? last->mse : NAN);
	views_add_number(o, "ms", last ? last->ms : NAN);
	/* the rate of the last epoch, where the schedule has it; lr is the
	 * peak rate the job was given */
	views_add_number(o, "live_lr", last ? last->lr : NAN);
	if (shown.cfg.nf)
		cJSON_AddNumberToObject(o, "width", shown.cfg.nf);
	else
		cJSON_AddNullToObject(o, "width");
	cJSON *img = cJSON_AddObjectToObject(o, "image");
	cJSON_AddNumberToObject(img, "width", job->img_w);
	cJSON_AddNumberToObject(img, "height", job->img_h);
	if (job->device[0])
		cJSON_AddStringToObject(o, "device", job->device);
	else
		cJSON_AddNullToObject(o, "device");
	/* absent until the job first starts (it has a device a moment
	 * before: between the hand-off and the worker's first word) */
	if (job->precision[0])
		cJSON_AddStringToObject(o, "precision_used", job->precision);
	if (job->state == JOB_FAILED ||
	    (job->state == JOB_PAUSED && job->error[0]))
		cJSON_AddStringToObject(o, "error", job->error);
	if (shown.cfg.lr != NN_LR_AUTO)
		cJSON_AddNumberToObject(o, "lr", shown.cfg.lr);
	else
		cJSON_AddNullToObject(o, "lr");
	rpc_add_exact_integer(o, "seed", job->p.cfg.seed);
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	if (job->p.batch[0])
		cJSON_AddStringToObject(o, "batch", job->p.batch);
	else
		cJSON_AddNullToObject(o, "batch");
	job_params_add_given(o, &shown);
	if (shown.cfg.recipe.warmup == NN_WARMUP_AUTO)
		cJSON_ReplaceItemInObjectCaseSensitive(o, "warmup",
						       cJSON_CreateNull());
	cJSON *defaults = cJSON_AddArrayToObject(o, "defaults");
	for (int i = 0; i < 3; i++)
		if (shown.defaults & (1u << i))
			cJSON_AddItemToArray(
			    defaults, cJSON_CreateString(job_default_names[i]));
	views_add_number(o, "target_psnr",
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
	views_add_number(o, "created", job->created);
	views_add_number(o, "started", job->started ? job->started : NAN);
	views_add_number(o, "finished", job->finished ? job->finished : NAN);
	if (job->has_export)
		views_add_number(o, "model_psnr", job->export_psnr);
	if (job->p.nafter) { /* --after: the jobs it waits for, and those
				not done yet */
		cJSON *after = cJSON_AddArrayToObject(o, "after");
		cJSON *waiting = cJSON_AddArrayToObject(o, "waiting_for");
		for (int i = 0; i < job->p.nafter; i++) {
			cJSON_AddItemToArray(
			    after, cJSON_CreateString(job->p.after[i]));
			if (!(job->after_done & (1u << i)))
				cJSON_AddItemToArray(
				    waiting,
				    cJSON_CreateString(job->p.after[i]));
		}
	}
	if (job->p.retry_of[0])
		cJSON_AddStringToObject(o, "retry_of", job->p.retry_of);
	return o;
}

cJSON *views_state_params(const struct job *job)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "job", job->id);
	cJSON_AddStringToObject(p, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(p, "epoch", job_epoch(job));
	cJSON_AddNumberToObject(p, "epochs", job->p.cfg.epochs);
	if (job->state == JOB_FAILED ||
	    (job->state == JOB_PAUSED && job->error[0]))
		cJSON_AddStringToObject(p, "error", job->error);
	if (job->state == JOB_DONE && job->has_export)
		views_add_number(p, "psnr", job->export_psnr);
	return p;
}

char *views_progress_line(const struct job *job, const struct nn_metrics *m,
			  double time)
{
	/* Built by hand: this is the one message sent per epoch per reader. */
	char buf[512];
	char psnr[32], mse[32], avg[64] = "", best[64] = "", at[40] = "";
	snprintf(psnr, sizeof(psnr), isfinite(m->psnr) ? "%.17g" : "null",
		 m->psnr);
	if (m->psnr_average > 0 && isfinite(m->psnr_average))
		snprintf(avg, sizeof(avg), ",\"psnr_average\":%.17g",
			 m->psnr_average);
	/* 0: an epoch stored before the best model was kept */
	if (m->psnr_best > 0 && isfinite(m->psnr_best))
		snprintf(best, sizeof(best), ",\"psnr_best\":%.17g",
			 m->psnr_best);
	/* 0: an epoch stored before its time was recorded */
	if (time > 0 && isfinite(time))
		snprintf(at, sizeof(at), ",\"time\":%.6f", time);
	snprintf(mse, sizeof(mse), isfinite(m->mse) ? "%.17g" : "null", m->mse);
	int n = snprintf(buf, sizeof(buf),
			 "{\"jsonrpc\":\"2.0\",\"method\":\"" N_JOB_PROGRESS
			 "\",\"params\":{\"job\":\"%s\",\"epoch\":%d,"
			 "\"epochs\":%d,\"mse\":%s,\"psnr\":%s,\"lr\":%.17g,"
			 "\"ms\":%.6g%s%s%s}}\n",
			 job->id, m->epoch, job->p.cfg.epochs, mse, psnr, m->lr,
			 m->ms, avg, best, at);
	return n > 0 && (size_t)n < sizeof(buf) ? strdup(buf) : NULL;
}

cJSON *views_job_state(const struct job *job)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "job", job->id);
	cJSON_AddStringToObject(r, "state", job_state_name(job->state));
	return r;
}

/* ---------------------------------------------------------- devices */

/* The jobs running on worker i, and the first of them (NULL: none). */
static int views_worker_jobs(const struct service *svc, int i,
			     const struct job **first)
{
	int n = 0;

	*first = NULL;
	for (const struct job *job = svc->queue->head; job; job = job->next)
		if (job->state == JOB_RUNNING && job->worker == i) {
			if (!n++)
				*first = job;
		}
	return n;
}

cJSON *views_devices(const struct service *svc)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < svc->nslots; i++) {
		const struct worker_slot *s = &svc->slots[i];
		const struct job *first;
		/* a pack: slot->job is the one last started, and is cleared
		 * when any of them ends while the others train on */
		int running = views_worker_jobs(svc, i, &first);
		const char *job = s->job[0] ? s->job : first ? first->id : "";
		cJSON *d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "worker", i);
		if (s->ok) {
			cJSON_AddStringToObject(d, "name", s->device);
			cJSON_AddStringToObject(d, "type", s->type);
		} else {
			cJSON_AddNullToObject(d, "name");
		}
		cJSON_AddStringToObject(d, "state",
					!s->ready           ? "starting"
					: !s->ok            ? "unavailable"
					: running || job[0] ? "running"
							    : "idle");
		if (job[0])
			cJSON_AddStringToObject(d, "job", job);
		else
			cJSON_AddNullToObject(d, "job");
		cJSON_AddNumberToObject(d, "jobs",
					running  ? running
					: job[0] ? 1
						 : 0);
		cJSON_AddNumberToObject(d, "gpu_bytes",
					(double)worker_bytes_in_use(s->w));
		if (s->ready && !s->ok)
			cJSON_AddStringToObject(d, "error", s->error);
		cJSON_AddItemToArray(a, d);
	}
	return a;
}

cJSON *views_export_result(const char *model_b64, const char *png_b64)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *m = cJSON_AddObjectToObject(r, "model");
	cJSON_AddItemToObject(m, "safetensors",
			      cJSON_CreateStringReference(model_b64));
	cJSON *p = cJSON_AddObjectToObject(r, "recon");
	cJSON_AddItemToObject(p, "png", cJSON_CreateStringReference(png_b64));
	return r;
}
