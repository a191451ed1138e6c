/*
 * cmd-status.c - `vkinrctl status`: who answers on the socket (hello:
 * protocol and daemon version, device) and what it is doing
 * (daemon.status: devices, queue).
 *
 * People get a few lines about the daemon (version, state folder, jobs by
 * state, the queue) and a table with one row per worker: its state, the
 * job it runs, the device memory it holds and its device. Fields that are
 * missing print as "-": the client assumes little of daemon.status's
 * shape. Scripts get {"client": {...}, "hello": {...}, "status": {...}}
 * with --json, every field the daemon sent. A daemon
 * that speaks another protocol version gets a warning, not a refusal:
 * fields are added freely and clients ignore those they don't know.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "proto/errors.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/protocol.h"

/* "512 B", "48.0 MiB", "1.50 GiB". */
static const char *fmt_bytes(double bytes, char *buf, size_t n)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	if (!isfinite(bytes) || bytes < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
	return buf;
}

/* A number or a string field as text ("-" when neither). */
static const char *field_text(const cJSON *obj, const char *key, char *buf,
			      size_t n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsString(v))
		snprintf(buf, n, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(buf, n, "%.0f", v->valuedouble);
	else
		snprintf(buf, n, "-");
	return buf;
}

/* The job counts by state, in the order jobs move through them. */
static void print_jobs(const cJSON *jobs)
{
	static const char *const states[] = {
		"queued", "running", "paused", "done", "failed", "cancelled"
	};
	const char *sep = "";

	printf("%-10s ", "jobs");
	for (size_t i = 0; i < sizeof(states) / sizeof(*states); i++) {
		printf("%s%.0f %s", sep, job_num(jobs, states[i], 0),
		       states[i]);
		sep = ", ";
	}
	if (cJSON_HasObjectItem(jobs, "total"))
		printf(" (%.0f in all)", job_num(jobs, "total", 0));
	putchar('\n');
}

/* One row per worker: its device, what it runs, the memory it holds. */
static void print_workers(const cJSON *devices)
{
	const cJSON *d;
	char idx[32], job[48], mem[32];
	int i = 0;

	printf("\n%-7s %-11s %-8s %10s  %s\n", "WORKER", "STATE", "JOB",
	       "MEMORY", "DEVICE");
	cJSON_ArrayForEach(d, devices)
	{
		const char *name = job_str(d, "name", "-");
		double bytes = job_num(d, "gpu_bytes", NAN);

		if (cJSON_HasObjectItem(d, "worker"))
			field_text(d, "worker", idx, sizeof(idx));
		else if (cJSON_HasObjectItem(d, "index"))
			field_text(d, "index", idx, sizeof(idx));
		else
			snprintf(idx, sizeof(idx), "%d", i);
		field_text(d, "job", job, sizeof(job));
		/* a pack: the first job and how many train with it */
		if (job_num(d, "jobs", 0) > 1) {
			size_t len = strlen(job);
			snprintf(job + len, sizeof(job) - len, " +%.0f",
				 job_num(d, "jobs", 0) - 1);
		}
		printf("%-7s %-11s %-8s %10s  %s\n", idx,
		       job_str(d, "state", "-"), job,
		       fmt_bytes(bytes, mem, sizeof(mem)), name);
		if (job_str(d, "error", NULL))
			printf("%-7s %s\n", "", job_str(d, "error", ""));
		i++;
	}
	if (i == 0)
		printf("(no workers)\n");
}

/* What people read: a few lines about the daemon, then the workers. */
static void print_status(const struct client *cl, const cJSON *hello,
			 const cJSON *status)
{
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(status, "jobs");
	const cJSON *queue = cJSON_GetObjectItemCaseSensitive(status, "queue");
	const cJSON *devices =
	    cJSON_GetObjectItemCaseSensitive(status, "devices");
	char up[32];
	double queued = NAN;

	printf("%-10s %s\n", "socket", cl->socket_path);
	printf("%-10s vkinrd %s (protocol %.0f)", "daemon",
	       job_str(status, "version", job_str(hello, "version", "?")),
	       job_num(hello, "protocol", NAN));
	if (cJSON_HasObjectItem(status, "pid"))
		printf(", pid %.0f", job_num(status, "pid", 0));
	if (cJSON_HasObjectItem(status, "uptime"))
		printf(", up %s", fmt_duration(job_num(status, "uptime", NAN),
					       up, sizeof(up)));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "stopping")))
		printf(", stopping");
	putchar('\n');
	printf("%-10s vkinrctl %s (protocol %d)\n", "client", VKINR_VERSION,
	       PROTOCOL_VERSION);
	if (job_str(status, "state_dir", NULL))
		printf("%-10s %s\n", "state", job_str(status, "state_dir", ""));
	if (cJSON_IsObject(jobs))
		print_jobs(jobs);
	if (cJSON_IsNumber(queue))
		queued = queue->valuedouble;
	else if (cJSON_IsObject(jobs))
		queued = job_num(jobs, "queued", NAN);
	if (isfinite(queued))
		printf("%-10s %.0f job%s waiting for a worker\n", "queue",
		       queued, queued == 1 ? "" : "s");
	if (cJSON_HasObjectItem(status, "connections"))
		printf("%-10s %.0f connected, %.0f following jobs\n", "clients",
		       job_num(status, "connections", 0),
		       job_num(status, "subscriptions", 0));
	const cJSON *mine = cJSON_GetObjectItemCaseSensitive(status, "mine");
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(status, "limits");
	/* the caller's share (a newer daemon), above the workers' table */
	if (cJSON_IsObject(mine))
		printf(
		    "%-10s uid %.0f: %.1f of %.1f MiB and %.0f of %.0f files "
		    "in the state folder, %.0f s of device time lately\n",
		    "yours", job_num(mine, "uid", 0),
		    job_num(mine, "disk_bytes", 0) / 1048576.0,
		    job_num(lim, "disk_bytes_per_uid", NAN) / 1048576.0,
		    job_num(mine, "disk_files", 0),
		    job_num(lim, "disk_files_per_uid", NAN),
		    job_num(mine, "device_seconds", 0));
	if (cJSON_IsArray(devices))
		print_workers(devices);
	else if (job_str(hello, "device", NULL))
		printf("%-10s %s\n", "device", job_str(hello, "device", ""));
}

static int cmd_status_exec(struct client *cl, const struct cmd_entry *self,
			   int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	cJSON *hello = NULL, *status = NULL, *params;
	double protocol;
	int c, rc;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1)
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
	print_status(cl, hello, status);
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
