/*
 * shaders.h - the SPIR-V that the Makefile compiled from shaders/ and
 * embedded in the binary, looked up by variant name: the engine's
 * (shaders/variants.txt), and in the tests, the tools and a bench build
 * of vkinrd (BENCH_SHADERS=1) those of the benchmarks and tests alone
 * (shaders/variants_bench.txt, the cm2 ones of variants_cm2.txt).
 */
#ifndef VKINR_GPU_SHADERS_H
#define VKINR_GPU_SHADERS_H

#include <stddef.h>
#include <stdint.h>

struct shader_blob {
	const char *name;
	const uint32_t *code;
	size_t size; /* bytes */
};

extern const struct shader_blob shader_table[];
/* The benchmarks' and tests' table; weak: NULL where it is not linked. */
extern const struct shader_blob shader_table_bench[] __attribute__((weak));

const struct shader_blob *gpu_shader_find(const char *name);

#endif
