/*
 * cmd-slurm.c - a dataset fitted as a Slurm job array: `vkinrctl submit
 * --slurm --out OUT ...`, `vkinrctl list --out OUT` and `wait --out OUT`.
 *
 * submit gathers the images as plain submit does (inputs.c: files,
 * folders' *.png, *.jpg and *.jpeg, --from-file lists; every other entry
 * of a folder is named with the reason it is left out), gives each a folder name unique in OUT (the
 * file's name without .png or .jpg, then -2, -3... for a second image of
 * that name; names given by an earlier submission to OUT are kept), and
 * writes under OUT/.vkinr/:
 *   images.tsv   the manifest, NAME<TAB>PATH a line; task K of N fits
 *                lines K, K+N, K+2N... (vkinrd --fit-task)
 *   fit.sbatch   the batch script of the array
 *   jobs         "JOBID TASKS" a line, one per submission
 * and each task's output in OUT/logs/%A_%a.log, then runs sbatch and
 * prints the job id. The batch script passes Slurm's warning signal
 * (--signal=B:USR1@T) on to vkinrd, which checkpoints, and requeues the
 * task; a TERM (scancel, preemption) checkpoints too, but Slurm decides
 * whether the task comes back.
 *
 * The script is one an admin can read and run by hand: every request is
 * an #SBATCH line (the array and its throttle, stated defaults for time,
 * memory and CPUs, then --sbatch's own arguments, which win), so `sbatch
 * OUT/.vkinr/fit.sbatch` submits the same array; every path is quoted;
 * vkinrd is taken from PATH (after the --setup lines, e.g. `module load`)
 * or where `make install` puts it, never from a build tree, unless
 * --vkinrd names one.
 *
 * list and wait read the folders (OUT/NAME/result.json is the mark of an
 * ended image) and ask squeue about the last submission's tasks for the
 * images not ended. Nothing here talks to the daemon.
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
#include "fitopts.h"
#include "inputs.h"
#include "format.h"
#include "jobs.h"
#include "proto/params.h"
#include "util/image.h"
#include "util/path.h"
#include "slurm.h"

#define META_DIR ".vkinr"
#define MANIFEST "images.tsv"
#define MAX_LIST_BYTES ((size_t)1 << 30)
#define DEFAULT_MAX_TASKS 1000 /* Slurm's default MaxArraySize is 1001 */
#define WARN_SECONDS 120       /* --signal=B:USR1@WARN_SECONDS */
#define LOG_DIR "logs"         /* OUT/logs/%A_%a.log */
/* What a task asks for unless told otherwise: a long fit of a big image
 * at width 512 takes hours on one GPU, and a few GiB of host memory for
 * its decoding, checkpoints and the Vulkan driver. */
#define DEFAULT_TIME "08:00:00"
#define DEFAULT_MEM "4G"
#define DEFAULT_CPUS 2
#define MAX_SETUP_LINES 16
#ifndef VKINR_BINDIR
#define VKINR_BINDIR "/usr/local/bin" /* make install's $(PREFIX)/bin */
#endif

int slurm_has_option(int argc, char **argv, const char *option)
{
	size_t n = strlen(option);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], option, n) &&
		    (argv[i][n] == 0 || argv[i][n] == '='))
			return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* A string table (path -> name, and the names taken)                      */
/* ---------------------------------------------------------------------- */

struct strmap {
	char **keys, **values;
	size_t cap, used;
};

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

static const char *strmap_get(const struct strmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = slot_of(m, key);
	return m->keys[i] ? m->values[i] : NULL;
}

