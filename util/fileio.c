/*
 * fileio.c - whole-file reads and crash-safe writes.
 *
 * fileio_read reads until end of file rather than trusting st_size, so it
 * also works on pipes and files that grow, and stops with ERR_TOO_LARGE as
 * soon as the content passes max_size; it never allocates more than
 * max_size + 1 bytes. It opens with O_NONBLOCK (cleared for the reads), so
 * a FIFO that no process writes to reads as empty instead of holding it
 * up for good. fileio_read_regular reads only a regular file: it
 * opens with O_NONBLOCK, so a FIFO or a device named like an image can
 * never make it wait, and refuses anything else (ERR_INVALID).
 *
 * fileio_write_atomic writes PATH.tmp.DIGITS (the pid and random digits,
 * created with O_EXCL | O_NOFOLLOW, so nothing planted under a guessed
 * name is opened), fsyncs it, renames it over PATH and fsyncs the folder, so a reader, or a restart after a crash or kill -9,
 * sees either the old file or the new one, never a torn one. Until the
 * rename, PATH is not touched: a full disk (ENOSPC, EDQUOT: ERR_NO_SPACE) or
 * any other failure (ERR_IO) leaves the old file as it was and removes the
 * temporary file. A symbolic link at PATH is replaced by the file (the
 * rename replaces the link itself), never followed, unless the process
 * asked for fileio_follow_links(1): it then writes through the link (the
 * file it names is replaced, next to itself). A PATH that is not a regular file (a device,
 * /dev/stdout, a folder) is refused rather than replaced.
 *
 * fileio_write_new serves the client, which writes into folders that other
 * users may also write into (/tmp, a shared project folder): the new file
 * is created under a fresh name with O_EXCL, so nothing planted there is
 * opened, and is moved to its name by renameat2(RENAME_NOREPLACE), which
 * fails rather than replace whatever appeared there meanwhile (link() and
 * unlink() where the filesystem lacks it). A rename replaces a directory
 * entry, so even with replace a link planted under the name is replaced,
 * never followed.
 *
 * fileio_batch_begin and fileio_batch_end let a thread that writes many
 * files at once (a pack's checkpoints and outputs) leave out every fsync
 * between them and make it all durable with one syncfs at the end.
 *
 * On failure every function leaves errno set to the cause, for callers that
 * want to tell the user why (strerror).
 */
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errors.h"
#include "util/path.h"

static int errno_code(int e)
{
	if (e == ENOSPC || e == EDQUOT)
		return ERR_NO_SPACE;
	return ERR_IO;
}

/* ==== Reading ========================================================== */

int fileio_read(const char *path, uint8_t **data, size_t *size, size_t max_size)
{
	/* O_NONBLOCK for the open alone: a FIFO nobody writes to is read
	 * as empty at once, not waited on; one with a writer (a shell's
	 * <(...), a pipe) is read as before, the flag cleared */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	*data = NULL;
	*size = 0;
	if (fd < 0)
		return ERR_IO;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fileio_read_fd(fd, data, size, max_size);
}

