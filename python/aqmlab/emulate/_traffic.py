"""aqmlab's own traffic programs, started inside the emulation's namespaces.

`python -m aqmlab.emulate._traffic recv PLAN` (receivers' namespace) and
`... send PLAN` (senders' namespace). PLAN is a JSON file written by
`aqmlab.emulate`: the run's duration, the sampling interval, the addresses and
ports, and one entry per flow (`aqmemu::plan::FlowPlan`, drawn from the simulator's
streams): `bulk` (a TCP sender that always has data until its `stop`, with the
kernel's congestion control `cc` set per socket with TCP_CONGESTION), `cbr`
(constant-bit-rate UDP, datagram k at `start + floor(k * size * 8 / rate)`, each
stamped with its send time so that the receiver measures one-way delay) or
`downloads` (a client in the receivers' namespace asks a server in the senders'
namespace for file after file: the file's data crosses the bottleneck as a bulk
flow's does). Flow `i` binds its socket to port `base_port + i` (the sender's for
bulk and CBR, the client's for downloads), which is how the bottleneck and the
receiver name it; a downloads group's server listens on `server_port + group`.

Once set up, each prints `ready` and waits for `go <t0_ns>` on stdin: the run's start
on CLOCK_MONOTONIC, the clock every process on the machine shares.

Both programs sample on the same grid, `t0 + k * interval`: the receiver the bytes
delivered to the application per flow, the sender the kernel's `tcp_info` per TCP
socket (cwnd, ssthresh, RTT, RTO, packets in flight, retransmissions, CA state).
The receiver also keeps one row per CBR datagram (arrival, sequence, size, one-way
delay, CE) and one per download (request, end). Each writes its results as JSON to
`PLAN.recv.json` / `PLAN.send.json`.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

# struct tcp_info up to tcpi_total_rto_time (Linux 6.7+); older kernels return less
TCP_INFO_LEN = 248
# SIOCETHTOOL and the legacy offload queries (include/uapi/linux/ethtool.h): each
# answers a struct ethtool_value { u32 cmd; u32 data; }
SIOCETHTOOL = 0x8946
ETHTOOL_QUERIES = {"tso": 0x1E, "gso": 0x23, "gro": 0x2B, "sg": 0x18}
UDP_HDR = struct.Struct("!IQQ")  # flow, sequence, send time (CLOCK_MONOTONIC ns)
REQUEST = struct.Struct("!IQ")  # a download request: its index within the flow, the size
# Linux tcp_ca_state -> aqmlab's CA_STATES (open, recovery, loss, cwr)
CA_MAP = {0: 0, 1: 0, 2: 3, 3: 1, 4: 2}
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
ECT0, CE = 0x02, 0x03
ZEROS = memoryview(bytes(1 << 16))


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
        # time (us) the connection was busy sending, limited by the receive window,
        # limited by the send buffer (RFC 4898's tcpEStatsPerf*; Linux 4.10)
        "busy_us": struct.unpack_from("Q", b, 168)[0] if len(b) >= 192 else 0,
        "rwnd_limited_us": struct.unpack_from("Q", b, 176)[0] if len(b) >= 192 else 0,
        "sndbuf_limited_us": struct.unpack_from("Q", b, 184)[0] if len(b) >= 192 else 0,
        # segments delivered (tcpi_delivered, Linux 4.18)
        "delivered": u32(192) if len(b) >= 196 else 0,
        # segments the receiver reported duplicate with D-SACK (tcpi_dsack_dups,
        # Linux 5.1) and reordering events seen (tcpi_reord_seen)
        "dsack_dups": u32(216) if len(b) >= 220 else 0,
        "reord_seen": u32(220) if len(b) >= 224 else 0,
        # tcpi_total_rto (Linux 6.7): retransmission timeouts over the connection,
        # and the recoveries they started (tcpi_total_rto_recoveries)
        "total_rto": struct.unpack_from("H", b, 240)[0] if len(b) >= 242 else 0,
        "total_rto_recoveries": struct.unpack_from("H", b, 242)[0] if len(b) >= 244 else 0,
    }


def offloads(dev: str) -> dict[str, bool | None]:
    """Which segmentation and receive offloads the device `dev` (in this process's
    namespace) has on: TSO, GSO, GRO and scatter-gather, read with SIOCETHTOOL's
    legacy queries, as `ethtool -k` shows them (None: the query failed)."""
    out: dict[str, bool | None] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name, cmd in ETHTOOL_QUERIES.items():
            # struct ifreq { char ifr_name[16]; void *ifr_data; } -> ethtool_value
            val = ctypes.create_string_buffer(struct.pack("II", cmd, 0), 8)
            ifreq = struct.pack("16sP", dev.encode()[:15], ctypes.addressof(val))
            try:
                fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
                out[name] = bool(struct.unpack("II", val.raw)[1])
            except OSError:
                out[name] = None
    return out


# the legacy ethtool set commands (ETHTOOL_STSO, _SGSO, _SGRO, _SSG)
ETHTOOL_SETS = {"tso": 0x1F, "gso": 0x24, "gro": 0x2C, "sg": 0x19}


def set_offloads(dev: str, want: dict[str, bool]) -> None:
    """Turn offloads of the device `dev` (in this process's namespace) on or off,
    as `ethtool -K DEV gso off` does (SIOCETHTOOL). One a device cannot change:
    say so on stdout (the parent shows the line) and exit."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name, on in want.items():
            val = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_SETS[name], int(on)), 8)
            ifreq = struct.pack("16sP", dev.encode()[:15], ctypes.addressof(val))
            try:
                fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
            except OSError as e:
                print(f"--offload {name}={'on' if on else 'off'}: the TUN device refuses it ({e.strerror})", flush=True)
                sys.exit(4)
    # a feature the device cannot have is accepted and stays as it was (TSO on a TUN
    # device without a virtio-net header): read back
    now = offloads(dev)
    for name, on in want.items():
        if now.get(name) != on:
            print(f"--offload {name}={'on' if on else 'off'}: the TUN device keeps it {'on' if now.get(name) else 'off'}", flush=True)
            sys.exit(4)


