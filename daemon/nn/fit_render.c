/*
 * fit_render.c - rendering a fit: its current weights through the exact
 * or the quick render program (recorded the first time, record_render.c),
 * the reconstruction read back and mapped from [-1, 1] to [0, 1], its PSNR
 * from the render's sums; and other weights (the average, the best model)
 * swapped into the weights' buffer for a render, the live ones kept on
 * the host meanwhile. Used by fit.c's steps, package.c (exports) and the
 * worker's evaluations, on the thread that owns the fit.
 */
#include <stdlib.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "nn/fit_internal.h"

/* Runs the exact or the quick render program (recording it the first
 * time); psnr from its sums. */
static int render(struct nn_fit *fit, int quick, double *psnr)
{
	int rc = nn_fit_record_renders(fit);
	rc = rc ? rc
		: gpu_program_run(quick ? fit->quick_render_prog
					: fit->render_prog);
	if (rc == 0 && psnr)
		*psnr = nn_fit_psnr_of_sse(fit);
	return rc;
}

int nn_fit_render(struct nn_fit *fit, struct image **recon, double *psnr)
{
	int rc = render(fit, 0, psnr);
	return rc || !recon ? rc : nn_fit_render_image(fit, recon);
}

int nn_fit_render_image(struct nn_fit *fit, struct image **recon)
{
	struct image *img = image_create(fit->width, fit->height);
	if (!img)
		return ERR_NOMEM;
	uint64_t count = (uint64_t)fit->width * fit->height * 3;
	int rc =
	    gpu_download(fit->gpu, &fit->image_out, 0, img->rgb, count * 4);
	if (rc) {
		image_destroy(img);
		return rc;
	}
	nn_recon_from_render(img);
	*recon = img;
	return 0;
}

void nn_recon_from_render(struct image *img)
{
	uint64_t count = (uint64_t)img->width * img->height * 3;
	for (uint64_t i = 0; i < count; i++)
		img->rgb[i] = (img->rgb[i] + 1.0f) * 0.5f;
}

/*
 * The averaged or the best weights go through fit->params for rendering:
 * the live weights are kept on the host meanwhile and put back after, so
 * the recorded programs serve all. Cheap next to an epoch, and only done
 * when asked (exports, evaluations, the average every few epochs).
 */
int nn_fit_swap_in(struct nn_fit *fit, const struct gpu_buffer *weights,
		   float **live)
{
	size_t bytes = fit->layout.total * sizeof(float);
	float *other = malloc(bytes);
	*live = malloc(bytes);
	int rc = other && *live ? 0 : ERR_NOMEM;
	rc = rc ? rc : nn_fit_read_params(fit, *live, NULL, NULL);
	rc = rc ? rc : gpu_download(fit->gpu, weights, 0, other, bytes);
	rc = rc ? rc : gpu_upload(fit->gpu, &fit->params, 0, other, bytes);
	free(other);
	return rc;
}

int nn_fit_swap_out(struct nn_fit *fit, float *live)
{
	int rc = live ? gpu_upload(fit->gpu, &fit->params, 0, live,
				   fit->layout.total * sizeof(float))
		      : ERR_NOMEM;
	free(live);
	return rc;
}

int nn_fit_average_psnr(struct nn_fit *fit, double *psnr)
{
	if (!fit->average.handle)
		return ERR_INVALID;
	int rc = nn_fit_record_renders(fit);
	rc = rc ? rc : gpu_program_run(fit->avg_render_prog);
	if (rc == 0)
		*psnr = nn_fit_psnr_of_sse(fit);
	return rc;
}
