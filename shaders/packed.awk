# packed.awk - writes the packed variant's source of a shader (see
# packed.glsl): after #version, packed.glsl; every storage buffer (one line,
# `layout(binding = N) QUALIFIERS buffer Name { TYPE member[]; };`) as a
# buffer reference reached through the slot's address N; the workgroup's
# built-in ids as the slot's own; main() as pk_main(), called by a new
# main() at the end. A buffer declared any other way stops the build.
# Every use of a buffer's member (the whole word) becomes PK_member (a
# macro naming it by reference is not expanded inside another macro's
# arguments by every preprocessor if it names itself).
function rename(line, m,   out, i, pre, post)
{
	out = ""
	while ((i = index(line, m)) > 0) {
		pre = i > 1 ? substr(line, i - 1, 1) : ""
		post = substr(line, i + length(m), 1)
		if (pre ~ /[A-Za-z0-9_.]/ || post ~ /[A-Za-z0-9_]/)
			out = out substr(line, 1, i + length(m) - 1)
		else
			out = out substr(line, 1, i - 1) "PK_" m
		line = substr(line, i + length(m))
	}
	return out line
}

BEGIN {
	align["float"] = 4; align["uint"] = 4; align["int"] = 4
	align["float16_t"] = 2; align["f16vec2"] = 4; align["f16vec4"] = 8
	align["vec2"] = 8; align["vec4"] = 16; align["uvec4"] = 16
}

/^#version/ {
	print
	print "#extension GL_GOOGLE_include_directive : require"
	print "#define PACKED 1"
	print "#include \"packed.glsl\""
	next
}
/^layout\(binding *= *[0-9]+\).*buffer/ {
	if (!match($0, /^layout\(binding *= *[0-9]+\) *([a-z]+ +)*buffer +[A-Za-z0-9_]+ *\{ *[A-Za-z0-9_]+ +[A-Za-z0-9_]+\[\]; *\};/)) {
		print FILENAME ":" FNR ": a buffer packed.awk cannot read: " $0 > "/dev/stderr"
		exit 1
	}
	line = $0
	binding = line; sub(/^layout\(binding *= */, "", binding); sub(/\).*/, "", binding)
	rest = line; sub(/^layout\(binding *= *[0-9]+\) */, "", rest)
	block = rest; sub(/^.*buffer +/, "", block); sub(/ *\{.*/, "", block)
	member = rest; sub(/^.*\{ *[A-Za-z0-9_]+ +/, "", member); sub(/\[\].*/, "", member)
	type = rest; sub(/^.*\{ */, "", type); sub(/ .*/, "", type)
	if (!(type in align)) {
		print FILENAME ":" FNR ": packed.awk knows no alignment for " type > "/dev/stderr"
		exit 1
	}
	# the element's own size: every element's address is that aligned
	print "layout(buffer_reference, std430, buffer_reference_align = " align[type] ") " rest
	print "#define PK_" member " " block "(pk_addr[" binding "])." member
	members[member] = 1
	next
}
/^void main\(\)/ {
	sub(/main/, "pk_main")
	mains++
}
{
	for (m in members)
		$0 = rename($0, m)
	gsub(/gl_WorkGroupID/, "pk_WorkGroupID")
	gsub(/gl_NumWorkGroups/, "pk_NumWorkGroups")
	gsub(/gl_GlobalInvocationID/, "pk_GlobalInvocationID")
	print
}
END {
	if (mains) {
		print ""
		print "void main()"
		print "{"
		print "\tuint slot;"
		print "\tPK_LANES_SET();"
		print "\tif (!pk_enter(slot))"
		print "\t\treturn;"
		print "\tpk_GlobalInvocationID = pk_WorkGroupID * gl_WorkGroupSize +"
		print "\t\t\t\tgl_LocalInvocationID;"
		print "\tpk_load_push(slot);"
		print "\tpk_main();"
		print "}"
	}
}
