#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The demo's service and load generator.

  demo_kv.py serve PORT          a line-protocol cache: "<key>\\n" -> "<value>\\n"
  demo_kv.py load PORT N KEYS    N requests over 4 connections; prints counts

The service counts the requests it answered itself (SIGUSR1 or exit prints
the count to its log), so the demo can show how many XPS answered from the
kernel instead.
"""
import selectors
import socket
import sys
import threading
import time

STORE = {b"k%d" % i: b"value-%d-" % i + b"x" * 100 for i in range(100)}


def serve(port):
    """An epoll service with non-blocking sockets, as real servers are."""
    served = 0
    sel = selectors.DefaultSelector()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ)
    bufs = {}
    last = 0
    while True:
        for key, _ in sel.select(0.5):
            s = key.fileobj
            if s is ls:
                c, _ = ls.accept()
                c.setblocking(False)
                bufs[c] = b""
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                d = s.recv(65536)
            except BlockingIOError:
                continue
            if not d:
                sel.unregister(s)
                bufs.pop(s, None)
                s.close()
                continue
            buf = bufs[s] + d
            out = []
            while b"\n" in buf:
                k, buf = buf.split(b"\n", 1)
                served += 1
                out.append(STORE.get(k, b"(miss)") + b"\n")
            bufs[s] = buf
            if out:
                s.setblocking(True)
                s.sendall(b"".join(out))
                s.setblocking(False)
        if time.time() - last > 0.3:
            last = time.time()
            with open("/tmp/xps-demo-served", "w") as f:
                f.write("%d\n" % served)


def load(port, n, keys):
    done = [0]
    lat = []
    lock = threading.Lock()

    def worker(count):
        c = socket.create_connection(("127.0.0.1", port))
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        time.sleep(0.05)  # let the service accept() first
        for i in range(count):
            key = b"k%d" % (i % keys)
            t = time.perf_counter()
            c.sendall(key + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                buf += c.recv(4096)
            with lock:
                lat.append(time.perf_counter() - t)
                done[0] += 1
        c.close()
    per = n // 4
    ts = [threading.Thread(target=worker, args=(per,)) for _ in range(4)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.time() - t0
    lat.sort()
    print("  %d requests in %.2fs (%.0f req/s), p50 %.0f us, p99 %.0f us"
          % (done[0], dt, done[0] / dt, lat[len(lat) // 2] * 1e6,
             lat[int(len(lat) * 0.99)] * 1e6))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        load(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
