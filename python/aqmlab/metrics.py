"""Headline figures computed from a run's tables.

The same functions serve simulated and (later) emulated runs: they read only the
tables of DESIGN.md "What a run writes". Conventions:

* queueing delay: per-packet sojourn time in the bottleneck queue (dequeue time
  minus enqueue time) of every packet that left the queue;
* utilization: the fraction of each `metrics.utilization_interval` (1 s by default,
  as in Kuhn & Ros §III) that the bottleneck spent transmitting;
* goodput: payload bytes delivered in order to the receiving application;
* Jain's fairness index over a group's per-flow goodputs: (sum x)^2 / (n sum x^2);
* loss rate of a class: its forward packets dropped anywhere / its packets sent.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

QUEUE_PERCENTILES = (5, 10, 25, 50, 75, 90, 95, 99)
UTIL_PERCENTILES = (5, 25, 50, 75, 95)


def _num(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def distribution(values: np.ndarray, ps: Sequence[int] = QUEUE_PERCENTILES, extremes: bool = True) -> dict[str, float | None]:
    """Percentiles `p5`... of `values`, with `max` and `mean`; all None when empty."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    out: dict[str, float | None] = {}
    if values.size == 0:
        for p in ps:
            out[f"p{p}"] = None
        if extremes:
            out["max"] = None
        out["mean"] = None
        return out
    qs = np.percentile(values, ps)
    for p, q in zip(ps, qs):
        out[f"p{p}"] = _num(q)
    if extremes:
        out["max"] = _num(values.max())
    out["mean"] = _num(values.mean())
    return out


def jain_index(x: Iterable[float]) -> float | None:
    """Jain's fairness index: 1 when all equal, 1/n when one flow takes everything."""
    a = np.asarray(list(x), dtype=float)
    if a.size == 0 or not np.any(a):
        return None
    return float(a.sum() ** 2 / (a.size * (a * a).sum()))


def utilization_samples(link_series: dict[str, np.ndarray], link: int, interval_ns: int, window_ns: int, warmup_ns: int) -> np.ndarray:
    """Fraction of each window spent transmitting, from the sampled busy time."""
    sel = link_series["link"] == link
    t = link_series["time_ns"][sel]
    busy = link_series["busy_ns"][sel].astype(float)
    k = window_ns // interval_ns
    n = len(busy) // k
    if n == 0:
        return np.array([])
    sums = busy[: n * k].reshape(n, k).sum(axis=1)
    ends = t[: n * k].reshape(n, k)[:, -1]
    keep = ends - window_ns >= warmup_ns
    return sums[keep] / window_ns