def congestion_control(sock: socket.socket) -> str:
    """The congestion control the kernel runs on this socket."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()


def tcp_counters() -> dict[str, int]:
    """The namespace's non-zero TCP counters (/proc/net/netstat TcpExt: HyStart
    detections, RACK and tail loss probes, SACK recoveries, ...): which of the
    kernel's mechanisms acted during the run."""
    out: dict[str, int] = {}
    try:
        lines = open("/proc/net/netstat").read().splitlines()
    except OSError:
        return out
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            for k, v in zip(names.split()[1:], values.split()[1:]):
                if v.isdigit() and int(v):
                    out[k] = int(v)
    return out


def wait_for_go(plan: dict[str, Any]) -> None:
    """Block until the parent sends `go <t0_ns>` on stdin: the run's start."""
    words = sys.stdin.readline().split()
    if len(words) != 2 or words[0] != "go":
        sys.exit(3)
    plan["t0_ns"] = int(words[1])


def connect_from(port: int, dst: tuple[str, int], cc: str | None, until_ns: int) -> socket.socket:
    """A TCP connection from local `port` (retried while the previous connection on
    that port is still closing: its 4-tuple is taken until the last ACK)."""
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        try:
            s.bind(("0.0.0.0", port))
            s.connect(dst)
            return s
        except OSError:
            s.close()
            if now_ns() >= until_ns:
                raise
            time.sleep(0.005)


