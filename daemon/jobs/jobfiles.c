/*
 * jobfiles.c - see jobfiles.h. Paths are built into PATH_MAX-sized
 * buffers on the stack; a state folder too deep for them gives
 * ERR_TOO_LARGE, never a cut path.
 */
#include "jobs/jobfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "log.h"
#include "proto/errors.h"
#include "proto/params.h"
#include "proto/strict.h"
#include "formats/safetensors.h"
#include "util/fileio.h"

#define METRICS_MAX_BYTES (1u << 30)
#define SMALL_FILE_MAX (1u << 20)
#define JOBFILES_PATH_MAX 4096

int jobfiles_path(const char *jobs_dir, const char *id, const char *file,
		  char *buf, size_t len)
{
	int n = file ? snprintf(buf, len, "%s/%s/%s", jobs_dir, id, file)
		     : snprintf(buf, len, "%s/%s", jobs_dir, id);
	return n < 0 || (size_t)n >= len ? ERR_TOO_LARGE : 0;
}

/* ==== The folder ======================================================= */

int jobfiles_make_folder(const char *jobs_dir, const char *id)
{
	char dir[JOBFILES_PATH_MAX];
	int rc = jobfiles_path(jobs_dir, id, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	if (mkdir(dir, 0700) == 0)
		return 0;
	return errno == ENOSPC || errno == EDQUOT ? ERR_NO_SPACE : ERR_IO;
}

/* Removes NAME in the folder dirfd, and everything in it when it is a
 * folder, never following a symbolic link: a link is removed, not what
 * it names. */
static void remove_tree_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		unlinkat(dirfd, name, 0); /* a file or a link */
		return;
	}
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) && errno == EISDIR)
			remove_tree_at(fd, de->d_name);
	}
	closedir(dir);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

void jobfiles_remove_folder(const char *jobs_dir, const char *id)
{
	int fd = open(jobs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	remove_tree_at(fd, id);
	close(fd);
}

/* ==== Whole files ====================================================== */

int jobfiles_write(const char *jobs_dir, const char *id, const char *file,
		   const void *data, size_t size)
{
	char path[JOBFILES_PATH_MAX];
	int rc = jobfiles_path(jobs_dir, id, file, path, sizeof(path));
	return rc ? rc : fileio_write_atomic(path, data, size, 0600);
}

int jobfiles_write_json(const char *jobs_dir, const char *id, const char *file,
			cJSON *obj)
{
	char *text = obj ? cJSON_Print(obj) : NULL;
	cJSON_Delete(obj);
	if (!text)
		return ERR_NOMEM;
	int rc = jobfiles_write(jobs_dir, id, file, text, strlen(text));
	free(text);
	return rc;
}

unsigned long long jobfiles_number(const char *name, size_t len)
{
	unsigned long long n = 0;
	if (!len || len > 16 || name[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		n = n * 10 + (unsigned)(name[i] - '0');
	}
	return n <= JOB_NUMBER_MAX ? n : 0;
}

cJSON *jobfiles_read_json(const char *jobs_dir, const char *id,
			  const char *file)
{
	char path[JOBFILES_PATH_MAX];
	uint8_t *data;
	size_t size;
	if (jobfiles_path(jobs_dir, id, file, path, sizeof(path))) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (fileio_read(path, &data, &size, SMALL_FILE_MAX))
		return NULL;
	/* what the daemon reads back passes the wire's checks: no NUL in a
	 * string (it would cut it), no key twice (which copy is meant?) */
	char why[160];
	cJSON *obj = cJSON_ParseWithLength((const char *)data, size);
	if (obj &&
	    (strict_check((const char *)data, size, NULL, why, sizeof(why)) ||
	     strict_duplicate(obj, NULL))) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	free(data);
	if (!obj)
		errno = EINVAL; /* there, but not JSON we would take */
	return obj;
}

int jobfiles_exists(const char *jobs_dir, const char *id, const char *file)
{
	char path[JOBFILES_PATH_MAX];
	struct stat st;
	return !jobfiles_path(jobs_dir, id, file, path, sizeof(path)) &&
	       lstat(path, &st) == 0;
}

/* ==== Checks at start ================================================== */

int jobfiles_check_folder(const char *jobs_dir, const char *id, int *can_save,
			  char *why, size_t whylen)
{
	char dir[JOBFILES_PATH_MAX];
	struct stat st;
	*can_save = 0;
	jobfiles_path(jobs_dir, id, NULL, dir, sizeof(dir));
	if (lstat(dir, &st)) {
		snprintf(why, whylen, "cannot read %.300s: %s", dir,
			 strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen,
			 "%.300s is %s, not the job's folder; its "
			 "files are not read",
			 dir,
			 S_ISLNK(st.st_mode) ? "a symbolic link"
					     : "not a folder");
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen,
			 "%.300s belongs to uid %u, not to the daemon's "
			 "uid %u; its files are not read",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(why, whylen, "cannot read %.300s: %s", dir,
			 strerror(errno));
		return -1;
	}
	*can_save = 1;
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    S_ISREG(st.st_mode))
			continue;
		snprintf(why, whylen,
			 "%.300s/%.64s is %s; the job's files are not "
			 "read",
			 dir, de->d_name,
			 S_ISLNK(st.st_mode) ? "a symbolic link"
					     : "not a regular file");
		if (!strcmp(de->d_name, JOBFILE_STATE))
			*can_save = 0;
		rc = -1;
	}
	closedir(d);
	return rc;
}

