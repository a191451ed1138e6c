/*
 * support_gpu.h - what the GPU tests share: opening the device (or
 * skipping when there is none), small float buffers in and out, running one
 * shader dispatch, and comparing arrays with a tolerance that reports the
 * worst element.
 */
#ifndef VKINR_TEST_SUPPORT_GPU_H
#define VKINR_TEST_SUPPORT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"
#include "formats/image_codec.h"

/* The shared context, NULL when no device could be opened (tests skip). */
extern struct gpu_context *test_gpu;
extern struct gpu_arena *test_arena;

int test_gpu_setup(void **state);
int test_gpu_teardown(void **state);
/* Sets (value NULL: unsets) an environment switch and has test_gpu read
 * the switches again, as a device does only when it opens. */
void test_switch(const char *name, const char *value);
/* cmocka skip() with the reason, when there is no device. */
void test_need_gpu(void);

struct gpu_buffer test_buffer(size_t floats);
void test_upload(const struct gpu_buffer *b, const float *data, size_t n);
void test_upload_double(const struct gpu_buffer *b, const double *data,
			size_t n);
void test_download(const struct gpu_buffer *b, float *data, size_t n);
/* A malloc'ed copy of n floats as doubles (for the references). */
double *test_to_double(const float *f, size_t n);

/* One dispatch of an embedded shader variant with spec {nf, w0}. */
void test_dispatch(const char *variant, int nf, float w0,
		   const struct gpu_buffer *const *bufs, int nbufs,
		   const void *push, uint32_t push_bytes, uint32_t gx,
		   uint32_t gy, uint32_t gz);

/* The same with explicit specialization constants (0..nspec-1). */
void test_dispatch_spec(const char *variant, const uint32_t *spec, int nspec,
			const struct gpu_buffer *const *bufs, int nbufs,
			const void *push, uint32_t push_bytes, uint32_t gx,
			uint32_t gy, uint32_t gz);

/* Fails the test when any |got - want| > atol + rtol * |want|. */
void test_close(const char *what, const float *got, const double *want,
		size_t n, double atol, double rtol);

/* Deterministic pseudo-random fill in [lo, hi). */
void test_random(float *out, size_t n, uint64_t seed, float lo, float hi);
void test_random_double(double *out, size_t n, uint64_t seed, double lo,
			double hi);

/* A synthetic RGB target. */
struct image *test_image(int w, int h, uint64_t seed);

#endif
