#version 450
// to_f16.comp - copies n floats of the parameters (from src) to fp16 (at
// dst), for the tensor-core GEMMs, which read the pointwise weights as
// fp16 straight from memory. Run at the start of every epoch, after the
// previous step changed the fp32 master weights.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
#define PASS_PUSH PUSH_TO_F16
#include "common.glsl"

layout(binding = 0) readonly buffer Params { float params[]; };
layout(binding = 1) writeonly buffer Half { float16_t half_params[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i < uint(pc.n))
		half_params[pc.dst + i] = float16_t(params[pc.src + i]);
}
