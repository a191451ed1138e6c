/*
 * fuzz_safetensors.c - libFuzzer target: st_decode, the reader of model
 * packages that clients send (job.submit init, model.render) and of the
 * daemon's own checkpoints (daemon/formats/safetensors.c).
 *
 * A file that is accepted must hold what it claims: every tensor's bytes
 * agree with its dtype and shape, and encoding it again and decoding that
 * gives the same tensors.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "formats/safetensors.h"

static size_t dtype_size(enum st_dtype t)
{
	switch (t) {
	case ST_F32:
		return 4;
	case ST_F64:
		return 8;
	case ST_I64:
		return 8;
	case ST_U8:
		return 1;
	}
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file *f = NULL, *g = NULL;
	char err[512];
	int rc = st_decode(data, size, &f, err, sizeof(err));
	if (rc) {
		if (f || (rc == ERR_FORMAT && !err[0]))
			abort();
		return 0;
	}
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		size_t n = dtype_size(t->dtype);
		if (t->ndim < 0 || t->ndim > ST_MAX_DIMS)
			abort();
		for (int d = 0; d < t->ndim; d++)
			n *= (size_t)t->shape[d];
		if (n != t->nbytes)
			abort();
	}
	uint8_t *out = NULL;
	size_t out_size = 0;
	if (st_encode(f, &out, &out_size) == 0) {
		if (st_decode(out, out_size, &g, err, sizeof(err)) ||
		    g->ntensors != f->ntensors)
			abort();
		for (int i = 0; i < f->ntensors; i++) {
			const struct st_tensor *a = &f->tensors[i];
			const struct st_tensor *b = st_find(g, a->name);
			if (!b || b->nbytes != a->nbytes ||
			    (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
				abort();
		}
	}
	free(out);
	st_destroy(g);
	st_destroy(f);
	return 0;
}
