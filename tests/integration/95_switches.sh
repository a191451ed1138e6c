#!/bin/bash
# 95_switches.sh - the engine's choices are made once: the benchmark
# switches (VKINR_PASSES, VKINR_GEMM, VKINR_DW_*...) are read from the
# environment when the device opens (daemon/gpu/switches.c), and
# daemon/nn/variants.c turns them into the choices a fit records.
#
# 1. No file of daemon/nn/ calls getenv (sources), 2. nor does any of its
#    built objects (nm: a macro or a header's inline would show there).
# 3. record.c's and variants.c's global symbols carry the engine's prefix.
# 4. No shader the recording asks for by name is one of the benchmarks'
#    and tests' alone (shaders/variants_bench.txt), which vkinrd lacks.
# 5. The switches still reach the engine through the device: with the GPU
#    passes the sines are fused (no activate pass to move bytes), with
#    VKINR_FUSED_SINE=0 too the activate pass runs.
# 6. vkinrd embeds no benchmark GEMM: VKINR_GEMM=coop_emu (the tests'
#    family, which runs anywhere) leaves it with its own choice, the same
#    model as without it.
. "$(dirname "$0")/lib.bash"
tap_plan 6

no_getenv_in_sources() {
	! grep -n 'getenv[[:space:]]*(' "$ROOT"/daemon/nn/*.[ch]
}
check "no getenv in daemon/nn's sources" no_getenv_in_sources

nn_objects() {
	local o
	for o in "$BUILD"/daemon/nn/*.o; do
		[ -f "$ROOT/daemon/nn/$(basename "$o" .o).c" ] && echo "$o"
	done
}
if [ -z "$(nn_objects)" ] || ! command -v nm >/dev/null; then
	skip "no objects of daemon/nn in $BUILD, or no nm"
	skip "no objects of daemon/nn in $BUILD, or no nm"
else
	no_getenv_in_objects() {
		! nm -A -u $(nn_objects) | grep -w 'getenv'
	}
	check "no getenv in daemon/nn's objects" no_getenv_in_objects
	prefixed() {
		local o bad=0
		for o in record record_pipes record_render render_view variants; do
			[ -f "$BUILD/daemon/nn/$o.o" ] || continue
			if nm -g --defined-only "$BUILD/daemon/nn/$o.o" |
				awk '{ print $3 }' | grep -v '^nn_'; then
				echo "in $o.o: the names above lack nn_"
				bad=1
			fi
		done
		return $bad
	}
	check "the recording's global symbols carry nn_" prefixed
fi

engine_asks_no_bench_variant() {
	local name bad=0
	for name in $(grep -ho '"[a-z0-9_]*"' "$ROOT"/daemon/nn/record*.c \
		"$ROOT"/daemon/nn/render_view.c "$ROOT"/daemon/nn/optim.c |
		tr -d '"' | sort -u); do
		if awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' \
			"$ROOT/shaders/variants_bench.txt"; then
			echo "$name is in variants_bench.txt"
			bad=1
		fi
	done
	return $bad
}
check "the recording asks for none of the benchmarks' shaders" \
	engine_asks_no_bench_variant

if [ ! -x "$VKINRD" ] || ! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
	skip "no Vulkan device"
	skip "no Vulkan device"
	tap_done
fi
"$MKSAMPLE" "$T/img.png" 16 16 1
# fit ENV...: the summary of a 2-epoch fit with the switches ENV (its
# model in $T/model.safetensors)
fit() {
	env "$@" "$VKINRD" --fit "$T/img.png" --epochs 2 --width 16 -q -y -f \
		--precision fp32 --model "$T/model.safetensors" --json \
		--timings | tail -1
}
switches_reach_engine() {
	local fused plain
	fused=$(fit VKINR_PASSES=gpu) || return 1
	plain=$(fit VKINR_PASSES=gpu VKINR_FUSED_SINE=0) || return 1
	echo "fused: $fused"
	echo "plain: $plain"
	echo "$fused" | grep -q '"pass_gbps":{' || return 1
	! echo "$fused" | grep -o '"pass_gbps":{[^}]*}' | grep -q activate &&
		echo "$plain" | grep -o '"pass_gbps":{[^}]*}' | grep -q activate
}
check "VKINR_PASSES and VKINR_FUSED_SINE reach the engine" switches_reach_engine
no_bench_gemm() {
	fit >/dev/null && mv "$T/model.safetensors" "$T/own.safetensors" &&
		fit VKINR_GEMM=coop_emu >/dev/null &&
		cmp "$T/own.safetensors" "$T/model.safetensors"
}
check "vkinrd embeds no benchmark GEMM (VKINR_GEMM=coop_emu changes nothing)" \
	no_bench_gemm
tap_done
