/*
 * conn.h - vkinrctl's connection to vkinrd: the Unix socket, NDJSON line
 * framing, and JSON-RPC calls made one at a time.
 *
 * The client is synchronous: conn_call sends one request and reads until
 * the answer with that id arrives. Notifications that arrive meanwhile (a
 * subscription's progress) are kept, in order, for conn_next_notification,
 * so a command can mix calls and a stream on one connection.
 */
#ifndef VKINR_CLIENT_CONN_H
#define VKINR_CLIENT_CONN_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The longest line the client accepts from the daemon. Answers carry
 * base64 of whole model packages and images, so this is larger than the
 * daemon's limit on requests (LIMIT_LINE_BYTES). */
#define CONN_MAX_ANSWER_BYTES (1024u << 20)

struct client_conn;

/*
 * Connects to the socket. Returns 0 and *out, or ERR_IO / ERR_INVALID (path
 * too long for a Unix socket) / ERR_NOMEM; why (whylen bytes) then says
 * what failed in words. timeout_ms (0: none) bounds connecting and every
 * conn_call: see conn.c.
 */
int conn_open(const char *path, int timeout_ms, struct client_conn **out,
	      char *why, size_t whylen);
/* From now on, every string in what the daemon sends is escaped for a
 * terminal (text_escape) as it arrives, for commands that print for
 * people. */
void conn_escape_text(struct client_conn *c);
/* Closes and frees; conn_close(NULL) does nothing. */
void conn_close(struct client_conn *c);

/*
 * Calls method with params (consumed). Returns 0 and *result (the caller
 * deletes it; may be JSON null), CLIENT_ERR_RPC when the daemon answered
 * with an error (see conn_last_error), CLIENT_ERR_TIMEOUT when the daemon
 * did not answer in time (conn_why says which call; the connection is
 * then of no further use), ERR_TOO_LARGE when the request
 * exceeds the daemon's line limit, ERR_IO when the connection failed or
 * closed (conn_why says how), ERR_FORMAT when the daemon sent a line that
 * is not JSON-RPC, ERR_NOMEM.
 */
int conn_call(struct client_conn *c, const char *method, cJSON *params,
	      cJSON **result);
/* conn_call in two halves, so that several connections may each have a
 * call in flight: conn_send sends the request (params consumed) and says
 * its id; conn_await waits for that id's answer, as conn_call. */
int conn_send(struct client_conn *c, const char *method, cJSON *params,
	      int *id);
int conn_await(struct client_conn *c, int id, const char *method,
	       cJSON **result);

/*
 * Waits up to timeout_ms (-1: forever) for the next notification. Returns 0
 * with *msg set to the whole message (the caller deletes it), or 0 with
 * *msg NULL on timeout; a negative code as conn_call does.
 */
int conn_next_notification(struct client_conn *c, int timeout_ms, cJSON **msg);

/* The last JSON-RPC error the daemon sent: code, message, data (or NULL). */
int conn_last_error(const struct client_conn *c, const char **message,
		    const cJSON **data);
/* A sentence about the last transport failure. */
const char *conn_why(const struct client_conn *c);

#endif
