/*
 * socket_path.c - see socket_path.h. Reads the environment only; it
 * neither creates nor checks the path (the daemon's server.c makes the
 * folder, the client's conn.c says what went wrong when it connects).
 */
#include "util/socket_path.h"

#include <stdlib.h>
#include <string.h>

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
