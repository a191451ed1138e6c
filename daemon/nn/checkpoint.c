/*
 * checkpoint.c - a fit's whole state in and out as a checkpoint: the flat
 * vectors as they are (params, adam_m, adam_v, and the recipe's and the
 * best model's state), the metrics history and, in the metadata, the
 * epoch, the whole config, the best model's PSNR, epoch and source, and
 * an FNV-1a checksum of the tensor data, verified on load. A safetensors
 * file, as the model package (package.c) is.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/image_codec.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "nn/fit_internal.h"
#include "nn/package.h"
#include "nn/package_meta.h"

/* ------------------------------------------------------------ checkpoint */

static uint64_t checkpoint_checksum(const struct st_file *f)
{
	static const char *names[] = { "params",  "adam_m",      "adam_v",
				       "metrics", "muon_m",      "average",
				       "best",    "metrics_best" };
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct st_tensor *t = st_find(f, names[i]);
		if (t)
			h = nn_meta_fnv1a(h, t->data, t->nbytes);
	}
	return h;
}

/* Reads the recipe's keys that f has; a version 1 checkpoint has only
 * schedule and warmup (and lr_min_ratio, read by the caller). */
static int get_recipe(const struct st_file *f, struct nn_config *cfg, char *err,
		      size_t errlen)
{
	/* a checkpoint without the loss terms' keys predates them: it trained
	 * on the MSE alone, whatever today's defaults */
	cfg->recipe.loss_ssim = cfg->recipe.loss_grad =
	    cfg->recipe.loss_chroma = 0;
	/* and one without early_cycle had no early cycle */
	cfg->recipe.early_cycle = 0;
	/* nor a decay shorter than the job */
	cfg->recipe.decay = 0;
	for (int i = 0; nn_recipe_key(i); i++) {
		const char *v = st_get_meta(f, nn_recipe_key(i));
		if (v && nn_recipe_set(&cfg->recipe, nn_recipe_key(i), v, err,
				       errlen))
			return ERR_FORMAT;
	}
	return 0;
}

static int put_config(struct st_file *f, const struct nn_config *cfg)
{
	char dil[64];
	nn_config_dilations_string(cfg, dil, sizeof(dil));
	int rc = st_set_meta(f, "dilations", dil);
	rc = rc ? rc : nn_meta_set_fmt(f, "nf", "%d", cfg->nf);
	rc = rc ? rc : nn_meta_set_fmt(f, "w0", "%.9g", cfg->w0);
	rc = rc ? rc : nn_meta_set_fmt(f, "lr", "%.17g", cfg->lr);
	rc = rc ? rc : nn_meta_put_recipe(f, cfg);
	rc = rc ? rc : nn_meta_set_fmt(f, "epochs", "%d", cfg->epochs);
	rc = rc ? rc
		: nn_meta_set_fmt(f, "seed", "%llu",
				  (unsigned long long)cfg->seed);
	rc =
	    rc ? rc
	       : st_set_meta(f, "precision", nn_precision_name(cfg->precision));
	rc = rc ? rc : nn_meta_set_fmt(f, "max_tile", "%d", cfg->max_tile);
	rc = rc ? rc
		: nn_meta_set_fmt(f, "mem_budget", "%llu",
				  (unsigned long long)cfg->mem_budget);
	return rc;
}

/* ----------------------------------------------------- read ahead */

/* The buffers a checkpoint reads (those the fit has). */
static int checkpoint_buffers(const struct nn_fit *fit,
			      const struct gpu_buffer *out[NN_READ_AHEAD])
{
	const struct gpu_buffer *all[NN_READ_AHEAD] = {
		&fit->params, &fit->adam_m,  &fit->adam_v,
		&fit->muon_m, &fit->average, &fit->best
	};
	int n = 0;
	for (int i = 0; i < NN_READ_AHEAD; i++)
		if (all[i]->handle)
			out[n++] = all[i];
	return n;
}

int nn_fits_read_ahead(struct nn_fit *const *fits, int n, const int *want)
{
	struct gpu_copy *list =
	    calloc((size_t)n * NN_READ_AHEAD + 1, sizeof(*list));
	int count = 0, rc = list ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!want[i])
			continue;
		struct nn_fit *fit = fits[i];
		const struct gpu_buffer *bufs[NN_READ_AHEAD];
		nn_fit_drop_read_ahead(fit);
		int nb = checkpoint_buffers(fit, bufs);
		for (int k = 0; rc == 0 && k < nb; k++) {
			void *data = malloc(bufs[k]->size);
			if (!data) {
				rc = ERR_NOMEM;
				break;
			}
			fit->ahead[fit->nahead++] =
			    (struct read_ahead){ bufs[k], data };
			list[count++] = (struct gpu_copy){ bufs[k], 0, data,
							   bufs[k]->size };
		}
	}
	rc = rc || !count ? rc : gpu_download_many(fits[0]->gpu, list, count);
	for (int i = 0; rc && i < n; i++)
		if (want[i])
			nn_fit_drop_read_ahead(fits[i]);
	free(list);
	return rc;
}

