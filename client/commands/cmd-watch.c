/*
 * cmd-watch.c - `vkinrctl watch` and `vkinrctl wait`: follow jobs until
 * they end. Both take job ids and batch ids; the work is in watch.c.
 *
 * watch shows progress (a live view on a terminal, appended lines in a
 * pipe, NDJSON with --json); wait shows nothing until the end, then one
 * line per job (or {"jobs": [...]} with --json). Both exit 0 when every job
 * ended done and 1 when any failed or was cancelled.
 */
#include <stdlib.h>

#include "core/client.h"
#include "core/jobs.h"
#include "slurm/slurm.h"
#include "views/watch.h"

enum { OPT_TIMEOUT = OPT_FIRST_COMMAND_OPTION };

static int follow_exec(struct client *cl, const struct cmd_entry *self,
		       int argc, char **argv, int wait)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	cJSON *ids = NULL;
	int c, rc, status;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1) {
		if (c == OPT_TIMEOUT) {
			if ((rc = cmd_reconnect_option(cl, self, optarg)) >= 0)
				return rc;
		} else if ((rc = cmd_common_option(cl, self, c)) >= 0) {
			return rc;
		}
	}
	if (optind >= argc)
		return cmd_usage_error(self, "name at least one job or batch");
	if ((rc = jobs_resolve(cl, argv + optind, argc - optind, &ids)) < 0)
		return client_fail(cl, rc, NULL);
	status = watch_jobs(
	    cl, ids, wait ? WATCH_QUIET : watch_pick_mode(cl, stdout), stdout);
	cJSON_Delete(ids);
	return status;
}

static int cmd_watch_exec(struct client *cl, const struct cmd_entry *self,
			  int argc, char **argv)
{
	return follow_exec(cl, self, argc, argv, 0);
}

static int cmd_wait_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	if (slurm_has_option(argc, argv, "--out"))
		return slurm_wait_exec(cl, self, argc, argv);
	return follow_exec(cl, self, argc, argv, 1);
}

const struct cmd_entry cmd_watch_entry = {
	.name = "watch",
	.alias = NULL,
	.args = "[--timeout S] ID...",
	.summary = "live per-epoch metrics until the jobs end",
	.help = "On a terminal: one line per job, redrawn in place (epoch, "
		"PSNR and best,\nMSE, learning rate, epochs/s, ETA, a "
		"sparkline of PSNR), and a total line\nfor several jobs. "
		"Otherwise: one appended line per job at most every second,\n"
		"plus the last point and every change of state. With --json: "
		"one JSON object\nper notification ({\"event\":\"job.progress\""
		",\"job\",\"epoch\",\"mse\",\"psnr\",\"lr\",\"ms\",\n"
		"\"psnr_best\"} or "
		"{\"event\":\"job.state\",\"job\",\"state\"}).\n"
		"\n"
		"If the daemon goes away (a restart), watch connects again for "
		"up to --timeout\nseconds (default 60; 0: give up at once) and "
		"carries on.\n"
		"\n"
		"Exit status: 0 when every job ended done, 1 when any failed "
		"or was cancelled,\n69 when the daemon stayed away. "
		"Interrupting watch leaves the jobs running.\n",
	.exec = cmd_watch_exec,
};

const struct cmd_entry cmd_wait_entry = {
	.name = "wait",
	.alias = NULL,
	.args = "[--timeout S] ID... | --out OUT",
	.summary = "block until the jobs end",
	.help = "Prints one line per job when all have ended ({\"jobs\": "
		"[...]} with --json).\nA paused job is waited for until it is "
		"resumed and ends. If the daemon goes away (a restart), wait "
		"connects again\nfor up to --timeout seconds (default 60; 0: "
		"give up at once) and carries on.\n"
		"\n"
		"With --out OUT: waits for a dataset fitted on Slurm (submit "
		"--slurm) until\nevery image has a result or no task is left "
		"in the queue, then lists them.\n"
		"\n"
		"Exit status: 0 when every job ended done, 1 when any failed "
		"or was cancelled\n(with --out: or was left unfitted), 69 when "
		"the daemon "
		"stayed away.\n",
	.exec = cmd_wait_exec,
};
