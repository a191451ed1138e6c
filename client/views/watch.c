/*
 * watch.c - following jobs until they end, and showing their progress.
 *
 * How it works: each job is read once with job.get (name, state, target
 * epochs), then subscribed to with job.subscribe, which replays the
 * metrics the job already has and then streams every new epoch as
 * job.progress and every change of state as job.state. The loop below
 * waits for notifications with a timeout and folds them into one struct
 * wjob per job. Because a notification can be missed (a daemon that thins
 * a slow reader's stream, or a job that ends while we subscribe), a job
 * that has been quiet for a while is asked for again with job.get: the
 * watch ends on the job's real state, never on a guess. When the daemon
 * goes away (a restart), the jobs go on in its state folder: the watch
 * connects again for up to --timeout seconds and picks them up where it
 * left them (job.subscribe with "since" the last epoch seen).
 *
 * Ctrl-C while following says that the jobs go on in the daemon and how
 * to watch them again (exit status 130).
 * This file knows nothing of sockets: it calls and reads through client.h
 * and conn.h. What is shown, and how, is watch-show.c's.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/protocol.h"
#include "views/watch-internal.h"

/* wait: no subscription, a poll of the jobs' states instead. */
static int is_wait(enum watch_mode mode)
{
	return mode == WATCH_QUIET || mode == WATCH_SILENT;
}

enum watch_mode watch_pick_mode(const struct client *cl, FILE *out)
{
	const char *term = getenv("TERM");

	if (cl->json)
		return WATCH_JSON;
	if (!isatty(fileno(out)) || (term && !strcmp(term, "dumb")))
		return WATCH_PLAIN;
	return WATCH_LIVE;
}

/* ---------------------------------------------------------------------- */
/* Folding news into a job                                                 */
/* ---------------------------------------------------------------------- */

static void set_state(struct wjob *j, const char *state)
{
	int running = !strcmp(state, S_RUNNING);
	/* the clock of its run goes on only while it runs */
	if (j->run_at > 0 && !running)
		j->run_s += now_s() - j->run_at;
	if (running && j->run_at <= 0)
		j->run_at = now_s();
	else if (!running)
		j->run_at = 0;
	snprintf(j->state, sizeof(j->state), "%s", state);
	j->ended = job_state_ended(state) || !strcmp(state, "removed");
}

static void set_error(struct wjob *j, const char *error)
{
	if (!error)
		return;
	free(j->error);
	j->error = strdup(error);
}

/* A job object (job.get, job.list): name, state, epochs, latest metrics. */
static void fold_job(struct wjob *j, const cJSON *job)
{
	int epoch = (int)job_num(job, "epoch", 0);

	snprintf(j->name, sizeof(j->name), "%s", job_str(job, "name", ""));
	set_state(j, job_str(job, "state", "?"));
	set_error(j, job_str(job, "error", NULL));
	j->epochs = (int)job_num(job, "epochs", j->epochs);
	j->target_psnr = job_num(job, "target_psnr", 0);
	if (epoch >= j->epoch) {
		j->epoch = epoch;
		/* a daemon without live_psnr called the live figure psnr */
		j->psnr =
		    job_num(job,
			    cJSON_GetObjectItemCaseSensitive(job, "live_psnr")
				? "live_psnr"
				: "psnr",
			    j->psnr);
		j->mse = job_num(job, "mse", j->mse);
		/* the last epoch's rate; "lr" is the peak the job was
		 * given, which the schedule leaves after warmup */
		j->lr = job_num(job, "live_lr", j->lr);
		if (epoch > 0)
			j->have_metrics = 1;
	}
	if (cJSON_GetObjectItemCaseSensitive(job, "live_psnr"))
		j->best = job_num(job, "psnr", j->best); /* the model's */
	else
		j->best = fmax(j->best, job_num(job, "best_psnr", j->best));
	j->model_psnr = job_num(job, "model_psnr", j->model_psnr);
	if (isfinite(job_num(job, "seconds", NAN))) {
		j->run_s = job_num(job, "seconds", 0);
		j->run_at = is_running_state(j) ? now_s() : 0;
	}
	cJSON_Delete(j->last);
	j->last = cJSON_Duplicate(job, 1);
}

