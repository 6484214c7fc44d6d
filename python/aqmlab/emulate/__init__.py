"""`aqmlab emulate`: a scenario on the real Linux TCP stack, through a userspace
bottleneck that runs the same AQM code as the simulator.

Layout of a run (all objects named after the run, so that runs can coexist):

    [aqe-<id>-snd]  senders ── TUN aqe<id>s ─┐
                                             │  bottleneck process (Rust, aqmemu):
                                             │  AQM queue + link rate + delay, each way
    [aqe-<id>-rcv]  receivers ─ TUN aqe<id>r ┘

The bottleneck runs in its own process (`aqmlab.emulate._bottleneck`), so that a
crash of it is a real process crash: its TUN devices vanish with it, and this module
notices, stops the traffic, removes the namespaces and reports the error. The
traffic programs (`aqmlab.emulate._traffic`) run in the namespaces on the kernel's
TCP (congestion control set per socket, ECN through the namespaces' sysctl).

Nothing outlives a run: the bottleneck and the traffic programs die with this
process (PR_SET_PDEATHSIG), whatever ends it; every exit path that runs Python code
(the end, an error, Ctrl-C, SIGTERM) removes the namespaces and the work folder; and
a guard process (`_guard.py`) does the same when this process is killed outright.

The run folder has the files of a simulated run, built from the bottleneck's records
and the traffic programs' samples, so `summary.json` has the same keys.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..results import RunResult
from ..scenario import ScenarioLike, source
from . import bpf_cc, netns
from .netns import EmulationError, Names

__all__ = ["emulate", "Cbr", "EmulationError", "cleanup_all", "leftovers"]

cleanup_all = netns.cleanup_all
leftovers = netns.leftovers

BASE_PORT = 20000
PORT = 5201
# a downloads group's server listens on SERVER_PORT + its group index (below BASE_PORT)
SERVER_PORT = 6000
# From "go" to the run's start.
LEAD_NS = 100_000_000
AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"


@dataclass(frozen=True)
class Cbr:
    """A constant-bit-rate UDP flow added to the scenario's traffic (used by the
    accuracy tests: rate and one-way delay measured end to end)."""

    name: str
    rate_bps: int
    size_bytes: int = 1200
    start_ns: int = 0


def _duration_ns(text: str) -> int:
    from ..measures import duration_ns as _ns

    return _ns(text)


def _plan_flows(
    src: Any, overrides: list[str], seed: int | None, sc: dict[str, Any], cbr: Sequence[Cbr], scenario_flows: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One entry per flow and one per group, in the simulator's order, with the
    simulator's draws (start times, path delays, file sizes, think times: see
    `aqmemu::plan`), then the extra CBR flows."""
    for gi, g in enumerate(sc["flows"]):
        recv = (g.get("tcp") or {}).get("receiver") or {}
        if recv.get("kind", "drs") != "drs":
            raise EmulationError(f"flows[{gi}].tcp.receiver: \"{recv['kind']}\" is not emulated: the receivers are Linux's (receive-window auto-tuning)")
    if sc["record"].get("pcap"):
        raise EmulationError("record.pcap: the simulator's synthetic captures; capture an emulated run's real packets with tcpdump on its TUN devices")
    plan = json.loads(_core.emulation_plan(src.text, src.format, overrides, seed, src.base_dir))
    flows, groups = (plan["flows"], plan["groups"]) if scenario_flows else ([], [])
    duration = _duration_ns(sc["duration"])
    a, b = _duration_ns(sc["access"]["delay"]), sc["bottleneck"]
    fwd, rev = 2 * a + _duration_ns(b["delay"]), 2 * a + _duration_ns(b.get("reverse_delay") or b["delay"])
    for c in cbr:
        flows.append({"app": "cbr", "group": len(groups), "rate_bps": c.rate_bps, "packet_size": c.size_bytes, "ecn": False, "cc": None,
                      "start_ns": c.start_ns, "stop_ns": duration, "fwd_delay_ns": fwd, "rev_delay_ns": rev})
        groups.append({"name": c.name, "kind": "cbr", "count": 1, "cc": None, "receiver": None, "base_rtt_ns": fwd + rev,
                       "first_flow": len(flows) - 1, "sizes": None, "rate_bps": c.rate_bps, "packet_size": c.size_bytes})
    return flows, groups


