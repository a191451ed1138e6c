/*
 * cmd-submit.c - `vkinrctl submit`: read PNG files here, send each to the
 * daemon as one job, and optionally follow them.
 *
 * The daemon never opens a path a client names, so the client reads every
 * image itself and sends its bytes in base64 (`image: {"png": B64}`, and
 * `init: {"safetensors": B64}` for --init). Inputs are files, folders (their
 * *.png, sorted by name) and --from-file lists (one path per line, `-` for
 * stdin). Files are read and sent one at a time, so a folder of thousands
 * costs the memory of one image. A file that can't be read, is not a PNG
 * or is too large for one request is named on stderr and skipped; the
 * others still go, and the exit status is then 3. A call that submits
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

#include "base64.h"
#include "client.h"
#include "conn.h"
#include "errors.h"
#include "fileio.h"
#include "image.h"
#include "jobs.h"
#include "protocol.h"
#include "watch.h"

/* The largest file worth reading: base64 of it must fit in one line. */
#define SUBMIT_MAX_FILE ((size_t)LIMIT_LINE_BYTES / 4 * 3)

enum {
	OPT_EPOCHS = OPT_FIRST_COMMAND_OPTION,
	OPT_WIDTH,
	OPT_LR,
	OPT_SEED,
	OPT_NAME,
	OPT_PRIORITY,
	OPT_INIT,
	OPT_WATCH,
	OPT_WAIT,
	OPT_FROM_FILE,
	OPT_TARGET_PSNR,
	OPT_RECIPE, /* then one a recipe key, in recipe_options' order */
};

/* The training recipe's options: sent in "recipe" under the key with _ for
 * -, a number when the value reads as one; the daemon checks them. */
static const char *const recipe_options[] = {
	"optimizer", "schedule", "warmup", "plateau", "lr-min", "average",
	"ema-decay"};
#define RECIPE_OPTIONS ((int)(sizeof(recipe_options) / sizeof(recipe_options[0])))

/* What one call submits: the job parameters and where the images are. */
struct submit {
	const struct cmd_entry *self;
	struct client *cl;
	cJSON *common;       /* epochs, width, lr, seed, priority, init, batch,
				target_psnr */
	const char *name;    /* --name */
	int quiet;           /* -q */
	int follow;          /* OPT_WATCH, OPT_WAIT or 0 */

	char **paths;        /* images, folders already expanded */
	size_t npaths, cap;
	int nbad;            /* inputs that were refused */
	int expanded;        /* a folder or a list was named: a batch */
	int no_batch;        /* the daemon refused the batch parameter */

	cJSON *done;         /* [{"job","file","name"}] */
	cJSON *errors;       /* [{"file","error"}] */
};

/* ---------------------------------------------------------------------- */
/* Gathering the images                                                    */
/* ---------------------------------------------------------------------- */

