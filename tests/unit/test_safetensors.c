/*
 * test_safetensors.c - unit tests of daemon/formats/safetensors.c (and the parts of
 * util/fileio.c that it uses).
 *
 * A file with F32, F64, I64 and U8 tensors (a scalar and an empty tensor
 * among them) and metadata is encoded, its layout checked against what the
 * PyTorch peer writes and reads (space padding to 8 bytes, tensors end to
 * end in the order added), and decoded back. A header as Python's
 * json.dumps writes it is decoded. st_save_file's file is read back, and
 * its mode and the absence of temporary files checked. Then a list of
 * malformed files, each hand-written, must be refused with ERR_FORMAT and
 * a sentence, and random corruption of a valid file must never crash or
 * leak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "formats/safetensors.h"

static const float f32_data[6] = { 1.5f, -2.25f, 0.0f, 3.0e-8f, 1e30f, -0.0f };
static const double f64_data[4] = { 3.141592653589793, -1e-300, 2.0, 1e300 };
static const int64_t i64_data[4] = { INT64_MIN, -1, 0, INT64_MAX };
static const uint8_t u8_data[5] = { 0, 1, 127, 128, 255 };
static const float scalar = 42.0f;

/* The test file: five tensors, one of them empty, and metadata. */
static struct st_file *sample_file(void)
{
	struct st_file *f = st_create();
	const int64_t s_f32[2] = { 2, 3 }, s_f64[1] = { 4 },
		      s_i64[3] = { 2, 2, 1 };
	const int64_t s_u8[1] = { 5 }, s_empty[2] = { 0, 3 };

	assert_non_null(f);
	assert_int_equal(st_add(f, "w.f32", ST_F32, 2, s_f32, f32_data), 0);
	assert_int_equal(st_add(f, "u8", ST_U8, 1, s_u8, u8_data), 0);
	assert_int_equal(st_add(f, "w.f64", ST_F64, 1, s_f64, f64_data), 0);
	assert_int_equal(st_add(f, "i64", ST_I64, 3, s_i64, i64_data), 0);
	assert_int_equal(st_add(f, "scalar", ST_F32, 0, NULL, &scalar), 0);
	assert_int_equal(st_add(f, "empty", ST_F32, 2, s_empty, NULL), 0);
	assert_int_equal(st_set_meta(f, "format", "convsiren"), 0);
	assert_int_equal(st_set_meta(f, "nf", "64"), 0);
	assert_int_equal(st_set_meta(f, "quote\"d", "a \"b\"\\ \xc3\xa9"), 0);
	assert_int_equal(st_set_meta(f, "nf", "512"), 0); /* replaces */
	return f;
}

static void check_sample(const struct st_file *f)
{
	const struct st_tensor *t;

	assert_int_equal(f->ntensors, 6);
	assert_int_equal(f->nmeta, 3);
	assert_string_equal(st_get_meta(f, "format"), "convsiren");
	assert_string_equal(st_get_meta(f, "nf"), "512");
	assert_string_equal(st_get_meta(f, "quote\"d"), "a \"b\"\\ \xc3\xa9");
	assert_null(st_get_meta(f, "missing"));
	assert_null(st_find(f, "missing"));

	t = st_find(f, "w.f32");
	assert_non_null(t);
	assert_int_equal(t->dtype, ST_F32);
	assert_int_equal(t->ndim, 2);
	assert_int_equal(t->shape[0], 2);
	assert_int_equal(t->shape[1], 3);
	assert_int_equal(t->nbytes, sizeof(f32_data));
	assert_memory_equal(t->data, f32_data, sizeof(f32_data));

	t = st_find(f, "w.f64");
	assert_non_null(t);
	assert_int_equal(t->dtype, ST_F64);
	assert_int_equal(t->ndim, 1);
	assert_int_equal(t->shape[0], 4);
	assert_memory_equal(t->data, f64_data, sizeof(f64_data));

	t = st_find(f, "i64");
	assert_non_null(t);
	assert_int_equal(t->dtype, ST_I64);
	assert_int_equal(t->ndim, 3);
	assert_int_equal(t->shape[2], 1);
	assert_memory_equal(t->data, i64_data, sizeof(i64_data));

	t = st_find(f, "u8");
	assert_non_null(t);
	assert_int_equal(t->dtype, ST_U8);
	assert_int_equal(t->nbytes, 5);
	assert_memory_equal(t->data, u8_data, sizeof(u8_data));

	t = st_find(f, "scalar");
	assert_non_null(t);
	assert_int_equal(t->ndim, 0);
	assert_int_equal(t->nbytes, 4);
	assert_memory_equal(t->data, &scalar, 4);

	t = st_find(f, "empty");
	assert_non_null(t);
	assert_int_equal(t->ndim, 2);
	assert_int_equal(t->shape[0], 0);
	assert_int_equal(t->nbytes, 0);
	assert_non_null(t->data);
}

