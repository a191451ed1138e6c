/*
 * suggest.c - see suggest.h: the optimal string alignment distance (a
 * Levenshtein distance in which two neighbours swapped cost one), over
 * words short enough for three rows of a small array.
 */
#include "util/suggest.h"

#include <string.h>

#define SUGGEST_MAX 64 /* longer words are never near */

static size_t distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	size_t rows[3][SUGGEST_MAX + 1];
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	if (n > SUGGEST_MAX || m > SUGGEST_MAX)
		return SUGGEST_MAX;
	for (size_t j = 0; j <= m; j++)
		prev[j] = j;
	for (size_t i = 1; i <= n; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t d = prev[j - 1] + cost;
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[m];
}

const char *suggest_word(const char *word, const char *const *words, size_t n)
{
	size_t limit = strlen(word) <= 4 ? 1 : 2, best_d = limit + 1;
	const char *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!words[i])
			continue;
		size_t d = distance(word, words[i]);
		if (d < best_d) {
			best_d = d;
			best = words[i];
		}
	}
	return best;
}

const char *suggest_option(const char *arg, const struct option *opts)
{
	char name[SUGGEST_MAX + 1];
	const char *names[256];
	size_t n = 0, len;

	if (strncmp(arg, "--", 2) || !arg[2])
		return NULL;
	arg += 2;
	len = strcspn(arg, "=");
	if (len > SUGGEST_MAX)
		return NULL;
	memcpy(name, arg, len);
	name[len] = '\0';
	for (; opts->name && n < 256; opts++) {
		if (!strncmp(opts->name, name, len))
			return NULL; /* known, or a prefix of one */
		names[n++] = opts->name;
	}
	return suggest_word(name, names, n);
}