def summarize(result: Any) -> dict[str, Any]:
    """The summary.json of a run (see DESIGN.md for the keys)."""
    meta = result.meta
    sc = meta["scenario"]
    warmup_ns = _ns(sc["metrics"]["warmup"])
    interval_ns = _ns(sc["record"]["interval"])
    util_ns = _ns(sc["metrics"]["utilization_interval"])
    sim_s = meta["sim_seconds"]
    links = meta["links"]
    bn = links[0]
    st = bn["stats"]
    pk = result.raw["packets"]
    logged = meta["logged_links"]

    bottleneck: dict[str, Any] = {
        "aqm": bn["aqm"],
        "rate_mbps": bn["rate_bps"] / 1e6,
        "delay_ms": bn["delay_ns"] / 1e6,
        "buffer_packets": bn["limit_packets"],
        "buffer_bytes": bn["limit_bytes"],
    }
    if "bottleneck" in logged:
        li = logged.index("bottleneck")
        sel = (pk["link"] == li) & (pk["event"] == 1) & (pk["time_ns"] >= warmup_ns)
        soj = pk["sojourn_ns"][sel] / 1e6
        bottleneck["queue_delay_ms"] = distribution(soj)
    else:
        bottleneck["queue_delay_ms"] = distribution(np.array([]))
        bottleneck["queue_delay_note"] = "packet records were off (record.packets = false)"
    util = utilization_samples(result.raw["link_series"], 0, interval_ns, util_ns, warmup_ns)
    u = distribution(util, UTIL_PERCENTILES, extremes=False)
    bottleneck["utilization"] = {"mean": u.pop("mean"), **u}
    drops = dict(zip(("overflow", "random", "deterministic"), st["drops"]))
    marks = dict(zip(("overflow", "random", "deterministic"), st["marks"]))
    bottleneck["packets"] = {
        "arrived": st["arrivals"],
        "enqueued": st["enqueued"],
        "dequeued": st["dequeued"],
        "dropped": sum(st["drops"]),
        "marked": sum(st["marks"]),
    }
    bottleneck["drops"] = drops
    bottleneck["marks"] = {"random": marks["random"], "deterministic": marks["deterministic"]}
    bottleneck["drop_rate"] = sum(st["drops"]) / st["arrivals"] if st["arrivals"] else None
    total = sum(st["drops"])
    bottleneck["drop_shares"] = {k: (v / total if total else None) for k, v in drops.items()}

    classes: dict[str, Any] = {}
    fl = result.raw["flows"]
    fs = result.raw["flow_series"]
    for gi, g in enumerate(meta["groups"]):
        sel = fl["group"] == gi
        ids = fl["flow"][sel]
        start = fl["start_ns"][sel]
        delivered = fl["bytes_delivered"][sel].astype(float)
        base = np.zeros_like(delivered)
        if warmup_ns > 0 and len(fs["time_ns"]):
            for j, f in enumerate(ids):
                rows = (fs["flow"] == f) & (fs["time_ns"] <= warmup_ns)
                if rows.any():
                    base[j] = fs["delivered_bytes"][rows][-1]
        active_s = np.maximum(sim_s - np.maximum(start, warmup_ns) / 1e9, 1e-9)
        per_flow = (delivered - base) * 8 / active_s / 1e6
        sent = fl["segments_sent"][sel].sum()
        dropped = fl["drops"][sel].sum()
        c: dict[str, Any] = {
            "kind": g["kind"],
            "flows": int(sel.sum()),
            "cc": g["cc"],
            "base_rtt_ms": g["base_rtt_ns"] / 1e6,
            "goodput_mbps": float(per_flow.sum()),
            "goodput_mbps_per_flow": {
                "mean": _num(per_flow.mean()) if per_flow.size else None,
                "min": _num(per_flow.min()) if per_flow.size else None,
                "max": _num(per_flow.max()) if per_flow.size else None,
            },
            "jain_index": jain_index(per_flow),
            "loss_rate": float(dropped / sent) if sent else None,
            "packets_sent": int(sent),
            "drops": int(dropped),
            "ack_drops": int(fl["ack_drops"][sel].sum()),
            "marks": int(fl["marks"][sel].sum()),
            "retransmits": int(fl["retransmits"][sel].sum()),
            "timeouts": int(fl["timeouts"][sel].sum()),
        }
        if "bottleneck" in logged:
            li = logged.index("bottleneck")
            mine = np.isin(pk["flow"], ids)
            s = (pk["link"] == li) & (pk["event"] == 1) & (pk["time_ns"] >= warmup_ns) & mine
            qd = distribution(pk["sojourn_ns"][s] / 1e6, (50, 95, 99))
            c["queue_delay_ms"] = qd
        srtt = fs["srtt_ns"][np.isin(fs["flow"], ids) & (fs["time_ns"] >= warmup_ns)]
        c["srtt_ms"] = distribution(srtt[srtt >= 0] / 1e6, (5, 50, 95))
        classes[g["name"]] = c

    return {
        "format_version": 1,
        "aqmlab_version": meta["version"],
        "scenario": sc["name"],
        "seed": meta["seed"],
        "sim_seconds": sim_s,
        "wall_seconds": meta["wall_seconds"],
        "events": meta["events"],
        "events_per_second": meta["events"] / meta["wall_seconds"] if meta["wall_seconds"] > 0 else None,
        "bottleneck": bottleneck,
        "classes": classes,
        "conservation": meta["conservation"],
    }


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}


def _ns(text: str) -> int:
    """Parse a duration string as the Rust core writes it ("100ms", "1.5s")."""
    text = text.strip()
    i = len(text)
    while i and not (text[i - 1].isdigit() or text[i - 1] == "."):
        i -= 1
    return round(float(text[:i]) * _UNITS[text[i:]])
