#version 450
// gemm_cpu.comp - the fp32 matrix product of gemm.comp (same operands,
// same push constants, same split-K slices) written for CPU devices
// (lavapipe). There a workgroup runs on one thread, an invocation is a
// SIMD lane (8 floats at 256 bits), shared memory is ordinary memory and
// every barrier splits the shader into pieces looped over the lanes; and
// every buffer access whose address differs between lanes (or is merely
// the same in every lane) is a loop of scalar loads over the lanes, some
// 15 instructions a lane. So this shader has no shared memory and no
// barrier, and it counts loads: an invocation owns a register block of C,
// TM rows by TN columns (columns col0 + t WG), loads B(k, j) once for its
// TM rows, and takes A(m, k), the same for every lane, from a subgroup
// shuffle: lane l loads A(m, k0 + l) of a chunk of 8 values of k (one load
// for 8 uses), then subgroupShuffle(.., kk) with kk a constant hands each
// lane its value (an extract and a splat; a subgroupBroadcast would loop
// over the lanes). Per 8 values of k: TM + 8 TN loads for 8 TM TN
// multiply-adds (TM 32, TN 4: 64 loads for 1024).
//
// The chunk of k is 8, lavapipe's subgroup size; a larger subgroup works
// too (lanes past 8 load values no one reads), a smaller one does not:
// fit.c picks the family only on CPU devices with subgroups of 8 or more.
// A workgroup is WG invocations, TM rows by WG TN columns of C; workgroup
// z sums its slice of K, as in gemm.comp (see there for the three forms).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 4
#endif
#define LANES 8 /* the subgroup size of lavapipe: a chunk of k, a lane each */
#ifndef WG
#define WG LANES
#endif
#define COLS (WG * TN)

layout(local_size_x = WG) in;

#include "gemm_push.glsl"

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };
layout(binding = 3) readonly buffer Bias { float bias[]; };

#ifdef TRANS_A
#define A_AT(m, k) a[g.a_off + (k) * g.lda + (m)]
#else
#define A_AT(m, k) a[g.a_off + (m) * g.lda + (k)]
#endif
#ifdef TRANS_B
#define B_AT(k, j) b[g.b_off + (j) * g.ldb + (k)]
#else
#define B_AT(k, j) b[g.b_off + (k) * g.ldb + (j)]
#endif

void main()
{
	uint col0 = gl_WorkGroupID.x * COLS + gl_LocalInvocationID.x;
	uint row0 = gl_WorkGroupID.y * TM;
	uint kbeg = gl_WorkGroupID.z * g.k_chunk;
	uint kend = min(g.K, kbeg + g.k_chunk);
	uint lane = gl_SubgroupInvocationID;
	/* the invocation's columns col0 + t WG; those past N read column
	 * N - 1 and store nothing, so that every lane runs the same code;
	 * likewise rows past M read row M - 1 */
	uint jc[TN];
	for (int t = 0; t < TN; t++)
		jc[t] = min(col0 + uint(t) * WG, g.N - 1u);

	float acc[TM][TN];
	for (int i = 0; i < TM; i++)
		for (int t = 0; t < TN; t++)
			acc[i][t] = 0.0;

	uint klast = kend - 1u;
	for (uint k0 = kbeg; k0 < kend; k0 += LANES) {
		/* lane l holds A(row0 + i, k0 + l), zero past the chunk's end */
		uint kl = k0 + lane;
		uint kcl = min(kl, klast);
		float ar[TM];
		for (int i = 0; i < TM; i++) {
			float v = A_AT(min(row0 + uint(i), g.M - 1u), kcl);
			ar[i] = kl < kend ? v : 0.0;
		}
		/* past the end A is zero and B reads row kend - 1. A shuffle
		 * by a constant lane is an extract and a splat on lavapipe (a
		 * subgroupBroadcast there loops over the lanes) */
#define STEP(kk)                                                             \
	{                                                                    \
		float bv[TN];                                                \
		for (int t = 0; t < TN; t++)                                 \
			bv[t] = B_AT(min(k0 + kk, klast), jc[t]);            \
		for (int i = 0; i < TM; i++) {                               \
			float av = subgroupShuffle(ar[i], kk);               \
			for (int t = 0; t < TN; t++)                         \
				acc[i][t] += av * bv[t];                     \
		}                                                            \
	}
		STEP(0u) STEP(1u) STEP(2u) STEP(3u)
		STEP(4u) STEP(5u) STEP(6u) STEP(7u)
#undef STEP
	}

	uint slice = g.c_off + gl_WorkGroupID.z * g.M * g.ldc;
	for (int i = 0; i < TM; i++) {
		uint m = row0 + uint(i);
		if (m >= g.M)
			break;
		float add = g.has_bias != 0u ? bias[g.bias_off + m] : 0.0;
		for (int t = 0; t < TN; t++) {
			uint col = col0 + uint(t) * WG;
			if (col < g.N)
				c[slice + m * g.ldc + col] = acc[i][t] + add;
		}
	}
}
