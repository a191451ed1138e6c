/*
 * framing.c - NDJSON line framing for a byte stream.
 *
 * Bytes are appended to one growing buffer until a '\n' completes a line;
 * the line is NUL-terminated in place (the '\n' becomes the NUL, and a '\r'
 * before it is dropped too, so a person typing into socat on a CRLF terminal
 * is understood) and handed to the callback, which may modify it. Lines may
 * contain NUL bytes: the callback gets the length, and decides.
 *
 * A line longer than max_line bytes is never buffered whole: as soon as the
 * buffered part exceeds the limit, the callback gets it once with too_long
 * set (line NULL, len 0), the buffer is emptied, and the rest of that line
 * is skipped up to its '\n'. The next line is framed normally. So memory per
 * stream is bounded by max_line plus one read, whatever the peer sends.
 *
 * It must not keep pointers into the caller's data after a feed returns.
 */
#include "proto/framing.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

void framing_line_init(struct line_buffer *lb, size_t max_line)
{
	memset(lb, 0, sizeof(*lb));
	lb->max_line = max_line;
}

void framing_line_finish(struct line_buffer *lb)
{
	free(lb->data);
	lb->data = NULL;
	lb->len = lb->cap = 0;
	lb->skipping = 0;
}

/* Makes room for len + extra + 1 bytes (the +1 for the terminating NUL). */
static int reserve(struct line_buffer *lb, size_t extra)
{
	size_t need = lb->len + extra + 1;
	if (need <= lb->cap)
		return 0;
	size_t cap = lb->cap ? lb->cap : 4096;
	while (cap < need)
		cap *= 2;
	char *data = realloc(lb->data, cap);
	if (!data)
		return ERR_NOMEM;
	lb->data = data;
	lb->cap = cap;
	return 0;
}

/* Shrinks a buffer that one big line grew, so that an idle connection
 * does not keep megabytes. */
static void maybe_shrink(struct line_buffer *lb)
{
	if (lb->len == 0 && lb->cap > (1u << 20)) {
		free(lb->data);
		lb->data = NULL;
		lb->cap = 0;
	}
}

int framing_line_feed(struct line_buffer *lb, const char *data, size_t n,
		      line_fn fn, void *ctx)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t chunk = nl ? (size_t)(nl - data) : n;

		if (lb->skipping) {
			if (!nl)
				return 0;
			lb->skipping = 0;
			data += chunk + 1;
			n -= chunk + 1;
			continue;
		}
		if (lb->len + chunk > lb->max_line) {
			/* Over the limit: report once, forget what we have,
			 * skip to the end of this line. */
			lb->len = 0;
			maybe_shrink(lb);
			lb->skipping = 1;
			int rc = fn(ctx, NULL, 0, 1);
			if (rc)
				return rc;
			continue; /* the skipping branch eats up to '\n' */
		}
		int rc = reserve(lb, chunk);
		if (rc)
			return rc;
		memcpy(lb->data + lb->len, data, chunk);
		lb->len += chunk;
		if (!nl)
			return 0;
		data += chunk + 1;
		n -= chunk + 1;

		size_t len = lb->len;
		if (len > 0 && lb->data[len - 1] == '\r')
			len--;
		lb->data[len] = '\0';
		lb->len = 0;
		rc = fn(ctx, lb->data, len, 0);
		maybe_shrink(lb);
		if (rc)
			return rc;
	}
	return 0;
}
