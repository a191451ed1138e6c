/*
 * cmd-metrics.c - `vkinrctl metrics`: the whole per-epoch history of jobs
 * (epoch, PSNR, MSE, learning rate, epoch time, and the wall clock's time
 * the daemon recorded the epoch), for a look, for pandas
 * (--csv) or for anything that reads JSON (--json), on stdout or into a
 * file (-o, written as every file vkinrctl writes: client_write_file).
 *
 * The history comes from the daemon's replay (history.c), so it is the
 * same as what watch was shown, from the first epoch on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/client.h"
#include "proto/errors.h"
#include "core/format.h"
#include "core/history.h"
#include "core/jobs.h"

enum { OPT_CSV = OPT_FIRST_COMMAND_OPTION };

#define METRICS_CSV_HEADER "job,name,epoch,psnr,mse,lr,ms,live_psnr,time\n"

static void print_csv(FILE *out, const struct history *h)
{
	for (int i = 0; i < h->n; i++) {
		const struct history_row *r = &h->rows[i];
		fmt_csv_field(out, h->idtext, 0);
		fmt_csv_field(out, h->name, 0);
		fprintf(out, "%d,", r->epoch);
		fmt_csv_number(out, r->psnr, "%.6f", 0);
		fmt_csv_number(out, r->mse, "%.6e", 0);
		fmt_csv_number(out, r->lr, "%.6e", 0);
		fmt_csv_number(out, r->ms, "%.3f", 0);
		fmt_csv_number(out, r->live_psnr, "%.6f", 0);
		fmt_csv_number(out, r->time, "%.3f", 1);
	}
}

/* The wall clock's time of a row, local, as 2026-12-02 19:57:33; "-" for
 * none. */
static const char *wall_text(double t, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;
	if (!isfinite(t) || t <= 0 || !localtime_r(&s, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "-");
	return buf;
}

static void print_table(FILE *out, const struct history *h)
{
	char psnr[32], live[32], mse[32], lr[32], ms[32], wall[32];

	for (int i = 0; i < h->n; i++) {
		const struct history_row *r = &h->rows[i];
		fprintf(out, "%-6s %8d %9s %9s %11s %9s %9s  %s\n", h->idtext,
			r->epoch,
			fmt_number("%.2f", r->psnr, psnr, sizeof(psnr)),
			fmt_number("%.2f", r->live_psnr, live, sizeof(live)),
			fmt_number("%.3e", r->mse, mse, sizeof(mse)),
			fmt_number("%.2e", r->lr, lr, sizeof(lr)),
			fmt_number("%.1f", r->ms, ms, sizeof(ms)),
			wall_text(r->time, wall, sizeof(wall)));
	}
}

static cJSON *history_json(const struct history *h)
{
	cJSON *o = cJSON_CreateObject(), *rows;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "job", h->idtext);
	cJSON_AddStringToObject(o, "name", h->name);
	rows = cJSON_AddArrayToObject(o, "history");
	for (int i = 0; rows && i < h->n; i++) {
		const struct history_row *r = &h->rows[i];
		cJSON *row = cJSON_CreateObject();
		cJSON_AddNumberToObject(row, "epoch", r->epoch);
		if (isfinite(r->psnr))
			cJSON_AddNumberToObject(row, "psnr", r->psnr);
		if (isfinite(r->live_psnr))
			cJSON_AddNumberToObject(row, "live_psnr", r->live_psnr);
		if (isfinite(r->mse))
			cJSON_AddNumberToObject(row, "mse", r->mse);
		if (isfinite(r->lr))
			cJSON_AddNumberToObject(row, "lr", r->lr);
		if (isfinite(r->ms))
			cJSON_AddNumberToObject(row, "ms", r->ms);
		if (isfinite(r->time))
			cJSON_AddNumberToObject(row, "time", r->time);
		cJSON_AddItemToArray(rows, row);
	}
	return o;
}

