/*
 * safetensors.c - the .safetensors container: named tensors and string
 * metadata in one file (see safetensors.h for the format).
 *
 * Encoding builds the JSON header with cJSON: "__metadata__" first when
 * there is any, then the tensors in the order they were added, their data
 * laid end to end without gaps (the layout the reference implementation
 * and the PyTorch peer expect). The header is padded with spaces to a
 * multiple of 8 bytes, so the data starts 8-byte aligned.
 *
 * Decoding trusts nothing: the header length is checked against the file
 * and ST_MAX_HEADER before the JSON is parsed; the JSON must be an object
 * of plain printable text; each entry must have a known dtype, a shape of
 * non-negative integers whose product times the item size is the byte
 * length, and offsets that lie inside the data. Duplicate names and
 * overlapping tensors are found by sorting, so a hostile header with many
 * entries costs n log n, not n^2. A failure leaves nothing allocated and a
 * sentence in err. Tensor data is copied out of the buffer: a decoded file
 * does not point into the caller's memory.
 *
 * Tensor bytes are stored as they are in memory, which is the file's
 * little-endian layout only on a little-endian host: the build refuses
 * others rather than silently writing the wrong byte order.
 */
#include "formats/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "util/fileio.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "safetensors.c stores tensors in host order: a little-endian host is needed"
#endif

/* A file larger than this is not read (a ConvSIREN checkpoint at the widest
 * setting, optimizer state included, is a few hundred MiB). */
#define ST_MAX_FILE ((size_t)2 << 30)

#define META_KEY "__metadata__"

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	[ST_F32] = { "F32", 4 },
	[ST_F64] = { "F64", 8 },
	[ST_I64] = { "I64", 8 },
	[ST_U8] = { "U8", 1 },
};
#define NDTYPES ((int)(sizeof(dtypes) / sizeof(dtypes[0])))

/* ==== The in-memory file ============================================== */

struct st_file *st_create(void) { return calloc(1, sizeof(struct st_file)); }

void st_destroy(struct st_file *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->ntensors; i++) {
		free(f->tensors[i].name);
		free(f->tensors[i].data);
	}
	for (int i = 0; i < f->nmeta; i++) {
		free(f->meta[i].key);
		free(f->meta[i].value);
	}
	free(f->tensors);
	free(f->meta);
	free(f);
}

/* Byte size of a tensor, or 0 with *ok = 0 when it does not fit a size_t. */
static size_t tensor_bytes(enum st_dtype dtype, int ndim, const int64_t *shape,
			   int *ok)
{
	size_t n = dtypes[dtype].size;

	*ok = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0) {
			*ok = 0;
			return 0;
		}
		if (shape[i] == 0)
			n = 0;
		else if (n > SIZE_MAX / (uint64_t)shape[i])
			*ok = 0;
		else
			n *= (size_t)shape[i];
	}
	if (!*ok)
		return 0;
	return n;
}

/* Appends a tensor without checking the name against the others. */
static int append_tensor(struct st_file *f, const char *name,
			 enum st_dtype dtype, int ndim, const int64_t *shape,
			 const void *data, size_t nbytes)
{
	struct st_tensor *t;

	if (f->ntensors % 16 == 0) {
		size_t n = (size_t)f->ntensors + 16;
		struct st_tensor *nt;

		if (f->ntensors > INT32_MAX - 16)
			return ERR_TOO_LARGE;
		nt = realloc(f->tensors, n * sizeof(*nt));
		if (!nt)
			return ERR_NOMEM;
		f->tensors = nt;
	}
	t = &f->tensors[f->ntensors];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	/* +1: a zero-sized tensor still gets a valid pointer. */
	t->data = malloc(nbytes + 1);
	if (!t->name || !t->data) {
		free(t->name);
		free(t->data);
		return ERR_NOMEM;
	}
	if (nbytes)
		memcpy(t->data, data, nbytes);
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	t->nbytes = nbytes;
	f->ntensors++;
	return 0;
}

