#version 450
// ns_gemm.comp - the width x width products of Newton-Schulz (Muon):
//   C = p D + q (L R)      or, with -DTRANS_R,  C = p D + q (L R^T)
// all NF x NF row-major matrices in one scratch buffer, at offsets
// off0 (L), off1 (R), off2 (D), off3 (C); p and q are the float bits of i0
// and i1. 16 x 16 outputs a workgroup through shared tiles; every sum runs
// over k in order, so the result is the same on every run. NF is a
// multiple of 16. Small on purpose: these matrices are tiny next to the
// epoch's GEMMs.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
#include "common.glsl"

layout(binding = 0) buffer Scratch { float m[]; };

shared float tile_l[16][16];
shared float tile_r[16][16];

void main()
{
	uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
	uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
	uint n = uint(NF);
	float acc = 0.0;
	for (uint k0 = 0u; k0 < n; k0 += 16u) {
		tile_l[ly][lx] = m[pc.off0 + row * n + k0 + lx];
#ifdef TRANS_R
		// R^T[k][col] = R[col][k]: load row (block col) of R
		uint rrow = gl_WorkGroupID.x * 16u + ly;
		tile_r[lx][ly] = m[pc.off1 + rrow * n + k0 + lx];
#else
		tile_r[ly][lx] = m[pc.off1 + (k0 + ly) * n + col];
#endif
		barrier();
		for (uint k = 0u; k < 16u; k++)
			acc += tile_l[ly][k] * tile_r[k][lx];
		barrier();
	}
	float p = intBitsToFloat(pc.i0), q = intBitsToFloat(pc.i1);
	float d = p != 0.0 ? p * m[pc.off2 + row * n + col] : 0.0;
	m[pc.off3 + row * n + col] = d + q * acc;
}
