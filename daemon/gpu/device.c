/*
 * device.c - opening the device chosen from device_list.c's list as a
 * gpu_context, and submitting work to it.
 *
 * A context is an instance, one device with one compute queue, a command
 * pool and a fence: everything a worker thread needs. Devices are
 * preferred discrete, then integrated, then virtual, then CPU (lavapipe),
 * so `vkinrd` picks the real GPU when there is one and still runs where
 * there is none. Failures come back as the project's error codes, with
 * device loss remembered so that every later call fails fast.
 */
#include "gpu/coopmat.h"
#include "gpu/internal.h"
#include "gpu/shaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The first queue family with compute (its timestamps' period, if it
 * has them, and the device's memory types read with it); 0, or
 * ERR_NO_DEVICE with err set. */
static int find_compute_queue(struct gpu_context *ctx, char *err, size_t errlen)
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
	return 0;
}

/* What the device is opened with: the features asked for, chained
 * through their pNext from first (NULL: none), and the extensions.
 * The chain points into the struct, which lives as long as the call
 * to vkCreateDevice. */
struct device_features {
	VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv;
	struct coopmat_features_khr coop_khr;
	VkPhysicalDeviceVulkanMemoryModelFeatures memory_model;
	struct coopmat2_features_nv coop2;
	VkPhysicalDevice16BitStorageFeatures storage16;
	VkPhysicalDeviceShaderFloat16Int8Features f16;
	VkPhysicalDeviceBufferDeviceAddressFeatures addresses;
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats;
	void *first;
	const char *exts[6];
	uint32_t n_exts;
};

/* The tensor-core path: cooperative matrices of either extension and
 * the Vulkan memory model their shaders use, chained from memory_model
 * (storage16 links it where the device has tensor cores); with
 * VK_NV_cooperative_matrix2 (gemm_cm2.comp), whose matrices are KHR
 * ones, the KHR extension too, beside NV where NV is the API. */
static void want_coopmat(const struct gpu_context *ctx,
			 struct device_features *f)
{
	int khr =
	    ctx->info.coopmat_api && !strcmp(ctx->info.coopmat_api, "khr");
	f->coop_nv = (VkPhysicalDeviceCooperativeMatrixFeaturesNV){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
		.cooperativeMatrix = VK_TRUE,
	};
	f->coop_khr = (struct coopmat_features_khr){
		.sType = STYPE_COOPMAT_FEATURES_KHR,
		.cooperativeMatrix = VK_TRUE,
	};
	f->memory_model = (VkPhysicalDeviceVulkanMemoryModelFeatures){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
		.pNext = khr ? (void *)&f->coop_khr : (void *)&f->coop_nv,
		.vulkanMemoryModel = VK_TRUE,
	};
	f->coop2 = (struct coopmat2_features_nv){
		.sType = STYPE_COOPMAT2_FEATURES_NV,
		.cooperativeMatrixWorkgroupScope = VK_TRUE,
		.cooperativeMatrixFlexibleDimensions = VK_TRUE,
		.cooperativeMatrixPerElementOperations = VK_TRUE,
		.cooperativeMatrixTensorAddressing = VK_TRUE,
	};
	if (ctx->info.has_coopmat2) {
		f->coop_khr.pNext = &f->coop2;
		if (!khr) {
			f->coop_nv.pNext = &f->coop_khr;
			f->exts[f->n_exts++] = COOPMAT_KHR_EXTENSION;
		}
		f->exts[f->n_exts++] = COOPMAT2_NV_EXTENSION;
	}
	if (ctx->info.has_tensor_cores)
		f->exts[f->n_exts++] =
		    khr ? COOPMAT_KHR_EXTENSION
			: VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
}

/* fp16 arithmetic and 16-bit storage (where the device stores fp16,
 * the tensor-core features after them), and the buffers' device
 * addresses the packed programs reach them by (where it packs): the
 * head of the chain. */
static void want_storage(const struct gpu_context *ctx,
			 struct device_features *f)
{
	f->storage16 = (VkPhysicalDevice16BitStorageFeatures){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
		.pNext = ctx->info.has_tensor_cores ? &f->memory_model : NULL,
		.storageBuffer16BitAccess = VK_TRUE,
	};
	f->f16 = (VkPhysicalDeviceShaderFloat16Int8Features){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
		.pNext = &f->storage16,
		.shaderFloat16 = VK_TRUE,
	};
	f->addresses = (VkPhysicalDeviceBufferDeviceAddressFeatures){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
		.pNext = ctx->info.has_float16_storage ? (void *)&f->f16 : NULL,
		.bufferDeviceAddress = VK_TRUE,
	};
	f->first = ctx->info.has_packs             ? (void *)&f->addresses
		   : ctx->info.has_float16_storage ? (void *)&f->f16
						   : NULL;
}

/* VKINR_PIPELINE_STATS=1, a diagnostic for kernel tuning: what the
 * driver made of a shader, where it can say (ctx->capture_stats); put
 * at the chain's head. */
