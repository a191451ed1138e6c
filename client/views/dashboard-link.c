/*
 * dashboard-link.c - the dashboard's side of the daemon: one connection to
 * vkinrd's socket, made as the user who runs the dashboard (so the
 * daemon's per-uid rules apply as to any client), that follows every job.
 *
 * A thread asks for job.list every DASH_LIST_MS, subscribes to each job it
 * has not yet followed on this connection (job.subscribe, with "since" the
 * last epoch it holds, so a reconnection replays only what is new) and
 * folds the job.progress and job.state notifications into the store: the
 * job objects and every epoch's metrics. What changes becomes an event
 * for the page's streams (dashboard-http.c): "job" (a job object),
 * "progress" (one live epoch: epoch, psnr, live, mse, lr, ms, t the
 * training seconds so far, time the wall clock's), "history" (a job's
 * epochs as arrays of the same keys, once its replay
 * has arrived), "removed", and "daemon" (connected or not, and why). When
 * the daemon goes away (a restart), the link says so and connects again
 * every second; the store keeps what it had, and a resumed job's epochs
 * that are run again replace those of the same numbers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/client.h"
#include "core/conn.h"
#include "views/dashboard.h"
#include "core/jobs.h"
#include "proto/errors.h"
#include "proto/protocol.h"

/* ---------------------------------------------------------------------- */
/* Text                                                                    */
/* ---------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* A string as JSON, quoted and escaped. */
static void sb_json_str(struct sbuf *b, const char *s)
{
	cJSON *v = cJSON_CreateString(s);
	char *json = v ? cJSON_PrintUnformatted(v) : NULL;
	if (json)
		sb_str(b, json);
	else
		b->oom = 1;
	free(json);
	cJSON_Delete(v);
}

/* A number as JSON: %.7g, or null when it is not finite. */
static void sb_num(struct sbuf *b, double v)
{
	char num[40];
	if (isfinite(v))
		snprintf(num, sizeof(num), "%.7g", v);
	else
		snprintf(num, sizeof(num), "null");
	sb_str(b, num);
}

/* A Unix time, to the millisecond (%.7g would round it to 100 s). */
static void sb_time(struct sbuf *b, double v)
{
	char num[40];
	if (isfinite(v))
		snprintf(num, sizeof(num), "%.3f", v);
	else
		snprintf(num, sizeof(num), "null");
	sb_str(b, num);
}

/* The buffer's text, handed over (NULL when out of memory). */
static char *sb_take(struct sbuf *b)
{
	if (b->oom || !b->p) {
		free(b->p);
		return NULL;
	}
	return b->p;
}

/* One SSE frame: "id: SEQ\nevent: NAME\ndata: JSON\n\n". JSON as cJSON
 * prints it unformatted holds no line break. */
static void sb_frame(struct sbuf *b, unsigned long long seq, const char *name,
		     const char *json)
{
	char head[96];
	snprintf(head, sizeof(head), "id: %llu\nevent: %s\ndata: ", seq, name);
	sb_str(b, head);
	sb_str(b, json);
	sb_str(b, "\n\n");
}

/* ---------------------------------------------------------------------- */
/* The store                                                               */
/* ---------------------------------------------------------------------- */

struct dash_job *dash_find(struct dash *d, const char *id)
{
	for (int i = 0; i < d->njobs; i++)
		if (!strcmp(d->jobs[i].id, id))
			return &d->jobs[i];
	return NULL;
}

static struct dash_job *add_job(struct dash *d, const char *id)
{
	if (d->njobs >= DASH_MAX_JOBS)
		return NULL;
	if (d->njobs == d->capjobs) {
		int cap = d->capjobs ? d->capjobs * 2 : 64;
		struct dash_job *jobs = realloc(d->jobs, cap * sizeof(*jobs));
		if (!jobs)
			return NULL;
		d->jobs = jobs;
		d->capjobs = cap;
	}
	struct dash_job *j = &d->jobs[d->njobs++];
	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "%s", id);
	return j;
}

