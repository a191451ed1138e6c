/*
 * bench_gemm.c - every GEMM family of nn/gemm.h on each of an epoch's three
 * shapes, timed on the device and checked against a double-precision
 * reference, in one process (`make bench-gemm`, or build/tools/bench_gemm).
 *
 *   forward          S[w x n]  = P[w x w] Z[w x n] + p    (nn)
 *   data gradient    dZ[w x n] = P^T dS                   (tn)
 *   weight gradient  dP[w x w] = dS Z^T, K = n split      (nt)
 *
 * For each family, width and form it prints the median time of one GEMM
 * (device timestamps around REPS back-to-back dispatches, several runs,
 * after half a second of the same work so that the clocks are up),
 * TFLOP/s (2 w w n flops) and the largest error of sampled outputs relative
 * to the largest reference value. Operands are random, never zeros; fp16
 * families read fp16 copies (activation rows padded to 16) and are checked
 * against the reference fed the same rounded values. The weight gradient
 * is split over workgroups as the engine splits it (about 1024 workgroups)
 * and its slices are summed on the host for the check; its time excludes
 * the ordered reduce, which the fit's --timings shows.
 *
 *   bench_gemm [--device N|NAME] [--widths 64,128,256,512] [--pixels N]
 *              [--families coop,coop_w,...] [--reps N]
 *
 * The cm2 families (VK_NV_cooperative_matrix2) run where the build found
 * glslang 15 (`make gpu-tools`) and the device offers the extension.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/shaders.h"
#include "nn/gemm.h"
#include "nn/passes.h"

#define SAMPLES 256
#define RUNS 5

struct bench {
	struct gpu_context *gpu;
	struct gpu_arena *arena;
	int reps;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float random_unit(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

/* rows x cols random values in [-scale, scale], rounded to fp16 when the
 * family reads fp16 (the host keeps the rounded floats for the reference) */
static float *random_matrix(size_t rows, size_t cols, float scale, int half)
{
	float *m = malloc(rows * cols * sizeof(float));
	for (size_t i = 0; m && i < rows * cols; i++) {
		m[i] = random_unit() * scale;
		if (half)
			m[i] = (float)(_Float16)m[i];
	}
	return m;
}

/* Uploads rows x cols floats with rows of ld values (fp16 or fp32). */
static int upload(struct bench *b, const float *m, size_t rows, size_t cols,
		  size_t ld, int half, struct gpu_buffer *out)
{
	size_t esize = half ? 2 : 4, bytes = rows * ld * esize + 64;
	char *host = calloc(1, bytes);
	if (!host)
		return -1;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			if (half)
				((_Float16 *)host)[r * ld + c] =
				    (_Float16)m[r * cols + c];
			else
				((float *)host)[r * ld + c] = m[r * cols + c];
		}
	int rc = gpu_buffer_alloc(b->arena, bytes, 0, out);
	rc = rc ? rc : gpu_upload(b->gpu, out, 0, host, bytes);
	free(host);
	return rc;
}

static int compare_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? -1 : a > c;
}

/* Median milliseconds of one dispatch of pipe with push g over gx x gy x gz
 * workgroups. */
static double time_dispatch(struct bench *b, struct gpu_pipeline *pipe,
			    const struct gpu_buffer *const *bufs,
			    const struct gemm_push *g, uint32_t gx, uint32_t gy,
			    uint32_t gz)
{
	struct gpu_program *prog;
	if (gpu_program_create(b->gpu, 2, &prog))
		return -1;
	int t0 = gpu_program_timestamp(prog), rc = 0;
	for (int i = 0; i < b->reps && !rc; i++) {
		rc = gpu_program_dispatch(prog, pipe, bufs, 4, g, sizeof(*g),
					  gx, gy, gz);
		gpu_program_barrier(prog);
	}
	int t1 = gpu_program_timestamp(prog);
	rc = rc ? rc : gpu_program_end(prog);
	/* warm-up: the GPU raises its clocks only under a sustained load, so
	 * run for half a second (by the device's own clock) first */
	double warm = 0;
	for (int i = 0; i < 1000 && !rc && warm < 500; i++) {
		rc = gpu_program_run(prog);
		warm += gpu_program_elapsed_ms(prog, t0, t1);
	}
	double ms[RUNS];
	for (int i = 0; i < RUNS && !rc; i++) {
		rc = gpu_program_run(prog);
		ms[i] = gpu_program_elapsed_ms(prog, t0, t1) / b->reps;
	}
	gpu_program_destroy(prog);
	if (rc)
		return -1;
	qsort(ms, RUNS, sizeof(*ms), compare_double);
	return ms[RUNS / 2];
}

