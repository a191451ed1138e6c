/*
 * submit-keys.h - a job's key (128 bits over the image's bytes and the
 * options that change its result) and this user's jobs by key, for
 * `vkinrctl submit --skip-done` (submit-keys.c).
 */
#ifndef VKINR_CLIENT_SUBMIT_KEYS_H
#define VKINR_CLIENT_SUBMIT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct client;

/* "k2-" and 32 hex digits into out (n bytes): XXH3-128 over the image's
 * bytes and the job parameters in common (the shared table's, priority
 * aside, init and resize). */
void submit_job_key(const cJSON *common, const uint8_t *png, size_t size,
		    char *out, size_t n);
/* The first form of the key, "k1-" (two FNV-1a streams), which jobs
 * submitted before carry: --skip-done looks for it too. */
void submit_job_key_v1(const cJSON *common, const uint8_t *png, size_t size,
		       char *out, size_t n);
/* *keys = {KEY: {"job","state","batch"}} of this user's jobs that cover
 * an image (queued, running, paused or done; a done one preferred): one
 * job.list. 0 or a client error. */
int submit_load_done_keys(struct client *cl, cJSON **keys);
/* An image covered already by done_as (an entry of those keys): said
 * (with -q, the covering job's id alone) and added to skipped, the JSON
 * summary's list. */
void submit_keys_skipped(struct client *cl, const cJSON *done_as,
			 const char *path, int quiet, cJSON *skipped);

#endif
