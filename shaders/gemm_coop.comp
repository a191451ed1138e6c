#version 450
// gemm_coop.comp - the GEMMs of the pointwise layers on tensor cores:
// fp16 operands, fp32 accumulation by cooperative matrices
// (VK_NV_cooperative_matrix, and VK_KHR_cooperative_matrix through the
// build's word-for-word translation), fp32 result. The three forms:
//   forward         S = P Z + p     A = P16 [m][k],  B = Z16 [k][j]
//   data gradient   dZ = P^T dS     A = P16 [k][m],  B = dS16 [k][j]  (TRANS_A)
//   weight gradient dP = dS Z^T     A = dS16 [m][k], B = Z16 [j][k]   (TRANS_B)
// Activation rows are padded to a multiple of 16 with zeros by their
// producers, so K and the pixel columns run over whole 16-byte pieces;
// outputs past M or N are clipped in the epilogue.
//
// How it is built (the shape of the fast public Vulkan GEMMs):
// - a workgroup of SG_M x SG_N subgroups of 32 computes a BM x BN tile of C;
//   each subgroup owns (BM / SG_M) x (BN / SG_N) of it as FM x FN
//   accumulators of 16 x 8 (the 16x8x16 shape, whose A, B and C types are
//   all distinct, which the NV-to-KHR translation needs; FRAG_N=16 builds
//   the 16x16x16 shape for NV alone);
// - the operand tiles of a K step are copied global -> registers ->
//   shared memory in 16-byte pieces (uvec4), as they lie in memory, each
//   shared row skewed by one piece against bank conflicts; the matrix loads
//   read them straight from there (column-major for the transposed forms);
// - the next K step's pieces are fetched into registers while the tensor
//   cores multiply the current one (two barriers a step);
// - every loop over matrices is unrolled, so the accumulators stay in
//   registers;
// - the epilogue scales (out_scale undoes the loss scale of fp16 gradient
//   operands), adds the bias (a stride-0 column-major load from shared
//   memory) and stores in-bounds, 16-byte-aligned tiles straight to global
//   memory; edge tiles go through a small shared stage with bounds checks.
// Block order: workgroups start in the order of their linear id, x first,
// so the row blocks of C that share one column block of B (the wide
// activation operand of the forward and the data gradient) are given
// consecutive ids and read that tile of B while the L2 cache holds it,
// not once a row block from memory (5% faster on the H200).
// Split K: workgroup z sums k in [z k_chunk, (z + 1) k_chunk) into its own
// slice of C (c_off + z * M * ldc); the reduce pass adds the slices in a
// fixed order, so runs are deterministic.
//
// PHASE_OUT (the forward of the fp16 path, whose S_k is stored as its
// phase): the epilogue writes the phase of S (phase.glsl) in fp16 instead
// of S in fp32, for the next block's depthwise pass: half the bytes out,
// and that pass reads fp16 and writes no copy. Each accumulator goes
// through the subgroup's stage, where an invocation takes 4 values of a
// row, wraps them and stores them as one 8-byte piece.
//
// HALF_OUT (the data gradient of the fp16 path): the epilogue writes dZ in
// fp16, still times the loss scale of its dS operand (out_scale 1), by the
// same stage as PHASE_OUT, for the depthwise backward that reads it: half
// the bytes out and in, where the fp32 dZ was only ever read once.
//
// EMULATE builds the same tiling with fp32 operands and a plain-arithmetic
// stand-in for the matrix operations (a fragment is a view of the shared
// tile, the multiply-add reads it element by element), so that devices
// without tensor cores (lavapipe in CI) check every index of it: block and
// subgroup tiles, the prefetch, the edges and the split-K slices.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_GOOGLE_include_directive : require
#if defined(PHASE_OUT) || defined(HALF_OUT)
#define FP16_OUT
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifdef PHASE_OUT
#include "phase.glsl"
layout(constant_id = 1) const float W0 = 30.0;
#endif
#ifndef EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#ifndef BM
#define BM 128
#define BN 128
#define BK 32
#define SG_M 2
#define SG_N 2
#endif
/* FRAG_N: the accumulators' width, 8 (the 16x8x16 shape, every device)
 * or 16 (16x16x16: NVIDIA only, as its A and B share one type, which the
 * KHR translation refuses) */
#ifndef FRAG_N
#define FRAG_N 8
#endif
#if (defined(EMULATE) || defined(FP16_OUT)) && FRAG_N != 8
#error "the emulation and the fp16 epilogues have the 16x8x16 shape only"
#endif
#define THREADS (SG_M * SG_N * 32)
#define WM (BM / SG_M)     /* rows of C a subgroup owns */
#define WN (BN / SG_N)     /* columns of C a subgroup owns */
#define FM (WM / 16)       /* accumulators down */
#define FN (WN / FRAG_N)   /* accumulators across */
#define FRAG (16 * FRAG_N) /* values an accumulator */
#if (WM % 16) || (WN % FRAG_N) || (BK % 16)
#error "a subgroup's tile must be whole accumulators, BK whole 16s"
#endif

