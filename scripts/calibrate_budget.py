#!/usr/bin/env python3
"""Measure the peak resident memory of whole `aqmlab run` processes and set it beside
the estimate of `aqmsim::budget` (crates/aqmsim/src/budget.rs), which refuses runs that
would not fit in the machine's memory.

    python scripts/calibrate_budget.py            # the table: estimate, measured, ratio
    python scripts/calibrate_budget.py --fit      # and least-squares costs per item

Each case isolates a part of the estimate (packet records, flow samples, flows,
datagram records) at two or three sizes, or is a scenario as it is (the 1 Gbps
dumbbell, topologies of [[links]], AQMs with flow queues); --fit regresses the measured peaks on the
parts' counts to give the per-item costs that budget.rs's `process_cost` holds
(those minus the simulator's own costs, `core_cost`, measured by the Rust test
crates/aqmsim/tests/budget.rs with a counting allocator).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import aqmlab
from aqmlab import _core

OFF = ["record.packets=false", "record.flow_series=false", "record.datagrams=false"]
CASES: list[tuple[str, str, list[str]]] = [
    ("base", "madpie-proof", ["duration=2s", *OFF]),
    ("packets 30 s at 100 Mbps", "madpie-proof", ["duration=30s", "bottleneck.rate=100Mbps", "record.flow_series=false"]),
    ("packets 120 s at 100 Mbps", "madpie-proof", ["duration=120s", "bottleneck.rate=100Mbps", "record.flow_series=false"]),
    ("packets 300 s at 100 Mbps", "madpie-proof", ["duration=300s", "bottleneck.rate=100Mbps", "record.flow_series=false"]),
    ("flow samples 300 flows 100 s", "madpie-proof", ["duration=100s", "flows.0.count=300", "record.packets=false"]),
    ("flow samples 1000 flows 150 s", "madpie-proof", ["duration=150s", "flows.0.count=1000", "record.packets=false"]),
    ("flows 20000", "madpie-proof", ["duration=2s", "flows.0.count=20000", *OFF]),
    ("flows 100000", "madpie-proof", ["duration=2s", "flows.0.count=100000", *OFF]),
    ("datagrams", "madpie-mix", ["duration=300s", "flows.0.count=40", "record.packets=false", "record.flow_series=false"]),
    ("everything, default scenario", "madpie-proof", []),
    ("everything, 1000 flows", "gbps-1000-flows", ["duration=20s", "record.packets=true", "record.flow_series=true"]),
    ("gbps-1000-flows as it is", "gbps-1000-flows", []),
    ("parking lot of [[links]]", "parking-lot", []),
    ("parking lot, packets on b1 and b2", "parking-lot", ['record.links=["b1", "b2", "b1_rev"]']),
    ("AQMs in series", "aqm-series", []),
    ("FQ-CoDel, 65,536 queues", "madpie-proof", ["duration=10s", "bottleneck.aqm.kind=fq_codel", "bottleneck.aqm.flows=65536", *OFF]),
    ("CAKE, 100 flows", "madpie-proof", ["duration=30s", "bottleneck.aqm.kind=cake", "flows.0.count=100", "record.packets=false"]),
]


def measure(scenario: str, sets: list[str], report: bool) -> int:
    """Peak resident set (bytes) of `aqmlab run` with these overrides."""
    with tempfile.TemporaryDirectory() as d:
        args = [sys.executable, "-m", "aqmlab.cli", "run", scenario, "--out", str(Path(d) / "r"), "-q"]
        for s in sets:
            args += ["--set", s]
        if not report:
            args.append("--no-report")
        code = (
            "import resource, subprocess, sys\n"
            f"r = subprocess.run({args!r}, env={{'AQMLAB_MEMORY_BUDGET': 'off', **__import__('os').environ}})\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
            "sys.exit(r.returncode)\n"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-400:])
        return int(p.stdout.strip().splitlines()[-1])


def estimate(scenario: str, sets: list[str]) -> dict:
    src = aqmlab.source(scenario)
    return json.loads(_core.memory_estimate(src.text, src.format, sets, None, None))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--report", action="store_true", help="with report.html and its figures (the default of aqmlab run)")
    ap.add_argument("--only", default=None, metavar="TEXT", help="only the cases whose name contains TEXT")
    a = ap.parse_args()
    rows = []
    print(f"{'case':<34} {'estimate':>10} {'measured':>10} {'ratio':>6}  parts")
    for name, sc, sets in CASES:
        if a.only and a.only not in name:
            continue
        est = estimate(sc, sets)
        got = measure(sc, sets, a.report)
        parts = {p["name"]: p["count"] for p in est["parts"]}
        rows.append((name, est, got, parts))
        print(f"{name:<34} {est['process_bytes'] / 1e6:9.0f}M {got / 1e6:9.0f}M {est['process_bytes'] / got:6.2f}  {parts}")
    if a.fit:
        import numpy as np

        keys = ["flows", "record.packets", "record.flow_series", "record.datagrams", "timeseries"]
        X = np.array([[1.0] + [r[3].get(k, 0) for k in keys] for r in rows])
        y = np.array([r[2] for r in rows], dtype=float)
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        print("least squares (bytes): base %.0f, " % coef[0] + ", ".join(f"{k} {c:.0f}" for k, c in zip(keys, coef[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
