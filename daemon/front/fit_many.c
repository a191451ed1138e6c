/*
 * fit_many.c - several images in the foreground, as packs:
 * `vkinrd --fit A.png B.jpg ... --out DIR` (or --fit FOLDER --out DIR;
 * with -r the folder's subfolders too, each image's outputs then in
 * OUT/SUB/, so that two a.png of different subfolders do not meet;
 * without -r the subfolders passed by are named on stderr).
 *
 * Every image gets a fit with the same settings; up to --pack of them
 * train together as one program (nn/pack.h), and as each one finishes it
 * leaves OUT/NAME.safetensors and OUT/NAME.png and the next image takes
 * its place. The pack's size is capped by --pack and by the device's
 * memory (what the first fit takes, against 60% of the budget). A lone
 * image that cannot be read or fitted fails alone: the others go on, and
 * the exit status is 1. --json prints one line an image and a summary
 * with images/s and the arithmetic rate achieved.
 *
 * Outputs go through fit_out.c: every name is checked before training
 * (an existing one refused without --force, exit 3, nothing written;
 * two images of one name refused), and only regular files of a folder
 * are taken. On a CPU device the run is estimated first, from the sizes
 * the images' headers state (fit_cost_check_many): one that would be slow
 * is refused (exit 2, nothing fitted) unless --yes. The outputs of the
 * fits that end at one epoch are made
 * durable together, by one sync (fileio_batch_begin). SIGINT or SIGTERM
 * stops at the end of an epoch: the fits in training write what they
 * have, the images not begun are counted.
 */
#include "front/fit_many.h"
#include "front/fit_out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/parallel.h"
#include "util/path.h"
#include "gpu/gpu.h"
#include "formats/image_codec.h"
#include "nn/fit.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "formats/safetensors.h"

#define FIT_MANY_MOST 4096 /* fits in one pack at most */
/* what is read of an image to learn its size: its headers (a JPEG's EXIF
 * may come before its frame header, up to 64 KiB a marker) */
#define FIT_MANY_HEAD (1u << 20)

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

/* Whether a folder's entry is a file (a link to one counts); a FIFO,
 * device or folder named like an image is skipped with a warning. */
static int is_regular(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return 1;
	fprintf(stderr, "vkinrd: %s: skipped: it is %s, not a file\n", path,
		fileio_kind(path));
	return 0;
}

/* The images to fit, each with the name of its outputs: a file named
 * alone by its base name without the suffix, a folder's images by their
 * path below it (sub/a of DIR/sub/a.png: OUT/sub/a.png). */
struct images {
	char **paths, **names;
	int n, cap;
};

static int images_add(struct images *im, const char *path, const char *name,
		      int name_len)
{
	if (im->n == im->cap) {
		int cap = im->cap ? im->cap * 2 : 16;
		char **p = realloc(im->paths, (size_t)cap * sizeof(*p));
		if (p)
			im->paths = p;
		char **q =
		    p ? realloc(im->names, (size_t)cap * sizeof(*q)) : NULL;
		if (!q)
			return ERR_NOMEM;
		im->names = q;
		im->cap = cap;
	}
	im->paths[im->n] = strdup(path);
	im->names[im->n] = strndup(name, (size_t)name_len);
	if (!im->paths[im->n] || !im->names[im->n]) {
		free(im->paths[im->n]);
		free(im->names[im->n]);
		return ERR_NOMEM;
	}
	im->n++;
	return 0;
}

static void images_free(struct images *im)
{
	for (int i = 0; i < im->n; i++) {
		free(im->paths[i]);
		free(im->names[i]);
	}
	free(im->paths);
	free(im->names);
}

/* Folders below a folder named that --recursive searches at most. */
#define FIT_MANY_MAX_DEPTH 32

/* The subfolders a search without -r passes by: how many, and the
 * first by name, for the sentence that says so. */
struct skipped {
	int n;
	char first[64];
};

static void skipped_add(struct skipped *sk, const char *name)
{
	if (!sk->n++ || strcmp(name, sk->first) < 0)
		snprintf(sk->first, sizeof(sk->first), "%.63s", name);
}

/* The images of folder dir (prefix: its path below the folder named),
 * its subfolders' too when recursive, else those counted in sk; hidden
 * entries and links to folders left out. */
