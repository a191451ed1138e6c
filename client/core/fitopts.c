/*
 * fitopts.c - the table of training options as getopt options for
 * vkinrctl's submit paths, and --resize/--max-side (see fitopts.h).
 */
#include "core/fitopts.h"

#include <stdlib.h>

#include "util/image.h"

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

int fit_resize_option(const struct cmd_entry *self, int resize,
		      const char *text, cJSON *common)
{
	char *end;
	long w = strtol(text, &end, 10), h = 0;
	int ok = end != text && w >= 1 && w <= IMAGE_MAX_SIDE;
	cJSON *r;

	if (cJSON_HasObjectItem(common, "resize"))
		return cmd_usage_error(self, "--resize and --max-side "
					     "exclude each other");
	if (resize && ok && (*end == 'x' || *end == 'X')) {
		const char *t = end + 1;
		h = strtol(t, &end, 10);
		ok = end != t && h >= 1 && h <= IMAGE_MAX_SIDE;
	} else if (resize) {
		ok = 0;
	}
	if (!ok || *end)
		return cmd_usage_error(
		    self, "--%s takes %s, each 1 to %d pixels",
		    resize ? "resize" : "max-side",
		    resize ? "WIDTHxHEIGHT" : "a number", IMAGE_MAX_SIDE);
	r = cJSON_AddObjectToObject(common, "resize");
	if (resize) {
		cJSON_AddNumberToObject(r, "width", (double)w);
		cJSON_AddNumberToObject(r, "height", (double)h);
	} else {
		cJSON_AddNumberToObject(r, "max_side", (double)w);
	}
	return 0;
}
