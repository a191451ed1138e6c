/*
 * cmd-slurm.c - a dataset fitted as a Slurm job array: `vkinrctl submit
 * --slurm --out OUT ...`, `vkinrctl list --out OUT` and `wait --out OUT`.
 *
 * submit gathers the images as plain submit does (inputs.c: files,
 * folders' *.png, *.jpg, *.jpeg and *.webp, with -r their subfolders'
 * too, --from-file lists; every other entry of a folder is named with the
 * reason it is left out), gives each a folder name unique in OUT (the
 * file's name without .png or .jpg, with -r its path below the folder
 * named, sub_a, then -2, -3... for a second image of
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
 * OUT/.vkinr/fit.sbatch` submits the same array; the job is named after
 * the dataset folder (--name); every path and value is quoted, and what
 * no quoting keeps on its line (a control character) is refused here;
 * vkinrd runs as one srun step, taken from PATH (after the --setup lines,
 * e.g. `module load`) or where `make install` puts it, never from a build
 * tree, unless --vkinrd names one.
 *
 * list and wait read the folders (OUT/NAME/result.json is the mark of an
 * ended image) and ask squeue about the last submission's tasks for the
 * images not ended. Nothing here talks to the daemon.
 *
 * This file reads submit's options and names the images; the manifest is
 * slurm-manifest.c's, the script slurm-script.c's, list and wait
 * slurm-status.c's (slurm-internal.h).
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
#include "proto/text.h"
#include "util/image.h"
#include "util/path.h"
#include "slurm/slurm.h"
#include "slurm/slurm-internal.h"

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

/* 0 when text can be written into the batch script and its manifest
 * (tabs_ok: a tab too, for a line of shell code), else the usage error's
 * exit status, naming the text (escaped). */
static int refuse_unquotable(const struct cmd_entry *e, const char *what,
			     const char *text, int tabs_ok)
{
	const char *bad = slurm_unquotable(text);
	while (tabs_ok && bad && *bad == '\t')
		bad = slurm_unquotable(bad + 1);
	if (!bad)
		return 0;
	char *shown = text_escape(text, 0);
	int rc = cmd_usage_error(e,
				 "%s \"%s\" holds a control character (a "
				 "newline, a tab...): no quoting keeps it "
				 "whole in the batch script",
				 what, shown ? shown : "");
	free(shown);
	return rc;
}

/* The Slurm job's name when --name gives none: the first folder named
 * (the dataset), else OUT, kept to letters, digits, '.', '_' and '-'
 * (a run of other bytes one '_'), so that squeue tells two datasets
 * apart and the #SBATCH line needs no quoting. */
static void name_job(struct submission *s, char **args, int nargs)
{
	const char *folder = s->out;
	char *real = NULL;
	struct stat st;
	for (int i = 0; i < nargs; i++)
		if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode) &&
		    (real = realpath(args[i], NULL))) {
			folder = real;
			break;
		}
	size_t end = strlen(folder), used = 0;
	while (end > 1 && folder[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && folder[start - 1] != '/')
		start--;
	for (size_t i = start; i < end && used + 1 < sizeof(s->job_name); i++) {
		char c = folder[i];
		if (!isalnum((unsigned char)c) && !strchr("._-", c))
			c = '_';
		if (c == '_' && used && s->job_name[used - 1] == '_')
			continue;
		if (used || !strchr("._-", c))
			s->job_name[used++] = c;
	}
	while (used && s->job_name[used - 1] == '_')
		used--;
	s->job_name[used] = 0;
	if (!used)
		snprintf(s->job_name, sizeof(s->job_name), "vkinr");
	free(real);
}

/* The file's name without .png (.jpg, .jpeg, .webp), or its name below
 * the folder named (named: sub/a with -r), made a safe folder name
 * (sub_a). */
