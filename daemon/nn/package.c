/*
 * package.c - a fit's model package in and out, and rendering a package.
 *
 * A model package is safetensors with the weights under the PyTorch peer's
 * names and shapes, so the peer loads it as it is; its metadata holds the
 * config and the recipe. Checkpoints: checkpoint.c.
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

/*
 * The package's size_check (docs/MODEL.md): FNV-1a 64 over the text
 * "WIDTH,HEIGHT,NF,DILATIONS" (e.g. "64,48,32,1,2,4,8"), so that a size
 * edited by hand is refused instead of rendered as a stretched, garbled
 * image. The weights are not in it: a package is also a starting point
 * (--init) and a PyTorch module's, whose weights may change.
 */
static uint64_t size_check(long long w, long long h, int nf, const char *dil)
{
	char text[128];
	int n = snprintf(text, sizeof(text), "%lld,%lld,%d,%s", w, h, nf, dil);
	return nn_meta_fnv1a(0xcbf29ce484222325ull, text, (size_t)n);
}

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
	if (nn_meta_double(model, "w0", &w0) == 0)
		cfg->w0 = (float)w0;
	if (nn_meta_int(model, "width", 1, 1 << 30, &w) ||
	    nn_meta_int(model, "height", 1, 1 << 30, &h)) {
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
	/* packages from before size_check, and the PyTorch peer's, have none */
	const char *check = st_get_meta(model, "size_check");
	char dil_text[64], want[20];
	nn_config_dilations_string(cfg, dil_text, sizeof(dil_text));
	snprintf(want, sizeof(want), "%016llx",
		 (unsigned long long)size_check(w, h, cfg->nf, dil_text));
	if (check && strcmp(check, want)) {
		snprintf(err, errlen,
			 "the package's stored size (%lldx%lld) or its "
			 "dilations do not match its weights (size_check "
			 "differs): the metadata was edited after the export. "
			 "Put back the size it was fitted at; to render at "
			 "another size, use infer --size or --scale",
			 w, h);
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

int nn_package_params(const struct st_file *model, const struct nn_config *cfg,
		      float **params, char *err, size_t errlen)
{
	return package_params(model, cfg, 0, 0, params, err, errlen);
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

/* The package of weights p (host memory, fit->layout.total floats). */
int nn_fit_package_of(struct nn_fit *fit, const float *p, double psnr,
		      const char *weights, struct st_file **out)
{
	struct package_entry e[MAX_ENTRIES];
	struct st_file *f = st_create();
	int rc = f ? 0 : ERR_NOMEM;
	int n = package_entries(&fit->layout, e);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = st_add(f, e[i].name, ST_F32, e[i].ndim, e[i].shape,
			    p + e[i].offset);
	char dil[64];
	nn_config_dilations_string(&fit->cfg, dil, sizeof(dil));
	rc = rc ? rc : st_set_meta(f, "format", PACKAGE_FORMAT);
	rc = rc ? rc : st_set_meta(f, "version", FORMAT_VERSION);
	rc = rc ? rc : nn_meta_set_fmt(f, "width", "%d", fit->width);
	rc = rc ? rc : nn_meta_set_fmt(f, "height", "%d", fit->height);
	rc = rc ? rc : nn_meta_set_fmt(f, "nf", "%d", fit->cfg.nf);
	rc = rc ? rc : st_set_meta(f, "dilations", dil);
	rc = rc ? rc : nn_meta_set_fmt(f, "w0", "%g", fit->cfg.w0);
	rc = rc ? rc : nn_meta_set_fmt(f, "epochs", "%d", fit->epoch);
	rc = rc ? rc : nn_meta_set_fmt(f, "psnr", "%.3f", psnr);
	/* the recipe that made it, key by key and in one line */
	char recipe[512];
	nn_recipe_describe(&fit->cfg.recipe, recipe, sizeof(recipe));
	rc = rc ? rc : nn_meta_set_fmt(f, "lr", "%.17g", fit->cfg.lr);
	rc = rc ? rc : nn_meta_put_recipe(f, &fit->cfg);
	rc = rc ? rc : st_set_meta(f, "recipe", recipe);
	rc = rc ? rc : st_set_meta(f, "weights", weights);
	rc = rc ? rc
		: nn_meta_set_fmt(
		      f, "size_check", "%016llx",
		      (unsigned long long)size_check(fit->width, fit->height,
						     fit->cfg.nf, dil));
	if (rc) {
		st_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

int nn_export_candidates(const struct nn_fit *fit,
			 const struct gpu_buffer *copies[NN_EXPORT_CANDIDATES],
			 struct nn_candidate c[NN_EXPORT_CANDIDATES])
{
	int n = 1;
	copies[0] = &fit->params;
	snprintf(c[0].weights, sizeof(c[0].weights), "live");
	if (fit->average.handle) {
		copies[n] = &fit->average;
		snprintf(c[n++].weights, sizeof(c[0].weights), "average");
	}
	if (fit->kept.epoch >= 0) {
		copies[n] = &fit->best;
		snprintf(
		    c[n++].weights, sizeof(c[0].weights), "best (%s, epoch %d)",
		    nn_best_source_name(fit->kept.source), fit->kept.epoch);
	}
	return n;
}

/*
 * The best of the copies of the weights there are: the live ones, the
 * average (when the recipe keeps one) and the best model kept (once one
 * was measured), each rendered now; ties go to the first, in that order.
 * Each copy is read to the host once and measured by the exact render
 * through fit->params; the winner is rendered again for its image only
 * when it was not the last measured, and its package is made from the
 * host copy. The live weights go back into fit->params, so the export
 * leaves the fit's state as it was and asking for one does not change
 * the run.
 */
int nn_fit_export(struct nn_fit *fit, struct st_file **model,
		  struct image **recon, double *psnr)
{
	const struct gpu_buffer *copies[NN_EXPORT_CANDIDATES];
	struct nn_candidate c[NN_EXPORT_CANDIDATES] = { { 0 } };
	size_t bytes = fit->layout.total * sizeof(float);
	int n = nn_export_candidates(fit, copies, c), rc = 0, won = 0,
	    in_params = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		c[i].w = malloc(bytes);
		rc = c[i].w
			 ? gpu_download(fit->gpu, copies[i], 0, c[i].w, bytes)
			 : ERR_NOMEM;
	}
	/* each measured in turn; in_params: whose weights are there now */
	for (int i = 0; rc == 0 && i < n; i++) {
		rc = i == 0
			 ? 0
			 : gpu_upload(fit->gpu, &fit->params, 0, c[i].w, bytes);
		in_params = i;
		rc = rc ? rc : nn_fit_render(fit, NULL, &c[i].psnr);
		if (rc == 0 && c[i].psnr > c[won].psnr)
			won = i;
	}
	struct image *img = NULL;
	struct st_file *pkg = NULL;
	if (rc == 0 && recon) {
		if (won != in_params) {
			rc = gpu_upload(fit->gpu, &fit->params, 0, c[won].w,
					bytes);
			in_params = won;
			double again;
			rc = rc ? rc : nn_fit_render(fit, &img, &again);
		} else {
			rc = nn_fit_render_image(fit, &img);
		}
	}
	if (rc == 0 && model)
		rc = nn_fit_package_of(fit, c[won].w, c[won].psnr,
				       c[won].weights, &pkg);
	if (in_params != 0) {
		int back = gpu_upload(fit->gpu, &fit->params, 0, c[0].w, bytes);
		rc = rc ? rc : back;
	}
	if (rc == 0) {
		snprintf(fit->exported, sizeof(fit->exported), "%s",
			 c[won].weights);
		if (psnr)
			*psnr = c[won].psnr;
	} else {
		image_destroy(img);
		st_destroy(pkg);
		img = NULL;
		pkg = NULL;
	}
	if (model)
		*model = pkg;
	if (recon)
		*recon = img;
	for (int i = 0; i < n; i++)
		free(c[i].w);
	return rc;
}

int nn_fit_save_export(struct nn_fit *fit, const char *model_path,
		       const char *recon_path, unsigned recon_mode,
		       double *psnr, const char **failed)
{
	struct st_file *model = NULL;
	struct image *recon = NULL;
	if (failed)
		*failed = NULL;
	int rc = nn_fit_export(fit, model_path ? &model : NULL,
			       recon_path ? &recon : NULL, psnr);
	if (rc)
		return rc;
	return nn_export_save(model, recon, model_path, recon_path, recon_mode,
			      failed);
}

int nn_export_save(struct st_file *model, struct image *recon,
		   const char *model_path, const char *recon_path,
		   unsigned recon_mode, const char **failed)
{
	uint8_t *png = NULL;
	size_t png_size = 0;
	int rc = 0;
	if (failed)
		*failed = NULL;
	if (model && (rc = st_save_file(model, model_path)) && failed)
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
