/*
 * watch-show.c - how `vkinrctl watch` shows the jobs it follows (the loop
 * that follows them is watch.c, which calls the watch_show_* entry points
 * here and nothing else of the views; nothing here calls back into it).
 *
 * What is shown depends on where it goes:
 *   - a terminal: for several jobs a summary line first, then one line per
 *     job, running ones first, as many as fit in the terminal's rows less
 *     one (so drawing never scrolls); each line is cut to the columns it
 *     takes on screen (wide characters count two), its fields in order of
 *     use (epochs and their percentage, the model's PSNR, the time it has
 *     run, ETA, the sparkline in the room left, then the live PSNR, rate,
 *     mse, lr only when they fit: 80 columns keep the first five), the
 *     names in one column as wide as the widest, as far as the fields
 *     up to the ETA still fit, a wider name cut around an ellipsis
 *     (fmt_append_cut: its start and end kept),
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
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/protocol.h"
#include "views/watch-internal.h"

/* ---------------------------------------------------------------------- */
/* Showing                                                                 */
/* ---------------------------------------------------------------------- */

/* Running as far as we know: not while the daemon is gone (j->offline). */
static int is_running(const struct wjob *j)
{
	return is_running_state(j) && !j->offline;
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
	vsnprintf(field, sizeof(field), fmt, ap);
	va_end(ap);
	if (cols > 0 &&
	    fmt_columns(buf) + 1 + fmt_columns(field) > (size_t)cols)
		return;
	if (strlen(buf) + 1 + strlen(field) < n) {
		strcat(buf, " ");
		strcat(buf, field);
	}
}

/* One live line for a job, at most cols columns (0: no limit), its name
 * in name_cols. */