#ifdef EMULATE
#define EPV 4              /* elements a 16-byte piece: fp32 */
#else
#define EPV 8              /* fp16 */
#endif

layout(local_size_x = THREADS) in;

#include "gemm_push.glsl"

#ifdef EMULATE
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
#else
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) readonly buffer B { uvec4 b[]; };
#endif
#ifdef FP16_OUT
layout(binding = 2) writeonly buffer C { float16_t c[]; };
layout(binding = 2) writeonly buffer C4 { f16vec4 c4[]; }; /* the same, 4 at a time */
#else
layout(binding = 2) writeonly buffer C { float c[]; };
#endif
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
#define A_ROW (A_INNER / EPV + 1) /* pieces a shared row, with the skew */
#define B_ROW (B_INNER / EPV + 1)
#define A_PIECES (A_OUTER * (A_INNER / EPV) / THREADS)
#define B_PIECES (B_OUTER * (B_INNER / EPV) / THREADS)
#if (A_OUTER * (A_INNER / EPV)) % THREADS || (B_OUTER * (B_INNER / EPV)) % THREADS
#error "the operand tiles must split evenly over the invocations"
#endif

shared uvec4 As[A_OUTER * A_ROW];
shared uvec4 Bs[B_OUTER * B_ROW];
shared float bias_tile[BM];
shared float stage[SG_M * SG_N * FRAG]; /* one accumulator a subgroup */

uvec4 next_a[A_PIECES], next_b[B_PIECES];

/* ------------------------------------------------- global -> registers */

/* One 16-byte piece of an operand at element `at`; `avail` elements of it
 * lie inside the matrix. The fp16 operands are padded, so a piece is
 * whole or absent; the fp32 emulation reads element by element, as its
 * rows are not padded. */
#ifdef EMULATE
uvec4 piece_a(uint at, uint avail)
{
	uvec4 v = uvec4(0u);
	[[unroll]] for (uint q = 0u; q < 4u; q++)
		if (q < avail)
			v[q] = floatBitsToUint(a[at + q]);
	return v;
}
uvec4 piece_b(uint at, uint avail)
{
	uvec4 v = uvec4(0u);
	[[unroll]] for (uint q = 0u; q < 4u; q++)
		if (q < avail)
			v[q] = floatBitsToUint(b[at + q]);
	return v;
}
#else
#define piece_a(at, avail) a[(at) / 8u]
#define piece_b(at, avail) b[(at) / 8u]
#endif

/* Fetches the A and B pieces of the K step at k0 into registers: zeros
 * past the matrix or past the split's end kend. */
void fetch(uint row0, uint col0, uint k0, uint kend)
{
	uint lid = gl_LocalInvocationID.x;
	[[unroll]] for (uint l = 0u; l < A_PIECES; l++) {
		uint e = lid + l * THREADS;
		uint outer = e / (A_INNER / EPV), inner = (e % (A_INNER / EPV)) * EPV;
#ifdef TRANS_A
		uint m = row0 + inner, k = k0 + outer;
		bool ok = k < kend && m < g.M;
		uint avail = g.M - m;
		uint at = g.a_off + k * g.lda + m;
#else
		uint m = row0 + outer, k = k0 + inner;
		bool ok = m < g.M && k < kend;
		uint avail = kend - k;
		uint at = g.a_off + m * g.lda + k;
#endif
		next_a[l] = ok ? piece_a(at, avail) : uvec4(0u);
	}
	[[unroll]] for (uint l = 0u; l < B_PIECES; l++) {
		uint e = lid + l * THREADS;
		uint outer = e / (B_INNER / EPV), inner = (e % (B_INNER / EPV)) * EPV;
#ifdef TRANS_B
		uint j = col0 + outer, k = k0 + inner;
		bool ok = j < g.N && k < kend;
		uint avail = kend - k;
		uint at = g.b_off + j * g.ldb + k;
#else
		uint k = k0 + outer, j = col0 + inner;
		bool ok = k < kend && j < g.N;
		uint avail = g.N - j;
		uint at = g.b_off + k * g.ldb + j;
#endif
		next_b[l] = ok ? piece_b(at, avail) : uvec4(0u);
	}
}

void store_fetched()
{
	uint lid = gl_LocalInvocationID.x;
	[[unroll]] for (uint l = 0u; l < A_PIECES; l++) {
		uint e = lid + l * THREADS;
		As[(e / (A_INNER / EPV)) * A_ROW + e % (A_INNER / EPV)] = next_a[l];
	}
	[[unroll]] for (uint l = 0u; l < B_PIECES; l++) {
		uint e = lid + l * THREADS;
		Bs[(e / (B_INNER / EPV)) * B_ROW + e % (B_INNER / EPV)] = next_b[l];
	}
}

