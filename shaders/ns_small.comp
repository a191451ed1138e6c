#version 450
// ns_small.comp - Muon's Newton-Schulz for widths up to 32, all five steps
// in one workgroup a matrix: the 15 dependent products that ns_gemm.comp
// takes one dispatch each (its 64 x 64 blocks three-quarters empty at
// width 32) become one dispatch, the matrices in shared memory.
// It computes what optim.c's chain of ns_gemm dispatches does, step by
// step and in the same order of sums: from G (at x_off of the z-th matrix,
// z * stride floats on), with s = sqrt(trace G G^T) + 1e-7 summed as
// ns_gemm.comp sums it (128 slots, halving),
//   A = G G^T,  B = c1 (A / s^2) + c2 (A / s^2)^2,  X = c0 G / s + B G / s
// then four times
//   A = X X^T,  B = c1 A + c2 A^2,  X = c0 X + B X
// where c0, c1, c2 come with the push block; X is stored at
// out_off. Each output sums over k in order, in one accumulator.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_NS_SMALL
#include "common.glsl"

const uint MOST = 32u; // the widest NF it takes
const uint THREADS = 256u;
const uint PITCH = MOST + 1u; // a row's floats: the 33rd keeps rows off one bank

layout(binding = 0) buffer Scratch { float m[]; };

shared float xs[MOST * PITCH];  // X (G at first)
shared float as_[MOST * PITCH]; // A
shared float bs[MOST * PITCH];  // B
shared float sums[128];

// Each invocation computes the outputs (r0 + j * THREADS / n, c) of a
// product, j below nn / THREADS (4 at NF 32): c is its lane's column and
// r0 the same across a subgroup at NF 32, so a left operand's element is
// one broadcast read for the subgroup and a right one a row's consecutive
// floats; the pitch of 33 keeps X X^T's column reads X[c][k] on 32 banks.
// (One output an invocation read both operands for every product, X X^T's
// 32 lanes all on one bank: the shared memory's reads were the pass.)

void main()
{
	uint n = uint(NF), nn = n * n, t = gl_LocalInvocationID.x;
	uint base = gl_WorkGroupID.z * uint(pc.stride);
	float c0 = pc.c0, c1 = pc.c1,
	      c2 = pc.c2;
	uint c = t % n, r0 = t / n, rstep = THREADS / n, outs = nn / THREADS;
	for (uint i = t; i < nn; i += THREADS)
		xs[(i / n) * PITCH + i % n] = m[base + pc.x_off + i];
	barrier();
	float inv = 1.0;
	float acc[4];
	for (int step = 0; step < 5; step++) {
		// A = X X^T
		for (uint j = 0u; j < 4u; j++)
			acc[j] = 0.0;
		for (uint k = 0u; k < n; k++) {
			float right = xs[c * PITCH + k];
			for (uint j = 0u; j < 4u; j++)
				if (j < outs)
					acc[j] += xs[(r0 + j * rstep) * PITCH + k] * right;
		}
		for (uint j = 0u; j < 4u; j++)
			if (j < outs)
				as_[(r0 + j * rstep) * PITCH + c] = acc[j];
		barrier();
		float sl = 1.0, p1 = c1, sr = 1.0;
		if (step == 0) {
			// the trace of G G^T as ns_gemm.comp sums it
			if (t < 128u) {
				float s = 0.0;
				for (uint i = t; i < n; i += 128u)
					s += as_[i * (PITCH + 1u)];
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
		for (uint j = 0u; j < 4u; j++)
			acc[j] = 0.0;
		for (uint k = 0u; k < n; k++) {
			float right = as_[k * PITCH + c] * sl;
			for (uint j = 0u; j < 4u; j++)
				if (j < outs)
					acc[j] += (as_[(r0 + j * rstep) * PITCH + k] * sl) * right;
		}
		for (uint j = 0u; j < 4u; j++)
			if (j < outs) {
				uint at = (r0 + j * rstep) * PITCH + c;
				bs[at] = p1 * as_[at] + c2 * acc[j];
			}
		barrier();
		// X' = p0 X + B (X sr), into A's place, then back
		float p0 = c0;
		if (step == 0) {
			sr = inv;
			p0 = c0 * inv;
		}
		for (uint j = 0u; j < 4u; j++)
			acc[j] = 0.0;
		for (uint k = 0u; k < n; k++) {
			float right = xs[k * PITCH + c] * sr;
			for (uint j = 0u; j < 4u; j++)
				if (j < outs)
					acc[j] += bs[(r0 + j * rstep) * PITCH + k] * right;
		}
		for (uint j = 0u; j < 4u; j++)
			if (j < outs) {
				uint at = (r0 + j * rstep) * PITCH + c;
				as_[at] = p0 * xs[at] + 1.0 * acc[j];
			}
		barrier();
		for (uint j = 0u; j < 4u; j++)
			if (j < outs) {
				uint at = (r0 + j * rstep) * PITCH + c;
				xs[at] = as_[at];
			}
		barrier();
	}
	for (uint i = t; i < nn; i += THREADS)
		m[base + pc.out_off + i] = xs[(i / n) * PITCH + i % n];
}
