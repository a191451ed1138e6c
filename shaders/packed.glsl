// packed.glsl - what the packed variants ("NAME_pk") of every pass share.
//
// A packed dispatch does the work of one dispatch of each of several fits
// at once (gpu_pack_program_create in daemon/gpu/program.c): the fit, its
// "slot", is the workgroup's z divided by zdim, and each slot's entry in
// the table holds what its own dispatch had: the push constants, the
// addresses of its buffers, its workgroup counts. The Makefile builds a
// packed variant from a shader's own source (shaders/packed.awk): its
// buffers become buffer references at the entry's addresses, gl_WorkGroupID,
// gl_NumWorkGroups and gl_GlobalInvocationID become the slot's own, and
// main() becomes pk_main(), which the main() at the end calls for the
// workgroups that the slot's own dispatch has. So every slot computes
// exactly what its fit would alone, bit for bit.
//
// On lavapipe every load whose address differs between the SIMD lanes is a
// loop over the lanes, and an entry's 40 words read by every invocation
// cost more than a small pass's own work (the packed activate took nine
// times its fit's own dispatch). There (PK_LANE_LOADS, a specialization
// constant the engine sets on CPU devices with subgroups of 8) lane l of
// each subgroup reads words l, l + 8, ... of the entry, six loads in all,
// and every word comes from a subgroup shuffle by a constant lane, which
// lavapipe does in one instruction.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

struct PkEntry {
	uint push[32];
	uvec2 addr[8];
	uvec4 groups;
	uint pad[12];
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer PkTable { PkEntry e[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer PkMask { uint on[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer PkWords { uint w[]; };
const uint PK_ENTRY_WORDS = 64u; // a PkEntry's size in words

layout(constant_id = 3) const bool PK_LANE_LOADS = false;
// lane loads need every lane of a subgroup in the workgroup: main() sets
// this where the shader's workgroup size is known (here, before its
// layout line, gl_WorkGroupSize is still 1); a constant once inlined
bool PK_LANES;
#define PK_LANES_SET()                                                       \
	PK_LANES = PK_LANE_LOADS && (gl_WorkGroupSize.x * gl_WorkGroupSize.y * \
				     gl_WorkGroupSize.z) %                     \
					    8u ==                              \
				    0u
// with PK_LANES: lane l's word l + 8 r of the entry in pk_rows[r] (rows 0
// to 2 the push words a pass reads, 4 and 5 the addresses, 6 the groups)
uint pk_rows[7];
#define PK_WORD(w) subgroupShuffle(pk_rows[(w) / 8], (w) % 8)

layout(push_constant) uniform PackPush {
	uvec2 table; // this dispatch's entry of slot 0
	uvec2 mask;  // one uint a slot: 0 skips the slot
	uint zdim;   // workgroups in z a slot
	uint slot0;  // the slot of this dispatch's z = 0
} pk;

uvec2 pk_addr[8];
uvec3 pk_WorkGroupID, pk_NumWorkGroups, pk_GlobalInvocationID;

// The slot's entry, or false when this workgroup has nothing to do.
bool pk_enter(out uint slot)
{
	slot = pk.slot0 + gl_WorkGroupID.z / pk.zdim;
	if (PkMask(pk.mask).on[slot] == 0u)
		return false;
	uvec3 own;
	if (PK_LANES) {
		PkWords words = PkWords(pk.table);
		uint at = slot * PK_ENTRY_WORDS + gl_SubgroupInvocationID;
		pk_rows[0] = words.w[at];
		pk_rows[1] = words.w[at + 8u];
		pk_rows[2] = words.w[at + 16u];
		pk_rows[4] = words.w[at + 32u];
		pk_rows[5] = words.w[at + 40u];
		pk_rows[6] = words.w[at + 48u];
		own = uvec3(PK_WORD(48), PK_WORD(49), PK_WORD(50));
		for (int i = 0; i < 8; i++)
			pk_addr[i] = uvec2(PK_WORD(32 + 2 * i), PK_WORD(33 + 2 * i));
	} else {
		PkTable t = PkTable(pk.table);
		own = t.e[slot].groups.xyz;
		for (int i = 0; i < 8; i++)
			pk_addr[i] = t.e[slot].addr[i];
	}
	uvec3 id = uvec3(gl_WorkGroupID.xy, gl_WorkGroupID.z % pk.zdim);
	if (any(greaterThanEqual(id, own)))
		return false;
	pk_WorkGroupID = id;
	pk_NumWorkGroups = own;
	return true;
}

// The slot's push constants, word k (k < 24 with lane loads).
#define PK_PUSH(slot, k)                                                     \
	(PK_LANES ? PK_WORD(k) : PkTable(pk.table).e[slot].push[k])
