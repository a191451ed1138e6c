/*
 * events.c - each job's events: a log line and a line in events.ndjson
 * (see events.h).
 *
 * The file is opened for each event and closed again: events come a few
 * per job run, and an fd held per job would be one more thing to close on
 * every path. A kill -9 in the middle of a write can leave a torn last
 * line; the reader skips any line that is not a whole event.
 */
#include "loop/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/errors.h"

/* The newest part of the file that job.logs returns: thousands of
 * events, and an answer well within the protocol's line limit. */
#define EVENTS_READ_MAX (256 * 1024)

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int append_event(struct queue *q, const struct job *job,
			const char *text)
{
	char path[4200];
	int rc = queue_job_path(q, job, JOBFILE_EVENTS, path, sizeof(path));
	if (rc)
		return rc;
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddNumberToObject(o, "time", now_seconds()) ||
	    !cJSON_AddStringToObject(o, "text", text)) {
		cJSON_Delete(o);
		return ERR_NOMEM;
	}
	char *line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!line)
		return ERR_NOMEM;
	size_t len = strlen(line);
	line[len] = '\n'; /* over the NUL: the line goes out in one write */
	int fd = open(
	    path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	rc = fd < 0 ? ERR_IO : 0;
	if (!rc && write(fd, line, len + 1) != (ssize_t)(len + 1))
		rc = ERR_IO;
	if (fd >= 0 && close(fd) && !rc)
		rc = ERR_IO;
	free(line);
	return rc;
}

void events_note(struct queue *q, const struct job *job, enum log_level level,
		 const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_msg(level, "job %s: %s", job->id, text);
	if (append_event(q, job, text))
		log_warn("job %s: cannot add to its %s: %s", job->id,
			 JOBFILE_EVENTS, strerror(errno));
}

/* Reads the newest EVENTS_READ_MAX bytes of the open file into buf. */
static int read_tail(int fd, char **buf, size_t *len, int *cut)
{
	struct stat st;
	if (fstat(fd, &st))
		return ERR_IO;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return ERR_IO;
	}
	off_t from =
	    st.st_size > EVENTS_READ_MAX ? st.st_size - EVENTS_READ_MAX : 0;
	size_t want = (size_t)(st.st_size - from);
	*cut = from > 0;
	*buf = malloc(want + 1);
	if (!*buf)
		return ERR_NOMEM;
	ssize_t got = pread(fd, *buf, want, from);
	if (got < 0) {
		free(*buf);
		*buf = NULL;
		return ERR_IO;
	}
	(*buf)[got] = '\0';
	*len = (size_t)got;
	return 0;
}

static void add_line(cJSON *events, const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "text");
	if (cJSON_IsObject(o) && cJSON_IsNumber(t) && cJSON_IsString(s)) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "time", t->valuedouble);
		cJSON_AddStringToObject(e, "text", s->valuestring);
		cJSON_AddItemToArray(events, e);
	}
	cJSON_Delete(o);
}

int events_read(struct queue *q, const struct job *job, cJSON **out)
{
	char path[4200];
	*out = NULL;
	int rc = queue_job_path(q, job, JOBFILE_EVENTS, path, sizeof(path));
	if (rc)
		return rc;
	cJSON *events = cJSON_CreateArray();
	if (!events)
		return ERR_NOMEM;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) { /* a job from before events */
		*out = events;
		return 0;
	}
	char *buf = NULL;
	size_t len = 0;
	int cut = 0;
	rc = fd < 0 ? ERR_IO : read_tail(fd, &buf, &len, &cut);
	if (fd >= 0)
		close(fd);
	if (rc) {
		cJSON_Delete(events);
		return rc;
	}
	char *p = buf, *end = buf + len;
	if (cut) { /* the first line is a part of one */
		char *nl = memchr(p, '\n', len);
		p = nl ? nl + 1 : end;
	}
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		add_line(events, p, n);
		p += n + 1;
	}
	free(buf);
	*out = events;
	return 0;
}
