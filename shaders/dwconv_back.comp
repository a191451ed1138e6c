#version 450
// dwconv_back.comp - the gradient through a depthwise conv and the
// activation before it:
// dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - disp_t].
// off0: the block's dw weights. Grid: x pixels, y channels.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) readonly buffer Prev { float sprev[]; };
layout(binding = 2) readonly buffer GradZ { float dz[]; };
layout(binding = 3) writeonly buffer Out { float dsprev[]; };

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (p >= uint(pc.n))
		return;
	int px = int(p) % pc.tw, py = int(p) / pc.tw, d = pc.dil;
	uint base = c * uint(pc.n), w = pc.off0 + 9u * c;
	float acc = 0.0;
	for (int i = -1; i <= 1; i++) {
		int yy = py - i * d;
		if (yy < 0 || yy >= pc.th)
			continue;
		for (int j = -1; j <= 1; j++) {
			int xx = px - j * d;
			if (xx < 0 || xx >= pc.tw)
				continue;
			acc += params[w + uint((i + 1) * 3 + j + 1)] *
			       dz[base + uint(yy * pc.tw + xx)];
		}
	}
	dsprev[base + p] = act_grad(sprev[base + p]) * acc;
}
