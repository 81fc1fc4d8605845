#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The hostile side of `roce-doctor serve` and `peer`, in the peer protocol (doctor_wire.c).

doctor_hostile.py big HOST PORT [--conns N] [--announce B] [--send B] [--seconds S]
    N connections, each a valid inventory header announcing B bytes, then up to --send
    bytes of it as fast as the server takes them (never the last byte); reports what was
    sent and how many connections the server closed.
doctor_hostile.py session HOST PORT [--ips A,B,...] [--probes N] [--interval S]
                  [--pairs repeat|distinct] [--ready FILE]
    One session as a client would start it (an inventory with one netdev-only NIC per
    address, CHECKS without pairs), then N probe requests, one per S seconds: the same
    pair each time, or every (server NIC, our NIC) pair in turn. Reports how many were
    answered and whether the server closed.
doctor_hostile.py squat HOST PORT [--conns N] [--seconds S] [--source IP] [--ready FILE]
    N clients that each send a valid inventory, take their session with CHECKS naming no
    pair, then send nothing; each starts again when the server closes it or says busy.
    Reports the sessions taken, the busy answers and the longest a session was held.
doctor_hostile.py trickle-server PORT [--interval S] [--seconds S] [--ready FILE]
    A server that takes one client's inventory, then sends a valid inventory header one
    byte per interval; reports how many bytes went out before the client hung up.
doctor_hostile.py arpcount IFACE [--seconds S] [--ready FILE]
    Counts the ARP requests seen on IFACE per target address ("arp TARGET COUNT").
