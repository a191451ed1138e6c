/*
 * push.h - the push constants of every pass family, written once for both
 * sides: daemon/nn/passes.h includes it for the C structs the recorder
 * fills, common.glsl and gemm_push.glsl for the shaders' blocks.
 *
 * A family is a list of fields F(type, name, word): type int, uint, float
 * (four bytes each, so a C struct and a std430 push-constant block place
 * them at the same offsets) or tile, the tile geometry (PUSH_TILE below,
 * words 0 to 10): a struct pass_tile in C, its eleven fields in GLSL,
 * where a pass reads them as pc.tw and the like. word is the field's
 * place, which the packed variants' loader needs as a constant; the C
 * side checks as it compiles that every field sits there (PUSH_CHECK).
 * The macros at the end make a list a C struct (PUSH_STRUCT), a
 * push-constant block (PUSH_BLOCK) or, in the packed variants
 * (packed.glsl), a plain struct and the pk_load_push() that fills it from
 * the slot's entry.
 *
 * A new family: its list here, its PUSH_STRUCT and PUSH_CHECK lines in
 * passes.h, and `#define PASS_PUSH PUSH_NAME` in its shaders before they
 * include common.glsl.
 */
#ifndef VKINR_SHADERS_PUSH_H
#define VKINR_SHADERS_PUSH_H

/* A tile is the rectangle (tx, ty, tw, th) of the img_w x img_h image,
 * clipped to it; its core is (cx, cy, cw, ch); n = tw * th pixels. */
// clang-format off
#define PUSH_TILE(F)                    \
	F(int, img_w, 0)                \
	F(int, img_h, 1)                \
	F(int, tx, 2)                   \
	F(int, ty, 3)                   \
	F(int, tw, 4)                   \
	F(int, th, 5)                   \
	F(int, cx, 6)                   \
	F(int, cy, 7)                   \
	F(int, cw, 8)                   \
	F(int, ch, 9)                   \
	F(int, n, 10)

/* first.comp: the first layer's weights and biases at w_off, b_off. */
#define PUSH_FIRST(F)                   \
	F(tile, tile, 0)                \
	F(uint, w_off, 11)              \
	F(uint, b_off, 12)

/* head.comp: the output layer's weights and biases at w_off, b_off; each
 * workgroup's squared error into sse[sse_base + group], measured against
 * the target where has_target; the fp16 path's dS4 times ds_scale, in
 * rows of ds_row values; a render (RENDER) into a window view_w pixels
 * wide from (view_x, view_y) of the image (view_w 0: the whole image). */
#define PUSH_HEAD(F)                    \
	F(tile, tile, 0)                \
	F(uint, w_off, 11)              \
	F(uint, b_off, 12)              \
	F(int, sse_base, 13)            \
	F(int, has_target, 14)          \
	F(int, ds_row, 15)              \
	F(float, ds_scale, 16)          \
	F(uint, view_w, 17)             \
	F(int, view_x, 18)              \
	F(int, view_y, 19)

/* loss.comp: the loss terms' weights; each workgroup's three sums into
 * sums[3 (sse_base + group) ...]. */
#define PUSH_LOSS(F)                    \
	F(tile, tile, 0)                \
	F(int, sse_base, 11)            \
	F(float, w_ssim, 12)            \
	F(float, w_grad, 13)            \
	F(float, w_chroma, 14)

/* resample.comp: the output image's size. */
#define PUSH_RESAMPLE(F)                \
	F(tile, tile, 0)                \
	F(int, out_w, 11)               \
	F(int, out_h, 12)

/* The depthwise passes (dwconv*.comp): the taps at w_off, the dilation;
 * the fp16 rows (of Z forward, of dS backward) half_row values long; the
 * fp16 dS of the backward times grad_scale (the loss scale). The row
 * passes of CPU devices (dwconv_rows, dwconv_blocks_cpu): segments row
 * segments a tile row, and in the backward the taps' sums of chunk units
 * a workgroup, for channels channels. */