static int gather_folder(struct images *im, const char *dir, const char *prefix,
			 int recursive, int depth, struct skipped *sk)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d) {
		fprintf(stderr, "vkinrd: %s: cannot open the folder: %s\n", dir,
			strerror(errno));
		return 0;
	}
	while (rc == 0 && (e = readdir(d))) {
		char path[4096], name[4096];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		size_t dl = strlen(dir); /* "photos/" as given: one slash */
		snprintf(path, sizeof(path), "%s%s%s", dir,
			 dl && dir[dl - 1] == '/' ? "" : "/", e->d_name);
		snprintf(name, sizeof(name), "%s%s%s", prefix,
			 *prefix ? "/" : "", e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (!recursive)
				skipped_add(sk, e->d_name);
			else if (depth < FIT_MANY_MAX_DEPTH)
				rc = gather_folder(im, path, name, 1, depth + 1,
						   sk);
			else
				fprintf(stderr,
					"vkinrd: %s: skipped: nested more "
					"than %d folders deep\n",
					path, FIT_MANY_MAX_DEPTH);
			continue;
		}
		size_t suffix = image_suffix_len(e->d_name);
		if (!suffix || !is_regular(path))
			continue;
		rc = images_add(im, path, name, (int)(strlen(name) - suffix));
	}
	closedir(d);
	return rc;
}

/* Sorts the images from first on by name, the paths with them. */
static void sort_images(struct images *im, int first)
{
	for (int i = first + 1; i < im->n; i++)
		for (int j = i;
		     j > first && strcmp(im->names[j - 1], im->names[j]) > 0;
		     j--) {
			char *p = im->paths[j], *q = im->names[j];
			im->paths[j] = im->paths[j - 1];
			im->names[j] = im->names[j - 1];
			im->paths[j - 1] = p;
			im->names[j - 1] = q;
		}
}

/* The images named: files as given, a folder standing for its .png,
 * .jpg, .jpeg and .webp files (sorted; with recursive its subfolders'
 * too). */
static int gather(char **args, int nargs, int recursive, struct images *im)
{
	for (int i = 0; i < nargs; i++) {
		struct stat st;
		int first = im->n, rc;
		if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct skipped sk = { 0 };
			rc = gather_folder(im, args[i], "", recursive, 0, &sk);
			sort_images(im, first);
			if (sk.n) /* said, not silently passed by */
				fprintf(stderr,
					"vkinrd: %s: skipped %d subfolder%s "
					"(%s%s): -r descends into them\n",
					args[i], sk.n, sk.n > 1 ? "s" : "",
					sk.first, sk.n > 1 ? ", ..." : "");
		} else {
			const char *slash = strrchr(args[i], '/');
			const char *base = slash ? slash + 1 : args[i];
			const char *dot = strrchr(base, '.');
			rc = images_add(im, args[i], base,
					dot && dot != base ? (int)(dot - base)
							   : (int)strlen(base));
		}
		if (rc)
			return rc;
	}
	return 0;
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
	/* of the finishing: the exports read, the files written, the fits
	 * freed */
	double export_s, write_s, destroy_s;
	double decode_s, buffers_s, programs_s, switch_s;
	/* --timings: the pack's steps, and the GPU time of each pass summed
	 * over them */
	int steps;
	double pass_ms[NN_PASS_COUNT];
	double phase_ms[NN_PACK_PHASES]; /* the host's clock, by phase */
};

/* --timings: a pack epoch on average, its host time and its GPU time,
 * pass by pass. */
static void print_pack_times(const struct fit_many_options *o,
			     const struct tally *t)
{
	double steps = t->steps ? t->steps : 1, gpu = 0;
	for (int i = 0; i < NN_PASS_COUNT; i++)
		gpu += t->pass_ms[i] / steps;
	if (o->json) {
		printf(",\"pack_epochs\":%d,\"pack_epoch_ms\":%.3f,"
		       "\"pack_gpu_ms\":%.3f,\"pass_ms\":{",
		       t->steps, t->step_s * 1e3 / steps, gpu);
		for (int i = 0; i < NN_PASS_COUNT; i++)
			printf("%s\"%s\":%.3f", i ? "," : "",
			       nn_pass_name((enum nn_pass)i),
			       t->pass_ms[i] / steps);
		static const char *const phases[NN_PACK_PHASES] = {
			"begin", "epoch_run", "measure", "optim_run", "after"
		};
		printf("},\"phase_ms\":{");
		for (int i = 0; i < NN_PACK_PHASES; i++)
			printf("%s\"%s\":%.3f", i ? "," : "", phases[i],
			       t->phase_ms[i] / steps);
		printf("}");
		return;
	}
	fprintf(stderr,
		"  a pack epoch: %.3f ms on the host's clock, %.3f ms of GPU "
		"passes (mean of %d)\n",
		t->step_s * 1e3 / steps, gpu, t->steps);
	for (int i = 0; i < NN_PASS_COUNT; i++)
		fprintf(stderr, "  %-16s %8.3f ms\n",
			nn_pass_name((enum nn_pass)i), t->pass_ms[i] / steps);
}

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

