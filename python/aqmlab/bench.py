"""`aqmlab bench`: time whole runs in the installed (release) build.

Reports the simulator's own wall time (scenario built, run, records collected; not
the Python-side table conversion), events per second, and packets per second
through the bottleneck. Measure against a reference in the same sitting: run
`aqmlab bench` before and after a change, or against ns-3 (`--vs ns3`, see
docs/performance.md). `--suite` times the issue's reference scenarios (`SUITE`)
one after the other, each in aqmlab and, with `--vs ns3`, in the ns-3 twin, and
prints the ratios of one sitting.

`aqmlab bench --scaling` prints the scaling table of docs/performance.md instead:
wall and CPU time, events/s, bottleneck packets/s and peak memory as the bottleneck
rate and the number of flows grow, in summaries-only mode, each point in a fresh
process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass

from . import _core


@dataclass(frozen=True)
class BenchCase:
    name: str
    title: str
    scenario: str
    overrides: tuple[str, ...] = ()


# The speed targets of docs/performance.md: Kuhn & Ros §III as the paper ran it
# (300 s, 10 CUBIC flows, 10 Mbps) at both RTTs, and the built-in gbps-1000-flows
# (1 Gbps, 1,000 flows, access links 10 Gbps, BDP buffer) for 10 simulated seconds,
# since ns-3 needs minutes for them. The "records" column runs each scenario as it
# is (§III records every packet; gbps-1000-flows records summaries only).
SUITE = [
    BenchCase("s3-rtt500", "Kuhn & Ros §III, PIE, RTT 500 ms, 300 s", "madpie-proof"),
    BenchCase("s3-rtt100", "Kuhn & Ros §III, PIE, RTT 100 ms, 300 s", "madpie-proof", ("bottleneck.delay=48ms",)),
    BenchCase("1g-1000", "1 Gbps, 1,000 CUBIC flows, PIE, RTT 100 ms, 10 s (summaries only)", "gbps-1000-flows", ("duration=10s",)),
]


def _time_aqmlab(text: str, fmt: str, overrides: list[str], seed, base_dir, repeat: int):
    rows = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        raw = _core.run(text, fmt, overrides, seed, None, base_dir)
        total = time.perf_counter() - t0
        meta = json.loads(raw["meta"])
        pk = meta["links"][0]["stats"]["dequeued"]
        rows.append((meta["wall_seconds"], total, meta["events"], pk, meta["sim_seconds"]))
        del raw
    return rows


def main(a: argparse.Namespace) -> int:
    if a.repeat < 1:
        print("aqmlab: error: --repeat: must be at least 1")
        return 2
    if getattr(a, "suite", False):
        return suite(a)
    from rich.console import Console
    from rich.table import Table

    from .scenario import source

    try:
        src = source(a.scenario)
        overrides = list(a.set) + (["record.packets=false"] if a.no_packets else [])
        resolved = json.loads(_core.resolve_scenario(src.text, src.format, overrides, a.seed, src.base_dir))
    except _core.ScenarioError as e:
        print(f"aqmlab: error: {e}")
        return 2
    rows = _time_aqmlab(src.text, src.format, overrides, a.seed, src.base_dir, a.repeat)
    walls = [r[0] for r in rows]
    best = min(rows, key=lambda r: r[0])
    med = statistics.median(walls)
    events, pkts, sim_s = best[2], best[3], best[4]
    t = Table(title=f"aqmlab bench: {resolved['name']} ({sim_s:.0f} s simulated, {a.repeat} runs{', no packet records' if a.no_packets else ''})", title_justify="left")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("wall seconds (best / median)", f"{best[0]:.3f} / {med:.3f}")
    t.add_row("wall seconds incl. Python tables (best)", f"{min(r[1] for r in rows):.3f}")
    t.add_row("events", f"{events:,}")
    t.add_row("events per second", f"{events / best[0] / 1e6:.2f} M")
    t.add_row("bottleneck packets", f"{pkts:,}")
    t.add_row("bottleneck packets per second", f"{pkts / best[0] / 1e6:.2f} M")
    t.add_row("simulated seconds per wall second", f"{sim_s / best[0]:,.0f}")
    Console().print(t)
    if getattr(a, "vs", None) == "ns3":
        return _vs_ns3(resolved, best[0], a)
    return 0


def _ns3_best(resolved: dict, repeat: int):
    import tempfile
    from pathlib import Path

    from . import ns3

    ns3.build()
    with tempfile.TemporaryDirectory() as d:
        return [ns3.run(resolved, resolved["seed"], Path(d)) for _ in range(repeat)]


def _vs_ns3(resolved: dict, aqmlab_best: float, a: argparse.Namespace) -> int:
    """Run the ns-3 twin of the same scenario in the same sitting and print the ratio."""
    from rich.console import Console
    from rich.table import Table

    from . import ns3

    try:
        runs = _ns3_best(resolved, max(1, min(a.repeat, 3)))
    except (ns3.Ns3Unavailable, ns3.NotTranslatable) as e:
        print(f"aqmlab: error: {e}")
        return 2
    best = min(r.wall_seconds for r in runs)
    t = Table(title="aqmlab vs ns-3 3.44, same scenario, same sitting", title_justify="left")
    t.add_column("simulator")
    t.add_column("wall seconds (best)", justify="right")
    t.add_column("queueing delay p50 / p90 (ms)", justify="right")
    t.add_row("aqmlab", f"{aqmlab_best:.3f}", "")
    q = runs[0].summary["bottleneck"]["queue_delay_ms"]
    t.add_row("ns-3", f"{best:.3f}", f"{q['p50']:.1f} / {q['p90']:.1f}")
    Console().print(t)
    Console().print(f"aqmlab is {best / aqmlab_best:.1f} times faster than ns-3 on this scenario")
    return 0


def suite(a: argparse.Namespace) -> int:
    """The reference scenarios, in aqmlab (packet records on, and summaries only) and,
    with --vs ns3, in the ns-3 twin: one table of wall times and ratios."""
    from rich.console import Console
    from rich.table import Table

    from . import ns3
    from .scenario import source

    con = Console()
    t = Table(title=f"aqmlab bench --suite{' --vs ns3' if a.vs else ''} (best of {a.repeat} aqmlab runs)", title_justify="left")
    for col in ("case", "aqmlab s (records)", "aqmlab s (summaries)", "M events/s", "M pkts/s"):
        t.add_column(col, justify="right" if col != "case" else "left")
    if a.vs:
        t.add_column("ns-3 s", justify="right")
        t.add_column("ratio (records / summaries)", justify="right")
    results = []
    for c in SUITE:
        src = source(c.scenario)
        over = list(c.overrides) + list(a.set)
        con.print(f"{c.name}: {c.title} ...")
        rec = _time_aqmlab(src.text, src.format, over, a.seed, src.base_dir, a.repeat)
        summ = _time_aqmlab(src.text, src.format, over + ["record.packets=false"], a.seed, src.base_dir, a.repeat)
        br, bs = min(rec), min(summ)
        row = [c.name, f"{br[0]:.3f}", f"{bs[0]:.3f}", f"{bs[2] / bs[0] / 1e6:.1f}", f"{bs[3] / bs[0] / 1e6:.2f}"]
        res = {"case": c.name, "title": c.title, "aqmlab_records_s": br[0], "aqmlab_summaries_s": bs[0], "events": bs[2], "bottleneck_packets": bs[3]}
        if a.vs:
            resolved = json.loads(_core.resolve_scenario(src.text, src.format, over, a.seed, src.base_dir))
            try:
                n = min(r.wall_seconds for r in _ns3_best(resolved, 1 if c.name == "1g-1000" else min(a.repeat, 2)))
            except (ns3.Ns3Unavailable, ns3.NotTranslatable) as e:
                print(f"aqmlab: error: {e}")
                return 2
            row += [f"{n:.2f}", f"{n / br[0]:.0f} × / {n / bs[0]:.0f} ×"]
            res.update(ns3_s=n, ratio_records=n / br[0], ratio_summaries=n / bs[0])
        results.append(res)
        t.add_row(*row)
    con.print(t)
    if a.json:
        from pathlib import Path

        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


# ---- scaling: `aqmlab bench --scaling` ---------------------------------------

# The base of every point: the built-in `gbps-1000-flows` (PIE, RTT 100 ms, BDP
# buffer, CUBIC bulk flows, summaries only), with the bottleneck rate, the access
# rate (10 times the bottleneck's), the number of flows and the duration set per
# point. Durations shrink as the packet rate grows, to keep each point to seconds.
SCALING_BASE = "gbps-1000-flows"
SCALING_RATES = [("10Mbps", "100Mbps", "60s"), ("100Mbps", "1Gbps", "60s"), ("1Gbps", "10Gbps", "10s"), ("10Gbps", "100Gbps", "2s")]
SCALING_FLOWS = [1, 10, 100, 1000, 10000]
SCALING_FLOWS_RATE = ("1Gbps", "10Gbps", "10s")
SCALING_MEMORY = ("1Gbps", "10Gbps", "60s", 1000)

_CHILD = r"""
import json, sys, time
import numpy  # the run's columns come back as numpy arrays: load numpy (and its
              # threads' start-up) before the measurement, not inside the first run
