#!/bin/bash
# 69b_slurm_quoting.sh - no user text can add a line or a field to the
# batch script of `vkinrctl submit --slurm` or to its manifest, tried
# against the shells that read them, without a Slurm cluster: sbatch,
# srun, scontrol and vkinrd are stubs on PATH that record their argv
# (NUL-separated), the script is run with bash as a task would run it,
# and its #SBATCH lines are read as sbatch reads them (a copy of its
# parser below). For hostile names of OUT, of the dataset folder, of the
# image files, of --vkinrd's folder and in --sbatch's values (spaces,
# quotes, $(...), backticks, ';', globs, leading dashes, '%', '#',
# unicode...) every argument arrives whole and no injected command runs.
# What no quoting makes safe is refused, naming the value: a control
# character (newline, tab, CR, DEL...) in --out, --vkinrd, --sbatch,
# --setup, --name or the folder it starts in (exit 2, nothing written),
# or in an image's path (that image left out, exit 3); training options
# longer than the script holds are refused, not cut short; vkinrd --fit-task
# refuses such a manifest line. Also: the task runs in an srun step
# (none when the script runs by hand), the shell passes USR1 and TERM on
# as USR1 and requeues only after the warning, the job is named after
# the dataset folder (--name, then --sbatch --job-name, override it), and
# --dry-run warns when vkinrd is neither on PATH nor where --vkinrd says.
. "$(dirname "$0")/lib.bash"
tap_plan 9
CTL=$BUILD/vkinrctl
export CTL T MKSAMPLE VKINRD BUILD

mkdir -p "$T/stubs" "$T/rec" "$T/cwd"
# the stubs: each records its argv in $REC/NAME.argv
cat >"$T/stubs/sbatch" <<'EOF'
#!/bin/bash
printf '%s\0' "$@" >"$REC/sbatch.argv"
echo 4242
EOF
cat >"$T/stubs/srun" <<'EOF'
#!/bin/bash
printf '%s\0' "$@" >"$REC/srun.argv"
while [[ $1 == --* ]]; do shift; done
exec "$@"
EOF
cat >"$T/stubs/scontrol" <<'EOF'
#!/bin/bash
printf '%s\0' "$@" >"$REC/scontrol.argv"
EOF
cat >"$T/vkinrd-stub" <<'EOF'
#!/bin/bash
printf '%s\0' "$@" >"$REC/vkinrd.argv"
cp -- "$2" "$REC/shard.tsv"
if [ -n "${STUB_WAIT:-}" ]; then
	trap 'echo USR1 >>"$REC/signals"; exit 75' USR1
	trap 'echo TERM >>"$REC/signals"; exit 75' TERM
	: >"$REC/ready"
	while :; do sleep 0.05; done