/* Copies key and value; replaces nothing (the first value stays). */
static int strmap_put(struct strmap *m, const char *key, const char *value)
{
	if (2 * (m->used + 1) > m->cap) {
		struct strmap big = {.cap = m->cap ? 2 * m->cap : 64};
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

static void strmap_finish(struct strmap *m)
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

struct entry {
	char *name, *path;
};

struct manifest {
	struct entry *e;
	size_t n, cap;
};

static int manifest_add(struct manifest *m, const char *name, const char *path)
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

static void manifest_finish(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].name), free(m->e[i].path);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static char *meta_path(const char *out, const char *file)
{
	char *p;
	return asprintf(&p, "%s/" META_DIR "%s%s", out, *file ? "/" : "",
			file) < 0 ? NULL : p;
}

/* Reads OUT's manifest; ERR_NOT_FOUND when there is none. */
static int manifest_read(const char *out, struct manifest *m)
{
	char *path = meta_path(out, MANIFEST), *save = NULL;
	uint8_t *data = NULL;
	size_t size;
	int rc = path ? fileio_read(path, &data, &size, MAX_LIST_BYTES)
		      : ERR_NOMEM;
	if (rc == ERR_IO && errno == ENOENT)
		rc = ERR_NOT_FOUND;
	for (char *line = rc ? NULL : strtok_r((char *)data, "\n", &save);
	     line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		rc = manifest_add(m, line, tab + 1);
	}
	free(data);
	free(path);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* submit --slurm                                                          */
/* ---------------------------------------------------------------------- */

enum {
	OPT_SLURM = OPT_FIRST_COMMAND_OPTION,
	OPT_OUT,
	OPT_TASKS,
	OPT_GPUS,
	OPT_SBATCH,
	OPT_DRY_RUN,
	OPT_FROM_FILE,
	OPT_ALLOW_CPU,
	OPT_CSV,
	OPT_MAX_RUNNING,
	OPT_TIME,
	OPT_MEM,
	OPT_CPUS,
	OPT_SETUP,
	OPT_VKINRD,
	OPT_PARAM, /* then the shared tables' options (fitopts.h) */
};

struct submission {
	const struct cmd_entry *self;
	struct client *cl;
	const char *out, *sbatch_args;
	char *out_abs;          /* out made absolute, when it was not */
	long tasks, gpus, max_running, cpus;
	const char *time, *mem; /* --time, --mem */
	const char *setup[MAX_SETUP_LINES]; /* --setup lines */
	int nsetup;
	const char *vkinrd;     /* --vkinrd, else PATH's or the installed */
	wordexp_t sbatch_words; /* --sbatch split as the shell would */
	int have_words;
	int dry_run, quiet, allow_cpu;
	char fit_args[2048];    /* options passed on to vkinrd --fit-task */
	struct manifest images; /* what this call fits, names given */
	struct strmap known;    /* path -> name from OUT's manifest */
	struct strmap taken;    /* name -> path */
	/* absolute paths, in order; the refused counted (nbad: missing) */
	struct inputs in;
};

/* The file's name without .png (.jpg, .jpeg), made a safe folder name. */
static char *base_name(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	if (image_suffix_len(base) < n)
		n -= image_suffix_len(base);
	char *name = strndup(n ? base : "image", n ? n : 5);
	for (char *c = name; c && *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._+-", *c))
			*c = '_';
	if (name && name[0] == '.')
		name[0] = '_';
	return name;
}

/* Names each input: as OUT's manifest did, else its base name, made
 * unique with -2, -3... An input listed twice is fitted once. */
static int assign_names(struct submission *s)
{
	struct manifest old = {0};
	int rc = manifest_read(s->out, &old);
	if (rc == ERR_NOT_FOUND)
		rc = 0;
	for (size_t i = 0; i < old.n && rc == 0; i++) {
		rc = strmap_put(&s->known, old.e[i].path, old.e[i].name);
		rc = rc ? rc : strmap_put(&s->taken, old.e[i].name, old.e[i].path);
	}
	manifest_finish(&old);
	struct strmap listed = {0};
	for (size_t i = 0; i < s->in.n && rc == 0; i++) {
		const char *path = s->in.paths[i];
		const char *name = strmap_get(&s->known, path);
		char *made = NULL;
		if (strmap_get(&listed, path))
			continue;
		if (!name) {
			char *base = base_name(path);
			if (!base)
				return ERR_NOMEM;
			made = strdup(base);
			for (int k = 2; made && strmap_get(&s->taken, made); k++) {
				free(made);
				if (asprintf(&made, "%s-%d", base, k) < 0)
					made = NULL;
			}
			free(base);
			if (!made)
				return ERR_NOMEM;
			name = made;
		}
		rc = strmap_put(&s->taken, name, path);
		rc = rc ? rc : strmap_put(&listed, path, name);
		rc = rc ? rc : manifest_add(&s->images, name, path);
		free(made);
	}
	strmap_finish(&listed);
	return rc;
}

/* 'text' with single quotes, for the shell. */
static void put_quoted(FILE *f, const char *text)
{
	fputc('\'', f);
	for (; *text; text++)
		if (*text == '\'')
			fputs("'\\''", f);
		else
			fputc(*text, f);
	fputc('\'', f);
}

/* text as it is when the shell would read it so, else quoted. */
static void put_word(FILE *f, const char *text)
{
	if (*text && strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
				  "RSTUVWXYZ0123456789.,_+-:/=@%") == strlen(text))
		fputs(text, f);
	else
		put_quoted(f, text);
}

/* One #SBATCH value: sbatch reads these lines itself and takes double
 * quotes and backslashes as a shell does, so a value with a space stays
 * whole. In a file pattern (pattern_dir: the folder of one) a literal '%'
 * is written %%; tail, written as it is, holds the pattern's own. */
static void put_sbatch_value(FILE *f, const char *text, int pattern_dir,
			     const char *tail)
{
	int plain = *text && !strpbrk(text, " \t\"\\#'$`");
	if (!plain)
		fputc('"', f);
	for (; *text; text++) {
		if (!plain && (*text == '"' || *text == '\\'))
			fputc('\\', f);
		if (pattern_dir && *text == '%')
			fputc('%', f);
		fputc(*text, f);
	}
	fputs(tail, f);
	if (!plain)
		fputc('"', f);
}

/* One of --sbatch's words: --name=VALUE with the value quoted if need be. */
static void put_sbatch_word(FILE *f, const char *word)
{
	const char *eq = word[0] == '-' ? strchr(word, '=') : NULL;
	if (eq) {
		fprintf(f, "%.*s", (int)(eq + 1 - word), word);
		word = eq + 1;
	}
	put_sbatch_value(f, word, 0, "");
}

/* --sbatch's words as #SBATCH lines: an option starts a line, the words
 * that follow it (a value given apart: --partition gpu) join it. */
static void put_sbatch_args(const struct submission *s, FILE *f)
{
	if (!s->have_words || !s->sbatch_words.we_wordc)
		return;
	fputs("# from --sbatch (a later line wins over an earlier one)", f);
	for (size_t i = 0; i < s->sbatch_words.we_wordc; i++) {
		const char *w = s->sbatch_words.we_wordv[i];
		fputs(w[0] == '-' || i == 0 ? "\n#SBATCH " : " ", f);
		put_sbatch_word(f, w);
	}
	fputc('\n', f);
}

/* Whether an executable named name is on PATH here. */
static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy = path ? strdup(path) : NULL, *save = NULL;
	int found = 0;
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL;
	     dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *full = path_join(*dir ? dir : ".", name);
		found = full && access(full, X_OK) == 0;
		free(full);
	}
	free(copy);
	return found;
}

