/*
 * methods_common.h - what the families of JSON-RPC methods share: the
 * request being answered, the sentence of its error (fail), the strict
 * readers of its params, the hand-off to decode.c or a worker, and each
 * family's methods for the table in methods.c. One file a family:
 * methods_submit.c (job.submit), methods_control.c (pause, resume,
 * cancel, remove), methods_export.c (job.export, model.render),
 * methods_read.c (hello, status, list, get, logs, subscribe). Loop thread
 * only.
 */
#ifndef VKINR_METHODS_COMMON_H
#define VKINR_METHODS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "loop/decode.h"
#include "loop/methods.h"
#include "jobs/queue.h"
#include "loop/loop_state.h"
#include "nn/render_view.h"

/* A method's answer comes later (a worker, a decode, a state change). */
#define METHOD_DEFERRED 1
/* ... and the request waits for a device (devwait.c), its pending kept. */
#define METHOD_PARKED 2

/* The request being answered. */
struct request {
	struct service *svc;
	struct peer_conn *c;
	const cJSON *id; /* NULL for a notification: no reply */
	const char *method;
	char msg[1024]; /* the error's message */
	cJSON *data;    /* the error's data (optional) */
	int err_name;   /* errors.h code for data.name (0: from the code) */
};

typedef int (*method_fn)(struct request *rq, const cJSON *params,
			 cJSON **result);

/* A request whose inputs are being decoded (decode.c); its connection
 * waits meanwhile. */
struct pending {
	struct decode_job d; /* first: the decode's address is ours */
	struct service *svc;
	uint64_t conn;
	cJSON *rpc_id; /* NULL for a notification */
	const char *method;
	struct job_params p; /* job.submit */
	int width_given;
	int yes; /* job.submit: "yes", run even if slow on a CPU device */
	char job_id[JOB_ID_MAX]; /* job.export */
	struct nn_view view;     /* model.render: scale, size, crop */
	int has_view;
	/* waiting for a device still opening (devwait.c) */
	struct pending *wait_next;
	void (*resume)(struct pending *pd);
	double device_deadline; /* monotonic seconds; 0 until it waits */
};

/* ---- errors and params (methods_common.c) ---- */

/* Sends an error line to c (id NULL: none). */
void methods_send_error(struct peer_conn *c, const cJSON *id, int code,
			const char *msg, cJSON *data, int err_name);
/* Sets rq's error message (client text in it made safe); returns code. */
int methods_fail(struct request *rq, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Refuses keys of params outside known (NULL-terminated). */
int methods_check_keys(struct request *rq, const cJSON *params,
		       const char *const *known);
/* An optional integer in [lo, hi]; 0 when absent (value untouched). */
int methods_get_int(struct request *rq, const cJSON *params, const char *key,
		    double lo, double hi, int64_t *value);
/* An optional string kept for the client (source, key). */
int methods_get_text(struct request *rq, const cJSON *params, const char *key,
		     char *buf, size_t size);
/* A {"KEY": BASE64} object's text, e.g. image.png. */
int methods_get_b64(struct request *rq, const cJSON *params, const char *key,
		    const char *sub, int required, char **text);
/* The inner key of an image object ("png", "jpeg" or "webp"). */
const char *methods_image_key(const cJSON *params, const char *key);
/* A decoded input's refusal, as image_refused or RPC_BAD_MODEL. */
int methods_input_refused(struct request *rq, const char *key, const char *sub,
			  const struct decode_input *in);
/* Whether the caller may change job (its owner, or root). */
int methods_may_touch(struct request *rq, const struct job *job);
/* params.job: an existing job. */
/* A job id as JSON (a string, or an exact integer from 1 to 2^53) as
 * its text in id: METHODS_ID_OK, or why not. */
#define METHODS_ID_TEXT 32
enum {
	METHODS_ID_OK,
	METHODS_ID_LONG,       /* a string too long to be an id */
	METHODS_ID_BAD_NUMBER, /* a fraction, < 1, or past 2^53 */
	METHODS_ID_NONE,       /* neither a string nor a number */
};
int methods_job_id_text(const cJSON *v, char id[METHODS_ID_TEXT]);
int methods_get_job(struct request *rq, const cJSON *params, struct job **out);
/* The job named by params (which hold only "job") of a method that acts
 * on it: it must exist and the caller must own it (or be root). */
int methods_touchable_job(struct request *rq, const cJSON *params,
			  struct job **out);
/* The keys of a method that takes only "job". */
extern const char *const methods_job_only[];
/* Queues req for slot's worker, within the uid's limit:
 * METHOD_DEFERRED, or an error. */
int methods_defer_to_worker(struct request *rq, struct worker_slot *slot,
			    struct work_request *req);
/* Ties pd to rq (its service, connection, id and method), so that it
 * can be answered later: 0, or -1 when out of memory. */
int methods_pending_bind(struct request *rq, struct pending *pd);
/* Starts decoding for rq: METHOD_DEFERRED, or an error. */
int methods_start_decode(struct request *rq, struct pending *pd,
			 void (*done)(struct decode_job *d));
/* The request again, once decoded; NULL when its connection has gone. */
struct peer_conn *methods_pending_request(struct pending *pd,
					  struct request *rq);
void methods_pending_free(struct pending *pd);
/* Sends rq's answer: its result, or its error (methods.c). */
void methods_answer(struct request *rq, int rc, cJSON *result);

/* ---- the methods, by family ---- */

int methods_hello(struct request *rq, const cJSON *params, cJSON **result);
int methods_daemon_status(struct request *rq, const cJSON *params,
			  cJSON **result);
int methods_job_list(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_get(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_logs(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_subscribe(struct request *rq, const cJSON *params,
			  cJSON **result);
int methods_job_unsubscribe(struct request *rq, const cJSON *params,
			    cJSON **result);
int methods_job_submit(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_pause(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_resume(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_cancel(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_remove(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_retry(struct request *rq, const cJSON *params, cJSON **result);
int methods_job_renice(struct request *rq, const cJSON *params, cJSON **result);
/* A priority above SHARE_PRIORITY_USER_MAX from a caller other than root
 * or the daemon's user: the refusal (RPC_PERMISSION), else 0
 * (methods_share.c). */
int methods_priority_refused(struct request *rq, int priority);
/* A batch id that another uid's jobs hold: the refusal, else 0. */
int methods_batch_refused(struct request *rq, const char *batch);
/* The files a new job's folder starts with, about (the per-uid quota
 * counts them before it is stored). */
#define JOBFILES_NEW 8
/* Whether the caller's jobs with a new one of adding bytes would pass
 * its quota of the state folder: the refusal (RPC_LIMIT, with figures),
 * else 0. */
int methods_disk_refused(struct request *rq, size_t adding);
int methods_job_export(struct request *rq, const cJSON *params, cJSON **result);
int methods_model_render(struct request *rq, const cJSON *params,
			 cJSON **result);

#endif
