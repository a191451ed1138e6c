/*
 * queue.c - jobs in memory and in the state folder.
 *
 * The list keeps submission order; queue_next scans it for the queued job
 * with the highest priority (the first one wins a tie, so equal priorities
 * run FIFO). A few hundred jobs make a scan cheaper than keeping a heap in
 * step with pause, resume and priority.
 *
 * The files of a job's folder, how each is written and read back, are
 * jobfiles.c's; this file decides what goes in them and when. A kill -9
 * can only lose the metrics lines after the last write, and a torn or
 * repeated line is repaired on reload (the file is then rewritten from
 * what was read). The checkpoint is the truth about how far a job got:
 * when the worker resumes a job from it, it reports that epoch and the
 * history is cut back to it (queue_truncate), so every epoch is in the
 * history exactly once.
 *
 * Loop thread only; it must not block on anything but the local disk.
 */
#include "jobs/queue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/path.h"
#include "proto/jsonrpc.h"
#include "log.h"
#include "jobs/jobfiles.h"
#include "proto/params.h"
#include "usertext.h"
#include "util/image.h"


static const char *const state_names[] = {
	"queued", "running", "paused", "done", "failed", "cancelled",
};

const char *job_state_name(enum job_state state)
{
	return state >= JOB_QUEUED && state <= JOB_CANCELLED
		       ? state_names[state]
		       : "unknown";
}

static int state_parse(const char *name)
{
	for (int i = 0; i <= JOB_CANCELLED; i++)
		if (name && !strcmp(name, state_names[i]))
			return i;
	return -1;
}

const char *const job_default_names[3] = {"width", "lr", "warmup"};

int job_state_is_final(enum job_state state)
{
	return state == JOB_DONE || state == JOB_FAILED ||
	       state == JOB_CANCELLED;
}