static void want_stats(struct gpu_context *ctx, struct device_features *f)
{
	f->stats = (VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR){
		.sType =
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
		.pNext = f->first,
		.pipelineExecutableInfo = VK_TRUE,
	};
	const char *want = getenv("VKINR_PIPELINE_STATS");
	if (want && *want == '1' &&
	    gpu_has_extension(
		ctx->physical,
		VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
		f->exts[f->n_exts++] =
		    VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
		f->first = &f->stats;
		ctx->capture_stats = 1;
	}
}

/* Everything describe() found the device can do that the engine uses:
 * the memory budget, the tensor-core path, fp16, device addresses,
 * and the pipeline statistics when asked for. */
static void want_features(struct gpu_context *ctx, struct device_features *f)
{
	f->n_exts = 0;
	if (gpu_has_extension(ctx->physical,
			      VK_EXT_MEMORY_BUDGET_EXTENSION_NAME))
		f->exts[f->n_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	want_coopmat(ctx, f);
	want_storage(ctx, f);
	want_stats(ctx, f);
}

/* The opened device's command pool (its buffers reset one by one) and
 * the fence a submission waits on. */
static int make_pool_and_fence(struct gpu_context *ctx)
{
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

/* Opens ctx->physical with one compute queue and the features of
 * want_features; 0, or the error (err set where it says more). */
static int open_device_with(struct gpu_context *ctx, char *err, size_t errlen)
{
	struct device_features f;
	int rc = find_compute_queue(ctx, err, errlen);
	if (rc)
		return rc;
	float priority = 1.0f;
	VkDeviceQueueCreateInfo queue = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = ctx->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &priority,
	};
	want_features(ctx, &f);
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = f.first,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &queue,
		.enabledExtensionCount = f.n_exts,
		.ppEnabledExtensionNames = f.exts,
	};
	VkResult r = vkCreateDevice(ctx->physical, &info, NULL, &ctx->device);
	if (r != VK_SUCCESS) {
		snprintf(err, errlen, "cannot open device %s: %s",
			 ctx->info.name, gpu_result_name(r));
		return gpu_error(ctx, r, "vkCreateDevice", __FILE__, __LINE__);
	}
	vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
	return make_pool_and_fence(ctx);
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
	rc = gpu_create_instance(&ctx->instance, err, errlen);
	if (rc) {
		free(ctx);
		return rc;
	}
	rc = gpu_enumerate(ctx->instance, &pds, &infos, &count, err, errlen);
	if (rc == 0) {
		int pick = choose(infos, count, selector, err, errlen);
		if (pick < 0) {
			rc = pick;
		} else {
			ctx->info = infos[pick];
			ctx->physical = pds[ctx->info.index];
			read_fault_switches(ctx);
			gpu_switches_read(&ctx->switches);
			rc = open_device(ctx, err, errlen);
			if (rc == 0)
				gpu_profile_init(ctx);
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
	gpu_keep_driver_loaded(); /* before the device and instance end */
	gpu_profile_report(ctx);
	gpu_submit_finish(ctx);
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
		gpu_transfers_release(ctx);
		gpu_small_blocks_release(ctx);
		gpu_slabs_release(ctx); /* after every arena */
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

/* ------------------------------------------------------- submission */

/* Submits command buffers after the copies waiting (transfer.c), with the
 * context's fence; a submission still running is waited for first. */
int gpu_submit_start(struct gpu_context *ctx, const VkCommandBuffer *cmds,
		     int n)
{
	int rc = gpu_submit_finish(ctx);
	if (rc)
		return rc;
	if (ctx->lost)
		return ERR_DEVICE_LOST;
	ctx->runs++;
	if (ctx->fault_lost_at && ctx->runs == ctx->fault_lost_at) {
		fprintf(stderr,
			"vkinrd: VKINR_FAULT: simulating device loss\n");
		ctx->lost = 1;
		return ERR_DEVICE_LOST;
	}
	/* the transfers waiting go first (transfer.c) */
	VkCommandBuffer first;
	rc = gpu_transfers_take(ctx, &first);
	if (rc)
		return rc;
	VkCommandBuffer all[1 + GPU_MOST_SUBMITTED];
	int count = 0;
	if (first)
		all[count++] = first;
	for (int i = 0; i < n && count < (int)(sizeof(all) / sizeof(*all)); i++)
		all[count++] = cmds[i];
	if (count == 0)
		return 0;
	VkSubmitInfo submit = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = (uint32_t)count,
		.pCommandBuffers = all,
	};
	VkResult r = vkQueueSubmit(ctx->queue, 1, &submit, ctx->fence);
	if (r != VK_SUCCESS) {
		gpu_transfers_done(ctx, first);
		GPU_CHECK(ctx, r);
	}
	ctx->inflight = 1;
	ctx->inflight_copies = first;
	return 0;
}

int gpu_submit_finish(struct gpu_context *ctx)
{
	if (!ctx->inflight)
		return 0;
	ctx->inflight = 0;
	VkResult r;
	do {
		r = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE,
				    1000000000ull);
	} while (r == VK_TIMEOUT);
	gpu_transfers_done(ctx, ctx->inflight_copies);
	ctx->inflight_copies = VK_NULL_HANDLE;
	GPU_CHECK(ctx, r);
	GPU_CHECK(ctx, vkResetFences(ctx->device, 1, &ctx->fence));
	return 0;
}

int gpu_submit_wait(struct gpu_context *ctx, const VkCommandBuffer *cmds, int n)
{
	int rc = gpu_submit_start(ctx, cmds, n);
	return rc ? rc : gpu_submit_finish(ctx);
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
