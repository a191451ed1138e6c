/*
 * recipe_options.h - the training recipe as command-line options, one
 * `--KEY VALUE` for each key of the recipe table (nn_recipe_key, with - for
 * _), for every vkinrd front end that trains: `vkinrd --fit` (fit_cli.c)
 * and `vkinrd --fit-task` (fit_task.c). A new recipe key is a new option of
 * both, with the same check and the same sentence.
 */
#ifndef VKINR_RECIPE_OPTIONS_H
#define VKINR_RECIPE_OPTIONS_H

#include <getopt.h>

#include "nn/model.h"

/* Room for the recipe's keys in an option table. */
#define RECIPE_OPTIONS_MAX 16

/*
 * Copies the fixed options (ended by a {0} row) into all, then one option
 * per recipe key whose getopt value is first + the key's index, then the
 * ending row. all holds at least the fixed rows + RECIPE_OPTIONS_MAX + 1.
 */
void recipe_options_table(const struct option *fixed, struct option *all,
			  int first);

/*
 * For getopt's value c: 0 when c is not a recipe option; 1 when it is and
 * value was set into r; -1 when the value was refused (the sentence,
 * "vkinrd: ...", printed on stderr).
 */
int recipe_option_apply(struct nn_recipe *r, int c, int first,
			const char *value);

#endif
