/*
 * socket_path.h - where the daemon listens and its clients connect, worked
 * out in one place for both programs: the --socket flag, else
 * $VKINR_SOCKET, else $XDG_RUNTIME_DIR/vkinrd.sock, else, for root,
 * /run/vkinrd/vkinrd.sock and for any other user (an ssh session or an
 * HPC node without a login manager has no XDG_RUNTIME_DIR)
 * /tmp/vkinrd-UID/vkinrd.sock, in a folder of its own (0700, which must
 * be the user's: one planted by another user is refused, by the daemon
 * and the client). A client of such a user, finding no socket there but
 * one at /run/vkinrd/vkinrd.sock (a system daemon), uses that one
 * (docs/INTERFACES.md). An empty variable counts as unset.
 */
#ifndef VKINR_SOCKET_PATH_H
#define VKINR_SOCKET_PATH_H

#include <stddef.h>

#define SOCKET_PATH_DEFAULT "/run/vkinrd/vkinrd.sock"
#define SOCKET_PATH_NAME "vkinrd.sock" /* under $XDG_RUNTIME_DIR */
/* A user's own without XDG_RUNTIME_DIR: its uid in the folder's name. */
#define SOCKET_PATH_USER_FMT "/tmp/vkinrd-%u/vkinrd.sock"

/* The socket's path, malloc'ed (NULL: out of memory); flag is the
 * --socket option's value or NULL. The daemon's. */
char *socket_path_resolve(const char *flag);
/* The same for a client: a plain user's own fallback socket, else the
 * system daemon's when only that one is there. */
char *socket_path_resolve_client(const char *flag);

/* When path is the calling user's fallback (SOCKET_PATH_USER_FMT), checks
 * that its folder is a real folder of the user's that nobody else may
 * enter: 0, or -1 with a sentence in err (the folder may be missing: 0,
 * for the daemon makes it). Other paths: 0. */
int socket_path_check_private(const char *path, char *err, size_t errlen);

/* What to add to a "permission denied" on the socket or its folder: how a
 * plain user runs the daemon instead. */
const char *socket_path_access_hint(void);

/* Makes path ready to bind: ERR_INVALID when it is too long for a Unix
 * socket, ERR_STATE when something else is there, ERR_BUSY when a live
 * daemon listens on it (a stale socket is removed), ERR_IO when its
 * folder (created 0700 when missing) cannot be; err says which. */

int socket_path_prepare(const char *path, char *err, size_t errlen);

#endif
