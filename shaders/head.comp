#version 450
// head.comp - the output layer, the loss and the start of backpropagation,
// one pixel an invocation:
//   y = out_w act(S4) + out_b
//   on core pixels: e = y - (2 rgb - 1), dY = 2 e / (3 W H), else dY = 0
//   dS4[c,p] = act'(S4[c,p]) * sum_o out_w[o][c] dY[o]
// Each workgroup writes the sum of its squared errors to sse[sse_base + group]
// (the host adds them up in double, in a fixed order).
// With RENDER defined it writes y of core pixels into the whole-image
// output instead of gradients (for export and model.render); has_target = 0
// there when there is no target to compare with. view_w != 0: the output is a
// window of the image, view_w pixels wide, from (view_x, view_y)
// (render_view.c). w_off: out_w, b_off: out_b.
// With COPY_F16 (the tensor-core path) dS4 is also written as fp16, times
// the loss scale (ds_scale), in rows of ds_row = n_pad values.
// With loss terms besides the MSE (loss.comp) the head runs in two
// halves around the loss passes: PREDICT (with RENDER) writes y of every
// tile pixel into binding 3 (3 x n, channel-major) and the core's sse;
// FROM_DY reads dY (binding 4, written by loss.comp) and writes dS4 alone.
// HALF_ONLY (with COPY_F16: the fp16 path when its backward reads no fp32
// dS) writes dS4 in fp16 alone; binding 3 is then left as it was.
#extension GL_GOOGLE_include_directive : require
#ifdef COPY_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_HEAD
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) readonly buffer In { float s4[]; };
layout(binding = 2) readonly buffer Target { float target[]; };
#ifdef RENDER
layout(binding = 3) writeonly buffer Image { float image[]; };
layout(binding = 4) buffer Unused { float unused[]; };
#else
layout(binding = 3) writeonly buffer GradS { float ds4[]; };
#ifdef FROM_DY
layout(binding = 4) readonly buffer GradY { float dy[]; };
#else
layout(binding = 4) writeonly buffer GradY { float dy[]; };
#endif
#endif
layout(binding = 5) writeonly buffer Sse { float sse[]; };
#ifdef COPY_F16
layout(binding = 6) writeonly buffer Half { float16_t dshalf[]; };
#endif

shared float partial[256];

void main()
{
	uint p = gl_GlobalInvocationID.x, n = uint(pc.n);
	float se = 0.0;
	if (p < n) {
#ifdef FROM_DY
		vec3 g = vec3(dy[p], dy[n + p], dy[2u * n + p]);
#else
		vec3 y = vec3(params[pc.b_off], params[pc.b_off + 1u],
			      params[pc.b_off + 2u]);
		for (uint c = 0u; c < uint(NF); c++) {
			float h = act(s4[c * n + p]);
			y += h * vec3(params[pc.w_off + c],
				      params[pc.w_off + uint(NF) + c],
				      params[pc.w_off + 2u * uint(NF) + c]);
		}
		ivec2 q = tile_xy(p);
		int x = pc.tx + q.x, yy = pc.ty + q.y;
		bool core = x >= pc.cx && x < pc.cx + pc.cw && yy >= pc.cy &&
			    yy < pc.cy + pc.ch;
		uint pix = uint(yy * pc.img_w + x) * 3u;
		vec3 e = vec3(0.0);
		if (core && pc.has_target != 0)
			e = y - (2.0 * vec3(target[pix], target[pix + 1u],
					    target[pix + 2u]) - 1.0);
		se = dot(e, e);
#if defined(PREDICT)
		image[p] = y.x;
		image[n + p] = y.y;
		image[2u * n + p] = y.z;
#elif defined(RENDER)
		if (core) {
			/* into the output window: origin (view_x, view_y), view_w pixels
			 * wide (0: the whole image, pix) */
			uint o = pc.view_w == 0u
				     ? pix
				     : (uint(yy - pc.view_y) * pc.view_w +
					uint(x - pc.view_x)) * 3u;
			image[o] = y.x;
			image[o + 1u] = y.y;
			image[o + 2u] = y.z;
		}
#else
		vec3 g = e * (2.0 / (3.0 * float(pc.img_w) * float(pc.img_h)));
		dy[p] = g.x;
		dy[n + p] = g.y;
		dy[2u * n + p] = g.z;
#endif
#endif /* FROM_DY */
#ifndef RENDER
		for (uint c = 0u; c < uint(NF); c++) {
			float back = params[pc.w_off + c] * g.x +
				     params[pc.w_off + uint(NF) + c] * g.y +
				     params[pc.w_off + 2u * uint(NF) + c] * g.z;
			float ds = act_grad(s4[c * n + p]) * back;
#ifndef HALF_ONLY
			ds4[c * n + p] = ds;
#endif
#ifdef COPY_F16
			dshalf[c * uint(pc.ds_row) + p] =
				float16_t(ds * pc.ds_scale);
#endif
		}
#endif
	}
#ifdef COPY_F16
	else if (p < uint(pc.ds_row)) {
		for (uint c = 0u; c < uint(NF); c++)
			dshalf[c * uint(pc.ds_row) + p] = float16_t(0.0);
	}
#endif
#ifndef FROM_DY
	uint t = gl_LocalInvocationID.x;
	partial[t] = se;
	barrier();
	for (uint half_ = 128u; half_ > 0u; half_ >>= 1) {
		if (t < half_)
			partial[t] += partial[t + half_];
		barrier();
	}
	if (t == 0u)
		sse[uint(pc.sse_base) + gl_WorkGroupID.x] = partial[0];
#endif
}
