#!/bin/bash
# 11_fit_no_clobber.sh - `vkinrd --fit` never destroys a file and never
# loses a run, on real files (issues 31 and 36):
#   - an input, an existing --model, --recon or a second --out run's
#     results are refused (exit 3, the file named, nothing written) and
#     replaced only with --force;
#   - SIGINT at an epoch of a long fit leaves the model and the
#     reconstruction and says so (exit 130); SIGTERM with no output named
#     leaves a checkpoint that --resume continues (exit 143); a second
#     signal ends it at once;
#   - a link planted in OUT is never followed, a folder others can write
#     to (/tmp-like) or own is refused, a file of another user's is never
#     replaced (those as root, with the user nobody; skipped otherwise);
#   - a FIFO named like an image is skipped, never waited on (timeout);
#   - --fit-task does not write through a link planted as OUT/NAME;
#   - the daemon's --log refuses a link, a FIFO, a shared folder, at start
#     and on SIGHUP.
. "$(dirname "$0")/lib.bash"
tap_plan 16
need_device

IN=$T/in
OUT=$T/out
mkdir "$IN"
"$MKSAMPLE" "$IN/a.png" 16 16 3 >/dev/null
"$MKSAMPLE" "$IN/b.png" 16 12 4 >/dev/null
cp "$IN/a.png" "$T/a.orig"
cp "$IN/b.png" "$T/b.orig"
FIT=("$VKINRD" --fit --width 16 --epochs 3 -q)
cd "$T" || exit 1

check "--recon over the input is refused (exit 3, named), and replaces it with --force" bash -c '
	cp "'$T'/a.orig" x.png
	"'$VKINRD'" --fit x.png --width 16 --epochs 3 -q --recon x.png 2>err; rc=$?
	[ $rc = 3 ] && grep -q "x.png exists already; add --force" err && cmp -s x.png "'$T'/a.orig" &&
	"'$VKINRD'" --fit x.png --width 16 --epochs 3 -q --recon x.png --force &&
	! cmp -s x.png "'$T'/a.orig"'

