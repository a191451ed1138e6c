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
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

struct PkEntry {
	uint push[32];
	uvec2 addr[8];
	uvec4 groups;
	uint pad[12];
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer PkTable { PkEntry e[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer PkMask { uint on[]; };

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
	PkTable t = PkTable(pk.table);
	uvec3 own = t.e[slot].groups.xyz;
	uvec3 id = uvec3(gl_WorkGroupID.xy, gl_WorkGroupID.z % pk.zdim);
	if (any(greaterThanEqual(id, own)))
		return false;
	pk_WorkGroupID = id;
	pk_NumWorkGroups = own;
	for (int i = 0; i < 8; i++)
		pk_addr[i] = t.e[slot].addr[i];
	return true;
}

// The slot's push constants, word k.
#define PK_PUSH(slot, k) (PkTable(pk.table).e[slot].push[k])