static uint64_t header_length(const uint8_t *p)
{
	uint64_t n = 0;

	for (int i = 0; i < 8; i++)
		n |= (uint64_t)p[i] << (8 * i);
	return n;
}

/* ==== Round trips ====================================================== */

static void test_round_trip(void **state)
{
	struct st_file *f = sample_file(), *g;
	uint8_t *buf, *again;
	size_t size, size2;
	char err[256];

	check_sample(f);
	assert_int_equal(st_encode(f, &buf, &size), 0);
	assert_int_equal(st_decode(buf, size, &g, err, sizeof(err)), 0);
	check_sample(g);
	/* Tensors keep the order they were added in. */
	for (int i = 0; i < f->ntensors; i++)
		assert_string_equal(f->tensors[i].name, g->tensors[i].name);
	/* Encoding the decoded file gives the same bytes. */
	assert_int_equal(st_encode(g, &again, &size2), 0);
	assert_int_equal(size, size2);
	assert_memory_equal(buf, again, size);
	free(again);
	free(buf);
	st_destroy(g);
	st_destroy(f);
}

/* The layout the peer's save_safetensors writes and load_safetensors
 * reads: padded header, "__metadata__" of strings, offsets relative to the
 * end of the header, tensors end to end in the order added. */
static void test_layout_matches_peer(void **state)
{
	struct st_file *f = sample_file();
	uint8_t *buf;
	size_t size, off = 0;
	uint64_t hlen;
	cJSON *root, *e;
	int i = 0;

	assert_int_equal(st_encode(f, &buf, &size), 0);
	hlen = header_length(buf);
	assert_int_equal(hlen % 8, 0);
	assert_true(hlen + 8 <= size);
	assert_int_equal(buf[8], '{');
	for (size_t k = hlen; k > 0 && buf[8 + k - 1] != '}'; k--)
		assert_int_equal(buf[8 + k - 1], ' ');

	root = cJSON_ParseWithLength((const char *)buf + 8, (size_t)hlen);
	assert_non_null(root);
	e = root->child;
	assert_string_equal(e->string, "__metadata__");
	assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "nf")));
	for (e = e->next; e; e = e->next, i++) {
		const struct st_tensor *t = &f->tensors[i];
		cJSON *o = cJSON_GetObjectItem(e, "data_offsets");

		assert_string_equal(e->string, t->name);
		assert_int_equal(cJSON_GetArrayItem(o, 0)->valuedouble, off);
		assert_int_equal(cJSON_GetArrayItem(o, 1)->valuedouble,
				 off + t->nbytes);
		assert_memory_equal(buf + 8 + hlen + off, t->data, t->nbytes);
		off += t->nbytes;
	}
	assert_int_equal(i, f->ntensors);
	assert_int_equal(8 + hlen + off, size);
	cJSON_Delete(root);
	free(buf);
	st_destroy(f);
}

/* Builds HEADER + DATA with a correct length prefix. */
static uint8_t *make_file(const char *header, const void *data, size_t datalen,
			  size_t *size)
{
	size_t hlen = strlen(header);
	uint8_t *buf = malloc(8 + hlen + datalen + 1);

	assert_non_null(buf);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
	memcpy(buf + 8, header, hlen);
	if (datalen)
		memcpy(buf + 8 + hlen, data, datalen);
	*size = 8 + hlen + datalen;
	return buf;
}

/* A header exactly as the peer writes it: json.dumps spacing, F32 only,
 * padded with spaces. */
