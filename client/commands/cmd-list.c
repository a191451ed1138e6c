/*
 * cmd-list.c - `vkinrctl list` and `vkinrctl show`: the daemon's jobs as a
 * table, CSV or JSON, and one job in full.
 *
 * list asks job.list once and filters here (--batch B, --state S), so it
 * works with any daemon that lists jobs. The table is for people and may
 * change; --csv (a header row, then one row per job) and --json (the
 * daemon's job objects, {"jobs": [...]}) are for scripts and keep their
 * column and field names. With --batch, a summary line follows the table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/client.h"
#include "proto/errors.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/protocol.h"
#include "slurm/slurm.h"

enum {
	OPT_BATCH = OPT_FIRST_COMMAND_OPTION,
	OPT_CSV,
	OPT_STATE,
	OPT_FORMAT,
	OPT_NO_HEADER
};

/* ---------------------------------------------------------------------- */
/* One row                                                                 */
/* ---------------------------------------------------------------------- */

static const char *size_text(const cJSON *job, char *buf, size_t n)
{
	const cJSON *image = cJSON_GetObjectItemCaseSensitive(job, "image");
	double w = job_num(image, "width", NAN),
	       h = job_num(image, "height", NAN);

	if (isfinite(w) && isfinite(h))
		snprintf(buf, n, "%.0fx%.0f", w, h);
	else
		snprintf(buf, n, "-");
	return buf;
}

static const char *device_text(const cJSON *job)
{
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(job, "device");
	static char buf[64];

	if (cJSON_IsString(dev))
		return dev->valuestring;
	if (cJSON_IsNumber(dev)) {
		snprintf(buf, sizeof(buf), "%d", dev->valueint);
		return buf;
	}
	return job_str(dev, "name", "-");
}

#define CSV_HEADER                                                             \
	"id,name,batch,state,width,height,epoch,epochs,psnr,best_psnr,"        \
	"seconds,device,net_width,error,source,live_psnr\n"

static void csv_row(const cJSON *job)
{
	const cJSON *image = cJSON_GetObjectItemCaseSensitive(job, "image");
	char id[128];

	fmt_csv_field(stdout,
		      job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"),
				  id, sizeof(id)),
		      0);
	fmt_csv_field(stdout, job_str(job, "name", ""), 0);
	fmt_csv_field(stdout, job_str(job, "batch", ""), 0);
	fmt_csv_field(stdout, job_str(job, "state", ""), 0);
	fmt_csv_number(stdout, job_num(image, "width", NAN), "%.0f", 0);
	fmt_csv_number(stdout, job_num(image, "height", NAN), "%.0f", 0);
	fmt_csv_number(stdout, job_num(job, "epoch", NAN), "%.0f", 0);
	fmt_csv_number(stdout, job_num(job, "epochs", NAN), "%.0f", 0);
	fmt_csv_number(stdout, job_num(job, "psnr", NAN), "%.4f", 0);
	fmt_csv_number(stdout, job_num(job, "best_psnr", NAN), "%.4f", 0);
	fmt_csv_number(stdout, job_seconds(job), "%.3f", 0);
	fmt_csv_field(stdout,
		      strcmp(device_text(job), "-") ? device_text(job) : "", 0);
	fmt_csv_number(stdout, job_num(job, "width", NAN), "%.0f", 0);
	fmt_csv_field(stdout, job_str(job, "error", ""), 0);
	fmt_csv_field(stdout, job_str(job, "source", ""), 0);
	fmt_csv_number(stdout, job_num(job, "live_psnr", NAN), "%.4f", 1);
}

/* The device's name up to its first " (": "llvmpipe", not "llvmpipe
 * (LLVM 15.0.6, 256 bits)"; show gives the whole. */
static const char *device_short(const cJSON *job, char *buf, size_t n)
{
	char *paren;

	snprintf(buf, n, "%s", device_text(job));
	if ((paren = strstr(buf, " (")))
		*paren = '\0';
	return buf;
}

/* ---------------------------------------------------------------------- */
/* The table: one row of this list per column, --format picks them        */
/* ---------------------------------------------------------------------- */

