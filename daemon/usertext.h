/*
 * usertext.h - checks for text that a client sends and others will see.
 *
 * A job's name is printed by other users' `vkinrctl list`, `show` and
 * `watch`, and error messages quote what a client sent; a string with
 * escape sequences could retitle or clear a terminal, or spoof lines. So
 * text a client gives is refused at the door unless it is valid UTF-8
 * without control characters (C0, DEL, C1) or invisible characters
 * (bidirectional overrides and isolates, line separators, zero-width
 * spaces and joiners, the byte-order mark, fillers, tags: the list is
 * proto/text.c's text_char_refused), and within a length limit.
 */
#ifndef VKINR_USERTEXT_H
#define VKINR_USERTEXT_H

#include <stddef.h>

/* Where s stops being UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), or len when it all is. */
size_t usertext_utf8_end(const char *s, size_t len);

/* 0 when s is printable text of at most max_bytes bytes; else ERR_INVALID
 * and why (e.g. "contains the control character U+001B at byte 3"). */
int usertext_check(const char *s, size_t max_bytes, char *why, size_t whylen);

/* Makes s (NUL-terminated, in place) safe to quote in a message: invalid
 * UTF-8 and the characters usertext_check refuses become '?', and a
 * character cut by an earlier truncation is dropped. */
void usertext_sanitize(char *s);

#endif
