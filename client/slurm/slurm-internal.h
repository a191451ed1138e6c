/*
 * slurm-internal.h - what the parts of vkinrctl's Slurm dataset fits
 * share: the files under OUT/.vkinr, a string table, the manifest
 * (slurm-manifest.c), one submission's settings (cmd-slurm.c reads the
 * options and names the images), the batch script and the files it
 * needs (slurm-script.c), and list --out, wait --out (slurm-status.c).
 */
#ifndef VKINR_CLIENT_SLURM_INTERNAL_H
#define VKINR_CLIENT_SLURM_INTERNAL_H

#include <stddef.h>
#include <stdio.h>
#include <wordexp.h>

#include "core/client.h"
#include "core/inputs.h"

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

/* ---- a string table (path -> name, and the names taken) ---- */

struct strmap {
	char **keys, **values;
	size_t cap, used;
};

const char *strmap_get(const struct strmap *m, const char *key);
/* Copies key and value; replaces nothing (the first value stays). */
int strmap_put(struct strmap *m, const char *key, const char *value);
void strmap_finish(struct strmap *m);

/* ---- the manifest: NAME<TAB>PATH a line ---- */

struct entry {
	char *name, *path;
};

struct manifest {
	struct entry *e;
	size_t n, cap;
};

int manifest_add(struct manifest *m, const char *name, const char *path);
void manifest_finish(struct manifest *m);
/* OUT/.vkinr/FILE (FILE "": the folder), malloc'ed; NULL when out of
 * memory. */
char *meta_path(const char *out, const char *file);
/* Reads OUT's manifest; ERR_NOT_FOUND when there is none. */
int manifest_read(const char *out, struct manifest *m);

/* ---- one submit --slurm ---- */

/* The options of submit --slurm, list --out and wait --out. */
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
	OPT_NAME,
	OPT_PARAM, /* then the table's options (fitopts.h) */
};

struct submission {
	const struct cmd_entry *self;
	struct client *cl;
	const char *out, *sbatch_args;
	char *out_abs; /* out made absolute, when it was not */
	long tasks, gpus, max_running, cpus;
	const char *time, *mem;             /* --time, --mem */
	const char *setup[MAX_SETUP_LINES]; /* --setup lines */
	int nsetup;
	const char *vkinrd;     /* --vkinrd, else PATH's or the installed */
	const char *name;       /* --name: the Slurm job's name */
	char job_name[64];      /* else the dataset folder's, made plain */
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

/* ---- the script and its files (slurm-script.c) ---- */

/* The first character of text that no quoting makes safe in the batch
 * script or the manifest (a control character: a newline would end the
 * line, a tab a manifest field); NULL when there is none. */
const char *slurm_unquotable(const char *text);
/* text as it is when the shell would read it so, else quoted. */
void put_word(FILE *f, const char *text);
/* Whether an executable named name is on PATH here. */
int on_path(const char *name);
/* The batch script of an array of tasks. */
void write_script(const struct submission *s, FILE *f, long tasks);
/* Runs argv, its stdout into *out (malloc'ed); the exit status, or -1. */
int run_capture(char *const argv[], char **out);
/* The manifest, the shards and the script under OUT/.vkinr; the
 * script's path into *script. */
int write_meta(const struct submission *s, long tasks, char **script);
/* sbatch SCRIPT (--sbatch's arguments are in it); the job id into id. */
int run_sbatch(const char *script, char *id, size_t idlen);
/* Appends "JOBID TASKS" to OUT/.vkinr/jobs. */
int append_job(const char *out, const char *id, long tasks);

#endif
