#version 450
// muon.comp - the element-wise parts of a Muon step on one width x width
// pointwise weight (the products of Newton-Schulz, and the scaling to a
// unit Frobenius norm folded into their first step, are in ns_gemm.comp).
// The matrix is nf * nf floats at w_off in the flat vectors; the scratch
// matrix X at x_off in the scratch buffer (the momentum at m_off). Modes:
//   MOMENTUM: m = mu m + g; X = g + mu m (Nesterov); the gradient is then
//             cleared, so the Adam pass that follows leaves these weights
//             (and their Adam moments) alone. mu = momentum.
//   UPDATE:   W -= step[3] * Y, Y the orthogonalised matrix at x_off.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_MUON
#include "common.glsl"

layout(binding = 0) buffer Params { float params[]; };
layout(binding = 1) buffer Grad { float grad[]; };
layout(binding = 2) buffer Momentum { float mom[]; };
layout(binding = 3) buffer Scratch { float scratch[]; };
layout(binding = 4) readonly buffer Step { float step[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i >= uint(NF * NF))
		return;
#ifdef MOMENTUM
	float mu = pc.momentum;
	float g = grad[pc.w_off + i];
	float m = mu * mom[pc.m_off + i] + g;
	mom[pc.m_off + i] = m;
	scratch[pc.x_off + i] = g + mu * m;
	grad[pc.w_off + i] = 0.0;
#else
	params[pc.w_off + i] -= step[3] * scratch[pc.x_off + i];
#endif
}
