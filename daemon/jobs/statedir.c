/*
 * statedir.c - the state folder's safety checks and its lock.
 *
 * The path is resolved once (statedir_resolve: realpath, after refusing
 * a link along the given path that another uid owns) and only the
 * resolved one is used from then on. The check walks that real path from
 * the folder up to '/' (so a symbolic link owned by root such as
 * /var/run -> /run is fine): the folder itself must belong to us and be writable by us alone;
 * each folder above must belong to us or root and be writable by nobody
 * else, except a sticky one like /tmp, where others cannot rename or
 * remove what is ours. Once that holds, nobody but us and root can plant
 * a symbolic link or swap a folder inside, so the paths the daemon builds
 * under it mean what they say.
 *
 * The lock is the folder itself, opened and locked with flock(LOCK_EX |
 * LOCK_NB) and left open: the kernel drops the lock when the process
 * exits, however it exits, so a kill -9 leaves no stale lock, and nothing
 * done to a name inside the folder lets a second daemon in. DIR/lock is
 * locked the same way after it (as daemons before the folder's lock did,
 * and what scripts may wait on) and holds the holder's pid, for the
 * refusal's message; deleting it loses only that pid.
 *
 * A lock on a folder does not hold its name: moved away (or removed) and
 * replaced by a new folder at the same path, it would let a second daemon
 * lock the new one while the first went on writing into it by path.
 * statedir_same compares what the path names with the locked descriptor,
 * for the daemon to stop when they part (daemon.c).
 */
#include "jobs/statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"

static int check_one(const char *path, const struct stat *st, int is_top,
		     char *err, size_t errlen)
{
	uid_t me = geteuid();
	unsigned mode = st->st_mode & 07777;
	if (!S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "the state folder %s is not a folder",
			 path);
		return ERR_IO;
	}
	if (is_top ? st->st_uid != me : st->st_uid != me && st->st_uid != 0) {
		snprintf(err, errlen,
			 "refusing the state folder: %s belongs to "
			 "uid %u, not to uid %u%s; choose a folder of your own "
			 "with --state-dir",
			 path, (unsigned)st->st_uid, (unsigned)me,
			 is_top ? "" : " or root");
		return ERR_PERMISSION;
	}
	int others_write = (mode & (S_IWGRP | S_IWOTH)) != 0;
	if (others_write && (is_top || !(mode & S_ISVTX))) {
		snprintf(err, errlen,
			 "refusing the state folder: %s is writable "
			 "by others (mode %04o), who could plant links there; "
			 "chmod go-w %s or choose another --state-dir",
			 path, mode, path);
		return ERR_PERMISSION;
	}
	return 0;
}

char *statedir_resolve(const char *dir, char *err, size_t errlen)
{
	uid_t me = geteuid();
	char *prefix = strdup(dir);
	if (!prefix) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* every prefix of dir that ends before a '/', and dir itself */
	for (size_t i = 1, n = strlen(dir); i <= n; i++) {
		struct stat st;
		if (i < n && dir[i] != '/')
			continue;
		prefix[i] = '\0';
		if (!lstat(prefix, &st) && S_ISLNK(st.st_mode) &&
		    st.st_uid != me && st.st_uid != 0) {
			snprintf(
			    err, errlen,
			    "refusing the state folder %s: "
			    "%s is a symbolic link that belongs to uid %u, "
			    "who could point it at another folder; give "
			    "the folder's real path to --state-dir",
			    dir, prefix, (unsigned)st.st_uid);
			free(prefix);
			return NULL;
		}
		prefix[i] = dir[i];
	}
	free(prefix);
	char *real = realpath(dir, NULL);
	if (!real)
		snprintf(err, errlen, "cannot open the state folder %s: %s",
			 dir, strerror(errno));
	return real;
}

