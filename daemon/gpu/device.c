/*
 * device.c - Vulkan instance, the list of devices, the order in which they
 * are preferred, and opening one as a gpu_context.
 *
 * A context is an instance, one device with one compute queue, a command
 * pool and a fence: everything a worker thread needs. Devices are
 * preferred discrete, then integrated, then virtual, then CPU (lavapipe),
 * so `vkinrd` picks the real GPU when there is one and still runs where
 * there is none. Failures come back as the project's error codes, with
 * device loss remembered so that every later call fails fast.
 */
#include "gpu/internal.h"
#include "gpu/shaders.h"

#include <ctype.h>
#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>
#endif
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/* The instance whose devices describe() is looking at (for a function
 * pointer); set by enumerate() on the calling thread. */
static _Thread_local VkInstance instance_of_describe;

static int type_rank(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return 0;
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return 1;
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return 2;
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return 3;
	default:
		return 4;
	}
}

static const char *type_name(VkPhysicalDeviceType t)
{
	static const char *names[] = { "discrete", "integrated", "virtual",
				       "cpu", "other" };
	return names[type_rank(t)];
}

#if defined(__SANITIZE_ADDRESS__)
static int keep_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size, (void)data;
	if (info->dlpi_name && info->dlpi_name[0])
		dlopen(info->dlpi_name,
		       RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	return 0;
}
#endif

/* Sanitizer builds keep every library the driver loaded in memory until
 * exit. Unloaded with its instance, a library (lavapipe's LLVM pulls in
 * libxml2 and ICU) takes along the globals that held its buffers, which
 * the leak check then reports, from a module it can no longer name: no
 * suppression could match them. */
static void keep_driver_loaded(void)
{
#if defined(__SANITIZE_ADDRESS__)
	dl_iterate_phdr(keep_loaded, NULL);
#endif
}

static int create_instance(VkInstance *out, char *err, size_t errlen)
{
	/* the VK_NV_cooperative_matrix2 shaders are SPIR-V 1.6 (glslang
	 * requires it): Vulkan 1.3, asked for only when they are embedded */
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "vkinrd",
		.apiVersion = shader_find("gemm_nn_cm2") ? VK_API_VERSION_1_3
							 : VK_API_VERSION_1_2,
	};
	const char *layers[] = { "VK_LAYER_KHRONOS_validation" };
	const char *want = getenv("VKINR_VALIDATION");
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
		.enabledLayerCount = want && *want == '1' ? 1 : 0,
		.ppEnabledLayerNames = layers,
	};
	VkResult r = vkCreateInstance(&info, NULL, out);
	if (r != VK_SUCCESS) {
		snprintf(
		    err, errlen,
		    "cannot start Vulkan (%s): is a Vulkan driver installed? "
		    "On a machine without a GPU install mesa-vulkan-drivers "
		    "(lavapipe)",
		    gpu_result_name(r));
		return r == VK_ERROR_INCOMPATIBLE_DRIVER ? ERR_NO_DEVICE
							 : ERR_VULKAN;
	}
	keep_driver_loaded();
	return 0;
}

static int has_extension(VkPhysicalDevice pd, const char *name)
{
	uint32_t n = 0;
	int found = 0;
	vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
	VkExtensionProperties *ext = calloc(n ? n : 1, sizeof(*ext));
	if (!ext)
		return 0;
	vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext);
	for (uint32_t i = 0; i < n && !found; i++)
		found = !strcmp(ext[i].extensionName, name);
	free(ext);
	return found;
}

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

/* Whether the device has 16-bit storage buffers and the feature struct
 * `feat` (whose third field is the cooperativeMatrix flag of either
 * extension) says yes. */
static int has_coopmat_features(VkPhysicalDevice pd, void *feat,
				const VkBool32 *flag)
{
	VkPhysicalDevice16BitStorageFeatures storage16 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
		.pNext = feat,
	};
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &storage16,
	};
	vkGetPhysicalDeviceFeatures2(pd, &f2);
	return *flag && storage16.storageBuffer16BitAccess;
}