/* OUT/NAME.safetensors and OUT/NAME.png of an image */
static void output_names(const struct fit_many_options *o, const char *name,
			 char *model, char *recon, size_t len)
{
	snprintf(model, len, "%s/%s.safetensors", o->out, name);
	snprintf(recon, len, "%s/%s.png", o->out, name);
}

/* What writing a finished fit's outputs gave: 0 with the PSNR, or the
 * outfile status with the reason. */
struct written {
	int rc;
	double psnr;
	char msg[1024];
};

/* Writes the finished fit's package and reconstruction from ex, made
 * with the pack's other fits ending at this epoch (nn_pack_export), or,
 * ex NULL, exported now; ex is consumed. Host work alone when ex is
 * given, so several run at once (write_exports). */
static void write_outputs(const struct fit_many_options *o,
			  const struct images *im, struct member *mb,
			  struct nn_export *ex, struct written *w)
{
	char model[4300], recon[4300];
	w->psnr = NAN;
	output_names(o, im->names[mb->image], model, recon, sizeof(model));
	if (!ex) {
		w->rc = fit_out_export(mb->fit, model, recon, o->force,
				       &w->psnr, w->msg, sizeof(w->msg));
	} else if (ex->rc) {
		snprintf(w->msg, sizeof(w->msg), "cannot export the fit: %s",
			 error_message(ex->rc));
		st_destroy(ex->model);
		image_destroy(ex->recon);
		w->rc = OUTFILE_FAILED;
	} else {
		w->psnr = ex->psnr;
		w->rc = fit_out_write(ex->model, ex->recon, model, recon,
				      o->force, w->msg, sizeof(w->msg));
	}
	if (ex)
		*ex = (struct nn_export){ 0 };
}

/* Reports a finished fit by what writing its outputs gave; 0, or the
 * failure's status. */
static int finish(const struct fit_many_options *o, const struct images *im,
		  struct member *mb, const struct written *w, struct tally *t)
{
	if (w->rc) {
		report(o, im->paths[mb->image], 0, 0, 0, w->msg);
		t->failed++;
		return w->rc;
	}
	report(o, im->paths[mb->image], nn_fit_epoch(mb->fit), w->psnr,
	       now_s() - mb->joined, NULL);
	t->done++;
	t->psnr_sum += w->psnr;
	if (t->done == 1 || w->psnr < t->psnr_worst)
		t->psnr_worst = w->psnr;
	t->gflop += mb->gflop * nn_fit_epoch(mb->fit);
	return 0;
}

/* The packed exports of the fits that end at this epoch, written by a
 * few threads at once: encoding and files are host work, and a pack of a
 * thousand small fits ends together. The syncs they leave out are owed
 * to the caller's batch. */
struct export_batch {
	const struct fit_many_options *o;
	const struct images *im;
	struct member *live;
	struct nn_export *ex;
	struct written *out;
	int *which;
	atomic_long owed;
};

static void write_one(void *arg, int k)
{
	struct export_batch *b = arg;
	int i = b->which[k], own = !fileio_batch_open();
	if (own)
		fileio_batch_begin();
	write_outputs(b->o, b->im, &b->live[i], &b->ex[i], &b->out[i]);
	if (own)
		atomic_fetch_add(&b->owed, fileio_batch_leave());
}

static void write_exports(const struct fit_many_options *o,
			  const struct images *im, struct member *live, int n,
			  const int *ended, struct nn_export *ex,
			  struct written *out, int *which)
{
	struct export_batch b = { o, im, live, ex, out, which, 0 };
	int count = 0;
	for (int i = 0; i < n; i++)
		if (ended[i])
			which[count++] = i;
	atomic_init(&b.owed, 0);
	parallel_for(count, parallel_threads(), write_one, &b);
	fileio_batch_owe(atomic_load(&b.owed));
}

/* A fit for image i, or NULL (reported) when it cannot have one;
 * *oom when the device's memory ran out. */
