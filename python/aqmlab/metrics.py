"""Headline figures computed from a run's tables.

The same functions serve simulated and (later) emulated runs: they read only the
tables of DESIGN.md "What a run writes". Conventions:

* queueing delay: per-packet sojourn time in the bottleneck queue (dequeue time
  minus enqueue time) of every packet that left the queue; from the packet rows
  when they were recorded, otherwise from the streaming histograms (percentiles
  within 0.4 % of the exact ones, mean and max exact: `hist_distribution`);
* utilization: the fraction of each `metrics.utilization_interval` (1 s by default,
  as in Kuhn & Ros §III) that the bottleneck spent transmitting; on a trace-driven
  link, the delivery opportunities that carried data over those offered;
* goodput: payload bytes delivered in order to the receiving application (for CBR,
  whole datagrams, so that a lossless CBR flow's goodput is its rate), over the time
  the flow was active (from its start, or the warm-up, to its stop or the end);
* goodput per interval: the same per `metrics.goodput_interval` window (Khademi,
  Ros & Welzl use 5 s), per flow and for the class;
* Jain's fairness index over a group's per-flow goodputs: (sum x)^2 / (n sum x^2);
* loss rate of a class: its forward packets dropped anywhere / its packets sent;
* one-way delay of CBR datagrams: arrival at the receiver minus sending time;
* download time: from the request (the connection's start, handshake included) to
  the delivery of the last byte, per file size (Kuhn & Ros Fig. 7's percentiles).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

QUEUE_PERCENTILES = (5, 10, 25, 50, 75, 90, 95, 99)
UTIL_PERCENTILES = (5, 25, 50, 75, 95)
DOWNLOAD_PERCENTILES = (5, 25, 50, 75, 95)
GOODPUT_PERCENTILES = (10, 25, 50, 75, 90)
OWD_PERCENTILES = (5, 25, 50, 75, 95, 99)


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


def hist_distribution(info: dict[str, Any] | None, lo: np.ndarray, hi: np.ndarray, count: np.ndarray, ps: Sequence[int] = QUEUE_PERCENTILES, extremes: bool = True, per: float = 1e6) -> dict[str, float | None]:
    """`distribution` from a streaming histogram (its non-empty buckets `[lo, hi)`
    in value order with their counts, and its exact count, sum, min and max): every
    value is taken as its bucket's midpoint (within 1/256 of the value, see
    crates/aqmsim/src/hist.rs), then percentiles interpolate linearly between
    neighbouring ranks as numpy's default does. Mean and max are exact. `per` is
    the ns in the unit of the result (ms by default); values are divided by it, as
    the packet rows are (`sojourn_ns / 1e6`), so that both give the same max to
    the last bit."""
    n = int(info["count"]) if info else 0
    if n == 0 or len(count) == 0:
        return distribution(np.array([]), ps, extremes)
    mid = lo.astype(np.float64) + (hi.astype(np.float64) - lo.astype(np.float64)) // 2
    cum = np.cumsum(count.astype(np.int64))
    h = (n - 1) * np.asarray(ps, dtype=float) / 100
    below, above = np.floor(h).astype(np.int64), np.ceil(h).astype(np.int64)
    xa = mid[np.searchsorted(cum, below, side="right")]
    xb = mid[np.searchsorted(cum, above, side="right")]
    qs = xa + (h - below) * (xb - xa)
    out: dict[str, float | None] = {f"p{p}": _num(q / per) for p, q in zip(ps, qs)}
    if extremes:
        out["max"] = _num(info["max_ns"] / per)
    out["mean"] = _num(info["sum_ns"] / n / per)
    return out


def histogram(result: Any, name: str, ps: Sequence[int] = QUEUE_PERCENTILES, extremes: bool = True) -> dict[str, float | None] | None:
    """The distribution (ms) of the run's streaming histogram `name`, or None if
    the run has no such histogram (an emulated run, an older run)."""
    infos = result.meta.get("histograms") or []
    idx = next((i for i, h in enumerate(infos) if h["name"] == name), None)
    if idx is None:
        return None
    h = result.raw["histograms"]
    sel = h["hist"] == idx
    return hist_distribution(infos[idx], h["lo_ns"][sel], h["hi_ns"][sel], h["count"][sel], ps, extremes)


HIST_NOTE = "from the streaming histogram: packet records were off (record.packets = false); percentiles within 0.4 %, mean and max exact"


def jain_index(x: Iterable[float]) -> float | None:
    """Jain's fairness index: 1 when all equal, 1/n when one flow takes everything."""
    a = np.asarray(list(x), dtype=float)
    if a.size == 0 or not np.any(a):
        return None
    return float(a.sum() ** 2 / (a.size * (a * a).sum()))


