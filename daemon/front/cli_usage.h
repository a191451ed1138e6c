/*
 * cli_usage.h - what vkinrd's command lines say when they are wrong or
 * asked for help: --help anywhere (so that `vkinrd --fit --help` helps,
 * though --fit takes a value), and after a bad option one usage line,
 * "did you mean --NAME?" when an option is near, and where the whole help
 * is, rather than the whole help. Main thread, before anything runs.
 */
#ifndef VKINR_CLI_USAGE_H
#define VKINR_CLI_USAGE_H

#include <getopt.h>

/* Whether a word of argv (after argv[0]) is --help or -h. */
int cli_help_asked(int argc, char **argv);

/* After getopt_long returned '?': "vkinrd: did you mean --NAME?" when the
 * option it could not read (argv[optind - 1]) is near one of opts or of
 * more (names without dashes, NULL-ended; may be NULL). */
void cli_suggest(int argc, char **argv, const struct option *opts,
		 const char *const *more);

/* The usage line, then "Try 'HELP' for every option.", on stderr;
 * returns 2, the exit status of a usage error. */
int cli_short_usage(const char *line, const char *help);

#endif
