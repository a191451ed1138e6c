/*
 * path.h - joining a folder and a name, the folder of a path, and
 * creating a folder with the
 * folders above it: written once for the daemon's state folder, its job
 * folders, the dataset fits' output and the client's socket path.
 */
#ifndef VKINR_PATH_H
#define VKINR_PATH_H

/* "dir/name", malloc'ed; NULL when out of memory. */
char *path_join(const char *dir, const char *name);
/* The folder that holds path ("." for a bare name, "/" for "/name"),
 * malloc'ed; NULL when out of memory. */
char *path_parent(const char *path);
/*
 * mkdir -p: creates path and every missing folder above it with the given
 * mode (folders that exist are left as they are). 0, ERR_NOMEM, or ERR_IO
 * with errno saying why.
 */
int path_make_dirs(const char *path, int mode);

#endif
