/*
 * fit_cli.c - one fit in the foreground: `vkinrd --fit IMG ...` (PNG, JPEG
 * or WebP).
 *
 * It is the same engine the daemon's workers run (nn/fit.h), driven from
 * the command line: load the PNG, create the fit on the chosen device (or
 * restore a checkpoint), step epoch by epoch printing metrics (NDJSON with
 * --json, a progress line on stderr otherwise), then export the model
 * package and the reconstruction when asked. --stop-after and --checkpoint
 * let tests stop a run part way and --resume continue it.
 *
 * Its outputs go through fit_out.c: every name is checked before the
 * device is even opened, so a refused run (a file that exists, without
 * --force; a folder of another user's) writes nothing and exits 3. SIGINT
 * or SIGTERM ends the run at the epoch's end with what was asked for
 * written (or, when nothing was, a checkpoint here to --resume from),
 * said on stderr, and the exit status 128 + the signal.
 */
#include "front/fit_cli.h"
#include "front/cli_usage.h"
#include "front/fit_cost.h"
#include "front/fit_many.h"
#include "front/fit_out.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "gpu/gpu.h"
#include "formats/image_codec.h"
#include "nn/fit.h"
#include "nn/package.h"
#include "proto/protocol.h"
#include "front/fit_args.h"
#include "formats/safetensors.h"

struct fit_options {
	const char *image, *model_out, *recon_out, *init, *device;
	const char *checkpoint_out, *resume;
	const char *out; /* several images: their folder of outputs */
	int pack;        /* several images: fits a pack at most */
	char **more;     /* several images: the other paths */
	int nmore;
	int json, quiet, timings, force, recursive, yes;
	struct fit_resize resize; /* --resize, --max-side */
	int stop_after;
	int epochs_given;
	struct nn_config cfg; /* nf 0: the device's width */
	double target_psnr;   /* 0: none */
};

static const char usage_head[] =
    "usage: vkinrd --fit IMG.png|IMG.jpg|IMG.webp [options]\n"
    "training (the same options, bounds and defaults as vkinrctl submit;\n"
    "the recipe's defaults measured by `make bench-quality`):\n";
static const char usage_tail[] =
    "  --init M.safetensors  start from a model package\n"
    "  --model OUT.safetensors  write the fitted model package\n"
    "  --recon OUT.png     write the reconstruction\n"
    "  --checkpoint PATH   write a checkpoint at the end (or at --stop-after)\n"
    "  --resize WxH        scale the image down to W x H pixels first\n"
    "  --max-side N        scale it down so that no side is over N pixels\n"
    "  -y, --yes           fit even when it would be slow on a CPU device\n"
    "                      (without it such a fit is refused, estimated)\n"
    "  -f, --force         replace output files that exist (never another\n"
    "                      user's file; without it they are refused)\n"
    "  --resume PATH       continue from a checkpoint\n"
    "  --stop-after K      stop after epoch K (with --checkpoint)\n"
    "several images (vkinrd --fit A.png B.jpg ... or --fit FOLDER):\n"
    "  --out DIR           write DIR/NAME.safetensors and DIR/NAME.png\n"
    "  -r, --recursive     a folder's subfolders too (DIR/SUB/NAME.png)\n"
    "  --pack N            train at most N images at once as one program\n"
    "                      (default: as many as the device's memory holds)\n"
    "  --max-tile PX       cap a tile's core side (tests, small memories)\n"
    "  --mem-budget MIB    device memory to plan tiles for\n"
    "  --device N|NAME     which Vulkan device (see --devices)\n"
    "  --json              one JSON object per epoch, then a summary\n"
    "  --timings           per-pass GPU times in the summary\n"
    "  -q, --quiet         no progress on stderr\n";

