/*
 * base64.c - standard base64 (RFC 4648 section 4, "+/" alphabet, "="
 * padding) for PNG images and model packages carried inside JSON strings.
 *
 * Encoding turns every 3 bytes into 4 characters and pads the last group.
 * Decoding is strict, because the text comes from clients: the length must
 * be a multiple of 4, only the last group may carry padding (one or two
 * "="), and every other character must be in the alphabet; no whitespace
 * or line breaks are accepted. Unused bits in the last group are ignored,
 * as most decoders do. Neither direction ever reads or writes past the
 * buffers it is given, and sizes are checked for overflow first.
 */
#include "util/base64.h"

#include <stdint.h>
#include <stdlib.h>

#include "proto/errors.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of a character, or -1 for one outside the alphabet. */
static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

size_t base64_encoded_size(size_t n) { return (n / 3 + (n % 3 != 0)) * 4; }

char *base64_encode(const void *data, size_t n)
{
	const uint8_t *in = data;
	char *out, *p;
	size_t i;

	if (n / 3 >= (SIZE_MAX - 1) / 4 - 1)
		return NULL;
	out = malloc(base64_encoded_size(n) + 1);
	if (!out)
		return NULL;
	p = out;
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];
		*p++ = alphabet[v >> 18];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = alphabet[(v >> 6) & 63];
		*p++ = alphabet[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		*p++ = alphabet[v >> 18];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = '=';
		*p++ = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		*p++ = alphabet[v >> 18];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = alphabet[(v >> 6) & 63];
		*p++ = '=';
	}
	*p = '\0';
	return out;
}

int base64_decode(const char *text, size_t len, uint8_t **out, size_t *outlen)
{
	const unsigned char *in = (const unsigned char *)text;
	size_t pad = 0, n, i, o = 0;
	uint8_t *buf;

	*out = NULL;
	*outlen = 0;
	if (len % 4)
		return ERR_FORMAT;
	if (len >= 4 && in[len - 1] == '=')
		pad = in[len - 2] == '=' ? 2 : 1;
	n = len / 4 * 3 - pad;
	/* +1 so that an empty result is still a valid allocation. */
	buf = malloc(n + 1);
	if (!buf)
		return ERR_NOMEM;
	for (i = 0; i < len; i += 4) {
		int last = i + 4 == len;
		int a = sextet(in[i]), b = sextet(in[i + 1]);
		int c = last && pad == 2 ? 0 : sextet(in[i + 2]);
		int d = last && pad >= 1 ? 0 : sextet(in[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || d < 0) {
			free(buf);
			return ERR_FORMAT;
		}
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 |
		    (uint32_t)d;
		buf[o++] = v >> 16;
		if (!last || pad < 2)
			buf[o++] = (v >> 8) & 0xff;
		if (!last || pad < 1)
			buf[o++] = v & 0xff;
	}
	*out = buf;
	*outlen = n;
	return 0;
}