static const char *col_id(const cJSON *j, char *b, size_t n)
{
	return job_id_text(cJSON_GetObjectItemCaseSensitive(j, "id"), b, n);
}
static const char *col_name(const cJSON *j, char *b, size_t n)
{
	snprintf(b, n, "%s", job_str(j, "name", "-"));
	return b;
}
/* "waiting" for a queued job still waiting for others (--after). */
static const char *col_state(const cJSON *j, char *b, size_t n)
{
	const char *state = job_str(j, "state", "?");

	if (!strcmp(state, S_QUEUED) &&
	    cJSON_GetArraySize(
		cJSON_GetObjectItemCaseSensitive(j, "waiting_for")) > 0)
		state = "waiting";
	snprintf(b, n, "%s", state);
	return b;
}
static const char *col_priority(const cJSON *j, char *b, size_t n)
{
	return fmt_number("%.0f", job_num(j, "priority", NAN), b, n);
}
static const char *col_epoch(const cJSON *j, char *b, size_t n)
{
	snprintf(b, n, "%.0f/%.0f", job_num(j, "epoch", 0),
		 job_num(j, "epochs", 0));
	return b;
}
static const char *col_psnr(const cJSON *j, char *b, size_t n)
{
	return fmt_number("%.2f", job_num(j, "psnr", NAN), b, n);
}
static const char *col_best(const cJSON *j, char *b, size_t n)
{
	return fmt_number("%.2f", job_num(j, "best_psnr", NAN), b, n);
}
static const char *col_live(const cJSON *j, char *b, size_t n)
{
	return fmt_number("%.2f", job_num(j, "live_psnr", NAN), b, n);
}
static const char *col_time(const cJSON *j, char *b, size_t n)
{
	return fmt_duration(job_seconds(j), b, n);
}
static const char *col_batch(const cJSON *j, char *b, size_t n)
{
	snprintf(b, n, "%s", job_str(j, "batch", "-"));
	return b;
}
static const char *col_age(const cJSON *j, char *b, size_t n)
{
	return fmt_age(job_num(j, "created", NAN), b, n);
}
static const char *col_source(const cJSON *j, char *b, size_t n)
{
	snprintf(b, n, "%s", job_str(j, "source", "-"));
	return b;
}

struct column {
	const char *name; /* for --format */
	const char *title;
	int width; /* columns on screen; 0: the rest of the line */
	int right; /* aligned right */
	const char *(*text)(const cJSON *job, char *buf, size_t n);
};

static const struct column columns[] = {
	{ "id", "ID", 5, 0, col_id },
	{ "name", "NAME", 14, 0, col_name },
	{ "state", "STATE", 9, 0, col_state },
	{ "priority", "PRIO", 4, 1, col_priority },
	{ "epoch", "EPOCH", 11, 1, col_epoch },
	{ "size", "SIZE", 9, 1, size_text },
	{ "psnr", "PSNR", 6, 1, col_psnr },
	{ "live", "LIVE", 6, 1, col_live },
	{ "best", "PSNR", 6, 1, col_best }, /* psnr, as it was called once */
	{ "time", "TIME", 7, 1, col_time },
	{ "age", "AGE", 8, 1, col_age },
	{ "batch", "BATCH", 7, 0, col_batch },
	{ "device", "DEVICE", 0, 0, device_short },
	{ "source", "SOURCE", 0, 0, col_source },
	{ NULL, NULL, 0, 0, NULL },
};

/* 80 columns with a short device name */
#define LIST_DEFAULT_FORMAT                                                    \
	"id,name,state,priority,epoch,psnr,time,batch,device"
#define LIST_MAX_COLUMNS 16

