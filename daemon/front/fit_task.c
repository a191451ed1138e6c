/*
 * fit_task.c - one task of a dataset fit: `vkinrd --fit-task MANIFEST
 * --out OUT --shard K/N [fit options]`, what each Slurm array task runs.
 *
 * MANIFEST lists images, one "NAME<TAB>PATH" a line (vkinrctl submit
 * --slurm writes one per array task, names made unique); with --shard K/N
 * it takes lines K, K+N, K+2N... Each image is fitted on the device the scheduler gave this
 * task (gpu/visible.h) and leaves a folder OUT/NAME/ holding
 * model.safetensors, recon.png, metrics.ndjson and, last, result.json: the
 * mark that the image is done (or failed, with the reason). Every file is
 * written to a temporary name and renamed, so a half-written file is never
 * taken for a result.
 *
 * Restartable: an image whose result.json says done with the same settings
 * is skipped; one with checkpoint.safetensors resumes from it, bit for bit.
 * SIGUSR1 (Slurm's --signal warning before a time limit) and SIGTERM
 * (scancel, preemption) stop the fit between two epochs, write the
 * checkpoint and exit with FIT_TASK_INTERRUPTED, which the batch script
 * turns into a requeue. An image that cannot be read fails alone; the task
 * goes on with the rest. A lock file per image keeps two tasks (two
 * submissions of one OUT) from fitting it at once.
 *
 * With several GPUs, one process per GPU is forked, each taking every
 * G-th of the task's images; the parent passes the signals on. It must not
 * touch another job's GPU: a Slurm task given none uses the CPU device only
 * with --allow-cpu.
 */
#include "front/fit_task.h"
#include "front/cli_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/outfile.h"
#include "util/path.h"
#include "gpu/gpu.h"
#include "gpu/visible.h"
#include "formats/image_codec.h"
#include "nn/fit.h"
#include "nn/package.h"
#include "front/fit_args.h"
#include "formats/safetensors.h"

#define MAX_TASK_GPUS 16
#define MAX_MANIFEST_BYTES ((size_t)1 << 30)

