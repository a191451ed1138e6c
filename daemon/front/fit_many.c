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
 * have, the images not begun are counted. The images are gathered from
 * the arguments by fit_many_images.c.
 */
#include "front/fit_many.h"
#include "front/fit_many_images.h"
#include "front/fit_out.h"

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
			  const struct fit_many_images *im, struct member *mb,
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
static int finish(const struct fit_many_options *o,
		  const struct fit_many_images *im, struct member *mb,
		  const struct written *w, struct tally *t)
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
	const struct fit_many_images *im;
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
			  const struct fit_many_images *im, struct member *live,
			  int n, const int *ended, struct nn_export *ex,
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
			   struct gpu_context *gpu,
			   const struct fit_many_images *im, int i, int *oom,
			   struct tally *t)
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
			  const struct fit_many_images *im, struct member *live,
			  int *n, int left, int sig, struct tally *t)
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
			 const struct fit_many_images *im, int count)
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
		      const struct fit_many_images *im)
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

/* One run's pack: the fits in training (live[0..n)), the next image to
 * join of count, the pack's size cap (sized: capped by the device's
 * memory once), and what each epoch's step and exports fill, cap long. */
struct run {
	const struct fit_many_options *o;
	struct gpu_context *gpu;
	const struct fit_many_images *im;
	struct tally t;
	struct nn_pack *pack;
	struct member *live;
	struct nn_fit **fits;
	struct nn_metrics *m;
	int *rcs, *over, *which;
	struct nn_export *ex;
	struct written *written;
	int cap, n, next, count, sized;
};

/* The pack and its arrays, as large as --pack (or FIT_MANY_MOST; 1 where
 * the device cannot pack); 0, or 1 (said) when memory ran out. */
static int run_open(struct run *r)
{
	int cap = r->o->pack > 0 ? r->o->pack : FIT_MANY_MOST;
	if (!nn_pack_supported(r->gpu))
		cap = 1;
	if (cap > FIT_MANY_MOST)
		cap = FIT_MANY_MOST;
	r->cap = cap;
	r->live = calloc((size_t)cap, sizeof(*r->live));
	r->fits = calloc((size_t)cap, sizeof(*r->fits));
	r->m = calloc((size_t)cap, sizeof(*r->m));
	r->rcs = calloc((size_t)cap, sizeof(*r->rcs));
	r->over = calloc((size_t)cap, sizeof(*r->over));
	r->ex = calloc((size_t)cap, sizeof(*r->ex));
	r->written = calloc((size_t)cap, sizeof(*r->written));
	r->which = calloc((size_t)cap, sizeof(*r->which));
	if (!r->live || !r->fits || !r->m || !r->rcs || !r->over || !r->ex ||
	    !r->written || !r->which || nn_pack_create(&r->pack, r->gpu)) {
		fprintf(stderr, "vkinrd: out of memory\n");
		return 1;
	}
	return 0;
}

/* The fits still in training, the pack and its arrays freed. */
static void run_close(struct run *r)
{
	for (int i = 0; i < r->n; i++)
		nn_fit_destroy(r->live[i].fit);
	nn_pack_destroy(r->pack);
	free(r->live);
	free(r->fits);
	free(r->m);
	free(r->rcs);
	free(r->over);
	free(r->ex);
	free(r->written);
	free(r->which);
}

/* Joins the next images to the pack until it is full (cap, or the
 * device's memory: the first fit that finds none left makes cap the
 * pack's size) or none is left; an image that cannot have a fit is
 * reported and passed by. */