int job_batch_valid(const char *batch)
{
	size_t n = strlen(batch);
	if (n == 0 || n >= JOB_BATCH_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = batch[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double job_run_seconds(const struct job *job)
{
	double s = job->seconds;
	if (job->state == JOB_RUNNING && job->run_start > 0) {
		double run = now_seconds() - job->run_start;
		if (run > 0)
			s += run;
	}
	return s;
}

/* ------------------------------------------------------------ paths */

int queue_job_path(const struct queue *q, const struct job *job,
		   const char *file, char *buf, size_t len)
{
	return jobfiles_path(q->jobs_dir, job->id, file, buf, len);
}

/* ------------------------------------------------------- job records */

static void job_free(struct job *job)
{
	if (!job)
		return;
	if (job->metrics_fd >= 0)
		close(job->metrics_fd);
	free(job->hist);
	free(job);
}

static struct job *job_alloc(uint64_t number)
{
	struct job *job = calloc(1, sizeof(*job));
	if (!job)
		return NULL;
	job->number = number;
	snprintf(job->id, sizeof(job->id), "%" PRIu64, number);
	job->worker = -1;
	job->metrics_fd = -1;
	job->best_psnr = NAN;
	return job;
}

void job_params_add_given(cJSON *o, const struct job_params *p)
{
	if (p->source[0])
		cJSON_AddStringToObject(o, "source", p->source);
	if (p->key[0])
		cJSON_AddStringToObject(o, "key", p->key);
	for (int i = 0; nn_recipe_key(i); i++) {
		char value[64], *end;
		nn_recipe_get(&p->recipe, nn_recipe_key(i), value, sizeof(value));
		double x = strtod(value, &end);
		if (end != value && !*end) /* a number goes out as one */
			cJSON_AddNumberToObject(o, nn_recipe_key(i), x);
		else
			cJSON_AddStringToObject(o, nn_recipe_key(i), value);
	}
	for (int i = 0; i < TEXT_PARAM_COUNT; i++)
		if (p->text[i][0] &&
		    !cJSON_HasObjectItem(o, text_params[i].key))
			cJSON_AddStringToObject(o, text_params[i].key,
						p->text[i]);
}

int job_recipe_read(const cJSON *o, struct nn_recipe *r, char *err,
		    size_t errlen)
{
	for (int i = 0; nn_recipe_key(i); i++) {
		const char *key = nn_recipe_key(i);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
		char value[64];
		if (!v)
			continue;
		if (cJSON_IsString(v))
			snprintf(value, sizeof(value), "%s", v->valuestring);
		else if (cJSON_IsNumber(v))
			snprintf(value, sizeof(value), "%.17g", v->valuedouble);
		else {
			snprintf(err, errlen, "\"%s\" must be a string or a "
				 "number", key);
			return ERR_INVALID;
		}
		int rc = nn_recipe_set(r, key, value, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int save_request(struct queue *q, struct job *job)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", job->id);
	cJSON_AddStringToObject(o, "name", job->p.name);
	cJSON_AddNumberToObject(o, "epochs", job->p.epochs);
	cJSON_AddNumberToObject(o, "width", job->p.width);
	cJSON_AddNumberToObject(o, "lr", job->p.lr);
	rpc_add_exact_integer(o, "seed", job->p.seed);
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	if (job->p.batch[0])
		cJSON_AddStringToObject(o, "batch", job->p.batch);
	if (job->p.target_psnr > 0)
		cJSON_AddNumberToObject(o, "target_psnr", job->p.target_psnr);
	job_params_add_given(o, &job->p);
	cJSON *defaults = cJSON_AddArrayToObject(o, "defaults");
	for (int i = 0; i < 3; i++)
		if (job->p.defaults & (1u << i))
			cJSON_AddItemToArray(defaults, cJSON_CreateString(
							       job_default_names[i]));
	cJSON_AddNumberToObject(o, "uid", job->uid);
	cJSON_AddNumberToObject(o, "pid", job->pid);
	cJSON_AddNumberToObject(o, "image_width", job->img_w);
	cJSON_AddNumberToObject(o, "image_height", job->img_h);
	cJSON_AddBoolToObject(o, "init", job->has_init);
	cJSON_AddNumberToObject(o, "created", job->created);
	return jobfiles_write_json(q->jobs_dir, job->id, JOBFILE_REQUEST, o);
}

int queue_save_request(struct queue *q, struct job *job)
{
	int rc = save_request(q, job);
	if (rc) {
		int saved = errno;
		log_error("job %s: cannot write %s: %s", job->id,
			  JOBFILE_REQUEST, strerror(saved));
		errno = saved;
	}
	return rc;
}

int queue_save(struct queue *q, struct job *job)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	cJSON_AddNumberToObject(o, "epochs", job->p.epochs);
	cJSON_AddNumberToObject(o, "started", job->started);
	cJSON_AddNumberToObject(o, "finished", job->finished);
	cJSON_AddStringToObject(o, "device", job->device);
	if (job->precision[0])
		cJSON_AddStringToObject(o, "precision_used", job->precision);
	cJSON_AddStringToObject(o, "error", job->error);
	/* the current run included: a kill -9 loses at most the time since
	 * the last save (state changes and checkpoints) */
	cJSON_AddNumberToObject(o, "seconds", job_run_seconds(job));
	if (job->reached_epoch)
		cJSON_AddNumberToObject(o, "reached_epoch", job->reached_epoch);
	if (job->has_export)
		cJSON_AddNumberToObject(o, "export_psnr", job->export_psnr);
	int rc = jobfiles_write_json(q->jobs_dir, job->id, JOBFILE_STATE, o);
	if (rc) {
		int saved = errno;
		char path[4096];
		queue_job_path(q, job, JOBFILE_STATE, path, sizeof(path));
		log_error("job %s: cannot write %s: %s", job->id, path,
			  strerror(saved));
		errno = saved;
	}
	return rc;
}

/* The readers below take what the daemon wrote itself, but a file may
 * have been damaged or edited: a number out of an int's range (casting it
 * would be undefined), one not finite, or text that the wire refuses
 * gives the default, or the text made safe. */
static int get_int(const cJSON *o, const char *key, int def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
			       v->valuedouble <= 2147483647.0
		       ? (int)v->valuedouble
		       : def;
}

static double get_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble
							     : def;
}

static void get_str(const cJSON *o, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
	usertext_sanitize(buf); /* what others see: as the wire allows */
}

/* ---------------------------------------------------------- history */

/* best_psnr: the best model's (psnr_best), or the epoch's own psnr in a
 * history stored before the best model was kept */
static void hist_best(struct job *job, const struct nn_metrics *m)
{
	double p = m->psnr_best > 0 ? m->psnr_best : m->psnr;
	if (isfinite(p) && (isnan(job->best_psnr) || p > job->best_psnr))
		job->best_psnr = p;
}

static int hist_push(struct job *job, const struct nn_metrics *m)
{
	if (job->nhist == job->caphist) {
		int cap = job->caphist ? job->caphist * 2 : 256;
		struct nn_metrics *h = realloc(job->hist, cap * sizeof(*h));
		if (!h)
			return ERR_NOMEM;
		job->hist = h;
		job->caphist = cap;
	}
	job->hist[job->nhist++] = *m;
	hist_best(job, m);
	return 0;
}

static void hist_cut(struct job *job, int epoch)
{
	while (job->nhist > 0 && job->hist[job->nhist - 1].epoch > epoch)
		job->nhist--;
	job->best_psnr = NAN;
	for (int i = 0; i < job->nhist; i++)
		hist_best(job, &job->hist[i]);
}

/* Writes the whole history to metrics.ndjson atomically. */
static int rewrite_metrics(struct queue *q, struct job *job)
{
	if (job->metrics_fd >= 0) {
		close(job->metrics_fd);
		job->metrics_fd = -1;
	}
	return jobfiles_metrics_rewrite(q->jobs_dir, job->id, job->hist,
					job->nhist);
}

static int open_metrics(struct queue *q, struct job *job)
{
	if (job->metrics_fd >= 0)
		return 0;
	return jobfiles_metrics_open(q->jobs_dir, job->id, &job->metrics_fd);
}

int queue_add_metrics(struct queue *q, struct job *job,
		      const struct nn_metrics *m)
{
	if (m->epoch <= job_epoch(job)) {
		hist_cut(job, m->epoch - 1);
		if (rewrite_metrics(q, job))
			job->metrics_behind = 1;
	}
	int rc = hist_push(job, m);
	if (rc)
		return rc;
	if (job->metrics_behind)
		return ERR_IO; /* appending now would leave a gap on disk */
	if (!(rc = open_metrics(q, job)) &&
	    !(rc = jobfiles_metrics_append(job->metrics_fd, job->id, m)))
		return 0;
	int saved = errno;
	if (job->metrics_fd >= 0)
		close(job->metrics_fd);
	job->metrics_fd = -1;
	job->metrics_behind = 1;
	errno = saved;
	return rc;
}

int queue_write_back(struct queue *q, struct job *job)
{
	if (job->metrics_behind) {
		int rc = rewrite_metrics(q, job);
		if (rc)
			return rc;
		job->metrics_behind = 0;
	}
	return queue_save(q, job);
}

int queue_truncate(struct queue *q, struct job *job, int epoch)
{
	if (job_epoch(job) <= epoch)
		return 0;
	log_info("job %s: history cut back from epoch %d to the checkpoint's %d",
		 job->id, job_epoch(job), epoch);
	hist_cut(job, epoch);
	int rc = rewrite_metrics(q, job);
	if (rc)
		job->metrics_behind = 1;
	else
		job->metrics_behind = 0;
	return rc;
}

/* Reads metrics.ndjson into the history; returns 1 when the file needs
 * rewriting (a torn last line, epochs repeated), -1 (why set) when a line
 * other than a torn last one is damaged. A missing file is an empty
 * history. */
static int load_metrics(struct queue *q, struct job *job, char *why,
			size_t whylen)
{
	struct nn_metrics *lines;
	int n, repair;
	if (jobfiles_metrics_load(q->jobs_dir, job->id, &lines, &n, &repair,
				  why, whylen))
		return -1;
	for (int i = 0; i < n; i++) {
		if (lines[i].epoch <= job_epoch(job)) {
			hist_cut(job, lines[i].epoch - 1);
			repair = 1;
		}
		hist_push(job, &lines[i]);
	}
	free(lines);
	return repair;
}

/* An integer field in [lo, hi]; -1 when missing, mistyped or out of range. */
static int get_exact(const cJSON *o, const char *key, double lo, double hi,
		     double *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < lo || v->valuedouble > hi)
		return -1;
	*value = v->valuedouble;
	return 0;
}

/* request.json: every field present, of its type and in its range. */
static int load_request(struct queue *q, struct job *job, char *why,
			size_t whylen)
{
	char path[4096];
	queue_job_path(q, job, JOBFILE_REQUEST, path, sizeof(path));
	cJSON *req = jobfiles_read_json(q->jobs_dir, job->id, JOBFILE_REQUEST);
	if (!req || !cJSON_IsObject(req)) {
		snprintf(why, whylen, "%.300s is %s", path, errno == ENOENT && !req
			 ? "missing" : "damaged: not a JSON object");
		cJSON_Delete(req);
		return -1;
	}
	const struct {
		const char *key;
		double lo, hi;
	} fields[] = {
		{"epochs", 1, param_limits[PARAM_EPOCHS].max},
		{"width", 0, param_limits[PARAM_WIDTH].max},
		{"seed", 0, param_limits[PARAM_SEED].max},
		{"priority", param_limits[PARAM_PRIORITY].min,
		 param_limits[PARAM_PRIORITY].max},
		{"uid", 0, 4294967295.0},
		{"pid", 0, 4294967295.0},
		{"image_width", 1, IMAGE_MAX_SIDE},
		{"image_height", 1, IMAGE_MAX_SIDE},
	};
	double v[8];
	char err[256];
	const char *bad = NULL;
	for (size_t i = 0; i < 8 && !bad; i++)
		if (get_exact(req, fields[i].key, fields[i].lo, fields[i].hi, &v[i]))
			bad = fields[i].key;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
	const cJSON *lr = cJSON_GetObjectItemCaseSensitive(req, "lr");
	if (!bad && (!cJSON_IsString(id) || strcmp(id->valuestring, job->id)))
		bad = "id";
	if (!bad && (!cJSON_IsString(name) ||
		     strlen(name->valuestring) >= JOB_NAME_MAX))
		bad = "name";
	if (!bad && (!cJSON_IsNumber(lr) || !(lr->valuedouble >= 0) ||
		     !(lr->valuedouble < 1))) /* 0: NN_LR_AUTO, by width */
		bad = "lr";
	/* 0 (the device's default, chosen at the first run) or the wire's */
	if (!bad && v[1] && param_check(PARAM_WIDTH, v[1], "", err,
					sizeof err))
		bad = "width";
	if (!bad && v[6] * v[7] > IMAGE_MAX_PIXELS)
		bad = "image_width";
	if (bad) {
		snprintf(why, whylen, "%.300s is damaged: \"%s\" is missing or "
			 "out of range", path, bad);
		cJSON_Delete(req);
		return -1;
	}
	snprintf(job->p.name, sizeof(job->p.name), "%s", name->valuestring);
	usertext_sanitize(job->p.name);
	job->p.epochs = (int)v[0];
	job->p.width = (int)v[1];
	job->p.seed = (uint64_t)v[2];
	job->p.priority = (int)v[3];
	job->uid = (uid_t)v[4];
	job->pid = (pid_t)v[5];
	job->img_w = (int)v[6];
	job->img_h = (int)v[7];
	job->p.lr = lr->valuedouble;
	get_str(req, "batch", job->p.batch, sizeof(job->p.batch));
	if (job->p.batch[0] && !job_batch_valid(job->p.batch))
		job->p.batch[0] = '\0';
	job->p.target_psnr = get_num(req, "target_psnr", 0);
	if (!(job->p.target_psnr >= 0 &&
	      job->p.target_psnr <= param_limits[PARAM_TARGET_PSNR].max))
		job->p.target_psnr = 0;
	get_str(req, "source", job->p.source, sizeof(job->p.source));
	get_str(req, "key", job->p.key, sizeof(job->p.key));
	/* jobs saved before recipes were recorded train as they always did:
	 * Adam, a cosine schedule, no average (and what they were given).
	 * A recipe that cannot be read fails the job: training it with
	 * another recipe would give other weights under the same settings. */
	nn_recipe_version1(&job->p.recipe);
	if (job_recipe_read(req, &job->p.recipe, err, sizeof(err))) {
		snprintf(why, whylen, "%.200s is damaged: its recipe is not "
			 "readable (%.200s)", path, err);
		cJSON_Delete(req);
		return -1;
	}
	/* what was left to the daemon; saved before "defaults" was: what
	 * still holds its placeholder */
	const cJSON *defaults = cJSON_GetObjectItemCaseSensitive(req, "defaults");
	for (const cJSON *d = cJSON_IsArray(defaults) ? defaults->child : NULL;
	     d; d = d->next)
		for (int i = 0; i < 3; i++)
			if (cJSON_IsString(d) &&
			    !strcmp(d->valuestring, job_default_names[i]))
				job->p.defaults |= 1u << i;
	if (!cJSON_IsArray(defaults))
		job->p.defaults = (!job->p.width ? JOB_DEFAULT_WIDTH : 0) |
				  (job->p.lr == NN_LR_AUTO ? JOB_DEFAULT_LR : 0) |
				  (job->p.recipe.warmup == NN_WARMUP_AUTO
					   ? JOB_DEFAULT_WARMUP : 0);
	for (int i = 0; i < TEXT_PARAM_COUNT; i++) {
		get_str(req, text_params[i].key, job->p.text[i],
			sizeof(job->p.text[i]));
		if (job->p.text[i][0] &&
		    text_param_check(i, job->p.text[i], "", err, sizeof err))
			job->p.text[i][0] = '\0';
	}
	job->has_init = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "init"));
	job->created = get_num(req, "created", 0);
	cJSON_Delete(req);
	return 0;
}

