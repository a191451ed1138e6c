/*
 * program.c - recorded command buffers ("programs") and their timestamps.
 *
 * A program is recorded once (dispatches with their descriptor sets,
 * barriers, zero fills, timestamps) and run as often as needed: the fit
 * records one per tile plan and replays it every epoch, so the host does
 * no per-epoch work beyond a submit and a wait. Recording only notes the
 * ops; the command buffer, its descriptor sets (from pools that the
 * program owns and grows) and its timestamp queries are made at the first
 * run. A fit that only ever runs inside a pack (whose packed programs are
 * made from the notes) thus costs no Vulkan objects for its own programs.
 */
#include "gpu/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETS_PER_POOL 256

static void barrier(VkCommandBuffer cmd);
static void release_commands(struct gpu_program *prog);

struct pool_node {
	struct pool_node *next;
	VkDescriptorPool pool;
	int used;
};

/* What a program recorded, op by op, so that programs recorded alike can
 * be packed into one (gpu_pack_program_create, pack.c). */
enum op_kind { OP_DISPATCH, OP_BARRIER, OP_TIMESTAMP };
struct program_op {
	enum op_kind kind;
	struct gpu_pipeline *pipe;
	uint64_t address[GPU_MAX_BINDINGS]; /* the buffers bound */
	VkBuffer handle[GPU_MAX_BINDINGS];  /* the same, for descriptors */
	VkDeviceSize offset[GPU_MAX_BINDINGS], range[GPU_MAX_BINDINGS];
	uint32_t push[GPU_MAX_PUSH / 4];
	uint32_t groups[3];
};

/* One slot's entry for one dispatch in the table of a packed program;
 * shaders/packed.glsl reads it (struct PkEntry). */
struct pack_entry {
	uint32_t push[GPU_MAX_PUSH / 4];
	uint64_t address[GPU_MAX_BINDINGS];
	uint32_t groups[4];
	uint32_t pad[12];
};
_Static_assert(sizeof(struct pack_entry) == 256, "PkEntry is 256 bytes");

struct gpu_program {
	struct gpu_context *ctx;
	VkCommandBuffer
	    cmd;   /* made at the first run (a packed one's, at once) */
	int ended; /* gpu_program_end called */
	struct pool_node *pools;
	VkQueryPool queries;
	int max_timestamps, timestamps;
	uint64_t *ticks;
	int error; /* first recording error, reported by end */
	struct gpu_profile_marks prof; /* VKINR_PROFILE's stamps */
	struct program_op *ops;
	int nops, ops_cap, ndispatch;
	/* a packed program's slot table lives here */
	struct gpu_arena *arena;
	struct pack_slots *pk; /* a packed program's slots */
};

/* One vkCmdDispatchIndirect of a packed program: slots s0 to s0 + count
 * - 1 of one dispatch, groups[2] workgroups in z a slot. */
struct pack_chunk {
	uint32_t groups[3];
	uint32_t s0, count;
};

/*
 * A packed program's slots (gpu_pack_program_set): the dispatches it was
 * recorded with (the template: pipelines, barriers, the most workgroups a
 * slot may have), and the table of entries, dispatch by dispatch and
 * slot by slot, kept on the host too; the slots changed since the last
 * gpu_pack_program_sync are lo to hi.
 */
struct pack_slots {
	int cap, ndispatch;
	struct program_op *ops; /* template; groups: the most a slot has */
	int nops;
	struct pack_entry *mirror; /* ndispatch x cap */
	struct gpu_buffer table;
	int lo, hi; /* dirty slots, lo > hi: none */
	/* the dispatches' workgroup counts, read by the device when the
	 * program runs (uploaded as the table is, with the next submission;
	 * a host-visible buffer would take a block of its own): the slots
	 * past the last one used get none (gpu_pack_program_use) */
	struct pack_chunk *chunks;
	VkDispatchIndirectCommand *counts_mirror;
	int nchunks, used;
	struct gpu_buffer counts;
};