int fileio_read_regular(const char *path, uint8_t **data, size_t *size,
			size_t max_size)
{
	/* O_NONBLOCK: opening a FIFO without a writer must not wait for one */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	*data = NULL;
	*size = 0;
	if (fd < 0)
		return ERR_IO;
	int bad = fstat(fd, &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : -1;
	if (bad) {
		close(fd);
		errno = bad < 0 ? EINVAL : bad;
		return bad < 0 ? ERR_INVALID : ERR_IO;
	}
	/* a regular file never blocks; the flag goes for the reads' sake */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fileio_read_fd(fd, data, size, max_size);
}

const char *fileio_kind(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return "nothing (a broken link?)";
	return S_ISREG(st.st_mode)    ? "a file"
	       : S_ISDIR(st.st_mode)  ? "a folder"
	       : S_ISFIFO(st.st_mode) ? "a FIFO"
	       : S_ISSOCK(st.st_mode) ? "a socket"
				      : "a device";
}

int fileio_read_fd(int fd, uint8_t **data, size_t *size, size_t max_size)
{
	size_t cap, len = 0;
	uint8_t *buf;
	struct stat st;
	int saved;

	*data = NULL;
	*size = 0;
	if (max_size > SIZE_MAX / 2)
		max_size = SIZE_MAX / 2;
	if (fstat(fd, &st) < 0)
		goto fail_fd;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_fd;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_size) {
		close(fd);
		errno = EFBIG;
		return ERR_TOO_LARGE;
	}
	/* A first guess from st_size; +1 leaves room for the NUL and for
	 * noticing a file that grew past max_size. */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	if (cap > max_size + 1)
		cap = max_size + 1;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return ERR_NOMEM;
	}
	for (;;) {
		ssize_t got;

		if (len == cap) {
			size_t ncap =
			    cap > max_size / 2 ? max_size + 1 : cap * 2;
			uint8_t *nbuf;

			if (cap == max_size + 1) {
				free(buf);
				close(fd);
				errno = EFBIG;
				return ERR_TOO_LARGE;
			}
			nbuf = realloc(buf, ncap);
			if (!nbuf) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return ERR_NOMEM;
			}
			buf = nbuf;
			cap = ncap;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			saved = errno;
			free(buf);
			close(fd);
			errno = saved;
			return ERR_IO;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	/* The loop only ends on a read into free space: len < cap. */
	buf[len] = '\0';
	*data = buf;
	*size = len;
	return 0;

fail_fd:
	saved = errno;
	close(fd);
	errno = saved;
	return ERR_IO;
}

/* ==== Writing ========================================================== */

int fileio_write_all(int fd, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n > 0) {
		ssize_t put = write(fd, p, n);

		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -1;
		p += put;
		n -= (size_t)put;
	}
	return 0;
}

/* fileio_batch_begin's: the calling thread's fsyncs are owed to
 * fileio_batch_end */
static _Thread_local int batch_open;
/* the fsyncs left out since fileio_batch_begin: none, no sync owed */
static _Thread_local long batch_owed;

void fileio_batch_begin(void)
{
	batch_open = 1;
	batch_owed = 0;
}

int fileio_batch_open(void) { return batch_open; }

int fileio_batch_skips(void)
{
	batch_owed += batch_open;
	return batch_open;
}