static void drop_job(struct dash *d, struct dash_job *j)
{
	cJSON_Delete(j->obj);
	free(j->pts);
	*j = d->jobs[--d->njobs];
}

/* With the lock held: adds an event (json consumed as text). */
static void emit(struct dash *d, const char *name, const char *json)
{
	struct sbuf b = { 0 };
	struct dash_event *e;

	if (!json)
		return;
	sb_frame(&b, d->next_seq, name, json);
	char *text = sb_take(&b);
	if (!text)
		return;
	e = &d->ring[d->next_seq % DASH_RING_EVENTS];
	free(e->text);
	e->seq = d->next_seq++;
	e->text = text;
	pthread_cond_broadcast(&d->changed);
}

static void emit_json(struct dash *d, const char *name, const cJSON *v)
{
	char *json = cJSON_PrintUnformatted(v);
	emit(d, name, json);
	free(json);
}

static char *daemon_json(struct dash *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "connected", d->connected);
	cJSON_AddStringToObject(o, "why", d->why);
	cJSON_AddStringToObject(o, "socket", d->socket);
	cJSON_AddNumberToObject(o, "uid", d->uid);
	char *json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json;
}

static void set_connected(struct dash *d, int connected, const char *why)
{
	pthread_mutex_lock(&d->lock);
	if (d->connected != connected || strcmp(d->why, why)) {
		d->connected = connected;
		snprintf(d->why, sizeof(d->why), "%s", why);
		char *json = daemon_json(d);
		emit(d, "daemon", json);
		free(json);
	}
	if (!connected)
		for (int i = 0; i < d->njobs; i++)
			d->jobs[i].subscribed = 0;
	pthread_mutex_unlock(&d->lock);
}

static void history_arrays(struct sbuf *b, const struct dash_job *j)
{
	static const char *const keys[] = { "epoch", "psnr", "live", "mse",
					    "lr",    "ms",   "t",    "time" };
	sb_str(b, "{\"job\":");
	sb_json_str(b, j->id);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		sb_str(b, ",\"");
		sb_str(b, keys[k]);
		sb_str(b, "\":[");
		for (int i = 0; i < j->n; i++) {
			const struct dash_point *p = &j->pts[i];
			double v[] = { p->epoch, p->psnr, p->live, p->mse,
				       p->lr,    p->ms,   p->t,    p->time };
			if (i)
				sb_str(b, ",");
			if (!strcmp(keys[k], "time"))
				sb_time(b, v[k]);
			else
				sb_num(b, v[k]);
		}
		sb_str(b, "]");
	}
	sb_str(b, "}");
}

char *dash_history_json(struct dash *d, const char *id)
{
	struct dash_job *j = dash_find(d, id);
	struct sbuf b = { 0 };

	if (!j)
		return NULL;
	history_arrays(&b, j);
	return sb_take(&b);
}

char *dash_jobs_json(struct dash *d)
{
	struct sbuf b = { 0 };
	char *daemon = daemon_json(d);

	sb_str(&b, "{\"daemon\":");
	sb_str(&b, daemon ? daemon : "null");
	free(daemon);
	sb_str(&b, ",\"jobs\":[");
	for (int i = 0, first = 1; i < d->njobs; i++) {
		char *obj = cJSON_PrintUnformatted(d->jobs[i].obj);
		if (!obj)
			continue;
		if (!first)
			sb_str(&b, ",");
		first = 0;
		sb_str(&b, obj);
		free(obj);
	}
	sb_str(&b, "]}");
	return sb_take(&b);
}

char *dash_snapshot(struct dash *d, unsigned long long *next)
{
	struct sbuf b = { 0 };
	char *jobs = dash_jobs_json(d);

	/* the frames of a snapshot carry the seq of the last event before
	 * it: a stream that reconnects with it resumes after the snapshot */
	unsigned long long seq = d->next_seq ? d->next_seq - 1 : 0;
	sb_frame(&b, seq, "reset", jobs ? jobs : "{}");
	free(jobs);
	for (int i = 0; i < d->njobs; i++) {
		struct sbuf h = { 0 };
		if (!d->jobs[i].n)
			continue;
		history_arrays(&h, &d->jobs[i]);
		char *text = sb_take(&h);
		if (text)
			sb_frame(&b, seq, "history", text);
		else
			b.oom = 1;
		free(text);
	}
	*next = d->next_seq;
	return sb_take(&b);
}

