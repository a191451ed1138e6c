/*
 * replies.h - the renders and exports a worker answers: who waits for
 * each, by request number, and its answer on the wire.
 *
 * A work request carries a number and no JSON-RPC: the JSON-RPC id and
 * the connection stay here, and the worker's answer (0, or a negative
 * error code from errors.h with a sentence) becomes the JSON-RPC result
 * or error here and nowhere else. Loop thread only.
 */
#ifndef VKINR_REPLIES_H
#define VKINR_REPLIES_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "loop/loop_state.h"
#include "worker/worker.h"

/* Remembers that conn waits for req under rpc_id (NULL for a
 * notification: nothing is sent, the connection only waits) and gives req
 * its number. Returns 0 or ERR_NOMEM. */
int replies_add(struct service *svc, uint64_t conn, const cJSON *rpc_id,
		struct work_request *req);
/* A worker answered req (ownership passes): its connection, if still
 * open, gets the result or the error and may send its next request. */
void replies_answer(struct service *svc, struct work_request *req);
/* conn has closed: nobody waits for its requests any more (the worker
 * drops those it has not started, worker_drop_requests). */
void replies_drop_conn(struct service *svc, uint64_t conn);
/* Forgets every request (at exit). */
void replies_finish(struct service *svc);

#endif