static void note_op(struct gpu_program *prog, const struct program_op *op)
{
	if (prog->error)
		return;
	if (prog->nops == prog->ops_cap) {
		int cap = prog->ops_cap ? 2 * prog->ops_cap : 64;
		struct program_op *ops =
		    realloc(prog->ops, (size_t)cap * sizeof(*ops));
		if (!ops) {
			prog->error = ERR_NOMEM;
			return;
		}
		prog->ops = ops;
		prog->ops_cap = cap;
	}
	prog->ops[prog->nops++] = *op;
}

int gpu_program_create(struct gpu_context *ctx, int max_timestamps,
		       struct gpu_program **out)
{
	struct gpu_program *prog = calloc(1, sizeof(*prog));
	if (!prog)
		return ERR_NOMEM;
	prog->ctx = ctx;
	if (max_timestamps > 0 && ctx->timestamp_period > 0) {
		prog->max_timestamps = max_timestamps;
		prog->ticks = calloc((size_t)max_timestamps, sizeof(uint64_t));
		if (!prog->ticks) {
			free(prog);
			return ERR_NOMEM;
		}
	}
	*out = prog;
	return 0;
}

/* The command buffer begun, and the timestamp queries made and reset. */
static int begin_commands(struct gpu_program *prog)
{
	struct gpu_context *ctx = prog->ctx;
	VkCommandBufferAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = ctx->command_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkResult r = vkAllocateCommandBuffers(ctx->device, &alloc, &prog->cmd);
	if (r == VK_SUCCESS && prog->max_timestamps > 0) {
		VkQueryPoolCreateInfo qi = {
			.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
			.queryType = VK_QUERY_TYPE_TIMESTAMP,
			.queryCount = (uint32_t)prog->max_timestamps,
		};
		r = vkCreateQueryPool(ctx->device, &qi, NULL, &prog->queries);
	}
	if (r == VK_SUCCESS) {
		VkCommandBufferBeginInfo begin = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		};
		r = vkBeginCommandBuffer(prog->cmd, &begin);
	}
	if (r != VK_SUCCESS)
		return gpu_error(ctx, r, "program setup", __FILE__, __LINE__);
	if (prog->queries)
		vkCmdResetQueryPool(prog->cmd, prog->queries, 0,
				    (uint32_t)prog->max_timestamps);
	return 0;
}

/* The Vulkan side of a program: its command buffer, descriptor pools and
 * queries (the notes stay). */
static void release_commands(struct gpu_program *prog)
{
	VkDevice dev = prog->ctx->device;
	for (struct pool_node *p = prog->pools, *next; p; p = next) {
		next = p->next;
		vkDestroyDescriptorPool(dev, p->pool, NULL);
		free(p);
	}
	prog->pools = NULL;
	gpu_profile_release(prog->ctx, &prog->prof);
	if (prog->queries)
		vkDestroyQueryPool(dev, prog->queries, NULL);
	prog->queries = VK_NULL_HANDLE;
	if (prog->cmd)
		vkFreeCommandBuffers(dev, prog->ctx->command_pool, 1,
				     &prog->cmd);
	prog->cmd = VK_NULL_HANDLE;
}

void gpu_program_destroy(struct gpu_program *prog)
{
	if (!prog)
		return;
	release_commands(prog);
	free(prog->ticks);
	free(prog->ops);
	if (prog->pk) {
		free(prog->pk->ops);
		free(prog->pk->mirror);
		free(prog->pk->chunks);
		free(prog->pk->counts_mirror);
		free(prog->pk);
	}
	gpu_arena_destroy(prog->arena);
	free(prog);
}

static int allocate_set(struct gpu_program *prog, VkDescriptorSetLayout layout,
			VkDescriptorSet *set)
{
	struct gpu_context *ctx = prog->ctx;
	struct pool_node *node = prog->pools;
	if (!node || node->used == SETS_PER_POOL) {
		node = calloc(1, sizeof(*node));
		if (!node)
			return ERR_NOMEM;
		VkDescriptorPoolSize size = {
			VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			SETS_PER_POOL * GPU_MAX_BINDINGS,
		};
		VkDescriptorPoolCreateInfo info = {
			.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
			.maxSets = SETS_PER_POOL,
			.poolSizeCount = 1,
			.pPoolSizes = &size,
		};
		VkResult r = vkCreateDescriptorPool(ctx->device, &info, NULL,
						    &node->pool);
		if (r != VK_SUCCESS) {
			free(node);
			return gpu_error(ctx, r, "vkCreateDescriptorPool",
					 __FILE__, __LINE__);
		}
		node->next = prog->pools;
		prog->pools = node;
	}
	VkDescriptorSetAllocateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = node->pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &layout,
	};
	GPU_CHECK(ctx, vkAllocateDescriptorSets(ctx->device, &info, set));
	node->used++;
	return 0;
}

