/*
 * memory.c - device memory: arenas of a few large allocations from which
 * buffers are sub-allocated, and copies in and out through staging.
 *
 * Drivers limit the number of allocations and make each one slow, so an
 * arena takes blocks that grow from ARENA_FIRST_BLOCK to ARENA_MAX_BLOCK
 * bytes (never more than the device's maxMemoryAllocationSize) and places
 * buffers in them by bumping an offset; the small blocks are carved from
 * slabs the context shares (slab.c). Everything is freed together when the arena is destroyed:
 * a fit allocates its buffers once and frees them when it ends or pauses.
 * Copies between the host and buffers are in transfer.c.
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>

/* Blocks start small and double, so a tiny fit holds little memory and a
 * large one still makes few allocations. */
#define ARENA_FIRST_BLOCK (1ull << 20)
#define ARENA_MAX_BLOCK (256ull << 20)

struct arena_block {
	struct arena_block *next;
	struct gpu_memory_piece piece; /* slab.c's */
	VkDeviceSize size, used;
	uint32_t type;
};

struct arena_buffer {
	struct arena_buffer *next;
	VkBuffer handle;
};

struct gpu_arena {
	struct gpu_context *ctx;
	struct arena_block *blocks;
	struct arena_buffer *buffers;
	VkDeviceSize bytes;
	VkDeviceSize next_block[VK_MAX_MEMORY_TYPES]; /* growth, per type */
};

static int find_memory_type(const struct gpu_context *ctx, uint32_t type_bits,
			    VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < ctx->memory.memoryTypeCount; i++) {
		if ((type_bits & (1u << i)) &&
		    (ctx->memory.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	}
	return -1;
}

int gpu_arena_create(struct gpu_context *ctx, struct gpu_arena **out)
{
	struct gpu_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return ERR_NOMEM;
	a->ctx = ctx;
	*out = a;
	return 0;
}

void gpu_arena_destroy(struct gpu_arena *arena)
{
	if (!arena)
		return;
	VkDevice dev = arena->ctx->device;
	/* copies still waiting may name its buffers */
	gpu_transfers_flush(arena->ctx);
	for (struct arena_buffer *b = arena->buffers, *next; b; b = next) {
		next = b->next;
		vkDestroyBuffer(dev, b->handle, NULL);
		free(b);
	}
	for (struct arena_block *b = arena->blocks, *next; b; b = next) {
		next = b->next;
		gpu_memory_give(arena->ctx, &b->piece);
		free(b);
	}
	arena->ctx->bytes_in_use -= arena->bytes;
	free(arena);
}

static int new_block(struct gpu_arena *a, uint32_t type, VkDeviceSize need,
		     int map, struct arena_block **out)
{
	struct gpu_context *ctx = a->ctx;
	VkDeviceSize *next = &a->next_block[type];
	VkDeviceSize grow = *next ? *next : ARENA_FIRST_BLOCK;
	/* a request as large as a block gets a block of its own, exactly;
	 * only shared blocks make the next one of that type larger */
	VkDeviceSize size = need >= grow ? need : grow;
	if (size == grow)
		*next = grow * 2 < ARENA_MAX_BLOCK ? grow * 2 : ARENA_MAX_BLOCK;
	if (ctx->info.max_allocation && size > ctx->info.max_allocation)
		size = ctx->info.max_allocation;
	if (size < need)
		return ERR_DEVICE_OOM;
	struct arena_block *b = calloc(1, sizeof(*b));
	if (!b)
		return ERR_NOMEM;
	VkResult r = gpu_memory_take(ctx, type, map, size, &b->piece);
	if (r != VK_SUCCESS && size > need) {
		/* the large block did not fit; try just what is needed */
		size = need;
		r = gpu_memory_take(ctx, type, map, size, &b->piece);
	}
	if (r != VK_SUCCESS) {
		free(b);
		return gpu_error(ctx, r, "vkAllocateMemory", __FILE__,
				 __LINE__);
	}
	b->size = size;
	b->type = type;
	b->next = a->blocks;
	a->blocks = b;
	a->bytes += size;
	ctx->bytes_in_use += size;
	if (ctx->bytes_in_use > ctx->bytes_peak)
		ctx->bytes_peak = ctx->bytes_in_use;
	*out = b;
	return 0;
}

int gpu_buffer_alloc(struct gpu_arena *arena, VkDeviceSize size,
		     int host_visible, struct gpu_buffer *out)
{
	struct gpu_context *ctx = arena->ctx;
	memset(out, 0, sizeof(*out));
	if (ctx->lost)
		return ERR_DEVICE_LOST;
	ctx->allocations++;
	if (ctx->fault_oom_at && ctx->allocations == ctx->fault_oom_at) {
		fprintf(stderr,
			"vkinrd: VKINR_FAULT: simulating out of memory\n");
		return ERR_DEVICE_OOM;
	}
	if (size == 0)
		size = 16;
	if (size > ctx->info.max_storage_range)
		return ERR_TOO_LARGE;

	struct arena_buffer *entry = calloc(1, sizeof(*entry));
	if (!entry)
		return ERR_NOMEM;
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			 (ctx->info.has_packs
			      ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
			      : 0),
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r = vkCreateBuffer(ctx->device, &info, NULL, &entry->handle);
	if (r != VK_SUCCESS) {
		free(entry);
		return gpu_error(ctx, r, "vkCreateBuffer", __FILE__, __LINE__);
	}
	entry->next = arena->buffers;
	arena->buffers = entry;

	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(ctx->device, entry->handle, &req);
	VkMemoryPropertyFlags want =
	    host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
			       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
			 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	/* the host reads what it maps (every fit's loss sums, every epoch):
	 * cached memory where the device has it, as reads of write-combined
	 * memory go one by one over the bus */
	int type =
	    host_visible
		? find_memory_type(ctx, req.memoryTypeBits,
				   want | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
		: -1;
	if (type < 0)
		type = find_memory_type(ctx, req.memoryTypeBits, want);
	if (type < 0 && !host_visible)
		type = find_memory_type(ctx, req.memoryTypeBits, 0);
	if (type < 0)
		return ERR_DEVICE_OOM;

	struct arena_block *block = NULL;
	VkDeviceSize offset = 0;
	for (struct arena_block *b = arena->blocks; b; b = b->next) {
		if (b->type != (uint32_t)type ||
		    !!b->piece.mapped != !!host_visible)
			continue;
		offset = (b->used + req.alignment - 1) / req.alignment *
			 req.alignment;
		if (offset + req.size <= b->size) {
			block = b;
			break;
		}
	}
	if (!block) {
		int rc = new_block(arena, (uint32_t)type, req.size,
				   host_visible, &block);
		if (rc)
			return rc;
		offset = 0;
	}
	GPU_CHECK(ctx, vkBindBufferMemory(ctx->device, entry->handle,
					  block->piece.memory,
					  block->piece.offset + offset));
	block->used = offset + req.size;
	out->handle = entry->handle;
	out->size = size;
	out->mapped =
	    block->piece.mapped ? (char *)block->piece.mapped + offset : NULL;
	if (ctx->info.has_packs) {
		VkBufferDeviceAddressInfo where = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
			.buffer = entry->handle,
		};
		out->address = vkGetBufferDeviceAddress(ctx->device, &where);
	}
	return 0;
}

uint64_t gpu_arena_bytes(const struct gpu_arena *arena) { return arena->bytes; }
