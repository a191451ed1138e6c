/*
 * inputs.c - the images a submission names: files, folders and lists,
 * the same way for `vkinrctl submit` and `submit --slurm` (see inputs.h).
 */
#include "core/inputs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/errors.h"
#include "util/image.h"
#include "core/client.h"

/* Folders below a folder named that -r searches at most. */
#define INPUTS_MAX_DEPTH 32

static void refuse(struct inputs *in, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void refuse(struct inputs *in, const char *file, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	client_warn("%s: %s", file, why);
	in->nbad++;
	if (in->refused)
		in->refused(in->ctx, file, why);
}

/* Keeps path (resolved when in->absolute) and its name (NULL: a file
 * named alone). */
static int add_path(struct inputs *in, const char *path, const char *name)
{
	char *copy = in->absolute ? realpath(path, NULL) : strdup(path);
	char *named = name ? strdup(name) : NULL;

	if (!copy && in->absolute && errno != ENOMEM) {
		free(named);
		refuse(in, path, "cannot read it: %s", strerror(errno));
		return 0;
	}
	if (!copy || (name && !named)) {
		free(copy);
		free(named);
		return ERR_NOMEM;
	}
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 64;
		char **paths = realloc(in->paths, cap * sizeof(*paths));
		if (paths)
			in->paths = paths;
		char **names =
		    paths ? realloc(in->names, cap * sizeof(*names)) : NULL;
		if (!names) {
			free(copy);
			free(named);
			return ERR_NOMEM;
		}
		in->names = names;
		in->cap = cap;
	}
	in->names[in->n] = named;
	in->paths[in->n++] = copy;
	return 0;
}

/* Why a folder's entry is left out, or NULL when it is an image; *dir
 * set when it is a folder to search (-r). */
static const char *left_out_why(const struct inputs *in, const char *name,
				const char *path, int depth, int *dir)
{
	struct stat st, lst;

	*dir = 0;
	if (name[0] == '.')
		return stat(path, &st) == 0 && S_ISDIR(st.st_mode)
			   ? "a hidden folder"
			   : "a hidden file";
	if (stat(path, &st) < 0)
		return "cannot read it";
	if (S_ISDIR(st.st_mode)) {
		if (!in->recursive)
			return "a folder (-r searches the folders inside)";
		if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
			return "a link to a folder (-r does not follow links)";
		if (depth >= INPUTS_MAX_DEPTH)
			return "a folder nested too deep (-r searches "
			       "32 levels)";
		*dir = 1;
		return NULL;
	}
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (!image_suffix_len(name))
		return "not named .png, .jpg, .jpeg or .webp";
	if (image_is_recon_name(name))
		return "an export's reconstruction (name the file alone to "
		       "submit it)";
	return NULL;
}

/* The reasons a folder's entries are left out: at most this many kinds
 * (left_out_why's sentences), each its count and its first entries. */
#define INPUTS_REASONS 12
#define INPUTS_SHOWN 2

struct left_out {
	const char *why; /* one of left_out_why's sentences */
	int n;
	char *first[INPUTS_SHOWN];
};

/* A folder's images found so far: their paths and names; what is left
 * out, by reason. */
struct found {
	char **paths, **names;
	size_t n, cap;
	struct left_out out[INPUTS_REASONS];
	int nout;
};

/* An entry left out: named at once with -v (in->verbose), else counted
 * under its reason to be said once (say_left_out). */
static void note_left_out(const struct inputs *in, struct found *f,
			  const char *path, const char *why)
{
	int i = 0;
	while (i < f->nout && f->out[i].why != why)
		i++;
	if (in->verbose || (i == f->nout && i == INPUTS_REASONS)) {
		client_warn("left out %s: %s", path, why);
		return;
	}
	if (i == f->nout)
		f->out[f->nout++] = (struct left_out){ .why = why };
	struct left_out *o = &f->out[i];
	char *keep = strdup(path); /* the first by name are kept */
	for (int k = 0; keep && k < INPUTS_SHOWN; k++)
		if (k >= o->n || !o->first[k] ||
		    strcmp(keep, o->first[k]) < 0) {
			char *t = k < o->n ? o->first[k] : NULL;
			o->first[k] = keep;
			keep = t;
		}
	free(keep);
	o->n++;
}

/* path below dir (its subfolders' entries with -r): "sub/x.txt". */
static const char *below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (!path)
		return "?";
	if (strncmp(path, dir, n) || !path[n])
		return path;
	return path + n + (path[n] == '/' && dir[n - 1] != '/');
}

/* What a folder left out: each entry named where its reason has at most
 * INPUTS_FEW of them, else one line with the count and the first ones
 * (a folder exported into holds a NAME.safetensors for every photo). */
