/*
 * fit_task.c - one task of a dataset fit: `vkinrd --fit-task MANIFEST
 * --out OUT --shard K/N [fit options]`, what each Slurm array task runs.
 *
 * MANIFEST lists images, one "NAME<TAB>PATH" a line (vkinrctl submit
 * --slurm writes one per array task, names made unique); with --shard K/N
 * it takes lines K, K+N, K+2N... The images are fitted on the device the
 * scheduler gave this task (gpu/visible.h) as packs (nn/pack.h), as many
 * at once as the device's memory holds, each as it would be alone; each
 * leaves a folder OUT/NAME/ holding model.safetensors, recon.png,
 * metrics.ndjson and, last, result.json: the mark that the image is done
 * (or failed, with the reason; fit_task_files.c). Every file is written to
 * a temporary name and renamed, so a half-written file is never taken for
 * a result.
 *
 * Restartable: an image whose result.json says done with the same settings
 * is skipped; one with checkpoint.safetensors resumes from it, bit for bit.
 * SIGUSR1 (Slurm's --signal warning before a time limit) and SIGTERM
 * (scancel, preemption) stop the fits between two epochs, write their
 * checkpoints and exit with FIT_TASK_INTERRUPTED, which the batch script
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
#include "front/fit_task_internal.h"
#include "front/cli_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/outfile.h"
#include "util/parallel.h"
#include "util/path.h"
#include "gpu/gpu.h"
#include "gpu/visible.h"
#include "formats/image_codec.h"
#include "nn/fit.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "front/fit_args.h"
#include "formats/safetensors.h"

#define MAX_TASK_GPUS 16
#define MAX_MANIFEST_BYTES ((size_t)1 << 30)
#define TASK_PACK_MOST 4096 /* images in one pack at most */

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

/* An image in training: its folder, lock, checkpoint's name and fit. */
struct member {
	char *name, *file, *dir, *ckpt;
	int lock_fd, resumed_from;
	struct image *target;
	struct nn_fit *fit;
};

static void member_free(struct member *mb)
{
	if (mb->lock_fd >= 0)
		close(mb->lock_fd); /* releases the lock */
	nn_fit_destroy(mb->fit);
	image_destroy(mb->target);
	free(mb->name);
	free(mb->file);
	free(mb->dir);
	free(mb->ckpt);
	*mb = (struct member){ .lock_fd = -1 };
}

/* Image name (file) begun into OUT/NAME: *mb with its fit, or nothing
 * (skipped, or failed alone: said). 0, or an error that ends the task
 * (a device error, no memory). */
static int member_begin(struct task *t, const char *name, const char *file,
			struct member *mb)
{
	char err[512];
	int rc = 0;
	*mb = (struct member){ .lock_fd = -1 };
	mb->name = strdup(name);
	mb->file = strdup(file);
	mb->dir = path_join(t->out, name);
	char *lock = mb->dir ? path_join(mb->dir, ".lock") : NULL;
	mb->ckpt =
	    mb->dir ? path_join(mb->dir, "checkpoint.safetensors") : NULL;
	if (!mb->name || !mb->file || !lock || !mb->ckpt) {
		rc = ERR_NOMEM;
		goto fail;
	}
	if (mkdir(mb->dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "vkinrd: cannot create %s: %s\n", mb->dir,
			strerror(errno));
		rc = ERR_IO;
		goto fail;
	}
	if (!own_folder(mb->dir)) {
		t->failed++;
		goto fail;
	}
	mb->lock_fd =
	    open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (mb->lock_fd < 0 || flock(mb->lock_fd, LOCK_EX | LOCK_NB)) {
		fprintf(stderr,
			"vkinrd: %s: another task is fitting it; "
			"left to that one\n",
			name);
		t->skipped++;
		goto fail;
	}
	if (fit_task_already_done(t, mb->dir)) {
		t->skipped++;
		goto fail;
	}
	if (image_load_file(file, &mb->target, err, sizeof(err))) {
		fit_task_record_failure(t, mb->dir, name, file, err);
		goto fail;
	}
	if ((mb->fit = resume_fit(t, mb->ckpt, mb->target))) {
		mb->resumed_from = nn_fit_epoch(mb->fit);
	} else if ((rc = nn_fit_create(&mb->fit, t->gpu, mb->target, &t->cfg,
				       NULL, err, sizeof(err)))) {
		if (rc != ERR_DEVICE_LOST && rc != ERR_VULKAN &&
		    rc != ERR_DEVICE_OOM) {
			fit_task_record_failure(t, mb->dir, name, file, err);
			rc = 0;
		}
		goto fail;
	}
	if (!t->quiet)
		fprintf(stderr, "vkinrd: %s: fitting %s (%dx%d)%s\n", name,
			file, mb->target->width, mb->target->height,
			mb->resumed_from ? ", resumed" : "");
	free(lock);
	return 0;
fail:
	free(lock);
	member_free(mb);
	return rc;
}

