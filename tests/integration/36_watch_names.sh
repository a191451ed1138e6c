#!/bin/bash
# 36_watch_names.sh - long job names in `vkinrctl watch`'s live view, read
# off a real terminal (tmux): a folder submitted with -r gives names such
# as holidays-2024-summer/beach-at-dawn-001 (38 columns) beside "cat".
#   - at 132 columns every name is shown whole, in one column as wide as
#     the widest, with no ellipsis;
#   - at 80 columns the long names are cut around an ellipsis, keeping
#     their ends, so the two that differ only in their last digits stay
#     apart; "cat" is whole; no line is wider than the terminal, and each
#     still shows its state and epochs.
# Skipped without tmux.
. "$(dirname "$0")/lib.bash"
tap_plan 4
if ! command -v tmux >/dev/null; then
	for i in $(seq 1 4); do echo "ok $i # SKIP tmux is not installed (tests/deps.sh)"; done
	exit 0
fi
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export TMUX_TMPDIR=$T   # a private tmux server, gone with $T
trap 'tmux kill-server 2>/dev/null; cleanup' EXIT
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"], LANG="C.UTF-8")
lib = os.path.join(T, "lib")
long_dir = os.path.join(lib, "holidays-2024-summer")
os.makedirs(long_dir)
for i, path in enumerate([os.path.join(long_dir, "beach-at-dawn-001.png"),
                          os.path.join(long_dir, "beach-at-dawn-002.png"),
                          os.path.join(lib, "cat.png")]):
    subprocess.run([os.environ["MKSAMPLE"], path, "16", "16", str(i + 1)], check=True,
                   stdout=subprocess.DEVNULL)
r = ctl("submit", "-r", lib, "-q", "--epochs", "100000", "--width", "16")
ids, batch = r.stdout.split()[:-2], r.stdout.split()[-1]
ctl("pause", batch)
names = {"holidays-2024-summer/beach-at-dawn-001", "holidays-2024-summer/beach-at-dawn-002", "cat"}
c = Client()

def tmux(*args):
    return subprocess.run(["tmux"] + list(args), env=ENV, capture_output=True,
                          text=True, timeout=30).stdout

def view(cols):
    # a loaded machine may leave a new tmux pane blank: a second session
    # then, 30 s each
    for attempt in range(2):
        s = "w%d-%d" % (cols, attempt)
        tmux("-u", "new-session", "-d", "-s", s, "-x", str(cols), "-y", "24",
             "%s watch %s; sleep 120" % (CTL, batch))
        end, rows = time.time() + 30, []
        while time.time() < end:
            pane = tmux("capture-pane", "-p", "-t", s).split("\n")
            rows = [l for l in pane if l.split()[:1] and l.split()[0] in ids]
            if len(rows) == 3 and all("paused" in l for l in rows):
                break
            time.sleep(0.3)
        tmux("kill-session", "-t", s)
        if rows:
            break
    print("# %d columns:\n# %s" % (cols, "\n# ".join(rows)))
    return rows

wide = view(132)
tap.ok(len(wide) == 3 and all(any(n in l for l in wide) for n in names)
       and not any("\u2026" in l for l in wide),
       "132 columns: every name whole, no ellipsis", wide)
starts = {l.index(l.split()[2]) for l in wide if len(l.split()) > 2}
tap.ok(len(starts) == 1, "the names take one column as wide as the widest: the "
       "states line up", wide)

narrow = view(80)
cut = [l for l in narrow if "\u2026" in l]
tap.ok(len(narrow) == 3 and len(cut) == 2
       and any("dawn-001" in l for l in cut) and any("dawn-002" in l for l in cut)
       and any(l.split()[1] == "cat" for l in narrow),
       "80 columns: the long names cut around an ellipsis, their ends kept apart; "
       "cat whole", narrow)
tap.ok(all(len(l) <= 80 and "paused" in l and "/100000" in l for l in narrow),
       "no line wider than 80 columns, each with its state and epochs", narrow)
ctl("cancel", batch)
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
