/*
 * inputs.c - the images a submission names: files, folders and lists,
 * the same way for `vkinrctl submit` and `submit --slurm` (see inputs.h).
 */
#include "inputs.h"

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
#include "client.h"

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

static int add_path(struct inputs *in, const char *path)
{
	char *copy = in->absolute ? realpath(path, NULL) : strdup(path);

	if (!copy && in->absolute && errno != ENOMEM) {
		refuse(in, path, "cannot read it: %s", strerror(errno));
		return 0;
	}
	if (!copy)
		return ERR_NOMEM;
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 64;
		char **paths = realloc(in->paths, cap * sizeof(*paths));
		if (!paths) {
			free(copy);
			return ERR_NOMEM;
		}
		in->paths = paths;
		in->cap = cap;
	}
	in->paths[in->n++] = copy;
	return 0;
}

/* Why a folder's entry is left out, or NULL when it is an image. */
static const char *left_out_why(const char *name, const char *path)
{
	struct stat st;

	if (name[0] == '.')
		return "a hidden file";
	if (stat(path, &st) < 0)
		return "cannot read it";
	if (S_ISDIR(st.st_mode))
		return "a folder (folders inside are not searched)";
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (!image_suffix_len(name))
		return "not named .png, .jpg or .jpeg";
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder stands for its PNG and JPEG files (not its subfolders), by
 * name; everything else in it is named with the reason. */
static int add_folder(struct inputs *in, const char *dir)
{
	size_t first = in->n;
	struct dirent *de;
	char *path;
	DIR *d;
	int rc = 0;

	in->expanded = 1;
	if (!(d = opendir(dir))) {
		refuse(in, dir, "cannot open the folder: %s", strerror(errno));
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		const char *why;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&path, "%s%s%s", dir,
			     dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
			     de->d_name) < 0) {
			rc = ERR_NOMEM;
			break;
		}
		if ((why = left_out_why(de->d_name, path)))
			client_warn("left out %s: %s", path, why);
		else
			rc = add_path(in, path);
		free(path);
	}
	closedir(d);
	if (rc == 0 && in->n == first)
		refuse(in, dir,
		       "the folder holds no .png, .jpg or .jpeg files");
	qsort(in->paths + first, in->n - first, sizeof(*in->paths), by_name);
	return rc;
}

int inputs_add(struct inputs *in, const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return add_folder(in, path);
	return add_path(in, path);
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
	for (size_t i = 0; i < in->n; i++)
		free(in->paths[i]);
	free(in->paths);
	in->paths = NULL;
	in->n = in->cap = 0;
}
