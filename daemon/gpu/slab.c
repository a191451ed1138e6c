/*
 * slab.c - device memory taken from the driver in large slabs and carved
 * into the arenas' blocks (memory.c).
 *
 * An allocation costs a driver tens of microseconds or more, and each fit
 * of a dataset takes two or three blocks: a thousand fits made and freed
 * together cost about a second in vkAllocateMemory and vkFreeMemory
 * alone. So a block of at most SLAB_CARVE_MOST bytes is carved from a slab
 * of SLAB_BYTES, with one list of slabs per memory type and mapping; a
 * block given back returns its extent to its slab, and a slab left empty
 * is freed unless it is the only empty one of its kind (kept for the next
 * fit). A larger block is an allocation of its own, as is one that no new
 * slab can hold when the device is nearly full. Only the context's GPU
 * thread calls these, as it does everything else of the context.
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>

#define SLAB_BYTES (64ull << 20)
#define SLAB_CARVE_MOST (16ull << 20)
/* carved sizes and offsets are multiples of this (more than any buffer's
 * alignment asks) */
#define SLAB_UNIT (64ull << 10)

struct slab_extent {
	VkDeviceSize offset, size;
};

struct gpu_slab {
	struct gpu_slab *next;
	VkDeviceMemory memory;
	VkDeviceSize size, carved;
	uint32_t type;
	void *mapped;             /* the whole slab, when its kind is mapped */
	struct slab_extent *free; /* sorted by offset, none touching */
	int nfree, capfree;
};

static VkResult allocate(struct gpu_context *ctx, uint32_t type,
			 VkDeviceSize size, int map, VkDeviceMemory *memory,
			 void **mapped)
{
	VkMemoryAllocateFlagsInfo flags = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
		.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
	};
	VkMemoryAllocateInfo info = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = ctx->info.has_packs ? &flags : NULL,
		.allocationSize = size,
		.memoryTypeIndex = type,
	};
	VkResult r = vkAllocateMemory(ctx->device, &info, NULL, memory);
	if (r != VK_SUCCESS)
		return r;
	*mapped = NULL;
	if (map) {
		r = vkMapMemory(ctx->device, *memory, 0, VK_WHOLE_SIZE, 0,
				mapped);
		if (r != VK_SUCCESS)
			vkFreeMemory(ctx->device, *memory, NULL);
	}
	return r;
}

static void slab_free(struct gpu_context *ctx, struct gpu_slab *s)
{
	if (s->mapped)
		vkUnmapMemory(ctx->device, s->memory);
	vkFreeMemory(ctx->device, s->memory, NULL);
	free(s->free);
	free(s);
}

/* Carves size bytes from s: its offset, or -1 when no extent holds it. */
static VkDeviceSize slab_carve(struct gpu_slab *s, VkDeviceSize size)
{
	for (int i = 0; i < s->nfree; i++) {
		struct slab_extent *e = &s->free[i];
		if (e->size < size)
			continue;
		VkDeviceSize offset = e->offset;
		e->offset += size;
		e->size -= size;
		if (e->size == 0) {
			memmove(e, e + 1,
				(size_t)(s->nfree - i - 1) * sizeof(*e));
			s->nfree--;
		}
		s->carved += size;
		return offset;
	}
	return (VkDeviceSize)-1;
}

/* Returns an extent to s, joined with the free ones it touches; 0, or
 * ERR_NOMEM (the extent is then lost to the slab until it ends). */
static int slab_return(struct gpu_slab *s, VkDeviceSize offset,
		       VkDeviceSize size)
{
	int i = 0;
	while (i < s->nfree && s->free[i].offset < offset)
		i++;
	s->carved -= size;
	int joins_before =
	    i > 0 && s->free[i - 1].offset + s->free[i - 1].size == offset;
	int joins_after = i < s->nfree && offset + size == s->free[i].offset;
	if (joins_before && joins_after) {
		s->free[i - 1].size += size + s->free[i].size;
		memmove(&s->free[i], &s->free[i + 1],
			(size_t)(s->nfree - i - 1) * sizeof(*s->free));
		s->nfree--;
		return 0;
	}
	if (joins_before) {
		s->free[i - 1].size += size;
		return 0;
	}
	if (joins_after) {
		s->free[i].offset = offset;
		s->free[i].size += size;
		return 0;
	}
	if (s->nfree == s->capfree) {
		int cap = s->capfree ? s->capfree * 2 : 8;
		struct slab_extent *p =
		    realloc(s->free, (size_t)cap * sizeof(*p));
		if (!p)
			return ERR_NOMEM;
		s->free = p;
		s->capfree = cap;
	}
	memmove(&s->free[i + 1], &s->free[i],
		(size_t)(s->nfree - i) * sizeof(*s->free));
	s->free[i] = (struct slab_extent){ offset, size };
	s->nfree++;
	return 0;
}

