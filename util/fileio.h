/*
 * fileio.h - whole-file reads and crash-safe writes.
 *
 * fileio_write_atomic writes to a fresh PATH.tmp.DIGITS (O_EXCL, never
 * through a link), fsyncs it, renames it over PATH and fsyncs the folder,
 * so a reader (or a restart after kill -9) sees the old file or the new
 * one, never a torn one. ENOSPC and EDQUOT become ERR_NO_SPACE and the old
 * file stays as it was. A link at PATH is replaced, not followed, unless
 * the process called fileio_follow_links(1).
 *
 * fileio_write_new is for files written on a user's behalf into folders
 * others may share: it never writes through a symbolic link or into a
 * special file, and never replaces an existing name unless asked to.
 */
#ifndef VKINR_FILEIO_H
#define VKINR_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Reads a whole file into a malloc'ed buffer (NUL-terminated beyond size);
 * a FIFO without a writer reads as empty, never waited on. */
int fileio_read(const char *path, uint8_t **data, size_t *size,
		size_t max_size);
/* The same, of a regular file only: anything else (a FIFO, a device, a
 * folder, a socket) is refused at once with ERR_INVALID (errno EINVAL),
 * never waited on. fileio_kind names what is at path for a message. */
int fileio_read_regular(const char *path, uint8_t **data, size_t *size,
			size_t max_size);
const char *fileio_kind(const char *path);
/* The same from an open descriptor, which it closes (always). */
int fileio_read_fd(int fd, uint8_t **data, size_t *size, size_t max_size);
/* Writes all n bytes to fd, again after EINTR; -1 with errno. */
int fileio_write_all(int fd, const void *data, size_t n);
/* Whether fileio_write_atomic writes through a symbolic link at its path
 * (1) or replaces the link (0, the default). The foreground fits no longer
 * ask for 1: their files go through util/outfile.h. */
void fileio_follow_links(int follow);
/* Writes atomically with the given mode (e.g. 0600). */
int fileio_write_atomic(const char *path, const void *data, size_t size,
			int mode);
/*
 * Writes a new file at path through a temporary file created (O_EXCL) in
 * the same folder and renamed into place. Without replace, a path that
 * exists in any form (a file, a link, a dangling link) is left alone and
 * the call fails with errno EEXIST; with replace, a regular file or a link
 * is replaced by the new file (the link itself, never what it points to),
 * and a folder or a special file is refused (EISDIR, EINVAL).
 */
int fileio_write_new(const char *path, const void *data, size_t size, int mode,
		     int replace);
/*
 * Batched durability, for the calling thread: between fileio_batch_begin
 * and fileio_batch_end the writes here (and outfile_write's) leave out
 * their fsyncs, of the file and of its folder, and fileio_batch_end makes
 * all of them durable with one syncfs of the file system that holds dir.
 * Each file still appears whole or not at all, and a kill -9 in between
 * loses nothing (the data is the kernel's); a power loss before the end
 * may lose what the batch wrote, never what was there before it. A batch
 * that left out no fsync ends without a sync. 0 or ERR_IO / ERR_NO_SPACE
 * with errno. fileio_batch_skips: whether a write elsewhere (outfile.c)
 * is to leave out its fsync, counting it as owed to the batch's end.
 */
void fileio_batch_begin(void);
int fileio_batch_open(void);
int fileio_batch_skips(void);
int fileio_batch_end(const char *dir);
/* For a batch written by several threads: a helper thread opens its own
 * batch, fileio_batch_leave closes it without syncing and returns the
 * syncs it owes, and the batch's own thread takes them on with
 * fileio_batch_owe, before its fileio_batch_end. */
long fileio_batch_leave(void);
void fileio_batch_owe(long owed);

#endif
