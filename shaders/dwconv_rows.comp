#version 450
// dwconv_rows.comp - the depthwise convolution and its backward for CPU
// devices (lavapipe), by row segments. On a CPU every buffer access of an
// invocation is a scalar load in a loop over the SIMD lanes, so what counts
// is the number of loads: here an invocation computes R = 8 neighbouring
// pixels of one row of one channel, loads each of the three input rows once
// (R + 2 DIL values, shared by the three taps of that row) and the channel's
// nine weights once, instead of nine values and nine weights a pixel as
// dwconv.comp does. The dilation is specialization constant 2, so the loops
// unroll and the window indices are constants.
//
// The segments of a tile are numbered row by row: segment g is row
// g / S, pixels x0 = (g mod S) * R .. x0 + R - 1 (S = segments = ceil(tw / R)
// segments a row; the last one may be partial). w_off: the block's dw
// weights. Positions outside the tile read as zero.
//
// Forward (default): Z[c,p] = sum_t dw[c][t] H[c, p + disp_t], where
// disp_t = (j DIL, i DIL) for tap t = (i + 1) * 3 + (j + 1). Grid: x
// segments (64 a workgroup), y channels.
//
// BACK: the gradient through the conv and the activation before it, and
// the conv weights' gradient, in one pass:
//   dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - disp_t]
//   ddw[c][t]   = sum_p dZ[c,p] act(Sprev[c, p + disp_t])
//               = sum_q act(Sprev[c,q]) dZ[c, q - disp_t]
// The second form reads the same dZ window as the first. A workgroup sums
// chunk gl_WorkGroupID.x (chunk segments) of channel gl_WorkGroupID.y and
// writes part[chunk * 9 * C + t * C + c] (C = channels), which the reduce pass
// adds in a fixed order, as pixel_reduce.comp's MODE_DW does.
#extension GL_GOOGLE_include_directive : require
#ifdef BACK
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 64) in;
#define PASS_PUSH PUSH_DW
#include "common.glsl"

layout(constant_id = 2) const int DIL = 1;
#define R 8
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
// tile. The window of row yy is the values at x0 - DIL .. x0 + R - 1 + DIL
// (filled in main: an array whose size is a specialization constant cannot
// be a function's out parameter in SPIR-V).
float window_value(uint base, int yy, int xx)
{
	uint at = base + uint(clamp(yy, 0, pc.th - 1) * pc.tw +
			      clamp(xx, 0, pc.tw - 1));
	float v = src[at];
	return yy >= 0 && yy < pc.th && xx >= 0 && xx < pc.tw ? v : 0.0;
}

#ifndef BACK
void main()
{
	uint g = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (g >= uint(pc.segments * pc.th))
		return;
	ivec2 seg = split_index(g, pc.segments);
	int x0 = seg.x * R, y = seg.y;
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
	float k[9];
	for (int t = 0; t < 9; t++)
		k[t] = params[w + uint(t)];
	float acc[R];
	for (int r = 0; r < R; r++)
		acc[r] = 0.0;
	for (int i = -1; i <= 1; i++) {
		float win[SPAN];
		for (int s = 0; s < SPAN; s++)
			win[s] = window_value(base, y + i * DIL, x0 - DIL + s);
		int t = (i + 1) * 3;
		for (int r = 0; r < R; r++)
			acc[r] += k[t] * win[r] + k[t + 1] * win[r + DIL] +
				  k[t + 2] * win[r + 2 * DIL];
	}
	uint out_row = base + uint(y * pc.tw);
	for (int r = 0; r < R; r++)
		if (x0 + r < pc.tw)
			dst[out_row + uint(x0 + r)] = acc[r];
}
#else
void main()
{
	uint t = gl_LocalInvocationID.x, c = gl_WorkGroupID.y, C = uint(pc.channels);
	uint segs = uint(pc.segments * pc.th);
	uint begin = gl_WorkGroupID.x * uint(pc.chunk);
	uint end = min(begin + uint(pc.chunk), segs);
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
	float k[9], tap_sum[9];
	for (int j = 0; j < 9; j++) {
		k[j] = params[w + uint(j)];
		tap_sum[j] = 0.0;
	}
	for (uint g = begin + t; g < end; g += gl_WorkGroupSize.x) {
		ivec2 seg = split_index(g, pc.segments);
		int x0 = seg.x * R, y = seg.y;
		uint row = base + uint(y * pc.tw);
		float s_v[R], act_v[R], acc[R];
		for (int r = 0; r < R; r++) {
			s_v[r] = sprev[row + uint(min(x0 + r, pc.tw - 1))];
			/* past the row's end: no output, and no tap sum */
			act_v[r] = x0 + r < pc.tw ? act(s_v[r]) : 0.0;
			acc[r] = 0.0;
		}
		for (int i = -1; i <= 1; i++) {
			/* dZ at rows y - i DIL, columns x - j DIL: window index
			 * r + (1 - j) DIL */
			float win[SPAN];
			for (int s = 0; s < SPAN; s++)
				win[s] = window_value(base, y - i * DIL,
						      x0 - DIL + s);
			int tt = (i + 1) * 3;
			for (int r = 0; r < R; r++) {
				float left = win[r + 2 * DIL], mid = win[r + DIL],
				      right = win[r];
				acc[r] += k[tt] * left + k[tt + 1] * mid +
					  k[tt + 2] * right;
				tap_sum[tt] += act_v[r] * left;
				tap_sum[tt + 1] += act_v[r] * mid;
				tap_sum[tt + 2] += act_v[r] * right;
			}
		}
		for (int r = 0; r < R; r++)
			if (x0 + r < pc.tw)
				dst[row + uint(x0 + r)] = act_grad(s_v[r]) * acc[r];
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
