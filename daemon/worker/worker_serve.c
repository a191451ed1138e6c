/*
 * worker_serve.c - the renders and exports a worker serves.
 *
 * The loop queues a request on the worker (worker_request); the thread
 * takes one at each epoch boundary of its run (worker_serve_due), or all
 * of them while it has no job, so a request waits at most one epoch and
 * each user's requests take at most WORKER_SERVE_SHARE of a run's time,
 * users in turn (one user's long renders use up its own share only, so
 * another's waits behind at most one of them). An export of the running job reads the fit as it is; one of
 * another job builds a fit from its checkpoint. Each request goes back
 * to the loop as WORK_REPLY with 0 or an errors.h code and a sentence.
 */
#include "worker/worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "proto/errors.h"
#include "formats/image_codec.h"
#include "nn/package.h"
#include "nn/render_view.h"
#include "formats/safetensors.h"
#include "worker/worker_internal.h"

/* Encodes an export of fit into the request's reply. */
static int fill_export(struct nn_fit *fit, struct work_request *req)
{
	struct st_file *model = NULL;
	struct image *recon = NULL;
	uint8_t *st_bytes = NULL, *png = NULL;
	size_t st_size = 0, png_size = 0;
	double psnr = NAN;
	int rc = nn_fit_export(fit, &model, &recon, &psnr);
	if (!rc)
		rc = st_encode(model, &st_bytes, &st_size);
	if (!rc)
		rc = png_encode(recon, &png, &png_size);
	if (!rc) {
		req->model_b64 = base64_encode(st_bytes, st_size);
		req->png_b64 = base64_encode(png, png_size);
		if (!req->model_b64 || !req->png_b64)
			rc = ERR_NOMEM;
		req->psnr = psnr;
		req->has_psnr = isfinite(psnr);
	}
	free(st_bytes);
	free(png);
	st_destroy(model);
	image_destroy(recon);
	return rc;
}

static void fail_request(struct work_request *req, int rc, const char *what)
{
	req->rc = rc;
	snprintf(req->message, sizeof(req->message), "%s: %s", what,
		 error_message(rc));
}

/* An export of a job the worker does not have loaded: rebuild a fit from
 * the checkpoint, export, free it. */
static void export_from_checkpoint(struct worker *w, struct work_request *req)
{
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512] = "";
	int rc = worker_load_fit(w, req->dir, NULL, 0, &target, &fit, err,
				 sizeof(err));
	if (rc) {
		req->rc = rc;
		snprintf(req->message, sizeof(req->message),
			 "cannot export job %s: %s", req->job_id, err);
	} else if ((rc = fill_export(fit, req))) {
		fail_request(req, rc, "export failed");
	}
	nn_fit_destroy(fit);
	image_destroy(target);
}

static void serve_render(struct worker *w, struct work_request *req)
{
	struct image *out = NULL;
	double psnr = NAN;
	char err[512] = "";
	uint8_t *png = NULL;
	size_t png_size = 0;
	int rc = req->has_view
		     ? nn_render_view(w->gpu, req->model, &req->view, &out,
				      &req->view_info, err, sizeof(err))
		     : nn_render(w->gpu, req->model, req->target, &out,
				 req->target ? &psnr : NULL, err, sizeof(err));
	if (rc) {
		req->rc = rc;
		snprintf(req->message, sizeof(req->message),
			 "render failed: %s", err[0] ? err : error_message(rc));
		return;
	}
	rc = png_encode(out, &png, &png_size);
	if (!rc && !(req->png_b64 = base64_encode(png, png_size)))
		rc = ERR_NOMEM;
	if (rc)
		fail_request(req, rc, "render failed");
	req->psnr = psnr;
	req->has_psnr = req->target && isfinite(psnr);
	free(png);
	image_destroy(out);
}

/* Answers every request in the list; fit is the running job's, if any. */
void worker_serve(struct worker *w, struct work_request *reqs,
		  const char *job_id, struct nn_fit *fit)
{
	while (reqs) {
		struct work_request *req = reqs;
		reqs = req->next;
		req->next = NULL;
		if (!w->gpu) {
			req->rc = ERR_NO_DEVICE;
			snprintf(req->message, sizeof(req->message),
				 "the device is not available");
		} else if (req->kind == WORK_RENDER) {
			serve_render(w, req);
		} else if (fit && job_id && !strcmp(req->job_id, job_id)) {
			int rc = fill_export(fit, req);
			if (rc)
				fail_request(req, rc, "export failed");
		} else {
			export_from_checkpoint(w, req);
		}
		struct work_event *ev = worker_event(WORK_REPLY, req->job_id);
		ev->req = req;
		worker_post(w, ev);
	}
}

/* Serves the request due at this epoch boundary, if any, with the fit of
 * the job it names when that job is among the n runs (the first keeps the
 * account of users and time); returns the first run's flags. */
int worker_serve_due(struct worker *w, struct run **runs, int n)
{
	struct work_request *req;
	int flags = worker_take_due(w, runs[0], &req);
	if (!req)
		return flags;
	double t = worker_seconds();
	struct run *of = NULL;
	for (int i = 0; i < n && !of; i++)
		if (!strcmp(runs[i]->job->id, req->job_id))
			of = runs[i];
	runs[0]->last_uid = req->uid;
	runs[0]->served_any = 1;
	worker_serve(w, req, of ? of->job->id : NULL, of ? of->fit : NULL);
	double took = worker_seconds() - t;
	runs[0]->serve_seconds += took;
	worker_add_served(runs[0], req->uid, took);
	return flags;
}