static void print_usage(FILE *out)
{
	fputs(usage_head, out);
	param_print_help(out, PARAM_QUEUE);
	fputs(usage_tail, out);
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

enum {
	O_FIT = FIT_ARGS_OWN,
	O_INIT,
	O_MODEL,
	O_RECON,
	O_CKPT,
	O_RESUME,
	O_STOP,
	O_TILE,
	O_BUDGET,
	O_DEVICE,
	O_JSON,
	O_TIMINGS,
	O_OUT,
	O_PACK,
	O_RESIZE,
	O_MAX_SIDE,
};

static const struct option fit_options[] = {
	{ "fit", required_argument, 0, O_FIT },
	{ "init", required_argument, 0, O_INIT },
	{ "model", required_argument, 0, O_MODEL },
	{ "recon", required_argument, 0, O_RECON },
	{ "checkpoint", required_argument, 0, O_CKPT },
	{ "resume", required_argument, 0, O_RESUME },
	{ "stop-after", required_argument, 0, O_STOP },
	{ "max-tile", required_argument, 0, O_TILE },
	{ "mem-budget", required_argument, 0, O_BUDGET },
	{ "device", required_argument, 0, O_DEVICE },
	{ "json", no_argument, 0, O_JSON },
	{ "timings", no_argument, 0, O_TIMINGS },
	{ "out", required_argument, 0, O_OUT },
	{ "pack", required_argument, 0, O_PACK },
	{ "force", no_argument, 0, 'f' },
	{ "recursive", no_argument, 0, 'r' },
	{ "yes", no_argument, 0, 'y' },
	{ "resize", required_argument, 0, O_RESIZE },
	{ "max-side", required_argument, 0, O_MAX_SIDE },
	{ "quiet", no_argument, 0, 'q' },
	{ 0, 0, 0, 0 },
};

/* A flag typed right after --fit, where getopt takes it for --fit's
 * value (`vkinrd --fit -r photos/ --out fitted/`, as cp -r and rsync -r
 * are typed): it is applied and the first image named after the options
 * stands for --fit's; 0 when value was such a flag, -2 (said) when it is
 * another option, 1 when it is no option. A file of that name is taken
 * as the image, as getopt gave it. */
static int fit_flag_first(struct fit_options *o, const char *value)
{
	static const struct {
		const char *s, *l;
		size_t off;
	} flags[] = {
		{ "-r", "--recursive",
		  offsetof(struct fit_options, recursive) },
		{ "-f", "--force", offsetof(struct fit_options, force) },
		{ "-y", "--yes", offsetof(struct fit_options, yes) },
		{ "-q", "--quiet", offsetof(struct fit_options, quiet) },
		{ "--json", "--json", offsetof(struct fit_options, json) },
		{ "--timings", "--timings",
		  offsetof(struct fit_options, timings) },
	};
	struct stat st;

	if (value[0] != '-' || !value[1] || stat(value, &st) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(value, flags[i].s) || !strcmp(value, flags[i].l)) {
			*(int *)((char *)o + flags[i].off) = 1;
			return 0;
		}
	fprintf(stderr,
		"vkinrd: --fit takes the image or folder first, not %s: "
		"vkinrd --fit IMG|DIR [options]\n",
		value);
	return -2;
}

/* One of --fit's own options (fit_args.h). */
static int fit_option(void *ctx, int c, const char *value)
{
	struct fit_options *o = ctx;
	int v;
	switch (c) {
	case O_FIT:
		if ((v = fit_flag_first(o, value)) <= 0)
			return v;
		o->image = value;
		break;
	case O_INIT:
		o->init = value;
		break;
	case O_MODEL:
		o->model_out = value;
		break;
	case O_RECON:
		o->recon_out = value;
		break;
	case O_CKPT:
		o->checkpoint_out = value;
		break;
	case O_RESUME:
		o->resume = value;
		break;
	case O_STOP:
		return parse_int(value, 1, LIMIT_EPOCHS, &o->stop_after);
	case O_TILE:
		return parse_int(value, 1, 1 << 20, &o->cfg.max_tile);
	case O_BUDGET:
		if (parse_int(value, 1, 1 << 30, &v))
			return -1;
		o->cfg.mem_budget = (uint64_t)v << 20;
		break;
	case O_DEVICE:
		o->device = value;
		break;
	case O_JSON:
		o->json = 1;
		break;
	case O_TIMINGS:
		o->timings = 1;
		break;
	case O_OUT:
		o->out = value;
		break;
	case O_PACK:
		return parse_int(value, 1, 1 << 20, &o->pack);
	case 'f':
		o->force = 1;
		break;
	case 'r':
		o->recursive = 1;
		break;
	case 'y':
		o->yes = 1;
		break;
	case O_RESIZE:
	case O_MAX_SIDE:
		if (o->resize.width || o->resize.max_side) {
			fprintf(stderr, "vkinrd: --resize and --max-side "
					"exclude each other\n");
			return -2;
		}
		if (fit_resize_parse(c == O_RESIZE ? "resize" : "max-side",
				     value, &o->resize))
			return -2;
		break;
	case 'q':
		o->quiet = 1;
		break;
	default:
		return -2;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct fit_options *o)
{
	static const char line[] =
	    "usage: vkinrd --fit IMG.png|IMG.jpg|IMG.webp|DIR... [options]";
	static const char help[] = "vkinrd --fit --help";
	const struct fit_args args = {
		.own = fit_options,
		.shorts = "qfry",
		.usage = print_usage,
		.usage_line = line,
		.help = help,
		.option = fit_option,
		.ctx = o,
	};
	uint64_t given;
	if (fit_args_parse(&args, argc, argv, &o->cfg, &o->target_psnr, &given))
		return -1;
	o->epochs_given = !!(given & ((uint64_t)1 << PARAM_EPOCHS));
	o->more = argv + optind;
	o->nmore = argc - optind;
	if (!o->image && o->nmore) { /* --fit -r DIR */
		o->image = o->more[0];
		o->more++;
		o->nmore--;
	}
	struct stat st;
	int folder =
	    o->image && stat(o->image, &st) == 0 && S_ISDIR(st.st_mode);
	if (!o->image || ((o->nmore || folder) && !o->out)) {
		if (o->image && (o->nmore || folder))
			fprintf(stderr, "vkinrd: %s need --out DIR\n",
				o->nmore ? "several images"
					 : "a folder's images");
		return cli_short_usage(line, help);
	}
	if (o->out && o->target_psnr > 0) {
		fprintf(stderr, "vkinrd: --target-psnr stops one image; "
				"several (--out) train every epoch\n");
		return cli_short_usage(line, help);
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of the epoch times, leaving out the first few (warm-up). */
static double median_ms(const struct nn_metrics *h, int n, int first)
{
	int skip = n > 20 ? 10 : n > 2 ? 1 : 0;
	int count = 0;
	double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
	if (!v)
		return 0;
	for (int i = skip; i < n; i++)
		if (h[i].epoch >= first)
			v[count++] = h[i].ms;
	qsort(v, (size_t)count, sizeof(double), compare_double);
	double m = count ? v[count / 2] : 0;
	free(v);
	return m;
}

static void print_epoch(const struct fit_options *o, const struct nn_metrics *m,
			int total)
{
	if (o->json) {
		printf("{\"epoch\":%d,\"mse\":%.17g,\"psnr\":%.6f,\"lr\":%.9g,"
		       "\"ms\":%.3f",
		       m->epoch, m->mse, m->psnr, m->lr, m->ms);
		if (m->psnr_average > 0)
			printf(",\"psnr_average\":%.6f", m->psnr_average);
		printf(",\"psnr_best\":%.6f}\n", m->psnr_best);
		fflush(stdout);
	}
	if (!o->quiet &&
	    (m->epoch % 50 == 0 || m->epoch == total || m->epoch == 1))
		fprintf(stderr,
			"epoch %d/%d  psnr %.2f dB (best %.2f)  mse %.3g  "
			"lr %.3g  %.1f ms\n",
			m->epoch, total, m->psnr, m->psnr_best, m->mse, m->lr,
			m->ms);
}

/* The summary gives the median epoch (the steady state) and the mean: the
 * training loop's wall time over its epochs, evaluations, precision
 * changes and the first epoch included, which is what a user waits for. */
static void print_summary(const struct fit_options *o, struct nn_fit *fit,
			  struct gpu_context *gpu, const struct image *target,
			  int first_epoch, double psnr, double seconds,
			  double train_seconds)
{
	struct nn_fit_info info;
	int n;
	const struct nn_metrics *h = nn_fit_history(fit, &n);
	double ms = median_ms(h, n, first_epoch);
	int trained = nn_fit_epoch(fit) - first_epoch + 1;
	double mean = trained > 0 ? train_seconds * 1e3 / trained : 0;
	nn_fit_get_info(fit, &info);
	double gpu_ms = 0;
	for (int i = 0; i < NN_PASS_COUNT; i++)
		gpu_ms += info.pass_ms[i];
	if (o->json) {
		printf("{\"done\":true,\"epochs\":%d,\"psnr\":%.6f,\"seconds\":"
		       "%.3f,"
		       "\"device\":\"%s\",\"width\":%d,\"image\":{\"width\":%d,"
		       "\"height\":%d},\"ms_per_epoch_median\":%.3f,"
		       "\"ms_per_epoch_mean\":%.3f,\"train_seconds\":%.3f,"
		       "\"tiles\":%d,\"tile\":[%d,%d],\"halo_overhead\":%.4f,"
		       "\"device_bytes\":%llu,\"peak_device_bytes\":%llu,"
		       "\"gflop_per_epoch\":%.3f,\"tflops\":%.3f,\"precision\":"
		       "\"%s\"",
		       nn_fit_epoch(fit), psnr, seconds, gpu_info(gpu)->name,
		       nn_fit_config(fit)->nf, target->width, target->height,
		       ms, mean, train_seconds, info.tiles_x * info.tiles_y,
		       info.tile_w, info.tile_h, info.halo_overhead,
		       (unsigned long long)info.device_bytes,
		       (unsigned long long)gpu_bytes_peak(gpu),
		       info.gflop_per_epoch,
		       ms > 0 ? info.gflop_per_epoch / ms : 0, info.precision);
		char recipe[512];
		nn_recipe_describe(&nn_fit_config(fit)->recipe, recipe,
				   sizeof(recipe));
		printf(",\"weights\":\"%s\",\"recipe\":\"lr %g %s\"",
		       nn_fit_exported_weights(fit), nn_fit_config(fit)->lr,
		       recipe);
		if (o->timings) {
			printf(",\"gpu_ms\":%.3f,\"pass_ms\":{", gpu_ms);
			for (int i = 0; i < NN_PASS_COUNT; i++)
				printf("%s\"%s\":%.3f", i ? "," : "",
				       nn_pass_name((enum nn_pass)i),
				       info.pass_ms[i]);
			/* bandwidth of the passes that are not GEMMs */
			printf("},\"pass_gbps\":{");
			for (int i = 0, n = 0; i < NN_PASS_COUNT; i++)
				if (info.pass_bytes[i] > 0 &&
				    info.pass_ms[i] > 0)
					printf("%s\"%s\":%.1f", n++ ? "," : "",
					       nn_pass_name((enum nn_pass)i),
					       info.pass_bytes[i] /
						   info.pass_ms[i] * 1e-6);
			printf("}");
		}
		printf("}\n");
		return;
	}
	fprintf(
	    stderr,
	    "done: %d epochs, PSNR %.2f dB (%s weights), %.1f s, "
	    "%.2f ms/epoch (median; mean %.2f), %d tile(s), %.0f MiB on %s, "
	    "%s\n",
	    nn_fit_epoch(fit), psnr, nn_fit_exported_weights(fit), seconds, ms,
	    mean, info.tiles_x * info.tiles_y, info.device_bytes / 1048576.0,
	    gpu_info(gpu)->name, info.precision);
	if (o->timings) {
		for (int i = 0; i < NN_PASS_COUNT; i++) {
			fprintf(stderr, "  %-16s %8.3f ms",
				nn_pass_name((enum nn_pass)i), info.pass_ms[i]);
			if (info.pass_bytes[i] > 0 && info.pass_ms[i] > 0)
				fprintf(stderr, "  %8.1f MB  %7.1f GB/s",
					info.pass_bytes[i] * 1e-6,
					info.pass_bytes[i] / info.pass_ms[i] *
					    1e-6);
			fputc('\n', stderr);
		}
	}
}

static int load_package(const char *path, struct st_file **out)
{
	char err[256];
	int rc = st_load_file(path, out, err, sizeof(err));
	if (rc)
		fprintf(stderr, "vkinrd: %s: %s\n", path, err);
	return rc;
}

/* Creates the fit: from a checkpoint, or fresh (optionally from --init). */
static int start_fit(struct fit_options *o, struct gpu_context *gpu,
		     const struct image *target, struct nn_fit **fit)
{
	char err[512] = "";
	struct st_file *ckpt = NULL, *init = NULL;
	int rc = 0;
	if (o->resume)
		rc = load_package(o->resume, &ckpt);
	else if (o->init)
		rc = load_package(o->init, &init);
	rc = rc ? rc
		: nn_fit_open(fit, gpu, target, ckpt, init, &o->cfg,
			      o->epochs_given ? NN_TAKE_EPOCHS : 0, err,
			      sizeof(err));
	if (rc && *err)
		fprintf(stderr, "vkinrd: %s\n", err);
	st_destroy(ckpt);
	st_destroy(init);
	return rc;
}

/* An outcome of fit_out.c as the exit status, its sentence printed. */
static int out_status(int rc, const char *err)
{
	if (rc)
		fprintf(stderr, "vkinrd: %s\n", err);
	return rc == OUTFILE_REFUSED ? FIT_OUT_REFUSED_STATUS : rc ? 1 : 0;
}

/* Before anything runs: each output may be written, and no two are one. */
static int check_outputs(const struct fit_options *o)
{
	const char *names[] = { o->model_out, o->recon_out, o->checkpoint_out };
	char err[1024];
	for (int i = 0; i < 3; i++) {
		for (int j = 0; names[i] && j < i; j++)
			if (names[j] && !strcmp(names[i], names[j])) {
				fprintf(stderr,
					"vkinrd: %s is named for two outputs\n",
					names[i]);
				return 2;
			}
		int rc = names[i] ? outfile_check(names[i], o->force, err,
						  sizeof(err))
				  : 0;
		if (rc)
			return out_status(rc, err);
	}
	return 0;
}

static int write_outputs(const struct fit_options *o, struct nn_fit *fit,
			 double *psnr)
{
	char err[1024];
	return out_status(fit_out_export(fit, o->model_out, o->recon_out,
					 o->force, psnr, err, sizeof(err)),
			  err);
}

static int write_checkpoint(const struct fit_options *o, const char *path,
			    struct nn_fit *fit)
{
	char err[1024];
	return out_status(
	    fit_out_checkpoint(fit, path, o->force, err, sizeof(err)), err);
}

/* Stopped by sig after some epochs: writes what was asked for (when
 * nothing was, a checkpoint in the current folder, never replacing one) and
 * says what. The exit status: 128 + sig. */
static int write_interrupted(const struct fit_options *o, struct nn_fit *fit,
			     int sig, int first_epoch)
{
	const char *why = fit_out_signal_name(sig);
	char ckpt[512] = "", said[1600] = "";
	double psnr = 0;
	int epoch = nn_fit_epoch(fit), failed = 0;
	if (epoch < first_epoch) {
		fprintf(stderr,
			"vkinrd: %s before the first epoch: nothing "
			"written\n",
			why);
		return 128 + sig;
	}
	if (o->checkpoint_out)
		snprintf(ckpt, sizeof(ckpt), "%s", o->checkpoint_out);
	else if (!o->model_out && !o->recon_out) {
		const char *slash = strrchr(o->image, '/');
		char stem[256];
		snprintf(stem, sizeof(stem), "%s",
			 slash ? slash + 1 : o->image);
		char *dot = strrchr(stem, '.');
		if (dot && dot != stem)
			*dot = '\0';
		/* a name nothing has: an earlier stop's checkpoint stays */
		struct stat st;
		for (int k = 1; k < 100; k++) {
			if (k == 1)
				snprintf(ckpt, sizeof(ckpt),
					 "%s.checkpoint.safetensors", stem);
			else
				snprintf(ckpt, sizeof(ckpt),
					 "%s.checkpoint-%d.safetensors", stem,
					 k);
			if (lstat(ckpt, &st) < 0 && errno == ENOENT)
				break;
		}
	}
	/* the hint names the scaling too: the checkpoint is for the image
	 * at the size it trained at, which the plain image is not */
	char scaled[64] = "";
	if (o->resize.max_side)
		snprintf(scaled, sizeof(scaled), " --max-side %d",
			 o->resize.max_side);
	else if (o->resize.width)
		snprintf(scaled, sizeof(scaled), " --resize %dx%d",
			 o->resize.width, o->resize.height);
	if (*ckpt && !(failed = write_checkpoint(o, ckpt, fit)))
		snprintf(said, sizeof(said),
			 "; the checkpoint %.500s (continue with vkinrd --fit "
			 "%.500s --resume %.500s%s)",
			 ckpt, o->image, ckpt, scaled);
	if ((o->model_out || o->recon_out) && !write_outputs(o, fit, &psnr)) {
		size_t n = strlen(said);
		snprintf(said + n, sizeof(said) - n,
			 "; %s%.500s%s%.500s (%s weights, PSNR %.2f dB)",
			 o->model_out ? "the model " : "",
			 o->model_out ? o->model_out : "",
			 o->model_out && o->recon_out
			     ? " and the reconstruction "
			 : o->recon_out ? "the reconstruction "
					: "",
			 o->recon_out ? o->recon_out : "",
			 nn_fit_exported_weights(fit), psnr);
	} else if (o->model_out || o->recon_out) {
		failed = 1;
	}
	fprintf(stderr, "vkinrd: %s at epoch %d of %d: stopped; wrote %s\n",
		why, epoch, o->cfg.epochs,
		*said    ? said + 2
		: failed ? "nothing (see above)"
			 : "nothing");
	return 128 + sig;
}

/* Several images (or a folder) into --out: fit_many.c. */
static int run_many(struct fit_options *o)
{
	struct gpu_context *gpu = NULL;
	char err[512];
	if (gpu_create(&gpu, o->device, err, sizeof(err))) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return 1;
	}
	struct fit_many_options many = {
		.cfg = o->cfg,
		.out = o->out,
		.pack = o->pack,
		.json = o->json,
		.quiet = o->quiet,
		.timings = o->timings,
		.force = o->force,
		.recursive = o->recursive,
		.resize = o->resize,
		.yes = o->yes,
	};
	if (!many.cfg.nf)
		many.cfg.nf = nn_default_width(gpu_info(gpu)->is_cpu);
	char *paths[o->nmore + 1];
	paths[0] = (char *)o->image;
	for (int i = 0; i < o->nmore; i++)
		paths[i + 1] = o->more[i];
	int status = fit_many_run(&many, paths, o->nmore + 1, gpu);
	gpu_destroy(gpu);
	return status;
}

int fit_cli_run(int argc, char **argv)
{
	struct fit_options o = { 0 };
	struct gpu_context *gpu = NULL;
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512];
	int rc;

	if (parse_args(argc, argv, &o))
		return 2;
	fit_out_catch_stops();
	if (o.out)
		return run_many(&o);
	if ((rc = check_outputs(&o)))
		return rc;
	if ((rc = image_load_file(o.image, &target, err, sizeof(err)))) {
		fprintf(stderr, "vkinrd: %s: %s\n", o.image, err);
		return 1;
	}
	if (fit_resize_apply(&o.resize, &target, o.image, o.quiet)) {
		image_destroy(target);
		return 1;
	}
	if ((rc = gpu_create(&gpu, o.device, err, sizeof(err)))) {
		fprintf(stderr, "vkinrd: %s\n", err);
		image_destroy(target);
		return 1;
	}
	if (!o.cfg.nf)
		o.cfg.nf = nn_default_width(gpu_info(gpu)->is_cpu);
	if (!o.quiet)
		fprintf(stderr, "vkinrd %s: fitting %s (%dx%d) on %s\n",
			VKINR_VERSION, o.image, target->width, target->height,
			gpu_info(gpu)->name);

	double start = now_s(), psnr = 0;
	rc = start_fit(&o, gpu, target, &fit);
	int first_epoch = fit ? nn_fit_epoch(fit) + 1 : 1;
	int total = o.cfg.epochs;
	int stop = o.stop_after && o.stop_after < total ? o.stop_after : total;
	int costly = rc == 0 ? fit_cost_check(fit, gpu, target,
					      stop - first_epoch + 1, o.yes)
			     : 0;
	if (costly) {
		nn_fit_destroy(fit);
		gpu_destroy(gpu);
		image_destroy(target);
		return costly;
	}
	double train_start = now_s();
	int reached = 0;
	while (rc == 0 && nn_fit_epoch(fit) < stop && !fit_out_stopped()) {
		struct nn_metrics m;
		rc = nn_fit_step(fit, &m);
		if (rc == ERR_DIVERGED)
			fprintf(stderr,
				"vkinrd: the loss is not finite at epoch %d: "
				"training diverged (try a lower --lr)\n",
				nn_fit_epoch(fit) + 1);
		else if (rc)
			fprintf(stderr, "vkinrd: epoch %d failed: %s\n",
				nn_fit_epoch(fit) + 1, error_message(rc));
		if (rc)
			break;
		print_epoch(&o, &m, total);
		if ((reached = o.target_psnr > 0 && m.psnr >= o.target_psnr))
			break; /* reached: done early, as a task stops */
	}
	double train_seconds = now_s() - train_start;
	int status = rc ? 1 : 0, sig = fit_out_stopped();
	if (rc == 0 && sig && !reached && nn_fit_epoch(fit) < stop) {
		status = write_interrupted(&o, fit, sig, first_epoch);
	} else if (rc == 0) { /* done (a signal meanwhile changes nothing) */
		if (o.checkpoint_out)
			status = write_checkpoint(&o, o.checkpoint_out, fit);
		if (status == 0)
			status = write_outputs(&o, fit, &psnr);
		if (status == 0)
			print_summary(&o, fit, gpu, target, first_epoch, psnr,
				      now_s() - start, train_seconds);
	}
	nn_fit_destroy(fit);
	gpu_destroy(gpu);
	image_destroy(target);
	return status;
}

int fit_cli_devices(int json)
{
	struct gpu_device_info *infos = NULL;
	int count = 0;
	char err[512];
	int rc = gpu_list_devices(&infos, &count, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return 1;
	}
	for (int i = 0; i < count; i++) {
		const struct gpu_device_info *d = &infos[i];
		if (json)
			printf(
			    "{\"index\":%d,\"name\":\"%s\",\"type\":\"%s\","
			    "\"memory\":%llu,\"subgroup\":%u,"
			    "\"cooperative_matrix\":\"%s\",\"tensor_cores\":%s,"
			    "\"preferred\":%s}\n",
			    d->index, d->name, d->type_name,
			    (unsigned long long)d->device_local_bytes,
			    d->subgroup_size,
			    d->has_coopmat_nv && d->has_coopmat_khr ? "nv,khr"
			    : d->has_coopmat_nv                     ? "nv"
			    : d->has_coopmat_khr                    ? "khr"
								    : "",
			    d->has_tensor_cores ? "true" : "false",
			    i == 0 ? "true" : "false");
		else
			printf("%d: %s (%s, %.1f GiB, subgroup %u%s%s)%s\n",
			       d->index, d->name, d->type_name,
			       d->device_local_bytes / 1073741824.0,
			       d->subgroup_size,
			       d->has_tensor_cores
				   ? ", fp16 tensor cores through "
				   : "",
			       d->has_tensor_cores ? d->coopmat_api : "",
			       i == 0 ? "  <- preferred" : "");
	}
	free(infos);
	return 0;
}
