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

The run folder has the files of a simulated run, built from the bottleneck's records
and the traffic programs' samples, so `summary.json` has the same keys.
"""

from __future__ import annotations

import json
import os
import secrets
import select
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
from . import netns
from .netns import EmulationError, Names

__all__ = ["emulate", "Cbr", "EmulationError", "cleanup_all", "leftovers"]

cleanup_all = netns.cleanup_all
leftovers = netns.leftovers

BASE_PORT = 20000
PORT = 5201
# The kernel's names for the scenario's congestion controls.
KERNEL_CC = {"cubic": "cubic", "newreno": "reno", "reno": "reno", "bbr": "bbr"}
# From "go" to the run's start.
LEAD_NS = 100_000_000


@dataclass(frozen=True)
class Cbr:
    """A constant-bit-rate UDP flow added to the scenario's traffic (used by the
    accuracy tests: rate and one-way delay measured end to end)."""

    name: str
    rate_bps: int
    size_bytes: int = 1200
    start_ns: int = 0


def _duration_ns(text: str) -> int:
    from ..metrics import _ns

    return _ns(text)


def _plan_flows(sc: dict[str, Any], seed: int, cbr: Sequence[Cbr]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One entry per flow (with its group) and one per group, in the simulator's order."""
    rng = np.random.default_rng(seed)
    flows: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    base_rtt = 2 * (2 * _duration_ns(sc["access"]["delay"]) + _duration_ns(sc["bottleneck"]["delay"]))
    for gi, g in enumerate(sc["flows"]):
        if g["kind"] != "bulk":
            raise EmulationError(f"flows[{gi}].kind: \"{g['kind']}\" traffic is not emulated yet (only bulk)")
        cc = g["tcp"]["cc"]
        if cc not in KERNEL_CC:
            raise EmulationError(f"flows[{gi}].tcp.cc: \"{cc}\" has no Linux counterpart here")
        start = g.get("start", "0s")
        for _ in range(g["count"]):
            if isinstance(start, dict):
                a, b = (_duration_ns(x) for x in start["uniform"])
                s = int(rng.integers(a, b + 1))
            else:
                s = _duration_ns(start)
            flows.append({"proto": "tcp", "cc": KERNEL_CC[cc], "start_ns": s, "group": gi, "ecn": bool(g["tcp"]["ecn"])})
        groups.append({"name": g["name"], "kind": "bulk", "count": g["count"], "cc": KERNEL_CC[cc], "base_rtt_ns": base_rtt})
    for c in cbr:
        flows.append({"proto": "udp", "rate_bps": c.rate_bps, "size": c.size_bytes, "start_ns": c.start_ns, "group": len(groups)})
        groups.append({"name": c.name, "kind": "cbr", "count": 1, "cc": None, "base_rtt_ns": base_rtt})
    return flows, groups


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


class _Term(Exception):
    pass


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Term()


def _readline(p: subprocess.Popen[bytes], timeout: float) -> str:
    """A line from a child's stdout, or '' if it exited or timed out."""
    assert p.stdout is not None
    r, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline().decode().strip() if r else ""


