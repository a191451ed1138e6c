/*
 * client.c - the glue between commands and the connection: connecting on
 * first use, calling, connecting again after the daemon went away (for
 * the commands that follow jobs), and turning every failure into one
 * sentence on stderr and one exit status.
 *
 * The rule for output lives here too: with --json, stdout carries only
 * JSON, so client_say() sends text for people to stderr; without it, such
 * text goes to stdout. Warnings and errors always go to stderr.
 *
 * Nothing another user or the daemon wrote reaches the terminal as it is:
 * a connection for a human command escapes every string it receives
 * (conn_escape_text), and client_say and client_warn escape what they
 * print, paths named by others included (text_escape). --json output is
 * left exact: JSON escapes control characters itself.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "proto/protocol.h"
#include "util/socket_path.h"
#include "proto/text.h"

int client_connect(struct client *cl)
{
	char why[256];
	int rc;

	if (cl->conn)
		return 0;
	if (!cl->socket_path)
		cl->socket_path = socket_path_resolve_client(cl->socket_flag);
	if (!cl->socket_path)
		return ERR_NOMEM;
	if (socket_path_check_private(cl->socket_path, why, sizeof(why))) {
		snprintf(cl->unreachable, sizeof(cl->unreachable),
			 "will not talk to %s: %s", cl->socket_path, why);
		return ERR_IO;
	}
	rc = conn_open(cl->socket_path, (int)(cl->call_timeout_s * 1000 + 0.5),
		       &cl->conn, why, sizeof(why));
	if (rc < 0) {
		snprintf(cl->unreachable, sizeof(cl->unreachable),
			 "cannot reach vkinrd at %s (%s%s). Start the daemon "
			 "with `vkinrd &` (or `systemctl --user start "
			 "vkinrd`), or name its socket with --socket PATH or "
			 "VKINR_SOCKET.",
			 cl->socket_path, why,
			 errno == EACCES ? socket_path_access_hint() : "");
		return ERR_IO;
	}
	if (!cl->json)
		conn_escape_text(cl->conn);
	return 0;
}

int client_set_call_timeout(struct client *cl, const char *text)
{
	char *end;
	errno = 0;
	double s = strtod(text, &end);
	if (errno || end == text || *end || !(s >= 0 && s <= 86400))
		return -1;
	cl->call_timeout_s = s;
	return 0;
}

int client_lost(const struct client *cl, int rc)
{
	return rc == ERR_IO ||
	       (rc == CLIENT_ERR_RPC && cl->conn &&
		conn_last_error(cl->conn, NULL, NULL) == RPC_SHUTTING_DOWN);
}

int client_reconnect(struct client *cl)
{
	struct timespec now, pause = { 0, 200 * 1000000L };
	clock_gettime(CLOCK_MONOTONIC, &now);
	double until = now.tv_sec + now.tv_nsec * 1e-9 + cl->reconnect_s;
	int rc;

	conn_close(cl->conn);
	cl->conn = NULL;
	for (;;) {
		if ((rc = client_connect(cl)) == 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec + now.tv_nsec * 1e-9 >= until)
			return rc;
		nanosleep(&pause, NULL);
	}
}

int client_call(struct client *cl, const char *method, cJSON *params,
		cJSON **result)
{
	int rc;

	*result = NULL;
	if ((rc = client_connect(cl)) < 0) {
		cJSON_Delete(params);
		return rc;
	}
	return conn_call(cl->conn, method, params, result);
}

static void print_json_error(int code, const char *message, const cJSON *data)
{
	cJSON *obj = cJSON_CreateObject(), *err = cJSON_CreateObject();

	if (!obj || !err) {
		cJSON_Delete(obj);
		cJSON_Delete(err);
		return;
	}
	cJSON_AddNumberToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	if (data)
		cJSON_AddItemToObject(err, "data", cJSON_Duplicate(data, 1));
	cJSON_AddItemToObject(obj, "error", err);
	client_print_json(obj);
	cJSON_Delete(obj);
}

int client_fail(struct client *cl, int rc, const char *context)
{
	const char *sep = context ? ": " : "";
	const char *message;
	const cJSON *data;
	int code;

	if (!context)
		context = "";
	if (rc == CLIENT_ERR_AMBIGUOUS)
		return CLIENT_EXIT_USAGE; /* said already, with the candidates */
	if (rc == CLIENT_ERR_RPC && cl->conn) {
		code = conn_last_error(cl->conn, &message, &data);
		client_warn("%s%s%s%s", context, sep, message,
			    code == RPC_JOB_NOT_FOUND
				? " (`vkinrctl list` shows the jobs)"
				: "");
		if (cl->json)
			print_json_error(code, message, data);
		return CLIENT_EXIT_DAEMON;
	}
	if (!cl->conn && cl->unreachable[0]) {
		client_warn("%s", cl->unreachable);
		return CLIENT_EXIT_UNREACHABLE;
	}
	if (rc == CLIENT_ERR_TIMEOUT && cl->conn) {
		client_warn(
		    "%s%s%s (vkinrd at %s): it may be stopped (SIGSTOP) "
		    "or overloaded. Try again, or wait longer with "
		    "--call-timeout S or VKINR_CALL_TIMEOUT (0: "
		    "forever; now %g s).",
		    context, sep, conn_why(cl->conn), cl->socket_path,
		    cl->call_timeout_s);
		return CLIENT_EXIT_UNREACHABLE;
	}
	if (rc == ERR_IO && cl->conn) {
		client_warn("%s%slost the connection to vkinrd at %s: %s",
			    context, sep, cl->socket_path, conn_why(cl->conn));
		return CLIENT_EXIT_UNREACHABLE;
	}
	if ((rc == ERR_TOO_LARGE || rc == ERR_FORMAT) && cl->conn) {
		client_warn("%s%s%s", context, sep, conn_why(cl->conn));
		return CLIENT_EXIT_DAEMON;
	}
	client_warn("%s%s%s", context, sep, error_message(rc));
	return CLIENT_EXIT_DAEMON;
}