/* ------------------------------------------------- the matrix operations */

/* Offsets (in pieces) of the A fragment at (m, kk) and the B fragment at
 * (kk, n) of the shared tiles; COL_A / COL_B: read column-major. */
#ifdef TRANS_A
#define A_AT(m, kk) ((kk) * A_ROW + (m) / EPV)
#define COL_A true
#else
#define A_AT(m, kk) ((m) * A_ROW + (kk) / EPV)
#define COL_A false
#endif
#ifdef TRANS_B
#define B_AT(kk, n) ((n) * B_ROW + (kk) / EPV)
#define COL_B true
#else
#define B_AT(kk, n) ((kk) * B_ROW + (n) / EPV)
#define COL_B false
#endif

#ifdef EMULATE
/* A fragment is the piece offset of its corner in the shared tile; an
 * accumulator is the 4 of its 128 values that this invocation holds:
 * lane l holds row (4l + q) / 8, column (4l + q) % 8, q = 0..3. */
#define FragA uint
#define FragB uint
struct Acc { float v[4]; };
#define ACC_ZERO Acc(float[4](0.0, 0.0, 0.0, 0.0))
#define LOAD_A(f, at) f = (at)
#define LOAD_B(f, at) f = (at)

float shared_a(uint at, uint r, uint k)
{
	uint e = at * 4u + (COL_A ? k * A_ROW * 4u + r : r * A_ROW * 4u + k);
	return uintBitsToFloat(As[e / 4u][e % 4u]);
}
float shared_b(uint at, uint k, uint n)
{
	uint e = at * 4u + (COL_B ? n * B_ROW * 4u + k : k * B_ROW * 4u + n);
	return uintBitsToFloat(Bs[e / 4u][e % 4u]);
}
Acc mul_add(FragA fa, FragB fb, Acc acc)
{
	uint lane = gl_LocalInvocationID.x % 32u;
	for (uint q = 0u; q < 4u; q++) {
		uint r = (lane * 4u + q) / 8u, n = (lane * 4u + q) % 8u;
		float s = 0.0;
		for (uint k = 0u; k < 16u; k++)
			s += shared_a(fa, r, k) * shared_b(fb, k, n);
		acc.v[q] += s;
	}
	return acc;
}
#else
#define FragA fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FragB fcoopmatNV<16, gl_ScopeSubgroup, 16, FRAG_N>
#define Acc fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N>
#define ACC_ZERO Acc(0.0)
#define LOAD_A(f, at) coopMatLoadNV(f, As, at, A_ROW, COL_A)
#define LOAD_B(f, at) coopMatLoadNV(f, Bs, at, B_ROW, COL_B)
#define mul_add(fa, fb, acc) coopMatMulAddNV(fa, fb, acc)
#endif

/* ------------------------------------------------------------- epilogue */

/* The stage is a subgroup's own; the emulation's "subgroups" are 32
 * invocations that may be several of the device's, and it stages every
 * tile, in the workgroup's uniform control flow. */
#ifdef EMULATE
#define SYNC_STAGE() barrier()
#else
#define SYNC_STAGE() subgroupMemoryBarrierShared(); subgroupBarrier()
#endif

/* Puts one accumulator in the subgroup's stage, row-major. */
void stage_accumulator(Acc acc, uint sg, uint lane)
{
#ifdef EMULATE
	for (uint q = 0u; q < 4u; q++)
		stage[sg * FRAG + lane * 4u + q] = acc.v[q];
#else
	coopMatStoreNV(acc, stage, sg * FRAG, FRAG_N, false);
#endif
}

#ifdef FP16_OUT
/* Writes one accumulator's 16 x 8 block of C at (m, col) in fp16 (its
 * phase with PHASE_OUT): invocation l takes row l / 2, columns 4 (l % 2)
 * to 4 (l % 2) + 3; aligned: rows and the slice start on a multiple of 4
 * values. */
void store_half(Acc acc, uint sg, uint lane, uint slice, uint m, uint col,
		 uint m_local, bool aligned)
{
	stage_accumulator(acc, sg, lane);
	SYNC_STAGE();
	uint r = lane / 2u, cc = (lane % 2u) * 4u, at = sg * FRAG + r * 8u + cc;
	vec4 v = vec4(stage[at], stage[at + 1u], stage[at + 2u], stage[at + 3u]) *
		 g.out_scale;
	if (g.has_bias != 0u)
		v += bias_tile[m_local + r];
#ifdef PHASE_OUT
	v = wrap_phase(W0 * v);
#endif
	uint gr = m + r, gc = col + cc, to = slice + gr * g.ldc + gc;
	if (gr < g.M) {
		if (aligned && gc + 4u <= g.N) {
			c4[to / 4u] = f16vec4(v);
		} else {
			for (uint q = 0u; q < 4u; q++)
				if (gc + q < g.N)
					c[to + q] = float16_t(v[q]);
		}
	}
	SYNC_STAGE();
}
#else
/* Writes one accumulator, the 16 x FRAG_N block of C at (m, col), through the
 * subgroup's stage with bounds checks (edge tiles, or rows not 16-byte
 * aligned). */
