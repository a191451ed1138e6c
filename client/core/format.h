/*
 * format.h - small text formatting shared by the commands that print for
 * people: durations, sparklines, and fitting UTF-8 lines to a terminal.
 */
#ifndef VKINR_CLIENT_FORMAT_H
#define VKINR_CLIENT_FORMAT_H

#include <stddef.h>
#include <stdio.h>

/* "42s", "3:07", "1:02:03"; "-" for a negative or non-finite value. */
const char *fmt_duration(double seconds, char *buf, size_t n);
/* A Unix time as "2026-12-01 00:19" local time, "-" when not finite. */
const char *fmt_date(double t, char *buf, size_t n);
/* How long ago a Unix time was: "42s", "5m", "3h", "2d"; "-". */
const char *fmt_age(double t, char *buf, size_t n);
/* printf of one number, or "-" when it is not finite; returns buf. */
const char *fmt_number(const char *format, double v, char *buf, size_t n);
/*
 * A sparkline of n values with ▁▂▃▄▅▆▇█ scaled between their minimum and
 * maximum; a value that is NaN (no data yet) prints as a space. buf needs
 * 3 * n + 1 bytes.
 */
const char *fmt_sparkline(const float *values, int n, char *buf);
/* Columns a UTF-8 string takes on a terminal: two for an East Asian wide
 * character or an emoji, one for anything else (never less than what the
 * terminal uses, so a line cut to fit never wraps). */
size_t fmt_columns(const char *s);
/* Cuts a UTF-8 string in place to at most cols columns. */
void fmt_truncate(char *s, size_t cols);
/* Appends s to buf (n bytes), cut or padded with spaces to exactly cols
 * columns; returns the new length of buf. */
size_t fmt_append_cols(char *buf, size_t n, const char *s, size_t cols);
/* The same, but a string wider than cols keeps its start and its end
 * around an ellipsis ("2025/holi…/beach"), so that names that differ
 * only at the end stay apart. */
size_t fmt_append_cut(char *buf, size_t n, const char *s, size_t cols);

/*
 * A whole run's PSNR in a fixed space: points are added one an epoch and
 * kept every stride-th; when the store is full, every other point goes and
 * the stride doubles, so a sparkline covers the run so far, whatever its
 * length, and fills in as it goes.
 */
#define FMT_SERIES_MAX 64
struct fmt_series {
	float v[FMT_SERIES_MAX];
	int n;          /* points kept */
	int stride;     /* epochs between two kept points */
	int since;      /* epochs added since the last kept point */
	int last_epoch; /* epoch of the latest kept point */
};
void fmt_series_init(struct fmt_series *s);
void fmt_series_add(struct fmt_series *s, int epoch, float value);
/* The series as a sparkline of at most width bars (buf: 3 * width + 1). */
const char *fmt_series_sparkline(const struct fmt_series *s, int width,
				 char *buf);
/* Rise per epoch over the latest quarter of the series (NaN: too short). */
double fmt_series_slope(const struct fmt_series *s);
/* A CSV field (RFC 4180: quoted when it holds a comma, a quote or a line
 * break), then ',' or, for the last, '\n'. */
void fmt_csv_field(FILE *out, const char *s, int last);
/* A number as a CSV field; empty when it is not finite. */
void fmt_csv_number(FILE *out, double v, const char *format, int last);
/* The width of the terminal on fd, or 0 when it is not one. */
int fmt_terminal_columns(int fd);
int fmt_terminal_rows(int fd);

#endif
