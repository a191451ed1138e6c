/*
 * jobs.c - job ids, batch ids and job fields, for every command.
 *
 * A batch id is what `submit` prints when one call submits several images;
 * the daemon keeps it in each job's "batch" field. Wherever a command takes
 * job ids it also takes batch ids and job names, and jobs_resolve()
 * expands them here, with one job.list, so that no command needs to know
 * batches or names exist. A name that a job and its retries share (the
 * retry chain) stands for the newest of them, or for all of them where a
 * command takes the whole chain (rm, plot, metrics); a name that
 * unrelated jobs have is refused, naming them.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/client.h"
#include "proto/errors.h"
#include "core/jobs.h"
#include "proto/protocol.h"

const char *job_id_text(const cJSON *id, char *buf, size_t n)
{
	if (cJSON_IsString(id))
		snprintf(buf, n, "%s", id->valuestring);
	else if (cJSON_IsNumber(id))
		snprintf(buf, n, "%.0f", id->valuedouble);
	else
		snprintf(buf, n, "?");
	return buf;
}

int job_id_equal(const cJSON *a, const cJSON *b)
{
	char x[128], y[128];

	if (!a || !b)
		return 0;
	return !strcmp(job_id_text(a, x, sizeof(x)),
		       job_id_text(b, y, sizeof(y)));
}

cJSON *job_params(const cJSON *id)
{
	cJSON *params = cJSON_CreateObject();

	if (params &&
	    !cJSON_AddItemToObject(params, "job", cJSON_Duplicate(id, 1))) {
		cJSON_Delete(params);
		return NULL;
	}
	return params;
}

const char *job_str(const cJSON *job, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
	return cJSON_IsString(v) ? v->valuestring : dflt;
}

double job_num(const cJSON *job, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

double job_seconds(const cJSON *job)
{
	double started = job_num(job, "started", NAN);
	double finished = job_num(job, "finished", NAN);

	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(job, "seconds")))
		return job_num(job, "seconds", NAN);
	if (!isfinite(started) || started <= 0)
		return NAN;
	if (!isfinite(finished) || finished <= 0)
		finished = (double)time(NULL);
	return finished - started;
}

int job_state_ended(const char *state)
{
	return state && (!strcmp(state, S_DONE) || !strcmp(state, S_FAILED) ||
			 !strcmp(state, S_CANCELLED));
}

int job_state_known(const char *state)
{
	static const char *const states[] = {
		S_QUEUED, S_RUNNING, S_PAUSED, S_DONE, S_FAILED, S_CANCELLED
	};

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(state, states[i]))
			return 1;
	return 0;
}

int jobs_batch_known(const cJSON *jobs, const char *batch)
{
	const cJSON *job;

	cJSON_ArrayForEach(
	    job, jobs) if (!strcmp(job_str(job, "batch", ""), batch)) return 1;
	return 0;
}

const cJSON *jobs_of_list(const cJSON *result)
{
	if (cJSON_IsArray(result))
		return result;
	return cJSON_GetObjectItemCaseSensitive(result, "jobs");
}

/* A word the list does not know: sent as the daemon spells its ids (a
 * number when its listed ids are numbers and the word is digits), else as
 * a string, so that the daemon's own "no such job" answers it. */
static cJSON *guess_id(const char *word, const cJSON *jobs)
{
	const cJSON *first =
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, 0), "id");
	const char *p = word;
	char *end;

	while (isdigit((unsigned char)*p))
		p++;
	if (cJSON_IsNumber(first) && *word && !*p && p - word < 16)
		return cJSON_CreateNumber((double)strtoull(word, &end, 10));
	return cJSON_CreateString(word);
}

/* Whether the jobs of cand (n of them) are one job and its retries: each
 * but one retries (retry_of) another of them, and following retry_of
 * from any leads to that one. */