/* Whether the job has run: a history or a checkpoint. */
static int has_run(struct queue *q, struct job *job)
{
	return job->nhist > 0 ||
	       jobfiles_exists(q->jobs_dir, job->id, JOBFILE_CHECKPOINT);
}

/* state.json. A missing one is a submission that a crash interrupted
 * (queued) unless the job has run already: then it is damage. */
static int load_state(struct queue *q, struct job *job, char *why,
		      size_t whylen)
{
	char path[4096];
	queue_job_path(q, job, JOBFILE_STATE, path, sizeof(path));
	cJSON *st = jobfiles_read_json(q->jobs_dir, job->id, JOBFILE_STATE);
	job->state = JOB_QUEUED;
	if (!st && errno == ENOENT && !has_run(q, job))
		return 0;
	int s = -1;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, "state");
	if (cJSON_IsString(v))
		s = state_parse(v->valuestring);
	double prio = job->p.priority, epochs = job->p.epochs;
	if (s < 0 || (cJSON_GetObjectItem(st, "priority") &&
		      get_exact(st, "priority", param_limits[PARAM_PRIORITY].min,
				param_limits[PARAM_PRIORITY].max, &prio)) ||
	    (cJSON_GetObjectItem(st, "epochs") &&
	     get_exact(st, "epochs", 1, param_limits[PARAM_EPOCHS].max, &epochs))) {
		snprintf(why, whylen, "%.300s is %s", path, !st && errno == ENOENT
			 ? "missing though the job has run"
			 : "damaged: no valid state, priority or epochs");
		cJSON_Delete(st);
		return -1;
	}
	job->state = (enum job_state)s;
	job->p.priority = (int)prio;
	job->p.epochs = (int)epochs;
	job->started = get_num(st, "started", 0);
	job->finished = get_num(st, "finished", 0);
	get_str(st, "device", job->device, sizeof(job->device));
	get_str(st, "precision_used", job->precision, sizeof(job->precision));
	if (job->precision[0] && strcmp(job->precision, "fp16") &&
	    strcmp(job->precision, "fp32"))
		job->precision[0] = '\0'; /* not one we write: forgotten */
	get_str(st, "error", job->error, sizeof(job->error));
	job->seconds = get_num(st, "seconds", 0);
	if (job->seconds < 0)
		job->seconds = 0;
	job->reached_epoch = get_int(st, "reached_epoch", 0);
	if (job->reached_epoch > job->p.epochs)
		job->reached_epoch = 0;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(st, "export_psnr");
	if (cJSON_IsNumber(e) && isfinite(e->valuedouble)) {
		job->export_psnr = e->valuedouble;
		job->has_export = 1;
	}
	cJSON_Delete(st);
	return 0;
}

