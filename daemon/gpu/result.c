/*
 * result.c - a VkResult by name, and mapped to the project's error codes
 * (device loss remembered in the context, so that later calls fail fast).
 */
#include "gpu/internal.h"

#include <stdio.h>

#include "proto/errors.h"

/* one case a line, as written */
/* clang-format off */
const char *gpu_result_name(VkResult r)
{
	switch (r) {
#define R(x) case x: return #x;
	R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
	R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
	R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST)
	R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT)
	R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT)
	R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_TOO_MANY_OBJECTS)
	R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL)
	R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_UNKNOWN)
#undef R
	default:
		return "VK_ERROR_(other)";
	}
}
/* clang-format on */

int gpu_error(struct gpu_context *ctx, VkResult r, const char *call,
	      const char *file, int line)
{
	fprintf(stderr, "vkinrd: %s:%d: %s failed: %s\n", file, line, call,
		gpu_result_name(r));
	switch (r) {
	case VK_ERROR_DEVICE_LOST:
		if (ctx)
			ctx->lost = 1;
		return ERR_DEVICE_LOST;
	case VK_ERROR_OUT_OF_DEVICE_MEMORY:
	case VK_ERROR_OUT_OF_HOST_MEMORY:
	case VK_ERROR_OUT_OF_POOL_MEMORY:
		return ERR_DEVICE_OOM;
	default:
		return ERR_VULKAN;
	}
}
