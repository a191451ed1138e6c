/*
 * test_text.c - unit tests of proto/text.c: what is escaped for a
 * terminal and what is kept, byte for byte.
 *
 * Printable ASCII and well-formed UTF-8 (accents, CJK, emoji) pass as they
 * are; C0 and C1 controls, DEL, the bidirectional and line-separator
 * characters, and every malformed sequence (a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate, a code point past
 * U+10FFFF) come out as visible escapes; text_escape_tree reaches every
 * string of a JSON tree and leaves numbers and keys alone. text_decode,
 * the project's one UTF-8 decoder, is checked at each sequence length and
 * each kind of malformed input, and through the daemon's checks of client
 * text (daemon/usertext.c), which use it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/errors.h"
#include "proto/text.h"
#include "usertext.h"

static void expect(const char *in, const char *want, int keep_newlines)
{
	char *out = text_escape(in, keep_newlines);

	assert_non_null(out);
	assert_string_equal(out, want);
	assert_int_equal(text_is_clean(in, strlen(in)), !strcmp(in, want));
	free(out);
}

static void test_kept(void **state)
{
	expect("", "", 0);
	expect("camera-01.png ~!@#$%^&*()\\", "camera-01.png ~!@#$%^&*()\\", 0);
	expect("d\xc3\xa9j\xc3\xa0 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x93\xb7",
	       "d\xc3\xa9j\xc3\xa0 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x93\xb7",
	       0);
}

static void test_controls(void **state)
{
	expect("a\033]0;title\007b", "a\\x1b]0;title\\x07b", 0);
	expect("\r\n\t\x7f", "\\r\\n\\t\\x7f", 0);
	expect("C1 \xc2\x9b"
	       "2J",
	       "C1 \\x9b2J", 0);
	expect("rtl \xe2\x80\xae", "rtl \\u202e", 0);
	expect("iso \xe2\x81\xa6 lrm \xe2\x80\x8e ls \xe2\x80\xa8",
	       "iso \\u2066 lrm \\u200e ls \\u2028", 0);
	{
		char *out = text_escape("two\nlines\033", 1);
		assert_string_equal(out, "two\nlines\\x1b");
		free(out);
	}
}

static void test_malformed(void **state)
{
	expect("\xff", "\\xff", 0);
	expect("\x80x", "\\x80x", 0);        /* stray continuation */
	expect("\xe6\xbc", "\\xe6\\xbc", 0); /* truncated */
	expect("\xc0\xaf", "\\xc0\\xaf", 0); /* overlong '/' */
	expect("\xe0\x80\xaf", "\\xe0\\x80\\xaf", 0);
	expect("\xed\xa0\x80", "\\xed\\xa0\\x80", 0); /* a surrogate */
	expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", 0);
}

static void test_tree(void **state)
{
	cJSON *v = cJSON_Parse("{\"name\":\"a\\u001bb\",\"n\":1,"
			       "\"l\":[{\"e\":\"\\u0007\"},\"ok\"]}");
	char *text;

	assert_non_null(v);
	assert_int_equal(text_escape_tree(v), 0);
	text = cJSON_PrintUnformatted(v);
	assert_string_equal(text, "{\"name\":\"a\\\\x1bb\",\"n\":1,"
				  "\"l\":[{\"e\":\"\\\\x07\"},\"ok\"]}");
	free(text);
	cJSON_Delete(v);
}

static void test_decode(void **state)
{
	static const struct {
		const char *s;
		int32_t cp;
		size_t n;
	} cases[] = {
		{ "a", 'a', 1 },
		{ "\xc3\xa9", 0xE9, 2 },
		{ "\xe6\xbc\xa2", 0x6F22, 3 },
		{ "\xf0\x9f\x93\xb7", 0x1F4F7, 4 },
		{ "\xf4\x8f\xbf\xbf", 0x10FFFF, 4 }, /* the last code point */
		{ "\x80", -1, 1 },                   /* stray continuation */
		{ "\xc0\xaf", -1, 1 },               /* overlong */
		{ "\xe0\x80\xaf", -1, 1 },
		{ "\xf0\x80\x80\xaf", -1, 1 },
		{ "\xed\xa0\x80", -1, 1 },     /* a surrogate */
		{ "\xf4\x90\x80\x80", -1, 1 }, /* past U+10FFFF */
		{ "\xe6\xbc", -1, 1 },         /* truncated */
		{ "\xe6x", -1, 1 },            /* cut by another byte */
		{ "\xff", -1, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 0;
		int32_t cp = text_decode(cases[i].s, strlen(cases[i].s), &n);
		assert_int_equal(cp, cases[i].cp);
		assert_int_equal(n, cases[i].n);
	}
	/* a NUL stops a sequence: a NUL-terminated string may pass 4 */
	size_t n;
	assert_int_equal(text_decode("\xe6", 4, &n), -1);
	assert_int_equal(n, 1);
}

/* The daemon's checks of client text decode as text_escape does. */
static void test_usertext(void **state)
{
	char why[128], s[32];

	(void)state;
	assert_int_equal(
	    usertext_check("d\xc3\xa9j\xc3\xa0", 16, why, sizeof(why)), 0);
	assert_int_equal(usertext_check("a\xc0\xaf", 16, why, sizeof(why)),
			 ERR_INVALID);
	assert_non_null(strstr(why, "byte 1"));
	assert_int_equal(usertext_check("a\xe2\x80\xae", 16, why, sizeof(why)),
			 ERR_INVALID);
	assert_non_null(strstr(why, "U+202E"));
	assert_int_equal(usertext_check("abcdef", 5, why, sizeof(why)),
			 ERR_INVALID);
	assert_int_equal(usertext_utf8_end("ab\xc3\xa9\xed\xa0\x80", 7), 4);
	strcpy(s, "a\x1b\xff\xc3\xa9\xe6\xbc"); /* cut mid-character */
	usertext_sanitize(s);
	assert_string_equal(s, "a??\xc3\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_usertext),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
