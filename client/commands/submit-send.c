/*
 * submit-send.c - the sending half of `vkinrctl submit`: each image read
 * here (the daemon never opens a client's path), checked by its first
 * bytes, named, keyed for --skip-done and sent in base64 as one
 * job.submit request; the answers recorded for the summary.
 *
 * The first image goes alone, so that a refusal of the batch id is
 * settled before any other is sent; the rest go a window at a time on
 * the one connection (submit_all).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/base64.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "proto/params.h"
#include "proto/text.h"
#include "util/fileio.h"
#include "util/image.h"
#include "core/jobs.h"
#include "commands/submit-internal.h"
#include "commands/submit-keys.h"

/* A refused input's entry in the JSON summary (inputs.c calls it too). */
void submit_note_refused(void *ctx, const char *file, const char *why)
{
	struct submit *s = ctx;
	cJSON *e;

	if ((e = cJSON_CreateObject())) {
		cJSON_AddStringToObject(e, "file", file);
		cJSON_AddStringToObject(e, "error", why);
		cJSON_AddItemToArray(s->errors, e);
	}
}

void submit_refuse(struct submit *s, const char *file, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	client_warn("%s: %s", file, why);
	s->in.nbad++;
	submit_note_refused(s, file, why);
}

/* ---------------------------------------------------------------------- */
/* Sending                                                                 */
/* ---------------------------------------------------------------------- */