def is_trace_link(link_series: dict[str, np.ndarray], link: int) -> bool:
    """A trace-driven link offers delivery opportunities instead of a rate."""
    return bool(np.any(link_series["opportunities"][link_series["link"] == link] > 0))


def link_utilization(link_series: dict[str, np.ndarray], interval_s: float) -> np.ndarray:
    """Utilization of every link-series row: busy fraction, or opportunities used
    over offered on trace links (NaN for an interval that offered none)."""
    ls = link_series
    util = ls["busy_ns"] / (interval_s * 1e9)
    for link in np.unique(ls["link"]):
        if is_trace_link(ls, link):
            sel = ls["link"] == link
            off = ls["opportunities"][sel].astype(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                util[sel] = np.where(off > 0, ls["opportunities_used"][sel] / off, np.nan)
    return util


def utilization_samples(link_series: dict[str, np.ndarray], link: int, interval_ns: int, window_ns: int, warmup_ns: int) -> np.ndarray:
    """Fraction of each window spent transmitting, from the sampled busy time; on a
    trace-driven link, the opportunities used over those offered in the window."""
    sel = link_series["link"] == link
    t = link_series["time_ns"][sel]
    trace = is_trace_link(link_series, link)
    num = (link_series["opportunities_used"] if trace else link_series["busy_ns"])[sel].astype(float)
    den = link_series["opportunities"][sel].astype(float) if trace else None
    k = window_ns // interval_ns
    n = len(num) // k
    if n == 0:
        return np.array([])
    sums = num[: n * k].reshape(n, k).sum(axis=1)
    ends = t[: n * k].reshape(n, k)[:, -1]
    keep = ends - window_ns >= warmup_ns
    if trace:
        offered = den[: n * k].reshape(n, k).sum(axis=1)
        keep &= offered > 0
        return sums[keep] / offered[keep]
    return sums[keep] / window_ns


def goodput_windows(
    fs: dict[str, np.ndarray], ids: np.ndarray, starts_ns: np.ndarray, interval_ns: int, window_ns: int, end_ns: int, warmup_ns: int, stop_ns: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Goodput (Mbps) per `window_ns` window, from the flow series' cumulative
    delivered bytes: (per-flow samples of windows the flow was active in, the
    class's total per window)."""
    times = np.arange(interval_ns, end_ns + 1, interval_ns, dtype=np.int64)
    bounds = np.arange(window_ns, end_ns + 1, window_ns, dtype=np.int64)
    if len(ids) == 0 or len(bounds) == 0 or len(fs["time_ns"]) == 0:
        return np.array([]), np.array([])
    pos = {int(f): j for j, f in enumerate(ids)}
    rows = np.isin(fs["flow"], ids)
    mat = np.zeros((len(ids), len(times)))
    fj = np.array([pos[int(f)] for f in fs["flow"][rows]], dtype=np.int64)
    ti = fs["time_ns"][rows].astype(np.int64) // interval_ns - 1
    ok = (ti >= 0) & (ti < len(times))
    mat[fj[ok], ti[ok]] = fs["delivered_bytes"][rows][ok]
    # cumulative values are carried forward (a flow's rows start at its first sample)
    mat = np.maximum.accumulate(mat, axis=1)
    cum = np.concatenate([np.zeros((len(ids), 1)), mat[:, bounds // interval_ns - 1]], axis=1)
    gp = np.diff(cum, axis=1) * 8 / (window_ns / 1e9) / 1e6
    w_start = bounds - window_ns
    active = (starts_ns[:, None] < bounds[None, :]) & (w_start[None, :] >= warmup_ns)
    if stop_ns is not None:
        active &= w_start[None, :] < stop_ns
    window_on = w_start >= warmup_ns
    if stop_ns is not None:
        window_on &= w_start < stop_ns
    return gp[active], gp.sum(axis=0)[window_on]


def _size_label(b: float) -> str:
    for unit, k in (("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            v = b / k
            return f"{v:g}{unit}"
    return f"{b:g}B"


def download_times(tr: dict[str, np.ndarray], group: int, sizes: list[int] | None, warmup_ns: int) -> dict[str, Any]:
    """Download-time percentiles (s), for all downloads of a group and per file size:
    each size of a list, or decades of size for continuous distributions."""
    sel = (tr["group"] == group) & (tr["request_ns"] >= warmup_ns)
    size = tr["size_bytes"][sel].astype(float)
    end = tr["end_ns"][sel]
    done = end >= 0
    dt = (end - tr["request_ns"][sel].astype(np.int64)) / 1e9

    def block(mask: np.ndarray) -> dict[str, Any]:
        d = distribution(dt[mask & done], DOWNLOAD_PERCENTILES, extremes=True)
        return {"completed": int((mask & done).sum()), "unfinished": int((mask & ~done).sum()), **d}

    out: dict[str, Any] = {"all": block(np.ones_like(done))}
    by: dict[str, Any] = {}
    if sizes:
        for s in sizes:
            by[_size_label(s)] = {"size_bytes": s, **block(size == s)}
    elif len(size):
        lo = 10 ** np.floor(np.log10(max(size.min(), 1)))
        while lo <= size.max():
            m = (size >= lo) & (size < lo * 10)
            if m.any():
                by[f"{_size_label(lo)}-{_size_label(lo * 10)}"] = {"size_bytes": [lo, lo * 10], **block(m)}
            lo *= 10
    out["by_size"] = by
    return out


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
    elif (hd := histogram(result, "bottleneck.sojourn")) is not None:
        bottleneck["queue_delay_ms"] = hd
        bottleneck["queue_delay_note"] = HIST_NOTE
    else:
        bottleneck["queue_delay_ms"] = distribution(np.array([]))
        bottleneck["queue_delay_note"] = "packet records were off (record.packets = false)"
    util = utilization_samples(result.raw["link_series"], 0, interval_ns, util_ns, warmup_ns)
    if is_trace_link(result.raw["link_series"], 0):
        bottleneck["trace"] = (sc["bottleneck"].get("trace") or {}).get("file", "inline")
    ls = result.raw["link_series"]
    cap = ls["capacity_bps"][ls["link"] == 0]
    if len(cap) and cap.min() != cap.max():
        bottleneck["capacity_mbps"] = {"min": float(cap.min()) / 1e6, "max": float(cap.max()) / 1e6}
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
    tr = result.raw["transfers"]
    dg = result.raw["datagrams"]
    end_ns = round(sim_s * 1e9)
    goodput_ns = _ns(sc["metrics"]["goodput_interval"])
    for gi, g in enumerate(meta["groups"]):
        # (an emulated run can have groups beyond the scenario's: its CBR probes)
        spec = sc["flows"][gi] if gi < len(sc["flows"]) else {}
        stop_ns = _ns(spec["stop"]) if spec.get("stop") else None
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
        until_ns = min(end_ns, stop_ns) if stop_ns is not None else end_ns
        active_s = np.maximum((until_ns - np.maximum(start, warmup_ns)) / 1e9, 1e-9)
        per_flow = (delivered - base) * 8 / active_s / 1e6
        sent = fl["segments_sent"][sel].sum()
        dropped = fl["drops"][sel].sum()
        c: dict[str, Any] = {
            "kind": g["kind"],
            "flows": int(sel.sum()),
            "cc": g["cc"],
            "receiver": g.get("receiver"),
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
        per_win, total_win = goodput_windows(fs, ids, start, interval_ns, goodput_ns, end_ns, warmup_ns, stop_ns)
        c["goodput_per_interval_mbps"] = {
            "interval_s": goodput_ns / 1e9,
            "per_flow": distribution(per_win, GOODPUT_PERCENTILES, extremes=False),
            "class": distribution(total_win, GOODPUT_PERCENTILES, extremes=False),
        }
        if "bottleneck" in logged:
            li = logged.index("bottleneck")
            mine = np.isin(pk["flow"], ids)
            s = (pk["link"] == li) & (pk["event"] == 1) & (pk["time_ns"] >= warmup_ns) & mine
            qd = distribution(pk["sojourn_ns"][s] / 1e6, (50, 95, 99))
            c["queue_delay_ms"] = qd
        elif (hd := histogram(result, f"bottleneck.sojourn.{g['name']}", (50, 95, 99))) is not None:
            c["queue_delay_ms"] = hd
        if g["kind"] == "cbr":
            d = np.isin(dg["flow"], ids) & (dg["time_ns"] >= warmup_ns)
            c["rate_kbps"] = g["rate_bps"] / 1e3 if g.get("rate_bps") else None
            c["datagrams"] = {"sent": int(sent), "received": int(np.isin(dg["flow"], ids).sum()), "dropped": int(dropped)}
            c["one_way_delay_ms"] = distribution(dg["delay_ns"][d] / 1e6, OWD_PERCENTILES)
            if not sc["record"]["datagrams"]:
                c["one_way_delay_note"] = "datagram records were off (record.datagrams = false)"
        else:
            srtt = fs["srtt_ns"][np.isin(fs["flow"], ids) & (fs["time_ns"] >= warmup_ns)]
            c["srtt_ms"] = distribution(srtt[srtt >= 0] / 1e6, (5, 50, 95))
        if g["kind"] in ("files", "web", "transfer"):
            c["download_time_s"] = download_times(tr, gi, g.get("sizes"), warmup_ns)
        if g.get("receiver") == "palermo":
            c["receiver_reverts"] = int(fl["receiver_reverts"][sel].sum())
            c["receiver_returns"] = int(fl["receiver_returns"][sel].sum())
        classes[g["name"]] = c

    rev = links[1]
    rst = rev["stats"]
    bottleneck_rev = {
        "aqm": rev["aqm"],
        "rate_mbps": rev["rate_bps"] / 1e6,
        "delay_ms": rev["delay_ns"] / 1e6,
        "packets": {"arrived": rst["arrivals"], "dequeued": rst["dequeued"], "dropped": sum(rst["drops"]), "marked": sum(rst["marks"])},
        "drops": dict(zip(("overflow", "random", "deterministic"), rst["drops"])),
    }
    if "bottleneck_rev" in logged:
        li = logged.index("bottleneck_rev")
        sel = (pk["link"] == li) & (pk["event"] == 1) & (pk["time_ns"] >= warmup_ns)
        bottleneck_rev["queue_delay_ms"] = distribution(pk["sojourn_ns"][sel] / 1e6)
    elif not sc["record"]["packets"] and (hd := histogram(result, "bottleneck_rev.sojourn")) is not None:
        bottleneck_rev["queue_delay_ms"] = hd

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
        "bottleneck_rev": bottleneck_rev,
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
