/*
 * spirv_khr.h - SPIR-V for VK_NV_cooperative_matrix rewritten for
 * VK_KHR_cooperative_matrix (see spirv_khr.c for the mapping).
 */
#ifndef VKINR_GPU_SPIRV_KHR_H
#define VKINR_GPU_SPIRV_KHR_H

#include <stddef.h>
#include <stdint.h>

/* Translates nwords words of SPIR-V; *out is malloc'ed (the caller frees
 * it). Returns 0, ERR_INVALID for a module it cannot translate (no
 * cooperative matrices, A and B of one type, a run-time layout flag) or
 * ERR_NOMEM. */
int spirv_nv_to_khr(const uint32_t *in, size_t nwords, uint32_t **out,
		    size_t *out_words);

/* Whether a module declares the CooperativeMatrixNV capability. */
int spirv_uses_coopmat_nv(const uint32_t *words, size_t nwords);

#endif
