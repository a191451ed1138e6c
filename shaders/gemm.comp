#version 450
// gemm.comp - fp32 matrix product with shared-memory tiles and register
// blocking, the pointwise (1x1) layers forward and backward:
//   C(m, j) = sum_k A(m, k) B(k, j)  [+ bias[m]]
// A(m, k) is a[a_off + m * lda + k], or a[a_off + k * lda + m] with TRANS_A;
// B(k, j) is b[b_off + k * ldb + j], or b[b_off + j * ldb + k] with TRANS_B.
// The three uses (see daemon/nn/passes.c):
//   forward         S = P Z + p       A = P,  B = Z          (NN, bias)
//   data gradient   dZ = P^T dS       A = P^T, B = dS        (TN)
//   weight gradient dP = dS Z^T       A = dS, B = Z^T        (NT, split K)
// Split K: workgroup z sums k in [z k_chunk, (z + 1) k_chunk) and writes
// its own slice of C (c_off + z * M * ldc); the reduce pass adds the slices
// in order, so the result is deterministic.
// Tile sizes BM x BN x BK and TM x TN outputs a thread come from defines.
// With VEC4 (TM = TN = 8) the tiles are kept in shared memory as vec4 and
// a thread owns rows ty*4..+3 and BM/2 + ty*4..+3 (columns likewise), so
// each step of k reads its 16 operands in four 16-byte loads.
#extension GL_GOOGLE_include_directive : require

#ifndef BM
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#endif
#define THREADS ((BM / TM) * (BN / TN))

layout(local_size_x = THREADS) in;

#include "gemm_push.glsl"

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };
layout(binding = 3) readonly buffer Bias { float bias[]; };

#ifdef VEC4
/* one vec4 of padding a row spreads the transposing stores over banks */
shared vec4 As4[BK][BM / 4 + 1];
shared vec4 Bs4[BK][BN / 4 + 1];
#define A_STORE(kk, mm, v) As4[kk][(mm) / 4u][(mm) % 4u] = (v)
#define B_STORE(kk, jj, v) Bs4[kk][(jj) / 4u][(jj) % 4u] = (v)
/* the row (column) of C of a thread's i-th output row (column) */
#define ROW_OF(ty, i) ((i) < 4 ? (ty) * 4u + uint(i) : BM / 2 + (ty) * 4u + uint(i) - 4u)
#define COL_OF(tx, j) ((j) < 4 ? (tx) * 4u + uint(j) : BN / 2 + (tx) * 4u + uint(j) - 4u)
#else
shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];
#define A_STORE(kk, mm, v) As[kk][mm] = (v)
#define B_STORE(kk, jj, v) Bs[kk][jj] = (v)
#define ROW_OF(ty, i) ((ty) + uint(i) * (BM / TM))
#define COL_OF(tx, j) ((tx) + uint(j) * (BN / TN))
#endif

#define A_LOADS ((BM * BK + THREADS - 1) / THREADS)
#define B_LOADS ((BN * BK + THREADS - 1) / THREADS)

// The next tiles are fetched from global memory into registers while the
// current ones are multiplied out of shared memory, hiding the latency.
float next_a[A_LOADS], next_b[B_LOADS];

void fetch(uint k0, uint kend, uint row0, uint col0)
{
	uint lid = gl_LocalInvocationID.x;
	for (int l = 0; l < A_LOADS; l++) {
		uint e = lid + uint(l) * THREADS;
#ifdef TRANS_A
		uint mm = e % BM, kk = e / BM;
#else
		uint kk = e % BK, mm = e / BK;
#endif
		uint m = row0 + mm, k = k0 + kk;
		float v = 0.0;
		if (e < BM * BK && m < g.M && k < kend)
#ifdef TRANS_A
			v = a[g.a_off + k * g.lda + m];
#else
			v = a[g.a_off + m * g.lda + k];
#endif
		next_a[l] = v;
	}
	for (int l = 0; l < B_LOADS; l++) {
		uint e = lid + uint(l) * THREADS;
#ifdef TRANS_B
		uint kk = e % BK, jj = e / BK;
#else
		uint jj = e % BN, kk = e / BN;
#endif
		uint j = col0 + jj, k = k0 + kk;
		float v = 0.0;
		if (e < BN * BK && j < g.N && k < kend)
#ifdef TRANS_B
			v = b[g.b_off + j * g.ldb + k];
#else
			v = b[g.b_off + k * g.ldb + j];
#endif
		next_b[l] = v;
	}
}

void store_fetched()
{
	uint lid = gl_LocalInvocationID.x;
	for (int l = 0; l < A_LOADS; l++) {
		uint e = lid + uint(l) * THREADS;
#ifdef TRANS_A
		uint mm = e % BM, kk = e / BM;
#else
		uint kk = e % BK, mm = e / BK;
#endif
		if (e < BM * BK)
			A_STORE(kk, mm, next_a[l]);
	}
	for (int l = 0; l < B_LOADS; l++) {
		uint e = lid + uint(l) * THREADS;
#ifdef TRANS_B
		uint kk = e % BK, jj = e / BK;
#else
		uint jj = e % BN, kk = e / BN;
#endif
		if (e < BN * BK)
			B_STORE(kk, jj, next_b[l]);
	}
}

void main()
{
	uint lid = gl_LocalInvocationID.x;
	uint tx = lid % (BN / TN), ty = lid / (BN / TN);
	uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
	uint kbeg = gl_WorkGroupID.z * g.k_chunk;
	uint kend = min(g.K, kbeg + g.k_chunk);

	float acc[TM][TN];
	for (int i = 0; i < TM; i++)
		for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0;

	if (kbeg < kend)
		fetch(kbeg, kend, row0, col0);
	for (uint k0 = kbeg; k0 < kend; k0 += BK) {
		store_fetched();
		barrier();
		if (k0 + BK < kend)
			fetch(k0 + BK, kend, row0, col0);
		for (uint kk = 0u; kk < BK; kk++) {
			float ra[TM], rb[TN];
#ifdef VEC4
			vec4 a0 = As4[kk][ty], a1 = As4[kk][BM / 8 + ty];
			vec4 b0 = Bs4[kk][tx], b1 = Bs4[kk][BN / 8 + tx];
			for (int q = 0; q < 4; q++) {
				ra[q] = a0[q];
				ra[q + 4] = a1[q];
				rb[q] = b0[q];
				rb[q + 4] = b1[q];
			}
#else
			for (int i = 0; i < TM; i++)
				ra[i] = As[kk][ty + uint(i) * (BM / TM)];
			for (int j = 0; j < TN; j++)
				rb[j] = Bs[kk][tx + uint(j) * (BN / TN)];
#endif
			for (int i = 0; i < TM; i++)
				for (int j = 0; j < TN; j++)
					acc[i][j] += ra[i] * rb[j];
		}
		barrier();
	}

	uint slice = g.c_off + gl_WorkGroupID.z * g.M * g.ldc;
	for (int i = 0; i < TM; i++) {
		uint m = row0 + ROW_OF(ty, i);
		if (m >= g.M)
			continue;
		float add = g.has_bias != 0u ? bias[g.bias_off + m] : 0.0;
		for (int j = 0; j < TN; j++) {
			uint col = col0 + COL_OF(tx, j);
			if (col < g.N)
				c[slice + m * g.ldc + col] = acc[i][j] + add;
		}
	}
}
