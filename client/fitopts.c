/*
 * fitopts.c - the table of training options as getopt options for
 * vkinrctl's submit paths (see fitopts.h).
 */
#include "fitopts.h"

void fit_options_table(struct option *opts, int first)
{
	for (int i = 0; i < PARAM_COUNT; i++)
		opts[i] = (struct option){ param_table[i].option + 2,
					   required_argument, NULL, first + i };
}

int fit_option_is(int c, int first)
{
	return c >= first && c < first + FIT_OPTION_COUNT;
}

int fit_option_parse(const struct cmd_entry *e, int c, int first,
		     const char *text, struct fit_value *v)
{
	char err[256];
	int i = c - first, rc;

	*v = (struct fit_value){ i,
				 param_table[i].key,
				 param_table[i].option,
				 (param_table[i].flags & PARAM_WORD) != 0,
				 0,
				 0 };
	rc = param_parse(i, text, v->option, &v->number, err, sizeof(err));
	if (rc < 0)
		return cmd_usage_error(e, "%s", err);
	v->is_auto = rc == 1;
	return 0;
}
