#version 450
// gemm_cm2.comp - the GEMMs of the pointwise layers through
// VK_NV_cooperative_matrix2: one workgroup-scope cooperative matrix holds
// the workgroup's whole BM x BN tile of C, and the operand tiles are read
// straight from global memory by tensor-layout loads; the driver stages
// them through shared memory and splits the work over the subgroups
// itself. Same forms, bindings, push constants and dispatch as
// gemm_coop.comp (fp16 operands, fp32 accumulation, fp32 result):
//   forward         S = P Z + p     A = P16 [m][k],  B = Z16 [k][j]
//   data gradient   dZ = P^T dS     A = P16 [k][m],  B = dS16 [k][j]  (TRANS_A)
//   weight gradient dP = dS Z^T     A = dS16 [m][k], B = Z16 [j][k]   (TRANS_B)
// An operand stored the other way round from its fragment (A with
// TRANS_A, B with TRANS_B) is sliced in its own layout and turned by a
// transposing tensor view, so no pass has to write a transposed copy.
//
// Only glslang 15 or newer compiles this (GL_NV_cooperative_matrix2), so
// its variants are in shaders/variants_cm2.txt, built only when the
// Makefile finds that compiler (`make gpu-tools`); the device must offer
// VK_NV_cooperative_matrix2's workgroup scope, flexible dimensions,
// per-element operations and tensor addressing, with fp16 x fp16 + fp32
// at workgroup scope for THREADS invocations (daemon/gpu/device.c).
//
// Bounds: a block whose tiles lie wholly inside the matrices (and whose
// strides and offsets are multiples of 8 values, 16 bytes) runs with
// unclamped layouts, K unrolled by UNROLL steps; any other block runs with
// layouts that clamp to the matrix (reads past it give zeros, writes past
// it are dropped), so edges, partial K steps and split-K chunks need no
// code of their own. Split K: workgroup z sums k in [z k_chunk,
// (z + 1) k_chunk) into its own slice of C (c_off + z * M * ldc), as
// gemm_coop.comp does.
//
// The epilogue scales by out_scale and adds the bias of each row by a
// per-element operation on the accumulator, then stores it through the
// clamped layout of C.
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_GOOGLE_include_directive : require

#ifndef BM
#define BM 128
#define BN 128
#define BK 32
#endif
/* the workgroup: 8 subgroups of 32; the device must list fp16 matrices at
 * workgroup scope for exactly this many invocations */
#ifndef THREADS
#define THREADS 256
#endif
/* K steps a round of the unclamped loop */
#ifndef UNROLL
#define UNROLL 4
#endif
#if (BM % 32) || (BN % 32) || (BK % 16)
#error "BM and BN must be multiples of 32, BK of 16 (the granularity asked of the device)"
#endif

layout(local_size_x = THREADS) in;

#include "gemm_push.glsl"

layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) readonly buffer B { float16_t b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };
layout(binding = 3) readonly buffer Bias { float bias[]; };

#define MatA coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MatB coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>
#define MatC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

/* The block of C this workgroup computes: (column block, row block), the
 * row blocks that share a column block of B on consecutive ids (as in
 * gemm_coop.comp). The dispatch is (column blocks, row blocks, splits). */
uvec2 block_of_c()
{
	uint rows = (g.M + BM - 1u) / BM;
	uint id = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	return uvec2(id / rows, id % rows);
}

/* The epilogue of one value of the accumulator at (r, col) of the tile
 * whose first row is row0. */
float epilogue(const in uint r, const in uint col, const in float v,
	       const in uint row0)
{
	float x = v * g.out_scale;
	uint m = row0 + r;
	if (g.has_bias != 0u && m < g.M)
		x += bias[g.bias_off + m];
	return x;
}

/* One K step at k: the operand tiles through layouts LA and LB (as the
 * operands lie: A is [M][K], or [K][M] with TRANS_A; B is [K][N], or
 * [N][K] with TRANS_B), the transposed ones turned by the view. */
#ifdef TRANS_A
#define LOAD_A(ma, la, k) coopMatLoadTensorNV(ma, a, a_off, \
	sliceTensorLayoutNV(la, k, BK, row0, BM), turn)
