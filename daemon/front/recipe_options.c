/*
 * recipe_options.c - the recipe table's keys as getopt options, shared by
 * `vkinrd --fit` and `vkinrd --fit-task` (see recipe_options.h).
 */
#include "front/recipe_options.h"

#include <stdio.h>
#include <string.h>

/* The keys spelled as options (lr_min: lr-min), made once. */
static char option_names[RECIPE_OPTIONS_MAX][32];

void recipe_options_table(const struct option *fixed, struct option *all,
			  int first)
{
	int n = 0;
	for (; fixed[n].name; n++)
		all[n] = fixed[n];
	for (int i = 0; i < RECIPE_OPTIONS_MAX && nn_recipe_key(i); i++) {
		char *name = option_names[i];
		snprintf(name, sizeof option_names[i], "%s", nn_recipe_key(i));
		for (char *u = strchr(name, '_'); u; u = strchr(u, '_'))
			*u = '-';
		all[n++] = (struct option){name, required_argument, 0, first + i};
	}
	all[n] = (struct option){0, 0, 0, 0};
}

int recipe_option_apply(struct nn_recipe *r, int c, int first,
			const char *value)
{
	char err[256];
	if (c < first || c >= first + RECIPE_OPTIONS_MAX ||
	    !nn_recipe_key(c - first))
		return 0;
	if (nn_recipe_set(r, nn_recipe_key(c - first), value, err,
			  sizeof err)) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return -1;
	}
	return 1;
}
