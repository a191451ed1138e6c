/*
 * render_view.h - rendering a model package at any size, or a region of
 * it, within the device's memory (render_view.c; docs/MODEL.md,
 * "Rendering at another size").
 *
 * At an integer scale s the network is evaluated on an s-times finer grid
 * with every dilation multiplied by s, so that every fine pixel is an
 * exact evaluation of the continuous function the network defines, and
 * (s odd) the trained pixels' centres are among the fine ones. Another
 * size is rendered at the next integer scale, then box-filtered (each
 * output pixel the area-weighted mean of the fine pixels it covers). The
 * output goes in bands, each in tiles, so any size fits the budget. Used
 * from the thread that owns the gpu_context.
 */
#ifndef VKINR_NN_RENDER_VIEW_H
#define VKINR_NN_RENDER_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "util/image.h"
#include "formats/safetensors.h"

struct gpu_context;

/* The largest side of a render, its most pixels (of the region
 * rendered) and the largest integer scale. */
#define NN_VIEW_MAX_SIDE 65536
#define NN_VIEW_MAX_PIXELS (1u << 27)
#define NN_VIEW_MAX_SCALE 32

/* What to render: the image at scale (>= 1), or at width x height (when
 * scale is 0; 0 x 0: the package's own size), and of that image the
 * region crop_x, crop_y, crop_w x crop_h (crop_w 0: all of it). */
struct nn_view {
	int scale;
	int width, height;
	int crop_x, crop_y, crop_w, crop_h;
	uint64_t mem_budget; /* bytes; 0: the device's budget */
};

/* How it was rendered. */
struct nn_view_info {
	int width, height; /* the whole image's size */
	int scale;         /* the integer scale of the fine grid */
	int exact;         /* 1: the fine grid itself, 0: box-filtered */
	int bands, tiles;  /* the programs run, the tiles of all */
};

/* Checks view against a package of w0 x h0 (the limits, the region within
 * the image); info (may be NULL) gets the size, scale and method. 0 or
 * ERR_INVALID with a sentence in err. */
int nn_view_check(const struct nn_view *view, int w0, int h0,
		  struct nn_view_info *info, char *err, size_t errlen);

/*
 * Renders model as view says into *out (the region's pixels, in [0, 1]);
 * info may be NULL. 0, or a negative error code with a sentence in err
 * (ERR_FORMAT for a package refused, ERR_INVALID for a view outside the
 * image or the limits, ERR_DEVICE_OOM when not even small tiles fit).
 */
int nn_render_view(struct gpu_context *gpu, const struct st_file *model,
		   const struct nn_view *view, struct image **out,
		   struct nn_view_info *info, char *err, size_t errlen);

#endif