int gpu_program_dispatch(struct gpu_program *prog, struct gpu_pipeline *pipe,
			 const struct gpu_buffer *const *buffers, int nbuffers,
			 const void *push, uint32_t push_bytes, uint32_t gx,
			 uint32_t gy, uint32_t gz)
{
	if (prog->error)
		return prog->error;
	if (nbuffers != pipe->nbindings || push_bytes != pipe->push_bytes ||
	    prog->cmd)
		return prog->error = ERR_INVALID;
	struct program_op op = { .kind = OP_DISPATCH,
				 .pipe = pipe,
				 .groups = { gx, gy, gz } };
	for (int i = 0; i < nbuffers; i++) {
		op.address[i] = buffers[i]->address;
		op.handle[i] = buffers[i]->handle;
		op.offset[i] = buffers[i]->offset;
		op.range[i] = buffers[i]->size;
	}
	memcpy(op.push, push, push_bytes);
	note_op(prog, &op);
	prog->ndispatch++;
	return prog->error;
}

/* A noted dispatch into the command buffer, with its descriptor set. */
static int replay_dispatch(struct gpu_program *prog,
			   const struct program_op *op)
{
	struct gpu_pipeline *pipe = op->pipe;
	VkDescriptorSet set;
	int rc = gpu_pipeline_ready(prog->ctx, pipe);
	rc = rc ? rc : allocate_set(prog, pipe->set_layout, &set);
	if (rc)
		return rc;
	VkDescriptorBufferInfo infos[GPU_MAX_BINDINGS];
	VkWriteDescriptorSet writes[GPU_MAX_BINDINGS];
	for (int i = 0; i < pipe->nbindings; i++) {
		infos[i] =
		    (VkDescriptorBufferInfo){ op->handle[i], op->offset[i],
					      op->range[i] };
		writes[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = set,
			.dstBinding = (uint32_t)i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i],
		};
	}
	vkUpdateDescriptorSets(prog->ctx->device, (uint32_t)pipe->nbindings,
			       writes, 0, NULL);
	vkCmdBindPipeline(prog->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
			  pipe->pipeline);
	vkCmdBindDescriptorSets(prog->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				pipe->layout, 0, 1, &set, 0, NULL);
	if (pipe->push_bytes)
		vkCmdPushConstants(prog->cmd, pipe->layout,
				   VK_SHADER_STAGE_COMPUTE_BIT, 0,
				   pipe->push_bytes, op->push);
	if (op->groups[0] && op->groups[1] && op->groups[2])
		vkCmdDispatch(prog->cmd, op->groups[0], op->groups[1],
			      op->groups[2]);
	return 0;
}

void gpu_program_barrier(struct gpu_program *prog)
{
	note_op(prog, &(struct program_op){ .kind = OP_BARRIER });
}

static void barrier(VkCommandBuffer cmd)
{
	VkMemoryBarrier barrier = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask =
		    VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask =
		    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
		    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	vkCmdPipelineBarrier(cmd,
			     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
				 VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
				 VK_PIPELINE_STAGE_TRANSFER_BIT,
			     0, 1, &barrier, 0, NULL, 0, NULL);
}

/* A timestamp slot taken; written at once into a packed program's
 * commands, else noted. */
int gpu_program_timestamp(struct gpu_program *prog)
{
	if (!prog->max_timestamps || prog->timestamps == prog->max_timestamps)
		return -1;
	if (prog->cmd)
		vkCmdWriteTimestamp(prog->cmd,
				    VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				    prog->queries, (uint32_t)prog->timestamps);
	else
		note_op(prog, &(struct program_op){ .kind = OP_TIMESTAMP });
	return prog->timestamps++;
}

int gpu_program_end(struct gpu_program *prog)
{
	if (!prog->error)
		prog->ended = 1;
	return prog->error;
}