static void fold_progress(struct wjob *j, const cJSON *p)
{
	int epoch = (int)job_num(p, "epoch", 0);
	double psnr = job_num(p, "psnr", NAN), ms = job_num(p, "ms", NAN);

	if (epoch < j->epoch)
		return; /* an old point, already shown */
	j->epoch = epoch;
	j->psnr = psnr;
	j->mse = job_num(p, "mse", NAN);
	j->lr = job_num(p, "lr", NAN);
	/* the best model's PSNR; a daemon without it: the best epoch's */
	double best = job_num(p, "psnr_best", psnr);
	if (isfinite(best) && (!j->have_metrics || best > j->best))
		j->best = best;
	if (isfinite(ms) && ms > 0)
		j->ms = j->ms > 0 ? j->ms + MS_SMOOTHING * (ms - j->ms) : ms;
	j->have_metrics = 1;
	fmt_series_add(&j->series, epoch, (float)psnr);
	/* Progress of a job we think is queued means it runs now. */
	if (!strcmp(j->state, S_QUEUED))
		set_state(j, S_RUNNING);
}

static struct wjob *find_job(struct watch *w, const cJSON *id)
{
	for (int i = 0; i < w->n; i++)
		if (job_id_equal(w->jobs[i].id, id))
			return &w->jobs[i];
	return NULL;
}

/* job.get for one job. A job that no longer exists counts as ended. */
static int ask_job(struct watch *w, struct wjob *j)
{
	cJSON *job = NULL;
	int rc;

	j->asked_at = now_s();
	rc = client_call(w->cl, M_JOB_GET, job_params(j->id), &job);
	if (rc == CLIENT_ERR_RPC &&
	    conn_last_error(w->cl->conn, NULL, NULL) == RPC_JOB_NOT_FOUND &&
	    j->state[0]) {
		set_state(j, "removed");
		set_error(j, "the job was removed while being watched");
		return 0;
	}
	if (rc < 0)
		return rc;
	fold_job(j, job);
	cJSON_Delete(job);
	watch_show_changed(w);
	return 0;
}

/* Whether wait reads its jobs with one job.list, not a job.get each. */
static int many_to_list(const struct watch *w)
{
	return is_wait(w->mode) && w->n > LIST_POLL_OVER;
}

/* One job.list of our jobs (wait with many jobs): those still going,
 * or every one (all: the first read and the last, for the summary). A
 * job the list lacks is asked for alone (it may have been removed). The
 * list comes in the daemon's order, which is mostly ours: each job is
 * looked for first where the last one found was followed. */
static int ask_all(struct watch *w, int all)
{
	cJSON *list = NULL;
	const cJSON *job;
	char *seen = calloc((size_t)w->n + 1, 1);
	int rc, at = 0;

	if (!seen)
		return ERR_NOMEM;
	/* only ours (not the daemon's whole history), those still going */
	cJSON *params = cJSON_CreateObject();
	cJSON *ids = params ? cJSON_AddArrayToObject(params, "jobs") : NULL;
	for (int i = 0; ids && i < w->n; i++)
		if (all || !w->jobs[i].ended)
			cJSON_AddItemToArray(ids,
					     cJSON_Duplicate(w->jobs[i].id, 1));
	rc = client_call(w->cl, M_JOB_LIST, params, &list);
	if (rc < 0) {
		free(seen);
		return rc;
	}
	for (int i = 0; i < w->n; i++)
		w->jobs[i].asked_at = now_s();
	cJSON_ArrayForEach(job, jobs_of_list(list))
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		struct wjob *j = at < w->n && job_id_equal(w->jobs[at].id, id)
				     ? &w->jobs[at]
				     : find_job(w, id);
		if (!j)
			continue;
		at = (int)(j - w->jobs) + 1;
		seen[j - w->jobs] = 1;
		if (all || !j->ended) {
			fold_job(j, job);
			watch_show_changed(w);
		}
	}
	cJSON_Delete(list);
	for (int i = 0; i < w->n && rc >= 0; i++)
		if (!seen[i] && (all || !w->jobs[i].ended))
			rc = ask_job(w, &w->jobs[i]);
	free(seen);
	return rc < 0 ? rc : 0;
}