static void refuse(struct submit *s, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void refuse(struct submit *s, const char *file, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	cJSON *e;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	client_warn("%s: %s", file, why);
	s->nbad++;
	if ((e = cJSON_CreateObject())) {
		cJSON_AddStringToObject(e, "file", file);
		cJSON_AddStringToObject(e, "error", why);
		cJSON_AddItemToArray(s->errors, e);
	}
}

static int add_path(struct submit *s, const char *path)
{
	if (s->npaths == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **paths = realloc(s->paths, cap * sizeof *paths);
		if (!paths)
			return ERR_NOMEM;
		s->paths = paths;
		s->cap = cap;
	}
	if (!(s->paths[s->npaths] = strdup(path)))
		return ERR_NOMEM;
	s->npaths++;
	return 0;
}

static int is_png_name(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && !strcasecmp(name + n - 4, ".png") && name[0] != '.';
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder stands for its PNG files (not its subfolders), by name. */
static int add_folder(struct submit *s, const char *dir)
{
	size_t first = s->npaths;
	struct dirent *de;
	char *path;
	DIR *d;
	int rc = 0;

	s->expanded = 1;
	if (!(d = opendir(dir))) {
		refuse(s, dir, "cannot open the folder: %s", strerror(errno));
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		if (!is_png_name(de->d_name))
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
			rc = ERR_NOMEM;
			break;
		}
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			rc = add_path(s, path);
		free(path);
	}
	closedir(d);
	if (rc == 0 && s->npaths == first)
		refuse(s, dir, "the folder holds no .png files");
	qsort(s->paths + first, s->npaths - first, sizeof *s->paths, by_name);
	return rc;
}

static int add_input(struct submit *s, const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return add_folder(s, path);
	return add_path(s, path); /* problems are named when it is read */
}

/* One path per line; blank lines and lines starting with '#' are skipped. */
static int add_list_file(struct submit *s, const char *list)
{
	FILE *f = strcmp(list, "-") ? fopen(list, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;

	s->expanded = 1;
	if (!f) {
		refuse(s, list, "cannot read the list: %s", strerror(errno));
		return 0;
	}
	while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
		while (len > 0 && isspace((unsigned char)line[len - 1]))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		rc = add_input(s, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Sending                                                                 */
/* ---------------------------------------------------------------------- */

/* Reads a file whole; says why not (and returns NULL) when it can't. */
static uint8_t *read_file(struct submit *s, const char *path, size_t *size,
			  const char *what)
{
	struct stat st;
	uint8_t *data = NULL;
	int rc;

	if (stat(path, &st) < 0) {
		refuse(s, path, "cannot read it: %s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		refuse(s, path, "not a regular file");
		return NULL;
	}
	if ((size_t)st.st_size > SUBMIT_MAX_FILE) {
		refuse(s, path,
		       "the %s is %lld MiB; one request carries at most "
		       "%zu MiB",
		       what, (long long)st.st_size >> 20, SUBMIT_MAX_FILE >> 20);
		return NULL;
	}
	rc = fileio_read(path, &data, size, SUBMIT_MAX_FILE);
	if (rc < 0) {
		refuse(s, path, "cannot read it: %s",
		       rc == ERR_IO ? strerror(errno) : error_message(rc));
		return NULL;
	}
	return data;
}

/* The job's name: --name, else the file's name without .png. */
static char *job_name(const struct submit *s, const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	char *name;

	if (n > 4 && !strcasecmp(base + n - 4, ".png"))
		n -= 4;
	if (s->name && s->npaths == 1)
		return strdup(s->name);
	if (s->name) {
		if (asprintf(&name, "%s-%.*s", s->name, (int)n, base) < 0)
			return NULL;
		return name;
	}
	return strndup(base, n);
}

static void record(struct submit *s, const cJSON *id, const char *path,
		   const char *name)
{
	char text[128];
	cJSON *e = cJSON_CreateObject();

	if (e) {
		cJSON_AddItemToObject(e, "job", cJSON_Duplicate(id, 1));
		cJSON_AddStringToObject(e, "file", path);
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddItemToArray(s->done, e);
	}
	job_id_text(id, text, sizeof text);
	if (s->cl->json)
		return;
	if (s->quiet)
		printf("%s\n", text);
	else
		printf("job %s submitted: %s (name %s)\n", text, path, name);
	fflush(stdout);
}

/* Whether the daemon's last error refused the "batch" parameter. */
static int batch_refused(const struct submit *s)
{
	const char *message;

	return cJSON_HasObjectItem(s->common, "batch") &&
	       conn_last_error(s->cl->conn, &message, NULL) ==
		       RPC_INVALID_PARAMS &&
	       strstr(message, "\"batch\"");
}

/* Submits one image. 0 (done or refused and named), or a transport
 * failure that ends the call. */
static int submit_one(struct submit *s, const char *path)
{
	cJSON *params, *image, *result = NULL;
	const cJSON *id;
	uint8_t *data;
	size_t size;
	char *b64, *name;
	const char *message;
	int rc;

	if (!(data = read_file(s, path, &size, "image")))
		return 0;
	if (!png_has_signature(data, size)) {
		free(data);
		refuse(s, path, "not a PNG file (vkinrd fits PNG images)");
		return 0;
	}
	b64 = base64_encode(data, size);
	free(data);
	name = job_name(s, path);
	params = cJSON_Duplicate(s->common, 1);
	image = cJSON_CreateObject();
	if (!b64 || !name || !params || !image) {
		free(b64);
		free(name);
		cJSON_Delete(params);
		cJSON_Delete(image);
		return ERR_NOMEM;
	}
	cJSON_AddItemToObject(image, "png", cJSON_CreateStringReference(b64));
	cJSON_AddItemToObject(params, "image", image);
	cJSON_AddStringToObject(params, "name", name);

	rc = client_call(s->cl, M_JOB_SUBMIT, params, &result);
	if (rc == CLIENT_ERR_RPC && batch_refused(s)) {
		/* An older daemon: submit without the batch id. */
		s->no_batch = 1;
		cJSON_DeleteItemFromObjectCaseSensitive(s->common, "batch");
		client_warn("this vkinrd does not keep batch ids; use the job "
			    "ids instead");
		free(b64);
		free(name);
		return submit_one(s, path);
	}
	free(b64); /* after the call: the request referenced it */
	if (rc == CLIENT_ERR_RPC) {
		conn_last_error(s->cl->conn, &message, NULL);
		refuse(s, path, "the daemon refused it: %s", message);
		rc = 0;
	} else if (rc == ERR_TOO_LARGE) {
		refuse(s, path, "%s", conn_why(s->cl->conn));
		rc = 0;
	} else if (rc == 0) {
		id = cJSON_GetObjectItemCaseSensitive(result, "job");
		if (id)
			record(s, id, path, name);
		else
			refuse(s, path, "the daemon's answer has no job id");
	}
	cJSON_Delete(result);
	free(name);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The command                                                             */
/* ---------------------------------------------------------------------- */

/* b + 6 hex digits: short to type, unlikely to meet another batch. */
static void new_batch_id(char *buf, size_t n)
{
	uint32_t r;

	if (getrandom(&r, sizeof r, 0) != sizeof r)
		r = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 12);
	snprintf(buf, n, "b%06x", r & 0xffffff);
}

static int add_init(struct submit *s, const char *path)
{
	cJSON *init;
	uint8_t *data;
	size_t size;
	char *b64;

	if (!(data = read_file(s, path, &size, "model package")))
		return CLIENT_EXIT_DAEMON;
	b64 = base64_encode(data, size);
	free(data);
	init = cJSON_AddObjectToObject(s->common, "init");
	if (!b64 || !init || !cJSON_AddStringToObject(init, "safetensors", b64)) {
		free(b64);
		return client_fail(s->cl, ERR_NOMEM, NULL);
	}
	free(b64);
	return 0;
}

static int add_recipe_option(struct submit *s, const char *option,
			     const char *value)
{
	cJSON *recipe = cJSON_GetObjectItemCaseSensitive(s->common, "recipe");
	char key[32], *end;
	if (!recipe)
		recipe = cJSON_AddObjectToObject(s->common, "recipe");
	snprintf(key, sizeof(key), "%s", option);
	for (char *u = strchr(key, '-'); u; u = strchr(u, '-'))
		*u = '_';
	cJSON_DeleteItemFromObjectCaseSensitive(recipe, key);
	double x = strtod(value, &end);
	if (!recipe || !(end != value && !*end
			 ? cJSON_AddNumberToObject(recipe, key, x)
			 : cJSON_AddStringToObject(recipe, key, value)))
		return client_fail(s->cl, ERR_NOMEM, NULL);
	return 0;
}

static int parse_options(struct submit *s, int argc, char **argv,
			 const char **init, int *rc_out)
{
	static const struct option opts[] = {
		{"epochs", required_argument, NULL, OPT_EPOCHS},
		{"width", required_argument, NULL, OPT_WIDTH},
		{"lr", required_argument, NULL, OPT_LR},
		{"seed", required_argument, NULL, OPT_SEED},
		{"name", required_argument, NULL, OPT_NAME},
		{"priority", required_argument, NULL, OPT_PRIORITY},
		{"init", required_argument, NULL, OPT_INIT},
		{"watch", no_argument, NULL, OPT_WATCH},
		{"wait", no_argument, NULL, OPT_WAIT},
		{"from-file", required_argument, NULL, OPT_FROM_FILE},
		{"target-psnr", required_argument, NULL, OPT_TARGET_PSNR},
		{"optimizer", required_argument, NULL, OPT_RECIPE},
		{"schedule", required_argument, NULL, OPT_RECIPE + 1},
		{"warmup", required_argument, NULL, OPT_RECIPE + 2},
		{"plateau", required_argument, NULL, OPT_RECIPE + 3},
		{"lr-min", required_argument, NULL, OPT_RECIPE + 4},
		{"average", required_argument, NULL, OPT_RECIPE + 5},
		{"ema-decay", required_argument, NULL, OPT_RECIPE + 6},
		{"quiet", no_argument, NULL, 'q'},
		CMD_COMMON_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	const struct cmd_entry *e = s->self;
	long l;
	double d;
	int c, rc;

	while ((c = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case OPT_EPOCHS:
			rc = cmd_parse_long(e, "--epochs", optarg, 1,
					    100000000, &l);
			cJSON_AddNumberToObject(s->common, "epochs", l);
			break;
		case OPT_WIDTH:
			rc = cmd_parse_long(e, "--width", optarg, 1, 4096, &l);
			cJSON_AddNumberToObject(s->common, "width", l);
			break;
		case OPT_LR:
			rc = cmd_parse_double(e, "--lr", optarg, 1e-12, 10, &d);
			cJSON_AddNumberToObject(s->common, "lr", d);
			break;
		case OPT_SEED:
			rc = cmd_parse_long(e, "--seed", optarg, 0,
					    (1LL << 53) - 1, &l);
			cJSON_AddNumberToObject(s->common, "seed", (double)l);
			break;
		case OPT_TARGET_PSNR:
			rc = cmd_parse_double(e, "--target-psnr", optarg, 1e-3,
					      1000, &d);
			cJSON_AddNumberToObject(s->common, "target_psnr", d);
			break;
		case OPT_PRIORITY:
			rc = cmd_parse_long(e, "--priority", optarg, -1000000,
					    1000000, &l);
			cJSON_AddNumberToObject(s->common, "priority", l);
			break;
		case OPT_NAME:
			if (!*optarg)
				rc = cmd_usage_error(e, "--name is empty");
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
		case OPT_FROM_FILE:
			if ((rc = add_list_file(s, optarg)) < 0)
				rc = client_fail(s->cl, rc, NULL);
			break;
		case 'q':
			s->quiet = 1;
			break;
		default:
			if (c >= OPT_RECIPE && c < OPT_RECIPE + RECIPE_OPTIONS) {
				rc = add_recipe_option(s, recipe_options[c - OPT_RECIPE],
						       optarg);
				break;
			}
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
	for (int i = optind; i < argc; i++)
		if ((rc = add_input(s, argv[i])) < 0) {
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
						cJSON_GetArrayItem(s->done, 0),
						"job"),
					1));
	if (batch)
		cJSON_AddStringToObject(out, "batch", batch);
	cJSON_AddItemReferenceToObject(out, "jobs", s->done);
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
	cJSON_ArrayForEach(item, s->done)
		cJSON_AddItemToArray(
			ids, cJSON_Duplicate(
				     cJSON_GetObjectItemCaseSensitive(item, "job"),
				     1));
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
	struct submit s = {.self = self, .cl = cl};
	const char *init = NULL;
	char batch[16];
	int status = CLIENT_EXIT_OK, rc = 0, batched;

	s.common = cJSON_CreateObject();
	s.done = cJSON_CreateArray();
	s.errors = cJSON_CreateArray();
	if (!s.common || !s.done || !s.errors) {
		status = client_fail(cl, ERR_NOMEM, NULL);
		goto out;
	}
	if (parse_options(&s, argc, argv, &init, &status) < 0)
		goto out;
	if (s.npaths == 0 && s.nbad == 0) {
		status = cmd_usage_error(self, "name at least one PNG file, "
					       "a folder, or --from-file LIST");
		goto out;
	}
	if (init && (status = add_init(&s, init)) != 0)
		goto out;

	/* One call of several images (or of a folder or a list) is a batch. */
	batched = s.npaths + (size_t)s.nbad > 1 || s.expanded;
	if (batched) {
		new_batch_id(batch, sizeof batch);
		cJSON_AddStringToObject(s.common, "batch", batch);
	}

	for (size_t i = 0; i < s.npaths && rc == 0; i++)
		rc = submit_one(&s, s.paths[i]);
	batched = batched && !s.no_batch;
	if (cl->json)
		print_json_summary(&s, batched ? batch : NULL);
	if (rc < 0) {
		status = client_fail(cl, rc, NULL);
		goto out;
	}
	if (batched && !cl->json && !s.quiet &&
	    cJSON_GetArraySize(s.done) > 0)
		printf("batch %s: %d jobs submitted\n", batch,
		       cJSON_GetArraySize(s.done));
	if (s.nbad)
		client_warn("%d input%s not submitted (named above)", s.nbad,
			    s.nbad == 1 ? " was" : "s were");
	if (s.follow && cJSON_GetArraySize(s.done) > 0)
		status = follow(&s);
	if (s.nbad)
		status = CLIENT_EXIT_DAEMON;

out:
	for (size_t i = 0; i < s.npaths; i++)
		free(s.paths[i]);
	free(s.paths);
	cJSON_Delete(s.common);
	cJSON_Delete(s.done);
	cJSON_Delete(s.errors);
	return status;
}

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.alias = NULL,
	.args = "IMG.png|DIR... [--from-file LIST] [--epochs N] [--width NF] "
		"[--lr LR]\n         [--seed S] [--name NAME] [--priority P] "
		"[--init M.safetensors]\n         [--target-psnr DB] "
		"[RECIPE OPTIONS] [--watch | --wait] [-q]",
	.summary = "fit a network to each image: one job per PNG",
	.help = "Reads each PNG here and sends it to the daemon as a new job. "
		"A folder stands\nfor its *.png files; --from-file LIST reads "
		"one path per line ('-': stdin).\nSeveral images in one call "
		"share a batch id, usable wherever a job id is.\n"
		"\n"
		"Options:\n"
		"  --epochs N           epochs to train (daemon's default "
		"otherwise)\n"
		"  --width NF           network width (features per layer)\n"
		"  --lr LR              learning rate\n"
		"  --seed S             random seed of the initial weights\n"
		"  --name NAME          the job's name (default: the file's "
		"name without .png;\n"
		"                       with several files, a prefix)\n"
		"  --priority P         higher runs first (the daemon says its "
		"range)\n"
		"  --init M.safetensors start from this model package\n"
		"  --target-psnr DB     stop early, as done, once an epoch "
		"reaches DB\n"
		"  --optimizer adam|muon, --schedule cosine|linear|constant,\n"
		"  --warmup N, --plateau N, --lr-min RATIO, --average none|ema,\n"
		"  --ema-decay D        the training recipe (see vkinrd(8);\n"
		"                       the daemon's defaults otherwise)\n"
		"  --from-file LIST     read paths from LIST, one a line\n"
		"  --watch              follow the jobs live until they end\n"
		"  --wait               wait silently until they end\n"
		"  -q, --quiet          print only the new job ids, one a line\n"
		"\n"
		"A file that can't be read or is not a PNG is named on stderr "
		"and skipped;\nthe others are still submitted and the exit "
		"status is 3. With --watch or\n--wait the status is the jobs' "
		"outcome (0 all done, 1 any failed/cancelled).\n",
	.exec = cmd_submit_exec,
};
