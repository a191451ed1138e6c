/*
 * cmd-export-stack.c - `vkinrctl export BATCH --stack FILE.safetensors`:
 * every network of a batch (or of the jobs named) in one safetensors
 * file, the form a weight-space learning dataset takes (docs/MODEL.md,
 * "A stack of models").
 *
 * Each job's model package comes through job.export, as for the plain
 * export; its header is read here (the client has no daemon code), every
 * package must have the same tensors of the same shapes (one width, one
 * list of dilations), and the stack holds each tensor once with a leading
 * job dimension, job i's at index i. The metadata keeps what differs from
 * job to job as JSON arrays, in the same order: ids, names, sources,
 * PSNRs, image sizes, epochs, size checks. The file is built in memory
 * and written as one, through client_write_file; a job that cannot be
 * exported stops the stack before anything is written.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "core/client.h"
#include "proto/errors.h"
#include "core/jobs.h"
#include "proto/protocol.h"

#include "commands/cmd-export-stack.h"

/* One job's package: its bytes, its header, where its data starts. */
struct stacked {
	uint8_t *bytes;
	size_t size;
	cJSON *head;
	size_t data_at;
};

/* Reads a safetensors header; 0, or -1 when it is not one. */
static int read_header(struct stacked *s)
{
	uint64_t n = 0;
	if (s->size < 8)
		return -1;
	for (int i = 0; i < 8; i++)
		n |= (uint64_t)s->bytes[i] << (8 * i);
	if (n > s->size - 8)
		return -1;
	s->head = cJSON_ParseWithLength((const char *)s->bytes + 8, n);
	s->data_at = 8 + n;
	return cJSON_IsObject(s->head) ? 0 : -1;
}

/* A tensor's byte range in s, checked; 0 or -1. */
static int tensor_range(const struct stacked *s, const cJSON *t, size_t *from,
			size_t *len)
{
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
	const char *dtype = job_str(t, "dtype", "");
	if (strcmp(dtype, "F32") || cJSON_GetArraySize(off) != 2)
		return -1;
	double a = cJSON_GetArrayItem(off, 0)->valuedouble;
	double b = cJSON_GetArrayItem(off, 1)->valuedouble;
	if (a < 0 || b < a || s->data_at + b > s->size)
		return -1;
	*from = s->data_at + (size_t)a;
	*len = (size_t)(b - a);
	return 0;
}

/* Whether tensor t of b has the name, dtype and shape of a's. */
static int same_shape(const cJSON *a, const cJSON *b)
{
	const cJSON *sa = cJSON_GetObjectItemCaseSensitive(a, "shape");
	const cJSON *sb = cJSON_GetObjectItemCaseSensitive(b, "shape");
	return b && cJSON_Compare(sa, sb, 1) &&
	       !strcmp(job_str(a, "dtype", ""), job_str(b, "dtype", "-"));
}

static const char *meta(const struct stacked *s, const char *key)
{
	const cJSON *m =
	    cJSON_GetObjectItemCaseSensitive(s->head, "__metadata__");
	return job_str(m, key, NULL);
}

/* Fetches job id's package into s, its job object into *job; 0 or an
 * exit status, said. */
static int fetch(struct client *cl, const cJSON *id, struct stacked *s,
		 cJSON **job)
{
	char text[128], what[160];
	cJSON *result = NULL;
	int rc;
	job_id_text(id, text, sizeof(text));
	snprintf(what, sizeof(what), "job %s", text);
	if ((rc = client_call(cl, M_JOB_GET, job_params(id), job)) < 0)
		return client_fail(cl, rc, what);
	snprintf(what, sizeof(what), "export job %s", text);
	if ((rc = client_call(cl, M_JOB_EXPORT, job_params(id), &result)) < 0)
		return client_fail(cl, rc, what);
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(result, "model");
	const char *b64 = job_str(model, "safetensors", NULL);
	rc = b64 ? base64_decode(b64, strlen(b64), &s->bytes, &s->size) : -1;
	cJSON_Delete(result);
	if (rc < 0 || read_header(s)) {
		client_warn(
		    "job %s: the daemon's export is not a model package", text);
		return CLIENT_EXIT_DAEMON;
	}
	return 0;
}

/* Adds a string to the stack's metadata (all its values are strings). */
static void put(cJSON *m, const char *key, const char *value)
{
	cJSON_AddStringToObject(m, key, value ? value : "");
}

