/*
 * queue.c - jobs in memory and in the state folder.
 *
 * The list keeps submission order; queue_next asks share.c, which scans
 * it for the uid whose turn it is and that uid's queued job with the
 * highest priority (the first one wins a tie, so equal priorities run
 * FIFO). A few hundred jobs make a scan cheaper than keeping a heap in
 * step with pause, resume and priority.
 *
 * The files of a job's folder, how each is written and read back, are
 * jobfiles.c's; this file decides what goes in them and when. A kill -9
 * can only lose the metrics lines after the last write, and a torn or
 * repeated line is repaired on reload (queue_load.c, which reads the
 * state folder back at start; the file is then rewritten from what was
 * read). The checkpoint is the truth about how far a job got:
 * when the worker resumes a job from it, it reports that epoch and the
 * history is cut back to it (queue_truncate), so every epoch is in the
 * history exactly once.
 *
 * Loop thread only; it must not block on anything but the local disk.
 */
#include "jobs/queue.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/path.h"
#include "proto/jsonrpc.h"
#include "log.h"
#include "jobs/jobfiles.h"
#include "proto/params.h"
#include "jobs/queue_internal.h"
#include "jobs/share.h"

static const char *const state_names[] = {
	"queued", "running", "paused", "done", "failed", "cancelled",
};

const char *job_state_name(enum job_state state)
{
	return state >= JOB_QUEUED && state <= JOB_CANCELLED
		   ? state_names[state]
		   : "unknown";
}

int queue_state_parse(const char *name)
{
	for (int i = 0; i <= JOB_CANCELLED; i++)
		if (name && !strcmp(name, state_names[i]))
			return i;
	return -1;
}

const char *const job_default_names[3] = { "width", "lr", "warmup" };

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

int queue_job_shown(const struct queue *q, const struct job *job,
		    const char *file, char *buf, size_t len)
{
	return jobfiles_path(q->shown_jobs_dir ? q->shown_jobs_dir
					       : q->jobs_dir,
			     job->id, file, buf, len);
}

int queue_reach_locked(struct queue *q, int dir_fd)
{
	char via[64];
	struct stat named, locked;
	snprintf(via, sizeof(via), "/proc/self/fd/%d", dir_fd);
	if (dir_fd < 0 || q->shown_state_dir || stat(via, &named) ||
	    fstat(dir_fd, &locked) || named.st_dev != locked.st_dev ||
	    named.st_ino != locked.st_ino)
		return -1;
	char *state = strdup(via), *jobs = path_join(via, "jobs");
	if (!state || !jobs) {
		free(state);
		free(jobs);
		return -1;
	}
	q->shown_state_dir = q->state_dir;
	q->shown_jobs_dir = q->jobs_dir;
	q->state_dir = state;
	q->jobs_dir = jobs;
	return 0;
}

void queue_shown_text(const struct queue *q, char *text, size_t len)
{
	if (!q->shown_state_dir)
		return;
	size_t via = strlen(q->state_dir), shown = strlen(q->shown_state_dir);
	char *at = text;
	while ((at = strstr(at, q->state_dir))) {
		size_t rest = strlen(at + via) + 1, used = (size_t)(at - text);
		if (used + shown + rest > len)
			return; /* no room: left as it is */
		memmove(at + shown, at + via, rest);
		memcpy(at, q->shown_state_dir, shown);
		at += shown;
	}
}

/* ------------------------------------------------------- job records */

static void job_free(struct job *job)
{
	if (!job)
		return;
	if (job->metrics_fd >= 0)
		close(job->metrics_fd);
	free(job->hist);
	free(job->hist_time);
	free(job);
}

struct job *queue_job_alloc(uint64_t number)
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
		char value[64];
		if (!nn_recipe_is_word(i)) { /* a number goes out as one */
			cJSON_AddNumberToObject(
			    o, nn_recipe_key(i),
			    nn_recipe_number(&p->cfg.recipe, i));
			continue;
		}
		nn_recipe_get(&p->cfg.recipe, nn_recipe_key(i), value,
			      sizeof(value));
		cJSON_AddStringToObject(o, nn_recipe_key(i), value);
	}
	for (int i = PARAM_FIRST_WORD; i < PARAM_COUNT; i++) {
		char word[64];
		if (!(p->words_given & (1u << (i - PARAM_FIRST_WORD))) ||
		    cJSON_HasObjectItem(o, param_table[i].key))
			continue;
		nn_option_text(&p->cfg, (enum param_id)i, word, sizeof(word));
		cJSON_AddStringToObject(o, param_table[i].key, word);
	}
}

void job_resolve_auto(struct job_params *p, int cpu_device)
{
	if (p->cfg.nf || cpu_device >= 0)
		nn_resolve_auto(&p->cfg.nf, cpu_device > 0, &p->cfg.lr,
				&p->cfg.recipe);
}

