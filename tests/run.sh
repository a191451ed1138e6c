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
#
# Tests run TEST_JOBS at a time (default 3; TEST_JOBS=1 runs them one by
# one), the builds' lists one after the other in the same pool: every
# integration test starts its own daemon on a private socket and state
# folder (lib.bash), so they share nothing. A script with the line
# "# run.sh: alone" runs with no other test beside it (it measures time or
# load). A script with the line "# run.sh: slow" belongs to `make
# check-slow`: it runs with SLOW=1 (everything) or SLOW=only (those alone),
# or when TESTS names it, and otherwise is named at the end as not run.
# Each test's line (in the order of the list, whatever order they
# end in) gives its counts and its wall time; the slowest are listed
# before the summary.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
passed=0 failed=0 skipped=0
failures=()
jobs_max=${TEST_JOBS:-3}
slow_mode=${SLOW:-0}
not_run=()
# Unit tests that are slow on the sanitizer build alone: their plain-C
# double-precision references (tests/ref/) take minutes under ASan, while
# the code they test runs on the device. make check runs them on the
# normal build, make check-slow on the sanitizer build.
slow_sanitized=" test_fit test_gemm_coop test_optim test_ref "
[[ $jobs_max =~ ^[1-9][0-9]*$ ]] || jobs_max=3

# counts the TAP lines of one log; sets the globals
count_tap() {
	local log=$1 name=$2 status=$3 secs=$4
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
	printf '%-44s %3d passed %3d failed %3d skipped %6ss\n' "$name" "$p" "$f" "$s" "$secs"
}

# The list: one entry per test, "BUILD<TAB>KIND<TAB>PATH" (KIND unit or
# script).
list=()
for build in "$@"; do
	build=$(cd "$build" && pwd)
	mkdir -p "$build/test-logs"
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$build")/$(basename "$t")
		[[ -n "${TESTS:-}" && "$name" != *${TESTS}* ]] && continue
		if [[ $(basename "$build") == *asan* && $slow_sanitized == *" $(basename "$t") "* ]]; then
			if [ "$slow_mode" = 0 ] && [ -z "${TESTS:-}" ]; then
				not_run+=("$name")
				continue
			fi
		elif [ "$slow_mode" = only ]; then
			continue
		fi
		list+=("$build"$'\t'unit$'\t'"$t")
	done
	for t in tests/integration/*.sh; do
		[ -f "$t" ] || continue
		name=$(basename "$build")/$(basename "$t")
		[[ -n "${TESTS:-}" && "$name" != *${TESTS}* ]] && continue
		if grep -q '^# run.sh: slow' "$t"; then
			if [ "$slow_mode" = 0 ] && [ -z "${TESTS:-}" ]; then
				not_run+=("$name")
				continue
			fi
		elif [ "$slow_mode" = only ]; then
			continue
		fi
		list+=("$build"$'\t'script$'\t'"$t")
	done
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# starts entry $1 in the background; its log is BUILD/test-logs/NAME.log,
# and NAME.log.end gets its exit status and wall time once it has ended
pids=()
launch() {
	local build kind t log
	IFS=$'\t' read -r build kind t <<<"${list[$1]}"
	log=$build/test-logs/$(basename "$t").log
	rm -f "$log.end"
	(
		export VKINR_BUILD=$build
		# the sanitizer build runs everything, the longest loops shortened
		case $(basename "$build") in
		*asan*) export VKINR_SANITIZED=1 ;;
		*) unset VKINR_SANITIZED ;;
		esac
		start=$(date +%s%N)
		if [ "$kind" = unit ]; then
			CMOCKA_MESSAGE_OUTPUT=TAP timeout 600 "$t" >"$log" 2>&1
		else
			timeout 600 bash "$t" >"$log" 2>&1
		fi
		rc=$?
		end=$(date +%s%N)
		ms=$(((end - start) / 1000000))
		echo "$rc $((ms / 1000)).$((ms % 1000 / 100))" >"$log.end"
	) &
	pids[$1]=$!
}
alone() {
	local kind t
	IFS=$'\t' read -r _ kind t <<<"${list[$1]}"
	[ "$kind" = script ] && grep -q '^# run.sh: alone' "$t"
}
stop_all() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		pkill -TERM -P "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	exit 130
}
trap stop_all INT TERM

n=${#list[@]}
next=0 shown=0 lone=0
cur_build=
times=()
while [ "$shown" -lt "$n" ]; do
	# what still runs: entries started and not yet ended
	running=0
	for ((i = shown; i < next; i++)); do
		IFS=$'\t' read -r b _ t <<<"${list[$i]}"
		[ -f "$b/test-logs/$(basename "$t").log.end" ] || running=$((running + 1))
	done
	[ "$running" -eq 0 ] && lone=0
	while [ "$next" -lt "$n" ] && [ "$lone" -eq 0 ] && [ "$running" -lt "$jobs_max" ]; do
		if alone "$next"; then
			[ "$running" -gt 0 ] && break
			lone=1
		fi
		launch "$next"
		next=$((next + 1)) running=$((running + 1))
	done
	# report the entries that have ended, in the order of the list
	progressed=0
	while [ "$shown" -lt "$next" ]; do
		IFS=$'\t' read -r b kind t <<<"${list[$shown]}"
		log=$b/test-logs/$(basename "$t").log
		[ -f "$log.end" ] || break
		wait "${pids[$shown]}" 2>/dev/null
		read -r rc secs <"$log.end"
		if [ "$b" != "$cur_build" ]; then
			cur_build=$b
			echo "== $(basename "$b")"
		fi
		name=$(basename "$b")/$(basename "$t")
		count_tap "$log" "$name" "$rc" "$secs"
		times+=("$secs $name")
		shown=$((shown + 1)) progressed=1
	done
	[ "$progressed" -eq 0 ] && sleep 0.2
done

if [ "${#times[@]}" -gt 3 ]; then
	echo "slowest (seconds, $jobs_max at a time):"
	printf '%s\n' "${times[@]}" | sort -rn | head -8 | sed 's/^/    /'
fi

if [ "${#not_run[@]}" -gt 0 ]; then
	echo "not run here, run by make check-slow (SLOW=1):"
	printf '    %s\n' "${not_run[@]}"
fi

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
