/*
 * text.h - text that came from someone else, made safe to print.
 *
 * Job names, error messages, paths: anything a client sent the daemon, or
 * the daemon sent a client, may hold escape sequences that would retitle,
 * clear or spoof the terminal it is printed on, or bytes that are not
 * UTF-8. text_escape is the one function every human output goes through:
 * it keeps printable UTF-8 as it is and writes everything else as a visible
 * escape: \n, \t, \r; \x1b for another control (C0, DEL, C1: \x9b) or
 * a byte that is not UTF-8; \u202e for an invisible character (a line
 * separator, a bidirectional override, a zero-width space, a byte-order
 * mark, a filler, a tag: text_char_refused lists them).
 */
#ifndef VKINR_TEXT_H
#define VKINR_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The one UTF-8 decoder (RFC 3629: no overlong form, no surrogate,
 * nothing past U+10FFFF): the code point at s (at most len bytes, len >=
 * 1) and its length in *n; -1, *n = 1, for a byte that starts no
 * well-formed sequence. It reads no byte past one that is not a
 * continuation, so a NUL-terminated s may pass a len of up to 4. */
int32_t text_decode(const char *s, size_t len, size_t *n);
/* Whether the code point is one that text from someone else must not
 * carry: a control (C0, DEL, C1) or an invisible character (Unicode's
 * format characters and default-ignorable code points). The one list
 * that names (the daemon refuses them) and printing (escaped) share. */
int text_char_refused(int32_t cp);
/* Whether s (len bytes) is valid UTF-8 without anything text_escape
 * would change. */
int text_is_clean(const char *s, size_t len);
/* The escaped copy of s, malloc'ed (NULL when out of memory); with
 * keep_newlines, '\n' stays a line break (for whole messages). */
char *text_escape(const char *s, int keep_newlines);
/* Escapes every string value in a JSON tree in place (not the keys). 0 or
 * ERR_NOMEM. */
int text_escape_tree(cJSON *value);

#endif