check "an existing --model or --recon is refused and nothing is written" bash -c '
	echo keep >m.safetensors; echo keep >r.png
	"'$VKINRD'" --fit in/a.png --width 16 --epochs 3 -q --model m.safetensors --recon new.png 2>err; rc1=$?
	"'$VKINRD'" --fit in/a.png --width 16 --epochs 3 -q --model new.safetensors --recon r.png 2>>err; rc2=$?
	cat err; [ $rc1 = 3 ] && [ $rc2 = 3 ] && grep -q "m.safetensors exists already" err &&
	grep -q "r.png exists already" err && [ "$(cat m.safetensors r.png)" = "keep
keep" ] && [ ! -e new.png ] && [ ! -e new.safetensors ]'

check "--fit DIR --out DIR: the photos are refused, left as they were" bash -c '
	"'$VKINRD'" --fit in --out in --width 16 --epochs 3 -q 2>err; rc=$?
	cat err; [ $rc = 3 ] && grep -q "in/a.png exists already" err &&
	cmp -s in/a.png "'$T'/a.orig" && cmp -s in/b.png "'$T'/b.orig" && ! ls in/*.safetensors 2>/dev/null'

check "a second --out run is refused; --force replaces its results" bash -c '
	"'$VKINRD'" --fit in --out out --width 16 --epochs 3 -q && cp out/a.png first.png &&
	"'$VKINRD'" --fit in --out out --width 16 --epochs 5 -q 2>err; rc=$?
	cat err; [ $rc = 3 ] && cmp -s out/a.png first.png &&
	"'$VKINRD'" --fit in --out out --width 16 --epochs 5 -q --force && ! cmp -s out/a.png first.png'

# waits until the --json output of a fit in the background passes epoch $2
past_epoch() {
	for _ in $(seq 600); do
		[ "$(tail -1 "$1" 2>/dev/null | sed -n 's/^{"epoch":\([0-9]*\),.*/\1/p')" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

sigint_run() {
	"$VKINRD" --fit in/a.png --width 16 --epochs 1000000 --json \
		--model int.safetensors --recon int.png >int.json 2>int.err &
	local pid=$! rc
	past_epoch int.json 20 || { kill -9 $pid; return 1; }
	kill -INT $pid
	wait $pid
	rc=$?
	cat int.err
	local last
	last=$(tail -1 int.json | sed -n 's/^{"epoch":\([0-9]*\),.*/\1/p')
	[ $rc = 130 ] && [ -s int.safetensors ] &&
		head -c 8 int.png | od -An -tx1 | grep -q "89 50 4e 47" &&
		grep -q "SIGINT at epoch $last of 1000000: stopped; wrote the model int.safetensors and the reconstruction int.png" int.err
}
check "SIGINT at an epoch: the model and reconstruction so far, said (exit 130)" sigint_run

sigterm_run() (
	mkdir -p here && cd here || return 1
	"$VKINRD" --fit ../in/a.png --width 16 --epochs 1000000 --json >t.json 2>t.err &
	local pid=$! rc
	past_epoch t.json 10 || { kill -9 $pid; return 1; }
	kill -TERM $pid
	wait $pid
	rc=$?
	cat t.err
	local last
	last=$(tail -1 t.json | sed -n 's/^{"epoch":\([0-9]*\),.*/\1/p')
	[ $rc = 143 ] && grep -q "SIGTERM at epoch $last of 1000000: stopped; wrote the checkpoint a.checkpoint.safetensors (continue with vkinrd --fit ../in/a.png --resume a.checkpoint.safetensors)" t.err &&
		"$VKINRD" --fit ../in/a.png --resume a.checkpoint.safetensors --epochs $((last + 2)) --json -q >r.json &&
		[ "$(head -1 r.json | sed -n 's/^{"epoch":\([0-9]*\),.*/\1/p')" = $((last + 1)) ] || return 1
	# stopped again: the first checkpoint stays, the new one beside it
	cp a.checkpoint.safetensors first.ck
	"$VKINRD" --fit ../in/a.png --width 16 --epochs 1000000 --json >t2.json 2>t2.err &
	pid=$!
	past_epoch t2.json 3 || { kill -9 $pid; return 1; }
	kill -TERM $pid
	wait $pid
	cat t2.err
	cmp -s first.ck a.checkpoint.safetensors && [ -s a.checkpoint-2.safetensors ] &&
		grep -q "wrote the checkpoint a.checkpoint-2.safetensors" t2.err
)
check "SIGTERM with no output named: a checkpoint here that --resume continues (exit 143)" sigterm_run

many_run() {
	"$VKINRD" --fit in --out sigout --width 16 --epochs 1000000 2>many.err &
	local pid=$! rc
	for _ in $(seq 600); do grep -q "packs of up to" many.err && break; sleep 0.05; done
	sleep 1
	kill -INT $pid
	wait $pid
	rc=$?
	cat many.err
	[ $rc = 130 ] && grep -q "SIGINT: stopped; the 2 fit(s) in training write their best so far, 0 image(s) not begun" many.err &&
		[ -s sigout/a.png ] && [ -s sigout/b.safetensors ]
}
check "SIGINT with --out: the fits in training write their outputs (exit 130)" many_run

# Both signals wait while it is stopped and come one after the other as
# it goes on, before any epoch ends (either may come first: the threads
# of the driver take signals too).
twice_run() {
	"$VKINRD" --fit in/a.png --width 16 --epochs 1000000 --json \
		--model twice.safetensors >twice.json 2>twice.err &
	local pid=$! rc
	past_epoch twice.json 5 || { kill -9 $pid; return 1; }
	kill -STOP $pid
	kill -INT $pid
	kill -TERM $pid
	kill -CONT $pid
	wait $pid
	rc=$?
	cat twice.err
	echo "exit status $rc"
	grep -q "stopping at the end of this epoch" twice.err &&
		{ [ $rc = 130 ] || [ $rc = 143 ]; } &&
		! grep -q "stopped; wrote" twice.err && [ ! -e twice.safetensors ]
}
check "a second signal ends it at once" twice_run

planted_link() {
	mkdir -p lnk && echo victim >victim && ln -sf "$T/victim" lnk/a.png
	"$VKINRD" --fit in/a.png --out lnk --width 16 --epochs 3 -q 2>err
	local rc=$?
	cat err
	[ $rc = 3 ] && [ "$(cat victim)" = victim ] &&
		"$VKINRD" --fit in/a.png --out lnk --width 16 --epochs 3 -q --force &&
		[ "$(cat victim)" = victim ] && [ ! -L lnk/a.png ] && [ -f lnk/a.png ]
}
check "a link planted in OUT is not followed, even with --force (the link is replaced)" planted_link

fifo_run() {
	mkdir -p ff && cp in/a.png ff/ && mkfifo ff/c.png ff/d.jpg
	timeout 60 "$VKINRD" --fit ff --out ffout --width 16 --epochs 3 -q 2>err
	local rc=$?
	cat err
	[ $rc = 0 ] && grep -q "ff/c.png: skipped: it is a FIFO" err && grep -q "ff/d.jpg: skipped" err &&
		[ -s ffout/a.png ] && [ ! -e ffout/c.png ] &&
		{ timeout 60 "$VKINRD" --fit ff/c.png --width 16 --epochs 3 -q 2>err; rc=$?; cat err; [ $rc = 1 ]; } &&
		grep -q "ff/c.png: it is a FIFO, not a file" err &&
		{ timeout 60 "$VKINRD" --fit in/a.png --resume ff/c.png -q 2>err; rc=$?; cat err; [ $rc = 1 ]; }
}
check "a FIFO named like an image is skipped or refused, never waited on" fifo_run

log_refusals() {
	mkdir -p lg && ln -sf "$T/victim2" lg/link.log && mkfifo lg/fifo.log
	mkdir -p shared && chmod 1777 shared
	local f ok=0
	for f in lg/link.log lg/fifo.log shared/d.log; do
		timeout 30 "$VKINRD" --socket "$T/lsock" --state-dir "$T/lstate" --log "$f" 2>err
		[ $? = 1 ] && grep -q "cannot open the log file: .*\(link\|FIFO\|other users can write\)" err || ok=1
		cat err
	done
	[ $ok = 0 ] && [ ! -e "$T/victim2" ] && [ ! -e "$T/lsock" ]
}
check "--log: a link, a FIFO, a folder others can write to are refused" log_refusals

log_hangup() {
	start_daemon --log "$T/lg/d.log" || return 1
	for _ in $(seq 100); do grep -q "ready on" lg/d.log 2>/dev/null && break; sleep 0.1; done
	mv lg/d.log lg/d.log.1 && ln -s "$T/victim3" lg/d.log && kill -HUP "$DPID"
	for _ in $(seq 100); do grep -q "SIGHUP: cannot open the log file again" lg/d.log.1 && break; sleep 0.1; done
	stop_daemon
	cat lg/d.log.1
	grep -q "SIGHUP: cannot open the log file again (.*lg/d.log: it is a symbolic link)" lg/d.log.1 &&
		[ ! -e "$T/victim3" ]
}
check "--log on SIGHUP: a link put in its place is refused, the old file kept" log_hangup

task_link() {
	mkdir -p task/out task/victim && ln -s "$T/task/victim" task/out/a &&
		printf 'a\t%s\nb\t%s\n' "$T/in/a.png" "$T/in/b.png" >task/list || return 1
	"$VKINRD" --fit-task task/list --out task/out --allow-cpu --width 16 --epochs 3 -q 2>err
	local rc=$?
	cat err
	[ $rc = 1 ] && grep -q "task/out/a: not a folder" err && [ -z "$(ls task/victim)" ] &&
		[ -s task/out/b/result.json ]
}
check "--fit-task: a link planted as OUT/NAME is not written through, the others go on" task_link

# Another user: nobody, as root only.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
	chmod 0711 "$T"
	check "a folder others can write to (sticky, /tmp-like) is refused; one's own below it is fine" bash -c '
		mkdir -p drop && chmod 1777 drop
		"'$VKINRD'" --fit in/a.png --width 16 --epochs 3 -q --recon drop/r.png 2>err; rc=$?
		cat err; [ $rc = 3 ] && grep -q "refusing to write in drop: other users can write" err && [ ! -e drop/r.png ] &&
		mkdir drop/mine && "'$VKINRD'" --fit in/a.png --width 16 --epochs 3 -q --recon drop/mine/r.png && [ -s drop/mine/r.png ]'
	check "a folder of another user is refused" bash -c '
		mkdir -p theirs && chown nobody theirs
		"'$VKINRD'" --fit in --out theirs --width 16 --epochs 3 -q 2>err; rc=$?
		cat err; [ $rc = 3 ] && grep -q "refusing to write in theirs: it belongs to another user" err && [ -z "$(ls theirs)" ]'
	other_link() {
		mkdir -p open && chmod 0777 open && echo third >third && chmod 0666 third
		"${AS_NOBODY[@]}" ln -s "$T/third" open/a.png &&
			"${AS_NOBODY[@]}" ln -s "$T/third" open/a.safetensors || return 1
		"$VKINRD" --fit in/a.png --out open --width 16 --epochs 3 -q --force 2>err
		local rc=$?
		cat err
		[ $rc = 3 ] && grep -q "refusing to replace open/a.safetensors: it belongs to another user" err &&
			[ "$(cat third)" = third ] && [ -L open/a.png ]
	}
	check "links of another user in OUT: not followed, not replaced even with --force" other_link
else
	skip "another user's files need root (setpriv --reuid=nobody)"
	skip "another user's files need root (setpriv --reuid=nobody)"
	skip "another user's files need root (setpriv --reuid=nobody)"
fi
tap_done
