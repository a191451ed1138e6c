/*
 * internal.h - what the files of daemon/gpu/ share and nobody else sees:
 * the context's fields, the checking macro and the logging helper.
 */
#ifndef VKINR_GPU_INTERNAL_H
#define VKINR_GPU_INTERNAL_H

#include <stdio.h>

#include "proto/errors.h"
#include "gpu/gpu.h"

struct gpu_pipeline {
	struct gpu_pipeline *next; /* the context's cache list */
	char variant[64];
	const struct shader_blob *blob; /* compiled from, when first used */
	uint32_t spec[GPU_MAX_SPEC];
	int nspec, nbindings;
	uint32_t push_bytes;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkPipeline pipeline;
};

/* profile.c (VKINR_PROFILE): a program's stamps around its dispatches */
#define GPU_PROFILE_NAME 72
struct gpu_profile;
struct gpu_profile_marks {
	VkQueryPool pool;
	int n, cap;
	char (*names)[GPU_PROFILE_NAME]; /* the pipeline a stamp ends */
	uint64_t *ticks;
};

struct gpu_context {
	VkInstance instance;
	VkPhysicalDevice physical;
	VkDevice device;
	VkQueue queue;
	uint32_t queue_family;
	VkCommandPool command_pool;
	VkFence fence;
	struct gpu_device_info info;
	VkPhysicalDeviceMemoryProperties memory;
	float timestamp_period; /* ns per tick; 0 = no timestamps */
	struct gpu_pipeline *pipelines;
	uint64_t bytes_in_use, bytes_peak;
	int lost;
	/* VKINR_PIPELINE_STATS: the driver's statistics of each new pipeline
	 * (registers, shared memory, spills) printed to stderr */
	int capture_stats;
	/* VKINR_PROFILE=1: each pipeline's dispatch time (profile.c) */
	struct gpu_profile *profile;
	/* transfer.c: copies and fills recorded but not yet submitted (they
	 * go with the next submission), and the staging buffer they go
	 * through, kept for the context's life */
	VkCommandBuffer pending;
	int pending_ops;
	/* device.c: a submission running (gpu_submit_start), and the copies'
	 * command buffer it took, freed when it is waited for */
	int inflight;
	VkCommandBuffer inflight_copies;
	struct gpu_arena *stage_arena;
	struct gpu_buffer stage;
	VkDeviceSize stage_used;
	/* memory.c: the memory types a buffer may take, once known */
	uint32_t buffer_type_bits;
	/* slab.c: the slabs blocks are carved from */
	struct gpu_slab *slabs;
	/* memory.c: the shared blocks small mapped buffers are packed in */
	struct small_block *small_blocks;
	/* the engine's switches, read when the device opened (switches.c) */
	struct gpu_switches switches;
	/* test switches (VKINR_FAULT) */
	long fault_lost_at, fault_oom_at, runs, allocations;
};

/* pipeline.c: compiles p's shader if it is not yet (a program does, as it
 * records p into its commands). */
int gpu_pipeline_ready(struct gpu_context *ctx, struct gpu_pipeline *p);

const char *gpu_result_name(VkResult r);
/* Maps a failed VkResult to the project's error code, and remembers loss. */
int gpu_error(struct gpu_context *ctx, VkResult r, const char *call,
	      const char *file, int line);

/* Checks a VkResult; on failure logs the call and returns the mapped error
 * from the enclosing function. */
#define GPU_CHECK(ctx, call)                                                   \
	do {                                                                   \
		VkResult gpu_check_r_ = (call);                                \
		if (gpu_check_r_ != VK_SUCCESS)                                \
			return gpu_error((ctx), gpu_check_r_, #call, __FILE__, \
					 __LINE__);                            \
	} while (0)

/* A one-shot command buffer begun, for copies outside programs (the
 * transfers, transfer.c, end and submit it). */
