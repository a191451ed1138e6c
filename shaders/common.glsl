// common.glsl - what every ConvSIREN pass shares: the model width and w0 as
// specialization constants, and the per-dispatch values as push constants:
// a pass names its family's list of push.h (PASS_PUSH) before it includes
// this, and reads the fields as pc.NAME (daemon/nn/passes.h makes the same
// list the C struct the recorder fills).
//
// A tile pass reads the tile geometry (push.h's PUSH_TILE): the rectangle
// (tx, ty, tw, th) of the image, clipped to it; its core is (cx, cy, cw,
// ch). n = tw * th. Activations are channel-major over the tile:
// X[c * n + p], p = (y - ty) * tw + (x - tx). Positions outside the tile
// read as zero (zero padding; the halo absorbs the rest).

layout(constant_id = 0) const int NF = 64;
layout(constant_id = 1) const float W0 = 30.0;

#include "push.h"
#ifndef PASS_PUSH
#error "a pass names its push family (PASS_PUSH) before common.glsl"
#endif
// a push-constant block, or in the packed variants (packed.glsl) a struct
// that pk_load_push() fills from the slot's entry
PUSH_BLOCK(Pass, PASS_PUSH, pc)

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

// The tile position (x, y) of pixel index p (a macro: passes without a
// tile have no pc.tw).
#define tile_xy(p) split_index((p), pc.tw)