static void fill_pack(struct run *r)
{
	const struct fit_many_options *o = r->o;
	while (r->n < r->cap && r->next < r->count && !fit_out_stopped()) {
		int oom;
		double t0 = now_s();
		struct nn_fit *fit =
		    join(o, r->gpu, r->im, r->next, &oom, &r->t);
		r->t.join_s += now_s() - t0;
		if (oom && r->n) { /* full: the pack is this large */
			r->cap = r->n;
			break;
		}
		if (oom) {
			report(o, r->im->paths[r->next], 0, 0, 0,
			       "out of device memory");
			r->t.failed++;
		}
		r->next++;
		if (!fit)
			continue;
		struct nn_fit_info info;
		nn_fit_get_info(fit, &info);
		if (!r->sized && o->pack <= 0) {
			r->cap = nn_pack_room(r->gpu, r->cap);
			r->sized = 1;
			if (!o->quiet && !o->json)
				fprintf(stderr,
					"vkinrd: packs of up to %d fits\n",
					r->cap);
		}
		r->live[r->n++] = (struct member){ r->next - 1, fit, now_s(),
						   info.gflop_per_epoch };
	}
}

/* One epoch of every fit in the pack, its times added to the tally
 * (pass by pass with --timings); 0, or the pack's error. */
static int step_pack(struct run *r)
{
	struct tally *t = &r->t;
	for (int i = 0; i < r->n; i++)
		r->fits[i] = r->live[i].fit;
	double t0 = now_s();
	int rc = nn_pack_step(r->pack, r->fits, r->n, r->m, r->rcs);
	t->step_s += now_s() - t0;
	if (r->o->timings && rc == 0) {
		double ms[NN_PASS_COUNT];
		nn_pack_pass_ms(r->pack, ms);
		for (int i = 0; i < NN_PASS_COUNT; i++)
			t->pass_ms[i] += ms[i];
		double host[NN_PACK_PHASES];
		nn_pack_host_ms(r->pack, host);
		for (int i = 0; i < NN_PACK_PHASES; i++)
			t->phase_ms[i] += host[i];
		t->steps++;
	}
	return rc;
}

/* Marks in over the fits whose last epoch was this one and exports them
 * together (one packed render a candidate, one read of them all); their
 * outputs are written, by a few threads, into the caller's batch.
 * Returns whether they were (else each is exported alone as it ends). */
static int export_ended(struct run *r)
{
	int any_over = 0;
	for (int i = 0; i < r->n; i++) {
		struct nn_fit *fit = r->live[i].fit;
		r->over[i] = r->rcs[i] == 0 &&
			     nn_fit_epoch(fit) >= nn_fit_config(fit)->epochs;
		any_over |= r->over[i];
	}
	double t1 = now_s();
	int packed = any_over && nn_pack_export(r->pack, r->fits, r->n, r->over,
						1, 1, r->ex) == 0;
	double t2 = now_s();
	r->t.export_s += t2 - t1;
	fileio_batch_begin();
	if (packed)
		write_exports(r->o, r->im, r->live, r->n, r->over, r->ex,
			      r->written, r->which);
	r->t.write_s += now_s() - t2;
	return packed;
}

/* Fit i of the pack leaves it: failed (reported), or finished with its
 * outputs written (exported now unless packed). 1 when it finished
 * well, for the sync its outputs are owed. */
static int retire(struct run *r, int i, int packed)
{
	struct member *mb = &r->live[i];
	struct tally *t = &r->t;
	int ended = 0;
	if (r->rcs[i]) {
		report(r->o, r->im->paths[mb->image], 0, 0, 0,
		       r->rcs[i] == ERR_DIVERGED
			   ? "training diverged (try a lower --lr)"
			   : error_message(r->rcs[i]));
		t->failed++;
	} else {
		if (!packed) {
			double t3 = now_s();
			write_outputs(r->o, r->im, mb, NULL, &r->written[i]);
			t->write_s += now_s() - t3;
		}
		ended = finish(r->o, r->im, mb, &r->written[i], t) == 0;
	}
	tally_fit(t, mb->fit);
	double t3 = now_s();
	nn_fit_destroy(mb->fit);
	t->destroy_s += now_s() - t3;
	return ended;
}

/* After an epoch: the fits that end here leave the pack, their outputs
 * made durable together (one sync, not two a file); the others keep
 * their order. */