int gpu_oneshot_begin(struct gpu_context *ctx, VkCommandBuffer *cmd);
/* The most command buffers gpu_submit_wait takes (gpu_programs_run). */
#define GPU_MOST_SUBMITTED 64
/* Submits command buffers, after the copies waiting (transfer.c), and
 * waits on the context's fence; n may be 0 (the copies alone). */
int gpu_submit_wait(struct gpu_context *ctx, const VkCommandBuffer *cmds,
		    int n);
/* The same in two halves: the submission (after waiting for one still
 * running), and the wait for it (nothing when none is running). Between
 * them the host may do work of its own but submit nothing; every
 * submission and copy waits for the one running first. */
int gpu_submit_start(struct gpu_context *ctx, const VkCommandBuffer *cmds,
		     int n);
int gpu_submit_finish(struct gpu_context *ctx);
/* transfer.c: submits the copies waiting, if any, and waits for them;
 * before a buffer they may name is destroyed. */
int gpu_transfers_flush(struct gpu_context *ctx);
/* The waiting copies' command buffer, ended, to submit first (NULL when
 * none wait), or the error that lost them; gpu_transfers_done after the
 * submission's wait. */
int gpu_transfers_take(struct gpu_context *ctx, VkCommandBuffer *out);
void gpu_transfers_done(struct gpu_context *ctx, VkCommandBuffer cmd);
/* Frees the staging buffer and drops copies still waiting (the device's
 * end). */
void gpu_transfers_release(struct gpu_context *ctx);

/* slab.c: a block of device memory of the type (mapped when map), carved
 * from a slab when small, else allocated alone; VK_SUCCESS or the
 * driver's error, said by none (the caller may try a smaller size). */
struct gpu_slab;
struct gpu_memory_piece {
	VkDeviceMemory memory;
	VkDeviceSize offset, size; /* where in memory, how much */
	void *mapped;              /* at offset, when mapped */
	struct gpu_slab *slab;     /* NULL: an allocation of its own */
};
VkResult gpu_memory_take(struct gpu_context *ctx, uint32_t type, int map,
			 VkDeviceSize size, struct gpu_memory_piece *out);
/* Gives a block back (to its slab, or to the driver). */
void gpu_memory_give(struct gpu_context *ctx, struct gpu_memory_piece *p);
/* Frees the shared blocks of small mapped buffers (memory.c; the device's
 * end, after every arena, before the slabs). */
void gpu_small_blocks_release(struct gpu_context *ctx);
/* Frees every slab (the device's end, after every arena). */
void gpu_slabs_release(struct gpu_context *ctx);

/* device_list.c: the instance (the driver kept loaded under ASan), the
 * devices it lists in order of preference with what each offers (pds by
 * Vulkan index, infos sorted), and whether a device has an extension. */
int gpu_create_instance(VkInstance *out, char *err, size_t errlen);
int gpu_enumerate(VkInstance instance, VkPhysicalDevice **pds,
		  struct gpu_device_info **infos, int *count, char *err,
		  size_t errlen);
int gpu_has_extension(VkPhysicalDevice pd, const char *name);
/* Sanitizer builds: pins every library loaded now until exit, called
 * before an instance ends (see device_list.c); a no-op otherwise. */
void gpu_keep_driver_loaded(void);

/* profile.c: VKINR_PROFILE read (after the device opened); a program's
 * marks begun in its command buffer (nothing when the switch is off),
 * a stamp after a dispatch of the named pipeline, the stamps of a run
 * added to the context's lines, the marks freed; the lines printed to
 * stderr (gpu_destroy does). */
void gpu_profile_init(struct gpu_context *ctx);
int gpu_profile_begin(struct gpu_context *ctx, struct gpu_profile_marks *m,
		      VkCommandBuffer cmd, int dispatches);
void gpu_profile_after(struct gpu_profile_marks *m, VkCommandBuffer cmd,
		       const char *name);
void gpu_profile_collect(struct gpu_context *ctx, struct gpu_profile_marks *m);
void gpu_profile_release(struct gpu_context *ctx, struct gpu_profile_marks *m);
void gpu_profile_report(struct gpu_context *ctx);

#endif
