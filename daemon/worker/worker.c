/*
 * worker.c - the GPU thread of one device.
 *
 * The thread opens its device, posts WORK_READY, then waits on a condition
 * variable for a job, a request or stop. A job runs epoch by epoch; between
 * two epochs the thread takes the flags and the requests under the lock,
 * so a pause, cancel, export or render waits at most one epoch. The lock is
 * held only to move pointers and flags, never across an engine call.
 *
 * A run (run_job) is a short loop over what each step came to: on to the
 * next epoch, build the fit again, or leave the worker. Every failure of
 * a job ends in WORK_ENDED with WORK_END_FAILED and a message for people;
 * device loss is retried (new gpu_context, resume from the checkpoint) and
 * a divergence rolled back a bounded number of times first. A request is
 * answered with 0 or an errors.h code and a sentence. Only this thread
 * calls gpu_* and nn_*; it writes the job's checkpoint and exports into
 * the job's folder, and reads its target and init files; it touches no
 * socket, no queue data and no JSON-RPC.
 */
#include "worker/worker.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/base64.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "formats/image_codec.h"
#include "log.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "formats/safetensors.h"

struct worker {
	int index;
	char *selector;
	void (*wake)(void *arg);
	void *wake_arg;
	pthread_t thread;
	int started;

	/* the hand-off, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct held *held;             /* the jobs it has, oldest first */
	int nheld;
	int full;                      /* its pack fills the device's memory */
	int flags;                     /* WORK_STOP */
	struct work_request *requests; /* FIFO */
	struct work_event *events, **events_tail;
	uint64_t bytes_in_use;         /* gpu_bytes_in_use, as published */

	/* the thread's own */
	int pack;                      /* jobs at once at most (1: no packs) */
	struct gpu_context *gpu;
	int ckpt_epochs;
	double ckpt_seconds;
};

/* A job the loop handed over: its flags, and the job until the thread
 * takes it (NULL after). */
struct held {
	struct held *next;
	char id[JOB_ID_MAX];
	int flags;
	struct work_job *job;
};

/* One job being run: the fit and what is needed to rebuild it. */
struct run {
	struct work_job *job;
	struct image *target;
	struct nn_fit *fit;
	int last_ckpt_epoch;
	double last_ckpt_time;
	int write_errno;     /* why the last checkpoint could not be written */
	double train_seconds, serve_seconds; /* since it started here */
	uid_t last_uid;      /* whose request was served last */
	int served_any;
	int retries;         /* device lost or out of memory, reopened */
	int rollbacks;       /* diverged, back to the checkpoint */
	double lr;           /* after a rollback, the lowered rate; else 0 */
	int reached;         /* the model reached target_psnr */
	int shared;          /* in a pack with others (the device is theirs
				too: a fault is handled for all) */
	/* how it ended */
	enum work_end end;
	double psnr;         /* done: the exported model's */
	char msg[600];       /* failed, or paused by a failed write: why */
};

static double mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void work_request_destroy(struct work_request *req)
{
	if (!req)
		return;
	st_destroy(req->model);
	image_destroy(req->target);
	free(req->model_b64);
	free(req->png_b64);
	free(req);
}

/* ------------------------------------------------------ the hand-off */

static void post(struct worker *w, struct work_event *ev)
{
	pthread_mutex_lock(&w->lock);
	ev->next = NULL;
	*w->events_tail = ev;
	w->events_tail = &ev->next;
	pthread_mutex_unlock(&w->lock);
	w->wake(w->wake_arg);
}

static struct work_event *event_new(enum work_event_kind kind,
				    const char *job_id)
{
	struct work_event *ev = calloc(1, sizeof(*ev));
	if (!ev) {
		/* Nothing sensible is left to do without memory for a few
		 * hundred bytes; the loop would lose track of the job. */
		log_error("out of memory posting a worker event");
		abort();
	}
	ev->kind = kind;
	if (job_id)
		snprintf(ev->job_id, sizeof(ev->job_id), "%s", job_id);
	return ev;
}

static void post_ended(struct worker *w, const char *job_id,
		       enum work_end end, const char *message)
{
	struct work_event *ev = event_new(WORK_ENDED, job_id);
	ev->end = end;
	if (message)
		snprintf(ev->message, sizeof(ev->message), "%s", message);
	post(w, ev);
}

/* Publishes the device memory in use for daemon.status (worker thread). */
static void publish_memory(struct worker *w)
{
	uint64_t bytes = w->gpu ? gpu_bytes_in_use(w->gpu) : 0;
	pthread_mutex_lock(&w->lock);
	w->bytes_in_use = bytes;
	pthread_mutex_unlock(&w->lock);
}

