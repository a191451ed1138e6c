/*
 * cmd-control.c - `pause`, `resume`, `cancel`, `rm` and `retry`: one
 * request per job that changes its state, for job ids, batch ids and job
 * names alike.
 *
 * The five differ only in the method they call and the word they print,
 * so they share one exec function driven by a small table. `rm -f`
 * cancels a running job first; `retry` prints the new job's id (alone
 * with -q). A name that a job and its retries share means the newest of
 * them, and all of them for `rm` (jobs_resolve_chains). Every job named
 * is tried even when an earlier one is refused; the exit status is then 3,
 * and each refusal is named. --state S picks the caller's jobs in state S
 * (among the batches or jobs named, if any): `rm --state done` clears the
 * ended jobs that count against the per-user limit. With --json the outcome is one object:
 * {"results": [{"job": ID, "ok": true} or {"job": ID, "error": {...}}]}; retry's
 * results also hold "retried_as": NEW_ID.
 */
#include <string.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "core/jobs.h"
#include "proto/protocol.h"

enum { OPT_STATE = OPT_FIRST_COMMAND_OPTION };

static int cmd_control_exec(struct client *cl, const struct cmd_entry *self,
			    int argc, char **argv);

struct control {
	const char *name;   /* the command */
	const char *method; /* what it calls */
	const char *done;   /* what it prints: "job 12 paused" */
};

static const struct control controls[] = {
	{ "pause", M_JOB_PAUSE, "paused" },
	{ "resume", M_JOB_RESUME, "resumed" },
	{ "cancel", M_JOB_CANCEL, "cancelled" },
	{ "rm", M_JOB_REMOVE, "removed" },
	{ "retry", M_JOB_RETRY, "retried as job" },
	{ NULL, NULL, NULL },
};

cJSON *cmd_refusal(struct client *cl, const cJSON *id)
{
	cJSON *o = cJSON_CreateObject(), *err;
	const char *message;
	const cJSON *data;
	int code;

	if (!o)
		return NULL;
	cJSON_AddItemToObject(o, "job", cJSON_Duplicate(id, 1));
	code = conn_last_error(cl->conn, &message, &data);
	err = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	if (data)
		cJSON_AddItemToObject(err, "data", cJSON_Duplicate(data, 1));
	return o;
}

void cmd_print_results(cJSON *results, int status)
{
	if (results && status != CLIENT_EXIT_UNREACHABLE) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddItemToObject(out, "results", results);
		client_print_json(out);
		cJSON_Delete(out);
	} else {
		cJSON_Delete(results);
	}
}

static cJSON *outcome(const cJSON *id, struct client *cl, int rc,
		      const cJSON *result)
{
	if (rc)
		return cmd_refusal(cl, id);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddItemToObject(o, "job", cJSON_Duplicate(id, 1));
	const cJSON *made =
	    cJSON_GetObjectItemCaseSensitive(result, "retry_of")
		? cJSON_GetObjectItemCaseSensitive(result, "job")
		: NULL;
	cJSON_AddTrueToObject(o, "ok");
	if (made)
		cJSON_AddItemToObject(o, "retried_as",
				      cJSON_Duplicate(made, 1));
	return o;
}

/* One job's request; with force (rm -f), a running job is cancelled
 * first and removed then. */
static int control_one(struct client *cl, const struct control *ctl,
		       const cJSON *id, int force, cJSON **result)
{
	int rc = client_call(cl, ctl->method, job_params(id), result);

	if (rc == CLIENT_ERR_RPC && force &&
	    conn_last_error(cl->conn, NULL, NULL) == RPC_JOB_STATE) {
		cJSON_Delete(*result);
		*result = NULL;
		rc = client_call(cl, M_JOB_CANCEL, job_params(id), result);
		cJSON_Delete(*result);
		*result = NULL;
		if (rc == 0)
			rc = client_call(cl, ctl->method, job_params(id),
					 result);
	}
	return rc;
}

/* What a job's request did, for people: "job 3 paused", "job 3 retried
 * as job 9" (-q: "9"). */
static void say_done(const struct control *ctl, const char *text,
		     const cJSON *result, int quiet)
{
	char made[128];
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(result, "job");

	if (strcmp(ctl->method, M_JOB_RETRY)) {
		printf("job %s %s\n", text, ctl->done);
		return;
	}
	job_id_text(id, made, sizeof(made));
	if (quiet)
		printf("%s\n", made);
	else
		printf("job %s %s %s\n", text, ctl->done, made);
}

