#version 450
// dwconv_strip.comp - the depthwise 3x3 dilated convolution of dwconv.comp
// for GPUs, by strips: each invocation computes STRIP outputs of one
// channel in one column, on the rows y0, y0 + d, ..., y0 + (STRIP - 1) d,
// so that consecutive outputs share two of their three tap rows. It reads
// the STRIP + 2 rows of its three tap columns once (3 (STRIP + 2) loads
// and sines for STRIP outputs, against 9 a output per pixel), keeps them
// in registers, and adds the taps there. The per-pixel pass spends most
// of its time on instructions (index arithmetic, bounds checks, a sine a
// tap), not on memory; this one spends about a third as many.
//
// Where strip s lies, and the workgroup's shape: strip.glsl.
//
// Z[c,p] = sum_t dw[c][t] H[c, p + disp_t] (FROM_S: H = act(S)); OUT_F16,
// IN_F16 and COPY_S as in dwconv.comp (the workgroup at (0, 0) of a
// channel zeroes its padding).
// Grid: x columns / SX, y strips / SY, z channels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(OUT_F16) || defined(IN_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#define PASS_PUSH PUSH_DW
#include "common.glsl"
#include "strip.glsl"
layout(local_size_x = SX, local_size_y = SY) in;

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer In { float16_t src[]; };
#else
layout(binding = 1) readonly buffer In { float src[]; };
#endif
#ifdef OUT_F16
layout(binding = 2) writeonly buffer Out { float16_t z[]; };
#else
layout(binding = 2) writeonly buffer Out { float z[]; };
#endif
#ifdef COPY_S
layout(binding = 3) writeonly buffer Copy { float16_t s16[]; };
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
	int x = int(gl_GlobalInvocationID.x), s = int(gl_GlobalInvocationID.y);
	int d = pc.dil, tw = pc.tw, th = pc.th;
	uint base = c * uint(pc.n);

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

	/* rows y0 - d .. y0 + STRIP d of the columns x - d, x, x + d */
	float win[3][STRIP + 2];
	[[unroll]] for (int rr = 0; rr < STRIP + 2; rr++) {
		int y = y0 + (rr - 1) * d;
		bool row_in = y >= 0 && y < th;
		[[unroll]] for (int j = 0; j < 3; j++) {
			int xx = x + (j - 1) * d;
			float v = 0.0;
			if (row_in && xx >= 0 && xx < tw) {
				uint at = base + uint(y * tw + xx);
				v = LOAD(src[at]);
#ifdef COPY_S
				/* each pixel once: the centre column of the
				 * strip's own rows */
				if (j == 1 && rr >= 1 && rr <= STRIP)
					s16[at] = float16_t(phase(src[at]));
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
		float acc = 0.0;
		[[unroll]] for (int i = 0; i < 3; i++)
			[[unroll]] for (int j = 0; j < 3; j++)
				acc += w[i * 3 + j] * win[j][r + i];
		uint p = uint(y * tw + x);
#ifdef OUT_F16
		z[c * uint(pc.half_row) + p] = float16_t(acc);
#else
		z[base + p] = acc;
#endif
	}
}
