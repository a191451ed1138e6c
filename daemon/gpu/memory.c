/*
 * memory.c - device memory: arenas of a few large blocks from which
 * buffers are sub-allocated, and copies in and out through staging.
 *
 * Drivers limit the number of allocations and make each one slow, so an
 * arena takes blocks that grow from ARENA_FIRST_BLOCK to ARENA_MAX_BLOCK
 * bytes (never more than the device's maxMemoryAllocationSize), the small
 * ones carved from slabs the context shares (slab.c). Each block is one
 * VkBuffer, and a buffer is a range of it (handle, offset, size): making
 * a buffer costs no call to the driver, which matters when a dataset's
 * thousand fits make thirty buffers each. Everything is freed together
 * when the arena is destroyed: a fit allocates its buffers once and frees
 * them when it ends or pauses. Copies between the host and buffers are in
 * transfer.c.
 *
 * Small mapped buffers (a fit's step scalars, its loss and partial sums:
 * the device reads or writes them every epoch, the host too) are packed
 * densely from mapped blocks the context shares, SMALL_UNIT bytes a unit,
 * rather than each arena taking a mapped block of ARENA_FIRST_BLOCK: a
 * pack of a thousand fits touched a thousand pages of host memory a
 * megabyte apart every epoch, each a translation of its own for the
 * device (VKINR_DENSE_VISIBLE=0 keeps the per-arena blocks, to compare).
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>

/* Blocks start small and double, so a tiny fit holds little memory and a
 * large one still makes few allocations. */
#define ARENA_FIRST_BLOCK (1ull << 20)
#define ARENA_MAX_BLOCK (256ull << 20)
/* Every buffer's offset in its block: the most any device may ask of a
 * storage buffer's offset (minStorageBufferOffsetAlignment <= 256). */
#define ARENA_ALIGN 256ull

struct arena_block {
	struct arena_block *next;
	struct gpu_memory_piece piece; /* slab.c's */
	VkBuffer buffer;               /* the whole block */
	uint64_t address;              /* its device address (has_packs) */
	VkDeviceSize size, used;
	uint32_t type;
};

/* Small mapped buffers: units of SMALL_UNIT bytes of a shared block. */
#define SMALL_UNIT 256u
#define SMALL_MOST 4096u /* the largest request packed so */
#define SMALL_BLOCK (1u << 20)
#define SMALL_UNITS (SMALL_BLOCK / SMALL_UNIT)

struct small_block {
	struct small_block *next;
	struct arena_block *block;
	int used; /* units taken */
	uint8_t taken[SMALL_UNITS];
};

/* What an arena took from the shared small blocks, given back with it. */
struct small_piece {
	struct small_block *from;
	int unit, units;
};