/* Whether VK_NV_cooperative_matrix offers what gemm_coop.comp uses. */
static int has_nv_coopmat_shape(VkPhysicalDevice pd)
{
	if (!has_extension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME))
		return 0;
	VkPhysicalDeviceCooperativeMatrixFeaturesNV feat = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
	};
	if (!has_coopmat_features(pd, &feat, &feat.cooperativeMatrix))
		return 0;
	PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
	    (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
		vkGetInstanceProcAddr(
		    instance_of_describe,
		    "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
	if (!get)
		return 0;
	uint32_t n = 0;
	get(pd, &n, NULL);
	VkCooperativeMatrixPropertiesNV *props =
	    calloc(n ? n : 1, sizeof(*props));
	if (!props)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		props[i].sType =
		    VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
	get(pd, &n, props);
	int found = 0;
	for (uint32_t i = 0; i < n && !found; i++) {
		const VkCooperativeMatrixPropertiesNV *p = &props[i];
		found = p->MSize == 16 && p->NSize == 8 && p->KSize == 16 &&
			p->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
			p->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
			p->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
			p->DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
			p->scope == VK_SCOPE_SUBGROUP_NV;
	}
	free(props);
	return found;
}

/* The same through VK_KHR_cooperative_matrix. */
static int has_khr_coopmat_shape(VkPhysicalDevice pd)
{
	if (!has_extension(pd, COOPMAT_KHR_EXTENSION))
		return 0;
	struct coopmat_features_khr feat = { .sType =
						 STYPE_COOPMAT_FEATURES_KHR };
	if (!has_coopmat_features(pd, &feat, &feat.cooperativeMatrix))
		return 0;
	coopmat_properties_khr_fn get =
	    (coopmat_properties_khr_fn)vkGetInstanceProcAddr(
		instance_of_describe,
		"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
	if (!get)
		return 0;
	uint32_t n = 0;
	get(pd, &n, NULL);
	struct coopmat_properties_khr *props =
	    calloc(n ? n : 1, sizeof(*props));
	if (!props)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		props[i].sType = STYPE_COOPMAT_PROPERTIES_KHR;
	get(pd, &n, props);
	int found = 0;
	for (uint32_t i = 0; i < n && !found; i++) {
		const struct coopmat_properties_khr *p = &props[i];
		found = p->MSize == 16 && p->NSize == 8 && p->KSize == 16 &&
			p->AType == COMPONENT_FLOAT16_KHR &&
			p->BType == COMPONENT_FLOAT16_KHR &&
			p->CType == COMPONENT_FLOAT32_KHR &&
			p->ResultType == COMPONENT_FLOAT32_KHR &&
			p->scope == SCOPE_SUBGROUP_KHR;
	}
	free(props);
	return found;
}

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

/* Whether VK_NV_cooperative_matrix2 offers what gemm_cm2.comp uses (see
 * gpu.h), through VK_KHR_cooperative_matrix's matrix types. */
static int has_coopmat2_shape(VkPhysicalDevice pd)
{
	if (!has_extension(pd, COOPMAT2_NV_EXTENSION) ||
	    !has_extension(pd, COOPMAT_KHR_EXTENSION))
		return 0;
	struct coopmat2_features_nv feat2 = { .sType =
						  STYPE_COOPMAT2_FEATURES_NV };
	struct coopmat_features_khr feat = {
		.sType = STYPE_COOPMAT_FEATURES_KHR,
		.pNext = &feat2,
	};
	if (!has_coopmat_features(pd, &feat, &feat.cooperativeMatrix) ||
	    !feat2.cooperativeMatrixWorkgroupScope ||
	    !feat2.cooperativeMatrixFlexibleDimensions ||
	    !feat2.cooperativeMatrixPerElementOperations ||
	    !feat2.cooperativeMatrixTensorAddressing)
		return 0;
	struct coopmat2_properties_nv limits = {
		.sType = STYPE_COOPMAT2_PROPERTIES_NV
	};
	VkPhysicalDeviceProperties2 props2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &limits,
	};
	vkGetPhysicalDeviceProperties2(pd, &props2);
	if (limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize <
		COOPMAT2_INVOCATIONS ||
	    limits.cooperativeMatrixFlexibleDimensionsMaxDimension <
		COOPMAT2_MAX_SIDE)
		return 0;
	coopmat_flexible_properties_fn get =
	    (coopmat_flexible_properties_fn)vkGetInstanceProcAddr(
		instance_of_describe, "vkGetPhysicalDeviceCooperativeMatrixFlex"
				      "ibleDimensionsPropertiesNV");
	if (!get)
		return 0;
	uint32_t n = 0;
	get(pd, &n, NULL);
	struct coopmat_flexible_properties_nv *props =
	    calloc(n ? n : 1, sizeof(*props));
	if (!props)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		props[i].sType = STYPE_COOPMAT_FLEXIBLE_PROPERTIES_NV;
	get(pd, &n, props);
	int found = 0;
	for (uint32_t i = 0; i < n && !found; i++) {
		const struct coopmat_flexible_properties_nv *p = &props[i];
		found = p->scope == SCOPE_WORKGROUP_KHR &&
			p->workgroupInvocations == COOPMAT2_INVOCATIONS &&
			p->AType == COMPONENT_FLOAT16_KHR &&
			p->BType == COMPONENT_FLOAT16_KHR &&
			p->CType == COMPONENT_FLOAT32_KHR &&
			p->ResultType == COMPONENT_FLOAT32_KHR &&
			!p->saturatingAccumulation && p->MGranularity &&
			COOPMAT2_TILE_MN % p->MGranularity == 0 &&
			p->NGranularity &&
			COOPMAT2_TILE_MN % p->NGranularity == 0 &&
			p->KGranularity &&
			COOPMAT2_TILE_K % p->KGranularity == 0;
	}
	free(props);
	return found;
}

/* Which cooperative-matrix extension the tensor-core path uses. */
static const char *choose_coopmat_api(const struct gpu_device_info *info)
{
	const char *want = getenv("VKINR_COOPMAT");
	int khr_first = want && !strcmp(want, "khr");
	if (!info->has_float16 || info->subgroup_size != 32 ||
	    info->api_version < VK_API_VERSION_1_2) /* the memory model */
		return NULL;
	if (info->has_coopmat_khr && (khr_first || !info->has_coopmat_nv))
		return "khr";
	return info->has_coopmat_nv ? "nv" : NULL;
}

static void describe(VkPhysicalDevice pd, int index,
		     struct gpu_device_info *info)
{
	VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
	};
	VkPhysicalDeviceIDProperties id = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
	};
	VkPhysicalDeviceSubgroupProperties subgroup = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
		.pNext = &id,
	};
	VkPhysicalDeviceMaintenance3Properties maint3 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
		.pNext = &subgroup,
	};
	VkPhysicalDeviceProperties2 props = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &maint3,
	};
	VkPhysicalDevice16BitStorageFeatures storage16 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
	};
	VkPhysicalDeviceBufferDeviceAddressFeatures addresses = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
	};
	VkPhysicalDeviceShaderFloat16Int8Features f16 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
		.pNext = &storage16,
	};
	storage16.pNext = &addresses;
	VkPhysicalDeviceFeatures2 features = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f16,
	};
	VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
	};
	VkPhysicalDeviceMemoryProperties2 mem = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
	};
	int has_budget = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	if (has_budget)
		mem.pNext = &budget;
	int has_pci = has_extension(pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
	if (has_pci)
		id.pNext = &pci;

	vkGetPhysicalDeviceProperties2(pd, &props);
	vkGetPhysicalDeviceFeatures2(pd, &features);
	vkGetPhysicalDeviceMemoryProperties2(pd, &mem);

	memset(info, 0, sizeof(*info));
	info->index = index;
	snprintf(info->name, sizeof(info->name), "%s",
		 props.properties.deviceName);
	info->type = props.properties.deviceType;
	info->type_name = type_name(info->type);
	info->api_version = props.properties.apiVersion;
	info->vendor_id = props.properties.vendorID;
	info->device_id = props.properties.deviceID;
	info->max_storage_range = props.properties.limits.maxStorageBufferRange;
	info->max_groups_z =
	    props.properties.limits.maxComputeWorkGroupCount[2];
	/* VKINR_PACKS=0 leaves them off, to compare */
	const char *packs = getenv("VKINR_PACKS");
	info->has_packs = addresses.bufferDeviceAddress &&
			  info->api_version >= VK_API_VERSION_1_2 &&
			  !(packs && !strcmp(packs, "0"));
	info->max_allocation = maint3.maxMemoryAllocationSize;
	info->max_shared_bytes =
	    props.properties.limits.maxComputeSharedMemorySize;
	info->subgroup_size = subgroup.subgroupSize;
	info->has_float16 = f16.shaderFloat16;
	info->has_float16_storage =
	    f16.shaderFloat16 && storage16.storageBuffer16BitAccess;
	info->has_coopmat_nv = has_nv_coopmat_shape(pd);
	info->has_coopmat_khr = has_khr_coopmat_shape(pd);
	info->coopmat_api = choose_coopmat_api(info);
	info->has_tensor_cores = info->coopmat_api != NULL;
	/* only where the build embedded its shaders (glslang 15, SPIR-V 1.6:
	 * Vulkan 1.3), beside the tensor-core path (whose features and memory
	 * model it needs) */
	const char *cm2 = getenv("VKINR_COOPMAT2");
	info->has_coopmat2 =
	    info->has_tensor_cores && info->api_version >= VK_API_VERSION_1_3 &&
	    shader_find("gemm_nn_cm2") != NULL && !(cm2 && !strcmp(cm2, "0")) &&
	    has_coopmat2_shape(pd);
	info->is_cpu = info->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
	memcpy(info->uuid, id.deviceUUID, VK_UUID_SIZE);
	info->has_pci = has_pci;
	info->pci_domain = pci.pciDomain;
	info->pci_bus = pci.pciBus;
	info->pci_device = pci.pciDevice;
	info->pci_function = pci.pciFunction;

	const VkPhysicalDeviceMemoryProperties *mp = &mem.memoryProperties;
	for (uint32_t h = 0; h < mp->memoryHeapCount; h++) {
		if (!(mp->memoryHeaps[h].flags &
		      VK_MEMORY_HEAP_DEVICE_LOCAL_BIT))
			continue;
		uint64_t size = mp->memoryHeaps[h].size;
		if (size > info->device_local_bytes) {
			info->device_local_bytes = size;
			info->budget_bytes = has_budget && budget.heapBudget[h]
						 ? budget.heapBudget[h]
						 : size;
		}
	}
}

