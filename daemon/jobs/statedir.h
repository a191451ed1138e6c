/*
 * statedir.h - the state folder's safety checks and its lock.
 *
 * A daemon (often root) writes and deletes files in its state folder, so
 * nobody else may be able to change what lies there: statedir_check
 * refuses a folder, or any folder above it, that another user owns or can
 * write into. statedir_lock makes sure one daemon alone uses a folder.
 *
 * Loop thread only: the checks and the lock at start, statedir_same
 * while the daemon runs.
 */
#ifndef VKINR_STATEDIR_H
#define VKINR_STATEDIR_H

#include <stddef.h>

/*
 * The path the daemon uses for the state folder dir (it exists: main.c
 * created it): its real path (realpath), resolved once, malloc'ed; the
 * daemon never uses dir again, so a link on the way that is later
 * pointed elsewhere moves nothing. A symbolic link along dir itself that
 * belongs to another uid than this process's or root is refused: its
 * owner chose the folder. NULL with a sentence in err when refused or
 * unreadable.
 */
char *statedir_resolve(const char *dir, char *err, size_t errlen);

/*
 * The state folder (a path statedir_resolve gave: one that is its own
 * real path, else it is refused) must be a folder owned by this
 * process's effective uid that nobody else can write; every folder above
 * its real path must be owned by that uid or root and be writable by
 * nobody else, unless it is sticky (/tmp). Returns 0, or ERR_PERMISSION
 * or ERR_IO with a sentence naming the path and how to fix it in err.
 */
int statedir_check(const char *dir, char *err, size_t errlen);

/* The open descriptors that hold a state folder's lock. */
struct statedir_lock {
	int dir_fd;  /* the folder, flock'ed */
	int file_fd; /* DIR/lock, flock'ed, with our pid */
};

/*
 * Takes the folder's lock (an exclusive flock on the folder itself, held
 * until the process exits or statedir_unlock), then DIR/lock the same
 * way, and writes this process's pid into the latter. Returns 0, or
 * ERR_BUSY naming the pid of the daemon holding it (when its lock file
 * still says), or ERR_IO; *lock holds -1s then.
 */
int statedir_lock(const char *dir, struct statedir_lock *lock, char *err,
		  size_t errlen);
/*
 * Whether dir still names the folder lock holds (the path's st_dev and
 * st_ino against the locked descriptor's): after the folder was moved or
 * removed and another made at its path, what the daemon writes by path
 * would land in a folder that is not the one it locked, perhaps another
 * daemon's. Returns 0, or ERR_STATE with a sentence in err.
 */
int statedir_same(const char *dir, const struct statedir_lock *lock, char *err,
		  size_t errlen);
/* Gives the lock back (closes both; -1s do nothing). */
void statedir_unlock(struct statedir_lock *lock);

#endif
