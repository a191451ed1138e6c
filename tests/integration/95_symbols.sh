#!/bin/bash
# 95_symbols.sh - every global symbol of the daemon's library carries its
# module's name (nm -g of each object built from daemon/, proto/, util/
# and the shaders): the file's name, its first word, its folder's, the
# engine's and the device's (nn_, gpu_), or the name of the type a module
# is about (png_ of the codecs, st_ of safetensors, job_ of the queue's
# jobs, rpc_, param_, error_, shader_, work_ of the worker's events and
# requests). So grep and the tools find no
# namesakes, and a new unprefixed global fails here, named.
. "$(dirname "$0")/lib.bash"
tap_plan 1

unprefixed() {
	local o stem dir w1 sym alias
	for o in $(find "$BUILD/daemon" "$BUILD/proto" "$BUILD/util" "$BUILD/shaders" \
		-name '*.o' 2>/dev/null | sort); do
		stem=$(basename "$o" .o) dir=$(basename "$(dirname "$o")") w1=${stem%%_*}
		[ -f "$ROOT/$dir/$stem.c" ] || [ -f "$ROOT/daemon/$dir/$stem.c" ] ||
			[ -f "$ROOT/daemon/$stem.c" ] || [ "$stem" = shaders ] || continue
		case $dir/$stem in
		formats/image_codec | util/image) alias='png_ jpeg_ webp_' ;;
		formats/safetensors) alias=st_ ;;
		jobs/queue) alias=job_ ;;
		proto/jsonrpc) alias=rpc_ ;;
		proto/params) alias=param_ ;;
		proto/errors) alias=error_ ;;
		shaders/shaders) alias='shader_ spv_' ;;
		worker/worker) alias=work_ ;;
		*) alias= ;;
		esac
		nm -g --defined-only "$o" | awk '$2 ~ /[TDBRC]/ {print $3}' | while read -r sym; do
			case $sym in
			main | "${stem}"_* | "${w1}"_* | "${dir}"_* | nn_* | gpu_* | __*) continue ;;
			esac
			for a in $alias; do
				case $sym in "$a"*) continue 2 ;; esac
			done
			echo "$dir/$stem.o: $sym"
		done
	done
}
none_unprefixed() {
	local found
	found=$(unprefixed)
	[ -z "$found" ] || { echo "$found"; return 1; }
}
check "no global symbol of the daemon's library without its module's prefix" \
	none_unprefixed
tap_done
