#version 450
// reduce.comp - adds the chunks of partial sums into the gradient, always
// in the same order (so a result never depends on scheduling). Element i
// of jcount * C: j = j0 + i / C, c = i % C;
//   grad[off0 + c * off1 + (j - j0) * off2] += sum_k part[k * J * C + j * C + c]
// over the n chunks. i1 = C, i2 = J, i0 = j0, i3 = jcount.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

layout(binding = 0) readonly buffer Part { float part[]; };
layout(binding = 1) buffer Grad { float grad[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 256u;
	uint C = uint(pc.i1), J = uint(pc.i2);
	if (i >= uint(pc.i3) * C)
		return;
	uint j = uint(pc.i0) + i / C, c = i % C;
	float s = 0.0;
	for (uint k = 0u; k < uint(pc.n); k++)
		s += part[k * J * C + j * C + c];
	grad[pc.off0 + c * pc.off1 + (j - uint(pc.i0)) * pc.off2] += s;
}