/* Reads a file whole; says why not (and returns NULL) when it can't. */
uint8_t *submit_read_file(struct submit *s, const char *path, size_t *size,
			  const char *what)
{
	struct stat st;
	uint8_t *data = NULL;
	int rc;

	if (stat(path, &st) < 0) {
		submit_refuse(s, path, "cannot read it: %s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		submit_refuse(s, path, "not a regular file");
		return NULL;
	}
	if ((size_t)st.st_size > SUBMIT_MAX_FILE) {
		submit_refuse(s, path,
			      "the %s is %lld MiB; one request carries at most "
			      "%zu MiB",
			      what, (long long)st.st_size >> 20,
			      SUBMIT_MAX_FILE >> 20);
		return NULL;
	}
	rc = fileio_read(path, &data, size, SUBMIT_MAX_FILE);
	if (rc < 0) {
		submit_refuse(s, path, "cannot read it: %s",
			      rc == ERR_IO ? strerror(errno)
					   : error_message(rc));
		return NULL;
	}
	return data;
}

/* A name over the daemon's limit keeps its end (the file's own name),
 * after an ellipsis, cut at a character's start. */
static char *name_within_limit(char *name)
{
	size_t n = name ? strlen(name) : 0;
	const char *tail;
	char *cut;

	if (n <= LIMIT_NAME_BYTES)
		return name;
	tail = name + n - (LIMIT_NAME_BYTES - 3);
	while ((*tail & 0xc0) == 0x80)
		tail++;
	if (asprintf(&cut, "\xe2\x80\xa6%s", tail) < 0)
		cut = NULL;
	free(name);
	return cut;
}

/* The job's name: --name, else the file's name without .png (.jpg...);
 * a folder's image is named by its path below the folder (sub/a, with
 * -r), so that two a.png of different subfolders are told apart. */
static char *job_name(const struct submit *s, size_t i)
{
	const char *path = s->in.paths[i];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	char *name;

	if (image_suffix_len(base) < n)
		n -= image_suffix_len(base);
	if (s->in.names[i])
		base = s->in.names[i], n = strlen(base);
	if (s->name && s->in.n == 1)
		return strdup(s->name);
	if (s->name) {
		if (asprintf(&name, "%s-%.*s", s->name, (int)n, base) < 0)
			return NULL;
		return name_within_limit(name);
	}
	return name_within_limit(strndup(base, n));
}

/* A job made: kept for the summary, and said. The daemon's answer gives
 * the size the job fits (after --resize or --max-side: the photo's size
 * otherwise), said then; an older daemon's does not. */
static void record(struct submit *s, const cJSON *id, const cJSON *result,
		   const char *path, const char *name)
{
	char text[128];
	cJSON *e = cJSON_CreateObject();
	const cJSON *img = cJSON_GetObjectItemCaseSensitive(result, "image");
	int w = (int)job_num(img, "width", 0),
	    h = (int)job_num(img, "height", 0);

	if (e) {
		cJSON_AddItemToObject(e, "job", cJSON_Duplicate(id, 1));
		cJSON_AddStringToObject(e, "file", path);
		cJSON_AddStringToObject(e, "name", name);
		if (w > 0 && h > 0) {
			cJSON_AddNumberToObject(e, "width", w);
			cJSON_AddNumberToObject(e, "height", h);
		}
		cJSON_AddItemToArray(s->done, e);
	}
	job_id_text(id, text, sizeof(text));
	if (s->cl->json)
		return;
	if (s->quiet)
		printf("%s\n", text);
	else if (w > 0 && h > 0 && cJSON_HasObjectItem(s->common, "resize"))
		client_say(s->cl,
			   "job %s submitted: %s (name %s), fitted at %dx%d\n",
			   text, path, name, w, h);
	else
		client_say(s->cl, "job %s submitted: %s (name %s)\n", text,
			   path, name);
	fflush(stdout);
}

/* After the daemon refused the call: 1 when it is to be made again, the
 * batch id dropped (an older daemon refused the parameter) or replaced
 * (another uid's jobs hold it, before any of ours went in). */
static int batch_again(struct submit *s)
{
	const char *message;
	int code = conn_last_error(s->cl->conn, &message, NULL);
	char batch[16];

	if (!cJSON_HasObjectItem(s->common, "batch"))
		return 0;
	if (code == RPC_INVALID_PARAMS && strstr(message, "\"batch\"")) {
		s->no_batch = 1;
		cJSON_DeleteItemFromObjectCaseSensitive(s->common, "batch");
		client_warn("this vkinrd does not keep batch ids; use the job "
			    "ids instead");
		return 1;
	}
	if (code != RPC_PERMISSION || !strstr(message, "batch ") ||
	    cJSON_GetArraySize(s->done) > 0 || s->batch_tries++ >= 3)
		return 0;
	submit_new_batch_id(batch, sizeof(batch));
	cJSON_ReplaceItemInObjectCaseSensitive(s->common, "batch",
					       cJSON_CreateString(batch));
	return 1;
}

/* Sends where the image came from, for the CSV (escaped when its name is
 * not plain text: it is for people to read). */
static void add_source(cJSON *params, const char *path)
{
	char *full = realpath(path, NULL), *safe;
	const char *src = full ? full : path;

	if (strlen(src) <= LIMIT_SOURCE_BYTES) {
		safe = text_escape(src, 0);
		if (safe && strlen(safe) <= LIMIT_SOURCE_BYTES)
			cJSON_AddStringToObject(params, "source", safe);
		free(safe);
	}
	free(full);
}

/*
 * The request for image i: *params (NULL when the image is refused or
 * skipped, said already), with *b64 and *name to free once it is sent.
 * 0, or ERR_NOMEM.
 */
static int submit_prepare(struct submit *s, size_t i, cJSON **params_out,
			  char **b64_out, char **name_out)
{
	const char *path = s->in.paths[i];
	cJSON *params, *image;
	const cJSON *done_as;
	uint8_t *data;
	size_t size;
	char *b64, *name, key[LIMIT_KEY_BYTES + 1];

	*params_out = NULL;
	*b64_out = *name_out = NULL;
	if (!(data = submit_read_file(s, path, &size, "image")))
		return 0;
	const char *kind = jpeg_has_signature(data, size)   ? "jpeg"
			   : webp_has_signature(data, size) ? "webp"
			   : png_has_signature(data, size)  ? "png"
							    : NULL;
	if (!kind) {
		free(data);
		submit_refuse(
		    s, path,
		    "neither a PNG, a JPEG nor a WebP file (by its first "
		    "bytes; vkinrd fits PNG, JPEG and WebP images)");
		return 0;
	}
	submit_job_key(s->common, data, size, key, sizeof(key));
	done_as = s->done_keys
		      ? cJSON_GetObjectItemCaseSensitive(s->done_keys, key)
		      : NULL;
	if (s->done_keys && !done_as) { /* a job of an earlier vkinrctl */
		char v1[sizeof(key)];
		submit_job_key_v1(s->common, data, size, v1, sizeof(v1));
		done_as = cJSON_GetObjectItemCaseSensitive(s->done_keys, v1);
	}
	if (done_as) {
		free(data);
		s->nskipped++;
		submit_keys_skipped(s->cl, done_as, path, s->quiet, s->skipped);
		return 0;
	}
	b64 = base64_encode(data, size);
	free(data);
	name = job_name(s, i);
	params = cJSON_Duplicate(s->common, 1);
	image = cJSON_CreateObject();
	if (!b64 || !name || !params || !image) {
		free(b64);
		free(name);
		cJSON_Delete(params);
		cJSON_Delete(image);
		return ERR_NOMEM;
	}
	cJSON_AddItemToObject(image, kind, cJSON_CreateStringReference(b64));
	cJSON_AddItemToObject(params, "image", image);
	cJSON_AddStringToObject(params, "name", name);
	cJSON_AddStringToObject(params, "key", key);
	add_source(params, path);
	*params_out = params;
	*b64_out = b64;
	*name_out = name;
	return 0;
}

/* What the daemon answered (rc, result: consumed) for image i, told on
 * conn: recorded, or refused and named. 0, or a transport error. */
static int submit_answered(struct submit *s, size_t i, const char *name,
			   struct client_conn *conn, int rc, cJSON *result)
{
	const char *path = s->in.paths[i], *message;
	if (rc == CLIENT_ERR_RPC) {
		conn_last_error(conn, &message, NULL);
		submit_refuse(s, path, "the daemon refused it: %s", message);
		rc = 0;
	} else if (rc == ERR_TOO_LARGE) {
		submit_refuse(s, path, "%s", conn_why(conn));
		rc = 0;
	} else if (rc == 0) {
		const cJSON *id =
		    cJSON_GetObjectItemCaseSensitive(result, "job");
		if (id)
			record(s, id, result, path, name);
		else
			submit_refuse(s, path,
				      "the daemon's answer has no job id");
	}
	cJSON_Delete(result);
	return rc;
}

/* Submits image i and waits for the answer. 0 (done or refused and
 * named), or a transport error. */
static int submit_one(struct submit *s, size_t i)
{
	cJSON *params, *result = NULL;
	char *b64, *name;
	int rc = submit_prepare(s, i, &params, &b64, &name);
	if (rc || !params)
		return rc;
	rc = client_call(s->cl, M_JOB_SUBMIT, params, &result);
	free(b64); /* after the call: the request referenced it */
	if (rc == CLIENT_ERR_RPC && batch_again(s)) {
		free(name);
		cJSON_Delete(result);
		return submit_one(s, i);
	}
	rc = submit_answered(s, i, name, s->cl->conn, rc, result);
	free(name);
	return rc;
}

/*
 * The images after the first go several at a time on the one connection:
 * up to SUBMIT_WINDOW requests, of at most SUBMIT_WINDOW_BYTES together,
 * are sent before their answers are read. The daemon takes a
 * connection's lines in the order sent, so it still numbers the jobs in
 * the images' order (list, export --stack), and the requests that reach
 * it together are stored in one turn of its loop with one sync, not one
 * a job. The window is small enough that neither side's socket fills
 * while the other waits for it.
 */
#define SUBMIT_WINDOW 64
#define SUBMIT_WINDOW_BYTES ((size_t)256 << 10)

struct in_flight {
	size_t image;
	int id;
	size_t bytes;
	char *name;
};

/* Reads the answer of the oldest request in flight. 0, or a transport
 * error. */
static int submit_land(struct submit *s, struct in_flight *f)
{
	cJSON *result = NULL;
	int rc = conn_await(s->cl->conn, f->id, M_JOB_SUBMIT, &result);
	rc = submit_answered(s, f->image, f->name, s->cl->conn, rc, result);
	free(f->name);
	f->name = NULL;
	return rc;
}

/* Sends image i without waiting (f its record in flight); *sent 0 when
 * it was skipped or refused here. 0, or an error. */
static int submit_send(struct submit *s, size_t i, struct in_flight *f,
		       int *sent)
{
	cJSON *params;
	char *b64, *name;
	int rc = submit_prepare(s, i, &params, &b64, &name);
	*sent = 0;
	if (rc || !params)
		return rc;
	size_t bytes = strlen(b64) + 1024;
	rc = conn_send(s->cl->conn, M_JOB_SUBMIT, params, &f->id);
	free(b64); /* the line is made: it no longer refers to it */
	if (rc == ERR_TOO_LARGE) { /* said in its place */
		rc = submit_answered(s, i, name, s->cl->conn, rc, NULL);
		free(name);
		return rc;
	}
	if (rc) {
		free(name);
		return rc;
	}
	*f = (struct in_flight){ i, f->id, bytes, name };
	*sent = 1;
	return 0;
}

/* Every image: the first alone (a refusal of the batch id is settled
 * before any other goes: batch_again), the rest a window at a time. */
int submit_all(struct submit *s)
{
	struct in_flight fl[SUBMIT_WINDOW];
	size_t i = 0, bytes = 0;
	int rc = 0, head = 0, count = 0;
	while (rc == 0 && i < s->in.n && cJSON_GetArraySize(s->done) == 0)
		rc = submit_one(s, i++);
	while (rc == 0 && (i < s->in.n || count)) {
		if (i < s->in.n && count < SUBMIT_WINDOW &&
		    (count == 0 || bytes < SUBMIT_WINDOW_BYTES)) {
			struct in_flight *f =
			    &fl[(head + count) % SUBMIT_WINDOW];
			int sent;
			rc = submit_send(s, i++, f, &sent);
			if (sent) {
				count++;
				bytes += f->bytes;
			}
			continue;
		}
		rc = submit_land(s, &fl[head]);
		bytes -= fl[head].bytes;
		head = (head + 1) % SUBMIT_WINDOW;
		count--;
	}
	for (; count > 0; count--) { /* after an error: what is left */
		free(fl[head].name);
		head = (head + 1) % SUBMIT_WINDOW;
	}
	return rc;
}
