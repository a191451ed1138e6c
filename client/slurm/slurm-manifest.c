/*
 * slurm-manifest.c - the files a Slurm dataset fit keeps under
 * OUT/.vkinr (see slurm-internal.h): the manifest of image names and
 * paths, read and written, and the string table that names images
 * uniquely.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "core/fitopts.h"
#include "core/format.h"
#include "core/jobs.h"
#include "proto/params.h"
#include "util/image.h"
#include "util/path.h"
#include "slurm/slurm.h"
#include "slurm/slurm-internal.h"

/* ---------------------------------------------------------------------- */
/* A string table (path -> name, and the names taken)                      */
/* ---------------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t slot_of(const struct strmap *m, const char *key)
{
	size_t i = hash(key) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], key))
		i = (i + 1) & (m->cap - 1);
	return i;
}

const char *strmap_get(const struct strmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = slot_of(m, key);
	return m->keys[i] ? m->values[i] : NULL;
}

/* Copies key and value; replaces nothing (the first value stays). */
int strmap_put(struct strmap *m, const char *key, const char *value)
{
	if (2 * (m->used + 1) > m->cap) {
		struct strmap big = { .cap = m->cap ? 2 * m->cap : 64 };
		big.keys = calloc(big.cap, sizeof(char *));
		big.values = calloc(big.cap, sizeof(char *));
		if (!big.keys || !big.values) {
			free(big.keys), free(big.values);
			return ERR_NOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i]) {
				size_t j = slot_of(&big, m->keys[i]);
				big.keys[j] = m->keys[i];
				big.values[j] = m->values[i];
			}
		big.used = m->used;
		free(m->keys), free(m->values);
		*m = big;
	}
	size_t i = slot_of(m, key);
	if (m->keys[i])
		return 0;
	if (!(m->keys[i] = strdup(key)) || !(m->values[i] = strdup(value))) {
		free(m->keys[i]);
		m->keys[i] = NULL;
		return ERR_NOMEM;
	}
	m->used++;
	return 0;
}

void strmap_finish(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			free(m->keys[i]), free(m->values[i]);
	free(m->keys), free(m->values);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------------- */
/* The manifest                                                            */
/* ---------------------------------------------------------------------- */

int manifest_add(struct manifest *m, const char *name, const char *path)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct entry *e = realloc(m->e, cap * sizeof(*e));
		if (!e)
			return ERR_NOMEM;
		m->e = e, m->cap = cap;
	}
	m->e[m->n].name = strdup(name);
	m->e[m->n].path = strdup(path);
	if (!m->e[m->n].name || !m->e[m->n].path) {
		free(m->e[m->n].name), free(m->e[m->n].path);
		return ERR_NOMEM;
	}
	m->n++;
	return 0;
}

void manifest_finish(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].name), free(m->e[i].path);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

char *meta_path(const char *out, const char *file)
{
	char *p;
	return asprintf(&p, "%s/" META_DIR "%s%s", out, *file ? "/" : "",
			file) < 0
		   ? NULL
		   : p;
}

/* Reads OUT's manifest; ERR_NOT_FOUND when there is none. */
int manifest_read(const char *out, struct manifest *m)
{
	char *path = meta_path(out, MANIFEST), *save = NULL;
	uint8_t *data = NULL;
	size_t size;
	int rc =
	    path ? fileio_read(path, &data, &size, MAX_LIST_BYTES) : ERR_NOMEM;
	if (rc == ERR_IO && errno == ENOENT)
		rc = ERR_NOT_FOUND;
	for (char *line = rc ? NULL : strtok_r((char *)data, "\n", &save);
	     line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		/* a line not as vkinrctl writes them (edited by hand) would
		 * name an image, or end up in a new manifest, as no submission
		 * would; vkinrd --fit-task refuses it too */
		if (!*line || *line == '.' || strchr(line, '/') ||
		    slurm_unquotable(line) || slurm_unquotable(tab + 1)) {
			client_warn("%s: a line that is not NAME<TAB>PATH, "
				    "left out",
				    path);
			continue;
		}
		rc = manifest_add(m, line, tab + 1);
	}
	free(data);
	free(path);
	return rc;
}