/* ---------------------------------------------------------------------- */
/* The loop                                                                */
/* ---------------------------------------------------------------------- */

static void on_notification(struct watch *w, const cJSON *msg)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	struct wjob *j;

	j = find_job(w, cJSON_GetObjectItemCaseSensitive(params, "job"));
	if (!j || !cJSON_IsString(method))
		return;
	w->news_at = j->news_at = now_s();
	watch_show_notification(w, msg);

	if (!strcmp(method->valuestring, N_JOB_PROGRESS)) {
		if (j->replay_left > 0)
			j->replay_left--;
		fold_progress(j, params);
		watch_show_progress(w, j);
	} else if (!strcmp(method->valuestring, N_JOB_STATE)) {
		const char *state = job_str(params, "state", NULL);
		if (!state)
			return;
		set_state(j, state);
		set_error(j, job_str(params, "error", NULL));
		/* done: the exported model's PSNR, the one export reports */
		j->best = job_num(params, "psnr", j->best);
		j->model_psnr = job_num(params, "psnr", j->model_psnr);
		watch_show_state(w, j);
	}
	watch_show_changed(w);
}

/* ---------------------------------------------------------------------- */
/* Ctrl-C                                                                  */
/* ---------------------------------------------------------------------- */

/* Written by the SIGINT handler, which may only write(2) and _exit. */
static char interrupt_text[1024];
static size_t interrupt_len;

static void on_interrupt(int sig)
{
	ssize_t ignored = write(2, interrupt_text, interrupt_len);
	(void)ignored;
	_exit(130);
}

/* What Ctrl-C says: the jobs go on, and the command that watches them
 * again (by their batch when they are one, else their ids). */
static void prepare_interrupt(const struct watch *w)
{
	const char *batch = w->n > 1 && w->jobs[0].last
				? job_str(w->jobs[0].last, "batch", NULL)
				: NULL;
	char ids[512] = "";
	int going = 0;

	for (int i = 0; i < w->n; i++) {
		const char *b = w->jobs[i].last
				    ? job_str(w->jobs[i].last, "batch", NULL)
				    : NULL;
		if (!b || !batch || strcmp(b, batch))
			batch = NULL;
		going += !w->jobs[i].ended;
	}
	for (int i = 0; i < w->n && strlen(ids) + 80 < sizeof(ids); i++)
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s",
			 i ? " " : "", w->jobs[i].idtext);
	if (!batch && strlen(ids) + 80 >= sizeof(ids))
		strcat(ids, " ...");
	snprintf(
	    interrupt_text, sizeof(interrupt_text),
	    "\nvkinrctl: stopped watching; %s %s on in vkinrd.\n"
	    "Watch again: vkinrctl%s%s watch %s\n"
	    "(to stop %s: vkinrctl cancel %s)\n",
	    going == 1 ? "the job" : "the jobs", going == 1 ? "goes" : "go",
	    w->cl->socket_flag ? " --socket " : "",
	    w->cl->socket_flag ? w->cl->socket_flag : "", batch ? batch : ids,
	    going == 1 ? "it" : "them", batch ? batch : ids);
	interrupt_len = strlen(interrupt_text);
}

/* Every job has ended and its whole replayed history has arrived (the
 * daemon paces a long replay to the reader, behind its other answers). */