/* Adds a JSON array as a string (names, sources...). */
static void put_array(cJSON *m, const char *key, cJSON *arr)
{
	char *text = cJSON_PrintUnformatted(arr);
	put(m, key, text);
	free(text);
	cJSON_Delete(arr);
}

/* The stack's metadata from the packages and the jobs. */
static cJSON *stack_meta(struct stacked *s, cJSON **jobs, int n)
{
	cJSON *m = cJSON_CreateObject();
	cJSON *ids = cJSON_CreateArray(), *names = cJSON_CreateArray(),
	      *sources = cJSON_CreateArray(), *psnrs = cJSON_CreateArray(),
	      *widths = cJSON_CreateArray(), *heights = cJSON_CreateArray(),
	      *epochs = cJSON_CreateArray(), *checks = cJSON_CreateArray(),
	      *weights = cJSON_CreateArray();
	char count[32];
	snprintf(count, sizeof(count), "%d", n);
	put(m, "format", "vkinr-convsiren-stack");
	put(m, "version", "1");
	put(m, "count", count);
	put(m, "nf", meta(&s[0], "nf"));
	put(m, "dilations", meta(&s[0], "dilations"));
	put(m, "w0", meta(&s[0], "w0"));
	for (int i = 0; i < n; i++) {
		const char *src = job_str(jobs[i], "source", NULL);
		const char *chk = meta(&s[i], "size_check");
		cJSON_AddItemToArray(
		    ids, cJSON_CreateString(job_str(jobs[i], "id", "")));
		cJSON_AddItemToArray(
		    names, cJSON_CreateString(job_str(jobs[i], "name", "")));
		cJSON_AddItemToArray(sources, src ? cJSON_CreateString(src)
						  : cJSON_CreateNull());
		double psnr =
		    atof(meta(&s[i], "psnr") ? meta(&s[i], "psnr") : "nan");
		cJSON_AddItemToArray(psnrs, isfinite(psnr)
						? cJSON_CreateNumber(psnr)
						: cJSON_CreateNull());
		cJSON_AddItemToArray(
		    widths,
		    cJSON_CreateNumber(atoi(
			meta(&s[i], "width") ? meta(&s[i], "width") : "0")));
		cJSON_AddItemToArray(
		    heights,
		    cJSON_CreateNumber(atoi(
			meta(&s[i], "height") ? meta(&s[i], "height") : "0")));
		cJSON_AddItemToArray(
		    epochs,
		    cJSON_CreateNumber(atoi(
			meta(&s[i], "epochs") ? meta(&s[i], "epochs") : "0")));
		cJSON_AddItemToArray(checks, chk ? cJSON_CreateString(chk)
						 : cJSON_CreateNull());
		const char *w = meta(&s[i], "weights");
		cJSON_AddItemToArray(weights, w ? cJSON_CreateString(w)
						: cJSON_CreateNull());
	}
	put_array(m, "jobs", ids);
	put_array(m, "names", names);
	put_array(m, "sources", sources);
	put_array(m, "psnrs", psnrs);
	put_array(m, "widths", widths);
	put_array(m, "heights", heights);
	put_array(m, "epochs", epochs);
	put_array(m, "size_checks", checks);
	put_array(m, "weights", weights);
	return m;
}

/* The stack file of the n packages (one architecture, checked). */
static int build_stack(struct stacked *s, cJSON **jobs, int n, uint8_t **out,
		       size_t *out_size)
{
	cJSON *head = cJSON_CreateObject();
	cJSON_AddItemToObject(head, "__metadata__", stack_meta(s, jobs, n));
	size_t total = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, s[0].head)
	{
		if (!strcmp(t->string, "__metadata__"))
			continue;
		size_t from, len;
		if (tensor_range(&s[0], t, &from, &len)) {
			cJSON_Delete(head);
			return -1;
		}
		cJSON *e = cJSON_AddObjectToObject(head, t->string);
		cJSON_AddStringToObject(e, "dtype", "F32");
		cJSON *shape = cJSON_AddArrayToObject(e, "shape");
		cJSON_AddItemToArray(shape, cJSON_CreateNumber(n));
		const cJSON *d;
		cJSON_ArrayForEach(d,
				   cJSON_GetObjectItemCaseSensitive(t, "shape"))
		    cJSON_AddItemToArray(shape,
					 cJSON_CreateNumber(d->valuedouble));
		cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
		cJSON_AddItemToArray(off, cJSON_CreateNumber((double)total));
		total += len * (size_t)n;
		cJSON_AddItemToArray(off, cJSON_CreateNumber((double)total));
	}
	char *text = cJSON_PrintUnformatted(head);
	cJSON_Delete(head);
	if (!text)
		return ERR_NOMEM;
	size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
	uint8_t *buf = malloc(8 + padded + total);
	if (!buf) {
		free(text);
		return ERR_NOMEM;
	}
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
	memcpy(buf + 8, text, hlen);
	memset(buf + 8 + hlen, ' ', padded - hlen);
	free(text);
	uint8_t *at = buf + 8 + padded;
	cJSON_ArrayForEach(t, s[0].head)
	{
		if (!strcmp(t->string, "__metadata__"))
			continue;
		for (int i = 0; i < n; i++) {
			const cJSON *ti = cJSON_GetObjectItemCaseSensitive(
			    s[i].head, t->string);
			size_t from, len;
			tensor_range(&s[i], ti, &from, &len);
			memcpy(at, s[i].bytes + from, len);
			at += len;
		}
	}
	*out = buf;
	*out_size = 8 + padded + total;
	return 0;
}