/* Parses --format into indices of columns[]; 0 or a usage error. */
static int parse_format(const struct cmd_entry *self, const char *format,
			int *cols, int *ncols)
{
	char *copy = strdup(format), *save = NULL;
	int status = 0;

	*ncols = 0;
	for (char *w = strtok_r(copy, ",", &save); w && !status;
	     w = strtok_r(NULL, ",", &save)) {
		int i = 0;
		while (columns[i].name && strcmp(columns[i].name, w))
			i++;
		if (!columns[i].name || *ncols == LIST_MAX_COLUMNS)
			status = cmd_usage_error(
			    self,
			    "--format takes columns among id, name, "
			    "state, priority, epoch, size, psnr, live, "
			    "time, age, batch, device, source; not '%s'",
			    w);
		else
			cols[(*ncols)++] = i;
	}
	free(copy);
	if (!status && *ncols == 0)
		status = cmd_usage_error(self, "--format is empty");
	return status;
}

static void table_line(const int *cols, int ncols, const cJSON *job)
{
	char line[2048] = "", cell[1024];

	for (int k = 0; k < ncols; k++) {
		const struct column *c = &columns[cols[k]];
		const char *text =
		    job ? c->text(job, cell, sizeof(cell)) : c->title;
		size_t w = fmt_columns(text);

		/* the last column is never cut: nothing follows it */
		size_t width = c->width && k < ncols - 1 ? (size_t)c->width : w;

		if (k)
			strcat(line, " ");
		if (c->right) /* numbers: padded on the left, never cut */
			fmt_append_cols(line, sizeof(line), "",
					w < width ? width - w : 0);
		fmt_append_cols(line, sizeof(line), text,
				c->right && w > width ? w
				: c->right            ? w
						      : width);
	}
	while (*line && line[strlen(line) - 1] == ' ')
		line[strlen(line) - 1] = '\0';
	puts(line);
}

/*
 * One line about the jobs listed: counts by state, PSNR figures, and two
 * times: the wall time from the first start to the last end (now while a
 * job runs) and the sum of the jobs' own times, which jobs running side by
 * side make longer than the wall time.
 */
static void summary(const cJSON *jobs)
{
	int n = 0, done = 0, failed = 0, going = 0;
	double sum = 0, best = -INFINITY, secs = 0;
	double first = INFINITY, last = -INFINITY;
	const cJSON *job;
	char total[32], wall[32];

	cJSON_ArrayForEach(job, jobs)
	{
		const char *state = job_str(job, "state", "");
		double psnr = job_num(job, "psnr", NAN);
		double started = job_num(job, "started", NAN);
		double finished = job_num(job, "finished", NAN);
		n++;
		if (!strcmp(state, S_DONE)) {
			done++;
			if (isfinite(psnr)) {
				sum += psnr;
				best =
				    fmax(best, job_num(job, "best_psnr", psnr));
			}
		} else if (job_state_ended(state)) {
			failed++;
		} else {
			going++;
		}
		if (isfinite(job_seconds(job)))
			secs += job_seconds(job);
		if (isfinite(started) && started > 0) {
			first = fmin(first, started);
			if (!job_state_ended(state) || !isfinite(finished) ||
			    finished <= 0)
				finished = (double)time(NULL);
			last = fmax(last, finished);
		}
	}
	printf("%d jobs: %d done, %d failed or cancelled, %d not ended", n,
	       done, failed, going);
	if (done)
		printf("; mean final PSNR %.2f dB, best %.2f dB", sum / done,
		       best);
	if (isfinite(first) && last >= first)
		printf("; %s wall",
		       fmt_duration(last - first, wall, sizeof(wall)));
	if (secs > 0)
		printf("%s%s of job time", isfinite(first) ? ", " : "; ",
		       fmt_duration(secs, total, sizeof(total)));
	putchar('\n');
}

/* --csv --format C: the chosen columns, as the table shows them. */
static void csv_columns(const int *cols, int ncols, const cJSON *job)
{
	char cell[1024];

	for (int k = 0; k < ncols; k++) {
		const struct column *c = &columns[cols[k]];
		fmt_csv_field(stdout,
			      job ? c->text(job, cell, sizeof(cell)) : c->name,
			      k == ncols - 1);
	}
}

/* ---------------------------------------------------------------------- */
/* list                                                                    */
/* ---------------------------------------------------------------------- */

static int keep(const cJSON *job, const char *batch, const char *state)
{
	if (batch && strcmp(job_str(job, "batch", ""), batch))
		return 0;
	return !state || !strcmp(job_str(job, "state", ""), state);
}