int fileio_batch_end(const char *dir)
{
	batch_open = 0;
	if (!batch_owed)
		return 0;
	batch_owed = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno_code(errno);
	int rc = syncfs(fd) < 0 ? errno_code(errno) : 0;
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

long fileio_batch_leave(void)
{
	long owed = batch_owed;
	batch_open = 0;
	batch_owed = 0;
	return owed;
}

void fileio_batch_owe(long owed) { batch_owed += owed; }

/* Writes, fsyncs (outside a batch) and closes fd (always); -1 with errno
 * on a failure, close's included: it can report a deferred write error
 * (NFS). */
static int write_synced(int fd, const void *data, size_t size)
{
	batch_owed += batch_open;
	if (fileio_write_all(fd, data, size) < 0 ||
	    (!batch_open && fsync(fd) < 0)) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

/* Makes the rename durable. Filesystems that cannot fsync a folder say
 * EINVAL; the rename is done all the same, so that is not a failure. */
static int sync_folder(const char *path)
{
	int fd, rc = 0;
	if (batch_open) { /* fileio_batch_end syncs it */
		batch_owed++;
		return 0;
	}
	char *dir = path_parent(path);
	if (!dir) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -1;
	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		rc = -1;
	if (rc) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * The path to replace: PATH itself, or the file a symbolic link names (the
 * link stays a link). Anything but a regular file is refused (EINVAL), so
 * that writing to /dev/null or /dev/stdout as root cannot replace it.
 */
static int follow_links;

void fileio_follow_links(int follow) { follow_links = follow; }

static int target_path(const char *path, char **out)
{
	struct stat st;

	*out = NULL;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return -1;
		*out = strdup(path);
	} else if (S_ISLNK(st.st_mode) && !follow_links) {
		*out = strdup(path); /* the rename replaces the link itself */
	} else if (S_ISLNK(st.st_mode)) {
		if (stat(path, &st) < 0) {
			if (errno != ENOENT)
				return -1;
			errno = EINVAL; /* a dangling link */
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			errno = EINVAL;
			return -1;
		}
		*out = realpath(path, NULL);
		if (!*out)
			return -1;
	} else if (S_ISREG(st.st_mode)) {
		*out = strdup(path);
	} else {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -1;
	}
	if (!*out) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int fileio_write_atomic(const char *path, const void *data, size_t size,
			int mode)
{
	char *target, *tmp;
	int fd, saved, rc;

	if (target_path(path, &target) < 0)
		return errno == ENOMEM ? ERR_NOMEM : ERR_IO;
	fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		uint32_t r;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)rand() ^ (uint32_t)i << 24;
		if (asprintf(&tmp, "%s.tmp.%ld%010u", target, (long)getpid(),
			     (unsigned)r) < 0) {
			free(target);
			errno = ENOMEM;
			return ERR_NOMEM;
		}
		fd = open(tmp,
			  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			  (mode_t)mode);
		if (fd < 0 && (errno != EEXIST || i == 99)) {
			saved = errno;
			free(tmp);
			free(target);
			errno = saved;
			return errno_code(saved);
		}
		if (fd < 0)
			free(tmp);
	}
	if (fd < 0) {
		saved = errno;
		free(tmp);
		free(target);
		errno = saved;
		return errno_code(saved);
	}
	if (write_synced(fd, data, size) < 0) {
		saved = errno;
		goto fail;
	}
	if (rename(tmp, target) < 0) {
		saved = errno;
		goto fail;
	}
	free(tmp);
	rc = sync_folder(target) < 0 ? errno_code(errno) : 0;
	saved = errno;
	free(target);
	errno = saved;
	return rc;

fail:
	unlink(tmp);
	free(tmp);
	free(target);
	errno = saved;
	return errno_code(saved);
}

/* A fresh file next to path, opened O_EXCL: "DIR/.NAME.PID-N.tmp". */
static int create_temporary(const char *path, int mode, char **tmp)
{
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path + 1) : 0;
	const char *base = path + dir_len;
	static unsigned attempt;

	for (int i = 0; i < 100; i++) {
		int fd;

		if (asprintf(tmp, "%.*s.%.64s.%ld-%u.tmp", dir_len, path, base,
			     (long)getpid(), attempt++) < 0) {
			*tmp = NULL;
			errno = ENOMEM;
			return -1;
		}
		fd = open(*tmp,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  (mode_t)mode);
		if (fd >= 0)
			return fd;
		free(*tmp);
		*tmp = NULL;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/* Moves tmp to path unless path exists (EEXIST then). */
static int rename_no_replace(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (link(tmp, path) < 0)
		return -1;
	unlink(tmp);
	return 0;
}

int fileio_write_new(const char *path, const void *data, size_t size, int mode,
		     int replace)
{
	struct stat st;
	char *tmp;
	int fd, saved;

	if (lstat(path, &st) == 0) {
		if (!replace) {
			errno = EEXIST;
			return ERR_IO;
		}
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
			return ERR_IO;
		}
	} else if (errno != ENOENT) {
		return ERR_IO;
	}
	if ((fd = create_temporary(path, mode, &tmp)) < 0)
		return errno == ENOMEM ? ERR_NOMEM : errno_code(errno);
	if (write_synced(fd, data, size) < 0) {
		saved = errno;
		goto fail;
	}
	if ((replace ? rename(tmp, path) : rename_no_replace(tmp, path)) < 0) {
		saved = errno;
		goto fail;
	}
	free(tmp);
	return sync_folder(path) < 0 ? errno_code(errno) : 0;

fail:
	unlink(tmp);
	free(tmp);
	errno = saved;
	return errno_code(saved);
}
