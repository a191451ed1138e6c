#!/usr/bin/env python3
"""fake_daemon.py - a stand-in for vkinrd that speaks its protocol, for
testing vkinrctl without a GPU.

It listens on a Unix socket, answers the JSON-RPC methods of
proto/PROTOCOL.md with canned but consistent data, and "trains" every
submitted job in a thread: one epoch every --epoch-ms, PSNR rising, a
job.progress notification per epoch to each subscriber and a job.state at
every change. A job whose name contains "fail" fails half way. Job ids are
strings ("1", "2", ...) as in the real daemon.

Every request is appended to --log as one JSON line (base64 fields cut to
their length), so tests can check what the client sent.

    fake_daemon.py SOCKET [--epoch-ms MS] [--log FILE] [--export-mb N]
"""
import argparse
import base64
import json
import math
import os
import socket
import struct
import sys
import threading
import time
import zlib

PNG_SIG = b"\x89PNG\r\n\x1a\n"


def tiny_png(w=4, h=4):
    """A valid w x h grey PNG."""
    raw = b"".join(b"\x00" + bytes([128] * w) for _ in range(h))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return PNG_SIG + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def png_size(data):
    if data[:8] != PNG_SIG or len(data) < 24:
        return None
    return struct.unpack(">II", data[16:24])


