/*
 * record_render.c - recording a fit's render programs: the forward of
 * every tile (record.c's, as the epoch records it) and the render head,
 * writing each tile's core into the whole-image output and summing the
 * squared error when the fit has a target. The exact render is fp32 for
 * every precision; an fp16 fit also gets a quick one in its own precision,
 * and a fit that averages its weights one for the average. Recorded the
 * first time a render is asked for (nn_fit_record_renders, fit.c), on the
 * thread that owns the fit.
 */
#include "nn/record.h"

#include "gpu/gpu.h"
#include "nn/passes.h"
#include "nn/recorder.h"

/* A render program: forward and the render head for every tile, writing
 * the prediction of each core into the whole-image output; exact32 on an
 * fp16 fit: in fp32. */
static int record_render(struct nn_fit *fit, int exact32,
			 struct gpu_program **out)
{
	struct recorder r = { .fit = fit, .exact32 = exact32 };
	int rc = nn_record_pipelines(&r);
	rc = rc ? rc : nn_record_begin(&r, 0, out);
	if (rc)
		return rc;
	int saved = fit->nstages;
	int sse_base = 0;
	nn_record_half_weights(&r);
	for (int i = 0; i < fit->plan.count; i++) {
		const struct tile *t = &fit->plan.tiles[i];
		nn_record_forward(&r, t);
		struct head_push p = { .tile = nn_record_tile_push(fit, t),
				       .w_off = (uint32_t)fit->layout.out_w,
				       .b_off = (uint32_t)fit->layout.out_b,
				       .sse_base = sse_base,
				       .has_target = fit->has_target };
		PASS(&r, r.head_render, p, div_up((uint64_t)p.tile.n, GROUP), 1,
		     &fit->params, nn_record_last_s(&r), &fit->target,
		     &fit->image_out, &fit->dy, &fit->sse);
		nn_record_stage_end(&r, NN_PASS_HEAD);
		sse_base += (int)div_up((uint64_t)p.tile.n, GROUP);
	}
	fit->nstages = saved; /* render stages are not timed */
	rc = r.rc;
	return rc ? rc : gpu_program_end(*out);
}

/* The exact render is fp32 whatever the training's precision: what the
 * model package defines, and what model.render gives back on any device.
 * An fp16 fit's S_k then go through g and z, fp32 buffers it has (the
 * fused passes, which every device with tensor cores gets, read nothing
 * else; without them it renders in fp16 both ways). */
int nn_record_render(struct nn_fit *fit)
{
	uint64_t pixels = (uint64_t)fit->width * fit->height;
	int rc = 0;
	if (!fit->image_out.handle)
		rc = gpu_buffer_alloc(fit->arena, pixels * 12, 0,
				      &fit->image_out);
	int exact32 = fit->vars.half && fit->vars.fused;
	if (!fit->render_prog)
		rc = rc ? rc : record_render(fit, exact32, &fit->render_prog);
	if (!fit->quick_render_prog && !exact32)
		fit->quick_render_prog = fit->render_prog;
	else if (!fit->quick_render_prog)
		rc = rc ? rc : record_render(fit, 0, &fit->quick_render_prog);
	/* the average's: the quick render with the average in the weights'
	 * place (their fp16 copy, which each epoch makes anew, included) */
	if (!rc && fit->average.handle && !fit->avg_render_prog) {
		struct gpu_buffer live = fit->params;
		fit->params = fit->average;
		rc = record_render(fit, 0, &fit->avg_render_prog);
		fit->params = live;
	}
	return rc;
}
