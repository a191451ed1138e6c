/*
 * fit_many.c - several images in the foreground, as packs:
 * `vkinrd --fit A.png B.jpg ... --out DIR` (or --fit FOLDER --out DIR).
 *
 * Every image gets a fit with the same settings; up to --pack of them
 * train together as one program (nn/pack.h), and as each one finishes it
 * leaves OUT/NAME.safetensors and OUT/NAME.png and the next image takes
 * its place. The pack's size is capped by --pack and by the device's
 * memory (what the first fit takes, against 60% of the budget). A lone
 * image that cannot be read or fitted fails alone: the others go on, and
 * the exit status is 1. --json prints one line an image and a summary
 * with images/s and the arithmetic rate achieved.
 */
#include "front/fit_many.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "formats/image_codec.h"
#include "nn/fit.h"
#include "nn/pack.h"
#include "nn/package.h"

#define FIT_MANY_MOST 4096 /* fits in one pack at most */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The images named, a folder standing for its .png, .jpg and .jpeg files
 * (sorted). */
static int gather(char **args, int nargs, char ***out, int *count)
{
	int n = 0, cap = 16;
	char **list = malloc((size_t)cap * sizeof(*list));
	for (int i = 0; list && i < nargs; i++) {
		struct stat st;
		DIR *dir = stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)
			       ? opendir(args[i])
			       : NULL;
		struct dirent *e;
		const char *one = dir ? NULL : args[i];
		while (list && (one || (dir && (e = readdir(dir))))) {
			char path[4096];
			if (one) {
				snprintf(path, sizeof(path), "%s", one);
				one = NULL;
			} else {
				if (e->d_name[0] == '.' ||
				    !image_suffix_len(e->d_name))
					continue;
				snprintf(path, sizeof(path), "%s/%s", args[i],
					 e->d_name);
			}
			if (n == cap) {
				char **more = realloc(list, (size_t)(cap *= 2) *
								sizeof(*list));
				if (!more)
					break;
				list = more;
			}
			list[n++] = strdup(path);
			if (!list[n - 1])
				return ERR_NOMEM;
			if (!dir)
				break;
		}
		if (dir)
			closedir(dir);
	}
	if (!list)
		return ERR_NOMEM;
	if (nargs == 1 && n > 1)
		qsort(list, (size_t)n, sizeof(*list), compare_names);
	*out = list;
	*count = n;
	return 0;
}

/* NAME of path/NAME.png (or .jpg, .jpeg) */
static void base_name(const char *path, char *name, size_t len)
{
	const char *slash = strrchr(path, '/');
	snprintf(name, len, "%s", slash ? slash + 1 : path);
	char *dot = strrchr(name, '.');
	if (dot && dot != name)
		*dot = '\0';
}

struct member {
	int image; /* index into the list */
	struct nn_fit *fit;
	double joined;
	double gflop;
};

struct tally {
	int done, failed;
	double psnr_sum, psnr_worst, gflop;
	/* where the time went: fits built, epochs stepped, results written;
	 * of the building, the images decoded and the fits' buffers and
	 * programs made; of the stepping, the changes of precision */
	double join_s, step_s, finish_s;
	double decode_s, buffers_s, programs_s, switch_s;
};

/* What a fit's own accounts say of its host time, added to the tally as
 * it leaves. */
static void tally_fit(struct tally *t, const struct nn_fit *fit)
{
	struct nn_fit_info info;
	nn_fit_get_info(fit, &info);
	t->buffers_s += info.buffers_ms * 1e-3;
	t->programs_s += info.programs_ms * 1e-3;
	t->switch_s += info.switch_ms * 1e-3;
}

