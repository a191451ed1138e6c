#!/bin/bash
# 36_client_wings.sh - vkinrctl's files live in wings as the daemon's do
# (issue 32 item 5): client/core/, commands/, slurm/, views/, pictures/,
# each with a readme.md that names every file of it, and none left at the
# top. Each file sits in the wing of its kind (cmd-slurm.c and slurm-* in
# slurm/, watch* and dashboard* in views/, plot* and png8* in pictures/,
# the other cmd-* and submit-* in commands/); every client header is
# included by its wing's name ("core/client.h"), and includes run down:
# commands > slurm, views, pictures > core.
. "$(dirname "$0")/lib.bash"
tap_plan 3
C=$ROOT/client

placed() {
	local f name wing want bad=0
	for f in "$C"/*.[ch]; do
		[ -e "$f" ] && { echo "left at the top: ${f#"$ROOT"/}"; bad=1; }
	done
	for f in "$C"/*/*.[ch]; do
		name=$(basename "$f") wing=$(basename "$(dirname "$f")")
		case $name in
		cmd-slurm.c | slurm*) want=slurm ;;
		watch* | dashboard*) want=views ;;
		plot* | png8*) want=pictures ;;
		cmd-* | submit-*) want=commands ;;
		*) want=core ;;
		esac
		[ "$wing" = "$want" ] || { echo "$name is in $wing/, not $want/"; bad=1; }
		grep -qF "\`$name\`" "$C/$wing/readme.md" 2>/dev/null ||
			{ echo "$wing/readme.md does not name $name"; bad=1; }
	done
	for wing in core commands slurm views pictures; do
		[ -s "$C/$wing/readme.md" ] || { echo "no $wing/readme.md"; bad=1; }
	done
	return $bad
}
check "every client file in the wing of its kind, named in that wing's readme.md; none at the top" placed

rank() {
	case $1 in commands) echo 0 ;; slurm | views | pictures) echo 1 ;; core) echo 2 ;; *) echo 9 ;; esac
}
includes_down() {
	local f wing inc to bad=0
	for f in "$C"/*/*.[ch]; do
		wing=$(basename "$(dirname "$f")")
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
			case $inc in
			proto/* | util/*) continue ;;
			*/*) to=${inc%%/*} ;;
			*) echo "${f#"$ROOT"/}: #include \"$inc\" names no wing"; bad=1; continue ;;
			esac
			[ -f "$C/$inc" ] || { echo "${f#"$ROOT"/}: #include \"$inc\": no such file"; bad=1; continue; }
			[ "$to" = "$wing" ] && continue
			if [ "$(rank "$to")" -le "$(rank "$wing")" ]; then
				echo "${f#"$ROOT"/}: #include \"$inc\" runs back up or across"
				bad=1
			fi
		done
	done
	return $bad
}
check "client headers are included by their wing's name, and the includes run down" includes_down
check "the client builds from those wings (its objects in BUILD/client/WING/)" \
	bash -c "[ -x '$BUILD/vkinrctl' ] && ls '$BUILD'/client/core/main.o '$BUILD'/client/views/watch.o >/dev/null"
tap_done