static int compare_preference(const void *a, const void *b)
{
	const struct gpu_device_info *x = a, *y = b;
	int rx = type_rank(x->type), ry = type_rank(y->type);
	if (rx != ry)
		return rx - ry;
	return x->index - y->index;
}

static int enumerate(VkInstance instance, VkPhysicalDevice **pds,
		     struct gpu_device_info **infos, int *count, char *err,
		     size_t errlen)
{
	uint32_t n = 0;
	VkResult r = vkEnumeratePhysicalDevices(instance, &n, NULL);
	if (r != VK_SUCCESS || n == 0) {
		snprintf(err, errlen,
			 "no Vulkan device found: install a GPU driver, or "
			 "mesa-vulkan-drivers for the CPU device (lavapipe)");
		return ERR_NO_DEVICE;
	}
	*pds = calloc(n, sizeof(**pds));
	*infos = calloc(n, sizeof(**infos));
	if (!*pds || !*infos) {
		free(*pds), free(*infos);
		return ERR_NOMEM;
	}
	vkEnumeratePhysicalDevices(instance, &n, *pds);
	instance_of_describe = instance;
	for (uint32_t i = 0; i < n; i++)
		describe((*pds)[i], (int)i, &(*infos)[i]);
	qsort(*infos, n, sizeof(**infos), compare_preference);
	*count = (int)n;
	return 0;
}