static int cmd_list_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-header", no_argument, NULL, OPT_NO_HEADER },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *batch = NULL, *state = NULL;
	const char *format = LIST_DEFAULT_FORMAT;
	int formatted = 0;
	cJSON *result = NULL, *kept;
	const cJSON *job;
	int c, rc, csv = 0, cols[LIST_MAX_COLUMNS], ncols = 0;
	int quiet = 0, header = 1;

	if (slurm_has_option(argc, argv, "--out"))
		return slurm_list_exec(cl, self, argc, argv);
	while ((c = cmd_getopt(argc, argv, "hq", opts)) != -1) {
		if (c == OPT_BATCH)
			batch = optarg;
		else if (c == OPT_STATE)
			state = optarg;
		else if (c == OPT_CSV)
			csv = 1;
		else if (c == OPT_FORMAT)
			format = optarg, formatted = 1;
		else if (c == 'q') /* the ids alone, as docker ps -q */
			quiet = 1, format = "id", header = 0;
		else if (c == OPT_NO_HEADER)
			header = 0;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if ((rc = parse_format(self, format, cols, &ncols)))
		return rc;
	if (optind < argc)
		return cmd_usage_error(self, "unexpected argument '%s'",
				       argv[optind]);
	if (csv && cl->json)
		return cmd_usage_error(self, "--csv and --json exclude each "
					     "other");
	if (quiet && (csv || cl->json || formatted))
		return cmd_usage_error(self, "-q prints the ids alone; it "
					     "takes neither --csv, --json nor "
					     "--format");
	if (state && !job_state_known(state))
		return cmd_usage_error(self,
				       "--state takes one of queued, "
				       "running, paused, done, failed, "
				       "cancelled; not '%s'",
				       state);

	rc = client_call(cl, M_JOB_LIST, cJSON_CreateObject(), &result);
	if (rc < 0)
		return client_fail(cl, rc, "job.list");
	kept = cJSON_CreateArray();
	if (!kept) {
		cJSON_Delete(result);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	cJSON_ArrayForEach(job,
			   jobs_of_list(result)) if (keep(job, batch, state))
	    cJSON_AddItemReferenceToArray(kept, (cJSON *)job);
	if (batch && !jobs_batch_known(jobs_of_list(result), batch)) {
		client_warn("there is no batch %s (`vkinrctl list` shows the "
			    "batch of each job)",
			    batch);
		cJSON_Delete(kept);
		cJSON_Delete(result);
		return CLIENT_EXIT_DAEMON;
	}

	if (cl->json) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddItemReferenceToObject(out, "jobs", kept);
		client_print_json(out);
		cJSON_Delete(out);
	} else if (csv && formatted) {
		if (header)
			csv_columns(cols, ncols, NULL);
		cJSON_ArrayForEach(job, kept) csv_columns(cols, ncols, job);
	} else if (csv) {
		if (header)
			fputs(CSV_HEADER, stdout);
		cJSON_ArrayForEach(job, kept) csv_row(job);
	} else if (cJSON_GetArraySize(kept) == 0 && !quiet) {
		/* on stderr: a script reading the table gets no line at all */
		fprintf(stderr, batch ? "No jobs in batch %s.\n" : "No jobs.\n",
			batch);
	} else {
		if (header)
			table_line(cols, ncols, NULL);
		cJSON_ArrayForEach(job, kept) table_line(cols, ncols, job);
		if (batch && !quiet)
			summary(kept);
	}
	cJSON_Delete(kept);
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_list_entry = {
	.name = "list",
	.alias = "ls",
	.args = "[--batch B] [--state S] [--csv] [--format COLS] [--no-header] "
		"[-q]\n         | --out OUT [--csv]",
	.summary = "list the jobs: a table, or CSV / JSON for scripts",
	.help =
	    "Options:\n"
	    "  --batch B   only the jobs of batch B, and a summary line\n"
	    "  --state S   only jobs in state S (queued, running, paused, "
	    "done, failed,\n"
	    "              cancelled)\n"
	    "  --csv       comma-separated values with a header row:\n"
	    "              " CSV_HEADER
	    "  --json      {\"jobs\": [...]}, the daemon's job objects\n"
	    "  --format C  the table's columns, comma-separated, among id, "
	    "name, state,\n"
	    "              priority, epoch, size, psnr, live, time, age, "
	    "batch, device,\n"
	    "              source (default: all but size, live, age and "
	    "source); psnr\n"
	    "              is the model's, the weights export writes; live "
	    "the last\n"
	    "              epoch's own; with --csv, the CSV has these "
	    "columns,\n"
	    "              as the table shows them, with their names as "
	    "header\n"
	    "  --no-header no header row (the table's or the CSV's)\n"
	    "  -q, --quiet the ids alone, one a line (for scripts: "
	    "`vkinrctl rm\n"
	    "              $(vkinrctl list -q --state done)`)\n"
	    "  A queued job still waiting for others (submit --after) "
	    "shows as waiting.\n"
	    "  --out OUT   a dataset fitted on Slurm (submit --slurm): each "
	    "image's\n              result, and the Slurm state of the "
	    "unfinished ones\n",
	.exec = cmd_list_exec,
};

/* ---------------------------------------------------------------------- */
/* show                                                                    */
/* ---------------------------------------------------------------------- */

/* A field for people: times as dates with their age, numbers rounded,
 * null as "-", true/false as yes/no; the daemon's exact values are in
 * --json. */
static const char *field_text(const cJSON *f, char *buf, size_t n)
{
	static const char *const times[] = { "created", "started", "finished",
					     NULL };
	const char *key = f->string;
	char when[64], ago[32];
	double v = f->valuedouble;

	if (cJSON_IsNull(f))
		return "-";
	if (cJSON_IsBool(f))
		return cJSON_IsTrue(f) ? "yes" : "no";
	if (cJSON_IsString(f)) {
		snprintf(buf, n, "%s", f->valuestring);
		return buf;
	}
	if (cJSON_IsArray(f) && cJSON_GetArraySize(f) == 0)
		return "-"; /* waiting_for, once all are done */
	if (cJSON_IsArray(f) && cJSON_IsString(f->child)) { /* after: 3, 5 */
		const cJSON *e;
		buf[0] = '\0';
		cJSON_ArrayForEach(e, f) if (cJSON_IsString(e))
		    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s",
			     buf[0] ? ", " : "", e->valuestring);
		return buf;
	}
	if (!cJSON_IsNumber(f)) {
		char *text = cJSON_PrintUnformatted(f);
		snprintf(buf, n, "%s", text ? text : "?");
		free(text);
		return buf;
	}
	for (int i = 0; times[i]; i++)
		if (!strcmp(key, times[i])) {
			snprintf(buf, n, "%s (%s ago)",
				 fmt_date(v, when, sizeof(when)),
				 fmt_age(v, ago, sizeof(ago)));
			return buf;
		}
	if (!strcmp(key, "seconds"))
		return fmt_duration(v, buf, n);
	if (!strcmp(key, "ms")) /* the last epoch's, so the current rate */
		snprintf(buf, n, "%.1f ms an epoch (%.1f epochs/s)", v,
			 v > 0 ? 1000 / v : 0);
	else if (!strcmp(key, "mse") || !strcmp(key, "lr"))
		snprintf(buf, n, "%.3g", v);
	else if (strstr(key, "psnr"))
		snprintf(buf, n, "%.2f dB", v);
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.4g", v);
	return buf;
}

