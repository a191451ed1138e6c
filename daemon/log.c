/*
 * log.c - log lines on stderr, "[TIME ]vkinrd: LEVEL: text", filtered by
 * -v (see log.h). The time is local, to the millisecond, as
 * "2026-12-01 00:45:12.345"; it is left out under journald.
 *
 * A --log file is opened as util/outfile.h has it for whatever is written
 * on a user's behalf: in a folder no other user owns or can write to
 * (/tmp itself is refused), through the folder's descriptor with
 * O_NOFOLLOW (a link planted under its name is refused, never followed),
 * O_NONBLOCK (a FIFO there cannot hold the daemon up) and only when it is
 * a regular file of the daemon's own user; SIGHUP opens it again the
 * same way.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/text.h"
#include "util/outfile.h"

static int log_verbose;
static int log_stamped = -1; /* -1: not decided yet */
static char *log_path;       /* --log FILE, NULL for stderr as given */
static char log_why[1024];   /* why the last log_open failed */

const char *log_open_error(void) { return log_why; }

/* The log file, opened by the rule above: a descriptor or -1. */
static int open_log_file(const char *path)
{
	const char *base;
	struct stat st;
	int dfd, fd;
	if (outfile_open_folder(path, &dfd, &base, log_why, sizeof(log_why)))
		return -1;
	fd = openat(dfd, base,
		    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			O_NONBLOCK,
		    0600);
	int saved = errno;
	close(dfd);
	if (fd < 0) {
		snprintf(log_why, sizeof(log_why), "%s: %s", path,
			 saved == ELOOP   ? "it is a symbolic link"
			 : saved == ENXIO ? "it is a FIFO or a device"
					  : strerror(saved));
		return -1;
	}
	int bad = fstat(fd, &st) < 0       ? 1
		  : !S_ISREG(st.st_mode)   ? 2
		  : st.st_uid != geteuid() ? 3
					   : 0;
	if (bad) {
		snprintf(log_why, sizeof(log_why), "%s: %s", path,
			 bad == 1   ? strerror(errno)
			 : bad == 2 ? "it is not a regular file"
				    : "it belongs to another user");
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

void log_set_verbose(int verbose) { log_verbose = verbose; }

int log_open(const char *path)
{
	int fd = open_log_file(path);
	if (fd < 0)
		return -1;
	/* one dup2: a thread writing a line meanwhile writes it to the old
	 * file or the new one, never nowhere */
	fflush(stderr);
	int rc = dup2(fd, STDERR_FILENO);
	int saved = errno;
	close(fd);
	if (rc < 0) {
		snprintf(log_why, sizeof(log_why), "%s: %s", path,
			 strerror(saved));
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