/* size bytes of buf to data: from what was read ahead, else read now. */
static int read_state(struct nn_fit *fit, const struct gpu_buffer *buf,
		      void *data, size_t size)
{
	for (int i = 0; i < fit->nahead; i++)
		if (fit->ahead[i].buf == buf) {
			memcpy(data, fit->ahead[i].data, size);
			return 0;
		}
	return gpu_download(fit->gpu, buf, 0, data, size);
}

/* The optimizer's state beyond Adam, when the recipe has it (version 2). */
static int add_device_tensor(struct nn_fit *fit, struct st_file *f,
			     const char *name, const struct gpu_buffer *buf)
{
	if (!buf->handle)
		return 0;
	int64_t shape[1] = { (int64_t)(buf->size / sizeof(float)) };
	float *data = malloc(buf->size);
	int rc = data ? read_state(fit, buf, data, buf->size) : ERR_NOMEM;
	rc = rc ? rc : st_add(f, name, ST_F32, 1, shape, data);
	free(data);
	return rc;
}

/* Restores one of them; a checkpoint without it (version 1, or another
 * recipe) starts it afresh: zero momentum, the average = the weights. */
static int restore_device_tensor(struct nn_fit *fit, const struct st_file *f,
				 const char *name, const struct gpu_buffer *buf,
				 const float *fresh)
{
	const struct st_tensor *t = st_find(f, name);
	if (!buf->handle)
		return 0;
	if (t && t->dtype == ST_F32 && t->nbytes == buf->size)
		return gpu_upload(fit->gpu, buf, 0, t->data, buf->size);
	return fresh ? gpu_upload(fit->gpu, buf, 0, fresh, buf->size)
		     : gpu_fill_zero(fit->gpu, buf);
}

/* The best model's state, beside its weights (tensor "best"); and each
 * epoch's psnr_best, apart from the five columns of "metrics" that older
 * vkinrd read as they are. */
static int put_best(struct nn_fit *fit, struct st_file *f)
{
	double *col = malloc(((size_t)fit->nhistory + 1) * sizeof(double));
	if (!col)
		return ERR_NOMEM;
	for (int i = 0; i < fit->nhistory; i++)
		col[i] = fit->history[i].psnr_best;
	int64_t n[1] = { fit->nhistory };
	int rc = st_add(f, "metrics_best", ST_F64, 1, n, col);
	free(col);
	rc = rc ? rc : add_device_tensor(fit, f, "best", &fit->best);
	rc = rc ? rc : nn_meta_set_fmt(f, "best_psnr", "%.17g", fit->kept.psnr);
	rc = rc ? rc : nn_meta_set_fmt(f, "best_epoch", "%d", fit->kept.epoch);
	return rc ? rc
		  : st_set_meta(f, "best_source",
				nn_best_source_name(fit->kept.source));
}

/* A checkpoint from before the best model was kept (or one whose best is
 * incomplete) restores none: the live weights stand in until the first
 * epoch measures them (best_epoch -1, best_psnr 0). */
static int restore_best(struct nn_fit *fit, const struct st_file *ckpt,
			const float *live)
{
	const struct st_tensor *t = st_find(ckpt, "best");
	const char *source = st_get_meta(ckpt, "best_source");
	long long epoch;
	double psnr;
	fit->kept = (struct nn_best){ .psnr = 0, .epoch = -1 };
	if (t && t->dtype == ST_F32 && t->nbytes == fit->best.size &&
	    nn_meta_int(ckpt, "best_epoch", -1, 1 << 30, &epoch) == 0 &&
	    nn_meta_double(ckpt, "best_psnr", &psnr) == 0 && source &&
	    (!strcmp(source, "live") || !strcmp(source, "average"))) {
		fit->kept = (struct nn_best){ psnr, (int)epoch,
					      !strcmp(source, "average")
						  ? NN_BEST_AVERAGE
						  : NN_BEST_LIVE };
		return gpu_upload(fit->gpu, &fit->best, 0, t->data, t->nbytes);
	}
	return gpu_upload(fit->gpu, &fit->best, 0, live, fit->best.size);
}

