/*
 * path.c - see path.h. Plain string work and mkdir(2); nothing here
 * follows or checks links: callers that write on a user's behalf go
 * through fileio.c.
 */
#include "util/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/errors.h"

char *path_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *path = malloc(n);
	if (path)
		snprintf(path, n, "%s/%s", dir, name);
	return path;
}

int path_make_dirs(const char *path, int mode)
{
	char *copy = strdup(path);
	int rc = 0;

	if (!copy)
		return ERR_NOMEM;
	/* each '/' after the first character ends a folder above path */
	for (char *s = copy + 1; *s && !rc; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(copy, (mode_t)mode) && errno != EEXIST)
			rc = ERR_IO;
		*s = '/';
	}
	if (!rc && mkdir(copy, (mode_t)mode) && errno != EEXIST)
		rc = ERR_IO;
	free(copy);
	return rc;
}
