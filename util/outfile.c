/*
 * outfile.c - see outfile.h. Everything goes through one descriptor of
 * the target's folder, opened once and checked with fstat: the name is
 * looked at with fstatat(AT_SYMLINK_NOFOLLOW), the temporary file made
 * with openat(O_CREAT | O_EXCL | O_NOFOLLOW) and renamed with renameat2
 * (RENAME_NOREPLACE without force; linkat and unlinkat where the
 * filesystem lacks it), so a link swapped in on the way is never
 * followed and a folder moved meanwhile is still the one checked.
 */
#include "util/outfile.h"
#include "util/fileio.h"
#include "util/path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define say(...)                                                               \
	(err && errlen ? (void)snprintf(err, errlen, __VA_ARGS__) : (void)0)

int outfile_folder_ok(const char *dir, const struct stat *st, char *err,
		      size_t errlen)
{
	uid_t me = geteuid();
	int others_write = (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
	if (!S_ISDIR(st->st_mode)) {
		say("%s is not a folder", dir);
		return OUTFILE_REFUSED;
	}
	if (st->st_uid != me && st->st_uid != 0) {
		say("refusing to write in %s: it belongs to another user "
		    "(uid %u); use a folder of your own",
		    dir, (unsigned)st->st_uid);
		return OUTFILE_REFUSED;
	}
	if (others_write && (st->st_uid != me || (st->st_mode & S_ISVTX))) {
		say("refusing to write in %s: other users can write to it; "
		    "use a folder of your own (one below it is fine)",
		    dir);
		return OUTFILE_REFUSED;
	}
	return 0;
}

int outfile_open_folder(const char *path, int *dfd, const char **base,
			char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	struct stat st;

	*base = slash ? slash + 1 : path;
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, "..")) {
		say("cannot write %s: it names a folder", path);
		return OUTFILE_REFUSED;
	}
	dir = path_parent(path);
	if (!dir) {
		say("cannot write %s: out of memory", path);
		return OUTFILE_FAILED;
	}
	*dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0) {
		say("cannot write %s: the folder %s: %s", path, dir,
		    strerror(errno));
		free(dir);
		return OUTFILE_FAILED;
	}
	int rc = 0;
	if (fstat(*dfd, &st) < 0) {
		say("cannot write %s: the folder %s: %s", path, dir,
		    strerror(errno));
		rc = OUTFILE_FAILED;
	} else {
		rc = outfile_folder_ok(dir, &st, err, errlen);
	}
	free(dir);
	if (rc) {
		close(*dfd);
		*dfd = -1;
	}
	return rc;
}

/* The rule for what is at base in dfd now. */
static int check_name(int dfd, const char *base, const char *path, int force,
		      char *err, size_t errlen)
{
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		say("cannot write %s: %s", path, strerror(errno));
		return OUTFILE_FAILED;
	}
	if (S_ISDIR(st.st_mode)) {
		say("cannot write %s: it is a folder", path);
		return OUTFILE_REFUSED;
	}
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		say("cannot write %s: it is a special file", path);
		return OUTFILE_REFUSED;
	}
	if (!force) {
		say("%s exists already; add --force to replace it", path);
		return OUTFILE_REFUSED;
	}
	if (st.st_uid != geteuid()) {
		say("refusing to replace %s: it belongs to another user "
		    "(uid %u)",
		    path, (unsigned)st.st_uid);
		return OUTFILE_REFUSED;
	}
	return 0;
}

int outfile_check(const char *path, int force, char *err, size_t errlen)
{
	const char *base;
	int dfd, rc = outfile_open_folder(path, &dfd, &base, err, errlen);
	if (rc)
		return rc;
	rc = check_name(dfd, base, path, force, err, errlen);
	close(dfd);
	return rc;
}

/* A fresh ".NAME.PID-N.tmp" in dfd; its name in tmp. */
static int create_temporary(int dfd, const char *base, int mode, char *tmp,
			    size_t len)
{
	static unsigned attempt;
	for (int i = 0; i < 100; i++) {
		snprintf(tmp, len, ".%.64s.%ld-%u.tmp", base, (long)getpid(),
			 attempt++);
		int fd =
		    openat(dfd, tmp,
			   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   (mode_t)mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

static int rename_into_place(int dfd, const char *tmp, const char *base,
			     int force)
{
	if (force)
		return renameat(dfd, tmp, dfd, base);
	if (renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (linkat(dfd, tmp, dfd, base, 0) < 0)
		return -1;
	unlinkat(dfd, tmp, 0);
	return 0;
}

int outfile_write(const char *path, const void *data, size_t size, int mode,
		  int force, char *err, size_t errlen)
{
	const char *base;
	char tmp[128];
	int dfd, fd, rc = outfile_open_folder(path, &dfd, &base, err, errlen);
	if (rc)
		return rc;
	if ((rc = check_name(dfd, base, path, force, err, errlen))) {
		close(dfd);
		return rc;
	}
	fd = create_temporary(dfd, base, mode, tmp, sizeof(tmp));
	if (fd < 0) {
		say("cannot write %s: %s", path, strerror(errno));
		close(dfd);
		return OUTFILE_FAILED;
	}
	int failed = fileio_write_all(fd, data, size) < 0 ||
		     (!fileio_batch_skips() && fsync(fd) < 0);
	int saved = errno;
	if (close(fd) < 0 && !failed) { /* a deferred write error (NFS) */
		failed = 1;
		saved = errno;
	}
	/* the name again, just before the rename: what is there now */
	if (!failed && (rc = check_name(dfd, base, path, force, err, errlen))) {
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return rc;
	}
	if (!failed && rename_into_place(dfd, tmp, base, force) < 0) {
		failed = 1;
		saved = errno;
	}
	if (failed) {
		unlinkat(dfd, tmp, 0);
		if (saved == EEXIST)
			say("%s exists already; add --force to replace it",
			    path);
		else
			say("cannot write %s: %s", path, strerror(saved));
		close(dfd);
		return saved == EEXIST ? OUTFILE_REFUSED : OUTFILE_FAILED;
	}
	/* the rename made durable; a folder that cannot be fsynced says
	 * EINVAL, the rename is done all the same */
	if (!fileio_batch_skips() && fsync(dfd) < 0 && errno != EINVAL &&
	    errno != EROFS) {
		say("cannot write %s: %s", path, strerror(errno));
		rc = OUTFILE_FAILED;
	}
	close(dfd);
	return rc;
}
