"""cdp.py - drives a headless Chromium through the DevTools protocol, for
the tests of `vkinrctl dashboard` (47_dashboard_browser.sh): open a page,
evaluate JavaScript in it, wait for a condition, click, take a
screenshot. Uses python3-websocket (Debian's websocket-client).

A long-lived event stream (the dashboard's) keeps Chromium's
--virtual-time-budget and --dump-dom from ever finishing, which is why the
page is driven live instead.
"""
import base64
import json
import re
import subprocess
import tempfile
import threading
import time
import urllib.request

import websocket


class Browser:
    def __init__(self, chromium="chromium", width=1400, height=1250):
        self.profile = tempfile.mkdtemp(prefix="vkinr-chromium.")
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--hide-scrollbars", "--remote-debugging-port=0",
             "--remote-debugging-address=127.0.0.1",
             "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and port is None:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            self.close()
            raise RuntimeError("chromium did not open its DevTools port")
        # the rest of its stderr is drained, so that it never blocks
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        pages = json.load(urllib.request.urlopen(
            "http://127.0.0.1:%d/json/list" % port, timeout=10))
        page = [p for p in pages if p.get("type") == "page"][0]
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"],
                                              timeout=30,
                                              suppress_origin=True)
        self.next_id = 0
        self.console = []
        self.call("Runtime.enable")
        self.call("Page.enable")

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method,
                                 "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Runtime.consoleAPICalled":
                self.console.append(" ".join(
                    str(a.get("value", a.get("description", "")))
                    for a in msg["params"].get("args", [])))
            elif msg.get("method") == "Runtime.exceptionThrown":
                d = msg["params"]["exceptionDetails"]
                self.console.append("exception: %s" % d.get(
                    "exception", {}).get("description", d.get("text")))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})

    def open(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (
                expr, r["exceptionDetails"].get("exception", {}).get(
                    "description", r["exceptionDetails"].get("text"))))
        return r.get("result", {}).get("value")

    def wait(self, expr, timeout=30):
        """The value of expr once it is truthy, else None at timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.25)
        return None

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png",
                      captureBeyondViewport=False)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["rm", "-rf", self.profile])
