/*
 * replies.c - the JSON-RPC side of the requests a worker answers.
 *
 * Each request handed to a worker gets the next number; a pending_reply
 * keeps the number, the connection and a copy of the JSON-RPC id until the
 * worker's WORK_REPLY comes back. The answer is looked up by number, and
 * its connection by id: one that closed meanwhile gets nothing. wire_code
 * is the one place a worker's error code becomes a JSON-RPC code (and,
 * through it, data.name). Loop thread only.
 */
#include "loop/replies.h"

#include <stdlib.h>

#include "proto/errors.h"
#include "proto/jsonrpc.h"
#include "proto/protocol.h"
#include "loop/server.h"
#include "loop/views.h"

/* A render or export handed to a worker, by its number. */
struct pending_reply {
	struct pending_reply *next;
	uint64_t number;
	uint64_t conn;
	cJSON *rpc_id; /* NULL for a notification */
};

int replies_add(struct service *svc, uint64_t conn, const cJSON *rpc_id,
		struct work_request *req)
{
	struct pending_reply *p = calloc(1, sizeof(*p));
	if (!p || (rpc_id && !(p->rpc_id = cJSON_Duplicate(rpc_id, 1)))) {
		free(p);
		return ERR_NOMEM;
	}
	p->number = req->number = ++svc->last_request;
	p->conn = conn;
	p->next = svc->replies;
	svc->replies = p;
	return 0;
}

/* Takes the pending reply numbered number out of the list (NULL: none,
 * its connection has closed). */
static struct pending_reply *take(struct service *svc, uint64_t number)
{
	for (struct pending_reply **pp = &svc->replies; *pp;
	     pp = &(*pp)->next) {
		struct pending_reply *p = *pp;
		if (p->number == number) {
			*pp = p->next;
			return p;
		}
	}
	return NULL;
}

static void reply_free(struct pending_reply *p)
{
	cJSON_Delete(p->rpc_id);
	free(p);
}

/* The JSON-RPC code of a worker's failure. A render's model that the
 * engine refuses is the client's; an export of a job without a checkpoint
 * comes too early; out of host memory is the daemon's; anything else is
 * the device's. */
static int wire_code(const struct work_request *req)
{
	if (req->rc == ERR_NOMEM)
		return RPC_INTERNAL_ERROR;
	if (req->kind == WORK_RENDER)
		return req->rc == ERR_INVALID || req->rc == ERR_FORMAT
			   ? RPC_BAD_MODEL
			   : RPC_DEVICE;
	return req->rc == ERR_NOT_FOUND ? RPC_JOB_STATE : RPC_DEVICE;
}

static cJSON *result(const struct work_request *req)
{
	cJSON *r;
	if (req->kind == WORK_EXPORT) {
		r = views_export_result(req->model_b64, req->png_b64);
	} else {
		r = cJSON_CreateObject();
		cJSON_AddItemToObject(
		    r, "png", cJSON_CreateStringReference(req->png_b64));
		if (req->has_view) { /* what a render at another size made */
			const struct nn_view_info *v = &req->view_info;
			cJSON_AddNumberToObject(r, "width", v->width);
			cJSON_AddNumberToObject(r, "height", v->height);
			cJSON_AddNumberToObject(r, "scale", v->scale);
			cJSON_AddBoolToObject(r, "resampled", !v->exact);
		}
	}
	if (req->has_psnr)
		cJSON_AddNumberToObject(r, "psnr", req->psnr);
	else if (req->kind == WORK_EXPORT)
		cJSON_AddNullToObject(r, "psnr");
	return r;
}

void replies_answer(struct service *svc, struct work_request *req)
{
	struct pending_reply *p = take(svc, req->number);
	struct peer_conn *c = p ? server_find(svc->server, p->conn) : NULL;
	if (c)
		server_conn_release(c);
	if (req->rc) /* a path the worker named, as people know it */
		queue_shown_text(svc->queue, req->message,
				 sizeof(req->message));
	if (c && p->rpc_id && req->rc)
		server_send(c, views_error_line(p->rpc_id, wire_code(req),
						req->message, NULL, 0));
	else if (c && p->rpc_id) /* printed before req's strings go */
		server_send(c, rpc_result_line(p->rpc_id, result(req)));
	if (p)
		reply_free(p);
	work_request_destroy(req);
}

void replies_drop_conn(struct service *svc, uint64_t conn)
{
	struct pending_reply **pp = &svc->replies;
	while (*pp) {
		struct pending_reply *p = *pp;
		if (p->conn != conn) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		reply_free(p);
	}
}

void replies_finish(struct service *svc)
{
	while (svc->replies) {
		struct pending_reply *p = svc->replies;
		svc->replies = p->next;
		reply_free(p);
	}
}
