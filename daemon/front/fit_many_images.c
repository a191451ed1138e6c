/*
 * fit_many_images.c - the images of `vkinrd --fit A.png B.jpg ...` or
 * `--fit FOLDER` (fit_many.c): the files as given, a folder's .png, .jpg,
 * .jpeg and .webp files sorted by name, with -r its subfolders' too
 * (at most 32 deep; without -r the subfolders passed by are named on
 * stderr). Hidden entries and links to folders are left out; an entry
 * that is not a regular file (a FIFO, a device) is skipped with a
 * warning. Each image gets the name of its outputs: its base name
 * without the suffix, or its path below the folder named.
 */
#include "front/fit_many_images.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/image.h"

/* Whether a folder's entry is a file (a link to one counts); a FIFO,
 * device or folder named like an image is skipped with a warning. */
static int is_regular(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return 1;
	fprintf(stderr, "vkinrd: %s: skipped: it is %s, not a file\n", path,
		fileio_kind(path));
	return 0;
}

static int images_add(struct fit_many_images *im, const char *path,
		      const char *name, int name_len)
{
	if (im->n == im->cap) {
		int cap = im->cap ? im->cap * 2 : 16;
		char **p = realloc(im->paths, (size_t)cap * sizeof(*p));
		if (p)
			im->paths = p;
		char **q =
		    p ? realloc(im->names, (size_t)cap * sizeof(*q)) : NULL;
		if (!q)
			return ERR_NOMEM;
		im->names = q;
		im->cap = cap;
	}
	im->paths[im->n] = strdup(path);
	im->names[im->n] = strndup(name, (size_t)name_len);
	if (!im->paths[im->n] || !im->names[im->n]) {
		free(im->paths[im->n]);
		free(im->names[im->n]);
		return ERR_NOMEM;
	}
	im->n++;
	return 0;
}

void fit_many_images_free(struct fit_many_images *im)
{
	for (int i = 0; i < im->n; i++) {
		free(im->paths[i]);
		free(im->names[i]);
	}
	free(im->paths);
	free(im->names);
}

/* Folders below a folder named that --recursive searches at most. */
#define FIT_MANY_MAX_DEPTH 32

/* The subfolders a search without -r passes by: how many, and the
 * first by name, for the sentence that says so. */
struct skipped {
	int n;
	char first[64];
};

static void skipped_add(struct skipped *sk, const char *name)
{
	if (!sk->n++ || strcmp(name, sk->first) < 0)
		snprintf(sk->first, sizeof(sk->first), "%.63s", name);
}

/* The images of folder dir (prefix: its path below the folder named),
 * its subfolders' too when recursive, else those counted in sk; hidden
 * entries and links to folders left out. */
static int gather_folder(struct fit_many_images *im, const char *dir,
			 const char *prefix, int recursive, int depth,
			 struct skipped *sk)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d) {
		fprintf(stderr, "vkinrd: %s: cannot open the folder: %s\n", dir,
			strerror(errno));
		return 0;
	}
	while (rc == 0 && (e = readdir(d))) {
		char path[4096], name[4096];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		size_t dl = strlen(dir); /* "photos/" as given: one slash */
		snprintf(path, sizeof(path), "%s%s%s", dir,
			 dl && dir[dl - 1] == '/' ? "" : "/", e->d_name);
		snprintf(name, sizeof(name), "%s%s%s", prefix,
			 *prefix ? "/" : "", e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (!recursive)
				skipped_add(sk, e->d_name);
			else if (depth < FIT_MANY_MAX_DEPTH)
				rc = gather_folder(im, path, name, 1, depth + 1,
						   sk);
			else
				fprintf(stderr,
					"vkinrd: %s: skipped: nested more "
					"than %d folders deep\n",
					path, FIT_MANY_MAX_DEPTH);
			continue;
		}
		size_t suffix = image_suffix_len(e->d_name);
		if (!suffix || !is_regular(path))
			continue;
		if (image_is_recon_name(e->d_name)) { /* an export's */
			fprintf(stderr,
				"vkinrd: %s: left out: an export's "
				"reconstruction (name the file alone to fit "
				"it)\n",
				path);
			continue;
		}
		rc = images_add(im, path, name, (int)(strlen(name) - suffix));
	}
	closedir(d);
	return rc;
}

/* Sorts the images from first on by name, the paths with them. */
static void sort_images(struct fit_many_images *im, int first)
{
	for (int i = first + 1; i < im->n; i++)
		for (int j = i;
		     j > first && strcmp(im->names[j - 1], im->names[j]) > 0;
		     j--) {
			char *p = im->paths[j], *q = im->names[j];
			im->paths[j] = im->paths[j - 1];
			im->names[j] = im->names[j - 1];
			im->paths[j - 1] = p;
			im->names[j - 1] = q;
		}
}

int fit_many_images_gather(char **args, int nargs, int recursive,
			   struct fit_many_images *im)
{
	for (int i = 0; i < nargs; i++) {
		struct stat st;
		int first = im->n, rc;
		if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct skipped sk = { 0 };
			rc = gather_folder(im, args[i], "", recursive, 0, &sk);
			sort_images(im, first);
			if (sk.n) /* said, not silently passed by */
				fprintf(stderr,
					"vkinrd: %s: skipped %d subfolder%s "
					"(%s%s): -r descends into them\n",
					args[i], sk.n, sk.n > 1 ? "s" : "",
					sk.first, sk.n > 1 ? ", ..." : "");
		} else {
			const char *slash = strrchr(args[i], '/');
			const char *base = slash ? slash + 1 : args[i];
			const char *dot = strrchr(base, '.');
			rc = images_add(im, args[i], base,
					dot && dot != base ? (int)(dot - base)
							   : (int)strlen(base));
		}
		if (rc)
			return rc;
	}
	return 0;
}
