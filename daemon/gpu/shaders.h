/*
 * shaders.h - the SPIR-V that the Makefile compiled from shaders/ and
 * embedded in the binary, looked up by variant name (shaders/variants.txt).
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

const struct shader_blob *gpu_shader_find(const char *name);

#endif