int gpu_list_devices(struct gpu_device_info **out, int *count, char *err,
		     size_t errlen)
{
	VkInstance instance;
	VkPhysicalDevice *pds = NULL;
	int rc = create_instance(&instance, err, errlen);
	if (rc)
		return rc;
	rc = enumerate(instance, &pds, out, count, err, errlen);
	free(pds);
	vkDestroyInstance(instance, NULL);
	return rc;
}

static int contains_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return n == 0;
}

/* Picks the entry of infos (already in preference order) for selector. */
static int choose(const struct gpu_device_info *infos, int count,
		  const char *selector, char *err, size_t errlen)
{
	if (!selector || !*selector)
		return 0;
	char *end;
	long index = strtol(selector, &end, 10);
	for (int i = 0; i < count; i++) {
		if (*end == 0 ? infos[i].index == index
			      : contains_nocase(infos[i].name, selector))
			return i;
	}
	snprintf(err, errlen,
		 "no Vulkan device matches \"%s\": `vkinrd --devices` lists "
		 "them (use the index or part of the name)",
		 selector);
	return ERR_NOT_FOUND;
}

static void read_fault_switches(struct gpu_context *ctx)
{
	const char *f = getenv("VKINR_FAULT");
	if (!f)
		return;
	if (!strncmp(f, "device_lost:", 12))
		ctx->fault_lost_at = atol(f + 12);
	else if (!strncmp(f, "oom:", 4))
		ctx->fault_oom_at = atol(f + 4);
}