static void write_script(const struct submission *s, FILE *f, long tasks)
{
	char *shards = meta_path(s->out, "shards");

	fprintf(f, "#!/bin/bash\n"
		   "# Written by vkinrctl submit --slurm: task K of %ld fits "
		   "the images of\n# .vkinr/shards/K.tsv (lines K, K+%ld, ... "
		   "of .vkinr/images.tsv) into\n# OUT/NAME/; done images are "
		   "skipped, checkpointed ones resume. To submit\n# it again "
		   "by hand: sbatch fit.sbatch\n", tasks, tasks);
	fprintf(f, "#SBATCH --job-name=vkinr\n#SBATCH --array=0-%ld", tasks - 1);
	if (s->max_running)
		fprintf(f, "%%%ld", s->max_running);
	fputs("\n#SBATCH --ntasks=1\n", f);
	if (s->gpus > 0)
		fprintf(f, "#SBATCH --gres=gpu:%ld\n", s->gpus);
	fprintf(f, "#SBATCH --time=%s\n#SBATCH --mem=%s\n"
		   "#SBATCH --cpus-per-task=%ld\n",
		s->time ? s->time : DEFAULT_TIME, s->mem ? s->mem : DEFAULT_MEM,
		s->cpus ? s->cpus : DEFAULT_CPUS);
	fprintf(f, "#SBATCH --signal=B:USR1@%d\n#SBATCH --requeue\n"
		   "#SBATCH --open-mode=append\n#SBATCH --output=", WARN_SECONDS);
	put_sbatch_value(f, s->out, 1, "/" LOG_DIR "/%A_%a.log");
	fputc('\n', f);
	put_sbatch_args(s, f);
	fputs("set -u\n", f);
	if (s->nsetup)
		fputs("# from --setup\n", f);
	for (int i = 0; i < s->nsetup; i++)
		fprintf(f, "%s\n", s->setup[i]);
	if (s->vkinrd) {
		fputs("vkinrd=", f);
		put_quoted(f, s->vkinrd);
		fputc('\n', f);
	} else {
		fputs("# vkinrd from PATH, else where make install put it\n"
		      "vkinrd=$(command -v vkinrd || echo ", f);
		put_quoted(f, VKINR_BINDIR "/vkinrd");
		fputs(")\n", f);
	}
	fputs("\"$vkinrd\" --fit-task ", f);
	put_quoted(f, shards);
	fputs("/\"$SLURM_ARRAY_TASK_ID\".tsv --out ", f);
	put_quoted(f, s->out);
	fprintf(f, "%s%s &\n", s->fit_args, s->allow_cpu ? " --allow-cpu" : "");
	fputs("pid=$!\nwarned=\n"
	      "# Slurm signals this shell; vkinrd checkpoints between epochs\n"
	      "trap 'warned=1; kill -USR1 $pid' USR1\n"
	      "trap 'kill -TERM $pid' TERM\n"
	      "while kill -0 $pid 2>/dev/null; do wait $pid; done\n"
	      "wait $pid\nstatus=$?\n"
	      "# 75: checkpointed on a signal. After the time-limit warning,\n"
	      "# come back; after a TERM (scancel, preemption) Slurm decides.\n"
	      "if [ $status = 75 ] && [ -n \"$warned\" ]; then\n"
	      "\tscontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"
	      "fi\nexit $status\n", f);
	free(shards);
}