def recv_main(plan: dict[str, Any], out: str, rt: bool) -> None:
    if plan.get("set_offloads") and plan.get("dev_recv"):
        set_offloads(plan["dev_recv"], plan["set_offloads"])
    interval, base = plan["interval_ns"], plan["base_port"]
    flows = plan["flows"]
    n = len(flows)
    delivered = [0] * n
    owd: list[list[int]] = [[] for _ in range(n)]
    udp_bytes = [0] * n
    datagrams: list[tuple[int, int, int, int, int, bool]] = []
    keep_datagrams = plan["datagrams"]
    transfers: list[list[int]] = []
    errors: list[str] = []
    rows: list[tuple[int, int, int]] = []
    sel = selectors.DefaultSelector()
    # one listener per congestion control of the bulk flows (accepted sockets
    # inherit it: the receiver's side of DCTCP echoes CE by its own state machine)
    listen = plan.get("listen", [[plan["port"], None]])
    for port, cc in listen:
        lt = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lt.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if cc:
            lt.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        lt.bind(("0.0.0.0", port))
        lt.listen(256)
        lt.setblocking(False)
        sel.register(lt, selectors.EVENT_READ, "listen")
    us = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    us.bind(("0.0.0.0", plan["port"]))
    us.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    us.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    us.setblocking(False)
    sel.register(us, selectors.EVENT_READ, "udp")
    print("ready", flush=True)
    wait_for_go(plan)
    t0, end = plan["t0_ns"], plan["t0_ns"] + plan["duration_ns"]

    def client(i: int, f: dict[str, Any]) -> None:
        """Download `f["sizes"]` one after another from the group's server, thinking
        `f["thinks_ns"][k]` after download k (aqmsim::traffic::Downloads)."""
        dst = (plan["dst_server"], plan["server_port"] + f["group"])
        stop = t0 + min(f["stop_ns"], plan["duration_ns"])
        buf = bytearray(1 << 16)
        s: socket.socket | None = None
        conn = -1
        at = t0 + f["start_ns"]
        try:
            for k, size in enumerate(f["sizes"]):
                if at >= stop:
                    break
                sleep_until(at)
                req = now_ns()
                if s is None:
                    s = connect_from(base + i, dst, f["cc"], min(end, req + 1_000_000_000))
                    s.settimeout(0.1)
                    conn += 1
                s.sendall(REQUEST.pack(k, size))
                row = [i, f["group"], k, conn, size, req - t0, -1]
                transfers.append(row)
                got = 0
                while got < size and now_ns() < end:
                    try:
                        m = s.recv_into(buf, min(len(buf), size - got))
                    except socket.timeout:
                        continue
                    if m == 0:
                        raise OSError("the server closed the connection early")
                    got += m
                    if now_ns() < end:
                        delivered[i] += m
                if got < size:
                    break
                done = now_ns()
                row[6] = done - t0
                if not f["persistent"]:
                    # the server closes first (HTTP/1.0 style): wait for its FIN, so
                    # that TIME_WAIT stays on the server's side and this port is free
                    try:
                        while s.recv_into(buf) > 0:
                            pass
                    except OSError:
                        pass
                    s.close()
                    s = None
                if k >= len(f["thinks_ns"]):
                    break
                at = done + f["thinks_ns"][k]
        except OSError as e:
            if now_ns() < end:
                errors.append(f"flow {i}: download: {e}")
        finally:
            if s is not None:
                s.close()

    clients = [threading.Thread(target=client, args=(i, f), daemon=True) for i, f in enumerate(flows) if f["app"] == "downloads"]
    for th in clients:
        th.start()
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
        if t >= end and (len(sel.get_map()) <= 1 + len(listen) or t >= end + 2_000_000_000):
            break
        timeout = max(0.0, min(t0 + k * interval, end) - t) / 1e9 if t < end else 0.05
        for key, _ in sel.select(timeout):
            what = key.data
            if what == "listen":
                try:
                    c, (_, port) = key.fileobj.accept()  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                c.setblocking(False)
                f = port - base
                sel.register(c, selectors.EVENT_READ, f if 0 <= f < n else -1)
            elif what == "udp":
                while True:
                    try:
                        m, anc, _, _ = us.recvmsg_into([buf], 64)
                    except BlockingIOError:
                        break
                    tr = now_ns()
                    if m >= UDP_HDR.size:
                        f, seq, ts = UDP_HDR.unpack_from(buf)
                        if 0 <= f < n and t0 <= tr < end:
                            tos = next((d[0] for lvl, typ, d in anc if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS and d), 0)
                            delivered[f] += m + 28 if flows[f]["app"] == "cbr" else m
                            udp_bytes[f] += m + 28
                            owd[f].append(tr - ts)
                            if keep_datagrams:
                                datagrams.append((tr - t0, f, seq, m + 28, tr - ts, tos & 3 == CE))
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
    for th in clients:
        th.join(timeout=2.0)
    with open(out, "w") as fh:
        json.dump(
            {
                "delivered": delivered,
                "udp_ip_bytes": udp_bytes,
                "rows": rows,
                "owd_ns": owd,
                "datagrams": datagrams,
                "transfers": transfers,
                "errors": errors,
                "counters": tcp_counters(),
                "offloads": offloads(plan["dev_recv"]) if plan.get("dev_recv") else {},
                "realtime": rt,
            },
            fh,
        )