int jobfiles_check_inputs(const char *jobs_dir, const char *id, int has_init,
			  char *why, size_t whylen)
{
	const char *need[] = { JOBFILE_TARGET, has_init ? JOBFILE_INIT : NULL };
	for (int i = 0; i < 2 && need[i]; i++) {
		char path[JOBFILES_PATH_MAX];
		struct stat st;
		jobfiles_path(jobs_dir, id, need[i], path, sizeof(path));
		/* errno is read only when lstat failed: after a success it
		 * may still hold an earlier ENOENT */
		const char *what =
		    lstat(path, &st)
			? errno == ENOENT ? "missing" : "not readable"
		    : st.st_size == 0 ? "empty"
				      : NULL;
		if (what) {
			snprintf(why, whylen, "%.300s is %s", path, what);
			return -1;
		}
	}
	return 0;
}

void jobfiles_remove_interrupted_writes(const char *jobs_dir, const char *id)
{
	char dir[JOBFILES_PATH_MAX], file[JOBFILES_PATH_MAX];
	DIR *d = jobfiles_path(jobs_dir, id, NULL, dir, sizeof(dir))
		     ? NULL
		     : opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		const char *tmp = strstr(de->d_name, ".tmp.");
		if (!tmp || !tmp[5] ||
		    strspn(tmp + 5, "0123456789") != strlen(tmp + 5))
			continue;
		if (jobfiles_path(jobs_dir, id, de->d_name, file, sizeof(file)))
			continue;
		if (unlink(file) == 0)
			log_info("removed %s, left by an interrupted write",
				 file);
	}
	if (d)
		closedir(d);
}

int jobfiles_checkpoint_epoch(const char *jobs_dir, const char *id)
{
	char path[JOBFILES_PATH_MAX], err[256];
	struct st_file *ckpt = NULL;
	struct stat st;
	if (jobfiles_path(jobs_dir, id, JOBFILE_CHECKPOINT, path, sizeof(path)))
		return -1;
	if (stat(path, &st))
		return 0;
	if (st_load_file(path, &ckpt, err, sizeof(err))) {
		log_warn("job %s: %s", id, err);
		return -1;
	}
	const char *v = st_get_meta(ckpt, "epoch");
	int epoch = v ? atoi(v) : -1;
	st_destroy(ckpt);
	return epoch;
}

/* ==== metrics.ndjson =================================================== */

/* psnr_best: the best model's so far (0, and left out, in lines written
 * before it was kept); time: Unix seconds, to the microsecond (0, and
 * left out, in lines written before it was recorded) */
static int format_metrics(char *buf, size_t len, const struct nn_metrics *m,
			  double time)
{
	char best[48] = "", at[40] = "";
	if (m->psnr_best > 0 && isfinite(m->psnr_best))
		snprintf(best, sizeof(best), ",\"psnr_best\":%.17g",
			 m->psnr_best);
	if (time > 0 && isfinite(time))
		snprintf(at, sizeof(at), ",\"time\":%.6f", time);
	return snprintf(buf, len,
			"{\"epoch\":%d,\"mse\":%.17g,\"psnr\":%.17g,"
			"\"lr\":%.17g,\"ms\":%.6g%s%s}\n",
			m->epoch, m->mse, m->psnr, m->lr, m->ms, best, at);
}

