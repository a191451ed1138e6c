/*
 * switches.c - the benchmark switches (VKINR_PASSES, VKINR_GEMM,
 * VKINR_DW_*...), read from the environment once, when a device opens,
 * into its context (as ggml-vulkan reads its own into its device). gpu/
 * only carries them: daemon/nn/variants.c turns them, with the device's
 * info and the precision, into the engine's choices, and nothing in
 * daemon/nn/ reads the environment. Also the CPU device's core count,
 * which lavapipe takes from LP_NUM_THREADS.
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the environment variable name is set to value. */
static int env_is(const char *name, const char *value)
{
	const char *v = getenv(name);
	return v && !strcmp(v, value);
}

void gpu_switches_read(struct gpu_switches *out)
{
	memset(out, 0, sizeof(*out));
	out->passes = env_is("VKINR_PASSES", "cpu")   ? 1
		      : env_is("VKINR_PASSES", "gpu") ? 0
						      : -1;
	out->fused_sine_off = env_is("VKINR_FUSED_SINE", "0");
	out->dw_strip_off = env_is("VKINR_DW_STRIP", "0");
	out->dw_pair_off = env_is("VKINR_DW_PAIR", "0");
	out->dw_rows = env_is("VKINR_DW_ROWS", "1");
	out->dw_tiled = env_is("VKINR_DW_TILED", "0")   ? 0
			: env_is("VKINR_DW_TILED", "1") ? 1
							: -1;
	out->half_storage_off = env_is("VKINR_HALF_STORAGE", "0");
	out->pack_lanes_off = env_is("VKINR_PACK_LANES", "0");
	out->dense_visible_off = env_is("VKINR_DENSE_VISIBLE", "0");
	const char *gemm = getenv("VKINR_GEMM");
	/* a name too long for the field names no family */
	if (gemm && strlen(gemm) < sizeof(out->gemm))
		memcpy(out->gemm, gemm, strlen(gemm) + 1);
	else if (gemm)
		memcpy(out->gemm, "?", 2);
	const char *every = getenv("VKINR_AVERAGE_EVERY");
	out->average_every = every && atoi(every) > 0 ? atoi(every) : 0;
	const char *finish = getenv("VKINR_FP32_FINISH");
	out->has_fp32_finish = finish && atof(finish) >= 0 && atof(finish) <= 1;
	out->fp32_finish = out->has_fp32_finish ? atof(finish) : 0;
}

const struct gpu_switches *gpu_switches(const struct gpu_context *ctx)
{
	return &ctx->switches;
}

void gpu_switches_set(struct gpu_context *ctx, const struct gpu_switches *sw)
{
	ctx->switches = *sw;
}

int gpu_cpu_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	const char *threads = getenv("LP_NUM_THREADS");
	if (threads && atoi(threads) > 0)
		n = atoi(threads);
	return n < 1 ? 1 : (int)n;
}
