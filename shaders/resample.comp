#version 450
// resample.comp - a render at a size that is not an integer scale of the
// model's (render_view.c): the render at the next integer scale (the fine
// image, FW x FH = img_w x img_h) averaged over each output pixel's area.
// Output pixel (ox, oy) of an OW x OH image (out_w x out_h) covers the fine
// rectangle [ox FW / OW, (ox + 1) FW / OW) x [oy FH / OH, (oy + 1) FH / OH);
// its value is the mean of the fine pixels weighted by their overlap with
// it (a box filter, exact for any ratio, up or down).
// Binding 0: the fine window (tx, ty, tw, th) of the fine image, RGB
// interleaved, tw pixels a row; binding 1: the output band (cx, cy, cw, ch)
// of the output image, RGB interleaved, cw pixels a row. n = cw ch.
// Grid: x over the band's pixels.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_RESAMPLE
#include "common.glsl"

layout(binding = 0) readonly buffer Fine { float fine[]; };
layout(binding = 1) writeonly buffer Band { float band[]; };

void main()
{
	uint p = gl_GlobalInvocationID.x;
	if (p >= uint(pc.n))
		return;
	ivec2 q = split_index(p, pc.cw);
	int ox = pc.cx + q.x, oy = pc.cy + q.y;
	float rx = float(pc.img_w) / float(pc.out_w);
	float ry = float(pc.img_h) / float(pc.out_h);
	float x0 = float(ox) * rx, x1 = float(ox + 1) * rx;
	float y0 = float(oy) * ry, y1 = float(oy + 1) * ry;
	int fx0 = max(int(floor(x0)), pc.tx);
	int fx1 = min(int(ceil(x1)), pc.tx + pc.tw);
	int fy0 = max(int(floor(y0)), pc.ty);
	int fy1 = min(int(ceil(y1)), pc.ty + pc.th);
	vec3 sum = vec3(0.0);
	float area = 0.0;
	for (int fy = fy0; fy < fy1; fy++) {
		float wy = min(y1, float(fy + 1)) - max(y0, float(fy));
		for (int fx = fx0; fx < fx1; fx++) {
			float w = wy * (min(x1, float(fx + 1)) - max(x0, float(fx)));
			if (w <= 0.0)
				continue;
			uint at = uint((fy - pc.ty) * pc.tw + (fx - pc.tx)) * 3u;
			sum += w * vec3(fine[at], fine[at + 1u], fine[at + 2u]);
			area += w;
		}
	}
	vec3 v = area > 0.0 ? sum / area : vec3(0.0);
	band[3u * p] = v.x;
	band[3u * p + 1u] = v.y;
	band[3u * p + 2u] = v.z;
}
