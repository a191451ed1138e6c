/*
 * recipe_options.h - the table of training options (proto/params.h) as
 * command-line options, one `--KEY VALUE` for each row (- for _), for
 * every vkinrd front end that trains: `vkinrd --fit` (fit_cli.c) and
 * `vkinrd --fit-task` (fit_task.c). A new row is a new option of both,
 * with the bounds, the sentence and the help line that `vkinrctl submit`
 * and job.submit have.
 */
#ifndef VKINR_RECIPE_OPTIONS_H
#define VKINR_RECIPE_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "nn/model.h"

/* Room for the table's rows in an option table. */
#define RECIPE_OPTIONS_MAX PARAM_COUNT

/*
 * Copies the fixed options (ended by a {0} row) into all, then one option
 * per row of the table whose flags have none of the bits in skip (e.g.
 * PARAM_QUEUE), with the getopt value first + the row's id, then the
 * ending row. all holds at least the fixed rows + RECIPE_OPTIONS_MAX + 1.
 */
void recipe_options_table(const struct option *fixed, struct option *all,
			  int first, unsigned skip);

/*
 * For getopt's value c: 0 when c is not a table option; 1 when it is and
 * value was set into cfg (a row outside the config, target_psnr, into
 * job[id]); -1 when the value was refused (the table's sentence,
 * "vkinrd: --KEY must be ...", printed on stderr).
 */
int recipe_option_apply(struct nn_config *cfg, double job[PARAM_COUNT], int c,
			int first, const char *value);

#endif