uint64_t worker_bytes_in_use(struct worker *w)
{
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	uint64_t bytes = w->bytes_in_use;
	pthread_mutex_unlock(&w->lock);
	return bytes;
}

struct work_event *worker_take_events(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	struct work_event *list = w->events;
	w->events = NULL;
	w->events_tail = &w->events;
	pthread_mutex_unlock(&w->lock);
	return list;
}

void worker_start_job(struct worker *w, struct work_job *job)
{
	struct held *h = calloc(1, sizeof(*h));
	if (!h) {
		log_error("out of memory handing job %s to worker %d", job->id,
			  w->index);
		abort(); /* as event_new: the loop would lose track of it */
	}
	snprintf(h->id, sizeof(h->id), "%s", job->id);
	h->job = job;
	pthread_mutex_lock(&w->lock);
	struct held **pp = &w->held;
	while (*pp)
		pp = &(*pp)->next;
	*pp = h;
	w->nheld++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int worker_jobs(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	int n = w->nheld;
	pthread_mutex_unlock(&w->lock);
	return n;
}

int worker_room(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	int room = w->full ? 0 : w->pack - w->nheld;
	pthread_mutex_unlock(&w->lock);
	return room > 0 ? room : 0;
}

/* The held entry of a job (under lock). */
static struct held *find_held(struct worker *w, const char *job_id)
{
	for (struct held *h = w->held; h; h = h->next)
		if (!strcmp(h->id, job_id))
			return h;
	return NULL;
}

/* A job's flags and the daemon's stop (under lock). */
static int held_flags(struct worker *w, const char *job_id)
{
	struct held *h = find_held(w, job_id);
	return (w->flags & WORK_STOP) | (h ? h->flags : 0);
}

void worker_flag(struct worker *w, const char *job_id, int flags)
{
	pthread_mutex_lock(&w->lock);
	struct held *h = find_held(w, job_id);
	if (h)
		h->flags |= flags;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* The job leaves the worker: its entry goes (before WORK_ENDED is
 * posted, so the loop never sees room the worker has not). */
static void release_held(struct worker *w, const char *job_id)
{
	pthread_mutex_lock(&w->lock);
	for (struct held **pp = &w->held; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, job_id))
			continue;
		struct held *h = *pp;
		*pp = h->next;
		free(h->job);
		free(h);
		w->nheld--;
		w->full = 0;
		break;
	}
	pthread_mutex_unlock(&w->lock);
}

/* The oldest job handed over and not yet taken (ownership stays with
 * its held entry), or NULL. */
static struct work_job *take_job(struct worker *w)
{
	struct work_job *job = NULL;
	pthread_mutex_lock(&w->lock);
	for (struct held *h = w->held; h && !job; h = h->next)
		if (h->job) {
			job = h->job;
			h->job = NULL;
		}
	pthread_mutex_unlock(&w->lock);
	return job;
}

