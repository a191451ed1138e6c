/*
 * format.c - text for people and scripts: durations, sparklines, UTF-8
 * column counts, CSV fields and terminal sizes. Callers decide where the
 * text goes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "core/format.h"

#include "proto/text.h"

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

const char *fmt_date(double t, char *buf, size_t n)
{
	time_t secs = (time_t)t;
	struct tm tm;

	if (!isfinite(t) || t <= 0 || !localtime_r(&secs, &tm))
		snprintf(buf, n, "-");
	else
		strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

const char *fmt_age(double t, char *buf, size_t n)
{
	double ago = (double)time(NULL) - t;

	if (!isfinite(t) || t <= 0)
		snprintf(buf, n, "-");
	else if (ago < 60)
		snprintf(buf, n, "%.0fs", ago < 0 ? 0 : ago);
	else if (ago < 3600)
		snprintf(buf, n, "%.0fm", floor(ago / 60));
	else if (ago < 86400)
		snprintf(buf, n, "%.0fh", floor(ago / 3600));
	else
		snprintf(buf, n, "%.0fd", floor(ago / 86400));
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
	static const char *const bars[8] = { "▁", "▂", "▃", "▄",
					     "▅", "▆", "▇", "█" };
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

/* The code point at p (NUL-terminated; UTF-8 already checked by
 * text_escape: a bad byte counts as one) and its length, by the project's
 * one decoder (proto/text.c). */
static unsigned decode(const unsigned char *p, int *len)
{
	size_t n;
	int32_t cp =
	    text_decode((const char *)p, strnlen((const char *)p, 4), &n);

	*len = (int)n;
	return cp < 0 ? p[0] : (unsigned)cp;
}

/* East Asian wide and fullwidth ranges, and the emoji planes. */
static int wide(unsigned cp)
{
	return (cp >= 0x1100 && cp <= 0x115F) ||
	       (cp >= 0x2E80 && cp <= 0xA4CF) ||
	       (cp >= 0xAC00 && cp <= 0xD7A3) ||
	       (cp >= 0xF900 && cp <= 0xFAFF) ||
	       (cp >= 0xFE30 && cp <= 0xFE4F) ||
	       (cp >= 0xFF00 && cp <= 0xFF60) ||
	       (cp >= 0xFFE0 && cp <= 0xFFE6) ||
	       (cp >= 0x1F300 && cp <= 0x1FAFF) ||
	       (cp >= 0x20000 && cp <= 0x3FFFD);
}

size_t fmt_columns(const char *s)
{
	size_t cols = 0;
	int len;

	for (const unsigned char *p = (const unsigned char *)s; *p; p += len)
		cols += 1 + wide(decode(p, &len));
	return cols;
}

void fmt_truncate(char *s, size_t cols)
{
	size_t seen = 0;
	int len;

	for (unsigned char *p = (unsigned char *)s; *p; p += len) {
		size_t w = 1 + wide(decode(p, &len));
		if (seen + w > cols) {
			*p = '\0';
			return;
		}
		seen += w;
	}
}

size_t fmt_append_cut(char *buf, size_t n, const char *s, size_t cols)
{
	static const char dots[] = "\xe2\x80\xa6"; /* U+2026, one column */
	size_t have = fmt_columns(s), seen = 0, len = strlen(buf), used = 0;
	const unsigned char *p = (const unsigned char *)s, *tail = NULL;
	int step;

	if (have <= cols || cols < 3)
		return fmt_append_cols(buf, n, s, cols);
	/* the end: at most half the room after the ellipsis */
	size_t keep = (cols - 1) / 2;
	for (; *p; p += step) {
		if (have - seen <= keep) {
			tail = p;
			break;
		}
		seen += 1 + wide(decode(p, &step));
	}
	size_t head = cols - 1 - (tail ? have - seen : 0);
	for (p = (const unsigned char *)s; *p; p += step) {
		size_t w = 1 + wide(decode(p, &step));
		if (used + w > head || len + step + 1 > n)
			break;
		memcpy(buf + len, p, step);
		len += step;
		used += w;
	}
	if (len + sizeof(dots) <= n) {
		memcpy(buf + len, dots, sizeof(dots) - 1);
		len += sizeof(dots) - 1;
		used++;
	}
	for (p = tail; p && *p; p += step) {
		size_t w = 1 + wide(decode(p, &step));
		if (len + step + 1 > n)
			break;
		memcpy(buf + len, p, step);
		len += step;
		used += w;
	}
	while (used++ < cols && len + 1 < n)
		buf[len++] = ' ';
	buf[len] = '\0';
	return len;
}

size_t fmt_append_cols(char *buf, size_t n, const char *s, size_t cols)
{
	size_t len = strlen(buf), used = 0;
	int step;

	for (const unsigned char *p = (const unsigned char *)s; *p; p += step) {
		size_t w = 1 + wide(decode(p, &step));
		if (used + w > cols || len + step + 1 > n)
			break;
		memcpy(buf + len, p, step);
		len += step;
		used += w;
	}
	while (used++ < cols && len + 1 < n)
		buf[len++] = ' ';
	buf[len] = '\0';
	return len;
}

/* ---- the PSNR series ---- */

void fmt_series_init(struct fmt_series *s)
{
	memset(s, 0, sizeof(*s));
	s->stride = 1;
}

void fmt_series_add(struct fmt_series *s, int epoch, float value)
{
	if (!isfinite(value) || epoch <= s->last_epoch)
		return;
	if (++s->since < s->stride && s->n > 0) {
		s->v[s->n - 1] = value; /* the group's latest point stands */
		s->last_epoch = epoch;
		return;
	}
	if (s->n == FMT_SERIES_MAX) {
		for (int i = 0; i < FMT_SERIES_MAX / 2; i++)
			s->v[i] = s->v[2 * i + 1];
		s->n = FMT_SERIES_MAX / 2;
		s->stride *= 2;
	}
	s->v[s->n++] = value;
	s->since = 0;
	s->last_epoch = epoch;
}

const char *fmt_series_sparkline(const struct fmt_series *s, int width,
				 char *buf)
{
	float pick[FMT_SERIES_MAX];
	int n = s->n < width ? s->n : width;

	for (int i = 0; i < n; i++)
		pick[i] = s->v[s->n <= width
				   ? i
				   : (int)((long)(i + 1) * s->n / width) - 1];
	return fmt_sparkline(pick, n, buf);
}

double fmt_series_slope(const struct fmt_series *s)
{
	int back = s->n / 4;

	if (back < 1 || s->n < 4)
		return NAN;
	return (s->v[s->n - 1] - s->v[s->n - 1 - back]) /
	       ((double)back * s->stride);
}

void fmt_csv_field(FILE *out, const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		fputc('"', out);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', out);
			fputc(*s, out);
		}
		fputc('"', out);
	} else {
		fputs(s, out);
	}
	fputc(last ? '\n' : ',', out);
}

void fmt_csv_number(FILE *out, double v, const char *format, int last)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof(buf), format, v);
	else
		buf[0] = '\0';
	fmt_csv_field(out, buf, last);
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
