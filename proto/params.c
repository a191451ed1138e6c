/*
 * params.c - the table of every training option (params.h): its rows,
 * the checks every front end makes against them, and the help lines each
 * front end prints.
 */
#include "proto/params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

const struct param param_table[PARAM_COUNT] = {
#define X(id, key, option, flags, min, max, multiple, choices, example,        \
	  fallback, help, field)                                               \
	[PARAM_##id] = { key,      option,  flags,   min,      max,            \
			 multiple, choices, example, fallback, help },
	PARAM_LIST(X)
#undef X
};

int param_find(const char *name)
{
	for (int i = 0; i < PARAM_COUNT; i++) {
		/* '-' matches '_': command-line spelling */
		const char *a = param_table[i].key, *b = name;
		while (*a && (*a == *b || (*a == '_' && *b == '-')))
			a++, b++;
		if (!*a && !*b)
			return i;
	}
	return -1;
}

/* "a whole number from 1 to 10000000", "a number above 0 and below 1" */
static void describe(const struct param *l, char *buf, size_t n)
{
	const char *kind = !(l->flags & PARAM_INT) ? "a number"
			   : l->multiple > 1       ? "a multiple"
						   : "a whole number";
	char mult[32] = "";

	if (l->multiple > 1)
		snprintf(mult, sizeof(mult), " of %d", l->multiple);
	if (l->flags & (PARAM_OPEN_MIN | PARAM_OPEN_MAX))
		snprintf(buf, n, "%s%s %s %.17g and %s %.17g", kind, mult,
			 l->flags & PARAM_OPEN_MIN ? "above" : "from", l->min,
			 l->flags & PARAM_OPEN_MAX ? "below" : "at most",
			 l->max);
	else
		snprintf(buf, n, "%s%s from %.17g to %.17g", kind, mult, l->min,
			 l->max);
}

int param_check(enum param_id id, double v, const char *what, char *err,
		size_t errlen)
{
	const struct param *l = &param_table[id];
	char range[160];
	int ok = isfinite(v);

	ok = ok && ((l->flags & PARAM_OPEN_MIN) ? v > l->min : v >= l->min);
	ok = ok && ((l->flags & PARAM_OPEN_MAX) ? v < l->max : v <= l->max);
	if (ok && (l->flags & PARAM_INT))
		ok = v == floor(v) && fmod(v, l->multiple) == 0;
	if (ok)
		return 0;
	describe(l, range, sizeof(range));
	snprintf(err, errlen, "%s must be %s, e.g. %s (got %.17g)", what, range,
		 l->example, v);
	return ERR_INVALID;
}

int param_choice(enum param_id id, const char *v)
{
	const char *choices = param_table[id].choices;
	size_t n = strlen(v);
	int i = 0;

	if (!choices)
		return -1;
	for (const char *p = choices; *p; i++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return i;
		p += len + (bar != NULL);
	}
	return -1;
}

void param_choice_name(enum param_id id, int i, char *buf, size_t len)
{
	const char *p = param_table[id].choices;

	for (; p && i > 0 && (p = strchr(p, '|')); i--)
		p++;
	if (!p || i < 0) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
}

/* 1 to LIMIT_DILATIONS numbers from 1 to LIMIT_DILATION, by commas. */
static int dilation_list(const char *v)
{
	int n = 0;

	while (*v) {
		char *end;
		long d = strtol(v, &end, 10);
		if (end == v || *v == '+' || *v == '-' || d < 1 ||
		    d > LIMIT_DILATION || ++n > LIMIT_DILATIONS)
			return 0;
		v = end;
		if (*v == ',' && v[1])
			v++;
		else if (*v)
			return 0;
	}
	return n > 0;
}

int param_check_word(enum param_id id, const char *v, const char *what,
		     char *err, size_t errlen)
{
	const struct param *t = &param_table[id];

	if (t->choices ? param_choice(id, v) >= 0 : dilation_list(v))
		return 0;
	if (t->choices)
		snprintf(err, errlen, "%s takes one of %s, not '%s'", what,
			 t->choices, v);
	else
		snprintf(err, errlen,
			 "%s takes 1 to %d numbers from 1 to %d, "
			 "comma-separated, e.g. %s; not '%s'",
			 what, LIMIT_DILATIONS, LIMIT_DILATION, t->example, v);
	return ERR_INVALID;
}

int param_parse(enum param_id id, const char *text, const char *what, double *v,
		char *err, size_t errlen)
{
	const struct param *l = &param_table[id];
	char *end, range[160];

	if (l->flags & PARAM_WORD)
		return param_check_word(id, text, what, err, errlen);
	if ((l->flags & PARAM_AUTO) && !strcmp(text, "auto"))
		return 1;
	errno = 0;
	*v = strtod(text, &end);
	if (errno == 0 && end != text && !*end)
		return param_check(id, *v, what, err, errlen);
	describe(l, range, sizeof(range));
	snprintf(err, errlen, "%s must be %s%s, e.g. %s (got '%s')", what,
		 range, l->flags & PARAM_AUTO ? ", or auto" : "", l->example,
		 text);
	return ERR_INVALID;
}

/* What an option takes, in its help line: N, X, WORD|WORD, LIST. */
static const char *metavar(const struct param *l)
{
	if (l->flags & PARAM_WORD)
		return l->choices ? l->choices : "LIST";
	return l->flags & PARAM_INT ? "N" : "X";
}

void param_print_help(FILE *out, unsigned skip)
{
	for (int i = 0; i < PARAM_COUNT; i++) {
		const struct param *l = &param_table[i];
		char head[64], line[512];
		if (l->flags & skip)
			continue;
		snprintf(head, sizeof(head), "  %s %s", l->option, metavar(l));
		snprintf(line, sizeof(line), "%s (default %s%s)", l->help,
			 l->fallback,
			 l->flags & PARAM_AUTO ? "; auto: the same" : "");
		if (strlen(head) > 22)
			fprintf(out, "%s\n%-23s", head, "");
		else
			fprintf(out, "%-23s", head);
		/* the line folded at 80 columns, after the 23 of the head */
		const char *p = line;
		while (strlen(p) > 57) {
			int cut = 57;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = (int)strcspn(p, " ");
			fprintf(out, "%.*s\n%-23s", cut, p, "");
			p += cut + (p[cut] == ' ');
		}
		fprintf(out, "%s\n", p);
	}
}
