/*
 * package.c - a fit's state in and out: checkpoints, model packages and
 * rendering a package.
 *
 * Both file kinds are safetensors. A checkpoint holds the flat vectors as
 * they are (params, adam_m, adam_v, and the recipe's and the best model's
 * state), the metrics history and, in the metadata, the epoch, the whole
 * config, the best model's PSNR, epoch and source, and an FNV-1a checksum
 * of the tensor data, verified on load. A model package holds the weights under
 * the PyTorch peer's names and shapes, so the peer loads it as it is.
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

#define CHECKPOINT_FORMAT "vkinr-checkpoint"
#define PACKAGE_FORMAT "vkinr-convsiren"
/* Version 2 added the recipe (optimizer, averaging, plateau...) and the
 * optimizer's and the average's state; version 1 files still load. */
#define FORMAT_VERSION "2"
#define FORMAT_VERSION_OLDEST 1

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int set_meta_fmt(struct st_file *f, const char *key, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));
static int set_meta_fmt(struct st_file *f, const char *key, const char *fmt,
			...)
{
	char value[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	return st_set_meta(f, key, value);
}

static int meta_int(const struct st_file *f, const char *key, long long lo,
		    long long hi, long long *out)
{
	const char *v = st_get_meta(f, key);
	char *end;
	if (!v)
		return ERR_FORMAT;
	long long x = strtoll(v, &end, 10);
	if (end == v || *end || x < lo || x > hi)
		return ERR_FORMAT;
	*out = x;
	return 0;
}

static int meta_double(const struct st_file *f, const char *key, double *out)
{
	const char *v = st_get_meta(f, key);
	char *end;
	if (!v)
		return ERR_FORMAT;
	double x = strtod(v, &end);
	if (end == v || *end || !isfinite(x))
		return ERR_FORMAT;
	*out = x;
	return 0;
}

/* Files newer than this program fail with the version they need. */
static int check_version(const struct st_file *f, const char *what, char *err,
			 size_t errlen)
{
	long long version;
	if (meta_int(f, "version", 0, 1 << 30, &version) ||
	    version < FORMAT_VERSION_OLDEST || version > atoi(FORMAT_VERSION)) {
		const char *v = st_get_meta(f, "version");
		snprintf(err, errlen,
			 "the %s's format version %s is not one this "
			 "vkinrd reads (%d to %s): use a newer vkinrd",
			 what, v ? v : "(none)", FORMAT_VERSION_OLDEST,
			 FORMAT_VERSION);
		return ERR_FORMAT;
	}
	return 0;
}

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
			h = fnv1a(h, t->data, t->nbytes);
	}
	return h;
}

/* The recipe's keys (see nn_recipe_key), in checkpoints and packages. */
static int put_recipe(struct st_file *f, const struct nn_config *cfg)
{
	int rc = 0;
	for (int i = 0; rc == 0 && nn_recipe_key(i); i++) {
		char value[64];
		nn_recipe_get(&cfg->recipe, nn_recipe_key(i), value,
			      sizeof(value));
		rc = st_set_meta(f, nn_recipe_key(i), value);
	}
	return rc;
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
	rc = rc ? rc : set_meta_fmt(f, "nf", "%d", cfg->nf);
	rc = rc ? rc : set_meta_fmt(f, "w0", "%.9g", cfg->w0);
	rc = rc ? rc : set_meta_fmt(f, "lr", "%.17g", cfg->lr);
	rc = rc ? rc : put_recipe(f, cfg);
	rc = rc ? rc : set_meta_fmt(f, "epochs", "%d", cfg->epochs);
	rc =
	    rc ? rc
	       : set_meta_fmt(f, "seed", "%llu", (unsigned long long)cfg->seed);
	rc =
	    rc ? rc
	       : st_set_meta(f, "precision", nn_precision_name(cfg->precision));
	rc = rc ? rc : set_meta_fmt(f, "max_tile", "%d", cfg->max_tile);
	rc = rc ? rc
		: set_meta_fmt(f, "mem_budget", "%llu",
			       (unsigned long long)cfg->mem_budget);
	return rc;
}

