/*
 * history.c - fetching a job's metrics history through the protocol's own
 * replay: job.subscribe answers with the number of epochs it replays, the
 * replay follows as job.progress notifications, oldest first, and
 * job.unsubscribe ends it. Live epochs that arrive meanwhile (a running
 * job) are taken too while they are in order; the first "replay" rows are
 * all that is waited for.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/errors.h"
#include "core/history.h"
#include "core/jobs.h"
#include "proto/protocol.h"

#define HISTORY_WAIT_MS 30000 /* for one replayed epoch: a loaded daemon */

static int add_row(struct history *h, const cJSON *p)
{
	struct history_row r = {
		.epoch = (int)job_num(p, "epoch", 0),
		.psnr = job_num(p, "psnr_best", job_num(p, "psnr", NAN)),
		.live_psnr = job_num(p, "psnr", NAN),
		.mse = job_num(p, "mse", NAN),
		.lr = job_num(p, "lr", NAN),
		.ms = job_num(p, "ms", NAN),
		.time = job_num(p, "time", NAN),
	};

	if (h->n > 0 && r.epoch <= h->rows[h->n - 1].epoch)
		return 0;
	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 256;
		struct history_row *rows =
		    realloc(h->rows, cap * sizeof(*rows));
		if (!rows)
			return ERR_NOMEM;
		h->rows = rows;
		h->cap = cap;
	}
	/* the training time so far: the epochs' own times, summed */
	r.seconds = (h->n ? h->rows[h->n - 1].seconds : 0) +
		    (isfinite(r.ms) && r.ms > 0 ? r.ms / 1000.0 : 0);
	h->rows[h->n++] = r;
	return 0;
}

int history_fetch(struct client *cl, const cJSON *id, struct history *out)
{
	cJSON *job = NULL, *result = NULL, *msg;
	int rc, replay;

	memset(out, 0, sizeof(*out));
	out->psnr = NAN;
	job_id_text(id, out->idtext, sizeof(out->idtext));
	if ((rc = client_call(cl, M_JOB_GET, job_params(id), &job)) < 0)
		return rc;
	snprintf(out->name, sizeof(out->name), "%s", job_str(job, "name", ""));
	out->psnr = job_num(job, "psnr", NAN);
	const char *state = job_str(job, "state", "");
	out->ended = !strcmp(state, "done") || !strcmp(state, "failed") ||
		     !strcmp(state, "cancelled");
	cJSON_Delete(job);
	if ((rc = client_call(cl, M_JOB_SUBSCRIBE, job_params(id), &result)) <
	    0)
		return rc;
	replay = (int)job_num(result, "replay", 0);
	cJSON_Delete(result);
	for (int got = 0; got < replay;) {
		const cJSON *params, *method;

		rc = conn_next_notification(cl->conn, HISTORY_WAIT_MS, &msg);
		if (rc < 0 || !msg) {
			history_finish(out);
			return rc < 0 ? rc : ERR_IO;
		}
		method = cJSON_GetObjectItemCaseSensitive(msg, "method");
		params = cJSON_GetObjectItemCaseSensitive(msg, "params");
		if (cJSON_IsString(method) &&
		    !strcmp(method->valuestring, N_JOB_PROGRESS) &&
		    job_id_equal(
			cJSON_GetObjectItemCaseSensitive(params, "job"), id)) {
			got++;
			rc = add_row(out, params);
		}
		cJSON_Delete(msg);
		if (rc < 0) {
			history_finish(out);
			return rc;
		}
	}
	rc = client_call(cl, M_JOB_UNSUBSCRIBE, job_params(id), &result);
	cJSON_Delete(result);
	return rc < 0 ? rc : 0;
}

void history_finish(struct history *h)
{
	free(h->rows);
	h->rows = NULL;
	h->n = h->cap = 0;
}
