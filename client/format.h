/*
 * format.h - small text formatting shared by the commands that print for
 * people: durations, sparklines, and fitting UTF-8 lines to a terminal.
 */
#ifndef VKINR_CLIENT_FORMAT_H
#define VKINR_CLIENT_FORMAT_H

#include <stddef.h>

/* "42s", "3:07", "1:02:03"; "-" for a negative or non-finite value. */
const char *fmt_duration(double seconds, char *buf, size_t n);
/* printf of one number, or "-" when it is not finite; returns buf. */
const char *fmt_number(const char *format, double v, char *buf, size_t n);
/*
 * A sparkline of n values with ▁▂▃▄▅▆▇█ scaled between their minimum and
 * maximum; a value that is NaN (no data yet) prints as a space. buf needs
 * 3 * n + 1 bytes.
 */
const char *fmt_sparkline(const float *values, int n, char *buf);
/* Columns a UTF-8 string takes (one per code point). */
size_t fmt_columns(const char *s);
/* Cuts a UTF-8 string in place to at most cols columns. */
void fmt_truncate(char *s, size_t cols);
/* The width of the terminal on fd, or 0 when it is not one. */
int fmt_terminal_columns(int fd);
int fmt_terminal_rows(int fd);

#endif