int jobfiles_metrics_rewrite(const char *jobs_dir, const char *id,
			     const struct nn_metrics *hist, const double *time,
			     int n)
{
	size_t cap = (size_t)n * 232 + 1, len = 0; /* a line: < 232 */
	char *text = malloc(cap);
	if (!text)
		return ERR_NOMEM;
	for (int i = 0; i < n; i++)
		len += format_metrics(text + len, cap - len, &hist[i],
				      time ? time[i] : 0);
	int rc = jobfiles_write(jobs_dir, id, JOBFILE_METRICS, text, len);
	free(text);
	return rc;
}

int jobfiles_metrics_open(const char *jobs_dir, const char *id, int *fd)
{
	char path[JOBFILES_PATH_MAX];
	int rc =
	    jobfiles_path(jobs_dir, id, JOBFILE_METRICS, path, sizeof(path));
	if (rc)
		return rc;
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		   0600);
	return *fd < 0 ? ERR_IO : 0;
}

int jobfiles_metrics_append(int fd, const char *id, const struct nn_metrics *m,
			    double time)
{
	char line[256];
	int n = format_metrics(line, sizeof(line), m, time);
	off_t before = lseek(fd, 0, SEEK_END);
	ssize_t put = write(fd, line, n);
	if (put == n)
		return 0;
	/* a short write leaves a torn line: cut it off again */
	int saved = put < 0 ? errno : ENOSPC;
	if (put > 0 && before >= 0 && ftruncate(fd, before))
		log_warn("job %s: cannot cut a torn line off " JOBFILE_METRICS
			 ": %s",
			 id, strerror(errno));
	errno = saved;
	return saved == ENOSPC || saved == EDQUOT ? ERR_NO_SPACE : ERR_IO;
}

static double get_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

int jobfiles_metrics_load(const char *jobs_dir, const char *id,
			  struct nn_metrics **out, double **times, int *n,
			  int *torn, char *why, size_t whylen)
{
	char path[JOBFILES_PATH_MAX];
	uint8_t *data;
	size_t size;
	struct nn_metrics *list = NULL;
	double *tlist = NULL;
	int count = 0, cap = 0;

	*out = NULL;
	*times = NULL;
	*n = 0;
	*torn = 0;
	if (jobfiles_path(jobs_dir, id, JOBFILE_METRICS, path, sizeof(path)))
		return 0;
	int rc = fileio_read(path, &data, &size, METRICS_MAX_BYTES);
	if (rc && errno == ENOENT)
		return 0;
	if (rc) {
		snprintf(why, whylen, "cannot read %.300s: %s", path,
			 strerror(errno));
		return -1;
	}
	*torn = size > 0 && data[size - 1] != '\n';
	char *p = (char *)data, *end = p + size;
	for (int line = 1; p < end; line++) {
		char *nl = memchr(p, '\n', end - p);
		if (!nl)
			break; /* torn last line, from a crash: dropped */
		cJSON *o = cJSON_ParseWithLength(p, nl - p);
		p = nl + 1;
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "epoch");
		if (!cJSON_IsNumber(e) || e->valuedouble < 1 ||
		    e->valuedouble > param_table[PARAM_EPOCHS].max ||
		    e->valuedouble != floor(e->valuedouble)) {
			cJSON_Delete(o);
			snprintf(why, whylen,
				 "%.300s is damaged: line %d is not "
				 "an epoch's metrics",
				 path, line);
			free(data);
			free(list);
			free(tlist);
			return -1;
		}
		if (count == cap) {
			cap = cap ? cap * 2 : 256;
			struct nn_metrics *more =
			    realloc(list, cap * sizeof(*more));
			if (more)
				list = more;
			double *tmore =
			    more ? realloc(tlist, cap * sizeof(*tmore)) : NULL;
			if (!tmore) {
				cJSON_Delete(o);
				break; /* kept what fits, as a short history */
			}
			tlist = tmore;
		}
		double t = get_num(o, "time", 0);
		tlist[count] = isfinite(t) && t > 0 ? t : 0;
		list[count++] = (struct nn_metrics){
			.epoch = e->valueint,
			.mse = get_num(o, "mse", NAN),
			.psnr = get_num(o, "psnr", NAN),
			.lr = get_num(o, "lr", 0),
			.ms = get_num(o, "ms", 0),
			.psnr_best = get_num(o, "psnr_best", 0),
		};
		cJSON_Delete(o);
	}
	free(data);
	*out = list;
	*times = tlist;
	*n = count;
	return 0;
}
