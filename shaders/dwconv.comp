#version 450
// dwconv.comp - the depthwise 3x3 dilated convolution of the previous
// block's activation H = act(S) (activate.comp made it):
// Z[c,p] = sum_t dw[c][t] H[c, p + disp_t], with tap t = (i + 1) * 3 +
// (j + 1) displaced by (j d, i d); zero outside the tile. off0: the
// block's dw weights. Grid: x pixels, y channels.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) readonly buffer In { float h[]; };
layout(binding = 2) writeonly buffer Out { float z[]; };

void main()
{
	uint p = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
	if (p >= uint(pc.n))
		return;
	int px = int(p) % pc.tw, py = int(p) / pc.tw, d = pc.dil;
	uint base = c * uint(pc.n), w = pc.off0 + 9u * c;
	float acc = 0.0;
	for (int i = -1; i <= 1; i++) {
		int yy = py + i * d;
		if (yy < 0 || yy >= pc.th)
			continue;
		for (int j = -1; j <= 1; j++) {
			int xx = px + j * d;
			if (xx < 0 || xx >= pc.tw)
				continue;
			acc += params[w + uint((i + 1) * 3 + j + 1)] *
			       h[base + uint(yy * pc.tw + xx)];
		}
	}
	z[base + p] = acc;
}
