#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Flood a TCP listener the way a port scanner or a stuck peer does, for the flood tests.

flood.py HOST PORT [--idle N] [--slow N] [--prefix HEX] [--seconds S] [--ready FILE]
flood.py HOST PORT --churn RATE [--seconds S] [--ready FILE]

Opens N idle connections (they send nothing), then N slow-loris ones that send one
byte per second (the bytes of --prefix, a plausible start of a real message, over and
over), keeps them for S seconds and reports how many the server closed and when.
With --churn: connects and closes at up to RATE per second for S seconds (a scanner, or
any local process: no handle needed), and reports how many it made.
Exit 0 always once the connections were attempted; the test reads the report.
"""
import argparse
import os
import select
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--prefix", default="00")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--ready")
    ap.add_argument("--churn", type=float, default=0)
    a = ap.parse_args()
    if a.churn:
        return churn(a)
    prefix = bytes.fromhex(a.prefix) or b"\0"
    t0 = time.monotonic()
    conns = []  # [sock, kind, opened, closed_at, bytes_sent]
    for kind, n in (("idle", a.idle), ("slow", a.slow)):
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect((a.host, a.port))
            except BlockingIOError:
                pass
            except OSError as e:
                print("flood: connect: %s" % e, file=sys.stderr)
                s.close()
                continue
            conns.append([s, kind, time.monotonic(), None, 0])
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("%d\n" % len(conns))
    print("flood ready: %d connections" % len(conns), flush=True)
    next_byte = time.monotonic()
    poller = select.poll()
    byfd = {}
    for c in conns:
        poller.register(c[0].fileno(), select.POLLIN)
        byfd[c[0].fileno()] = c
    while time.monotonic() - t0 < a.seconds:
        now = time.monotonic()
        if now >= next_byte:
            for c in conns:
                if c[1] == "slow" and c[3] is None:
                    try:
                        c[0].send(prefix[c[4] % len(prefix):c[4] % len(prefix) + 1])
                        c[4] += 1
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        c[3] = now - c[2]
            next_byte = now + 1.0
        for fd, ev in poller.poll(max(0, int((next_byte - time.monotonic()) * 1000))):
            c = byfd[fd]
            if c[3] is not None:
                continue
            try:
                if c[0].recv(4096):
                    continue
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                pass
            c[3] = time.monotonic() - c[2]
            poller.unregister(fd)
    for kind in ("idle", "slow"):
        cs = [c for c in conns if c[1] == kind]
        closed = [c[3] for c in cs if c[3] is not None]
        sent = max([c[4] for c in cs] or [0])
        print("flood %s: %d open, %d closed by the server%s, most bytes sent %d" % (
            kind, len(cs), len(closed),
            " (after %.1f..%.1f s)" % (min(closed), max(closed)) if closed else "", sent))
    for c in conns:
        c[0].close()
    return 0


def churn(a):
    """connect + close, paced to a.churn per second for a.seconds, up to 512 connects in
    flight (non-blocking: the rate is the server's, not one round trip's); each is closed
    once established, as a scanner or a crashing client does"""
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("churn\n")
    print("flood ready: churn at up to %.0f/s" % a.churn, flush=True)
    t0 = time.monotonic()
    made = failed = started = 0
    poller = select.poll()
    inflight = {}
    while True:
        now = time.monotonic()
        if now - t0 >= a.seconds:
            break
        while len(inflight) < 512 and started < (now - t0) * a.churn:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            started += 1
            try:
                s.connect((a.host, a.port))
            except BlockingIOError:
                pass
            except OSError:
                failed += 1
                s.close()
                continue
            inflight[s.fileno()] = s
            poller.register(s.fileno(), select.POLLOUT)
        for fd, ev in poller.poll(1):
            s = inflight.pop(fd)
            poller.unregister(fd)
            if ev & (select.POLLERR | select.POLLHUP) or s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                failed += 1
            else:
                made += 1
            s.close()
    for s in inflight.values():
        s.close()
    secs = time.monotonic() - t0
    print("flood churn: %d connect+close in %.1f s (%.0f/s), %d connects failed" % (
        made, secs, made / secs if secs else 0, failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
