/*
 * log.c - log lines on stderr, "vkinrd: LEVEL: text", filtered by -v.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_verbose;

void log_set_verbose(int verbose)
{
	log_verbose = verbose;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	if ((level == LOGL_INFO && log_verbose < 1) ||
	    (level == LOGL_DEBUG && log_verbose < 2))
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vkinrd: %s: %s\n", names[level], line);
}
