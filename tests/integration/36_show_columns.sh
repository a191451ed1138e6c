#!/bin/bash
# 36_show_columns.sh - `vkinrctl show` lines its values up in one column
# however long a key is: precision_used (14 letters) once pushed its value
# out of the column the other keys share.
. "$(dirname "$0")/lib.bash"
tap_plan 1
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null
J=$("$CTL" submit -q --epochs 2 --width 16 "$T/a.png")
"$CTL" wait "$J" >/dev/null
"$CTL" show "$J" >"$T/show"
check "every key's value starts in the same column, precision_used's too" \
	python3 -c "
import re
lines = [l for l in open('$T/show').read().splitlines()[1:] if l.strip()]
cols = {re.match(r'  (\S+) +', l).end() for l in lines}
assert len(lines) > 20 and any(l.split()[0] == 'precision_used' for l in lines) and len(cols) == 1, (cols, lines)"
stop_daemon
tap_done
