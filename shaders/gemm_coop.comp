#version 450
// gemm_coop.comp - the GEMMs of the pointwise layers on tensor cores:
// fp16 operands, fp32 accumulation by cooperative matrices
// (VK_NV_cooperative_matrix, 16x16x16 fp16 x fp16 + fp32, subgroups of
// 32), fp32 result with bias. The three forms:
//   forward         S = P Z + p     A = P16 [m][k],  B = Z16 [k][j]
//   data gradient   dZ = P^T dS     A = P16 [k][m],  B = dS16 [k][j]  (TRANS_A)
//   weight gradient dP = dS Z^T     A = dS16 [m][k], B = Z16 [j][k]   (TRANS_B)
// Activation rows are padded to a multiple of 16 with zeros by their
// producers, so K and the pixel columns run over whole blocks; blocks past
// M or N are clipped in the epilogue.
//
// Each operand tile is copied from memory in 16-byte pieces along its
// contiguous dimension into shared memory, as it lies (so TRANS_A / TRANS_B
// tiles are read column-major by the matrix loads), one step ahead: the
// next step's pieces are fetched into registers while the tensor cores
// work on the current one.
//
// Gradient operands were multiplied by the loss scale when they were
// rounded to fp16 (they are ~1e-7, below fp16's range); out_scale undoes it.
//
// A workgroup of 8 subgroups computes a 128 x 128 tile of C: subgroup
// (wm, wn) of a 2 x 4 grid owns 64 x 32 of it, as 4 x 2 accumulators.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#define BM 128
#define BN 128
#define BK 32
#define PADH 8 /* halfs of padding a shared row: keeps 16-byte alignment */

layout(local_size_x = 256) in;

layout(push_constant) uniform Gemm {
	uint M, N, K;
	uint lda, ldb, ldc;
	uint a_off, b_off, c_off, bias_off;
	uint k_chunk, has_bias;
	float a_scale, b_scale, out_scale;
} g;

/* fp16 operands, read 8 halfs (16 bytes) at a time */
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) readonly buffer B { uvec4 b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };
layout(binding = 3) readonly buffer Bias { float bias[]; };

/* Shared tiles as they lie in memory: [outer][inner], inner contiguous.
 * A: [BM][BK] (m outer) or, with TRANS_A, [BK][BM] (k outer).
 * B: [BK][BN] (k outer) or, with TRANS_B, [BN][BK] (j outer). */
#ifdef TRANS_A
#define A_OUTER BK
#define A_INNER BM
#else
#define A_OUTER BM
#define A_INNER BK
#endif
#ifdef TRANS_B
#define B_OUTER BN
#define B_INNER BK
#else
#define B_OUTER BK
#define B_INNER BN
#endif
shared float16_t As[A_OUTER * (A_INNER + PADH)];
shared float16_t Bs[B_OUTER * (B_INNER + PADH)];
shared float stage[8 * 256]; /* one 16 x 16 tile a subgroup */

#define A_PIECES (A_OUTER * A_INNER / 8 / 256)
#define B_PIECES (B_OUTER * B_INNER / 8 / 256)
uvec4 next_a[A_PIECES], next_b[B_PIECES];

/* Fetches the pieces of the A and B tiles at k0 into registers (zeros past
 * the matrix or the split's end kend, a multiple of 16). */
void fetch(uint row0, uint col0, uint k0, uint kend)
{
	uint lid = gl_LocalInvocationID.x;
	for (int l = 0; l < A_PIECES; l++) {
		uint e = lid + uint(l) * 256u;
		uint outer = e / (A_INNER / 8), inner = (e % (A_INNER / 8)) * 8u;
#ifdef TRANS_A
		uint m = row0 + inner, k = k0 + outer;
		bool ok = k < kend && m < g.M;
		uint at = g.a_off + k * g.lda + m;
#else
		uint m = row0 + outer, k = k0 + inner;
		bool ok = m < g.M && k < kend;
		uint at = g.a_off + m * g.lda + k;
#endif
		next_a[l] = ok ? a[at / 8u] : uvec4(0u);
	}
	for (int l = 0; l < B_PIECES; l++) {
		uint e = lid + uint(l) * 256u;
		uint outer = e / (B_INNER / 8), inner = (e % (B_INNER / 8)) * 8u;
#ifdef TRANS_B
		uint j = col0 + outer, k = k0 + inner;
		bool ok = j < g.N && k < kend;
		uint at = g.b_off + j * g.ldb + k;
#else
		uint k = k0 + outer, j = col0 + inner;
		bool ok = k < kend && j < g.N;
		uint at = g.b_off + k * g.ldb + j;
#endif
		next_b[l] = ok ? b[at / 8u] : uvec4(0u);
	}
}


