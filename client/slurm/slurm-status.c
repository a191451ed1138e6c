/*
 * slurm-status.c - `vkinrctl list --out OUT` and `wait --out OUT`: the
 * images of a Slurm dataset fit, from their folders (OUT/NAME/result.json
 * marks an ended image) and squeue for the last submission's tasks.
 * Nothing here talks to the daemon.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "core/fitopts.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/params.h"
#include "util/image.h"
#include "util/path.h"
#include "slurm/slurm.h"
#include "slurm/slurm-internal.h"

/* ---------------------------------------------------------------------- */
/* list --out, wait --out                                                  */
/* ---------------------------------------------------------------------- */

/* The last submission: its job id and task count, from OUT/.vkinr/jobs. */
static int last_job(const char *out, char *id, size_t idlen, long *tasks)
{
	char *path = meta_path(out, "jobs"), line[128];
	FILE *f = path ? fopen(path, "r") : NULL;
	int found = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char jid[64];
		long n;
		if (sscanf(line, "%63s %ld", jid, &n) == 2 && n > 0) {
			snprintf(id, idlen, "%s", jid);
			*tasks = n;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	free(path);
	return found;
}

/* Slurm states of the job's tasks still known to squeue, by task index
 * (NULL: not queued). Returns -1 when squeue could not be asked. */
static int slurm_states(const char *id, long tasks, char ***states)
{
	char *argv[] = { "squeue",   "-h", "-r",    "-j",
			 (char *)id, "-o", "%K %T", NULL };
	char *text = NULL, *save = NULL;
	*states = calloc((size_t)tasks, sizeof(char *));
	if (!*states)
		return -1;
	int status = run_capture(argv, &text);
	for (char *line = status == 0 && text ? strtok_r(text, "\n", &save)
					      : NULL;
	     line; line = strtok_r(NULL, "\n", &save)) {
		long k;
		char state[32];
		if (sscanf(line, "%ld %31s", &k, state) == 2 && k >= 0 &&
		    k < tasks && !(*states)[k]) {
			for (char *c = state; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			(*states)[k] = strdup(state);
		}
	}
	free(text);
	return status == 0 ? 0 : -1;
}

struct overview {
	cJSON *images; /* one object per manifest line */
	int done, failed, unended;
	double seconds, psnr_sum;
	char job[64];
	int squeue_ok;
};

static cJSON *read_result(const char *out, const char *name)
{
	char *path;
	uint8_t *data = NULL;
	size_t size;
	cJSON *r = NULL;
	if (asprintf(&path, "%s/%s/result.json", out, name) < 0)
		return NULL;
	if (fileio_read(path, &data, &size, 1 << 20) == 0)
		r = cJSON_Parse((const char *)data);
	free(data);
	free(path);
	return r;
}

static int has_checkpoint(const char *out, const char *name)
{
	char *path;
	if (asprintf(&path, "%s/%s/checkpoint.safetensors", out, name) < 0)
		return 0;
	int yes = access(path, F_OK) == 0;
	free(path);
	return yes;
}

/* Squeue first, then the folders: a task writes its results before it
 * leaves the queue, so an image seen unended with its task gone is lost. */
static int overview_read(const char *out, struct overview *o)
{
	struct manifest m = { 0 };
	char **states = NULL;
	long tasks = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	if (last_job(out, o->job, sizeof(o->job), &tasks))
		o->squeue_ok = slurm_states(o->job, tasks, &states) == 0;
	if ((rc = manifest_read(out, &m)) < 0)
		goto fail;
	o->images = cJSON_CreateArray();
	for (size_t i = 0; i < m.n && o->images; i++) {
		cJSON *r = read_result(out, m.e[i].name);
		const char *state = job_str(r, "state", "");
		if (!r || (strcmp(state, "done") && strcmp(state, "failed"))) {
			cJSON_Delete(r);
			r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "name", m.e[i].name);
			cJSON_AddStringToObject(r, "file", m.e[i].path);
			long k = tasks ? (long)(i % (size_t)tasks) : -1;
			const char *slurm = k >= 0 && states ? states[k] : NULL;
			cJSON_AddStringToObject(r, "state",
						has_checkpoint(out, m.e[i].name)
						    ? "checkpointed"
						: slurm ? "queued"
							: "not fitted");
			if (k >= 0) {
				char tid[96];
				snprintf(tid, sizeof(tid), "%s_%ld", o->job, k);
				cJSON_AddStringToObject(r, "slurm_job", tid);
				cJSON_AddStringToObject(r, "slurm_state",
							slurm ? slurm : "gone");
			}
			o->unended++;
		} else if (!strcmp(state, "done")) {
			o->done++;
			o->psnr_sum += job_num(r, "psnr", 0);
		} else {
			o->failed++;
		}
		if (isfinite(job_num(r, "seconds", NAN)))
			o->seconds += job_num(r, "seconds", 0);
		cJSON_AddItemToArray(o->images, r);
	}
	if (!o->images)
		rc = ERR_NOMEM;
fail:
	for (long k = 0; states && k < tasks; k++)
		free(states[k]);
	free(states);
	manifest_finish(&m);
	return rc;
}

static void print_csv_field(const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		putchar('"');
		for (; *s; s++)
			fputs(*s == '"' ? "\"\"" : (char[]){ *s, 0 }, stdout);
		putchar('"');
	} else {
		fputs(s, stdout);
	}
	putchar(last ? '\n' : ',');
}