/*
 * Reads a job back. Every file is checked; a job whose files are damaged
 * or unsafe (a link where a file should be) is kept, failed, with the
 * reason as its error and marked damaged (it cannot be resumed, only
 * removed): it never vanishes and its id is never given again.
 */
static struct job *load_job(struct queue *q, uint64_t number)
{
	struct job *job = job_alloc(number);
	if (!job)
		return NULL;
	char why[sizeof(job->error)] = "";
	int can_save = 0;
	if (jobfiles_check_folder(q->jobs_dir, job->id, &can_save, why,
				  sizeof(why)) ||
	    load_request(q, job, why, sizeof(why)))
		goto damaged;
	int repair = load_metrics(q, job, why, sizeof(why));
	if (repair < 0 || load_state(q, job, why, sizeof(why)) ||
	    (!job_state_is_final(job->state) &&
	     jobfiles_check_inputs(q->jobs_dir, job->id, job->has_init, why,
				   sizeof(why))))
		goto damaged;
	if (repair && rewrite_metrics(q, job))
		job->metrics_behind = 1;
	if (job->state == JOB_QUEUED || job->state == JOB_RUNNING ||
	    job->state == JOB_FAILED) {
		/* Epochs after the last checkpoint will be run again: forget
		 * them now, so that nobody is shown an epoch twice. */
		int epoch = jobfiles_checkpoint_epoch(q->jobs_dir, job->id);
		if (epoch >= 0 && epoch < job_epoch(job))
			queue_truncate(q, job, epoch);
	}
	if (job->state == JOB_RUNNING) {
		job->state = JOB_QUEUED;
		queue_save(q, job);
	}
	return job;

damaged:
	log_error("job %s: %s; the job is marked failed", job->id, why);
	job->state = JOB_FAILED;
	job->damaged = 1;
	snprintf(job->error, sizeof(job->error), "%s", why);
	if (can_save)
		queue_save(q, job);
	return job;
}