struct task {
	const char *manifest, *out, *device;
	int shard, shards;    /* this task is shard of shards */
	int slot, slots;      /* and this process slot of slots (GPUs) */
	struct nn_config cfg; /* nf 0: the device's width */
	int allow_cpu, quiet;
	double target_psnr; /* 0: none */
	char settings[512]; /* what a finished result must match */
	struct gpu_context *gpu;
	int done, skipped, failed;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* ------------------------------------------------------------ options */

static const char usage_head[] =
    "usage: vkinrd --fit-task MANIFEST --out OUT [--shard K/N] [options]\n"
    "  MANIFEST            lines of NAME<TAB>PATH (vkinrctl submit --slurm)\n"
    "  --out OUT           results go to OUT/NAME/\n"
    "  --shard K/N         fit lines K, K+N, ... (default 0/1: every line)\n"
    "training (the same options, bounds and defaults as vkinrd --fit and\n"
    "vkinrctl submit; a target stops each image early):\n";
static const char usage_tail[] =
    "  --max-tile PX       as for vkinrd --fit\n"
    "  --device N|NAME     a device, when no scheduler assigned one\n"
    "  --allow-cpu         use the CPU device (lavapipe) when given no GPU\n"
    "  -q, --quiet         no per-image lines on stderr\n";

static void print_usage(FILE *out)
{
	fputs(usage_head, out);
	param_print_help(out, PARAM_QUEUE);
	fputs(usage_tail, out);
}

enum { O_TASK = FIT_ARGS_OWN, O_OUT, O_SHARD, O_TILE, O_DEVICE, O_CPU };

static const struct option task_options[] = {
	{ "fit-task", required_argument, 0, O_TASK },
	{ "out", required_argument, 0, O_OUT },
	{ "shard", required_argument, 0, O_SHARD },
	{ "max-tile", required_argument, 0, O_TILE },
	{ "device", required_argument, 0, O_DEVICE },
	{ "allow-cpu", no_argument, 0, O_CPU },
	{ "quiet", no_argument, 0, 'q' },
	{ 0, 0, 0, 0 },
};

/* One of --fit-task's own options (fit_args.h). */
static int task_option(void *ctx, int c, const char *value)
{
	struct task *t = ctx;
	char *end;
	long v;
	int n;
	switch (c) {
	case O_TASK:
		t->manifest = value;
		break;
	case O_OUT:
		t->out = value;
		break;
	case O_SHARD:
		return sscanf(value, "%d/%d%n", &t->shard, &t->shards, &n) !=
				   2 ||
			       value[n] || t->shards < 1 || t->shard < 0 ||
			       t->shard >= t->shards
			   ? -1
			   : 0;
	case O_TILE:
		v = strtol(value, &end, 10);
		if (end == value || *end || v < 1 || v > 1 << 20)
			return -1;
		t->cfg.max_tile = (int)v;
		break;
	case O_DEVICE:
		t->device = value;
		break;
	case O_CPU:
		t->allow_cpu = 1;
		break;
	case 'q':
		t->quiet = 1;
		break;
	default:
		return -2;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct task *t)
{
	static const char line[] =
	    "usage: vkinrd --fit-task MANIFEST --out OUT "
	    "[--shard K/N] [options]";
	static const char help[] = "vkinrd --fit-task --help";
	const struct fit_args args = {
		.own = task_options,
		.shorts = "q",
		.usage = print_usage,
		.usage_line = line,
		.help = help,
		.option = task_option,
		.ctx = t,
	};
	uint64_t given;
	t->shard = 0;
	t->shards = 1;
	if (fit_args_parse(&args, argc, argv, &t->cfg, &t->target_psnr, &given))
		return -1;
	if (!t->manifest || !t->out || optind != argc)
		return cli_short_usage(line, help);
	return 0;
}

/* The fields a finished result must share with this run to be kept. */
static void describe_settings(struct task *t)
{
	char dil[64], recipe[192];
	nn_config_dilations_string(&t->cfg, dil, sizeof(dil));
	nn_recipe_describe(&t->cfg.recipe, recipe, sizeof(recipe));
	snprintf(t->settings, sizeof(t->settings),
		 "width=%d lr=%.9g seed=%llu dilations=%s %s epochs=%d "
		 "target_psnr=%g",
		 t->cfg.nf, t->cfg.lr, (unsigned long long)t->cfg.seed, dil,
		 recipe, t->cfg.epochs, t->target_psnr);
}

/* ------------------------------------------------------------ device */

/* Opens the device the scheduler gave this slot (once per process). */
static int open_device(struct task *t, const char *selector)
{
	char err[512];
	int rc = gpu_create(&t->gpu, selector, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return rc;
	}
	/* the width is known: the defaults that follow it are filled in, so
	 * that the settings match those of a checkpoint or a result made with
	 * them (an automatic lr or warmup would never match) */
	nn_resolve_auto(&t->cfg.nf, gpu_info(t->gpu)->is_cpu, &t->cfg.lr,
			&t->cfg.recipe);
	describe_settings(t);
	return 0;
}

/* Chooses the selector of each slot: the scheduler's GPUs, the CPU
 * device when allowed and none was given, or --device. Returns the
 * number of slots (at least 1), or a negative code. */
static int assigned_selectors(struct task *t, char sel[][16], int max)
{
	struct gpu_device_info *infos = NULL;
	int count = 0, picked[MAX_TASK_GPUS], n;
	struct gpu_env env;
	char err[512];
	int rc = gpu_list_devices(&infos, &count, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return rc;
	}
	gpu_env_read(&env);
	rc =
	    gpu_env_pick(infos, count, &env, picked, max, &n, err, sizeof(err));
	if (rc == ERR_NO_DEVICE && t->allow_cpu) {
		fprintf(stderr,
			"vkinrd: %s; using the CPU device "
			"(--allow-cpu)\n",
			err);
		n = 0, rc = 0;
	}
	if (rc == 0 && n < 0) {
		snprintf(sel[0], sizeof(sel[0]), "%s",
			 t->device ? t->device : "");
		n = 1;
	} else if (rc == 0 && n == 0) {
		int cpu = -1;
		for (int i = 0; i < count && cpu < 0; i++)
			if (infos[i].is_cpu)
				cpu = i;
		if (!t->allow_cpu || cpu < 0) {
			fprintf(stderr,
				"vkinrd: this Slurm task was given no "
				"GPU: ask for one (vkinrctl submit "
				"--gpus-per-task G) or allow the CPU device "
				"(--allow-cpu)\n");
			rc = ERR_NO_DEVICE;
		} else {
			snprintf(sel[0], sizeof(sel[0]), "%d",
				 infos[cpu].index);
			n = 1;
		}
	} else if (rc == 0) {
		for (int i = 0; i < n; i++)
			snprintf(sel[i], sizeof(sel[i]), "%d",
				 infos[picked[i]].index);
	} else {
		fprintf(stderr, "vkinrd: %s\n", err);
	}
	free(infos);
	return rc ? rc : n;
}

/* ------------------------------------------------------------ results */

static int write_json(const char *dir, const char *file, cJSON *value)
{
	char *text = cJSON_PrintUnformatted(value),
	     *path = path_join(dir, file);
	int rc = text && path ? 0 : ERR_NOMEM;
	if (rc == 0) {
		size_t n = strlen(text);
		text[n] = '\n'; /* over the NUL: one line, newline-ended */
		rc = fileio_write_atomic(path, text, n + 1, 0644);
	}
	free(text);
	free(path);
	return rc;
}

/* Whether OUT/NAME/result.json says done with these settings. */
static int already_done(const struct task *t, const char *dir)
{
	char *path = path_join(dir, "result.json");
	uint8_t *data = NULL;
	size_t size;
	int done = 0;
	if (path && fileio_read(path, &data, &size, 1 << 20) == 0) {
		cJSON *r = cJSON_Parse((const char *)data);
		const cJSON *state =
		    cJSON_GetObjectItemCaseSensitive(r, "state");
		const cJSON *settings =
		    cJSON_GetObjectItemCaseSensitive(r, "settings");
		done = cJSON_IsString(state) &&
		       !strcmp(state->valuestring, "done") &&
		       cJSON_IsString(settings) &&
		       !strcmp(settings->valuestring, t->settings);
		cJSON_Delete(r);
	}
	free(data);
	free(path);
	return done;
}

static cJSON *result_base(const char *name, const char *file, const char *state)
{
	cJSON *r = cJSON_CreateObject();
	const char *job = getenv("SLURM_ARRAY_JOB_ID"),
		   *task = getenv("SLURM_ARRAY_TASK_ID");
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddStringToObject(r, "file", file);
	cJSON_AddStringToObject(r, "state", state);
	if (job && task) {
		char id[64];
		snprintf(id, sizeof(id), "%s_%s", job, task);
		cJSON_AddStringToObject(r, "slurm_job", id);
	}
	return r;
}

static void record_failure(struct task *t, const char *dir, const char *name,
			   const char *file, const char *why)
{
	cJSON *r = result_base(name, file, "failed");
	cJSON_AddStringToObject(r, "error", why);
	cJSON_AddStringToObject(r, "settings", t->settings);
	if (write_json(dir, "result.json", r))
		fprintf(stderr, "vkinrd: %s: cannot write result.json\n", dir);
	cJSON_Delete(r);
	fprintf(stderr, "vkinrd: %s: failed: %s\n", file, why);
	t->failed++;
}

/* metrics.ndjson: every epoch of the fit, resumed runs included. */
static int write_metrics(const char *dir, struct nn_fit *fit)
{
	int n;
	const struct nn_metrics *h = nn_fit_history(fit, &n);
	size_t cap = (size_t)n * 160 + 1, used = 0;
	char *text = malloc(cap), *path = path_join(dir, "metrics.ndjson");
	int rc = text && path ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++)
		used += (size_t)snprintf(
		    text + used, cap - used,
		    "{\"epoch\":%d,\"mse\":%.17g,\"psnr\":%.6f,"
		    "\"lr\":%.9g,\"ms\":%.3f,\"psnr_best\":%.6f}\n",
		    h[i].epoch, h[i].mse, h[i].psnr, h[i].lr, h[i].ms,
		    h[i].psnr_best);
	if (rc == 0)
		rc = fileio_write_atomic(path, text, used, 0644);
	free(text);
	free(path);
	return rc;
}

/* The package, the reconstruction, the metrics, then result.json. */
static int write_result(struct task *t, const char *dir, const char *name,
			const char *file, struct nn_fit *fit,
			const struct image *target, int resumed_from)
{
	double psnr = 0, seconds = 0;
	char *model_path = path_join(dir, "model.safetensors");
	char *recon_path = path_join(dir, "recon.png");
	int n, rc = model_path && recon_path ? 0 : ERR_NOMEM;
	const struct nn_metrics *h = nn_fit_history(fit, &n);

	rc = rc ? rc
		: nn_fit_save_export(fit, model_path, recon_path, 0644, &psnr,
				     NULL);
	rc = rc ? rc : write_metrics(dir, fit);
	for (int i = 0; i < n; i++)
		seconds += h[i].ms / 1000;
	if (rc == 0) {
		cJSON *r = result_base(name, file, "done");
		cJSON_AddNumberToObject(r, "width", target->width);
		cJSON_AddNumberToObject(r, "height", target->height);
		cJSON_AddNumberToObject(r, "epochs", nn_fit_epoch(fit));
		cJSON_AddNumberToObject(r, "psnr", psnr);
		cJSON_AddNumberToObject(r, "seconds", seconds);
		cJSON_AddStringToObject(r, "device", gpu_info(t->gpu)->name);
		cJSON_AddNumberToObject(r, "net_width", nn_fit_config(fit)->nf);
		cJSON_AddNumberToObject(r, "resumed_from", resumed_from);
		cJSON_AddStringToObject(r, "settings", t->settings);
		rc = write_json(dir, "result.json", r);
		cJSON_Delete(r);
	}
	free(model_path);
	free(recon_path);
	if (rc == 0 && !t->quiet)
		fprintf(stderr,
			"vkinrd: %s: done, %d epochs, PSNR %.2f dB "
			"(%.1f s)\n",
			name, nn_fit_epoch(fit), psnr, seconds);
	return rc;
}

/* ------------------------------------------------------------ one image */

/* A fit resumed from dir's checkpoint, when it holds one of these
 * settings; else NULL (and a fresh fit is made). */
static struct nn_fit *resume_fit(struct task *t, const char *ckpt,
				 const struct image *target)
{
	struct st_file *file = NULL;
	struct nn_fit *fit = NULL;
	struct nn_config cfg;
	char err[512];
	if (access(ckpt, F_OK) || st_load_file(ckpt, &file, err, sizeof(err)))
		return NULL;
	if (nn_checkpoint_config(file, &cfg, err, sizeof(err)) == 0) {
		struct task same = *t;
		same.cfg = cfg;
		same.cfg.epochs = t->cfg.epochs;
		describe_settings(&same);
		if (!strcmp(same.settings, t->settings))
			nn_fit_open(&fit, t->gpu, target, file, NULL, &same.cfg,
				    NN_TAKE_EPOCHS, err, sizeof(err));
	}
	if (!fit)
		fprintf(stderr,
			"vkinrd: %s: not resumed (other settings or "
			"damaged); fitting afresh\n",
			ckpt);
	st_destroy(file);
	return fit;
}

/* Steps until the epochs are done, the target is met or a stop signal;
 * a progress line on stderr (the task's log) every tenth of the way. */
static int train(struct task *t, struct nn_fit *fit, const char *name)
{
	int every = t->cfg.epochs >= 10 ? t->cfg.epochs / 10 : 1;
	struct nn_metrics m;
	while (nn_fit_epoch(fit) < t->cfg.epochs) {
		if (stop_signal)
			return ERR_CANCELLED;
		int rc = nn_fit_step(fit, &m);
		if (rc)
			return rc;
		if (!t->quiet && m.epoch % every == 0 &&
		    m.epoch < t->cfg.epochs)
			fprintf(stderr,
				"vkinrd: %s: epoch %d/%d, PSNR %.2f dB\n", name,
				m.epoch, t->cfg.epochs, m.psnr);
		if (t->target_psnr > 0 && m.psnr >= t->target_psnr)
			break;
	}
	return 0;
}

/* Whether OUT/NAME is a folder of this user's, not a link another
 * planted there to have the results written elsewhere (said when not). */
static int own_folder(const char *dir)
{
	char err[1024] = "";
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int ok = fd >= 0 && fstat(fd, &st) == 0 &&
		 outfile_folder_ok(dir, &st, err, sizeof(err)) == 0;
	if (fd < 0)
		snprintf(err, sizeof(err), "%s: %s", dir,
			 errno == ELOOP || errno == ENOTDIR
			     ? "not a folder (a link?)"
			     : strerror(errno));
	if (!ok)
		fprintf(stderr, "vkinrd: %s; its image is left out\n", err);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Fits one image into OUT/NAME. 0 (done, skipped or failed alone), or a
 * code that ends the task: ERR_CANCELLED after a checkpoint, or a device
 * error. */
static int fit_image(struct task *t, const char *name, const char *file)
{
	char *dir = path_join(t->out, name);
	char *lock = dir ? path_join(dir, ".lock") : NULL;
	char *ckpt = dir ? path_join(dir, "checkpoint.safetensors") : NULL;
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512];
	int rc = 0, fd = -1, resumed_from = 0;

	if (!dir || !lock || !ckpt) {
		rc = ERR_NOMEM;
		goto out;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "vkinrd: cannot create %s: %s\n", dir,
			strerror(errno));
		rc = ERR_IO;
		goto out;
	}
	if (!own_folder(dir)) {
		t->failed++;
		goto out;
	}
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
		fprintf(stderr,
			"vkinrd: %s: another task is fitting it; "
			"left to that one\n",
			name);
		t->skipped++;
		goto out;
	}
	if (already_done(t, dir)) {
		t->skipped++;
		goto out;
	}
	if (image_load_file(file, &target, err, sizeof(err))) {
		record_failure(t, dir, name, file, err);
		goto out;
	}
	if ((fit = resume_fit(t, ckpt, target)))
		resumed_from = nn_fit_epoch(fit);
	else if ((rc = nn_fit_create(&fit, t->gpu, target, &t->cfg, NULL, err,
				     sizeof(err)))) {
		if (rc == ERR_DEVICE_LOST || rc == ERR_VULKAN)
			goto out;
		record_failure(t, dir, name, file, err);
		rc = 0;
		goto out;
	}
	if (!t->quiet)
		fprintf(stderr, "vkinrd: %s: fitting %s (%dx%d)%s\n", name,
			file, target->width, target->height,
			resumed_from ? ", resumed" : "");
	rc = train(t, fit, name);
	if (rc == ERR_CANCELLED) {
		struct st_file *ck = NULL;
		int wrc = nn_fit_checkpoint(fit, &ck);
		wrc = wrc ? wrc : st_save_file(ck, ckpt);
		st_destroy(ck);
		fprintf(stderr, "vkinrd: %s: signal %d at epoch %d: %s\n", name,
			(int)stop_signal, nn_fit_epoch(fit),
			wrc ? "the checkpoint could not be written"
			    : "checkpointed");
	} else if (rc == ERR_DIVERGED) {
		record_failure(t, dir, name, file,
			       "training diverged (try a lower --lr)");
		rc = 0;
	} else if (rc == 0 && (rc = write_result(t, dir, name, file, fit,
						 target, resumed_from)) == 0) {
		t->done++;
		unlink(ckpt);
	}