/* The command buffer of a program recorded as notes, made from them. */
static int make_commands(struct gpu_program *prog)
{
	if (prog->error)
		return prog->error;
	if (!prog->ended)
		return ERR_INVALID;
	int rc = begin_commands(prog), stamp = 0;
	rc = rc ? rc
		: gpu_profile_begin(prog->ctx, &prog->prof, prog->cmd,
				    prog->ndispatch);
	for (int i = 0; rc == 0 && i < prog->nops; i++) {
		const struct program_op *op = &prog->ops[i];
		switch (op->kind) {
		case OP_DISPATCH:
			rc = replay_dispatch(prog, op);
			gpu_profile_after(&prog->prof, prog->cmd,
					  op->pipe->variant);
			break;
		case OP_BARRIER:
			barrier(prog->cmd);
			break;
		case OP_TIMESTAMP:
			vkCmdWriteTimestamp(
			    prog->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
			    prog->queries, (uint32_t)stamp++);
			break;
		}
	}
	if (rc == 0) {
		VkResult r = vkEndCommandBuffer(prog->cmd);
		if (r != VK_SUCCESS)
			rc = gpu_error(prog->ctx, r, "vkEndCommandBuffer",
				       __FILE__, __LINE__);
	}
	if (rc) /* made again at the next run */
		release_commands(prog);
	return rc;
}

