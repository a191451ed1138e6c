/*
 * text.h - text that came from someone else, made safe to print.
 *
 * Job names, error messages, paths: anything a client sent the daemon, or
 * the daemon sent a client, may hold escape sequences that would retitle,
 * clear or spoof the terminal it is printed on, or bytes that are not
 * UTF-8. text_escape is the one function every human output goes through:
 * it keeps printable UTF-8 as it is and writes everything else as a visible
 * escape: \n, \t, \r; \x1b for another control (C0, DEL, C1: \x9b) or
 * a byte that is not UTF-8; \u202e for a line separator or a
 * bidirectional override.
 */
#ifndef VKINR_TEXT_H
#define VKINR_TEXT_H

#include <stddef.h>

#include <cjson/cJSON.h>

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
