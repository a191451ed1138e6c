#!/bin/bash
# 07_protocol_examples.sh - the examples of proto/PROTOCOL.md, run against
# the real daemon, so that the document cannot drift from the wire.
#
# A code block of PROTOCOL.md that follows a line "<!-- example ... -->"
# is a conversation: each line (or run of lines) that parses as JSON with
# "method" and "id" is sent as it is (a string "iVBORw0KGgo..." becomes a
# real PNG's base64), the lines after it, with or without "-> ", are its
# answer: a whole envelope, or the result alone. A notification shown
# there is compared with those of a subscription to a finished job.
# The answer must have the same shape: the same keys in every object
# (a notification may have more, documented ones), the same id, the same
# error code, name and message word for word, the same "daemon" and
# "protocol"; other strings and numbers only of the same type (ids, times,
# devices vary), null matching anything. Every key the daemon sends must
# be named (`key`) somewhere in PROTOCOL.md, and the keys of job.get and
# job.list's jobs in its table of the job object.
#
# Before the examples run, the daemon (one worker, one job at a time) has
# jobs 1 to 5 done and job 6 running for a long time, so the examples'
# jobs 7 and 8 stay queued, job 9 does not exist, and nothing depends on
# how fast the machine is.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
DOC=$ROOT/proto/PROTOCOL.md run_py <<'EOF_PY'
import json, re
from rpc import *
tap = Tap()
doc = open(os.environ["DOC"]).read()

# the examples: blocks after a marker, as lists of (request, [answers])
convs, notes_doc = [], []
lines = doc.split("\n")
i = 0
while i < len(lines):
    if not lines[i].startswith("<!-- example"):
        i += 1
        continue
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    block = []
    while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
        block.append(lines[i].strip())
        i += 1
    conv, pending = [], ""
    for l in block:
        if l.startswith("-> "):
            l = l[3:]
        if not pending and not l.startswith("{"):
            continue  # a shell prompt, an ellipsis
        pending += l
        try:
            msg = json.loads(pending)
        except ValueError:
            continue
        pending = ""
        if "method" in msg and "id" in msg:
            conv.append((msg, []))
        elif "method" in msg:
            notes_doc.append(msg)
        elif conv:
            conv[-1][1].append(msg)
    if pending:
        conv.append(({"unparsed": pending}, []))
    convs.append(conv)
reqs = [r for c in convs for r in c]
tap.ok(len(convs) >= 5 and len(reqs) >= 8 and notes_doc
       and all("unparsed" not in r for r, _ in reqs),
       "PROTOCOL.md has marked examples, every line of them JSON",
       (len(convs), len(reqs), [r for r, _ in reqs if "unparsed" in r]))

named = set(re.findall(r"`([a-z_]+)`", doc))
table = doc[doc.index("### The job object"):doc.index("## Methods")]
job_fields = set()
for row in table.split("\n"):
    if row.startswith("| `"):
        job_fields |= set(re.findall(r"`([a-z_]+)`", row.split("|")[1]))

def same(want, got, path, strict_keys=True):
    """Differences between a documented message and the daemon's."""
    if want is None or got is None:
        return []
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return ["%s: an object documented, %r sent" % (path, got)]
        out = []
        missing = set(want) - set(got)
        extra = set(got) - set(want)
        if missing:
            out.append("%s: documented, not sent: %s" % (path, sorted(missing)))
        if extra and strict_keys:
            out.append("%s: sent, not documented: %s" % (path, sorted(extra)))
        out += ["%s.%s: sent, named nowhere in PROTOCOL.md" % (path, k)
                for k in extra if k not in named]
        for k in set(want) & set(got):
            out += same(want[k], got[k], path + "." + k, strict_keys)
        return out
    if isinstance(want, list):
        if not isinstance(got, list):
            return ["%s: a list documented, %r sent" % (path, got)]
        out = []
        for n, g in enumerate(got if want else []):
            out += same(want[min(n, len(want) - 1)], g, "%s[%d]" % (path, n), strict_keys)
        return out
    exact = (".error." in path + "." or path.endswith((".daemon", ".protocol", ".id"))
             or path == "id")
    if exact and want != got:
        return ["%s: %r documented, %r sent" % (path, want, got)]
    if isinstance(want, bool) != isinstance(got, bool) or \
       isinstance(want, str) != isinstance(got, str) or \
       isinstance(want, (int, float)) != isinstance(got, (int, float)):
        return ["%s: %r documented, %r sent" % (path, want, got)]
    return []

# the jobs the examples speak of
c = Client()
img = sample("s.png", 16, 16)
b64 = png_b64(img)
for n in range(5):
    submit(c, img, epochs=2, width=16)
long = submit(c, img, epochs=10000000, width=16)
for n in range(1, 6):
    wait_state(c, str(n), ("done", "failed"), timeout=300)
j = wait_state(c, long, ("running",), timeout=300)
tap.ok(long == "6" and j["state"] == "running"
       and all(c.call("job.get", {"job": str(n)})["state"] == "done" for n in range(1, 6)),
       "jobs 1 to 5 done, job 6 running", j)

def fill(v):
    if isinstance(v, dict):
        return {k: fill(x) for k, x in v.items()}
    if isinstance(v, list):
        return [fill(x) for x in v]
    if isinstance(v, str) and v.startswith("iVBORw0KGgo") and v.endswith("..."):
        return b64
    return v

bad, jobs_seen = [], []
for conv in convs:
    d = Client()
    for req, answers in conv:
        d.send_raw(json.dumps(fill(req)) + "\n")
        got = d.read_reply(req["id"])
        for want in answers:
            if "jsonrpc" not in want:
                want = {"jsonrpc": "2.0", "id": req["id"], "result": want}
            bad += ["%s: %s" % (req["method"], e) for e in same(want, got, "")]
        if not answers and "error" in got:
            bad.append("%s: %s" % (req["method"], got["error"]))
        if req["method"] == "job.get" and "result" in got:
            jobs_seen.append(got["result"])
        if req["method"] == "job.list" and "result" in got:
            jobs_seen += got["result"]["jobs"]
    d.close()
tap.ok(not bad, "every example's answer has the documented shape", bad)
loose = sorted({k for j in jobs_seen for k in j if k not in job_fields})
tap.ok(jobs_seen and not loose,
       "every key of a job object is in PROTOCOL.md's table of it", (len(jobs_seen), loose))

# notifications: those of job 1's subscription (its replay, then its end)
d = Client()
d.call("job.subscribe", {"job": "1"})
got = {}
while "job.state" not in got:
    n = d.next_note()
    got.setdefault(n["method"], n)
bad = []
for want in notes_doc:
    g = got.get(want["method"])
    if g is None:
        bad.append("%s: not sent" % want["method"])
    else:
        bad += ["%s: %s" % (want["method"], e) for e in same(want, g, "", strict_keys=False)]
tap.ok(len(notes_doc) >= 2 and not bad, "the notifications have the documented keys", bad)
tap.done()
EOF_PY
stop_daemon
tap_done