/* Runs argv, its stdout into *out (malloc'ed); the exit status, or -1. */
static int run_capture(char *const argv[], char **out)
{
	int fds[2];
	*out = NULL;
	if (pipe(fds))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]), close(fds[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "vkinrctl: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	size_t used = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;
	while (buf && (n = read(fds[0], buf + used, cap - used - 1)) > 0) {
		used += (size_t)n;
		if (cap - used < 2) {
			char *bigger = realloc(buf, cap *= 2);
			if (!bigger)
				free(buf);
			buf = bigger;
		}
	}
	close(fds[0]);
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (buf)
		buf[used] = 0;
	*out = buf;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static int make_dir(const char *path)
{
	return mkdir(path, 0755) && errno != EEXIST ? ERR_IO : 0;
}

/* path and the folders above it that are missing (mkdir -p). */
static int make_dirs(const char *path)
{
	char *copy = strdup(path);
	int rc = copy ? 0 : ERR_NOMEM;
	for (char *slash = copy ? strchr(copy + 1, '/') : NULL; slash && !rc;
	     slash = strchr(slash + 1, '/')) {
		*slash = 0;
		rc = make_dir(copy);
		*slash = '/';
	}
	free(copy);
	return rc ? rc : make_dir(path);
}

/* shards/K.tsv: the lines of task K, so that each of a thousand tasks
 * reads its thousandth of the manifest, not all of it. */
static int write_shards(const struct submission *s, long tasks)
{
	char *dir = meta_path(s->out, "shards");
	int rc = dir ? make_dir(dir) : ERR_NOMEM;
	for (long k = 0; k < tasks && rc == 0; k++) {
		char *text = NULL, *path = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&text, &size);
		if (!f || asprintf(&path, "%s/%ld.tsv", dir, k) < 0) {
			if (f)
				fclose(f);
			free(text);
			rc = ERR_NOMEM;
			break;
		}
		for (size_t i = (size_t)k; i < s->images.n; i += (size_t)tasks)
			fprintf(f, "%s\t%s\n", s->images.e[i].name,
				s->images.e[i].path);
		rc = fclose(f) ? ERR_NOMEM
			       : fileio_write_atomic(path, text, size, 0644);
		free(text);
		free(path);
	}
	free(dir);
	return rc;
}

/* The manifest, the shards and the script under OUT/.vkinr. */
static int write_meta(const struct submission *s, long tasks, char **script)
{
	char *dir = meta_path(s->out, ""), *logs = path_join(s->out, LOG_DIR);
	char *manifest = meta_path(s->out, MANIFEST);
	char *text = NULL;
	size_t size = 0;
	int rc = dir && logs && manifest ? 0 : ERR_NOMEM;

	*script = meta_path(s->out, "fit.sbatch");
	rc = rc ? rc : make_dirs(s->out);
	rc = rc ? rc : make_dir(dir);
	rc = rc ? rc : make_dir(logs);
	if (rc == ERR_IO)
		client_warn("cannot create %s: %s", logs, strerror(errno));
	FILE *f = rc ? NULL : open_memstream(&text, &size);
	for (size_t i = 0; f && i < s->images.n; i++)
		fprintf(f, "%s\t%s\n", s->images.e[i].name, s->images.e[i].path);
	if (f && fclose(f) == 0)
		rc = fileio_write_atomic(manifest, text, size, 0644);
	free(text);
	text = NULL;
	rc = rc ? rc : write_shards(s, tasks);
	f = rc ? NULL : open_memstream(&text, &size);
	if (f) {
		write_script(s, f, tasks);
		rc = fclose(f) ? ERR_NOMEM : fileio_write_atomic(*script, text,
								 size, 0755);
	}
	free(text);
	free(dir), free(logs), free(manifest);
	return rc;
}

/* sbatch SCRIPT (--sbatch's arguments are in it); the job id into id. */
static int run_sbatch(const char *script, char *id, size_t idlen)
{
	char *argv[] = {"sbatch", "--parsable", (char *)script, NULL}, *out;
	int status = run_capture(argv, &out);

	if (status == 0 && out && isdigit((unsigned char)out[0])) {
		snprintf(id, idlen, "%.*s", (int)strspn(out, "0123456789"), out);
	} else {
		client_warn("sbatch failed%s (exit status %d); the script is "
			    "%s", status == 127 ? ": is Slurm installed here?"
						: "", status, script);
		status = CLIENT_EXIT_DAEMON;
	}
	free(out);
	return status ? status : 0;
}

static int append_job(const char *out, const char *id, long tasks)
{
	char *path = meta_path(out, "jobs");
	FILE *f = path ? fopen(path, "a") : NULL;
	int rc = f && fprintf(f, "%s %ld\n", id, tasks) > 0 ? 0 : ERR_IO;
	if (f && fclose(f))
		rc = ERR_IO;
	free(path);
	return rc;
}

/* " OPTION VALUE", the value quoted for the shell when it needs it. */
static void add_fit_arg(struct submission *s, const char *option,
			const char *value)
{
	size_t n = strlen(s->fit_args);
	FILE *f = fmemopen(s->fit_args + n, sizeof s->fit_args - n, "w");
	if (!f)
		return;
	fprintf(f, " %s ", option);
	put_word(f, value);
	fclose(f);
}

/* A whole number from lo to hi for option opt; 0 or the usage error's
 * exit status. */
static int parse_count(const struct cmd_entry *e, const char *opt,
		       const char *text, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < lo || v > hi)
		return cmd_usage_error(e, "%s must be a whole number from %ld "
				       "to %ld", opt, lo, hi);
	*out = v;
	return 0;
}

/* A training option checked against the table that submit, the daemon
 * and vkinrd use (proto/params.h, fitopts.h), then passed on to vkinrd
 * --fit-task as it is: every row but the queue's own (priority). */
static int parse_fit_param(struct submission *s, int c, const char *text)
{
	struct fit_value v;
	int rc = fit_option_parse(s->self, c, OPT_PARAM, text, &v);
	if (rc)
		return rc;
	if (param_table[v.id].flags & PARAM_QUEUE)
		return cmd_usage_error(s->self, "--priority orders the daemon's "
				       "queue; with --slurm, pass Slurm's "
				       "(--sbatch \"--nice=N\")");
	add_fit_arg(s, v.option, text);
	return 0;
}