static void print_overview(const struct overview *o, int csv, int json)
{
	const cJSON *r;
	char buf[64], size[32], psnr[32], epochs[32], took[32];

	if (json) {
		cJSON *top = cJSON_CreateObject();
		cJSON_AddItemReferenceToObject(top, "images", o->images);
		cJSON_AddNumberToObject(top, "done", o->done);
		cJSON_AddNumberToObject(top, "failed", o->failed);
		cJSON_AddNumberToObject(top, "unended", o->unended);
		if (*o->job)
			cJSON_AddStringToObject(top, "slurm_job", o->job);
		client_print_json(top);
		cJSON_Delete(top);
		return;
	}
	if (csv)
		fputs("name,file,state,width,height,epochs,psnr,seconds,"
		      "device,slurm_job,slurm_state,error\n",
		      stdout);
	else
		printf("%-20s %9s %7s %8s %8s %-12s %-14s %s\n", "NAME", "SIZE",
		       "EPOCHS", "PSNR", "TIME", "STATE", "SLURM", "DEVICE");
	cJSON_ArrayForEach(r, o->images)
	{
		double w = job_num(r, "width", NAN),
		       h = job_num(r, "height", NAN);
		if (csv) {
			const char *text[] = { "name", "file", "state" };
			for (int i = 0; i < 3; i++)
				print_csv_field(job_str(r, text[i], ""), 0);
			const char *nums[] = { "width", "height", "epochs",
					       "psnr", "seconds" };
			for (int i = 0; i < 5; i++) {
				double v = job_num(r, nums[i], NAN);
				snprintf(buf, sizeof(buf),
					 isfinite(v) ? "%.6g" : "", v);
				print_csv_field(buf, 0);
			}
			print_csv_field(job_str(r, "device", ""), 0);
			print_csv_field(job_str(r, "slurm_job", ""), 0);
			print_csv_field(job_str(r, "slurm_state", ""), 0);
			print_csv_field(job_str(r, "error", ""), 1);
			continue;
		}
		if (isfinite(w) && isfinite(h))
			snprintf(size, sizeof(size), "%.0fx%.0f", w, h);
		else
			snprintf(size, sizeof(size), "-");
		snprintf(buf, sizeof(buf), "%s%s%s",
			 job_str(r, "slurm_job", "-"),
			 cJSON_HasObjectItem(r, "slurm_state") ? " " : "",
			 job_str(r, "slurm_state", ""));
		printf("%-20.20s %9s %7s %8s %8s %-12s %-14s %s\n",
		       job_str(r, "name", "-"), size,
		       fmt_number("%.0f", job_num(r, "epochs", NAN), epochs,
				  sizeof(epochs)),
		       fmt_number("%.2f", job_num(r, "psnr", NAN), psnr,
				  sizeof(psnr)),
		       fmt_duration(job_num(r, "seconds", NAN), took,
				    sizeof(took)),
		       job_str(r, "state", "?"), buf,
		       job_str(r, "error", job_str(r, "device", "-")));
	}
	if (csv)
		return;
	printf("%d images: %d done, %d failed, %d not ended",
	       o->done + o->failed + o->unended, o->done, o->failed,
	       o->unended);
	if (o->done)
		printf("; mean PSNR %.2f dB", o->psnr_sum / o->done);
	if (o->seconds > 0)
		printf("; %s of job time",
		       fmt_duration(o->seconds, buf, sizeof(buf)));
	putchar('\n');
}

