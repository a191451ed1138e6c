#version 450
// ns_small_cpu.comp - Muon's Newton-Schulz of ns_small.comp for CPU
// devices (lavapipe) at widths up to 16: one subgroup of 8 a matrix, the
// matrices in registers. ns_small.comp's 256 invocations meet at some 30
// barriers, each of which lavapipe runs as a switch of 32 coroutines, and
// read their operands from shared memory, a loop over the SIMD lanes a
// value; here lane l holds rows l and l + 8 of X, A and B, and every
// value of another row comes from a subgroup shuffle by a constant lane,
// which lavapipe does in one instruction. No memory is touched between the
// first load and the last store.
//
// The same products in the same order as ns_small.comp (each output sums
// over k in order, in one accumulator), and the trace of G G^T summed by
// the same halving: push constants, bindings and results as there.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#define LANES 8 /* lavapipe's subgroup: a workgroup */
layout(local_size_x = LANES) in;
#define PASS_PUSH PUSH_NS_SMALL
#include "common.glsl"

#define N 16 /* the widest NF it takes (optim.c checks) */
#define R (N / LANES) /* rows a lane */

layout(binding = 0) buffer Scratch { float m[]; };

// row (LANES i + lane) of a matrix held R rows a lane, column c, for the
// row and column constants
#define ROW_OF(v, k, c) subgroupShuffle(v[(k) / LANES][c], (k) % LANES)

void main()
{
	const uint n = uint(NF);
	uint lane = gl_SubgroupInvocationID;
	uint base = gl_WorkGroupID.z * uint(pc.stride);
	float c0 = pc.c0, c1 = pc.c1,
	      c2 = pc.c2;
	float x[R][N], a[R][N], b[R][N];
	[[unroll]] for (int i = 0; i < R; i++)
		[[unroll]] for (int c = 0; c < N; c++) {
			uint r = uint(LANES * i) + lane;
			x[i][c] = r < n && uint(c) < n
				      ? m[base + pc.x_off + r * n + uint(c)]
				      : 0.0;
		}
	float inv = 1.0;
	for (int step = 0; step < 5; step++) {
		// A = X X^T
		[[unroll]] for (int i = 0; i < R; i++)
			[[unroll]] for (int c = 0; c < N; c++) {
				float acc = 0.0;
				[[unroll]] for (int k = 0; k < N; k++)
					if (k < NF)
						acc += x[i][k] * ROW_OF(x, c, k);
				a[i][c] = acc;
			}
		float sl = 1.0, p1 = c1, sr = 1.0;
		if (step == 0) {
			// the trace as ns_small.comp halves it: the diagonal
			// at index LANES i + lane, the halvings of 8 and more
			// between a lane's own values, then across the lanes
			float d[R];
			[[unroll]] for (int i = 0; i < R; i++) {
				d[i] = 0.0;
				[[unroll]] for (int c = 0; c < N; c++)
					if (uint(c) == uint(LANES * i) + lane &&
					    c < NF)
						d[i] = a[i][c];
			}
			[[unroll]] for (int h = R / 2; h > 0; h /= 2)
				[[unroll]] for (int i = 0; i < h; i++)
					d[i] += d[i + h];
			float s = d[0];
			[[unroll]] for (uint h = LANES / 2; h > 0u; h /= 2u)
				s += subgroupShuffle(s, (lane + h) % LANES);
			s = subgroupShuffle(s, 0u);
			inv = 1.0 / (sqrt(s) + 1e-7);
			sl = inv * inv;
			p1 = c1 * (inv * inv);
		}
		// B = p1 A + c2 (A sl)(A sl)
		[[unroll]] for (int i = 0; i < R; i++)
			[[unroll]] for (int c = 0; c < N; c++) {
				float acc = 0.0;
				[[unroll]] for (int k = 0; k < N; k++)
					if (k < NF)
						acc += (a[i][k] * sl) *
						       (ROW_OF(a, k, c) * sl);
				b[i][c] = p1 * a[i][c] + c2 * acc;
			}
		// X' = p0 X + B (X sr), into A's place, then back
		float p0 = c0;
		if (step == 0) {
			sr = inv;
			p0 = c0 * inv;
		}
		[[unroll]] for (int i = 0; i < R; i++)
			[[unroll]] for (int c = 0; c < N; c++) {
				float acc = 0.0;
				[[unroll]] for (int k = 0; k < N; k++)
					if (k < NF)
						acc += b[i][k] *
						       (ROW_OF(x, k, c) * sr);
				a[i][c] = p0 * x[i][c] + 1.0 * acc;
			}
		[[unroll]] for (int i = 0; i < R; i++)
			[[unroll]] for (int c = 0; c < N; c++)
				x[i][c] = a[i][c];
	}
	[[unroll]] for (int i = 0; i < R; i++)
		[[unroll]] for (int c = 0; c < N; c++) {
			uint r = uint(LANES * i) + lane;
			if (r < n && uint(c) < n)
				m[base + pc.out_off + r * n + uint(c)] = x[i][c];
		}
}