/* Slurm's --mem: a number of MiB, or with a unit (4G). */
static int mem_is_valid(const char *text)
{
	size_t digits = strspn(text, "0123456789");
	const char *unit = text + digits;
	return digits && (!*unit || (strchr("KMGTkmgt", *unit) && !unit[1]));
}

static int parse_submit(struct submission *s, int argc, char **argv)
{
	static const struct option own[] = {
		{"slurm", no_argument, NULL, OPT_SLURM},
		{"out", required_argument, NULL, OPT_OUT},
		{"tasks", required_argument, NULL, OPT_TASKS},
		{"gpus-per-task", required_argument, NULL, OPT_GPUS},
		{"sbatch", required_argument, NULL, OPT_SBATCH},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"from-file", required_argument, NULL, OPT_FROM_FILE},
		{"allow-cpu", no_argument, NULL, OPT_ALLOW_CPU},
		{"max-running", required_argument, NULL, OPT_MAX_RUNNING},
		{"time", required_argument, NULL, OPT_TIME},
		{"mem", required_argument, NULL, OPT_MEM},
		{"cpus-per-task", required_argument, NULL, OPT_CPUS},
		{"setup", required_argument, NULL, OPT_SETUP},
		{"vkinrd", required_argument, NULL, OPT_VKINRD},
		{"quiet", no_argument, NULL, 'q'},
		CMD_COMMON_OPTIONS,
	};
	struct option opts[sizeof own / sizeof own[0] + FIT_OPTION_COUNT + 1] =
		{{0}};
	const struct cmd_entry *e = s->self;
	int c, rc;

	memcpy(opts, own, sizeof own);
	fit_options_table(opts + sizeof own / sizeof own[0], OPT_PARAM);
	while ((c = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
		if (fit_option_is(c, OPT_PARAM)) {
			if ((rc = parse_fit_param(s, c, optarg)))
				return rc;
			continue;
		}
		rc = 0;
		switch (c) {
		case OPT_SLURM: break;
		case OPT_OUT: s->out = optarg; break;
		case OPT_TASKS:
			rc = parse_count(e, "--tasks", optarg, 1, 1000000,
					 &s->tasks);
			break;
		case OPT_GPUS:
			rc = parse_count(e, "--gpus-per-task", optarg, 0, 16,
					 &s->gpus);
			break;
		case OPT_SBATCH: s->sbatch_args = optarg; break;
		case OPT_DRY_RUN: s->dry_run = 1; break;
		case OPT_FROM_FILE: rc = inputs_add_list(&s->in, optarg); break;
		case OPT_ALLOW_CPU: s->allow_cpu = 1; break;
		case OPT_MAX_RUNNING:
			rc = parse_count(e, "--max-running", optarg, 1, 1000000,
					 &s->max_running);
			break;
		case OPT_CPUS:
			rc = parse_count(e, "--cpus-per-task", optarg, 1, 4096,
					 &s->cpus);
			break;
		case OPT_TIME:
			if (!optarg[0] || strspn(optarg, "0123456789:-") !=
						  strlen(optarg))
				rc = cmd_usage_error(e, "--time takes Slurm's "
						     "form: MINUTES, H:MM:SS or "
						     "D-HH:MM:SS");
			s->time = optarg;
			break;
		case OPT_MEM:
			if (!mem_is_valid(optarg))
				rc = cmd_usage_error(e, "--mem takes Slurm's "
						     "form: a number of MiB, or "
						     "with K, M, G or T (4G)");
			s->mem = optarg;
			break;
		case OPT_SETUP:
			if (s->nsetup == MAX_SETUP_LINES || strchr(optarg, '\n'))
				rc = cmd_usage_error(e, "--setup takes one line "
						     "each time, at most %d",
						     MAX_SETUP_LINES);
			else
				s->setup[s->nsetup++] = optarg;
			break;
		case OPT_VKINRD: s->vkinrd = optarg; break;
		case 'q': s->quiet = 1; break;
		default:
			if ((rc = cmd_common_option(s->cl, e, c)) >= 0)
				return rc;
			rc = 0;
		}
		if (rc)
			return rc > 0 ? rc : client_fail(s->cl, rc, NULL);
	}
	for (int i = optind; i < argc; i++)
		if ((rc = inputs_add(&s->in, argv[i])) < 0)
			return client_fail(s->cl, rc, NULL);
	if (!s->out)
		return cmd_usage_error(e, "--slurm needs --out OUT, the folder "
					  "the results go to");
	if (s->out[0] != '/') {
		/* the tasks may start elsewhere: the script names it whole */
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd) ||
		    !(s->out_abs = path_join(cwd, s->out)))
			return client_fail(s->cl, ERR_NOMEM, NULL);
		s->out = s->out_abs;
	}
	if (s->gpus == 0 && !s->allow_cpu)
		return cmd_usage_error(e, "--gpus-per-task 0 leaves each task "
				       "only the CPU device, which vkinrd "
				       "refuses unless told: add --allow-cpu "
				       "to fit on the CPU");
	if (s->sbatch_args) {
		int bad = wordexp(s->sbatch_args, &s->sbatch_words,
				  WRDE_NOCMD | WRDE_UNDEF);
		if (bad)
			return cmd_usage_error(e, "--sbatch \"%s\": cannot "
					       "split it into arguments (quote "
					       "as in a shell; no $(...))",
					       s->sbatch_args);
		s->have_words = 1;
	}
	if (s->in.n == 0 && s->in.nbad == 0)
		return cmd_usage_error(e, "name at least one PNG or JPEG "
					  "file, a folder, or --from-file "
					  "LIST");
	return -1;
}

