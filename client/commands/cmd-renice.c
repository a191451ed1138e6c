/*
 * cmd-renice.c - `renice ID|BATCH... N`: a job's priority changed after
 * submission (job.renice), for queued and paused jobs alike (a running
 * job keeps running; the new priority counts when it next waits).
 *
 * The priority comes last, as a plain integer (a negative one too: it is
 * taken off the words before the options are read, so `renice 7 -5`
 * works without `--`). A priority orders only the caller's own jobs; the
 * daemon refuses one above 100 but from root (which puts the job before
 * everyone's). Every job named is tried; the exit status is 3 if any was
 * refused. With --json: {"results": [{"job", "priority", "was"} or
 * {"job", "error"}]}.
 */
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "core/conn.h"
#include "core/jobs.h"
#include "proto/errors.h"
#include "proto/protocol.h"

/* Whether s is a whole number, maybe negative. */
static int is_integer(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int cmd_renice_exec(struct client *cl, const struct cmd_entry *self,
			   int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, rc, status = CLIENT_EXIT_OK;
	int given = argc >= 2 && is_integer(argv[argc - 1]);
	long priority = given ? strtol(argv[argc - 1], NULL, 10) : 0;
	argc -= given;
	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (!given)
		return cmd_usage_error(self, "the last word is the new "
					     "priority, an integer");
	if (optind >= argc)
		return cmd_usage_error(self, "name at least one job or batch "
					     "before the priority");
	cJSON *ids = NULL, *results = NULL, *result = NULL;
	if ((rc = jobs_resolve(cl, argv + optind, argc - optind, &ids)) < 0)
		return client_fail(cl, rc, NULL);
	if (cl->json)
		results = cJSON_CreateArray();
	const cJSON *id;
	cJSON_ArrayForEach(id, ids)
	{
		char text[128], what[160];
		job_id_text(id, text, sizeof(text));
		cJSON *params = job_params(id);
		cJSON_AddNumberToObject(params, "priority", (double)priority);
		rc = client_call(cl, M_JOB_RENICE, params, &result);
		if (rc == 0) {
			int was = (int)job_num(result, "was", 0);
			if (results) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddItemToObject(o, "job",
						      cJSON_Duplicate(id, 1));
				cJSON_AddNumberToObject(o, "priority",
							(double)priority);
				cJSON_AddNumberToObject(o, "was", was);
				cJSON_AddItemToArray(results, o);
			} else {
				printf("job %s priority %ld (was %d)\n", text,
				       priority, was);
			}
		}
		cJSON_Delete(result);
		result = NULL;
		if (rc == 0)
			continue;
		snprintf(what, sizeof(what), "renice job %s", text);
		if (rc == CLIENT_ERR_RPC) {
			const char *message;
			if (results)
				cJSON_AddItemToArray(results,
						     cmd_refusal(cl, id));
			conn_last_error(cl->conn, &message, NULL);
			client_warn("%s: %s", what, message);
			status = CLIENT_EXIT_DAEMON;
			continue;
		}
		status = client_fail(cl, rc, what);
		break;
	}
	cmd_print_results(results, status);
	cJSON_Delete(ids);
	return status;
}

const struct cmd_entry cmd_renice_entry = {
	.name = "renice",
	.alias = NULL,
	.args = "ID|BATCH... PRIORITY",
	.summary = "change the priority of queued or paused jobs",
	.help = "A priority (-100 to 100) orders only your own jobs: which "
		"user's job runs\nnext is fair between users (the one whose "
		"jobs had the least device time\nlately). Root may give "
		"101 to 1000, which puts a job before everyone's.\nA running "
		"job is not stopped; a pack admits waiting jobs in the new "
		"order.\n",
	.exec = cmd_renice_exec,
};
