#!/bin/bash
# 39_did_you_mean.sh - the command lines when they are wrong, and shell
# completion: "did you mean" after a mistyped command (vkinrctl) or
# option (vkinrctl, its commands, vkinrd and vkinrd --fit); vkinrd prints
# a short usage after a bad option, not its whole help; `vkinrd --fit
# --help` and `--fit-task --help` help (exit 0); `vkinrctl completion
# bash|zsh|fish` made from the option tables: options complete, `logs`
# completes job ids and names (from the daemon), not files, `submit`
# completes files; zsh and fish read their scripts (skipped without them).
. "$(dirname "$0")/lib.bash"
tap_plan 12
CTL=$BUILD/vkinrctl

"$CTL" sumbit x.png >"$T/out" 2>"$T/err"; RC=$?
check "vkinrctl: a mistyped command, did you mean" \
	bash -c "[ $RC = 2 ] && grep -q \"unknown command 'sumbit'; did you mean 'submit'?\" '$T/err'"
"$CTL" submit --epoks 3 x.png >"$T/out" 2>"$T/err"; RC=$?
"$CTL" --jsno list >"$T/out2" 2>"$T/err2"; RC2=$?
check "vkinrctl: a mistyped option of a command and a global one, did you mean" \
	bash -c "[ $RC = 2 ] && grep -q 'vkinrctl submit: did you mean --epochs?' '$T/err' &&
		[ $RC2 = 2 ] && grep -q 'vkinrctl: did you mean --json?' '$T/err2'"
"$CTL" list --frobnicate >"$T/out" 2>"$T/err"; RC=$?
check "nothing near: no suggestion, exit 2" \
	bash -c "[ $RC = 2 ] && ! grep -q 'did you mean' '$T/err'"

"$VKINRD" --sokcet "$T/s" >"$T/out" 2>"$T/err"; RC=$?
check "vkinrd: did you mean, and a short usage instead of the whole help" \
	bash -c "[ $RC = 2 ] && grep -q 'did you mean --socket?' '$T/err' && [ \$(wc -l <'$T/err') -le 6 ] &&
		grep -q \"Try 'vkinrd --help'\" '$T/err' && [ ! -s '$T/out' ]"
"$VKINRD" --devcies >/dev/null 2>"$T/err"
check "vkinrd: the modes are suggested too (--devices)" grep -q 'did you mean --devices?' "$T/err"
"$VKINRD" --fit x.png --epoks 3 >"$T/out" 2>"$T/err"; RC=$?
check "vkinrd --fit: did you mean, and a short usage" \
	bash -c "[ $RC = 2 ] && grep -q 'did you mean --epochs?' '$T/err' && [ \$(wc -l <'$T/err') -le 5 ] &&
		grep -q \"Try 'vkinrd --fit --help'\" '$T/err'"
"$VKINRD" --fit --help >"$T/out" 2>"$T/err"; RC=$?
"$VKINRD" --fit-task --help >"$T/out2" 2>&1; RC2=$?
check "vkinrd --fit --help and --fit-task --help: the whole help, exit 0" \
	bash -c "[ $RC = 0 ] && grep -q -- '--epochs N' '$T/out' && grep -q -- '--recon OUT.png' '$T/out' &&
		[ $RC2 = 0 ] && grep -q -- '--shard K/N' '$T/out2'"

# completion against a real daemon, for ids and names
if [ -x "$VKINRD" ] && "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
	export VKINR_SOCKET=$SOCK
	start_daemon || echo "# the daemon did not start"
	"$MKSAMPLE" "$T/a.png" 8 8 >/dev/null
	J=$("$CTL" submit -q --epochs 3 --width 16 --name kitty "$T/a.png")
	"$CTL" wait "$J" >/dev/null
else
	J=none
fi
"$CTL" completion bash >"$T/c.bash" 2>"$T/c.err"; CRC=$?
# comp.sh WORDS...: what bash completes for the last word, in $T
cat >"$T/comp.sh" <<EOF_SH
cd "$T" && PATH=$(dirname "$CTL"):\$PATH
source "$T/c.bash"
COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1))
_vkinrctl
printf '%s\n' "\${COMPREPLY[@]}"
EOF_SH
C="bash $T/comp.sh"
check "bash: options of a command complete (from its table)" \
	bash -c "[ $CRC = 0 ] && [ ! -s '$T/c.err' ] && [ \"\$($C vkinrctl logs --fo)\" = --follow ] && [ \"\$($C vkinrctl submit --aft)\" = --after ] &&
		[ \"\$($C vkinrctl list --no-h)\" = --no-header ]"
if [ "$J" != none ]; then
	check "bash: logs completes job ids and names, not file names" \
		bash -c "out=\$($C vkinrctl logs ''); echo \"\$out\" | grep -qx '$J' && echo \"\$out\" | grep -qx kitty && ! echo \"\$out\" | grep -q a.png"
else
	skip "no Vulkan device: no daemon to list jobs"
fi
check "bash: submit completes files, rm --state the states" \
	bash -c "[ \"\$($C vkinrctl submit a.p)\" = a.png ] && [ \"\$($C vkinrctl rm --state ca)\" = cancelled ]"
if command -v zsh >/dev/null; then
	"$CTL" completion zsh >"$T/_vkinrctl"
	check "zsh reads its script, which has every command's options" \
		bash -c "zsh -n '$T/_vkinrctl' && grep -q -- '--follow' '$T/_vkinrctl' && grep -q -- '--no-header' '$T/_vkinrctl'"
else
	skip "no zsh"
fi
if command -v fish >/dev/null; then
	"$CTL" completion fish >"$T/c.fish"
	check "fish reads its script: logs completes jobs, not files; submit files" \
		bash -c "fish -n '$T/c.fish' && grep -q \"from logs' -a '(__vkinrctl_ids)'\" '$T/c.fish' &&
			! grep -q \"from logs' -F\" '$T/c.fish' && grep -q \"from submit' -F\" '$T/c.fish' &&
			grep -q \"from submit' -l epochs -r\" '$T/c.fish'"
else
	skip "no fish"
fi
stop_daemon
tap_done