/* ---------------------------------------------------------------------- */
/* Folding the daemon's news in                                            */
/* ---------------------------------------------------------------------- */

/* obj's key becomes item (consumed), whether it was there or not (cJSON's
 * replace alone leaves a new key out, and item with it). */
static void set_item(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return;
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
	else if (!cJSON_AddItemToObject(obj, key, item))
		cJSON_Delete(item);
}

static void set_num(cJSON *obj, const char *key, double v)
{
	if (!isfinite(v))
		return;
	cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsNumber(old))
		cJSON_SetNumberValue(old, v);
	else
		set_item(obj, key, cJSON_CreateNumber(v));
}

static int fold_progress(struct dash *d, const cJSON *p)
{
	char id[32];
	struct dash_job *j;
	struct dash_point pt;
	int replayed = 0;

	job_id_text(cJSON_GetObjectItemCaseSensitive(p, "job"), id, sizeof(id));
	if (!(j = dash_find(d, id)))
		return 0;
	pt.epoch = (int)job_num(p, "epoch", 0);
	pt.live = job_num(p, "psnr", NAN);
	pt.psnr = job_num(p, "psnr_best", pt.live);
	pt.mse = job_num(p, "mse", NAN);
	pt.lr = job_num(p, "lr", NAN);
	pt.ms = job_num(p, "ms", NAN);
	pt.time = job_num(p, "time", NAN);
	/* an epoch run again (after a restart) replaces its first run */
	while (j->n > 0 && j->pts[j->n - 1].epoch >= pt.epoch)
		j->n--;
	pt.t = (j->n ? j->pts[j->n - 1].t : 0) +
	       (isfinite(pt.ms) ? pt.ms / 1000 : 0);
	if (j->n == j->cap) {
		int cap = j->cap ? j->cap * 2 : 256;
		struct dash_point *pts = realloc(j->pts, cap * sizeof(*pts));
		if (!pts)
			return ERR_NOMEM;
		j->pts = pts;
		j->cap = cap;
	}
	j->pts[j->n++] = pt;
	if (j->obj && pt.epoch >= job_num(j->obj, "epoch", 0)) {
		set_num(j->obj, "epoch", pt.epoch);
		set_num(j->obj, "psnr", pt.psnr);
		set_num(j->obj, "live_psnr", pt.live);
		set_num(j->obj, "mse", pt.mse);
		set_num(j->obj, "ms", pt.ms);
	}
	/* subscribed holds 1 + the epochs of its replay still to come: those
	 * are stored without an event each, and one "history" follows the
	 * last */
	if (j->subscribed > 1) {
		if (--j->subscribed == 1)
			replayed = 1;
		else
			return 0;
	}
	if (replayed) {
		char *h = dash_history_json(d, j->id);
		emit(d, "history", h);
		free(h);
		emit_json(d, "job", j->obj);
		return 0;
	}
	struct sbuf b = { 0 };
	sb_str(&b, "{\"job\":");
	sb_json_str(&b, j->id);
	sb_str(&b, ",\"epoch\":");
	sb_num(&b, pt.epoch);
	sb_str(&b, ",\"psnr\":");
	sb_num(&b, pt.psnr);
	sb_str(&b, ",\"live\":");
	sb_num(&b, pt.live);
	sb_str(&b, ",\"mse\":");
	sb_num(&b, pt.mse);
	sb_str(&b, ",\"lr\":");
	sb_num(&b, pt.lr);
	sb_str(&b, ",\"ms\":");
	sb_num(&b, pt.ms);
	sb_str(&b, ",\"t\":");
	sb_num(&b, pt.t);
	sb_str(&b, ",\"time\":");
	sb_time(&b, pt.time);
	sb_str(&b, "}");
	char *text = sb_take(&b);
	emit(d, "progress", text);
	free(text);
	return 0;
}

