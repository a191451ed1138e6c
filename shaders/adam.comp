#version 450
// adam.comp - one Adam step over the flat parameter vector, then the
// gradient is cleared for the next epoch. The epoch's step size and bias
// correction come from the small step buffer that the host writes before
// each submit (the command buffer itself is recorded once):
//   step[0] = lr / (1 - beta1^t), step[1] = sqrt(1 - beta2^t).
// Same arithmetic as torch.optim.Adam. n = number of floats.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_PARAMS
#include "common.glsl"

layout(binding = 0) buffer Params { float params[]; };
layout(binding = 1) buffer Grad { float grad[]; };
layout(binding = 2) buffer M { float m[]; };
layout(binding = 3) buffer V { float v[]; };
layout(binding = 4) readonly buffer Step { float step[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 256u;
	if (i >= uint(pc.n))
		return;
	float g = grad[i];
	float mi = m[i] + (g - m[i]) * 0.1;
	float vi = v[i] * 0.999 + g * g * 0.001;
	m[i] = mi;
	v[i] = vi;
	float denom = sqrt(vi) / step[1] + 1e-8;
	params[i] -= step[0] * (mi / denom);
	grad[i] = 0.0;
}