static struct nn_fit *join(const struct fit_many_options *o,
			   struct gpu_context *gpu, const struct images *im,
			   int i, int *oom, struct tally *t)
{
	struct image *target = NULL;
	struct nn_fit *fit = NULL;
	char err[512] = "";
	double t0 = now_s();
	int rc = image_load_file(im->paths[i], &target, err, sizeof(err));
	*oom = 0;
	if (rc == 0 && fit_resize_apply(&o->resize, &target, im->paths[i], 1)) {
		image_destroy(target); /* the reason said */
		t->failed++;
		return NULL;
	}
	t->decode_s += now_s() - t0;
	if (rc == 0)
		rc = nn_fit_create(&fit, gpu, target, &o->cfg, NULL, err,
				   sizeof(err));
	image_destroy(target);
	*oom = rc == ERR_DEVICE_OOM;
	if (rc && !*oom) {
		report(o, im->paths[i], 0, 0, 0,
		       err[0] ? err : error_message(rc));
		t->failed++;
	}
	return rc ? NULL : fit;
}

/* Stopped by sig: the fits in training write what they have. */
static void write_stopped(const struct fit_many_options *o,
			  const struct images *im, struct member *live, int *n,
			  int left, int sig, struct tally *t)
{
	fprintf(stderr,
		"vkinrd: %s: stopped; the %d fit(s) in training write their "
		"best so far, %d image(s) not begun\n",
		fit_out_signal_name(sig), *n, left);
	for (; *n > 0; --*n) {
		struct written w;
		write_outputs(o, im, &live[*n - 1], NULL, &w);
		finish(o, im, &live[*n - 1], &w, t);
		nn_fit_destroy(live[*n - 1].fit);
	}
}

/* OUT/SUB for an image named SUB/NAME (a subfolder's, --recursive),
 * made before training; 0, or OUTFILE_FAILED with err set. */
static int make_folder(const struct fit_many_options *o, const char *name,
		       char *err, size_t errlen)
{
	const char *slash = strrchr(name, '/');
	char dir[4300];
	if (!slash)
		return 0;
	snprintf(dir, sizeof(dir), "%s/%.*s", o->out, (int)(slash - name),
		 name);
	if (path_make_dirs(dir, 0755) == 0)
		return 0;
	snprintf(err, errlen, "cannot create the folder %.800s: %s", dir,
		 strerror(errno));
	return OUTFILE_FAILED;
}

/* Before training: every image's outputs may be written, and no two
 * images share a name (a.png and a.jpg would write one a.png). 0, or the
 * exit status, each refusal said. */
static int check_outputs(const struct fit_many_options *o,
			 const struct images *im, int count)
{
	char **models = malloc((size_t)count * sizeof(*models));
	char recon[4300], err[1024], last[1024] = "";
	int status = models ? 0 : 1, said = 0;
	for (int i = 0; models && i < count; i++) {
		models[i] = malloc(4300);
		if (!models[i]) {
			status = 1;
			count = i;
			break;
		}
		output_names(o, im->names[i], models[i], recon, 4300);
		int rc = make_folder(o, im->names[i], err, sizeof(err));
		rc = rc ? rc
			: outfile_check(models[i], o->force, err, sizeof(err));
		rc = rc ? rc : outfile_check(recon, o->force, err, sizeof(err));
		if (rc && strcmp(err, last) && said++ < 20) /* a folder once */
			fprintf(stderr, "vkinrd: %s\n", err);
		if (rc)
			snprintf(last, sizeof(last), "%s", err);
		if (rc == OUTFILE_REFUSED || (rc && !status))
			status =
			    rc == OUTFILE_REFUSED ? FIT_OUT_REFUSED_STATUS : 1;
	}
	if (models && status == 0) {
		qsort(models, (size_t)count, sizeof(*models), compare_names);
		for (int i = 1; i < count; i++)
			if (!strcmp(models[i], models[i - 1])) {
				fprintf(stderr,
					"vkinrd: two images would write %s; "
					"fit them into different --out "
					"folders\n",
					models[i]);
				status = FIT_OUT_REFUSED_STATUS;
				break;
			}
	}
	if (said > 20)
		fprintf(stderr, "vkinrd: %d outputs refused in all\n", said);
	for (int i = 0; models && i < count; i++)
		free(models[i]);
	free(models);
	return status;
}

/* The size image i will be fitted at, as its header states it and
 * --resize makes it; 0x0 when not known (its decoding says why later). */