static void fold_state(struct dash *d, const cJSON *p)
{
	char id[32];
	struct dash_job *j;
	const char *state = job_str(p, "state", NULL), *error;

	job_id_text(cJSON_GetObjectItemCaseSensitive(p, "job"), id, sizeof(id));
	if (!(j = dash_find(d, id)) || !j->obj || !state)
		return;
	set_item(j->obj, "state", cJSON_CreateString(state));
	if ((error = job_str(p, "error", NULL)))
		set_item(j->obj, "error", cJSON_CreateString(error));
	emit_json(d, "job", j->obj);
}

static void fold(struct dash *d, const cJSON *msg)
{
	const char *method = job_str(msg, "method", "");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	pthread_mutex_lock(&d->lock);
	if (!strcmp(method, "job.progress"))
		fold_progress(d, params);
	else if (!strcmp(method, "job.state"))
		fold_state(d, params);
	pthread_mutex_unlock(&d->lock);
}

/* job.list: new jobs are added, changed ones sent, gone ones removed; the
 * ids still to follow on this connection are returned (an array). */
static cJSON *fold_list(struct dash *d, const cJSON *list)
{
	cJSON *todo = cJSON_CreateArray();
	const cJSON *obj;
	char id[32];

	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < d->njobs; i++)
		d->jobs[i].seen = 0;
	cJSON_ArrayForEach(obj, jobs_of_list(list))
	{
		job_id_text(cJSON_GetObjectItemCaseSensitive(obj, "id"), id,
			    sizeof(id));
		struct dash_job *j = dash_find(d, id);
		if (!j && !(j = add_job(d, id)))
			continue; /* past DASH_MAX_JOBS */
		j->seen = 1;
		/* the epochs the store has are newer than a list's */
		cJSON *copy = cJSON_Duplicate(obj, 1);
		if (copy && j->n &&
		    j->pts[j->n - 1].epoch >= job_num(copy, "epoch", 0)) {
			const struct dash_point *pt = &j->pts[j->n - 1];
			set_num(copy, "epoch", pt->epoch);
			set_num(copy, "psnr", pt->psnr);
			set_num(copy, "live_psnr", pt->live);
		}
		if (copy && !cJSON_Compare(copy, j->obj, 1)) {
			cJSON_Delete(j->obj);
			j->obj = copy;
			emit_json(d, "job", j->obj);
		} else {
			cJSON_Delete(copy);
		}
		if (!j->subscribed)
			cJSON_AddItemToArray(todo, cJSON_CreateString(j->id));
	}
	for (int i = d->njobs - 1; i >= 0; i--) {
		if (d->jobs[i].seen)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "job", d->jobs[i].id);
		emit_json(d, "removed", o);
		cJSON_Delete(o);
		drop_job(d, &d->jobs[i]);
	}
	pthread_mutex_unlock(&d->lock);
	return todo;
}

/* Follows one job on c: job.subscribe from the last epoch held. */
static int subscribe(struct dash *d, struct client_conn *c, const char *id)
{
	cJSON *params = cJSON_CreateObject(), *result = NULL;
	struct dash_job *j;
	int since = 0, rc;

	pthread_mutex_lock(&d->lock);
	if ((j = dash_find(d, id)) && j->n)
		since = j->pts[j->n - 1].epoch;
	pthread_mutex_unlock(&d->lock);
	cJSON_AddStringToObject(params, "job", id);
	if (since > 0)
		cJSON_AddNumberToObject(params, "since", since);
	rc = conn_call(c, M_JOB_SUBSCRIBE, params, &result);
	if (rc == CLIENT_ERR_RPC)
		return 0; /* removed meanwhile: the next list says so */
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&d->lock);
	if ((j = dash_find(d, id)))
		j->subscribed = 1 + (int)fmax(0, job_num(result, "replay", 0));
	pthread_mutex_unlock(&d->lock);
	cJSON_Delete(result);
	return 0;
}