/* After a stop signal: each image in training leaves its checkpoint
 * (the state of all read back at once), for the requeued task. */
static void checkpoint_all(struct member *live, int n, struct nn_fit **fits,
			   int *want)
{
	for (int i = 0; i < n; i++) {
		fits[i] = live[i].fit;
		want[i] = 1;
	}
	nn_fits_read_ahead(fits, n, want);
	for (int i = 0; i < n; i++) {
		struct st_file *ck = NULL;
		int wrc = nn_fit_checkpoint(live[i].fit, &ck);
		wrc = wrc ? wrc : st_save_file(ck, live[i].ckpt);
		st_destroy(ck);
		fprintf(stderr, "vkinrd: %s: signal %d at epoch %d: %s\n",
			live[i].name, (int)stop_signal,
			nn_fit_epoch(live[i].fit),
			wrc ? "the checkpoint could not be written"
			    : "checkpointed");
	}
}

/* The packed exports of the images that end at one epoch, written by a
 * few threads at once (encodings and files are host work, and a pack of
 * many small images ends together); the syncs they leave out are owed to
 * the caller's batch. */
struct task_writes {
	struct task *t;
	struct member *live;
	struct nn_export *ex;
	const int *which;
	int *wrc;
	atomic_long owed;
};

static void write_one(void *arg, int k)
{
	struct task_writes *w = arg;
	int i = w->which[k], own = !fileio_batch_open();
	struct member *mb = &w->live[i];
	if (own)
		fileio_batch_begin();
	w->wrc[i] =
	    fit_task_write_result(w->t, mb->dir, mb->name, mb->file, mb->fit,
				  mb->target, mb->resumed_from, &w->ex[i]);
	if (own)
		atomic_fetch_add(&w->owed, fileio_batch_leave());
}

/* Writes the results of the images that end here (over): packed exports
 * by several threads, else one by one; wrc[i] each one's status. */
static void write_ended(struct task *t, struct member *live, int n,
			const int *over, int packed, struct nn_export *ex,
			int *wrc)
{
	static int which[TASK_PACK_MOST];
	int count = 0;
	for (int i = 0; i < n; i++)
		if (over[i])
			which[count++] = i;
	if (packed) {
		struct task_writes w = { t, live, ex, which, wrc, 0 };
		atomic_init(&w.owed, 0);
		parallel_for(count, parallel_threads(), write_one, &w);
		fileio_batch_owe(atomic_load(&w.owed));
		return;
	}
	for (int k = 0; k < count; k++) {
		struct member *mb = &live[which[k]];
		wrc[which[k]] = fit_task_write_result(
		    t, mb->dir, mb->name, mb->file, mb->fit, mb->target,
		    mb->resumed_from, NULL);
	}
}

/* What a pack's step came to for each image: a progress line every
 * tenth of the way; done (the epochs, or the target met) written with
 * the exports of all that end here made together, and made durable by
 * one sync before their checkpoints go; diverged, failed alone. Those
 * that ended leave live[]. 0, or a device error. */
static int step_ended(struct task *t, struct nn_pack *pack, struct member *live,
		      int *n, struct nn_fit **fits, const struct nn_metrics *m,
		      const int *rcs, int *over, struct nn_export *ex)
{
	static int wrc[TASK_PACK_MOST]; /* one pack at a time a process */
	int every = t->cfg.epochs >= 10 ? t->cfg.epochs / 10 : 1, rc = 0;
	int any = 0, kept = 0;
	for (int i = 0; i < *n; i++) {
		if (!t->quiet && rcs[i] == 0 && m[i].epoch % every == 0 &&
		    m[i].epoch < t->cfg.epochs)
			fprintf(
			    stderr, "vkinrd: %s: epoch %d/%d, PSNR %.2f dB\n",
			    live[i].name, m[i].epoch, t->cfg.epochs, m[i].psnr);
		over[i] = rcs[i] == 0 &&
			  (nn_fit_epoch(live[i].fit) >= t->cfg.epochs ||
			   (t->target_psnr > 0 && m[i].psnr >= t->target_psnr));
		any |= over[i];
	}
	int packed = any && nn_pack_export(pack, fits, *n, over, 1, 1, ex) == 0;
	fileio_batch_begin();
	if (any)
		write_ended(t, live, *n, over, packed, ex, wrc);
	for (int i = 0; i < *n; i++)
		if (rcs[i] == ERR_DIVERGED)
			fit_task_record_failure(
			    t, live[i].dir, live[i].name, live[i].file,
			    "training diverged (try a lower --lr)");
	int synced = fileio_batch_end(t->out);
	for (int i = 0; i < *n; i++) {
		struct member *mb = &live[i];
		if (rcs[i] && rcs[i] != ERR_DIVERGED) {
			rc = rc ? rc : rcs[i];
		} else if (over[i]) {
			int wrc_i = wrc[i] ? wrc[i] : synced;
			if (wrc_i == 0) {
				t->done++;
				unlink(mb->ckpt);
			}
			rc = rc ? rc : wrc_i;
		} else if (!rcs[i]) {
			live[kept++] = *mb;
			continue;
		}
		member_free(mb);
	}
	*n = kept;
	return rc;
}

