/*
 * support_gpu.c - helpers for the GPU tests (see support_gpu.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "unit/support_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"

struct gpu_context *test_gpu;
struct gpu_arena *test_arena;
static char no_gpu_reason[512];

int test_gpu_setup(void **state)
{
	if (gpu_create(&test_gpu, getenv("VKINR_TEST_DEVICE"), no_gpu_reason,
		       sizeof(no_gpu_reason)) == 0)
		gpu_arena_create(test_gpu, &test_arena);
	return 0;
}

int test_gpu_teardown(void **state)
{
	gpu_arena_destroy(test_arena);
	gpu_destroy(test_gpu);
	test_arena = NULL;
	test_gpu = NULL;
	return 0;
}

void test_switch(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	if (test_gpu) {
		struct gpu_switches sw;
		gpu_switches_read(&sw);
		gpu_switches_set(test_gpu, &sw);
	}
}

void test_need_gpu(void)
{
	if (!test_gpu) {
		print_message("skipped: no Vulkan device (%s)\n",
			      no_gpu_reason);
		skip();
	}
}

struct gpu_buffer test_buffer(size_t floats)
{
	struct gpu_buffer b;
	assert_int_equal(gpu_buffer_alloc(test_arena, floats * 4 + 16, 0, &b),
			 0);
	assert_int_equal(gpu_fill_zero(test_gpu, &b), 0);
	return b;
}

void test_upload(const struct gpu_buffer *b, const float *data, size_t n)
{
	assert_int_equal(gpu_upload(test_gpu, b, 0, data, n * 4), 0);
}

void test_upload_double(const struct gpu_buffer *b, const double *data,
			size_t n)
{
	float *f = malloc(n * 4 + 4);
	for (size_t i = 0; i < n; i++)
		f[i] = (float)data[i];
	test_upload(b, f, n);
	free(f);
}

void test_download(const struct gpu_buffer *b, float *data, size_t n)
{
	assert_int_equal(gpu_download(test_gpu, b, 0, data, n * 4), 0);
}

double *test_to_double(const float *f, size_t n)
{
	double *d = malloc(n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		d[i] = f[i];
	return d;
}

void test_dispatch_spec(const char *variant, const uint32_t *spec, int nspec,
			const struct gpu_buffer *const *bufs, int nbufs,
			const void *push, uint32_t push_bytes, uint32_t gx,
			uint32_t gy, uint32_t gz)
{
	struct gpu_pipeline *pipe;
	struct gpu_program *prog;
	assert_int_equal(gpu_pipeline_get(test_gpu, variant, nbufs, push_bytes,
					  spec, nspec, &pipe),
			 0);
	assert_int_equal(gpu_program_create(test_gpu, 0, &prog), 0);
	assert_int_equal(gpu_program_dispatch(prog, pipe, bufs, nbufs, push,
					      push_bytes, gx, gy, gz),
			 0);
	assert_int_equal(gpu_program_end(prog), 0);
	assert_int_equal(gpu_program_run(prog), 0);
	gpu_program_destroy(prog);
}

void test_dispatch(const char *variant, int nf, float w0,
		   const struct gpu_buffer *const *bufs, int nbufs,
		   const void *push, uint32_t push_bytes, uint32_t gx,
		   uint32_t gy, uint32_t gz)
{
	uint32_t spec[2] = { (uint32_t)nf, 0 };
	memcpy(&spec[1], &w0, 4);
	int nspec = strncmp(variant, "gemm", 4) ? 2 : 0;
	test_dispatch_spec(variant, spec, nspec, bufs, nbufs, push, push_bytes,
			   gx, gy, gz);
}

void test_close(const char *what, const float *got, const double *want,
		size_t n, double atol, double rtol)
{
	size_t worst = 0;
	double worst_excess = -1;
	for (size_t i = 0; i < n; i++) {
		double err = fabs((double)got[i] - want[i]);
		double excess = err - (atol + rtol * fabs(want[i]));
		if (!isfinite(got[i]))
			excess = INFINITY;
		if (excess > worst_excess) {
			worst_excess = excess;
			worst = i;
		}
	}
	if (worst_excess > 0) {
		size_t bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += !(fabs((double)got[i] - want[i]) <=
				 atol + rtol * fabs(want[i]));
		print_error(
		    "%s: %zu of %zu elements off; the worst, element %zu, "
		    "is %.9g, expected %.9g\n",
		    what, bad, n, worst, got[worst], want[worst]);
		fail();
	}
}

void test_random(float *out, size_t n, uint64_t seed, float lo, float hi)
{
	struct nn_rng r;
	nn_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		out[i] = nn_rng_uniform(&r, lo, hi);
}

void test_random_double(double *out, size_t n, uint64_t seed, double lo,
			double hi)
{
	struct nn_rng r;
	nn_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		out[i] = nn_rng_uniform(&r, (float)lo, (float)hi);
}

struct image *test_image(int w, int h, uint64_t seed)
{
	struct image *img = image_create(w, h);
	assert_non_null(img);
	test_random(img->rgb, (size_t)w * h * 3, seed, 0.0f, 1.0f);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			float *p = img->rgb + 3 * ((size_t)y * w + x);
			/* smooth structure plus a little noise */
			p[0] = 0.5f + 0.4f * sinf(0.3f * x) * cosf(0.2f * y) +
			       0.05f * (p[0] - 0.5f);
			p[1] =
			    (float)x / w * 0.8f + 0.1f + 0.05f * (p[1] - 0.5f);
			p[2] = (float)((x * y) % 17) / 17.0f * 0.6f + 0.2f;
		}
	return img;
}
