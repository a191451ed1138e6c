/*
 * queue_load.c - the queue read back from the state folder at start.
 *
 * queue_create opens the state folder and loads every job folder under
 * jobs/: request.json (the parameters, every field checked as the wire
 * checks it), state.json and metrics.ndjson (the history). What the
 * daemon wrote itself may still have been damaged or edited: a job whose
 * files are damaged or unsafe is kept, failed and marked damaged, with the
 * reason as its error (its id is never given again); a torn or repeated
 * metrics line is repaired and the file rewritten; a running job comes
 * back queued, and the history of one that can run again is cut back to
 * its checkpoint. A folder name the daemon never gives is left alone.
 * next-id keeps the counter past every id ever given.
 *
 * Loop thread only, at start.
 */
#include "jobs/queue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/path.h"
#include "log.h"
#include "jobs/jobfiles.h"
#include "jobs/jobstate.h"
#include "proto/params.h"
#include "usertext.h"
#include "util/image.h"
#include "jobs/queue_internal.h"

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

/* Reads metrics.ndjson into the history; returns 1 when the file needs
 * rewriting (a torn last line, epochs repeated), -1 (why set) when a line
 * other than a torn last one is damaged. A missing file is an empty
 * history. */
static int load_metrics(struct queue *q, struct job *job, char *why,
			size_t whylen)
{
	struct nn_metrics *lines;
	double *times;
	int n, repair;
	if (jobfiles_metrics_load(q->jobs_dir, job->id, &lines, &times, &n,
				  &repair, why, whylen))
		return -1;
	for (int i = 0; i < n; i++) {
		if (lines[i].epoch <= job_epoch(job)) {
			queue_hist_cut(job, lines[i].epoch - 1);
			repair = 1;
		}
		queue_hist_push(job, &lines[i], times[i]);
	}
	free(lines);
	free(times);
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

/* The table's words request.json gives (precision, dilations and the
 * recipe's) set on the config; a damaged one leaves the default. */
static void load_words(const cJSON *req, struct job_params *p)
{
	char err[256];
	for (int i = PARAM_FIRST_WORD; i < PARAM_COUNT; i++) {
		char word[32];
		get_str(req, param_table[i].key, word, sizeof(word));
		if (word[0] && !nn_option_set(&p->cfg, (enum param_id)i, word,
					      "", err, sizeof(err)))
			p->words_given |= 1u << (i - PARAM_FIRST_WORD);
	}
}

/* request.json's numbers, as bad_request_field reads them */
enum request_number {
	REQUEST_EPOCHS,
	REQUEST_WIDTH,
	REQUEST_SEED,
	REQUEST_PRIORITY,
	REQUEST_UID,
	REQUEST_PID,
	REQUEST_IMAGE_WIDTH,
	REQUEST_IMAGE_HEIGHT,
	REQUEST_NUMBERS
};

/* The first field of request.json that is missing, of another type or
 * out of range, or NULL when every one holds; v gets the numbers. */
static const char *bad_request_field(const cJSON *req, const struct job *job,
				     double v[REQUEST_NUMBERS])
{
	const struct {
		const char *key;
		double lo, hi;
	} fields[REQUEST_NUMBERS] = {
		[REQUEST_EPOCHS] = { "epochs", 1,
				     param_table[PARAM_EPOCHS].max },
		[REQUEST_WIDTH] = { "width", 0, param_table[PARAM_WIDTH].max },
		[REQUEST_SEED] = { "seed", 0, param_table[PARAM_SEED].max },
		[REQUEST_PRIORITY] = { "priority",
				       param_table[PARAM_PRIORITY].min,
				       param_table[PARAM_PRIORITY].max },
		[REQUEST_UID] = { "uid", 0, 4294967295.0 },
		[REQUEST_PID] = { "pid", 0, 4294967295.0 },
		[REQUEST_IMAGE_WIDTH] = { "image_width", 1, IMAGE_MAX_SIDE },
		[REQUEST_IMAGE_HEIGHT] = { "image_height", 1, IMAGE_MAX_SIDE },
	};
	char err[256];
	for (size_t i = 0; i < REQUEST_NUMBERS; i++)
		if (get_exact(req, fields[i].key, fields[i].lo, fields[i].hi,
			      &v[i]))
			return fields[i].key;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
	const cJSON *lr = cJSON_GetObjectItemCaseSensitive(req, "lr");
	if (!cJSON_IsString(id) || strcmp(id->valuestring, job->id))
		return "id";
	if (!cJSON_IsString(name) || strlen(name->valuestring) >= JOB_NAME_MAX)
		return "name";
	if (!cJSON_IsNumber(lr) || !(lr->valuedouble >= 0) ||
	    !(lr->valuedouble < 1)) /* 0: NN_LR_AUTO, by width */
		return "lr";
	/* 0 (the device's default, chosen at the first run) or the wire's */
	if (v[REQUEST_WIDTH] &&
	    param_check(PARAM_WIDTH, v[REQUEST_WIDTH], "", err, sizeof(err)))
		return "width";
	if (v[REQUEST_IMAGE_WIDTH] * v[REQUEST_IMAGE_HEIGHT] > IMAGE_MAX_PIXELS)
		return "image_width";
	return NULL;
}

/* The checked fields of request.json into the job, over the engine's
 * defaults; the optional ones (batch, target_psnr, source, retry_of,
 * key) as the wire allows them, else left empty. */
static void take_request(struct job *job, const cJSON *req,
			 const double v[REQUEST_NUMBERS])
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
	snprintf(job->p.name, sizeof(job->p.name), "%s", name->valuestring);
	usertext_sanitize(job->p.name);
	nn_config_defaults(&job->p.cfg, 0);
	job->p.cfg.epochs = (int)v[REQUEST_EPOCHS];
	job->p.cfg.nf = (int)v[REQUEST_WIDTH];
	job->p.cfg.seed = (uint64_t)v[REQUEST_SEED];
	job->p.priority = (int)v[REQUEST_PRIORITY];
	job->uid = (uid_t)v[REQUEST_UID];
	job->pid = (pid_t)v[REQUEST_PID];
	job->img_w = (int)v[REQUEST_IMAGE_WIDTH];
	job->img_h = (int)v[REQUEST_IMAGE_HEIGHT];
	job->p.cfg.lr =
	    cJSON_GetObjectItemCaseSensitive(req, "lr")->valuedouble;
	get_str(req, "batch", job->p.batch, sizeof(job->p.batch));
	if (job->p.batch[0] && !job_batch_valid(job->p.batch))
		job->p.batch[0] = '\0';
	job->p.target_psnr = get_num(req, "target_psnr", 0);
	if (!(job->p.target_psnr >= 0 &&
	      job->p.target_psnr <= param_table[PARAM_TARGET_PSNR].max))
		job->p.target_psnr = 0;
	get_str(req, "source", job->p.source, sizeof(job->p.source));
	get_str(req, "retry_of", job->p.retry_of, sizeof(job->p.retry_of));
	if (!jobfiles_number(job->p.retry_of, strlen(job->p.retry_of)))
		job->p.retry_of[0] = '\0';
	get_str(req, "key", job->p.key, sizeof(job->p.key));
}

