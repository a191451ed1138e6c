/*
 * device_list.c - the Vulkan instance, the devices it lists, what each
 * offers (fp16, subgroups, memory, NV and KHR cooperative matrices,
 * VK_NV_cooperative_matrix2) and the order in which they are preferred:
 * discrete, then integrated, then virtual, then CPU (lavapipe). device.c
 * opens the one chosen.
 */
#include "gpu/internal.h"
#include "gpu/coopmat.h"
#include "gpu/shaders.h"

#include <ctype.h>
#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>
#endif
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The instance whose devices describe() is looking at (for a function
 * pointer); set by gpu_enumerate() on the calling thread. */
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
 * exit: called before an instance ends (here and in gpu_destroy), once the
 * driver has loaded all it will (lavapipe's LLVM loads more at its first
 * compile). Unloaded with its instance, a library (lavapipe's LLVM pulls in
 * libxml2 and ICU) takes along the globals that held its buffers, which
 * the leak check then reports, from a module it can no longer name: no
 * suppression could match them. */
void gpu_keep_driver_loaded(void)
{
#if defined(__SANITIZE_ADDRESS__)
	dl_iterate_phdr(keep_loaded, NULL);
#endif
}

int gpu_create_instance(VkInstance *out, char *err, size_t errlen)
{
	/* the VK_NV_cooperative_matrix2 shaders are SPIR-V 1.6 (glslang
	 * requires it): Vulkan 1.3, asked for only when they are embedded */
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "vkinrd",
		.apiVersion = gpu_shader_find("gemm_nn_cm2")
				  ? VK_API_VERSION_1_3
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
	return 0;
}

int gpu_has_extension(VkPhysicalDevice pd, const char *name)
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
	if (!gpu_has_extension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME))
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
	if (!gpu_has_extension(pd, COOPMAT_KHR_EXTENSION))
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

/* Whether VK_NV_cooperative_matrix2 offers what gemm_cm2.comp uses (see
 * gpu.h), through VK_KHR_cooperative_matrix's matrix types. */
static int has_coopmat2_shape(VkPhysicalDevice pd)
{
	if (!gpu_has_extension(pd, COOPMAT2_NV_EXTENSION) ||
	    !gpu_has_extension(pd, COOPMAT_KHR_EXTENSION))
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
	int has_budget =
	    gpu_has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	if (has_budget)
		mem.pNext = &budget;
	int has_pci = gpu_has_extension(pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
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
	    gpu_shader_find("gemm_nn_cm2") != NULL &&
	    !(cm2 && !strcmp(cm2, "0")) && has_coopmat2_shape(pd);
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

int gpu_enumerate(VkInstance instance, VkPhysicalDevice **pds,
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
	int rc = gpu_create_instance(&instance, err, errlen);
	if (rc)
		return rc;
	rc = gpu_enumerate(instance, &pds, out, count, err, errlen);
	free(pds);
	gpu_keep_driver_loaded(); /* before the instance unloads the driver */
	vkDestroyInstance(instance, NULL);
	return rc;
}
