/*
 * strict.h - what cJSON lets through and the protocol refuses, checked
 * on a line cJSON has already parsed.
 *
 * cJSON keeps every copy of a key given twice (and finds the first), cuts
 * a string at an escaped NUL (\u0000), and keeps a number only as a
 * double (2^53 - 1 prints back as 9.00719925474099e+15, 1e400 as null).
 * strict_check walks the line's text itself to catch the first two and to
 * find the text of the top-level "id", which the answer must carry back
 * exactly as it was sent; strict_duplicate finds a key given twice in a
 * parsed tree. Both the daemon (requests, and the files it reads back)
 * and tests use them.
 */
#ifndef VKINR_STRICT_H
#define VKINR_STRICT_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct strict_id {
	const char *text; /* the top-level "id" value as sent, when a number */
	size_t len;       /* 0: no id, or not a number */
};

/*
 * 0 when text (len bytes, JSON that cJSON parsed) has no escaped NUL in
 * any string, key or value; else -1 and, in why, where it is. id (may be
 * NULL) gets the text of the top-level object's "id" when that is a
 * number.
 */
int strict_check(const char *text, size_t len, struct strict_id *id, char *why,
		 size_t whylen);

/* The first key that one object of the tree holds twice (NULL when none);
 * where (may be NULL) names the object: "" for the top level, else its
 * key, e.g. "params". Objects of many keys are sorted, not compared in
 * pairs. */
const char *strict_duplicate(const cJSON *tree, const char **where);

/* Replaces obj's "id" number by a raw item holding id's text, so that
 * every copy of it (cJSON_Duplicate) prints it as it was sent. 0, or -1
 * when out of memory (obj unchanged). */
int strict_keep_id(cJSON *obj, const struct strict_id *id);

#endif