static int one_chain(const cJSON *const *cand, int n)
{
	int roots = 0;

	for (int i = 0; i < n; i++) {
		const cJSON *at = cand[i];
		int steps = 0;
		for (;;) {
			const char *of = job_str(at, "retry_of", "");
			const cJSON *next = NULL;
			char text[128];
			for (int k = 0; *of && k < n && !next; k++)
				if (!strcmp(
					job_id_text(
					    cJSON_GetObjectItemCaseSensitive(
						cand[k], "id"),
					    text, sizeof(text)),
					of))
					next = cand[k];
			if (!next || ++steps > n)
				break;
			at = next;
		}
		if (steps > n)
			return 0; /* a loop: not a chain */
		if (at == cand[i])
			roots++;
	}
	return roots == 1;
}

/* The newest of the candidates: the latest "created", the later in the
 * daemon's list when equal. */
static const cJSON *newest(const cJSON *const *cand, int n)
{
	const cJSON *best = cand[0];

	for (int i = 1; i < n; i++)
		if (job_num(cand[i], "created", 0) >=
		    job_num(best, "created", 0))
			best = cand[i];
	return best;
}

/* A word that is neither a job id nor a batch id: the job of that name,
 * when one job has it (or the caller's, when others' jobs have it too).
 * A job and its retries (retry) that share the name are one: the newest
 * of them, or all (whole, for rm). Unrelated jobs: says which and returns
 * CLIENT_ERR_AMBIGUOUS; none: 0. */
static int add_named(const cJSON *jobs, const char *word, int whole, cJSON *ids)
{
	const cJSON *job, *cand[256];
	char list[512] = "", text[128];
	int n = 0, nmine = 0;

	cJSON_ArrayForEach(
	    job, jobs) if (!strcmp(job_str(job, "name", ""), word) &&
			   job_num(job, "uid", getuid()) == getuid()) nmine++;
	cJSON_ArrayForEach(job, jobs)
	{
		if (strcmp(job_str(job, "name", ""), word) ||
		    (nmine && job_num(job, "uid", getuid()) != getuid()))
			continue; /* others' jobs of that name aside */
		if (n < (int)(sizeof(cand) / sizeof(cand[0])))
			cand[n] = job;
		if (n++ < 8)
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s (%s)",
				 n > 1 ? ", " : "",
				 job_id_text(cJSON_GetObjectItemCaseSensitive(
						 job, "id"),
					     text, sizeof(text)),
				 job_str(job, "state", "?"));
	}
	if (n > 1 && n <= (int)(sizeof(cand) / sizeof(cand[0])) &&
	    one_chain(cand, n)) {
		for (int i = 0; whole && i < n; i++)
			cJSON_AddItemToArray(
			    ids,
			    cJSON_Duplicate(
				cJSON_GetObjectItemCaseSensitive(cand[i], "id"),
				1));
		if (!whole)
			cJSON_AddItemToArray(
			    ids,
			    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
						newest(cand, n), "id"),
					    1));
		return 1;
	}
	if (n == 1)
		cJSON_AddItemToArray(
		    ids,
		    cJSON_Duplicate(
			cJSON_GetObjectItemCaseSensitive(cand[0], "id"), 1));
	if (n > 1) {
		client_warn("the name '%s' is ambiguous: %d jobs have it: "
			    "%s%s; name one by its id",
			    word, n, list, n > 8 ? ", ..." : "");
		return CLIENT_ERR_AMBIGUOUS;
	}
	return n;
}

/* The jobs a word names: a job id, else a batch id (its jobs), else a
 * job's name. 1 when found, 0 when not, CLIENT_ERR_AMBIGUOUS. */
static int add_matches(const cJSON *jobs, const char *word, int whole,
		       cJSON *ids)
{
	const cJSON *job;
	char text[128];
	int found = 0;

	cJSON_ArrayForEach(job, jobs)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		if (id && !strcmp(job_id_text(id, text, sizeof(text)), word)) {
			cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 1));
			return 1; /* a job id names one job */
		}
	}
	cJSON_ArrayForEach(job, jobs)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		const char *batch = job_str(job, "batch", NULL);
		if (id && batch && !strcmp(batch, word)) {
			cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 1));
			found = 1;
		}
	}
	return found ? found : add_named(jobs, word, whole, ids);
}

