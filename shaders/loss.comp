#version 450
// loss.comp - the loss terms besides the MSE (ssim, grad, chroma: their
// definitions are at struct nn_recipe in daemon/nn/model.h), on one tile,
// between the two halves of the head: head_predict has written y (3 x n,
// channel-major, every tile pixel), head_back turns dY into dS4.
//
// Every term is counted once, by its centre pixel, and only centres in the
// tile's core count; the planner widens the halo by the loss's radius, so
// every y a core centre reads is exact. Two modes, one invocation a pixel:
//   TERMS: for core pixels, the terms' values, summed per workgroup into
//     sums[3 (sse_base + group) + j] (j: chroma, grad, 1 - SSIM, raw sums, the
//     host weighs them), and, with SSIM on, the coefficients of SSIM's
//     gradient: coef[j n + p], j = 0..8: a, b, c for R, G, B, with
//     dLoss/dx_q = sum over centres p of g(q - p) (a_p + 2 b_p x_q + c_p r_q)
//     (x the prediction, r the target, both in [0, 1]; g the window; the
//     loss weight and the window's normalisation folded into a, b, c).
//   GRAD (default): dY of every tile pixel: the MSE's and chroma's on core
//     pixels, grad's and SSIM's wherever a core centre's difference or
//     window reaches (so on core + radius; zero beyond).
// w_ssim, w_grad, w_chroma: the weights of the terms.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_LOSS
#include "common.glsl"

// NN_SSIM_RADIUS and NN_SSIM_SIGMA of daemon/nn/model.h
#define RADIUS 5
#define SIGMA 1.5
const float C1 = 0.0001, C2 = 0.0009;

layout(binding = 0) readonly buffer Pred { float ys[]; };
layout(binding = 1) readonly buffer Target { float target[]; };
#ifdef TERMS
layout(binding = 2) writeonly buffer Coef { float coef[]; };
layout(binding = 3) writeonly buffer Sums { float sums[]; };
shared vec3 partial[256];
#else
layout(binding = 2) readonly buffer Coef { float coef[]; };
layout(binding = 3) writeonly buffer GradY { float dy[]; };
#endif

float w_ssim() { return pc.w_ssim; }
float w_grad() { return pc.w_grad; }
float w_chroma() { return pc.w_chroma; }

bool in_image(ivec2 a)
{
	return a.x >= 0 && a.x < pc.img_w && a.y >= 0 && a.y < pc.img_h;
}

bool in_core(ivec2 a)
{
	return a.x >= pc.cx && a.x < pc.cx + pc.cw && a.y >= pc.cy &&
	       a.y < pc.cy + pc.ch;
}

uint tile_index(ivec2 a) { return uint((a.y - pc.ty) * pc.tw + (a.x - pc.tx)); }

// the prediction and the target at image pixel a (in the tile), in [-1, 1]
vec3 pred(ivec2 a)
{
	uint i = tile_index(a), n = uint(pc.n);
	return vec3(ys[i], ys[n + i], ys[2u * n + i]);
}

vec3 truth(ivec2 a)
{
	uint pix = uint(a.y * pc.img_w + a.x) * 3u;
	return 2.0 * vec3(target[pix], target[pix + 1u], target[pix + 2u]) - 1.0;
}

vec3 err(ivec2 a) { return pred(a) - truth(a); }

float gauss(int k) { return exp(-float(k * k) / (2.0 * SIGMA * SIGMA)); }

// The image's pixel of invocation p.
ivec2 pixel(uint p) { return ivec2(pc.tx, pc.ty) + tile_xy(p); }

#ifdef TERMS
// The sum of the window's weights at centre a, cut at the image border.
float window_sum(ivec2 a)
{
	float sx = 0.0, sy = 0.0;
	for (int k = -RADIUS; k <= RADIUS; k++) {
		if (a.x + k >= 0 && a.x + k < pc.img_w)
			sx += gauss(k);
		if (a.y + k >= 0 && a.y + k < pc.img_h)
			sy += gauss(k);
	}
	return sx * sy;
}