static int append_meta(struct st_file *f, const char *key, const char *value)
{
	struct st_meta *m;

	if (f->nmeta % 16 == 0) {
		size_t n = (size_t)f->nmeta + 16;
		struct st_meta *nm;

		if (f->nmeta > INT32_MAX - 16)
			return ERR_TOO_LARGE;
		nm = realloc(f->meta, n * sizeof(*nm));
		if (!nm)
			return ERR_NOMEM;
		f->meta = nm;
	}
	m = &f->meta[f->nmeta];
	m->key = strdup(key);
	m->value = strdup(value);
	if (!m->key || !m->value) {
		free(m->key);
		free(m->value);
		return ERR_NOMEM;
	}
	f->nmeta++;
	return 0;
}

int st_add(struct st_file *f, const char *name, enum st_dtype dtype, int ndim,
	   const int64_t *shape, const void *data)
{
	size_t nbytes;
	int ok;

	if (!f || !name || (int)dtype < 0 || (int)dtype >= NDTYPES ||
	    ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape))
		return ERR_INVALID;
	if (!strcmp(name, META_KEY) || st_find(f, name))
		return ERR_INVALID;
	nbytes = tensor_bytes(dtype, ndim, shape, &ok);
	if (!ok || (nbytes > 0 && !data))
		return ERR_INVALID;
	return append_tensor(f, name, dtype, ndim, shape, data, nbytes);
}

int st_set_meta(struct st_file *f, const char *key, const char *value)
{
	if (!f || !key || !value)
		return ERR_INVALID;
	for (int i = 0; i < f->nmeta; i++) {
		if (!strcmp(f->meta[i].key, key)) {
			char *v = strdup(value);

			if (!v)
				return ERR_NOMEM;
			free(f->meta[i].value);
			f->meta[i].value = v;
			return 0;
		}
	}
	return append_meta(f, key, value);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->ntensors; i++)
		if (!strcmp(f->tensors[i].name, name))
			return &f->tensors[i];
	return NULL;
}

const char *st_get_meta(const struct st_file *f, const char *key)
{
	for (int i = 0; i < f->nmeta; i++)
		if (!strcmp(f->meta[i].key, key))
			return f->meta[i].value;
	return NULL;
}

/* ==== Encoding ========================================================= */

/* cJSON leaves the item to the caller when adding fails. */
static int add_item(cJSON *parent, const char *key, cJSON *item)
{
	int ok;

	if (!item)
		return 0;
	ok = key ? cJSON_AddItemToObject(parent, key, item)
		 : cJSON_AddItemToArray(parent, item);
	if (!ok)
		cJSON_Delete(item);
	return ok;
}

static cJSON *tensor_entry(const struct st_tensor *t, size_t begin)
{
	cJSON *e = cJSON_CreateObject();
	cJSON *shape = cJSON_CreateArray();
	cJSON *offsets = cJSON_CreateArray();
	int ok = e && shape && offsets;

	if (!ok) {
		cJSON_Delete(e);
		cJSON_Delete(shape);
		cJSON_Delete(offsets);
		return NULL;
	}
	for (int i = 0; i < t->ndim && ok; i++)
		ok = add_item(shape, NULL,
			      cJSON_CreateNumber((double)t->shape[i]));
	if (ok)
		ok = add_item(offsets, NULL, cJSON_CreateNumber((double)begin));
	if (ok)
		ok = add_item(offsets, NULL,
			      cJSON_CreateNumber((double)(begin + t->nbytes)));
	if (!ok) {
		cJSON_Delete(shape);
		cJSON_Delete(offsets);
		cJSON_Delete(e);
		return NULL;
	}
	ok = add_item(e, "dtype", cJSON_CreateString(dtypes[t->dtype].name));
	if (!add_item(e, "shape", shape)) {
		cJSON_Delete(offsets);
		ok = 0;
	} else if (!add_item(e, "data_offsets", offsets)) {
		ok = 0;
	}
	if (!ok) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

static char *header_json(const struct st_file *f)
{
	cJSON *root = cJSON_CreateObject();
	size_t off = 0;
	char *text;

	if (!root)
		return NULL;
	if (f->nmeta > 0) {
		cJSON *meta = cJSON_CreateObject();

		if (!add_item(root, META_KEY, meta))
			goto fail;
		for (int i = 0; i < f->nmeta; i++)
			if (!add_item(meta, f->meta[i].key,
				      cJSON_CreateString(f->meta[i].value)))
				goto fail;
	}
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];

		if (!add_item(root, t->name, tensor_entry(t, off)))
			goto fail;
		off += t->nbytes;
	}
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;

