/*
 * test_jsonrpc.c - the JSON-RPC 2.0 envelope: every builder makes one line
 * ending in '\n' that parses back to what was put in (ids of every kind,
 * strings with newlines escaped), and rpc_classify tells requests,
 * notifications, results and errors apart and says why an envelope is bad.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/jsonrpc.h"
#include "proto/protocol.h"

/* Checks that line is exactly one line and parses it. */
static cJSON *parse_line(char *line)
{
	assert_non_null(line);
	size_t n = strlen(line);
	assert_true(n >= 2);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', n - 1));
	cJSON *obj = cJSON_ParseWithLength(line, n);
	assert_non_null(obj);
	free(line);
	return obj;
}

static void test_request(void **state)
{
	cJSON *params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "job", "line1\nline2");
	cJSON *obj = parse_line(rpc_request_line(42, M_JOB_GET, params));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_REQUEST);
	assert_int_equal(cJSON_GetObjectItem(obj, "id")->valueint, 42);
	assert_string_equal(cJSON_GetObjectItem(obj, "method")->valuestring,
			    "job.get");
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "params"), "job")
		->valuestring,
	    "line1\nline2");
	cJSON_Delete(obj);

	obj = parse_line(rpc_request_line(1, M_HELLO, NULL));
	assert_null(cJSON_GetObjectItem(obj, "params"));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_REQUEST);
	cJSON_Delete(obj);
}

static void test_result_and_error(void **state)
{
	cJSON *id = cJSON_CreateString("abc");
	cJSON *res = cJSON_CreateObject();
	cJSON_AddNumberToObject(res, "x", 1.5);
	cJSON *obj = parse_line(rpc_result_line(id, res));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_RESULT);
	assert_string_equal(cJSON_GetObjectItem(obj, "id")->valuestring, "abc");
	cJSON_Delete(obj);

	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "name", "NOT_FOUND");
	obj =
	    parse_line(rpc_error_line(id, RPC_JOB_NOT_FOUND, "no job 7", data));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_ERROR);
	cJSON *err = cJSON_GetObjectItem(obj, "error");
	assert_int_equal(cJSON_GetObjectItem(err, "code")->valueint,
			 RPC_JOB_NOT_FOUND);
	assert_string_equal(cJSON_GetObjectItem(err, "message")->valuestring,
			    "no job 7");
	cJSON_Delete(obj);
	cJSON_Delete(id);

	/* an error about a request whose id could not be read: id null */
	obj = parse_line(rpc_error_line(NULL, RPC_PARSE_ERROR, "bad", NULL));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(obj, "id")));
	assert_null(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "error"), "data"));
	cJSON_Delete(obj);

	/* a null result is still a result */
	cJSON *nid = cJSON_CreateNumber(3);
	obj = parse_line(rpc_result_line(nid, NULL));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_RESULT);
	cJSON_Delete(obj);
	cJSON_Delete(nid);
}

static void test_notification(void **state)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "job", "1");
	cJSON_AddStringToObject(p, "state", S_DONE);
	cJSON *obj = parse_line(rpc_notification_line(N_JOB_STATE, p));
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_NOTIFICATION);
	assert_null(cJSON_GetObjectItem(obj, "id"));
	cJSON_Delete(obj);
}

static void expect_invalid(const char *text, const char *why_part)
{
	cJSON *obj = cJSON_Parse(text);
	const char *why = NULL;
	assert_int_equal(rpc_classify(obj, &why), RPC_KIND_INVALID);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("'%s': reason '%s' lacks '%s'", text, why, why_part);
	cJSON_Delete(obj);
}

static void test_classify_invalid(void **state)
{
	expect_invalid("[1,2]", "object");
	expect_invalid("{\"id\":1,\"method\":\"hello\"}", "jsonrpc");
	expect_invalid("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}",
		       "2.0");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"x\"}",
		       "id");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "method");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
		       "method");
	expect_invalid(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}",
	    "params");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1}", "method");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"result\":1}", "id");
	expect_invalid(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\"}}",
	    "code");
	/* NULL is not an object either */
	const char *why = NULL;
	assert_int_equal(rpc_classify(NULL, &why), RPC_KIND_INVALID);
	assert_non_null(why);
}

static void test_classify_valid(void **state)
{
	const char *req =
	    "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"x\",\"params\":[]}";
	cJSON *obj = cJSON_Parse(req);
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_REQUEST);
	cJSON_Delete(obj);
	obj = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}");
	assert_int_equal(rpc_classify(obj, NULL), RPC_KIND_NOTIFICATION);
	cJSON_Delete(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_result_and_error),
		cmocka_unit_test(test_notification),
		cmocka_unit_test(test_classify_invalid),
		cmocka_unit_test(test_classify_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