struct gpu_arena {
	struct gpu_context *ctx;
	struct arena_block *blocks;
	VkDeviceSize bytes;
	VkDeviceSize next_block[VK_MAX_MEMORY_TYPES]; /* growth, per type */
	struct small_piece *pieces;
	int npieces, cap_pieces;
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

static VkBufferUsageFlags buffer_usage(const struct gpu_context *ctx)
{
	return VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
	       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
	       VK_BUFFER_USAGE_TRANSFER_DST_BIT |
	       VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT |
	       (ctx->info.has_packs ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
				    : 0);
}

static int create_buffer(struct gpu_context *ctx, VkDeviceSize size,
			 VkBuffer *out)
{
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = buffer_usage(ctx),
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	GPU_CHECK(ctx, vkCreateBuffer(ctx->device, &info, NULL, out));
	return 0;
}

/* The memory types a buffer may live in, learnt once from a small one
 * (buffers of one usage share them). */
static int buffer_type_bits(struct gpu_context *ctx, uint32_t *bits)
{
	if (!ctx->buffer_type_bits) {
		VkBuffer probe;
		VkMemoryRequirements req;
		int rc = create_buffer(ctx, ARENA_ALIGN, &probe);
		if (rc)
			return rc;
		vkGetBufferMemoryRequirements(ctx->device, probe, &req);
		vkDestroyBuffer(ctx->device, probe, NULL);
		ctx->buffer_type_bits = req.memoryTypeBits;
	}
	*bits = ctx->buffer_type_bits;
	return 0;
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

static void block_free(struct gpu_context *ctx, struct arena_block *b)
{
	if (b->buffer)
		vkDestroyBuffer(ctx->device, b->buffer, NULL);
	gpu_memory_give(ctx, &b->piece);
	free(b);
}

static void small_give(struct gpu_context *ctx, const struct small_piece *p);

void gpu_arena_destroy(struct gpu_arena *arena)
{
	if (!arena)
		return;
	/* copies still waiting may name its buffers */
	gpu_transfers_flush(arena->ctx);
	for (int i = 0; i < arena->npieces; i++)
		small_give(arena->ctx, &arena->pieces[i]);
	free(arena->pieces);
	for (struct arena_block *b = arena->blocks, *next; b; b = next) {
		next = b->next;
		block_free(arena->ctx, b);
	}
	arena->ctx->bytes_in_use -= arena->bytes;
	free(arena);
}

/* The block's buffer made and bound to memory taken for it: the size
 * asked, else (the device nearly full) just what is needed. */
static int block_make(struct gpu_context *ctx, struct arena_block *b,
		      VkDeviceSize size, VkDeviceSize need, int map)
{
	VkMemoryRequirements req;
	VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	for (int attempt = 0; attempt < 2 && r != VK_SUCCESS; attempt++) {
		if (attempt && size == need)
			break;
		if (attempt) { /* the large block did not fit */
			vkDestroyBuffer(ctx->device, b->buffer, NULL);
			b->buffer = VK_NULL_HANDLE;
			size = need;
		}
		int rc = create_buffer(ctx, size, &b->buffer);
		if (rc)
			return rc;
		vkGetBufferMemoryRequirements(ctx->device, b->buffer, &req);
		r = gpu_memory_take(ctx, b->type, map, req.size, &b->piece);
	}
	if (r != VK_SUCCESS)
		return gpu_error(ctx, r, "vkAllocateMemory", __FILE__,
				 __LINE__);
	GPU_CHECK(ctx, vkBindBufferMemory(ctx->device, b->buffer,
					  b->piece.memory, b->piece.offset));
	if (ctx->info.has_packs) {
		VkBufferDeviceAddressInfo where = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
			.buffer = b->buffer,
		};
		b->address = vkGetBufferDeviceAddress(ctx->device, &where);
	}
	b->size = size;
	return 0;
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
	b->type = type;
	int rc = block_make(ctx, b, size, need, map);
	if (rc) {
		block_free(ctx, b);
		return rc;
	}
	b->next = a->blocks;
	a->blocks = b;
	a->bytes += b->size;
	ctx->bytes_in_use += b->size;
	if (ctx->bytes_in_use > ctx->bytes_peak)
		ctx->bytes_peak = ctx->bytes_in_use;
	*out = b;
	return 0;
}

/* A run of units free in b from its first free unit on, or -1. */
static int small_run(const struct small_block *b, int units)
{
	for (int u = 0, run = 0; u < (int)SMALL_UNITS; u++) {
		run = b->taken[u] ? 0 : run + 1;
		if (run == units)
			return u - units + 1;
	}
	return -1;
}

static void small_give(struct gpu_context *ctx, const struct small_piece *p)
{
	struct small_block *b = p->from;
	memset(&b->taken[p->unit], 0, (size_t)p->units);
	b->used -= p->units;
	if (b->used > 0)
		return;
	/* an empty block is freed unless it is the only one */
	if (ctx->small_blocks == b && !b->next)
		return;
	for (struct small_block **at = &ctx->small_blocks; *at;
	     at = &(*at)->next)
		if (*at == b) {
			*at = b->next;
			break;
		}
	ctx->bytes_in_use -= b->block->size;
	block_free(ctx, b->block);
	free(b);
}

void gpu_small_blocks_release(struct gpu_context *ctx)
{
	for (struct small_block *b = ctx->small_blocks, *next; b; b = next) {
		next = b->next;
		ctx->bytes_in_use -= b->block->size;
		block_free(ctx, b->block);
		free(b);
	}
	ctx->small_blocks = NULL;
}

/* room bytes of a shared small block of memory type type, noted in the
 * arena's pieces. */
static int small_take(struct gpu_arena *arena, uint32_t type, VkDeviceSize room,
		      struct gpu_buffer *out)
{
	struct gpu_context *ctx = arena->ctx;
	int units = (int)((room + SMALL_UNIT - 1) / SMALL_UNIT), at = -1;
	if (arena->npieces == arena->cap_pieces) {
		int cap = arena->cap_pieces ? 2 * arena->cap_pieces : 4;
		struct small_piece *p =
		    realloc(arena->pieces, (size_t)cap * sizeof(*p));
		if (!p)
			return ERR_NOMEM;
		arena->pieces = p;
		arena->cap_pieces = cap;
	}
	struct small_block *b = ctx->small_blocks;
	for (; b; b = b->next)
		if (b->block->type == type &&
		    (int)SMALL_UNITS - b->used >= units &&
		    (at = small_run(b, units)) >= 0)
			break;
	if (!b) {
		b = calloc(1, sizeof(*b));
		struct arena_block *block = calloc(1, sizeof(*block));
		int rc = b && block ? 0 : ERR_NOMEM;
		if (block)
			block->type = type;
		rc = rc ? rc
			: block_make(ctx, block, SMALL_BLOCK, SMALL_BLOCK, 1);
		if (rc) {
			if (block)
				block_free(ctx, block);
			free(b);
			return rc;
		}
		b->block = block;
		b->next = ctx->small_blocks;
		ctx->small_blocks = b;
		ctx->bytes_in_use += block->size;
		if (ctx->bytes_in_use > ctx->bytes_peak)
			ctx->bytes_peak = ctx->bytes_in_use;
		at = 0;
	}
	memset(&b->taken[at], 1, (size_t)units);
	b->used += units;
	arena->pieces[arena->npieces++] = (struct small_piece){ b, at, units };
	VkDeviceSize offset = (VkDeviceSize)at * SMALL_UNIT;
	out->handle = b->block->buffer;
	out->offset = offset;
	out->mapped = (char *)b->block->piece.mapped + offset;
	out->address = b->block->address ? b->block->address + offset : 0;
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
	/* room for whole words: fills take words (transfer.c) */
	VkDeviceSize room = (size + 3) & ~(VkDeviceSize)3;
	if (size > ctx->info.max_storage_range)
		return ERR_TOO_LARGE;

