/*
 * methods_export.c - job.export (from the worker running the job, or from
 * its files) and model.render (a model package, with a target, rendered
 * by a worker). Either waits for a device still opening (devwait.c)
 * rather than failing while the daemon starts.
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
#include "loop/devwait.h"
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

/* Why a job that is not running has nothing to export: it never ran, or
 * it ran some epochs but its weights went before a checkpoint kept them
 * (the checkpoint is the only copy of a job no worker holds). */
static int no_checkpoint(struct request *rq, const struct job *job)
{
	int epoch = job_epoch(job);
	const char *why;

	if (!epoch && !job->started)
		return methods_fail(rq, RPC_JOB_STATE,
				    "job %s has not run yet; there "
				    "is no model to export",
				    job->id);
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
		return methods_fail(rq, RPC_JOB_STATE,
				    "job %s has run but has no "
				    "checkpoint to export from: %s",
				    job->id, why);
	return methods_fail(rq, RPC_JOB_STATE,
			    "job %s ran %d epochs but has no "
			    "checkpoint to export from: %s",
			    job->id, epoch, why);
}

static void export_resume(struct pending *pd);

/* Parks the export of job until a device is up (devwait.c), in pd or,
 * when the request has none yet, a new one: METHOD_PARKED, or the
 * refusal when it cannot wait. */
static int export_park(struct request *rq, struct job *job, struct pending *pd)
{
	struct pending *mine = NULL;
	if (!pd) {
		if (!(pd = mine = calloc(1, sizeof(*pd))) ||
		    methods_pending_bind(rq, pd)) {
			if (mine)
				methods_pending_free(mine);
			return methods_fail(rq, RPC_INTERNAL_ERROR,
					    "out of memory");
		}
		snprintf(pd->job_id, sizeof(pd->job_id), "%s", job->id);
	}
	if (devwait_park(rq->svc, pd, export_resume) == 0)
		return METHOD_PARKED;
	if (mine)
		methods_pending_free(mine);
	return devwait_refusal(rq, "render the export");
}

/* An export made by a worker: from the running fit, or rendered from the
 * job's checkpoint. pd: the request's pending, when it has one (it was
 * decoded or has waited); METHOD_PARKED when it waits for a device. */
static int export_by_worker(struct request *rq, struct job *job,
			    struct pending *pd)
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
			return export_park(rq, job, pd);
	}
	struct work_request *req = calloc(1, sizeof(*req));
	if (!req)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	req->kind = WORK_EXPORT;
	snprintf(req->job_id, sizeof(req->job_id), "%s", job->id);
	queue_job_path(svc->queue, job, NULL, req->dir, sizeof(req->dir));
	return methods_defer_to_worker(rq, slot, req);
}

/* A done job's export files, read and encoded (decode.c): sent; if they
 * could not be read, a worker makes the export from the checkpoint. */
static void export_read(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct peer_conn *c = methods_pending_request(pd, &rq);
	struct job *job = c ? queue_find(pd->svc->queue, pd->job_id) : NULL;
	int rc = 0;
	cJSON *r = NULL;
	if (c && !job) {
		rc = methods_fail(&rq, RPC_JOB_NOT_FOUND,
				  "job %s was removed meanwhile", pd->job_id);
	} else if (c && d->read_rc) {
		rc = export_by_worker(&rq, job, pd);
		if (rc == METHOD_PARKED)
			return; /* pd waits, its connection held */
	} else if (c) {
		r = views_export_result(d->model_b64, d->png_b64);
		views_add_number(r, "psnr", job->export_psnr);
	}
	if (c && rc != METHOD_DEFERRED) {
		methods_answer(&rq, rc, r); /* printed before pd's strings go */
		server_conn_release(c);
	}
	methods_pending_free(pd);
}

/* A parked export, taken up again (a device is up, or its wait is
 * over). */
static void export_resume(struct pending *pd)
{
	struct request rq;
	struct peer_conn *c = methods_pending_request(pd, &rq);
	if (!c) {
		methods_pending_free(pd);
		return;
	}
	struct job *job = queue_find(pd->svc->queue, pd->job_id);
	int rc = job ? export_by_worker(&rq, job, pd)
		     : methods_fail(&rq, RPC_JOB_NOT_FOUND,
				    "job %s was removed meanwhile", pd->job_id);
	if (rc == METHOD_PARKED)
		return;
	if (rc != METHOD_DEFERRED) {
		methods_answer(&rq, rc, NULL);
		server_conn_release(c);
	}
	methods_pending_free(pd);
}

int methods_job_export(struct request *rq, const cJSON *params, cJSON **result)
{
	struct job *job;
	int rc = methods_touchable_job(rq, params, &job);
	if (rc)
		return rc;
	if (!(job->state == JOB_DONE && job->has_export)) {
		rc = export_by_worker(rq, job, NULL);
		return rc == METHOD_PARKED ? METHOD_DEFERRED : rc;
	}
	char path[4200];
	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	snprintf(pd->job_id, sizeof(pd->job_id), "%s", job->id);
	queue_job_path(rq->svc->queue, job, JOBFILE_MODEL, path, sizeof(path));
	pd->d.read_model = strdup(path);
	queue_job_path(rq->svc->queue, job, JOBFILE_RECON, path, sizeof(path));
	pd->d.read_png = strdup(path);
	if (!pd->d.read_model || !pd->d.read_png) {
		methods_pending_free(pd);
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	}
	return methods_start_decode(rq, pd, export_read);
}

static void render_resume(struct pending *pd);

