/*
 * test_jobfiles.c - unit tests of daemon/jobs/jobfiles.c, a job's folder on
 * disk, in a fresh temporary state folder per test.
 *
 * Written and read back: JSON files (missing and not-JSON told apart),
 * whole files written atomically over a planted link without following
 * it, metrics.ndjson rewritten, appended and read back, a torn last line
 * dropped and reported, a damaged middle line refused by its number.
 * The checks at start: a link or a special file in the folder, a folder
 * that is a link, missing and empty inputs; the leftovers of interrupted
 * writes removed and nothing else; a folder removed without following a
 * link out of it; an id too long for a path refused, not cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jobs/jobfiles.h"
#include "proto/errors.h"

struct fixture {
	char root[64];  /* the temporary folder */
	char jobs[128]; /* root/jobs */
	char dir[160];  /* root/jobs/7, the job's folder */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/vkinr-jobfiles.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->jobs, sizeof(f->jobs), "%s/jobs", f->root);
	assert_int_equal(mkdir(f->jobs, 0700), 0);
	assert_int_equal(jobfiles_make_folder(f->jobs, "7"), 0);
	snprintf(f->dir, sizeof(f->dir), "%s/7", f->jobs);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Writes text into the job's file by hand (not through jobfiles). */
static void put(const struct fixture *f, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int exists(const struct fixture *f, const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return lstat(path, &st) == 0;
}

static void paths_and_folders(void **state)
{
	struct fixture *f = *state;
	char buf[256], small[8];
	struct stat st;

	assert_int_equal(
	    jobfiles_path(f->jobs, "7", JOBFILE_STATE, buf, sizeof(buf)), 0);
	assert_true(strstr(buf, "/jobs/7/state.json") != NULL);
	assert_int_equal(
	    jobfiles_path(f->jobs, "7", NULL, small, sizeof(small)),
	    ERR_TOO_LARGE);
	assert_int_equal(stat(f->dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* a folder that is there already: ERR_IO with EEXIST, the number
	 * is skipped by the queue */
	assert_int_equal(jobfiles_make_folder(f->jobs, "7"), ERR_IO);
	assert_int_equal(errno, EEXIST);
	assert_true(jobfiles_exists(f->jobs, "7", NULL));
	assert_false(jobfiles_exists(f->jobs, "7", JOBFILE_CHECKPOINT));
}

static void json_written_and_read(void **state)
{
	struct fixture *f = *state;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", "queued");
	assert_int_equal(jobfiles_write_json(f->jobs, "7", JOBFILE_STATE, o),
			 0);
	cJSON *back = jobfiles_read_json(f->jobs, "7", JOBFILE_STATE);
	assert_non_null(back);
	assert_string_equal(cJSON_GetObjectItem(back, "state")->valuestring,
			    "queued");
	cJSON_Delete(back);

	errno = 0;
	assert_null(jobfiles_read_json(f->jobs, "7", JOBFILE_REQUEST));
	assert_int_equal(errno, ENOENT);
	put(f, JOBFILE_REQUEST, "{\"id\": ");
	assert_null(jobfiles_read_json(f->jobs, "7", JOBFILE_REQUEST));
	assert_int_equal(errno, EINVAL);
}

static void link_replaced_not_followed(void **state)
{
	struct fixture *f = *state;
	char victim[128], link[256], text[32] = "";
	snprintf(victim, sizeof(victim), "%s/victim", f->root);
	snprintf(link, sizeof(link), "%s/%s", f->dir, JOBFILE_TARGET);
	FILE *fp = fopen(victim, "w");
	assert_non_null(fp);
	fputs("precious", fp);
	fclose(fp);
	assert_int_equal(symlink(victim, link), 0);

	assert_int_equal(jobfiles_write(f->jobs, "7", JOBFILE_TARGET, "png", 3),
			 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	fp = fopen(victim, "r");
	assert_non_null(fgets(text, sizeof(text), fp));
	fclose(fp);
	assert_string_equal(text, "precious");
}

static void metrics_round_trip(void **state)
{
	struct fixture *f = *state;
	struct nn_metrics hist[3] = {
		{ .epoch = 1,
		  .mse = 0.25,
		  .psnr = 6.0206,
		  .lr = 1e-4,
		  .ms = 3,
		  .psnr_best = 6.0206 },
		{ .epoch = 2,
		  .mse = 0.125,
		  .psnr = 9.0309,
		  .lr = 1e-4,
		  .ms = 2.5,
		  .psnr_best = 9.0309 },
		{ .epoch = 3,
		  .mse = 0.0625,
		  .psnr = 2.0412,
		  .lr = 9e-5,
		  .ms = 2,
		  .psnr_best = 9.0309 },
	};
	/* the wall clock's time of each epoch; 0: one from before it */
	const double times[3] = { 1796241371.25, 0, 1796241383.565713 };
	struct nn_metrics *back;
	double *tback;
	int n, torn, fd = -1;
	char why[512];

	/* missing: an empty history */
	assert_int_equal(jobfiles_metrics_load(f->jobs, "7", &back, &tback, &n,
					       &torn, why, sizeof(why)),
			 0);
	assert_int_equal(n, 0);
	free(back);
	free(tback);

	assert_int_equal(jobfiles_metrics_rewrite(f->jobs, "7", hist, times, 2),
			 0);
	assert_int_equal(jobfiles_metrics_open(f->jobs, "7", &fd), 0);
	assert_int_equal(jobfiles_metrics_append(fd, "7", &hist[2], times[2]),
			 0);
	close(fd);
	assert_int_equal(jobfiles_metrics_load(f->jobs, "7", &back, &tback, &n,
					       &torn, why, sizeof(why)),
			 0);
	assert_int_equal(n, 3);
	assert_int_equal(torn, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(back[i].epoch, hist[i].epoch);
		assert_true(back[i].mse == hist[i].mse);
		assert_true(back[i].psnr == hist[i].psnr);
		assert_true(back[i].lr == hist[i].lr);
		assert_true(back[i].ms == hist[i].ms);
		assert_true(back[i].psnr_best == hist[i].psnr_best);
		assert_true(fabs(tback[i] - times[i]) < 1e-6);
	}
	free(back);
	free(tback);
}

static void metrics_torn_and_damaged(void **state)
{
	struct fixture *f = *state;
	struct nn_metrics *back;
	double *tback;
	int n, torn;
	char why[512] = "";

	put(f, JOBFILE_METRICS, "{\"epoch\":1,\"psnr\":5}\n{\"epoch\":2,\"ps");
	assert_int_equal(jobfiles_metrics_load(f->jobs, "7", &back, &tback, &n,
					       &torn, why, sizeof(why)),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(torn, 1);
	assert_true(isnan(back[0].mse));     /* a field missing: not a number */
	assert_true(back[0].psnr_best == 0); /* a line from before it */
	assert_true(tback[0] == 0);          /* and before the time */
	free(back);
	free(tback);

	put(f, JOBFILE_METRICS,
	    "{\"epoch\":1}\n{\"epoch\":0.5}\n{\"epoch\":3}\n");
	assert_int_equal(jobfiles_metrics_load(f->jobs, "7", &back, &tback, &n,
					       &torn, why, sizeof(why)),
			 -1);
	assert_null(back);
	assert_null(tback);
	assert_non_null(strstr(why, "line 2 is not an epoch's metrics"));
}

static void folder_checks(void **state)
{
	struct fixture *f = *state;
	char why[512] = "", path[256];
	int can_save;

	assert_int_equal(
	    jobfiles_check_folder(f->jobs, "7", &can_save, why, sizeof(why)),
	    0);
	assert_int_equal(can_save, 1);

	/* inputs: missing, empty, then there; init only when it has one */
	assert_int_equal(
	    jobfiles_check_inputs(f->jobs, "7", 0, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "target.png is missing"));
	put(f, JOBFILE_TARGET, "");
	assert_int_equal(
	    jobfiles_check_inputs(f->jobs, "7", 0, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "target.png is empty"));
	put(f, JOBFILE_TARGET, "png");
	assert_int_equal(
	    jobfiles_check_inputs(f->jobs, "7", 0, why, sizeof(why)), 0);
	assert_int_equal(
	    jobfiles_check_inputs(f->jobs, "7", 1, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "init.safetensors is missing"));

	/* a link among the files: refused, state.json may still be saved */
	snprintf(path, sizeof(path), "%s/%s", f->dir, JOBFILE_CHECKPOINT);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(
	    jobfiles_check_folder(f->jobs, "7", &can_save, why, sizeof(why)),
	    -1);
	assert_non_null(strstr(why, "is a symbolic link"));
	assert_int_equal(can_save, 1);
	unlink(path);
	/* state.json not a regular file: nothing may be saved there */
	snprintf(path, sizeof(path), "%s/%s", f->dir, JOBFILE_STATE);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(
	    jobfiles_check_folder(f->jobs, "7", &can_save, why, sizeof(why)),
	    -1);
	assert_non_null(strstr(why, "not a regular file"));
	assert_int_equal(can_save, 0);

	/* the folder itself a link */
	snprintf(path, sizeof(path), "%s/8", f->jobs);
	assert_int_equal(symlink(f->dir, path), 0);
	assert_int_equal(
	    jobfiles_check_folder(f->jobs, "8", &can_save, why, sizeof(why)),
	    -1);
	assert_non_null(strstr(why, "a symbolic link, not the job's folder"));
}

static void leftovers_and_removal(void **state)
{
	struct fixture *f = *state;
	char victim[128], path[256], sub[256];

	put(f, "state.json.tmp.123456", "{}");
	put(f, "state.json.tmp.12x", "{}");
	put(f, JOBFILE_STATE, "{}");
	jobfiles_remove_interrupted_writes(f->jobs, "7");
	assert_false(exists(f, "state.json.tmp.123456"));
	assert_true(exists(f, "state.json.tmp.12x"));
	assert_true(exists(f, JOBFILE_STATE));

	/* removal: a nested folder goes, a link out of it is not followed */
	snprintf(victim, sizeof(victim), "%s/victim", f->root);
	assert_int_equal(mkdir(victim, 0700), 0);
	snprintf(path, sizeof(path), "%s/victim/keep", f->root);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/out", f->dir);
	assert_int_equal(symlink(victim, path), 0);
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	put(f, "sub/file", "x");
	jobfiles_remove_folder(f->jobs, "7");
	assert_false(jobfiles_exists(f->jobs, "7", NULL));
	snprintf(path, sizeof(path), "%s/victim/keep", f->root);
	assert_int_equal(access(path, F_OK), 0);
}

static void checkpoint_epoch(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(jobfiles_checkpoint_epoch(f->jobs, "7"), 0);
	put(f, JOBFILE_CHECKPOINT, "not a safetensors file");
	assert_int_equal(jobfiles_checkpoint_epoch(f->jobs, "7"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(paths_and_folders, setup,
						teardown),
		cmocka_unit_test_setup_teardown(json_written_and_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(link_replaced_not_followed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(metrics_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(metrics_torn_and_damaged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(folder_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(leftovers_and_removal, setup,
						teardown),
		cmocka_unit_test_setup_teardown(checkpoint_epoch, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
