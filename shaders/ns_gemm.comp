#version 450
// ns_gemm.comp - the width x width products of Newton-Schulz (Muon):
//   C = p D + q (L R)      or, with -DTRANS_R,  C = p D + q (L R^T)
// NF x NF row-major matrices in one scratch buffer, at offsets l, r, d and
// c, each plus z * stride for the z-th matrix of
// the batch (every block's weight goes through one dispatch); p and q are
// floats of the push block too. Every offset is a multiple of 4 floats.
// A workgroup of 128 invocations computes a 64 x 64 block of C, each
// invocation 8 contiguous rows by 4 contiguous columns (a warp: 4 x 8 of
// them), so that one vec4 of a shared tile gives it 4 rows of L or 4
// columns of R: 3 16-byte shared loads for 32 FMAs. L and R go through
// shared memory in 16-deep slices, double-buffered: the next slice is read
// from memory (16 bytes an invocation at a time) into registers while the
// current one is multiplied, then stored to the other buffer, one barrier
// a slice. Every output sums over k in order, in one accumulator, so a run
// is deterministic. NF is a multiple of 16; blocks that run past NF read
// zeros and store nothing there.
// Flags, in flags:
//   bit 0: L R(^T) and D are symmetric (A = X X^T; b A + c A^2): the
//     dispatch's x enumerates only the blocks on or above the diagonal,
//     row block by row block, and each output (r, c) with r <= c is
//     stored there and, the same value, at (c, r).
//   bit 1: the operands come from the unnormalised G (the first step): L,
//     R and D are read times (1 / s)^e, s = sqrt(trace G G^T) + 1e-7 =
//     |G|_F + 1e-7 with G G^T at offset gg (push.h's PUSH_NS), e the 2-bit
//     fields at bits 2 (L), 4 (R) and 6 (D).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
#define PASS_PUSH PUSH_NS
#include "common.glsl"

const uint KS = 16u; // the depth of a slice
const uint RM = 8u;  // rows an invocation
const uint SA = 17u; // vec4s a k of the shared tiles (64 + 4 floats)

layout(binding = 0) buffer Scratch { float m[]; };
layout(binding = 0) buffer Scratch4 { vec4 m4[]; }; // the same, 4 at a time

shared vec4 tile_l[2u * KS * SA]; // [buffer][k][row / 4]
shared vec4 tile_r[2u * KS * SA]; // [buffer][k][column / 4]
shared float sums[128];

// m[at..at+3] when ok, else zeros (from m[0..3]: the load is not
// conditional, so that the loads of a slice are all in flight at once)
vec4 read4(uint at, bool ok)
{
	vec4 v = m4[ok ? at >> 2 : 0u];
	return mix(vec4(0.0), v, bvec4(ok));
}

