/*
 * test_framing.c - NDJSON line framing: whole lines, lines split across
 * feeds, CRLF, NUL bytes inside a line, an over-long line reported once and
 * skipped to its end, and resynchronisation on the line after it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>

#include "proto/errors.h"
#include "proto/framing.h"

struct seen {
	int n, too_long;
	char lines[16][64];
	size_t lens[16];
	int stop_after; /* return non-zero after this many lines (0: never) */
};

static int collect(void *ctx, char *line, size_t len, int too_long)
{
	struct seen *s = ctx;
	if (too_long) {
		assert_null(line);
		s->too_long++;
		return 0;
	}
	assert_int_equal(line[len], '\0');
	assert_true(s->n < 16 && len < 64);
	memcpy(s->lines[s->n], line, len);
	s->lens[s->n++] = len;
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

static void test_whole_lines(void **state)
{
	struct line_buffer lb;
	struct seen s = { 0 };
	framing_line_init(&lb, 100);
	const char *in = "{\"a\":1}\n{\"b\":2}\n\nlast";
	assert_int_equal(framing_line_feed(&lb, in, strlen(in), collect, &s),
			 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.lines[0], "{\"a\":1}");
	assert_string_equal(s.lines[1], "{\"b\":2}");
	assert_int_equal(s.lens[2], 0);
	/* "last" waits for its newline */
	assert_int_equal(framing_line_feed(&lb, "\n", 1, collect, &s), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.lines[3], "last");
	framing_line_finish(&lb);
}

static void test_partial_feeds(void **state)
{
	struct line_buffer lb;
	struct seen s = { 0 };
	framing_line_init(&lb, 100);
	const char *in = "hello world\r\nsecond\n";
	for (size_t i = 0; i < strlen(in); i++)
		assert_int_equal(framing_line_feed(&lb, in + i, 1, collect, &s),
				 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.lines[0], "hello world"); /* '\r' dropped */
	assert_string_equal(s.lines[1], "second");
	framing_line_finish(&lb);
}

static void test_nul_bytes(void **state)
{
	struct line_buffer lb;
	struct seen s = { 0 };
	framing_line_init(&lb, 100);
	const char in[] = "ab\0cd\nx\n";
	assert_int_equal(
	    framing_line_feed(&lb, in, sizeof(in) - 1, collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.lens[0], 5);
	assert_memory_equal(s.lines[0], "ab\0cd", 5);
	assert_string_equal(s.lines[1], "x");
	framing_line_finish(&lb);
}

static void test_too_long_resync(void **state)
{
	struct line_buffer lb;
	struct seen s = { 0 };
	framing_line_init(&lb, 8);
	/* exactly the limit is fine */
	assert_int_equal(framing_line_feed(&lb, "12345678\n", 9, collect, &s),
			 0);
	assert_int_equal(s.n, 1);
	/* one over, fed in pieces: reported once, rest skipped */
	assert_int_equal(framing_line_feed(&lb, "abcdef", 6, collect, &s), 0);
	assert_int_equal(framing_line_feed(&lb, "ghi", 3, collect, &s), 0);
	assert_int_equal(s.too_long, 1);
	assert_int_equal(
	    framing_line_feed(&lb, "jklmnopqrstuvwxyz", 17, collect, &s), 0);
	assert_int_equal(s.too_long, 1);
	assert_int_equal(framing_line_feed(&lb, "zz\nok\n", 6, collect, &s), 0);
	assert_int_equal(s.too_long, 1);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.lines[1], "ok");
	/* a long line inside one feed, between two good ones */
	assert_int_equal(
	    framing_line_feed(&lb, "a\n0123456789abc\nb\n", 18, collect, &s),
	    0);
	assert_int_equal(s.too_long, 2);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.lines[2], "a");
	assert_string_equal(s.lines[3], "b");
	framing_line_finish(&lb);
}

static void test_stop(void **state)
{
	struct line_buffer lb;
	struct seen s = { .stop_after = 1 };
	framing_line_init(&lb, 100);
	assert_int_equal(framing_line_feed(&lb, "a\nb\n", 4, collect, &s), 7);
	assert_int_equal(s.n, 1);
	framing_line_finish(&lb);
	framing_line_finish(&lb); /* twice is harmless */
}

static int collect_len(void *ctx, char *line, size_t len, int too_long)
{
	int *count = ctx;
	assert_false(too_long);
	assert_int_equal(len, 200000);
	assert_int_equal(line[0], 'x');
	assert_int_equal(line[len - 1], 'x');
	(*count)++;
	return 0;
}

static void test_big_line(void **state)
{
	struct line_buffer lb;
	size_t n = 200000;
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\n';
	framing_line_init(&lb, n);
	int count = 0;
	/* feed in uneven chunks; the callback sees one line of n bytes */
	size_t off = 0, step = 777;
	while (off < n + 1) {
		size_t k = n + 1 - off < step ? n + 1 - off : step;
		assert_int_equal(
		    framing_line_feed(&lb, big + off, k, collect_len, &count),
		    0);
		off += k;
	}
	assert_int_equal(count, 1);
	framing_line_finish(&lb);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_lines),
		cmocka_unit_test(test_partial_feeds),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_too_long_resync),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_big_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