static int cmd_metrics_exec(struct client *cl, const struct cmd_entry *self,
			    int argc, char **argv)
{
	static const struct option opts[] = {
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	int c, rc, csv = 0, force = 0, status = CLIENT_EXIT_OK;
	cJSON *ids = NULL, *all = NULL;
	char *text = NULL;
	size_t len = 0;
	const cJSON *id;
	FILE *out;

	while ((c = cmd_getopt(argc, argv, "fho:", opts)) != -1) {
		if (c == OPT_CSV)
			csv = 1;
		else if (c == 'o')
			output = optarg;
		else if (c == 'f')
			force = 1;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(self, "name at least one job or batch");
	if (csv && cl->json)
		return cmd_usage_error(self, "--csv and --json exclude each "
					     "other");
	if (output && (status = client_may_write(output, force)))
		return status;
	if ((rc = jobs_resolve_chains(cl, argv + optind, argc - optind, &ids)) <
	    0)
		return client_fail(cl, rc, NULL);
	out = output ? open_memstream(&text, &len) : stdout;
	all = cl->json ? cJSON_CreateArray() : NULL;
	if (!out || (cl->json && !all)) {
		cJSON_Delete(ids);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	if (csv)
		fputs(METRICS_CSV_HEADER, out);
	else if (!cl->json)
		fprintf(out, "%-6s %8s %9s %9s %11s %9s %9s  %s\n", "JOB",
			"EPOCH", "PSNR", "LIVE", "MSE", "LR", "MS", "TIME");
	cJSON_ArrayForEach(id, ids)
	{
		struct history h;
		char what[96];

		if ((rc = history_fetch(cl, id, &h)) < 0) {
			snprintf(what, sizeof(what), "job %s", h.idtext);
			status = client_fail(cl, rc, what);
			break;
		}
		if (cl->json)
			cJSON_AddItemToArray(all, history_json(&h));
		else if (csv)
			print_csv(out, &h);
		else
			print_table(out, &h);
		history_finish(&h);
	}
	if (cl->json && status == CLIENT_EXIT_OK) {
		cJSON *obj = cJSON_CreateObject();
		char *json;
		cJSON_AddItemToObject(obj, "jobs", all);
		all = NULL;
		json = cJSON_PrintUnformatted(obj);
		if (json)
			fprintf(out, "%s\n", json);
		free(json);
		cJSON_Delete(obj);
	}
	cJSON_Delete(all);
	cJSON_Delete(ids);
	if (output) {
		fclose(out);
		if (status == CLIENT_EXIT_OK)
			status = client_write_file(output, text, len, force);
		free(text);
	}
	return status;
}

const struct cmd_entry cmd_metrics_entry = {
	.name = "metrics",
	.alias = NULL,
	.args = "ID|BATCH... [--csv] [-o FILE] [--force]",
	.summary = "every epoch's PSNR, MSE, learning rate and time",
	.help = "The whole history of the jobs, from the first epoch on: a "
		"table, CSV with\n--csv (header "
		"job,name,epoch,psnr,mse,lr,ms,live_psnr,time"
		", for pandas or\ngnuplot), or {\"jobs\":[{\"job\",\"name\","
		"\"history\":[{\"epoch\",\"psnr\",\"mse\",\"lr\",\n"
		"\"ms\",\"live_psnr\",\"time\"}]}]} with --json. psnr is the "
		"model's after the epoch\n(the weights an export writes); "
		"live_psnr the epoch's own, measured before its\nstep; ms the "
		"epoch's own time; time the wall clock's when the daemon "
		"recorded\nthe epoch (Unix seconds; the table shows it local; "
		"empty for epochs kept\nbefore the daemon recorded it).\n"
		"\n"
		"Options:\n"
		"  --csv            comma-separated values\n"
		"  -o, --output F   write to the file F instead of stdout\n"
		"  -f, --force      replace F if it exists\n",
	.exec = cmd_metrics_exec,
};
