/*
 * record_pipes.c - the pipelines a recording takes: those of the pass
 * families, GEMM family and storage its variants name (nn/variants.h;
 * the recorder's own copy, fit->vars or, for an exact render,
 * fit->vars32), and no others. Shared by every recording (record.c,
 * record_render.c, render_view.c); the pipelines themselves are built
 * once a device and cached (gpu_pipeline_get).
 */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "nn/gemm.h"
#include "nn/passes.h"
#include "nn/recorder.h"

/* The loss terms' pipelines, when the recipe has any (record_loss_head). */
static int get_loss_pipelines(struct recorder *r, const uint32_t spec[3])
{
	struct gpu_context *gpu = r->fit->gpu;
	uint32_t head = sizeof(struct head_push),
		 loss = sizeof(struct loss_push);
	int rc = 0;
	r->has_loss_terms = nn_loss_has_terms(&r->fit->cfg.recipe);
	if (!r->has_loss_terms)
		return 0;
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "head_predict", 6, head, spec, 2,
				   &r->head_predict);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "loss_terms", 4, loss, spec, 2,
				   &r->loss_terms_pass);
	rc = rc ? rc
		: gpu_pipeline_get(gpu, "loss_grad", 4, loss, spec, 2,
				   &r->loss_grad_pass);
	const char *back = r->v.half ? "head_back_f16" : "head_back";
	rc = rc ? rc
		: gpu_pipeline_get(gpu, back, r->v.half ? 7 : 6, head, spec, 2,
				   &r->head_back);
	return rc;
}

/* What every pipeline lookup of one recording shares. */
struct pipes_get {
	struct recorder *r;
	uint32_t spec[3];
	int rc;
};

/* Gets pipeline name (nb buffers, push bytes, nspec constants) into *out,
 * unless an earlier lookup failed. */
static void get(struct pipes_get *g, struct gpu_pipeline **out,
		const char *name, int nb, uint32_t push, int nspec)
{
	if (!g->rc)
		g->rc = gpu_pipeline_get(g->r->fit->gpu, name, nb, push,
					 g->spec, nspec, out);
}

/* The same for a depthwise strip pass: name with the suffix of its
 * workgroup shape (small: "_x16"). */
static void get_strip(struct pipes_get *g, struct gpu_pipeline **out,
		      const char *base, int small, int nb)
{
	char name[64];
	snprintf(name, sizeof(name), "%s%s", base, small ? "_x16" : "");
	get(g, out, name, nb, sizeof(struct dw_push), 2);
}

/* NN_DW_STRIPS: the strip passes for both workgroup shapes. */
static void get_strip_pipelines(struct pipes_get *g)
{
	const struct nn_variants *v = &g->r->v;
	for (int i = 0; i < 2; i++) {
		struct dw_strip_pipes *d = &g->r->dws[i];
		if (v->half_s) {
			get_strip(g, &d->strip_copy, "dwconv_strip_s_f16_copy",
				  i, 4);
			get_strip(g, &d->strip_in, "dwconv_strip_s_f16_in", i,
				  3);
			get_strip(g, &d->back, "dwconv_back_strip_f16_in", i,
				  6);
		} else {
			get_strip(g, &d->strip,
				  v->half ? "dwconv_strip_s_f16"
					  : "dwconv_strip_s",
				  i, 3);
			get_strip(g, &d->back,
				  v->half ? "dwconv_back_strip_f16"
					  : "dwconv_back_strip",
				  i, v->half ? 6 : 5);
		}
		if (v->pairs && v->half_s) {
			get_strip(g, &d->pair_copy, "dwconv_pair_s_f16_copy", i,
				  4);
			get_strip(g, &d->pair_in, "dwconv_pair_s_f16_in", i, 3);
		} else if (v->pairs) {
			get_strip(g, &d->pair,
				  v->half ? "dwconv_pair_s_f16"
					  : "dwconv_pair_s",
				  i, 3);
		}
	}
}

/* NN_DW_ROWS, NN_DW_ROW_BLOCKS: one pipeline a block, its dilation the
 * third specialization constant. */
static void get_row_pipelines(struct pipes_get *g)
{
	struct recorder *r = g->r;
	int blocks = r->v.dw == NN_DW_ROW_BLOCKS;
	uint32_t dw = sizeof(struct dw_push);
	for (int k = 0; k < r->fit->cfg.nblocks; k++) {
		g->spec[2] = (uint32_t)r->fit->cfg.dilations[k];
		get(g, &r->dwconv_rows[k],
		    blocks ? "dwconv_blocks_cpu" : "dwconv_rows", 3, dw, 3);
		get(g, &r->dwconv_back_rows[k],
		    blocks ? "dwconv_back_blocks_cpu" : "dwconv_back_rows", 5,
		    dw, 3);
	}
	g->spec[2] = 0;
}

