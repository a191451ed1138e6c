// phase.glsl - the phase in which the fp16 path stores S_k: W0 s wrapped
// into [-pi, pi] (sin and cos lose nothing by it, and fp16 then holds it
// to about 1e-3 rad, against 1.5e-2 for S itself, |W0 S| being up to
// ~30). Shared by the passes that write it (common.glsl's phase(), the
// forward GEMM's PHASE_OUT epilogue), so both round it the same way.
float wrap_phase(float x) { return x - 6.28318531 * round(x * 0.159154943); }
vec4 wrap_phase(vec4 x) { return x - 6.28318531 * round(x * 0.159154943); }
