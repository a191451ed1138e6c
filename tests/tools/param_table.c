/*
 * param_table.c - prints the table of training options (proto/params.h)
 * as JSON, one object a row, for the tests that check every front end
 * against it (tests/integration/77_option_table.sh): key, option, bounds,
 * flags, the multiple and the choices.
 *
 *     param_table
 */
#include <stdio.h>

#include "proto/params.h"

int main(void)
{
	for (int i = 0; i < PARAM_COUNT; i++) {
		const struct param *l = &param_table[i];
		printf(
		    "{\"key\":\"%s\",\"option\":\"%s\",\"min\":%.17g,"
		    "\"max\":%.17g,\"int\":%d,\"open_min\":%d,"
		    "\"open_max\":%d,\"word\":%d,\"auto\":%d,\"queue\":%d,"
		    "\"multiple\":%d,\"choices\":\"%s\",\"example\":\"%s\"}\n",
		    l->key, l->option, l->min, l->max, !!(l->flags & PARAM_INT),
		    !!(l->flags & PARAM_OPEN_MIN),
		    !!(l->flags & PARAM_OPEN_MAX), !!(l->flags & PARAM_WORD),
		    !!(l->flags & PARAM_AUTO), !!(l->flags & PARAM_QUEUE),
		    l->multiple, l->choices ? l->choices : "", l->example);
	}
	return 0;
}
