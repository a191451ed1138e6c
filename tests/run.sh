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
# load); "# run.sh: alone (normal build)" is alone in the normal build
# only, its sanitizer run skipping the timing checks. The alone ones start
# first, one by one, then those with "# run.sh: long" (the longest, so
# that the run does not end on one of them by itself), then the rest in
# order. A script with "# run.sh: light" mostly waits (timers, restarts,
# a device that opens late): up to TEST_LIGHT_JOBS of those (as many as
# TEST_JOBS unless set; none when TEST_JOBS=1) run beside the TEST_JOBS
# others. Each log's .end file has the test's exit status, wall time and
# the CPU seconds of what it ran and waited for (the slowest list shows
# both, so the waiting ones show). A script with the line "# run.sh: slow" belongs to `make
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
		# the CPU the test and what it ran used (children reaped), so
		# that the waiting tests show (the light candidates)
		times >"$log.times" # a builtin: no subshell of its own
		cpu=$(tail -1 "$log.times" | awk '{ n = 0
			for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
			printf "%.1f", n }')
		rm -f "$log.times"
		echo "$rc $((ms / 1000)).$((ms % 1000 / 100)) $cpu" >"$log.end"
	) &
	pids[$1]=$!
}
# each entry's class, from its script's "# run.sh:" lines: alone (runs
# with nothing beside it; "alone (normal build)": the sanitizer build,
# which skips the test's timing checks, runs it as a long one), long (started before the others, so that the
# end is not one long test running by itself), light (it mostly waits on
# timers or other processes: it runs beside the TEST_JOBS others), or
# plain; unit tests are plain
n=${#list[@]}
class=() endf=()
for ((i = 0; i < n; i++)); do
	IFS=$'\t' read -r b kind t <<<"${list[$i]}"
	c=plain
	if [ "$kind" = script ]; then
		if grep -q '^# run.sh: alone (normal build)' "$t" &&
			[[ $(basename "$b") == *asan* ]]; then
			c=long # the sanitizer build skips its timings
		elif grep -q '^# run.sh: alone' "$t"; then
			c=alone
		elif grep -q '^# run.sh: long' "$t"; then
			c=long
		elif grep -q '^# run.sh: light' "$t"; then
			c=light
		fi
	fi
	class[$i]=$c
	endf[$i]=${list[$i]%%$'\t'*}/test-logs/$(basename "$t").log.end
done
# the order they start in: the alone ones first, one by one (none waits
# for others to drain), then the long ones of every build, then the rest
# in the list's order
pending=()
for c in alone long other; do
	for ((i = 0; i < n; i++)); do
		case $c in
		other) [[ ${class[$i]} == alone || ${class[$i]} == long ]] && continue ;;
		*) [ "${class[$i]}" = "$c" ] || continue ;;
		esac
		pending+=("$i")
	done
done
# light tests beyond TEST_JOBS: as many again (none when TEST_JOBS=1,
# which runs everything one by one); once those are taken they wait for
# a plain slot like the others
light_max=${TEST_LIGHT_JOBS:-$jobs_max}
[[ $light_max =~ ^[0-9]+$ ]] || light_max=$jobs_max
[ "$jobs_max" -eq 1 ] && light_max=0

stop_all() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		pkill -TERM -P "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	exit 130
}
trap stop_all INT TERM

shown=0 lone=0
cur_build=
times=()
launched=() as_light=() live=()
while [ "$shown" -lt "$n" ]; do
	# what still runs: entries started and not yet ended
	running=0 lights=0 still=()
	for i in "${live[@]+"${live[@]}"}"; do
		[ -f "${endf[$i]}" ] && continue
		still+=("$i") running=$((running + 1))
		[ -n "${as_light[$i]:-}" ] && lights=$((lights + 1))
	done
	live=("${still[@]+"${still[@]}"}")
	[ "$running" -eq 0 ] && lone=0
	left=()
	hold=$lone # an alone test runs, or one waits for the others to end
	for i in "${pending[@]+"${pending[@]}"}"; do
		if [ "$hold" -eq 0 ] && [ "${class[$i]}" = alone ]; then
			if [ "$running" -gt 0 ]; then
				hold=1
			else
				lone=1 hold=1
				launch "$i"
				launched[$i]=1 running=1 live+=("$i")
				continue
			fi
		fi
		if [ "$hold" -eq 1 ]; then
			left+=("$i")
			continue
		fi
		if [ "${class[$i]}" = light ] && [ "$lights" -lt "$light_max" ]; then
			as_light[$i]=1 lights=$((lights + 1))
		elif [ $((running - lights)) -ge "$jobs_max" ]; then
			left+=("$i")
			continue
		fi
		launch "$i"
		launched[$i]=1 running=$((running + 1)) live+=("$i")
	done
	pending=("${left[@]+"${left[@]}"}")
	# report the entries that have ended, in the order of the list
	progressed=0
	while [ "$shown" -lt "$n" ] && [ -n "${launched[$shown]:-}" ]; do
		IFS=$'\t' read -r b kind t <<<"${list[$shown]}"
		log=$b/test-logs/$(basename "$t").log
		[ -f "$log.end" ] || break
		wait "${pids[$shown]}" 2>/dev/null
		read -r rc secs cpu <"$log.end"
		if [ "$b" != "$cur_build" ]; then
			cur_build=$b
			echo "== $(basename "$b")"
		fi
		name=$(basename "$b")/$(basename "$t")
		count_tap "$log" "$name" "$rc" "$secs"
		times+=("$secs $name (${cpu:-?} s of CPU)")
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