static char *base_name(const char *path, const char *named)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	if (image_suffix_len(base) < n)
		n -= image_suffix_len(base);
	if (named)
		base = named, n = strlen(named);
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
	struct manifest old = { 0 };
	int rc = manifest_read(s->out, &old);
	if (rc == ERR_NOT_FOUND)
		rc = 0;
	for (size_t i = 0; i < old.n && rc == 0; i++) {
		rc = strmap_put(&s->known, old.e[i].path, old.e[i].name);
		rc = rc ? rc
			: strmap_put(&s->taken, old.e[i].name, old.e[i].path);
	}
	manifest_finish(&old);
	struct strmap listed = { 0 };
	for (size_t i = 0; i < s->in.n && rc == 0; i++) {
		const char *path = s->in.paths[i];
		const char *name = strmap_get(&s->known, path);
		char *made = NULL;
		if (strmap_get(&listed, path))
			continue;
		if (slurm_unquotable(path)) {
			char *shown = text_escape(path, 0);
			client_warn("%s: left out: a control character (a "
				    "newline, a tab...) in its path cannot be "
				    "written whole into the manifest and the "
				    "batch script; rename it",
				    shown ? shown : "");
			free(shown);
			s->in.nbad++;
			continue;
		}
		if (!name) {
			char *base = base_name(path, s->in.names[i]);
			if (!base)
				return ERR_NOMEM;
			made = strdup(base);
			for (int k = 2; made && strmap_get(&s->taken, made);
			     k++) {
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

/* Appends " OPTION VALUE", the value quoted for the shell when it needs
 * it; 0, or the usage error's exit status when it does not fit (cut
 * short, it would pass vkinrd half an option). */
static int add_fit_arg(struct submission *s, const char *option,
		       const char *value)
{
	char *word = NULL;
	size_t size = 0, used = strlen(s->fit_args);
	FILE *f = open_memstream(&word, &size);
	if (!f)
		return client_fail(s->cl, ERR_NOMEM, NULL);
	fprintf(f, " %s ", option);
	put_word(f, value);
	if (fclose(f)) {
		free(word);
		return client_fail(s->cl, ERR_NOMEM, NULL);
	}
	if (used + size >= sizeof(s->fit_args)) {
		free(word);
		return cmd_usage_error(s->self,
				       "the training options take more than "
				       "%zu bytes of the batch script",
				       sizeof(s->fit_args) - 1);
	}
	memcpy(s->fit_args + used, word, size + 1);
	free(word);
	return 0;
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
		return cmd_usage_error(e,
				       "%s must be a whole number from %ld "
				       "to %ld",
				       opt, lo, hi);
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
		return cmd_usage_error(s->self,
				       "--priority orders the daemon's "
				       "queue; with --slurm, pass Slurm's "
				       "(--sbatch \"--nice=N\")");
	if ((rc = refuse_unquotable(s->self, v.option, text, 0)))
		return rc;
	return add_fit_arg(s, v.option, text);
}

/* Slurm's --mem: a number of MiB, or with a unit (4G). */
static int mem_is_valid(const char *text)
{
	size_t digits = strspn(text, "0123456789");
	const char *unit = text + digits;
	return digits && (!*unit || (strchr("KMGTkmgt", *unit) && !unit[1]));
}

/* --time in Slurm's form (MINUTES, H:MM:SS, D-HH:MM:SS); 0 or the usage
 * error's exit status. */
static int check_time(const struct cmd_entry *e, const char *text)
{
	if (!text[0] || strspn(text, "0123456789:-") != strlen(text))
		return cmd_usage_error(e, "--time takes Slurm's "
					  "form: MINUTES, H:MM:SS or "
					  "D-HH:MM:SS");
	return 0;
}

/* One more --setup line: shell code by design, one line, tabs allowed,
 * at most MAX_SETUP_LINES; 0 or the usage error's exit status. */
static int add_setup(struct submission *s, const char *line)
{
	int rc;
	if (s->nsetup == MAX_SETUP_LINES || strchr(line, '\n'))
		return cmd_usage_error(s->self,
				       "--setup takes one line "
				       "each time, at most %d",
				       MAX_SETUP_LINES);
	if (!(rc = refuse_unquotable(s->self, "--setup", line, 1)))
		s->setup[s->nsetup++] = line;
	return rc;
}

/* --name: not empty, UTF-8 without control characters; 0 or the usage
 * error's exit status. */
static int check_name(const struct cmd_entry *e, const char *name)
{
	if (!*name)
		return cmd_usage_error(e, "--name is empty");
	if (!text_is_clean(name, strlen(name)))
		return cmd_usage_error(e, "--name must be UTF-8 without "
					  "control characters");
	return 0;
}

/* submit's own options; the training options of the table are added
 * after them (parse_submit) */
static const struct option submit_options[] = {
	{ "slurm", no_argument, NULL, OPT_SLURM },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "tasks", required_argument, NULL, OPT_TASKS },
	{ "gpus-per-task", required_argument, NULL, OPT_GPUS },
	{ "sbatch", required_argument, NULL, OPT_SBATCH },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "from-file", required_argument, NULL, OPT_FROM_FILE },
	{ "allow-cpu", no_argument, NULL, OPT_ALLOW_CPU },
	{ "max-running", required_argument, NULL, OPT_MAX_RUNNING },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "cpus-per-task", required_argument, NULL, OPT_CPUS },
	{ "setup", required_argument, NULL, OPT_SETUP },
	{ "vkinrd", required_argument, NULL, OPT_VKINRD },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "quiet", no_argument, NULL, 'q' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	CMD_COMMON_OPTIONS,
};
#define SUBMIT_OPTION_COUNT (sizeof(submit_options) / sizeof(submit_options[0]))

