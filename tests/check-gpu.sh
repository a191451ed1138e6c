#!/bin/bash
# check-gpu.sh BUILD - what `make check-gpu` runs on a GPU before a speed
# claim: the tensor-core GEMMs against the reference through each
# cooperative-matrix extension the device offers (NV, and KHR by the
# SPIR-V translation), every shader pass, the optimizer's (Muon's
# Newton-Schulz products among them), and the whole-fit gradient checks
# (fp32 and fp16, and with each fp16 switch), packs against fits alone,
# and the arenas' memory carved from slabs. Ends with the usual "N
# passed, N failed, N skipped" line; a device without tensor cores
# reports those as skipped.
set -uo pipefail
build=${1:-build}
passed=0 failed=0 skipped=0
run() { # name, env..., binary
	local name=$1; shift
	local log
	log=$(env "$@" 2>&1)
	local rc=$?
	echo "$log" | grep -E '^\[ *(OK|FAILED|SKIPPED|RUN) *\]|skipped:|off;|# ' | grep -v '^\[ *RUN'
	local p s f
	p=$(echo "$log" | grep -c '^\[       OK \]')
	s=$(echo "$log" | grep -c '^\[  SKIPPED \] test_')
	f=$(echo "$log" | grep -c '^\[  FAILED  \] test_')
	if [ $rc -ne 0 ] && [ "$f" = 0 ]; then
		f=1 # it did not get to its tests (a missing library, a crash)
		echo "$log" | tail -5 | sed 's/^/#   /'
	fi
	echo "# $name: $p passed, $f failed, $s skipped"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}
"$build/vkinrd" --devices
run "GEMMs, NV" VKINR_COOPMAT=nv "$build/tests/test_gemm_coop"
if "$build/vkinrd" --devices --json | head -1 | grep -q '"cooperative_matrix":"[^"]*khr'; then
	run "GEMMs, KHR" VKINR_COOPMAT=khr "$build/tests/test_gemm_coop"
	run "fit, KHR" VKINR_COOPMAT=khr "$build/tests/test_fit"
else
	echo "# KHR: skipped (the device does not offer VK_KHR_cooperative_matrix)"
	skipped=$((skipped + 1))
fi
run "passes: the convs" "$build/tests/test_passes"
run "passes: GEMMs, head, loss, reductions, Adam" "$build/tests/test_passes_train"
run "passes: fp16 storage" "$build/tests/test_passes_fp16"
run "optimizer" "$build/tests/test_optim"
run "fit" "$build/tests/test_fit"
run "packs: packed equal to alone" "$build/tests/test_pack"
run "device memory carved from slabs" "$build/tests/test_memory"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
