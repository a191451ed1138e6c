/*
 * plan.c - the tile planner (see plan.h).
 *
 * The cost of a plan is the number of pixels computed (core plus clipped
 * halo, for every tile) plus TILE_OVERHEAD pixels a tile for the fixed cost
 * of its dispatches. Because clipping is per axis, the computed area is
 * (sum of region widths) x (sum of region heights), so each candidate core
 * size costs O(tiles) to evaluate and every candidate can be tried.
 */
#include "nn/plan.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

#define TILE_OVERHEAD 4096
#define MIN_CORE 8

/* Sum of region lengths along one axis for a core length. */
static int64_t axis_sum(int size, int core, int pad, int *count)
{
	int64_t sum = 0;
	int n = 0;
	for (int at = 0; at < size; at += core, n++) {
		int lo = at - pad < 0 ? 0 : at - pad;
		int end = at + core < size ? at + core : size;
		int hi = end + pad > size ? size : end + pad;
		sum += hi - lo;
	}
	*count = n;
	return sum;
}

/* The largest region of a plan: first tile that is not clipped. */
static int64_t region_len(int size, int core, int pad)
{
	int64_t len = (int64_t)core + 2 * pad;
	return len < size ? len : size;
}

static int fits(const struct tile_limits *lim, int64_t pixels)
{
	if ((uint64_t)pixels > lim->max_pixels)
		return 0;
	return lim->fixed_bytes + (uint64_t)pixels * lim->bytes_per_pixel <=
	       lim->budget_bytes;
}

int nn_tile_plan_make(struct tile_plan *plan, int width, int height, int pad,
		      const struct tile_limits *lim)
{
	int best_w = 0, best_h = 0;
	int64_t best_cost = -1;
	int whole = (!lim->max_core ||
		     (lim->max_core >= width && lim->max_core >= height)) &&
		    fits(lim, (int64_t)width * height);

	memset(plan, 0, sizeof(*plan));
	if (whole) {
		best_w = width;
		best_h = height;
	} else {
		int cap_w = lim->max_core && lim->max_core < width
				? lim->max_core
				: width;
		int cap_h = lim->max_core && lim->max_core < height
				? lim->max_core
				: height;
		for (int cw = cap_w; cw >= MIN_CORE || cw == cap_w; cw--) {
			int nx, ny;
			int64_t sx = axis_sum(width, cw, pad, &nx);
			int64_t rw = region_len(width, cw, pad);
			for (int ch = cap_h; ch >= MIN_CORE || ch == cap_h;
			     ch--) {
				int64_t rh = region_len(height, ch, pad);
				if (!fits(lim, rw * rh))
					continue;
				int64_t sy = axis_sum(height, ch, pad, &ny);
				int64_t cost =
				    sx * sy + (int64_t)nx * ny * TILE_OVERHEAD;
				if (best_cost < 0 || cost < best_cost) {
					best_cost = cost;
					best_w = cw;
					best_h = ch;
				}
				break; /* the largest fitting height is best for this width */
			}
			if (cw <= 1)
				break;
		}
		if (best_cost < 0)
			return ERR_DEVICE_OOM;
	}

	plan->core_w = best_w;
	plan->core_h = best_h;
	plan->tiles_x = (width + best_w - 1) / best_w;
	plan->tiles_y = (height + best_h - 1) / best_h;
	plan->count = plan->tiles_x * plan->tiles_y;
	plan->tiles = calloc((size_t)plan->count, sizeof(*plan->tiles));
	if (!plan->tiles)
		return ERR_NOMEM;
	int halo = whole ? 0 : pad;
	for (int ty = 0, i = 0; ty < plan->tiles_y; ty++) {
		for (int tx = 0; tx < plan->tiles_x; tx++, i++) {
			struct tile *t = &plan->tiles[i];
			t->core.x = tx * best_w;
			t->core.y = ty * best_h;
			t->core.w = width - t->core.x < best_w
					? width - t->core.x
					: best_w;
			t->core.h = height - t->core.y < best_h
					? height - t->core.y
					: best_h;
			int x0 = t->core.x - halo, y0 = t->core.y - halo;
			int x1 = t->core.x + t->core.w + halo;
			int y1 = t->core.y + t->core.h + halo;
			t->region.x = x0 < 0 ? 0 : x0;
			t->region.y = y0 < 0 ? 0 : y0;
			t->region.w = (x1 > width ? width : x1) - t->region.x;
			t->region.h = (y1 > height ? height : y1) - t->region.y;
			int64_t px = (int64_t)t->region.w * t->region.h;
			plan->computed_pixels += px;
			if (px > plan->max_region_pixels)
				plan->max_region_pixels = (int)px;
		}
	}
	return 0;
}

void nn_tile_plan_finish(struct tile_plan *plan)
{
	free(plan->tiles);
	memset(plan, 0, sizeof(*plan));
}
