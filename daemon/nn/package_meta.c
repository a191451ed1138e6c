/*
 * package_meta.c - the metadata helpers checkpoints and model packages
 * share (see package_meta.h).
 */
#include "nn/package_meta.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/errors.h"

uint64_t nn_meta_fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int nn_meta_set_fmt(struct st_file *f, const char *key, const char *fmt, ...)
{
	char value[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	return st_set_meta(f, key, value);
}

int nn_meta_int(const struct st_file *f, const char *key, long long lo,
		long long hi, long long *out)
{
	const char *v = st_get_meta(f, key);
	char *end;
	if (!v)
		return ERR_FORMAT;
	long long x = strtoll(v, &end, 10);
	if (end == v || *end || x < lo || x > hi)
		return ERR_FORMAT;
	*out = x;
	return 0;
}

int nn_meta_double(const struct st_file *f, const char *key, double *out)
{
	const char *v = st_get_meta(f, key);
	char *end;
	if (!v)
		return ERR_FORMAT;
	double x = strtod(v, &end);
	if (end == v || *end || !isfinite(x))
		return ERR_FORMAT;
	*out = x;
	return 0;
}

int nn_meta_check_version(const struct st_file *f, const char *what, char *err,
			  size_t errlen)
{
	long long version;
	if (nn_meta_int(f, "version", 0, 1 << 30, &version) ||
	    version < FORMAT_VERSION_OLDEST || version > atoi(FORMAT_VERSION)) {
		const char *v = st_get_meta(f, "version");
		snprintf(err, errlen,
			 "the %s's format version %s is not one this "
			 "vkinrd reads (%d to %s): use a newer vkinrd",
			 what, v ? v : "(none)", FORMAT_VERSION_OLDEST,
			 FORMAT_VERSION);
		return ERR_FORMAT;
	}
	return 0;
}

/* The recipe's keys (see nn_recipe_key), in checkpoints and packages. */
int nn_meta_put_recipe(struct st_file *f, const struct nn_config *cfg)
{
	int rc = 0;
	for (int i = 0; rc == 0 && nn_recipe_key(i); i++) {
		char value[64];
		nn_recipe_get(&cfg->recipe, nn_recipe_key(i), value,
			      sizeof(value));
		rc = st_set_meta(f, nn_recipe_key(i), value);
	}
	return rc;
}
