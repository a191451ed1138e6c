#version 450
// dwconv.comp - the depthwise 3x3 dilated convolution of the previous
// block's activation H = act(S) (activate.comp made it):
// Z[c,p] = sum_t dw[c][t] H[c, p + disp_t], with tap t = (i + 1) * 3 +
// (j + 1) displaced by (j d, i d); zero outside the tile. w_off: the
// block's dw weights. Grid: x pixels, y channels.
// With FROM_S it reads the pre-activation S itself and takes the sine of
// each tap as it reads it, which saves the GPUs the activate pass (a read
// and a write of every activation) for a few more sines.
// With OUT_F16 (the tensor-core path) Z is written as fp16 in rows of
// half_row = n_pad >= n values, the padding zeroed, which is how the GEMMs read
// it (their K runs over whole 16-pixel blocks).
// With IN_F16 the input is S's fp16 phase (common.glsl: phase; the
// tensor-core path keeps every S_k that the backward needs so, at half the
// memory); with COPY_S (that path's forward, whose S comes fp32 from the
// GEMM) each S value's phase is also written as fp16 to binding 3.
#extension GL_GOOGLE_include_directive : require
#if defined(OUT_F16) || defined(IN_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_DW
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer In { float16_t h[]; };
#else
layout(binding = 1) readonly buffer In { float h[]; };
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
#define H(x) act_phase(float(x))
#elif defined(FROM_S)
#define H(s) act(s)
#else
#define H(h) (h)
#endif

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
#ifdef OUT_F16
	uint row = uint(pc.half_row);
	if (p >= uint(pc.n)) {
		if (p < row)
			z[c * row + p] = float16_t(0.0);
		return;
	}
#else
	uint row = uint(pc.n);
	if (p >= uint(pc.n))
		return;
#endif
	ivec2 q = tile_xy(p);
	int px = q.x, py = q.y, d = pc.dil;
	uint base = c * uint(pc.n), w = pc.w_off + 9u * c;
#ifdef COPY_S
	s16[base + p] = float16_t(phase(h[base + p]));
#endif
	float acc = 0.0;
	for (int i = -1; i <= 1; i++) {
		int yy = py + i * d;
		if (yy < 0 || yy >= pc.th)
			continue;
		for (int j = -1; j <= 1; j++) {
			int xx = px + j * d;
			if (xx < 0 || xx >= pc.tw)
				continue;
			acc += params[w + uint((i + 1) * 3 + j + 1)] *
			       H(h[base + uint(yy * pc.tw + xx)]);
		}
	}
#ifdef OUT_F16
	z[c * row + p] = float16_t(acc);
#else
	z[base + p] = acc;
#endif
}
