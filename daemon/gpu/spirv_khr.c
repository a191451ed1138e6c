/*
 * spirv_khr.c - turns SPIR-V written for VK_NV_cooperative_matrix into
 * SPIR-V for VK_KHR_cooperative_matrix, so that one compiled shader serves
 * NVIDIA (either extension) and the devices that offer only the KHR one
 * (AMD RDNA3, Intel Arc, recent Mesa). Debian 12's glslang compiles only the
 * NV extension, but the two map instruction for instruction:
 *
 *   NV (opcode)                          KHR (opcode)
 *   Capability CooperativeMatrixNV 5357  CooperativeMatrixKHR 6022
 *   "SPV_NV_cooperative_matrix"          "SPV_KHR_cooperative_matrix"
 *   TypeCooperativeMatrixNV 5358         TypeCooperativeMatrixKHR 4456
 *     result comp scope rows cols          the same + Use (constant id)
 *   CooperativeMatrixLoadNV 5359         CooperativeMatrixLoadKHR 4457
 *     type result ptr stride colmajor      type result ptr layout stride
 *   CooperativeMatrixStoreNV 5360        CooperativeMatrixStoreKHR 4458
 *     ptr obj stride colmajor              ptr obj layout stride
 *   CooperativeMatrixMulAddNV 5361       CooperativeMatrixMulAddKHR 4459
 *   CooperativeMatrixLengthNV 5362       CooperativeMatrixLengthKHR 4460
 *
 * Only the Use of each matrix type must be inferred, from the
 * multiply-adds: the type of their A operands, of their B operands, and
 * of their results (accumulators). A shader whose A and B share a type
 * (16x16x16 with fp16 operands) is refused: gemm_coop.comp uses the
 * 16x8x16 shape so that every type has one use. A matrix type that no
 * multiply-add uses is refused too. The NV column-major flag
 * must be a constant true or false; it becomes a layout constant. Three
 * uint constants (0, 1, 2) are added before the first matrix type, for the
 * uses and the layouts. The module must already use the Vulkan memory
 * model, which glslang's NV output does.
 */
#include "gpu/spirv_khr.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

enum {
	OP_EXTENSION = 10,
	OP_TYPE_INT = 21,
	OP_CONSTANT_TRUE = 41,
	OP_CONSTANT_FALSE = 42,
	OP_CONSTANT = 43,
	OP_CAPABILITY = 17,
	CAP_COOP_NV = 5357,
	CAP_COOP_KHR = 6022,
	OP_TYPE_COOP_NV = 5358,
	OP_LOAD_NV = 5359,
	OP_STORE_NV = 5360,
	OP_MULADD_NV = 5361,
	OP_LENGTH_NV = 5362,
	OP_TYPE_COOP_KHR = 4456,
	OP_LOAD_KHR = 4457,
	OP_STORE_KHR = 4458,
	OP_MULADD_KHR = 4459,
	OP_LENGTH_KHR = 4460,
	USE_A = 0,
	USE_B = 1,
	USE_ACC = 2,
};

#define SPIRV_MAGIC 0x07230203u
#define HEADER_WORDS 5

static const char nv_ext[] = "SPV_NV_cooperative_matrix";
static const char khr_ext[] = "SPV_KHR_cooperative_matrix";

struct scan {
	uint32_t uint_type;   /* OpTypeInt 32 0, or 0 */
	uint32_t *bool_value; /* by id: 1 false, 2 true, 0 not a constant */
	uint8_t *is_coop;     /* by id: an NV matrix type */
	uint32_t *type_of;    /* by id: the type of a value, where known */
	int *use;             /* by id: -1, or the matrix type's use */
};

static uint32_t op_of(uint32_t w) { return w & 0xffffu; }
static uint32_t count_of(uint32_t w) { return w >> 16; }

/* Instructions whose words are (result type, result id, ...) and that can
 * produce a matrix value: what a multiply-add's operands come from. */