/* Inserts keeping the list sorted by job number (submission order). */
static void insert_sorted(struct queue *q, struct job *job)
{
	struct job **pp = &q->head;
	while (*pp && (*pp)->number < job->number)
		pp = &(*pp)->next;
	job->next = *pp;
	*pp = job;
	q->count++;
}

static void reload(struct queue *q)
{
	DIR *dir = opendir(q->jobs_dir);
	if (!dir)
		return;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		/* a name the daemon never gives (a sign, a leading zero,
		 * beyond 2^53 - 1) is no job of this daemon's: left alone,
		 * and it cannot push the counter past what clients can name */
		uint64_t number = jobfiles_number(de->d_name,
						  strlen(de->d_name));
		if (!number) {
			log_warn("%s/%s is not a job folder (job ids are 1 to "
				 "%llu); left alone", q->jobs_dir, de->d_name,
				 JOB_NUMBER_MAX);
			continue;
		}
		/* counted even if it cannot be loaded: never given again */
		if (number >= q->next_number)
			q->next_number = number + 1;
		struct stat st;
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode))
			jobfiles_remove_interrupted_writes(q->jobs_dir,
							   de->d_name);
		struct job *job = load_job(q, number);
		if (job)
			insert_sorted(q, job);
	}
	closedir(dir);
}

