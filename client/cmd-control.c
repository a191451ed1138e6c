/*
 * cmd-control.c - `pause`, `resume`, `cancel` and `rm`: one request per job
 * that changes its state, for job ids and batch ids alike.
 *
 * The four differ only in the method they call and the word they print,
 * so they share one exec function driven by a small table. Every job named
 * is tried even when an earlier one is refused; the exit status is then 3,
 * and each refusal is named. --state S picks the caller's jobs in state S
 * (among the batches or jobs named, if any): `rm --state done` clears the
 * ended jobs that count against the per-user limit. With --json the outcome is one object:
 * {"results": [{"job": ID, "ok": true} or {"job": ID, "error": {...}}]}.
 */
#include <string.h>

#include "client.h"
#include "conn.h"
#include "proto/errors.h"
#include "jobs.h"
#include "proto/protocol.h"

enum { OPT_STATE = OPT_FIRST_COMMAND_OPTION };

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
	{ NULL, NULL, NULL },
};

static cJSON *outcome(const cJSON *id, struct client *cl, int rc)
{
	cJSON *o = cJSON_CreateObject(), *err;
	const char *message;
	const cJSON *data;
	int code;

	if (!o)
		return NULL;
	cJSON_AddItemToObject(o, "job", cJSON_Duplicate(id, 1));
	if (rc == 0) {
		cJSON_AddTrueToObject(o, "ok");
		return o;
	}
	code = conn_last_error(cl->conn, &message, &data);
	err = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	if (data)
		cJSON_AddItemToObject(err, "data", cJSON_Duplicate(data, 1));
	return o;
}

static int cmd_control_exec(struct client *cl, const struct cmd_entry *self,
			    int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, OPT_STATE },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const struct control *ctl = controls;
	cJSON *ids = NULL, *results = NULL, *result = NULL;
	const char *state = NULL;
	const cJSON *id;
	int c, rc, status = CLIENT_EXIT_OK;

	while (strcmp(ctl->name, self->name))
		ctl++;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == OPT_STATE)
			state = optarg;
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
		 : jobs_resolve(cl, argv + optind, argc - optind, &ids);
	if (rc < 0)
		return client_fail(cl, rc, NULL);
	if (state && cJSON_GetArraySize(ids) == 0) {
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
		rc = client_call(cl, ctl->method, job_params(id), &result);
		cJSON_Delete(result);
		result = NULL;
		if (rc == 0 || rc == CLIENT_ERR_RPC) {
			if (results)
				cJSON_AddItemToArray(results,
						     outcome(id, cl, rc));
			if (rc == 0 && !cl->json)
				printf("job %s %s\n", text, ctl->done);
		}
		if (rc == 0)
			continue;
		snprintf(what, sizeof(what), "%s job %s", ctl->name, text);
		if (rc == CLIENT_ERR_RPC) {
			const char *message;
			conn_last_error(cl->conn, &message, NULL);
			client_warn("%s: %s", what, message);
			status = CLIENT_EXIT_DAEMON;
			continue;
		}
		status = client_fail(cl, rc, what);
		break;
	}
	if (results && status != CLIENT_EXIT_UNREACHABLE) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddItemToObject(out, "results", results);
		client_print_json(out);
		cJSON_Delete(out);
	} else {
		cJSON_Delete(results);
	}
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
	.args = "ID|BATCH... | --state S [ID|BATCH...]",
	.summary = "delete ended jobs and their files from the daemon",
	.help = "",
	.exec = cmd_control_exec,
};
