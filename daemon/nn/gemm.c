/*
 * gemm.c - the table of GEMM families (see gemm.h). Each line must match
 * the defines of its shader variants in shaders/variants.txt (the
 * engine's), shaders/variants_bench.txt (the benchmarks' and tests') or
 * shaders/variants_cm2.txt (the cm2 families).
 */
#include "nn/gemm.h"

#include "gpu/gpu.h"
#include "gpu/shaders.h"

#include <stdio.h>
#include <string.h>

const struct gemm_variant gemm_variants[] = {
	{ "small", 64, 64, 16, 0,
	  "fp32, 64x64 tiles (CPU devices, small widths)", 0, 0, 0, 0, 0 },
	{ "large", 128, 128, 16, 0, "fp32, 128x128 tiles", 0, 0, 0, 0, 0 },
	{ "coop", 128, 128, 64, 1,
	  "fp16 tensor cores, 128x128, 2x4 subgroups; BK 32 (64 for the weight "
	  "gradient)",
	  0, 1, 0, 0, 0 },
	{ "coop_4", 128, 128, 64, 1,
	  "fp16 tensor cores, 128x128, BK 32, 2x2 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_w", 128, 256, 64, 1,
	  "fp16 tensor cores, 128x256, BK 32, 2x4 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_t", 256, 128, 64, 1,
	  "fp16 tensor cores, 256x128, BK 32, 4x2 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_8", 128, 128, 64, 1,
	  "fp16 tensor cores, 128x128, BK 32, 2x4 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_k64", 128, 128, 64, 1,
	  "fp16 tensor cores, 128x128, BK 64, 2x2 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_k16", 128, 128, 64, 1,
	  "fp16 tensor cores, 128x128, BK 16, 2x2 subgroups", 0, 0, 0, 0, 0 },
	{ "coop_s", 64, 128, 64, 1,
	  "fp16 tensor cores, 64x128, BK 32, 2x2 subgroups", 0, 0, 0, 0, 0 },
	{ "coop32", 32, 128, 64, 1,
	  "fp16 tensor cores for widths up to 32: 32x128 (32x32 for the "
	  "weight gradient), 2x2 subgroups",
	  0, 0, 0, 32, 32 },
	{ "coop64", 64, 128, 64, 1,
	  "fp16 tensor cores for widths up to 64: 64x128 (64x64 for the "
	  "weight gradient), 2x2 subgroups",
	  0, 0, 0, 64, 64 },
	{ "coop_16", 128, 128, 64, 1,
	  "fp16 tensor cores, 16x16x16 (NV only), 128x128, BK 32; 2x4 "
	  "subgroups (2x2 for the weight gradient)",
	  1, 0, 0, 0, 0 },
	{ "coop_16w", 128, 256, 64, 1,
	  "fp16 tensor cores, 16x16x16 (NV only), 128x256, BK 32, 2x4 "
	  "subgroups",
	  1, 0, 0, 0, 0 },
	{ "cpu", 32, 64, 8, 0,
	  "fp32 for CPU devices: 32x4 outputs an invocation, no shared memory "
	  "(subgroups of 8 or more)",
	  0, 0, 0, 0, 0 },
	{ "cpu16", 16, 64, 8, 0,
	  "fp32 for CPU devices at widths up to 16: 16x4 outputs an "
	  "invocation (16x1 for the weight gradient)",
	  0, 0, 0, 16, 16 },
	{ "coop_emu", 128, 128, 64, 0,
	  "the coop tiling in fp32 without tensor cores (a test of its "
	  "indexing)",
	  0, 1, 0, 0, 0 },
	{ "coop32_emu", 32, 128, 64, 0,
	  "the coop32 tiling in fp32 without tensor cores (a test of its "
	  "indexing)",
	  0, 0, 0, 32, 32 },
	/* VK_NV_cooperative_matrix2 (shaders/gemm_cm2.comp, compiled only by
	 * glslang 15: shaders/variants_cm2.txt); devices with
	 * info.has_coopmat2 alone */
	{ "cm2", 128, 128, 64, 1,
	  "fp16 coopmat2, workgroup-scope 128x128, BK 32, tensor-layout loads",
	  0, 0, 1, 0, 0 },
	{ "cm2_w", 128, 256, 64, 1,
	  "fp16 coopmat2, workgroup-scope 128x256, BK 32, tensor-layout loads",
	  0, 0, 1, 0, 0 },
	{ "cm2_k64", 128, 128, 64, 1,
	  "fp16 coopmat2, workgroup-scope 128x128, BK 64, tensor-layout loads",
	  0, 0, 1, 0, 0 },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0 },
};

const struct gemm_variant *gemm_variant_find(const char *name)
{
	for (const struct gemm_variant *v = gemm_variants; name && v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}

void gemm_variant_tile(const struct gemm_variant *v, const char *form,
		       uint32_t *rows, uint32_t *cols)
{
	int nt = !strcmp(form, "nt") && v->nt_rows;
	*rows = nt ? v->nt_rows : v->rows;
	*cols = nt ? v->nt_cols : v->cols;
}

int gemm_variant_runs(const struct gemm_variant *v, const char *coopmat_api)
{
	if (!v->half)
		return 1;
	return !v->cm2 && coopmat_api &&
	       !(v->nv_only && strcmp(coopmat_api, "nv"));
}

int gemm_variant_runs_on(const struct gemm_variant *v,
			 const struct gpu_device_info *info)
{
	if (v->cm2)
		return info->has_coopmat2;
	return gemm_variant_runs(v, info->coopmat_api);
}

int gemm_variant_embedded(const struct gemm_variant *v)
{
	static const char *forms[] = { "nn", "tn", "nt" };
	char name[32];
	for (int i = 0; i < 3; i++) {
		gemm_shader_name(v, forms[i], name, sizeof(name));
		if (!gpu_shader_find(name))
			return 0;
	}
	return 1;
}

void gemm_shader_name(const struct gemm_variant *v, const char *form, char *out,
		      int outlen)
{
	/* the fp32 families predate the table: "small" has no suffix */
	if (!strcmp(v->name, "small"))
		snprintf(out, (size_t)outlen, "gemm_%s", form);
	else
		snprintf(out, (size_t)outlen, "gemm_%s_%s", form, v->name);
}
