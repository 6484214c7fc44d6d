#!/usr/bin/env python3
"""How fast can the userspace bottleneck go on this machine? (docs/emulation.md)

    sudo python scripts/emulate_capacity.py [RATE_MBPS ...]

For each rate: 4 CUBIC flows for 8 s through a PIE bottleneck (RTT 14 ms, one-BDP
buffer, at least 100 packets), then the link's utilization after the first 2 s, the
goodput, the bottleneck's CPU use (its thread's CPU time over the run's duration)
and how late it delivered packets (p99 of the delay line's lateness).
"""

import sys

from aqmlab.emulate import emulate

rates = [int(x) for x in sys.argv[1:]] or [50, 100, 200, 400]
print("| rate (Mbps) | utilization (mean, 2-8 s) | goodput (Mbps) | bottleneck CPU | lateness p99 (us) | packets/s |")
print("|---:|---:|---:|---:|---:|---:|")
for mbps in rates:
    r = emulate(
        "madpie-proof",
        [
            "duration=8s",
            f"bottleneck.rate={mbps}Mbps",
            "bottleneck.delay=5ms",
            "bottleneck.buffer=1bdp",
            "flows.0.count=4",
            "metrics.warmup=2s",
            "record.packets=false",
        ],
    )
    s = r.summary
    em = r.meta["emulated"]
    ls = r.raw["link_series"]
    pps = ls["tx_packets"][ls["link"] == 0].sum() / r.meta["sim_seconds"]
    cpu = em["bottleneck_cpu_seconds"] / r.meta["sim_seconds"]
    print(
        f"| {mbps} | {s['bottleneck']['utilization']['mean']:.4f} | {s['classes']['bulk']['goodput_mbps']:.1f} | {cpu * 100:.0f} % | {em['delivery_lateness_us']['p99']} | {pps:,.0f} |",
        flush=True,
    )
