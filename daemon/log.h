/*
 * log.h - the daemon's log lines, on stderr (journald adds the time).
 *
 * Thread-safe (one fprintf per line). -v shows info lines, -vv debug.
 */
#ifndef VKINR_LOG_H
#define VKINR_LOG_H

enum log_level { LOGL_ERROR, LOGL_WARN, LOGL_INFO, LOGL_DEBUG };

/* verbose: 0 errors and warnings, 1 also info, 2 also debug. */
void log_set_verbose(int verbose);
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGL_DEBUG, __VA_ARGS__)

#endif