def _spawn(args: list[str], ns: str | None = None, **kw: Any) -> subprocess.Popen[bytes]:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + [sys.executable, *args]
    # a session of their own: Ctrl-C reaches this process only, and we stop them
    return subprocess.Popen(cmd, start_new_session=True, **kw)


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
) -> RunResult:
    """Run `scenario` on real traffic and return its results (nothing is written).

    `cbr` adds constant-bit-rate UDP flows; `scenario_flows=False` leaves out the
    scenario's own flow groups (the accuracy tests measure the bottleneck with CBR only)."""
    netns.preflight()
    trace_ms = read_trace(trace) if trace is not None else None
    src = source(scenario)
    overrides = list(overrides)
    sc = json.loads(_core.resolve_scenario(src.text, src.format, overrides, seed))
    seed = sc["seed"]
    if not scenario_flows:
        sc["flows"] = []
    flows, groups = _plan_flows(sc, seed, cbr)
    ecn = any(f.get("ecn") for f in flows)
    duration_ns = _duration_ns(sc["duration"])
    interval_ns = _duration_ns(sc["record"]["interval"])
    names = Names(run_id or secrets.token_hex(3))
    work = Path(tempfile.mkdtemp(prefix=f"aqmlab-emulate-{names.run_id}-"))
    procs: dict[str, subprocess.Popen[bytes] | None] = {"bottleneck": None, "recv": None, "send": None}
    old_term = signal.signal(signal.SIGTERM, _on_sigterm) if _is_main_thread() else None
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
        }
        (work / "bottleneck.json").write_text(json.dumps(spec))
        npz = work / "bottleneck.npz"
        b = procs["bottleneck"] = _spawn(["-m", "aqmlab.emulate._bottleneck", str(work / "bottleneck.json"), str(npz)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if _readline(b, 10.0) != "ready":
            raise EmulationError(f"the bottleneck process did not start (exit code {b.poll()})")
        # the namespaces exist only while the bottleneck process does (see netns.leftovers)
        netns.build(names, ecn)
        netns.attach(names)
        plan = {
            "duration_ns": duration_ns,
            "interval_ns": interval_ns,
            "dst": netns.RCV_ADDR,
            "port": PORT,
            "base_port": BASE_PORT,
            "flows": flows,
        }
        plan_path = work / "plan.json"
        plan_path.write_text(json.dumps(plan))
        r = procs["recv"] = _spawn(["-m", "aqmlab.emulate._traffic", "recv", str(plan_path)], ns=names.ns_rcv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if _readline(r, 15.0) != "ready":
            raise EmulationError("the receiver program did not start")
        snd = procs["send"] = _spawn(["-m", "aqmlab.emulate._traffic", "send", str(plan_path)], ns=names.ns_snd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if _readline(snd, 15.0) != "ready":
            raise EmulationError("the sender program did not start")
        # everything is up: the run starts shortly, at the same instant for all three
        t0 = time.monotonic_ns() + LEAD_NS
        for p, line in ((b, f"start {t0} {duration_ns}"), (r, f"go {t0}"), (snd, f"go {t0}")):
            assert p.stdin is not None
            p.stdin.write(f"{line}\n".encode())
            p.stdin.flush()
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
        b.stdin.write(b"stop\n")
        b.stdin.close()
        if _readline(b, 30.0) != "done" or b.wait(10) != 0:
            raise EmulationError(f"the bottleneck process failed (exit code {b.poll()})")
        wall = time.perf_counter() - wall0
        recv = json.loads((work / "plan.json.recv.json").read_text())
        send = json.loads((work / "plan.json.send.json").read_text())
        if send["errors"]:
            raise EmulationError("traffic: " + "; ".join(send["errors"][:3]))
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
        }
        return result
    finally:
        for k in ("send", "recv", "bottleneck"):
            _stop(procs[k])
        netns.remove_run(names)
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        for f in work.iterdir():
            f.unlink()
        work.rmdir()


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _assemble(sc, seed, groups, flows, bn, recv, send, wall, run_id) -> dict[str, Any]:
    """The raw dict `RunResult` reads, from the bottleneck's records and the traffic samples."""
    bmeta = json.loads(str(bn["meta"]))
    packets = {k.split(".", 1)[1]: v for k, v in bn.items() if k.startswith("packets.")}
    link_series = {k.split(".", 1)[1]: v for k, v in bn.items() if k.startswith("link_series.")}
    n = len(flows)
    # per-flow drops and marks at the bottleneck, from its packet records
    fwd = bmeta["logged_links"].index("bottleneck") if "bottleneck" in bmeta["logged_links"] else -1
    rev = bmeta["logged_links"].index("bottleneck_rev") if "bottleneck_rev" in bmeta["logged_links"] else -1
    ev, fl, lk = packets["event"], packets["flow"], packets["link"].astype(np.int64)

    def per_flow(event: int, link: int) -> np.ndarray:
        return np.bincount(fl[(ev == event) & (lk == link)], minlength=n)[:n]

    drops, ack_drops, marks = per_flow(2, fwd), per_flow(2, rev), per_flow(3, fwd)
    final = {int(k): v for k, v in send["final"].items()}

    def fin(i: int, key: str, default: int = 0) -> int:
        return int(final.get(i, {}).get(key, default))

    udp_sent = np.array([fin(i, "data_segs_out") for i in range(n)])
    table = {
        "flow": np.arange(n, dtype=np.uint32),
        "group": np.array([f["group"] for f in flows], dtype=np.uint16),
        "start_ns": np.array([f["start_ns"] for f in flows], dtype=np.uint64),
        "end_ns": np.full(n, -1, dtype=np.int64),
        "bytes_delivered": np.array(recv["delivered"], dtype=np.uint64),
        "segments_sent": udp_sent.astype(np.uint64),
        "retransmits": np.array([fin(i, "total_retrans") for i in range(n)], dtype=np.uint64),
        # Linux's tcp_info does not count timeouts, recoveries or ECN reductions
        "timeouts": np.zeros(n, dtype=np.uint64),
        "recoveries": np.zeros(n, dtype=np.uint64),
        "ecn_reductions": np.zeros(n, dtype=np.uint64),
        "drops": drops.astype(np.uint64),
        "ack_drops": ack_drops.astype(np.uint64),
        "marks": marks.astype(np.uint64),
        "min_rtt_ns": np.array([fin(i, "min_rtt_us", -1) * 1000 if i in final and "min_rtt_us" in final[i] else -1 for i in range(n)], dtype=np.int64),
        "srtt_ns": np.array([fin(i, "rtt_us", -1) * 1000 if i in final and "rtt_us" in final[i] else -1 for i in range(n)], dtype=np.int64),
        "base_rtt_ns": np.array([groups[f["group"]]["base_rtt_ns"] for f in flows], dtype=np.uint64),
    }
    # flow series: every flow at every sample, the receiver's delivered bytes joined
    # with the sender's tcp_info (absent for UDP flows: NaN / -1 / 0)
    info = {(r["t"], r["flow"]): r for r in send["rows"]}
    rows = recv["rows"]
    none = {"cwnd": np.nan, "ssthresh": 0x7FFFFFFF, "rtt_us": -1, "rto_us": 0, "unacked": 0, "sacked": 0, "lost": 0, "retrans": 0, "bytes_acked": 0, "mss": 1, "total_retrans": 0, "ca_state": 0}
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
            "one_way_delay_ns": recv["owd_ns"],
        },
    }
    return {"meta": json.dumps(meta), "packets": packets, "link_series": link_series, "flow_series": fs, "flows": table}


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
        _plan_flows(resolved, resolved["seed"], ())
        if a.trace:
            read_trace(a.trace)
    except (_core.ScenarioError, EmulationError) as e:
        return err(str(e))
    out = Path(a.out) if a.out else Path("runs") / f"{resolved['name']}-seed{resolved['seed']}-emulated"
    try:
        results.check_out_dir(out)
        netns.preflight()
    except FileExistsError as e:
        return err(str(e))
    except EmulationError as e:
        return err(str(e), 1)
    con = console(a.quiet)
    show_bar = sys.stderr.isatty() and not a.quiet
    try:
        with progress_runner(f"{resolved['name']} (emulated)", show_bar) as cb:
            r = emulate(a.scenario, a.set, a.seed, progress=cb, trace=a.trace)
        r.write(out, report=not a.no_report)
    except EmulationError as e:
        return err(str(e), 1)
    except (KeyboardInterrupt, _Term):
        print("aqmlab: interrupted; namespaces and processes removed, nothing written", file=sys.stderr)
        return 130
    s = r.summary
    con.print(headline_table(s, f"{resolved['name']} (seed {s['seed']}, emulated: Linux {os.uname().release})"))
    con.print(f"wrote {out}/ (summary.json, packets/flows/timeseries.parquet{', report.html' if not a.no_report else ''})")
    return 0