#define PUSH_DW(F)                      \
	F(tile, tile, 0)                \
	F(int, dil, 11)                 \
	F(uint, w_off, 12)              \
	F(int, half_row, 13)            \
	F(float, grad_scale, 14)        \
	F(int, segments, 15)            \
	F(int, chunk, 16)               \
	F(int, channels, 17)

/* pixel_reduce.comp: a workgroup sums chunk pixels of one of channels
 * channels; MODE_DW the taps at dilation dil; X_F16 reads X in rows of
 * x_row values, times x_scale. */
#define PUSH_PIXEL_SUM(F)               \
	F(tile, tile, 0)                \
	F(int, dil, 11)                 \
	F(int, chunk, 12)               \
	F(int, channels, 13)            \
	F(int, x_row, 14)               \
	F(float, x_scale, 15)

/* reduce.comp: adds chunks partial sums of rows j0 .. j0 + jcount of a
 * taps x channels block into grad[dst + c dst_cs + (j - j0) dst_js]. */
#define PUSH_REDUCE(F)                  \
	F(int, chunks, 0)               \
	F(int, j0, 1)                   \
	F(int, channels, 2)             \
	F(int, taps, 3)                 \
	F(int, jcount, 4)               \
	F(uint, dst, 5)                 \
	F(uint, dst_cs, 6)              \
	F(uint, dst_js, 7)

/* activate.comp: n pixels of every channel, or (VEC4) count vec4s. */
#define PUSH_ACTIVATE(F)                \
	F(int, n, 0)                    \
	F(int, count, 1)

/* to_f16.comp: n floats from src to dst. */
#define PUSH_TO_F16(F)                  \
	F(int, n, 0)                    \
	F(uint, src, 1)                 \
	F(uint, dst, 2)

/* adam.comp, average.comp: n parameters; average and keep_best only
 * where step[flag] != 0 (flag < 0: always). */
#define PUSH_PARAMS(F)                  \
	F(int, n, 0)                    \
	F(int, flag, 1)

/* muon.comp: a block's weights (and gradient) at w_off, its scratch
 * matrix at x_off, its momentum at m_off; MOMENTUM, the momentum. */
#define PUSH_MUON(F)                    \
	F(uint, w_off, 0)               \
	F(uint, x_off, 1)               \
	F(uint, m_off, 2)               \
	F(float, momentum, 3)

/* ns_gemm.comp: C = p D + q L R(^T) at offsets l, r, d, c of each block's
 * scratch, blocks stride floats apart; flags NS_SYM, NS_FROM_G, NS_POW
 * (nn/optim.h), with G G^T at gg. */
#define PUSH_NS(F)                      \
	F(uint, gg, 0)                  \
	F(uint, l, 1)                   \
	F(uint, r, 2)                   \
	F(uint, d, 3)                   \
	F(uint, c, 4)                   \
	F(float, p, 5)                  \
	F(float, q, 6)                  \
	F(int, stride, 7)               \
	F(int, flags, 8)

/* ns_small*.comp: the five Newton-Schulz steps from x_off to out_off of
 * each block's scratch, blocks stride floats apart, coefficients c0 c1 c2. */
#define PUSH_NS_SMALL(F)                \
	F(uint, x_off, 0)               \
	F(uint, out_off, 1)             \
	F(float, c0, 2)                 \
	F(float, c1, 3)                 \
	F(float, c2, 4)                 \
	F(int, stride, 5)

/* gemm*.comp: C = A B (+ bias) of M x N over K, leading dimensions, the
 * operands' offsets, K split in k_chunk; the tensor cores' loss scaling. */
#define PUSH_GEMM(F)                    \
	F(uint, M, 0)                   \
	F(uint, N, 1)                   \
	F(uint, K, 2)                   \
	F(uint, lda, 3)                 \
	F(uint, ldb, 4)                 \
	F(uint, ldc, 5)                 \
	F(uint, a_off, 6)               \
	F(uint, b_off, 7)               \
	F(uint, c_off, 8)               \
	F(uint, bias_off, 9)            \
	F(uint, k_chunk, 10)            \
	F(uint, has_bias, 11)           \
	F(float, a_scale, 12)           \
	F(float, b_scale, 13)           \
	F(float, out_scale, 14)