out:
	if (fd >= 0)
		close(fd); /* releases the lock */
	nn_fit_destroy(fit);
	image_destroy(target);
	free(dir);
	free(lock);
	free(ckpt);
	return rc;
}

/* ------------------------------------------------------------ the task */

/* Whether text holds a control character (a line break, a tab...). */
static int has_control(const char *text)
{
	for (; *text; text++)
		if ((unsigned char)*text < 0x20 || *text == 0x7f)
			return 1;
	return 0;
}

/* A name that stays inside OUT: no '/', not hidden, not empty, no
 * control character; a path there, no tab (a field of its own) or other
 * control character. vkinrctl writes no other. */
static int entry_is_safe(const char *name, const char *path)
{
	return *name && *name != '.' && !strchr(name, '/') &&
	       !has_control(name) && *path && !has_control(path);
}

/* Fits this process's share of the manifest. The exit status. */
static int run_slot(struct task *t, const char *selector)
{
	uint8_t *data = NULL;
	size_t size;
	int rc = fileio_read(t->manifest, &data, &size, MAX_MANIFEST_BYTES);
	long line_no = 0, mine = 0;

	if (rc) {
		fprintf(stderr, "vkinrd: cannot read the manifest %s: %s\n",
			t->manifest, error_message(rc));
		return 1;
	}
	if (mkdir(t->out, 0755) && errno != EEXIST) {
		fprintf(stderr, "vkinrd: cannot create %s: %s\n", t->out,
			strerror(errno));
		free(data);
		return 1;
	}
	char *save = NULL;
	for (char *line = strtok_r((char *)data, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (line_no++ % t->shards != t->shard)
			continue;
		if (mine++ % t->slots != t->slot)
			continue;
		if (!tab || !entry_is_safe((*tab = 0, line), tab + 1)) {
			fprintf(stderr,
				"vkinrd: %s: line %ld is not NAME<TAB>"
				"PATH with a plain NAME and no control "
				"character (a tab, a carriage return...)\n",
				t->manifest, line_no);
			t->failed++;
			continue;
		}
		if (!t->gpu && (rc = open_device(t, selector)))
			break;
		rc = fit_image(t, line, tab + 1);
	}
	free(data);
	if (!t->quiet || rc)
		fprintf(stderr,
			"vkinrd: %s: %d fitted, %d skipped, "
			"%d failed%s\n",
			t->manifest, t->done, t->skipped, t->failed,
			rc == ERR_CANCELLED ? ", stopped by a signal" : "");
	gpu_destroy(t->gpu);
	if (rc == ERR_CANCELLED)
		return FIT_TASK_INTERRUPTED;
	return rc || t->failed ? 1 : 0;
}

/* One child per GPU; the signals go on to them. The worst status wins,
 * an interruption first (so the batch script requeues). */
static int run_slots(struct task *t, char sel[][16], int n)
{
	pid_t pids[MAX_TASK_GPUS];
	int status = 0;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			t->slot = i, t->slots = n;
			_exit(run_slot(t, sel[i]));
		}
		if (pids[i] < 0) {
			fprintf(stderr, "vkinrd: fork: %s\n", strerror(errno));
			n = i;
			status = 1;
		}
	}
	for (int i = 0; i < n; i++) {
		int ws, code;
		while (waitpid(pids[i], &ws, 0) < 0 && errno == EINTR)
			for (int j = 0; j < n && stop_signal; j++)
				kill(pids[j], (int)stop_signal);
		code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
		if (code == FIT_TASK_INTERRUPTED ||
		    status == FIT_TASK_INTERRUPTED)
			status = FIT_TASK_INTERRUPTED;
		else if (code)
			status = 1;
	}
	return status;
}

int fit_task_run(int argc, char **argv)
{
	struct task t = { 0 };
	char sel[MAX_TASK_GPUS][16];

	if (parse_args(argc, argv, &t))
		return 2;
	catch_stop_signals();
	describe_settings(&t);
	int n = assigned_selectors(&t, sel, MAX_TASK_GPUS);
	if (n < 0)
		return 1;
	t.slots = 1;
	return n == 1 ? run_slot(&t, sel[0]) : run_slots(&t, sel, n);
}
