/*
 * submit-lanes.h - sending a folder's images several at once
 * (submit-lanes.c), for `vkinrctl submit`.
 */
#ifndef VKINR_CLIENT_SUBMIT_LANES_H
#define VKINR_CLIENT_SUBMIT_LANES_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct client;
struct client_conn;

/* What the command does for image i: its request (*params NULL: the
 * image is refused or skipped, said already; *b64 and *name freed by the
 * lanes once it is sent), and what it makes of the answer (rc, result:
 * consumed) told on conn. Each returns 0 or a transport error. */
struct submit_lane_ops {
	int (*prepare)(void *ctx, size_t i, cJSON **params, char **b64,
		       char **name);
	int (*answered)(void *ctx, size_t i, const char *name,
			struct client_conn *conn, int rc, cJSON *result);
};

/* Submits images first..n-1 over up to SUBMIT_LANES connections (the
 * client's own and more), one call in flight on each; answers are taken
 * in the images' order. 0, or the first transport error. */
#define SUBMIT_LANES 8
int submit_lanes_run(struct client *cl, size_t first, size_t n,
		     const struct submit_lane_ops *ops, void *ctx);

#endif