int job_recipe_read(const cJSON *o, struct nn_recipe *r, char *err,
		    size_t errlen)
{
	for (int i = 0; nn_recipe_key(i); i++) {
		const char *key = nn_recipe_key(i);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
		int rc;
		if (!v)
			continue;
		if (cJSON_IsString(v))
			rc = nn_recipe_set(r, key, v->valuestring, err, errlen);
		else if (cJSON_IsNumber(v))
			rc = nn_recipe_set_number(r, i, v->valuedouble, err,
						  errlen);
		else {
			snprintf(err, errlen,
				 "\"%s\" must be a string or a "
				 "number",
				 key);
			return ERR_INVALID;
		}
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
	cJSON_AddNumberToObject(o, "epochs", job->p.cfg.epochs);
	cJSON_AddNumberToObject(o, "width", job->p.cfg.nf);
	cJSON_AddNumberToObject(o, "lr", job->p.cfg.lr);
	rpc_add_exact_integer(o, "seed", job->p.cfg.seed);
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	if (job->p.batch[0])
		cJSON_AddStringToObject(o, "batch", job->p.batch);
	if (job->p.target_psnr > 0)
		cJSON_AddNumberToObject(o, "target_psnr", job->p.target_psnr);
	if (job->p.retry_of[0])
		cJSON_AddStringToObject(o, "retry_of", job->p.retry_of);
	job_params_add_given(o, &job->p);
	cJSON *defaults = cJSON_AddArrayToObject(o, "defaults");
	for (int i = 0; i < 3; i++)
		if (job->p.defaults & (1u << i))
			cJSON_AddItemToArray(
			    defaults, cJSON_CreateString(job_default_names[i]));
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
	job->save_due = 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", job_state_name(job->state));
	cJSON_AddNumberToObject(o, "priority", job->p.priority);
	cJSON_AddNumberToObject(o, "epochs", job->p.cfg.epochs);
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
		queue_job_shown(q, job, JOBFILE_STATE, path, sizeof(path));
		log_error("job %s: cannot write %s: %s", job->id, path,
			  strerror(saved));
		errno = saved;
	}
	return rc;
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

int queue_hist_push(struct job *job, const struct nn_metrics *m, double time)
{
	if (job->nhist == job->caphist) {
		int cap = job->caphist ? job->caphist * 2 : 256;
		struct nn_metrics *h = realloc(job->hist, cap * sizeof(*h));
		if (!h)
			return ERR_NOMEM;
		job->hist = h;
		double *t = realloc(job->hist_time, cap * sizeof(*t));
		if (!t)
			return ERR_NOMEM;
		job->hist_time = t;
		job->caphist = cap;
	}
	job->hist_time[job->nhist] = time;
	job->hist[job->nhist++] = *m;
	hist_best(job, m);
	return 0;
}

void queue_hist_cut(struct job *job, int epoch)
{
	while (job->nhist > 0 && job->hist[job->nhist - 1].epoch > epoch)
		job->nhist--;
	job->best_psnr = NAN;
	for (int i = 0; i < job->nhist; i++)
		hist_best(job, &job->hist[i]);
}

/* Writes the whole history to metrics.ndjson atomically. */
int queue_rewrite_metrics(struct queue *q, struct job *job)
{
	if (job->metrics_fd >= 0) {
		close(job->metrics_fd);
		job->metrics_fd = -1;
	}
	return jobfiles_metrics_rewrite(q->jobs_dir, job->id, job->hist,
					job->hist_time, job->nhist);
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
		queue_hist_cut(job, m->epoch - 1);
		if (queue_rewrite_metrics(q, job))
			job->metrics_behind = 1;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double time = now.tv_sec + now.tv_nsec * 1e-9;
	int rc = queue_hist_push(job, m, time);
	if (rc)
		return rc;
	if (job->metrics_behind)
		return ERR_IO; /* appending now would leave a gap on disk */
	if (!(rc = open_metrics(q, job)) &&
	    !(rc = jobfiles_metrics_append(job->metrics_fd, job->id, m, time)))
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
		int rc = queue_rewrite_metrics(q, job);
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
	log_info(
	    "job %s: history cut back from epoch %d to the checkpoint's %d",
	    job->id, job_epoch(job), epoch);
	queue_hist_cut(job, epoch);
	int rc = queue_rewrite_metrics(q, job);
	if (rc)
		job->metrics_behind = 1;
	else
		job->metrics_behind = 0;
	return rc;
}

/* ------------------------------------------------------ the id index */

static size_t id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211ull;
	return (size_t)h;
}

static void index_put(struct job **slots, size_t n, struct job *job)
{
	size_t i = id_hash(job->id) & (n - 1);
	while (slots[i])
		i = (i + 1) & (n - 1);
	slots[i] = job;
}

/* The index made again for the list, with room for at least `jobs`
 * (slots stay NULL when memory runs out: queue_find then walks the
 * list). */
