/*
 * log.h - the daemon's log lines, on stderr.
 *
 * Thread-safe (one fputs per line). By default errors, warnings and
 * notices show: one line when the daemon is ready (version, devices,
 * socket, state) and when it stops, and one per job event (submitted,
 * started, ended, removed), so an operator sees what happens without -v.
 * -v adds info lines, -vv debug. With --log FILE, stderr itself is that
 * file (log_open), opened again on SIGHUP (log_reopen) so that logrotate
 * can move it away. Each line starts with the local time,
 * unless journald collects stderr ($JOURNAL_STREAM), which stamps lines
 * itself. Whatever a line holds, it is escaped (text_escape): a value a
 * client chose cannot forge log lines or drive a terminal.
 */
#ifndef VKINR_LOG_H
#define VKINR_LOG_H

#include <sys/types.h>

enum log_level { LOGL_ERROR, LOGL_WARN, LOGL_NOTICE, LOGL_INFO, LOGL_DEBUG };

/* verbose: 0 errors, warnings and notices, 1 also info, 2 also debug. */
void log_set_verbose(int verbose);
/* Points stderr (fd 2, so the drivers' messages too) at path, appended,
 * created 0600; remembered for log_reopen. 0, or -1 with the reason in
 * log_open_error(): a folder another user owns or can write to, a link,
 * a file not regular or not the daemon's user's are refused. */
int log_open(const char *path);
const char *log_open_error(void);
/* Opens the remembered path again (after logrotate moved it), by the
 * same rule: 1 when it did, 0 when there is no log file (stderr is left
 * alone), -1 (log_open_error) when it cannot (stderr keeps the old file). */
int log_reopen(void);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A warning caused by a client of uid: at most LOG_UID_LINES a uid per
 * LOG_UID_WINDOW seconds, then one line says how many were dropped
 * (log_uid.c). log_uid_tick (every second) writes the summaries of the
 * windows that ended. */
#define LOG_UID_LINES 20
#define LOG_UID_WINDOW 10.0
void log_warn_uid(uid_t uid, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_uid_tick(void);

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOGL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGL_DEBUG, __VA_ARGS__)

#endif