static int all_ended(const struct watch *w)
{
	for (int i = 0; i < w->n; i++)
		if (!w->jobs[i].ended || w->jobs[i].replay_left > 0)
			return 0;
	return 1;
}

/* Folds every notification already received, without waiting. */
static int drain(struct watch *w)
{
	cJSON *msg;
	int rc;

	for (;;) {
		if ((rc = conn_next_notification(w->cl->conn, 0, &msg)) < 0)
			return rc;
		if (!msg)
			return 0;
		on_notification(w, msg);
		cJSON_Delete(msg);
	}
}

/* Asks again about jobs that have been quiet (or, for wait, every poll). */
static int ask_quiet_ones(struct watch *w)
{
	double now = now_s();
	double after = is_wait(w->mode) ? WAIT_POLL : QUIET_AFTER;
	int pending = 0, rc;

	for (int i = 0; i < w->n; i++)
		pending += !w->jobs[i].ended;
	if (is_wait(w->mode) && pending > LIST_POLL_OVER) {
		if (now - w->jobs[0].asked_at < WAIT_LIST_POLL)
			return 0;
		return ask_all(w, 0);
	}
	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		if (j->ended || now - j->asked_at < after ||
		    now - j->news_at < after)
			continue;
		if ((rc = ask_job(w, j)) < 0)
			return rc;
		watch_show_state(w, j);
	}
	return 0;
}

static int next_timeout_ms(const struct watch *w)
{
	double wait = many_to_list(w)    ? WAIT_LIST_POLL
		      : is_wait(w->mode) ? WAIT_POLL
					 : QUIET_AFTER / 2;

	return (int)(watch_show_wait(w, wait) * 1000);
}

static int follow(struct watch *w)
{
	cJSON *msg;
	int rc;

	watch_show_start(w);
	if (w->mode == WATCH_LIVE || w->mode == WATCH_PLAIN) {
		prepare_interrupt(w);
		signal(SIGINT, on_interrupt);
	}
	while (!all_ended(w)) {
		rc = conn_next_notification(w->cl->conn, next_timeout_ms(w),
					    &msg);
		if (rc < 0)
			return rc;
		if (msg) {
			on_notification(w, msg);
			cJSON_Delete(msg);
		}
		if ((rc = ask_quiet_ones(w)) < 0)
			return rc;
		watch_show_tick(w);
	}
	return drain(w);
}

/* job.subscribe for every job (again: only those still going, from the
 * epoch already seen, after a reconnection). */
static int subscribe_all(struct watch *w, int again)
{
	cJSON *result = NULL, *params;
	int rc;

	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		if (again && j->ended)
			continue;
		params = job_params(j->id);
		if (again && params)
			cJSON_AddNumberToObject(params, "since", j->epoch);
		rc = client_call(w->cl, M_JOB_SUBSCRIBE, params, &result);
		const cJSON *replay =
		    cJSON_GetObjectItemCaseSensitive(result, "replay");
		if (rc >= 0 && cJSON_IsNumber(replay))
			j->replay_left = replay->valueint;
		cJSON_Delete(result);
		if (rc < 0)
			return rc;
	}
	/* A round trip after the subscriptions, so that the replayed history
	 * of jobs that have already ended is in before we decide we are
	 * done: the daemon answers in order. */
	if (w->n > 0 && all_ended(w))
		return ask_job(w, &w->jobs[0]);
	return 0;
}

/*
 * One connection's worth of following: reads every job (those still going,
 * again), subscribes, follows until all have ended, and reads the ended
 * ones once more for the summary and error texts. ERR_IO: the daemon went
 * away (the caller reconnects).
 */