/* What was left to the daemon (p->defaults): the names request.json's
 * "defaults" lists; a request saved before "defaults" was, what still
 * holds its placeholder. */
static void load_defaults(const cJSON *req, struct job_params *p)
{
	const cJSON *defaults =
	    cJSON_GetObjectItemCaseSensitive(req, "defaults");
	for (const cJSON *d = cJSON_IsArray(defaults) ? defaults->child : NULL;
	     d; d = d->next)
		for (int i = 0; i < 3; i++)
			if (cJSON_IsString(d) &&
			    !strcmp(d->valuestring, job_default_names[i]))
				p->defaults |= 1u << i;
	if (!cJSON_IsArray(defaults))
		p->defaults =
		    (!p->cfg.nf ? JOB_DEFAULT_WIDTH : 0) |
		    (p->cfg.lr == NN_LR_AUTO ? JOB_DEFAULT_LR : 0) |
		    (p->cfg.recipe.warmup == NN_WARMUP_AUTO ? JOB_DEFAULT_WARMUP
							    : 0);
}

/* request.json: every field present, of its type and in its range. */
static int load_request(struct queue *q, struct job *job, char *why,
			size_t whylen)
{
	char path[4096], err[256];
	double v[REQUEST_NUMBERS];
	queue_job_path(q, job, JOBFILE_REQUEST, path, sizeof(path));
	cJSON *req = jobfiles_read_json(q->jobs_dir, job->id, JOBFILE_REQUEST);
	if (!req || !cJSON_IsObject(req)) {
		snprintf(why, whylen, "%.300s is %s", path,
			 errno == ENOENT && !req
			     ? "missing"
			     : "damaged: not a JSON object");
		cJSON_Delete(req);
		return -1;
	}
	const char *bad = bad_request_field(req, job, v);
	if (bad) {
		snprintf(why, whylen,
			 "%.300s is damaged: \"%s\" is missing or "
			 "out of range",
			 path, bad);
		cJSON_Delete(req);
		return -1;
	}
	take_request(job, req, v);
	/* jobs saved before recipes were recorded train as they always did:
	 * Adam, a cosine schedule, no average (and what they were given).
	 * A recipe that cannot be read fails the job: training it with
	 * another recipe would give other weights under the same settings. */
	nn_recipe_version1(&job->p.cfg.recipe);
	if (job_recipe_read(req, &job->p.cfg.recipe, err, sizeof(err))) {
		snprintf(why, whylen,
			 "%.200s is damaged: its recipe is not "
			 "readable (%.200s)",
			 path, err);
		cJSON_Delete(req);
		return -1;
	}
	load_defaults(req, &job->p);
	load_words(req, &job->p);
	job->has_init =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "init"));
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
		s = queue_state_parse(v->valuestring);
	double prio = job->p.priority, epochs = job->p.cfg.epochs;
	if (s < 0 ||
	    (cJSON_GetObjectItem(st, "priority") &&
	     get_exact(st, "priority", param_table[PARAM_PRIORITY].min,
		       param_table[PARAM_PRIORITY].max, &prio)) ||
	    (cJSON_GetObjectItem(st, "epochs") &&
	     get_exact(st, "epochs", 1, param_table[PARAM_EPOCHS].max,
		       &epochs))) {
		snprintf(why, whylen, "%.300s is %s", path,
			 !st && errno == ENOENT
			     ? "missing though the job has run"
			     : "damaged: no valid state, priority or epochs");
		cJSON_Delete(st);
		return -1;
	}
	job->state = (enum job_state)s;
	job->p.priority = (int)prio;
	job->p.cfg.epochs = (int)epochs;
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
	if (job->reached_epoch > job->p.cfg.epochs)
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
	struct job *job = queue_job_alloc(number);
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
	if (repair && queue_rewrite_metrics(q, job))
		job->metrics_behind = 1;
	if (job->state == JOB_QUEUED || job->state == JOB_RUNNING ||
	    job->state == JOB_FAILED) {
		/* Epochs after the last checkpoint will be run again: forget
		 * them now, so that nobody is shown an epoch twice. */
		int epoch = jobfiles_checkpoint_epoch(q->jobs_dir, job->id);
		if (epoch >= 0 && epoch < job_epoch(job))
			queue_truncate(q, job, epoch);
	}
	struct jobstate_step step =
	    jobstate_step(job->state, JOBSTATE_RESTARTED);
	if (step.kind == JOBSTATE_TO) { /* a run cut short: runs again */
		job->state = step.to;
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
		uint64_t number =
		    jobfiles_number(de->d_name, strlen(de->d_name));
		if (!number) {
			log_warn("%s/%s is not a job folder (job ids are 1 to "
				 "%llu); left alone",
				 q->jobs_dir, de->d_name, JOB_NUMBER_MAX);
			continue;
		}
		/* counted even if it cannot be loaded: never given again */
		if (number >= q->next_number)
			q->next_number = number + 1;
		struct stat st;
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			0 &&
		    S_ISDIR(st.st_mode))
			jobfiles_remove_interrupted_writes(q->jobs_dir,
							   de->d_name);
		struct job *job = load_job(q, number);
		if (job)
			queue_insert_sorted(q, job);
	}
	closedir(dir);
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
				 "job folders give the next id",
				 path, JOB_NUMBER_MAX);
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