from aqmlab import _core

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])  # KiB

src, overrides = sys.argv[1], json.loads(sys.argv[2])
# reset the peak RSS (Linux >= 4.0: proc(5), clear_refs), so that VmHWM is the run's
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
rss0 = status("VmRSS")
cpu0 = time.process_time()
raw = _core.run(src, "toml", overrides, None, None, None)
cpu = time.process_time() - cpu0
meta = json.loads(raw["meta"])
print(json.dumps({"wall": meta["wall_seconds"], "cpu": cpu, "events": meta["events"], "packets": meta["links"][0]["stats"]["dequeued"],
                  "sim": meta["sim_seconds"], "rss0_kib": rss0, "rss_kib": status("VmHWM")}))
"""


def _point(text: str, rate: str, access: str, duration: str, flows: int, repeat: int) -> dict:
    """Run one point `repeat` times, each in a fresh process (for its peak memory);
    the best wall time and the largest peak RSS."""
    import subprocess
    import sys

    overrides = [f"bottleneck.rate={rate}", f"access.rate={access}", f"duration={duration}", f"flows.0.count={flows}"]
    best: dict | None = None
    for _ in range(repeat):
        p = subprocess.run([sys.executable, "-c", _CHILD, text, json.dumps(overrides)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        if best is None or r["wall"] < best["wall"]:
            keep = best
            best = dict(r)
            if keep:
                best["cpu"] = min(best["cpu"], keep["cpu"])
                best["rss_kib"], best["rss0_kib"] = max((r["rss_kib"], r["rss0_kib"]), (keep["rss_kib"], keep["rss0_kib"]))
        else:
            best["cpu"] = min(best["cpu"], r["cpu"])
            best["rss_kib"], best["rss0_kib"] = max((r["rss_kib"], r["rss0_kib"]), (best["rss_kib"], best["rss0_kib"]))
    assert best is not None
    return {"rate": rate, "flows": flows, "duration": duration, **best}


def scaling(a: argparse.Namespace) -> int:
    """Wall time, events/s, bottleneck packets/s and peak memory as the bottleneck
    rate and the number of flows grow, in summaries-only mode (docs/performance.md)."""
    from rich.console import Console
    from rich.table import Table

    text = dict(_core.builtin_scenarios())[SCALING_BASE]
    repeat = max(1, a.repeat)
    con = Console()
    plan = [("rate", *r, 10) for r in SCALING_RATES]
    plan += [("flows", *SCALING_FLOWS_RATE, n) for n in SCALING_FLOWS]
    if not a.quick:
        plan.append(("memory", *SCALING_MEMORY))
    else:
        plan = [p for p in plan if not (p[0] == "flows" and p[4] == 10000)]
    con = Console(width=max(con.width, 150))
    t = Table(title=f"aqmlab bench --scaling: {SCALING_BASE} (PIE, RTT 100 ms, CUBIC), summaries only, best of {repeat}", title_justify="left")
    for c in ("series", "bottleneck", "flows", "simulated", "wall s", "CPU s", "events", "M events/s", "M packets/s", "sim s / wall s", "peak RSS MiB", "run's MiB"):
        t.add_column(c, justify="right")
    rows = []
    for series, rate, access, duration, flows in plan:
        con.print(f"[dim]{series}: {rate}, {flows} flows, {duration}...[/dim]")
        r = _point(text, rate, access, duration, flows, repeat)
        rows.append({"series": series, **r})
        t.add_row(
            series, rate, f"{flows:,}", duration, f"{r['wall']:.3f}", f"{r['cpu']:.3f}", f"{r['events']:,}", f"{r['events'] / r['wall'] / 1e6:.2f}",
            f"{r['packets'] / r['wall'] / 1e6:.2f}", f"{r['sim'] / r['wall']:,.1f}", f"{r['rss_kib'] / 1024:.0f}", f"{(r['rss_kib'] - r['rss0_kib']) / 1024:.1f}",
        )
    con.print(t)
    idle = min(r["rss0_kib"] for r in rows) / 1024
    con.print(f"rates are per wall second of the simulation (best of {repeat}); CPU s is the process's CPU time over the run, the")
    con.print("figure to read on a shared machine; packets are those dequeued at the bottleneck")
    con.print(f"peak RSS: the whole process's high-water mark during the run (VmHWM, reset before it); about {idle:.0f} MiB of it is")
    con.print("the interpreter with aqmlab loaded; run's MiB: the peak minus the resident size before the run")
    if a.json:
        from pathlib import Path

        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0
