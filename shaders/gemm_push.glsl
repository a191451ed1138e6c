// gemm_push.glsl - the GEMMs' per-dispatch values (push.h's PUSH_GEMM, which
// daemon/nn/passes.h makes struct gemm_push), shared by gemm.comp and
// gemm_coop.comp: a push-constant block, or in the packed variants
// (packed.glsl) the slot's own, read from its entry.
#include "push.h"
PUSH_BLOCK(Gemm, PUSH_GEMM, g)
