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
 * What is shown depends on where it goes:
 *   - a terminal: for several jobs a summary line first, then one line per
 *     job, running ones first, as many as fit in the terminal's rows less
 *     one (so drawing never scrolls); each line is cut to the columns it
 *     takes on screen (wide characters count two), its fields in order of
 *     use (epochs and their percentage, the model's PSNR, the time it has
 *     run, ETA, the sparkline in the room left, then the live PSNR, rate,
 *     mse, lr only when they fit: 80 columns keep the first five),
 *     redrawn in place at most every REDRAW_MS. Only a running
 *     job has a rate and an ETA; a job with a target PSNR has the ETA of
 *     the epochs its PSNR's recent rise needs to reach it, when fewer. The
 *     sparkline covers the run so far (fmt_series), replay included;
 *   - a pipe or file: appended lines, at most one per PLAIN_INTERVAL per
 *     job, and always the last point and the change of state;
 *   - --json: every notification as one JSON object on stdout, unthrottled;
 *   - wait: nothing until the end, then one summary per job.
 * The PSNR shown is the model's, that of the weights an export writes
 * (job objects' psnr, progress's psnr_best, a done job's state psnr); the
 * last epoch's own figure is labelled "live".
 * Ctrl-C while following says that the jobs go on in the daemon and how
 * to watch them again (exit status 130).
 * This file knows nothing of sockets: it calls and reads through client.h
 * and conn.h.
 */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "proto/errors.h"
#include "format.h"
#include "jobs.h"
#include "proto/protocol.h"
#include "watch.h"

#define SPARK_WIDTH 14 /* bars at most; fewer in a narrow terminal */
#define SPARK_MIN 6    /* ... and at least, or none */
#define REDRAW_MS 100
#define PLAIN_INTERVAL 1.0 /* seconds between two lines of one job */
#define QUIET_AFTER 2.0    /* seconds without news before asking job.get */
#define WAIT_POLL 0.5      /* how often `wait` asks */
#define LIST_POLL_OVER 8   /* past this many jobs, `wait` uses job.list */
#define MS_SMOOTHING 0.2   /* weight of a new epoch time in the average */

struct wjob {
	cJSON *id;          /* as the daemon spells it */
	char idtext[64];
	char name[96];
	char state[16];     /* a job state, or "removed" */
	char *error;        /* why it failed, when known */
	cJSON *last;        /* the latest job object from job.get */

	int epoch, epochs;  /* last finished, target */
	/* psnr: the last epoch's live figure; best: the model's, the
	 * weights an export writes (what every command calls PSNR) */
	double psnr, best, mse, lr;
	double model_psnr;  /* the exported model's, once known (NAN) */
	double run_s;       /* seconds it has run, as of run_at ... */
	double run_at;      /* ... when running (now_s), else 0 */
	double target_psnr; /* 0: none */
	double ms;          /* smoothed wall time of one epoch */
	int have_metrics;
	struct fmt_series series; /* PSNR over the run so far */
	int ended;
	int replay_left;    /* replayed epochs still to come (job.subscribe) */

	double printed_at;  /* plain mode: when its last line went out */
	int printed_epoch;  /* ... and which epoch it showed */
	char told[16];      /* plain mode: the last state it printed */
	double asked_at;    /* when job.get was last called for it */
	double news_at;     /* when a notification about it arrived */
};

struct watch {
	struct client *cl;
	enum watch_mode mode;
	FILE *out;
	struct wjob *jobs;
	int n;
	int lines;       /* lines the live view drew last time */
	int dirty;       /* the live view is out of date */
	double drawn_at; /* when the live view was last drawn */
	double news_at;  /* when the last notification arrived */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static double now_s(void);

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
	snprintf(j->state, sizeof j->state, "%s", state);
	j->ended = job_state_ended(state) || !strcmp(state, "removed");
}

static void set_error(struct wjob *j, const char *error)
{
	if (!error)
		return;
	free(j->error);
	j->error = strdup(error);
}

static int is_running_state(const struct wjob *j)
{
	return !j->ended && !strcmp(j->state, S_RUNNING);
}

/* A job object (job.get, job.list): name, state, epochs, latest metrics. */
static void fold_job(struct wjob *j, const cJSON *job)
{
	int epoch = (int)job_num(job, "epoch", 0);

	snprintf(j->name, sizeof j->name, "%s", job_str(job, "name", ""));
	set_state(j, job_str(job, "state", "?"));
	set_error(j, job_str(job, "error", NULL));
	j->epochs = (int)job_num(job, "epochs", j->epochs);
	j->target_psnr = job_num(job, "target_psnr", 0);
	if (epoch >= j->epoch) {
		j->epoch = epoch;
		/* a daemon without live_psnr called the live figure psnr */
		j->psnr = job_num(job, cJSON_GetObjectItemCaseSensitive(
					       job, "live_psnr") ? "live_psnr"
								 : "psnr",
				  j->psnr);
		j->mse = job_num(job, "mse", j->mse);
		j->lr = job_num(job, "lr", j->lr);
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
	w->dirty = 1;
	return 0;
}

/* One job.list for every job still going (wait with many jobs). */
static int ask_all(struct watch *w)
{
	cJSON *list = NULL;
	const cJSON *job;
	int rc;

	rc = client_call(w->cl, M_JOB_LIST, cJSON_CreateObject(), &list);
	if (rc < 0)
		return rc;
	for (int i = 0; i < w->n; i++)
		w->jobs[i].asked_at = now_s();
	cJSON_ArrayForEach(job, jobs_of_list(list)) {
		struct wjob *j = find_job(
			w, cJSON_GetObjectItemCaseSensitive(job, "id"));
		if (j && !j->ended)
			fold_job(j, job);
	}
	cJSON_Delete(list);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Showing                                                                 */
/* ---------------------------------------------------------------------- */

static int is_running(const struct wjob *j)
{
	return is_running_state(j);
}

/* Epochs still to go: to the end, or fewer when the PSNR's recent rise
 * reaches the target PSNR sooner. */
static double epochs_left(const struct wjob *j)
{
	double left = j->epochs - j->epoch, slope;

	if (j->target_psnr > 0 && isfinite(j->psnr)) {
		if (j->psnr >= j->target_psnr)
			return 0;
		slope = fmt_series_slope(&j->series);
		if (slope > 0)
			left = fmin(left, (j->target_psnr - j->psnr) / slope);
	}
	return left > 0 ? left : 0;
}

/* The PSNR of the weights an export writes: the exported model's once
 * done, the best model's before; NAN while there is none. */
static double model_psnr(const struct wjob *j)
{
	if (isfinite(j->model_psnr))
		return j->model_psnr;
	return j->have_metrics && isfinite(j->best) ? j->best : NAN;
}

static double run_seconds(const struct wjob *j)
{
	return j->run_s + (j->run_at > 0 ? now_s() - j->run_at : 0);
}

static double eta_seconds(const struct wjob *j)
{
	if (!is_running(j) || j->ms <= 0 || j->epochs <= 0)
		return NAN;
	return epochs_left(j) * j->ms / 1000.0;
}

/* Appends " field" to buf when it fits in cols columns in all. */
static void add_field(char *buf, size_t n, int cols, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_field(char *buf, size_t n, int cols, const char *fmt, ...)
{
	char field[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(field, sizeof field, fmt, ap);
	va_end(ap);
	if (cols > 0 && fmt_columns(buf) + 1 + fmt_columns(field) > (size_t)cols)
		return;
	if (strlen(buf) + 1 + strlen(field) < n) {
		strcat(buf, " ");
		strcat(buf, field);
	}
}

/* One live line for a job, at most cols columns (0: no limit). */
static void live_line(const struct wjob *j, char *buf, size_t n, int cols)
{
	char eta[32], spark[3 * SPARK_WIDTH + 1], num[32], head[64];

	buf[0] = '\0';
	fmt_append_cols(buf, n, j->idtext, 5);
	strcat(buf, " ");
	fmt_append_cols(buf, n, j->name, 12);
	snprintf(head, sizeof head, " %-9s %d/%d", j->state, j->epoch,
		 j->epochs);
	strncat(buf, head, n - strlen(buf) - 1);
	if (j->epochs > 0) {
		snprintf(head, sizeof head, " %d%%",
			 (int)(100.0 * j->epoch / j->epochs));
		strncat(buf, head, n - strlen(buf) - 1);
	}
	if (cols > 1)
		fmt_truncate(buf, (size_t)cols - 1);
	cols = cols > 1 ? cols - 1 : 0;
	if (isfinite(model_psnr(j)))
		add_field(buf, n, cols, "%s dB",
			  fmt_number("%.2f", model_psnr(j), num, sizeof num));
	if (j->error) {
		char *err = strdup(j->error);
		if (err && cols > 0 && fmt_columns(buf) + 2 < (size_t)cols)
			fmt_truncate(err, cols - fmt_columns(buf) - 1);
		if (err)
			add_field(buf, n, cols, "%s", err);
		free(err);
	}
	if (run_seconds(j) > 0 || is_running(j))
		add_field(buf, n, cols, "%s",
			  fmt_duration(run_seconds(j), num, sizeof num));
	if (is_running(j) && j->ms > 0)
		add_field(buf, n, cols, "ETA %s",
			  fmt_duration(eta_seconds(j), eta, sizeof eta));
	if (j->series.n > 0) {
		/* the room left, up to SPARK_WIDTH bars */
		int room = cols > 0 ? cols - (int)fmt_columns(buf) - 1
				    : SPARK_WIDTH;
		if (room > SPARK_WIDTH)
			room = SPARK_WIDTH;
		if (room >= SPARK_MIN)
			add_field(buf, n, cols, "%s",
				  fmt_series_sparkline(&j->series, room, spark));
	}
	if (j->have_metrics && isfinite(j->psnr) && !j->ended)
		add_field(buf, n, cols, "live %s",
			  fmt_number("%.2f", j->psnr, num, sizeof num));
	if (is_running(j) && j->ms > 0)
		add_field(buf, n, cols, "%.1f ep/s", 1000.0 / j->ms);
	if (j->have_metrics) {
		add_field(buf, n, cols, "mse %s",
			  fmt_number("%.2e", j->mse, num, sizeof num));
		add_field(buf, n, cols, "lr %s",
			  fmt_number("%.1e", j->lr, num, sizeof num));
	}
}

struct totals {
	int done, failed, running, paused, queued;
	double psnr_sum;
	int psnr_n;
	double eta;
};

static struct totals count_jobs(const struct watch *w)
{
	struct totals t = {0};
	double left = 0, ms_sum = 0;
	int ms_n = 0, parallel;

	for (int i = 0; i < w->n; i++) {
		const struct wjob *j = &w->jobs[i];
		if (!strcmp(j->state, S_DONE))
			t.done++;
		else if (j->ended)
			t.failed++;
		else if (!strcmp(j->state, S_RUNNING))
			t.running++;
		else if (!strcmp(j->state, S_PAUSED))
			t.paused++;
		else
			t.queued++;
		if (j->have_metrics && isfinite(j->best)) {
			t.psnr_sum += j->best;
			t.psnr_n++;
		}
		if (j->ms > 0) {
			ms_sum += j->ms;
			ms_n++;
		}
	}
	/* Remaining work over the jobs that run at once: a rough ETA (an
	 * unstarted job at the mean epoch time of the others; a paused job
	 * waits for someone, so it is left out). */
	for (int i = 0; i < w->n; i++) {
		const struct wjob *j = &w->jobs[i];
		double ms = j->ms > 0 ? j->ms : ms_n ? ms_sum / ms_n : NAN;
		if (!j->ended && strcmp(j->state, S_PAUSED))
			left += epochs_left(j) * ms / 1000.0;
	}
	parallel = t.running > 0 ? t.running : 1;
	t.eta = left / parallel;
	return t;
}

static void total_line(const struct watch *w, char *buf, size_t n,
		       int hidden, int cols)
{
	struct totals t = count_jobs(w);
	char eta[32];

	int k = snprintf(buf, n, "total %d jobs: %d done, %d running, %d queued",
			 w->n, t.done, t.running, t.queued);

	cols = cols > 1 ? cols - 1 : 0;
	if (t.paused && k > 0 && (size_t)k < n)
		k += snprintf(buf + k, n - k, ", %d paused", t.paused);
	if (t.failed && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - k, ", %d failed or cancelled", t.failed);
	if (t.running + t.queued > 0)
		add_field(buf, n, cols, " ETA %s",
			  fmt_duration(t.eta, eta, sizeof eta));
	if (hidden)
		add_field(buf, n, cols, " +%d below", hidden);
	if (t.psnr_n)
		add_field(buf, n, cols, " mean %.2f dB", t.psnr_sum / t.psnr_n);
	if (cols > 0)
		fmt_truncate(buf, (size_t)cols);
}

/* Order for a crowded terminal: running, paused, queued, ended. */
static int rank(const struct wjob *j)
{
	if (j->ended)
		return 3;
	if (!strcmp(j->state, S_RUNNING))
		return 0;
	return !strcmp(j->state, S_PAUSED) ? 1 : 2;
}

static void draw_live(struct watch *w)
{
	int cols = fmt_terminal_columns(fileno(w->out));
	int rows = fmt_terminal_rows(fileno(w->out));
	int summary = w->n > 1, room = w->n, shown = 0;
	char line[1024];

	/* rows - 1 lines at most: the cursor ends on the last row, and a
	 * newline there would scroll what the cursor-up cannot reach. */
	if (room + summary > rows - 1)
		room = rows - 1 - summary > 0 ? rows - 1 - summary : 0;
	/* Back to the first line and over it: each line is cleared as it is
	 * written and what is left below at the end. Erasing the whole view
	 * first (ESC [J at its top) would read as a clear screen to terminals
	 * that keep a cleared screen in their scrollback (tmux). */
	if (w->lines > 0)
		fprintf(w->out, "\r\033[%dA", w->lines);
	if (summary) {
		int hidden = w->n - room;
		total_line(w, line, sizeof line, hidden, cols);
		fprintf(w->out, "\033[2K%s\n", line);
	}
	for (int r = 0; r <= 3 && shown < room; r++)
		for (int i = 0; i < w->n && shown < room; i++) {
			if (rank(&w->jobs[i]) != r)
				continue;
			live_line(&w->jobs[i], line, sizeof line, cols);
			fprintf(w->out, "\033[2K%s\n", line);
			shown++;
		}
	fputs("\033[J", w->out);
	fflush(w->out);
	w->lines = shown + summary;
	w->dirty = 0;
	w->drawn_at = now_s();
}

static void plain_progress(struct watch *w, struct wjob *j)
{
	char eta[32], psnr[32], best[32], mse[32], lr[32];

	fprintf(w->out,
		"job %s %s: epoch %d/%d psnr %s live %s mse %s lr %s",
		j->idtext, j->name, j->epoch, j->epochs,
		fmt_number("%.2f", j->best, best, sizeof best),
		fmt_number("%.2f", j->psnr, psnr, sizeof psnr),
		fmt_number("%.3e", j->mse, mse, sizeof mse),
		fmt_number("%.2e", j->lr, lr, sizeof lr));
	if (is_running(j) && j->ms > 0)
		fprintf(w->out, " %.1f ep/s eta %s", 1000.0 / j->ms,
			fmt_duration(eta_seconds(j), eta, sizeof eta));
	fputc('\n', w->out);
	fflush(w->out);
	j->printed_at = now_s();
	j->printed_epoch = j->epoch;
}

static void plain_state(struct watch *w, struct wjob *j)
{
	char line[1024], best[32];

	if (j->ended && j->have_metrics && j->printed_epoch != j->epoch)
		plain_progress(w, j); /* the last point always goes out */
	snprintf(j->told, sizeof j->told, "%s", j->state);
	fprintf(w->out, "job %s %s: %s", j->idtext, j->name, j->state);
	if (j->ended && j->have_metrics)
		fprintf(w->out, " at epoch %d/%d, psnr %s dB", j->epoch,
			j->epochs,
			fmt_number("%.2f", model_psnr(j), best, sizeof best));
	if (j->error)
		fprintf(w->out, ": %s", j->error);
	fputc('\n', w->out);
	if (j->ended && w->n > 1) {
		total_line(w, line, sizeof line, 0, 0);
		fprintf(w->out, "%s\n", line);
	}
	fflush(w->out);
}

/* Points held back by the plain mode's throttle, once their time came. */
static void plain_catch_up(struct watch *w, int force)
{
	double now = now_s();

	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		if (j->have_metrics && j->printed_epoch != j->epoch &&
		    (force || now - j->printed_at >= PLAIN_INTERVAL))
			plain_progress(w, j);
	}
}

static void json_event(const cJSON *msg)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	cJSON *event = cJSON_CreateObject(), *field;

	if (!event)
		return;
	cJSON_AddStringToObject(event, "event", cJSON_IsString(method)
							? method->valuestring
							: "?");
	cJSON_ArrayForEach(field, params)
		if (field->string && strcmp(field->string, "event"))
			cJSON_AddItemToObject(event, field->string,
					      cJSON_Duplicate(field, 1));
	client_print_json(event);
	cJSON_Delete(event);
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
	if (w->mode == WATCH_JSON)
		json_event(msg);

	if (!strcmp(method->valuestring, N_JOB_PROGRESS)) {
		if (j->replay_left > 0)
			j->replay_left--;
		fold_progress(j, params);
		if (w->mode == WATCH_PLAIN &&
		    w->news_at - j->printed_at >= PLAIN_INTERVAL)
			plain_progress(w, j);
	} else if (!strcmp(method->valuestring, N_JOB_STATE)) {
		const char *state = job_str(params, "state", NULL);
		if (!state)
			return;
		set_state(j, state);
		set_error(j, job_str(params, "error", NULL));
		/* done: the exported model's PSNR, the one export reports */
		j->best = job_num(params, "psnr", j->best);
		j->model_psnr = job_num(params, "psnr", j->model_psnr);
		if (w->mode == WATCH_PLAIN && strcmp(j->told, j->state))
			plain_state(w, j);
	}
	w->dirty = 1;
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
	for (int i = 0; i < w->n && strlen(ids) + 80 < sizeof ids; i++)
		snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s",
			 i ? " " : "", w->jobs[i].idtext);
	if (!batch && strlen(ids) + 80 >= sizeof ids)
		strcat(ids, " ...");
	snprintf(interrupt_text, sizeof interrupt_text,
		 "\nvkinrctl: stopped watching; %s %s on in vkinrd.\n"
		 "Watch again: vkinrctl%s%s watch %s\n"
		 "(to stop %s: vkinrctl cancel %s)\n",
		 going == 1 ? "the job" : "the jobs",
		 going == 1 ? "goes" : "go",
		 w->cl->socket_flag ? " --socket " : "",
		 w->cl->socket_flag ? w->cl->socket_flag : "",
		 batch ? batch : ids, going == 1 ? "it" : "them",
		 batch ? batch : ids);
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
		if (now - w->jobs[0].asked_at < after)
			return 0;
		return ask_all(w);
	}
	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		if (j->ended || now - j->asked_at < after ||
		    now - j->news_at < after)
			continue;
		if ((rc = ask_job(w, j)) < 0)
			return rc;
		if (w->mode == WATCH_PLAIN && strcmp(j->told, j->state))
			plain_state(w, j);
	}
	return 0;
}

