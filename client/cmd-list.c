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

#include "client.h"
#include "errors.h"
#include "format.h"
#include "jobs.h"
#include "protocol.h"
#include "slurm.h"

enum { OPT_BATCH = OPT_FIRST_COMMAND_OPTION, OPT_CSV, OPT_STATE };

/* ---------------------------------------------------------------------- */
/* One row                                                                 */
/* ---------------------------------------------------------------------- */

static const char *size_text(const cJSON *job, char *buf, size_t n)
{
	const cJSON *image = cJSON_GetObjectItemCaseSensitive(job, "image");
	double w = job_num(image, "width", NAN), h = job_num(image, "height", NAN);

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
		snprintf(buf, sizeof buf, "%d", dev->valueint);
		return buf;
	}
	return job_str(dev, "name", "-");
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void csv_field(const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
	putchar(last ? '\n' : ',');
}

static void csv_number(double v, const char *format, int last)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof buf, format, v);
	else
		buf[0] = '\0';
	csv_field(buf, last);
}

#define CSV_HEADER                                                           \
	"id,name,batch,state,width,height,epoch,epochs,psnr,best_psnr,"     \
	"seconds,device,net_width,error\n"

static void csv_row(const cJSON *job)
{
	const cJSON *image = cJSON_GetObjectItemCaseSensitive(job, "image");
	char id[128];

	csv_field(job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"), id,
			      sizeof id),
		  0);
	csv_field(job_str(job, "name", ""), 0);
	csv_field(job_str(job, "batch", ""), 0);
	csv_field(job_str(job, "state", ""), 0);
	csv_number(job_num(image, "width", NAN), "%.0f", 0);
	csv_number(job_num(image, "height", NAN), "%.0f", 0);
	csv_number(job_num(job, "epoch", NAN), "%.0f", 0);
	csv_number(job_num(job, "epochs", NAN), "%.0f", 0);
	csv_number(job_num(job, "psnr", NAN), "%.4f", 0);
	csv_number(job_num(job, "best_psnr", NAN), "%.4f", 0);
	csv_number(job_seconds(job), "%.3f", 0);
	csv_field(strcmp(device_text(job), "-") ? device_text(job) : "", 0);
	csv_number(job_num(job, "width", NAN), "%.0f", 0);
	csv_field(job_str(job, "error", ""), 1);
}

static void table_header(void)
{
	printf("%-8s %-20s %-9s %11s %9s %8s %8s %9s %-8s %s\n", "ID", "NAME",
	       "STATE", "EPOCH", "SIZE", "PSNR", "BEST", "TIME", "BATCH",
	       "DEVICE");
}

static void table_row(const cJSON *job)
{
	char id[128], size[32], epoch[32], psnr[32], best[32], time[32];

	snprintf(epoch, sizeof epoch, "%.0f/%.0f", job_num(job, "epoch", 0),
		 job_num(job, "epochs", 0));
	printf("%-8s %-20.20s %-9s %11s %9s %8s %8s %9s %-8s %s\n",
	       job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"), id,
			   sizeof id),
	       job_str(job, "name", "-"), job_str(job, "state", "?"), epoch,
	       size_text(job, size, sizeof size),
	       fmt_number("%.2f", job_num(job, "psnr", NAN), psnr, sizeof psnr),
	       fmt_number("%.2f", job_num(job, "best_psnr", NAN), best,
			  sizeof best),
	       fmt_duration(job_seconds(job), time, sizeof time),
	       job_str(job, "batch", "-"), device_text(job));
}