static int open_device_with(struct gpu_context *ctx, char *err, size_t errlen)
{
	uint32_t nfam = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nfam, NULL);
	VkQueueFamilyProperties fams[32];
	if (nfam > 32)
		nfam = 32;
	vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nfam, fams);
	int family = -1;
	for (uint32_t i = 0; i < nfam && family < 0; i++)
		if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			family = (int)i;
	if (family < 0) {
		snprintf(err, errlen, "device %s has no compute queue",
			 ctx->info.name);
		return ERR_NO_DEVICE;
	}
	ctx->queue_family = (uint32_t)family;

	VkPhysicalDeviceProperties props;
	vkGetPhysicalDeviceProperties(ctx->physical, &props);
	if (fams[family].timestampValidBits)
		ctx->timestamp_period = props.limits.timestampPeriod;
	vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory);

	float priority = 1.0f;
	VkDeviceQueueCreateInfo queue = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = ctx->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &priority,
	};
	const char *exts[6];
	uint32_t next = 0;
	if (has_extension(ctx->physical, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME))
		exts[next++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	/* the tensor-core path: fp16 arithmetic, cooperative matrices of
	 * either extension, and the Vulkan memory model their shaders use */
	int khr =
	    ctx->info.coopmat_api && !strcmp(ctx->info.coopmat_api, "khr");
	VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
		.cooperativeMatrix = VK_TRUE,
	};
	struct coopmat_features_khr coop_khr = {
		.sType = STYPE_COOPMAT_FEATURES_KHR,
		.cooperativeMatrix = VK_TRUE,
	};
	VkPhysicalDeviceVulkanMemoryModelFeatures memory_model = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
		.pNext = khr ? (void *)&coop_khr : (void *)&coop_nv,
		.vulkanMemoryModel = VK_TRUE,
	};
	/* VK_NV_cooperative_matrix2 (gemm_cm2.comp), whose matrices are
	 * KHR ones: the KHR extension too, beside NV where NV is the API */
	struct coopmat2_features_nv coop2 = {
		.sType = STYPE_COOPMAT2_FEATURES_NV,
		.cooperativeMatrixWorkgroupScope = VK_TRUE,
		.cooperativeMatrixFlexibleDimensions = VK_TRUE,
		.cooperativeMatrixPerElementOperations = VK_TRUE,
		.cooperativeMatrixTensorAddressing = VK_TRUE,
	};
	if (ctx->info.has_coopmat2) {
		coop_khr.pNext = &coop2;
		if (!khr) {
			coop_nv.pNext = &coop_khr;
			exts[next++] = COOPMAT_KHR_EXTENSION;
		}
		exts[next++] = COOPMAT2_NV_EXTENSION;
	}
	VkPhysicalDevice16BitStorageFeatures storage16 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
		.pNext = ctx->info.has_tensor_cores ? &memory_model : NULL,
		.storageBuffer16BitAccess = VK_TRUE,
	};
	VkPhysicalDeviceShaderFloat16Int8Features f16 = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
		.pNext = &storage16,
		.shaderFloat16 = VK_TRUE,
	};
	if (ctx->info.has_tensor_cores) {
		exts[next++] = khr ? COOPMAT_KHR_EXTENSION
				   : VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
	}
	/* the packed programs reach buffers by their device addresses */
	VkPhysicalDeviceBufferDeviceAddressFeatures addresses = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
		.pNext = ctx->info.has_float16_storage ? (void *)&f16 : NULL,
		.bufferDeviceAddress = VK_TRUE,
	};
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = ctx->info.has_packs             ? (void *)&addresses
			 : ctx->info.has_float16_storage ? (void *)&f16
							 : NULL,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &queue,
	};
	/* a diagnostic for kernel tuning: what the driver made of a shader */
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats = {
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
		.pNext = (void *)info.pNext,
		.pipelineExecutableInfo = VK_TRUE,
	};
	const char *want_stats = getenv("VKINR_PIPELINE_STATS");
	if (want_stats && *want_stats == '1' &&
	    has_extension(
		ctx->physical,
		VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
		exts[next++] =
		    VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
		info.pNext = &stats;
		ctx->capture_stats = 1;
	}
	info.enabledExtensionCount = next;
	info.ppEnabledExtensionNames = exts;
	VkResult r = vkCreateDevice(ctx->physical, &info, NULL, &ctx->device);
	if (r != VK_SUCCESS) {
		snprintf(err, errlen, "cannot open device %s: %s",
			 ctx->info.name, gpu_result_name(r));
		return gpu_error(ctx, r, "vkCreateDevice", __FILE__, __LINE__);
	}
	vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);

	VkCommandPoolCreateInfo pool = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = ctx->queue_family,
	};
	GPU_CHECK(ctx, vkCreateCommandPool(ctx->device, &pool, NULL,
					   &ctx->command_pool));
	VkFenceCreateInfo fence = { .sType =
					VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	GPU_CHECK(ctx, vkCreateFence(ctx->device, &fence, NULL, &ctx->fence));
	return 0;
}

