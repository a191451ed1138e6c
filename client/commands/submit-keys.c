/*
 * submit-keys.c - the key of a job (`vkinrctl submit`): the same image
 * with the same options is the same job, so --skip-done can tell which
 * images a job of this user already covers. A file of its own to keep
 * cmd-submit.c to the sending. The key is XXH3-128 (libxxhash); the
 * first keys, two FNV-1a streams, are still recognised, so that jobs
 * submitted before count for --skip-done.
 */
#include "commands/submit-keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/client.h"
#include "core/jobs.h"
#include "proto/errors.h"
#include "proto/params.h"
#include "proto/protocol.h"

/* Hands each field of the key after the image, in a fixed order (the
 * table's numbers and words, priority aside, then --init, then the
 * scaling), to feed. */
static void key_fields(const cJSON *common,
		       void (*feed)(void *ctx, const void *p, size_t n),
		       void *ctx)
{
	const cJSON *init = cJSON_GetObjectItemCaseSensitive(common, "init");
	const cJSON *resize =
	    cJSON_GetObjectItemCaseSensitive(common, "resize");
	char *text;

	for (int i = 0; i < PARAM_COUNT; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		    common, param_table[i].key);
		char field[96];
		if (i == PARAM_PRIORITY || !v)
			continue;
		if (cJSON_IsNumber(v))
			snprintf(field, sizeof(field), ";%s=%.17g",
				 param_table[i].key, v->valuedouble);
		else if (cJSON_IsString(v))
			snprintf(field, sizeof(field), ";%s=%s",
				 param_table[i].key, v->valuestring);
		else
			continue;
		feed(ctx, field, strlen(field));
	}
	if (init && (text = cJSON_PrintUnformatted(init))) {
		feed(ctx, text, strlen(text));
		free(text);
	}
	/* a scaled image is another job (absent: the key as before) */
	if (resize && (text = cJSON_PrintUnformatted(resize))) {
		feed(ctx, ";resize=", 8);
		feed(ctx, text, strlen(text));
		free(text);
	}
}

/* The first keys ("k1-"): two FNV-1a streams, mixed. Jobs submitted
 * before the xxHash keys carry them, so --skip-done still knows them. */
struct fnv_pair {
	uint64_t a, b;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void fnv_feed(void *ctx, const void *p, size_t n)
{
	struct fnv_pair *f = ctx;
	f->a = fnv1a(f->a, p, n);
	f->b = fnv1a(f->b, p, n);
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void submit_job_key_v1(const cJSON *common, const uint8_t *png, size_t size,
		       char *out, size_t n)
{
	struct fnv_pair f = { 0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL };

	fnv_feed(&f, png, size);
	key_fields(common, fnv_feed, &f);
	snprintf(out, n, "k1-%016llx%016llx", (unsigned long long)mix(f.a),
		 (unsigned long long)mix(f.b));
}

static void xxh_feed(void *ctx, const void *p, size_t n)
{
	XXH3_128bits_update(ctx, p, n);
}

/*
 * The job's key: XXH3's 128 bits (Debian's libxxhash) over the image's
 * size and bytes and the options that change the result, in a fixed order
 * so that the order of the options on the command line does not matter.
 * Kept by the daemon with the job; --skip-done compares them.
 */
void submit_job_key(const cJSON *common, const uint8_t *png, size_t size,
		    char *out, size_t n)
{
	XXH3_state_t *st = XXH3_createState();
	char len[32];

	if (!st) { /* out of memory: the first key, which needs none */
		submit_job_key_v1(common, png, size, out, n);
		return;
	}
	XXH3_128bits_reset(st);
	snprintf(len, sizeof(len), "png=%zu;", size);
	xxh_feed(st, len, strlen(len));
	xxh_feed(st, png, size);
	key_fields(common, xxh_feed, st);
	XXH128_hash_t h = XXH3_128bits_digest(st);
	XXH3_freeState(st);
	snprintf(out, n, "k2-%016llx%016llx", (unsigned long long)h.high64,
		 (unsigned long long)h.low64);
}

/* The keys of this user's jobs that cover an image, for --skip-done: one
 * job.list. Any live job does (queued, running, paused, done): one that
 * failed or was cancelled does not. A done job is preferred to one that
 * will run. */
int submit_load_done_keys(struct client *cl, cJSON **keys)
{
	cJSON *list = NULL;
	const cJSON *job;
	int rc;

	if ((rc = client_call(cl, M_JOB_LIST, cJSON_CreateObject(), &list)) < 0)
		return rc;
	*keys = cJSON_CreateObject();
	cJSON_ArrayForEach(job, jobs_of_list(list))
	{
		const char *key = job_str(job, "key", NULL);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		const char *state = job_str(job, "state", "");
		const cJSON *had =
		    cJSON_GetObjectItemCaseSensitive(*keys, key ? key : "");
		if (!key || !id ||
		    (job_state_ended(state) && strcmp(state, S_DONE)))
			continue;
		if (job_num(job, "uid", getuid()) != getuid() ||
		    (had && (!strcmp(job_str(had, "state", ""), S_DONE) ||
			     strcmp(state, S_DONE))))
			continue;
		cJSON *cover = cJSON_CreateObject();
		cJSON_AddItemToObject(cover, "job", cJSON_Duplicate(id, 1));
		cJSON_AddStringToObject(cover, "state", state);
		if (job_str(job, "batch", NULL))
			cJSON_AddStringToObject(cover, "batch",
						job_str(job, "batch", ""));
		if (had)
			cJSON_ReplaceItemInObjectCaseSensitive(*keys, key,
							       cover);
		else
			cJSON_AddItemToObject(*keys, key, cover);
	}
	cJSON_Delete(list);
	return *keys ? 0 : ERR_NOMEM;
}

void submit_keys_skipped(struct client *cl, const cJSON *done_as,
			 const char *path, int quiet, cJSON *skipped)
{
	char text[64], batch[64] = "";
	const cJSON *cid = cJSON_GetObjectItemCaseSensitive(done_as, "job");
	const char *state = job_str(done_as, "state", "");
	cJSON *entry = cJSON_CreateObject();
	job_id_text(cid, text, sizeof(text));
	if (job_str(done_as, "batch", NULL))
		snprintf(batch, sizeof(batch), ", batch %s",
			 job_str(done_as, "batch", ""));
	/* -q: the covering id in the image's place, so that a script
	 * that waits for the ids printed waits for every image */
	if (quiet && !cl->json)
		printf("%s\n", text);
	else if (!cl->json)
		client_say(cl, "skipped %s: %s already as job %s%s\n", path,
			   !strcmp(state, S_DONE) ? "done" : state, text,
			   batch);
	cJSON_AddStringToObject(entry, "file", path);
	cJSON_AddItemToObject(entry, "job", cJSON_Duplicate(cid, 1));
	cJSON_AddStringToObject(entry, "state", state);
	if (job_str(done_as, "batch", NULL))
		cJSON_AddStringToObject(entry, "batch",
					job_str(done_as, "batch", ""));
	cJSON_AddItemToArray(skipped, entry);
}