static void save_next_number(struct queue *q)
{
	char *path = path_join(q->state_dir, "next-id");
	char text[32];
	int n = snprintf(text, sizeof(text), "%" PRIu64 "\n", q->next_number);
	if (path)
		fileio_write_atomic(path, text, n, 0600);
	free(path);
}

static void load_next_number(struct queue *q)
{
	char *path = path_join(q->state_dir, "next-id");
	uint8_t *data;
	size_t size;
	if (path && fileio_read(path, &data, &size, 64) == 0) {
		size_t len = size && data[size - 1] == '\n' ? size - 1 : size;
		uint64_t n = jobfiles_number((char *)data, len);
		/* JOB_NUMBER_MAX + 1: every id given (jobfiles_number
		 * refuses it, being no job's) */
		if (!n && len == 16 && !memcmp(data, "9007199254740992", 16))
			n = JOB_NUMBER_MAX + 1;
		if (!n)
			log_warn("%s holds no job number (1 to %llu); the "
				 "job folders give the next id", path,
				 JOB_NUMBER_MAX);
		else if (n > q->next_number)
			q->next_number = n;
		free(data);
	}
	free(path);
}

int queue_create(struct queue **out, const char *state_dir, char *err,
		 size_t errlen)
{
	*out = NULL;
	struct queue *q = calloc(1, sizeof(*q));
	if (!q)
		return ERR_NOMEM;
	q->next_number = 1;
	q->state_dir = strdup(state_dir);
	q->jobs_dir = path_join(state_dir, "jobs");
	if (!q->state_dir || !q->jobs_dir) {
		queue_destroy(q);
		return ERR_NOMEM;
	}
	if (path_make_dirs(q->jobs_dir, 0700)) {
		snprintf(err, errlen, "cannot create the state folder %s: %s",
			 q->jobs_dir, strerror(errno));
		queue_destroy(q);
		return ERR_IO;
	}
	chmod(q->state_dir, 0700);
	reload(q);
	load_next_number(q);
	*out = q;
	return 0;
}