void store_fetched()
{
	uint lid = gl_LocalInvocationID.x;
	for (int l = 0; l < A_PIECES; l++) {
		uint e = lid + uint(l) * 256u;
		uint at = (e / (A_INNER / 8)) * (A_INNER + PADH) + (e % (A_INNER / 8)) * 8u;
		uvec4 v = next_a[l];
		for (int q = 0; q < 4; q++) {
			f16vec2 h = unpackFloat2x16(v[q]);
			As[at + uint(2 * q)] = h.x;
			As[at + uint(2 * q + 1)] = h.y;
		}
	}
	for (int l = 0; l < B_PIECES; l++) {
		uint e = lid + uint(l) * 256u;
		uint at = (e / (B_INNER / 8)) * (B_INNER + PADH) + (e % (B_INNER / 8)) * 8u;
		uvec4 v = next_b[l];
		for (int q = 0; q < 4; q++) {
			f16vec2 h = unpackFloat2x16(v[q]);
			Bs[at + uint(2 * q)] = h.x;
			Bs[at + uint(2 * q + 1)] = h.y;
		}
	}
}

void main()
{
	uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
	uint wm = sg / 4u, wn = sg % 4u;
	uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
	uint kbeg = gl_WorkGroupID.z * g.k_chunk;
	uint kend = min(g.K, kbeg + g.k_chunk);

	fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[4][2];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

	if (kbeg < kend)
		fetch(row0, col0, kbeg, kend);
	for (uint k0 = kbeg; k0 < kend; k0 += BK) {
		store_fetched();
		barrier();
		if (k0 + BK < kend)
			fetch(row0, col0, k0 + BK, kend);
		for (uint kk = 0u; kk < BK; kk += 16u) {
			fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[4], fb[2];
			for (int i = 0; i < 4; i++) {
				uint m = wm * 64u + uint(i) * 16u;
#ifdef TRANS_A
				coopMatLoadNV(fa[i], As, kk * (A_INNER + PADH) + m,
					      A_INNER + PADH, true);
#else
				coopMatLoadNV(fa[i], As, m * (A_INNER + PADH) + kk,
					      A_INNER + PADH, false);
#endif
			}
			for (int j = 0; j < 2; j++) {
				uint n = wn * 32u + uint(j) * 16u;
#ifdef TRANS_B
				coopMatLoadNV(fb[j], Bs, n * (B_INNER + PADH) + kk,
					      B_INNER + PADH, true);
#else
				coopMatLoadNV(fb[j], Bs, kk * (B_INNER + PADH) + n,
					      B_INNER + PADH, false);
#endif
			}
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 2; j++)
					acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
		}
		barrier();
	}

	uint slice = g.c_off + gl_WorkGroupID.z * g.M * g.ldc;
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 2; j++) {
			coopMatStoreNV(acc[i][j], stage, sg * 256u, 16u, false);
			subgroupMemoryBarrierShared();
			subgroupBarrier();
			for (uint e = lane; e < 256u; e += 32u) {
				uint m = row0 + wm * 64u + uint(i) * 16u + e / 16u;
				uint col = col0 + wn * 32u + uint(j) * 16u + e % 16u;
				if (m < g.M && col < g.N) {
					float v = stage[sg * 256u + e] * g.out_scale;
					if (g.has_bias != 0u)
						v += bias[g.bias_off + m];
					c[slice + m * g.ldc + col] = v;
				}
			}
			subgroupMemoryBarrierShared();
			subgroupBarrier();
		}
	}
}
