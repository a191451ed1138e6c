/*
 * safetensors.h - reading and writing the .safetensors container.
 *
 * The format: an 8-byte little-endian header length, a JSON header mapping
 * each tensor name to {"dtype","shape","data_offsets"} (plus an optional
 * "__metadata__" object of string to string), then the raw little-endian
 * data. It carries the model package that vkinrd exports and the PyTorch
 * peer reads, and also vkinrd's own checkpoints. This module knows nothing
 * of ConvSIREN: it holds named tensors and string metadata.
 *
 * Reading validates everything before trusting it: the header length, that
 * the JSON parses, every dtype, shape and offset, that tensors lie inside
 * the data and do not overlap, and that shapes agree with byte sizes.
 */
#ifndef VKINR_SAFETENSORS_H
#define VKINR_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (16u << 20) /* a larger header is refused */

enum st_dtype { ST_F32, ST_F64, ST_I64, ST_U8 };

struct st_tensor {
	char *name;
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	void *data; /* owned; little-endian host layout */
	size_t nbytes;
};

struct st_meta {
	char *key, *value;
};

struct st_file {
	struct st_tensor *tensors;
	int ntensors;
	struct st_meta *meta;
	int nmeta;
};

struct st_file *st_create(void);
void st_destroy(struct st_file *f);

/* Adds a tensor, copying name, shape and data. Returns 0 or ERR_NOMEM. */
int st_add(struct st_file *f, const char *name, enum st_dtype dtype, int ndim,
	   const int64_t *shape, const void *data);
/* Sets (or replaces) a metadata entry. */
int st_set_meta(struct st_file *f, const char *key, const char *value);

const struct st_tensor *st_find(const struct st_file *f, const char *name);
const char *st_get_meta(const struct st_file *f, const char *key);

/* Serialises into a malloc'ed buffer (header padded to 8 bytes). */
int st_encode(const struct st_file *f, uint8_t **data, size_t *size);
/* Parses a buffer; on failure returns ERR_FORMAT and a sentence in err. */
int st_decode(const void *data, size_t size, struct st_file **out, char *err,
	      size_t errlen);

/* Encodes and writes atomically: temp file, fsync, rename, fsync folder. */
int st_save_file(const struct st_file *f, const char *path);
/* Reads a regular file only (anything else: ERR_IO, never waited on). */
int st_load_file(const char *path, struct st_file **out, char *err,
		 size_t errlen);

#endif
