"""aqmlab's own traffic programs, started inside the emulation's namespaces.

`python -m aqmlab.emulate._traffic recv PLAN` (receivers' namespace) and
`... send PLAN` (senders' namespace). PLAN is a JSON file written by
`aqmlab.emulate`: the run's duration, the sampling interval, the receiver's
address and port, and one entry per flow: `tcp` (a bulk transfer with the kernel's
congestion control `cc`, set per socket with TCP_CONGESTION) or `udp` (constant bit
rate, each datagram stamped with its send time so the receiver measures one-way
delay). Flow `i` binds its sender socket to port `base_port + i`, which is how the
bottleneck and the receiver name it.

Once set up, each prints `ready` and waits for `go <t0_ns>` on stdin: the run's start
on CLOCK_MONOTONIC, the clock every process on the machine shares.

Both programs sample on the same grid, `t0 + k * interval`: the receiver the bytes
delivered to the application per flow, the sender the kernel's `tcp_info` per TCP
socket (cwnd, ssthresh, RTT, RTO, packets in flight, retransmissions, CA state).
Each writes its results as JSON to `PLAN.recv.json` / `PLAN.send.json`.
"""

from __future__ import annotations

import json
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

TCP_INFO_LEN = 232
UDP_HDR = struct.Struct("!IQQ")  # flow, sequence, send time (CLOCK_MONOTONIC ns)
# Linux tcp_ca_state -> aqmlab's CA_STATES (open, recovery, loss, cwr)
CA_MAP = {0: 0, 1: 0, 2: 3, 3: 1, 4: 2}


def now_ns() -> int:
    return time.monotonic_ns()


def sleep_until(t_ns: int) -> None:
    while True:
        d = t_ns - now_ns()
        if d <= 0:
            return
        time.sleep(min(d / 1e9, 0.05))


def tcp_info(sock: socket.socket) -> dict[str, int] | None:
    """The fields of Linux's `struct tcp_info` (include/uapi/linux/tcp.h) we record."""
    try:
        b = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    except OSError:
        return None
    if len(b) < 160:
        return None
    u32 = lambda off: struct.unpack_from("I", b, off)[0]  # noqa: E731
    return {
        "ca_state": b[1],
        "rto_us": u32(8),
        "mss": u32(16),
        "unacked": u32(24),
        "sacked": u32(28),
        "lost": u32(32),
        "retrans": u32(36),
        "rtt_us": u32(68),
        "ssthresh": u32(76),
        "cwnd": u32(80),
        "total_retrans": u32(100),
        "bytes_acked": struct.unpack_from("Q", b, 120)[0],
        "min_rtt_us": u32(148),
        "data_segs_out": u32(156),
    }


def wait_for_go(plan: dict[str, Any]) -> None:
    """Block until the parent sends `go <t0_ns>` on stdin: the run's start."""
    words = sys.stdin.readline().split()
    if len(words) != 2 or words[0] != "go":
        sys.exit(3)
    plan["t0_ns"] = int(words[1])


