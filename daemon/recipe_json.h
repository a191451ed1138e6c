/*
 * recipe_json.h - a job's training recipe (nn/model.h) as a JSON object,
 * {"optimizer":"adam","warmup":50,...}: job.submit's "recipe" param, the
 * job objects the daemon sends and request.json in the state folder.
 */
#ifndef VKINR_RECIPE_JSON_H
#define VKINR_RECIPE_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "nn/model.h"

/* Every key, names as strings and numbers as numbers. NULL when out of
 * memory. */
cJSON *recipe_to_json(const struct nn_recipe *r);
/* Sets the keys obj has (an object; any other key is an error). Returns 0
 * or ERR_INVALID with a sentence in err; ranges are checked by the
 * caller (nn_config_check). */
int recipe_from_json(const cJSON *obj, struct nn_recipe *r, char *err,
		     size_t errlen);

#endif
