/*
 * inputs.h - the images a submission names, gathered one way for
 * `vkinrctl submit` (to the daemon) and `submit --slurm` (a job array):
 * files as given, a folder for its *.png, *.jpg, *.jpeg and *.webp files
 * (sorted by name; every other entry, hidden files and subfolders
 * included, named on stderr with the reason it is left out, or, where
 * more than two share a reason, counted on one line that names the first
 * two, unless `verbose`; with
 * `recursive` (-r) the subfolders are searched too, hidden ones and links
 * to folders left out, and each image is named by its path below the
 * folder named: sub/a of DIR/sub/a.png), and --from-file lists (one path
 * a line, '-' for stdin; blank lines and lines starting with '#'
 * skipped).
 */
#ifndef VKINR_CLIENT_INPUTS_H
#define VKINR_CLIENT_INPUTS_H

#include <stddef.h>

struct inputs {
	char **paths; /* in order, each allocated */
	char **names; /* each path's name: its path below the folder named,
		       * without the image suffix ("sub/a"); NULL for a
		       * file named alone */
	size_t n, cap;
	int recursive; /* set by the caller: a folder's subfolders too */
	int absolute;  /* set by the caller: keep each path resolved
			   * (realpath); one that cannot be is refused */
	int expanded;  /* a folder or a list was named */
	int verbose;   /* set by the caller (-v): name every entry left
			* out */
	int nbad;      /* inputs refused (a folder that cannot be
			   * opened or holds no image, a list that cannot
			   * be read, an absolute path not found) */
	/* When set, called for each refused input after it is named on
	 * stderr ("FILE: WHY"). */
	void (*refused)(void *ctx, const char *file, const char *why);
	void *ctx;
};

/* A file (kept as given: its problems are named when it is read) or a
 * folder (its images). 0, or ERR_NOMEM. */
int inputs_add(struct inputs *in, const char *path);
/* Every path listed in the file list ('-': stdin). 0, or ERR_NOMEM. */
int inputs_add_list(struct inputs *in, const char *list);
void inputs_free(struct inputs *in);

#endif