#else
#define LOAD_A(ma, la, k) coopMatLoadTensorNV(ma, a, a_off, \
	sliceTensorLayoutNV(la, row0, BM, k, BK))
#endif
#ifdef TRANS_B
#define LOAD_B(mb, lb, k) coopMatLoadTensorNV(mb, b, b_off, \
	sliceTensorLayoutNV(lb, col0, BN, k, BK), turn)
#else
#define LOAD_B(mb, lb, k) coopMatLoadTensorNV(mb, b, b_off, \
	sliceTensorLayoutNV(lb, k, BK, col0, BN))
#endif
#define K_STEP(la, lb, k)                                                   \
	{                                                                   \
		MatA ma;                                                    \
		MatB mb;                                                    \
		LOAD_A(ma, la, k);                                          \
		LOAD_B(mb, lb, k);                                          \
		acc = coopMatMulAdd(ma, mb, acc);                           \
	}

/* The dimensions (outer, inner) of an operand as it lies, K ending at
 * kend: the layouts are set to them, so a clamped load zeroes what lies
 * past the matrix or past the split's end. */
#ifdef TRANS_A
#define A_DIMS kend, g.M
#else
#define A_DIMS g.M, kend
#endif
#ifdef TRANS_B
#define B_DIMS g.N, kend
#else
#define B_DIMS kend, g.N
#endif

void main()
{
	uvec2 block = block_of_c();
	uint row0 = block.y * BM, col0 = block.x * BN;
	uint kbeg = gl_WorkGroupID.z * g.k_chunk;
	uint kend = min(g.K, kbeg + g.k_chunk);
	uint a_off = g.a_off, b_off = g.b_off;
	uint lda = g.lda, ldb = g.ldb;

	tensorViewNV<2, false, 1, 0> turn = createTensorViewNV(2, false, 1, 0);
	MatC acc = MatC(0.0);

	bool inside = row0 + BM <= g.M && col0 + BN <= g.N &&
		      kbeg < kend && (kend - kbeg) % BK == 0u &&
		      (lda | ldb | a_off | b_off | kbeg) % 8u == 0u;
	if (inside) {
		/* whole 16-byte pieces: said so, for wide loads */
		lda &= ~7u, ldb &= ~7u, a_off &= ~7u, b_off &= ~7u, kbeg &= ~7u;
		tensorLayoutNV<2> la = createTensorLayoutNV(2);
		tensorLayoutNV<2> lb = createTensorLayoutNV(2);
		la = setTensorLayoutDimensionNV(la, A_DIMS);
		lb = setTensorLayoutDimensionNV(lb, B_DIMS);
		la = setTensorLayoutStrideNV(la, lda, 1);
		lb = setTensorLayoutStrideNV(lb, ldb, 1);
		uint steps = (kend - kbeg) / BK, k = kbeg;
		for (uint s = 0u; s + UNROLL <= steps; s += UNROLL) {
			[[unroll]] for (uint u = 0u; u < UNROLL; u++) {
				K_STEP(la, lb, k);
				k += BK;
			}
		}
		for (; k < kend; k += BK)
			K_STEP(la, lb, k);
	} else {
		tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la =
			createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
		tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb =
			createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
		la = setTensorLayoutDimensionNV(la, A_DIMS);
		lb = setTensorLayoutDimensionNV(lb, B_DIMS);
		la = setTensorLayoutStrideNV(la, lda, 1);
		lb = setTensorLayoutStrideNV(lb, ldb, 1);
		for (uint k = kbeg; k < kend; k += BK)
			K_STEP(la, lb, k);
	}

	coopMatPerElementNV(acc, acc, epilogue, row0);
	tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc =
		createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
	lc = setTensorLayoutDimensionNV(lc, g.M, g.N);
	lc = setTensorLayoutStrideNV(lc, g.ldc, 1);
	uint slice = g.c_off + gl_WorkGroupID.z * g.M * g.ldc;
	coopMatStoreTensorNV(acc, c, slice, sliceTensorLayoutNV(lc, row0, BM, col0, BN));
}
