#version 450
// muon.comp - the element-wise parts of a Muon step on one width x width
// pointwise weight (the products of Newton-Schulz, and the scaling to a
// unit Frobenius norm folded into their first step, are in ns_gemm.comp).
// The matrix is nf * nf floats at off0 in the flat vectors; the scratch
// matrix X at off1 in the scratch buffer. Modes:
//   MOMENTUM: m = mu m + g; X = g + mu m (Nesterov); the gradient is then
//             cleared, so the Adam pass that follows leaves these weights
//             (and their Adam moments) alone. mu = i-bits of i0.
//   UPDATE:   W -= step[3] * Y, Y the orthogonalised matrix at off1.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
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
	float mu = intBitsToFloat(pc.i0);
	float g = grad[pc.off0 + i];
	float m = mu * mom[pc.off2 + i] + g;
	mom[pc.off2 + i] = m;
	scratch[pc.off1 + i] = g + mu * m;
	grad[pc.off0 + i] = 0.0;
#else
	params[pc.off0 + i] -= step[3] * scratch[pc.off1 + i];
#endif
}
