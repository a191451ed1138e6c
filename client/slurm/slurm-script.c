/*
 * slurm-script.c - the batch script of a Slurm dataset fit and the files
 * it reads (see cmd-slurm.c for what the script does): every request an
 * #SBATCH line, every path quoted, the manifest split into one shard a
 * task, then sbatch run and the job id kept in OUT/.vkinr/jobs.
 *
 * Quoting: a shell word is written 'as is' in single quotes (a quote
 * inside as '\''), an #SBATCH value in double quotes with '"' and '\'
 * escaped (sbatch reads those lines itself, a '#' outside quotes starting
 * a comment). Neither can carry a line break, and a tab would be a field
 * of the manifest: text with a control character never gets here
 * (slurm_unquotable, checked by cmd-slurm.c).
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

const char *slurm_unquotable(const char *text)
{
	for (; *text; text++)
		if ((unsigned char)*text < 0x20 || *text == 0x7f)
			return text;
	return NULL;
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
void put_word(FILE *f, const char *text)
{
	if (*text &&
	    strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
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

/* One of --sbatch's words: --name=VALUE with the value quoted if need be
 * (a name of other characters than an option's: the whole word). */
static void put_sbatch_word(FILE *f, const char *word)
{
	const char *eq = word[0] == '-' ? strchr(word, '=') : NULL;
	if (eq && strspn(word, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
			       "RSTUVWXYZ0123456789_") == (size_t)(eq - word)) {
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
int on_path(const char *name)
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

void write_script(const struct submission *s, FILE *f, long tasks)
{
	char *shards = meta_path(s->out, "shards");

	fprintf(f,
		"#!/bin/bash\n"
		"# Written by vkinrctl submit --slurm: task K of %ld fits "
		"the images of\n# .vkinr/shards/K.tsv (lines K, K+%ld, ... "
		"of .vkinr/images.tsv) into\n# OUT/NAME/; done images are "
		"skipped, checkpointed ones resume. To submit\n# it again "
		"by hand: sbatch fit.sbatch\n",
		tasks, tasks);
	fputs("#SBATCH --job-name=", f);
	put_sbatch_value(f, s->name ? s->name : s->job_name, 0, "");
	fprintf(f, "\n#SBATCH --array=0-%ld", tasks - 1);
	if (s->max_running)
		fprintf(f, "%%%ld", s->max_running);
	fputs("\n#SBATCH --ntasks=1\n", f);
	if (s->gpus > 0)
		fprintf(f, "#SBATCH --gres=gpu:%ld\n", s->gpus);
	fprintf(f,
		"#SBATCH --time=%s\n#SBATCH --mem=%s\n"
		"#SBATCH --cpus-per-task=%ld\n",
		s->time ? s->time : DEFAULT_TIME, s->mem ? s->mem : DEFAULT_MEM,
		s->cpus ? s->cpus : DEFAULT_CPUS);
	fprintf(f,
		"#SBATCH --signal=B:USR1@%d\n#SBATCH --requeue\n"
		"#SBATCH --open-mode=append\n#SBATCH --output=",
		WARN_SECONDS);
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
		      "vkinrd=$(command -v vkinrd || echo ",
		      f);
		put_quoted(f, VKINR_BINDIR "/vkinrd");
		fputs(")\n", f);
	}
	fputs("# one job step, which Slurm accounts for and signals (run "
	      "by hand,\n# outside a job: vkinrd alone); exec, so that $! is "
	      "srun's pid\n"
	      "step() {\n"
	      "\tif [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
	      "\t\texec srun --ntasks=1 --nodes=1 "
	      "${SLURM_CPUS_PER_TASK:+--cpus-per-task=$SLURM_CPUS_PER_TASK} "
	      "\"$@\"\n"
	      "\tfi\n"
	      "\texec \"$@\"\n"
	      "}\n"
	      "step \"$vkinrd\" --fit-task ",
	      f);
	put_quoted(f, shards);
	fputs("/\"$SLURM_ARRAY_TASK_ID\".tsv --out ", f);
	put_quoted(f, s->out);
	fprintf(f, "%s%s &\n", s->fit_args, s->allow_cpu ? " --allow-cpu" : "");
	fputs("pid=$!\nwarned=\n"
	      "# Slurm signals this shell; vkinrd checkpoints between epochs\n"
	      "# on USR1 or TERM. srun passes a USR1 on but answers a TERM\n"
	      "# by killing its step, so this shell passes either as USR1.\n"
	      "trap 'warned=1; kill -USR1 $pid' USR1\n"
	      "trap 'kill -USR1 $pid' TERM\n"
	      "while kill -0 $pid 2>/dev/null; do wait $pid; done\n"
	      "wait $pid\nstatus=$?\n"
	      "# 75: checkpointed on a signal. After the time-limit warning,\n"
	      "# come back; after a TERM (scancel, preemption) Slurm decides.\n"
	      "if [ $status = 75 ] && [ -n \"$warned\" ]; then\n"
	      "\tscontrol requeue "
	      "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"
	      "fi\nexit $status\n",
	      f);
	free(shards);
}

/* Runs argv, its stdout into *out (malloc'ed); the exit status, or -1. */
int run_capture(char *const argv[], char **out)
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
int make_dirs(const char *path)
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
int write_meta(const struct submission *s, long tasks, char **script)
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
		fprintf(f, "%s\t%s\n", s->images.e[i].name,
			s->images.e[i].path);
	if (f && fclose(f) == 0)
		rc = fileio_write_atomic(manifest, text, size, 0644);
	free(text);
	text = NULL;
	rc = rc ? rc : write_shards(s, tasks);
	f = rc ? NULL : open_memstream(&text, &size);
	if (f) {
		write_script(s, f, tasks);
		rc = fclose(f) ? ERR_NOMEM
			       : fileio_write_atomic(*script, text, size, 0755);
	}
	free(text);
	free(dir), free(logs), free(manifest);
	return rc;
}

/* sbatch SCRIPT (--sbatch's arguments are in it); the job id into id. */
int run_sbatch(const char *script, char *id, size_t idlen)
{
	char *argv[] = { "sbatch", "--parsable", (char *)script, NULL }, *out;
	int status = run_capture(argv, &out);

	if (status == 0 && out && isdigit((unsigned char)out[0])) {
		snprintf(id, idlen, "%.*s", (int)strspn(out, "0123456789"),
			 out);
	} else {
		client_warn("sbatch failed%s (exit status %d); the script is "
			    "%s",
			    status == 127 ? ": is Slurm installed here?" : "",
			    status, script);
		status = CLIENT_EXIT_DAEMON;
	}
	free(out);
	return status ? status : 0;
}

int append_job(const char *out, const char *id, long tasks)
{
	char *path = meta_path(out, "jobs");
	FILE *f = path ? fopen(path, "a") : NULL;
	int rc = f && fprintf(f, "%s %ld\n", id, tasks) > 0 ? 0 : ERR_IO;
	if (f && fclose(f))
		rc = ERR_IO;
	free(path);
	return rc;
}
