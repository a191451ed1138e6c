/*
 * record.h - recording a fit's programs (record.c, record_render.c), for
 * fit.c; nobody else includes it. Also what the recording and the
 * planning of buffers share: how the GEMMs split, how the depthwise
 * passes chunk a tile (the families themselves: nn/variants.h).
 */
#ifndef VKINR_NN_RECORD_H
#define VKINR_NN_RECORD_H

#include <stdint.h>

#include "nn/fit_internal.h"
#include "nn/passes.h"

/* The row segments of a tile row, and the chunks the backward row pass
 * sums a tile's segments in (dwconv_rows.comp). */
static inline uint32_t row_segments(int tw)
{
	return div_up((uint64_t)tw, ROW_SEGMENT);
}
static inline uint32_t row_chunks(int tw, int th)
{
	return div_up((uint64_t)row_segments(tw) * (uint64_t)th, ROW_CHUNK);
}

/* The block rows of a tile for dilation d (dwconv_blocks_cpu.comp: Q = 4
 * rows d apart a block), and the units of its passes: a segment of each. */
static inline uint32_t row_blocks(int th, int d)
{
	return (uint32_t)d * div_up((uint64_t)th, 4 * (uint64_t)d);
}
static inline uint32_t row_block_units(int tw, int th, int d)
{
	return row_segments(tw) * row_blocks(th, d);
}

/* The strips of a tile's channel for dilation d (dwconv_strip.comp), and
 * the workgroups (the backward's chunks of partial sums) a channel takes. */
static inline uint32_t dw_strips(int th, int d)
{
	return (uint32_t)d *
	       div_up(div_up((uint64_t)th, (uint32_t)d), DW_STRIP);
}
/* A tile up to DW_SMALL_MAX columns wide takes the "_x16" variants,
 * whose workgroups of DW_SMALL_X x DW_SMALL_Y it fills (the default's
 * 32 x 8 left three quarters of them idle on a 32x32 image). */
#define DW_SMALL_MAX 32
#define DW_SMALL_X 16
#define DW_SMALL_Y 4
static inline int dw_small(int tw) { return tw <= DW_SMALL_MAX; }
static inline uint32_t dw_group_x(int tw)
{
	return dw_small(tw) ? DW_SMALL_X : DW_STRIP_X;
}
static inline uint32_t dw_group_y(int tw)
{
	return dw_small(tw) ? DW_SMALL_Y : DW_STRIP_Y;
}
static inline uint32_t dw_strip_chunks(int tw, int th, int d)
{
	return div_up((uint64_t)tw, dw_group_x(tw)) *
	       div_up(dw_strips(th, d), dw_group_y(tw));
}

/* The k-splits of the NT GEMM (weight gradients) over n pixels. */
int nn_nt_splits(const struct nn_fit *fit, int n);

/* Records fit->epoch_prog (and, through optim.c, the optimizer's) and
 * allocates the stage timers; records fit->render_prog and
 * quick_render_prog (and allocates the image output). 0 or a negative
 * error code. */
int nn_record_epoch(struct nn_fit *fit);
int nn_record_render(struct nn_fit *fit);

#endif
