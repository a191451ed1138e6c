#version 450
// activate.comp - H[c,p] = act(S[c,p]) = sin(w0 S[c,p]), once per element,
// so that the depthwise conv and its weight gradient read each activation
// nine times without computing its sine nine times. Grid: x pixels, y
// channels.
// With VEC4 (CPU devices, where each buffer access is a loop over the SIMD
// lanes) an invocation does 4 neighbouring values of the flat buffer:
// count vec4s in all (nf n is a multiple of 16), on a grid of rows of
// gl_NumWorkGroups.x workgroups.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_ACTIVATE
#include "common.glsl"

#ifdef VEC4
layout(binding = 0) readonly buffer In { vec4 s4[]; };
layout(binding = 1) writeonly buffer Out { vec4 h4[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x +
		 gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	if (i < uint(pc.count))
		h4[i] = act(s4[i]);
}
#else
layout(binding = 0) readonly buffer In { float s[]; };
layout(binding = 1) writeonly buffer Out { float h[]; };

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (p >= uint(pc.n))
		return;
	uint i = c * uint(pc.n) + p;
	h[i] = act(s[i]);
}
#endif
