#version 450
// average.comp - the weight average: an exponential moving average of the
// parameters, avg += (params - avg) * step[2], over the flat vector after
// the optimizer step. n = number of floats.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) buffer Average { float avg[]; };
layout(binding = 2) readonly buffer Step { float step[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 256u;
	if (i >= uint(pc.n))
		return;
	avg[i] += (params[i] - avg[i]) * step[2];
}
