/*
 * recipe.c - the table of training options (proto/params.h) in the
 * engine's config: where each row's value lives in struct nn_config (the
 * table's field column, as offsets), how a front end sets it from text or
 * a number (checked against the row's bounds), how it reads back, and the
 * engine's own check of a whole config, all from the same rows. The
 * recipe's rows are also read and written by name in checkpoints, model
 * packages and request.json (nn_recipe_set).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/model.h"

/* How a row's value is stored. */
enum store { S_JOB, S_INT, S_REAL, S_U64, S_WORD, S_LIST };

struct where {
	enum store store;
	int in_recipe; /* offset is into struct nn_recipe, not nn_config */
	size_t offset;
};

#define CFG(s, f)                                                              \
	{                                                                      \
		s, 0, offsetof(struct nn_config, f)                            \
	}
#define REC(s, f)                                                              \
	{                                                                      \
		s, 1, offsetof(struct nn_recipe, f)                            \
	}
#define CFG_INT(f) CFG(S_INT, f)
#define CFG_REAL(f) CFG(S_REAL, f)
#define CFG_U64(f) CFG(S_U64, f)
#define CFG_WORD(f) CFG(S_WORD, f)
#define CFG_LIST(f) CFG(S_LIST, f)
#define REC_INT(f) REC(S_INT, f)
#define REC_REAL(f) REC(S_REAL, f)
#define REC_WORD(f) REC(S_WORD, f)
#define JOB(f)                                                                 \
	{                                                                      \
		S_JOB, 0, 0                                                    \
	}
static const struct where where[PARAM_COUNT] = {
#define X(id, key, option, flags, min, max, multiple, choices, example,        \
	  fallback, help, field)                                               \
	[PARAM_##id] = field,
	PARAM_LIST(X)
#undef X
};

/* The recipe's rows in the order checkpoints, packages and logs have
 * always listed them (a task's settings compare as text). */
static const enum param_id recipe_order[] = {
	PARAM_OPTIMIZER, PARAM_SCHEDULE,  PARAM_WARMUP,      PARAM_PLATEAU,
	PARAM_LR_MIN,    PARAM_HALF_LIFE, PARAM_EARLY_CYCLE, PARAM_AVERAGE,
	PARAM_EMA_DECAY, PARAM_SSIM,      PARAM_GRAD,        PARAM_CHROMA,
	PARAM_DECAY,
};
#define RECIPE_COUNT ((int)(sizeof(recipe_order) / sizeof(recipe_order[0])))

/* The value that stands for "auto" (by width or device) in a row that
 * takes it. */
static double auto_value(enum param_id id)
{
	return id == PARAM_WARMUP ? NN_WARMUP_AUTO
	       : id == PARAM_LR   ? NN_LR_AUTO
				  : 0; /* width: the device's */
}

static void *field(struct nn_config *cfg, struct nn_recipe *r, enum param_id id)
{
	const struct where *w = &where[id];
	if (w->in_recipe)
		return (char *)(r ? r : &cfg->recipe) + w->offset;
	return cfg ? (char *)cfg + w->offset : NULL;
}

int nn_option_in_config(enum param_id id) { return where[id].store != S_JOB; }

/* Stores v (already checked) into the row's field. */
static void store_number(void *f, enum param_id id, double v)
{
	switch (where[id].store) {
	case S_INT:
		*(int *)f = (int)v;
		break;
	case S_REAL:
		*(double *)f = v;
		break;
	case S_U64:
		*(uint64_t *)f = (uint64_t)v;
		break;
	case S_WORD:
		*(unsigned *)f = (unsigned)v;
		break; /* an enum */
	default:
		break;
	}
}

static double load_number(const void *f, enum param_id id)
{
	switch (where[id].store) {
	case S_INT:
		return *(const int *)f;
	case S_REAL:
		return *(const double *)f;
	case S_U64:
		return (double)*(const uint64_t *)f;
	case S_WORD:
		return *(const unsigned *)f;
	default:
		return 0;
	}
}