static void report(const struct fit_many_options *o, const char *path,
		   int epochs, double psnr, double seconds, const char *error)
{
	if (o->json) {
		if (error)
			printf("{\"image\":\"%s\",\"done\":false,\"error\":\"%"
			       "s\"}\n",
			       path, error);
		else
			printf("{\"image\":\"%s\",\"done\":true,\"epochs\":%d,"
			       "\"psnr\":%.6f,\"seconds\":%.3f}\n",
			       path, epochs, psnr, seconds);
		fflush(stdout);
	} else if (error) {
		fprintf(stderr, "vkinrd: %s: %s\n", path, error);
	} else if (!o->quiet) {
		fprintf(stderr, "%s: %d epochs, PSNR %.2f dB, %.2f s\n", path,
			epochs, psnr, seconds);
	}
}

/* Writes the finished fit's package and reconstruction. */
static int finish(const struct fit_many_options *o, char **images,
		  struct member *mb, struct tally *t)
{
	char name[1024], model[4300], recon[4300];
	double psnr = NAN;
	base_name(images[mb->image], name, sizeof(name));
	snprintf(model, sizeof(model), "%s/%s.safetensors", o->out, name);
	snprintf(recon, sizeof(recon), "%s/%s.png", o->out, name);
	const char *failed = NULL;
	int rc =
	    nn_fit_save_export(mb->fit, model, recon, 0644, &psnr, &failed);
	if (rc) {
		char msg[600];
		snprintf(msg, sizeof(msg), "cannot write %.500s: %s",
			 failed ? failed : model, error_message(rc));
		report(o, images[mb->image], 0, 0, 0, msg);
		t->failed++;
		return rc;
	}
	report(o, images[mb->image], nn_fit_epoch(mb->fit), psnr,
	       now_s() - mb->joined, NULL);
	t->done++;
	t->psnr_sum += psnr;
	if (t->done == 1 || psnr < t->psnr_worst)
		t->psnr_worst = psnr;
	t->gflop += mb->gflop * nn_fit_epoch(mb->fit);
	return 0;
}

/* A fit for image i, or NULL (reported) when it cannot have one;
 * *oom when the device's memory ran out. */
static struct nn_fit *join(const struct fit_many_options *o,
			   struct gpu_context *gpu, char **images, int i,
			   int *oom, struct tally *t)
{
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512] = "";
	double t0 = now_s();
	int rc = image_load_file(images[i], &target, err, sizeof(err));
	t->decode_s += now_s() - t0;
	if (rc == 0)
		rc = nn_fit_create(&fit, gpu, target, &o->cfg, NULL, err,
				   sizeof(err));
	image_destroy(target);
	*oom = rc == ERR_DEVICE_OOM;
	if (rc && !*oom) {
		report(o, images[i], 0, 0, 0, err[0] ? err : error_message(rc));
		t->failed++;
	}
	return rc ? NULL : fit;
}

