#!/bin/bash
# 90_fuzz.sh - `make check` runs each libFuzzer target (tests/fuzz/) for
# FUZZ_SECONDS (10 here) from its committed seed corpus: `make fuzz-check`.
# Skipped without clang, and for the sanitizer build folder (the fuzz
# targets are sanitizer builds of their own, in build-fuzz/: once is
# enough).
# make check-slow runs it, not make check: it builds the fuzz targets with clang, a third build.
# run.sh: slow
. "$(dirname "$0")/lib.bash"
tap_plan 1
if [ "$(basename "$BUILD")" = build-asan ]; then
	echo "ok 1 # SKIP the fuzz targets run once, with the normal build"
	exit 0
fi
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
	echo "ok 1 # SKIP clang is not installed (make fuzz installs it)"
	exit 0
fi
out=$(cd "$ROOT" && ./tests/fuzz/run.sh --check "${FUZZ_SECONDS:-10}" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
if [ $rc -eq 0 ]; then
	echo "ok 1 - every fuzz target ran from its seeds without a crash"
else
	echo "not ok 1 - a fuzz target crashed (input in build-fuzz/crashes/)"
	exit 1
fi