static void live_line(const struct wjob *j, char *buf, size_t n, int cols,
		      int name_cols)
{
	char eta[32], spark[3 * SPARK_WIDTH + 1], num[32], head[64];

	buf[0] = '\0';
	fmt_append_cols(buf, n, j->idtext, 5);
	strcat(buf, " ");
	fmt_append_cut(buf, n, j->name, (size_t)name_cols);
	snprintf(head, sizeof(head), " %-9s %d/%d",
		 j->offline && !j->ended ? "unknown" : j->state, j->epoch,
		 j->epochs);
	strncat(buf, head, n - strlen(buf) - 1);
	if (j->epochs > 0) {
		snprintf(head, sizeof(head), " %d%%",
			 (int)(100.0 * j->epoch / j->epochs));
		strncat(buf, head, n - strlen(buf) - 1);
	}
	if (cols > 1)
		fmt_truncate(buf, (size_t)cols - 1);
	cols = cols > 1 ? cols - 1 : 0;
	if (j->offline && !j->ended)
		add_field(buf, n, cols, "disconnected");
	if (isfinite(model_psnr(j)))
		add_field(buf, n, cols, "%s dB",
			  fmt_number("%.2f", model_psnr(j), num, sizeof(num)));
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
			  fmt_duration(run_seconds(j), num, sizeof(num)));
	if (is_running(j) && j->ms > 0)
		add_field(buf, n, cols, "ETA %s",
			  fmt_duration(eta_seconds(j), eta, sizeof(eta)));
	if (j->series.n > 0) {
		/* the room left, up to SPARK_WIDTH bars */
		int room =
		    cols > 0 ? cols - (int)fmt_columns(buf) - 1 : SPARK_WIDTH;
		if (room > SPARK_WIDTH)
			room = SPARK_WIDTH;
		if (room >= SPARK_MIN)
			add_field(
			    buf, n, cols, "%s",
			    fmt_series_sparkline(&j->series, room, spark));
	}
	if (j->have_metrics && isfinite(j->psnr) && !j->ended)
		add_field(buf, n, cols, "live %s",
			  fmt_number("%.2f", j->psnr, num, sizeof(num)));
	if (is_running(j) && j->ms > 0)
		add_field(buf, n, cols, "%.1f ep/s", 1000.0 / j->ms);
	if (j->have_metrics) {
		add_field(buf, n, cols, "mse %s",
			  fmt_number("%.2e", j->mse, num, sizeof(num)));
		add_field(buf, n, cols, "lr %s",
			  fmt_number("%.1e", j->lr, num, sizeof(num)));
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
	struct totals t = { 0 };
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

static void total_line(const struct watch *w, char *buf, size_t n, int hidden,
		       int cols)
{
	struct totals t = count_jobs(w);
	char eta[32];

	int k =
	    snprintf(buf, n, "total %d jobs: %d done, %d running, %d queued",
		     w->n, t.done, t.running, t.queued);

	cols = cols > 1 ? cols - 1 : 0;
	if (t.paused && k > 0 && (size_t)k < n)
		k += snprintf(buf + k, n - k, ", %d paused", t.paused);
	if (t.failed && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - k, ", %d failed or cancelled", t.failed);
	if (w->n > 0 && w->jobs[0].offline)
		add_field(buf, n, cols, " (vkinrd disconnected)");
	else if (t.running + t.queued > 0)
		add_field(buf, n, cols, " ETA %s",
			  fmt_duration(t.eta, eta, sizeof(eta)));
	if (hidden)
		add_field(buf, n, cols, " +%d below", hidden);
	if (t.psnr_n)
		add_field(buf, n, cols, " mean %.2f dB", t.psnr_sum / t.psnr_n);
	if (cols > 0)
		fmt_truncate(buf, (size_t)cols);
}

/* The columns of the names' field: the widest name, as long as the
 * fields after it that a line keeps first (state, epochs and percentage,
 * PSNR, time; LIVE_AFTER_NAME columns) still fit in the terminal's width;
 * a name wider than that is cut around an ellipsis. Never fewer than
 * NAME_MIN_COLS (a narrow terminal cuts the line's end instead). */
#define LIVE_AFTER_NAME 48
#define NAME_MIN_COLS 12
static int name_columns(const struct watch *w, int cols)
{
	int widest = 4, room;

	for (int i = 0; i < w->n; i++) {
		int c = (int)fmt_columns(w->jobs[i].name);
		if (c > widest)
			widest = c;
	}
	room = (cols > 0 ? cols : 80) - 1 - 6 - LIVE_AFTER_NAME;
	if (room < NAME_MIN_COLS)
		room = NAME_MIN_COLS;
	return widest < room ? widest : room;
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
	int name_cols = name_columns(w, cols);
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
		total_line(w, line, sizeof(line), hidden, cols);
		fprintf(w->out, "\033[2K%s\n", line);
	}
	for (int r = 0; r <= 3 && shown < room; r++)
		for (int i = 0; i < w->n && shown < room; i++) {
			if (rank(&w->jobs[i]) != r)
				continue;
			live_line(&w->jobs[i], line, sizeof(line), cols,
				  name_cols);
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

	fprintf(w->out, "job %s %s: epoch %d/%d psnr %s live %s mse %s lr %s",
		j->idtext, j->name, j->epoch, j->epochs,
		fmt_number("%.2f", j->best, best, sizeof(best)),
		fmt_number("%.2f", j->psnr, psnr, sizeof(psnr)),
		fmt_number("%.3e", j->mse, mse, sizeof(mse)),
		fmt_number("%.2e", j->lr, lr, sizeof(lr)));
	if (is_running(j) && j->ms > 0)
		fprintf(w->out, " %.1f ep/s eta %s", 1000.0 / j->ms,
			fmt_duration(eta_seconds(j), eta, sizeof(eta)));
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
	snprintf(j->told, sizeof(j->told), "%s", j->state);
	fprintf(w->out, "job %s %s: %s", j->idtext, j->name, j->state);
	if (j->ended && j->have_metrics)
		fprintf(w->out, " at epoch %d/%d, psnr %s dB", j->epoch,
			j->epochs,
			fmt_number("%.2f", model_psnr(j), best, sizeof(best)));
	if (j->error)
		fprintf(w->out, ": %s", j->error);
	fputc('\n', w->out);
	if (j->ended && w->n > 1) {
		total_line(w, line, sizeof(line), 0, 0);
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

/* A notification as one --json line: its params under "event": the
 * method. A job.progress's PSNRs are named as in every other output of
 * vkinrctl (job objects, metrics --json): "psnr" the model's (the
 * notification's psnr_best, kept too) and "live_psnr" the epoch's own
 * (the notification's psnr), so a script reads one name one way. */
static void json_event(const cJSON *msg)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const cJSON *best =
	    cJSON_GetObjectItemCaseSensitive(params, "psnr_best");
	cJSON *event = cJSON_CreateObject(), *field;
	int rename = cJSON_IsString(method) &&
		     !strcmp(method->valuestring, N_JOB_PROGRESS) &&
		     cJSON_IsNumber(best);

	if (!event)
		return;
	cJSON_AddStringToObject(
	    event, "event", cJSON_IsString(method) ? method->valuestring : "?");
	cJSON_ArrayForEach(field, params)
	{
		if (!field->string || !strcmp(field->string, "event"))
			continue;
		if (rename && !strcmp(field->string, "psnr")) {
			cJSON_AddItemToObject(event, "psnr",
					      cJSON_Duplicate(best, 1));
			cJSON_AddItemToObject(event, "live_psnr",
					      cJSON_Duplicate(field, 1));
			continue;
		}
		cJSON_AddItemToObject(event, field->string,
				      cJSON_Duplicate(field, 1));
	}
	client_print_json(event);
	cJSON_Delete(event);
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
			       fmt_number("%.2f", j->best, best, sizeof(best)));
		if (j->error)
			printf(": %s", j->error);
		putchar('\n');
	}
}

