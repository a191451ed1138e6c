/*
 * variants.c - the engine's choices (see variants.h), made in one place.
 *
 * CPU devices get the passes written for them (subgroup sums, the
 * depthwise conv by blocks of rows); VKINR_PASSES=cpu|gpu overrides, so
 * that the tests check both families on any device. GPUs read S in the
 * depthwise passes and take the sines there, which saves the activate
 * pass's read and write of every activation (VKINR_FUSED_SINE=0 keeps
 * that pass), and do those passes by strips, the backward's two in one
 * (VKINR_DW_STRIP=0: per pixel, the fp32 forward by blocks where the
 * dilation fits; VKINR_DW_TILED=0: not, =1: the fp16 path's too).
 * docs/BENCHMARKS.md has the measurements behind each default.
 */
#include "nn/variants.h"

#include "nn/gemm.h"

/* The GEMM family: fp16 tensor cores for the fp16 path (row blocks of 32
 * or 64 for widths up to that: VKINR_GEMM=coop keeps 128, to compare);
 * for fp32, "cpu" on CPU devices, 64x64 tiles on small widths, 128x128
 * on GPUs. VKINR_GEMM=NAME (see gemm.c) overrides with a family of the
 * same operand precision, for benchmarks and for the tests of the
 * tensor-core tiling ("coop_emu"), where this binary embeds it (vkinrd
 * the engine's families alone, unless built with BENCH_SHADERS=1). */
static const struct gemm_variant *
choose_gemm(const struct gpu_device_info *info, const struct gpu_switches *sw,
	    int half, int nf)
{
	const struct gemm_variant *v =
	    gemm_variant_find(sw->gemm[0] ? sw->gemm : NULL);
	if (v && v->half == half && gemm_variant_runs(v, info->coopmat_api) &&
	    gemm_variant_embedded(v))
		return v;
	/* small widths: row blocks of the width (a pack of small fits
	 * multiplies no rows of zeros) */
	if (half && nf <= 32)
		return gemm_variant_find("coop32");
	if (half && nf <= 64)
		return gemm_variant_find("coop64");
	if (half)
		return gemm_variant_find("coop");
	/* CPU devices: register blocks, no shared memory (gemm_cpu.comp),
	 * of 16 rows for widths up to 16 (the same sums, in the same order:
	 * only the rows and columns computed past the matrix go) */
	if (info->is_cpu && info->subgroup_size >= 8)
		return gemm_variant_find(nf <= 16 ? "cpu16" : "cpu");
	if (info->is_cpu || nf < 128)
		return gemm_variant_find("small");
	return gemm_variant_find("large");
}

/* The depthwise family of a device with the CPU passes (cpu) or the
 * fused sines (fused), on the fp16 path with S in fp16 (half_s) or not. */
static enum nn_dw_family choose_dw(const struct gpu_switches *sw, int cpu,
				   int fused, int half, int half_s)
{
	if (cpu && !half)
		return sw->dw_rows ? NN_DW_ROWS : NN_DW_ROW_BLOCKS;
	if (fused && !sw->dw_strip_off)
		return NN_DW_STRIPS;
	/* the fp16 path's forward, which also writes S's fp16 copy, was
	 * faster per pixel than by blocks */
	if (fused && sw->dw_tiled != 0 && (!half_s || sw->dw_tiled == 1))
		return NN_DW_TILED;
	return NN_DW_PIXELS;
}

struct nn_variants nn_variants_resolve(const struct gpu_device_info *info,
				       const struct gpu_switches *sw,
				       enum nn_precision p, int nf)
{
	struct nn_variants v = { 0 };
	v.cpu = sw->passes >= 0 ? sw->passes : info->is_cpu;
	v.fused = !v.cpu && !sw->fused_sine_off;
	v.half = p == NN_PRECISION_FP16;
	/* VKINR_HALF_STORAGE=0 keeps S in fp32 on the fp16 path */
	v.half_s = v.half && v.fused && !sw->half_storage_off;
	v.gemm = choose_gemm(info, sw, v.half, nf);
	v.dw = choose_dw(sw, v.cpu, v.fused, v.half, v.half_s);
	v.pairs = v.dw == NN_DW_STRIPS && !sw->dw_pair_off;
	/* lavapipe's subgroups: the matrices in registers, no barrier */
	v.ns_lanes = info->is_cpu && info->subgroup_size == 8 && nf <= 16;
	return v;
}

struct nn_variants nn_variants_of(const struct gpu_context *gpu,
				  enum nn_precision p, int nf)
{
	return nn_variants_resolve(gpu_info(gpu), gpu_switches(gpu), p, nf);
}