	uint32_t bits;
	int rc = buffer_type_bits(ctx, &bits);
	if (rc)
		return rc;
	VkMemoryPropertyFlags want =
	    host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
			       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
			 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	/* the host reads what it maps (every fit's loss sums, every epoch):
	 * cached memory where the device has it, as reads of write-combined
	 * memory go one by one over the bus */
	int type =
	    host_visible
		? find_memory_type(ctx, bits,
				   want | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
		: -1;
	if (type < 0)
		type = find_memory_type(ctx, bits, want);
	if (type < 0 && !host_visible)
		type = find_memory_type(ctx, bits, 0);
	if (type < 0)
		return ERR_DEVICE_OOM;
	if (host_visible && room <= SMALL_MOST &&
	    !ctx->switches.dense_visible_off) {
		rc = small_take(arena, (uint32_t)type, room, out);
		out->size = rc ? 0 : size;
		return rc;
	}

	struct arena_block *block = NULL;
	VkDeviceSize offset = 0;
	for (struct arena_block *b = arena->blocks; b; b = b->next) {
		if (b->type != (uint32_t)type ||
		    !!b->piece.mapped != !!host_visible)
			continue;
		offset =
		    (b->used + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
		if (offset + room <= b->size) {
			block = b;
			break;
		}
	}
	if (!block) {
		rc = new_block(arena, (uint32_t)type, room, host_visible,
			       &block);
		if (rc)
			return rc;
		offset = 0;
	}
	block->used = offset + room;
	out->handle = block->buffer;
	out->offset = offset;
	out->size = size;
	out->mapped =
	    block->piece.mapped ? (char *)block->piece.mapped + offset : NULL;
	out->address = block->address ? block->address + offset : 0;
	return 0;
}

uint64_t gpu_arena_bytes(const struct gpu_arena *arena) { return arena->bytes; }