fail:
	cJSON_Delete(root);
	return NULL;
}

int st_encode(const struct st_file *f, uint8_t **data, size_t *size)
{
	size_t hlen, plen, total = 0;
	uint8_t *buf, *p;
	char *json;

	*data = NULL;
	*size = 0;
	for (int i = 0; i < f->ntensors; i++) {
		if (total > SIZE_MAX / 2 - f->tensors[i].nbytes)
			return ERR_TOO_LARGE;
		total += f->tensors[i].nbytes;
	}
	json = header_json(f);
	if (!json)
		return ERR_NOMEM;
	hlen = strlen(json);
	plen = (hlen + 7) / 8 * 8;
	if (plen > ST_MAX_HEADER) {
		free(json);
		return ERR_TOO_LARGE;
	}
	buf = malloc(8 + plen + total);
	if (!buf) {
		free(json);
		return ERR_NOMEM;
	}
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)plen >> (8 * i));
	memcpy(buf + 8, json, hlen);
	memset(buf + 8 + hlen, ' ', plen - hlen);
	free(json);
	p = buf + 8 + plen;
	for (int i = 0; i < f->ntensors; i++) {
		if (f->tensors[i].nbytes)
			memcpy(p, f->tensors[i].data, f->tensors[i].nbytes);
		p += f->tensors[i].nbytes;
	}
	*data = buf;
	*size = 8 + plen + total;
	return 0;
}

/* ==== Decoding ========================================================= */

struct entry {
	const char *name;
	uint64_t begin, end;
};

static int format_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int format_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ERR_FORMAT;
}

/* The largest integer up to which a double (a cJSON number) is exact. */
#define EXACT_MAX ((uint64_t)1 << 53)

/* A JSON number that is a whole number in [0, max]. */
static int whole_number(const cJSON *item, uint64_t max, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(item))
		return 0;
	d = item->valuedouble;
	if (!(d >= 0) || d > (double)max || d != floor(d))
		return 0;
	*out = (uint64_t)d;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static int parse_meta(struct st_file *f, const cJSON *meta, char *err,
		      size_t errlen)
{
	const cJSON *item;

	if (!cJSON_IsObject(meta))
		return format_error(err, errlen,
				    "\"__metadata__\" is not a JSON object");
	cJSON_ArrayForEach(item, meta)
	{
		int rc;

		if (!cJSON_IsString(item))
			return format_error(err, errlen,
					    "metadata \"%s\" is not a string",
					    item->string);
		rc = append_meta(f, item->string, item->valuestring);
		if (rc)
			return rc;
	}
	return 0;
}

