/*
 * outfile.c - see outfile.h. Everything goes through one descriptor of
 * the target's folder, opened once and checked with fstat: the name is
 * looked at with fstatat(AT_SYMLINK_NOFOLLOW), the temporary file made
 * with openat(O_CREAT | O_EXCL | O_NOFOLLOW) and renamed with renameat2
 * (RENAME_NOREPLACE without force; linkat and unlinkat where the
 * filesystem lacks it), so a link swapped in on the way is never
 * followed and a folder moved meanwhile is still the one checked. That
 * descriptor comes from a walk from '/' (walk_open) that reads every link
 * itself, so no folder another user can change chose it.
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

/* Whether a folder the walk passes through (the file's folder is below
 * it) is safe: another user who owns it, or who may write to it and it is
 * not sticky, could put a link in place of what is below it. */
static int passable(const char *shown, int fd, const char *dir, char *err,
		    size_t errlen)
{
	struct stat st;
	uid_t me = geteuid();
	if (fstat(fd, &st) < 0) {
		say("cannot write in %s: the folder %s: %s", dir, shown,
		    strerror(errno));
		return OUTFILE_FAILED;
	}
	if (st.st_uid != me && st.st_uid != 0) {
		say("refusing to write in %s: %s above it belongs to another "
		    "user (uid %u), who could put a link in place of what is "
		    "below it; use a folder of your own",
		    dir, shown, (unsigned)st.st_uid);
		return OUTFILE_REFUSED;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && st.st_uid != me &&
	    !(st.st_mode & S_ISVTX)) {
		say("refusing to write in %s: other users can write to %s "
		    "above it, and could put a link in place of what is "
		    "below it; use a folder of your own",
		    dir, shown);
		return OUTFILE_REFUSED;
	}
	return 0;
}

/* The next name of *rest into name (NULL at the end), *rest past it. */
static const char *next_name(const char **rest, char *name, size_t len)
{
	const char *s = *rest;
	while (*s == '/')
		s++;
	if (!*s)
		return NULL;
	size_t n = strcspn(s, "/");
	if (n >= len)
		n = len - 1;
	memcpy(name, s, n);
	name[n] = '\0';
	*rest = s + strcspn(s, "/");
	return name;
}

/*
 * Opens dir into *dfd by walking it name by name from '/' (a relative
 * one from the working folder's real path), each folder passed through
 * checked (passable), never letting the system follow a link: a link
 * owned by another user is refused, one of ours or root's is read and its
 * target walked the same way. So what the descriptor is was decided only
 * by folders that no other user can change.
 */
static int walk_open(const char *dir, int *dfd, const char *path, char *err,
		     size_t errlen)
{
	enum { WALK_MAX = 8192, WALK_LINKS = 40 };
	char *todo = malloc(WALK_MAX), *shown = malloc(WALK_MAX),
	     *next = malloc(WALK_MAX), name[256];
	int rc = OUTFILE_FAILED, fd = -1, links = 0;
	if (!todo || !shown || !next) {
		say("cannot write %s: out of memory", path);
		goto out;
	}
	if (dir[0] == '/') {
		snprintf(todo, WALK_MAX, "%s", dir);
	} else if (getcwd(shown, WALK_MAX)) {
		snprintf(todo, WALK_MAX, "%s/%s", shown, dir);
	} else {
		say("cannot write %s: the working folder: %s", path,
		    strerror(errno));
		goto out;
	}
	strcpy(shown, "/");
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *rest = todo;
	while (fd >= 0 && next_name(&rest, name, sizeof(name))) {
		if (!strcmp(name, "."))
			continue;
		if ((rc = passable(shown, fd, dir, err, errlen)))
			goto out;
		rc = OUTFILE_FAILED;
		struct stat st;
		if (strcmp(name, "..") &&
		    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode)) {
			if (st.st_uid != geteuid() && st.st_uid != 0) {
				say("refusing to write in %s: the link %s%s%s "
				    "belongs to another user (uid %u)",
				    dir, shown, strcmp(shown, "/") ? "/" : "",
				    name, (unsigned)st.st_uid);
				rc = OUTFILE_REFUSED;
				goto out;
			}
			ssize_t n = readlinkat(fd, name, next, WALK_MAX - 1);
			if (n < 0 || ++links > WALK_LINKS) {
				say("cannot write %s: the folder %s: %s", path,
				    dir, strerror(n < 0 ? errno : ELOOP));
				goto out;
			}
			next[n] = '\0';
			size_t used = (size_t)n;
			snprintf(next + used, WALK_MAX - used, "/%s", rest);
			strcpy(todo, next);
			rest = todo;
			if (todo[0] == '/') {
				close(fd);
				fd =
				    open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				strcpy(shown, "/");
			}
			continue;
		}
		int nfd = openat(fd, name,
				 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			say("cannot write %s: the folder %s: %s", path, dir,
			    strerror(errno));
			goto out;
		}
		close(fd);
		fd = nfd;
		if (!strcmp(name, "..")) {
			char *slash = strrchr(shown, '/');
			if (slash)
				slash[slash == shown ? 1 : 0] = '\0';
		} else {
			size_t k = strlen(shown);
			snprintf(shown + k, WALK_MAX - k, "%s%s",
				 k > 1 ? "/" : "", name);
		}
	}
	if (fd < 0) {
		say("cannot write %s: the folder /: %s", path, strerror(errno));
		goto out;
	}
	/* the folders passed through were only searched (O_PATH: no read
	 * permission needed); the file's own is opened for reading, as
	 * fsync wants */
	int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		say("cannot write %s: the folder %s: %s", path, dir,
		    strerror(errno));
		goto out;
	}
	close(fd);
	fd = rfd;
	rc = 0;
out:
	if (rc && fd >= 0)
		close(fd);
	*dfd = rc ? -1 : fd;
	free(todo);
	free(shown);
	free(next);
	return rc;
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
	int rc = walk_open(dir, dfd, path, err, errlen);
	if (rc) {
		free(dir);
		return rc;
	}
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
