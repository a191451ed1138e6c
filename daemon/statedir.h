/*
 * statedir.h - the state folder's safety checks and its lock.
 *
 * A daemon (often root) writes and deletes files in its state folder, so
 * nobody else may be able to change what lies there: statedir_check
 * refuses a folder, or any folder above it, that another user owns or can
 * write into. statedir_lock makes sure one daemon alone uses a folder.
 *
 * Loop thread only, at start.
 */
#ifndef VKINR_STATEDIR_H
#define VKINR_STATEDIR_H

#include <stddef.h>

/*
 * The state folder (created by main.c) must be a folder owned by this
 * process's effective uid that nobody else can write; every folder above
 * its real path must be owned by that uid or root and be writable by
 * nobody else, unless it is sticky (/tmp). Returns 0, or ERR_PERMISSION
 * or ERR_IO with a sentence naming the path and how to fix it in err.
 */
int statedir_check(const char *dir, char *err, size_t errlen);

/*
 * Takes DIR/lock (an exclusive flock held until the process exits) and
 * writes this process's pid into it. Returns the open fd (>= 0), or
 * ERR_BUSY naming the pid of the daemon holding it, or ERR_IO.
 */
int statedir_lock(const char *dir, char *err, size_t errlen);

#endif