void worker_request(struct worker *w, struct work_request *req)
{
	pthread_mutex_lock(&w->lock);
	struct work_request **pp = &w->requests;
	while (*pp)
		pp = &(*pp)->next;
	req->next = NULL;
	*pp = req;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void worker_stop(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->flags |= WORK_STOP;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Takes the flags at an epoch boundary, and the request to serve there:
 * none while the requests' share of the run's time is used up, else the
 * oldest of a user other than the last one served (users take turns),
 * else the oldest. */
static int take(struct worker *w, struct run *r, struct work_request **req)
{
	*req = NULL;
	pthread_mutex_lock(&w->lock);
	int flags = held_flags(w, r->job->id);
	int may = r->serve_seconds <= WORKER_SERVE_SHARE *
				      (r->train_seconds + r->serve_seconds);
	if (w->requests && may) {
		struct work_request **pp = &w->requests;
		while (*pp && r->served_any && (*pp)->uid == r->last_uid)
			pp = &(*pp)->next;
		if (!*pp)
			pp = &w->requests;
		*req = *pp;
		*pp = (*req)->next;
		(*req)->next = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	return flags;
}

int worker_count_requests(struct worker *w, uid_t uid)
{
	int n = 0;
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	for (struct work_request *req = w->requests; req; req = req->next)
		n += req->uid == uid;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void worker_drop_requests(struct worker *w, uint64_t conn)
{
	if (!w)
		return;
	struct work_request *dropped = NULL;
	pthread_mutex_lock(&w->lock);
	struct work_request **pp = &w->requests;
	while (*pp) {
		struct work_request *req = *pp;
		if (req->conn != conn) {
			pp = &req->next;
			continue;
		}
		*pp = req->next;
		req->next = dropped;
		dropped = req;
	}
	pthread_mutex_unlock(&w->lock);
	if (dropped)
		log_info("worker %d: connection %llu closed; its request not yet "
			 "served is dropped", w->index, (unsigned long long)conn);
	while (dropped) {
		struct work_request *next = dropped->next;
		work_request_destroy(dropped);
		dropped = next;
	}
}

/* -------------------------------------------------------- requests */

static int path_in(const struct work_job *job, const char *dir,
		   const char *file, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", job ? job->dir : dir, file);
	return n < 0 || (size_t)n >= len ? ERR_TOO_LARGE : 0;
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

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

static int load_fit(struct worker *w, const char *dir,
		    const struct work_job *job, double lr,
		    struct image **target, struct nn_fit **fit, char *err,
		    size_t errlen);

/* An export of a job the worker does not have loaded: rebuild a fit from
 * the checkpoint, export, free it. */
static void export_from_checkpoint(struct worker *w, struct work_request *req)
{
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512] = "";
	int rc = load_fit(w, req->dir, NULL, 0, &target, &fit, err,
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
	int rc = nn_render(w->gpu, req->model, req->target, &out,
			   req->target ? &psnr : NULL, err, sizeof(err));
	if (rc) {
		req->rc = rc;
		snprintf(req->message, sizeof(req->message), "render failed: %s",
			 err[0] ? err : error_message(rc));
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
static void serve(struct worker *w, struct work_request *reqs,
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
		struct work_event *ev = event_new(WORK_REPLY, req->job_id);
		ev->req = req;
		post(w, ev);
	}
}

/* ------------------------------------------------------------- jobs */

/*
 * Builds a fit for the job in dir (nn_fit_open): from checkpoint.safetensors
 * when there is one (bit-exact continuation, the job's epochs and tiling),
 * else from job->cfg (and init, if any).
 * Without job (an export), a checkpoint is required: ERR_NOT_FOUND.
 * lr, when above 0, replaces the learning rate (a rollback after a
 * divergence); the next checkpoint then carries it.
 */
static int load_fit(struct worker *w, const char *dir,
		    const struct work_job *job, double lr,
		    struct image **target, struct nn_fit **fit, char *err,
		    size_t errlen)
{
	char path[4200];
	struct st_file *ckpt = NULL, *init = NULL;
	struct nn_config cfg = job ? job->cfg : (struct nn_config){0};
	unsigned take = job ? NN_TAKE_EPOCHS | NN_TAKE_TILING : 0;
	int rc;

	*fit = NULL;
	if (!*target) {
		path_in(NULL, dir, JOBFILE_TARGET, path, sizeof(path));
		rc = png_load_file(path, target, err, errlen);
		if (rc)
			return rc;
	}
	path_in(NULL, dir, JOBFILE_CHECKPOINT, path, sizeof(path));
	if (file_exists(path)) {
		rc = st_load_file(path, &ckpt, err, errlen);
		if (rc)
			return rc;
	} else if (!job) {
		snprintf(err, errlen, "it has no checkpoint yet (it has not run)");
		return ERR_NOT_FOUND;
	} else if (job->has_init) {
		path_in(NULL, dir, JOBFILE_INIT, path, sizeof(path));
		rc = st_load_file(path, &init, err, errlen);
		if (rc)
			return rc;
	}
	if (lr > 0) {
		cfg.lr = lr;
		take |= NN_TAKE_LR;
	}
	rc = nn_fit_open(fit, w->gpu, *target, ckpt, init, &cfg, take, err,
			 errlen);
	st_destroy(ckpt);
	st_destroy(init);
	if (rc && !err[0])
		snprintf(err, errlen, "%s", error_message(rc));
	else if (!rc && job)
		nn_fit_set_epochs(*fit, job->cfg.epochs);
	return rc;
}

static int save_checkpoint(struct worker *w, struct run *r)
{
	char path[4200];
	struct st_file *ckpt = NULL;
	int rc = nn_fit_checkpoint(r->fit, &ckpt);
	if (!rc) {
		path_in(r->job, NULL, JOBFILE_CHECKPOINT, path, sizeof(path));
		rc = st_save_file(ckpt, path);
		r->write_errno = rc ? errno : 0;
	}
	st_destroy(ckpt);
	if (rc) {
		log_error("job %s: checkpoint at epoch %d failed: %s", r->job->id,
			  nn_fit_epoch(r->fit), error_message(rc));
		return rc;
	}
	r->last_ckpt_epoch = nn_fit_epoch(r->fit);
	r->last_ckpt_time = mono_seconds();
	struct work_event *ev = event_new(WORK_CHECKPOINT, r->job->id);
	ev->epoch = r->last_ckpt_epoch;
	post(w, ev);
	return 0;
}

/* Writes model.safetensors and recon.png for a finished job. */
static int save_exports(struct run *r, double *psnr)
{
	char model[4200], recon[4200];
	path_in(r->job, NULL, JOBFILE_MODEL, model, sizeof(model));
	path_in(r->job, NULL, JOBFILE_RECON, recon, sizeof(recon));
	return nn_fit_save_export(r->fit, model, recon, 0600, psnr, NULL);
}

/*
 * Whether the weights as they are now, which the export would write, reach
 * target PSNR. An epoch's PSNR is measured before its step updates the
 * weights, so it may pass the target while the model after the step does
 * not (or the other way): the stop rule asks the model itself, with one
 * forward pass, once the epoch's PSNR says it may be time.
 */
static int model_reaches(struct run *r, double target, int *reached)
{
	double psnr = NAN;
	int rc = nn_fit_export(r->fit, NULL, NULL, &psnr);

	*reached = rc == 0 && isfinite(psnr) && psnr >= target;
	return rc;
}

/* Replaces a lost gpu_context by a new one. */
static int reopen_device(struct worker *w, char *err, size_t errlen)
{
	gpu_destroy(w->gpu);
	w->gpu = NULL;
	sleep(1);
	return gpu_create(&w->gpu, w->selector, err, errlen);
}

/* What reopening the device may cure: a lost device, or device memory
 * that ran out (a new context starts with all of it free). */
static int device_fault(int rc)
{
	return rc == ERR_DEVICE_LOST || rc == ERR_DEVICE_OOM;
}

static void describe(int rc, const char *err, char *msg, size_t len)
{
	snprintf(msg, len, "%s", err && err[0] ? err : error_message(rc));
}

/* ------------------------------------------------------- a job's run */

/*
 * A run is a loop over what the last step came to: an epoch went well
 * (on to the next), the fit must be built again (the device was reopened,
 * or the learning rate halved after a divergence), or the job leaves the
 * worker (done, paused, cancelled, stopped or failed: r->end and r->msg
 * say which and why). Each step below returns one of them.
 */
enum run_outcome {
	RUN_NEXT,   /* an epoch ran (or a fit was loaded): go on */
	RUN_RELOAD, /* build the fit again (from the checkpoint, if any) */
	RUN_ENDED,  /* the job leaves the worker: r->end, r->msg */
};

static enum run_outcome ended(struct run *r, enum work_end end)
{
	r->end = end;
	return RUN_ENDED;
}

/* Builds the fit (again) and says so with WORK_STARTED. */
static enum run_outcome load(struct worker *w, struct run *r)
{
	const struct work_job *job = r->job;
	char err[512] = "";
	int rc = load_fit(w, job->dir, job, r->lr, &r->target, &r->fit, err,
			  sizeof(err));
	if (rc == ERR_DEVICE_OOM && r->shared) {
		/* others train on this device: it is full, not faulty; the
		 * job waits in the queue until one leaves */
		pthread_mutex_lock(&w->lock);
		w->full = 1;
		pthread_mutex_unlock(&w->lock);
		log_info("job %s: the device's memory is full with its pack; "
			 "back to the queue", job->id);
		return ended(r, WORK_END_QUEUED);
	}
	if (device_fault(rc) && r->retries < WORKER_DEVICE_RETRIES) {
		log_warn("job %s: %s while loading; reopening the device "
			 "(retry %d of %d)", job->id, error_message(rc),
			 r->retries + 1, WORKER_DEVICE_RETRIES);
		r->retries++;
		if (reopen_device(w, err, sizeof(err)) == 0)
			return RUN_RELOAD;
	}
	if (rc) {
		snprintf(r->msg, sizeof(r->msg), "cannot start: %s", err);
		return ended(r, WORK_END_FAILED);
	}
	publish_memory(w);
	struct work_event *ev = event_new(WORK_STARTED, job->id);
	ev->epoch = r->last_ckpt_epoch = nn_fit_epoch(r->fit);
	ev->m.lr = nn_fit_config(r->fit)->lr;
	struct nn_fit_info info;
	nn_fit_get_info(r->fit, &info);
	snprintf(ev->message, sizeof(ev->message), "%s", info.precision);
	post(w, ev);
	r->last_ckpt_time = mono_seconds();
	log_info("job %s: running from epoch %d to %d", job->id,
		 nn_fit_epoch(r->fit), job->cfg.epochs);
	return RUN_NEXT;
}

/* What a failed step comes to: a lost device (or its memory run out) is
 * reopened and the job resumed from its checkpoint, a divergence rolled
 * back to the checkpoint with half the rate, each a bounded number of
 * times; anything else fails the job. */
static enum run_outcome recover(struct worker *w, struct run *r, int rc)
{
	const struct work_job *job = r->job;
	char err[512] = "";
	if (device_fault(rc) && r->retries < WORKER_DEVICE_RETRIES) {
		r->retries++;
		log_warn("job %s: %s at epoch %d; reopening the device and "
			 "resuming from the checkpoint (retry %d of %d)",
			 job->id, error_message(rc), nn_fit_epoch(r->fit) + 1,
			 r->retries, WORKER_DEVICE_RETRIES);
		nn_fit_destroy(r->fit);
		r->fit = NULL;
		if (reopen_device(w, err, sizeof(err)) == 0)
			return RUN_RELOAD;
		snprintf(r->msg, sizeof(r->msg), "%s, and the device could not "
			 "be reopened: %s", error_message(rc), err);
		return ended(r, WORK_END_FAILED);
	}
	if (rc == ERR_DIVERGED && r->rollbacks < WORKER_DIVERGE_RETRIES) {
		r->rollbacks++;
		r->lr = nn_fit_config(r->fit)->lr / 2;
		log_warn("job %s: training diverged at epoch %d (the loss is "
			 "not finite); back to the checkpoint of epoch %d with "
			 "lr %g (rollback %d of %d)", job->id,
			 nn_fit_epoch(r->fit) + 1, r->last_ckpt_epoch, r->lr,
			 r->rollbacks, WORKER_DIVERGE_RETRIES);
		nn_fit_destroy(r->fit);
		r->fit = NULL;
		return RUN_RELOAD;
	}
	if (rc == ERR_DIVERGED)
		snprintf(r->msg, sizeof(r->msg), "training diverged at epoch "
			 "%d (the loss is not finite) after %d rollbacks to "
			 "its last checkpoint with the learning rate halved "
			 "each time, down to %g; submit it again with a lower "
			 "lr",
			 nn_fit_epoch(r->fit) + 1, r->rollbacks,
			 nn_fit_config(r->fit)->lr);
	else
		snprintf(r->msg, sizeof(r->msg), "epoch %d failed: %s",
			 nn_fit_epoch(r->fit) + 1, error_message(rc));
	return ended(r, WORK_END_FAILED);
}

/* Every epoch has run, or the target is reached: the last checkpoint and
 * the exports. A full disk pauses the job (the daemon retries). */
static enum run_outcome finish(struct worker *w, struct run *r)
{
	save_checkpoint(w, r);
	int rc = save_exports(r, &r->psnr);
	if (device_fault(rc))
		return recover(w, r, rc);
	if (rc) {
		snprintf(r->msg, sizeof(r->msg), "cannot write the exported "
			 "model into %.300s: %s%s", r->job->dir,
			 error_message(rc), rc == ERR_NO_SPACE
			 ? "; paused until there is space again" : "");
		return ended(r, rc == ERR_NO_SPACE ? WORK_END_PAUSED
						   : WORK_END_FAILED);
	}
	return ended(r, WORK_END_DONE);
}

/* The checkpoint due every ckpt_epochs epochs or ckpt_seconds seconds. A
 * full disk: training on would only lose more, so the job is paused with
 * the reason (the daemon retries); any other cause (the folder was
 * removed) fails it. */
static enum run_outcome checkpoint_if_due(struct worker *w, struct run *r)
{
	if (nn_fit_epoch(r->fit) - r->last_ckpt_epoch < w->ckpt_epochs &&
	    mono_seconds() - r->last_ckpt_time < w->ckpt_seconds)
		return RUN_NEXT;
	int rc = save_checkpoint(w, r);
	if (!rc)
		return RUN_NEXT;
	if (device_fault(rc)) /* reading the weights back */
		return recover(w, r, rc);
	int space = rc == ERR_NO_SPACE;
	snprintf(r->msg, sizeof(r->msg), "cannot write %.300s/"
		 "checkpoint.safetensors at epoch %d: %s; %s", r->job->dir,
		 nn_fit_epoch(r->fit),
		 r->write_errno ? strerror(r->write_errno) : error_message(rc),
		 space ? "paused until there is space again"
		       : "the job cannot go on");
	return ended(r, space ? WORK_END_PAUSED : WORK_END_FAILED);
}

/* Serves the request due at this epoch boundary, if any, with the fit of
 * the job it names when that job is among the n runs (the first keeps the
 * account of users and time); returns the first run's flags. */
static int serve_due(struct worker *w, struct run **runs, int n)
{
	struct work_request *req;
	int flags = take(w, runs[0], &req);
	if (!req)
		return flags;
	double t = mono_seconds();
	struct run *of = NULL;
	for (int i = 0; i < n && !of; i++)
		if (!strcmp(runs[i]->job->id, req->job_id))
			of = runs[i];
	runs[0]->last_uid = req->uid;
	runs[0]->served_any = 1;
	serve(w, req, of ? of->job->id : NULL, of ? of->fit : NULL);
	runs[0]->serve_seconds += mono_seconds() - t;
	return flags;
}

/* The same for a job alone. */
static int serve_between_epochs(struct worker *w, struct run *r)
{
	return serve_due(w, &r, 1);
}

/* One epoch boundary and one epoch: a request served, the flags obeyed,
 * the end checked, the step, its news, the stop rule and the checkpoint. */
static enum run_outcome epoch(struct worker *w, struct run *r)
{
	const struct work_job *job = r->job;
	int flags = serve_between_epochs(w, r);
	if (flags & (WORK_CANCEL | WORK_PAUSE | WORK_STOP)) {
		save_checkpoint(w, r);
		return ended(r, flags & WORK_CANCEL  ? WORK_END_CANCELLED
				: flags & WORK_PAUSE ? WORK_END_PAUSED
						     : WORK_END_QUEUED);
	}
	if (r->reached || nn_fit_epoch(r->fit) >= job->cfg.epochs)
		return finish(w, r);
	struct nn_metrics m;
	double t = mono_seconds();
	int rc = nn_fit_step(r->fit, &m);
	r->train_seconds += mono_seconds() - t;
	if (rc)
		return recover(w, r, rc);
	struct work_event *ev = event_new(WORK_PROGRESS, job->id);
	ev->m = m;
	post(w, ev);
	publish_memory(w);
	/* the best model measured so far says it may be time; the export
	 * (which takes that one, or better) decides */
	if (job->target_psnr > 0 && isfinite(m.psnr_best) &&
	    m.psnr_best >= job->target_psnr &&
	    (rc = model_reaches(r, job->target_psnr, &r->reached)))
		return recover(w, r, rc);
	return checkpoint_if_due(w, r);
}

/* Says how the job left the worker (WORK_ENDED). */
static void post_end(struct worker *w, const struct run *r)
{
	release_held(w, r->job->id);
	struct work_event *ev = event_new(WORK_ENDED, r->job->id);
	ev->end = r->end;
	if (r->end == WORK_END_DONE) {
		ev->psnr = r->psnr;
		ev->has_psnr = isfinite(r->psnr);
		ev->target_reached = r->reached;
		ev->epoch = nn_fit_epoch(r->fit);
	} else {
		snprintf(ev->message, sizeof(ev->message), "%s", r->msg);
	}
	post(w, ev);
}

/* Runs one job until it leaves the worker (WORK_ENDED posted). */
static void run_job(struct worker *w, struct work_job *job)
{
	struct run r = {.job = job, .psnr = NAN};
	enum run_outcome o = RUN_RELOAD;
	while (o != RUN_ENDED)
		o = o == RUN_RELOAD ? load(w, &r) : epoch(w, &r);
	post_end(w, &r);
	nn_fit_destroy(r.fit);
	image_destroy(r.target);
	publish_memory(w);
}

/* ------------------------------------------------------------ packs */

/* Whether a job was handed over and not yet taken (under lock). */
static int has_untaken(struct worker *w)
{
	for (struct held *h = w->held; h; h = h->next)
		if (h->job)
			return 1;
	return 0;
}

/* Every job handed over and not taken goes back to the queue. */
static void hand_back(struct worker *w)
{
	struct work_job *job;
	while ((job = take_job(w))) {
		release_held(w, job->id);
		post_ended(w, job->id, WORK_END_QUEUED, NULL);
		free(job);
	}
}

/* The job leaves the worker: WORK_ENDED, and its run freed. */
static void end_run(struct worker *w, struct run *r)
{
	post_end(w, r);
	nn_fit_destroy(r->fit);
	image_destroy(r->target);
	free(r->job);
	free(r);
}

/* Builds the run's fit until it has one or has ended. */
static enum run_outcome load_run(struct worker *w, struct run *r)
{
	enum run_outcome o;
	while ((o = load(w, r)) == RUN_RELOAD)
		;
	return o;
}

/* The flags of a job at an epoch boundary (the daemon's stop too). */
static int flags_of(struct worker *w, const char *job_id)
{
	pthread_mutex_lock(&w->lock);
	int flags = held_flags(w, job_id);
	pthread_mutex_unlock(&w->lock);
	return flags;
}

/* A fault of the device while a pack trains: every fit goes, the device
 * is reopened once, and each job is loaded again from its checkpoint
 * (or fails, past its retries). */
static int pack_fault(struct worker *w, struct run **runs, int n, int rc,
		      struct nn_pack **pack)
{
	char err[512] = "";
	log_warn("worker %d: %s while training a pack of %d; reopening the "
		 "device and resuming each job from its checkpoint", w->index,
		 error_message(rc), n);
	nn_pack_destroy(*pack);
	*pack = NULL;
	for (int i = 0; i < n; i++) {
		nn_fit_destroy(runs[i]->fit);
		runs[i]->fit = NULL;
	}
	int reopened = reopen_device(w, err, sizeof(err)) == 0 &&
		       nn_pack_create(pack, w->gpu) == 0;
	/* out of memory with others: the pack was too large, not the device
	 * faulty; the first job goes on, the others wait in the queue */
	int shrink = rc == ERR_DEVICE_OOM && n > 1;
	if (shrink) {
		pthread_mutex_lock(&w->lock);
		w->full = 1;
		pthread_mutex_unlock(&w->lock);
	}
	int kept = 0;
	for (int i = 0; i < n; i++) {
		struct run *r = runs[i];
		enum run_outcome o = RUN_ENDED;
		if (shrink && i > 0) {
			r->end = WORK_END_QUEUED;
			end_run(w, r);
			continue;
		}
		if (!reopened)
			snprintf(r->msg, sizeof(r->msg), "%s, and the device "
				 "could not be reopened: %s", error_message(rc),
				 err);
		else if (++r->retries > WORKER_DEVICE_RETRIES)
			snprintf(r->msg, sizeof(r->msg), "%s, %d times",
				 error_message(rc), r->retries);
		else
			o = load_run(w, r);
		if (o == RUN_ENDED) {
			if (!reopened || r->retries > WORKER_DEVICE_RETRIES)
				r->end = WORK_END_FAILED;
			end_run(w, r);
		} else {
			runs[kept++] = r;
		}
	}
	return kept;
}

/*
 * Trains the jobs handed over as one pack (nn/pack.h) until none is left:
 * between two epochs jobs join (taken as they come, while the pack has
 * room and the device memory) and leave (done, paused, cancelled,
 * stopped, failed), each exactly as run_job would run it alone.
 */
static void run_pack(struct worker *w)
{
	struct run **runs = calloc((size_t)w->pack, sizeof(*runs));
	struct nn_fit **fits = calloc((size_t)w->pack, sizeof(*fits));
	struct nn_metrics *m = calloc((size_t)w->pack, sizeof(*m));
	int *rcs = calloc((size_t)w->pack, sizeof(*rcs));
	struct nn_pack *pack = NULL;
	int n = 0;
	if (!runs || !fits || !m || !rcs || nn_pack_create(&pack, w->gpu)) {
		log_error("worker %d: out of memory for a pack", w->index);
		hand_back(w);
		goto out;
	}
	uint64_t budget = (uint64_t)(gpu_info(w->gpu)->budget_bytes *
				     WORKER_PACK_MEMORY);
	for (;;) {
		struct work_job *job;
		while (n < w->pack && (job = take_job(w))) {
			struct run *r = calloc(1, sizeof(*r));
			if (!r) {
				release_held(w, job->id);
				post_ended(w, job->id, WORK_END_QUEUED, NULL);
				free(job);
				continue;
			}
			*r = (struct run){.job = job, .psnr = NAN, .shared = n > 0};
			if (load_run(w, r) == RUN_ENDED) {
				end_run(w, r);
				continue;
			}
			runs[n++] = r;
			if (gpu_bytes_in_use(w->gpu) > budget) {
				pthread_mutex_lock(&w->lock);
				w->full = 1;
				pthread_mutex_unlock(&w->lock);
			}
		}
		if (!n)
			break;
		serve_due(w, runs, n);
		for (int i = 0; i < n; i++) {
			struct run *r = runs[i];
			r->shared = n > 1;
			int flags = flags_of(w, r->job->id);
			enum run_outcome o = RUN_NEXT;
			if (flags & (WORK_CANCEL | WORK_PAUSE | WORK_STOP)) {
				save_checkpoint(w, r);
				o = ended(r, flags & WORK_CANCEL  ? WORK_END_CANCELLED
					     : flags & WORK_PAUSE ? WORK_END_PAUSED
								  : WORK_END_QUEUED);
			} else if (r->reached ||
				   nn_fit_epoch(r->fit) >= r->job->cfg.epochs) {
				o = finish(w, r);
			}
			if (o == RUN_RELOAD)
				o = load_run(w, r);
			if (o == RUN_ENDED) {
				end_run(w, r);
				runs[i--] = runs[--n];
			}
		}
		if (!n)
			continue;
		for (int i = 0; i < n; i++)
			fits[i] = runs[i]->fit;
		double t = mono_seconds();
		int rc = nn_pack_step(pack, fits, n, m, rcs);
		double dt = mono_seconds() - t;
		for (int i = 0; rc == 0 && i < n; i++)
			if (device_fault(rcs[i]))
				rc = rcs[i];
		if (rc) {
			n = pack_fault(w, runs, n, rc, &pack);
			if (!pack) {
				for (int i = 0; i < n; i++)
					end_run(w, runs[i]);
				n = 0;
				break;
			}
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct run *r = runs[i];
			const struct work_job *jb = r->job;
			enum run_outcome o;
			r->train_seconds += dt;
			if (rcs[i]) {
				o = recover(w, r, rcs[i]);
				if (o == RUN_RELOAD)
					o = load_run(w, r);
			} else {
				struct work_event *ev = event_new(WORK_PROGRESS, jb->id);
				ev->m = m[i];
				post(w, ev);
				int trc = 0;
				if (jb->target_psnr > 0 && isfinite(m[i].psnr_best) &&
				    m[i].psnr_best >= jb->target_psnr)
					trc = model_reaches(r, jb->target_psnr,
							    &r->reached);
				o = trc ? recover(w, r, trc) : checkpoint_if_due(w, r);
				if (o == RUN_RELOAD)
					o = load_run(w, r);
			}
			if (o == RUN_ENDED) {
				end_run(w, r);
				runs[i--] = runs[--n];
			}
		}
		publish_memory(w);
	}
out:
	nn_pack_destroy(pack);
	free(runs);
	free(fits);
	free(m);
	free(rcs);
	publish_memory(w);
}

/* ------------------------------------------------------------ thread */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char err[512] = "";
	struct work_event *ev = event_new(WORK_READY, NULL);
	int rc = gpu_create(&w->gpu, w->selector, err, sizeof(err));
	if (rc) {
		w->gpu = NULL;
		describe(rc, err, ev->message, sizeof(ev->message));
	} else {
		ev->ok = 1;
		ev->info = *gpu_info(w->gpu);
		if (!nn_pack_supported(w->gpu)) {
			pthread_mutex_lock(&w->lock);
			w->pack = 1;
			pthread_mutex_unlock(&w->lock);
		}
	}
	publish_memory(w);
	post(w, ev);

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!(w->flags & WORK_STOP) && !has_untaken(w) && !w->requests)
			pthread_cond_wait(&w->cond, &w->lock);
		struct work_request *reqs = w->requests;
		w->requests = NULL;
		int stop = w->flags & WORK_STOP;
		pthread_mutex_unlock(&w->lock);

		serve(w, reqs, NULL, NULL);
		if (reqs)
			publish_memory(w);
		if (stop)
			break;
		if (!w->gpu) {
			hand_back(w);
		} else if (w->pack > 1) {
			run_pack(w);
		} else {
			struct work_job *job = take_job(w);
			if (job)
				run_job(w, job);
			free(job);
		}
	}
	hand_back(w);
	/* Every job is on disk now: say so before releasing the device,
	 * which some drivers take seconds to do; the daemon waits for that
	 * only briefly (worker_join). */
	post(w, event_new(WORK_EXITED, NULL));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gpu_destroy(w->gpu);
	w->gpu = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms > 500)
		log_warn("worker %d: releasing the device took %.0f ms", w->index, ms);
	else
		log_debug("worker %d: device released in %.0f ms", w->index, ms);
	publish_memory(w);
	return NULL;
}

int worker_join(struct worker *w, const struct timespec *deadline)
{
	if (!w || !w->started)
		return 0;
	if (pthread_timedjoin_np(w->thread, NULL, deadline))
		return ERR_BUSY;
	w->started = 0;
	return 0;
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && atoi(v) > 0 ? atoi(v) : def;
}

int worker_create(struct worker **out, int index, const char *selector,
		  int pack, void (*wake)(void *wake_arg), void *wake_arg)
{
	*out = NULL;
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return ERR_NOMEM;
	w->index = index;
	w->pack = pack > 0 ? pack : WORKER_PACK_MOST;
	w->wake = wake;
	w->wake_arg = wake_arg;
	w->events_tail = &w->events;
	w->ckpt_epochs = env_int("VKINRD_CHECKPOINT_EPOCHS",
				 WORKER_CHECKPOINT_EPOCHS);
	w->ckpt_seconds = env_int("VKINRD_CHECKPOINT_SECONDS",
				  (int)WORKER_CHECKPOINT_SECONDS);
	if (selector && !(w->selector = strdup(selector))) {
		free(w);
		return ERR_NOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, worker_main, w)) {
		worker_destroy(w);
		return ERR_NOMEM;
	}
	w->started = 1;
	*out = w;
	return 0;
}

void worker_destroy(struct worker *w)
{
	if (!w)
		return;
	if (w->started) {
		worker_stop(w);
		pthread_join(w->thread, NULL);
	}
	while (w->held) {
		struct held *h = w->held;
		w->held = h->next;
		free(h->job);
		free(h);
	}
	while (w->requests) {
		struct work_request *req = w->requests;
		w->requests = req->next;
		work_request_destroy(req);
	}
	struct work_event *ev = w->events;
	while (ev) {
		struct work_event *next = ev->next;
		work_request_destroy(ev->req);
		free(ev);
		ev = next;
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->selector);
	free(w);
}