static int yields_value(uint32_t op)
{
	switch (op) {
	case 1:   /* OpUndef */
	case 44:  /* OpConstantComposite */
	case 61:  /* OpLoad */
	case 80:  /* OpCompositeConstruct */
	case 83:  /* OpCopyObject */
	case 115: /* OpFConvert */
	case 127: /* OpFNegate */
	case 129: /* OpFAdd */
	case 131: /* OpFSub */
	case 133: /* OpFMul */
	case 136: /* OpFDiv */
	case 143: /* OpMatrixTimesScalar */
	case 169: /* OpSelect */
	case 245: /* OpPhi */
	case OP_LOAD_NV:
	case OP_MULADD_NV:
		return 1;
	}
	return 0;
}

/* Gives matrix type `type` the use `use`; a type needed in two uses (A
 * and B alike, as in the 16x16x16 shape) cannot be translated. */
static int set_use(struct scan *s, uint32_t type, uint32_t bound, int use)
{
	if (type >= bound || !s->is_coop[type])
		return ERR_INVALID;
	if (s->use[type] >= 0 && s->use[type] != use)
		return ERR_INVALID;
	s->use[type] = use;
	return 0;
}

/* Walks the instructions twice: what the translation needs to know, then
 * the use of each matrix type from the multiply-adds' operands. */
static int scan_module(const uint32_t *in, size_t n, uint32_t bound,
		       struct scan *s)
{
	for (size_t at = HEADER_WORDS; at < n;) {
		uint32_t op = op_of(in[at]), wc = count_of(in[at]);
		if (wc == 0 || at + wc > n)
			return ERR_INVALID;
		const uint32_t *w = in + at;
		if (op == OP_TYPE_INT && wc == 4 && w[2] == 32 && w[3] == 0)
			s->uint_type = w[1];
		else if ((op == OP_CONSTANT_TRUE || op == OP_CONSTANT_FALSE) &&
			 wc == 3 && w[2] < bound)
			s->bool_value[w[2]] = op == OP_CONSTANT_TRUE ? 2 : 1;
		else if (op == OP_TYPE_COOP_NV && wc == 6 && w[1] < bound)
			s->is_coop[w[1]] = 1;
		else if (yields_value(op) && wc >= 3 && w[2] < bound)
			s->type_of[w[2]] = w[1];
		at += wc;
	}
	int muladds = 0;
	for (size_t at = HEADER_WORDS; at < n; at += count_of(in[at])) {
		const uint32_t *w = in + at;
		if (op_of(w[0]) != OP_MULADD_NV || count_of(w[0]) != 6)
			continue;
		if (w[3] >= bound || w[4] >= bound)
			return ERR_INVALID;
		int rc = set_use(s, w[1], bound, USE_ACC);
		rc = rc ? rc : set_use(s, s->type_of[w[3]], bound, USE_A);
		rc = rc ? rc : set_use(s, s->type_of[w[4]], bound, USE_B);
		if (rc)
			return rc;
		muladds++;
	}
	return muladds && s->uint_type ? 0 : ERR_INVALID;
}