def check_kernel_cc(flows: list[dict[str, Any]], path: str = AVAILABLE_CC) -> None:
    """Every congestion control the plan's TCP flows use (Linux names, from
    `aqmemu::plan::kernel_cc`) is in the kernel, or loads with `modprobe tcp_NAME`,
    or (`dctcp`) as aqmlab's BPF port (`bpf_cc`), which then replaces the name in
    `flows`; else a one-line error naming the field."""

    def available() -> set[str]:
        try:
            return set(Path(path).read_text().split())
        except OSError:
            return set()

    have = available()
    ported: dict[str, str] = {}
    for f in flows:
        want = f.get("cc")
        if want in ported:
            f["cc"] = ported[want]
            continue
        if want is None or want in have:
            continue
        tried = "no modprobe to load tcp_" + want
        if shutil.which("modprobe"):
            r = subprocess.run(["modprobe", f"tcp_{want}"], capture_output=True, text=True)
            have = available()
            if want in have:
                continue
            tried = f"modprobe tcp_{want} failed: " + ((r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1])
        port = bpf_cc.port_of(want)
        if port is not None:
            try:
                f["cc"] = ported[want] = bpf_cc.ensure(want, have)
                continue
            except bpf_cc.BpfUnavailable as e:
                tried += f"; its BPF port {port} could not be loaded: {e}"
        raise EmulationError(f"flows[{f['group']}].tcp.cc: the kernel has no \"{want}\" congestion control (it has: {', '.join(sorted(have)) or 'none listed'}; {tried})")


OFFLOADS = ("tso", "gso", "gro", "sg")


def parse_offloads(spec: dict[str, bool] | Sequence[str]) -> dict[str, bool]:
    """`{"gso": False}`, or the CLI's ["gso=off", ...]: checked, one-line errors."""
    items = spec.items() if isinstance(spec, dict) else [tuple(x.split("=", 1)) if "=" in x else (x, None) for x in spec]
    out: dict[str, bool] = {}
    for name, v in items:
        if name not in OFFLOADS:
            raise EmulationError(f"--offload: unknown offload \"{name}\" (expected one of: {', '.join(OFFLOADS)})")
        if isinstance(v, str):
            if v not in ("on", "off"):
                raise EmulationError(f"--offload: {name}={v}: expected on or off")
            v = v == "on"
        if not isinstance(v, bool):
            raise EmulationError(f"--offload: {name}: expected NAME=on or NAME=off")
        out[name] = v
    return out


def read_trace(path: str | os.PathLike[str]) -> list[int]:
    """A Mahimahi trace: one delivery opportunity per line, its time in ms."""
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise EmulationError(f"--trace: cannot read \"{path}\": {e.strerror}") from None
    for i, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if not line.isdigit():
            raise EmulationError(f"--trace: {path}:{i}: expected a time in milliseconds, got \"{line}\"")
        out.append(int(line))
    if not out or out[-1] == 0 or any(b < a for a, b in zip(out, out[1:])):
        raise EmulationError(f"--trace: {path}: expected non-decreasing times in ms ending after 0 ms")
    return out


def _readline(p: subprocess.Popen[bytes], timeout: float) -> str:
    """A line from a child's stdout, or '' if it exited or timed out."""
    assert p.stdout is not None
    r, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline().decode().strip() if r else ""


PARENT_ENV = "AQMLAB_EMULATE_PARENT"


def _spawn(args: list[str], ns: str | None = None, **kw: Any) -> subprocess.Popen[bytes]:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + [sys.executable, *args]
    # a session of their own: Ctrl-C reaches this process only, and we stop them; they
    # die with this process (`ip netns exec` runs them in place, so we are the parent)
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    return subprocess.Popen(cmd, start_new_session=True, env=env, **kw)


def _start_guard(work: Path, run_id: str) -> subprocess.Popen[bytes]:
    from .. import interrupts

    g = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_guard.py")), str(work), run_id],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    interrupts.spare(g.pid)  # a forced exit must leave it to clean up
    return g


def _release_guard(g: subprocess.Popen[bytes] | None) -> None:
    """The run is cleaned up: tell the guard so, and let it go."""
    if g is None:
        return
    try:
        assert g.stdin is not None
        g.stdin.write(b"done\n")
        g.stdin.close()
        g.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        g.kill()
        g.wait()


