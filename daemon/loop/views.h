/*
 * views.h - what the daemon's answers look like: the JSON objects of jobs,
 * job states and devices, the per-epoch progress line, an export's result
 * and the error line with its data.name.
 *
 * Builders only: each returns a new object or line and sends nothing; the
 * methods (methods.c), the followers (subs.c) and the worker's replies
 * (replies.c) send them. Loop thread only.
 */
#ifndef VKINR_VIEWS_H
#define VKINR_VIEWS_H

#include <cjson/cJSON.h>

#include "jobs/queue.h"
#include "loop/loop_state.h"

/* Adds key: v, or key: null when v is not finite. */
void views_add_number(cJSON *o, const char *key, double v);

/* The settings a job will use: its parameters with what waits for the
 * width filled in for default_width (the width its device would give it,
 * schedule_default_width; 0 when not known yet). */
struct job_params views_job_settings(const struct job *job, int default_width);
/* "width 64 (default), lr 0.00424 (default), warmup 10 (default)" for
 * events and logs; what is not known yet is said to be "by device" or
 * "by width". */
void views_settings_text(const struct job_params *p, char *buf, size_t len);
/* A job as job.get and job.list show it: the settings it will use
 * (views_job_settings), "defaults" naming those left to the daemon. */
cJSON *views_job(const struct job *job, int default_width);
/* {job, state}: the answer of the methods that change a job's state. */
cJSON *views_job_state(const struct job *job);
/* The params of a job.state notification. */
cJSON *views_state_params(const struct job *job);
/* A job.progress notification line for one epoch of job's history (a new
 * string, NULL when out of memory). */
char *views_progress_line(const struct job *job, const struct nn_metrics *m,
			  double time);
/* daemon.status's "devices": one object per worker. */
cJSON *views_devices(const struct service *svc);
/* An export's result: the model package and the reconstruction, by
 * reference (the strings must outlive the result's printing). */
cJSON *views_export_result(const char *model_b64, const char *png_b64);

/* data of an RPC_LIMIT error: which documented limit, and its value. */
cJSON *views_limit_data(const char *name, double value);
/* An error line (ownership of data passes; NULL: an empty object). Its
 * data.name is errors.h's name of err_name, or when that is 0 the one
 * that goes with the JSON-RPC code. */
char *views_error_line(const cJSON *id, int code, const char *msg, cJSON *data,
		       int err_name);

#endif