void main()
{
	uint n = uint(NF), t = gl_LocalInvocationID.x;
	uint base = gl_WorkGroupID.z * uint(pc.stride);
	bool sym = (pc.flags & 1) != 0;
	uint row0, col0, ct = (n + 63u) / 64u;
	if (sym) {
		// row block i holds column blocks i to ct - 1
		uint i = 0u, idx = gl_WorkGroupID.x;
		while (idx >= ct - i && i + 1u < ct) {
			idx -= ct - i;
			i++;
		}
		row0 = i * 64u;
		col0 = (i + idx) * 64u;
	} else {
		row0 = gl_WorkGroupID.y * 64u;
		col0 = gl_WorkGroupID.x * 64u;
	}
	// a warp of 32 takes 4 row groups x 8 column groups
	uint lane = t & 31u, w = t >> 5;
	uint tx = (lane & 7u) + 8u * (w & 1u), ty = (lane >> 3) + 4u * (w >> 1);

	vec4 acc[RM];
	for (uint r = 0u; r < RM; r++)
		acc[r] = vec4(0.0);
	vec4 pl[2], pr[2];

	// slice loads, two vec4s an invocation each: L's rows along k (vec4
	// e: row e / 4, k 4 (e % 4)); R's rows along the columns (k e / 16,
	// column 4 (e % 16)), or with TRANS_R R's rows along k as L's
	uint lo = base + pc.l, ro = base + pc.r;
#define LOAD(k0)                                                      \
	for (uint i = 0u; i < 2u; i++) {                              \
		uint e = t + 128u * i, row = row0 + (e >> 2);         \
		pl[i] = read4(lo + row * n + (k0) + 4u * (e & 3u),    \
			      row < n);                               \
	}                                                             \
	LOAD_R(k0)
#ifdef TRANS_R
#define LOAD_R(k0)                                                    \
	for (uint i = 0u; i < 2u; i++) {                              \
		uint e = t + 128u * i, col = col0 + (e >> 2);         \
		pr[i] = read4(ro + col * n + (k0) + 4u * (e & 3u),    \
			      col < n);                               \
	}
#else
#define LOAD_R(k0)                                                    \
	for (uint i = 0u; i < 2u; i++) {                              \
		uint e = t + 128u * i, col = col0 + 4u * (e & 15u);   \
		pr[i] = read4(ro + ((k0) + (e >> 4)) * n + col,       \
			      col < n);                               \
	}
#endif

	LOAD(0u)

	// from G (bit 1): the trace sums in a fixed order, so every
	// workgroup of the matrix finds the same s
	float scale_l = 1.0, scale_r = 1.0, p = pc.p;
	if ((pc.flags & 2) != 0) {
		uint at = base + uint(pc.gg);
		float s = 0.0;
		for (uint i = t; i < n; i += 128u)
			s += m[at + i * (n + 1u)];
		sums[t] = s;
		barrier();
		for (uint h = 64u; h > 0u; h >>= 1) {
			if (t < h)
				sums[t] += sums[t + h];
			barrier();
		}
		float inv = 1.0 / (sqrt(sums[0]) + 1e-7);
		vec3 e = vec3((uvec3(pc.flags) >> uvec3(2, 4, 6)) & 3u);
		vec3 f = mix(mix(vec3(1.0), vec3(inv), greaterThan(e, vec3(0.5))),
			     vec3(inv * inv), greaterThan(e, vec3(1.5)));
		scale_l = f.x;
		scale_r = f.y;
		p *= f.z;
	}
	uint buf = 0u;
	for (uint k0 = 0u;; k0 += KS) {
		// the registers into shared buffer buf
		for (uint i = 0u; i < 2u; i++) {
			uint e = t + 128u * i, r = e >> 2, k = buf * KS + 4u * (e & 3u);
			vec4 v = pl[i] * scale_l;
			for (uint c = 0u; c < 4u; c++)
				tile_l[(k + c) * SA + (r >> 2)][r & 3u] = v[c];
		}
		for (uint i = 0u; i < 2u; i++) {
			uint e = t + 128u * i;
			vec4 v = pr[i] * scale_r;
#ifdef TRANS_R
			uint r = e >> 2, k = buf * KS + 4u * (e & 3u);
			for (uint c = 0u; c < 4u; c++)
				tile_r[(k + c) * SA + (r >> 2)][r & 3u] = v[c];
#else
			tile_r[(buf * KS + (e >> 4)) * SA + (e & 15u)] = v;
#endif
		}
		barrier();
		bool more = k0 + KS < n;
		if (more) {
			LOAD(k0 + KS)
		}
		for (uint k = 0u; k < KS; k++) {
			uint kk = buf * KS + k;
			vec4 b = tile_r[kk * SA + tx];
			for (uint i = 0u; i < RM / 4u; i++) {
				vec4 a = tile_l[kk * SA + ty * (RM / 4u) + i];
				acc[4u * i + 0u] += a.x * b;
				acc[4u * i + 1u] += a.y * b;
				acc[4u * i + 2u] += a.z * b;
				acc[4u * i + 3u] += a.w * b;
			}
		}
		if (!more)
			break;
		buf ^= 1u;
	}

	float q = pc.q;
	uint r0 = row0 + ty * RM, c0 = col0 + 4u * tx, co = base + pc.c;
	if (c0 >= n)
		return;
	for (uint r = 0u; r < RM; r++) {
		vec4 d = vec4(0.0);
		if (p != 0.0 && r0 + r < n)
			d = p * m4[(base + pc.d + (r0 + r) * n + c0) >> 2];
		acc[r] = d + q * acc[r];
	}
	bool above = row0 + 64u <= col0;
	if (!sym || above) {
		for (uint r = 0u; r < RM; r++)
			if (r0 + r < n)
				m4[(co + (r0 + r) * n + c0) >> 2] = acc[r];
	}
	if (sym && above) {
		// every output at (c, r) too, a column of the invocation's
		// outputs 4 rows at a time (NF is a multiple of 4: all 4 or
		// none are past it)
		for (uint c = 0u; c < 4u; c++)
			for (uint i = 0u; i < RM / 4u; i++)
				if (r0 + 4u * i < n)
					m4[(co + (c0 + c) * n + r0 + 4u * i) >> 2] =
						vec4(acc[4u * i][c], acc[4u * i + 1u][c],
						     acc[4u * i + 2u][c], acc[4u * i + 3u][c]);
	} else if (sym) {
		// on the diagonal: (r, c) where r <= c, (c, r) where r < c
		for (uint r = 0u; r < RM; r++)
			for (uint c = 0u; c < 4u; c++) {
				uint row = r0 + r, col = c0 + c;
				if (row <= col)
					m[co + row * n + col] = acc[r][c];
				if (row < col)
					m[co + col * n + row] = acc[r][c];
			}
	}
}