/* " (default)" when the job's "defaults" names key (a setting left to
 * the daemon), else "". */
static const char *default_mark(const cJSON *job, const char *key)
{
	const cJSON *d;
	cJSON_ArrayForEach(
	    d, cJSON_GetObjectItemCaseSensitive(
		   job, "defaults")) if (cJSON_IsString(d) &&
					 !strcmp(d->valuestring,
						 key)) return " (default)";
	return "";
}

/* Every field of a job, known ones first and formatted, the rest raw;
 * a setting left to the daemon is marked "(default)", and one not chosen
 * yet (the width, until a device takes the job) says so. */
static void show_job(const cJSON *job)
{
	static const char *const known[] = {
		"id",        "name",       "batch",    "state",
		"epoch",     "epochs",     "psnr",     "best_psnr",
		"live_psnr", "model_psnr", "width",    "image",
		"device",    "error",      "defaults", NULL
	};
	char id[128], size[32], psnr[32], live[32];
	const cJSON *field;

	printf("job %s\n",
	       job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"), id,
			   sizeof(id)));
	printf("  %-12s %s\n", "name", job_str(job, "name", "-"));
	if (job_str(job, "batch", NULL))
		printf("  %-12s %s\n", "batch", job_str(job, "batch", ""));
	printf("  %-12s %s\n", "state", job_str(job, "state", "?"));
	printf("  %-12s %.0f of %.0f\n", "epoch", job_num(job, "epoch", 0),
	       job_num(job, "epochs", 0));
	printf(
	    "  %-12s %s dB (live %s dB)\n", "psnr",
	    fmt_number("%.2f", job_num(job, "psnr", NAN), psnr, sizeof(psnr)),
	    fmt_number("%.2f", job_num(job, "live_psnr", NAN), live,
		       sizeof(live)));
	printf("  %-12s %s\n", "image", size_text(job, size, sizeof(size)));
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(job, "width")))
		printf("  %-12s %.0f%s\n", "width", job_num(job, "width", 0),
		       default_mark(job, "width"));
	else
		printf("  %-12s %s\n", "width",
		       "the device's default, chosen when it starts");
	printf("  %-12s %s\n", "device", device_text(job));
	if (job_str(job, "error", NULL))
		printf("  %-12s %s\n", "error", job_str(job, "error", ""));

	cJSON_ArrayForEach(field, job)
	{
		int seen = 0;
		char text[256];
		for (int i = 0; known[i] && !seen; i++)
			seen =
			    field->string && !strcmp(field->string, known[i]);
		if (seen || !field->string)
			continue;
		if (cJSON_IsNull(field) && *default_mark(job, field->string))
			printf("  %-12s by width (default)\n", field->string);
		else
			printf("  %-12s %s%s\n", field->string,
			       field_text(field, text, sizeof(text)),
			       default_mark(job, field->string));
	}
}