def _stop(p: subprocess.Popen[bytes] | None) -> None:
    if p is None or p.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def emulate(
    scenario: ScenarioLike,
    overrides: Sequence[str] = (),
    seed: int | None = None,
    cbr: Sequence[Cbr] = (),
    progress: Any = None,
    run_id: str | None = None,
    scenario_flows: bool = True,
    trace: str | os.PathLike[str] | None = None,
    offloads: dict[str, bool] | None = None,
) -> RunResult:
    """Run `scenario` on real traffic and return its results (nothing is written).

    `cbr` adds constant-bit-rate UDP flows; `scenario_flows=False` leaves out the
    scenario's own flow groups (the accuracy tests measure the bottleneck with CBR only);
    `offloads` turns the TUN devices' offloads on or off ({"gso": False}; Linux's TCP
    builds multi-segment skbs whatever the device says, segmented in software)."""
    netns.preflight()
    offloads = parse_offloads(offloads or {})
    trace_ms = read_trace(trace) if trace is not None else None
    src = source(scenario)
    overrides = list(overrides)
    sc = json.loads(_core.resolve_scenario(src.text, src.format, overrides, seed, src.base_dir))
    seed = sc["seed"]
    flows, groups = _plan_flows(src, overrides, seed, sc, cbr, scenario_flows)
    if not scenario_flows:
        sc["flows"] = []
    check_kernel_cc(flows)
    tcp_groups = [g for g in sc["flows"] if g["kind"] != "cbr"]
    if len({bool(g["tcp"]["slow_start_after_idle"]) for g in tcp_groups}) > 1:
        raise EmulationError("flows: tcp.slow_start_after_idle differs between groups; the emulated senders share one kernel setting (net.ipv4.tcp_slow_start_after_idle)")
    names = Names(run_id or secrets.token_hex(3))
    from .. import interrupts

    with interrupts.sigterm_raises():
        work = Path(tempfile.mkdtemp(prefix=netns.work_prefix(names.run_id)))
        guard = None
        try:
            guard = _start_guard(work, names.run_id)
            return _run(names, work, src, overrides, seed, sc, flows, groups, trace_ms, progress, offloads)
        finally:
            with interrupts.deferred():  # a first signal does not cut the cleanup short
                netns.remove_run(names, work)
                _release_guard(guard)


