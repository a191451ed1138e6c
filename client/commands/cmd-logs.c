/*
 * cmd-logs.c - `vkinrctl logs ID`: what happened to one job, with times
 * (submitted, started on which device, paused, resumed, done or failed
 * and why), as the daemon logged it; `logs -f` follows them until the job
 * ends.
 *
 * The events come from job.logs; each prints as "TIME  TEXT", the time
 * local to the second, the text escaped (text_escape) since it may hold
 * what a client sent. --json prints the daemon's answer as it is (with
 * -f, one {"job","time","text"} object a line). -f asks again every
 * LOGS_POLL_MS and prints what came after the last event it printed: the
 * events are few (a job's state changes), and polling needs nothing more
 * of the daemon than job.logs. When the daemon goes away (a restart, an
 * upgrade) -f connects again, as watch does, for up to --timeout seconds
 * (CLIENT_RECONNECT_S by default), and goes on after the last event it
 * printed: the events are kept with the job across restarts.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/protocol.h"
#include "proto/text.h"

#define LOGS_POLL_MS 300

enum { OPT_TIMEOUT = OPT_FIRST_COMMAND_OPTION };

static void print_event(struct client *cl, const cJSON *id, const cJSON *e)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "time");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "text");
	char when[64], *safe;

	if (cl->json) { /* -f: one object a line */
		cJSON *o = cJSON_Duplicate(e, 1);
		cJSON_AddItemToObject(o, "job", cJSON_Duplicate(id, 1));
		client_print_json(o);
		cJSON_Delete(o);
		return;
	}
	safe = text_escape(cJSON_IsString(s) ? s->valuestring : "", 0);
	printf("%s  %s\n",
	       fmt_date(cJSON_IsNumber(t) ? t->valuedouble : -1, when,
			sizeof(when)),
	       safe ? safe : "?");
	free(safe);
}

/* Whether two events are the same one (time and text). */
static int same_event(const cJSON *a, const cJSON *b)
{
	return a && b && job_num(a, "time", -1) == job_num(b, "time", -2) &&
	       !strcmp(job_str(a, "text", ""), job_str(b, "text", "?"));
}

/* Prints the events after *last (all when it is NULL) and keeps the newest
 * printed in *last. The daemon sends the newest ones when there are many:
 * when *last has scrolled out, those newer than its time print. */
static void print_new(struct client *cl, const cJSON *id, const cJSON *events,
		      cJSON **last)
{
	const cJSON *e, *from = NULL;
	int seen = *last == NULL;

	if (*last)
		cJSON_ArrayForEach(e, events) if (same_event(e, *last)) from =
		    e;
	cJSON_ArrayForEach(e, events)
	{
		if (!seen && !from &&
		    job_num(e, "time", 0) > job_num(*last, "time", 0))
			seen = 1;
		if (seen)
			print_event(cl, id, e);
		if (e == from)
			seen = 1;
	}
	e = cJSON_GetArrayItem(events, cJSON_GetArraySize(events) - 1);
	if (e && seen) {
		cJSON_Delete(*last);
		*last = cJSON_Duplicate(e, 1);
	}
	fflush(stdout);
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* -f: prints the events as they come until the job has ended (its last
 * events printed). */
static int follow(struct client *cl, const cJSON *id, const char *what)
{
	cJSON *last = NULL, *result = NULL, *job = NULL;
	int rc, ended = 0;

	while (!ended) {
		/* the state first: an event that ends the job is then in
		 * the list read after it */
		rc = client_call(cl, M_JOB_GET, job_params(id), &job);
		if (rc == 0)
			ended = job_state_ended(job_str(job, "state", ""));
		cJSON_Delete(job);
		job = NULL;
		if (rc == 0)
			rc = client_call(cl, M_JOB_LOGS, job_params(id),
					 &result);
		if (rc < 0 && client_lost(cl, rc) && cl->reconnect_s > 0) {
			client_warn("lost vkinrd (%s); reconnecting for up to "
				    "%.0f s",
				    cl->conn ? conn_why(cl->conn) : "gone",
				    cl->reconnect_s);
			ended = 0;
			if ((rc = client_reconnect(cl)) == 0)
				continue; /* from the last event printed */
		}
		if (rc < 0) {
			cJSON_Delete(last);
			return client_fail(cl, rc, what);
		}
		print_new(cl, id,
			  cJSON_GetObjectItemCaseSensitive(result, "events"),
			  &last);
		cJSON_Delete(result);
		result = NULL;
		if (!ended)
			pause_ms(LOGS_POLL_MS);
	}
	cJSON_Delete(last);
	return CLIENT_EXIT_OK;
}

static int cmd_logs_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	cJSON *ids = NULL, *result = NULL, *last = NULL;
	const cJSON *id;
	char what[160], text[128];
	int c, rc, follow_them = 0;

	while ((c = cmd_getopt(argc, argv, "hf", opts)) != -1)
		if (c == 'f') {
			follow_them = 1;
		} else if (c == OPT_TIMEOUT) {
			if ((rc = cmd_reconnect_option(cl, self, optarg)) >= 0)
				return rc;
		} else if ((rc = cmd_common_option(cl, self, c)) >= 0) {
			return rc;
		}
	if (optind >= argc)
		return cmd_usage_error(self,
				       "name the job whose events to show");
	if (optind + 1 < argc)
		return cmd_usage_error(self, "one job at a time");
	if ((rc = jobs_resolve(cl, argv + optind, 1, &ids)) < 0)
		return client_fail(cl, rc, NULL);
	if (cJSON_GetArraySize(ids) != 1) {
		cJSON_Delete(ids);
		return cmd_usage_error(self,
				       "'%s' is a batch of several jobs; "
				       "name one of them",
				       argv[optind]);
	}
	id = cJSON_GetArrayItem(ids, 0);
	snprintf(what, sizeof(what), "job %s",
		 job_id_text(id, text, sizeof(text)));
	if (follow_them) {
		rc = follow(cl, id, what);
		cJSON_Delete(ids);
		return rc;
	}
	rc = client_call(cl, M_JOB_LOGS, job_params(id), &result);
	cJSON_Delete(ids);
	if (rc < 0)
		return client_fail(cl, rc, what);
	if (cl->json)
		client_print_json(result);
	else
		print_new(cl, NULL,
			  cJSON_GetObjectItemCaseSensitive(result, "events"),
			  &last);
	cJSON_Delete(last);
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.alias = NULL,
	.args = "[-f [--timeout S]] ID|NAME",
	.summary = "one job's events, with times (as the daemon logged them)",
	.help =
	    "Prints \"TIME  TEXT\" lines, oldest first: submitted, "
	    "started on a device,\npaused, resumed, done, failed and why. "
	    "They are kept with the job, across\ndaemon restarts, until "
	    "`rm`. With --json: {\"job\": ID, \"events\":\n[{\"time\": "
	    "UNIX_SECONDS, \"text\": TEXT}, ...]}.\n\n"
	    "  -f, --follow   go on printing the events as they come, "
	    "until the job\n"
	    "                 ends (done, failed or cancelled); with "
	    "--json one\n"
	    "                 {\"job\", \"time\", \"text\"} object a line;\n"
	    "                 when the daemon restarts it connects again "
	    "and goes on\n"
	    "  --timeout S    -f: how long to try reaching a daemon that "
	    "went away\n"
	    "                 (default 60 s; 0: give up at once, exit "
	    "69)\n"
	    "\n"
	    "Exit status: 0, or 3 when there is no such job.\n",
	.exec = cmd_logs_exec,
};