static void test_decode_peer_file(void **state)
{
	const char *header =
	    "{\"__metadata__\": {\"nf\": \"512\", \"w0\": \"30.0\"}, "
	    "\"inp.weight\": {\"dtype\": \"F32\", \"shape\": [2, 1, 1, 1], "
	    "\"data_offsets\": [0, 8]}, \"inp.bias\": {\"dtype\": \"F32\", "
	    "\"shape\": [2], \"data_offsets\": [8, 16]}}      ";
	const float w[4] = { 0.5f, -0.5f, 1.0f, 2.0f };
	const struct st_tensor *t;
	struct st_file *f;
	uint8_t *buf;
	size_t size;
	char err[256];

	buf = make_file(header, w, sizeof(w), &size);
	assert_int_equal(st_decode(buf, size, &f, err, sizeof(err)), 0);
	assert_string_equal(st_get_meta(f, "w0"), "30.0");
	assert_string_equal(f->tensors[0].name, "inp.weight");
	assert_string_equal(f->tensors[1].name, "inp.bias");
	t = st_find(f, "inp.bias");
	assert_int_equal(t->ndim, 1);
	assert_memory_equal(t->data, w + 2, 8);
	t = st_find(f, "inp.weight");
	assert_int_equal(t->ndim, 4);
	assert_int_equal(t->shape[0], 2);
	assert_memory_equal(t->data, w, 8);
	st_destroy(f);
	free(buf);
}

static void test_empty_file_round_trip(void **state)
{
	struct st_file *f = st_create(), *g;
	uint8_t *buf;
	size_t size;
	char err[256];

	assert_int_equal(st_encode(f, &buf, &size), 0);
	assert_int_equal(size, 16);
	assert_int_equal(header_length(buf), 8);
	assert_memory_equal(buf + 8, "{}      ", 8);
	assert_int_equal(st_decode(buf, size, &g, err, sizeof(err)), 0);
	assert_int_equal(g->ntensors, 0);
	assert_int_equal(g->nmeta, 0);
	free(buf);
	st_destroy(g);
	st_destroy(f);
	st_destroy(NULL);
}

static void test_add_refuses_bad_arguments(void **state)
{
	struct st_file *f = st_create();
	const int64_t two[1] = { 2 }, neg[1] = { -1 };
	const int64_t many[ST_MAX_DIMS + 1] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	const float x[2] = { 1, 2 };

	assert_int_equal(st_add(f, "a", ST_F32, 1, two, x), 0);
	assert_int_equal(st_add(f, "a", ST_F32, 1, two, x), ERR_INVALID);
	assert_int_equal(st_add(f, "__metadata__", ST_F32, 1, two, x),
			 ERR_INVALID);
	assert_int_equal(st_add(f, "b", ST_F32, 1, neg, x), ERR_INVALID);
	assert_int_equal(st_add(f, "c", ST_F32, ST_MAX_DIMS + 1, many, x),
			 ERR_INVALID);
	assert_int_equal(st_add(f, "d", (enum st_dtype)7, 1, two, x),
			 ERR_INVALID);
	assert_int_equal(st_add(f, "e", ST_F32, 1, two, NULL), ERR_INVALID);
	assert_int_equal(f->ntensors, 1);
	st_destroy(f);
}

/* ==== Files ============================================================ */

