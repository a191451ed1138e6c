/*
 * params.c - the table of parameter ranges (params.h) and the one check
 * both programs make against it.
 */
#include "proto/params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

const struct param_limit param_limits[PARAM_COUNT] = {
#define X(id, key, option, min, max, flags, multiple, example)               \
	[PARAM_##id] = {key, option, min, max, flags, multiple, example},
	PARAM_LIST(X)
#undef X
};

/* "a whole number from 1 to 10000000", "a number above 0 and below 1" */
static void describe(const struct param_limit *l, char *buf, size_t n)
{
	const char *kind = !(l->flags & PARAM_INT) ? "a number"
			   : l->multiple > 1       ? "a multiple"
						   : "a whole number";
	char mult[32] = "";

	if (l->multiple > 1)
		snprintf(mult, sizeof mult, " of %d", l->multiple);
	if (l->flags & (PARAM_OPEN_MIN | PARAM_OPEN_MAX))
		snprintf(buf, n, "%s%s %s %.17g and %s %.17g", kind, mult,
			 l->flags & PARAM_OPEN_MIN ? "above" : "from", l->min,
			 l->flags & PARAM_OPEN_MAX ? "below" : "at most",
			 l->max);
	else
		snprintf(buf, n, "%s%s from %.17g to %.17g", kind, mult,
			 l->min, l->max);
}

int param_check(enum param_id id, double v, const char *what, char *err,
		size_t errlen)
{
	const struct param_limit *l = &param_limits[id];
	char range[160];
	int ok = isfinite(v);

	ok = ok && ((l->flags & PARAM_OPEN_MIN) ? v > l->min : v >= l->min);
	ok = ok && ((l->flags & PARAM_OPEN_MAX) ? v < l->max : v <= l->max);
	if (ok && (l->flags & PARAM_INT))
		ok = v == floor(v) && fmod(v, l->multiple) == 0;
	if (ok)
		return 0;
	describe(l, range, sizeof range);
	snprintf(err, errlen, "%s must be %s, e.g. %s (got %.17g)", what,
		 range, l->example, v);
	return ERR_INVALID;
}

int param_parse(enum param_id id, const char *text, const char *what,
		double *v, char *err, size_t errlen)
{
	char *end, range[160];

	errno = 0;
	*v = strtod(text, &end);
	if (errno == 0 && end != text && !*end)
		return param_check(id, *v, what, err, errlen);
	describe(&param_limits[id], range, sizeof range);
	snprintf(err, errlen, "%s must be %s, e.g. %s (got '%s')", what,
		 range, param_limits[id].example, text);
	return ERR_INVALID;
}

const struct text_param text_params[TEXT_PARAM_COUNT] = {
#define X(id, key, option, choices, example)                                 \
	[TEXT_PARAM_##id] = {key, option, choices, example},
	TEXT_PARAM_LIST(X)
#undef X
};

/* Whether v is one of the '|'-separated words of choices. */
static int one_of(const char *choices, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = choices; *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return 1;
		p += len + (bar != NULL);
	}
	return 0;
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

int text_param_check(enum text_param_id id, const char *v, const char *what,
		     char *err, size_t errlen)
{
	const struct text_param *t = &text_params[id];

	if (t->choices ? one_of(t->choices, v) : dilation_list(v))
		return 0;
	if (t->choices)
		snprintf(err, errlen, "%s takes one of %s, not '%s'", what,
			 t->choices, v);
	else
		snprintf(err, errlen, "%s takes 1 to %d numbers from 1 to %d, "
			 "comma-separated, e.g. %s; not '%s'", what,
			 LIMIT_DILATIONS, LIMIT_DILATION, t->example, v);
	return ERR_INVALID;
}