void main()
{
	uint p = gl_GlobalInvocationID.x, n = uint(pc.n);
	vec3 acc = vec3(0.0);
	if (p < n) {
		ivec2 a = pixel(p);
		vec3 ca = vec3(0.0), cb = vec3(0.0), cc = vec3(0.0);
		if (in_core(a)) {
			vec3 e = err(a);
			float u = e.r - e.g, v = e.b - e.g;
			if (w_chroma() > 0.0)
				acc.x = u * u + v * v;
			for (int axis = 0; axis < 2 && w_grad() > 0.0; axis++) {
				ivec2 b = a + (axis == 0 ? ivec2(1, 0) : ivec2(0, 1));
				if (in_image(b)) {
					vec3 d = err(b) - e;
					acc.y += dot(d, d);
				}
			}
		}
		if (in_core(a) && w_ssim() > 0.0) {
			vec3 mx = vec3(0.0), my = vec3(0.0), exx = vec3(0.0),
			     eyy = vec3(0.0), exy = vec3(0.0);
			for (int dy_ = -RADIUS; dy_ <= RADIUS; dy_++) {
				for (int dx = -RADIUS; dx <= RADIUS; dx++) {
					ivec2 b = a + ivec2(dx, dy_);
					if (!in_image(b))
						continue;
					float w = gauss(dx) * gauss(dy_);
					vec3 x = 0.5 * (pred(b) + 1.0);
					vec3 r = 0.5 * (truth(b) + 1.0);
					mx += w * x;
					my += w * r;
					exx += w * x * x;
					eyy += w * r * r;
					exy += w * x * r;
				}
			}
			float z = 1.0 / window_sum(a);
			mx *= z, my *= z, exx *= z, eyy *= z, exy *= z;
			vec3 a1 = 2.0 * mx * my + C1;
			vec3 a2 = 2.0 * (exy - mx * my) + C2;
			vec3 b1 = mx * mx + my * my + C1;
			vec3 b2 = (exx - mx * mx) + (eyy - my * my) + C2;
			vec3 s = a1 * a2 / (b1 * b2);
			acc.z = dot(vec3(1.0) - s, vec3(1.0));
			/* dLoss/dS, times the window's normalisation */
			float k = -w_ssim() /
				  (3.0 * float(pc.img_w) * float(pc.img_h)) * z;
			ca = k * s * (2.0 * my / a1 - 2.0 * my / a2 -
				      2.0 * mx / b1 + 2.0 * mx / b2);
			cb = -k * s / b2;
			cc = 2.0 * k * s / a2;
		}
		if (w_ssim() > 0.0) {
			coef[p] = ca.r, coef[n + p] = ca.g, coef[2u * n + p] = ca.b;
			coef[3u * n + p] = cb.r, coef[4u * n + p] = cb.g;
			coef[5u * n + p] = cb.b;
			coef[6u * n + p] = cc.r, coef[7u * n + p] = cc.g;
			coef[8u * n + p] = cc.b;
		}
	}
	uint t = gl_LocalInvocationID.x;
	partial[t] = acc;
	barrier();
	for (uint half_ = 128u; half_ > 0u; half_ >>= 1) {
		if (t < half_)
			partial[t] += partial[t + half_];
		barrier();
	}
	if (t == 0u) {
		uint at = 3u * (uint(pc.sse_base) + gl_WorkGroupID.x);
		sums[at] = partial[0].x;
		sums[at + 1u] = partial[0].y;
		sums[at + 2u] = partial[0].z;
	}
}

#else /* GRAD */

vec3 coef3(uint j, uint i)
{
	uint n = uint(pc.n);
	return vec3(coef[(3u * j) * n + i], coef[(3u * j + 1u) * n + i],
		    coef[(3u * j + 2u) * n + i]);
}

void main()
{
	uint p = gl_GlobalInvocationID.x, n = uint(pc.n);
	if (p >= n)
		return;
	ivec2 a = pixel(p);
	float wh = float(pc.img_w) * float(pc.img_h);
	vec3 g = vec3(0.0);
	if (in_core(a)) {
		vec3 e = err(a);
		g += e * (2.0 / (3.0 * wh));
		float u = e.r - e.g, v = e.b - e.g;
		g += w_chroma() * (1.0 / wh) * vec3(u, -u - v, v);
	}
	if (w_grad() > 0.0) {
		float k = w_grad() * (2.0 / (6.0 * wh));
		for (int axis = 0; axis < 2; axis++) {
			ivec2 d = axis == 0 ? ivec2(1, 0) : ivec2(0, 1);
			/* a as the start of the difference centred on it */
			if (in_core(a) && in_image(a + d))
				g -= k * (err(a + d) - err(a));
			/* a as the end of the one centred on a - d */
			if (in_core(a - d))
				g += k * (err(a) - err(a - d));
		}
	}
	if (w_ssim() > 0.0) {
		vec3 x = 0.5 * (pred(a) + 1.0), r = 0.5 * (truth(a) + 1.0);
		vec3 s = vec3(0.0);
		for (int dy_ = -RADIUS; dy_ <= RADIUS; dy_++) {
			for (int dx = -RADIUS; dx <= RADIUS; dx++) {
				ivec2 b = a + ivec2(dx, dy_);
				if (!in_core(b))
					continue;
				uint i = tile_index(b);
				s += gauss(dx) * gauss(dy_) *
				     (coef3(0u, i) + 2.0 * coef3(1u, i) * x +
				      coef3(2u, i) * r);
			}
		}
		g += 0.5 * s;
	}
	dy[p] = g.x;
	dy[n + p] = g.y;
	dy[2u * n + p] = g.z;
}
#endif
