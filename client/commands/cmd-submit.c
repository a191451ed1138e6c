/*
 * cmd-submit.c - `vkinrctl submit`: read PNG, JPEG and WebP files here, send
 * each to the daemon as one job, and optionally follow them.
 *
 * The daemon never opens a path a client names, so the client reads every
 * image itself and sends its bytes in base64 (`image: {"png": B64}` or
 * `{"jpeg": B64}` or `{"webp": B64}`, and `init: {"safetensors": B64}`
 * for --init). Inputs are files, folders (their *.png, *.jpg, *.jpeg and
 * *.webp, sorted by name; with -r their subfolders' too) and
 * --from-file lists (one path per line, `-` for stdin), gathered as
 * --slurm gathers them (inputs.c). Files are read and sent a few at a
 * time (a window of requests on the one connection: submit-send.c), so a
 * folder of thousands costs the memory of a few images. A file that can't be read, is neither a PNG, a
 * JPEG nor a WebP or is too large for one request is named on stderr and skipped;
 * the others still go, and the exit status is then 3. A call that submits
 * several images gives them one batch id (sent as `batch`), which every
 * command that takes job ids also takes.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/base64.h"
#include "core/client.h"
#include "core/conn.h"
#include "core/fitopts.h"
#include "core/inputs.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "util/image.h"
#include "core/jobs.h"
#include "proto/params.h"
#include "proto/protocol.h"
#include "proto/text.h"
#include "slurm/slurm.h"
#include "commands/submit-internal.h"
#include "commands/submit-keys.h"
#include "views/watch.h"

enum {
	OPT_NAME = OPT_FIRST_COMMAND_OPTION,
	OPT_INIT,
	OPT_WATCH,
	OPT_WAIT,
	OPT_FROM_FILE,
	OPT_SKIP_DONE,
	OPT_AFTER,
	OPT_RESIZE,
	OPT_MAX_SIDE,
	OPT_PARAM, /* then the shared tables' options (fitopts.h) */
};

/* The options submit's own; the engine's numeric ones come from the
 * shared table (proto/params.h), each sent under its wire key, so a new
 * row there is a new option here with its range and message. */
static const struct option submit_options[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "init", required_argument, NULL, OPT_INIT },
	{ "watch", no_argument, NULL, OPT_WATCH },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "from-file", required_argument, NULL, OPT_FROM_FILE },
	{ "skip-done", no_argument, NULL, OPT_SKIP_DONE },
	{ "after", required_argument, NULL, OPT_AFTER },
	{ "resize", required_argument, NULL, OPT_RESIZE },
	{ "max-side", required_argument, NULL, OPT_MAX_SIDE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "yes", no_argument, NULL, 'y' },
	CMD_COMMON_OPTIONS,
};
#define N_SUBMIT_OPTIONS (sizeof(submit_options) / sizeof(submit_options[0]))

/* ---------------------------------------------------------------------- */
/* The command                                                             */
/* ---------------------------------------------------------------------- */

/* b + 6 hex digits: short to type, unlikely to meet another batch. */
void submit_new_batch_id(char *buf, size_t n)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 12);
	snprintf(buf, n, "b%06x", r & 0xffffff);
}

static int add_init(struct submit *s, const char *path)
{
	cJSON *init;
	uint8_t *data;
	size_t size;
	char *b64;

	if (!(data = submit_read_file(s, path, &size, "model package")))
		return CLIENT_EXIT_DAEMON;
	b64 = base64_encode(data, size);
	free(data);
	init = cJSON_AddObjectToObject(s->common, "init");
	if (!b64 || !init ||
	    !cJSON_AddStringToObject(init, "safetensors", b64)) {
		free(b64);
		return client_fail(s->cl, ERR_NOMEM, NULL);
	}
	free(b64);
	return 0;
}

/* Checks a value of the shared tables' option c into s->common; 0 or
 * the usage error's exit status. */
static int parse_param(struct submit *s, int c, const char *text)
{
	struct fit_value v;
	int rc = fit_option_parse(s->self, c, OPT_PARAM, text, &v);

	if (rc)
		return rc;
	cJSON_DeleteItemFromObjectCaseSensitive(s->common, v.key);
	if (v.is_auto) /* the daemon's default: left out */
		return 0;
	if (v.is_text)
		cJSON_AddStringToObject(s->common, v.key, text);
	else
		cJSON_AddNumberToObject(s->common, v.key, v.number);
	return 0;
}