/* Job i's package against job 0's: the same tensors, shapes and config;
 * 0, or -1 having said why. */
static int check_alike(const struct stacked *s, int i, cJSON **jobs)
{
	const cJSON *t;
	int count0 = cJSON_GetArraySize(s[0].head);
	int ok = count0 == cJSON_GetArraySize(s[i].head);
	cJSON_ArrayForEach(t, s[0].head)
	{
		if (!ok || !strcmp(t->string, "__metadata__"))
			continue;
		const cJSON *ti =
		    cJSON_GetObjectItemCaseSensitive(s[i].head, t->string);
		size_t from, len;
		ok = same_shape(t, ti) &&
		     tensor_range(&s[0], t, &from, &len) == 0 &&
		     tensor_range(&s[i], ti, &from, &len) == 0;
	}
	const char *d0 = meta(&s[0], "dilations"),
		   *di = meta(&s[i], "dilations");
	const char *w0 = meta(&s[0], "w0"), *wi = meta(&s[i], "w0");
	ok = ok && !strcmp(d0 ? d0 : "", di ? di : "") &&
	     !strcmp(w0 ? w0 : "", wi ? wi : "");
	if (!ok)
		client_warn("job %s (width %s, dilations %s) is not of the "
			    "architecture of job %s (width %s, dilations %s): "
			    "a stack holds networks of one shape",
			    job_str(jobs[i], "id", "?"),
			    meta(&s[i], "nf") ? meta(&s[i], "nf") : "?",
			    di ? di : "?", job_str(jobs[0], "id", "?"),
			    meta(&s[0], "nf") ? meta(&s[0], "nf") : "?",
			    d0 ? d0 : "?");
	return ok ? 0 : -1;
}

int export_stack(struct client *cl, const cJSON *ids, const char *path,
		 int force, cJSON *out_json)
{
	int n = cJSON_GetArraySize(ids), status = 0, got = 0;
	if ((status = client_may_write(path, force)))
		return status;
	struct stacked *s = calloc((size_t)n, sizeof(*s));
	cJSON **jobs = calloc((size_t)n, sizeof(*jobs));
	if (!s || !jobs) {
		free(s);
		free(jobs);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	const cJSON *id;
	cJSON_ArrayForEach(id, ids)
	{
		if ((status = fetch(cl, id, &s[got], &jobs[got])))
			break;
		got++;
		if (got > 1 && check_alike(s, got - 1, jobs)) {
			status = CLIENT_EXIT_DAEMON;
			break;
		}
	}
	uint8_t *file = NULL;
	size_t size = 0;
	if (status == 0 && build_stack(s, jobs, n, &file, &size)) {
		client_warn("the packages could not be stacked");
		status = CLIENT_EXIT_DAEMON;
	}
	if (status == 0)
		status = client_write_file(path, file, size, force);
	if (status == 0 && out_json) {
		cJSON_AddStringToObject(out_json, "stack", path);
		cJSON_AddNumberToObject(out_json, "jobs", n);
		cJSON_AddNumberToObject(out_json, "bytes", (double)size);
	} else if (status == 0) {
		client_say(cl, "wrote %s: %d networks of width %s", path, n,
			   meta(&s[0], "nf") ? meta(&s[0], "nf") : "?");
		putchar('\n');
	}
	free(file);
	for (int i = 0; i < n; i++) {
		free(s[i].bytes);
		cJSON_Delete(s[i].head);
		cJSON_Delete(jobs[i]);
	}
	free(s);
	free(jobs);
	return status;
}
