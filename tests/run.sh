#!/bin/bash
# run.sh BUILD... - runs every test against each build folder and prints
# one summary line: "N passed, N failed, N skipped".
#
# Unit tests are the cmocka programs BUILD/tests/test_*, run with TAP
# output; integration tests are tests/integration/*.sh, which print TAP
# and find the programs through $VKINR_BUILD. A program that crashes or
# exits non-zero without reporting a failure counts as one failure. Logs
# go to BUILD/test-logs/. Set TESTS=pattern to run only matching tests.
# For a build folder named *asan* the scripts see VKINR_SANITIZED=1 and
# shorten their longest loops (fewer kills, fewer soak epochs).
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
passed=0 failed=0 skipped=0
failures=()

# counts the TAP lines of one log; sets the globals
count_tap() {
	local log=$1 name=$2 status=$3
	local p f s
	# cmocka writes a skipped test as "not ok N # SKIP", scripts as "ok N # SKIP"
	s=$(grep -Eci '^(not )?ok [0-9]+.*# *skip' "$log" || true)
	p=$(grep -Ei '^ok [0-9]+' "$log" | grep -vEci '# *skip' || true)
	f=$(grep -E '^not ok' "$log" | grep -vEci '# *skip' || true)
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	if [ $((p + s + f)) -eq 0 ]; then
		f=1 # a test that reported nothing has not passed
	fi
	passed=$((passed + p)) skipped=$((skipped + s)) failed=$((failed + f))
	[ "$f" -gt 0 ] && failures+=("$name (see $log)")
	printf '%-44s %3d passed %3d failed %3d skipped\n' "$name" "$p" "$f" "$s"
}

for build in "$@"; do
	build=$(cd "$build" && pwd)
	logs=$build/test-logs
	mkdir -p "$logs"
	export VKINR_BUILD=$build
	# the sanitizer build runs everything, the longest loops shortened
	case $(basename "$build") in
	*asan*) export VKINR_SANITIZED=1 ;;
	*) unset VKINR_SANITIZED ;;
	esac
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	echo "== $(basename "$build")"
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$build")/$(basename "$t")
		[[ -n "${TESTS:-}" && "$name" != *${TESTS}* ]] && continue
		log=$logs/$(basename "$t").log
		CMOCKA_MESSAGE_OUTPUT=TAP timeout 600 "$t" >"$log" 2>&1
		count_tap "$log" "$name" $?
	done
	for t in tests/integration/*.sh; do
		[ -f "$t" ] || continue
		name=$(basename "$build")/$(basename "$t")
		[[ -n "${TESTS:-}" && "$name" != *${TESTS}* ]] && continue
		log=$logs/$(basename "$t").log
		timeout 600 bash "$t" >"$log" 2>&1
		count_tap "$log" "$name" $?
	done
done

# a failure shows its "not ok" lines and the end of its log here, so a
# CI run that keeps only this output still says what went wrong
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "FAILED: $f"
	log=${f##*(see }
	log=${log%)}
	grep -E -A6 '^not ok' "$log" | grep -vEi '# *skip' | head -40 | sed 's/^/    /'
	echo "    -- last lines of the log:"
	tail -n 15 "$log" | cut -c1-300 | sed 's/^/    /'
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