/* One form of one family at width w and n pixels; prints a table row. */
static int run_form(struct bench *b, const struct gemm_variant *v,
		    const char *form, int w, int n)
{
	int half = v->half;
	size_t ld = half ? (size_t)(n + 15) / 16 * 16 : (size_t)n;
	int nt = !strcmp(form, "nt"), tn = !strcmp(form, "tn");
	uint32_t M = (uint32_t)w, N = nt ? (uint32_t)w : (uint32_t)n;
	uint32_t K = nt ? (uint32_t)(half ? ld : (size_t)n) : (uint32_t)w;

	/* operands: P (w x w) and bias for nn/tn; dS, Z (w x n) */
	float *p = random_matrix((size_t)w, (size_t)w, 0.3f, half);
	float *bias = random_matrix(1, (size_t)w, 1.0f, 0);
	float *x = random_matrix((size_t)w, (size_t)n, 1.0f, half);
	float *y = nt ? random_matrix((size_t)w, (size_t)n, 1.0f, half) : NULL;
	struct gpu_buffer bp = { 0 }, bx = { 0 }, by = { 0 }, bbias = { 0 },
			  bc = { 0 };
	int rc = !p || !bias || !x || (nt && !y);
	rc = rc ? rc : upload(b, bias, 1, (size_t)w, (size_t)w, 0, &bbias);
	rc = rc ? rc : upload(b, x, (size_t)w, (size_t)n, ld, half, &bx);
	if (nt)
		rc =
		    rc ? rc : upload(b, y, (size_t)w, (size_t)n, ld, half, &by);
	else
		rc = rc ? rc
			: upload(b, p, (size_t)w, (size_t)w, (size_t)w, half,
				 &bp);

	/* the engine's split of the weight gradient: ~1024 workgroups */
	uint32_t splits = 1, k_chunk = K;
	if (nt) {
		uint32_t tiles = ((M + v->rows - 1) / v->rows) *
				 ((N + v->cols - 1) / v->cols);
		splits = (1024 + tiles - 1) / tiles;
		uint32_t most = (K + 255) / 256;
		splits = splits > most ? most : splits;
		k_chunk = (K + splits - 1) / splits;
		k_chunk = (k_chunk + v->k_step - 1) / v->k_step * v->k_step;
		splits = (K + k_chunk - 1) / k_chunk;
	}
	size_t out = (size_t)splits * M * N;
	rc = rc ? rc : gpu_buffer_alloc(b->arena, out * 4 + 64, 0, &bc);
	char name[48];
	gemm_shader_name(v, form, name, sizeof(name));
	struct gpu_pipeline *pipe = NULL;
	rc = rc ? rc
		: gpu_pipeline_get(b->gpu, name, 4, sizeof(struct gemm_push),
				   (uint32_t[]){ (uint32_t)w, 0 }, 2, &pipe);
	struct gemm_push g = { .M = M,
			       .N = N,
			       .K = K,
			       .k_chunk = k_chunk,
			       .a_scale = 1,
			       .b_scale = 1,
			       .out_scale = 1 };
	const struct gpu_buffer *bufs[4];
	if (nt) { /* A = dS [m][k], B = Z [j][k] */
		g.lda = g.ldb = (uint32_t)ld;
		g.ldc = M;
		bufs[0] = &by, bufs[1] = &bx;
	} else { /* A = P, B = Z or dS [k][j] */
		g.lda = (uint32_t)w;
		g.ldb = (uint32_t)ld;
		g.ldc = (uint32_t)n;
		g.has_bias = !tn;
		bufs[0] = &bp, bufs[1] = &bx;
	}
	bufs[2] = &bc, bufs[3] = &bbias;
	uint32_t gx = (N + v->cols - 1) / v->cols,
		 gy = (M + v->rows - 1) / v->rows;
	double ms = rc ? -1 : time_dispatch(b, pipe, bufs, &g, gx, gy, splits);

	/* check sampled outputs against the reference */
	double worst = -1;
	float *c = ms > 0 ? malloc(out * 4) : NULL;
	if (c && !gpu_download(b->gpu, &bc, 0, c, out * 4)) {
		double err = 0, peak = 0;
		for (int s = 0; s < SAMPLES; s++) {
			uint32_t i =
			    (uint32_t)((random_unit() + 1) * 0.5 * (M - 1) +
				       0.5);
			uint32_t j =
			    (uint32_t)((random_unit() + 1) * 0.5 * (N - 1) +
				       0.5);
			double want = !nt && !tn ? bias[i] : 0, got = 0;
			for (uint32_t k = 0; k < (nt ? (uint32_t)n : K); k++) {
				if (nt)
					want += (double)y[(size_t)i * n + k] *
						x[(size_t)j * n + k];
				else if (tn)
					want += (double)p[(size_t)k * w + i] *
						x[(size_t)k * n + j];
				else
					want += (double)p[(size_t)i * w + k] *
						x[(size_t)k * n + j];
			}
			for (uint32_t z = 0; z < splits; z++)
				got += c[(size_t)z * M * N + (size_t)i * N + j];
			err = fmax(err, fabs(got - want));
			peak = fmax(peak, fabs(want));
		}
		worst = err / (peak > 0 ? peak : 1);
	}
	free(c);
	double tflops =
	    ms > 0 ? 2.0 * w * w * (double)n / (ms * 1e-3) / 1e12 : 0;
	printf("| %-9s | %4s | %4d | %8d | %6u | %9.4f | %7.1f | %9.2e |\n",
	       v->name, form, w, n, splits, ms, tflops, worst);
	fflush(stdout);
	free(p), free(bias), free(x), free(y);
	gpu_arena_destroy(b->arena);
	b->arena = NULL;
	if (gpu_arena_create(b->gpu, &b->arena))
		return -1;
	return ms < 0 || worst < 0 || worst > (half ? 1e-2 : 1e-4);
}

