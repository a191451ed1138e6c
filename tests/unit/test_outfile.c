/*
 * test_outfile.c - unit tests of util/outfile.c (the rule for what the
 * foreground fits and the --log write) and fileio_read_regular.
 *
 * In a fresh folder: a new file is written with its mode and no temporary
 * file left; an existing file, a link (dangling or not), a folder and a
 * FIFO at the name are refused without force, the folder and the FIFO
 * with it too, and a link is replaced by the file, never followed; a
 * sticky folder others can write to is refused and one of one's own below
 * it is not. fileio_read_regular refuses a FIFO at once (no writer: an
 * open without O_NONBLOCK would wait forever, and the test with it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/outfile.h"

static char *make_temp_dir(void)
{
	char *dir = strdup("/tmp/test_outfile.XXXXXX");
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

/* The content of path, in buf (NUL-ended). */
static const char *content(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t got = f ? fread(buf, 1, n - 1, f) : 0;
	buf[got] = '\0';
	if (f)
		fclose(f);
	return buf;
}

static void remove_tree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_new_and_existing(void **state)
{
	char *dir = make_temp_dir(), path[512], err[1024], buf[64];
	struct stat st;
	(void)state;
	snprintf(path, sizeof(path), "%s/out.png", dir);
	assert_int_equal(outfile_check(path, 0, err, sizeof(err)), 0);
	assert_int_equal(
	    outfile_write(path, "one", 3, 0640, 0, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640); /* umask 022 */
	assert_int_equal(count_entries(dir), 1);

	assert_int_equal(outfile_check(path, 0, err, sizeof(err)),
			 OUTFILE_REFUSED);
	assert_non_null(strstr(err, "out.png exists already; add --force"));
	assert_int_equal(
	    outfile_write(path, "two", 3, 0640, 0, err, sizeof(err)),
	    OUTFILE_REFUSED);
	assert_string_equal(content(path, buf, sizeof(buf)), "one");
	assert_int_equal(
	    outfile_write(path, "two", 3, 0640, 1, err, sizeof(err)), 0);
	assert_string_equal(content(path, buf, sizeof(buf)), "two");
	assert_int_equal(count_entries(dir), 1); /* no temporary file left */
	remove_tree(dir);
	free(dir);
}

static void test_links_and_special_files(void **state)
{
	char *dir = make_temp_dir(), link[512], victim[512], dangling[512];
	char sub[512], fifo[512], err[1024], buf[64];
	struct stat st;
	(void)state;
	snprintf(link, sizeof(link), "%s/link.png", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(dangling, sizeof(dangling), "%s/dangling.png", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo.png", dir);
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("victim", f);
	fclose(f);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(symlink("/nonexistent/x", dangling), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);

	/* without force: each refused, nothing followed or created */
	assert_int_equal(outfile_write(link, "x", 1, 0600, 0, err, sizeof(err)),
			 OUTFILE_REFUSED);
	assert_int_equal(
	    outfile_write(dangling, "x", 1, 0600, 0, err, sizeof(err)),
	    OUTFILE_REFUSED);
	assert_int_equal(outfile_write(sub, "x", 1, 0600, 1, err, sizeof(err)),
			 OUTFILE_REFUSED);
	assert_non_null(strstr(err, "it is a folder"));
	assert_int_equal(outfile_write(fifo, "x", 1, 0600, 1, err, sizeof(err)),
			 OUTFILE_REFUSED);
	assert_non_null(strstr(err, "special file"));
	assert_string_equal(content(victim, buf, sizeof(buf)), "victim");
	assert_int_equal(count_entries(dir), 5);

	/* with force: the link itself is replaced, its target untouched */
	assert_int_equal(
	    outfile_write(link, "new", 3, 0600, 1, err, sizeof(err)), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(content(link, buf, sizeof(buf)), "new");
	assert_string_equal(content(victim, buf, sizeof(buf)), "victim");
	assert_int_equal(count_entries(dir), 5);

	/* a name that is a folder's own */
	snprintf(sub, sizeof(sub), "%s/", dir);
	assert_int_equal(outfile_check(sub, 1, err, sizeof(err)),
			 OUTFILE_REFUSED);
	remove_tree(dir);
	free(dir);
}

static void test_shared_folder(void **state)
{
	char *dir = make_temp_dir(), path[512], own[512], err[1024];
	(void)state;
	assert_int_equal(chmod(dir, 01777), 0);
	snprintf(path, sizeof(path), "%s/out.png", dir);
	assert_int_equal(outfile_write(path, "x", 1, 0600, 0, err, sizeof(err)),
			 OUTFILE_REFUSED);
	assert_non_null(strstr(err, "other users can write to it"));
	assert_int_equal(count_entries(dir), 0);
	snprintf(own, sizeof(own), "%s/mine", dir);
	assert_int_equal(mkdir(own, 0700), 0);
	snprintf(path, sizeof(path), "%s/mine/out.png", dir);
	assert_int_equal(outfile_write(path, "x", 1, 0600, 0, err, sizeof(err)),
			 0);
	/* a missing folder: a failure, not a refusal */
	snprintf(path, sizeof(path), "%s/none/out.png", dir);
	assert_int_equal(outfile_check(path, 0, err, sizeof(err)),
			 OUTFILE_FAILED);
	remove_tree(dir);
	free(dir);
}

static void test_read_regular(void **state)
{
	char *dir = make_temp_dir(), fifo[512], file[512];
	uint8_t *data;
	size_t size;
	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/fifo.png", dir);
	snprintf(file, sizeof(file), "%s/file.png", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(fileio_read_regular(fifo, &data, &size, 100),
			 ERR_INVALID);
	assert_null(data);
	assert_string_equal(fileio_kind(fifo), "a FIFO");
	assert_int_equal(fileio_read_regular(dir, &data, &size, 100),
			 ERR_INVALID);
	assert_int_equal(fileio_write_atomic(file, "png", 3, 0600), 0);
	assert_int_equal(fileio_read_regular(file, &data, &size, 100), 0);
	assert_int_equal(size, 3);
	assert_memory_equal(data, "png", 3);
	free(data);
	remove_tree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_and_existing),
		cmocka_unit_test(test_links_and_special_files),
		cmocka_unit_test(test_shared_folder),
		cmocka_unit_test(test_read_regular),
	};
	umask(022);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