/* Sets the row from text into the config or the recipe (one of them
 * NULL for a recipe row). */
static int set_text(struct nn_config *cfg, struct nn_recipe *r,
		    enum param_id id, const char *text, const char *what,
		    char *err, size_t errlen)
{
	double v = 0;
	int rc = param_parse(id, text, what, &v, err, errlen);
	void *f = field(cfg, r, id);
	if (rc < 0 || !f)
		return rc < 0 ? rc : 0;
	if (rc == 1) /* auto */
		v = auto_value(id);
	else if (where[id].store == S_LIST)
		return nn_config_parse_dilations(cfg, text) ? ERR_INVALID : 0;
	else if (where[id].store == S_WORD)
		v = param_choice(id, text);
	store_number(f, id, v);
	return 0;
}

int nn_option_set(struct nn_config *cfg, enum param_id id, const char *text,
		  const char *what, char *err, size_t errlen)
{
	return set_text(cfg, NULL, id, text, what, err, errlen);
}

int nn_option_set_number(struct nn_config *cfg, enum param_id id, double v,
			 const char *what, char *err, size_t errlen)
{
	int rc = param_check(id, v, what, err, errlen);
	void *f = field(cfg, NULL, id);
	if (rc == 0 && f)
		store_number(f, id, v);
	return rc;
}

double nn_option_number(const struct nn_config *cfg, enum param_id id)
{
	const void *f = field((struct nn_config *)cfg, NULL, id);
	return f ? load_number(f, id) : 0;
}

void nn_option_text(const struct nn_config *cfg, enum param_id id, char *buf,
		    size_t len)
{
	const void *f = field((struct nn_config *)cfg, NULL, id);
	if (!f)
		snprintf(buf, len, "%s", "");
	else if (where[id].store == S_LIST)
		nn_config_dilations_string(cfg, buf, len);
	else if (where[id].store == S_WORD)
		param_choice_name(id, (int)load_number(f, id), buf, len);
	else
		snprintf(buf, len, "%.17g", load_number(f, id));
}

void nn_config_from_table(struct nn_config *cfg)
{
	char err[256];
	for (int i = 0; i < PARAM_COUNT; i++) {
		if (where[i].store == S_JOB)
			continue;
		if (param_table[i].flags & PARAM_AUTO)
			store_number(field(cfg, NULL, i), i, auto_value(i));
		else
			set_text(cfg, NULL, i, param_table[i].fallback,
				 param_table[i].key, err, sizeof(err));
	}
}

int nn_config_check(const struct nn_config *cfg, char *err, size_t errlen)
{
	if (cfg->nblocks < 1 || cfg->nblocks > NN_MAX_BLOCKS) {
		snprintf(err, errlen, "%d blocks: use 1 to %d dilations",
			 cfg->nblocks, NN_MAX_BLOCKS);
		return ERR_INVALID;
	}
	for (int k = 0; k < cfg->nblocks; k++) {
		if (cfg->dilations[k] < 1 ||
		    cfg->dilations[k] > LIMIT_DILATION) {
			snprintf(err, errlen,
				 "dilation %d is out of range: use 1 to %d",
				 cfg->dilations[k], LIMIT_DILATION);
			return ERR_INVALID;
		}
	}
	for (int i = 0; i < PARAM_COUNT; i++) {
		const struct where *w = &where[i];
		double v = nn_option_number(cfg, i);
		if (w->store == S_JOB || w->store == S_LIST)
			continue;
		if (w->store == S_WORD) {
			char name[32];
			param_choice_name(i, (int)v, name, sizeof(name));
			if (name[0])
				continue;
			snprintf(err, errlen, "%s %g is unknown",
				 param_table[i].key, v);
			return ERR_INVALID;
		}
		/* auto, where taken (the width is known by now); 0 epochs:
		 * a render, no training */
		if (((param_table[i].flags & PARAM_AUTO) && i != PARAM_WIDTH &&
		     v == auto_value(i)) ||
		    (i == PARAM_EPOCHS && v == 0))
			continue;
		if (param_check(i, v, param_table[i].key, err, errlen))
			return ERR_INVALID;
	}
	if (!(cfg->w0 > 0 && cfg->w0 < 1000)) {
		snprintf(err, errlen, "w0 %g is out of range", cfg->w0);
		return ERR_INVALID;
	}
	return 0;
}

