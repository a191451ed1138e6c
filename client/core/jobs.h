/*
 * jobs.h - jobs as the client sees them: ids, batches and the fields of a
 * job object (proto/PROTOCOL.md: id, name, state, epoch, epochs, psnr,
 * best_psnr, width, image, device, error; and batch when it has one).
 *
 * The client never assumes what an id looks like: ids are kept as the JSON
 * values the daemon sent (a number or a string) and sent back the same.
 */
#ifndef VKINR_CLIENT_JOBS_H
#define VKINR_CLIENT_JOBS_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct client;

/* Formats an id (number or string) for people; returns buf. */
const char *job_id_text(const cJSON *id, char *buf, size_t n);
/* Whether two ids (number or string) name the same job. */
int job_id_equal(const cJSON *a, const cJSON *b);
/* {"job": id} with a copy of id; NULL when out of memory. */
cJSON *job_params(const cJSON *id);

/* Fields of a job object, with a fallback when missing or mistyped. */
const char *job_str(const cJSON *job, const char *key, const char *dflt);
double job_num(const cJSON *job, const char *key, double dflt);
/* Seconds the job has spent fitting: its "seconds", else finished (or
 * now) minus started, Unix times; NaN when it has not started. */
double job_seconds(const cJSON *job);
/* Whether a state is one of the six a job can be in. */
int job_state_known(const char *state);
/* Whether a job of the list (job objects) belongs to batch. */
int jobs_batch_known(const cJSON *jobs, const char *batch);
/* Whether a state is final (done, failed, cancelled). */
int job_state_ended(const char *state);

/*
 * Turns command-line words into job ids: each word is a job id, or a batch
 * id standing for every job of that batch (in the daemon's order), or the
 * name of one job. Asks the daemon for its list once; a word that names
 * nothing there is kept as it is, so that the daemon's own "no such job"
 * answers it. A job and its retries (`retry` copies the name) are one
 * name: it stands for the newest of them. A name that unrelated jobs have
 * is refused, with their ids (CLIENT_ERR_AMBIGUOUS, said already;
 * client_fail makes it exit 2). Returns 0 and *ids (a cJSON array the
 * caller deletes), or a negative code for client_fail.
 */
int jobs_resolve(struct client *cl, char **words, int nwords, cJSON **ids);
/* The same, but a name that a job and its retries share stands for all
 * of them (rm, plot, metrics: the whole retry chain). */
int jobs_resolve_chains(struct client *cl, char **words, int nwords,
			cJSON **ids);

/* submit --after JOB[,JOB...] ("3,7,cat", resolved as jobs_resolve
 * does): params.after, the ids. 0, or the exit status of what was wrong
 * (said). */
struct cmd_entry;
int jobs_add_after(struct client *cl, const struct cmd_entry *e,
		   const char *text, cJSON *params);

/*
 * The ids of the caller's jobs (all jobs for root) in state, among those
 * that words name (job or batch ids) or, with no words, among all. Same
 * return as jobs_resolve.
 */
int jobs_in_state(struct client *cl, char **words, int nwords,
		  const char *state, cJSON **ids);

/* The job objects of a job.list result ({"jobs": [...]}, or a bare array). */
const cJSON *jobs_of_list(const cJSON *result);

#endif