static int follow_all(struct watch *w, int again)
{
	int rc = 0;

	if (many_to_list(w))
		rc = ask_all(w, 1);
	for (int i = 0; i < w->n && rc == 0 && !many_to_list(w); i++)
		if (!again || !w->jobs[i].ended)
			rc = ask_job(w, &w->jobs[i]);
	if (rc == 0 && !is_wait(w->mode))
		rc = subscribe_all(w, again);
	w->news_at = now_s();
	for (int i = 0; i < w->n; i++)
		w->jobs[i].news_at = w->news_at;
	if (rc == 0)
		rc = follow(w);
	/* Fresh job objects for the summary, and error texts. */
	if (rc == 0 && many_to_list(w))
		return ask_all(w, 1);
	for (int i = 0; i < w->n && rc == 0; i++)
		if (is_wait(w->mode) ||
		    (strcmp(w->jobs[i].state, S_DONE) && !w->jobs[i].error))
			rc = ask_job(w, &w->jobs[i]);
	return rc;
}

/*
 * The daemon went away (a restart, an upgrade): connects again, trying for
 * up to cl->reconnect_s seconds, and says so where it does not spoil the
 * view. The jobs go on in the daemon's state; follow_all picks them up.
 */
static int reconnect(struct watch *w)
{
	double until = now_s() + w->cl->reconnect_s;
	int rc;

	if (w->mode == WATCH_PLAIN || is_wait(w->mode))
		client_warn("lost vkinrd (%s); reconnecting for up to %.0f s",
			    conn_why(w->cl->conn), w->cl->reconnect_s);
	/* the live view: what the jobs do is not known until the daemon is
	 * back, so no "running" and no ETA frozen on the screen meanwhile */
	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		if (j->run_at > 0)
			j->run_s += now_s() - j->run_at;
		j->run_at = 0;
		j->offline = 1;
	}
	watch_show_redraw(w);
	conn_close(w->cl->conn);
	w->cl->conn = NULL;
	for (;;) {
		if ((rc = client_connect(w->cl)) == 0) {
			for (int i = 0; i < w->n; i++)
				w->jobs[i].offline = 0;
			watch_show_changed(w);
			return 0;
		}
		if (now_s() >= until)
			return rc;
		usleep(200 * 1000);
	}
}

int watch_jobs(struct client *cl, const cJSON *ids, enum watch_mode mode,
	       FILE *out)
{
	struct watch w = { .cl = cl, .mode = mode, .out = out };
	const cJSON *id;
	int rc = 0, status = CLIENT_EXIT_OK, i = 0, again = 0;

	w.n = cJSON_GetArraySize(ids);
	w.jobs = calloc(w.n > 0 ? w.n : 1, sizeof(*w.jobs));
	if (!w.jobs)
		return client_fail(cl, ERR_NOMEM, NULL);
	cJSON_ArrayForEach(id, ids)
	{
		struct wjob *j = &w.jobs[i++];
		j->id = cJSON_Duplicate(id, 1);
		job_id_text(id, j->idtext, sizeof(j->idtext));
		watch_show_init_job(j);
		j->psnr = j->mse = j->lr = j->model_psnr = NAN;
		j->best = -INFINITY;
		fmt_series_init(&j->series);
	}

	for (;;) {
		rc = follow_all(&w, again);
		if (rc == CLIENT_ERR_RPC &&
		    conn_last_error(cl->conn, NULL, NULL) == RPC_SHUTTING_DOWN)
			rc = ERR_IO; /* it is going away: as if gone */
		if (rc != ERR_IO || !cl->conn || cl->reconnect_s <= 0)
			break;
		if ((rc = reconnect(&w)) < 0)
			break;
		again = 1;
	}
	signal(SIGINT, SIG_DFL);
	if (rc < 0)
		status = client_fail(cl, rc, NULL);
	if (rc == 0) {
		watch_show_end(&w);
		for (i = 0; i < w.n; i++)
			if (strcmp(w.jobs[i].state, S_DONE))
				status = CLIENT_EXIT_JOB_FAILED;
	}

	for (i = 0; i < w.n; i++) {
		cJSON_Delete(w.jobs[i].id);
		cJSON_Delete(w.jobs[i].last);
		free(w.jobs[i].error);
	}
	free(w.jobs);
	return status;
}