static int refresh(struct dash *d, struct client_conn *c)
{
	cJSON *list = NULL, *todo;
	const cJSON *id;
	int rc;

	if ((rc = conn_call(c, M_JOB_LIST, cJSON_CreateObject(), &list)) < 0)
		return rc;
	todo = fold_list(d, list);
	cJSON_Delete(list);
	cJSON_ArrayForEach(id, todo)
	{
		if ((rc = subscribe(d, c, id->valuestring)) < 0)
			break;
	}
	cJSON_Delete(todo);
	return rc < 0 ? rc : 0;
}

/* ---------------------------------------------------------------------- */
/* The thread                                                              */
/* ---------------------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stopping(struct dash *d)
{
	pthread_mutex_lock(&d->lock);
	int s = d->stopping;
	pthread_mutex_unlock(&d->lock);
	return s;
}

/* Waits ms, or less when the dashboard stops. */
static void pause_ms(struct dash *d, int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&d->lock);
	while (!d->stopping &&
	       pthread_cond_timedwait(&d->changed, &d->lock, &until) == 0)
		;
	pthread_mutex_unlock(&d->lock);
}

static void *link_main(void *arg)
{
	struct dash *d = arg;
	struct client_conn *c = NULL;
	long long next_list = 0;
	char why[256];
	cJSON *msg;
	int rc;

	while (!stopping(d)) {
		if (!c) {
			if (conn_open(d->socket, d->timeout_ms, &c, why,
				      sizeof(why)) < 0) {
				char text[300];
				snprintf(text, sizeof(text),
					 "cannot reach vkinrd at %s (%s)",
					 d->socket, why);
				set_connected(d, 0, text);
				pause_ms(d, 1000);
				continue;
			}
			next_list = 0;
		}
		if (now_ms() >= next_list) {
			if ((rc = refresh(d, c)) < 0)
				goto lost;
			set_connected(d, 1, "");
			next_list = now_ms() + DASH_LIST_MS;
		}
		long long wait = next_list - now_ms();
		rc = conn_next_notification(c, wait > 500 ? 500 : (int)wait,
					    &msg);
		while (rc == 0 && msg) {
			fold(d, msg);
			cJSON_Delete(msg);
			rc = conn_next_notification(c, 0, &msg);
		}
		if (rc == 0)
			continue;
	lost:
		snprintf(why, sizeof(why), "lost vkinrd at %s (%s)", d->socket,
			 conn_why(c));
		set_connected(d, 0, why);
		conn_close(c);
		c = NULL;
		pause_ms(d, 1000);
	}
	conn_close(c);
	return NULL;
}

int dash_link_start(struct dash *d)
{
	if (pthread_create(&d->link_thread, NULL, link_main, d))
		return ERR_NOMEM;
	d->link_started = 1;
	return 0;
}

int dash_init(struct dash *d, const char *socket, int timeout_ms)
{
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->changed, NULL);
	d->uid = (unsigned)getuid();
	d->timeout_ms = timeout_ms;
	snprintf(d->why, sizeof(d->why), "connecting");
	d->socket = strdup(socket);
	return d->socket ? 0 : ERR_NOMEM;
}

void dash_finish(struct dash *d)
{
	pthread_mutex_lock(&d->lock);
	d->stopping = 1;
	pthread_cond_broadcast(&d->changed);
	pthread_mutex_unlock(&d->lock);
	if (d->link_started)
		pthread_join(d->link_thread, NULL);
	while (d->njobs)
		drop_job(d, &d->jobs[0]);
	free(d->jobs);
	for (int i = 0; i < DASH_RING_EVENTS; i++)
		free(d->ring[i].text);
	free(d->socket);
	pthread_cond_destroy(&d->changed);
	pthread_mutex_destroy(&d->lock);
}
