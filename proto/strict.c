/*
 * strict.c - the checks cJSON does not make (see strict.h).
 *
 * strict_check is a small scanner over JSON already known to be valid:
 * it only needs to tell strings from the rest, count the nesting, and
 * notice the top-level key "id" (however it is escaped) and the number
 * that follows it. strict_duplicate sorts each large object's keys once,
 * so that a line of a million keys costs n log n, not n squared.
 */
#include "proto/strict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* The code point of the escape "\uXXXX" at p (p[0] is 'u'), -1 if short. */
static long unicode_escape(const char *p, const char *end)
{
	long v = 0;
	if (end - p < 5)
		return -1;
	for (int i = 1; i <= 4; i++) {
		int h = hex(p[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* Whether the JSON string between its quotes [p, stop) spells word
 * (ASCII), escapes decoded: "id", "\u0069d" and "\u0069\u0064" all do. */
static int spells(const char *p, const char *stop, const char *word)
{
	while (p < stop) {
		long c = (unsigned char)*p++;
		if (c == '\\' && p < stop) {
			if (*p == 'u') {
				c = unicode_escape(p, stop);
				p += 5;
			} else {
				c = (unsigned char)*p++;
				/* \n, \t ... never spell a letter of a word */
				if (strchr("bfnrt", (int)c))
					return 0;
			}
		}
		if (!*word || c != (unsigned char)*word++)
			return 0;
	}
	return !*word;
}

int strict_check(const char *text, size_t len, struct strict_id *id, char *why,
		 size_t whylen)
{
	const char *p = text, *end = text + len;
	int depth = 0, top_object = 0, expect_key = 0, id_key = 0;
	int id_value = 0; /* the next value is the top-level id's */

	if (id)
		id->text = NULL, id->len = 0;
	while (p < end) {
		char c = *p;
		if (c == '"') {
			const char *start = ++p;
			while (p < end && *p != '"') {
				if (*p != '\\') {
					p++;
					continue;
				}
				if (p + 1 < end && p[1] == 'u' &&
				    unicode_escape(p + 1, end) == 0) {
					snprintf(
					    why, whylen,
					    "a string holds an "
					    "escaped NUL (\\u0000) at byte "
					    "%zu; strings are text without "
					    "NUL",
					    (size_t)(p - text));
					return -1;
				}
				p += 2;
			}
			if (depth == 1 && top_object && expect_key)
				id_key = spells(start, p, "id");
			expect_key = 0;
			id_value = 0;
			p++;
			continue;
		}
		if (c == '{' || c == '[') {
			if (depth == 0 && c == '{')
				top_object = 1;
			depth++;
			expect_key = depth == 1 && top_object;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',') {
			expect_key = depth == 1 && top_object;
		} else if (c == ':') {
			id_value = depth == 1 && id_key;
			id_key = 0;
			p++;
			continue;
		} else if (id_value && (c == '-' || (c >= '0' && c <= '9'))) {
			const char *start = p;
			while (p < end && *p && strchr("-+.eE0123456789", *p))
				p++;
			if (id && !id->text) /* cJSON, too, takes the first */
				id->text = start, id->len = (size_t)(p - start);
			id_value = 0;
			continue;
		}
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			id_value = 0;
		p++;
	}
	return 0;
}

static int compare_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key given twice among obj's n children, or NULL. */
static const char *twice_in(const cJSON *obj, int n)
{
	const cJSON *a, *b;
	const char **keys = n > 8 ? malloc((size_t)n * sizeof(*keys)) : NULL;

	if (!keys) { /* few keys (or no memory): compare them in pairs */
		for (a = obj->child; a; a = a->next)
			for (b = a->next; b; b = b->next)
				if (a->string && b->string &&
				    !strcmp(a->string, b->string))
					return a->string;
		return NULL;
	}
	int k = 0;
	for (a = obj->child; a; a = a->next)
		keys[k++] = a->string ? a->string : "";
	qsort(keys, (size_t)k, sizeof(*keys), compare_keys);
	const char *found = NULL;
	for (int i = 1; i < k && !found; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			found = keys[i];
	free(keys);
	return found;
}

static const char *duplicate_below(const cJSON *node, const char *name,
				   const char **where)
{
	const cJSON *child;
	int n = 0;

	if (cJSON_IsObject(node)) {
		for (child = node->child; child; child = child->next)
			n++;
		const char *key = twice_in(node, n);
		if (key) {
			*where = name;
			return key;
		}
	}
	if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
		return NULL;
	for (child = node->child; child; child = child->next) {
		const char *key = duplicate_below(
		    child, child->string ? child->string : name, where);
		if (key)
			return key;
	}
	return NULL;
}

const char *strict_duplicate(const cJSON *tree, const char **where)
{
	const char *dummy;
	return duplicate_below(tree, "", where ? where : &dummy);
}

int strict_keep_id(cJSON *obj, const struct strict_id *id)
{
	const cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, "id");
	char *text;
	cJSON *raw;

	if (!id->len || !cJSON_IsNumber(old))
		return 0;
	if (!(text = malloc(id->len + 1)))
		return -1;
	memcpy(text, id->text, id->len);
	text[id->len] = '\0';
	raw = cJSON_CreateRaw(text);
	free(text);
	if (!raw || !cJSON_ReplaceItemInObjectCaseSensitive(obj, "id", raw)) {
		cJSON_Delete(raw);
		return -1;
	}
	return 0;
}
