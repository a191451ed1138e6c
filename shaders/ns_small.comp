#version 450
// ns_small.comp - Muon's Newton-Schulz for widths up to 32, all five steps
// in one workgroup a matrix: the 15 dependent products that ns_gemm.comp
// takes one dispatch each (its 64 x 64 blocks three-quarters empty at
// width 32) become one dispatch, the matrices in shared memory.
// It computes what optim.c's chain of ns_gemm dispatches does, step by
// step and in the same order of sums: from G (at off0 of the z-th matrix,
// z * i2 floats on), with s = sqrt(trace G G^T) + 1e-7 summed as
// ns_gemm.comp sums it (128 slots, halving),
//   A = G G^T,  B = c1 (A / s^2) + c2 (A / s^2)^2,  X = c0 G / s + B G / s
// then four times
//   A = X X^T,  B = c1 A + c2 A^2,  X = c0 X + B X
// where c0, c1, c2 are the float bits of i0, i1 and i3; X is stored at
// off1. Each output sums over k in order, in one accumulator.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

const uint MOST = 32u; // the widest NF it takes
const uint THREADS = 256u;

layout(binding = 0) buffer Scratch { float m[]; };

shared float xs[MOST * MOST];  // X (G at first)
shared float as_[MOST * MOST]; // A
shared float bs[MOST * MOST];  // B
shared float sums[128];

void main()
{
	uint n = uint(NF), nn = n * n, t = gl_LocalInvocationID.x;
	uint base = gl_WorkGroupID.z * uint(pc.i2);
	float c0 = intBitsToFloat(pc.i0), c1 = intBitsToFloat(pc.i1),
	      c2 = intBitsToFloat(pc.i3);
	for (uint i = t; i < nn; i += THREADS)
		xs[i] = m[base + pc.off0 + i];
	barrier();
	float inv = 1.0;
	for (int step = 0; step < 5; step++) {
		// A = X X^T
		for (uint i = t; i < nn; i += THREADS) {
			uint r = i / n, c = i % n;
			float acc = 0.0;
			for (uint k = 0u; k < n; k++)
				acc += xs[r * n + k] * xs[c * n + k];
			as_[i] = acc;
		}
		barrier();
		float sl = 1.0, p1 = c1, sr = 1.0;
		if (step == 0) {
			// the trace of G G^T as ns_gemm.comp sums it
			if (t < 128u) {
				float s = 0.0;
				for (uint i = t; i < n; i += 128u)
					s += as_[i * (n + 1u)];
				sums[t] = s;
			}
			barrier();
			for (uint h = 64u; h > 0u; h >>= 1) {
				if (t < h)
					sums[t] += sums[t + h];
				barrier();
			}
			inv = 1.0 / (sqrt(sums[0]) + 1e-7);
			sl = inv * inv;
			p1 = c1 * (inv * inv);
		}
		// B = p1 A + c2 (A sl)(A sl)
		for (uint i = t; i < nn; i += THREADS) {
			uint r = i / n, c = i % n;
			float acc = 0.0;
			for (uint k = 0u; k < n; k++)
				acc += (as_[r * n + k] * sl) * (as_[k * n + c] * sl);
			bs[i] = p1 * as_[i] + c2 * acc;
		}
		barrier();
		// X' = p0 X + B (X sr), into A's place, then back
		float p0 = c0;
		if (step == 0) {
			sr = inv;
			p0 = c0 * inv;
		}
		for (uint i = t; i < nn; i += THREADS) {
			uint r = i / n, c = i % n;
			float acc = 0.0;
			for (uint k = 0u; k < n; k++)
				acc += bs[r * n + k] * (xs[k * n + c] * sr);
			as_[i] = p0 * xs[i] + 1.0 * acc;
		}
		barrier();
		for (uint i = t; i < nn; i += THREADS)
			xs[i] = as_[i];
		barrier();
	}
	for (uint i = t; i < nn; i += THREADS)
		m[base + pc.off1 + i] = xs[i];
}
