#version 450
// dwconv_back_strip.comp - the backward of a depthwise conv and of the
// activation before it, by strips (see dwconv_strip.comp), in one pass:
//   dSprev[c,p] = act'(Sprev[c,p]) * sum_t dw[c][t] dZ[c, p - disp_t]
//   ddw[c][t]   = sum_p dZ[c,p] * act(Sprev[c, p + disp_t])
// It does what dwconv_back.comp and reduce_dw (pixel_reduce.comp) do in
// two passes: each invocation reads the STRIP + 2 rows of dZ and of Sprev
// in its three tap columns once, and both results come from those
// registers. The taps' sums go, per workgroup, to part[chunk][t][c]
// (chunk: the workgroup's place in the channel's grid, x fastest), which
// reduce.comp adds in order: each subgroup adds its lanes' (subgroupAdd,
// the same order every run on a device), then the subgroups' sums are
// added in order, so runs are deterministic. (A tree in shared memory of
// 9 x THREADS floats took log2(THREADS) barriers a workgroup, which with
// the two or eight workgroups an SM holds at these register counts left
// it idle.)
//
// Bindings: params, Sprev, dZ, dSprev, then (COPY_F16) the fp16 dS, then
// the partial sums.
// COPY_F16 also writes dS as fp16 times the loss scale (grad_scale) in
// rows of half_row = n_pad values, the padding zeroed; IN_F16 reads
// Sprev as its fp16 phase (see dwconv.comp).
// HALF_ONLY (with COPY_F16 and IN_F16: the fp16 path's default, whose
// later passes read the fp16 dS alone) writes no fp32 dS: the bindings are
// params, Sprev, dZ, the fp16 dS, the partial sums. DZ_F16 (with
// HALF_ONLY) reads dZ in fp16 times the loss scale too, as the data
// gradient's GEMM writes it with HALF_OUT (gemm_coop.comp).
// Grid: x columns / SX, y strips / SY, z channels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(COPY_F16) || defined(IN_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define PASS_PUSH PUSH_DW
#include "common.glsl"
#include "strip.glsl"
#define THREADS (SX * SY)
layout(local_size_x = SX, local_size_y = SY) in;

layout(binding = 0) readonly buffer Params { float params[]; };
#ifdef IN_F16
layout(binding = 1) readonly buffer Prev { float16_t sprev[]; };
#define ACT(v) act_phase(float(v))
#define ACT_GRAD(v) act_grad_phase(float(v))
#else
layout(binding = 1) readonly buffer Prev { float sprev[]; };
#define ACT(v) act(v)
#define ACT_GRAD(v) act_grad(v)
#endif
#if defined(DZ_F16) && !defined(HALF_ONLY)
#error "DZ_F16 goes with HALF_ONLY"
#endif
#if defined(HALF_ONLY) && !(defined(COPY_F16) && defined(IN_F16))
#error "HALF_ONLY goes with COPY_F16 and IN_F16"
#endif
/* dZ's scale: DZ_F16's is the loss scale, and so the fp16 dS's already */
#ifdef DZ_F16
layout(binding = 2) readonly buffer GradZ { float16_t dz[]; };
#define DZ_SCALE pc.grad_scale
#else
layout(binding = 2) readonly buffer GradZ { float dz[]; };
#define DZ_SCALE 1.0
#endif
/* then dS in fp32 (but with HALF_ONLY), in fp16 (COPY_F16), the sums */
#if defined(HALF_ONLY)
layout(binding = 3) writeonly buffer Half { float16_t dshalf[]; };
layout(binding = 4) writeonly buffer Part { float part[]; };
#elif defined(COPY_F16)
layout(binding = 3) writeonly buffer Out { float dsprev[]; };
layout(binding = 4) writeonly buffer Half { float16_t dshalf[]; };
layout(binding = 5) writeonly buffer Part { float part[]; };
#else
layout(binding = 3) writeonly buffer Out { float dsprev[]; };
layout(binding = 4) writeonly buffer Part { float part[]; };
#endif

