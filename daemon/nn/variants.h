/*
 * variants.h - the engine's choices as data: which pass families, GEMM
 * family and storage a recording of a fit takes, made by one function
 * from the device's info, the switches read when the device opened
 * (gpu_switches) and the precision. fit.c resolves them when a fit is
 * made; the recording (record.c) reads them and builds the pipelines of
 * the families they name, and no others.
 */
#ifndef VKINR_NN_VARIANTS_H
#define VKINR_NN_VARIANTS_H

#include "gpu/gpu.h"
#include "nn/fit.h"

struct gemm_variant;

/* How the depthwise convs of the blocks run. */
enum nn_dw_family {
	/* per pixel (dwconv*.comp, dwconv_back*.comp), the taps' sums
	 * apart (reduce_dw) */
	NN_DW_PIXELS,
	/* as NN_DW_PIXELS, but the forward by blocks through shared memory
	 * where the dilation fits (dwconv_tiled.comp): GPUs with the fused
	 * sines, VKINR_DW_STRIP=0 */
	NN_DW_TILED,
	/* by strips, the backward and its taps' sums in one pass
	 * (dwconv_strip.comp, dwconv_back_strip.comp): GPUs */
	NN_DW_STRIPS,
	/* CPU devices: by row segments (dwconv_rows.comp, VKINR_DW_ROWS=1),
	 * or by blocks of rows (dwconv_blocks_cpu.comp), the backward and
	 * its sums in one pass both ways */
	NN_DW_ROWS,
	NN_DW_ROW_BLOCKS,
};

struct nn_variants {
	int cpu;   /* the CPU passes: vec4 sines, subgroup sums */
	int fused; /* the depthwise passes read S and take the sines (GPUs) */
	enum nn_dw_family dw;
	int pairs;  /* strips: two columns an invocation where they align */
	int half;   /* the fp16 tensor-core path */
	int half_s; /* and its S_0..S_B-1 kept in fp16 */
	const struct gemm_variant *gemm; /* the GEMM family */
	int ns_lanes; /* Muon's Newton-Schulz by a subgroup of 8 a matrix
			 (ns_small_cpu.comp: CPU devices, widths to 16) */
};

/* Whether v's depthwise passes go by rows (CPU devices). */
static inline int nn_variants_rows(const struct nn_variants *v)
{
	return v->dw == NN_DW_ROWS || v->dw == NN_DW_ROW_BLOCKS;
}

/* The choices for a recording in precision p (FP32 or FP16, resolved) of
 * a fit of width nf on the device described by info with switches sw. */
struct nn_variants nn_variants_resolve(const struct gpu_device_info *info,
				       const struct gpu_switches *sw,
				       enum nn_precision p, int nf);
/* The same for a fit on gpu (its info and switches). */
struct nn_variants nn_variants_of(const struct gpu_context *gpu,
				  enum nn_precision p, int nf);

#endif
