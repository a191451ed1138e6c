/*
 * plan.h - the tile planner: how an image is cut into tiles so that one
 * tile's activations fit the device's memory and buffer limits.
 *
 * A tile is a core rectangle plus a halo of PAD pixels on each side,
 * clipped at the image border. When the whole image fits it is one tile
 * with no halo; otherwise the planner picks the core size with the least
 * total work (pixels computed, halos included, plus a per-tile cost).
 */
#ifndef VKINR_NN_PLAN_H
#define VKINR_NN_PLAN_H

#include <stdint.h>

struct tile_rect {
	int x, y, w, h;
};

struct tile {
	struct tile_rect region; /* computed: core + halo, clipped */
	struct tile_rect core;   /* where the loss is taken */
};

struct tile_limits {
	uint64_t budget_bytes;    /* memory available for the fit */
	uint64_t fixed_bytes;     /* what the fit needs whatever the tiles */
	uint64_t bytes_per_pixel; /* per tile pixel (activations etc.) */
	uint64_t max_pixels;      /* per tile, from buffer-range limits */
	int max_core;             /* cap on core side (0 = none) */
};

struct tile_plan {
	int core_w, core_h; /* size of a full tile's core */
	int tiles_x, tiles_y, count;
	int max_region_pixels;   /* largest region: buffers are this big */
	int64_t computed_pixels; /* sum of region areas */
	struct tile *tiles;      /* count entries, row-major */
};

/* Returns 0, or ERR_DEVICE_OOM when not even a small tile fits. */
int nn_tile_plan_make(struct tile_plan *plan, int width, int height, int pad,
		      const struct tile_limits *limits);
void nn_tile_plan_finish(struct tile_plan *plan);

#endif