static char *make_temp_dir(void)
{
	char *dir = strdup("/tmp/test_safetensors.XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_save_and_load_file(void **state)
{
	char *dir = make_temp_dir(), path[512], err[256];
	struct st_file *f = sample_file(), *g;
	struct stat st;
	uint8_t *raw;
	size_t size;

	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	assert_int_equal(st_save_file(f, path), 0);
	/* Again, over the first one. */
	assert_int_equal(st_save_file(f, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(count_entries(dir), 1); /* no temporary file left */

	assert_int_equal(st_load_file(path, &g, err, sizeof(err)), 0);
	check_sample(g);
	st_destroy(g);

	/* The raw bytes parse too, and fileio_read honours max_size. */
	assert_int_equal(fileio_read(path, &raw, &size, 1 << 20), 0);
	assert_int_equal(raw[size], 0);
	assert_int_equal(st_decode(raw, size, &g, err, sizeof(err)), 0);
	check_sample(g);
	st_destroy(g);
	free(raw);
	assert_int_equal(fileio_read(path, &raw, &size, (size_t)st.st_size), 0);
	free(raw);
	assert_int_equal(fileio_read(path, &raw, &size, (size_t)st.st_size - 1),
			 ERR_TOO_LARGE);
	assert_null(raw);

	/* A file that is not there: ERR_IO and a sentence naming it. */
	snprintf(path, sizeof(path), "%s/missing.safetensors", dir);
	err[0] = '\0';
	assert_int_equal(st_load_file(path, &g, err, sizeof(err)), ERR_IO);
	assert_null(g);
	assert_non_null(strstr(err, "missing.safetensors"));

	/* Writing into a folder that does not exist fails cleanly. */
	snprintf(path, sizeof(path), "%s/no/such/dir/m.safetensors", dir);
	assert_int_equal(st_save_file(f, path), ERR_IO);

	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	unlink(path);
	rmdir(dir);
	free(dir);
	st_destroy(f);
}

/* fileio_write_atomic writes through a symbolic link when asked
 * (fileio_follow_links(1), the command-line fit) and refuses to replace
 * what is not a regular file. */
static void test_fileio_targets(void **state)
{
	char *dir = make_temp_dir(), file[512], link[512], fifo[512];
	uint8_t *data;
	size_t size;
	struct stat st;

	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	fileio_follow_links(1);
	assert_int_equal(fileio_write_atomic(file, "old", 3, 0600), 0);
	assert_int_equal(symlink("file", link), 0);
	assert_int_equal(fileio_write_atomic(link, "new!", 4, 0600), 0);
	fileio_follow_links(0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(fileio_read(file, &data, &size, 100), 0);
	assert_int_equal(size, 4);
	assert_memory_equal(data, "new!", 4);
	free(data);

	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(fileio_write_atomic(fifo, "x", 1, 0600), ERR_IO);
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(fileio_write_atomic(dir, "x", 1, 0600), ERR_IO);
	assert_int_equal(fileio_read(dir, &data, &size, 100), ERR_IO);
	assert_int_equal(count_entries(dir), 3);

	/* Empty files read as empty, NUL-terminated. */
	assert_int_equal(fileio_write_atomic(file, "", 0, 0600), 0);
	assert_int_equal(fileio_read(file, &data, &size, 0), 0);
	assert_int_equal(size, 0);
	assert_int_equal(data[0], 0);
	free(data);

	unlink(fifo);
	unlink(link);
	unlink(file);
	assert_int_equal(rmdir(dir), 0);
	free(dir);
}

/* By default (the daemon) a link planted at the final name is replaced by
 * the new file, never followed, and the temporary file is created afresh
 * (O_EXCL, O_NOFOLLOW, an unpredictable name): a link or a FIFO planted
 * under the old predictable name PATH.tmp.PID is left alone. */
static void test_fileio_no_follow(void **state)
{
	char *dir = make_temp_dir(), victim[512], link[512], planted[600];
	uint8_t *data;
	size_t size;
	struct stat st;

	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/state.json", dir);
	assert_int_equal(fileio_write_atomic(victim, "mine", 4, 0600), 0);
	assert_int_equal(symlink(victim, link), 0);
	snprintf(planted, sizeof(planted), "%s.tmp.%ld", link, (long)getpid());
	assert_int_equal(symlink(victim, planted), 0);
	assert_int_equal(fileio_write_atomic(link, "job", 3, 0600), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(fileio_read(link, &data, &size, 100), 0);
	assert_memory_equal(data, "job", 3);
	free(data);
	assert_int_equal(fileio_read(victim, &data, &size, 100), 0);
	assert_int_equal(size, 4);
	assert_memory_equal(data, "mine", 4);
	free(data);
	assert_int_equal(lstat(planted, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(planted);
	assert_int_equal(mkfifo(planted, 0600), 0); /* would block an open */
	assert_int_equal(fileio_write_atomic(link, "job2", 4, 0600), 0);
	assert_int_equal(count_entries(dir), 3); /* no temporary left */
	unlink(planted);
	unlink(link);
	unlink(victim);
	assert_int_equal(rmdir(dir), 0);
	free(dir);
}

/* ==== Malformed files ================================================== */

static void expect_refused(const void *buf, size_t size, const char *what)
{
	struct st_file *f = (struct st_file *)1;
	char err[256] = "";
	int rc = st_decode(buf, size, &f, err, sizeof(err));

	if (rc != ERR_FORMAT)
		fail_msg("%s: expected ERR_FORMAT, got %d", what, rc);
	assert_null(f);
	if (!err[0])
		fail_msg("%s: no message", what);
	if (getenv("TEST_VERBOSE"))
		print_message("refused %s: %s\n", what, err);
}

static void expect_header_refused(const char *header, size_t datalen)
{
	uint8_t data[64] = { 0 }, *buf;
	size_t size;

	assert_true(datalen <= sizeof(data));
	buf = make_file(header, data, datalen, &size);
	expect_refused(buf, size, header);
	free(buf);
}

static void test_handmade_valid_control(void **state)
{
	uint8_t data[16] = { 0 }, *buf;
	struct st_file *f;
	size_t size;
	char err[256];

	buf = make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
			"\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"U8\","
			"\"shape\":[2,4],\"data_offsets\":[8,16]}}",
			data, sizeof(data), &size);
	assert_int_equal(st_decode(buf, size, &f, err, sizeof(err)), 0);
	assert_int_equal(f->ntensors, 2);
	st_destroy(f);
	free(buf);
}

static void test_truncated_refused(void **state)
{
	struct st_file *f = sample_file();
	uint8_t *buf;
	size_t size, hlen;

	assert_int_equal(st_encode(f, &buf, &size), 0);
	hlen = header_length(buf);
	expect_refused(buf, 0, "empty");
	expect_refused(buf, 7, "7 bytes");
	expect_refused(buf, 8, "length only");
	expect_refused(buf, 8 + hlen / 2, "header cut");
	expect_refused(buf, 8 + hlen - 1, "header cut by one");
	expect_refused(buf, 8 + hlen, "no data");
	expect_refused(buf, size - 1, "data cut by one");
	expect_refused(buf, size - 20, "data cut");
	free(buf);
	st_destroy(f);
}

static void test_header_length_refused(void **state)
{
	uint8_t buf[64];
	uint64_t lens[] = {
		49,         57,         1000,          ST_MAX_HEADER + 1ull,
		1ull << 40, UINT64_MAX, UINT64_MAX - 7
	};

	memset(buf, ' ', sizeof(buf));
	memcpy(buf + 8, "{}", 2);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		for (int i = 0; i < 8; i++)
			buf[i] = (uint8_t)(lens[k] >> (8 * i));
		expect_refused(buf, 56, "header length past the end");
	}
}

static void test_bad_json_refused(void **state)
{
	expect_header_refused("", 0);
	expect_header_refused("        ", 0);
	expect_header_refused("{", 0);
	expect_header_refused("{\"a\": ", 0);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[0,4]}",
			      4);
	expect_header_refused("{'a': 1}", 0);
	expect_header_refused("[1, 2]", 0);
	expect_header_refused("\"text\"", 0);
	expect_header_refused("42", 0);
	expect_header_refused("null", 0);
	expect_header_refused("{} x", 0);
	expect_header_refused("{}{}", 0);
	expect_header_refused("{}\x01   ", 0);
	{
		/* A NUL inside the header. */
		uint8_t raw[8 + 8] = { 8,   0,   0, 0,   0,   0,   0,   0,
				       '{', '}', 0, ' ', ' ', ' ', ' ', ' ' };
		expect_refused(raw, sizeof(raw), "NUL in the header");
	}
	/* Entries that are not objects. */
	expect_header_refused("{\"a\": 1}", 0);
	expect_header_refused("{\"a\": [\"F32\", [1], [0, 4]]}", 4);
}

static void test_bad_dtype_refused(void **state)
{
	expect_header_refused("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":0,\"shape\":[1],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"shape\":[1],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"\",\"shape\":[1],"
			      "\"data_offsets\":[0,4]}}",
			      4);
}

static void test_bad_offsets_refused(void **state)
{
	/* Past the end of the data. */
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
			      "\"data_offsets\":[0,8]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],"
			      "\"data_offsets\":[5,5]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[1e300,1e300]}}",
			      4);
	/* Negative, fractional, reversed, the wrong count, not numbers. */
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[-4,0]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],"
			      "\"data_offsets\":[0.5,1.5]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],"
			      "\"data_offsets\":[4,0]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[0]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[0,4,8]}}",
			      8);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[\"0\",\"4\"]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4);
}

static void test_overlap_refused(void **state)
{
	expect_header_refused(
	    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
	    "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
	    "\"shape\":[2],\"data_offsets\":[4,12]}}",
	    12);
	/* The same range twice, and one inside another, listed backwards. */
	expect_header_refused(
	    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
	    "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
	    "\"shape\":[2],\"data_offsets\":[0,8]}}",
	    8);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],"
			      "\"data_offsets\":[3,5]},\"b\":{\"dtype\":\"U8\","
			      "\"shape\":[8],\"data_offsets\":[0,8]}}",
			      8);
	/* Duplicate names, duplicate metadata. */
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
			      "\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"U8\","
			      "\"shape\":[4],\"data_offsets\":[4,8]}}",
			      8);
	expect_header_refused("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}",
			      0);
	expect_header_refused("{\"__metadata__\":{},\"__metadata__\":{}}", 0);
}