shared float sums[9][THREADS / 4]; /* one a subgroup: lanes >= 4 */

void main()
{
	uint c = gl_WorkGroupID.z, lid = gl_LocalInvocationIndex;
	int x = int(gl_GlobalInvocationID.x), s = int(gl_GlobalInvocationID.y);
	int d = pc.dil, tw = pc.tw, th = pc.th;
	uint base = c * uint(pc.n);

#ifdef COPY_F16
	if (gl_WorkGroupID.x == 0u && gl_WorkGroupID.y == 0u) {
		uint pad = uint(pc.n) + lid;
		if (pad < uint(pc.half_row))
			dshalf[c * uint(pc.half_row) + pad] = float16_t(0.0);
	}
#endif

	int y0 = strip_row0(s, d);
	bool mine = x < tw && y0 < th;

	float ddw[9];
	[[unroll]] for (int t = 0; t < 9; t++)
		ddw[t] = 0.0;
	if (mine) {
		/* rows y0 - d .. y0 + STRIP d of the columns x - d, x, x + d:
		 * dZ, act(Sprev), and act'(Sprev) in the centre */
		float g[3][STRIP + 2], h[3][STRIP + 2], slope[STRIP];
		[[unroll]] for (int rr = 0; rr < STRIP + 2; rr++) {
			int y = y0 + (rr - 1) * d;
			bool row_in = y >= 0 && y < th;
			[[unroll]] for (int j = 0; j < 3; j++) {
				int xx = x + (j - 1) * d;
				float gv = 0.0, hv = 0.0;
				if (row_in && xx >= 0 && xx < tw) {
					uint at = base + uint(y * tw + xx);
					gv = float(dz[at]);
					hv = ACT(sprev[at]);
					if (j == 1 && rr >= 1 && rr <= STRIP)
						slope[rr - 1] = ACT_GRAD(sprev[at]);
				}
				g[j][rr] = gv;
				h[j][rr] = hv;
			}
		}

		float w[9];
		[[unroll]] for (int t = 0; t < 9; t++)
			w[t] = params[pc.w_off + 9u * c + uint(t)];
		[[unroll]] for (int r = 0; r < STRIP; r++) {
			int y = y0 + r * d;
			if (y >= th)
				break;
			/* tap (i, j) reads dZ at p - disp: row r + 2 - i,
			 * column 2 - j of the window */
			float acc = 0.0;
			[[unroll]] for (int i = 0; i < 3; i++)
				[[unroll]] for (int j = 0; j < 3; j++)
					acc += w[i * 3 + j] * g[2 - j][r + 2 - i];
			float ds = slope[r] * acc;
			uint p = uint(y * tw + x);
#ifndef HALF_ONLY
			dsprev[base + p] = ds;
#endif
#ifdef COPY_F16
			dshalf[c * uint(pc.half_row) + p] =
				float16_t(ds * (pc.grad_scale / DZ_SCALE));
#endif
			/* and dZ here times act(Sprev) at p + disp */
			float gz = g[1][r + 1];
			[[unroll]] for (int i = 0; i < 3; i++)
				[[unroll]] for (int j = 0; j < 3; j++)
					ddw[i * 3 + j] += gz * h[j][r + i];
		}
	}

	/* the workgroup's sums: the lanes by the subgroup, then the
	 * subgroups in order */
	[[unroll]] for (int t = 0; t < 9; t++) {
		float sg = subgroupAdd(ddw[t] * (1.0 / DZ_SCALE));
		if (subgroupElect())
			sums[t][gl_SubgroupID] = sg;
	}
	barrier();
	if (lid < 9u) {
		float total = 0.0;
		for (uint g = 0u; g < gl_NumSubgroups; g++)
			total += sums[lid][g];
		uint chunk = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
		part[(chunk * 9u + lid) * uint(NF) + c] = total;
	}
}