/* A new slab of the kind, in the context's list; NULL when the device
 * cannot give one (the caller then allocates the block alone). */
static struct gpu_slab *slab_new(struct gpu_context *ctx, uint32_t type,
				 int map)
{
	VkDeviceSize size = SLAB_BYTES;
	if (ctx->info.max_allocation && size > ctx->info.max_allocation)
		return NULL;
	struct gpu_slab *s = calloc(1, sizeof(*s));
	if (!s || !(s->free = malloc(8 * sizeof(*s->free)))) {
		free(s);
		return NULL;
	}
	if (allocate(ctx, type, size, map, &s->memory, &s->mapped)) {
		free(s->free);
		free(s);
		return NULL;
	}
	s->capfree = 8;
	s->nfree = 1;
	s->free[0] = (struct slab_extent){ 0, size };
	s->size = size;
	s->type = type;
	s->next = ctx->slabs;
	ctx->slabs = s;
	return s;
}

VkResult gpu_memory_take(struct gpu_context *ctx, uint32_t type, int map,
			 VkDeviceSize size, struct gpu_memory_piece *out)
{
	memset(out, 0, sizeof(*out));
	if (size <= SLAB_CARVE_MOST) {
		VkDeviceSize want =
		    (size + SLAB_UNIT - 1) / SLAB_UNIT * SLAB_UNIT;
		struct gpu_slab *s = ctx->slabs;
		VkDeviceSize at = (VkDeviceSize)-1;
		for (; s; s = s->next)
			if (s->type == type && !!s->mapped == !!map &&
			    (at = slab_carve(s, want)) != (VkDeviceSize)-1)
				break;
		if (!s && (s = slab_new(ctx, type, map)))
			at = slab_carve(s, want);
		if (s && at != (VkDeviceSize)-1) {
			*out = (struct gpu_memory_piece){
				.memory = s->memory,
				.offset = at,
				.size = want,
				.mapped =
				    s->mapped ? (char *)s->mapped + at : NULL,
				.slab = s,
			};
			return VK_SUCCESS;
		}
	}
	VkResult r = allocate(ctx, type, size, map, &out->memory, &out->mapped);
	if (r == VK_SUCCESS)
		out->size = size;
	return r;
}

/* Whether another slab of s's kind is empty too. */
static int another_empty(const struct gpu_context *ctx,
			 const struct gpu_slab *s)
{
	for (const struct gpu_slab *o = ctx->slabs; o; o = o->next)
		if (o != s && o->type == s->type &&
		    !!o->mapped == !!s->mapped && o->carved == 0)
			return 1;
	return 0;
}

void gpu_memory_give(struct gpu_context *ctx, struct gpu_memory_piece *p)
{
	struct gpu_slab *s = p->slab;
	if (!p->memory)
		return;
	if (!s) {
		if (p->mapped)
			vkUnmapMemory(ctx->device, p->memory);
		vkFreeMemory(ctx->device, p->memory, NULL);
	} else if (slab_return(s, p->offset, p->size) == 0 && s->carved == 0 &&
		   another_empty(ctx, s)) {
		for (struct gpu_slab **at = &ctx->slabs; *at; at = &(*at)->next)
			if (*at == s) {
				*at = s->next;
				break;
			}
		slab_free(ctx, s);
	}
	memset(p, 0, sizeof(*p));
}

void gpu_slabs_release(struct gpu_context *ctx)
{
	for (struct gpu_slab *s = ctx->slabs, *next; s; s = next) {
		next = s->next;
		slab_free(ctx, s);
	}
	ctx->slabs = NULL;
}
