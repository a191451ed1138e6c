#!/bin/bash
# run.sh [--check] [SECONDS] - builds the libFuzzer targets tests/fuzz/fuzz_*.c
# and runs each for SECONDS (FUZZ_SECONDS, default 60).
#
# The library is rebuilt with clang into build-fuzz/ (FUZZ_B) with
# -fsanitize=fuzzer-no-link,address,undefined; each target links it with
# -fsanitize=fuzzer. Each run starts from the committed seeds in
# tests/fuzz/corpus/NAME/; new inputs go to build-fuzz/corpus/NAME/ (kept
# between runs of `make fuzz`), a crashing input to build-fuzz/crashes/.
# A crash fails the run: fix it, then add the input to the seed corpus.
#
# `make fuzz` calls it plainly and installs clang (as root) when it is
# missing. `make fuzz-check` (CI) calls it with --check: from the seeds
# only, in a fresh folder, and without clang it says "skipped" and exits 0.
# Prints one line per target: "NAME: N executions in S s, no crash".
set -u
cd "$(dirname "$0")/../.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
secs=${1:-${FUZZ_SECONDS:-60}}
B=${FUZZ_B:-build-fuzz}
CLANG=${FUZZ_CC:-clang}

if ! command -v "$CLANG" >/dev/null; then
	if [ $check = 1 ]; then
		echo "fuzz: skipped: $CLANG is not installed (apt-get install clang libclang-rt-14-dev)"
		exit 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "fuzz needs clang: sudo apt-get install clang libclang-rt-14-dev" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		clang libclang-rt-14-dev >/dev/null || exit 1
fi

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# the library, built by the Makefile's own rules with clang
env CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $san" \
	make -s B="$B" CC="$CLANG" SAN= "$B/libvkinr.a" || exit 1
pkgs="libuv libcjson libpng libjpeg libwebp libwebpdemux libexif vulkan"
mkdir -p "$B/fuzz" "$B/crashes"
targets=()
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	bin=$B/fuzz/$name
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ "$B/libvkinr.a" -nt "$bin" ]; then
		# shellcheck disable=SC2046
		"$CLANG" -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer $san \
			-Wall -Wextra -Wno-unused-parameter -I. -Idaemon \
			$(pkg-config --cflags $pkgs) -o "$bin" "$src" "$B/libvkinr.a" \
			$(pkg-config --libs $pkgs) -lm -pthread || exit 1
	fi
	targets+=("$name")
done

failed=0
for name in "${targets[@]}"; do
	seeds=tests/fuzz/corpus/$name
	if [ $check = 1 ]; then
		work=$(mktemp -d "/tmp/vkinr-$name.XXXXXX")
	else
		work=$B/corpus/$name
		mkdir -p "$work"
	fi
	log=$B/$name.log
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$B/fuzz/$name" -max_total_time="$secs" -timeout=20 \
		-rss_limit_mb=3072 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$B/crashes/$name-" "$work" "$seeds" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	took=$(sed -n 's/^stat::\(average_exec_per_sec\): *//p' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "$name: ${runs:-?} executions in $secs s (${took:-?}/s), no crash"
	else
		echo "$name: FAILED after ${runs:-?} executions (exit $rc); see $log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5
		ls -t "$B/crashes/$name-"* 2>/dev/null | head -1 | sed 's/^/  input: /'
		failed=$((failed + 1))
	fi
	[ $check = 1 ] && rm -rf "$work"
done
[ $failed -eq 0 ]