int statedir_check(const char *dir, char *err, size_t errlen)
{
	char *real = realpath(dir, NULL);
	if (!real) {
		snprintf(err, errlen, "cannot open the state folder %s: %s",
			 dir, strerror(errno));
		return ERR_IO;
	}
	if (strcmp(real, dir)) { /* a link on the way changed meanwhile */
		snprintf(err, errlen,
			 "the state folder %s now resolves to %s; "
			 "refusing a path that moves",
			 dir, real);
		free(real);
		return ERR_PERMISSION;
	}
	int rc = 0;
	for (int top = 1;; top = 0) {
		struct stat st;
		if (lstat(real[0] ? real : "/", &st)) {
			snprintf(err, errlen, "cannot check %s: %s",
				 real[0] ? real : "/", strerror(errno));
			rc = ERR_IO;
			break;
		}
		if ((rc = check_one(real[0] ? real : "/", &st, top, err,
				    errlen)))
			break;
		if (!real[0])
			break;
		char *slash = strrchr(real, '/');
		*slash = '\0'; /* "/a/b" -> "/a" -> "" (the root) */
	}
	free(real);
	return rc;
}

/* The holder's pid as DIR/lock says, or 0 (no file, or no number). */
static long lock_holder(const char *path)
{
	char text[32] = "";
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	return n > 0 ? strtol(text, NULL, 10) : 0;
}

static int busy(const char *dir, const char *path, char *err, size_t errlen)
{
	long pid = lock_holder(path);
	if (pid > 0)
		snprintf(err, errlen,
			 "another vkinrd (pid %ld) is using the state folder "
			 "%s (it holds its lock); stop it or choose another "
			 "--state-dir",
			 pid, dir);
	else
		snprintf(err, errlen,
			 "another vkinrd is using the state folder %s (it "
			 "holds the folder's lock, though %s is gone); stop "
			 "it or choose another --state-dir",
			 dir, path);
	return ERR_BUSY;
}

int statedir_lock(const char *dir, struct statedir_lock *lock, char *err,
		  size_t errlen)
{
	char path[PATH_MAX];
	lock->dir_fd = lock->file_fd = -1;
	if (snprintf(path, sizeof(path), "%s/lock", dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "the state folder path %s is too long",
			 dir);
		return ERR_TOO_LARGE;
	}
	/* the folder first: its lock holds whatever becomes of the file */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "cannot open the state folder %s: %s",
			 dir, strerror(errno));
		return ERR_IO;
	}
	if (flock(dfd, LOCK_EX | LOCK_NB)) {
		int saved = errno;
		close(dfd);
		if (saved == EWOULDBLOCK)
			return busy(dir, path, err, errlen);
		snprintf(err, errlen, "cannot lock the state folder %s: %s",
			 dir, strerror(saved));
		return ERR_IO;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the lock file %s: %s", path,
			 strerror(errno));
		close(dfd);
		return ERR_IO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		/* a daemon that locks only the file (an older one) */
		int saved = errno;
		close(fd);
		close(dfd);
		if (saved == EWOULDBLOCK)
			return busy(dir, path, err, errlen);
		snprintf(err, errlen, "cannot lock %s: %s", path,
			 strerror(saved));
		return ERR_IO;
	}
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, text, n, 0) != n) {
		snprintf(err, errlen, "cannot write the lock file %s: %s", path,
			 strerror(errno));
		close(fd);
		close(dfd);
		return ERR_IO;
	}
	lock->dir_fd = dfd;
	lock->file_fd = fd;
	return 0;
}

int statedir_same(const char *dir, const struct statedir_lock *lock, char *err,
		  size_t errlen)
{
	struct stat path_st, locked;
	if (fstat(lock->dir_fd, &locked)) {
		snprintf(err, errlen, "cannot check the state folder %s: %s",
			 dir, strerror(errno));
		return ERR_STATE;
	}
	if (stat(dir, &path_st)) {
		snprintf(err, errlen,
			 "the state folder %s is gone (%s): it was moved or "
			 "removed while this daemon used it",
			 dir, strerror(errno));
		return ERR_STATE;
	}
	if (path_st.st_dev != locked.st_dev ||
	    path_st.st_ino != locked.st_ino) {
		snprintf(err, errlen,
			 "the state folder %s is no longer the folder this "
			 "daemon locked: it was moved or removed and another "
			 "one now has its path",
			 dir);
		return ERR_STATE;
	}
	return 0;
}

void statedir_unlock(struct statedir_lock *lock)
{
	if (lock->file_fd >= 0)
		close(lock->file_fd);
	if (lock->dir_fd >= 0)
		close(lock->dir_fd);
	lock->dir_fd = lock->file_fd = -1;
}
