#version 450
// average.comp - the weight average: an exponential moving average of the
// parameters, avg += (params - avg) * step[2], over the flat vector after
// the optimizer step. n = number of floats.
//
// KEEP: the best model kept so far, a copy instead (binding 0 the weights
// to keep, binding 1 the best): best = params, exactly, when the flag
// step[flag] is not zero; flag < 0 copies always. The optimizer program runs
// it first of all, gated by the flag the host sets after reading the
// epoch's loss, so that keeping the weights costs no submit of its own.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_PARAMS
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) buffer Average { float avg[]; };
layout(binding = 2) readonly buffer Step { float step[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 256u;
	if (i >= uint(pc.n))
		return;
#ifdef KEEP
	if (pc.flag >= 0 && step[pc.flag] == 0.0)
		return;
	avg[i] = params[i];
#else
	avg[i] += (params[i] - avg[i]) * step[2];
#endif
}
