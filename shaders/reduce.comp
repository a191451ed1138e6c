#version 450
// reduce.comp - adds the chunks of partial sums into the gradient, always
// in the same order (so a result never depends on scheduling). Element i
// of jcount * C: j = j0 + i / C, c = i % C;
//   grad[dst + c * dst_cs + (j - j0) * dst_js] += sum_k part[k * J * C + j * C + c]
// over the chunks. C = channels, J = taps, j from j0, jcount of them.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_REDUCE
#include "common.glsl"

layout(binding = 0) readonly buffer Part { float part[]; };
layout(binding = 1) buffer Grad { float grad[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 256u;
	uint C = uint(pc.channels), J = uint(pc.taps);
	if (i >= uint(pc.jcount) * C)
		return;
	uint j = uint(pc.j0) + i / C, c = i % C;
	float s = 0.0;
	for (uint k = 0u; k < uint(pc.chunks); k++)
		s += part[k * J * C + j * C + c];
	grad[pc.dst + c * pc.dst_cs + (j - uint(pc.j0)) * pc.dst_js] += s;
}