int spirv_nv_to_khr(const uint32_t *in, size_t nwords, uint32_t **out,
		    size_t *out_words)
{
	*out = NULL;
	*out_words = 0;
	if (nwords < HEADER_WORDS || in[0] != SPIRV_MAGIC)
		return ERR_INVALID;
	uint32_t bound = in[3];
	struct scan s = { 0 };
	s.bool_value = calloc(bound, sizeof(uint32_t));
	s.is_coop = calloc(bound, 1);
	s.type_of = calloc(bound, sizeof(uint32_t));
	s.use = malloc(bound * sizeof(int));
	/* the output grows by one word a matrix type and three constants */
	uint32_t *o = malloc((nwords + bound + 16) * sizeof(uint32_t));
	int rc = s.bool_value && s.is_coop && s.type_of && s.use && o
		     ? 0
		     : ERR_NOMEM;
	for (uint32_t i = 0; !rc && i < bound; i++)
		s.use[i] = -1;
	rc = rc ? rc : scan_module(in, nwords, bound, &s);

	uint32_t c[3] = { bound, bound + 1, bound + 2 }; /* uint 0, 1, 2 */
	size_t k = 0;
	int constants_done = 0;
	if (!rc) {
		memcpy(o, in, HEADER_WORDS * sizeof(uint32_t));
		o[3] = bound + 3;
		k = HEADER_WORDS;
	}
	for (size_t at = HEADER_WORDS; !rc && at < nwords;) {
		const uint32_t *w = in + at;
		uint32_t op = op_of(w[0]), wc = count_of(w[0]);
		at += wc;
		if (op == OP_CAPABILITY && wc == 2 && w[1] == CAP_COOP_NV) {
			o[k++] = w[0];
			o[k++] = CAP_COOP_KHR;
		} else if (op == OP_EXTENSION && wc * 4 >= 4 + sizeof(nv_ext) &&
			   !memcmp(w + 1, nv_ext, sizeof(nv_ext))) {
			/* both names take 7 words with their terminator */
			uint32_t words =
			    1 + (uint32_t)(sizeof(khr_ext) + 3) / 4;
			o[k++] = (words << 16) | OP_EXTENSION;
			memset(o + k, 0, (words - 1) * 4);
			memcpy(o + k, khr_ext, sizeof(khr_ext));
			k += words - 1;
		} else if (op == OP_TYPE_COOP_NV) {
			if (!constants_done) {
				for (uint32_t v = 0; v < 3; v++) {
					o[k++] = (4u << 16) | OP_CONSTANT;
					o[k++] = s.uint_type;
					o[k++] = c[v];
					o[k++] = v;
				}
				constants_done = 1;
			}
			if (s.use[w[1]] < 0)
				rc = ERR_INVALID;
			o[k++] = (7u << 16) | OP_TYPE_COOP_KHR;
			memcpy(o + k, w + 1, 5 * sizeof(uint32_t));
			k += 5;
			o[k++] = c[s.use[w[1]] < 0 ? 0 : s.use[w[1]]];
		} else if (op == OP_LOAD_NV || op == OP_STORE_NV) {
			/* load: type result ptr stride col [mem...];
			 * store: ptr obj stride col [mem...] */
			uint32_t lead = op == OP_LOAD_NV ? 3 : 2;
			if (wc < lead + 3) {
				rc = ERR_INVALID;
				break;
			}
			uint32_t stride = w[lead + 1], col = w[lead + 2];
			uint32_t flag = col < bound ? s.bool_value[col] : 0;
			if (!flag) {
				rc = ERR_INVALID; /* not a constant */
				break;
			}
			o[k++] = (wc << 16) | (op == OP_LOAD_NV ? OP_LOAD_KHR
								: OP_STORE_KHR);
			memcpy(o + k, w + 1, lead * sizeof(uint32_t));
			k += lead;
			o[k++] = c[flag == 2 ? 1 : 0];
			o[k++] = stride;
			memcpy(o + k, w + lead + 3,
			       (wc - lead - 3) * sizeof(uint32_t));
			k += wc - lead - 3;
		} else if (op == OP_MULADD_NV || op == OP_LENGTH_NV) {
			o[k++] =
			    (wc << 16) | (op == OP_MULADD_NV ? OP_MULADD_KHR
							     : OP_LENGTH_KHR);
			memcpy(o + k, w + 1, (wc - 1) * sizeof(uint32_t));
			k += wc - 1;
		} else {
			memcpy(o + k, w, wc * sizeof(uint32_t));
			k += wc;
		}
	}
	free(s.bool_value);
	free(s.is_coop);
	free(s.type_of);
	free(s.use);
	if (rc) {
		free(o);
		return rc;
	}
	*out = o;
	*out_words = k;
	return 0;
}

int spirv_uses_coopmat_nv(const uint32_t *in, size_t nwords)
{
	for (size_t at = HEADER_WORDS; at < nwords && count_of(in[at]);) {
		uint32_t op = op_of(in[at]);
		if (op == OP_CAPABILITY && in[at + 1] == CAP_COOP_NV)
			return 1;
		if (op != OP_CAPABILITY && op != OP_EXTENSION &&
		    op != 11 /* ExtInstImport */)
			return 0; /* capabilities come first */
		at += count_of(in[at]);
	}
	return 0;
}
