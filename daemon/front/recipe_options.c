/*
 * recipe_options.c - the table of training options as getopt options,
 * shared by `vkinrd --fit` and `vkinrd --fit-task` (see recipe_options.h).
 */
#include "front/recipe_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void recipe_options_table(const struct option *fixed, struct option *all,
			  int first, unsigned skip)
{
	int n = 0;
	for (; fixed[n].name; n++)
		all[n] = fixed[n];
	for (int i = 0; i < PARAM_COUNT; i++)
		if (!(param_table[i].flags & skip))
			all[n++] =
			    (struct option){ param_table[i].option + 2,
					     required_argument, 0, first + i };
	all[n] = (struct option){ 0, 0, 0, 0 };
}

int recipe_option_apply(struct nn_config *cfg, double job[PARAM_COUNT], int c,
			int first, const char *value)
{
	char err[256];
	int id = c - first;
	if (id < 0 || id >= PARAM_COUNT)
		return 0;
	if (nn_option_set(cfg, id, value, param_table[id].option, err,
			  sizeof(err))) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return -1;
	}
	if (!nn_option_in_config(id))
		job[id] = strcmp(value, "auto") ? strtod(value, NULL) : 0;
	return 1;
}