static int read_timestamps(struct gpu_program *prog)
{
	if (!prog->queries || !prog->timestamps)
		return 0;
	VkResult r = vkGetQueryPoolResults(
	    prog->ctx->device, prog->queries, 0, (uint32_t)prog->timestamps,
	    (size_t)prog->timestamps * sizeof(uint64_t), prog->ticks,
	    sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
	if (r != VK_SUCCESS && r != VK_NOT_READY)
		return gpu_error(prog->ctx, r, "vkGetQueryPoolResults",
				 __FILE__, __LINE__);
	return 0;
}

int gpu_programs_start(struct gpu_program *const *progs, int n)
{
	VkCommandBuffer cmds[GPU_MOST_SUBMITTED] = { 0 };
	if (n < 1 || n > GPU_MOST_SUBMITTED)
		return ERR_INVALID;
	for (int i = 0; i < n; i++) {
		int rc = progs[i]->cmd ? 0 : make_commands(progs[i]);
		if (rc)
			return rc;
		cmds[i] = progs[i]->cmd;
	}
	return gpu_submit_start(progs[0]->ctx, cmds, n);
}

int gpu_programs_finish(struct gpu_program *const *progs, int n)
{
	if (n < 1)
		return 0;
	int rc = gpu_submit_finish(progs[0]->ctx);
	for (int i = 0; rc == 0 && i < n; i++) {
		rc = read_timestamps(progs[i]);
		gpu_profile_collect(progs[i]->ctx, &progs[i]->prof);
	}
	return rc;
}

int gpu_programs_run(struct gpu_program *const *progs, int n)
{
	int rc = gpu_programs_start(progs, n);
	return rc ? rc : gpu_programs_finish(progs, n);
}

int gpu_program_run(struct gpu_program *prog)
{
	return gpu_programs_run(&prog, 1);
}

double gpu_program_elapsed_ms(const struct gpu_program *prog, int from, int to)
{
	if (!prog->queries || from < 0 || to < 0 || from >= prog->timestamps ||
	    to >= prog->timestamps)
		return 0;
	uint64_t a = prog->ticks[from], b = prog->ticks[to];
	return b >= a ? (double)(b - a) * prog->ctx->timestamp_period * 1e-6
		      : 0;
}

/* ------------------------------------------------------------ packs */

int gpu_programs_alike(const struct gpu_program *a, const struct gpu_program *b)
{
	if (a->nops != b->nops || a->arena || b->arena)
		return 0;
	for (int i = 0; i < a->nops; i++) {
		const struct program_op *x = &a->ops[i], *y = &b->ops[i];
		if (x->kind != y->kind || x->pipe != y->pipe)
			return 0;
	}
	return 1;
}

/* What a packed dispatch pushes (packed.glsl's PackPush). */
struct pack_push {
	uint64_t table; /* this dispatch's first entry */
	uint64_t mask;
	uint32_t zdim;  /* workgroups in z a slot */
	uint32_t slot0; /* the first slot of this dispatch */
};

static int packed_pipeline(struct gpu_context *ctx,
			   const struct gpu_pipeline *p,
			   struct gpu_pipeline **out)
{
	char name[80];
	snprintf(name, sizeof(name), "%s_pk", p->variant);
	return gpu_pipeline_get(ctx, name, 0, sizeof(struct pack_push), p->spec,
				p->nspec, out);
}

/* The slots one dispatch of z workgroups a slot covers. */
static uint32_t slots_a_dispatch(const struct gpu_context *ctx, uint32_t z)
{
	uint32_t zlimit =
	    ctx->info.max_groups_z ? ctx->info.max_groups_z : 65535;
	return zlimit / z;
}

/* The indirect dispatches a packed program of cap slots makes: one for
 * each run of slots_a_dispatch slots of each dispatch of the template;
 * -1 when a slot's z alone is past the device's limit (checked here, once,
 * for record_packed_dispatch). */
static int count_chunks(const struct gpu_context *ctx,
			const struct pack_slots *pk)
{
	int n = 0;
	for (int op = 0; op < pk->nops; op++) {
		const uint32_t *g = pk->ops[op].groups;
		if (pk->ops[op].kind != OP_DISPATCH || !g[0] || !g[1] || !g[2])
			continue;
		uint32_t per = slots_a_dispatch(ctx, g[2]);
		if (per < 1)
			return -1;
		n += (int)((pk->cap + per - 1) / per);
	}
	return n;
}

/* Each chunk's workgroup counts for the first used slots: a chunk past
 * them dispatches none, so that a pack of few fits in programs recorded
 * for more runs no workgroup that would only find its slot empty (on
 * lavapipe those cost as much as working ones). */
static int write_counts(struct gpu_context *ctx, struct pack_slots *pk,
			int used)
{
	VkDispatchIndirectCommand *cmd = pk->counts_mirror;
	for (int c = 0; c < pk->nchunks; c++) {
		const struct pack_chunk *ch = &pk->chunks[c];
		uint32_t live =
		    (uint32_t)used > ch->s0 ? (uint32_t)used - ch->s0 : 0;
		if (live > ch->count)
			live = ch->count;
		cmd[c] = (VkDispatchIndirectCommand){ live ? ch->groups[0] : 0,
						      live ? ch->groups[1] : 0,
						      ch->groups[2] * live };
	}
	pk->used = used;
	return pk->nchunks ? gpu_upload(ctx, &pk->counts, 0, cmd,
					(size_t)pk->nchunks * sizeof(*cmd))
			   : 0;
}

int gpu_pack_program_use(struct gpu_program *packed, int used)
{
	struct pack_slots *pk = packed->pk;
	if (!pk)
		return 0;
	used = used < 0 ? 0 : used > pk->cap ? pk->cap : used;
	return used != pk->used ? write_counts(packed->ctx, pk, used) : 0;
}

/* Records dispatch d of the pack, as chunks from *chunk on: the largest
 * workgroup counts of any slot, the slots spread over z in as few
 * dispatches as the device's limit allows (each slot's own counts are in
 * its entry), each dispatch's counts read from pk->counts. */
static int record_packed_dispatch(struct gpu_program *out, int *chunk,
				  const uint32_t gmax[3],
				  struct gpu_pipeline *slot_pipe,
				  uint64_t table, uint64_t mask)
{
	struct pack_slots *pk = out->pk;
	if (!gmax[0] || !gmax[1] || !gmax[2])
		return 0;
	struct gpu_pipeline *pipe;
	int rc = packed_pipeline(out->ctx, slot_pipe, &pipe);
	rc = rc ? rc : gpu_pipeline_ready(out->ctx, pipe);
	if (rc)
		return rc;
	uint32_t per = slots_a_dispatch(out->ctx, gmax[2]);
	vkCmdBindPipeline(out->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
			  pipe->pipeline);
	for (uint32_t s0 = 0; s0 < (uint32_t)pk->cap; s0 += per) {
		uint32_t count =
		    (uint32_t)pk->cap - s0 < per ? (uint32_t)pk->cap - s0 : per;
		struct pack_push push = { table, mask, gmax[2], s0 };
		vkCmdPushConstants(out->cmd, pipe->layout,
				   VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push),
				   &push);
		int c = (*chunk)++;
		pk->chunks[c] = (struct pack_chunk){
			{ gmax[0], gmax[1], gmax[2] }, s0, count
		};
		vkCmdDispatchIndirect(
		    out->cmd, pk->counts.handle,
		    pk->counts.offset +
			(VkDeviceSize)c * sizeof(VkDispatchIndirectCommand));
	}
	return 0;
}