static int parse_options(struct submit *s, int argc, char **argv,
			 const char **init, int *rc_out)
{
	struct option opts[N_SUBMIT_OPTIONS + FIT_OPTION_COUNT + 1] = { { 0 } };
	const struct cmd_entry *e = s->self;
	int c, rc;

	memcpy(opts, submit_options, sizeof(submit_options));
	fit_options_table(opts + N_SUBMIT_OPTIONS, OPT_PARAM);

	const char *lists[argc + 1]; /* --from-file, in order */
	int nlists = 0;

	while ((c = cmd_getopt(argc, argv, "hqrvy", opts)) != -1) {
		rc = 0;
		if (fit_option_is(c, OPT_PARAM)) {
			if ((rc = parse_param(s, c, optarg))) {
				*rc_out = rc;
				return -1;
			}
			continue;
		}
		switch (c) {
		case OPT_NAME:
			if (!*optarg)
				rc = cmd_usage_error(e, "--name is empty");
			else if (strlen(optarg) > LIMIT_NAME_BYTES ||
				 !text_is_clean(optarg, strlen(optarg)))
				rc = cmd_usage_error(
				    e,
				    "--name must be at most %d bytes of "
				    "UTF-8 without control characters",
				    LIMIT_NAME_BYTES);
			s->name = optarg;
			break;
		case OPT_INIT:
			*init = optarg;
			break;
		case OPT_WATCH:
		case OPT_WAIT:
			if (s->follow && s->follow != c)
				rc = cmd_usage_error(e, "--watch and --wait "
							"exclude each other");
			s->follow = c;
			break;
		case OPT_FROM_FILE: /* read once -r is known */
			lists[nlists++] = optarg;
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
		case 'y': /* run even if slow on a CPU device */
			if (!cJSON_HasObjectItem(s->common, "yes"))
				cJSON_AddTrueToObject(s->common, "yes");
			break;
		case OPT_SKIP_DONE:
			s->skip_done = 1;
			break;
		case OPT_AFTER: /* resolved once the options are read */
			s->after = optarg;
			break;
		case OPT_RESIZE:
		case OPT_MAX_SIDE:
			rc = fit_resize_option(s->self, c == OPT_RESIZE, optarg,
					       s->common);
			break;
		default:
			if ((rc = cmd_common_option(s->cl, e, c)) >= 0) {
				*rc_out = rc;
				return -1;
			}
			rc = 0;
		}
		if (rc) {
			*rc_out = rc;
			return -1;
		}
	}
	for (int i = 0; i < nlists; i++)
		if ((rc = inputs_add_list(&s->in, lists[i])) < 0) {
			*rc_out = client_fail(s->cl, rc, NULL);
			return -1;
		}
	for (int i = optind; i < argc; i++)
		if ((rc = inputs_add(&s->in, argv[i])) < 0) {
			*rc_out = client_fail(s->cl, rc, NULL);
			return -1;
		}
	return 0;
}

static void print_json_summary(struct submit *s, const char *batch)
{
	cJSON *out = cJSON_CreateObject();

	if (!out)
		return;
	if (cJSON_GetArraySize(s->done) == 1)
		cJSON_AddItemToObject(
		    out, "job",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
					cJSON_GetArrayItem(s->done, 0), "job"),
				    1));
	if (batch && cJSON_GetArraySize(s->done) > 0) /* else none was made */
		cJSON_AddStringToObject(out, "batch", batch);
	cJSON_AddItemReferenceToObject(out, "jobs", s->done);
	if (s->skip_done)
		cJSON_AddItemReferenceToObject(out, "skipped", s->skipped);
	cJSON_AddItemReferenceToObject(out, "errors", s->errors);
	client_print_json(out);
	cJSON_Delete(out);
}

static int follow(struct submit *s)
{
	cJSON *ids = cJSON_CreateArray(), *item;
	FILE *out = s->quiet ? stderr : stdout;
	enum watch_mode mode;
	int status;

	if (!ids)
		return client_fail(s->cl, ERR_NOMEM, NULL);
	cJSON_ArrayForEach(item, s->done) cJSON_AddItemToArray(
	    ids,
	    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "job"), 1));
	if (s->follow == OPT_WAIT)
		/* -q --wait: only the ids on stdout, no summary. */
		mode = s->quiet ? WATCH_SILENT : WATCH_QUIET;
	else
		mode = watch_pick_mode(s->cl, out);
	status = watch_jobs(s->cl, ids, mode, out);
	cJSON_Delete(ids);
	return status;
}

