/*
 * fit_info.c - what a fit reports of itself (nn_fit_get_info): its tiles
 * and their halo, its device memory, its FLOPs an epoch, each pass's time
 * and the fewest bytes each pass that is not a GEMM must move, to set
 * against that time (--timings).
 */
#include <string.h>

#include <stdlib.h>

#include "gpu/gpu.h"
#include "nn/fit_internal.h"

/* The fewest bytes each pass that is not a GEMM must move through device
 * memory in an epoch (every operand read once, every result written once;
 * e = nf x the pixels of all tiles), to set against its time. */
static void pass_bytes(const struct nn_fit *fit, double *bytes)
{
	double e = (double)fit->cfg.nf * (double)fit->plan.computed_pixels;
	double nb = fit->cfg.nblocks,
	       copy = fit->precision == NN_PRECISION_FP16;
	double z = copy ? 2 : 4; /* Z as the GEMM reads it */
	int fused = fit->vars.fused, rows = fit->vars.dw == NN_DW_ROWS ||
					    fit->vars.dw == NN_DW_ROW_BLOCKS;
	memset(bytes, 0, NN_PASS_COUNT * sizeof(*bytes));
	bytes[NN_PASS_FIRST] = 4 * e;
	if (!fused) /* read S, write H: forward, and backward but the row
		     * passes' last block */
		bytes[NN_PASS_ACTIVATE] = 8 * e * (2 * nb - (rows ? 1 : 0));
	bytes[NN_PASS_DWCONV] = (4 + z) * e * (2 * nb - 1); /* + recomputes */
	bytes[NN_PASS_HEAD] = (8 + 2 * copy) * e; /* S_B in, dS out (+fp16) */
	/* the taps' sums read dZ and H (or S); dS: S, dZ in, dS out (+fp16) */
	bytes[NN_PASS_DWCONV_BACK] =
	    (rows ? 16 : 20) * e * nb + 2 * copy * e * nb;
	if (fit->vars.half_s) { /* forward: + the copy; backward: S in fp16 */
		bytes[NN_PASS_DWCONV] =
		    (4 + 2 + z) * e * nb + (2 + z) * e * (nb - 1);
		bytes[NN_PASS_DWCONV_BACK] -= 2 * 2 * e * nb;
	}
	bytes[NN_PASS_REDUCE] = 4 * e * (nb + 2); /* biases, out_w, first */
	bytes[NN_PASS_OPTIMIZER] = 7.0 * 4 * (double)fit->layout.total;
}

void nn_fit_get_info(const struct nn_fit *fit, struct nn_fit_info *info)
{
	memset(info, 0, sizeof(*info));
	info->tile_w = fit->plan.core_w;
	info->tile_h = fit->plan.core_h;
	info->tiles_x = fit->plan.tiles_x;
	info->tiles_y = fit->plan.tiles_y;
	info->halo_overhead = (double)fit->plan.computed_pixels /
				  ((double)fit->width * fit->height) -
			      1;
	info->device_bytes = gpu_arena_bytes(fit->arena);
	memcpy(info->pass_ms, fit->pass_ms, sizeof(info->pass_ms));
	double nf = fit->cfg.nf;
	info->gflop_per_epoch = 6.0 * fit->cfg.nblocks * nf * nf *
				(double)fit->plan.computed_pixels * 1e-9;
	info->precision = nn_precision_name(fit->precision);
	info->buffers_ms = fit->buffers_ms;
	info->programs_ms = fit->programs_ms;
	info->switch_ms = fit->switch_ms;
	pass_bytes(fit, info->pass_bytes);
}

double nn_epoch_gflop(int nblocks, int nf, int width, int height)
{
	return 6.0 * nblocks * (double)nf * nf * (double)width * height * 1e-9;
}

double nn_cpu_gflops(int *cores)
{
	int n = gpu_cpu_cores();
	if (cores)
		*cores = n;
	return NN_CPU_GFLOPS_PER_CORE * n;
}
