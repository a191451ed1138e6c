/*
 * fileio.h - whole-file reads and crash-safe writes.
 *
 * fileio_write_atomic writes to PATH.tmp.PID, fsyncs it, renames it over
 * PATH and fsyncs the folder, so a reader (or a restart after kill -9) sees
 * the old file or the new one, never a torn one. ENOSPC and EDQUOT become
 * ERR_NO_SPACE and the old file stays as it was.
 */
#ifndef VKINR_FILEIO_H
#define VKINR_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Reads a whole file into a malloc'ed buffer (NUL-terminated beyond size). */
int fileio_read(const char *path, uint8_t **data, size_t *size,
		size_t max_size);
/* Writes atomically with the given mode (e.g. 0600). */
int fileio_write_atomic(const char *path, const void *data, size_t size,
			int mode);

#endif