/* Opens the device with what describe() found; where that fails with
 * VK_NV_cooperative_matrix2 (new, and enabled beside the other
 * cooperative-matrix extension), opens it once more without, so that a
 * driver that refuses the pair still runs everything else. */
static int open_device(struct gpu_context *ctx, char *err, size_t errlen)
{
	int rc = open_device_with(ctx, err, errlen);
	if (rc && ctx->info.has_coopmat2 && ctx->device == VK_NULL_HANDLE &&
	    !ctx->lost) {
		fprintf(stderr,
			"vkinrd: %s: opening it with "
			"VK_NV_cooperative_matrix2 failed; without it\n",
			ctx->info.name);
		ctx->info.has_coopmat2 = 0;
		err[0] = 0;
		rc = open_device_with(ctx, err, errlen);
	}
	return rc;
}

int gpu_create(struct gpu_context **out, const char *selector, char *err,
	       size_t errlen)
{
	struct gpu_context *ctx = calloc(1, sizeof(*ctx));
	struct gpu_device_info *infos = NULL;
	VkPhysicalDevice *pds = NULL;
	int count = 0, rc;

	*out = NULL;
	if (!ctx)
		return ERR_NOMEM;
	rc = create_instance(&ctx->instance, err, errlen);
	if (rc) {
		free(ctx);
		return rc;
	}
	rc = enumerate(ctx->instance, &pds, &infos, &count, err, errlen);
	if (rc == 0) {
		int pick = choose(infos, count, selector, err, errlen);
		if (pick < 0) {
			rc = pick;
		} else {
			ctx->info = infos[pick];
			ctx->physical = pds[ctx->info.index];
			read_fault_switches(ctx);
			rc = open_device(ctx, err, errlen);
		}
	}
	free(pds);
	free(infos);
	if (rc) {
		gpu_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

void gpu_destroy(struct gpu_context *ctx)
{
	if (!ctx)
		return;
	if (ctx->device) {
		vkDeviceWaitIdle(ctx->device);
		for (struct gpu_pipeline *p = ctx->pipelines, *next; p;
		     p = next) {
			next = p->next;
			vkDestroyPipeline(ctx->device, p->pipeline, NULL);
			vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
			vkDestroyDescriptorSetLayout(ctx->device, p->set_layout,
						     NULL);
			free(p);
		}
		if (ctx->fence)
			vkDestroyFence(ctx->device, ctx->fence, NULL);
		if (ctx->command_pool)
			vkDestroyCommandPool(ctx->device, ctx->command_pool,
					     NULL);
		vkDestroyDevice(ctx->device, NULL);
	}
	if (ctx->instance)
		vkDestroyInstance(ctx->instance, NULL);
	free(ctx);
}

const struct gpu_device_info *gpu_info(const struct gpu_context *ctx)
{
	return &ctx->info;
}

uint64_t gpu_bytes_in_use(const struct gpu_context *ctx)
{
	return ctx->bytes_in_use;
}

uint64_t gpu_bytes_peak(const struct gpu_context *ctx)
{
	return ctx->bytes_peak;
}

int gpu_is_lost(const struct gpu_context *ctx) { return ctx->lost; }

/* ------------------------------------------------------- submission */

int gpu_submit_wait(struct gpu_context *ctx, const VkCommandBuffer *cmds, int n)
{
	if (ctx->lost)
		return ERR_DEVICE_LOST;
	ctx->runs++;
	if (ctx->fault_lost_at && ctx->runs == ctx->fault_lost_at) {
		fprintf(stderr,
			"vkinrd: VKINR_FAULT: simulating device loss\n");
		ctx->lost = 1;
		return ERR_DEVICE_LOST;
	}
	VkSubmitInfo submit = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = (uint32_t)n,
		.pCommandBuffers = cmds,
	};
	GPU_CHECK(ctx, vkQueueSubmit(ctx->queue, 1, &submit, ctx->fence));
	VkResult r;
	do {
		r = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE,
				    1000000000ull);
	} while (r == VK_TIMEOUT);
	GPU_CHECK(ctx, r);
	GPU_CHECK(ctx, vkResetFences(ctx->device, 1, &ctx->fence));
	return 0;
}

int gpu_oneshot_begin(struct gpu_context *ctx, VkCommandBuffer *cmd)
{
	VkCommandBufferAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = ctx->command_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	GPU_CHECK(ctx, vkAllocateCommandBuffers(ctx->device, &alloc, cmd));
	VkCommandBufferBeginInfo begin = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkResult r = vkBeginCommandBuffer(*cmd, &begin);
	if (r != VK_SUCCESS) {
		vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, cmd);
		return gpu_error(ctx, r, "vkBeginCommandBuffer", __FILE__,
				 __LINE__);
	}
	return 0;
}

int gpu_oneshot_submit(struct gpu_context *ctx, VkCommandBuffer cmd)
{
	int rc;
	VkResult r = vkEndCommandBuffer(cmd);
	if (r != VK_SUCCESS)
		rc =
		    gpu_error(ctx, r, "vkEndCommandBuffer", __FILE__, __LINE__);
	else
		rc = gpu_submit_wait(ctx, &cmd, 1);
	vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &cmd);
	return rc;
}