static int parse_out_options(struct client *cl, const struct cmd_entry *self,
			     int argc, char **argv, const char **out, int *csv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, OPT_OUT },
		{ "csv", no_argument, NULL, OPT_CSV },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;
	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1) {
		if (c == OPT_OUT)
			*out = optarg;
		else if (c == OPT_CSV && csv)
			*csv = 1;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind < argc)
		return cmd_usage_error(self,
				       "unexpected argument '%s' (--out "
				       "takes no job ids)",
				       argv[optind]);
	if (csv && *csv && cl->json)
		return cmd_usage_error(self, "--csv and --json exclude each "
					     "other");
	return -1;
}

static int overview_or_fail(const char *out, struct overview *o)
{
	int rc = overview_read(out, o);
	if (rc == ERR_NOT_FOUND)
		client_warn("%s holds no dataset fit (no %s/" META_DIR
			    "/" MANIFEST "): submit one with vkinrctl submit "
			    "--slurm --out %s",
			    out, out, out);
	else if (rc < 0)
		client_warn("%s: %s", out, error_message(rc));
	return rc;
}

int slurm_list_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv)
{
	const char *out = NULL;
	int csv = 0, rc = parse_out_options(cl, self, argc, argv, &out, &csv);
	struct overview o;
	if (rc >= 0)
		return rc;
	if (overview_or_fail(out, &o) < 0)
		return CLIENT_EXIT_DAEMON;
	print_overview(&o, csv, cl->json);
	cJSON_Delete(o.images);
	return CLIENT_EXIT_OK;
}

/* How many of the job's tasks squeue still lists; -1 when it cannot say. */
static int queued_tasks(const char *id, long tasks)
{
	char **states = NULL;
	int n = slurm_states(id, tasks, &states) == 0 ? 0 : -1;
	for (long k = 0; states && k < tasks; k++) {
		n += n >= 0 && states[k];
		free(states[k]);
	}
	free(states);
	return n;
}

/* Asks squeue (more and more rarely, up to every 10 s) until no task of
 * the last submission is queued, then reads the results once: a million
 * result files are not read again at every poll. */
int slurm_wait_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv)
{
	const char *out = NULL;
	int rc = parse_out_options(cl, self, argc, argv, &out, NULL);
	struct overview o;
	char id[64];
	long tasks;
	if (rc >= 0)
		return rc;
	if (last_job(out, id, sizeof(id), &tasks)) {
		double pause = 0.5;
		while (queued_tasks(id, tasks) > 0) {
			struct timespec ts = { (time_t)pause,
					       (long)((pause - (time_t)pause) *
						      1e9) };
			nanosleep(&ts, NULL);
			pause = pause * 1.25 < 10 ? pause * 1.25 : 10;
		}
	}
	if (overview_or_fail(out, &o) < 0)
		return CLIENT_EXIT_DAEMON;
	print_overview(&o, 0, cl->json);
	cJSON_Delete(o.images);
	if (o.unended)
		client_warn("%d image%s not ended and %s: submit the same "
			    "dataset again to fit %s",
			    o.unended, o.unended == 1 ? " is" : "s are",
			    !*o.job        ? "no Slurm job is recorded"
			    : !o.squeue_ok ? "squeue could not be asked"
					   : "no task is queued",
			    o.unended == 1 ? "it" : "them");
	return o.failed || o.unended ? CLIENT_EXIT_JOB_FAILED : CLIENT_EXIT_OK;
}
