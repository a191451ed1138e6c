/*
 * socket_path.c - see socket_path.h. Resolving reads the environment
 * only; preparing (the daemon's, before it binds: server.c) checks what is
 * at the path and makes its folder; the client's conn.c says what went
 * wrong when it connects.
 */
#include "util/socket_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/errors.h"
#include "util/path.h"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

char *socket_path_resolve(const char *flag)
{
	const char *v;

	if (flag)
		return strdup(flag);
	if ((v = env_nonempty("VKINR_SOCKET")))
		return strdup(v);
	if ((v = env_nonempty("XDG_RUNTIME_DIR")))
		return path_join(v, SOCKET_PATH_NAME);
	return strdup(SOCKET_PATH_DEFAULT);
}

int socket_path_prepare(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen,
			 "the socket path %s is longer than %zu "
			 "bytes; choose a shorter --socket",
			 path, sizeof(addr.sun_path) - 1);
		return ERR_INVALID;
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen,
				 "%s exists and is not a socket; "
				 "remove it or choose another --socket",
				 path);
			return ERR_STATE;
		}
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		memset(&addr, 0, sizeof(addr));
		addr.sun_family = AF_UNIX;
		strcpy(addr.sun_path, path);
		int live = fd >= 0 && connect(fd, (struct sockaddr *)&addr,
					      sizeof(addr)) == 0;
		if (fd >= 0)
			close(fd);
		if (live) {
			snprintf(err, errlen,
				 "another vkinrd is already "
				 "listening on %s",
				 path);
			return ERR_BUSY;
		}
		unlink(path);
	} else {
		/* the folder, e.g. /run/vkinrd, when it is missing */
		char dir[sizeof(addr.sun_path)];
		strcpy(dir, path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0700) && errno != EEXIST) {
				snprintf(err, errlen,
					 "cannot create the folder "
					 "%s for the socket %s: %s",
					 dir, path, strerror(errno));
				return ERR_IO;
			}
		}
	}
	return 0;
}