class _Totals:
    """A flow's sender counters over all its connections (downloads open many)."""

    def __init__(self) -> None:
        self.closed: dict[str, int] = {
            k: 0 for k in ("total_retrans", "total_rto", "data_segs_out", "busy_us", "rwnd_limited_us", "sndbuf_limited_us", "dsack_dups", "total_rto_recoveries")
        }
        self.last: dict[str, int] | None = None
        self.min_rtt_us: int | None = None

    def close(self, info: dict[str, int] | None) -> None:
        if info:
            for key in self.closed:
                self.closed[key] += info[key]
            self.last = info
            if info["min_rtt_us"] and (self.min_rtt_us is None or info["min_rtt_us"] < self.min_rtt_us):
                self.min_rtt_us = info["min_rtt_us"]

    def final(self, info: dict[str, int] | None) -> dict[str, int] | None:
        self.close(info)
        if self.last is None:
            return None
        out = {**self.last, **self.closed}
        if self.min_rtt_us is not None:
            out["min_rtt_us"] = self.min_rtt_us
        return out


def send_main(plan: dict[str, Any], out: str, rt: bool) -> None:
    if plan.get("set_offloads") and plan.get("dev_send"):
        set_offloads(plan["dev_send"], plan["set_offloads"])
    base = plan["base_port"]
    flows = plan["flows"]
    socks: dict[int, socket.socket] = {}
    totals = {i: _Totals() for i in range(len(flows))}
    # the retransmissions and timeouts of each download: (flow, index) -> counters
    per_download: dict[str, list[int]] = {}
    final: dict[int, dict[str, Any]] = {}
    kernel_cc: dict[int, str] = {}
    errors: list[str] = []
    listeners: dict[int, socket.socket] = {}
    for i, f in enumerate(flows):
        g = f["group"]
        if f["app"] == "downloads" and g not in listeners:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # accepted connections inherit the listener's congestion control
            ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, f["cc"].encode())
            ls.bind(("0.0.0.0", plan["server_port"] + g))
            ls.listen(256)
            ls.settimeout(0.1)
            listeners[g] = ls
    print("ready", flush=True)
    wait_for_go(plan)
    t0, end = plan["t0_ns"], plan["t0_ns"] + plan["duration_ns"]
    interval = plan["interval_ns"]
    def bulk(i: int, f: dict[str, Any]) -> None:
        dst = (plan["dst"], f.get("dport", plan["port"]))
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
        stop = t0 + min(f["stop_ns"], plan["duration_ns"])
        while now_ns() < stop:
            try:
                s.send(ZEROS)
            except socket.timeout:
                continue
            except OSError as e:
                if now_ns() < end:
                    errors.append(f"flow {i}: send: {e}")
                break
        # after a `stop`, what was written is still delivered: keep the connection
        sleep_until(end)
        info = tcp_info(s)
        if info:
            final[i] = {**info, "cc": congestion_control(s)}

    def cbr(i: int, f: dict[str, Any]) -> None:
        dst = (plan["dst"], plan["port"])
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", base + i))
        if f.get("ecn"):
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECT0)
        size, rate = f["packet_size"], f["rate_bps"]
        payload = bytearray(max(size - 28, UDP_HDR.size))
        start = t0 + f["start_ns"]
        stop = t0 + min(f["stop_ns"], plan["duration_ns"])
        seq = 0
        while True:
            # datagram k leaves at start + floor(k * size * 8 / rate), exactly
            # (aqmsim::traffic::Cbr::send_time)
            t = start + seq * size * 8 * 1_000_000_000 // rate
            if t >= stop:
                break
            sleep_until(t)
            UDP_HDR.pack_into(payload, 0, i, seq, now_ns())
            try:
                s.sendto(payload, dst)
            except OSError:
                pass  # a full socket buffer: the datagram is lost before the bottleneck
            seq += 1
        final[i] = {"data_segs_out": seq}

    def serve(c: socket.socket, i: int, persistent: bool) -> None:
        """Answer the client's requests: `size` bytes each; close after one unless the
        connection is persistent."""
        c.settimeout(0.1)
        socks[i] = c
        kernel_cc[i] = congestion_control(c)
        req = bytearray(REQUEST.size)
        prev: tuple[int, int, int] | None = None  # (index, retrans, rto) at the last request

        def note(info: dict[str, int] | None) -> None:
            if prev is not None and info is not None:
                per_download[f"{i}.{prev[0]}"] = [info["total_retrans"] - prev[1], info["total_rto"] - prev[2]]

        try:
            while now_ns() < end:
                got = 0
                while got < len(req) and now_ns() < end:
                    try:
                        m = c.recv_into(memoryview(req)[got:])
                    except socket.timeout:
                        continue
                    if m == 0:
                        raise EOFError
                    got += m
                if got < len(req):
                    break
                k, size = REQUEST.unpack(req)
                info = tcp_info(c)
                note(info)
                prev = (k, info["total_retrans"], info["total_rto"]) if info else None
                left = size
                while left > 0 and now_ns() < end:
                    try:
                        left -= c.send(ZEROS[: min(left, len(ZEROS))])
                    except socket.timeout:
                        continue
                if not persistent:
                    # HTTP/1.0: the server closes after the response; its FIN follows
                    # the data. Wait for the client's close to read the final counters.
                    c.shutdown(socket.SHUT_WR)
                    while now_ns() < end:
                        try:
                            if c.recv_into(req) == 0:
                                break
                        except socket.timeout:
                            continue
                    break
        except (EOFError, OSError):
            pass
        info = tcp_info(c)
        note(info)
        if socks.get(i) is c:
            del socks[i]
        totals[i].close(info)
        c.close()

    def accept(ls: socket.socket) -> None:
        while now_ns() < end:
            try:
                c, (_, port) = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            i = port - base
            if not (0 <= i < len(flows)) or flows[i]["app"] != "downloads":
                c.close()
                continue
            threading.Thread(target=serve, args=(c, i, flows[i]["persistent"]), daemon=True).start()

    app = {"bulk": bulk, "cbr": cbr}
    threads = [threading.Thread(target=app[f["app"]], args=(i, f), daemon=True) for i, f in enumerate(flows) if f["app"] in app]
    threads += [threading.Thread(target=accept, args=(ls,), daemon=True) for ls in listeners.values()]
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
    for i, f in enumerate(flows):
        if f["app"] == "downloads":
            s = socks.get(i)
            done = totals[i].final(tcp_info(s) if s is not None else None)
            if done:
                final[i] = {**done, "cc": kernel_cc.get(i)}
    for s in list(socks.values()):
        s.close()
    with open(out, "w") as fh:
        json.dump(
            {
                "rows": rows,
                "final": {str(k): v for k, v in final.items()},
                "errors": errors,
                "per_download": per_download,
                "counters": tcp_counters(),
                "offloads": offloads(plan["dev_send"]) if plan.get("dev_send") else {},
                "realtime": rt,
            },
            fh,
        )


