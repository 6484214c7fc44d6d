#!/usr/bin/env python3
"""A markdown table of headline figures from run folders (simulated or emulated):

    python scripts/side_by_side.py LABEL=RUN_DIR [LABEL=RUN_DIR ...]
"""

import json
import sys
from pathlib import Path

runs = [(a.split("=", 1)[0], json.loads((Path(a.split("=", 1)[1]) / "summary.json").read_text())) for a in sys.argv[1:]]


def f(v, d=1):
    return "–" if v is None else f"{v:.{d}f}"


rows = [
    ("queueing delay p5 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p5"])),
    ("queueing delay p25 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p25"])),
    ("queueing delay p50 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p50"])),
    ("queueing delay p75 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p75"])),
    ("queueing delay p95 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p95"])),
    ("queueing delay p99 (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["p99"])),
    ("queueing delay mean (ms)", lambda s: f(s["bottleneck"]["queue_delay_ms"]["mean"])),
    ("utilization mean", lambda s: f(s["bottleneck"]["utilization"]["mean"], 3)),
    ("utilization p5", lambda s: f(s["bottleneck"]["utilization"]["p5"], 3)),
    ("utilization p50", lambda s: f(s["bottleneck"]["utilization"]["p50"], 3)),
    ("packets arrived at the bottleneck", lambda s: str(s["bottleneck"]["packets"]["arrived"])),
    ("drops: overflow / random", lambda s: f"{s['bottleneck']['drops']['overflow']} / {s['bottleneck']['drops']['random']}"),
    ("drop rate (%)", lambda s: f((s["bottleneck"]["drop_rate"] or 0) * 100, 2)),
    ("goodput, all flows (Mbps)", lambda s: f(s["classes"]["bulk"]["goodput_mbps"], 2)),
    ("Jain's index", lambda s: f(s["classes"]["bulk"]["jain_index"], 3)),
    ("retransmissions", lambda s: str(s["classes"]["bulk"]["retransmits"])),
    ("sRTT p50 (ms)", lambda s: f(s["classes"]["bulk"]["srtt_ms"]["p50"])),
]
print("| figure | " + " | ".join(l for l, _ in runs) + " |")
print("|---|" + "---:|" * len(runs))
for name, get in rows:
    print(f"| {name} | " + " | ".join(get(s) for _, s in runs) + " |")
