#!/bin/bash
# 31_fifo_reads.sh - nothing read waits for good on a FIFO that nobody
# writes to (issue 31, item 3), beyond the images that `vkinrd --fit DIR`
# skips (11_fit_no_clobber.sh): the files named on a command line are
# read with fileio_read, which opens with O_NONBLOCK, so such a FIFO
# reads as empty at once, while a pipe with a writer still reads whole.
#   - `vkinrd --fit-task FIFO` ends (nothing to fit) instead of hanging;
#   - `vkinrd --fit-task <(cat LIST)` (a pipe with a writer) fits LIST;
#   - `vkinrctl infer MODEL --target FIFO` is refused at once (not an
#     image), the daemon serving.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
cd "$T" || exit 1
"$MKSAMPLE" a.png 16 16 3 >/dev/null
mkfifo list.fifo target.fifo
printf 'a\t%s\n' "$T/a.png" >list

check "--fit-task FIFO with no writer ends at once (within 60 s), not waiting" bash -c '
	timeout 60 "'$VKINRD'" --fit-task list.fifo --out t1 --allow-cpu --width 16 --epochs 2 2>err; rc=$?
	cat err; [ $rc != 124 ] && [ ! -e t1/a ]'
check "--fit-task <(cat LIST): a pipe with a writer is read whole" bash -c '
	timeout 120 "'$VKINRD'" --fit-task <(sleep 0.5; cat list) --out t2 --allow-cpu --width 16 --epochs 2 -q &&
	[ -s t2/a/result.json ] && [ -s t2/a/model.safetensors ]'

start_daemon || exit 1
infer_fifo() {
	"$VKINRD" --fit a.png --width 16 --epochs 2 -q --model m.safetensors || return 1
	VKINR_SOCKET=$SOCK timeout 60 "$BUILD/vkinrctl" infer m.safetensors --target target.fifo -o x.png 2>err
	local rc=$?
	cat err
	[ $rc != 124 ] && [ $rc != 0 ] && [ ! -e x.png ] && VKINR_SOCKET=$SOCK "$BUILD/vkinrctl" status >/dev/null
}
check "vkinrctl infer --target FIFO is refused at once, the daemon serving" infer_fifo
stop_daemon
tap_done