/* Checks one tensor entry and copies its data out of the buffer. */
static int parse_tensor(struct st_file *f, const cJSON *e, const uint8_t *body,
			uint64_t body_size, struct entry *out, char *err,
			size_t errlen)
{
	const char *name = e->string;
	const cJSON *dtype, *shape, *offs, *item;
	int64_t dims[ST_MAX_DIMS];
	uint64_t begin, end, bytes;
	int ndim = 0, dt = -1;

	if (!cJSON_IsObject(e))
		return format_error(err, errlen,
				    "tensor \"%s\" is not a JSON object", name);
	dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
	offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	if (cJSON_IsString(dtype))
		for (int i = 0; i < NDTYPES; i++)
			if (!strcmp(dtype->valuestring, dtypes[i].name))
				dt = i;
	if (dt < 0)
		return format_error(err, errlen,
				    "tensor \"%s\" has no dtype or one other "
				    "than F32, F64, I64, U8",
				    name);
	if (!cJSON_IsArray(shape))
		return format_error(err, errlen,
				    "tensor \"%s\" has no shape array", name);
	if (cJSON_GetArraySize(shape) > ST_MAX_DIMS)
		return format_error(err, errlen,
				    "tensor \"%s\" has more than %d dimensions",
				    name, ST_MAX_DIMS);
	cJSON_ArrayForEach(item, shape)
	{
		uint64_t d;

		if (!whole_number(item, EXACT_MAX, &d))
			return format_error(
			    err, errlen,
			    "tensor \"%s\": the shape holds something other "
			    "than a non-negative integer",
			    name);
		dims[ndim++] = (int64_t)d;
	}
	if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
	    !whole_number(cJSON_GetArrayItem(offs, 0), EXACT_MAX, &begin) ||
	    !whole_number(cJSON_GetArrayItem(offs, 1), EXACT_MAX, &end) ||
	    end < begin)
		return format_error(
		    err, errlen,
		    "tensor \"%s\": data_offsets must be [begin, end], two "
		    "integers with 0 <= begin <= end",
		    name);
	if (end > body_size)
		return format_error(
		    err, errlen,
		    "tensor \"%s\" ends at byte %llu of the data, which holds "
		    "only %llu bytes: the file is truncated or corrupt",
		    name, (unsigned long long)end,
		    (unsigned long long)body_size);
	bytes = dtypes[dt].size;
	for (int i = 0; i < ndim; i++) {
		/* Stop multiplying once past the data: it can't match then. */
		if (dims[i] == 0)
			bytes = 0;
		else if (bytes > body_size)
			continue;
		else if (bytes > UINT64_MAX / (uint64_t)dims[i])
			bytes = UINT64_MAX;
		else
			bytes *= (uint64_t)dims[i];
	}
	if (bytes > body_size)
		return format_error(err, errlen,
				    "tensor \"%s\": its shape and dtype make "
				    "more bytes than the whole data holds",
				    name);
	if (bytes != end - begin)
		return format_error(err, errlen,
				    "tensor \"%s\": its shape and dtype make "
				    "%llu bytes but its data_offsets span %llu",
				    name, (unsigned long long)bytes,
				    (unsigned long long)(end - begin));
	out->name = name;
	out->begin = begin;
	out->end = end;
	return append_tensor(f, name, (enum st_dtype)dt, ndim, dims,
			     body + begin, (size_t)bytes);
}

/* Names unique, tensors disjoint: both by sorting a copy of the entries. */
static int check_entries(struct entry *ents, int n, char *err, size_t errlen)
{
	if (n < 2)
		return 0;
	qsort(ents, (size_t)n, sizeof(*ents), by_name);
	for (int i = 1; i < n; i++)
		if (!strcmp(ents[i - 1].name, ents[i].name))
			return format_error(err, errlen,
					    "the name \"%s\" appears twice",
					    ents[i].name);
	qsort(ents, (size_t)n, sizeof(*ents), by_offset);
	for (int i = 1; i < n; i++)
		if (ents[i].begin < ents[i - 1].end)
			return format_error(
			    err, errlen,
			    "tensors \"%s\" and \"%s\" overlap in the data",
			    ents[i - 1].name, ents[i].name);
	return 0;
}

static int parse_header(struct st_file *f, const cJSON *root,
			const uint8_t *body, uint64_t body_size, char *err,
			size_t errlen)
{
	struct entry *ents;
	const cJSON *e;
	int n = 0, nmeta = 0, rc = 0;

	ents = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof(*ents));
	if (!ents)
		return ERR_NOMEM;
	cJSON_ArrayForEach(e, root)
	{
		if (!strcmp(e->string, META_KEY)) {
			rc =
			    nmeta++
				? format_error(err, errlen,
					       "\"__metadata__\" appears twice")
				: parse_meta(f, e, err, errlen);
		} else {
			rc = parse_tensor(f, e, body, body_size, &ents[n], err,
					  errlen);
			n++;
		}
		if (rc)
			break;
	}
	if (!rc)
		rc = check_entries(ents, n, err, errlen);
	if (!rc && f->nmeta > 1) {
		struct entry *keys = calloc((size_t)f->nmeta, sizeof(*keys));

		if (!keys) {
			rc = ERR_NOMEM;
		} else {
			for (int i = 0; i < f->nmeta; i++)
				keys[i].name = f->meta[i].key;
			qsort(keys, (size_t)f->nmeta, sizeof(*keys), by_name);
			for (int i = 1; i < f->nmeta && !rc; i++)
				if (!strcmp(keys[i - 1].name, keys[i].name))
					rc =
					    format_error(err, errlen,
							 "the metadata key "
							 "\"%s\" appears twice",
							 keys[i].name);
			free(keys);
		}
	}
	free(ents);
	return rc;
}

