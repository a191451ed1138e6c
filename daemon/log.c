/*
 * log.c - log lines on stderr, "[TIME ]vkinrd: LEVEL: text", filtered by
 * -v (see log.h). The time is local, to the millisecond, as
 * "2026-12-01 00:45:12.345"; it is left out under journald.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/text.h"

static int log_verbose;
static int log_stamped = -1; /* -1: not decided yet */
static char *log_path;       /* --log FILE, NULL for stderr as given */

void log_set_verbose(int verbose) { log_verbose = verbose; }

int log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* one dup2: a thread writing a line meanwhile writes it to the old
	 * file or the new one, never nowhere */
	fflush(stderr);
	int rc = dup2(fd, STDERR_FILENO);
	int saved = errno;
	close(fd);
	if (rc < 0) {
		errno = saved;
		return -1;
	}
	if (path != log_path) {
		char *copy = strdup(path);
		if (copy) {
			free(log_path);
			log_path = copy;
		}
	}
	/* a file is not journald's stream, whatever the environment says */
	log_stamped = 1;
	return 0;
}

int log_reopen(void)
{
	if (!log_path)
		return 0;
	return log_open(log_path) ? -1 : 1;
}

static void stamp(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!localtime_r(&ts.tv_sec, &tm)) {
		buf[0] = '\0';
		return;
	}
	size_t k = strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03ld ", ts.tv_nsec / 1000000);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "notice",
					     "info", "debug" };
	char line[1024], when[40] = "";
	char *safe;
	va_list ap;

	if ((level == LOGL_INFO && log_verbose < 1) ||
	    (level == LOGL_DEBUG && log_verbose < 2))
		return;
	if (log_stamped < 0) /* a benign race: every thread finds the same */
		log_stamped = getenv("JOURNAL_STREAM") == NULL;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_stamped)
		stamp(when, sizeof(when));
	safe = text_escape(line, 0);
	fprintf(stderr, "%svkinrd: %s: %s\n", when, names[level],
		safe ? safe : line);
	free(safe);
}