/* One of submit's own options (c, with its argument arg) into s; a
 * --from-file list is kept in lists, to be read once -r is known.
 * Returns -1 to go on, else the exit status to return now. */
static int parse_submit_option(struct submission *s, int c, char *arg,
			       const char **lists, int *nlists)
{
	const struct cmd_entry *e = s->self;
	int rc = 0;
	switch (c) {
	case OPT_SLURM:
		break;
	case OPT_OUT:
		s->out = arg;
		break;
	case OPT_TASKS:
		rc = parse_count(e, "--tasks", arg, 1, 1000000, &s->tasks);
		break;
	case OPT_GPUS:
		rc = parse_count(e, "--gpus-per-task", arg, 0, 16, &s->gpus);
		break;
	case OPT_SBATCH:
		s->sbatch_args = arg;
		break;
	case OPT_DRY_RUN:
		s->dry_run = 1;
		break;
	case OPT_FROM_FILE:
		lists[(*nlists)++] = arg;
		break;
	case OPT_ALLOW_CPU:
		s->allow_cpu = 1;
		break;
	case OPT_MAX_RUNNING:
		rc = parse_count(e, "--max-running", arg, 1, 1000000,
				 &s->max_running);
		break;
	case OPT_CPUS:
		rc = parse_count(e, "--cpus-per-task", arg, 1, 4096, &s->cpus);
		break;
	case OPT_TIME:
		rc = check_time(e, arg);
		s->time = arg;
		break;
	case OPT_MEM:
		if (!mem_is_valid(arg))
			rc = cmd_usage_error(e, "--mem takes Slurm's "
						"form: a number of MiB, or "
						"with K, M, G or T (4G)");
		s->mem = arg;
		break;
	case OPT_SETUP:
		rc = add_setup(s, arg);
		break;
	case OPT_VKINRD:
		rc = refuse_unquotable(e, "--vkinrd", arg, 0);
		s->vkinrd = arg;
		break;
	case OPT_NAME:
		rc = check_name(e, arg);
		s->name = arg;
		break;
	case 'q':
		s->quiet = 1;
		break;
	case 'r':
		s->in.recursive = 1;
		break;
	case 'v':
		s->in.verbose = 1;
		break;
	default:
		return cmd_common_option(s->cl, e, c);
	}
	if (rc)
		return rc > 0 ? rc : client_fail(s->cl, rc, NULL);
	return -1;
}

/* The inputs: the --from-file lists first, in order, then the files
 * and folders named; -1, or the exit status of a failure. */
static int add_inputs(struct submission *s, const char **lists, int nlists,
		      char **args, int nargs)
{
	int rc;
	for (int i = 0; i < nlists; i++)
		if ((rc = inputs_add_list(&s->in, lists[i])) < 0)
			return client_fail(s->cl, rc, NULL);
	for (int i = 0; i < nargs; i++)
		if ((rc = inputs_add(&s->in, args[i])) < 0)
			return client_fail(s->cl, rc, NULL);
	return -1;
}

/* --sbatch's text split into its words as a shell would (no command
 * substitution), each one the script can hold; -1, or the usage error's
 * exit status. */
static int split_sbatch(struct submission *s)
{
	const struct cmd_entry *e = s->self;
	int rc;
	if (wordexp(s->sbatch_args, &s->sbatch_words, WRDE_NOCMD | WRDE_UNDEF))
		return cmd_usage_error(e,
				       "--sbatch \"%s\": cannot "
				       "split it into arguments (quote "
				       "as in a shell; no $(...))",
				       s->sbatch_args);
	s->have_words = 1;
	for (size_t i = 0; i < s->sbatch_words.we_wordc; i++)
		if ((rc = refuse_unquotable(e, "--sbatch's word",
					    s->sbatch_words.we_wordv[i], 0)))
			return rc;
	return -1;
}