#define INPUTS_FEW 2
static void say_left_out(const struct inputs *in, struct found *f,
			 const char *dir)
{
	for (int i = 0; i < f->nout; i++) {
		struct left_out *o = &f->out[i];
		if (o->n <= INPUTS_FEW) {
			for (int k = 0; k < o->n; k++)
				client_warn("left out %s: %s",
					    o->first[k] ? o->first[k] : "?",
					    o->why);
		} else {
			client_warn("left out %d entries of %s%s, %s: %s, %s "
				    "and %d more (-v names each)",
				    o->n, dir,
				    in->recursive ? " and its subfolders" : "",
				    o->why, below(o->first[0], dir),
				    below(o->first[1], dir),
				    o->n - INPUTS_SHOWN);
		}
		for (int k = 0; k < INPUTS_SHOWN; k++)
			free(o->first[k]);
	}
	f->nout = 0;
}

static int found_add(struct found *f, char *path, char *name)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		char **p = realloc(f->paths, cap * sizeof(*p));
		if (p)
			f->paths = p;
		char **q = p ? realloc(f->names, cap * sizeof(*q)) : NULL;
		if (!q) {
			free(path);
			free(name);
			return ERR_NOMEM;
		}
		f->names = q;
		f->cap = cap;
	}
	f->paths[f->n] = path;
	f->names[f->n++] = name;
	return 0;
}

/* The images of dir (its subfolders' too with -r, at depth + 1), named
 * prefix/NAME without the image suffix. */
static int search_folder(struct inputs *in, struct found *f, const char *dir,
			 const char *prefix, int depth)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (!(d = opendir(dir))) {
		if (depth == 0)
			refuse(in, dir, "cannot open the folder: %s",
			       strerror(errno));
		else
			client_warn("left out %s: cannot open the folder: %s",
				    dir, strerror(errno));
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		const char *why;
		char *path, *name;
		int sub;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&path, "%s%s%s", dir,
			     dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
			     de->d_name) < 0) {
			rc = ERR_NOMEM;
			break;
		}
		if ((why = left_out_why(in, de->d_name, path, depth, &sub))) {
			note_left_out(in, f, path, why);
			free(path);
			continue;
		}
		size_t len = strlen(de->d_name) -
			     (sub ? 0 : image_suffix_len(de->d_name));
		if (asprintf(&name, "%s%s%.*s", prefix, *prefix ? "/" : "",
			     (int)len, de->d_name) < 0) {
			free(path);
			rc = ERR_NOMEM;
			break;
		}
		if (sub) {
			rc = search_folder(in, f, path, name, depth + 1);
			free(path);
			free(name);
		} else {
			rc = found_add(f, path, name);
		}
	}
	closedir(d);
	return rc;
}

/* Sorts by name, the paths with them. */
static void sort_found(struct found *f)
{
	for (size_t i = 1; i < f->n; i++) /* insertion: stable, no pairs */
		for (size_t j = i;
		     j > 0 && strcmp(f->names[j - 1], f->names[j]) > 0; j--) {
			char *p = f->paths[j], *q = f->names[j];
			f->paths[j] = f->paths[j - 1];
			f->names[j] = f->names[j - 1];
			f->paths[j - 1] = p;
			f->names[j - 1] = q;
		}
}

/* A folder stands for its images (with -r its subfolders' too), by name;
 * everything else in it is named with the reason. */
static int add_folder(struct inputs *in, const char *dir)
{
	struct found f = { 0 };
	int nbad = in->nbad;
	int rc;

	in->expanded = 1;
	rc = search_folder(in, &f, dir, "", 0);
	say_left_out(in, &f, dir);
	if (rc == 0 && f.n == 0 && in->nbad == nbad)
		refuse(in, dir,
		       in->recursive
			   ? "the folder and its subfolders hold no .png, "
			     ".jpg, .jpeg or .webp files"
			   : "the folder holds no .png, .jpg, .jpeg or .webp "
			     "files");
	if (rc == 0)
		sort_found(&f);
	for (size_t i = 0; i < f.n; i++) {
		if (rc == 0)
			rc = add_path(in, f.paths[i], f.names[i]);
		free(f.paths[i]);
		free(f.names[i]);
	}
	free(f.paths);
	free(f.names);
	return rc;
}

int inputs_add(struct inputs *in, const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return add_folder(in, path);
	return add_path(in, path, NULL);
}

int inputs_add_list(struct inputs *in, const char *list)
{
	FILE *f = strcmp(list, "-") ? fopen(list, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;

	in->expanded = 1;
	if (!f) {
		refuse(in, list, "cannot read the list: %s", strerror(errno));
		return 0;
	}
	while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
		while (len > 0 && isspace((unsigned char)line[len - 1]))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		rc = inputs_add(in, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

void inputs_free(struct inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		free(in->paths[i]);
		free(in->names[i]);
	}
	free(in->paths);
	free(in->names);
	in->paths = in->names = NULL;
	in->n = in->cap = 0;
}