/* NN_DW_PIXELS and NN_DW_TILED: the per-pixel passes (and the tiled
 * forward), the taps' sums apart. */
static void get_pixel_pipelines(struct pipes_get *g)
{
	struct recorder *r = g->r;
	const struct nn_variants *v = &r->v;
	uint32_t dw = sizeof(struct dw_push);
	if (v->fused)
		get(g, &r->dwconv, v->half ? "dwconv_s_f16" : "dwconv_s", 3, dw,
		    2);
	else
		get(g, &r->dwconv, v->half ? "dwconv_f16" : "dwconv", 3, dw, 2);
	if (v->half_s)
		get(g, &r->dwconv_back, "dwconv_back_f16_in", 5, dw, 2);
	else if (v->half)
		get(g, &r->dwconv_back, "dwconv_back_f16", 5, dw, 2);
	else
		get(g, &r->dwconv_back, "dwconv_back", 4, dw, 2);
	get(g, &r->reduce_dw,
	    v->half_s  ? "reduce_dw_s_in"
	    : v->fused ? "reduce_dw_s"
		       : "reduce_dw",
	    3, sizeof(struct pixel_sum_push), 2);
	if (v->half_s) {
		get(g, &r->dwconv_copy, "dwconv_s_f16_copy", 4, dw, 2);
		get(g, &r->dwconv_in, "dwconv_s_f16_in", 3, dw, 2);
	}
	if (v->dw == NN_DW_TILED)
		get(g, &r->dwconv_tiled,
		    v->half ? "dwconv_tiled_s_f16" : "dwconv_tiled_s", 3, dw,
		    2);
	if (v->dw == NN_DW_TILED && v->half_s) {
		get(g, &r->dwconv_tiled_copy, "dwconv_tiled_s_f16_copy", 4, dw,
		    2);
		get(g, &r->dwconv_tiled_in, "dwconv_tiled_s_f16_in", 3, dw, 2);
	}
}

/* The GEMMs of r->v.gemm. */
static void get_gemm_pipelines(struct pipes_get *g)
{
	struct recorder *r = g->r;
	uint32_t gemm = sizeof(struct gemm_push);
	const char *forms[3] = { "nn", "tn", "nt" };
	struct gpu_pipeline **pipes[3] = { &r->gemm_nn, &r->gemm_tn,
					   &r->gemm_nt };
	char name[32];
	for (int i = 0; i < 3; i++) {
		gemm_shader_name(r->v.gemm, forms[i], name, sizeof(name));
		get(g, pipes[i], name, 4, gemm, 0);
	}
}

int nn_record_pipelines(struct recorder *r)
{
	struct pipes_get g = { .r = r, .spec = { (uint32_t)r->fit->cfg.nf } };
	memcpy(&g.spec[1], &r->fit->cfg.w0, 4);
	r->v = r->exact32 ? r->fit->vars32 : r->fit->vars;
	const struct nn_variants *v = &r->v;
	uint32_t head = sizeof(struct head_push),
		 sums = sizeof(struct pixel_sum_push);
	int cpu = v->cpu;
	get(&g, &r->first, "first", 2, sizeof(struct first_push), 2);
	if (!v->fused) /* the fused passes take the sines themselves */
		get(&g, &r->activate, cpu ? "activate_vec4" : "activate", 2,
		    sizeof(struct activate_push), 2);
	if (v->half)
		get(&g, &r->to_f16, "to_f16", 2, sizeof(struct to_f16_push), 2);
	get(&g, &r->head, v->half ? "head_f16" : "head", v->half ? 7 : 6, head,
	    2);
	get(&g, &r->head_render, "head_render", 6, head, 2);
	get(&g, &r->reduce_sum, "reduce_sum", 3, sums, 2);
	get(&g, &r->reduce_first, "reduce_first", 3, sums, 2);
	get(&g, &r->reduce_out, "reduce_out", 3, sums, 2);
	get(&g, &r->reduce, "reduce", 2, sizeof(struct reduce_push), 2);
	if (v->dw == NN_DW_STRIPS)
		get_strip_pipelines(&g);
	else if (nn_variants_rows(v))
		get_row_pipelines(&g);
	else
		get_pixel_pipelines(&g);
	get_gemm_pipelines(&g);
	return g.rc ? g.rc : get_loss_pipelines(r, g.spec);
}
