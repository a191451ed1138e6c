/*
 * outfile.h - files a command writes on its user's behalf, where other
 * users may have been before it: the foreground fits' outputs (vkinrd
 * --fit) and the daemon's --log file.
 *
 * The rule, the same as vkinrctl export's: nothing that exists is
 * replaced without force, and never a file of another user, a folder or a
 * special file; a link is never followed (a temporary file created with
 * O_EXCL in the folder, renamed into place); and nothing is written in a
 * folder that another user can write to, or owns, unless it is the
 * user's own and not a sticky one (/tmp itself is refused, a folder of
 * one's own below it is fine). The folders above it are walked name by
 * name: each must be the user's or root's and, unless sticky, writable by
 * no other user, and a link on the way the user's or root's (its target
 * walked the same way), else another user could put a link in place of
 * a folder. Each function that refuses says why in err, naming the path.
 */
#ifndef VKINR_OUTFILE_H
#define VKINR_OUTFILE_H

#include <stddef.h>
#include <sys/stat.h>

/* What the functions return besides 0: OUTFILE_REFUSED when the rule
 * says no (the file exists, the folder is another's...), OUTFILE_FAILED
 * when the system did (no such folder, a full disk). err says which. */
#define OUTFILE_REFUSED 1
#define OUTFILE_FAILED (-1)

/* Whether a folder with this stat is safe to write in (see above). 0,
 * or OUTFILE_REFUSED with the reason in err. */
int outfile_folder_ok(const char *dir, const struct stat *st, char *err,
		      size_t errlen);
/* Opens path's folder into *dfd, checked as above, and points *base at
 * the name in it (for a caller that opens the file itself). */
int outfile_open_folder(const char *path, int *dfd, const char **base,
			char *err, size_t errlen);
/* Whether path may be written (with force: replaced): its folder opens
 * and is safe, and nothing is at path or (force) a file or link of the
 * user's own is. Checks only; outfile_write checks again. */
int outfile_check(const char *path, int force, char *err, size_t errlen);
/* Writes data to path under that rule, atomically: a temporary file in
 * the same folder, fsynced (unless in a batch: fileio_batch_begin),
 * renamed into place (without force, a rename
 * that fails if something appeared at path meanwhile). */
int outfile_write(const char *path, const void *data, size_t size, int mode,
		  int force, char *err, size_t errlen);

#endif