int slurm_submit_exec(struct client *cl, const struct cmd_entry *self,
		      int argc, char **argv)
{
	struct submission s = {.self = self, .cl = cl, .gpus = 1,
				.in = {.absolute = 1}};
	char *script = NULL, id[64] = "";
	int status = parse_submit(&s, argc, argv), rc;

	if (status >= 0)
		goto out;
	status = CLIENT_EXIT_OK;
	if ((rc = assign_names(&s)) < 0) {
		status = client_fail(cl, rc, NULL);
		goto out;
	}
	if (s.images.n == 0) {
		client_warn("no image to fit (named above)");
		status = CLIENT_EXIT_DAEMON;
		goto out;
	}
	long tasks = s.tasks ? s.tasks
			     : (long)(s.images.n < DEFAULT_MAX_TASKS
					      ? s.images.n
					      : DEFAULT_MAX_TASKS);
	if ((size_t)tasks > s.images.n)
		tasks = (long)s.images.n; /* no task without an image */
	if (!s.vkinrd && !s.nsetup && !on_path("vkinrd"))
		client_warn("vkinrd is not on PATH here: the tasks look for it "
			    "on theirs, then in " VKINR_BINDIR "; name it with "
			    "--vkinrd PATH or load it with --setup");
	if (s.dry_run) {
		status = s.in.nbad ? CLIENT_EXIT_DAEMON : CLIENT_EXIT_OK;
		if (!cl->json) {
			write_script(&s, stdout, tasks);
			goto out;
		}
		char *text = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&text, &size);
		cJSON *o = cJSON_CreateObject();
		if (f) {
			write_script(&s, f, tasks);
			fclose(f);
		}
		cJSON_AddStringToObject(o, "script", text ? text : "");
		cJSON_AddStringToObject(o, "out", s.out);
		cJSON_AddNumberToObject(o, "tasks", tasks);
		cJSON_AddNumberToObject(o, "images", s.images.n);
		cJSON_AddNumberToObject(o, "missing", s.in.nbad);
		client_print_json(o);
		cJSON_Delete(o);
		free(text);
		goto out;
	}
	if ((rc = write_meta(&s, tasks, &script)) < 0) {
		client_warn("cannot write under %s/" META_DIR ": %s", s.out,
			    error_message(rc));
		status = CLIENT_EXIT_DAEMON;
		goto out;
	}
	if ((status = run_sbatch(script, id, sizeof id)))
		goto out;
	if (append_job(s.out, id, tasks))
		client_warn("cannot record job %s in %s/" META_DIR "/jobs: "
			    "list and wait will not see its Slurm states", id,
			    s.out);
	if (cl->json)
		printf("{\"slurm_job\":\"%s\",\"tasks\":%ld,\"images\":%zu,"
		       "\"missing\":%d}\n", id, tasks, s.images.n, s.in.nbad);
	else if (s.quiet)
		printf("%s\n", id);
	else
		printf("Slurm job %s: %zu images over %ld tasks, results in "
		       "%s/NAME/\n(vkinrctl wait --out %s)\n", id, s.images.n,
		       tasks, s.out, s.out);
	if (s.in.nbad) {
		client_warn("%d input%s not found (named above)", s.in.nbad,
			    s.in.nbad == 1 ? " was" : "s were");
		status = CLIENT_EXIT_DAEMON;
	}
out:
	inputs_free(&s.in);
	free(s.out_abs);
	free(script);
	if (s.have_words)
		wordfree(&s.sbatch_words);
	manifest_finish(&s.images);
	strmap_finish(&s.known);
	strmap_finish(&s.taken);
	return status;
}

/* ---------------------------------------------------------------------- */
/* list --out, wait --out                                                  */
/* ---------------------------------------------------------------------- */

