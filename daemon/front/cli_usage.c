/*
 * cli_usage.c - see cli_usage.h: the nearest name from util/suggest.c,
 * over the option table getopt read and the modes main.c picks by hand.
 */
#include "front/cli_usage.h"

#include <stdio.h>
#include <string.h>

#include "util/suggest.h"

int cli_help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

void cli_suggest(int argc, char **argv, const struct option *opts,
		 const char *const *more)
{
	struct option all[256];
	size_t n = 0;
	const char *near;

	if (optind < 1 || optind > argc)
		return;
	/* one table of both, so that the nearest of all wins */
	for (; opts && opts->name && n < 255; opts++)
		all[n++] = *opts;
	for (; more && *more && n < 255; more++)
		all[n++] = (struct option){ *more, no_argument, NULL, 0 };
	all[n] = (struct option){ NULL, 0, NULL, 0 };
	near = suggest_option(argv[optind - 1], all);
	if (near)
		fprintf(stderr, "vkinrd: did you mean --%s?\n", near);
}

int cli_short_usage(const char *line, const char *help)
{
	fprintf(stderr, "%s\nTry '%s' for every option.\n", line, help);
	return 2;
}
