/*
 * cmd-status.c - `vkinrctl status`: who answers on the socket (hello:
 * protocol and daemon version, device) and what it is doing
 * (daemon.status: devices, queue).
 *
 * The client does not assume the shape of daemon.status beyond it being an
 * object: people get every field as an indented outline, scripts get
 * {"client": {...}, "hello": {...}, "status": {...}} with --json. A daemon
 * that speaks another protocol version gets a warning, not a refusal:
 * fields are added freely and clients ignore those they don't know.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "errors.h"
#include "jobs.h"
#include "protocol.h"

static void print_value(const cJSON *v)
{
	char *text;

	if (cJSON_IsString(v)) {
		printf("%s", v->valuestring);
	} else if (cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble) {
		printf("%lld", (long long)v->valuedouble);
	} else if ((text = cJSON_PrintUnformatted(v))) {
		printf("%s", text);
		free(text);
	}
}

static int is_scalar_array(const cJSON *v)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, v)
		if (cJSON_IsObject(item) || cJSON_IsArray(item))
			return 0;
	return 1;
}

/* An outline: scalars as "key: value", objects and arrays indented. */
static void outline(const cJSON *obj, int indent)
{
	const cJSON *field, *item;

	cJSON_ArrayForEach(field, obj) {
		const char *key = field->string ? field->string : "-";
		if (cJSON_IsObject(field)) {
			printf("%*s%s:\n", indent, "", key);
			outline(field, indent + 2);
		} else if (cJSON_IsArray(field) && !is_scalar_array(field)) {
			printf("%*s%s:\n", indent, "", key);
			cJSON_ArrayForEach(item, field) {
				printf("%*s-\n", indent + 2, "");
				outline(item, indent + 4);
			}
		} else {
			printf("%*s%-10s ", indent, "", key);
			print_value(field);
			putchar('\n');
		}
	}
}

static int cmd_status_exec(struct client *cl, const struct cmd_entry *self,
			   int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	cJSON *hello = NULL, *status = NULL, *params;
	double protocol;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind < argc)
		return cmd_usage_error(self, "unexpected argument '%s'",
				       argv[optind]);

	params = cJSON_CreateObject();
	cJSON_AddNumberToObject(params, "protocol", PROTOCOL_VERSION);
	cJSON_AddStringToObject(params, "client", "vkinrctl " VKINR_VERSION);
	if ((rc = client_call(cl, M_HELLO, params, &hello)) < 0)
		return client_fail(cl, rc, "hello");
	if ((rc = client_call(cl, M_DAEMON_STATUS, cJSON_CreateObject(),
			      &status)) < 0) {
		cJSON_Delete(hello);
		return client_fail(cl, rc, "daemon.status");
	}
	protocol = job_num(hello, "protocol", PROTOCOL_VERSION);
	if (protocol != PROTOCOL_VERSION)
		client_warn("the daemon speaks protocol %g, this client %d; "
			    "some commands may not work",
			    protocol, PROTOCOL_VERSION);

	if (cl->json) {
		cJSON *out = cJSON_CreateObject(), *client;
		client = cJSON_AddObjectToObject(out, "client");
		cJSON_AddStringToObject(client, "version", VKINR_VERSION);
		cJSON_AddNumberToObject(client, "protocol", PROTOCOL_VERSION);
		cJSON_AddStringToObject(client, "socket", cl->socket_path);
		cJSON_AddItemToObject(out, "hello", hello);
		cJSON_AddItemToObject(out, "status", status);
		client_print_json(out);
		cJSON_Delete(out);
		return CLIENT_EXIT_OK;
	}
	printf("socket     %s\n", cl->socket_path);
	printf("client     vkinrctl %s (protocol %d)\n", VKINR_VERSION,
	       PROTOCOL_VERSION);
	outline(hello, 0);
	outline(status, 0);
	cJSON_Delete(hello);
	cJSON_Delete(status);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.alias = NULL,
	.args = "",
	.summary = "the daemon's version, devices and queue",
	.help = "",
	.exec = cmd_status_exec,
};