void client_vprint(FILE *out, const char *fmt, va_list ap)
{
	char *text = NULL, *safe;

	if (vasprintf(&text, fmt, ap) < 0)
		return;
	safe = text_escape(text, 1);
	fputs(safe ? safe : "(out of memory)", out);
	free(safe);
	free(text);
}

void client_say(struct client *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	client_vprint(cl->json ? stderr : stdout, fmt, ap);
	va_end(ap);
}

void client_warn(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("vkinrctl: ", stderr);
	va_start(ap, fmt);
	client_vprint(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void client_print_json(const cJSON *value)
{
	char *text = cJSON_PrintUnformatted(value);

	if (!text) {
		client_warn("%s", error_message(ERR_NOMEM));
		return;
	}
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(text);
}

/* ==== Files the client writes ========================================== */

/* Whether a new file can be made at path: its folder is there, is a
 * folder, and may be written into; else says why. */
static int may_create(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st) < 0 || (!S_ISDIR(st.st_mode) && (errno = ENOTDIR)) ||
	    access(dir, W_OK | X_OK) < 0) {
		client_warn("cannot write %s: the folder %s: %s", path, dir,
			    strerror(errno));
		return CLIENT_EXIT_DAEMON;
	}
	return 0;
}

int client_may_write(const char *path, int force)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return may_create(path);
		client_warn("cannot write %s: %s", path, strerror(errno));
		return CLIENT_EXIT_DAEMON;
	}
	if (!force) {
		client_warn("%s exists already; add --force to replace it",
			    path);
		return CLIENT_EXIT_DAEMON;
	}
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		client_warn("cannot write %s: it is a %s, not a file", path,
			    S_ISDIR(st.st_mode) ? "folder" : "special file");
		return CLIENT_EXIT_DAEMON;
	}
	return 0;
}

int client_write_file(const char *path, const void *data, size_t size,
		      int force)
{
	int rc = fileio_write_new(path, data, size, CLIENT_FILE_MODE, force);

	if (rc == 0)
		return 0;
	if (rc == ERR_IO && errno == EEXIST)
		return client_may_write(path, 0);
	client_warn("cannot write %s: %s", path,
		    rc == ERR_NOMEM || rc == ERR_NO_SPACE ? error_message(rc)
							  : strerror(errno));
	return CLIENT_EXIT_DAEMON;
}
