/*
 * text.c - escaping text for a terminal (see text.h).
 *
 * One decoder walks the bytes, the project's only one (the daemon's
 * checks of client text and the client's terminal columns use it too): a
 * well-formed UTF-8 sequence (no overlong form, no surrogate, nothing
 * past U+10FFFF) is one code point, anything else is one bad byte. A code point is printed as it is unless it is a
 * control (C0, DEL, C1) or one of the invisible characters (format
 * characters and the default-ignorable ones: zero-width spaces and
 * joiners, the byte-order mark, bidirectional marks and overrides, line
 * separators, fillers, tags, variation selectors), which a name could
 * use to look like another, to hide text, or to reorder a line.
 */
#include "proto/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

int32_t text_decode(const char *text, size_t len, size_t *n)
{
	const unsigned char *s = (const unsigned char *)text;
	uint32_t cp;
	size_t need;

	*n = 1;
	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		need = 1, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		need = 2, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		need = 3, cp = s[0] & 0x07;
	else
		return -1;
	if (len < need + 1)
		return -1;
	for (size_t i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return -1;
	*n = need + 1;
	return (int32_t)cp;
}

int text_char_refused(int32_t cp)
{
	static const struct {
		int32_t lo, hi;
	} hidden[] = {
		{ 0x00AD, 0x00AD }, /* soft hyphen */
		{ 0x034F, 0x034F }, /* combining grapheme joiner */
		{ 0x0600, 0x0605 }, /* Arabic number signs */
		{ 0x061C, 0x061C }, /* Arabic letter mark */
		{ 0x06DD, 0x06DD },   { 0x070F, 0x070F },
		{ 0x0890, 0x0891 },   { 0x08E2, 0x08E2 },
		{ 0x115F, 0x1160 }, /* Hangul fillers */
		{ 0x17B4, 0x17B5 }, /* Khmer inherent vowels */
		{ 0x180B, 0x180F }, /* Mongolian selectors, vowel separator */
		{ 0x200B, 0x200F }, /* zero-width space, joiners, LRM, RLM */
		{ 0x2028, 0x202E }, /* separators, embeddings, overrides */
		{ 0x2060, 0x206F }, /* word joiner, invisible operators, isolates */
		{ 0x3164, 0x3164 }, /* Hangul filler */
		{ 0xFE00, 0xFE0F }, /* variation selectors */
		{ 0xFEFF, 0xFEFF }, /* byte-order mark */
		{ 0xFFA0, 0xFFA0 }, /* halfwidth Hangul filler */
		{ 0xFFF0, 0xFFFB }, /* unassigned specials, annotations */
		{ 0x110BD, 0x110BD }, { 0x110CD, 0x110CD },
		{ 0x13430, 0x1343F }, /* Egyptian format controls */
		{ 0x1BCA0, 0x1BCA3 }, /* shorthand format controls */
		{ 0x1D173, 0x1D17A }, /* musical format controls */
		{ 0xE0000, 0xE0FFF }, /* tags, variation selectors supplement */
	};

	if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
		return 1;
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (cp >= hidden[i].lo && cp <= hidden[i].hi)
			return 1;
	return 0;
}

int text_is_clean(const char *s, size_t len)
{
	size_t n;

	for (size_t i = 0; i < len; i += n) {
		int32_t cp = text_decode(s + i, len - i, &n);
		if (cp < 0 || text_char_refused(cp))
			return 0;
	}
	return 1;
}

char *text_escape(const char *s, int keep_newlines)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), n, o = 0;
	char *out = malloc(len * 6 + 1); /* \u202e: 6 bytes for 3 */

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += n) {
		int32_t cp = text_decode(s + i, len - i, &n);

		if ((cp >= 0 && !text_char_refused(cp)) ||
		    (cp == '\n' && keep_newlines)) {
			memcpy(out + o, s + i, n);
			o += n;
		} else if (cp == '\n' || cp == '\t' || cp == '\r') {
			out[o++] = '\\';
			out[o++] = cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r';
		} else if (cp < 0x100) { /* a control byte, or a bad one */
			o += (size_t)sprintf(out + o, "\\x%02x",
					     cp < 0 ? p[i] : (unsigned)cp);
		} else {
			o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)cp);
		}
	}
	out[o] = '\0';
	return out;
}

int text_escape_tree(cJSON *value)
{
	cJSON *child;

	if (cJSON_IsString(value) && value->valuestring &&
	    !text_is_clean(value->valuestring, strlen(value->valuestring))) {
		char *safe = text_escape(value->valuestring, 0), *copy;
		size_t n = safe ? strlen(safe) + 1 : 0;

		/* cJSON_SetValuestring refuses a longer string: swap it, in
		 * memory from cJSON's own allocator. */
		copy = safe ? cJSON_malloc(n) : NULL;
		if (!copy) {
			free(safe);
			return ERR_NOMEM;
		}
		memcpy(copy, safe, n);
		free(safe);
		cJSON_free(value->valuestring);
		value->valuestring = copy;
		return 0;
	}
	cJSON_ArrayForEach(child, value) if (text_escape_tree(child) <
					     0) return ERR_NOMEM;
	return 0;
}
