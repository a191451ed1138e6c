/*
 * fitopts.c - the shared tables of the engine's parameters as getopt
 * options for vkinrctl's submit paths (see fitopts.h).
 */
#include "fitopts.h"

void fit_options_table(struct option *opts, int first)
{
	for (int i = 0; i < PARAM_COUNT; i++)
		opts[i] = (struct option){param_limits[i].option + 2,
					  required_argument, NULL, first + i};
	for (int i = 0; i < TEXT_PARAM_COUNT; i++)
		opts[PARAM_COUNT + i] = (struct option){
			text_params[i].option + 2, required_argument, NULL,
			first + PARAM_COUNT + i};
}

int fit_option_is(int c, int first)
{
	return c >= first && c < first + FIT_OPTION_COUNT;
}

int fit_option_parse(const struct cmd_entry *e, int c, int first,
		     const char *text, struct fit_value *v)
{
	char err[256];
	int i = c - first;

	if (i < PARAM_COUNT) {
		*v = (struct fit_value){param_limits[i].key,
					param_limits[i].option, 0, 0};
		if (param_parse(i, text, v->option, &v->number, err,
				sizeof err) < 0)
			return cmd_usage_error(e, "%s", err);
		return 0;
	}
	i -= PARAM_COUNT;
	*v = (struct fit_value){text_params[i].key, text_params[i].option, 1,
				0};
	if (text_param_check(i, text, v->option, err, sizeof err) < 0)
		return cmd_usage_error(e, "%s", err);
	return 0;
}