class Daemon:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.jobs = {}  # id -> dict
        self.order = []
        self.next_id = 1
        self.subs = {}  # id -> set of Client
        self.log = open(args.log, "a") if args.log else None

    # ---- jobs ----

    def public(self, job):
        keys = ("id", "name", "state", "epoch", "epochs", "psnr", "best_psnr",
                "width", "image", "device", "error", "batch", "seconds",
                "priority", "lr", "seed")
        return {k: job[k] for k in keys if k in job and job[k] is not None}

    def notify(self, job_id, method, params):
        for client in list(self.subs.get(job_id, ())):
            client.send({"jsonrpc": "2.0", "method": method, "params": params})

    def set_state(self, job, state, error=None):
        job["state"] = state
        if error:
            job["error"] = error
        params = {"job": job["id"], "state": state}
        if error:
            params["error"] = error
        self.notify(job["id"], "job.state", params)

    def train(self, job):
        step = self.args.epoch_ms / 1000.0
        start = time.time()
        time.sleep(step)
        with self.lock:
            if job["state"] == "queued":
                self.set_state(job, "running")
        while True:
            time.sleep(step)
            with self.lock:
                if job["state"] in ("cancelled", "removed"):
                    return
                if job["state"] == "paused":
                    continue
                e = job["epoch"] + 1
                psnr = 10 + 20 * (1 - math.exp(-e / 15.0))
                m = {"job": job["id"], "epoch": e, "mse": 10 ** (-psnr / 10),
                     "psnr": psnr, "lr": 1e-3, "ms": self.args.epoch_ms}
                job["history"].append(m)
                job["epoch"] = e
                job["psnr"] = psnr
                job["best_psnr"] = max(job["best_psnr"] or 0, psnr)
                self.notify(job["id"], "job.progress", m)
                if "fail" in job["name"] and e >= job["epochs"] // 2:
                    self.set_state(job, "failed", "training diverged at epoch %d" % e)
                    return
                if e >= job["epochs"]:
                    job["seconds"] = time.time() - start
                    self.set_state(job, "done")
                    return

    # ---- methods ----

    def call(self, client, method, params):
        if self.log:
            shown = json.loads(json.dumps(params), object_hook=self.cut)
            self.log.write(json.dumps({"method": method, "params": shown}) + "\n")
            self.log.flush()
        fn = getattr(self, "m_" + method.replace(".", "_"), None)
        if not fn:
            raise RpcError(-32601, "unknown method '%s'" % method)
        if params is not None and not isinstance(params, dict):
            raise RpcError(-32602, "params must be an object")
        return fn(client, params or {})

    @staticmethod
    def cut(obj):
        for k in ("png", "safetensors"):
            if isinstance(obj.get(k), str):
                obj[k] = "<%d base64 chars>" % len(obj[k])
        return obj

    def job_of(self, params):
        jid = params.get("job")
        if not isinstance(jid, str):
            raise RpcError(-32602, "job must be a string id")
        job = self.jobs.get(jid)
        if not job:
            raise RpcError(-32001, "no job %s" % jid)
        return job

    def m_hello(self, client, p):
        return {"protocol": 1, "version": "0.1.0-fake", "device": "Fake GPU"}

    def m_daemon_status(self, client, p):
        with self.lock:
            counts = {}
            for j in self.jobs.values():
                counts[j["state"]] = counts.get(j["state"], 0) + 1
        return {"version": "0.1.0-fake", "devices": [{"index": 0, "name": "Fake GPU", "job": None}],
                "queue": counts}

    def m_job_submit(self, client, p):
        img = p.get("image")
        if not isinstance(img, dict) or not isinstance(img.get("png"), str):
            raise RpcError(-32602, "image must be {\"png\": BASE64}")
        try:
            data = base64.b64decode(img["png"], validate=True)
        except Exception:
            raise RpcError(-32602, "image.png is not valid base64")
        size = png_size(data)
        if not size:
            raise RpcError(-32003, "the image is not a PNG")
        name = p.get("name", "job")
        if "refuse" in name:
            raise RpcError(-32003, "the image was refused: it is too small")
        with self.lock:
            jid = str(self.next_id)
            self.next_id += 1
            job = {"id": jid, "name": name, "state": "queued", "epoch": 0,
                   "epochs": p.get("epochs", 50), "psnr": None, "best_psnr": None,
                   "width": p.get("width", 32), "image": {"width": size[0], "height": size[1]},
                   "device": "Fake GPU", "batch": p.get("batch"), "history": [],
                   "png": data}
            self.jobs[jid] = job
        threading.Thread(target=self.train, args=(job,), daemon=True).start()
        return {"job": jid}

    def m_job_list(self, client, p):
        with self.lock:
            return {"jobs": [self.public(j) for j in self.jobs.values()]}

    def m_job_get(self, client, p):
        with self.lock:
            return self.public(self.job_of(p))

    def m_job_pause(self, client, p):
        with self.lock:
            job = self.job_of(p)
            if job["state"] not in ("queued", "running"):
                raise RpcError(-32002, "job %s is %s; only a queued or running job can be paused" % (job["id"], job["state"]))
            self.set_state(job, "paused")
            return {}

    def m_job_resume(self, client, p):
        with self.lock:
            job = self.job_of(p)
            if job["state"] != "paused":
                raise RpcError(-32002, "job %s is %s, not paused" % (job["id"], job["state"]))
            self.set_state(job, "running")
            return {}

    def m_job_cancel(self, client, p):
        with self.lock:
            job = self.job_of(p)
            if job["state"] in ("done", "failed", "cancelled"):
                raise RpcError(-32002, "job %s has already ended (%s)" % (job["id"], job["state"]))
            self.set_state(job, "cancelled")
            return {}

    def m_job_remove(self, client, p):
        with self.lock:
            job = self.job_of(p)
            if job["state"] in ("queued", "running", "paused"):
                raise RpcError(-32002, "job %s is %s; cancel it first" % (job["id"], job["state"]))
            del self.jobs[job["id"]]
            job["state"] = "removed"
            return {}

    def m_job_export(self, client, p):
        with self.lock:
            job = self.job_of(p)
            if job["state"] != "done":
                raise RpcError(-32002, "job %s is %s; only a done job can be exported" % (job["id"], job["state"]))
        model = b"FAKE-SAFETENSORS " + job["id"].encode()
        model += b"\0" * (self.args.export_mb << 20)
        return {"model": {"safetensors": base64.b64encode(model).decode()},
                "recon": {"png": base64.b64encode(tiny_png(*job["image"].values())).decode()},
                "psnr": job["psnr"]}

    def m_job_subscribe(self, client, p):
        with self.lock:
            job = self.job_of(p)
            for m in job["history"]:
                client.send({"jsonrpc": "2.0", "method": "job.progress", "params": m})
            self.subs.setdefault(job["id"], set()).add(client)
            return {}

    def m_job_unsubscribe(self, client, p):
        with self.lock:
            job = self.job_of(p)
            self.subs.get(job["id"], set()).discard(client)
            return {}

    def m_model_render(self, client, p):
        model = p.get("model")
        if not isinstance(model, dict) or not isinstance(model.get("safetensors"), str):
            raise RpcError(-32602, "model must be {\"safetensors\": BASE64}")
        data = base64.b64decode(model["safetensors"])
        if b"FAKE-SAFETENSORS" not in data:
            raise RpcError(-32006, "the model package was refused: not a ConvSIREN package")
        out = {"png": base64.b64encode(tiny_png()).decode()}
        if "target" in p:
            out["psnr"] = 27.5
        return out


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Client:
    def __init__(self, daemon, sock):
        self.daemon = daemon
        self.sock = sock
        self.wlock = threading.Lock()
        self.alive = True

    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        with self.wlock:
            if not self.alive:
                return
            try:
                self.sock.sendall(data)
            except OSError:
                self.alive = False

    def run(self):
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self.line(line)
        except OSError:
            pass
        self.alive = False
        with self.daemon.lock:
            for subs in self.daemon.subs.values():
                subs.discard(self)
        self.sock.close()

    def line(self, line):
        try:
            msg = json.loads(line)
        except ValueError:
            self.send({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32700, "message": "parse error"}})
            return
        mid = msg.get("id")
        try:
            result = self.daemon.call(self, msg.get("method"), msg.get("params"))
            self.send({"jsonrpc": "2.0", "id": mid, "result": result})
        except RpcError as e:
            self.send({"jsonrpc": "2.0", "id": mid,
                       "error": {"code": e.code, "message": e.message}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--epoch-ms", type=float, default=20)
    ap.add_argument("--log")
    ap.add_argument("--export-mb", type=int, default=0)
    args = ap.parse_args()

    daemon = Daemon(args)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(args.socket)
    except FileNotFoundError:
        pass
    srv.bind(args.socket)
    srv.listen(64)
    sys.stdout.write("listening\n")
    sys.stdout.flush()
    while True:
        sock, _ = srv.accept()
        threading.Thread(target=Client(daemon, sock).run, daemon=True).start()


if __name__ == "__main__":
    main()