static int resolve(struct client *cl, char **words, int nwords, int whole,
		   cJSON **ids)
{
	cJSON *list = NULL, *out;
	const cJSON *jobs;
	int rc;

	*ids = NULL;
	rc = client_call(cl, M_JOB_LIST, cJSON_CreateObject(), &list);
	if (rc < 0 && rc != CLIENT_ERR_RPC)
		return rc;
	jobs = rc == 0 ? jobs_of_list(list) : NULL;

	out = cJSON_CreateArray();
	if (!out) {
		cJSON_Delete(list);
		return ERR_NOMEM;
	}
	for (int i = 0; i < nwords; i++) {
		rc = add_matches(jobs, words[i], whole, out);
		if (rc < 0) {
			cJSON_Delete(out);
			cJSON_Delete(list);
			return rc;
		}
		if (!rc)
			cJSON_AddItemToArray(out, guess_id(words[i], jobs));
	}
	cJSON_Delete(list);
	*ids = out;
	return 0;
}

int jobs_resolve(struct client *cl, char **words, int nwords, cJSON **ids)
{
	return resolve(cl, words, nwords, 0, ids);
}

int jobs_resolve_chains(struct client *cl, char **words, int nwords,
			cJSON **ids)
{
	return resolve(cl, words, nwords, 1, ids);
}

/* Whether a word names the job (its id, its batch or its name). */
static int named(const cJSON *job, char **words, int nwords)
{
	char text[128];

	job_id_text(cJSON_GetObjectItemCaseSensitive(job, "id"), text,
		    sizeof(text));
	for (int i = 0; i < nwords; i++)
		if (!strcmp(words[i], text) ||
		    !strcmp(words[i], job_str(job, "batch", "")) ||
		    !strcmp(words[i], job_str(job, "name", "")))
			return 1;
	return nwords == 0;
}

int jobs_in_state(struct client *cl, char **words, int nwords,
		  const char *state, cJSON **ids)
{
	cJSON *list = NULL, *out;
	const cJSON *job;
	int rc;

	*ids = NULL;
	if ((rc = client_call(cl, M_JOB_LIST, cJSON_CreateObject(), &list)) < 0)
		return rc;
	if (!(out = cJSON_CreateArray())) {
		cJSON_Delete(list);
		return ERR_NOMEM;
	}
	cJSON_ArrayForEach(
	    job, jobs_of_list(
		     list)) if (!strcmp(job_str(job, "state", ""), state) &&
				(getuid() == 0 ||
				 job_num(job, "uid", getuid()) == getuid()) &&
				named(job, words, nwords))
	    cJSON_AddItemToArray(
		out, cJSON_Duplicate(
			 cJSON_GetObjectItemCaseSensitive(job, "id"), 1));
	cJSON_Delete(list);
	*ids = out;
	return 0;
}

static int resolve_list(struct client *cl, const char *text, cJSON **ids)
{
	char *copy = strdup(text), *save = NULL, *words[64];
	int n = 0, rc;

	*ids = NULL;
	if (!copy)
		return ERR_NOMEM;
	for (char *w = strtok_r(copy, ",", &save); w && n < 64;
	     w = strtok_r(NULL, ",", &save))
		words[n++] = w;
	rc = n ? jobs_resolve(cl, words, n, ids) : ERR_INVALID;
	free(copy);
	return rc;
}

int jobs_add_after(struct client *cl, const struct cmd_entry *e,
		   const char *text, cJSON *params)
{
	cJSON *ids;
	int rc = resolve_list(cl, text, &ids);

	if (rc == ERR_INVALID)
		return cmd_usage_error(e, "--after takes job ids, batches or "
					  "names, comma-separated");
	if (rc < 0)
		return client_fail(cl, rc, "--after");
	cJSON_DeleteItemFromObjectCaseSensitive(params, "after");
	cJSON_AddItemToObject(params, "after", ids);
	return 0;
}
