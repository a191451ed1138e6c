#!/bin/bash
# 95_layers.sh - the daemon's files call down, never back up, and the
# worker knows nothing of the protocol.
#
# 1. No circle of calls among the daemon's files outside the engine
#    (daemon/*.c and its wings loop/, jobs/, worker/, formats/, front/),
#    nor among daemon/nn/*.c (the engine): from the built objects' symbols
#    (nm), an edge runs from a file to each file of the same set whose functions
#    it calls, and tsort must find no loop in them. A circle such as
#    daemon.c calling methods.c calling back into daemon.c, or fit.c and
#    package.c calling each other, fails, naming the files.
# 2. worker.h pulls in neither cJSON nor libuv, and the worker's files
#    include no protocol header: a work request carries a number and
#    comes back with an errors.h code; replies.c puts it on the wire.
# 3. The wings include down only (daemon/readme.md): a file includes
#    headers of its own folder and of the folders below it in
#    loop, front > worker > jobs > nn > formats, gpu > daemon/'s own
#    helpers (log.h, usertext.h, options.h); daemon.h is main.c's and
#    daemon.c's alone.
. "$(dirname "$0")/lib.bash"
tap_plan 4

# no_circle NAME DIR...: checks 1 on the objects of BUILD/DIR...
no_circle() {
	local dir=$1 objs o d
	shift
	# objects of sources that exist (a build folder may keep objects of
	# files since moved)
	objs=$(for d in "$@"; do for o in "$BUILD/$d"/*.o; do
		[ -f "$ROOT/$d/$(basename "$o" .o).c" ] && echo "$o"
	done; done)
	if [ -z "$objs" ] || ! command -v nm >/dev/null ||
		! command -v tsort >/dev/null; then
		skip "no objects for $dir in $BUILD, or no nm or tsort"
		return
	fi
	for o in $objs; do
		nm -g --defined-only "$o" | awk -v f="$(basename "$o" .o).c" \
			'NF == 3 && $2 ~ /[TDBR]/ { print $3, f }'
	done | sort >"$T/defs"
	for o in $objs; do
		nm -u "$o" | awk -v f="$(basename "$o" .o).c" '{ print $2, f }'
	done | sort >"$T/uses"
	# "caller callee", each pair once
	join "$T/uses" "$T/defs" | awk '$2 != $3 { print $2, $3 }' |
		sort -u >"$T/calls"
	check "no circle of calls among $dir ($(wc -l <"$T/calls") caller-callee pairs)" \
		sh -c "tsort '$T/calls' >/dev/null"
}
no_circle "daemon/ and its wings" daemon daemon/loop daemon/jobs \
	daemon/worker daemon/formats daemon/front
no_circle daemon/nn daemon/nn

worker_is_plain() {
	local deps
	deps=$(echo '#include "worker/worker.h"' |
		cc -std=c11 -D_GNU_SOURCE -I"$ROOT" -I"$ROOT/daemon" \
			-M -x c - 2>&1) || { echo "$deps"; return 1; }
	if echo "$deps" | grep -E 'cJSON\.h|/uv\.h'; then
		echo "worker.h pulls these in"
		return 1
	fi
	if grep -nE '#include "(proto\/)?(jsonrpc|protocol)\.h"|cjson|<uv\.h>' \
		"$ROOT"/daemon/worker/*.c; then
		echo "worker.c includes these"
		return 1
	fi
}
check "the worker knows nothing of JSON-RPC or libuv" worker_is_plain

# rank WING: how low a folder of daemon/ sits (a higher number is lower)
rank() {
	case $1 in
	daemon) echo 0 ;; loop | front) echo 1 ;; worker) echo 2 ;;
	jobs) echo 3 ;; nn) echo 4 ;; formats | gpu) echo 5 ;; *) echo 6 ;;
	esac
}
wings_include_down() {
	local f wing inc to bad=0
	for f in "$ROOT"/daemon/*/*.[ch] "$ROOT"/daemon/*.[ch]; do
		wing=${f#"$ROOT"/daemon/}
		case $wing in
		*/*) wing=${wing%%/*} ;;
		main.c | daemon.[ch]) wing=daemon ;;
		*) wing=helpers ;;
		esac
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
			case $inc in
			proto/* | util/* | */*_pk.h) continue ;;
			*/*) to=${inc%%/*} ;;
			daemon.h) to=daemon ;;
			*.h) to=helpers ;;
			esac
			[ "$to" = "$wing" ] && continue
			if [ "$(rank "$to")" -le "$(rank "$wing")" ]; then
				echo "${f#"$ROOT"/}: #include \"$inc\" runs back up"
				bad=1
			fi
		done
	done
	return $bad
}
check "daemon/'s wings include down only" wings_include_down
tap_done