static int next_timeout_ms(const struct watch *w)
{
	double wait = is_wait(w->mode) ? WAIT_POLL : QUIET_AFTER / 2;

	if (w->mode == WATCH_LIVE && w->dirty)
		wait = REDRAW_MS / 1000.0;
	if (w->mode == WATCH_PLAIN)
		wait = fmin(wait, PLAIN_INTERVAL / 2);
	return (int)(wait * 1000);
}

static int follow(struct watch *w)
{
	cJSON *msg;
	int rc;

	if (w->mode == WATCH_PLAIN)
		for (int i = 0; i < w->n; i++)
			if (!w->jobs[i].ended)
				plain_state(w, &w->jobs[i]);
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
		if (w->mode == WATCH_LIVE && w->dirty &&
		    now_s() - w->drawn_at >= REDRAW_MS / 1000.0)
			draw_live(w);
		if (w->mode == WATCH_PLAIN)
			plain_catch_up(w, 0);
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
		const cJSON *replay = cJSON_GetObjectItemCaseSensitive(result, "replay");
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

static void print_summary(struct watch *w)
{
	cJSON *all, *jobs;

	if (w->cl->json) {
		all = cJSON_CreateObject();
		jobs = cJSON_AddArrayToObject(all, "jobs");
		for (int i = 0; i < w->n; i++)
			if (w->jobs[i].last)
				cJSON_AddItemToArray(
					jobs, cJSON_Duplicate(w->jobs[i].last, 1));
		client_print_json(all);
		cJSON_Delete(all);
		return;
	}
	for (int i = 0; i < w->n; i++) {
		struct wjob *j = &w->jobs[i];
		char best[32];
		printf("job %s %s: %s", j->idtext, j->name, j->state);
		if (j->have_metrics)
			printf(" at epoch %d/%d, psnr %s dB", j->epoch,
			       j->epochs,
			       fmt_number("%.2f", j->best, best, sizeof best));
		if (j->error)
			printf(": %s", j->error);
		putchar('\n');
	}
}

/* The last word of each view, once every job has ended. */
static void show_end(struct watch *w)
{
	switch (w->mode) {
	case WATCH_LIVE:
		draw_live(w);
		break;
	case WATCH_PLAIN:
		for (int i = 0; i < w->n; i++) {
			struct wjob *j = &w->jobs[i];
			if (strcmp(j->told, j->state))
				plain_state(w, j);
			else if (j->have_metrics && j->printed_epoch != j->epoch)
				plain_progress(w, j);
		}
		break;
	case WATCH_QUIET:
		print_summary(w);
		break;
	default:
		break;
	}
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

	for (int i = 0; i < w->n && rc == 0; i++)
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
	conn_close(w->cl->conn);
	w->cl->conn = NULL;
	for (;;) {
		if ((rc = client_connect(w->cl)) == 0)
			return 0;
		if (now_s() >= until)
			return rc;
		usleep(200 * 1000);
	}
}

int watch_jobs(struct client *cl, const cJSON *ids, enum watch_mode mode,
	       FILE *out)
{
	struct watch w = {.cl = cl, .mode = mode, .out = out};
	const cJSON *id;
	int rc = 0, status = CLIENT_EXIT_OK, i = 0, again = 0;

	w.n = cJSON_GetArraySize(ids);
	w.jobs = calloc(w.n > 0 ? w.n : 1, sizeof *w.jobs);
	if (!w.jobs)
		return client_fail(cl, ERR_NOMEM, NULL);
	cJSON_ArrayForEach(id, ids) {
		struct wjob *j = &w.jobs[i++];
		j->id = cJSON_Duplicate(id, 1);
		job_id_text(id, j->idtext, sizeof j->idtext);
		j->printed_at = -INFINITY;
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
		show_end(&w);
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
