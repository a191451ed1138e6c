#version 450
// first.comp - the first layer's pre-activation from pixel coordinates:
// S0[c,p] = first_w[c][0] u + first_w[c][1] v + first_b[c], with
// u = (2x + 1) / W - 1 and v = (2y + 1) / H - 1 in image coordinates.
// PHASE_OUT (the fp16 path): writes S0 as its fp16 phase (phase.glsl), as
// the forward GEMMs write S_1.., for block 0's depthwise pass to read.
// Grid: x over the tile's pixels, y over channels.
#extension GL_GOOGLE_include_directive : require
#ifdef PHASE_OUT
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_FIRST
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef PHASE_OUT
layout(binding = 1) writeonly buffer Out { float16_t s0[]; };
#define STORE(v) float16_t(phase(v))
#else
layout(binding = 1) writeonly buffer Out { float s0[]; };
#define STORE(v) (v)
#endif

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (p >= uint(pc.n))
		return;
	ivec2 q = tile_xy(p);
	int x = pc.tx + q.x, y = pc.ty + q.y;
	float u = float(2 * x + 1) / float(pc.img_w) - 1.0;
	float v = float(2 * y + 1) / float(pc.img_h) - 1.0;
	s0[c * uint(pc.n) + p] = STORE(params[pc.w_off + 2u * c] * u +
				       params[pc.w_off + 2u * c + 1u] * v +
				       params[pc.b_off + c]);
}