int nn_fit_checkpoint(struct nn_fit *fit, struct st_file **out)
{
	size_t total = fit->layout.total;
	float *buf = malloc(3 * total * sizeof(float));
	double *metrics =
	    malloc(((size_t)fit->nhistory + 1) * 5 * sizeof(double));
	struct st_file *f = st_create();
	int rc = buf && metrics && f ? 0 : ERR_NOMEM;

	size_t bytes = total * sizeof(float);
	rc = rc ? rc : read_state(fit, &fit->params, buf, bytes);
	rc = rc ? rc : read_state(fit, &fit->adam_m, buf + total, bytes);
	rc = rc ? rc : read_state(fit, &fit->adam_v, buf + 2 * total, bytes);
	for (int i = 0; rc == 0 && i < fit->nhistory; i++) {
		const struct nn_metrics *m = &fit->history[i];
		double row[5] = { m->epoch, m->mse, m->psnr, m->lr, m->ms };
		memcpy(metrics + 5 * i, row, sizeof(row));
	}
	int64_t vec[1] = { (int64_t)total }, hist[2] = { fit->nhistory, 5 };
	rc = rc ? rc : st_add(f, "params", ST_F32, 1, vec, buf);
	rc = rc ? rc : st_add(f, "adam_m", ST_F32, 1, vec, buf + total);
	rc = rc ? rc : st_add(f, "adam_v", ST_F32, 1, vec, buf + 2 * total);
	rc = rc ? rc : st_add(f, "metrics", ST_F64, 2, hist, metrics);
	rc = rc ? rc : add_device_tensor(fit, f, "muon_m", &fit->muon_m);
	rc = rc ? rc : add_device_tensor(fit, f, "average", &fit->average);
	rc = rc ? rc : put_best(fit, f);
	rc = rc ? rc : st_set_meta(f, "format", CHECKPOINT_FORMAT);
	rc = rc ? rc : st_set_meta(f, "version", FORMAT_VERSION);
	rc = rc ? rc : nn_meta_set_fmt(f, "epoch", "%d", fit->epoch);
	rc = rc ? rc : nn_meta_set_fmt(f, "width", "%d", fit->width);
	rc = rc ? rc : nn_meta_set_fmt(f, "height", "%d", fit->height);
	rc = rc ? rc : put_config(f, &fit->cfg);
	rc = rc ? rc
		: nn_meta_set_fmt(f, "checksum", "%016llx",
				  (unsigned long long)checkpoint_checksum(f));
	free(buf);
	free(metrics);
	nn_fit_drop_read_ahead(fit); /* used once */
	if (rc) {
		st_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

int nn_checkpoint_config(const struct st_file *ckpt, struct nn_config *cfg,
			 char *err, size_t errlen)
{
	long long nf, epochs, seed, max_tile, budget;
	double w0, lr;
	const char *format = st_get_meta(ckpt, "format");
	const char *dil = st_get_meta(ckpt, "dilations");

	nn_config_defaults(cfg, 0);
	if (!format || strcmp(format, CHECKPOINT_FORMAT)) {
		snprintf(err, errlen, "not a vkinrd checkpoint");
		return ERR_FORMAT;
	}
	int rc = nn_meta_check_version(ckpt, "checkpoint", err, errlen);
	if (rc)
		return rc;
	if (!strcmp(st_get_meta(ckpt, "version"), "1"))
		nn_recipe_version1(&cfg->recipe);
	rc = nn_meta_int(ckpt, "nf", NN_MIN_WIDTH, NN_MAX_WIDTH, &nf);
	rc = rc ? rc : nn_meta_int(ckpt, "epochs", 0, 1 << 30, &epochs);
	rc = rc ? rc : nn_meta_int(ckpt, "seed", 0, INT64_MAX, &seed);
	rc = rc ? rc : nn_meta_int(ckpt, "max_tile", 0, 1 << 30, &max_tile);
	rc = rc ? rc : nn_meta_int(ckpt, "mem_budget", 0, INT64_MAX, &budget);
	rc = rc ? rc : nn_meta_double(ckpt, "w0", &w0);
	rc = rc ? rc : nn_meta_double(ckpt, "lr", &lr);
	/* version 1 named the decay's floor lr_min_ratio */
	if (!rc && st_get_meta(ckpt, "lr_min_ratio"))
		rc = nn_meta_double(ckpt, "lr_min_ratio",
				    &cfg->recipe.lr_min_ratio);
	rc = rc ? rc : (!dil ? ERR_FORMAT : 0);
	rc = rc ? rc : nn_config_parse_dilations(cfg, dil);
	rc = rc ? rc : get_recipe(ckpt, cfg, err, errlen);
	if (rc) {
		snprintf(err, errlen,
			 "the checkpoint's config is incomplete or damaged");
		return ERR_FORMAT;
	}
	cfg->nf = (int)nf;
	cfg->epochs = (int)epochs;
	cfg->seed = (uint64_t)seed;
	cfg->max_tile = (int)max_tile;
	cfg->mem_budget = (uint64_t)budget;
	cfg->w0 = (float)w0;
	cfg->lr = lr;
	const char *precision = st_get_meta(ckpt, "precision");
	if (precision && nn_precision_parse(precision, &cfg->precision)) {
		snprintf(err, errlen,
			 "the checkpoint's precision \"%s\" is unknown",
			 precision);
		return ERR_FORMAT;
	}
	return nn_config_check(cfg, err, errlen);
}

int nn_fit_restore(struct nn_fit *fit, const struct st_file *ckpt, char *err,
		   size_t errlen)
{
	nn_fit_drop_read_ahead(fit); /* what it held changes */
	struct nn_config cfg;
	long long epoch, width, height;
	int rc = nn_checkpoint_config(ckpt, &cfg, err, errlen);
	if (rc)
		return rc;
	const char *sum = st_get_meta(ckpt, "checksum");
	char want[32];
	snprintf(want, sizeof(want), "%016llx",
		 (unsigned long long)checkpoint_checksum(ckpt));
	if (!sum || strcmp(sum, want)) {
		snprintf(err, errlen,
			 "the checkpoint is corrupt (checksum mismatch)");
		return ERR_CHECKSUM;
	}
	const struct st_tensor *p = st_find(ckpt, "params");
	const struct st_tensor *m = st_find(ckpt, "adam_m");
	const struct st_tensor *v = st_find(ckpt, "adam_v");
	const struct st_tensor *h = st_find(ckpt, "metrics");
	size_t bytes = fit->layout.total * sizeof(float);
	rc = nn_meta_int(ckpt, "epoch", 0, 1 << 30, &epoch);
	rc = rc ? rc : nn_meta_int(ckpt, "width", 1, 1 << 30, &width);
	rc = rc ? rc : nn_meta_int(ckpt, "height", 1, 1 << 30, &height);
	if (rc || !p || !m || !v || !h || p->dtype != ST_F32 ||
	    m->dtype != ST_F32 || v->dtype != ST_F32 || h->dtype != ST_F64 ||
	    p->nbytes != bytes || m->nbytes != bytes || v->nbytes != bytes ||
	    h->ndim != 2 || h->shape[1] != 5) {
		snprintf(err, errlen,
			 "the checkpoint does not match this job "
			 "(tensors or sizes differ)");
		return ERR_FORMAT;
	}
	if (width != fit->width || height != fit->height ||
	    cfg.nf != fit->cfg.nf || cfg.nblocks != fit->cfg.nblocks ||
	    memcmp(cfg.dilations, fit->cfg.dilations, sizeof(cfg.dilations))) {
		snprintf(err, errlen,
			 "the checkpoint was made for another image "
			 "size or model shape");
		return ERR_INVALID;
	}
	int n = (int)h->shape[0];
	struct nn_metrics *hist = calloc((size_t)n + 1, sizeof(*hist));
	if (!hist)
		return ERR_NOMEM;
	const double *rows = h->data;
	const struct st_tensor *hb = st_find(ckpt, "metrics_best");
	const double *best =
	    hb && hb->dtype == ST_F64 && hb->ndim == 1 && hb->shape[0] == n
		? hb->data
		: NULL;
	for (int i = 0; i < n; i++) {
		hist[i].epoch = (int)rows[5 * i];
		hist[i].mse = rows[5 * i + 1];
		hist[i].psnr = rows[5 * i + 2];
		hist[i].lr = rows[5 * i + 3];
		hist[i].ms = rows[5 * i + 4];
		hist[i].psnr_best = best ? best[i] : 0;
	}
	rc = nn_fit_write_state(fit, p->data, m->data, v->data, (int)epoch,
				hist, n);
	free(hist);
	rc =
	    rc ? rc
	       : restore_device_tensor(fit, ckpt, "muon_m", &fit->muon_m, NULL);
	rc = rc ? rc
		: restore_device_tensor(fit, ckpt, "average", &fit->average,
					p->data);
	return rc ? rc : restore_best(fit, ckpt, p->data);
}