def _die_with_parent() -> None:
    """Die with the emulation that started us, however it ends (even SIGKILL)."""
    import os

    from aqmlab.interrupts import die_with_parent

    parent = os.environ.get("AQMLAB_EMULATE_PARENT")
    die_with_parent(int(parent) if parent and parent.isdigit() else None)


# The bottleneck's SCHED_FIFO priority (crates/aqmemu, `sys::realtime_priority`).
REALTIME_PRIORITY = 10


def realtime() -> bool:
    """SCHED_FIFO at the bottleneck's priority for this program and the threads it
    starts after (they inherit the policy): on a loaded machine the applications'
    writes into and reads from their sockets then wait no longer than the
    bottleneck's loop does, so the kernel's TCP is not held back by an application
    the scheduler left aside. False where it cannot be had (not root)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))
        return True
    except (OSError, AttributeError):
        return False


def main(argv: list[str]) -> int:
    mode, plan_path = argv[0], argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    _die_with_parent()
    rt = realtime()
    with open(plan_path) as fh:
        plan = json.load(fh)
    if mode == "recv":
        recv_main(plan, plan_path + ".recv.json", rt)
    elif mode == "send":
        send_main(plan, plan_path + ".send.json", rt)
    else:
        print(f"unknown mode {mode}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