/* One line about the jobs listed: counts by state and PSNR figures. */
static void summary(const cJSON *jobs)
{
	int n = 0, done = 0, failed = 0, going = 0;
	double sum = 0, best = -INFINITY, secs = 0;
	const cJSON *job;
	char total[32];

	cJSON_ArrayForEach(job, jobs) {
		const char *state = job_str(job, "state", "");
		double psnr = job_num(job, "psnr", NAN);
		n++;
		if (!strcmp(state, S_DONE)) {
			done++;
			if (isfinite(psnr)) {
				sum += psnr;
				best = fmax(best, job_num(job, "best_psnr",
							  psnr));
			}
		} else if (job_state_ended(state)) {
			failed++;
		} else {
			going++;
		}
		if (isfinite(job_seconds(job)))
			secs += job_seconds(job);
	}
	printf("%d jobs: %d done, %d failed or cancelled, %d not ended", n,
	       done, failed, going);
	if (done)
		printf("; mean final PSNR %.2f dB, best %.2f dB", sum / done,
		       best);
	if (secs > 0)
		printf("; %s of fitting",
		       fmt_duration(secs, total, sizeof total));
	putchar('\n');
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
		{"batch", required_argument, NULL, OPT_BATCH},
		{"state", required_argument, NULL, OPT_STATE},
		{"csv", no_argument, NULL, OPT_CSV},
		CMD_COMMON_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	const char *batch = NULL, *state = NULL;
	cJSON *result = NULL, *kept;
	const cJSON *job;
	int c, rc, csv = 0;

	if (slurm_has_option(argc, argv, "--out"))
		return slurm_list_exec(cl, self, argc, argv);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == OPT_BATCH)
			batch = optarg;
		else if (c == OPT_STATE)
			state = optarg;
		else if (c == OPT_CSV)
			csv = 1;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind < argc)
		return cmd_usage_error(self, "unexpected argument '%s'",
				       argv[optind]);
	if (csv && cl->json)
		return cmd_usage_error(self, "--csv and --json exclude each "
					     "other");

	rc = client_call(cl, M_JOB_LIST, cJSON_CreateObject(), &result);
	if (rc < 0)
		return client_fail(cl, rc, "job.list");
	kept = cJSON_CreateArray();
	if (!kept) {
		cJSON_Delete(result);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	cJSON_ArrayForEach(job, jobs_of_list(result))
		if (keep(job, batch, state))
			cJSON_AddItemReferenceToArray(kept, (cJSON *)job);

	if (cl->json) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddItemReferenceToObject(out, "jobs", kept);
		client_print_json(out);
		cJSON_Delete(out);
	} else if (csv) {
		fputs(CSV_HEADER, stdout);
		cJSON_ArrayForEach(job, kept)
			csv_row(job);
	} else if (cJSON_GetArraySize(kept) == 0) {
		printf(batch ? "No jobs in batch %s.\n" : "No jobs.\n", batch);
	} else {
		table_header();
		cJSON_ArrayForEach(job, kept)
			table_row(job);
		if (batch)
			summary(kept);
	}
	cJSON_Delete(kept);
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_list_entry = {
	.name = "list",
	.alias = "ls",
	.args = "[--batch B] [--state S] [--csv] | --out OUT [--csv]",
	.summary = "list the jobs: a table, or CSV / JSON for scripts",
	.help = "Options:\n"
		"  --batch B   only the jobs of batch B, and a summary line\n"
		"  --state S   only jobs in state S (queued, running, paused, "
		"done, failed,\n"
		"              cancelled)\n"
		"  --csv       comma-separated values with a header row:\n"
		"              " CSV_HEADER
		"  --json      {\"jobs\": [...]}, the daemon's job objects\n"
		"  --out OUT   a dataset fitted on Slurm (submit --slurm): each "
		"image's\n              result, and the Slurm state of the "
		"unfinished ones\n",
	.exec = cmd_list_exec,
};

/* ---------------------------------------------------------------------- */
/* show                                                                    */
/* ---------------------------------------------------------------------- */

/* Every field of a job, known ones first and formatted, the rest raw. */
static void show_job(const cJSON *job)
{
	static const char *const known[] = {
		"id", "name", "batch", "state", "epoch", "epochs", "psnr",
		"best_psnr", "width", "image", "device", "error", NULL};
	char id[128], size[32], psnr[32], best[32];
	const cJSON *field;

	printf("job %s\n",
	       job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"), id,
			   sizeof id));
	printf("  %-12s %s\n", "name", job_str(job, "name", "-"));
	if (job_str(job, "batch", NULL))
		printf("  %-12s %s\n", "batch", job_str(job, "batch", ""));
	printf("  %-12s %s\n", "state", job_str(job, "state", "?"));
	printf("  %-12s %.0f of %.0f\n", "epoch", job_num(job, "epoch", 0),
	       job_num(job, "epochs", 0));
	printf("  %-12s %s dB (best %s dB)\n", "psnr",
	       fmt_number("%.2f", job_num(job, "psnr", NAN), psnr, sizeof psnr),
	       fmt_number("%.2f", job_num(job, "best_psnr", NAN), best,
			  sizeof best));
	printf("  %-12s %s\n", "image", size_text(job, size, sizeof size));
	printf("  %-12s %.0f\n", "width", job_num(job, "width", 0));
	printf("  %-12s %s\n", "device", device_text(job));
	if (job_str(job, "error", NULL))
		printf("  %-12s %s\n", "error", job_str(job, "error", ""));

	cJSON_ArrayForEach(field, job) {
		int seen = 0;
		char *text;
		for (int i = 0; known[i] && !seen; i++)
			seen = field->string && !strcmp(field->string, known[i]);
		if (seen || !field->string)
			continue;
		if (cJSON_IsString(field))
			printf("  %-12s %s\n", field->string,
			       field->valuestring);
		else if ((text = cJSON_PrintUnformatted(field))) {
			printf("  %-12s %s\n", field->string, text);
			free(text);
		}
	}
}

static int cmd_show_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	cJSON *ids = NULL, *job = NULL, *many = NULL;
	const cJSON *id;
	int c, rc, status = CLIENT_EXIT_OK;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind >= argc)
		return cmd_usage_error(self, "name the job to show");
	if ((rc = jobs_resolve(cl, argv + optind, argc - optind, &ids)) < 0)
		return client_fail(cl, rc, NULL);

	/* One job prints as its object; several (a batch) as {"jobs": [...]}. */
	if (cl->json && cJSON_GetArraySize(ids) > 1)
		many = cJSON_CreateArray();
	cJSON_ArrayForEach(id, ids) {
		char what[160], text[128];
		snprintf(what, sizeof what, "job %s",
			 job_id_text(id, text, sizeof text));
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