int st_decode(const void *data, size_t size, struct st_file **out, char *err,
	      size_t errlen)
{
	const uint8_t *p = data;
	const char *text, *end = NULL;
	struct st_file *f;
	uint64_t hlen = 0;
	cJSON *root;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (size < 8)
		return format_error(err, errlen,
				    "the file is too short to be a safetensors "
				    "file (%zu bytes)",
				    size);
	for (int i = 0; i < 8; i++)
		hlen |= (uint64_t)p[i] << (8 * i);
	if (hlen > ST_MAX_HEADER)
		return format_error(err, errlen,
				    "the header length (%llu bytes) is over "
				    "the limit of %u bytes",
				    (unsigned long long)hlen, ST_MAX_HEADER);
	if (hlen > size - 8)
		return format_error(err, errlen,
				    "the header length (%llu bytes) runs past "
				    "the end of the file (%zu bytes): it is "
				    "truncated or not a safetensors file",
				    (unsigned long long)hlen, size);
	text = (const char *)p + 8;
	/* Plain JSON text only: no NUL or other control bytes, which cJSON
	 * would skip as white space and other readers refuse. */
	for (uint64_t i = 0; i < hlen; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			return format_error(err, errlen,
					    "the header holds a control byte "
					    "(0x%02x at offset %llu)",
					    c, (unsigned long long)(8 + i));
	}
	root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
	if (!root)
		return format_error(
		    err, errlen,
		    "the header is not valid JSON (near byte %lld)",
		    end ? (long long)(end - text) + 8 : -1LL);
	/* cJSON stops after the value; the padding must be white space. */
	for (; end < text + hlen; end++) {
		if (*end != ' ' && *end != '\t' && *end != '\n' &&
		    *end != '\r') {
			cJSON_Delete(root);
			return format_error(
			    err, errlen,
			    "the header has text after its JSON object");
		}
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return format_error(err, errlen,
				    "the header is JSON but not an object");
	}
	f = st_create();
	if (!f) {
		cJSON_Delete(root);
		return ERR_NOMEM;
	}
	rc = parse_header(f, root, p + 8 + hlen, size - 8 - hlen, err, errlen);
	cJSON_Delete(root);
	if (rc) {
		st_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* ==== Files ============================================================ */

int st_save_file(const struct st_file *f, const char *path)
{
	uint8_t *data;
	size_t size;
	int rc;

	rc = st_encode(f, &data, &size);
	if (rc)
		return rc;
	rc = fileio_write_atomic(path, data, size, 0600);
	free(data);
	return rc;
}

int st_load_file(const char *path, struct st_file **out, char *err,
		 size_t errlen)
{
	uint8_t *data;
	size_t size;
	int rc;

	*out = NULL;
	rc = fileio_read_regular(path, &data, &size, ST_MAX_FILE);
	if (rc == ERR_TOO_LARGE) {
		if (err && errlen)
			snprintf(err, errlen,
				 "%s is larger than the limit of %zu bytes for "
				 "a model file",
				 path, ST_MAX_FILE);
		return rc;
	}
	if (rc == ERR_INVALID) {
		if (err && errlen)
			snprintf(err, errlen,
				 "cannot read %s: it is %s, not a file", path,
				 fileio_kind(path));
		return ERR_IO;
	}
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "cannot read %s: %m", path);
		return rc;
	}
	rc = st_decode(data, size, out, err, errlen);
	free(data);
	return rc;
}
