/*
 * jsonrpc.h - JSON-RPC 2.0 envelopes on top of cJSON, shared by daemon and
 * client: building requests, results, errors and notifications as one
 * NDJSON line each, and classifying a parsed message.
 */
#ifndef VKINR_JSONRPC_H
#define VKINR_JSONRPC_H

#include <stdint.h>

#include <cjson/cJSON.h>

/* Each returns a malloc'ed line ending in "\n" (NULL when out of memory).
 * The cJSON arguments are consumed (deleted) by the call. id may be NULL
 * (JSON null) for errors about requests whose id could not be read. */
char *rpc_request_line(int id, const char *method, cJSON *params);
/* Adds an integer printed with all its digits: cJSON prints a number
 * above 1e15 with 15 significant digits whenever that is within its
 * relative tolerance, which turns 2^53 - 1 into 2^53 - 2. */
cJSON *rpc_add_exact_integer(cJSON *obj, const char *key, uint64_t value);
char *rpc_result_line(const cJSON *id, cJSON *result);
char *rpc_error_line(const cJSON *id, int code, const char *message,
		     cJSON *data);
char *rpc_notification_line(const char *method, cJSON *params);

enum rpc_kind {
	RPC_KIND_INVALID,
	RPC_KIND_REQUEST,      /* has method and id */
	RPC_KIND_NOTIFICATION, /* has method, no id */
	RPC_KIND_RESULT,       /* has id and result */
	RPC_KIND_ERROR,        /* has error */
};

/* Classifies a parsed message; on INVALID, *why says what is wrong. */
enum rpc_kind rpc_classify(const cJSON *msg, const char **why);

#endif
