#version 450
// pixel_reduce.comp - per-channel sums over a chunk of the tile's pixels,
// the weight gradients that are not GEMMs. One workgroup sums chunk
// gl_WorkGroupID.x (chunk pixels) of channel gl_WorkGroupID.y and writes J
// partial sums to part[chunk * J * C + j * C + c] (C = channels); the
// reduce pass then adds the chunks in a fixed order. A workgroup's lanes
// are summed by the subgroup (subgroupAdd: the same order every run on a
// device), then the subgroups' sums in order, with one barrier: a tree
// in shared memory took eight, each a switch of every SIMD group of the
// workgroup on lavapipe and an idle wait on a GPU (on the H100 a pack of
// 1000 fits at 32x32 spent 0.5 ms an epoch in these sums). Modes:
//   MODE_SUM   J = 1: X[c,p]                         (biases)
//   MODE_DW    J = 9: X[c,p] Y[c, p + disp_t]   (dw taps; X = dZ, Y = act(Sprev))
//   MODE_FIRST J = 3: X[c,p] * (u, v, 1)            (first layer; X = dS0)
//   MODE_OUT   J = 3: X[o,p] act(Y[c,p]) for o<3    (out_w; X = dY, Y = S4)
// With IN_F16 (MODE_DW) Y is S's fp16 phase (see dwconv.comp). With X_F16
// (MODE_SUM, MODE_FIRST; GPUs) X is the fp16 path's fp16 dS, in rows of
// x_row values, times the loss scale x_scale, which the sums
// undo.
#extension GL_GOOGLE_include_directive : require
#if defined(IN_F16) || defined(X_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_PIXEL_SUM
#include "common.glsl"

#if defined(MODE_DW)
#define J 9
/* FROM_S: Y is Sprev itself, and its sine is taken as it is read */
#if defined(IN_F16)
#define DW_Y(x) act_phase(float(x))
#elif defined(FROM_S)
#define DW_Y(y) act(y)
#else
#define DW_Y(y) (y)
#endif
#elif defined(MODE_FIRST) || defined(MODE_OUT)
#define J 3
#else
#define J 1
#endif

#ifdef X_F16
#if !(defined(MODE_SUM) || defined(MODE_FIRST))
#error "X_F16 is for the GPUs' bias and first-layer sums"
#endif
layout(binding = 0) readonly buffer X { float16_t xs[]; };
#define X_AT(c, p) float(xs[(c) * uint(pc.x_row) + (p)])
#else
layout(binding = 0) readonly buffer X { float xs[]; };
#define X_AT(c, p) xs[(c) * n + (p)]
#endif
#ifdef IN_F16
layout(binding = 1) readonly buffer Y { float16_t ys[]; };
#else
layout(binding = 1) readonly buffer Y { float ys[]; };
#endif
layout(binding = 2) writeonly buffer Part { float part[]; };

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
shared float partial[J][64]; /* one per subgroup: lanes >= 4 */

void main()
{
	uint t = gl_LocalInvocationID.x, c = gl_WorkGroupID.y;
	uint n = uint(pc.n), C = uint(pc.channels);
	uint begin = gl_WorkGroupID.x * uint(pc.chunk);
	uint end = min(begin + uint(pc.chunk), n);
	float acc[J];
	for (int j = 0; j < J; j++)
		acc[j] = 0.0;

	for (uint p = begin + t; p < end; p += 256u) {
#if defined(MODE_SUM)
		acc[0] += X_AT(c, p);
#elif defined(MODE_DW)
		float g = xs[c * n + p];
		ivec2 q = tile_xy(p);
		int px = q.x, py = q.y, d = pc.dil;
		for (int i = -1; i <= 1; i++) {
			int yy = py + i * d;
			for (int k = -1; k <= 1; k++) {
				int xx = px + k * d;
				if (yy >= 0 && yy < pc.th && xx >= 0 && xx < pc.tw)
					acc[(i + 1) * 3 + k + 1] +=
						g * DW_Y(ys[c * n + uint(yy * pc.tw + xx)]);
			}
		}
#elif defined(MODE_FIRST)
		float g = X_AT(c, p);
		ivec2 q = tile_xy(p);
		int x = pc.tx + q.x, y = pc.ty + q.y;
		acc[0] += g * (float(2 * x + 1) / float(pc.img_w) - 1.0);
		acc[1] += g * (float(2 * y + 1) / float(pc.img_h) - 1.0);
		acc[2] += g;
#elif defined(MODE_OUT)
		float h = act(ys[c * n + p]);
		acc[0] += xs[p] * h;
		acc[1] += xs[n + p] * h;
		acc[2] += xs[2u * n + p] * h;
#endif
	}
#ifdef X_F16
	float unscale = 1.0 / pc.x_scale;
#else
	float unscale = 1.0;
#endif
	for (int j = 0; j < J; j++) {
		float s = subgroupAdd(acc[j] * unscale);
		if (subgroupElect())
			partial[j][gl_SubgroupID] = s;
	}
	barrier();
	if (t < uint(J)) {
		float total = 0.0;
		for (uint sg = 0u; sg < gl_NumSubgroups; sg++)
			total += partial[t][sg];
		part[gl_WorkGroupID.x * uint(J) * C + t * C + c] = total;
	}
}