static int cmd_show_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	cJSON *ids = NULL, *job = NULL, *many = NULL;
	const cJSON *id;
	int c, rc, status = CLIENT_EXIT_OK;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind >= argc)
		return cmd_usage_error(self, "name the job to show");
	if ((rc = jobs_resolve(cl, argv + optind, argc - optind, &ids)) < 0)
		return client_fail(cl, rc, NULL);

	/* One job prints as its object; several (a batch) as {"jobs": [...]}. */
	if (cl->json && cJSON_GetArraySize(ids) > 1)
		many = cJSON_CreateArray();
	cJSON_ArrayForEach(id, ids)
	{
		char what[160], text[128];
		snprintf(what, sizeof(what), "job %s",
			 job_id_text(id, text, sizeof(text)));
		rc = client_call(cl, M_JOB_GET, job_params(id), &job);
		if (rc < 0) {
			status = client_fail(cl, rc, what);
			if (status == CLIENT_EXIT_UNREACHABLE)
				break;
			continue;
		}
		if (many)
			cJSON_AddItemToArray(many, job);
		else if (cl->json)
			client_print_json(job);
		else
			show_job(job);
		if (!many)
			cJSON_Delete(job);
		job = NULL;
	}
	if (many) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddItemToObject(out, "jobs", many);
		client_print_json(out);
		cJSON_Delete(out);
	}
	cJSON_Delete(ids);
	return status;
}

const struct cmd_entry cmd_show_entry = {
	.name = "show",
	.alias = NULL,
	.args = "ID...",
	.summary = "one job in full: parameters, state, metrics",
	.help = "With --json, a job prints as the daemon's job object; "
		"several jobs (or a\nbatch id) as {\"jobs\": [...]}.\n",
	.exec = cmd_show_exec,
};
