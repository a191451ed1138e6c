#version 450
// dwconv_back.comp - the gradient through a depthwise conv and the
// activation before it:
// dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - disp_t].
// w_off: the block's dw weights. Grid: x pixels, y channels.
// With COPY_F16 (the tensor-core path) dS is also written as fp16, times
// the loss scale (grad_scale), in rows of half_row = n_pad values.
// With IN_F16 Sprev is read as its fp16 phase (see dwconv.comp).
#extension GL_GOOGLE_include_directive : require
#if defined(COPY_F16) || defined(IN_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_DW
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer Prev { float16_t sprev[]; };
#else
layout(binding = 1) readonly buffer Prev { float sprev[]; };
#endif
layout(binding = 2) readonly buffer GradZ { float dz[]; };
layout(binding = 3) writeonly buffer Out { float dsprev[]; };
#ifdef COPY_F16
layout(binding = 4) writeonly buffer Half { float16_t dshalf[]; };
#endif

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (p >= uint(pc.n)) {
#ifdef COPY_F16
		if (p < uint(pc.half_row))
			dshalf[c * uint(pc.half_row) + p] = float16_t(0.0);
#endif
		return;
	}
	ivec2 q = tile_xy(p);
	int px = q.x, py = q.y, d = pc.dil;
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
	float acc = 0.0;
	for (int i = -1; i <= 1; i++) {
		int yy = py - i * d;
		if (yy < 0 || yy >= pc.th)
			continue;
		for (int j = -1; j <= 1; j++) {
			int xx = px - j * d;
			if (xx < 0 || xx >= pc.tw)
				continue;
			acc += params[w + uint((i + 1) * 3 + j + 1)] *
			       dz[base + uint(yy * pc.tw + xx)];
		}
	}
#ifdef IN_F16
	float ds = act_grad_phase(float(sprev[base + p])) * acc;
#else
	float ds = act_grad(sprev[base + p]) * acc;
#endif
	dsprev[base + p] = ds;
#ifdef COPY_F16
	dshalf[c * uint(pc.half_row) + p] = float16_t(ds * pc.grad_scale);
#endif
}
