#version 450
// dwconv_blocks_cpu.comp - the depthwise convolution and its backward for
// CPU devices (lavapipe), by blocks of Q rows of R pixels: the default of
// CPU devices, in place of dwconv_rows.comp (VKINR_DW_ROWS=1 keeps that).
// On lavapipe every buffer load of an invocation is a loop over the SIMD
// lanes, so what counts is the loads per output. dwconv_rows.comp loads
// three input rows of R + 2 DIL values for R outputs of one row; here an
// invocation owns R neighbouring pixels of Q rows DIL apart (y0, y0 + DIL,
// .., y0 + (Q - 1) DIL), whose taps share Q + 2 input rows: (Q + 2) (R +
// 2 DIL) loads for Q R outputs, half of the row passes' at dilations 1 to 8
// (1.9 a pixel at dilation 1, 4.5 at 8, against 3.75 and 9). Each output
// adds its three rows' taps in the order dwconv_rows.comp does, so the
// forward's values are the same bit for bit; the backward's tap sums are
// added in another order.
//
// A channel's units are numbered block row by block row: unit g is block
// row b = g / S, segment g mod S of it (x0 = (g mod S) R; S = segments =
// ceil(tw / R), the last one may be partial). Block row b is the rows
// y0 + q DIL with y0 = (b / DIL) Q DIL + b mod DIL; there are
// DIL ceil(th / (Q DIL)) block rows (row_blocks in daemon/nn/record.h), some
// of them (y0 >= th) or some of their rows past the tile. w_off: the block's
// dw weights. Positions outside the tile read as zero.
//
// Forward (default): Z[c,p] = sum_t dw[c][t] H[c, p + disp_t], disp_t =
// (j DIL, i DIL) for tap t = (i + 1) * 3 + (j + 1). Grid: x units (64 a
// workgroup), y channels.
//
// BACK: dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - disp_t]
// and ddw[c][t] = sum_q act(Sprev[c,q]) dZ[c, q - disp_t], as in
// dwconv_rows.comp; a workgroup sums units chunk x .. chunk (x + 1) - 1 of
// channel y and writes part[x * 9 * C + t * C + c] (C = channels).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef BACK
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 64) in;
#define PASS_PUSH PUSH_DW
#include "common.glsl"

layout(constant_id = 2) const int DIL = 1;
#define R 8
#define Q 4
#define SPAN (R + 2 * DIL)

layout(binding = 0) readonly restrict buffer Params { float params[]; };
#ifdef BACK
layout(binding = 1) readonly restrict buffer Prev { float sprev[]; };
layout(binding = 2) readonly restrict buffer GradZ { float src[]; };
layout(binding = 3) writeonly restrict buffer Out { float dst[]; };
layout(binding = 4) writeonly restrict buffer Part { float part[]; };
shared float partial[9][16]; /* one per subgroup: lanes >= 4 */
#else
layout(binding = 1) readonly restrict buffer In { float src[]; };
layout(binding = 2) writeonly restrict buffer Out { float dst[]; };
#endif

// The input at (xx, yy) of channel base: a clamped load, zero outside the
// tile.
float window_value(uint base, int yy, int xx)
{
	uint at = base + uint(clamp(yy, 0, pc.th - 1) * pc.tw +
			      clamp(xx, 0, pc.tw - 1));
	float v = src[at];
	return yy >= 0 && yy < pc.th && xx >= 0 && xx < pc.tw ? v : 0.0;
}

// The block rows of the tile, and unit g's first pixel (x0, y0).
int block_rows() { return DIL * ((pc.th + Q * DIL - 1) / (Q * DIL)); }
ivec2 unit_origin(uint g)
{
	ivec2 seg = split_index(g, pc.segments);
	int b = seg.y / DIL;
	return ivec2(seg.x * R, b * Q * DIL + (seg.y - b * DIL));
}

