// common.glsl - what every ConvSIREN pass shares: the model width and w0 as
// specialization constants, and the per-dispatch tile geometry as push
// constants (struct pass_push in daemon/nn/passes.h must match it).
//
// A tile is the rectangle (tx, ty, tw, th) of the image, clipped to it; its
// core is (cx, cy, cw, ch). n = tw * th. Activations are channel-major over
// the tile: X[c * n + p], p = (y - ty) * tw + (x - tx). Positions outside
// the tile read as zero (zero padding; the halo absorbs the rest).

layout(constant_id = 0) const int NF = 64;
layout(constant_id = 1) const float W0 = 30.0;

layout(push_constant) uniform Pass {
	int img_w, img_h, tx, ty;
	int tw, th, cx, cy;
	int cw, ch, n, dil;
	uint off0, off1, off2, off3;
	int i0, i1, i2, i3;
} pc;

float act(float s) { return sin(W0 * s); }
vec4 act(vec4 s) { return sin(W0 * s); }
float act_grad(float s) { return W0 * cos(W0 * s); }

// The fp16 storage of S (the tensor-core path) keeps its phase
// (phase.glsl).
#include "phase.glsl"
float phase(float s) { return wrap_phase(W0 * s); }
#ifdef POLY_SIN
// POLY_SIN: the sine of a phase by a polynomial on the FMA units instead of
// the special-function units, which a GPU has an eighth as many of, and
// which the depthwise passes by strips keep busy (3.75 sines an output):
// the phase is folded into [-pi/2, pi/2], then the Taylor series to x^11
// (its error there is under 6e-8; a phase a little past +-pi, as fp16 may
// round it, folds just as well). cos x = sin(pi/2 - |x|).
float sin_folded(float y)
{
	float y2 = y * y;
	float p = -2.5052108e-8;
	p = p * y2 + 2.7557319e-6;
	p = p * y2 - 1.9841270e-4;
	p = p * y2 + 8.3333333e-3;
	p = p * y2 - 1.6666667e-1;
	return y + y * y2 * p;
}
float act_phase(float x)
{
	float y = x > 1.57079633 ? 3.14159265 - x
				 : (x < -1.57079633 ? -3.14159265 - x : x);
	return sin_folded(y);
}
float act_grad_phase(float x) { return W0 * sin_folded(1.57079633 - abs(x)); }
#else
float act_phase(float x) { return sin(x); }
float act_grad_phase(float x) { return W0 * cos(x); }
#endif

// (p mod w, p / w) without an integer division (which CPUs such as
// lavapipe's cannot vectorise, and GPUs emulate): a float estimate of
// p / w, corrected by one step. Exact for p < 2^24, beyond the planner's
// largest tile.
ivec2 split_index(uint p, int w)
{
	int y = int(float(p) / float(w));
	int x = int(p) - y * w;
	if (x < 0) {
		y -= 1;
		x += w;
	} else if (x >= w) {
		y += 1;
		x -= w;
	}
	return ivec2(x, y);
}

// The tile position (x, y) of pixel index p.
ivec2 tile_xy(uint p) { return split_index(p, pc.tw); }