static void stated_size(const struct fit_many_options *o, const char *path,
			int *w, int *h)
{
	uint8_t *head = malloc(FIT_MANY_HEAD);
	uint32_t sw = 0, sh = 0;
	size_t got = 0;
	ssize_t r = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	*w = *h = 0;
	while (head && fd >= 0 && got < FIT_MANY_HEAD &&
	       (r = read(fd, head + got, FIT_MANY_HEAD - got)) > 0)
		got += (size_t)r;
	if (head && got && image_stated_size(head, got, &sw, &sh) &&
	    fit_resize_size(&o->resize, (int)sw, (int)sh, w, h))
		*w = (int)sw, *h = (int)sh; /* enlarging: refused later */
	if (fd >= 0)
		close(fd);
	free(head);
}

/* On a CPU device: 2 (said) when the images would be slow, before any is
 * fitted; 0 otherwise. */
static int check_cost(const struct fit_many_options *o, struct gpu_context *gpu,
		      const struct images *im)
{
	if (o->yes || !gpu_info(gpu)->is_cpu)
		return 0;
	int *w = calloc((size_t)im->n, sizeof(*w));
	int *h = calloc((size_t)im->n, sizeof(*h));
	int rc = 0;
	for (int i = 0; w && h && i < im->n; i++)
		stated_size(o, im->paths[i], &w[i], &h[i]);
	if (w && h)
		rc = fit_cost_check_many(gpu, o->cfg.nblocks, o->cfg.nf, w, h,
					 im->paths, im->n, o->cfg.epochs, 0);
	free(w);
	free(h);
	return rc;
}

