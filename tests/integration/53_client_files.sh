#!/usr/bin/env bash
# 53_client_files.sh - what vkinrctl prints and writes is safe, against
# tests/integration/fake_daemon.py (which, unlike vkinrd, keeps any name):
# a job name and an error holding terminal escapes are printed escaped by list, show, watch, wait and the error path;
# export into the folder the images came from leaves them alone; no file
# is written over an existing one, through a planted link or into a FIFO
# unless --force, and --force replaces the link, not its target. An export
# to /dev/full, into a FIFO, into a missing folder or (as root, on a small
# tmpfs) onto a full disk fails at once with exit 3 and a message naming
# the path and the cause, leaving nothing behind. Prints TAP.
#
#   tests/integration/53_client_files.sh [BUILD_DIR]   (default: build)
set -u
B=${1:-${VKINR_BUILD:-${B:-build}}}
CTL=${VKINRCTL:-$B/vkinrctl}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
FAKE_PID=
trap '[ -n "$FAKE_PID" ] && kill $FAKE_PID 2>/dev/null; rm -rf "$T"' EXIT

. "$(dirname "$0")/client_tap.bash"
# no ESC, BEL, CSI (C2 9B) or byte that is not UTF-8 in FILE
clean() { python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
b.decode("utf-8")
assert not any(c in b for c in (b"\x1b", b"\x07", b"\xc2\x9b")), b
' "$1"; }
export -f clean

TOTAL=26
echo "1..$TOTAL"
if [ ! -x "$CTL" ]; then
	for i in $(seq $TOTAL); do echo "ok $i # SKIP $CTL not built"; done
	exit 0
fi

start_fake --epoch-ms 5
HERE=$HERE python3 -c '
import os, sys
sys.path.insert(0, os.environ["HERE"])
import fake_daemon as f
t = sys.argv[1]
os.makedirs(t + "/src")
for i, name in enumerate(["camera", "coins"]):
    open("%s/src/%s.png" % (t, name), "wb").write(f.tiny_png(4 + i, 4))
' "$T"
( cd "$T/src" && sha256sum ./*.png >"$T/src.sums" )

# ---- terminal escapes (issue 10, item 1) ----
EVIL=$(printf 'x\033]0;pwned\007\033[2J\xc2\x9b31m')
check "vkinrctl itself refuses such a name: exit 2" rc_is 2 "$CTL" submit --name "$EVIL" "$T/src/camera.png"
# as another user's client might send it
ID=$(HERE=$HERE python3 -c '
import base64, json, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["VKINR_SOCKET"])
png = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "job.submit",
    "params": {"image": {"png": png}, "epochs": 5, "name": sys.argv[2]}}) + "\n").encode())
print(json.loads(s.makefile().readline())["result"]["job"])
' "$T/src/camera.png" "$EVIL")
"$CTL" wait "$ID" >/dev/null 2>&1
check "list escapes another user's name" bash -c '"$1" list --format id,name >"$2/o" && clean "$2/o" && grep -qF "x\\x1b]0;pwned\\x07" "$2/o"' _ "$CTL" "$T"
check "show escapes it" bash -c '"$1" show "$2" >"$3/o" && clean "$3/o" && grep -qF "\\x1b[2J" "$3/o"' _ "$CTL" "$ID" "$T"
check "watch escapes it" bash -c '"$1" watch "$2" >"$3/o" 2>&1 && clean "$3/o" && grep -qF "\\x9b31m" "$3/o"' _ "$CTL" "$ID" "$T"
check "an error that echoes a job id is escaped" bash -c '! "$1" show "$2" >"$3/o" 2>&1; clean "$3/o"' _ "$CTL" "$EVIL" "$T"
check "--json keeps the name exact (JSON escapes it)" bash -c '"$1" --json show "$2" | python3 -c "import json,sys; assert json.load(sys.stdin)[\"name\"].startswith(\"x\x1b]0;\")"' _ "$CTL" "$ID"

# ---- export into the source folder (issue 11, item 1) ----
JSON=$("$CTL" --json submit --epochs 5 "$T/src")
BATCH=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["batch"])' "$JSON")
"$CTL" wait "$BATCH" >/dev/null 2>&1
check "export BATCH --dir SOURCE: exit 0" rc_is 0 "$CTL" export "$BATCH" --dir "$T/src"
check "the source images are untouched" bash -c 'cd "$1/src" && sha256sum -c --quiet "$1/src.sums"' _ "$T"
check "the reconstructions are NAME.recon.png" bash -c '[ -s "$1/src/camera.recon.png" ] && [ -s "$1/src/coins.recon.png" ] && [ -s "$1/src/coins.safetensors" ]' _ "$T"
check "exporting again without --force: exit 3, nothing replaced" bash -c 'touch -d 2001-01-01 "$2/src/coins.recon.png"; ! "$1" export "$3" --dir "$2/src" 2>"$2/e" && grep -q "exists already; add --force" "$2/e" && [ "$(stat -c %Y "$2/src/coins.recon.png")" = 978307200 ]' _ "$CTL" "$T" "$BATCH"
check "with --force: exit 0, replaced" bash -c '"$1" export "$3" --dir "$2/src" --force >/dev/null && [ "$(stat -c %Y "$2/src/coins.recon.png")" != 978307200 ] && cd "$2/src" && sha256sum -c --quiet "$2/src.sums"' _ "$CTL" "$T" "$BATCH"

# ---- planted links and special files (issue 10, item 2) ----
mkdir "$T/shared"
echo "precious" >"$T/victim"
ln -s "$T/victim" "$T/shared/m.safetensors"
ln -s "$T/nowhere" "$T/shared/dangling.png"
mkfifo "$T/shared/fifo.png"
check "export through a planted link: refused, exit 3" rc_is 3 "$CTL" export "$ID" --model "$T/shared/m.safetensors" --recon "$T/shared/r.png"
check "the link's target is untouched, nothing else written" bash -c '[ "$(cat "$1/victim")" = precious ] && [ ! -e "$1/shared/r.png" ]' _ "$T"
check "a dangling link is refused too" rc_is 3 "$CTL" export "$ID" --model "$T/shared/new.safetensors" --recon "$T/shared/dangling.png"
check "the dangling link still points nowhere" bash -c '[ -L "$1/shared/dangling.png" ] && [ ! -e "$1/nowhere" ]' _ "$T"
check "--force replaces the link itself, not its target" bash -c '"$1" export "$2" --force --model "$3/shared/m.safetensors" --recon "$3/shared/r.png" >/dev/null && [ ! -L "$3/shared/m.safetensors" ] && [ -s "$3/shared/m.safetensors" ] && [ "$(cat "$3/victim")" = precious ]' _ "$CTL" "$ID" "$T"
check "into a FIFO, even with --force: exit 3" bash -c 'timeout 10 "$1" infer "$2/src/coins.safetensors" -o "$2/shared/fifo.png" --force >/dev/null 2>&1; [ $? = 3 ] && [ -p "$2/shared/fifo.png" ]' _ "$CTL" "$T"
check "infer -o over a file without --force: exit 3" bash -c 'echo keep >"$2/keep.png"; ! "$1" infer "$2/src/coins.safetensors" -o "$2/keep.png" 2>/dev/null && [ "$(cat "$2/keep.png")" = keep ]' _ "$CTL" "$T"
check "no temporary file is left behind" bash -c '! ls -A "$1/shared" "$1/src" | grep -q "\.tmp$"' _ "$T"
check "a new file takes the umask" bash -c '(umask 077 && "$1" export "$2" --model "$3/u.safetensors" --recon "$3/u.png" >/dev/null) && [ "$(stat -c %a "$3/u.png")" = 600 ]' _ "$CTL" "$ID" "$T"

# ---- clear errors for client writes (issue 10, item 14) ----
# fails-with PATTERN CMD...: exit 3 within 10 s, stderr matching PATTERN
fails_with() {
	local pat=$1; shift
	rc_is 3 timeout 10 "$@" && grep -qE "$pat" "$T/err" || { sed 's/^/#   /' "$T/err"; return 1; }
}
export -f fails_with rc_is
export T
mkdir "$T/w"
check "export --model /dev/full: exit 3, names it (exists already)" \
	fails_with "/dev/full exists already; add --force" "$CTL" export "$ID" --model /dev/full --recon "$T/w/r.png"
check "with --force: exit 3, names it (a special file), nothing written" bash -c 'fails_with "cannot write /dev/full: it is a special file" "$1" export "$2" --force --model "$3/w/m.safetensors" --recon /dev/full && [ -z "$(ls -A "$3/w")" ]' _ "$CTL" "$ID" "$T"
check "export --force --model FIFO: exit 3 at once, the FIFO left as it was" bash -c 'fails_with "cannot write $3/shared/fifo.png: it is a special file" "$1" export "$2" --force --model "$3/shared/fifo.png" --recon "$3/w/r.png" && [ -p "$3/shared/fifo.png" ] && [ -z "$(ls -A "$3/w")" ]' _ "$CTL" "$ID" "$T"
check "export --dir in a missing folder: exit 3, names it and the cause" bash -c 'fails_with "cannot create the folder $3/w/no/such: No such file or directory" "$1" export "$2" --dir "$3/w/no/such" && [ -z "$(ls -A "$3/w")" ]' _ "$CTL" "$ID" "$T"
check "export --recon into a missing folder: exit 3 before anything is written" bash -c 'fails_with "cannot write $3/w/none/r.png: the folder $3/w/none: No such file or directory" "$1" export "$2" --model "$3/w/m.safetensors" --recon "$3/w/none/r.png" && [ -z "$(ls -A "$3/w")" ]' _ "$CTL" "$ID" "$T"
# a full disk between the two files: one page free for the model, none for
# the reconstruction; the model written is taken back
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k tmpfs "$T/w" 2>/dev/null; then
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
try:
    while True: os.write(fd, b"x" * 4096)
except OSError: pass
os.ftruncate(fd, os.fstat(fd).st_size - 4096); os.close(fd)' "$T/w/filler"
	check "a disk full at the second file: exit 3 naming it and the cause, the first taken back" bash -c 'fails_with "cannot write $3/w/r.png: no space left on device" "$1" export "$2" --model "$3/w/m.safetensors" --recon "$3/w/r.png"; rc=$?; ls -A "$3/w" | grep -v "^filler$" | sed "s/^/#   left: /"; [ $rc = 0 ] && [ "$(ls -A "$3/w")" = filler ]' _ "$CTL" "$ID" "$T"
	umount "$T/w"
else
	n=$((n + 1)); echo "ok $n # SKIP a disk full at the second file: needs root to mount a tmpfs"
fi

[ "$n" -eq "$TOTAL" ] || { echo "# ran $n checks, planned $TOTAL"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