static int cmd_submit_exec(struct client *cl, const struct cmd_entry *self,
			   int argc, char **argv)
{
	struct submit s = { .self = self, .cl = cl };
	const char *init = NULL;
	s.in.refused = submit_note_refused;
	s.in.ctx = &s;
	char batch[16];
	int status = CLIENT_EXIT_OK, rc = 0, batched;

	if (slurm_has_option(argc, argv, "--slurm"))
		return slurm_submit_exec(cl, self, argc, argv);
	if (cmd_collecting()) /* its options, before anything is made */
		return parse_options(&s, argc, argv, &init, &status);
	s.common = cJSON_CreateObject();
	s.done = cJSON_CreateArray();
	s.errors = cJSON_CreateArray();
	s.skipped = cJSON_CreateArray();
	if (!s.common || !s.done || !s.errors) {
		status = client_fail(cl, ERR_NOMEM, NULL);
		goto out;
	}
	if (parse_options(&s, argc, argv, &init, &status) < 0)
		goto out;
	if (s.in.n == 0 && s.in.nbad == 0) {
		status = cmd_usage_error(self, "name at least one PNG, JPEG or "
					       "WebP file, a folder, or "
					       "--from-file LIST");
		goto out;
	}
	if ((init && (status = add_init(&s, init)) != 0) ||
	    (s.after && (status = jobs_add_after(cl, self, s.after, s.common))))
		goto out;

	/* One call of several images (or of a folder or a list) is a batch. */
	batched = s.in.n + (size_t)s.in.nbad > 1 || s.in.expanded;
	if (batched) {
		submit_new_batch_id(batch, sizeof(batch));
		cJSON_AddStringToObject(s.common, "batch", batch);
	}

	if (s.skip_done && (rc = submit_load_done_keys(cl, &s.done_keys)) < 0) {
		status = client_fail(cl, rc, NULL);
		goto out;
	}
	rc = submit_all(&s);
	batched = batched && !s.no_batch;
	if (batched) /* the id the daemon took, if the first was another's */
		snprintf(batch, sizeof(batch), "%s",
			 job_str(s.common, "batch", batch));
	if (cl->json)
		print_json_summary(&s, batched ? batch : NULL);
	if (rc < 0) {
		status = client_fail(cl, rc, NULL);
		goto out;
	}
	if (batched && !cl->json && cJSON_GetArraySize(s.done) > 0) {
		int n = cJSON_GetArraySize(s.done);
		if (s.quiet) /* after the job ids: a line a script can tell */
			printf("batch %s\n", batch);
		else
			printf("batch %s: %d job%s submitted\n", batch, n,
			       n == 1 ? "" : "s");
	}
	if (s.nskipped && !cl->json)
		client_warn("%d image%s skipped: covered already by a job "
			    "with the same options, queued, running, paused "
			    "or done (--skip-done)",
			    s.nskipped, s.nskipped == 1 ? "" : "s");
	if (s.in.nbad)
		client_warn("%d input%s not submitted (named above)", s.in.nbad,
			    s.in.nbad == 1 ? " was" : "s were");
	if (s.follow && cJSON_GetArraySize(s.done) > 0)
		status = follow(&s);
	if (s.in.nbad)
		status = CLIENT_EXIT_DAEMON;

out:
	inputs_free(&s.in);
	cJSON_Delete(s.common);
	cJSON_Delete(s.done_keys);
	cJSON_Delete(s.skipped);
	cJSON_Delete(s.done);
	cJSON_Delete(s.errors);
	return status;
}

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.alias = NULL,
	.args = "IMG.png|IMG.jpg|IMG.webp|DIR... [-r] [--from-file LIST] "
		"[--epochs N] [--width NF] "
		"[--lr LR]\n         [--seed S] [--name NAME] [--priority P] "
		"[--init M.safetensors]\n         [--target-psnr DB] "
		"[--after JOB[,JOB]] [--resize WxH | --max-side N] [-y]\n"
		"         [TRAINING OPTIONS] [--watch | --wait] [-q]",
	.summary = "fit a network to each image: one job per PNG, JPEG or "
		   "WebP",
	.help =
	    "Reads each PNG, JPEG or WebP here and sends it to the daemon as "
	    "a new job. A\nfolder stands for its *.png, *.jpg, *.jpeg and "
	    "*.webp files (every other entry\nis named; -r searches its "
	    "subfolders too); --from-file LIST reads one path per\nline "
	    "('-': stdin). A JPEG is turned upright as its EXIF orientation "
	    "says.\nSeveral images in one call share a batch id, usable "
	    "wherever a job id is.\n"
	    "\n"
	    "Options:\n"
	    "  --name NAME          the job's name (default: the file's "
	    "name without .png/.jpg;\n"
	    "                       with several files, a prefix)\n"
	    "  --init M.safetensors start from this model package\n"
	    "  --from-file LIST     read paths from LIST, one a line\n"
	    "  --resize WxH         the daemon scales each image down to W x "
	    "H first\n"
	    "  --max-side N         ... or so that no side is over N "
	    "pixels\n"
	    "  -y, --yes            submit even what the daemon estimates "
	    "slow on its CPU\n"
	    "                       device (refused otherwise, with the "
	    "estimate)\n"
	    "  -r, --recursive      search the folders named, and their "
	    "subfolders; each job\n"
	    "                       is named by its path below the folder "
	    "(sub/a)\n"
	    "  -v, --verbose        name every entry of a folder left out "
	    "(more than two\n"
	    "                       of one reason are counted on one line)\n"
	    "  --watch              follow the jobs live until they end\n"
	    "  --wait               wait silently until they end\n"
	    "  --after JOB[,JOB]    start only once these jobs are done "
	    "(ids, batches\n"
	    "                       or names); fail if one fails or is "
	    "cancelled\n"
	    "  --skip-done          skip the images a job of yours covers "
	    "with the same\n"
	    "                       options, queued, running, paused or "
	    "done (named;\n"
	    "                       -q prints its id)\n"
	    "                       (the same bytes, epochs, width, lr, "
	    "seed, target, init)\n"
	    "  -q, --quiet          print only the new job ids, one a line,"
	    " and for a batch\n"
	    "                       a last line 'batch ID'\n"
	    "\n"
	    "A file that can't be read or is not a PNG, JPEG or WebP is named "
	    "on stderr and\nskipped; the others are still submitted and the "
	    "exit "
	    "status is 3. With --watch\nor --wait the status is the jobs' "
	    "outcome (0 all done, 1 any failed/cancelled).\n",
	.help_table = 1,
	.help_more =
	    "\n"
	    "On a Slurm cluster, without the daemon:\n"
	    "  submit --slurm --out OUT IMG|DIR...|--from-file LIST [-r] "
	    "[--tasks N]\n"
	    "         [--max-running N] [--gpus-per-task G] [--time T] "
	    "[--mem M]\n"
	    "         [--cpus-per-task C] [--sbatch \"ARGS\"] [--setup "
	    "LINE] [--vkinrd PATH]\n"
	    "         [--name NAME] [--allow-cpu] [--dry-run]\n"
	    "  fits the images as one job array (N tasks, default one per "
	    "image up to\n  1000), each image into OUT/NAME/, the tasks' "
	    "logs into OUT/logs/; prints\n  the Slurm job id (-q: alone). "
	    "Submitting again skips what is done and\n  resumes what was "
	    "checkpointed. Every request is an #SBATCH line of\n  "
	    "OUT/.vkinr/fit.sbatch (--dry-run prints it; --json: as JSON):\n"
	    "  --max-running N   at most N tasks at once (--array=0-K%N)\n"
	    "  --time T          time limit a task (default 08:00:00; "
	    "checkpointed and\n"
	    "                    requeued at the limit)\n"
	    "  --mem M           host memory a task (default 4G)\n"
	    "  --cpus-per-task C (default 2)\n"
	    "  --gpus-per-task G (default 1; 0 needs --allow-cpu)\n"
	    "  --sbatch \"ARGS\"   partition, account, QoS... (these win)\n"
	    "  --setup LINE      a line run first, e.g. 'module load "
	    "vulkan' (repeatable)\n"
	    "  --vkinrd PATH     the vkinrd to run (default: on the "
	    "tasks' PATH, else\n"
	    "                    the installed one)\n"
	    "  --name NAME       the Slurm job's name (default: the "
	    "dataset folder's)\n"
	    "  --allow-cpu       a task without a GPU may use the CPU "
	    "device\n"
	    "  The training options above (not --priority) go on to each "
	    "task's\n  vkinrd --fit-task. See vkinrctl(1).\n",
	.exec = cmd_submit_exec,
};