/* The optimizer's state beyond Adam, when the recipe has it (version 2). */
static int add_device_tensor(struct nn_fit *fit, struct st_file *f,
			     const char *name, const struct gpu_buffer *buf)
{
	if (!buf->handle)
		return 0;
	int64_t shape[1] = { (int64_t)(buf->size / sizeof(float)) };
	float *data = malloc(buf->size);
	int rc =
	    data ? gpu_download(fit->gpu, buf, 0, data, buf->size) : ERR_NOMEM;
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
	rc = rc ? rc : set_meta_fmt(f, "best_psnr", "%.17g", fit->kept.psnr);
	rc = rc ? rc : set_meta_fmt(f, "best_epoch", "%d", fit->kept.epoch);
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
	    meta_int(ckpt, "best_epoch", -1, 1 << 30, &epoch) == 0 &&
	    meta_double(ckpt, "best_psnr", &psnr) == 0 && source &&
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

	rc = rc ? rc
		: nn_fit_read_params(fit, buf, buf + total, buf + 2 * total);
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
	rc = rc ? rc : set_meta_fmt(f, "epoch", "%d", fit->epoch);
	rc = rc ? rc : set_meta_fmt(f, "width", "%d", fit->width);
	rc = rc ? rc : set_meta_fmt(f, "height", "%d", fit->height);
	rc = rc ? rc : put_config(f, &fit->cfg);
	rc = rc ? rc
		: set_meta_fmt(f, "checksum", "%016llx",
			       (unsigned long long)checkpoint_checksum(f));
	free(buf);
	free(metrics);
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
	int rc = check_version(ckpt, "checkpoint", err, errlen);
	if (rc)
		return rc;
	if (!strcmp(st_get_meta(ckpt, "version"), "1"))
		nn_recipe_version1(&cfg->recipe);
	rc = meta_int(ckpt, "nf", NN_MIN_WIDTH, NN_MAX_WIDTH, &nf);
	rc = rc ? rc : meta_int(ckpt, "epochs", 0, 1 << 30, &epochs);
	rc = rc ? rc : meta_int(ckpt, "seed", 0, INT64_MAX, &seed);
	rc = rc ? rc : meta_int(ckpt, "max_tile", 0, 1 << 30, &max_tile);
	rc = rc ? rc : meta_int(ckpt, "mem_budget", 0, INT64_MAX, &budget);
	rc = rc ? rc : meta_double(ckpt, "w0", &w0);
	rc = rc ? rc : meta_double(ckpt, "lr", &lr);
	/* version 1 named the decay's floor lr_min_ratio */
	if (!rc && st_get_meta(ckpt, "lr_min_ratio"))
		rc = meta_double(ckpt, "lr_min_ratio",
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
	rc = meta_int(ckpt, "epoch", 0, 1 << 30, &epoch);
	rc = rc ? rc : meta_int(ckpt, "width", 1, 1 << 30, &width);
	rc = rc ? rc : meta_int(ckpt, "height", 1, 1 << 30, &height);
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

/* --------------------------------------------------------- model package */

/* Where each package tensor lives in the flat vector, and its shape. */
struct package_entry {
	char name[32];
	size_t offset, count;
	int ndim;
	int64_t shape[4];
};

static int package_entries(const struct nn_layout *l, struct package_entry *e)
{
	int64_t nf = l->nf;
	int n = 0;
#define ENTRY(nm, off, nd, s0, s1, s2, s3)                                     \
	do {                                                                   \
		e[n] = (struct package_entry){                                 \
			"", off, 0, nd, { s0, s1, s2, s3 }                     \
		};                                                             \
		snprintf(e[n].name, sizeof(e[n].name), "%s", nm);              \
		e[n].count = (size_t)(s0) * (nd > 1 ? (size_t)(s1) : 1) *      \
			     (nd > 2 ? (size_t)(s2) * (size_t)(s3) : 1);       \
		n++;                                                           \
	} while (0)
	ENTRY("first.weight", l->first_w, 4, nf, 2, 1, 1);
	ENTRY("first.bias", l->first_b, 1, nf, 0, 0, 0);
	char name[32];
	for (int k = 0; k < l->nblocks; k++) {
		snprintf(name, sizeof(name), "dw.%d.weight", k);
		ENTRY(name, l->dw[k], 4, nf, 1, 3, 3);
	}
	for (int k = 0; k < l->nblocks; k++) {
		snprintf(name, sizeof(name), "pw.%d.weight", k);
		ENTRY(name, l->pw_w[k], 4, nf, nf, 1, 1);
		snprintf(name, sizeof(name), "pw.%d.bias", k);
		ENTRY(name, l->pw_b[k], 1, nf, 0, 0, 0);
	}
	ENTRY("out.weight", l->out_w, 4, 3, nf, 1, 1);
	ENTRY("out.bias", l->out_b, 1, 3, 0, 0, 0);
#undef ENTRY
	return n;
}

#define MAX_ENTRIES (4 + 3 * NN_MAX_BLOCKS)

int nn_package_config(const struct st_file *model, struct nn_config *cfg,
		      int *width, int *height, char *err, size_t errlen)
{
	const struct st_tensor *first = st_find(model, "first.weight");
	long long w, h;
	double w0;

	nn_config_defaults(cfg, 0);
	if (!first || first->ndim < 1) {
		snprintf(err, errlen,
			 "not a ConvSIREN model package (no first.weight)");
		return ERR_FORMAT;
	}
	cfg->nf = (int)first->shape[0];
	const char *dil = st_get_meta(model, "dilations");
	if (dil && nn_config_parse_dilations(cfg, dil)) {
		snprintf(err, errlen,
			 "the package's dilations \"%s\" are not valid", dil);
		return ERR_FORMAT;
	}
	if (meta_double(model, "w0", &w0) == 0)
		cfg->w0 = (float)w0;
	if (meta_int(model, "width", 1, 1 << 30, &w) ||
	    meta_int(model, "height", 1, 1 << 30, &h)) {
		snprintf(err, errlen,
			 "the package's metadata lacks the image "
			 "width and height");
		return ERR_FORMAT;
	}
	*width = (int)w;
	*height = (int)h;
	int rc = nn_config_check(cfg, err, errlen);
	if (rc)
		return ERR_FORMAT;

	struct nn_layout l;
	struct package_entry e[MAX_ENTRIES];
	nn_layout_init(&l, cfg);
	int n = package_entries(&l, e);
	for (int i = 0; i < n; i++) {
		const struct st_tensor *t = st_find(model, e[i].name);
		int ok = t && t->dtype == ST_F32 && t->ndim == e[i].ndim &&
			 t->nbytes == e[i].count * sizeof(float);
		for (int d = 0; ok && d < e[i].ndim; d++)
			ok = t->shape[d] == e[i].shape[d];
		if (!ok) {
			snprintf(err, errlen,
				 "the package's tensor %s is missing "
				 "or has the wrong type or shape",
				 e[i].name);
			return ERR_FORMAT;
		}
	}
	char extra[32];
	snprintf(extra, sizeof(extra), "pw.%d.weight", cfg->nblocks);
	if (st_find(model, extra)) {
		snprintf(err, errlen,
			 "the package has more blocks than its "
			 "dilations list");
		return ERR_FORMAT;
	}
	return 0;
}

/* Copies a model package's tensors into a flat parameter vector laid out
 * for cfg (nf and dilations must match). */
static int package_params(const struct st_file *model,
			  const struct nn_config *cfg, int width, int height,
			  float **params, char *err, size_t errlen)
{
	struct nn_config pcfg;
	int pw, ph;
	int rc = nn_package_config(model, &pcfg, &pw, &ph, err, errlen);
	if (rc)
		return rc;
	if (pcfg.nf != cfg->nf || pcfg.nblocks != cfg->nblocks ||
	    memcmp(pcfg.dilations, cfg->dilations, sizeof(pcfg.dilations))) {
		snprintf(err, errlen,
			 "the initial model has width %d and %d blocks; "
			 "this job asks for width %d and %d blocks",
			 pcfg.nf, pcfg.nblocks, cfg->nf, cfg->nblocks);
		return ERR_INVALID;
	}
	(void)width, (void)height; /* a model may start a fit of another size */
	struct nn_layout l;
	struct package_entry e[MAX_ENTRIES];
	nn_layout_init(&l, cfg);
	float *p = calloc(l.total, sizeof(float));
	if (!p)
		return ERR_NOMEM;
	int n = package_entries(&l, e);
	for (int i = 0; i < n; i++)
		memcpy(p + e[i].offset, st_find(model, e[i].name)->data,
		       e[i].count * sizeof(float));
	*params = p;
	return 0;
}

int nn_fit_create(struct nn_fit **out, struct gpu_context *gpu,
		  const struct image *target, const struct nn_config *cfg,
		  const struct st_file *init, char *err, size_t errlen)
{
	float *params = NULL;
	int rc;
	if (err && errlen)
		err[0] = 0;
	if (init) {
		rc = package_params(init, cfg, target->width, target->height,
				    &params, err, errlen);
		if (rc)
			return rc;
	}
	rc = nn_fit_create_sized(out, gpu, target->width, target->height,
				 target, cfg, params, err, errlen);
	free(params);
	return rc;
}

int nn_fit_open(struct nn_fit **out, struct gpu_context *gpu,
		const struct image *target, const struct st_file *ckpt,
		const struct st_file *init, struct nn_config *cfg,
		unsigned take, char *err, size_t errlen)
{
	*out = NULL;
	if (!ckpt)
		return nn_fit_create(out, gpu, target, cfg, init, err, errlen);
	struct nn_config stored;
	int rc = nn_checkpoint_config(ckpt, &stored, err, errlen);
	if (rc)
		return rc;
	if (take & NN_TAKE_EPOCHS)
		stored.epochs = cfg->epochs;
	if (take & NN_TAKE_TILING) {
		stored.max_tile = cfg->max_tile;
		stored.mem_budget = cfg->mem_budget;
	}
	if (take & NN_TAKE_LR)
		stored.lr = cfg->lr;
	*cfg = stored;
	rc = nn_fit_create(out, gpu, target, cfg, NULL, err, errlen);
	rc = rc ? rc : nn_fit_restore(*out, ckpt, err, errlen);
	if (rc) {
		nn_fit_destroy(*out);
		*out = NULL;
	}
	return rc;
}

static int build_package(struct nn_fit *fit, double psnr, struct st_file **out)
{
	struct package_entry e[MAX_ENTRIES];
	float *p = malloc(fit->layout.total * sizeof(float));
	struct st_file *f = st_create();
	int rc = p && f ? 0 : ERR_NOMEM;
	rc = rc ? rc : nn_fit_read_params(fit, p, NULL, NULL);
	int n = package_entries(&fit->layout, e);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = st_add(f, e[i].name, ST_F32, e[i].ndim, e[i].shape,
			    p + e[i].offset);
	char dil[64];
	nn_config_dilations_string(&fit->cfg, dil, sizeof(dil));
	rc = rc ? rc : st_set_meta(f, "format", PACKAGE_FORMAT);
	rc = rc ? rc : st_set_meta(f, "version", FORMAT_VERSION);
	rc = rc ? rc : set_meta_fmt(f, "width", "%d", fit->width);
	rc = rc ? rc : set_meta_fmt(f, "height", "%d", fit->height);
	rc = rc ? rc : set_meta_fmt(f, "nf", "%d", fit->cfg.nf);
	rc = rc ? rc : st_set_meta(f, "dilations", dil);
	rc = rc ? rc : set_meta_fmt(f, "w0", "%g", fit->cfg.w0);
	rc = rc ? rc : set_meta_fmt(f, "epochs", "%d", fit->epoch);
	rc = rc ? rc : set_meta_fmt(f, "psnr", "%.3f", psnr);
	/* the recipe that made it, key by key and in one line */
	char recipe[512];
	nn_recipe_describe(&fit->cfg.recipe, recipe, sizeof(recipe));
	rc = rc ? rc : set_meta_fmt(f, "lr", "%.17g", fit->cfg.lr);
	rc = rc ? rc : put_recipe(f, &fit->cfg);
	rc = rc ? rc : st_set_meta(f, "recipe", recipe);
	free(p);
	if (rc) {
		st_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* The package and reconstruction of the weights now in fit->params. */
static int export_current(struct nn_fit *fit, struct st_file **model,
			  struct image **recon, double *psnr,
			  const char *weights)
{
	int rc = nn_fit_render(fit, recon, psnr);
	if (rc == 0 && model) {
		rc = build_package(fit, *psnr, model);
		rc = rc ? rc : st_set_meta(*model, "weights", weights);
		if (rc && recon) {
			image_destroy(*recon);
			*recon = NULL;
		}
	}
	return rc;
}

/* What export_current made of one copy of the weights. */
struct exported {
	struct st_file *model;
	struct image *recon;
	double psnr;
	char weights[sizeof(((struct nn_fit *)0)->exported)];
};

static void exported_free(struct exported *e)
{
	st_destroy(e->model);
	image_destroy(e->recon);
	e->model = NULL;
	e->recon = NULL;
}

/* Exports the weights in buffer w (the live ones: fit->params) into *e,
 * the outputs the caller asked for only. */
static int export_weights(struct nn_fit *fit, const struct gpu_buffer *w,
			  int want_model, int want_recon, struct exported *e)
{
	float *live = NULL;
	int rc = w == &fit->params ? 0 : nn_fit_swap_in(fit, w, &live);
	rc = rc ? rc
		: export_current(fit, want_model ? &e->model : NULL,
				 want_recon ? &e->recon : NULL, &e->psnr,
				 e->weights);
	int back = w == &fit->params ? 0 : nn_fit_swap_out(fit, live);
	return rc ? rc : back;
}

/*
 * The best of the copies of the weights there are: the live ones, the
 * average (when the recipe keeps one) and the best model kept (once one
 * was measured), each rendered now; ties go to the first, in that order.
 * The export leaves the fit's state as it was, so asking for one does not
 * change the run.
 */
int nn_fit_export(struct nn_fit *fit, struct st_file **model,
		  struct image **recon, double *psnr)
{
	const struct gpu_buffer *copies[3] = { &fit->params };
	struct exported won = { 0 }, e[3] = { { 0 } };
	int n = 1, rc = 0;
	snprintf(e[0].weights, sizeof(e[0].weights), "live");
	if (fit->average.handle) {
		copies[n] = &fit->average;
		snprintf(e[n++].weights, sizeof(e[0].weights), "average");
	}
	if (fit->kept.epoch >= 0) {
		copies[n] = &fit->best;
		snprintf(
		    e[n++].weights, sizeof(e[0].weights), "best (%s, epoch %d)",
		    nn_best_source_name(fit->kept.source), fit->kept.epoch);
	}
	for (int i = 0; rc == 0 && i < n; i++) {
		rc = export_weights(fit, copies[i], model != NULL,
				    recon != NULL, &e[i]);
		if (rc == 0 && (i == 0 || e[i].psnr > won.psnr)) {
			exported_free(&won);
			won = e[i];
		} else {
			exported_free(&e[i]);
		}
	}
	if (rc) {
		exported_free(&won);
		if (model)
			*model = NULL;
		if (recon)
			*recon = NULL;
		return rc;
	}
	snprintf(fit->exported, sizeof(fit->exported), "%s", won.weights);
	if (model)
		*model = won.model;
	if (recon)
		*recon = won.recon;
	if (psnr)
		*psnr = won.psnr;
	return 0;
}

int nn_fit_save_export(struct nn_fit *fit, const char *model_path,
		       const char *recon_path, unsigned recon_mode,
		       double *psnr, const char **failed)
{
	struct st_file *model = NULL;
	struct image *recon = NULL;
	uint8_t *png = NULL;
	size_t png_size = 0;
	if (failed)
		*failed = NULL;
	int rc = nn_fit_export(fit, model_path ? &model : NULL,
			       recon_path ? &recon : NULL, psnr);
	if (rc == 0 && model && (rc = st_save_file(model, model_path)) &&
	    failed)
		*failed = model_path;
	if (rc == 0 && recon) {
		rc = png_encode(recon, &png, &png_size);
		rc = rc ? rc
			: fileio_write_atomic(recon_path, png, png_size,
					      recon_mode);
		if (rc && failed)
			*failed = recon_path;
	}
	free(png);
	st_destroy(model);
	image_destroy(recon);
	return rc;
}

const char *nn_fit_exported_weights(const struct nn_fit *fit)
{
	return fit->exported[0] ? fit->exported : "live";
}

int nn_render(struct gpu_context *gpu, const struct st_file *model,
	      const struct image *target, struct image **out, double *psnr,
	      char *err, size_t errlen)
{
	struct nn_config cfg;
	struct nn_fit *fit = NULL;
	float *params = NULL;
	int width, height;
	int rc = nn_package_config(model, &cfg, &width, &height, err, errlen);
	if (rc)
		return rc;
	if (target && (target->width != width || target->height != height)) {
		snprintf(err, errlen,
			 "the target is %dx%d but the model was "
			 "fitted to %dx%d",
			 target->width, target->height, width, height);
		return ERR_INVALID;
	}
	cfg.epochs = 0;
	/* rendering is cheap: fp32, so a package renders the same everywhere */
	cfg.precision = NN_PRECISION_FP32;
	rc = package_params(model, &cfg, width, height, &params, err, errlen);
	rc = rc ? rc
		: nn_fit_create_sized(&fit, gpu, width, height, target, &cfg,
				      params, err, errlen);
	double value = 0;
	rc = rc ? rc : nn_fit_render(fit, out, &value);
	if (rc == 0 && psnr)
		*psnr = target ? value : NAN;
	nn_fit_destroy(fit);
	free(params);
	return rc;
}