/* ---------------------------------------------------------------------- */
/* What the loop tells the views                                           */
/* ---------------------------------------------------------------------- */

void watch_show_init_job(struct wjob *j) { j->printed_at = -INFINITY; }

void watch_show_start(struct watch *w)
{
	if (w->mode == WATCH_PLAIN)
		for (int i = 0; i < w->n; i++)
			if (!w->jobs[i].ended)
				plain_state(w, &w->jobs[i]);
}

void watch_show_notification(struct watch *w, const cJSON *msg)
{
	if (w->mode == WATCH_JSON)
		json_event(msg);
}

void watch_show_progress(struct watch *w, struct wjob *j)
{
	if (w->mode == WATCH_PLAIN &&
	    j->news_at - j->printed_at >= PLAIN_INTERVAL)
		plain_progress(w, j);
	w->dirty = 1;
}

void watch_show_state(struct watch *w, struct wjob *j)
{
	if (w->mode == WATCH_PLAIN && strcmp(j->told, j->state))
		plain_state(w, j);
	w->dirty = 1;
}

void watch_show_changed(struct watch *w) { w->dirty = 1; }

void watch_show_redraw(struct watch *w)
{
	if (w->mode == WATCH_LIVE)
		draw_live(w);
}

void watch_show_tick(struct watch *w)
{
	if (w->mode == WATCH_LIVE && w->dirty &&
	    now_s() - w->drawn_at >= REDRAW_MS / 1000.0)
		draw_live(w);
	if (w->mode == WATCH_PLAIN)
		plain_catch_up(w, 0);
}

double watch_show_wait(const struct watch *w, double wait)
{
	if (w->mode == WATCH_LIVE && w->dirty)
		wait = REDRAW_MS / 1000.0;
	if (w->mode == WATCH_PLAIN)
		wait = fmin(wait, PLAIN_INTERVAL / 2);
	return wait;
}

void watch_show_end(struct watch *w)
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
			else if (j->have_metrics &&
				 j->printed_epoch != j->epoch)
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
