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

static char *user_path(void)
{
	char *path = NULL;

	if (asprintf(&path, SOCKET_PATH_USER_FMT, (unsigned)geteuid()) < 0)
		return NULL;
	return path;
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
	if (geteuid() != 0)
		return user_path();
	return strdup(SOCKET_PATH_DEFAULT);
}

char *socket_path_resolve_client(const char *flag)
{
	char *path = socket_path_resolve(flag), *mine = user_path();
	struct stat st;

	if (path && mine && !strcmp(path, mine) && lstat(path, &st) &&
	    lstat(SOCKET_PATH_DEFAULT, &st) == 0 && S_ISSOCK(st.st_mode)) {
		free(path);
		path = strdup(SOCKET_PATH_DEFAULT);
	}
	free(mine);
	return path;
}

int socket_path_check_private(const char *path, char *err, size_t errlen)
{
	char *mine = user_path();
	int is_mine = mine && !strcmp(path, mine);
	struct stat st;

	free(mine);
	if (!is_mine)
		return 0;
	char dir[64];
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path),
		 path);
	if (lstat(dir, &st) && errno == ENOENT)
		return 0;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		snprintf(err, errlen,
			 "%s, the folder of your socket, is %s; remove it "
			 "(someone else may have made it to catch your "
			 "images), or choose another place with --socket PATH "
			 "or VKINR_SOCKET",
			 dir,
			 !S_ISDIR(st.st_mode) ? "not a folder"
			 : st.st_uid != geteuid()
			     ? "another user's"
			     : "open to other users (it must be 0700)");
		return -1;
	}
	return 0;
}

const char *socket_path_access_hint(void)
{
	return geteuid() == 0
		   ? ""
		   : "; as a plain user, set XDG_RUNTIME_DIR or VKINR_SOCKET, "
		     "or pass --socket PATH (without them vkinrd listens on "
		     "/tmp/vkinrd-UID/vkinrd.sock)";
}

int socket_path_prepare(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr;
	if (socket_path_check_private(path, err, errlen))
		return ERR_STATE;
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
				int saved = errno;
				snprintf(err, errlen,
					 "cannot create the folder "
					 "%s for the socket %s: %s%s",
					 dir, path, strerror(saved),
					 saved == EACCES || saved == EPERM ||
						 saved == EROFS
					     ? socket_path_access_hint()
					     : "");
				return ERR_IO;
			}
		}
	}
	/* made now, or made by another in between */
	return socket_path_check_private(path, err, errlen) ? ERR_STATE : 0;
}
