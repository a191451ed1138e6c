#!/bin/bash
# 89_soak.sh - load: two jobs train on two workers of the one device,
# first alone (the baseline), then again (same seeds) while 200 clients
# connect, say hello and disconnect (8 at a time, spread over the run) and
# 50 subscribers follow the jobs, one of which never reads. Reported as
# TAP comments: the training slowdown against the baseline, the daemon's
# VmRSS and open file descriptors before and after. Fails when the
# slowdown is above SOAK_MAX_SLOWDOWN percent (50: on lavapipe the
# training and the load generator share two CPU cores, and measured 17 to
# 26%, so the bound only catches a daemon that stalls; the 5% target is a
# GPU's: on the H200 no slowdown could be measured),
# when RSS grew by more than 64 MiB, or when a file descriptor leaked.
# make check-slow runs it, not make check: it compares training speeds, which a loaded machine upsets.
# run.sh: slow
# run.sh: alone
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
export SOAK_MAX_SLOWDOWN=${SOAK_MAX_SLOWDOWN:-50}
run_py <<'EOF_PY'
import asyncio, signal, threading
from rpc import *
tap = Tap()
state = os.environ["STATE"]
log = open(os.path.join(T, "daemon.log"), "a")
d = subprocess.Popen([os.environ["VKINRD"], "--socket", SOCK, "--state-dir", state,
                      "--device", "0", "--device", "0"], stdout=log, stderr=log)
c = connect_retry()
img = sample("s.png", 24, 24)
EPOCHS = 100 if os.environ.get("VKINR_SANITIZED") else 200

def train_pair():
    t0 = time.time()
    jobs = [submit(c, img, epochs=EPOCHS, width=16, seed=30 + i) for i in range(2)]
    for j in jobs:
        wait_state(c, j, ("done", "failed"), timeout=120)
    return time.time() - t0, jobs

def rss_kb():
    for line in open("/proc/%d/status" % d.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def nfds():
    return len(os.listdir("/proc/%d/fd" % d.pid))

base, _ = train_pair()
time.sleep(0.5)
rss0, fd0 = rss_kb(), nfds()

stats = {"churned": 0, "churn_errors": 0, "sub_lines": 0, "sub_errors": 0}
stop = threading.Event()

async def hello_once():
    r, w = await asyncio.open_unix_connection(SOCK)
    w.write(b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n')
    await w.drain()
    line = await r.readline()
    w.close()
    await w.wait_closed()
    if b'"result"' not in line:
        raise RuntimeError(line)

async def churner(n, pause):
    for _ in range(n):
        try:
            await hello_once()
            stats["churned"] += 1
        except Exception:
            stats["churn_errors"] += 1
        await asyncio.sleep(pause)

async def subscriber(job, reads):
    try:
        r, w = await asyncio.open_unix_connection(SOCK, limit=1 << 20)
        w.write(('{"jsonrpc":"2.0","id":1,"method":"job.subscribe","params":'
                 '{"job":"%s"}}\n' % job).encode())
        await w.drain()
        while not stop.is_set():
            if not reads:
                await asyncio.sleep(0.1)
                continue
            try:
                line = await asyncio.wait_for(r.readline(), 0.5)
            except asyncio.TimeoutError:
                continue
            if not line:
                break
            stats["sub_lines"] += 1
        w.close()
    except Exception:
        stats["sub_errors"] += 1

async def load(jobs):
    subs = [asyncio.create_task(subscriber(jobs[i % 2], i != 0)) for i in range(50)]
    await asyncio.gather(*[churner(25, base / 25) for _ in range(8)])
    while not stop.is_set():
        await asyncio.sleep(0.1)
    await asyncio.gather(*subs)

# the jobs of the loaded run get ids 3 and 4: subscribers may come first
th = threading.Thread(target=lambda: asyncio.run(load(["3", "4"])))
th.start()
loaded, jobs = train_pair()
while stats["churned"] + stats["churn_errors"] < 200 and th.is_alive():
    time.sleep(0.1)
stop.set()
th.join(timeout=30)
time.sleep(1.0)  # the daemon closes what the load left
rss1, fd1 = rss_kb(), nfds()
slow = (loaded / base - 1) * 100
print("# baseline %.2f s, under load %.2f s: slowdown %.1f%% (limit %s%%)"
      % (base, loaded, slow, os.environ["SOAK_MAX_SLOWDOWN"]), flush=True)
print("# VmRSS %d -> %d KiB; fds %d -> %d; %d clients churned, %d subscriber "
      "lines read" % (rss0, rss1, fd0, fd1, stats["churned"], stats["sub_lines"]),
      flush=True)
tap.ok(stats["churned"] == 200 and stats["churn_errors"] == 0 and stats["sub_errors"] == 0,
       "200 clients came and went, 50 subscribers followed", stats)
tap.ok(all(c.call("job.get", {"job": j})["state"] == "done" for j in jobs),
       "both jobs finished under load")
tap.ok(slow <= float(os.environ["SOAK_MAX_SLOWDOWN"]),
       "training slowed by %.1f%% (at most %s%%)" % (slow, os.environ["SOAK_MAX_SLOWDOWN"]))
tap.ok(rss1 - rss0 <= 64 * 1024, "RSS bounded: %d -> %d KiB" % (rss0, rss1))
tap.ok(fd1 <= fd0, "no file descriptor leaked: %d -> %d" % (fd0, fd1))
c.close()
d.send_signal(signal.SIGTERM)
d.wait(timeout=20)
tap.done()
EOF_PY
tap_done
