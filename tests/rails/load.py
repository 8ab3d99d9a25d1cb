# SPDX-License-Identifier: MIT
"""Keep-alive HTTP load on a local server, for tests/rails: THREADS
clients, each on one persistent connection, POST a route in a loop
(/orders, or route(i) for the i-th request); counts responses and
errors per second.  get_each: a fixed sequence of GETs on one
persistent connection."""
import http.client
import threading
import time


class Load:
    def __init__(self, port, threads=4, route=lambda i: "/orders"):
        self.port = port
        self.route = route
        self.ok = 0
        self.errors = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True)
                        for i in range(threads)]

    def client(self, n):
        conn = None
        i = 0
        while not self.stop.is_set():
            route = self.route(i)
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("POST", f"{route}?id={n * 1_000_000 + i}", body=b"",
                             headers={"Connection": "keep-alive"})
                r = conn.getresponse()
                r.read()
                with self.lock:
                    if r.status == 200:
                        self.ok += 1
                    else:
                        self.errors.append(f"{route}: HTTP {r.status}")
                i += 1
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.errors.append(f"{route}: {e!r}")
                conn = None

    def start(self):
        for t in self.threads:
            t.start()

    def rate(self, seconds):
        """Responses per second over the next SECONDS."""
        before = self.ok
        time.sleep(seconds)
        return (self.ok - before) / seconds

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


def get_each(port, paths, timeout=30):
    """GET each of PATHS in turn on one keep-alive connection to PORT
    (each answer within TIMEOUT seconds): [(status, body)]."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        out = []
        for path in paths:
            conn.request("GET", path, headers={"Connection": "keep-alive"})
            r = conn.getresponse()
            out.append((r.status, r.read()))
        return out
    finally:
        conn.close()
