/*
 * transfer.c - copies between the host and device buffers, batched.
 *
 * An upload or a fill does not wait: its data is copied at once into the
 * context's staging buffer (so the caller may free its own), and the copy
 * is recorded into a command buffer of waiting transfers that goes to the
 * queue first with the next submission (a program's run, a download, or
 * gpu_transfers_flush). Building a fit thus costs no round trip to the
 * device per buffer, and a batch of fits built together shares one. A
 * download records its copy behind the waiting ones and waits for them
 * all. A barrier separates every two transfers and ends the batch, so they
 * take effect in the order they were asked, before anything submitted
 * after them.
 *
 * The staging buffer lives as long as the context and grows, by doubling
 * up to STAGING_MAX, to the largest request; a copy larger than that goes
 * in pieces. Before an arena is destroyed the waiting copies are
 * submitted (memory.c), since they may name its buffers.
 */
#include "gpu/internal.h"

#include <stdlib.h>
#include <string.h>

#define STAGING_FIRST (1ull << 20)
#define STAGING_MAX (64ull << 20)

static void transfer_barrier(VkCommandBuffer cmd)
{
	VkMemoryBarrier barrier = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask =
		    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
		    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
		    VK_ACCESS_HOST_READ_BIT |
		    VK_ACCESS_INDIRECT_COMMAND_READ_BIT, /* a pack's counts */
	};
	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
				 VK_PIPELINE_STAGE_TRANSFER_BIT |
				 VK_PIPELINE_STAGE_HOST_BIT |
				 VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
			     0, 1, &barrier, 0, NULL, 0, NULL);
}

/* The command buffer of waiting transfers, begun if there is none; a
 * barrier behind the transfers already in it. */
static int pending_next(struct gpu_context *ctx, VkCommandBuffer *out)
{
	if (ctx->lost)
		return ERR_DEVICE_LOST;
	if (!ctx->pending) {
		int rc = gpu_oneshot_begin(ctx, &ctx->pending);
		if (rc) {
			ctx->pending = VK_NULL_HANDLE;
			return rc;
		}
		ctx->pending_ops = 0;
	} else if (ctx->pending_ops) {
		transfer_barrier(ctx->pending);
	}
	ctx->pending_ops++;
	*out = ctx->pending;
	return 0;
}

int gpu_transfers_take(struct gpu_context *ctx, VkCommandBuffer *out)
{
	VkCommandBuffer cmd = ctx->pending;
	*out = VK_NULL_HANDLE;
	if (!cmd)
		return 0;
	ctx->pending = VK_NULL_HANDLE;
	ctx->pending_ops = 0;
	transfer_barrier(cmd);
	VkResult r = vkEndCommandBuffer(cmd);
	if (r != VK_SUCCESS) {
		/* the transfers are lost: the caller's submission fails */
		vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &cmd);
		ctx->stage_used = 0;
		return gpu_error(ctx, r, "vkEndCommandBuffer", __FILE__,
				 __LINE__);
	}
	*out = cmd;
	return 0;
}

void gpu_transfers_done(struct gpu_context *ctx, VkCommandBuffer cmd)
{
	if (cmd)
		vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &cmd);
	ctx->stage_used = 0;
}

int gpu_transfers_flush(struct gpu_context *ctx)
{
	if (!ctx->pending) {
		ctx->stage_used = 0;
		return 0;
	}
	return gpu_submit_wait(ctx, NULL, 0);
}

void gpu_transfers_release(struct gpu_context *ctx)
{
	if (ctx->pending)
		vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1,
				     &ctx->pending);
	ctx->pending = VK_NULL_HANDLE;
	ctx->pending_ops = 0;
	struct gpu_arena *arena = ctx->stage_arena;
	ctx->stage_arena = NULL; /* so that its destruction flushes nothing */
	gpu_arena_destroy(arena);
	memset(&ctx->stage, 0, sizeof(ctx->stage));
	ctx->stage_used = 0;
}

/* Room for size bytes (at most STAGING_MAX) in the staging buffer: the
 * waiting transfers are submitted first when it is full, and it grows
 * when it is too small. */
static int stage_reserve(struct gpu_context *ctx, VkDeviceSize size,
			 VkDeviceSize *offset)
{
	size = (size + 15) & ~(VkDeviceSize)15;
	if (ctx->stage_arena && ctx->stage_used + size <= ctx->stage.size) {
		*offset = ctx->stage_used;
		ctx->stage_used += size;
		return 0;
	}
	int rc = gpu_transfers_flush(ctx);
	if (rc)
		return rc;
	if (!ctx->stage_arena || size > ctx->stage.size) {
		VkDeviceSize want =
		    ctx->stage.size ? ctx->stage.size : STAGING_FIRST;
		while (want < size)
			want *= 2;
		if (want > STAGING_MAX)
			want = STAGING_MAX;
		struct gpu_arena *old = ctx->stage_arena;
		ctx->stage_arena = NULL;
		gpu_arena_destroy(old);
		memset(&ctx->stage, 0, sizeof(ctx->stage));
		struct gpu_arena *arena = NULL;
		rc = gpu_arena_create(ctx, &arena);
		rc = rc ? rc : gpu_buffer_alloc(arena, want, 1, &ctx->stage);
		if (rc) {
			gpu_arena_destroy(arena);
			memset(&ctx->stage, 0, sizeof(ctx->stage));
			return rc;
		}
		ctx->stage_arena = arena;
	}
	*offset = 0;
	ctx->stage_used = size;
	return 0;
}