/* model.render, its model (and target) decoded: hands it to a worker. */
static int render_decoded_request(struct request *rq, struct pending *pd)
{
	struct decode_job *d = &pd->d;
	if (d->model.rc)
		return methods_input_refused(rq, "model", "safetensors",
					     &d->model);
	if (d->png.rc)
		return methods_input_refused(rq, "target", "image", &d->png);
	char why[256];
	if (pd->has_view && d->image)
		return methods_fail(
		    rq, RPC_INVALID_PARAMS,
		    "\"target\" measures a render at the model's own "
		    "size: leave out scale, size and crop");
	if (pd->has_view && nn_view_check(&pd->view, d->model_w, d->model_h,
					  NULL, why, sizeof(why)))
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "%s (the model is %dx%d)", why, d->model_w,
				    d->model_h);
	if (d->image &&
	    (d->image->width != d->model_w || d->image->height != d->model_h))
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "\"target\" is %dx%d but "
				    "the model renders %dx%d",
				    d->image->width, d->image->height,
				    d->model_w, d->model_h);
	struct worker_slot *slot = schedule_pick_worker(rq->svc);
	if (!slot && devwait_park(rq->svc, pd, render_resume) == 0)
		return METHOD_PARKED; /* pd waits, its connection held */
	if (!slot)
		return devwait_refusal(rq, "render");
	struct work_request *req = calloc(1, sizeof(*req));
	if (!req)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	req->kind = WORK_RENDER;
	req->view = pd->view;
	req->has_view = pd->has_view;
	req->model = d->package;
	req->target = d->image;
	d->package = NULL;
	d->image = NULL;
	return methods_defer_to_worker(rq, slot, req);
}

static void render_decoded(struct decode_job *d)
{
	struct pending *pd = (struct pending *)d;
	struct request rq;
	struct peer_conn *c = methods_pending_request(pd, &rq);
	if (c) {
		int rc = render_decoded_request(&rq, pd);
		if (rc == METHOD_PARKED)
			return;
		if (rc != METHOD_DEFERRED) {
			methods_answer(&rq, rc, NULL);
			server_conn_release(c);
		} /* else the worker's reply releases it */
	}
	methods_pending_free(pd);
}

/* A parked render, taken up again. */
static void render_resume(struct pending *pd) { render_decoded(&pd->d); }

/* params.KEY, an object of the integers names[], all of them: the first
 * zeros of them in [0, NN_VIEW_MAX_SIDE], the others from 1; 0 when it is
 * absent (*given 0). */
static int get_box(struct request *rq, const cJSON *params, const char *key,
		   const char *const *names, int zeros, int64_t *out,
		   int *given)
{
	const cJSON *box = cJSON_GetObjectItemCaseSensitive(params, key);
	*given = box != NULL;
	if (!box)
		return 0;
	if (!cJSON_IsObject(box))
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "\"%s\" must be an object", key);
	int rc = methods_check_keys(rq, box, names);
	for (int i = 0; rc == 0 && names[i]; i++) {
		if (!cJSON_GetObjectItemCaseSensitive(box, names[i]))
			return methods_fail(rq, RPC_INVALID_PARAMS,
					    "\"%s\" needs \"%s\"", key,
					    names[i]);
		rc = methods_get_int(rq, box, names[i], i < zeros ? 0 : 1,
				     NN_VIEW_MAX_SIDE, &out[i]);
	}
	return rc;
}

/* model.render's scale, size and crop (render_view.h). */
static int get_view(struct request *rq, const cJSON *params, struct pending *pd)
{
	static const char *const wh[] = { "width", "height", NULL };
	static const char *const xywh[] = { "x", "y", "width", "height", NULL };
	int64_t scale = 0, size[2] = { 0 }, crop[4] = { 0 };
	int has_size, has_crop;
	int rc =
	    methods_get_int(rq, params, "scale", 1, NN_VIEW_MAX_SCALE, &scale);
	rc = rc ? rc : get_box(rq, params, "size", wh, 0, size, &has_size);
	rc = rc ? rc : get_box(rq, params, "crop", xywh, 2, crop, &has_crop);
	if (rc)
		return rc;
	if (scale && has_size)
		return methods_fail(rq, RPC_INVALID_PARAMS,
				    "give \"scale\" or \"size\", not both");
	pd->has_view = scale || has_size || has_crop;
	pd->view = (struct nn_view){ .scale = (int)scale,
				     .width = (int)size[0],
				     .height = (int)size[1],
				     .crop_x = (int)crop[0],
				     .crop_y = (int)crop[1],
				     .crop_w = (int)crop[2],
				     .crop_h = (int)crop[3] };
	return 0;
}

int methods_model_render(struct request *rq, const cJSON *params,
			 cJSON **result)
{
	static const char *const keys[] = { "model", "target", "scale",
					    "size",  "crop",   NULL };
	int rc = methods_check_keys(rq, params, keys);
	if (rc)
		return rc;
	struct pending *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return methods_fail(rq, RPC_INTERNAL_ERROR, "out of memory");
	if ((rc = get_view(rq, params, pd))) {
		methods_pending_free(pd);
		return rc;
	}
	pd->d.keep_package = 1;
	pd->d.fit_target = 1; /* a larger target: scaled to the model's */
	if ((rc = methods_get_b64(rq, params, "model", "safetensors", 1,
				  &pd->d.model.b64)) ||
	    (rc = methods_get_b64(rq, params, "target",
				  methods_image_key(params, "target"), 0,
				  &pd->d.png.b64))) {
		methods_pending_free(pd);
		return rc;
	}
	return methods_start_decode(rq, pd, render_decoded);
}
