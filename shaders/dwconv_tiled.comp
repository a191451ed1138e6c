#version 450
// dwconv_tiled.comp - the depthwise 3x3 dilated convolution of dwconv.comp
// for GPUs, by blocks through shared memory: a workgroup takes one channel
// and a BX x BY block of the tile, loads the block with its halo of d on
// every side once (taking the sines of S as it loads, with FROM_S), and
// computes the block's outputs from shared memory. Each input is then read
// from memory about once, and its sine taken once, instead of once a tap.
// Dilations up to MAX_DIL fit the shared block; larger ones use dwconv.comp.
// (The backward conv done the same way was slower on the H200 than
// dwconv_back.comp per pixel, so there is none.)
//
// Z[c,p] = sum_t dw[c][t] H[c, p + disp_t] (FROM_S: H = act(S)).
// OUT_F16 writes Z as fp16 in rows of half_row = n_pad values; the workgroup at
// block (0, 0) zeroes its channel's padding, which the GEMMs read as K.
// IN_F16 and COPY_S as in dwconv.comp.
// Grid: x blocks across, y blocks down, z channels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(OUT_F16) || defined(IN_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#define BX 64
#define BY 16
#define MAX_DIL 8
#define SX (BX + 2 * MAX_DIL)
#define SY (BY + 2 * MAX_DIL)
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_DW
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer In { float16_t src[]; };
#else
layout(binding = 1) readonly buffer In { float src[]; };
#endif
#ifdef COPY_S
layout(binding = 3) writeonly buffer Copy { float16_t s16[]; };
#endif
#ifdef OUT_F16
layout(binding = 2) writeonly buffer Out { float16_t z[]; };
#else
layout(binding = 2) writeonly buffer Out { float z[]; };
#endif

shared float block[SY * SX];

#if defined(IN_F16)
#define LOAD(x) act_phase(float(x))
#elif defined(FROM_S)
#define LOAD(v) act(v)
#else
#define LOAD(v) (v)
#endif

void main()
{
	uint c = gl_WorkGroupID.z, lid = gl_LocalInvocationID.x;
	int d = pc.dil, tw = pc.tw, th = pc.th;
	int x0 = int(gl_WorkGroupID.x) * BX, y0 = int(gl_WorkGroupID.y) * BY;
	uint base = c * uint(pc.n);

#ifdef OUT_F16
	if (gl_WorkGroupID.x == 0u && gl_WorkGroupID.y == 0u) {
		uint pad = uint(pc.n) + lid;
		if (pad < uint(pc.half_row))
			z[c * uint(pc.half_row) + pad] = float16_t(0.0);
	}
#endif

	/* the block and its halo of d (zeros outside the tile) */
	int wx = BX + 2 * d, wy = BY + 2 * d;
	for (int e = int(lid); e < wx * wy; e += 256) {
		int ly = e / wx, lx = e - ly * wx;
		int x = x0 - d + lx, y = y0 - d + ly;
		float v = 0.0;
		if (x >= 0 && x < tw && y >= 0 && y < th) {
			uint at = base + uint(y * tw + x);
			v = LOAD(src[at]);
#ifdef COPY_S
			/* each pixel of the block once, not its halo */
			if (lx >= d && lx < d + BX && ly >= d && ly < d + BY)
				s16[at] = float16_t(phase(src[at]));
#endif
		}
		block[ly * SX + lx] = v;
	}
	barrier();

	float w[9];
	[[unroll]] for (int t = 0; t < 9; t++)
		w[t] = params[pc.w_off + 9u * c + uint(t)];
	/* each invocation: one column, BY / 4 rows */
	int lx = int(lid % BX), ly0 = int(lid / BX) * (BY / 4);
	int x = x0 + lx;
	if (x >= tw)
		return;
	for (int r = 0; r < BY / 4; r++) {
		int ly = ly0 + r, y = y0 + ly;
		if (y >= th)
			break;
		float acc = 0.0;
		[[unroll]] for (int i = -1; i <= 1; i++)
			[[unroll]] for (int j = -1; j <= 1; j++) {
				int at = (ly + d + i * d) * SX + (lx + d + j * d);
				acc += w[(i + 1) * 3 + j + 1] * block[at];
			}
		uint p = uint(y * tw + x);
#ifdef OUT_F16
		z[c * uint(pc.half_row) + p] = float16_t(acc);
#else
		z[base + p] = acc;
#endif
	}
}
