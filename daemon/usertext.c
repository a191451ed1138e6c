/*
 * usertext.c - checks for text that a client sends and others will see.
 *
 * The project's one UTF-8 decoder (proto/text.c's text_decode) serves
 * the three functions: it returns each character's code point and length,
 * or fails at the first byte that is not part of a well-formed sequence.
 * What is refused beyond that is listed in one place, text_char_refused.
 */
#include "usertext.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/errors.h"
#include "proto/text.h"

/* The code point at p (len bytes left) and its length, or 0 when the
 * bytes there are not well-formed UTF-8: proto/text.c's decoder. */
static int decode(const unsigned char *p, size_t len, uint32_t *cp)
{
	size_t n;
	int32_t c = text_decode((const char *)p, len, &n);
	if (c < 0)
		return 0;
	*cp = (uint32_t)c;
	return (int)n;
}

/* Control characters and invisible ones (proto/text.c lists them): what
 * must not reach another user's terminal. */
static int refused(uint32_t cp) { return text_char_refused((int32_t)cp); }

/* Whether the last len bytes are the start of a character that an
 * earlier truncation cut: a lead byte and fewer continuation bytes than
 * it announces. */
static int cut_short(const unsigned char *p, size_t len)
{
	int need = p[0] >= 0xf0 ? 3 : p[0] >= 0xe0 ? 2 : p[0] >= 0xc2 ? 1 : 0;
	if (p[0] > 0xf4 || (size_t)need < len || need == 0)
		return 0;
	for (size_t k = 1; k < len; k++)
		if ((p[k] & 0xc0) != 0x80)
			return 0;
	return 1;
}

size_t usertext_utf8_end(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	uint32_t cp;
	int n;
	while (i < len && (n = decode(p + i, len - i, &cp)))
		i += (size_t)n;
	return i;
}

int usertext_check(const char *s, size_t max_bytes, char *why, size_t whylen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = decode(p + i, len - i, &cp);
		if (!n) {
			snprintf(why, whylen, "is not valid UTF-8 (byte %zu)",
				 i);
			return ERR_INVALID;
		}
		if (refused(cp)) {
			snprintf(why, whylen,
				 "contains the %s character "
				 "U+%04X at byte %zu; use printable text",
				 cp < 0xA0 ? "control" : "invisible",
				 (unsigned)cp, i);
			return ERR_INVALID;
		}
		i += (size_t)n;
	}
	if (len > max_bytes) {
		snprintf(why, whylen,
			 "is %zu bytes long; at most %zu are allowed", len,
			 max_bytes);
		return ERR_INVALID;
	}
	return 0;
}

void usertext_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = strlen(s), out = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = decode(p + i, len - i, &cp);
		if (!n && cut_short(p + i, len - i))
			break; /* truncated mid-character: drop the rest */
		if (!n || refused(cp)) {
			p[out++] = '?';
			i += n ? (size_t)n : 1;
			continue;
		}
		memmove(p + out, p + i, (size_t)n);
		out += (size_t)n;
		i += (size_t)n;
	}
	p[out] = '\0';
}
