/*
 * format.c - text for people: durations, sparklines, UTF-8 column counts
 * and terminal sizes. Nothing here prints; callers decide where text goes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "format.h"

const char *fmt_duration(double seconds, char *buf, size_t n)
{
	long s;

	if (!isfinite(seconds) || seconds < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	s = lround(seconds);
	if (s < 60)
		snprintf(buf, n, "%lds", s);
	else if (s < 3600)
		snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
	else
		snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
			 s % 60);
	return buf;
}

const char *fmt_number(const char *format, double v, char *buf, size_t n)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, format, v);
	return buf;
}

const char *fmt_sparkline(const float *values, int n, char *buf)
{
	static const char *const bars[8] = {"▁", "▂", "▃", "▄",
					    "▅", "▆", "▇", "█"};
	float lo = INFINITY, hi = -INFINITY;
	char *p = buf;

	for (int i = 0; i < n; i++) {
		if (isnan(values[i]))
			continue;
		lo = fminf(lo, values[i]);
		hi = fmaxf(hi, values[i]);
	}
	for (int i = 0; i < n; i++) {
		int level;
		if (isnan(values[i])) {
			*p++ = ' ';
			continue;
		}
		level = hi > lo ? (int)lroundf((values[i] - lo) / (hi - lo) * 7)
				: 0;
		level = level < 0 ? 0 : level > 7 ? 7 : level;
		memcpy(p, bars[level], 3);
		p += 3;
	}
	*p = '\0';
	return buf;
}

size_t fmt_columns(const char *s)
{
	size_t cols = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			cols++;
	return cols;
}

void fmt_truncate(char *s, size_t cols)
{
	size_t seen = 0;

	for (char *p = s; *p; p++) {
		if (((unsigned char)*p & 0xC0) == 0x80)
			continue;
		if (seen++ == cols) {
			*p = '\0';
			return;
		}
	}
}

int fmt_terminal_columns(int fd)
{
	struct winsize ws;

	if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return 0;
	return ws.ws_col ? ws.ws_col : 80;
}

int fmt_terminal_rows(int fd)
{
	struct winsize ws;

	if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return 0;
	return ws.ws_row ? ws.ws_row : 24;
}
