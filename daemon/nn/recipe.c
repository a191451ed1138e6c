/*
 * recipe.c - the training recipe by name: one table of keys that every
 * front end reads and writes through (`vkinrd --fit` options, job.submit
 * params, `vkinrctl submit` options, checkpoint and package metadata), so
 * the same names and the same parsing hold everywhere.
 *
 * Values are text here; ranges are checked once, by nn_config_check.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/model.h"

/* KEY_EPOCHS_AUTO: epochs, or NN_WARMUP_AUTO ("-1" or "auto": by width,
 * resolved once the width is known; written as -1 so that a job saved
 * before its width was chosen reads back as it was given). */
enum key_kind { KEY_SCHEDULE, KEY_OPTIMIZER, KEY_AVERAGE, KEY_INT, KEY_REAL,
		KEY_EPOCHS_AUTO };

struct recipe_key {
	const char *name;
	enum key_kind kind;
	size_t offset; /* of the int or double field in nn_recipe */
};

#define FIELD(f) offsetof(struct nn_recipe, f)
static const struct recipe_key keys[] = {
	{"optimizer", KEY_OPTIMIZER, FIELD(optimizer)},
	{"schedule", KEY_SCHEDULE, FIELD(schedule)},
	{"warmup", KEY_EPOCHS_AUTO, FIELD(warmup)},
	{"plateau", KEY_INT, FIELD(plateau)},
	{"lr_min", KEY_REAL, FIELD(lr_min_ratio)},
	{"half_life", KEY_INT, FIELD(half_life)},
	{"early_cycle", KEY_INT, FIELD(early_cycle)},
	{"average", KEY_AVERAGE, FIELD(average)},
	{"ema_decay", KEY_REAL, FIELD(ema_decay)},
	{"ssim", KEY_REAL, FIELD(loss_ssim)},
	{"grad", KEY_REAL, FIELD(loss_grad)},
	{"chroma", KEY_REAL, FIELD(loss_chroma)},
};
#undef FIELD
#define KEY_COUNT ((int)(sizeof(keys) / sizeof(keys[0])))

const char *nn_recipe_key(int i)
{
	return i >= 0 && i < KEY_COUNT ? keys[i].name : NULL;
}

static const struct recipe_key *find_key(const char *name)
{
	for (int i = 0; i < KEY_COUNT; i++) {
		/* '-' matches '_': command-line spelling */
		const char *a = keys[i].name, *b = name;
		while (*a && (*a == *b || (*a == '_' && *b == '-')))
			a++, b++;
		if (!*a && !*b)
			return &keys[i];
	}
	return NULL;
}

int nn_recipe_set(struct nn_recipe *cfg, const char *key, const char *value,
		  char *err, size_t errlen)
{
	const struct recipe_key *k = find_key(key);
	char *field = (char *)cfg + (k ? k->offset : 0), *end;
	int rc = 0;
	if (!k) {
		snprintf(err, errlen, "unknown recipe option \"%s\"", key);
		return ERR_INVALID;
	}
	switch (k->kind) {
	case KEY_SCHEDULE:
		rc = nn_schedule_parse(value, (enum nn_schedule *)field);
		break;
	case KEY_OPTIMIZER:
		rc = nn_optimizer_parse(value, (enum nn_optimizer *)field);
		break;
	case KEY_AVERAGE:
		rc = nn_average_parse(value, (enum nn_average *)field);
		break;
	case KEY_EPOCHS_AUTO:
		if (!strcmp(value, "auto") || !strcmp(value, "-1")) {
			*(int *)field = NN_WARMUP_AUTO;
			break;
		}
		/* fall through */
	case KEY_INT: {
		long v = strtol(value, &end, 10);
		rc = end == value || *end || v < 0 || v > 100000000 ? ERR_INVALID : 0;
		if (!rc)
			*(int *)field = (int)v;
		break;
	}
	case KEY_REAL: {
		double v = strtod(value, &end);
		rc = end == value || *end ? ERR_INVALID : 0;
		if (!rc)
			*(double *)field = v;
		break;
	}
	}
	if (rc) {
		static const char *const hints[] = {
			[KEY_SCHEDULE] = "constant, cosine, linear or exp",
			[KEY_OPTIMIZER] = "adam or muon",
			[KEY_AVERAGE] = "none or ema",
			[KEY_INT] = "a whole number of epochs",
			[KEY_REAL] = "a number",
			[KEY_EPOCHS_AUTO] = ("a whole number of epochs, or "
					     "auto (by width)"),
		};
		snprintf(err, errlen, "bad value \"%s\" for %s: use %s", value,
			 k->name, hints[k->kind]);
	}
	return rc;
}

void nn_recipe_get(const struct nn_recipe *cfg, const char *key, char *buf,
		   size_t len)
{
	const struct recipe_key *k = find_key(key);
	const char *field = (const char *)cfg + (k ? k->offset : 0);
	if (!k) {
		snprintf(buf, len, "?");
		return;
	}
	switch (k->kind) {
	case KEY_SCHEDULE:
		snprintf(buf, len, "%s", nn_schedule_name(cfg->schedule));
		break;
	case KEY_OPTIMIZER:
		snprintf(buf, len, "%s", nn_optimizer_name(cfg->optimizer));
		break;
	case KEY_AVERAGE:
		snprintf(buf, len, "%s", nn_average_name(cfg->average));
		break;
	case KEY_INT:
	case KEY_EPOCHS_AUTO:
		snprintf(buf, len, "%d", *(const int *)field);
		break;
	case KEY_REAL:
		snprintf(buf, len, "%.17g", *(const double *)field);
		break;
	}
}

void nn_recipe_describe(const struct nn_recipe *cfg, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < KEY_COUNT && used < len; i++) {
		char value[64];
		nn_recipe_get(cfg, keys[i].name, value, sizeof(value));
		if (keys[i].kind == KEY_REAL)
			snprintf(value, sizeof(value), "%g",
				 *(const double *)((const char *)cfg + keys[i].offset));
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s",
					 i ? " " : "", keys[i].name, value);
	}
}