fi
exit 0
EOF
mkdir -p "$T/withvk"
cp "$T/vkinrd-stub" "$T/withvk/vkinrd"
chmod +x "$T"/stubs/* "$T/vkinrd-stub" "$T/withvk/vkinrd"
"$MKSAMPLE" "$T/sample.png" 16 16 3 >/dev/null

cat >"$T/harness.py" <<'PY'
import os, re, shlex, shutil, signal, subprocess, sys, time

T = os.environ["T"]
CTL = os.environ["CTL"]
STUBS = T + "/stubs"
REC = T + "/rec"
PWNED = "PWNED"  # what every injected command would create
BASE_ENV = dict(os.environ, REC=REC)
for k in list(BASE_ENV):
    if k.startswith("SLURM_"):
        del BASE_ENV[k]

HOSTILE = [
    "with space", "it's", 'say "hi"', "$(touch PWNED)", "`touch PWNED`",
    "a;touch PWNED", "a&&touch PWNED", "a|touch PWNED", "*", "?[ab]",
    "-rf", "--out", "\u00e9t\u00e9 \u65e5\u672c", "100%", "%A_%a", "#hash",
    "x #y", "back\\slash", "{a,b}", "~root", "<in>out", "!bang", "$HOME",
    "${x:-y}", "a'b\"c$(touch PWNED)`touch PWNED`\\d", "'", '"', "\\",
]


def fail(*what):
    print(*what, file=sys.stderr)
    sys.exit(1)


def ctl(args, path_dirs=(STUBS,), cwd=T + "/cwd", env=None):
    e = dict(BASE_ENV, **(env or {}))
    e["PATH"] = ":".join(list(path_dirs) + ["/usr/bin", "/bin"])
    return subprocess.run([CTL] + args, capture_output=True, cwd=cwd,
                          env=e, text=True, errors="surrogateescape")


def argv(name):
    with open(os.path.join(REC, name + ".argv"), "rb") as f:
        data = f.read()
    assert data.endswith(b"\0") or not data, data
    return [a.decode("utf-8", "surrogateescape") for a in data.split(b"\0")[:-1]]


def clear_rec():
    shutil.rmtree(REC)
    os.mkdir(REC)


def sbatch_args(script):
    """The arguments sbatch takes from the script's #SBATCH lines, as its
    own parser (src/sbatch/opt.c, _get_argument) splits them: blanks
    between words, '...' and "..." quote, a backslash escapes any
    character, an unquoted '#' starts a comment; the first line that is
    neither a comment nor blank ends them."""
    args = []
    for line in script.split("\n"):
        if not line.startswith("#SBATCH"):
            if line.strip() and not line.lstrip().startswith("#"):
                break
            continue
        rest, i = line[len("#SBATCH"):], 0
        while True:
            while i < len(rest) and rest[i].isspace():
                i += 1
            if i >= len(rest):
                break
            arg, quote, escape = [], None, False
            while i < len(rest) and (quote or not rest[i].isspace()):
                c = rest[i]
                if escape:
                    escape = False
                elif c == "\\":
                    escape, i = True, i + 1
                    continue
                elif quote:
                    if c == quote:
                        quote, i = None, i + 1
                        continue
                elif c in "\"'":
                    quote, i = c, i + 1
                    continue
                elif c == "#":
                    i = len(rest)
                    break
                arg.append(c)
                i += 1
            if quote:
                fail("sbatch: unmatched quote in", repr(line))
            if arg:
                args.append("".join(arg))
    return args


def option(args, name):
    """The last value of --name=VALUE among sbatch's arguments."""
    vals = [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]
    return vals[-1] if vals else None


def no_pwned():
    for root, dirs, files in os.walk(T):
        if PWNED in files or PWNED in dirs:
            fail("an injected command ran:", os.path.join(root, PWNED))


def run_script(script, env, cwd=T + "/cwd", path_dirs=(STUBS,)):
    e = dict(BASE_ENV, PATH=":".join(list(path_dirs) + ["/usr/bin", "/bin"]),
             **env)
    return subprocess.run(["bash", script], capture_output=True, text=True,
                          cwd=cwd, env=e)


TASK_ENV = {"SLURM_JOB_ID": "4243", "SLURM_ARRAY_JOB_ID": "4242",
            "SLURM_ARRAY_TASK_ID": "0", "SLURM_CPUS_PER_TASK": "2"}


def harness_sees_injection():
    """The harness itself: a script with an injected line is caught."""
    bad = T + "/selftest.sbatch"
    with open(bad, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --output=/x\ntouch PWNED\n"
                "#SBATCH --job-name=late\n")
    run_script(bad, {})
    if option(sbatch_args(open(bad).read()), "--job-name") is not None or \
            not os.path.exists(T + "/cwd/" + PWNED):
        fail("the harness misses an injected line")
    os.remove(T + "/cwd/" + PWNED)


def hostile():
    """Every hostile name as OUT, dataset folder, image file, --vkinrd's
    folder and --sbatch value: submitted, the script run as task 0."""
    harness_sees_injection()
    fit = ["--epochs", "3", "--width", "16", "--lr", "0.002"]
    for k, n in enumerate(HOSTILE):
        clear_rec()
        out = os.path.join(T, "out%d" % k, n, "res")
        data = os.path.join(T, "data%d" % k, n)
        os.makedirs(data)
        images = [os.path.join(data, n + ".png"), os.path.join(data, "b.png")]
        for p in images:
            shutil.copy(T + "/sample.png", p)
        args = ["submit", "--slurm", "-q", "--out", out, "--allow-cpu",
                "--gpus-per-task", "0", "--sbatch",
                "--comment=" + shlex.quote(n) + " --qos " + shlex.quote(n)]
        args += fit + [data]
        vk = None
        if k % 2:  # --vkinrd in a folder of that name, else from PATH
            vkdir = os.path.join(T, "vk%d" % k, n)
            os.makedirs(vkdir)
            vk = os.path.join(vkdir, "vkinrd")
            shutil.copy(T + "/vkinrd-stub", vk)
            args += ["--vkinrd", vk]
        else:
            os.makedirs(os.path.join(T, "pathvk"), exist_ok=True)
            shutil.copy(T + "/vkinrd-stub", T + "/pathvk/vkinrd")
        r = ctl(args, path_dirs=(STUBS, T + "/pathvk"))
        if r.returncode != 0 or r.stdout != "4242\n":
            fail(repr(n), "submit:", r.returncode, r.stdout, r.stderr)
        script = os.path.join(out, ".vkinr", "fit.sbatch")
        if argv("sbatch") != ["--parsable", script]:
            fail(repr(n), "sbatch argv", argv("sbatch"))
        text = open(script, encoding="utf-8", errors="surrogateescape").read()
        sb = sbatch_args(text)
        want_out = out.replace("%", "%%") + "/logs/%A_%a.log"
        if option(sb, "--output") != want_out:
            fail(repr(n), "--output", option(sb, "--output"), want_out, sb)
        if option(sb, "--comment") != n or sb[-2:] != ["--qos", n]:
            fail(repr(n), "--sbatch's words", sb)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*",
                            option(sb, "--job-name") or ""):
            fail(repr(n), "job name", option(sb, "--job-name"))
        if subprocess.run(["bash", "-n", script]).returncode:
            fail(repr(n), "bash -n")
        # the manifest: two fields a line, the paths whole
        lines = open(os.path.join(out, ".vkinr", "images.tsv"),
                     encoding="utf-8", errors="surrogateescape").read()
        rows = [l.split("\t") for l in lines.splitlines()]
        if any(len(r) != 2 for r in rows) or \
                sorted(r[1] for r in rows) != sorted(images):
            fail(repr(n), "manifest", rows)
        for name, _ in rows:
            if not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*", name):
                fail(repr(n), "manifest name", name)
        r = run_script(script, TASK_ENV, path_dirs=(STUBS, T + "/pathvk"))
        if r.returncode != 0:
            fail(repr(n), "script:", r.returncode, r.stdout, r.stderr)
        got = argv("vkinrd")
        want = ["--fit-task", os.path.join(out, ".vkinr/shards/0.tsv"),
                "--out", out] + fit + ["--allow-cpu"]
        if got != want:
            fail(repr(n), "vkinrd argv", got, want)
        srun = argv("srun")
        if srun[:3] != ["--ntasks=1", "--nodes=1", "--cpus-per-task=2"] or \
                srun[3] != (vk or T + "/pathvk/vkinrd") or srun[4:] != got:
            fail(repr(n), "srun argv", srun)
        if open(REC + "/shard.tsv").read().splitlines() != \
                lines.splitlines()[0::2]:
            fail(repr(n), "shard 0")
        no_pwned()
        print("ok:", repr(n))


def refused():
    """Control characters: refused with the value named, nothing written."""
    data = T + "/data-ok"
    os.makedirs(data, exist_ok=True)
    shutil.copy(T + "/sample.png", data + "/a.png")
    base = ["submit", "--slurm", "--allow-cpu", "--gpus-per-task", "0"]
    cases = [
        (["--out", T + "/r/a\ntouch PWNED"], "a\\ntouch PWNED"),
        (["--out", T + "/r/a\tb"], "a\\tb"),
        (["--out", T + "/r/a\rb"], "a\\rb"),
        (["--out", T + "/r/a\x01b"], "a\\x01b"),
        (["--out", T + "/r/a\x7fb"], "a\\x7fb"),
        (["--out", T + "/r/o", "--vkinrd", "/opt/x\ntouch PWNED"],
         "/opt/x\\ntouch PWNED"),
        (["--out", T + "/r/o", "--sbatch", "--comment='a\ntouch PWNED'"],
         "--comment=a\\ntouch PWNED"),
        (["--out", T + "/r/o", "--setup", "echo a\rtouch PWNED"],
         "echo a\\rtouch PWNED"),
        (["--out", T + "/r/o", "--name", "a\nb"], "--name must be"),
        # more than the script holds: refused, not cut short
        (["--out", T + "/r/o"] + ["--epochs", "5"] * 300,
         "the training options take more than"),
    ]
    for dry in ([], ["--dry-run"]):
        for extra, shown in cases:
            r = ctl(base + extra + dry + [data])
            if r.returncode != 2 or shown not in r.stderr or r.stdout:
                fail(extra, dry, r.returncode, r.stdout, r.stderr)
            if os.path.exists(T + "/r"):
                fail(extra, "wrote", os.listdir(T + "/r"))
    # a relative OUT from a folder whose name holds a newline
    odd = T + "/c\nd"
    os.makedirs(odd)
    r = ctl(base + ["--out", "rel", data], cwd=odd)
    if r.returncode != 2 or "c\\nd/rel" not in r.stderr or \
            os.path.exists(odd + "/rel"):
        fail("cwd", r.returncode, r.stderr)
    # a tab stays allowed in a --setup line (shell code)
    r = ctl(base + ["--out", T + "/r/o", "--dry-run", "--setup",
                    "echo\tready", data])
    if r.returncode != 0 or "\necho\tready\n" not in r.stdout:
        fail("setup tab", r.returncode, r.stderr)
    no_pwned()


def bad_images():
    """An image whose path holds a control character is left out."""
    data = T + "/data-bad"
    os.makedirs(data)
    for f in ["ok.png", "new\nline.png", "tab\there.png", "cr\r.png"]:
        shutil.copy(T + "/sample.png", os.path.join(data, f))
    out = T + "/out-bad"
    clear_rec()
    r = ctl(["submit", "--slurm", "-q", "--out", out, "--allow-cpu",
             "--gpus-per-task", "0", data])
    print(r.stderr)
    if r.returncode != 3 or r.stdout != "4242\n":
        fail("exit", r.returncode, r.stdout)
    for shown in ["new\\nline.png", "tab\\there.png", "cr\\r.png"]:
        if not re.search(re.escape(shown) + ": left out: a control", r.stderr):
            fail("not named:", shown)
    if "3 inputs were left out" not in r.stderr:
        fail("no summary")
    rows = open(out + "/.vkinr/images.tsv").read()
    if rows != "ok\t%s/ok.png\n" % data:
        fail("manifest", repr(rows))
    r = ctl(["--json", "submit", "--slurm", "--dry-run", "--out", out,
             "--allow-cpu", "--gpus-per-task", "0", data])
    if r.returncode != 3 or '"images":1' not in r.stdout or \
            '"missing":3' not in r.stdout:
        fail("dry-run json", r.returncode, r.stdout)


def traps_set(pid):
    """Whether the process catches USR1 and TERM (/proc: SigCgt)."""
    with open("/proc/%d/status" % pid) as f:
        mask = int(re.search(r"SigCgt:\s*([0-9a-f]+)", f.read()).group(1), 16)
    return all(mask >> (sig - 1) & 1 for sig in (signal.SIGUSR1,
                                                  signal.SIGTERM))


def steps_and_signals():
    """srun wraps the task in a job, not by hand; USR1 and TERM go on as
    USR1; only after the warning does the task requeue itself."""
    out = T + "/out-sig"
    r = ctl(["submit", "--slurm", "-q", "--out", out, "--allow-cpu",
             "--gpus-per-task", "0", "--vkinrd", T + "/vkinrd-stub",
             T + "/data-ok"])
    if r.returncode:
        fail("submit", r.stderr)
    script = out + "/.vkinr/fit.sbatch"
    clear_rec()
    env = dict(TASK_ENV)
    del env["SLURM_JOB_ID"]  # by hand: no step
    r = run_script(script, env)
    if r.returncode or os.path.exists(REC + "/srun.argv") or \
            argv("vkinrd")[:2] != ["--fit-task", out + "/.vkinr/shards/0.tsv"]:
        fail("by hand", r.returncode, r.stderr, os.listdir(REC))
    for sig, want_requeue in ((signal.SIGUSR1, True), (signal.SIGTERM, False)):
        clear_rec()
        e = dict(BASE_ENV, PATH=STUBS + ":/usr/bin:/bin", STUB_WAIT="1",
                 **TASK_ENV)
        p = subprocess.Popen(["bash", script], cwd=T + "/cwd", env=e)
        for _ in range(400):  # the stub started, the shell's traps set
            if os.path.exists(REC + "/ready") and traps_set(p.pid):
                break
            time.sleep(0.05)
        else:
            p.kill()
            fail("the stub never started")
        os.kill(p.pid, sig)
        rc = p.wait(timeout=20)
        got = open(REC + "/signals").read().split()
        requeued = os.path.exists(REC + "/scontrol.argv")
        print(sig, rc, got, requeued)
        if rc != 75 or got != ["USR1"] or requeued != want_requeue:
            fail("signal", sig, rc, got, requeued)
        if requeued and argv("scontrol") != ["requeue", "4242_0"]:
            fail("scontrol", argv("scontrol"))
        if not os.path.exists(REC + "/srun.argv"):
            fail("no srun step")


def job_names():
    def name_of(args, cwd=None):
        r = ctl(["submit", "--slurm", "--dry-run", "--allow-cpu",
                 "--gpus-per-task", "0", "--vkinrd", "/bin/true"] + args,
                cwd=cwd)
        if r.returncode:
            fail(args, r.returncode, r.stderr)
        sb = sbatch_args(r.stdout)
        return option(sb, "--job-name"), sb
    photos = T + "/my photos (2024)"
    os.makedirs(photos)
    shutil.copy(T + "/sample.png", photos + "/a.png")
    cases = [
        (["--out", T + "/o1", photos], "my_photos_2024"),
        (["--out", T + "/o1", photos + "/"], "my_photos_2024"),
        (["--out", T + "/r\u00e9sultats", photos + "/a.png"], "r_sultats"),
        (["--out", T + "/---", photos + "/a.png"], "vkinr"),
        (["--out", T + "/o1", "--name", "cats & \"dogs\" #1", photos],
         "cats & \"dogs\" #1"),
        (["--out", T + "/o1", "--sbatch", "--job-name=mine", photos], "mine"),
    ]
    for args, want in cases:
        got, sb = name_of(args)
        if got != want:
            fail(args, "job name", got, want, sb)
    got, _ = name_of(["--out", "o1", "."], cwd=photos)
    if got != "my_photos_2024":
        fail("'.'", got)


def dry_run_warning():
    data = T + "/data-ok"
    fallback = None
    base = ["submit", "--slurm", "--dry-run", "--out", T + "/o2",
            "--allow-cpu", "--gpus-per-task", "0", data]
    r = ctl(base)  # no vkinrd on PATH
    m = re.search(r"\|\| echo '([^']*)'\)", r.stdout)
    fallback = m and m.group(1)
    print(r.returncode, r.stderr, fallback)
    if r.returncode != 0 or not fallback:
        fail("dry run", r.returncode, r.stdout)
    if not os.access(fallback, os.X_OK) and \
            "vkinrd is neither on PATH here nor in" not in r.stderr:
        fail("no warning without vkinrd")
    r = ctl(base + ["--vkinrd", T + "/nowhere/vkinrd"])
    if r.returncode != 0 or "--vkinrd %s/nowhere/vkinrd: not an executable" \
            % T not in r.stderr:
        fail("--vkinrd", r.returncode, r.stderr)
    r = ctl(base, path_dirs=(STUBS, T + "/withvk"))
    if r.returncode != 0 or r.stderr:
        fail("found on PATH", r.returncode, r.stderr)
    r = ctl(base + ["--vkinrd", T + "/vkinrd-stub"])
    if r.returncode != 0 or r.stderr:
        fail("--vkinrd found", r.returncode, r.stderr)


def real_fit():
    """The real vkinrd, through the srun stub, fits hostile file names
    into a hostile OUT."""
    data = T + "/real data $(touch PWNED)"
    os.makedirs(data)
    files = ["it's `touch PWNED`.png", "-rf *.png", "a;b #c %d.png"]
    for f in files:
        shutil.copy(T + "/sample.png", os.path.join(data, f))
    out = T + "/real 'out' $(touch PWNED) %A"
    r = ctl(["submit", "--slurm", "-q", "--out", out, "--epochs", "2",
             "--width", "16", "--allow-cpu", "--gpus-per-task", "0",
             "--tasks", "1", "--vkinrd", os.environ["VKINRD"], data])
    if r.returncode:
        fail("submit", r.stderr)
    r = run_script(out + "/.vkinr/fit.sbatch", TASK_ENV)
    print(r.stdout, r.stderr)
    if r.returncode:
        fail("script", r.returncode)
    import json
    for line in open(out + "/.vkinr/images.tsv").read().splitlines():
        name, path = line.split("\t")
        res = json.load(open(os.path.join(out, name, "result.json")))
        if res["state"] != "done" or os.path.basename(path) not in files:
            fail(name, res)
    no_pwned()


globals()[sys.argv[1]]()
PY

check "hostile names of OUT, folder, files, --vkinrd and --sbatch arrive whole, nothing injected runs" \
	python3 "$T/harness.py" hostile
check "a control character in --out, --vkinrd, --sbatch, --setup, --name or the folder is refused, named (exit 2)" \
	python3 "$T/harness.py" refused
check "an image whose path holds a control character is left out, named (exit 3)" \
	python3 "$T/harness.py" bad_images
check "the task is an srun step (not by hand); USR1 and TERM reach it as USR1; requeue after USR1 only" \
	python3 "$T/harness.py" steps_and_signals
check "the job is named after the dataset folder; --name, then --sbatch --job-name, override it" \
	python3 "$T/harness.py" job_names
check "--dry-run warns (exit 0) when vkinrd is neither on PATH nor at --vkinrd" \
	python3 "$T/harness.py" dry_run_warning

if ! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
	skip "no Vulkan device"
	skip "no Vulkan device"
	skip "no Vulkan device"
else
	printf 'a\t%s\tx\nb\r\t%s\nc\t%s\r\n\t%s\n.d\t%s\n' "$T/sample.png" \
		"$T/sample.png" "$T/sample.png" "$T/sample.png" "$T/sample.png" >"$T/bad.tsv"
	check "vkinrd --fit-task refuses a manifest line with a control character in a field" bash -c '
		"$VKINRD" --fit-task "$T/bad.tsv" --out "$T/ft" --allow-cpu --epochs 1 --width 16 2>"$T/ft.err"
		rc=$?; cat "$T/ft.err"
		[ $rc = 1 ] && [ "$(grep -c "is not NAME<TAB>PATH" "$T/ft.err")" = 5 ] &&
		grep -q "line 1 is not" "$T/ft.err" && grep -q "line 5 is not" "$T/ft.err" &&
		[ -z "$(ls -A "$T/ft")" ]'
	printf 'good\t%s\nbad\t%s\tmore\n' "$T/sample.png" "$T/sample.png" >"$T/mixed.tsv"
	check "the other lines of that manifest are still fitted" bash -c '
		"$VKINRD" --fit-task "$T/mixed.tsv" --out "$T/ft2" -q --allow-cpu --epochs 2 --width 16
		rc=$?
		[ $rc = 1 ] && [ -f "$T/ft2/good/result.json" ] && [ ! -e "$T/ft2/bad" ]'
	check "the real vkinrd, through the script, fits hostile file names into a hostile OUT" \
		python3 "$T/harness.py" real_fit
fi
tap_done