int fit_many_run(const struct fit_many_options *o, char **args, int nargs,
		 struct gpu_context *gpu)
{
	struct images im = { 0 };
	struct tally t = { 0 };
	int rc = gather(args, nargs, o->recursive, &im), count = im.n;
	if (rc || count == 0) {
		fprintf(stderr,
			"vkinrd: no .png, .jpg, .jpeg or .webp image "
			"to fit%s\n",
			o->recursive ? "" : " (-r searches subfolders too)");
		images_free(&im);
		return 1;
	}
	if ((rc = check_cost(o, gpu, &im))) { /* before anything is made */
		images_free(&im);
		return rc;
	}
	mkdir(o->out, 0755);
	if ((rc = check_outputs(o, &im, count))) {
		images_free(&im);
		return rc;
	}
	int cap = o->pack > 0 ? o->pack : FIT_MANY_MOST;
	if (!nn_pack_supported(gpu))
		cap = 1;
	if (cap > FIT_MANY_MOST)
		cap = FIT_MANY_MOST;
	struct member *live = calloc((size_t)cap, sizeof(*live));
	struct nn_fit **fits = calloc((size_t)cap, sizeof(*fits));
	struct nn_metrics *m = calloc((size_t)cap, sizeof(*m));
	int *rcs = calloc((size_t)cap, sizeof(*rcs));
	int *over = calloc((size_t)cap, sizeof(*over));
	struct nn_export *ex = calloc((size_t)cap, sizeof(*ex));
	struct written *written = calloc((size_t)cap, sizeof(*written));
	int *which = calloc((size_t)cap, sizeof(*which));
	struct nn_pack *pack = NULL;
	if (!live || !fits || !m || !rcs || !over || !ex || !written ||
	    !which || nn_pack_create(&pack, gpu)) {
		fprintf(stderr, "vkinrd: out of memory\n");
		return 1;
	}
	double start = now_s();
	int next = 0, n = 0, sized = 0;
	while (rc == 0 && (n || next < count) && !fit_out_stopped()) {
		while (n < cap && next < count && !fit_out_stopped()) {
			int oom;
			double t0 = now_s();
			struct nn_fit *fit = join(o, gpu, &im, next, &oom, &t);
			t.join_s += now_s() - t0;
			if (oom && n) { /* full: the pack is this large */
				cap = n;
				break;
			}
			if (oom) {
				report(o, im.paths[next], 0, 0, 0,
				       "out of device memory");
				t.failed++;
			}
			next++;
			if (!fit)
				continue;
			struct nn_fit_info info;
			nn_fit_get_info(fit, &info);
			if (!sized && o->pack <= 0) {
				cap = nn_pack_room(gpu, cap);
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
		if (o->timings && rc == 0) {
			double ms[NN_PASS_COUNT];
			nn_pack_pass_ms(pack, ms);
			for (int i = 0; i < NN_PASS_COUNT; i++)
				t.pass_ms[i] += ms[i];
			double host[NN_PACK_PHASES];
			nn_pack_host_ms(pack, host);
			for (int i = 0; i < NN_PACK_PHASES; i++)
				t.phase_ms[i] += host[i];
			t.steps++;
		}
		t0 = now_s();
		/* the fits that end here are exported together (one packed
		 * render a candidate, one read of them all), and their outputs
		 * made durable together: one sync, not two a file */
		int any_over = 0;
		for (int i = 0; rc == 0 && i < n; i++) {
			over[i] = rcs[i] == 0 &&
				  nn_fit_epoch(live[i].fit) >=
				      nn_fit_config(live[i].fit)->epochs;
			any_over |= over[i];
		}
		double t1 = now_s();
		int packed = rc == 0 && any_over &&
			     nn_pack_export(pack, fits, n, over, 1, 1, ex) == 0;
		double t2 = now_s();
		t.export_s += t2 - t1;
		fileio_batch_begin();
		if (packed)
			write_exports(o, &im, live, n, over, ex, written,
				      which);
		t.write_s += now_s() - t2;
		int ended = 0, kept = 0;
		for (int i = 0; rc == 0 && i < n; i++) {
			struct member *mb = &live[i];
			if (rcs[i] == 0 && !over[i]) {
				live[kept++] = *mb;
				continue;
			}
			if (rcs[i]) {
				report(
				    o, im.paths[mb->image], 0, 0, 0,
				    rcs[i] == ERR_DIVERGED
					? "training diverged (try a lower --lr)"
					: error_message(rcs[i]));
				t.failed++;
			} else {
				if (!packed) {
					double t3 = now_s();
					write_outputs(o, &im, mb, NULL,
						      &written[i]);
					t.write_s += now_s() - t3;
				}
				ended +=
				    finish(o, &im, mb, &written[i], &t) == 0;
			}
			tally_fit(&t, mb->fit);
			double t3 = now_s();
			nn_fit_destroy(mb->fit);
			t.destroy_s += now_s() - t3;
		}
		if (rc == 0)
			n = kept;
		if (fileio_batch_end(o->out) && ended) {
			fprintf(stderr,
				"vkinrd: cannot make the outputs in %s "
				"durable: %s\n",
				o->out, strerror(errno));
			t.failed++;
		}
		t.finish_s += now_s() - t0;
	}
	if (rc)
		fprintf(stderr, "vkinrd: the pack failed: %s\n",
			error_message(rc));
	int sig = rc || !(n || next < count) ? 0 : fit_out_stopped();
	if (sig)
		write_stopped(o, &im, live, &n, count - next, sig, &t);
	double seconds = now_s() - start;
	if (o->json)
		printf("{\"done\":true,\"images\":%d,\"failed\":%d,\"seconds\":"
		       "%.3f,"
		       "\"images_per_s\":%.3f,\"mean_psnr\":%.6f,"
		       "\"worst_psnr\":%.6f,\"tflops\":%.3f,\"pack\":%d,"
		       "\"join_s\":%.3f,\"step_s\":%.3f,\"finish_s\":%.3f,"
		       "\"export_s\":%.3f,\"write_s\":%.3f,\"destroy_s\":%.3f,"
		       "\"decode_s\":%.3f,\"buffers_s\":%.3f,"
		       "\"programs_s\":%.3f,\"switch_s\":%.3f,"
		       "\"device\":\"%s\"",
		       t.done, t.failed, seconds, t.done / seconds,
		       t.done ? t.psnr_sum / t.done : 0, t.psnr_worst,
		       t.gflop / seconds * 1e-3, cap, t.join_s, t.step_s,
		       t.finish_s, t.export_s, t.write_s, t.destroy_s,
		       t.decode_s, t.buffers_s, t.programs_s, t.switch_s,
		       gpu_info(gpu)->name);
	else if (!o->quiet)
		fprintf(stderr,
			"done: %d images (%d failed) in %.1f s: %.2f "
			"images/s, mean PSNR %.2f dB, worst %.2f\n",
			t.done, t.failed, seconds, t.done / seconds,
			t.done ? t.psnr_sum / t.done : 0, t.psnr_worst);
	if (o->timings && (o->json || !o->quiet))
		print_pack_times(o, &t);
	if (o->json)
		printf("}\n");
	for (int i = 0; i < n; i++)
		nn_fit_destroy(live[i].fit);
	nn_pack_destroy(pack);
	images_free(&im);
	free(live);
	free(fits);
	free(m);
	free(rcs);
	free(over);
	free(ex);
	free(written);
	free(which);
	return sig ? 128 + sig : rc || t.failed ? 1 : 0;
}