int fit_many_run(const struct fit_many_options *o, char **args, int nargs,
		 struct gpu_context *gpu)
{
	char **images = NULL;
	int count = 0;
	struct tally t = { 0 };
	int rc = gather(args, nargs, &images, &count);
	if (rc || count == 0) {
		fprintf(stderr,
			"vkinrd: no .png, .jpg or .jpeg image to fit\n");
		free(images);
		return 1;
	}
	mkdir(o->out, 0755);
	int cap = o->pack > 0 ? o->pack : FIT_MANY_MOST;
	if (!nn_pack_supported(gpu))
		cap = 1;
	if (cap > FIT_MANY_MOST)
		cap = FIT_MANY_MOST;
	struct member *live = calloc((size_t)cap, sizeof(*live));
	struct nn_fit **fits = calloc((size_t)cap, sizeof(*fits));
	struct nn_metrics *m = calloc((size_t)cap, sizeof(*m));
	int *rcs = calloc((size_t)cap, sizeof(*rcs));
	struct nn_pack *pack = NULL;
	if (!live || !fits || !m || !rcs || nn_pack_create(&pack, gpu)) {
		fprintf(stderr, "vkinrd: out of memory\n");
		return 1;
	}
	double start = now_s();
	int next = 0, n = 0, sized = 0;
	uint64_t budget = gpu_info(gpu)->budget_bytes / 10 * 6;
	while (rc == 0 && (n || next < count)) {
		while (n < cap && next < count) {
			int oom;
			double t0 = now_s();
			struct nn_fit *fit =
			    join(o, gpu, images, next, &oom, &t);
			t.join_s += now_s() - t0;
			if (oom && n) { /* full: the pack is this large */
				cap = n;
				break;
			}
			if (oom) {
				report(o, images[next], 0, 0, 0,
				       "out of device memory");
				t.failed++;
			}
			next++;
			if (!fit)
				continue;
			struct nn_fit_info info;
			nn_fit_get_info(fit, &info);
			if (!sized && o->pack <= 0) {
				uint64_t each =
				    gpu_bytes_in_use(gpu) + (1u << 20);
				uint64_t most = budget / (each ? each : 1);
				cap = most < 1               ? 1
				      : most < (uint64_t)cap ? (int)most
							     : cap;
				sized = 1;
				if (!o->quiet && !o->json)
					fprintf(stderr,
						"vkinrd: packs of up to %d "
						"fits\n",
						cap);
			}
			live[n++] = (struct member){ next - 1, fit, now_s(),
						     info.gflop_per_epoch };
		}
		for (int i = 0; i < n; i++)
			fits[i] = live[i].fit;
		double t0 = now_s();
		rc = nn_pack_step(pack, fits, n, m, rcs);
		t.step_s += now_s() - t0;
		t0 = now_s();
		for (int i = 0; rc == 0 && i < n; i++) {
			struct member *mb = &live[i];
			int over = nn_fit_epoch(mb->fit) >=
				   nn_fit_config(mb->fit)->epochs;
			if (rcs[i] == 0 && !over)
				continue;
			if (rcs[i]) {
				report(
				    o, images[mb->image], 0, 0, 0,
				    rcs[i] == ERR_DIVERGED
					? "training diverged (try a lower --lr)"
					: error_message(rcs[i]));
				t.failed++;
			} else {
				finish(o, images, mb, &t);
			}
			tally_fit(&t, mb->fit);
			nn_fit_destroy(mb->fit);
			live[i--] = live[--n];
		}
		t.finish_s += now_s() - t0;
	}
	if (rc)
		fprintf(stderr, "vkinrd: the pack failed: %s\n",
			error_message(rc));
	double seconds = now_s() - start;
	if (o->json)
		printf("{\"done\":true,\"images\":%d,\"failed\":%d,\"seconds\":"
		       "%.3f,"
		       "\"images_per_s\":%.3f,\"mean_psnr\":%.6f,"
		       "\"worst_psnr\":%.6f,\"tflops\":%.3f,\"pack\":%d,"
		       "\"join_s\":%.3f,\"step_s\":%.3f,\"finish_s\":%.3f,"
		       "\"decode_s\":%.3f,\"buffers_s\":%.3f,"
		       "\"programs_s\":%.3f,\"switch_s\":%.3f,"
		       "\"device\":\"%s\"}\n",
		       t.done, t.failed, seconds, t.done / seconds,
		       t.done ? t.psnr_sum / t.done : 0, t.psnr_worst,
		       t.gflop / seconds * 1e-3, cap, t.join_s, t.step_s,
		       t.finish_s, t.decode_s, t.buffers_s, t.programs_s,
		       t.switch_s, gpu_info(gpu)->name);
	else if (!o->quiet)
		fprintf(stderr,
			"done: %d images (%d failed) in %.1f s: %.2f "
			"images/s, mean PSNR %.2f dB, worst %.2f\n",
			t.done, t.failed, seconds, t.done / seconds,
			t.done ? t.psnr_sum / t.done : 0, t.psnr_worst);
	for (int i = 0; i < n; i++)
		nn_fit_destroy(live[i].fit);
	nn_pack_destroy(pack);
	for (int i = 0; i < count; i++)
		free(images[i]);
	free(images);
	free(live);
	free(fits);
	free(m);
	free(rcs);
	return rc || t.failed ? 1 : 0;
}
