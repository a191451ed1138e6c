/*
 * cmd-logs.c - `vkinrctl logs ID`: what happened to one job, with times
 * (submitted, started on which device, paused, resumed, done or failed
 * and why), as the daemon logged it.
 *
 * The events come from job.logs; each prints as "TIME  TEXT", the time
 * local to the second, the text escaped (text_escape) since it may hold
 * what a client sent. --json prints the daemon's answer as it is.
 */
#include <stdlib.h>

#include "client.h"
#include "proto/errors.h"
#include "format.h"
#include "jobs.h"
#include "proto/protocol.h"
#include "proto/text.h"

static void print_events(const cJSON *events)
{
	const cJSON *e;
	char when[64];

	cJSON_ArrayForEach(e, events)
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "time");
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "text");
		char *safe =
		    text_escape(cJSON_IsString(s) ? s->valuestring : "", 0);
		printf("%s  %s\n",
		       fmt_date(cJSON_IsNumber(t) ? t->valuedouble : -1, when,
				sizeof(when)),
		       safe ? safe : "?");
		free(safe);
	}
}

static int cmd_logs_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	cJSON *id, *result = NULL;
	char what[160];
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind >= argc)
		return cmd_usage_error(self,
				       "name the job whose events to show");
	if (optind + 1 < argc)
		return cmd_usage_error(self, "one job at a time");
	if (!(id = cJSON_CreateString(argv[optind])))
		return client_fail(cl, ERR_NOMEM, NULL);
	snprintf(what, sizeof(what), "job %s", argv[optind]);
	rc = client_call(cl, M_JOB_LOGS, job_params(id), &result);
	cJSON_Delete(id);
	if (rc < 0)
		return client_fail(cl, rc, what);
	if (cl->json)
		client_print_json(result);
	else
		print_events(
		    cJSON_GetObjectItemCaseSensitive(result, "events"));
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.alias = NULL,
	.args = "ID",
	.summary = "one job's events, with times (as the daemon logged them)",
	.help = "Prints \"TIME  TEXT\" lines, oldest first: submitted, "
		"started on a device,\npaused, resumed, done, failed and why. "
		"They are kept with the job, across\ndaemon restarts, until "
		"`rm`. With --json: {\"job\": ID, \"events\":\n[{\"time\": "
		"UNIX_SECONDS, \"text\": TEXT}, ...]}.\n\n"
		"Exit status: 0, or 3 when there is no such job.\n",
	.exec = cmd_logs_exec,
};
