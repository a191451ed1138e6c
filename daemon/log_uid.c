/*
 * log_uid.c - warnings a client's doing causes, rate-limited per uid.
 *
 * A uid that floods the daemon (connections refused, lines too long)
 * would otherwise fill the log with one warning each, tens of thousands
 * a second, and bury what others need to see. Each uid may log
 * LOG_UID_LINES such warnings per LOG_UID_WINDOW seconds; the rest are
 * counted, and once the window is over one line says how many of that
 * uid's were dropped (log_uid_tick, called every second by the loop,
 * writes the summary of a flood that stopped). Thread-safe.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#define LOG_UID_SLOTS 64

static struct log_uid_slot {
	uid_t uid;
	int used;
	double start; /* the window's, monotonic seconds */
	int lines;
	unsigned long dropped;
} log_uid_slots[LOG_UID_SLOTS];
static pthread_mutex_t log_uid_lock = PTHREAD_MUTEX_INITIALIZER;

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The summary of a window that dropped lines; the slot starts afresh.
 * Under the lock. */
static void close_window(struct log_uid_slot *s, double now)
{
	if (s->dropped)
		log_msg(LOGL_WARN,
			"uid %u: %lu more warning lines dropped in the last "
			"%.0f s (at most %d a uid per %.0f s)",
			(unsigned)s->uid, s->dropped, now - s->start,
			LOG_UID_LINES, LOG_UID_WINDOW);
	s->start = now;
	s->lines = 0;
	s->dropped = 0;
}

static struct log_uid_slot *slot_of(uid_t uid, double now)
{
	struct log_uid_slot *oldest = &log_uid_slots[0];
	for (int i = 0; i < LOG_UID_SLOTS; i++) {
		struct log_uid_slot *s = &log_uid_slots[i];
		if (s->used && s->uid == uid)
			return s;
		if (!s->used)
			oldest = s, i = LOG_UID_SLOTS;
		else if (oldest->used && s->start < oldest->start)
			oldest = s;
	}
	if (oldest->used)
		close_window(oldest, now);
	*oldest = (struct log_uid_slot){ .uid = uid, .used = 1, .start = now };
	return oldest;
}

void log_warn_uid(uid_t uid, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	double now = mono();
	pthread_mutex_lock(&log_uid_lock);
	struct log_uid_slot *s = slot_of(uid, now);
	if (now - s->start >= LOG_UID_WINDOW)
		close_window(s, now);
	int show = s->lines < LOG_UID_LINES;
	if (show)
		s->lines++;
	else
		s->dropped++;
	if (show)
		log_msg(LOGL_WARN, "%s", line);
	pthread_mutex_unlock(&log_uid_lock);
}

void log_uid_tick(void)
{
	double now = mono();
	pthread_mutex_lock(&log_uid_lock);
	for (int i = 0; i < LOG_UID_SLOTS; i++) {
		struct log_uid_slot *s = &log_uid_slots[i];
		if (s->used && s->dropped && now - s->start >= LOG_UID_WINDOW)
			close_window(s, now);
	}
	pthread_mutex_unlock(&log_uid_lock);
}
