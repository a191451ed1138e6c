/*
 * test_base64.c - unit tests of util/base64.c.
 *
 * Round trips every length from 0 to 300 (so every padding case, many
 * times over) with bytes covering all 256 values, checks the RFC 4648 test
 * vectors, and checks that malformed text is refused with ERR_FORMAT and
 * leaves no buffer behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/base64.h"
#include "proto/errors.h"

static void test_rfc4648_vectors(void **state)
{
	static const char *const plain[] = { "",     "f",     "fo",    "foo",
					     "foob", "fooba", "foobar" };
	static const char *const coded[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *text = base64_encode(plain[i], strlen(plain[i]));
		uint8_t *back;
		size_t n;

		assert_non_null(text);
		assert_string_equal(text, coded[i]);
		assert_int_equal(base64_encoded_size(strlen(plain[i])),
				 strlen(coded[i]));
		assert_int_equal(base64_decode(text, strlen(text), &back, &n),
				 0);
		assert_non_null(back);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(back, plain[i], n);
		free(back);
		free(text);
	}
}

static void test_round_trip_all_lengths(void **state)
{
	uint8_t data[300] = { 0 };
	uint32_t x = 12345;

	for (size_t len = 0; len <= sizeof(data); len++) {
		char *text;
		uint8_t *back;
		size_t n;

		for (size_t i = 0; i < len; i++) {
			x = x * 1664525u + 1013904223u;
			/* Mix a running counter in so all 256 values occur. */
			data[i] = (uint8_t)((x >> 24) ^ (i + len));
		}
		text = base64_encode(data, len);
		assert_non_null(text);
		assert_int_equal(strlen(text), base64_encoded_size(len));
		assert_int_equal(strlen(text) % 4, 0);
		assert_int_equal(base64_decode(text, strlen(text), &back, &n),
				 0);
		assert_int_equal(n, len);
		if (len)
			assert_memory_equal(back, data, len);
		free(back);
		free(text);
	}
}

static void test_every_byte_value(void **state)
{
	uint8_t data[256], *back;
	char *text;
	size_t n;

	for (int i = 0; i < 256; i++)
		data[i] = (uint8_t)i;
	text = base64_encode(data, sizeof(data));
	assert_non_null(text);
	assert_int_equal(base64_decode(text, strlen(text), &back, &n), 0);
	assert_int_equal(n, sizeof(data));
	assert_memory_equal(back, data, sizeof(data));
	free(back);
	free(text);
}

static void test_decode_uses_len_not_nul(void **state)
{
	uint8_t *back;
	size_t n;

	/* Only the first 4 characters count. */
	assert_int_equal(base64_decode("Zm9vYmFy", 4, &back, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(back, "foo", 3);
	free(back);
}

static void test_invalid_refused(void **state)
{
	static const char *const bad[] = {
		"Z",              /* length not a multiple of 4 */
		"Zg=",            /* ditto */
		"Zm9",            /* ditto */
		"Zm9vY",          /* ditto */
		"Zm9v!A==",       /* outside the alphabet */
		"Zm 9v===",       /* white space */
		"Zm9v\nZm9v",     /* line break */
		"Zm9-",           /* URL-safe alphabet */
		"Zm9_",           /* URL-safe alphabet */
		"Zg==Zg==",       /* padding before the end */
		"Z===",           /* three padding characters */
		"====",           /* nothing but padding */
		"Zm=v",           /* padding followed by data */
		"=Zm9",           /* padding first */
		"Zm9v\xc3\xa9==", /* a non-ASCII byte */
	};
	uint8_t *back = (uint8_t *)"sentinel";
	size_t n = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		back = (uint8_t *)"sentinel";
		n = 99;
		assert_int_equal(
		    base64_decode(bad[i], strlen(bad[i]), &back, &n),
		    ERR_FORMAT);
		assert_null(back);
		assert_int_equal(n, 0);
	}
	/* An embedded NUL inside the given length is not in the alphabet. */
	assert_int_equal(base64_decode("Zm\0v", 4, &back, &n), ERR_FORMAT);
	assert_null(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_round_trip_all_lengths),
		cmocka_unit_test(test_every_byte_value),
		cmocka_unit_test(test_decode_uses_len_not_nul),
		cmocka_unit_test(test_invalid_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
