/*
 * pipeline.c - compute pipelines from the SPIR-V embedded in the binary.
 *
 * A pipeline is identified by its shader variant and its specialization
 * constants (the model width, workgroup sizes): the context caches each
 * one, so a fit asks freely and a new image never builds anything new.
 * Every pipeline's bindings are storage buffers 0..n-1 in set 0, and its
 * per-dispatch values come as push constants.
 *
 * Asking for a pipeline makes its layouts at once and compiles its shader
 * when a program first records it into commands (gpu_pipeline_ready): a
 * fit that only ever trains inside a pack records its own programs as
 * notes that never run, and its pipelines were compiled for nothing (on
 * lavapipe, whose pipeline cache keeps nothing between processes, 0.4 s
 * of a 16-image pack's 3.8 s).
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>

#include "gpu/shaders.h"
#include "gpu/spirv_khr.h"
#include "util/fileio.h"

const struct shader_blob *gpu_shader_find(const char *name)
{
	for (const struct shader_blob *s = shader_table; s->name; s++)
		if (!strcmp(s->name, name))
			return s;
	for (const struct shader_blob *s = shader_table_bench; s && s->name;
	     s++)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

static struct gpu_pipeline *cached(struct gpu_context *ctx, const char *variant,
				   const uint32_t *spec, int nspec)
{
	for (struct gpu_pipeline *p = ctx->pipelines; p; p = p->next) {
		if (!strcmp(p->variant, variant) && p->nspec == nspec &&
		    !memcmp(p->spec, spec, (size_t)nspec * sizeof(*spec)))
			return p;
	}
	return NULL;
}

/* Prints the driver's statistics of p's executables on one stderr line:
 * "vkinrd: pipeline VARIANT: NAME=VALUE, ..." (VKINR_PIPELINE_STATS). */
static void print_statistics(struct gpu_context *ctx,
			     const struct gpu_pipeline *p)
{
	PFN_vkGetPipelineExecutableStatisticsKHR get_statistics =
	    (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(
		ctx->device, "vkGetPipelineExecutableStatisticsKHR");
	if (!get_statistics)
		return;
	VkPipelineExecutableInfoKHR exe = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
		.pipeline = p->pipeline,
	};
	VkPipelineExecutableStatisticKHR stat[32];
	uint32_t n = 32;
	for (uint32_t i = 0; i < n; i++)
		stat[i] = (VkPipelineExecutableStatisticKHR){
			.sType =
			    VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR
		};
	VkResult r = get_statistics(ctx->device, &exe, &n, stat);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return;
	fprintf(stderr, "vkinrd: pipeline %s:", p->variant);
	for (uint32_t i = 0; i < n; i++) {
		fprintf(stderr, "%s %s=", i ? "," : "", stat[i].name);
		switch (stat[i].format) {
		case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
			fprintf(stderr, "%u", (unsigned)stat[i].value.b32);
			break;
		case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
			fprintf(stderr, "%lld", (long long)stat[i].value.i64);
			break;
		case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
			fprintf(stderr, "%llu",
				(unsigned long long)stat[i].value.u64);
			break;
		default:
			fprintf(stderr, "%g", stat[i].value.f64);
		}
	}
	fprintf(stderr, "\n");
}

/* Writes what the driver made of p to dir (VKINR_PIPELINE_DUMP, with
 * VKINR_PIPELINE_STATS): VARIANT.cache, the pipeline cache's data (on
 * NVIDIA it holds the machine code; NVIDIA gives no internal
 * representations). */
static void dump_pipeline(struct gpu_context *ctx, const struct gpu_pipeline *p,
			  VkPipelineCache cache, const char *dir)
{
	size_t size = 0;
	if (cache &&
	    vkGetPipelineCacheData(ctx->device, cache, &size, NULL) ==
		VK_SUCCESS &&
	    size) {
		void *data = malloc(size);
		char path[512];
		snprintf(path, sizeof(path), "%s/%s.cache", dir, p->variant);
		if (data &&
		    vkGetPipelineCacheData(ctx->device, cache, &size, data) ==
			VK_SUCCESS &&
		    fileio_write_atomic(path, data, size, 0644))
			fprintf(stderr, "vkinrd: cannot write %s\n", path);
		free(data);
	}
}

/* A packed variant's PK_LANE_LOADS (shaders/packed.glsl): its entry read
 * by the lanes of each subgroup of 8 and shared by shuffles, on CPU
 * devices, where every load is a loop over the SIMD lanes; elsewhere each
 * invocation reads the words it needs (VKINR_PACK_LANES=0 does, to
 * compare). */
#define PACK_LANE_LOADS_ID 3u

static int is_packed_variant(const char *variant)
{
	size_t n = strlen(variant);
	return n > 3 && !strcmp(variant + n - 3, "_pk");
}

static uint32_t pack_lane_loads(const struct gpu_context *ctx)
{
	return ctx->info.is_cpu && ctx->info.subgroup_size == 8 &&
	       !ctx->switches.pack_lanes_off;
}