void queue_destroy(struct queue *q)
{
	if (!q)
		return;
	while (q->head) {
		struct job *job = q->head;
		q->head = job->next;
		job_free(job);
	}
	free(q->state_dir);
	free(q->jobs_dir);
	free(q);
}

/* ---------------------------------------------------------- queries */

struct job *queue_find(struct queue *q, const char *id)
{
	for (struct job *job = q->head; job; job = job->next)
		if (!strcmp(job->id, id))
			return job;
	return NULL;
}

struct job *queue_next(struct queue *q)
{
	struct job *best = NULL;
	for (struct job *job = q->head; job; job = job->next)
		if (job->state == JOB_QUEUED &&
		    (!best || job->p.priority > best->p.priority))
			best = job;
	return best;
}

int queue_count_uid(const struct queue *q, uid_t uid)
{
	int n = 0;
	for (struct job *job = q->head; job; job = job->next)
		n += job->uid == uid;
	return n;
}

int queue_count_state(const struct queue *q, enum job_state state)
{
	int n = 0;
	for (struct job *job = q->head; job; job = job->next)
		n += job->state == state;
	return n;
}

/* ---------------------------------------------------------- changes */

int queue_submit(struct queue *q, const struct job_params *p, uid_t uid,
		 pid_t pid, const void *png, size_t png_size, int img_w,
		 int img_h, const void *init, size_t init_size,
		 struct job **out, char *err, size_t errlen)
{
	*out = NULL;
	if (q->next_number > JOB_NUMBER_MAX) {
		snprintf(err, errlen, "every job id up to %llu has been given "
			 "(next-id in the state folder); ids are never "
			 "reused", JOB_NUMBER_MAX);
		return ERR_TOO_LARGE;
	}
	struct job *job = job_alloc(q->next_number);
	if (!job)
		return ERR_NOMEM;
	job->p = *p;
	job->uid = uid;
	job->pid = pid;
	job->img_w = img_w;
	job->img_h = img_h;
	job->has_init = init != NULL;
	job->created = now_seconds();
	job->state = JOB_QUEUED;

