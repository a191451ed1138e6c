/*
 * coopmat.h - the structures of VK_KHR_cooperative_matrix and
 * VK_NV_cooperative_matrix2 that Debian 12's Vulkan headers predate, for
 * device_list.c (what a device offers) and device.c (enabling them).
 * Internal to daemon/gpu.
 */
#ifndef VKINR_GPU_COOPMAT_H
#define VKINR_GPU_COOPMAT_H

#include <vulkan/vulkan.h>

/* The KHR extension's structures, which Debian 12's Vulkan headers
 * predate (values from the Vulkan registry). */
#define COOPMAT_KHR_EXTENSION "VK_KHR_cooperative_matrix"
#define STYPE_COOPMAT_FEATURES_KHR ((VkStructureType)1000506000)
#define STYPE_COOPMAT_PROPERTIES_KHR ((VkStructureType)1000506001)
#define COMPONENT_FLOAT16_KHR 0
#define COMPONENT_FLOAT32_KHR 1
#define SCOPE_SUBGROUP_KHR 3

struct coopmat_features_khr {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrix;
	VkBool32 cooperativeMatrixRobustBufferAccess;
};

struct coopmat_properties_khr {
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	uint32_t AType, BType, CType, ResultType;
	VkBool32 saturatingAccumulation;
	uint32_t scope;
};

typedef VkResult (*coopmat_properties_khr_fn)(VkPhysicalDevice, uint32_t *,
					      struct coopmat_properties_khr *);

/* VK_NV_cooperative_matrix2's structures, which Debian 12's Vulkan headers
 * predate (values from the Vulkan registry). Its shaders are
 * SPV_KHR_cooperative_matrix ones, so the KHR extension comes with it. */
#define COOPMAT2_NV_EXTENSION "VK_NV_cooperative_matrix2"
#define STYPE_COOPMAT2_FEATURES_NV ((VkStructureType)1000593000)
#define STYPE_COOPMAT_FLEXIBLE_PROPERTIES_NV ((VkStructureType)1000593001)
#define STYPE_COOPMAT2_PROPERTIES_NV ((VkStructureType)1000593002)
#define SCOPE_WORKGROUP_KHR 2
/* gemm_cm2.comp: its workgroup, the largest side of its matrices (BN of
 * the 128x256 family) and the tile sides the granularities must divide */
#define COOPMAT2_INVOCATIONS 256
#define COOPMAT2_MAX_SIDE 256
#define COOPMAT2_TILE_MN 128
#define COOPMAT2_TILE_K 32

struct coopmat2_features_nv {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrixWorkgroupScope;
	VkBool32 cooperativeMatrixFlexibleDimensions;
	VkBool32 cooperativeMatrixReductions;
	VkBool32 cooperativeMatrixConversions;
	VkBool32 cooperativeMatrixPerElementOperations;
	VkBool32 cooperativeMatrixTensorAddressing;
	VkBool32 cooperativeMatrixBlockLoads;
};

struct coopmat2_properties_nv {
	VkStructureType sType;
	void *pNext;
	uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
	uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
	uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
};

struct coopmat_flexible_properties_nv {
	VkStructureType sType;
	void *pNext;
	uint32_t MGranularity, NGranularity, KGranularity;
	uint32_t AType, BType, CType, ResultType;
	VkBool32 saturatingAccumulation;
	uint32_t scope;
	uint32_t workgroupInvocations;
};

typedef VkResult (*coopmat_flexible_properties_fn)(
    VkPhysicalDevice, uint32_t *, struct coopmat_flexible_properties_nv *);

#endif
