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

#define PASS_FIELDS                                                          \
	int img_w, img_h, tx, ty;                                            \
	int tw, th, cx, cy;                                                  \
	int cw, ch, n, dil;                                                  \
	uint off0, off1, off2, off3;                                         \
	int i0, i1, i2, i3;
#ifdef PACKED
// the packed variants (packed.glsl): the slot's own, from its entry
struct Pass { PASS_FIELDS };
Pass pc;
void pk_load_push(uint slot)
{
	int w[16];
	for (int k = 0; k < 12; k++)
		w[k] = int(PK_PUSH(slot, k));
	pc = Pass(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9],
		  w[10], w[11], PK_PUSH(slot, 12), PK_PUSH(slot, 13),
		  PK_PUSH(slot, 14), PK_PUSH(slot, 15), int(PK_PUSH(slot, 16)),
		  int(PK_PUSH(slot, 17)), int(PK_PUSH(slot, 18)),
		  int(PK_PUSH(slot, 19)));
}
#else
layout(push_constant) uniform Pass { PASS_FIELDS } pc;
#endif

float act(float s) { return sin(W0 * s); }
vec4 act(vec4 s) { return sin(W0 * s); }
float act_grad(float s) { return W0 * cos(W0 * s); }

// The fp16 storage of S (the tensor-core path) keeps its phase
// (phase.glsl).
#include "phase.glsl"
float phase(float s) { return wrap_phase(W0 * s); }
float act_phase(float x) { return sin(x); }
float act_grad_phase(float x) { return W0 * cos(x); }

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
