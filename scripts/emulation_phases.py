#!/usr/bin/env python3
"""Start-up and steady state of bulk-TCP runs (simulated or emulated), side by side:

    python scripts/emulation_phases.py RUN_DIR [RUN_DIR ...]

Per run: the whole run's queueing delay p50 / p99 and drops; the start-up (0-2 s):
packets that waited more than 60 ms and drops; the steady state (10 s on): p50 / p99,
drops, window reductions (recoveries, from flows.parquet; an emulated run has them
from the senders' kernel counters, TcpExt TCPSackRecovery) and how fast the
windows grow (mean increase of cwnd per RTT over the 100 ms samples in which it did
not fall). docs/emulation.md uses it to explain where PIE's emulated and simulated
figures differ.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

HIGH_MS, STARTUP_S, STEADY_S = 60.0, 2.0, 10.0

print("| run | p50 / p99 (ms) | drops | 0-2 s: packets > 60 ms, drops | 10 s on: p50 / p99 (ms) | drops | reductions | cwnd growth per RTT |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for run in map(Path, sys.argv[1:]):
    s = json.loads((run / "summary.json").read_text())
    b = s["bottleneck"]
    pk = pq.read_table(run / "packets.parquet", columns=["time_s", "link", "event", "sojourn_ms"]).to_pandas()
    pk = pk[pk["link"] == "bottleneck"]
    deq, drops = pk[pk["event"] == "dequeue"], pk[pk["event"] == "drop"]
    start = deq[deq["time_s"] < STARTUP_S]
    steady = deq[deq["time_s"] >= STEADY_S]["sojourn_ms"]
    ts = pq.read_table(run / "timeseries.parquet").to_pandas()
    fl = ts[(ts["scope"] == "flow") & (ts["time_s"] > STEADY_S)].sort_values(["flow", "time_s"])
    interval = float(np.median(np.diff(np.unique(fl["time_s"])))) if len(fl) else 0.1
    growth = [np.diff(g["cwnd_segments"].to_numpy()) for _, g in fl.groupby("flow")]
    per_s = np.mean([d[d >= 0].mean() / interval for d in growth if (d >= 0).any()])
    srtt_s = fl["srtt_ms"].median() / 1e3
    if "emulation" in s:
        reductions = s["emulation"].get("sender_tcp_counters", {}).get("TCPSackRecovery")
        reductions = f"{reductions} (whole run)" if reductions is not None else "–"
    else:
        reductions = f"{int(pq.read_table(run / 'flows.parquet', columns=['recoveries']).column(0).to_numpy().sum())} (whole run)"
    q = b["queue_delay_ms"]
    print(
        f"| {run.name} | {q['p50']:.1f} / {q['p99']:.1f} | {b['packets']['dropped']} "
        f"| {int((start['sojourn_ms'] > HIGH_MS).sum())}, {int((drops['time_s'] < STARTUP_S).sum())} "
        f"| {steady.quantile(0.5):.1f} / {steady.quantile(0.99):.1f} | {int((drops['time_s'] >= STEADY_S).sum())} "
        f"| {reductions} | {per_s * srtt_s:.2f} |"
    )