/* Moves size bytes between host memory and buf at offset, through the
 * staging buffer unless buf is mapped; to_device says which way. An
 * upload only records its copies; a download waits for them. */
static int transfer(struct gpu_context *ctx, const struct gpu_buffer *buf,
		    VkDeviceSize offset, void *host, VkDeviceSize size,
		    int to_device)
{
	if (buf->mapped) {
		/* a mapped buffer is only written by programs, each waited
		 * for, and by the host: the waiting transfers never name it */
		char *at = (char *)buf->mapped + offset;
		memcpy(to_device ? at : host, to_device ? host : at, size);
		return 0;
	}
	for (VkDeviceSize done = 0; done < size;) {
		VkDeviceSize n =
		    size - done < STAGING_MAX ? size - done : STAGING_MAX;
		VkDeviceSize at;
		VkCommandBuffer cmd;
		int rc = stage_reserve(ctx, n, &at);
		rc = rc ? rc : pending_next(ctx, &cmd);
		if (rc)
			return rc;
		char *staged = (char *)ctx->stage.mapped + at;
		char *part = (char *)host + done;
		if (to_device) {
			memcpy(staged, part, n);
			VkBufferCopy region = { ctx->stage.offset + at,
						buf->offset + offset + done,
						n };
			vkCmdCopyBuffer(cmd, ctx->stage.handle, buf->handle, 1,
					&region);
		} else {
			VkBufferCopy region = { buf->offset + offset + done,
						ctx->stage.offset + at, n };
			vkCmdCopyBuffer(cmd, buf->handle, ctx->stage.handle, 1,
					&region);
			rc = gpu_transfers_flush(ctx);
			if (rc)
				return rc;
			memcpy(part, staged, n);
		}
		done += n;
	}
	return 0;
}

int gpu_upload(struct gpu_context *ctx, const struct gpu_buffer *dst,
	       VkDeviceSize offset, const void *data, VkDeviceSize size)
{
	return transfer(ctx, dst, offset, (void *)data, size, 1);
}

int gpu_download(struct gpu_context *ctx, const struct gpu_buffer *src,
		 VkDeviceSize offset, void *data, VkDeviceSize size)
{
	return transfer(ctx, src, offset, data, size, 0);
}

/* The copies of list[from, to) that went through the staging buffer
 * (at[i]), waited for and moved to the host. */
static int copy_out(struct gpu_context *ctx, const struct gpu_copy *list,
		    const VkDeviceSize *at, int from, int to)
{
	int rc = gpu_transfers_flush(ctx);
	for (int i = from; rc == 0 && i < to; i++)
		if (at[i] != (VkDeviceSize)-1)
			memcpy(list[i].host, (char *)ctx->stage.mapped + at[i],
			       list[i].size);
	return rc;
}

int gpu_download_many(struct gpu_context *ctx, const struct gpu_copy *list,
		      int n)
{
	VkDeviceSize *at = calloc((size_t)(n > 0 ? n : 1), sizeof(*at));
	if (!at)
		return ERR_NOMEM;
	int rc = 0, first = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		const struct gpu_copy *c = &list[i];
		VkDeviceSize size = (c->size + 15) & ~(VkDeviceSize)15;
		at[i] = (VkDeviceSize)-1;
		if (c->buf->mapped || !c->size)
			continue;         /* copied at the end */
		if (size > STAGING_MAX) { /* alone, in pieces */
			rc = copy_out(ctx, list, at, first, i);
			first = i + 1;
			rc = rc ? rc
				: transfer(ctx, c->buf, c->offset, c->host,
					   c->size, 0);
			continue;
		}
		if (!ctx->stage_arena ||
		    ctx->stage_used + size > ctx->stage.size) {
			/* the staging buffer is full: what it holds first */
			rc = copy_out(ctx, list, at, first, i);
			first = i;
		}
		VkCommandBuffer cmd;
		rc = rc ? rc : stage_reserve(ctx, c->size, &at[i]);
		rc = rc ? rc : pending_next(ctx, &cmd);
		if (rc)
			break;
		VkBufferCopy region = { c->buf->offset + c->offset,
					ctx->stage.offset + at[i], c->size };
		vkCmdCopyBuffer(cmd, c->buf->handle, ctx->stage.handle, 1,
				&region);
	}
	rc = rc ? rc : copy_out(ctx, list, at, first, n);
	for (int i = 0; rc == 0 && i < n; i++)
		if (list[i].buf->mapped && list[i].size)
			memcpy(list[i].host,
			       (char *)list[i].buf->mapped + list[i].offset,
			       list[i].size);
	free(at);
	return rc;
}

int gpu_fill_zero(struct gpu_context *ctx, const struct gpu_buffer *dst)
{
	VkCommandBuffer cmd;
	int rc = pending_next(ctx, &cmd);
	if (rc)
		return rc;
	/* the whole words: a buffer's room ends on one (memory.c) */
	vkCmdFillBuffer(cmd, dst->handle, dst->offset,
			(dst->size + 3) & ~(VkDeviceSize)3, 0);
	return 0;
}
