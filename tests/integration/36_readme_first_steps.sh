#!/bin/bash
# 36_readme_first_steps.sh - the README's first fit, as a new user types
# it: the lines `build/tools/mksample sample.png ...` and `build/vkinrd
# --fit sample.png ...` are read from README.md and run as they are (the
# build folder in place of build/) in an empty folder. They train past
# the warm-up (at least 50 epochs), exit 0, leave the model and the
# reconstruction, and reach the 35 dB of a real fit. And the scripting
# idiom docs/INTERFACES.md gives for `submit -q` works: a batch's last
# line names it, and waiting on that waits for every image (exit 0).
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
CTL=$BUILD/vkinrctl
grep -E '^    build/(tools/mksample sample\.png|vkinrd --fit sample\.png)' "$ROOT/README.md" |
	sed -e 's/^    //' -e 's/ *#.*//' -e "s|^build/|$BUILD/|" >"$T/steps.sh"
EPOCHS=$(grep -o -- '--epochs [0-9]*' "$T/steps.sh" | awk '{print $2}')
mkdir "$T/new" && (cd "$T/new" && bash -e "$T/steps.sh" >"$T/out" 2>"$T/err"); RC=$?
check "the README's first fit runs as written and trains past the warm-up" \
	bash -c "[ \$(wc -l <'$T/steps.sh') = 2 ] && [ $RC = 0 ] && [ '${EPOCHS:-0}' -ge 50 ] &&
		[ -s '$T/new/sample.safetensors' ] && [ -s '$T/new/sample-fit.png' ]"
check "... and shows a real fit (35 dB or more)" \
	bash -c "grep -oE 'PSNR [0-9.]+ dB' '$T/err' '$T/out' | tail -1 | awk '{exit !(\$2 >= 35)}'"

start_daemon || { echo "not ok 3 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
mkdir "$T/photos"
"$MKSAMPLE" "$T/photos/a.png" 16 16 1 >/dev/null
"$MKSAMPLE" "$T/photos/b.png" 16 16 2 >/dev/null
"$CTL" wait $("$CTL" submit -q --epochs 3 --width 16 "$T/photos" | sed -n 's/^batch //p') >"$T/wait" 2>&1; RC=$?
check "submit -q DIR | sed -n 's/^batch //p' names the batch, and wait on it waits for both images" \
	bash -c "[ $RC = 0 ] && [ \$('$CTL' list -q --state done | wc -l) = 2 ]"
stop_daemon
tap_done
