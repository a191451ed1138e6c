/*
 * framing.h - NDJSON line framing, shared by the daemon and the client.
 *
 * Bytes from a stream socket are fed in as they arrive; every complete line
 * (without its '\n', NUL-terminated in place) is handed to a callback. A
 * line longer than the buffer's limit is not buffered: the callback gets
 * it once with too_long set (and no text), the rest of that line is
 * skipped up to its '\n', and framing resynchronises on the next line.
 */
#ifndef VKINR_FRAMING_H
#define VKINR_FRAMING_H

#include <stddef.h>

struct line_buffer {
	char *data;
	size_t len, cap, max_line;
	int skipping; /* inside an over-long line, waiting for its '\n' */
};

/* Called for each line; return non-zero to stop feeding (e.g. the
 * connection was closed by the callback); feed then returns that value. */
typedef int (*line_fn)(void *ctx, char *line, size_t len, int too_long);

void framing_line_init(struct line_buffer *lb, size_t max_line);
void framing_line_finish(struct line_buffer *lb);
/* Returns 0, ERR_NOMEM, or the callback's non-zero value. */
int framing_line_feed(struct line_buffer *lb, const char *data, size_t n,
		      line_fn fn, void *ctx);

#endif