/* The last submission: its job id and task count, from OUT/.vkinr/jobs. */
static int last_job(const char *out, char *id, size_t idlen, long *tasks)
{
	char *path = meta_path(out, "jobs"), line[128];
	FILE *f = path ? fopen(path, "r") : NULL;
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		char jid[64];
		long n;
		if (sscanf(line, "%63s %ld", jid, &n) == 2 && n > 0) {
			snprintf(id, idlen, "%s", jid);
			*tasks = n;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	free(path);
	return found;
}

/* Slurm states of the job's tasks still known to squeue, by task index
 * (NULL: not queued). Returns -1 when squeue could not be asked. */
static int slurm_states(const char *id, long tasks, char ***states)
{
	char *argv[] = {"squeue", "-h", "-r", "-j", (char *)id, "-o", "%K %T",
			NULL};
	char *text = NULL, *save = NULL;
	*states = calloc((size_t)tasks, sizeof(char *));
	if (!*states)
		return -1;
	int status = run_capture(argv, &text);
	for (char *line = status == 0 && text ? strtok_r(text, "\n", &save)
					      : NULL;
	     line; line = strtok_r(NULL, "\n", &save)) {
		long k;
		char state[32];
		if (sscanf(line, "%ld %31s", &k, state) == 2 && k >= 0 &&
		    k < tasks && !(*states)[k]) {
			for (char *c = state; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			(*states)[k] = strdup(state);
		}
	}
	free(text);
	return status == 0 ? 0 : -1;
}

struct overview {
	cJSON *images;    /* one object per manifest line */
	int done, failed, unended;
	double seconds, psnr_sum;
	char job[64];
	int squeue_ok;
};

static cJSON *read_result(const char *out, const char *name)
{
	char *path;
	uint8_t *data = NULL;
	size_t size;
	cJSON *r = NULL;
	if (asprintf(&path, "%s/%s/result.json", out, name) < 0)
		return NULL;
	if (fileio_read(path, &data, &size, 1 << 20) == 0)
		r = cJSON_Parse((const char *)data);
	free(data);
	free(path);
	return r;
}

static int has_checkpoint(const char *out, const char *name)
{
	char *path;
	if (asprintf(&path, "%s/%s/checkpoint.safetensors", out, name) < 0)
		return 0;
	int yes = access(path, F_OK) == 0;
	free(path);
	return yes;
}

/* Squeue first, then the folders: a task writes its results before it
 * leaves the queue, so an image seen unended with its task gone is lost. */
static int overview_read(const char *out, struct overview *o)
{
	struct manifest m = {0};
	char **states = NULL;
	long tasks = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	if (last_job(out, o->job, sizeof o->job, &tasks))
		o->squeue_ok = slurm_states(o->job, tasks, &states) == 0;
	if ((rc = manifest_read(out, &m)) < 0)
		goto fail;
	o->images = cJSON_CreateArray();
	for (size_t i = 0; i < m.n && o->images; i++) {
		cJSON *r = read_result(out, m.e[i].name);
		const char *state = job_str(r, "state", "");
		if (!r || (strcmp(state, "done") && strcmp(state, "failed"))) {
			cJSON_Delete(r);
			r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "name", m.e[i].name);
			cJSON_AddStringToObject(r, "file", m.e[i].path);
			long k = tasks ? (long)(i % (size_t)tasks) : -1;
			const char *slurm = k >= 0 && states ? states[k] : NULL;
			cJSON_AddStringToObject(
				r, "state",
				has_checkpoint(out, m.e[i].name) ? "checkpointed"
				: slurm ? "queued" : "not fitted");
			if (k >= 0) {
				char tid[96];
				snprintf(tid, sizeof tid, "%s_%ld", o->job, k);
				cJSON_AddStringToObject(r, "slurm_job", tid);
				cJSON_AddStringToObject(r, "slurm_state",
							slurm ? slurm : "gone");
			}
			o->unended++;
		} else if (!strcmp(state, "done")) {
			o->done++;
			o->psnr_sum += job_num(r, "psnr", 0);
		} else {
			o->failed++;
		}
		if (isfinite(job_num(r, "seconds", NAN)))
			o->seconds += job_num(r, "seconds", 0);
		cJSON_AddItemToArray(o->images, r);
	}
	if (!o->images)
		rc = ERR_NOMEM;
fail:
	for (long k = 0; states && k < tasks; k++)
		free(states[k]);
	free(states);
	manifest_finish(&m);
	return rc;
}

static void print_csv_field(const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		putchar('"');
		for (; *s; s++)
			fputs(*s == '"' ? "\"\"" : (char[]){*s, 0}, stdout);
		putchar('"');
	} else {
		fputs(s, stdout);
	}
	putchar(last ? '\n' : ',');
}

