/*
 * pack_export.c - the exports of many fits of a pack at once (pack.h).
 *
 * nn_fit_export reads each copy of a fit's weights (live, average, best)
 * back, renders each through the fit's weights buffer to measure it, and
 * renders the winner again for its image when it was not the last one
 * measured: about ten waits on the device a fit. Here every step is taken
 * for all the fits that finish at one epoch together: one read of every
 * copy, one packed render a candidate (the uploads between them batched
 * into the render's submission), one render again for the fits whose
 * winner is not in place, one read of every image. The choice, the
 * package and the image are each fit's own, as nn_fit_export's.
 */
#include "nn/pack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "formats/safetensors.h"
#include "nn/fit_internal.h"
#include "nn/package.h"

/* What one fit's export keeps meanwhile. */
struct exporting {
	int n;         /* candidates */
	int won;       /* the best measured so far */
	int in_params; /* whose weights are in fit->params now */
	struct nn_candidate c[NN_EXPORT_CANDIDATES];
};

static void free_exporting(struct exporting *x, int n)
{
	for (int i = 0; x && i < n; i++)
		for (int k = 0; k < NN_EXPORT_CANDIDATES; k++)
			free(x[i].c[k].w);
	free(x);
}

/* Every candidate's weights read back, with one wait. */
static int read_candidates(struct nn_fit *const *fits, int n, const int *want,
			   struct exporting *x)
{
	struct gpu_copy *list =
	    calloc((size_t)n * NN_EXPORT_CANDIDATES + 1, sizeof(*list));
	int count = 0, rc = list ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!want[i])
			continue;
		const struct gpu_buffer *copies[NN_EXPORT_CANDIDATES];
		size_t bytes = fits[i]->layout.total * sizeof(float);
		x[i].n = nn_export_candidates(fits[i], copies, x[i].c);
		for (int k = 0; rc == 0 && k < x[i].n; k++) {
			x[i].c[k].w = malloc(bytes);
			rc = x[i].c[k].w ? 0 : ERR_NOMEM;
			list[count++] = (struct gpu_copy){ copies[k], 0,
							   x[i].c[k].w, bytes };
		}
	}
	rc = rc || !count ? rc : gpu_download_many(fits[0]->gpu, list, count);
	free(list);
	return rc;
}

/* Candidate k of each fit that has one put in its weights buffer (the
 * uploads wait for the render's submission) and measured; flag says
 * which fits took part. */
static int measure_round(struct nn_pack *pack, struct nn_fit *const *fits,
			 int n, const int *want, struct exporting *x, int k,
			 int *flag)
{
	int any = 0, rc = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		flag[i] = want[i] && k < x[i].n;
		if (!flag[i])
			continue;
		any = 1;
		if (k > 0)
			rc = gpu_upload(fits[i]->gpu, &fits[i]->params, 0,
					x[i].c[k].w,
					fits[i]->layout.total * sizeof(float));
		x[i].in_params = k;
	}
	if (rc || !any)
		return rc;
	if ((rc = nn_pack_render(pack, fits, n, flag)))
		return rc;
	for (int i = 0; i < n; i++) {
		if (!flag[i])
			continue;
		x[i].c[k].psnr = nn_fit_psnr_of_sse(fits[i]);
		if (k == 0 || x[i].c[k].psnr > x[i].c[x[i].won].psnr)
			x[i].won = k;
	}
	return 0;
}

/* The winners not in place rendered again, so that every fit's image
 * buffer holds its winner's render. */
static int render_winners(struct nn_pack *pack, struct nn_fit *const *fits,
			  int n, const int *want, struct exporting *x,
			  int *flag)
{
	int any = 0, rc = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		flag[i] = want[i] && x[i].won != x[i].in_params;
		if (!flag[i])
			continue;
		any = 1;
		rc = gpu_upload(fits[i]->gpu, &fits[i]->params, 0,
				x[i].c[x[i].won].w,
				fits[i]->layout.total * sizeof(float));
		x[i].in_params = x[i].won;
	}
	return rc || !any ? rc : nn_pack_render(pack, fits, n, flag);
}

/* Every image read back with one wait, mapped from [-1, 1] to [0, 1]. */
static int read_images(struct nn_fit *const *fits, int n, const int *want,
		       struct nn_export *out)
{
	struct gpu_copy *list = calloc((size_t)n + 1, sizeof(*list));
	int count = 0, rc = list ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!want[i])
			continue;
		const struct nn_fit *fit = fits[i];
		out[i].recon = image_create(fit->width, fit->height);
		rc = out[i].recon ? 0 : ERR_NOMEM;
		uint64_t values = (uint64_t)fit->width * fit->height * 3;
		if (rc == 0)
			list[count++] =
			    (struct gpu_copy){ &fit->image_out, 0,
					       out[i].recon->rgb,
					       values * sizeof(float) };
	}
	rc = rc || !count ? rc : gpu_download_many(fits[0]->gpu, list, count);
	free(list);
	for (int i = 0; rc == 0 && i < n; i++)
		if (want[i])
			nn_recon_from_render(out[i].recon);
	return rc;
}

int nn_pack_export(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		   const int *want_in, int models, int recons,
		   struct nn_export *out)
{
	int *want = calloc((size_t)n + 1, sizeof(*want));
	int *flag = calloc((size_t)n + 1, sizeof(*flag));
	struct exporting *x = calloc((size_t)n + 1, sizeof(*x));
	if (!want || !flag || !x) {
		free(want);
		free(flag);
		free_exporting(x, 0);
		return ERR_NOMEM;
	}
	/* a fit the last step did not take is exported alone */
	for (int i = 0; i < n; i++) {
		out[i] = (struct nn_export){ .psnr = NAN };
		want[i] = want_in[i] && nn_pack_holds(pack, fits[i], i);
		if (want_in[i] && !want[i])
			out[i].rc = nn_fit_export(
			    fits[i], models ? &out[i].model : NULL,
			    recons ? &out[i].recon : NULL, &out[i].psnr);
	}
	int rc = read_candidates(fits, n, want, x);
	for (int k = 0; rc == 0 && k < NN_EXPORT_CANDIDATES; k++)
		rc = measure_round(pack, fits, n, want, x, k, flag);
	if (rc == 0 && recons)
		rc = render_winners(pack, fits, n, want, x, flag);
	if (rc == 0 && recons)
		rc = read_images(fits, n, want, out);
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!want[i])
			continue;
		struct nn_candidate *won = &x[i].c[x[i].won];
		if (models)
			out[i].rc =
			    nn_fit_package_of(fits[i], won->w, won->psnr,
					      won->weights, &out[i].model);
		out[i].psnr = won->psnr;
		snprintf(fits[i]->exported, sizeof(fits[i]->exported), "%s",
			 won->weights);
	}
	/* the live weights back in place, for the fits that go on */
	for (int i = 0; i < n; i++) {
		if (!want[i] || x[i].in_params == 0 || !x[i].c[0].w)
			continue;
		int back =
		    gpu_upload(fits[i]->gpu, &fits[i]->params, 0, x[i].c[0].w,
			       fits[i]->layout.total * sizeof(float));
		rc = rc ? rc : back;
	}
	if (rc) {
		for (int i = 0; i < n; i++) {
			if (!want[i])
				continue;
			st_destroy(out[i].model);
			image_destroy(out[i].recon);
			out[i] = (struct nn_export){ .psnr = NAN, .rc = rc };
		}
	}
	free(want);
	free(flag);
	free_exporting(x, n);
	return rc;
}
