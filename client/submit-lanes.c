/*
 * submit-lanes.c - several images at once (submit-lanes.h): SUBMIT_LANES
 * connections, each with one job.submit in flight, so that the daemon
 * decodes several images side by side and stores those that arrive
 * together with one sync (a folder of small images goes several times
 * faster than one call at a time). The calls go round the lanes in
 * order, so the answers are taken, and the jobs recorded and printed, in
 * the order of the images; the jobs' ids follow the order in which the
 * daemon took them.
 */
#include "submit-lanes.h"

#include <stdlib.h>

#include "client.h"
#include "conn.h"
#include "proto/errors.h"
#include "proto/protocol.h"

struct lane {
	struct client_conn *conn;
	int busy, id;
	size_t image;
	char *name;
};

static int lane_land(const struct submit_lane_ops *ops, void *ctx,
		     struct lane *l)
{
	cJSON *result = NULL;
	int rc = conn_await(l->conn, l->id, M_JOB_SUBMIT, &result);
	rc = ops->answered(ctx, l->image, l->name, l->conn, rc, result);
	free(l->name);
	l->name = NULL;
	l->busy = 0;
	return rc;
}

/* The client's connection and as many more as open (up to the lanes). */
static int open_lanes(struct client *cl, struct lane *lanes)
{
	int n = 1;
	lanes[0].conn = cl->conn;
	for (; n < SUBMIT_LANES; n++) {
		char why[256];
		if (conn_open(cl->socket_path,
			      (int)(cl->call_timeout_s * 1000 + 0.5),
			      &lanes[n].conn, why, sizeof(why)) < 0)
			break; /* fewer lanes then */
		if (!cl->json)
			conn_escape_text(lanes[n].conn);
	}
	return n;
}

int submit_lanes_run(struct client *cl, size_t first, size_t n,
		     const struct submit_lane_ops *ops, void *ctx)
{
	struct lane lanes[SUBMIT_LANES] = { { 0 } };
	int nlanes = open_lanes(cl, lanes), at = 0, rc = 0;
	for (size_t i = first; i < n && rc == 0; i++) {
		struct lane *l = &lanes[at];
		if (l->busy && (rc = lane_land(ops, ctx, l)))
			break;
		cJSON *params;
		char *b64, *name;
		if ((rc = ops->prepare(ctx, i, &params, &b64, &name)) ||
		    !params)
			continue;
		int sent = conn_send(l->conn, M_JOB_SUBMIT, params, &l->id);
		free(b64);
		if (sent == ERR_TOO_LARGE) { /* not sent: the lane is free */
			rc = ops->answered(ctx, i, name, l->conn, sent, NULL);
			free(name);
			continue;
		}
		if (sent < 0) {
			free(name);
			rc = sent;
			break;
		}
		*l = (struct lane){ l->conn, 1, l->id, i, name };
		at = (at + 1) % nlanes;
	}
	for (int k = 0; k < nlanes; k++) { /* the rest, oldest first */
		struct lane *l = &lanes[(at + k) % nlanes];
		if (!l->busy)
			continue;
		int landed = rc ? (free(l->name), 0) : lane_land(ops, ctx, l);
		rc = rc ? rc : landed;
	}
	for (int k = 1; k < nlanes; k++)
		conn_close(lanes[k].conn);
	return rc;
}
