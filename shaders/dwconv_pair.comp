#version 450
// dwconv_pair.comp - dwconv_strip.comp with two columns an invocation:
// the same strips of STRIP rows, but each invocation computes the columns
// x and x + 1 (x even), loading and storing pairs of values (4 bytes a
// lane in fp16, 8 in fp32) instead of single ones. A warp then moves 128
// bytes a request and issues half the loads and stores; the sines stay as
// many a value loaded.
//
// The pairs must be aligned: the tile's width is even (so every row, and
// every channel's plane, starts on a pair), and the dilation is 1 or even.
// With d even the taps' columns x - d and x + d are pairs themselves; with
// d = 1 the left tap of x is the second value of the pair at x - 2, and
// the right tap of x + 1 the first of the pair at x + 2. record.c takes
// this pass where both hold and dwconv_strip.comp elsewhere.
//
// Z[c,p] = sum_t dw[c][t] H[c, p + disp_t] (FROM_S: H = act(S)); OUT_F16,
// IN_F16 and COPY_S as in dwconv.comp (the workgroup at (0, 0) of a
// channel zeroes its padding).
// Grid: x column pairs / SX, y strips / SY, z channels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define PASS_PUSH PUSH_DW
#include "common.glsl"
#include "strip.glsl"
layout(local_size_x = SX, local_size_y = SY) in;

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer In { f16vec2 src2[]; };
#else
layout(binding = 1) readonly buffer In { vec2 src2[]; };
#endif
#ifdef OUT_F16
layout(binding = 2) writeonly buffer Out { f16vec2 z2[]; };
layout(binding = 2) writeonly buffer OutOne { float16_t z[]; };
#else
layout(binding = 2) writeonly buffer Out { vec2 z2[]; };
#endif
#ifdef COPY_S
layout(binding = 3) writeonly buffer Copy { f16vec2 s16[]; };
#endif

#if defined(IN_F16)
#define LOAD(x) act_phase(float(x))
#elif defined(FROM_S)
#define LOAD(v) act(v)
#else
#define LOAD(v) (v)
#endif

void main()
{
	uint c = gl_WorkGroupID.z;
	int x = 2 * int(gl_GlobalInvocationID.x), s = int(gl_GlobalInvocationID.y);
	int d = pc.dil, tw = pc.tw, th = pc.th;
	uint base2 = c * uint(pc.n) / 2u; /* pairs before the channel's plane */

#ifdef OUT_F16
	if (gl_WorkGroupID.x == 0u && gl_WorkGroupID.y == 0u) {
		uint pad = uint(pc.n) + gl_LocalInvocationIndex;
		if (pad < uint(pc.half_row))
			z[c * uint(pc.half_row) + pad] = float16_t(0.0);
	}
#endif

	int y0 = strip_row0(s, d);
	if (x >= tw || y0 >= th)
		return;

	/* the pairs at columns x - e, x, x + e (e = d, or 2 for d = 1), rows
	 * y0 - d .. y0 + STRIP d */
	int e = d == 1 ? 2 : d;
	vec2 win[3][STRIP + 2];
	[[unroll]] for (int rr = 0; rr < STRIP + 2; rr++) {
		int y = y0 + (rr - 1) * d;
		bool row_in = y >= 0 && y < th;
		[[unroll]] for (int j = 0; j < 3; j++) {
			int xx = x + (j - 1) * e;
			vec2 v = vec2(0.0);
			if (row_in && xx >= 0 && xx < tw) {
				uint at = base2 + uint(y * tw + xx) / 2u;
				vec2 raw = vec2(src2[at]);
				v = vec2(LOAD(raw.x), LOAD(raw.y));
#ifdef COPY_S
				if (j == 1 && rr >= 1 && rr <= STRIP)
					s16[at] = f16vec2(phase(raw.x), phase(raw.y));
#endif
			}
			win[j][rr] = v;
		}
	}

	float w[9];
	[[unroll]] for (int t = 0; t < 9; t++)
		w[t] = params[pc.w_off + 9u * c + uint(t)];
	[[unroll]] for (int r = 0; r < STRIP; r++) {
		int y = y0 + r * d;
		if (y >= th)
			break;
		vec2 acc = vec2(0.0);
		[[unroll]] for (int i = 0; i < 3; i++) {
			vec2 left, mid = win[1][r + i], right;
			if (d == 1) {
				left = vec2(win[0][r + i].y, mid.x);
				right = vec2(mid.y, win[2][r + i].x);
			} else {
				left = win[0][r + i];
				right = win[2][r + i];
			}
			/* in dwconv_strip.comp's order, tap by tap */
			acc += w[i * 3] * left;
			acc += w[i * 3 + 1] * mid;
			acc += w[i * 3 + 2] * right;
		}
		uint p2 = uint(y * tw + x) / 2u;
#ifdef OUT_F16
		z2[c * uint(pc.half_row) / 2u + p2] = f16vec2(acc);
#else
		z2[base2 + p2] = acc;
#endif
	}
}
