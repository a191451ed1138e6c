/*
 * cmd-plot.c - `vkinrctl plot`: the loss curves of jobs (or a batch) as a
 * picture, PSNR, MSE and learning rate against epoch or, with --time, the
 * wall clock's time (local; each epoch's "time"), or with --train-time
 * the training seconds so far, smoothed with --smooth; or with --summary the batch's
 * summary (the mean and spread of PSNR over epochs, a histogram of the
 * final PSNRs). plot.c lays them out; SVG or PNG by the name's ending,
 * written through client_write_file.
 */
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "proto/errors.h"
#include "core/history.h"
#include "core/jobs.h"
#include "pictures/plot.h"

enum { OPT_SMOOTH = OPT_FIRST_COMMAND_OPTION, OPT_SUMMARY, OPT_TRAIN_TIME };

#define PLOT_SMOOTH_MAX 100000

static int ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);
	return n >= m && !strcasecmp(s + n - m, end);
}

/* Renders the histories in the format path asks for; 0 or exit status. */
static int render(const char *path, const struct history *h, int n, int force,
		  const struct plot_opts *o)
{
	uint8_t *png = NULL;
	char *svg = NULL;
	size_t size = 0;
	FILE *out;
	int status;

	if (ends_with(path, ".png")) {
		int rc = plot_png(h, n, o, &png, &size);
		if (rc < 0) {
			client_warn("%s", error_message(rc));
			return CLIENT_EXIT_DAEMON;
		}
		status = client_write_file(path, png, size, force);
		free(png);
		return status;
	}
	if (!(out = open_memstream(&svg, &size))) {
		client_warn("%s", error_message(ERR_NOMEM));
		return CLIENT_EXIT_DAEMON;
	}
	int rc = plot_svg(out, h, n, o);
	fclose(out);
	if (rc < 0) {
		free(svg);
		client_warn("%s", error_message(rc));
		return CLIENT_EXIT_DAEMON;
	}
	status = client_write_file(path, svg, size, force);
	free(svg);
	return status;
}

/* --summary --json: the final PSNRs' figures the picture shows */
static void add_summary(cJSON *out, const struct history *h, int n)
{
	struct plot_stats s;
	cJSON *o = cJSON_AddObjectToObject(out, "summary");

	plot_final_stats(h, n, &s);
	cJSON_AddNumberToObject(o, "jobs", s.n);
	if (!s.n)
		return;
	cJSON_AddNumberToObject(o, "mean", s.mean);
	cJSON_AddNumberToObject(o, "sd", s.sd);
	cJSON_AddNumberToObject(o, "min", s.min);
	cJSON_AddNumberToObject(o, "max", s.max);
}

static int cmd_plot_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "time", no_argument, NULL, 't' },
		{ "train-time", no_argument, NULL, OPT_TRAIN_TIME },
		{ "smooth", required_argument, NULL, OPT_SMOOTH },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct history *h = NULL;
	cJSON *ids = NULL;
	const cJSON *id;
	struct plot_opts po = { .smooth = 1 };
	char *end;
	int c, rc, n = 0, force = 0, status = CLIENT_EXIT_OK;

	while ((c = cmd_getopt(argc, argv, "fho:", opts)) != -1) {
		if (c == 'o')
			output = optarg;
		else if (c == 't')
			po.x = PLOT_X_CLOCK;
		else if (c == OPT_TRAIN_TIME)
			po.x = PLOT_X_TRAINING;
		else if (c == OPT_SUMMARY)
			po.summary = 1;
		else if (c == OPT_SMOOTH &&
			 ((po.smooth = (int)strtol(optarg, &end, 10)) < 1 ||
			  po.smooth > PLOT_SMOOTH_MAX || *end || end == optarg))
			return cmd_usage_error(self,
					       "--smooth takes a number of "
					       "epochs from 1 to %d, not '%s'",
					       PLOT_SMOOTH_MAX, optarg);
		else if (c == 'f')
			force = 1;
		else if (c != OPT_SMOOTH &&
			 (rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(self, "name at least one job or batch");
	if (po.summary && (po.x != PLOT_X_EPOCH || po.smooth > 1))
		return cmd_usage_error(self, "--summary draws the PSNR against "
					     "epochs, as it is: no --time, "
					     "--train-time or --smooth");
	if (!output ||
	    !(ends_with(output, ".png") || ends_with(output, ".svg")))
		return cmd_usage_error(self, "-o FILE.png or -o FILE.svg names "
					     "the picture to write");
	if ((status = client_may_write(output, force)))
		return status;
	if ((rc = jobs_resolve_chains(cl, argv + optind, argc - optind, &ids)) <
	    0)
		return client_fail(cl, rc, NULL);
	h = calloc(cJSON_GetArraySize(ids) + 1, sizeof(*h));
	if (!h) {
		cJSON_Delete(ids);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	cJSON_ArrayForEach(id, ids)
	{
		char what[96];
		if ((rc = history_fetch(cl, id, &h[n])) < 0) {
			snprintf(what, sizeof(what), "job %s", h[n].idtext);
			status = client_fail(cl, rc, what);
			break;
		}
		n++;
	}
	if (status == CLIENT_EXIT_OK)
		status = render(output, h, n, force, &po);
	if (status == CLIENT_EXIT_OK && cl->json) {
		/* {"files": [OUT], "jobs": N}: what a script needs next */
		cJSON *out = cJSON_CreateObject();
		cJSON *files = cJSON_AddArrayToObject(out, "files");
		cJSON_AddItemToArray(files, cJSON_CreateString(output));
		cJSON_AddNumberToObject(out, "jobs", n);
		if (po.summary)
			add_summary(out, h, n);
		client_print_json(out);
		cJSON_Delete(out);
	} else if (status == CLIENT_EXIT_OK) {
		client_say(cl, "wrote %s (%d job%s)\n", output, n,
			   n == 1 ? "" : "s");
	}
	for (int i = 0; i < n; i++)
		history_finish(&h[i]);
	free(h);
	cJSON_Delete(ids);
	return status;
}

const struct cmd_entry cmd_plot_entry = {
	.name = "plot",
	.alias = NULL,
	.args = "ID|BATCH... -o FILE.png|FILE.svg [--time|--train-time] "
		"[--smooth N] [--summary] [--force]",
	.summary = "draw PSNR, loss and learning rate against epoch",
	.help = "Four panels sharing the x axis: PSNR (dB, the model's, the "
		"weights an export\nwrites), live PSNR (each epoch's own), MSE "
		"(log scale) and the learning rate,\none line per job, with "
		"ticks and a grid; the legend names every job, each in a "
		"colour of\nits own. Jobs with no epoch yet give a sentence, "
		"not empty axes. --summary\ndraws a batch's summary instead: "
		"the mean PSNR over epochs with a band of\none standard "
		"deviation and the least and most, and a histogram of the "
		"final\nPSNRs (with --json, their mean, sd, min and max too). "
		"The file's ending picks\nthe format: .svg (text) or .png "
		"(antialiased, drawn by cairo).\n"
		"\n"
		"Options:\n"
		"  -o, --output F   the picture to write (required)\n"
		"  --time           the wall clock's time (local) on the x "
		"axis, not epochs:\n"
		"                   jobs that ran one after another side by "
		"side in time\n"
		"  --train-time     the training seconds so far on the x axis "
		"(the epochs'\n"
		"                   own times summed, pauses left out)\n"
		"  --smooth N       each point the mean of the last N epochs "
		"(not the rate)\n"
		"  --summary        the batch's summary, not the curves\n"
		"  -f, --force      replace F if it exists\n",
	.exec = cmd_plot_exec,
};
