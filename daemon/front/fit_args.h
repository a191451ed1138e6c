/*
 * fit_args.h - the one command-line parser of vkinrd's foreground front
 * ends that train: `vkinrd --fit` (fit_cli.c) and `vkinrd --fit-task`
 * (fit_task.c). Each gives its own options and what to do with them; the
 * parser adds one `--KEY VALUE` for each row of the table of training
 * options (proto/params.h; - for _) but the queue's, with the bounds,
 * the sentence and the help line that `vkinrctl submit` and job.submit
 * have, and says the same things on --help, a bad option or a bad value.
 * Main thread, before anything runs.
 */
#ifndef VKINR_FIT_ARGS_H
#define VKINR_FIT_ARGS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/model.h"

/* The getopt values of a front end's own long options start here. */
#define FIT_ARGS_OWN 256

struct fit_args {
	/* its own options, ended by a {0} row: a value from FIT_ARGS_OWN
	 * up, or the short letter it shares */
	const struct option *own;
	const char *shorts;       /* getopt's short letters ("h" is added) */
	void (*usage)(FILE *out); /* the whole help, the table's rows too */
	const char *usage_line;   /* the one line after a mistake */
	const char *help;         /* the command that shows the whole help */
	/* One of its own options (c: its getopt value): 0, or -1 when the
	 * value is bad (the parser says so, naming the option), or -2 when
	 * refused and already said why. */
	int (*option)(void *ctx, int c, const char *value);
	void *ctx;
};

/*
 * Parses argv: the engine's defaults into *cfg (nf 0: the device's
 * width, once it is open), each table option given set over them (a row
 * outside the config, target_psnr, into *target_psnr, 0 when not given),
 * a bit of *given (1 << row) for each one given; argv[optind] on are the
 * operands. --help anywhere prints a->usage and exits 0. Returns 0, or 2
 * (a usage error's exit status) once the mistake and the usage line are
 * said on stderr.
 */
int fit_args_parse(const struct fit_args *a, int argc, char **argv,
		   struct nn_config *cfg, double *target_psnr, uint64_t *given);

#endif