def _run(names: Names, work: Path, src: Any, overrides: list[str], seed: int, sc: dict[str, Any], flows: list[dict[str, Any]],
         groups: list[dict[str, Any]], trace_ms: list[int] | None, progress: Any, offloads: dict[str, bool] | None = None) -> RunResult:
    tcp_groups = [g for g in sc["flows"] if g["kind"] != "cbr"]
    ecn = any(g["tcp"]["ecn"] for g in tcp_groups)
    ssai = {bool(g["tcp"]["slow_start_after_idle"]) for g in tcp_groups}
    duration_ns = _duration_ns(sc["duration"])
    interval_ns = _duration_ns(sc["record"]["interval"])
    procs: dict[str, subprocess.Popen[bytes] | None] = {"bottleneck": None, "recv": None, "send": None}
    wall0 = time.perf_counter()
    try:
        spec = {
            "text": src.text,
            "format": src.format,
            "overrides": overrides,
            "seed": seed,
            "tun_senders": names.tun_snd,
            "tun_receivers": names.tun_rcv,
            "base_port": BASE_PORT,
            "flows": len(flows),
            # the bottleneck's spin margin (ns) before deadlines, for measurements
            "spin_ns": int(os.environ["AQMLAB_EMULATE_SPIN_NS"]) if os.environ.get("AQMLAB_EMULATE_SPIN_NS") else None,
            "trace_ms": trace_ms,
            "base_dir": src.base_dir,
            # each flow's one-way path delays, data and return direction
            "delays_ns": [[f["fwd_delay_ns"], f["rev_delay_ns"]] for f in flows],
            # the groups' names and each flow's, for the recorder's per-group histograms
            "groups": [[g["name"] for g in groups], [f["group"] for f in flows]],
        }
        (work / "bottleneck.json").write_text(json.dumps(spec))
        npz = work / "bottleneck.npz"
        b = procs["bottleneck"] = _spawn(["-m", "aqmlab.emulate._bottleneck", str(work / "bottleneck.json"), str(npz)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if _readline(b, 10.0) != "ready":
            raise EmulationError(f"the bottleneck process did not start (exit code {b.poll()})")
        netns.build(names, ecn, slow_start_after_idle=ssai != {False})
        try:
            netns.attach(names)
        except EmulationError:
            # its devices vanish with it: say so rather than that a device is missing
            time.sleep(0.1)
            if b.poll() is not None:
                raise EmulationError(f"the bottleneck process died (exit code {b.poll()}); the run is lost") from None
            raise
        # the receivers run each flow's congestion control too (DCTCP's CE echo is
        # the receiving socket's, tcp_dctcp.h): one listener per congestion control
        # of the bulk flows, on PORT, PORT + 1, ...
        listen = sorted({f["cc"] for f in flows if f["app"] == "bulk"})
        for f in flows:
            if f["app"] == "bulk":
                f["dport"] = PORT + listen.index(f["cc"])
        plan = {
            "listen": [[PORT + k, cc] for k, cc in enumerate(listen)],
            "duration_ns": duration_ns,
            "interval_ns": interval_ns,
            "dst": netns.RCV_ADDR,
            "port": PORT,
            "dst_server": netns.SND_ADDR,
            "server_port": SERVER_PORT,
            "base_port": BASE_PORT,
            "datagrams": bool(sc["record"]["datagrams"]),
            "flows": flows,
            # each side's TUN device, whose offloads the programs report
            "dev_send": names.tun_snd,
            "dev_recv": names.tun_rcv,
            # offloads to turn on or off on both devices before any socket exists
            "set_offloads": offloads or {},
        }
        plan_path = work / "plan.json"
        plan_path.write_text(json.dumps(plan))
        r = procs["recv"] = _spawn(["-m", "aqmlab.emulate._traffic", "recv", str(plan_path)], ns=names.ns_rcv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = _readline(r, 15.0)
        if line != "ready":
            raise EmulationError("the receiver program did not start" + (f": {line}" if line else ""))
        snd = procs["send"] = _spawn(["-m", "aqmlab.emulate._traffic", "send", str(plan_path)], ns=names.ns_snd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = _readline(snd, 15.0)
        if line != "ready":
            raise EmulationError("the sender program did not start" + (f": {line}" if line else ""))
        # everything is up: the run starts shortly, at the same instant for all three
        t0 = time.monotonic_ns() + LEAD_NS
        for p, line in ((b, f"start {t0} {duration_ns}"), (r, f"go {t0}"), (snd, f"go {t0}")):
            _tell(procs, p, f"{line}\n")
        end = t0 + duration_ns
        while True:
            code = b.poll()
            if code is not None:
                raise EmulationError(f"the bottleneck process died (exit code {code}); the run is lost")
            if all(procs[k].poll() is not None for k in ("recv", "send")):  # type: ignore[union-attr]
                break
            if time.monotonic_ns() > end + 15_000_000_000:
                raise EmulationError("the traffic programs did not finish")
            if progress is not None:
                progress(min(1.0, max(0.0, (time.monotonic_ns() - t0) / duration_ns)))
            time.sleep(0.05)
        for k in ("recv", "send"):
            if procs[k].returncode != 0:  # type: ignore[union-attr]
                raise EmulationError(f"the {k} program failed (exit code {procs[k].returncode})")  # type: ignore[union-attr]
        _tell(procs, b, "stop\n", close=True)
        if _readline(b, 30.0) != "done" or b.wait(10) != 0:
            raise EmulationError(f"the bottleneck process failed (exit code {b.poll()})")
        wall = time.perf_counter() - wall0
        recv = json.loads((work / "plan.json.recv.json").read_text())
        send = json.loads((work / "plan.json.send.json").read_text())
        if send["errors"] or recv["errors"]:
            raise EmulationError("traffic: " + "; ".join((send["errors"] + recv["errors"])[:3]))
        with np.load(npz) as z:
            bn = {k: z[k] for k in z.files}
        raw = _assemble(sc, seed, groups, flows, bn, recv, send, wall, names.run_id)
        result = RunResult(raw)
        # the keys of a simulated run, plus how the emulation itself went
        em = result.meta["emulated"]
        result.summary["emulation"] = {
            **{k: em[k] for k in ("run_id", "kernel", "bottleneck_cpu_seconds", "delivery_lateness_us", "bottleneck_realtime", "ignored_packets", "write_errors")},
            # deliveries more than 1 ms late (the first 100 are listed in the metadata)
            "stalls": len(em["stalls_ns"]),
            # the senders' namespace's non-zero TcpExt counters (HyStart, RACK, TLP, ...)
            "sender_tcp_counters": send.get("counters", {}),
            # the receivers' (delayed and stretched ACKs: TCPDelayedACKs,
            # TCPBacklogCoalesce, TCPDelayedACKLocked, ...)
            "receiver_tcp_counters": recv.get("counters", {}),
            # over all TCP flows (tcp_info): seconds busy sending, and of those limited
            # by the receiver's window or by the send buffer
            "sender_limits_s": {
                k: sum(v.get(f"{k}_us", 0) for v in send["final"].values()) / 1e6 for k in ("busy", "rwnd_limited", "sndbuf_limited")
            },
            # the kernel's per-connection counters at the end, per flow (tcp_info;
            # 0 for UDP flows): D-SACKed segments, reorderings seen, timeouts that
            # started a recovery
            "flow_counters": {
                k: [int(send["final"].get(str(i), {}).get(k, 0)) for i in range(len(flows))] for k in ("dsack_dups", "reord_seen", "total_rto_recoveries")
            },
            # whether the senders' and receivers' programs ran under SCHED_FIFO, at the
            # bottleneck's priority
            "traffic_realtime": bool(send.get("realtime")) and bool(recv.get("realtime")),
            # segmentation and receive offloads of the TUN devices (ethtool -k)
            "offloads": {"senders": send.get("offloads", {}), "receivers": recv.get("offloads", {})},
        }
        return result
    finally:
        for k in ("send", "recv", "bottleneck"):
            _stop(procs[k])


def _tell(procs: dict[str, Any], p: subprocess.Popen[bytes], line: str, close: bool = False) -> None:
    """Write a command line to a child's stdin. A child that died meanwhile (killed
    before the run started, say) is an EmulationError naming it, not a broken pipe
    (which the CLI would take for a closed output and exit quietly)."""
    assert p.stdin is not None
    try:
        p.stdin.write(line.encode())
        p.stdin.flush()
        if close:
            p.stdin.close()
    except BrokenPipeError:
        name = next(k for k, q in procs.items() if q is p)
        try:
            code: int | None = p.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        if name == "bottleneck":
            raise EmulationError(f"the bottleneck process died (exit code {code}); the run is lost") from None
        raise EmulationError(f"the {name} program died (exit code {code}); the run is lost") from None

def _assemble(sc, seed, groups, flows, bn, recv, send, wall, run_id) -> dict[str, Any]:
    """The raw dict `RunResult` reads, from the bottleneck's records and the traffic samples."""
    bmeta = json.loads(str(bn["meta"]))
    packets, link_series, histograms = ({k.split(".", 1)[1]: v for k, v in bn.items() if k.startswith(t + ".")} for t in ("packets", "link_series", "histograms"))
    n = len(flows)
    # per-flow drops and marks at the bottleneck, as its recorder counted them
    drops, ack_drops, marks = (np.array(bmeta[k], dtype=np.uint64) for k in ("flow_drops", "flow_ack_drops", "flow_marks"))
    final = {int(k): v for k, v in send["final"].items()}

    def fin(i: int, key: str, default: int = 0) -> int:
        return int(final.get(i, {}).get(key, default))

    # downloads: one row per request the clients made
    tr = recv["transfers"]
    per_dl = send.get("per_download", {})
    done = [r[6] >= 0 for r in tr]

    def counter(r: list[int], j: int) -> int:
        c = per_dl.get(f"{r[0]}.{r[2]}")
        return int(c[j]) if c is not None and r[6] >= 0 else -1

    transfers = {
        "flow": np.array([r[0] for r in tr], dtype=np.uint32),
        "group": np.array([r[1] for r in tr], dtype=np.uint16),
        "index": np.array([r[2] for r in tr], dtype=np.uint32),
        "conn": np.array([r[3] for r in tr], dtype=np.uint32),
        "size_bytes": np.array([r[4] for r in tr], dtype=np.uint64),
        "request_ns": np.array([r[5] for r in tr], dtype=np.uint64),
        "end_ns": np.array([r[6] for r in tr], dtype=np.int64),
        "retransmits": np.array([counter(r, 0) for r in tr], dtype=np.int64),
        "timeouts": np.array([counter(r, 1) for r in tr], dtype=np.int64),
    }
    completed = np.bincount(transfers["flow"][np.array(done, dtype=bool)], minlength=n)[:n] if tr else np.zeros(n, dtype=np.int64)
    # a `transfer` ends when its one file has arrived
    end_ns = np.full(n, -1, dtype=np.int64)
    for r in tr:
        if groups[r[1]]["kind"] == "transfer" and r[6] >= 0:
            end_ns[r[0]] = r[6]
    dg = recv["datagrams"]
    datagrams = {
        "time_ns": np.array([d[0] for d in dg], dtype=np.uint64),
        "flow": np.array([d[1] for d in dg], dtype=np.uint32),
        "seq": np.array([d[2] for d in dg], dtype=np.uint64),
        "size": np.array([d[3] for d in dg], dtype=np.uint32),
        "delay_ns": np.array([d[4] for d in dg], dtype=np.uint64),
        "ce": np.array([d[5] for d in dg], dtype=bool),
    }
    udp_sent = np.array([fin(i, "data_segs_out") for i in range(n)])
    table = {
        "flow": np.arange(n, dtype=np.uint32),
        "group": np.array([f["group"] for f in flows], dtype=np.uint16),
        "start_ns": np.array([f["start_ns"] for f in flows], dtype=np.uint64),
        "end_ns": end_ns,
        "bytes_delivered": np.array(recv["delivered"], dtype=np.uint64),
        "segments_sent": udp_sent.astype(np.uint64),
        "retransmits": np.array([fin(i, "total_retrans") for i in range(n)], dtype=np.uint64),
        # tcpi_total_rto (Linux 6.7+); Linux's tcp_info counts no recoveries or ECN reductions
        "timeouts": np.array([fin(i, "total_rto") for i in range(n)], dtype=np.uint64),
        "recoveries": np.zeros(n, dtype=np.uint64),
        "ecn_reductions": np.zeros(n, dtype=np.uint64),
        "drops": drops.astype(np.uint64),
        "ack_drops": ack_drops.astype(np.uint64),
        "marks": marks.astype(np.uint64),
        "min_rtt_ns": np.array([fin(i, "min_rtt_us", -1) * 1000 if i in final and "min_rtt_us" in final[i] else -1 for i in range(n)], dtype=np.int64),
        "srtt_ns": np.array([fin(i, "rtt_us", -1) * 1000 if i in final and "rtt_us" in final[i] else -1 for i in range(n)], dtype=np.int64),
        "base_rtt_ns": np.array([f["fwd_delay_ns"] + f["rev_delay_ns"] for f in flows], dtype=np.uint64),
        "transfers": completed.astype(np.uint32),
    }
    # flow series: every flow at every sample, the receiver's delivered bytes joined
    # with the sender's tcp_info (absent for UDP flows: NaN / -1 / 0)
    info = {(r["t"], r["flow"]): r for r in send["rows"]}
    rows = recv["rows"]
    none = {"cwnd": np.nan, "ssthresh": 0x7FFFFFFF, "rtt_us": -1, "rto_us": 0, "unacked": 0, "sacked": 0, "lost": 0, "retrans": 0, "bytes_acked": 0, "mss": 1, "total_retrans": 0, "ca_state": 0, "total_rto": 0}
    ti = [info.get((t, f), none) for t, f, _ in rows]
    fs = {
        "time_ns": np.array([t for t, _, _ in rows], dtype=np.uint64),
        "flow": np.array([f for _, f, _ in rows], dtype=np.uint32),
        "cwnd": np.array([r["cwnd"] for r in ti], dtype=float),
        "ssthresh": np.array([r["ssthresh"] if r["ssthresh"] < 0x7FFFFFFF else np.nan for r in ti], dtype=float),
        "srtt_ns": np.array([r["rtt_us"] * 1000 for r in ti], dtype=np.int64),
        "rtt_ns": np.array([r["rtt_us"] * 1000 for r in ti], dtype=np.int64),
        "rto_ns": np.array([r["rto_us"] * 1000 for r in ti], dtype=np.uint64),
        # Linux's tcp_packets_in_flight: unacked - (sacked + lost) + retrans
        "in_flight": np.array([max(0, r["unacked"] - r["sacked"] - r["lost"] + r["retrans"]) for r in ti], dtype=np.uint64),
        "delivered_bytes": np.array([d for _, _, d in rows], dtype=np.uint64),
        "snd_una": np.array([r["bytes_acked"] // max(r["mss"], 1) for r in ti], dtype=np.uint64),
        "retransmits": np.array([r["total_retrans"] for r in ti], dtype=np.uint64),
        "ca_state": np.array([_ca(r["ca_state"]) for r in ti], dtype=np.uint8),
    }
    links = bmeta["links"]
    sent_total = int(sum(l["stats"]["arrivals"] for l in links))
    meta = {
        "scenario": sc,
        "seed": seed,
        "sim_seconds": bmeta["recorded_seconds"],
        "wall_seconds": wall,
        "events": sent_total,
        "links": links,
        "logged_links": bmeta["logged_links"],
        "groups": groups,
        "conservation": {"created": bmeta["arrived"], "delivered": bmeta["delivered"], "dropped": bmeta["dropped"], "in_flight": bmeta["in_flight"]},
        "histograms": bmeta["histograms"],
        "version": _core.__version__,
        "emulated": {
            "run_id": run_id,
            "kernel": os.uname().release,
            "bottleneck_cpu_seconds": bmeta["cpu_seconds"],
            "delivery_lateness_us": bmeta["lateness_us"],
            "bottleneck_realtime": bmeta["realtime"],
            "stalls_ns": bmeta["stalls"],
            "ignored_packets": bmeta["ignored"],
            "write_errors": bmeta["write_errors"],
            "udp_ip_bytes": recv["udp_ip_bytes"],
            # the congestion control the kernel ran on each TCP flow (read back per socket)
            "kernel_cc": [final.get(i, {}).get("cc") for i in range(n)],
            "one_way_delay_ns": recv["owd_ns"],
        },
    }
    return {"meta": json.dumps(meta), "packets": packets, "link_series": link_series, "histograms": histograms, "flow_series": fs, "flows": table, "transfers": transfers, "datagrams": datagrams}

def _ca(linux_state: int) -> int:
    from ._traffic import CA_MAP

    return CA_MAP.get(linux_state, 0)

def cli_run(a: Any, headline_table: Any, err: Any, console: Any, progress_runner: Any) -> int:
    """`aqmlab emulate SCENARIO`: checks first (scenario, output folder, root and TUN),
    then the run, then the run folder; one-line errors, nothing written on failure."""
    from .. import results

    try:
        src = source(a.scenario)
        resolved = json.loads(_core.resolve_scenario(src.text, src.format, a.set, a.seed))
        check_kernel_cc(_plan_flows(src, a.set, a.seed, resolved, ())[0])
        if a.trace:
            read_trace(a.trace)
        offloads = parse_offloads(a.offload or [])
    except (_core.ScenarioError, EmulationError) as e:
        return err(str(e))
    if a.out:
        out = Path(a.out)
    else:
        from ..cli import default_out

        sim = default_out(resolved["name"], resolved["seed"], a.set)  # the overrides in the name, as aqmlab run does
        out = sim.with_name(sim.name.replace(f"-seed{resolved['seed']}", f"-seed{resolved['seed']}-emulated", 1))
    try:
        results.check_out_dir(out)
        from .. import inputs

        inputs.writable_dir(out)
        netns.preflight()
    except (FileExistsError, _core.ScenarioError) as e:
        return err(str(e))
    except EmulationError as e:
        return err(str(e), 1)
    con = console(a.quiet)
    show_bar = sys.stderr.isatty() and not a.quiet
    from .. import interrupts

    interrupts.note(f"namespaces, processes and temporary files removed; nothing written to {out}")
    try:
        with progress_runner(f"{resolved['name']} (emulated)", show_bar) as cb:
            r = emulate(a.scenario, a.set, a.seed, progress=cb, trace=a.trace, offloads=offloads)
        r.write(out, report=not a.no_report)
    except EmulationError as e:
        return err(str(e), 1)
    except _core.SimulationError as e:
        return err(str(e), 1)
    interrupts.note(None)
    s = r.summary
    con.print(headline_table(s, f"{resolved['name']} (seed {s['seed']}, emulated: Linux {os.uname().release})"))
    con.print(f"wrote {out}/ (summary.json, packets/flows/timeseries.parquet{', report.html' if not a.no_report else ''})")
    return 0
