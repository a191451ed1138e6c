// gemm_push.glsl - the GEMMs' per-dispatch values (struct gemm_push in
// daemon/nn/passes.h must match it), shared by gemm.comp and
// gemm_coop.comp: a push-constant block, or in the packed variants
// (packed.glsl) the slot's own, read from its entry.
#define GEMM_FIELDS                                                          \
	uint M, N, K;                                                        \
	uint lda, ldb, ldc;                                                  \
	uint a_off, b_off, c_off, bias_off;                                  \
	uint k_chunk, has_bias;                                              \
	float a_scale, b_scale, out_scale; /* loss scaling: gemm_coop.comp */
#ifdef PACKED
struct Gemm { GEMM_FIELDS };
Gemm g;
void pk_load_push(uint slot)
{
	uint w[12];
	for (int k = 0; k < 12; k++)
		w[k] = PK_PUSH(slot, k);
	g = Gemm(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9],
		 w[10], w[11], uintBitsToFloat(PK_PUSH(slot, 12)),
		 uintBitsToFloat(PK_PUSH(slot, 13)),
		 uintBitsToFloat(PK_PUSH(slot, 14)));
}
#else
layout(push_constant) uniform Gemm { GEMM_FIELDS } g;
#endif