/* The template of a packed program: progs[0]'s ops, each dispatch's
 * workgroups the most any of the n has. */
static struct program_op *template_of(struct gpu_program *const *progs, int n)
{
	int nops = progs[0]->nops;
	struct program_op *ops =
	    malloc((size_t)(nops ? nops : 1) * sizeof(*ops));
	if (!ops)
		return NULL;
	memcpy(ops, progs[0]->ops, (size_t)nops * sizeof(*ops));
	for (int op = 0; op < nops; op++)
		for (int s = 1; s < n; s++)
			for (int k = 0; k < 3; k++)
				if (progs[s]->ops[op].groups[k] >
				    ops[op].groups[k])
					ops[op].groups[k] =
					    progs[s]->ops[op].groups[k];
	return ops;
}

/* Slot's entries of the table from prog's dispatches (on the host). */
static void fill_slot(struct pack_slots *pk, int slot,
		      const struct gpu_program *prog)
{
	for (int op = 0, d = 0; op < pk->nops; op++) {
		if (pk->ops[op].kind != OP_DISPATCH)
			continue;
		const struct program_op *o = &prog->ops[op];
		struct pack_entry *e = &pk->mirror[(size_t)d * pk->cap + slot];
		memset(e, 0, sizeof(*e));
		memcpy(e->push, o->push, sizeof(e->push));
		memcpy(e->address, o->address, sizeof(e->address));
		memcpy(e->groups, o->groups, sizeof(o->groups));
		d++;
	}
	if (slot < pk->lo)
		pk->lo = slot;
	if (slot > pk->hi)
		pk->hi = slot;
}

int gpu_pack_program_sync(struct gpu_program *packed)
{
	struct pack_slots *pk = packed->pk;
	int rc = 0;
	if (!pk || pk->lo > pk->hi)
		return 0;
	size_t from = (size_t)pk->lo, count = (size_t)(pk->hi - pk->lo + 1);
	for (int d = 0; rc == 0 && d < pk->ndispatch; d++) {
		size_t at = (size_t)d * pk->cap + from;
		rc = gpu_upload(packed->ctx, &pk->table,
				at * sizeof(struct pack_entry), &pk->mirror[at],
				count * sizeof(struct pack_entry));
	}
	pk->lo = pk->cap;
	pk->hi = -1;
	return rc;
}

int gpu_pack_program_set(struct gpu_program *packed, int slot,
			 const struct gpu_program *prog)
{
	struct pack_slots *pk = packed->pk;
	if (!pk || slot < 0 || slot >= pk->cap || prog->nops != pk->nops ||
	    prog->arena)
		return ERR_INVALID;
	for (int op = 0; op < pk->nops; op++) {
		const struct program_op *t = &pk->ops[op], *o = &prog->ops[op];
		if (t->kind != o->kind || t->pipe != o->pipe)
			return ERR_INVALID;
		for (int k = 0; k < 3; k++)
			if (o->groups[k] > t->groups[k])
				return ERR_INVALID; /* recorded for fewer */
	}
	fill_slot(pk, slot, prog);
	return 0;
}