/* Once every option is read: OUT given (made absolute: the tasks may
 * start elsewhere, the script names it whole), a CPU-only array asked
 * for by name, --sbatch split, some input. -1, or the exit status. */
static int check_submit(struct submission *s)
{
	const struct cmd_entry *e = s->self;
	int rc;
	if (!s->out)
		return cmd_usage_error(e, "--slurm needs --out OUT, the folder "
					  "the results go to");
	if (s->out[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    !(s->out_abs = path_join(cwd, s->out)))
			return client_fail(s->cl, ERR_NOMEM, NULL);
		s->out = s->out_abs;
	}
	if ((rc = refuse_unquotable(e, "--out", s->out, 0)))
		return rc;
	if (s->gpus == 0 && !s->allow_cpu)
		return cmd_usage_error(e,
				       "--gpus-per-task 0 leaves each task "
				       "only the CPU device, which vkinrd "
				       "refuses unless told: add --allow-cpu "
				       "to fit on the CPU");
	if (s->sbatch_args && (rc = split_sbatch(s)) >= 0)
		return rc;
	if (s->in.n == 0 && s->in.nbad == 0)
		return cmd_usage_error(e, "name at least one PNG or JPEG "
					  "file, a folder, or --from-file "
					  "LIST");
	return -1;
}

/* submit --slurm's command line into s; -1 to go on, else the exit
 * status to return now. */
static int parse_submit(struct submission *s, int argc, char **argv)
{
	struct option opts[SUBMIT_OPTION_COUNT + FIT_OPTION_COUNT + 1] = {
		{ 0 }
	};
	const char *lists[argc + 1]; /* --from-file, in order */
	int nlists = 0, c, rc;

	memcpy(opts, submit_options, sizeof(submit_options));
	fit_options_table(opts + SUBMIT_OPTION_COUNT, OPT_PARAM);
	while ((c = cmd_getopt(argc, argv, "hqrv", opts)) != -1) {
		if (fit_option_is(c, OPT_PARAM)) {
			if ((rc = parse_fit_param(s, c, optarg)))
				return rc;
		} else if ((rc = parse_submit_option(s, c, optarg, lists,
						     &nlists)) >= 0) {
			return rc;
		}
	}
	if ((rc = add_inputs(s, lists, nlists, argv + optind, argc - optind)) >=
		0 ||
	    (rc = check_submit(s)) >= 0)
		return rc;
	if (!s->name)
		name_job(s, argv + optind, argc - optind);
	return -1;
}

/* The tasks run vkinrd on their nodes, but one missing here as well is
 * most often a typo or a missing install: said, not refused (--setup
 * may put it on their PATH; a dry run still prints its script). */
static void warn_no_vkinrd(const struct submission *s)
{
	if (s->vkinrd && access(s->vkinrd, X_OK))
		client_warn("--vkinrd %s: not an executable here (%s): the "
			    "tasks will run it on their nodes",
			    s->vkinrd, strerror(errno));
	else if (!s->vkinrd && !s->nsetup && !on_path("vkinrd") &&
		 access(VKINR_BINDIR "/vkinrd", X_OK))
		client_warn(
		    "vkinrd is neither on PATH here nor in " VKINR_BINDIR
		    ": the tasks look for it on theirs, then there; "
		    "name it with --vkinrd PATH or load it with "
		    "--setup");
}

int slurm_submit_exec(struct client *cl, const struct cmd_entry *self, int argc,
		      char **argv)
{
	struct submission s = {
		.self = self, .cl = cl, .gpus = 1, .in = { .absolute = 1 }
	};
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
	warn_no_vkinrd(&s);
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
	if ((status = run_sbatch(script, id, sizeof(id))))
		goto out;
	if (append_job(s.out, id, tasks))
		client_warn("cannot record job %s in %s/" META_DIR "/jobs: "
			    "list and wait will not see its Slurm states",
			    id, s.out);
	if (cl->json)
		printf("{\"slurm_job\":\"%s\",\"tasks\":%ld,\"images\":%zu,"
		       "\"missing\":%d}\n",
		       id, tasks, s.images.n, s.in.nbad);
	else if (s.quiet)
		printf("%s\n", id);
	else
		printf("Slurm job %s: %zu images over %ld tasks, results in "
		       "%s/NAME/\n(vkinrctl wait --out %s)\n",
		       id, s.images.n, tasks, s.out, s.out);
	if (s.in.nbad) {
		client_warn("%d input%s left out (named above)", s.in.nbad,
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