static void index_rebuild(struct queue *q, size_t jobs)
{
	size_t n = 64;
	while (n < 2 * jobs)
		n *= 2;
	struct job **slots = calloc(n, sizeof(*slots));
	free(q->index);
	q->index = slots;
	q->index_slots = slots ? n : 0;
	for (struct job *job = q->head; slots && job; job = job->next)
		index_put(slots, n, job);
}

/* Inserts keeping the list sorted by job number (submission order). */
void queue_insert_sorted(struct queue *q, struct job *job)
{
	struct job **pp = &q->head;
	while (*pp && (*pp)->number < job->number)
		pp = &(*pp)->next;
	job->next = *pp;
	*pp = job;
	q->count++;
	if (2 * (size_t)q->count > q->index_slots)
		index_rebuild(q, (size_t)q->count * 2);
	else
		index_put(q->index, q->index_slots, job);
}

/* Writes STATE/next-id: the number the next job gets. */
static void save_next_number(struct queue *q)
{
	q->next_number_dirty = 0;
	char *path = path_join(q->state_dir, "next-id");
	char text[32];
	int n = snprintf(text, sizeof(text), "%" PRIu64 "\n", q->next_number);
	if (path)
		fileio_write_atomic(path, text, n, 0600);
	free(path);
}

void queue_save_next_number(struct queue *q)
{
	if (q->next_number_dirty)
		save_next_number(q);
}

void queue_destroy(struct queue *q)
{
	if (!q)
		return;
	queue_save_next_number(q);
	while (q->head) {
		struct job *job = q->head;
		q->head = job->next;
		job_free(job);
	}
	free(q->index);
	share_destroy(q->share);
	free(q->state_dir);
	free(q->jobs_dir);
	free(q->shown_state_dir);
	free(q->shown_jobs_dir);
	free(q);
}

/* ---------------------------------------------------------- queries */

struct job *queue_find(struct queue *q, const char *id)
{
	if (q->index_slots) {
		size_t n = q->index_slots, i = id_hash(id) & (n - 1);
		for (; q->index[i]; i = (i + 1) & (n - 1))
			if (!strcmp(q->index[i]->id, id))
				return q->index[i];
		return NULL;
	}
	for (struct job *job = q->head; job; job = job->next)
		if (!strcmp(job->id, id))
			return job;
	return NULL;
}

struct job *queue_next(struct queue *q)
{
	return queue_next_except(q, NULL, 0);
}

struct job *queue_next_except(struct queue *q, const uid_t *skip, int nskip)
{
	return share_next(q, now_seconds(), skip, nskip);
}

int queue_batch_foreign(const struct queue *q, const char *batch, uid_t uid,
			uid_t *owner)
{
	for (const struct job *job = q->head; job; job = job->next)
		if (job->uid != uid && !strcmp(job->p.batch, batch)) {
			*owner = job->uid;
			return 1;
		}
	return 0;
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
		snprintf(err, errlen,
			 "every job id up to %llu has been given "
			 "(next-id in the state folder); ids are never "
			 "reused",
			 JOB_NUMBER_MAX);
		return ERR_TOO_LARGE;
	}
	struct job *job = queue_job_alloc(q->next_number);
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

	/* The job's files (its folder, target, request, state and the next
	 * id) are made durable together by one sync of the state's file
	 * system, not two fsyncs a file; inside a caller's batch, by its. */
	int own_batch = !fileio_batch_open();
	if (own_batch)
		fileio_batch_begin();
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
	if (!rc) {
		q->next_number++;
		/* a caller's batch (the loop's group commit): written once
		 * at its end, not once a job */
		if (own_batch)
			save_next_number(q);
		else
			q->next_number_dirty = 1;
	}
	if (own_batch) {
		int synced = fileio_batch_end(q->jobs_dir);
		rc = rc ? rc : synced;
	}
	if (rc) {
		queue_job_shown(q, job, NULL, dir, sizeof(dir));
		snprintf(err, errlen, "cannot store the job in %s: %s", dir,
			 error_message(rc));
		if (made)
			jobfiles_remove_folder(q->jobs_dir, job->id);
		job_free(job);
		return rc;
	}
	queue_insert_sorted(q, job);
	*out = job;
	return 0;
}

int queue_set_state(struct queue *q, struct job *job, enum job_state state,
		    const char *error)
{
	double now = now_seconds();
	if (job->state == JOB_RUNNING && state != JOB_RUNNING) {
		double ran = job_run_seconds(job) - job->seconds;
		job->seconds += ran;
		job->run_start = 0;
		share_ran(q, job, ran, now);
	} else if (state == JOB_RUNNING && job->state != JOB_RUNNING) {
		job->run_start = now;
		share_started(q, job, now);
	}
	if (state != job->state)
		job->wait_since = 0; /* its wait for a worker starts again */
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
	} else if (state != JOB_DONE)
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
	index_rebuild(q, (size_t)q->count); /* without it */
	jobfiles_remove_folder(q->jobs_dir, job->id);
	job_free(job);
	return 0;
}