#ifndef BACK
void main()
{
	uint g = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (g >= uint(pc.segments * block_rows()))
		return;
	ivec2 o = unit_origin(g);
	int x0 = o.x, y0 = o.y;
	if (y0 >= pc.th)
		return;
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
	float k[9];
	[[unroll]] for (int t = 0; t < 9; t++) k[t] = params[w + uint(t)];
	float acc[Q][R];
	[[unroll]] for (int q = 0; q < Q; q++)
		[[unroll]] for (int r = 0; r < R; r++) acc[q][r] = 0.0;
	/* input row y0 + m DIL is row i = m - q of output row q: rows in
	 * increasing order, so each output adds i = -1, 0, 1 in turn */
	[[unroll]] for (int m = -1; m <= Q; m++)
	{
		float win[SPAN];
		[[unroll]] for (int s = 0; s < SPAN; s++) win[s] =
		    window_value(base, y0 + m * DIL, x0 - DIL + s);
		[[unroll]] for (int q = 0; q < Q; q++)
		{
			int i = m - q;
			if (i < -1 || i > 1)
				continue;
			int t = (i + 1) * 3;
			[[unroll]] for (int r = 0; r < R; r++) acc[q][r] +=
			    k[t] * win[r] + k[t + 1] * win[r + DIL] +
			    k[t + 2] * win[r + 2 * DIL];
		}
	}
	[[unroll]] for (int q = 0; q < Q; q++)
	{
		int y = y0 + q * DIL;
		uint out_row = base + uint(y * pc.tw);
		[[unroll]] for (int r = 0; r < R; r++) if (y < pc.th &&
							   x0 + r < pc.tw)
		    dst[out_row + uint(x0 + r)] = acc[q][r];
	}
}
#else
void main()
{
	uint t = gl_LocalInvocationID.x, c = gl_WorkGroupID.y, C = uint(pc.channels);
	uint units = uint(pc.segments * block_rows());
	uint begin = gl_WorkGroupID.x * uint(pc.chunk);
	uint end = min(begin + uint(pc.chunk), units);
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
	float k[9], tap_sum[9];
	[[unroll]] for (int j = 0; j < 9; j++)
	{
		k[j] = params[w + uint(j)];
		tap_sum[j] = 0.0;
	}
	for (uint g = begin + t; g < end; g += gl_WorkGroupSize.x) {
		ivec2 o = unit_origin(g);
		int x0 = o.x, y0 = o.y;
		if (y0 >= pc.th)
			continue;
		float s_v[Q][R], act_v[Q][R], acc[Q][R];
		[[unroll]] for (int q = 0; q < Q; q++)
		{
			int y = y0 + q * DIL;
			uint row = base + uint(min(y, pc.th - 1) * pc.tw);
			[[unroll]] for (int r = 0; r < R; r++)
			{
				s_v[q][r] =
				    sprev[row + uint(min(x0 + r, pc.tw - 1))];
				/* past the tile: no output, no tap sum */
				act_v[q][r] = y < pc.th && x0 + r < pc.tw
						  ? act(s_v[q][r])
						  : 0.0;
				acc[q][r] = 0.0;
			}
		}
		/* dZ row y0 + m DIL is row y - i DIL of output row q, i =
		 * q - m: rows in decreasing order, so each output adds i =
		 * -1, 0, 1 in turn, as dwconv_rows.comp does */
		[[unroll]] for (int m = Q; m >= -1; m--)
		{
			float win[SPAN];
			[[unroll]] for (int s = 0; s < SPAN; s++) win[s] =
			    window_value(base, y0 + m * DIL, x0 - DIL + s);
			[[unroll]] for (int q = 0; q < Q; q++)
			{
				int i = q - m;
				if (i < -1 || i > 1)
					continue;
				int tt = (i + 1) * 3;
				[[unroll]] for (int r = 0; r < R; r++)
				{
					float left = win[r + 2 * DIL],
					      mid = win[r + DIL], right = win[r];
					acc[q][r] += k[tt] * left +
						     k[tt + 1] * mid +
						     k[tt + 2] * right;
					tap_sum[tt] += act_v[q][r] * left;
					tap_sum[tt + 1] += act_v[q][r] * mid;
					tap_sum[tt + 2] += act_v[q][r] * right;
				}
			}
		}
		[[unroll]] for (int q = 0; q < Q; q++)
		{
			int y = y0 + q * DIL;
			uint row = base + uint(y * pc.tw);
			[[unroll]] for (int r = 0; r < R; r++) if (
			    y < pc.th && x0 + r < pc.tw) dst[row + uint(x0 + r)] =
			    act_grad(s_v[q][r]) * acc[q][r];
		}
	}
	/* lanes by the subgroup, then the subgroups in order */
	for (int j = 0; j < 9; j++) {
		float s = subgroupAdd(tap_sum[j]);
		if (subgroupElect())
			partial[j][gl_SubgroupID] = s;
	}
	barrier();
	if (t < 9u) {
		float total = 0.0;
		for (uint sg = 0u; sg < gl_NumSubgroups; sg++)
			total += partial[t][sg];
		part[gl_WorkGroupID.x * 9u * C + t * C + c] = total;
	}
}
#endif