/* The descriptor set's layout and the pipeline's. */
static int build_layouts(struct gpu_context *ctx, struct gpu_pipeline *p)
{
	VkDescriptorSetLayoutBinding bindings[GPU_MAX_BINDINGS];
	for (int i = 0; i < p->nbindings; i++) {
		bindings[i] = (VkDescriptorSetLayoutBinding){
			.binding = (uint32_t)i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	}
	VkDescriptorSetLayoutCreateInfo set_info = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = (uint32_t)p->nbindings,
		.pBindings = bindings,
	};
	GPU_CHECK(ctx, vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL,
						   &p->set_layout));
	VkPushConstantRange push = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = p->push_bytes,
	};
	VkPipelineLayoutCreateInfo layout_info = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &p->set_layout,
		.pushConstantRangeCount = p->push_bytes ? 1 : 0,
		.pPushConstantRanges = &push,
	};
	GPU_CHECK(ctx, vkCreatePipelineLayout(ctx->device, &layout_info, NULL,
					      &p->layout));
	return 0;
}

int gpu_pipeline_ready(struct gpu_context *ctx, struct gpu_pipeline *p)
{
	if (p->pipeline)
		return 0;
	const struct shader_blob *blob = p->blob;
	/* shaders written for the NV cooperative matrices run through the
	 * KHR extension where that is the one enabled */
	const uint32_t *code = blob->code;
	size_t words = blob->size / 4;
	uint32_t *khr = NULL;
	const char *api = ctx->info.coopmat_api;
	if (api && !strcmp(api, "khr") && spirv_uses_coopmat_nv(code, words)) {
		int rc = spirv_nv_to_khr(code, words, &khr, &words);
		if (rc) {
			fprintf(stderr,
				"vkinrd: cannot translate shader %s to "
				"VK_KHR_cooperative_matrix\n",
				blob->name);
			return rc;
		}
		code = khr;
	}
	VkShaderModuleCreateInfo module_info = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = words * 4,
		.pCode = code,
	};
	VkShaderModule module;
	VkResult made =
	    vkCreateShaderModule(ctx->device, &module_info, NULL, &module);
	free(khr);
	GPU_CHECK(ctx, made);
	VkSpecializationMapEntry entries[GPU_MAX_SPEC + 1];
	uint32_t values[GPU_MAX_SPEC + 1];
	int nentries = p->nspec;
	for (int i = 0; i < p->nspec; i++) {
		entries[i] = (VkSpecializationMapEntry){ (uint32_t)i,
							 (uint32_t)(i * 4), 4 };
		values[i] = p->spec[i];
	}
	if (is_packed_variant(p->variant)) {
		entries[nentries] =
		    (VkSpecializationMapEntry){ PACK_LANE_LOADS_ID,
						(uint32_t)(nentries * 4), 4 };
		values[nentries++] = pack_lane_loads(ctx);
	}
	VkSpecializationInfo spec = {
		.mapEntryCount = (uint32_t)nentries,
		.pMapEntries = entries,
		.dataSize = (size_t)nentries * 4,
		.pData = values,
	};
	VkComputePipelineCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.module = module,
			.pName = "main",
			.pSpecializationInfo = nentries ? &spec : NULL,
		},
		.layout = p->layout,
	};
	if (ctx->capture_stats)
		info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
	VkPipelineCache cache = VK_NULL_HANDLE;
	const char *dump_dir =
	    ctx->capture_stats ? getenv("VKINR_PIPELINE_DUMP") : NULL;
	VkPipelineCacheCreateInfo cache_info = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
	};
	if (dump_dir && vkCreatePipelineCache(ctx->device, &cache_info, NULL,
					      &cache) != VK_SUCCESS)
		cache = VK_NULL_HANDLE;
	VkResult r = vkCreateComputePipelines(ctx->device, cache, 1, &info,
					      NULL, &p->pipeline);
	vkDestroyShaderModule(ctx->device, module, NULL);
	if (r == VK_SUCCESS && ctx->capture_stats)
		print_statistics(ctx, p);
	if (r == VK_SUCCESS && dump_dir)
		dump_pipeline(ctx, p, cache, dump_dir);
	if (cache)
		vkDestroyPipelineCache(ctx->device, cache, NULL);
	if (r != VK_SUCCESS)
		return gpu_error(ctx, r, "vkCreateComputePipelines", __FILE__,
				 __LINE__);
	return 0;
}

int gpu_pipeline_get(struct gpu_context *ctx, const char *variant,
		     int nbindings, uint32_t push_bytes, const uint32_t *spec,
		     int nspec, struct gpu_pipeline **out)
{
	if (nspec > GPU_MAX_SPEC || nbindings > GPU_MAX_BINDINGS ||
	    push_bytes > GPU_MAX_PUSH || strlen(variant) >= 64)
		return ERR_INVALID;
	struct gpu_pipeline *p = cached(ctx, variant, spec, nspec);
	if (p) {
		*out = p;
		return 0;
	}
	const struct shader_blob *blob = gpu_shader_find(variant);
	if (!blob) {
		fprintf(stderr, "vkinrd: no embedded shader named %s\n",
			variant);
		return ERR_NOT_FOUND;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return ERR_NOMEM;
	snprintf(p->variant, sizeof(p->variant), "%s", variant);
	memcpy(p->spec, spec, (size_t)nspec * sizeof(*spec));
	p->nspec = nspec;
	p->nbindings = nbindings;
	p->push_bytes = push_bytes;
	p->blob = blob;
	int rc = build_layouts(ctx, p);
	if (rc) {
		if (p->layout)
			vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
		if (p->set_layout)
			vkDestroyDescriptorSetLayout(ctx->device, p->set_layout,
						     NULL);
		free(p);
		return rc;
	}
	p->next = ctx->pipelines;
	ctx->pipelines = p;
	*out = p;
	return 0;
}