static void print_overview(const struct overview *o, int csv, int json)
{
	const cJSON *r;
	char buf[64], size[32], psnr[32], epochs[32], took[32];

	if (json) {
		cJSON *top = cJSON_CreateObject();
		cJSON_AddItemReferenceToObject(top, "images", o->images);
		cJSON_AddNumberToObject(top, "done", o->done);
		cJSON_AddNumberToObject(top, "failed", o->failed);
		cJSON_AddNumberToObject(top, "unended", o->unended);
		if (*o->job)
			cJSON_AddStringToObject(top, "slurm_job", o->job);
		client_print_json(top);
		cJSON_Delete(top);
		return;
	}
	if (csv)
		fputs("name,file,state,width,height,epochs,psnr,seconds,"
		      "device,slurm_job,slurm_state,error\n", stdout);
	else
		printf("%-20s %9s %7s %8s %8s %-12s %-14s %s\n", "NAME", "SIZE",
		       "EPOCHS", "PSNR", "TIME", "STATE", "SLURM", "DEVICE");
	cJSON_ArrayForEach(r, o->images) {
		double w = job_num(r, "width", NAN), h = job_num(r, "height", NAN);
		if (csv) {
			const char *text[] = {"name", "file", "state"};
			for (int i = 0; i < 3; i++)
				print_csv_field(job_str(r, text[i], ""), 0);
			const char *nums[] = {"width", "height", "epochs", "psnr",
					      "seconds"};
			for (int i = 0; i < 5; i++) {
				double v = job_num(r, nums[i], NAN);
				snprintf(buf, sizeof buf, isfinite(v) ? "%.6g" : "",
					 v);
				print_csv_field(buf, 0);
			}
			print_csv_field(job_str(r, "device", ""), 0);
			print_csv_field(job_str(r, "slurm_job", ""), 0);
			print_csv_field(job_str(r, "slurm_state", ""), 0);
			print_csv_field(job_str(r, "error", ""), 1);
			continue;
		}
		if (isfinite(w) && isfinite(h))
			snprintf(size, sizeof size, "%.0fx%.0f", w, h);
		else
			snprintf(size, sizeof size, "-");
		snprintf(buf, sizeof buf, "%s%s%s", job_str(r, "slurm_job", "-"),
			 cJSON_HasObjectItem(r, "slurm_state") ? " " : "",
			 job_str(r, "slurm_state", ""));
		printf("%-20.20s %9s %7s %8s %8s %-12s %-14s %s\n",
		       job_str(r, "name", "-"), size,
		       fmt_number("%.0f", job_num(r, "epochs", NAN), epochs,
				  sizeof epochs),
		       fmt_number("%.2f", job_num(r, "psnr", NAN), psnr,
				  sizeof psnr),
		       fmt_duration(job_num(r, "seconds", NAN), took, sizeof took),
		       job_str(r, "state", "?"), buf,
		       job_str(r, "error", job_str(r, "device", "-")));
	}
	if (csv)
		return;
	printf("%d images: %d done, %d failed, %d not ended", o->done + o->failed
	       + o->unended, o->done, o->failed, o->unended);
	if (o->done)
		printf("; mean PSNR %.2f dB", o->psnr_sum / o->done);
	if (o->seconds > 0)
		printf("; %s of fitting", fmt_duration(o->seconds, buf, sizeof buf));
	putchar('\n');
}

static int parse_out_options(struct client *cl, const struct cmd_entry *self,
			     int argc, char **argv, const char **out, int *csv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, OPT_OUT},
		{"csv", no_argument, NULL, OPT_CSV},
		CMD_COMMON_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == OPT_OUT)
			*out = optarg;
		else if (c == OPT_CSV && csv)
			*csv = 1;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind < argc)
		return cmd_usage_error(self, "unexpected argument '%s' (--out "
					     "takes no job ids)", argv[optind]);
	if (csv && *csv && cl->json)
		return cmd_usage_error(self, "--csv and --json exclude each "
					     "other");
	return -1;
}

static int overview_or_fail(const char *out, struct overview *o)
{
	int rc = overview_read(out, o);
	if (rc == ERR_NOT_FOUND)
		client_warn("%s holds no dataset fit (no %s/" META_DIR "/"
			    MANIFEST "): submit one with vkinrctl submit "
			    "--slurm --out %s", out, out, out);
	else if (rc < 0)
		client_warn("%s: %s", out, error_message(rc));
	return rc;
}

int slurm_list_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv)
{
	const char *out = NULL;
	int csv = 0, rc = parse_out_options(cl, self, argc, argv, &out, &csv);
	struct overview o;
	if (rc >= 0)
		return rc;
	if (overview_or_fail(out, &o) < 0)
		return CLIENT_EXIT_DAEMON;
	print_overview(&o, csv, cl->json);
	cJSON_Delete(o.images);
	return CLIENT_EXIT_OK;
}

/* How many of the job's tasks squeue still lists; -1 when it cannot say. */
static int queued_tasks(const char *id, long tasks)
{
	char **states = NULL;
	int n = slurm_states(id, tasks, &states) == 0 ? 0 : -1;
	for (long k = 0; states && k < tasks; k++) {
		n += n >= 0 && states[k];
		free(states[k]);
	}
	free(states);
	return n;
}

/* Asks squeue (more and more rarely, up to every 10 s) until no task of
 * the last submission is queued, then reads the results once: a million
 * result files are not read again at every poll. */
int slurm_wait_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv)
{
	const char *out = NULL;
	int rc = parse_out_options(cl, self, argc, argv, &out, NULL);
	struct overview o;
	char id[64];
	long tasks;
	if (rc >= 0)
		return rc;
	if (last_job(out, id, sizeof id, &tasks)) {
		double pause = 0.5;
		while (queued_tasks(id, tasks) > 0) {
			struct timespec ts = {(time_t)pause,
					      (long)((pause - (time_t)pause) * 1e9)};
			nanosleep(&ts, NULL);
			pause = pause * 1.25 < 10 ? pause * 1.25 : 10;
		}
	}
	if (overview_or_fail(out, &o) < 0)
		return CLIENT_EXIT_DAEMON;
	print_overview(&o, 0, cl->json);
	cJSON_Delete(o.images);
	if (o.unended)
		client_warn("%d image%s not ended and %s: submit the same "
			    "dataset again to fit %s", o.unended,
			    o.unended == 1 ? " is" : "s are",
			    !*o.job ? "no Slurm job is recorded"
			    : !o.squeue_ok ? "squeue could not be asked"
					   : "no task is queued",
			    o.unended == 1 ? "it" : "them");
	return o.failed || o.unended ? CLIENT_EXIT_JOB_FAILED : CLIENT_EXIT_OK;
}