static void test_shape_mismatch_refused(void **state)
{
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
			      "\"data_offsets\":[0,8]}}",
			      8);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2,0],"
			      "\"data_offsets\":[0,8]}}",
			      8);
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
			      "\"data_offsets\":[0,8]}}",
			      8);
	expect_header_refused("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],"
			      "\"data_offsets\":[0,8]}}",
			      8);
	expect_header_refused("{\"a\":{\"dtype\":\"I64\",\"shape\":[],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2,-2],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2.5],"
			      "\"data_offsets\":[0,2]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[\"4\"],"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":4,"
			      "\"data_offsets\":[0,4]}}",
			      4);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\","
			      "\"data_offsets\":[0,4]}}",
			      4);
	/* Nine dimensions. */
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":"
			      "[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
			      1);
	/* A product that overflows 64 bits but wraps to the right size. */
	expect_header_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":"
			      "[4294967296,4294967296,1],"
			      "\"data_offsets\":[0,0]}}",
			      0);
	expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":"
			      "[9007199254740992,9007199254740992,4],"
			      "\"data_offsets\":[0,0]}}",
			      4);
}

static void test_bad_metadata_refused(void **state)
{
	expect_header_refused("{\"__metadata__\":{\"nf\":512}}", 0);
	expect_header_refused("{\"__metadata__\":{\"a\":null}}", 0);
	expect_header_refused("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0);
	expect_header_refused("{\"__metadata__\":[\"a\"]}", 0);
	expect_header_refused("{\"__metadata__\":\"a\"}", 0);
}

/* Random corruption of a valid file: any outcome but a crash or a leak. */
static void test_random_corruption(void **state)
{
	struct st_file *f = sample_file(), *g;
	uint8_t *buf, *copy;
	size_t size;
	uint32_t x = 1;
	char err[256];
	int accepted = 0;

	assert_int_equal(st_encode(f, &buf, &size), 0);
	copy = malloc(size);
	assert_non_null(copy);
	for (int round = 0; round < 3000; round++) {
		size_t n = size;
		int rc;

		memcpy(copy, buf, size);
		for (int k = 0; k < 1 + round % 4; k++) {
			x = x * 1664525u + 1013904223u;
			copy[(x >> 8) % size] ^= (uint8_t)(1u << (x >> 29));
		}
		if (round % 5 == 0)
			n = (x >> 4) % size;
		rc = st_decode(copy, n, &g, err, sizeof(err));
		if (rc == 0) {
			accepted++;
			st_destroy(g);
		} else {
			assert_int_equal(rc, ERR_FORMAT);
			assert_null(g);
		}
	}
	/* Flips in the data region leave a valid file. */
	assert_true(accepted > 0);
	free(copy);
	free(buf);
	st_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_layout_matches_peer),
		cmocka_unit_test(test_decode_peer_file),
		cmocka_unit_test(test_empty_file_round_trip),
		cmocka_unit_test(test_add_refuses_bad_arguments),
		cmocka_unit_test(test_save_and_load_file),
		cmocka_unit_test(test_fileio_targets),
		cmocka_unit_test(test_fileio_no_follow),
		cmocka_unit_test(test_handmade_valid_control),
		cmocka_unit_test(test_truncated_refused),
		cmocka_unit_test(test_header_length_refused),
		cmocka_unit_test(test_bad_json_refused),
		cmocka_unit_test(test_bad_dtype_refused),
		cmocka_unit_test(test_bad_offsets_refused),
		cmocka_unit_test(test_overlap_refused),
		cmocka_unit_test(test_shape_mismatch_refused),
		cmocka_unit_test(test_bad_metadata_refused),
		cmocka_unit_test(test_random_corruption),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
