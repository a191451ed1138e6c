/*
 * jsonrpc.c - JSON-RPC 2.0 envelopes as NDJSON lines.
 *
 * Every builder takes ownership of the cJSON it is given (also when it
 * fails), prints the envelope without whitespace (cJSON escapes control
 * characters, so a printed object never contains a raw '\n') and appends
 * the '\n' that ends the line. rpc_classify checks the envelope only; what
 * the params mean is the caller's business.
 */
#include "proto/jsonrpc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *rpc_add_exact_integer(cJSON *obj, const char *key, uint64_t value)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRIu64, value);
	return cJSON_AddRawToObject(obj, key, text);
}

/* Prints obj (and deletes it) as one line ending in '\n'. */
static char *finish_line(cJSON *obj)
{
	if (!obj)
		return NULL;
	char *text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	char *line = realloc(text, n + 2);
	if (!line) {
		free(text);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}

/* A new envelope {"jsonrpc":"2.0"}; NULL when out of memory. */
static cJSON *envelope(void)
{
	cJSON *obj = cJSON_CreateObject();
	if (obj && !cJSON_AddStringToObject(obj, "jsonrpc", "2.0")) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

/* Adds item under key, taking ownership; on failure deletes both. */
static cJSON *add_owned(cJSON *obj, const char *key, cJSON *item)
{
	if (!obj || !item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(obj);
		cJSON_Delete(item);
		return NULL;
	}
	return obj;
}

static cJSON *copy_id(const cJSON *id)
{
	return id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull();
}

char *rpc_request_line(int id, const char *method, cJSON *params)
{
	cJSON *obj = envelope();
	obj = add_owned(obj, "id", cJSON_CreateNumber(id));
	obj = add_owned(obj, "method", cJSON_CreateString(method));
	if (params)
		obj = add_owned(obj, "params", params);
	return finish_line(obj);
}

char *rpc_result_line(const cJSON *id, cJSON *result)
{
	cJSON *obj = envelope();
	obj = add_owned(obj, "id", copy_id(id));
	obj = add_owned(obj, "result", result ? result : cJSON_CreateNull());
	return finish_line(obj);
}

char *rpc_error_line(const cJSON *id, int code, const char *message,
		     cJSON *data)
{
	cJSON *err = cJSON_CreateObject();
	err = add_owned(err, "code", cJSON_CreateNumber(code));
	err = add_owned(err, "message",
			cJSON_CreateString(message ? message : ""));
	if (data)
		err = add_owned(err, "data", data);
	cJSON *obj = envelope();
	obj = add_owned(obj, "id", copy_id(id));
	obj = add_owned(obj, "error", err);
	return finish_line(obj);
}

char *rpc_notification_line(const char *method, cJSON *params)
{
	cJSON *obj = envelope();
	obj = add_owned(obj, "method", cJSON_CreateString(method));
	if (params)
		obj = add_owned(obj, "params", params);
	return finish_line(obj);
}

static int valid_id(const cJSON *id)
{
	return cJSON_IsNumber(id) || cJSON_IsString(id) || cJSON_IsNull(id);
}

enum rpc_kind rpc_classify(const cJSON *msg, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (!cJSON_IsObject(msg)) {
		*why = "a message must be a JSON object";
		return RPC_KIND_INVALID;
	}
	const cJSON *version = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0")) {
		*why = "\"jsonrpc\" must be the string \"2.0\"";
		return RPC_KIND_INVALID;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	if (id && !valid_id(id)) {
		*why = "\"id\" must be a number, a string or null";
		return RPC_KIND_INVALID;
	}
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	if (method) {
		if (!cJSON_IsString(method) || !method->valuestring[0]) {
			*why = "\"method\" must be a non-empty string";
			return RPC_KIND_INVALID;
		}
		const cJSON *params =
		    cJSON_GetObjectItemCaseSensitive(msg, "params");
		if (params && !cJSON_IsObject(params) &&
		    !cJSON_IsArray(params)) {
			*why = "\"params\" must be an object or an array";
			return RPC_KIND_INVALID;
		}
		return id ? RPC_KIND_REQUEST : RPC_KIND_NOTIFICATION;
	}
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
	if (error) {
		const cJSON *code =
		    cJSON_GetObjectItemCaseSensitive(error, "code");
		const cJSON *text =
		    cJSON_GetObjectItemCaseSensitive(error, "message");
		if (!cJSON_IsObject(error) || !cJSON_IsNumber(code) ||
		    !cJSON_IsString(text)) {
			*why = "\"error\" must be an object with a numeric "
			       "\"code\" and a string \"message\"";
			return RPC_KIND_INVALID;
		}
		return RPC_KIND_ERROR;
	}
	if (cJSON_GetObjectItemCaseSensitive(msg, "result")) {
		if (!id) {
			*why = "a result needs an \"id\"";
			return RPC_KIND_INVALID;
		}
		return RPC_KIND_RESULT;
	}
	*why = "a message needs \"method\", \"result\" or \"error\"";
	return RPC_KIND_INVALID;
}
