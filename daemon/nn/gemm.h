/*
 * gemm.h - the GEMM shader families that can run the pointwise layers, and
 * what the engine needs to know to dispatch one: the output tile of a
 * workgroup, whether its operands are fp16 (tensor cores), and the step
 * that a split of K should be a multiple of.
 *
 * A family NAME is the three shader variants gemm_nn_NAME (forward),
 * gemm_tn_NAME (data gradient) and gemm_nt_NAME (weight gradient, split
 * K); see shaders/gemm.comp, shaders/gemm_coop.comp and (the cm2
 * families, VK_NV_cooperative_matrix2) shaders/gemm_cm2.comp. variants.c
 * picks one (VKINR_GEMM=NAME overrides, for benchmarks and tests, with a
 * family this binary embeds; not a cm2 family, which has no packed
 * twins); the benchmark runs them all.
 */
#ifndef VKINR_NN_GEMM_H
#define VKINR_NN_GEMM_H

#include <stdint.h>

struct gemm_variant {
	const char *name;    /* family name, also the shader suffix */
	uint32_t rows, cols; /* output tile of a workgroup (M x N) */
	uint32_t k_step;     /* a split's K chunk is a multiple of this */
	int half;            /* fp16 operands, cooperative matrices */
	const char *what;    /* one line for listings */
	int nv_only;         /* the 16x16x16 shape: VK_NV_cooperative_matrix
				   alone (the KHR translation refuses it) */
	int half_out;        /* has the forms "nnp", the forward writing the
				   fp16 phase of S, and "tnh", the data
				   gradient writing dZ in fp16 (gemm_coop.comp
				   PHASE_OUT and HALF_OUT; their tests' alone,
				   the engine records neither) */
	int cm2;             /* VK_NV_cooperative_matrix2 (gemm_cm2.comp):
				   its shaders exist only in builds that found
				   glslang 15, and run only on devices with
				   gpu_device_info.has_coopmat2 */
	uint32_t nt_rows, nt_cols; /* the weight gradient's own output
				      tile, where it differs (0: rows x
				      cols) */
};

/* The output tile of a workgroup of form ("nn", "tn" or "nt") of v. */
void gemm_variant_tile(const struct gemm_variant *v, const char *form,
		       uint32_t *rows, uint32_t *cols);

/* Every family, ending with one whose name is NULL. */
extern const struct gemm_variant gemm_variants[];

/* The family called name, or NULL. */
const struct gemm_variant *gemm_variant_find(const char *name);

/* Whether a device runs family v: its tensor cores go through coopmat_api
 * ("nv" or "khr"; NULL: it has none). Never for the cm2 families, which
 * need more than the API's name: see gemm_variant_runs_on. */
int gemm_variant_runs(const struct gemm_variant *v, const char *coopmat_api);

struct gpu_device_info;
/* Whether the device described by info runs family v, the cm2 families
 * included. */
int gemm_variant_runs_on(const struct gemm_variant *v,
			 const struct gpu_device_info *info);

/* Whether this binary embeds v's shaders: vkinrd the engine's families
 * alone (shaders/variants.txt), the tests, the tools and a bench build
 * every family (shaders/variants_bench.txt, the cm2 ones where glslang 15
 * built them). */
int gemm_variant_embedded(const struct gemm_variant *v);

/* The shader variant of form ("nn", "tn" or "nt") of a family. */
void gemm_shader_name(const struct gemm_variant *v, const char *form, char *out,
		      int outlen);

#endif
