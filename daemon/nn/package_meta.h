/*
 * package_meta.h - what checkpoints (checkpoint.c) and model packages
 * (package.c) share: their format names and versions, the metadata's
 * typed readers and writer, and the recipe's keys. Internal to daemon/nn.
 */
#ifndef VKINR_NN_PACKAGE_META_H
#define VKINR_NN_PACKAGE_META_H

#include <stddef.h>
#include <stdint.h>

#include "formats/safetensors.h"
#include "nn/model.h"

#define CHECKPOINT_FORMAT "vkinr-checkpoint"
#define PACKAGE_FORMAT "vkinr-convsiren"
/* Version 2 added the recipe (optimizer, averaging, plateau...) and the
 * optimizer's and the average's state; version 1 files still load. */
#define FORMAT_VERSION "2"
#define FORMAT_VERSION_OLDEST 1

/* FNV-1a over data, from h (a checkpoint's checksum of its tensors). */
uint64_t nn_meta_fnv1a(uint64_t h, const void *data, size_t n);
/* Sets the metadata key to the formatted value. */
int nn_meta_set_fmt(struct st_file *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The key's integer in [lo, hi] or its finite number; ERR_FORMAT when it
 * is missing or not one. */
int nn_meta_int(const struct st_file *f, const char *key, long long lo,
		long long hi, long long *out);
int nn_meta_double(const struct st_file *f, const char *key, double *out);
/* Files newer than this program fail with the version they need. */
int nn_meta_check_version(const struct st_file *f, const char *what, char *err,
			  size_t errlen);
/* The recipe's keys (see nn_recipe_key), in checkpoints and packages. */
int nn_meta_put_recipe(struct st_file *f, const struct nn_config *cfg);

#endif