static int parse_list(const char *text, int *out, int most)
{
	int n = 0;
	for (const char *p = text; *p && n < most; n++) {
		out[n] = atoi(p);
		p = strchr(p, ',');
		if (!p)
			return n + 1;
		p++;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *device = NULL, *families = NULL;
	int widths[8] = { 64, 128, 256, 512 }, nwidths = 4, pixels = 262144;
	struct bench b = { .reps = 10 };
	static const struct option opts[] = {
		{ "device", required_argument, 0, 'd' },
		{ "widths", required_argument, 0, 'w' },
		{ "pixels", required_argument, 0, 'n' },
		{ "families", required_argument, 0, 'f' },
		{ "reps", required_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		if (c == 'd')
			device = optarg;
		else if (c == 'w')
			nwidths = parse_list(optarg, widths, 8);
		else if (c == 'n')
			pixels = atoi(optarg);
		else if (c == 'f')
			families = optarg;
		else if (c == 'r')
			b.reps = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_gemm [--device N|NAME] "
					"[--widths 64,128,...] [--pixels N] "
					"[--families a,b,...] [--reps N]\n");
			return 2;
		}
	}
	char err[512] = "";
	if (gpu_create(&b.gpu, device, err, sizeof(err)) ||
	    gpu_arena_create(b.gpu, &b.arena)) {
		fprintf(stderr, "bench_gemm: %s\n", err);
		return 1;
	}
	const struct gpu_device_info *info = gpu_info(b.gpu);
	printf(
	    "# %s; tensor cores: %s; VK_NV_cooperative_matrix2: %s; %u bytes "
	    "of shared memory a workgroup; %d pixels, %d dispatches a timing, "
	    "median of %d\n",
	    info->name, info->has_tensor_cores ? info->coopmat_api : "none",
	    info->has_coopmat2 ? "yes"
	    : gemm_variant_find("cm2") && gpu_shader_find("gemm_nn_cm2")
		? "no"
		: "not built (make gpu-tools)",
	    info->max_shared_bytes, pixels, b.reps, RUNS);
	printf("| family    | form | width | pixels | splits | ms | TFLOP/s | "
	       "max error |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	int failed = 0;
	for (const struct gemm_variant *v = gemm_variants; v->name; v++) {
		if (!gemm_variant_runs_on(v, info))
			continue;
		if (families) {
			char want[64];
			snprintf(want, sizeof(want), ",%s,", v->name);
			char have[256];
			snprintf(have, sizeof(have), ",%s,", families);
			if (!strstr(have, want))
				continue;
		}
		for (int i = 0; i < nwidths; i++)
			for (int f = 0; f < 3; f++)
				failed += run_form(
				    &b, v,
				    (const char *[]){ "nn", "tn", "nt" }[f],
				    widths[i], pixels);
	}
	gpu_arena_destroy(b.arena);
	gpu_destroy(b.gpu);
	if (failed)
		printf("# %d results off or failed\n", failed);
	return failed != 0;
}