/* How many images train at once: as many as 60% of the device's memory
 * holds by what the first took (nn_pack_room), within the files this
 * process may open (a lock each). */
static int pack_size(struct task *t)
{
	struct rlimit rl;
	int most = nn_pack_room(t->gpu, TASK_PACK_MOST);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 64 &&
	    (rlim_t)most > rl.rlim_cur - 64)
		most = (int)(rl.rlim_cur - 64);
	return most;
}

/*
 * Fits the images (names[i], files[i]) as packs (nn/pack.h): up to
 * pack_size of them step together, and as each ends the next takes its
 * place. 0 (every image done, skipped or failed alone), or a code that
 * ends the task: ERR_CANCELLED after the checkpoints, or a device error.
 */
static int fit_images(struct task *t, char **names, char **files, int count)
{
	int cap = TASK_PACK_MOST, sized = 0, next = 0, n = 0, rc = 0;
	struct member *live = calloc(TASK_PACK_MOST, sizeof(*live));
	struct nn_fit **fits = calloc(TASK_PACK_MOST, sizeof(*fits));
	struct nn_metrics *m = calloc(TASK_PACK_MOST, sizeof(*m));
	int *rcs = calloc(TASK_PACK_MOST, sizeof(*rcs));
	int *over = calloc(TASK_PACK_MOST, sizeof(*over));
	struct nn_export *ex = calloc(TASK_PACK_MOST, sizeof(*ex));
	struct nn_pack *pack = NULL;
	if (!live || !fits || !m || !rcs || !over || !ex ||
	    nn_pack_create(&pack, t->gpu))
		rc = ERR_NOMEM;
	while (rc == 0 && (n || next < count)) {
		while (rc == 0 && n < cap && next < count && !stop_signal) {
			rc =
			    member_begin(t, names[next], files[next], &live[n]);
			if (rc == ERR_DEVICE_OOM && n) { /* full: this large */
				rc = 0;
				cap = n;
				break;
			}
			next++;
			if (rc || !live[n].fit)
				continue;
			if (!sized) {
				cap = pack_size(t);
				sized = 1;
				if (!t->quiet)
					fprintf(stderr,
						"vkinrd: %d images, in packs "
						"of up to %d\n",
						count, cap);
			}
			n++;
		}
		if (rc || !n)
			continue;
		if (stop_signal) {
			checkpoint_all(live, n, fits, over);
			rc = ERR_CANCELLED;
			break;
		}
		for (int i = 0; i < n; i++)
			fits[i] = live[i].fit;
		rc = nn_pack_step(pack, fits, n, m, rcs);
		rc = rc ? rc
			: step_ended(t, pack, live, &n, fits, m, rcs, over, ex);
	}
	for (int i = 0; i < n; i++)
		member_free(&live[i]);
	nn_pack_destroy(pack);
	free(live);
	free(fits);
	free(m);
	free(rcs);
	free(over);
	free(ex);
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
	int count = 0;

	if (rc) {
		fprintf(stderr, "vkinrd: cannot read the manifest %s: %s\n",
			t->manifest, error_message(rc));
		return 1;
	}
	if (fit_task_check_out(t->out)) {
		free(data);
		return 1;
	}
	/* this process's lines, in the manifest's order (pointers into
	 * data) */
	size_t cap = size / 2 + 1;
	char **names = malloc(cap * sizeof(*names));
	char **files = malloc(cap * sizeof(*files));
	char *save = NULL;
	rc = names && files ? 0 : ERR_NOMEM;
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
		names[count] = line;
		files[count++] = tab + 1;
	}
	if (rc == 0 && count && !t->gpu)
		rc = open_device(t, selector);
	if (rc == 0 && count)
		rc = fit_images(t, names, files, count);
	free(names);
	free(files);
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