void store_staged(Acc acc, uint sg, uint lane, uint slice, uint m, uint col,
		  uint m_local)
{
	stage_accumulator(acc, sg, lane);
	SYNC_STAGE();
	for (uint e = lane; e < FRAG; e += 32u) {
		uint r = m + e / FRAG_N, cc = col + e % FRAG_N;
		if (r < g.M && cc < g.N) {
			float v = stage[sg * FRAG + e] * g.out_scale;
			if (g.has_bias != 0u)
				v += bias_tile[m_local + e / FRAG_N];
			c[slice + r * g.ldc + cc] = v;
		}
	}
	SYNC_STAGE();
}
#endif

/* The block of C this workgroup computes: (column block, row block). The
 * dispatch is (column blocks, row blocks, splits). */
uvec2 block_of_c()
{
	uint rows = (g.M + BM - 1u) / BM;
	uint id = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	return uvec2(id / rows, id % rows);
}

void main()
{
	uint lid = gl_LocalInvocationID.x;
	uint sg = lid / 32u, lane = lid % 32u; /* full subgroups of 32 */
	uint wm = sg / SG_N, wn = sg % SG_N;
	uvec2 block = block_of_c();
	uint row0 = block.y * BM, col0 = block.x * BN;
	uint kbeg = gl_WorkGroupID.z * g.k_chunk;
	uint kend = min(g.K, kbeg + g.k_chunk);

	for (uint i = lid; i < BM; i += THREADS)
		bias_tile[i] = g.has_bias != 0u && row0 + i < g.M
				       ? bias[g.bias_off + row0 + i] : 0.0;

	Acc acc[FM][FN];
	[[unroll]] for (uint i = 0u; i < FM; i++)
		[[unroll]] for (uint j = 0u; j < FN; j++)
			acc[i][j] = ACC_ZERO;

	if (kbeg < kend)
		fetch(row0, col0, kbeg, kend);
	for (uint k0 = kbeg; k0 < kend; k0 += BK) {
		barrier(); /* the last step's reads of the tiles are done */
		store_fetched();
		barrier();
		if (k0 + BK < kend)
			fetch(row0, col0, k0 + BK, kend);
		[[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
			FragA fa[FM];
			[[unroll]] for (uint i = 0u; i < FM; i++)
				LOAD_A(fa[i], A_AT(wm * WM + i * 16u, kk));
			[[unroll]] for (uint j = 0u; j < FN; j++) {
				FragB fb;
				LOAD_B(fb, B_AT(kk, wn * WN + j * FRAG_N));
				[[unroll]] for (uint i = 0u; i < FM; i++)
					acc[i][j] = mul_add(fa[i], fb, acc[i][j]);
			}
		}
	}
	barrier(); /* bias_tile is written, whether or not K ran */

	uint slice = g.c_off + gl_WorkGroupID.z * g.M * g.ldc;
	bool aligned = g.ldc % 4u == 0u && slice % 4u == 0u;
#ifdef FP16_OUT
	[[unroll]] for (uint i = 0u; i < FM; i++) {
		uint m_local = wm * WM + i * 16u;
		[[unroll]] for (uint j = 0u; j < FN; j++)
			store_half(acc[i][j], sg, lane, slice, row0 + m_local,
				    col0 + wn * WN + j * FRAG_N, m_local, aligned);
	}
#else
	[[unroll]] for (uint i = 0u; i < FM; i++) {
		uint m_local = wm * WM + i * 16u, m = row0 + m_local;
		[[unroll]] for (uint j = 0u; j < FN; j++) {
			uint col = col0 + wn * WN + j * FRAG_N;
#ifdef EMULATE
			store_staged(acc[i][j], sg, lane, slice, m, col, m_local);
#else
			if (aligned && m + 16u <= g.M && col + FRAG_N <= g.N) {
				Acc r = acc[i][j] * g.out_scale;
				if (g.has_bias != 0u) {
					Acc bias16;
					coopMatLoadNV(bias16, bias_tile, m_local, 0u, true);
					r += bias16;
				}
				coopMatStoreNV(r, c, slice + m * g.ldc + col, g.ldc, false);
			} else {
				store_staged(acc[i][j], sg, lane, slice, m, col, m_local);
			}
#endif
		}
	}
#endif
}
