/*
 * socket_path.h - where the daemon listens and its clients connect, worked
 * out in one place for both programs: the --socket flag, else
 * $VKINR_SOCKET, else $XDG_RUNTIME_DIR/vkinrd.sock, else
 * /run/vkinrd/vkinrd.sock (docs/INTERFACES.md). An empty variable counts
 * as unset.
 */
#ifndef VKINR_SOCKET_PATH_H
#define VKINR_SOCKET_PATH_H

#include <stddef.h>

#define SOCKET_PATH_DEFAULT "/run/vkinrd/vkinrd.sock"
#define SOCKET_PATH_NAME "vkinrd.sock" /* under $XDG_RUNTIME_DIR */

/* The socket's path, malloc'ed (NULL: out of memory); flag is the
 * --socket option's value or NULL. */
char *socket_path_resolve(const char *flag);

/* Makes path ready to bind: ERR_INVALID when it is too long for a Unix
 * socket, ERR_STATE when something else is there, ERR_BUSY when a live
 * daemon listens on it (a stale socket is removed), ERR_IO when its
 * folder (created 0700 when missing) cannot be; err says which. */

int socket_path_prepare(const char *path, char *err, size_t errlen);

#endif
