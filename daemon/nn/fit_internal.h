/*
 * fit_internal.h - the fit's fields, shared by fit.c (training),
 * fit_render.c (renders), record.c (its programs) and package.c
 * (checkpoints, model packages, rendering). Nobody else includes it but
 * the GPU tests.
 */
#ifndef VKINR_NN_FIT_INTERNAL_H
#define VKINR_NN_FIT_INTERNAL_H

#include "gpu/gpu.h"
#include "util/image.h"
#include "nn/fit.h"
#include "nn/plan.h"
#include "nn/variants.h"

struct stage_time {
	struct gpu_program *prog;
	int pass, from, to;
};

#define NN_READ_AHEAD 6 /* params, adam_m, adam_v, muon_m, average, best */

struct nn_fit {
	struct gpu_context *gpu;
	struct nn_config cfg;
	struct nn_layout layout;
	int width, height, has_target;
	enum nn_precision precision; /* resolved: FP32 or FP16 */
	/* the pass families, GEMM family and storage of its precision, and
	 * of fp32 (its exact renders): nn/variants.h */
	struct nn_variants vars, vars32;
	int precision_kept; /* a change did not fit the device: no more tries */
	float grad_scale;   /* loss scale of fp16 gradient operands */
	int average_every;  /* epochs between evaluations of the average */
	double fp32_finish; /* auto: the fraction of the epochs run in fp32 */
	struct tile_plan plan;

	struct gpu_arena *arena;
	struct gpu_buffer params, grad, adam_m, adam_v, step, target;
	struct gpu_buffer s[NN_MAX_BLOCKS + 1]; /* pre-activations S0..S_B */
	struct gpu_buffer z, g, dy;             /* scratch: Z or dZ, dS, dY */
	struct gpu_buffer part_a, part_b;       /* partial sums */
	struct gpu_buffer sse, image_out;
	struct gpu_buffer z16, g16, p16; /* fp16 path: Z, dS, weights */
	/* optim.c: Muon's momentum (nblocks nf x nf) and Newton-Schulz
	 * scratch (4 nf x nf), the weight average; unallocated when the
	 * recipe does not use them */
	struct gpu_buffer muon_m, muon_x, average;
	/* loss terms besides the MSE (loss.comp): the tile's predictions
	 * (3 x n), SSIM's gradient coefficients (9 x n) and the terms'
	 * per-workgroup sums (3 a workgroup); unallocated when all are off */
	struct gpu_buffer pred, loss_coef, loss_sums;
	/* the best model measured so far (struct nn_best): its weights, a
	 * copy made on the device, and its PSNR, epoch and source */
	struct gpu_buffer best;
	struct nn_best kept;
	char exported[48]; /* what the last export took (package's "weights") */
	/* the state the next checkpoint reads, read back ahead with other
	 * fits' (nn_fits_read_ahead); dropped by a step */
	struct read_ahead {
		const struct gpu_buffer *buf;
		void *data;
	} ahead[NN_READ_AHEAD];
	int nahead;
	int sse_count;

	struct gpu_program *epoch_prog, *adam_prog;
	struct gpu_program *keep_average_prog; /* best = average, when asked */
	/* rendering: exact (fp32, as the model package defines the model:
	 * exports) and quick (the training's precision: the average's PSNR
	 * every few epochs); the same program on the fp32 path */
	struct gpu_program *render_prog, *quick_render_prog;
	/* the quick render of the average (its weights read in place) */
	struct gpu_program *avg_render_prog;
	/* names this device side (buffers and programs): a new one whenever
	 * they are rebuilt, so that a pack knows its programs are stale */
	uint64_t serial;
	struct stage_time *stages;
	int nstages, max_stages;
	double pass_ms[NN_PASS_COUNT];

	/* host time spent on the device side, for the benchmark: building it
	 * (buffers, then programs) and changing its precision */
	double buffers_ms, programs_ms, switch_ms;

	int epoch;
	struct nn_metrics *history;
	int nhistory, history_cap;
};

/*
 * An epoch in steps, so that a pack (pack.c) runs the same steps for
 * many fits around its packed programs, and nn_fit_step around the fit's
 * own:
 *   nn_step_begin      the rate, the precision, the step buffer;
 *   (the epoch program)
 *   nn_step_measure    the loss; ERR_DIVERGED (gradient dropped) or the
 *                      keep flag set for the optimizer;
 *   (the optimizer program)
 *   nn_step_applied    the epoch counted, *m filled;
 *   nn_step_average_due: whether the average is measured now;
 *   (the average's render) nn_step_average_measured: its PSNR read,
 *   and whether it beats the best (then the keep-average program runs,
 *   and nn_step_average_kept);
 *   nn_step_end        the best's PSNR, the time, the history.
 */
