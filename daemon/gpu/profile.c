/*
 * profile.c - VKINR_PROFILE=1, a diagnostic for kernel tuning: the device
 * time of every dispatch, summed by pipeline over the context's life and
 * printed to stderr when it closes, longest first.
 *
 * A program made while the switch is on writes a timestamp before its
 * first op and one after each dispatch (of a packed program: after each
 * of the template's dispatches, however many chunks it takes); after each
 * run the difference between a dispatch's stamp and the one before it is
 * added to its pipeline's line. A dispatch's time thus includes the
 * barrier before it: what the epoch waits for. The stage timestamps
 * (--timings) are left as they are; this one costs a query a dispatch and
 * the read after each run, so it is for measuring, never the default.
 */
#include "gpu/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct profile_line {
	char name[GPU_PROFILE_NAME];
	long count;
	double ns;
};

struct gpu_profile {
	struct profile_line *lines;
	int n, cap;
};

void gpu_profile_init(struct gpu_context *ctx)
{
	const char *want = getenv("VKINR_PROFILE");
	if (want && *want == '1' && ctx->timestamp_period > 0)
		ctx->profile = calloc(1, sizeof(*ctx->profile));
}

int gpu_profile_begin(struct gpu_context *ctx, struct gpu_profile_marks *m,
		      VkCommandBuffer cmd, int dispatches)
{
	if (!ctx->profile || dispatches < 1)
		return 0;
	m->cap = dispatches + 1;
	m->names = calloc((size_t)m->cap, sizeof(*m->names));
	m->ticks = calloc((size_t)m->cap, sizeof(*m->ticks));
	if (!m->names || !m->ticks)
		return ERR_NOMEM;
	VkQueryPoolCreateInfo qi = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = (uint32_t)m->cap,
	};
	GPU_CHECK(ctx, vkCreateQueryPool(ctx->device, &qi, NULL, &m->pool));
	vkCmdResetQueryPool(cmd, m->pool, 0, (uint32_t)m->cap);
	vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m->pool,
			    0);
	m->n = 1;
	return 0;
}

void gpu_profile_after(struct gpu_profile_marks *m, VkCommandBuffer cmd,
		       const char *name)
{
	if (!m->pool || m->n == m->cap)
		return;
	snprintf(m->names[m->n], GPU_PROFILE_NAME, "%s", name);
	vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m->pool,
			    (uint32_t)m->n);
	m->n++;
}

static struct profile_line *line_of(struct gpu_profile *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->lines[i].name, name))
			return &p->lines[i];
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 64;
		struct profile_line *l =
		    realloc(p->lines, (size_t)cap * sizeof(*l));
		if (!l)
			return NULL;
		p->lines = l;
		p->cap = cap;
	}
	struct profile_line *l = &p->lines[p->n++];
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	return l;
}

void gpu_profile_collect(struct gpu_context *ctx, struct gpu_profile_marks *m)
{
	if (!ctx->profile || !m->pool || m->n < 2)
		return;
	VkResult r = vkGetQueryPoolResults(
	    ctx->device, m->pool, 0, (uint32_t)m->n,
	    (size_t)m->n * sizeof(uint64_t), m->ticks, sizeof(uint64_t),
	    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
	if (r != VK_SUCCESS)
		return;
	for (int i = 1; i < m->n; i++) {
		struct profile_line *l = line_of(ctx->profile, m->names[i]);
		if (!l)
			return;
		l->count++;
		if (m->ticks[i] >= m->ticks[i - 1])
			l->ns += (double)(m->ticks[i] - m->ticks[i - 1]) *
				 ctx->timestamp_period;
	}
}

void gpu_profile_release(struct gpu_context *ctx, struct gpu_profile_marks *m)
{
	if (m->pool)
		vkDestroyQueryPool(ctx->device, m->pool, NULL);
	free(m->names);
	free(m->ticks);
	memset(m, 0, sizeof(*m));
}

static int by_time(const void *a, const void *b)
{
	const struct profile_line *x = a, *y = b;
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

void gpu_profile_report(struct gpu_context *ctx)
{
	struct gpu_profile *p = ctx->profile;
	if (!p)
		return;
	double total = 0;
	for (int i = 0; i < p->n; i++)
		total += p->lines[i].ns;
	qsort(p->lines, (size_t)p->n, sizeof(*p->lines), by_time);
	fprintf(stderr, "vkinrd: profile of %s, %.3f ms of dispatches:\n",
		ctx->info.name, total * 1e-6);
	for (int i = 0; i < p->n; i++) {
		const struct profile_line *l = &p->lines[i];
		fprintf(stderr,
			"vkinrd: profile %-44s %8ld runs %10.3f ms %9.2f us "
			"each %5.1f%%\n",
			l->name, l->count, l->ns * 1e-6,
			l->ns * 1e-3 / (double)l->count,
			total > 0 ? 100.0 * l->ns / total : 0.0);
	}
	free(p->lines);
	free(p);
	ctx->profile = NULL;
}