int gpu_pack_program_create(struct gpu_context *ctx,
			    struct gpu_program *const *progs, int n, int cap,
			    const struct gpu_buffer *mask,
			    struct gpu_program **out)
{
	*out = NULL;
	if (!ctx->info.has_packs || n < 1 || cap < n || !mask->address ||
	    mask->size < 4 * (uint64_t)cap)
		return ERR_INVALID;
	for (int s = 1; s < n; s++)
		if (!gpu_programs_alike(progs[0], progs[s]))
			return ERR_INVALID;
	struct gpu_program *prog = NULL;
	/* the same timestamps, at the same places: a stage of the slots'
	 * programs (from, to) is that stage of the pack */
	int rc = gpu_program_create(ctx, progs[0]->timestamps, &prog);
	struct pack_slots *pk = rc ? NULL : calloc(1, sizeof(*pk));
	if (!rc && !pk)
		rc = ERR_NOMEM;
	if (pk) {
		prog->pk = pk;
		pk->cap = cap;
		pk->nops = progs[0]->nops;
		pk->ndispatch = progs[0]->ndispatch;
		pk->ops = template_of(progs, n);
		size_t entries = (size_t)pk->ndispatch * (size_t)cap;
		pk->mirror = calloc(entries ? entries : 1, sizeof(*pk->mirror));
		if (!pk->ops || !pk->mirror)
			rc = ERR_NOMEM;
		pk->lo = cap;
		pk->hi = -1;
		for (int s = 0; rc == 0 && s < n; s++)
			fill_slot(pk, s, progs[s]);
		pk->lo = 0; /* the whole table, empty slots too */
		pk->hi = cap - 1;
	}
	rc = rc ? rc : begin_commands(prog);
	rc = rc ? rc
		: gpu_profile_begin(ctx, &prog->prof, prog->cmd, pk->ndispatch);
	rc = rc ? rc : gpu_arena_create(ctx, &prog->arena);
	size_t table_bytes =
	    pk ? (size_t)pk->ndispatch * cap * sizeof(struct pack_entry) : 0;
	rc = rc ? rc
		: gpu_buffer_alloc(prog->arena, table_bytes ? table_bytes : 16,
				   0, &pk->table);
	rc = rc || !table_bytes ? rc : gpu_pack_program_sync(prog);
	int nchunks = rc ? 0 : count_chunks(ctx, pk);
	if (nchunks < 0)
		rc = ERR_INVALID;
	if (rc == 0) {
		pk->nchunks = nchunks;
		pk->chunks = calloc((size_t)(nchunks ? nchunks : 1),
				    sizeof(*pk->chunks));
		pk->counts_mirror = calloc((size_t)(nchunks ? nchunks : 1),
					   sizeof(*pk->counts_mirror));
		rc = pk->chunks && pk->counts_mirror ? 0 : ERR_NOMEM;
	}
	rc = rc ? rc
		: gpu_buffer_alloc(prog->arena,
				   (VkDeviceSize)(nchunks ? nchunks : 1) *
				       sizeof(VkDispatchIndirectCommand),
				   0, &pk->counts);
	int chunk = 0;
	for (int op = 0, d = 0; rc == 0 && op < pk->nops; op++) {
		const struct program_op *o = &pk->ops[op];
		if (o->kind == OP_BARRIER) {
			barrier(prog->cmd);
		} else if (o->kind == OP_TIMESTAMP) {
			gpu_program_timestamp(prog);
		} else {
			uint64_t at =
			    pk->table.address +
			    (uint64_t)d * cap * sizeof(struct pack_entry);
			rc = record_packed_dispatch(prog, &chunk, o->groups,
						    o->pipe, at, mask->address);
			char name[GPU_PROFILE_NAME];
			snprintf(name, sizeof(name), "%s_pk", o->pipe->variant);
			gpu_profile_after(&prog->prof, prog->cmd, name);
			d++;
		}
	}
	if (prog) {
		prog->ndispatch = 0;
		prog->nops = 0;
	}
	VkResult r = rc ? VK_SUCCESS : vkEndCommandBuffer(prog->cmd);
	if (r != VK_SUCCESS)
		rc =
		    gpu_error(ctx, r, "vkEndCommandBuffer", __FILE__, __LINE__);
	rc = rc ? rc : gpu_program_end(prog);
	if (rc) {
		gpu_program_destroy(prog);
		return rc;
	}
	rc = write_counts(ctx, pk, cap); /* every slot, until told fewer */
	if (rc) {
		gpu_program_destroy(prog);
		return rc;
	}
	/* a packed program is not packed again (gpu_programs_alike) */
	*out = prog;
	return 0;
}