	/* A number whose folder exists (left by a damaged job, or made by
	 * hand) is skipped: an id is never given twice. */
	char dir[4096];
	int rc = 0, made = 0;
	for (int tries = 0;; tries++) {
		rc = jobfiles_make_folder(q->jobs_dir, job->id);
		made = rc == 0;
		if (made || rc != ERR_IO || errno != EEXIST || tries == 1000 ||
		    q->next_number >= JOB_NUMBER_MAX)
			break;
		job->number = ++q->next_number;
		snprintf(job->id, sizeof(job->id), "%" PRIu64, job->number);
	}
	if (!rc)
		rc = jobfiles_write(q->jobs_dir, job->id, JOBFILE_TARGET, png,
				    png_size);
	if (!rc && init)
		rc = jobfiles_write(q->jobs_dir, job->id, JOBFILE_INIT, init,
				    init_size);
	if (!rc)
		rc = save_request(q, job);
	if (!rc)
		rc = queue_save(q, job);
	if (rc) {
		queue_job_path(q, job, NULL, dir, sizeof(dir));
		snprintf(err, errlen, "cannot store the job in %s: %s", dir,
			 error_message(rc));
		if (made)
			jobfiles_remove_folder(q->jobs_dir, job->id);
		job_free(job);
		return rc;
	}
	q->next_number++;
	save_next_number(q);
	insert_sorted(q, job);
	*out = job;
	return 0;
}

int queue_set_state(struct queue *q, struct job *job, enum job_state state,
		    const char *error)
{
	double now = now_seconds();
	if (job->state == JOB_RUNNING && state != JOB_RUNNING) {
		job->seconds = job_run_seconds(job);
		job->run_start = 0;
	} else if (state == JOB_RUNNING && job->state != JOB_RUNNING) {
		job->run_start = now;
	}
	job->state = state;
	if (state == JOB_QUEUED || state == JOB_RUNNING)
		job->write_paused = 0; /* resumed, by the retry or by hand */
	if (state == JOB_RUNNING && job->started == 0)
		job->started = now;
	if (job_state_is_final(state))
		job->finished = now;
	else
		job->finished = 0;
	if (state == JOB_FAILED || (state == JOB_PAUSED && error)) {
		if (error != job->error)
			snprintf(job->error, sizeof(job->error), "%s",
				 error ? error : "failed");
	}
	else if (state != JOB_DONE)
		job->error[0] = '\0';
	if (state != JOB_RUNNING && job->metrics_fd >= 0) {
		close(job->metrics_fd);
		job->metrics_fd = -1;
	}
	return queue_save(q, job);
}

int queue_remove(struct queue *q, struct job *job)
{
	char dir[4096];
	int rc = queue_job_path(q, job, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	for (struct job **pp = &q->head; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			q->count--;
			break;
		}
	}
	jobfiles_remove_folder(q->jobs_dir, job->id);
	job_free(job);
	return 0;
}
