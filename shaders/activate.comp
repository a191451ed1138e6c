#version 450
// activate.comp - H[c,p] = act(S[c,p]) = sin(w0 S[c,p]), once per element,
// so that the depthwise conv and its weight gradient read each activation
// nine times without computing its sine nine times. Grid: x pixels, y
// channels.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

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