static void finish_epoch(struct run *r)
{
	double t0 = now_s();
	int packed = export_ended(r), ended = 0, kept = 0;
	for (int i = 0; i < r->n; i++) {
		if (r->rcs[i] == 0 && !r->over[i])
			r->live[kept++] = r->live[i];
		else
			ended += retire(r, i, packed);
	}
	r->n = kept;
	if (fileio_batch_end(r->o->out) && ended) {
		fprintf(stderr,
			"vkinrd: cannot make the outputs in %s durable: %s\n",
			r->o->out, strerror(errno));
		r->t.failed++;
	}
	r->t.finish_s += now_s() - t0;
}

/* The run's last words: a JSON summary line (closed by the caller after
 * the --timings fields) or a sentence, with images/s and the PSNRs. */
static void print_summary(const struct run *r, double seconds)
{
	const struct fit_many_options *o = r->o;
	const struct tally *t = &r->t;
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
		       t->done, t->failed, seconds, t->done / seconds,
		       t->done ? t->psnr_sum / t->done : 0, t->psnr_worst,
		       t->gflop / seconds * 1e-3, r->cap, t->join_s, t->step_s,
		       t->finish_s, t->export_s, t->write_s, t->destroy_s,
		       t->decode_s, t->buffers_s, t->programs_s, t->switch_s,
		       gpu_info(r->gpu)->name);
	else if (!o->quiet)
		fprintf(stderr,
			"done: %d images (%d failed) in %.1f s: %.2f "
			"images/s, mean PSNR %.2f dB, worst %.2f\n",
			t->done, t->failed, seconds, t->done / seconds,
			t->done ? t->psnr_sum / t->done : 0, t->psnr_worst);
	if (o->timings && (o->json || !o->quiet))
		print_pack_times(o, t);
	if (o->json)
		printf("}\n");
}

/* Before anything is fitted: some image to fit, not too slow on a CPU
 * device, and every output may be written (OUT made). 0, or the exit
 * status, said. */
static int check_run(const struct fit_many_options *o, struct gpu_context *gpu,
		     const struct fit_many_images *im, int rc)
{
	if (rc || im->n == 0) {
		fprintf(stderr,
			"vkinrd: no .png, .jpg, .jpeg or .webp image "
			"to fit%s\n",
			o->recursive ? "" : " (-r searches subfolders too)");
		return 1;
	}
	if ((rc = check_cost(o, gpu, im))) /* before anything is made */
		return rc;
	mkdir(o->out, 0755);
	return check_outputs(o, im, im->n);
}

int fit_many_run(const struct fit_many_options *o, char **args, int nargs,
		 struct gpu_context *gpu)
{
	struct fit_many_images im = { 0 };
	int rc = fit_many_images_gather(args, nargs, o->recursive, &im);
	if ((rc = check_run(o, gpu, &im, rc))) {
		fit_many_images_free(&im);
		return rc;
	}
	struct run r = { .o = o, .gpu = gpu, .im = &im, .count = im.n };
	if (run_open(&r)) {
		run_close(&r);
		fit_many_images_free(&im);
		return 1;
	}
	double start = now_s();
	while (rc == 0 && (r.n || r.next < r.count) && !fit_out_stopped()) {
		fill_pack(&r);
		if ((rc = step_pack(&r)) == 0)
			finish_epoch(&r);
	}
	if (rc)
		fprintf(stderr, "vkinrd: the pack failed: %s\n",
			error_message(rc));
	int sig = rc || !(r.n || r.next < r.count) ? 0 : fit_out_stopped();
	if (sig)
		write_stopped(o, &im, r.live, &r.n, r.count - r.next, sig,
			      &r.t);
	print_summary(&r, now_s() - start);
	run_close(&r);
	fit_many_images_free(&im);
	return sig ? 128 + sig : rc || r.t.failed ? 1 : 0;
}