/* ------------------------------------------------- the recipe by name */

const char *nn_recipe_key(int i)
{
	return i >= 0 && i < RECIPE_COUNT ? param_table[recipe_order[i]].key
					  : NULL;
}

/* The recipe row named key (- for _), or -1. */
static int recipe_row(const char *key)
{
	int id = param_find(key);
	return id >= 0 && where[id].in_recipe ? id : -1;
}

int nn_recipe_set(struct nn_recipe *r, const char *key, const char *value,
		  char *err, size_t errlen)
{
	int id = recipe_row(key);
	if (id < 0) {
		snprintf(err, errlen, "unknown recipe option \"%s\"", key);
		return ERR_INVALID;
	}
	/* -1: the warmup by width, as a saved recipe writes it */
	if (id == PARAM_WARMUP && !strcmp(value, "-1"))
		value = "auto";
	return set_text(NULL, r, id, value, key, err, errlen);
}

int nn_recipe_set_number(struct nn_recipe *r, int i, double v, char *err,
			 size_t errlen)
{
	enum param_id id = recipe_order[i];
	if (where[id].store == S_WORD) {
		snprintf(err, errlen, "%s takes one of %s, not %g",
			 param_table[id].key, param_table[id].choices, v);
		return ERR_INVALID;
	}
	if (id == PARAM_WARMUP && v == NN_WARMUP_AUTO) /* as saved */
		r->warmup = NN_WARMUP_AUTO;
	else if (param_check(id, v, param_table[id].key, err, errlen))
		return ERR_INVALID;
	else
		store_number(field(NULL, r, id), id, v);
	return 0;
}

void nn_recipe_get(const struct nn_recipe *r, const char *key, char *buf,
		   size_t len)
{
	int id = recipe_row(key);
	if (id < 0) {
		snprintf(buf, len, "?");
		return;
	}
	const void *f = field(NULL, (struct nn_recipe *)r, id);
	if (where[id].store == S_WORD)
		param_choice_name(id, (int)load_number(f, id), buf, len);
	else
		snprintf(buf, len, "%.17g", load_number(f, id));
}

double nn_recipe_number(const struct nn_recipe *r, int i)
{
	return load_number(field(NULL, (struct nn_recipe *)r, recipe_order[i]),
			   recipe_order[i]);
}

int nn_recipe_is_word(int i) { return where[recipe_order[i]].store == S_WORD; }

void nn_recipe_describe(const struct nn_recipe *r, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < RECIPE_COUNT && used < len; i++) {
		char value[64];
		if (nn_recipe_is_word(i))
			nn_recipe_get(r, nn_recipe_key(i), value,
				      sizeof(value));
		else
			snprintf(value, sizeof(value), "%g",
				 nn_recipe_number(r, i));
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s",
					 i ? " " : "", nn_recipe_key(i), value);
	}
}

/* ------------------------------------------------------ dilations */

void nn_config_dilations_string(const struct nn_config *cfg, char *buf,
				size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int k = 0; k < cfg->nblocks && used < len; k++)
		used += snprintf(buf + used, len - used, "%s%d", k ? "," : "",
				 cfg->dilations[k]);
}

int nn_config_parse_dilations(struct nn_config *cfg, const char *text)
{
	int n = 0;
	const char *s = text;
	while (*s) {
		char *end;
		long d = strtol(s, &end, 10);
		if (end == s || d < 1 || d > 64 || n == NN_MAX_BLOCKS)
			return ERR_INVALID;
		cfg->dilations[n++] = (int)d;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return ERR_INVALID;
	}
	if (n == 0)
		return ERR_INVALID;
	cfg->nblocks = n;
	return 0;
}
