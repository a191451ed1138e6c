/*
 * recipe_json.c - the recipe to and from JSON, through the one table of
 * keys in nn/recipe.c: a key whose text parses as a number goes out as a
 * number, and a number comes in as its shortest exact text.
 */
#include "recipe_json.h"

#include <stdio.h>
#include <stdlib.h>

#include "errors.h"

cJSON *recipe_to_json(const struct nn_recipe *r)
{
	cJSON *o = cJSON_CreateObject();
	for (int i = 0; o && nn_recipe_key(i); i++) {
		char value[64], *end;
		nn_recipe_get(r, nn_recipe_key(i), value, sizeof(value));
		double x = strtod(value, &end);
		if (end != value && !*end)
			cJSON_AddNumberToObject(o, nn_recipe_key(i), x);
		else
			cJSON_AddStringToObject(o, nn_recipe_key(i), value);
	}
	return o;
}

int recipe_from_json(const cJSON *obj, struct nn_recipe *r, char *err,
		     size_t errlen)
{
	const cJSON *item;
	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "\"recipe\" must be an object, e.g. "
			 "{\"optimizer\":\"adam\",\"warmup\":50}");
		return ERR_INVALID;
	}
	cJSON_ArrayForEach(item, obj)
	{
		char value[64];
		if (cJSON_IsString(item))
			snprintf(value, sizeof(value), "%s", item->valuestring);
		else if (cJSON_IsNumber(item))
			snprintf(value, sizeof(value), "%.17g", item->valuedouble);
		else {
			snprintf(err, errlen, "recipe key \"%s\" must be a string "
				 "or a number", item->string);
			return ERR_INVALID;
		}
		int rc = nn_recipe_set(r, item->string, value, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}
