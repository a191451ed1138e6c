#version 450
// ns_gemm.comp - the width x width products of Newton-Schulz (Muon):
//   C = p D + q (L R)      or, with -DTRANS_R,  C = p D + q (L R^T)
// NF x NF row-major matrices in one scratch buffer, at offsets off0 (L),
// off1 (R), off2 (D), off3 (C), each plus z * i2 for the z-th matrix of
// the batch (every block's weight goes through one dispatch); p and q are
// the float bits of i0 and i1.
// A workgroup computes a 64 x 64 block of C, each invocation 4 x 4 outputs
// (rows ly + 16 i, columns lx + 16 j), from 16-deep slices of L and R
// staged in shared memory. Every output sums over k in order, in one
// accumulator, so a run is deterministic. NF is a multiple of 16; blocks
// that run past NF read zeros and store nothing there.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
#include "common.glsl"

layout(binding = 0) buffer Scratch { float m[]; };

shared float tile_l[16][65]; // [k][row of the block]
shared float tile_r[16][65]; // [k][column of the block]

void main()
{
	uint n = uint(NF), base = gl_WorkGroupID.z * uint(pc.i2);
	uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
	uint t = ly * 16u + lx;
	uint row0 = gl_WorkGroupID.y * 64u, col0 = gl_WorkGroupID.x * 64u;
	float acc[4][4];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			acc[i][j] = 0.0;

	for (uint k0 = 0u; k0 < n; k0 += 16u) {
		for (uint i = 0u; i < 4u; i++) {
			// 64 rows x 16 k, read along k
			uint e = t + 256u * i, r = e >> 4, kk = e & 15u;
			uint row = row0 + r;
			tile_l[kk][r] = row < n ? m[base + pc.off0 + row * n + k0 + kk] : 0.0;
#ifdef TRANS_R
			// R^T[k][col] = R[col][k]: rows of R, read along k
			uint col = col0 + r;
			tile_r[kk][r] = col < n ? m[base + pc.off1 + col * n + k0 + kk] : 0.0;
#else
			// 16 k x 64 columns, read along the columns
			uint kr = e >> 6, c = e & 63u, col = col0 + c;
			tile_r[kr][c] = col < n ? m[base + pc.off1 + (k0 + kr) * n + col] : 0.0;
#endif
		}
		barrier();
		for (uint k = 0u; k < 16u; k++) {
			float a[4], b[4];
			for (uint i = 0u; i < 4u; i++) {
				a[i] = tile_l[k][ly + 16u * i];
				b[i] = tile_r[k][lx + 16u * i];
			}
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					acc[i][j] += a[i] * b[j];
		}
		barrier();
	}

	float p = intBitsToFloat(pc.i0), q = intBitsToFloat(pc.i1);
	for (uint i = 0u; i < 4u; i++) {
		uint row = row0 + ly + 16u * i;
		for (uint j = 0u; j < 4u; j++) {
			uint col = col0 + lx + 16u * j;
			if (row < n && col < n) {
				uint at = base + row * n + col;
				float d = p != 0.0 ? p * m[at + pc.off2] : 0.0;
				m[at + pc.off3] = d + q * acc[i][j];
			}
		}
	}
}
