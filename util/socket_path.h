/*
 * socket_path.h - where the daemon listens and its clients connect, worked
 * out in one place for both programs: the --socket flag, else
 * $VKINR_SOCKET, else $XDG_RUNTIME_DIR/vkinrd.sock, else
 * /run/vkinrd/vkinrd.sock (docs/INTERFACES.md). An empty variable counts
 * as unset.
 */
#ifndef VKINR_SOCKET_PATH_H
#define VKINR_SOCKET_PATH_H

#define SOCKET_PATH_DEFAULT "/run/vkinrd/vkinrd.sock"
#define SOCKET_PATH_NAME "vkinrd.sock" /* under $XDG_RUNTIME_DIR */

/* The socket's path, malloc'ed (NULL: out of memory); flag is the
 * --socket option's value or NULL. */
char *socket_path_resolve(const char *flag);

#endif
