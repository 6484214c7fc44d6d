"""`aqmlab bench`: time whole runs in the installed (release) build.

Reports the simulator's own wall time (scenario built, run, records collected; not
the Python-side table conversion), events per second, and packets per second
through the bottleneck. Measure against a reference in the same sitting: run
`aqmlab bench` before and after a change, or against ns-3 (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from . import _core


def main(a: argparse.Namespace) -> int:
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
    if a.repeat < 1:
        print("aqmlab: error: --repeat: must be at least 1")
        return 2
    rows = []
    for i in range(a.repeat):
        t0 = time.perf_counter()
        raw = _core.run(src.text, src.format, overrides, a.seed, None, src.base_dir)
        total = time.perf_counter() - t0
        meta = json.loads(raw["meta"])
        pk = meta["links"][0]["stats"]["dequeued"]
        rows.append((meta["wall_seconds"], total, meta["events"], pk, meta["sim_seconds"]))
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


def _vs_ns3(resolved: dict, aqmlab_best: float, a: argparse.Namespace) -> int:
    """Run the ns-3 twin of the same scenario in the same sitting and print the ratio."""
    import tempfile
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from . import ns3

    try:
        ns3.build()
        with tempfile.TemporaryDirectory() as d:
            runs = [ns3.run(resolved, resolved["seed"], Path(d)) for _ in range(max(1, min(a.repeat, 3)))]
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