static int cmd_control_exec(struct client *cl, const struct cmd_entry *self,
			    int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, OPT_STATE },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const struct control *ctl = controls;
	cJSON *ids = NULL, *results = NULL, *result = NULL;
	const char *state = NULL;
	const cJSON *id;
	int c, rc, status = CLIENT_EXIT_OK, force = 0, quiet = 0;

	while (strcmp(ctl->name, self->name))
		ctl++;
	while ((c = cmd_getopt(argc, argv, "hfq", opts)) != -1) {
		if (c == OPT_STATE)
			state = optarg;
		else if (c == 'f' && !strcmp(ctl->method, M_JOB_REMOVE))
			force = 1;
		else if (c == 'q' && !strcmp(ctl->method, M_JOB_RETRY))
			quiet = 1;
		else if (c == 'f' || c == 'q')
			return cmd_usage_error(self, "-%c belongs to %s", c,
					       c == 'f' ? "rm" : "retry");
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (state && !job_state_known(state))
		return cmd_usage_error(self,
				       "--state takes one of queued, "
				       "running, paused, done, failed, "
				       "cancelled; not '%s'",
				       state);
	if (optind >= argc && !state)
		return cmd_usage_error(self, "name at least one job or batch, "
					     "or --state S");
	rc = state
		 ? jobs_in_state(cl, argv + optind, argc - optind, state, &ids)
	     : !strcmp(ctl->method, M_JOB_REMOVE)
		 ? jobs_resolve_chains(cl, argv + optind, argc - optind, &ids)
		 : jobs_resolve(cl, argv + optind, argc - optind, &ids);
	if (rc < 0)
		return client_fail(cl, rc, NULL);
	if (state && cJSON_GetArraySize(ids) == 0) {
		if (!quiet)
			client_say(cl, "No %s jobs of yours.\n", state);
		cJSON_Delete(ids);
		return CLIENT_EXIT_OK;
	}
	if (cl->json && !(results = cJSON_CreateArray())) {
		cJSON_Delete(ids);
		return client_fail(cl, ERR_NOMEM, NULL);
	}

	cJSON_ArrayForEach(id, ids)
	{
		char text[128], what[160];
		job_id_text(id, text, sizeof(text));
		rc = control_one(cl, ctl, id, force, &result);
		if (rc == 0 || rc == CLIENT_ERR_RPC) {
			if (results)
				cJSON_AddItemToArray(
				    results, outcome(id, cl, rc, result));
			if (rc == 0 && !cl->json)
				say_done(ctl, text, result, quiet);
		}
		cJSON_Delete(result);
		result = NULL;
		if (rc == 0)
			continue;
		snprintf(what, sizeof(what), "%s job %s", ctl->name, text);
		if (rc == CLIENT_ERR_RPC) {
			const char *message;
			int code = conn_last_error(cl->conn, &message, NULL);
			client_warn("%s: %s%s", what, message,
				    code == RPC_JOB_STATE && !force &&
					    !strcmp(ctl->method, M_JOB_REMOVE)
					? " (rm -f cancels and removes)"
					: "");
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

const struct cmd_entry cmd_pause_entry = {
	.name = "pause",
	.alias = NULL,
	.args = "ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "stop jobs at the next epoch, keeping their checkpoint",
	.help = "A paused job frees its device for other jobs; `resume` "
		"queues it again and\nit continues from where it stopped.\n",
	.exec = cmd_control_exec,
};

const struct cmd_entry cmd_resume_entry = {
	.name = "resume",
	.alias = NULL,
	.args = "ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "queue paused jobs again",
	.help = "",
	.exec = cmd_control_exec,
};

const struct cmd_entry cmd_cancel_entry = {
	.name = "cancel",
	.alias = NULL,
	.args = "ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "stop jobs for good (their files stay until rm)",
	.help = "",
	.exec = cmd_control_exec,
};

const struct cmd_entry cmd_remove_entry = {
	.name = "rm",
	.alias = "remove",
	.args = "[-f] ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "delete jobs and their files from the daemon",
	.help = "A running job is refused unless -f (--force) is given: it is "
		"then cancelled\nfirst, then removed.\n",
	.exec = cmd_control_exec,
};

const struct cmd_entry cmd_retry_entry = {
	.name = "retry",
	.alias = NULL,
	.args = "[-q] ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "run failed or cancelled jobs again from scratch, as new "
		   "jobs",
	.help = "Each job named is submitted again by the daemon: the same "
		"image, init model,\nname, batch and settings (those left to "
		"the daemon are chosen again), as a\nnew job that starts from "
		"epoch 0; the old job stays until `rm`. The new\njob does not "
		"wait for the old one's --after jobs. `resume` instead\n"
		"continues a paused or failed job from its checkpoint.\n"
		"`retry --state failed` retries every failed job of yours.\n"
		"\n"
		"  -q, --quiet   print only the new job ids, one a line\n",
	.exec = cmd_control_exec,
};