struct nn_step {
	int t;
	double lr, start_ms;
	int keep;
	int packed; /* stepped in a pack: the fit's own programs did not run,
		     * so it has no pass times of its own (nn_pack_pass_ms) */
};
int nn_step_begin(struct nn_fit *fit, struct nn_step *st);
int nn_step_measure(struct nn_fit *fit, struct nn_step *st,
		    struct nn_metrics *m);
void nn_step_applied(struct nn_fit *fit, const struct nn_step *st,
		     struct nn_metrics *m);
int nn_step_average_due(const struct nn_fit *fit, const struct nn_step *st);
int nn_step_average_measured(struct nn_fit *fit, struct nn_metrics *m);
void nn_step_average_kept(struct nn_fit *fit, const struct nn_step *st,
			  const struct nn_metrics *m);
int nn_step_end(struct nn_fit *fit, const struct nn_step *st,
		struct nn_metrics *m);
/* Records the render programs, if not yet (the average's too). */
int nn_fit_record_renders(struct nn_fit *fit);

/* Creates a fit of a width x height image; target may be NULL (render
 * only), init_params NULL (fresh init from the seed). */
int nn_fit_create_sized(struct nn_fit **out, struct gpu_context *gpu, int width,
			int height, const struct image *target,
			const struct nn_config *cfg, const float *init_params,
			char *err, size_t errlen);
/* Reads (any of) weights and both moments; l->total floats each. */
int nn_fit_read_params(struct nn_fit *fit, float *params, float *m, float *v);
/* Replaces the whole training state. */
int nn_fit_write_state(struct nn_fit *fit, const float *params, const float *m,
		       const float *v, int epoch,
		       const struct nn_metrics *history, int nhistory);
/* Runs the epoch program alone (no optimizer step) and reads back the
 * summed gradient (l->total floats) and the sum of squared errors; the
 * gradient is then cleared. For the tests. */
int nn_fit_gradient(struct nn_fit *fit, float *grad, double *sse);
/* The loss terms' raw sums over the image from the last epoch program
 * run (chroma, grad, 1 - SSIM; see struct nn_recipe), in double, in a
 * fixed order; zeros when every term is off. For the tests. */
void nn_fit_loss_sums(const struct nn_fit *fit, double sums[3]);
/* The PSNR of the squared errors the last program run summed. */
double nn_fit_psnr_of_sse(const struct nn_fit *fit);
/* Renders the current weights: the reconstruction and its PSNR. */
int nn_fit_render(struct nn_fit *fit, struct image **recon, double *psnr);
/* The reconstruction of the last exact render, read back. */
int nn_fit_render_image(struct nn_fit *fit, struct image **recon);
/* A render's image as read back, mapped from [-1, 1] to [0, 1]. */
void nn_recon_from_render(struct image *img);

/* Drops the state read ahead for a checkpoint (checkpoint.c reads it). */
void nn_fit_drop_read_ahead(struct nn_fit *fit);

/* What an export chooses from (package.c): the live weights, the
 * average (when the recipe keeps one) and the best model kept (once one
 * was measured), in that order, ties going to the first; copies[k] is the
 * device buffer of candidate k, c[k].weights its name. Returns how many. */
#define NN_EXPORT_CANDIDATES 3
struct st_file;
struct nn_candidate {
	float *w; /* host copy */
	double psnr;
	char weights[48];
};
int nn_export_candidates(const struct nn_fit *fit,
			 const struct gpu_buffer *copies[NN_EXPORT_CANDIDATES],
			 struct nn_candidate c[NN_EXPORT_CANDIDATES]);
/* The model package of weights p (host memory) measured at psnr. */
int nn_fit_package_of(struct nn_fit *fit, const float *p, double psnr,
		      const char *weights, struct st_file **out);
/* Another copy of the weights (fit->average, fit->best) in fit->params
 * for a render (the live ones kept in *live meanwhile), then the live
 * ones back (frees live). */
int nn_fit_swap_in(struct nn_fit *fit, const struct gpu_buffer *weights,
		   float **live);
int nn_fit_swap_out(struct nn_fit *fit, float *live);

#endif