// clang-format on

/* ------------------------------------------------------------- macros */

#ifdef VULKAN
/* GLSL: the block's fields, the tile spread out */
#define PUSH_GL_PLAIN(type, name, at) type name;
#define PUSH_GL_int(name) int name;
#define PUSH_GL_uint(name) uint name;
#define PUSH_GL_float(name) float name;
#define PUSH_GL_tile(name) PUSH_TILE(PUSH_GL_PLAIN)
#define PUSH_GL_FIELD(type, name, at) PUSH_GL_##type(name)
/* the packed variants: the words of the slot's entry in one loop (with
 * lane loads every word a shuffle, PK_PUSH), then each field from its
 * word, named by a constant */
#define PUSH_N_int +1
#define PUSH_N_uint +1
#define PUSH_N_float +1
#define PUSH_N_tile +11
#define PUSH_N_FIELD(type, name, at) PUSH_N_##type
#define PUSH_CV_int(w) int(w)
#define PUSH_CV_uint(w) (w)
#define PUSH_CV_float(w) uintBitsToFloat(w)
#define PUSH_PK_WORD(type, name, at) pk_v.name = PUSH_CV_##type(pk_w[at]);
#define PUSH_PK_int(name, at) PUSH_PK_WORD(int, name, at)
#define PUSH_PK_uint(name, at) PUSH_PK_WORD(uint, name, at)
#define PUSH_PK_float(name, at) PUSH_PK_WORD(float, name, at)
#define PUSH_PK_tile(name, at) PUSH_TILE(PUSH_PK_WORD)
#define PUSH_PK_FIELD(type, name, at) PUSH_PK_##type(name, at)
#ifdef PACKED
#define PUSH_BLOCK(Name, LIST, var)                                            \
	struct Name {                                                          \
		LIST(PUSH_GL_FIELD)                                            \
	};                                                                     \
	Name var;                                                              \
	void pk_load_push(uint slot)                                           \
	{                                                                      \
		uint pk_w[0 LIST(PUSH_N_FIELD)];                               \
		for (int k = 0; k < pk_w.length(); k++)                        \
			pk_w[k] = PK_PUSH(slot, k);                            \
		Name pk_v;                                                     \
		LIST(PUSH_PK_FIELD)                                            \
		var = pk_v;                                                    \
	}
#else
// clang-format off
#define PUSH_BLOCK(Name, LIST, var)                                            \
	layout(push_constant) uniform Name { LIST(PUSH_GL_FIELD) } var;
// clang-format on
#endif
#else
/* C: a struct of fixed-width fields, the tile a struct of its own; and
 * (PUSH_CHECK) that each field is at the word its list names, the one
 * place where a list could go wrong */
#include <stddef.h>
#include <stdint.h>
#define PUSH_C_FIELD(type, name, at) PUSH_C_##type(name)
#define PUSH_C_int(name) int32_t name;
#define PUSH_C_uint(name) uint32_t name;
#define PUSH_C_float(name) float name;
#define PUSH_C_tile(name) struct pass_tile name;
#define PUSH_STRUCT(tag, LIST)                                                 \
	struct tag {                                                           \
		LIST(PUSH_C_FIELD)                                             \
	}
#define PUSH_C_AT(type, name, at)                                              \
	_Static_assert(offsetof(push_checked, name) == 4 * (at),               \
		       "a push field off its word: " #name);
#define PUSH_CHECK(tag, LIST)                                                  \
	{                                                                      \
		typedef struct tag push_checked;                               \
		LIST(PUSH_C_AT)                                                \
		_Static_assert(sizeof(push_checked) == 4 * (0 LIST(PUSH_C_N)), \
			       "a push struct of other words: " #tag);         \
	}
#define PUSH_C_N(type, name, at) PUSH_C_N_##type
#define PUSH_C_N_int +1
#define PUSH_C_N_uint +1
#define PUSH_C_N_float +1
#define PUSH_C_N_tile +11
#endif

#endif
