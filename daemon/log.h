/*
 * log.h - the daemon's log lines, on stderr.
 *
 * Thread-safe (one fputs per line). By default errors, warnings and
 * notices show: one line when the daemon is ready (version, devices,
 * socket, state) and when it stops, and one per job event (submitted,
 * started, ended, removed), so an operator sees what happens without -v.
 * -v adds info lines, -vv debug. Each line starts with the local time,
 * unless journald collects stderr ($JOURNAL_STREAM), which stamps lines
 * itself. Whatever a line holds, it is escaped (text_escape): a value a
 * client chose cannot forge log lines or drive a terminal.
 */
#ifndef VKINR_LOG_H
#define VKINR_LOG_H

enum log_level { LOGL_ERROR, LOGL_WARN, LOGL_NOTICE, LOGL_INFO, LOGL_DEBUG };

/* verbose: 0 errors, warnings and notices, 1 also info, 2 also debug. */
void log_set_verbose(int verbose);
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOGL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGL_DEBUG, __VA_ARGS__)

#endif