Exit 0 once it ran; the tests read the report.
"""
import argparse
import select
import threading
import socket
import struct
import sys
import time

MAGIC = 0x524E4452
VERSION = 3
INV, CHECKS, PROBE_REQ, PROBE_HANDLE, PROBE_RESULT, DONE, WAIT, BUSY = range(1, 9)


def header(mtype, length):
    return struct.pack(">IHHII", MAGIC, VERSION, mtype, length, 0)


def field(s, n):
    b = s.encode()[: n - 1]
    return b + b"\0" * (n - len(b))


def nic(i, ip):
    a = socket.inet_aton(ip)
    return b"".join([
        field("eth%d" % i, 16), field("", 64),
        struct.pack(">HBB", 0, 4, 24), a + b"\0" * 12,
        bytes([0x02, 0x42, 0, 0, 0x10, i]), bytes([1, 0]),
        b"\0" * 10 + b"\xff\xff" + a,
        struct.pack(">iIIHH", -1, 1500, 0, 0, 0),
    ])


def inventory(ips):
    p = field("hostile", 64) + struct.pack(">HH", len(ips), 1)
    for i, ip in enumerate(ips):
        p += nic(i, ip)
    return header(INV, len(p)) + p


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed after %d of %d bytes" % (len(b), n))
        b += c
    return b


def recv_msg(s):
    magic, _, mtype, length, _ = struct.unpack(">IHHII", recv_exact(s, 16))
    if magic != MAGIC:
        raise EOFError("bad magic")
    return mtype, recv_exact(s, length)


def big(a):
    conns = []
    for _ in range(a.conns):
        s = socket.create_connection((a.host, a.port))
        s.setblocking(False)
        conns.append([s, header(INV, a.announce), 0, None])
    chunk = b"\0" * 65536
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        busy = False
        for c in conns:
            if c[3] is not None:
                continue
            try:
                if c[1]:
                    n = c[0].send(c[1])
                    c[1] = c[1][n:]
                    busy = True
                    continue
                left = min(a.send - c[2], len(chunk))
                if left <= 0:
                    continue
                c[2] += c[0].send(chunk[:left])
                busy = True
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                c[3] = time.monotonic() - t0
        for c in conns:
            if c[3] is None:
                try:
                    if c[0].recv(1, socket.MSG_DONTWAIT) == b"":
                        c[3] = time.monotonic() - t0
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    c[3] = time.monotonic() - t0
        if not busy:
            time.sleep(0.05)
    closed = [c for c in conns if c[3] is not None]
    print("big: %d connections announcing %d bytes, %d bytes sent in all, %d closed by the "
          "server" % (len(conns), a.announce, sum(c[2] for c in conns), len(closed)), flush=True)
    for c in conns:
        c[0].close()


def session(a):
    ips = a.ips.split(",")
    s = socket.create_connection((a.host, a.port), timeout=30)
    s.sendall(inventory(ips))
    while True:
        mtype, p = recv_msg(s)
        if mtype != WAIT:
            break
    if mtype != INV:
        print("session: no inventory (type %d)" % mtype, flush=True)
        return
    nnics = struct.unpack(">H", p[64:66])[0]
    s.sendall(header(CHECKS, 4) + b"\0\0\0\0")
    mtype, p = recv_msg(s)
    if a.ready:
        open(a.ready, "w").write("checks\n")
    pairs = [(0, 0)] if a.pairs == "repeat" else [
        (x, y) for x in range(nnics) for y in range(len(ips))]
    t0 = time.monotonic()
    answered = 0
    why = "all sent"
    for k in range(a.probes):
        x, y = pairs[k % len(pairs)]
        try:
            s.sendall(header(PROBE_REQ, 4) + bytes([x, y, 0, 0]))
            mtype, p = recv_msg(s)
            if mtype == PROBE_HANDLE:
                mtype, p = recv_msg(s)
            answered += mtype == PROBE_RESULT
        except (EOFError, OSError) as e:
            why = "the server closed (%s)" % e
            break
        time.sleep(a.interval)
    print("session: %d of %d probe requests answered in %.1f s; %s" % (
        answered, a.probes, time.monotonic() - t0, why), flush=True)
    if why == "all sent":
        try:
            s.sendall(header(DONE, 0))
        except OSError:
            pass
    s.close()


def squat(a):
    end = time.monotonic() + a.seconds
    stats = {"sessions": 0, "busy": 0, "longest": 0.0, "errors": 0}
    lock = threading.Lock()

    def one():
        while time.monotonic() < end:
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(max(0.1, end - time.monotonic()))
                if a.source:
                    s.bind((a.source, 0))
                s.connect((a.host, a.port))
                s.sendall(inventory(["198.18.0.99"]))
                while True:
                    mtype, p = recv_msg(s)
                    if mtype != WAIT:
                        break
                if mtype == BUSY:
                    with lock:
                        stats["busy"] += 1
                    s.close()
                    time.sleep(0.2)  # and again: 40 of them, 200 connects a second
                    continue
                s.sendall(header(CHECKS, 4) + b"\0\0\0\0")
                t0 = time.monotonic()
                with lock:
                    stats["sessions"] += 1
                try:
                    while s.recv(4096):
                        pass  # its CHECKS; then nothing from us, until it closes
                except (socket.timeout, OSError):
                    pass
                with lock:
                    stats["longest"] = max(stats["longest"], time.monotonic() - t0)
                s.close()
            except (EOFError, OSError):
                with lock:
                    stats["errors"] += 1
                time.sleep(0.05)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(a.conns)]
    for t in threads:
        t.start()
    if a.ready:
        open(a.ready, "w").write("squat\n")
    for t in threads:
        t.join(a.seconds + 5)
    print("squat: %d squatters, %d sessions taken, %d told busy, longest held %.1f s, "
          "%d errors" % (a.conns, stats["sessions"], stats["busy"], stats["longest"],
                         stats["errors"]), flush=True)


def trickle_server(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(4)
    if a.ready:
        open(a.ready, "w").write("listening\n")
    c, _ = ls.accept()
    t0 = time.monotonic()
    hdr = header(INV, 4096)
    sent = 0
    due = t0
    while time.monotonic() - t0 < a.seconds and sent < len(hdr):
        if time.monotonic() >= due:
            try:
                c.send(hdr[sent:sent + 1])
            except OSError:
                break
            sent += 1
            due += a.interval
        # the client's bytes are read and dropped until the next one is due, or it hangs up
        r, _, _ = select.select([c], [], [], max(0, due - time.monotonic()))
        if not r:
            continue
        try:
            if not c.recv(65536):
                break
        except OSError:
            break
    print("trickle: %d bytes sent, one per %.0f s, before the client hung up after %.1f s" % (
        sent, a.interval, time.monotonic() - t0), flush=True)


def arpcount(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
    s.bind((a.iface, 0))
    if a.ready:
        open(a.ready, "w").write("sniffing\n")
    counts = {}
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        r, _, _ = select.select([s], [], [], 0.2)
        if not r:
            continue
        f = s.recv(2048)
        if len(f) < 42 or f[12:14] != b"\x08\x06" or f[20:22] != b"\0\1":
            continue
        t = socket.inet_ntoa(f[38:42])
        counts[t] = counts.get(t, 0) + 1
    for t in sorted(counts):
        print("arp %s %d" % (t, counts[t]))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("big")
    b.add_argument("host")
    b.add_argument("port", type=int)
    b.add_argument("--conns", type=int, default=64)
    b.add_argument("--announce", type=int, default=16 << 20)
    b.add_argument("--send", type=int, default=(16 << 20) - 1)
    b.add_argument("--seconds", type=float, default=8)
    s = sub.add_parser("session")
    s.add_argument("host")
    s.add_argument("port", type=int)
    s.add_argument("--ips", default="198.18.0.99")
    s.add_argument("--probes", type=int, default=0)
    s.add_argument("--interval", type=float, default=0.02)
    s.add_argument("--pairs", choices=("repeat", "distinct"), default="repeat")
    s.add_argument("--ready")
    q = sub.add_parser("squat")
    q.add_argument("host")
    q.add_argument("port", type=int)
    q.add_argument("--conns", type=int, default=40)
    q.add_argument("--seconds", type=float, default=20)
    q.add_argument("--source")
    q.add_argument("--ready")
    t = sub.add_parser("trickle-server")
    t.add_argument("port", type=int)
    t.add_argument("--interval", type=float, default=5)
    t.add_argument("--seconds", type=float, default=60)
    t.add_argument("--ready")
    c = sub.add_parser("arpcount")
    c.add_argument("iface")
    c.add_argument("--seconds", type=float, default=5)
    c.add_argument("--ready")
    a = ap.parse_args()
    {"big": big, "session": session, "squat": squat, "trickle-server": trickle_server,
     "arpcount": arpcount}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