def recv_main(plan: dict[str, Any], out: str) -> None:
    interval, base = plan["interval_ns"], plan["base_port"]
    n = len(plan["flows"])
    delivered = [0] * n
    owd: list[list[int]] = [[] for _ in range(n)]
    udp_bytes = [0] * n
    rows: list[tuple[int, int, int]] = []
    sel = selectors.DefaultSelector()
    lt = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lt.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lt.bind(("0.0.0.0", plan["port"]))
    lt.listen(256)
    lt.setblocking(False)
    sel.register(lt, selectors.EVENT_READ, "listen")
    us = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    us.bind(("0.0.0.0", plan["port"]))
    us.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    us.setblocking(False)
    sel.register(us, selectors.EVENT_READ, "udp")
    print("ready", flush=True)
    wait_for_go(plan)
    t0, end = plan["t0_ns"], plan["t0_ns"] + plan["duration_ns"]
    buf = bytearray(1 << 18)
    mv = memoryview(buf)
    k = 1
    while True:
        t = now_ns()
        while t0 + k * interval <= min(t, end):
            rows.extend((k * interval, f, delivered[f]) for f in range(n))
            k += 1
        # after the end, drain until the senders have closed (counting nothing), so
        # that no sender sees its connection reset
        if t >= end and (len(sel.get_map()) <= 2 or t >= end + 2_000_000_000):
            break
        timeout = max(0.0, min(t0 + k * interval, end) - t) / 1e9 if t < end else 0.05
        for key, _ in sel.select(timeout):
            what = key.data
            if what == "listen":
                try:
                    c, (_, port) = lt.accept()
                except BlockingIOError:
                    continue
                c.setblocking(False)
                f = port - base
                sel.register(c, selectors.EVENT_READ, f if 0 <= f < n else -1)
            elif what == "udp":
                while True:
                    try:
                        m = us.recv_into(buf)
                    except BlockingIOError:
                        break
                    tr = now_ns()
                    if m >= UDP_HDR.size:
                        f, _, ts = UDP_HDR.unpack_from(buf)
                        if 0 <= f < n and t0 <= tr < end:
                            delivered[f] += m
                            udp_bytes[f] += m + 28
                            owd[f].append(tr - ts)
            else:
                try:
                    m = key.fileobj.recv_into(mv)  # type: ignore[union-attr]
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    m = 0
                if m == 0:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
                elif what >= 0 and t0 <= now_ns() < end:
                    delivered[what] += m
    with open(out, "w") as fh:
        json.dump({"delivered": delivered, "udp_ip_bytes": udp_bytes, "rows": rows, "owd_ns": owd}, fh)


def send_main(plan: dict[str, Any], out: str) -> None:
    print("ready", flush=True)
    wait_for_go(plan)
    t0, end = plan["t0_ns"], plan["t0_ns"] + plan["duration_ns"]
    interval, base = plan["interval_ns"], plan["base_port"]
    dst = (plan["dst"], plan["port"])
    flows = plan["flows"]
    socks: dict[int, socket.socket] = {}
    final: dict[int, dict[str, int]] = {}
    errors: list[str] = []

    def bulk(i: int, f: dict[str, Any]) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, f["cc"].encode())
        s.bind(("0.0.0.0", base + i))
        sleep_until(t0 + f["start_ns"])
        try:
            s.connect(dst)
        except OSError as e:
            errors.append(f"flow {i}: connect: {e}")
            return
        socks[i] = s
        s.settimeout(0.1)
        chunk = memoryview(bytes(1 << 16))
        while now_ns() < end:
            try:
                s.send(chunk)
            except socket.timeout:
                continue
            except OSError as e:
                if now_ns() < end:
                    errors.append(f"flow {i}: send: {e}")
                break
        info = tcp_info(s)
        if info:
            final[i] = info

    def cbr(i: int, f: dict[str, Any]) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", base + i))
        payload = bytearray(max(f["size"] - 28, UDP_HDR.size))
        gap = f["size"] * 8 * 1_000_000_000 // f["rate_bps"]
        t, seq = t0 + f["start_ns"], 0
        while t < end:
            sleep_until(t)
            UDP_HDR.pack_into(payload, 0, i, seq, now_ns())
            try:
                s.sendto(payload, dst)
            except OSError:
                pass  # a full socket buffer: the datagram is lost before the bottleneck
            seq += 1
            t += gap
        final[i] = {"data_segs_out": seq}

    threads = [threading.Thread(target=bulk if f["proto"] == "tcp" else cbr, args=(i, f), daemon=True) for i, f in enumerate(flows)]
    for th in threads:
        th.start()
    rows: list[dict[str, int]] = []
    k = 1
    while t0 + k * interval <= end:
        sleep_until(t0 + k * interval)
        for i, s in list(socks.items()):
            info = tcp_info(s)
            if info:
                rows.append({"t": k * interval, "flow": i, **info})
        k += 1
    for th in threads:
        th.join(timeout=2.0)
    for s in socks.values():
        s.close()
    with open(out, "w") as fh:
        json.dump({"rows": rows, "final": {str(k): v for k, v in final.items()}, "errors": errors}, fh)


def main(argv: list[str]) -> int:
    mode, plan_path = argv[0], argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    with open(plan_path) as fh:
        plan = json.load(fh)
    if mode == "recv":
        recv_main(plan, plan_path + ".recv.json")
    elif mode == "send":
        send_main(plan, plan_path + ".send.json")
    else:
        print(f"unknown mode {mode}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
