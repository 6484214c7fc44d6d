"""Every derived figure of a run, computed from its tables: the one measures layer.

`summarize` makes summary.json from the raw columns the core hands back; the other
functions read a run's tables through `Run.table` (a run in memory or a run folder,
see `aqmlab.folders`) and serve the run report, the comparison of runs and the
reproductions alike. Each takes the link it measures by name (`link="bottleneck"`),
so that a figure of another logged link is the same call. The same functions serve
simulated and emulated runs: they read only the tables of DESIGN.md "What a run
writes". Conventions:

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

import functools
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


def _link_delay(result: Any, li: int, name: str, warmup_ns: int, flows: np.ndarray | None = None, ps: Sequence[int] = QUEUE_PERCENTILES, hist: str | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """Queueing delay (ms) at link `li` (its `name`): from its packet rows when it
    is logged, else from its streaming histogram `hist` (default NAME.sojourn);
    (None, None) when the run kept neither. Restricted to `flows` if given."""
    meta = result.meta
    logged = meta["logged_links"]
    if name in logged:
        pk = result.raw["packets"]
        sel = (pk["link"] == logged.index(name)) & (pk["event"] == 1) & (pk["time_ns"] >= warmup_ns)
        if flows is not None:
            sel &= np.isin(pk["flow"], flows)
        return distribution(pk["sojourn_ns"][sel] / 1e6, ps), None
    hd = histogram(result, hist or f"{name}.sojourn", ps)
    if hd is not None:
        return hd, HIST_NOTE
    return None, None


def link_summary(result: Any, li: int) -> dict[str, Any]:
    """The figures of link `li` (any link of any topology): its settings, queueing
    delay (packet rows or streaming histogram, when the run kept either),
    utilization (when it is sampled), packets, drops and marks by cause."""
    meta = result.meta
    sc = meta["scenario"]
    warmup_ns = _ns(sc["metrics"]["warmup"])
    interval_ns = _ns(sc["record"]["interval"])
    util_ns = _ns(sc["metrics"]["utilization_interval"])
    ln = meta["links"][li]
    st = ln["stats"]
    out: dict[str, Any] = {
        "aqm": ln["aqm"],
        "rate_mbps": ln["rate_bps"] / 1e6,
        "delay_ms": ln["delay_ns"] / 1e6,
        "buffer_packets": ln["limit_packets"],
        "buffer_bytes": ln["limit_bytes"],
    }
    qd, note = _link_delay(result, li, ln["name"], warmup_ns)
    if qd is not None:
        out["queue_delay_ms"] = qd
        if note:
            out["queue_delay_note"] = note
    ls = result.raw["link_series"]
    if np.any(ls["link"] == li):
        util = utilization_samples(ls, li, interval_ns, util_ns, warmup_ns)
        cap = ls["capacity_bps"][ls["link"] == li]
        if len(cap) and cap.min() != cap.max():
            out["capacity_mbps"] = {"min": float(cap.min()) / 1e6, "max": float(cap.max()) / 1e6}
        u = distribution(util, UTIL_PERCENTILES, extremes=False)
        out["utilization"] = {"mean": u.pop("mean"), **u}
    else:
        out["throughput_mbps"] = st["bytes_dequeued"] * 8 / max(meta["sim_seconds"], 1e-9) / 1e6
    drops = dict(zip(("overflow", "random", "deterministic"), st["drops"]))
    marks = dict(zip(("overflow", "random", "deterministic"), st["marks"]))
    out["packets"] = {
        "arrived": st["arrivals"],
        "enqueued": st["enqueued"],
        "dequeued": st["dequeued"],
        "dropped": sum(st["drops"]),
        "marked": sum(st["marks"]),
    }
    out["drops"] = drops
    out["marks"] = {"random": marks["random"], "deterministic": marks["deterministic"]}
    out["drop_rate"] = sum(st["drops"]) / st["arrivals"] if st["arrivals"] else None
    total = sum(st["drops"])
    out["drop_shares"] = {k: (v / total if total else None) for k, v in drops.items()}
    return out


def summarize(result: Any) -> dict[str, Any]:
    """The summary.json of a run (see DESIGN.md for the keys)."""
    meta = result.meta
    sc = meta["scenario"]
    warmup_ns = _ns(sc["metrics"]["warmup"])
    interval_ns = _ns(sc["record"]["interval"])
    sim_s = meta["sim_seconds"]
    links = meta["links"]
    pk = result.raw["packets"]
    logged = meta["logged_links"]
    dumbbell = "bottleneck" in sc
    per_link = {ln["name"]: link_summary(result, li) for li, ln in enumerate(links)}

    bottleneck: dict[str, Any] | None = None
    if dumbbell:
        bottleneck = dict(per_link["bottleneck"])
        if "queue_delay_ms" not in bottleneck:
            bottleneck["queue_delay_ms"] = distribution(np.array([]))
            bottleneck["queue_delay_note"] = "packet records were off (record.packets = false)"
        if is_trace_link(result.raw["link_series"], 0):
            bottleneck["trace"] = (sc["bottleneck"].get("trace") or {}).get("file", "inline")
        # the headline block keeps its historical key order
        order = ["aqm", "rate_mbps", "delay_ms", "buffer_packets", "buffer_bytes", "queue_delay_ms", "queue_delay_note", "trace", "capacity_mbps", "utilization", "packets", "drops", "marks", "drop_rate", "drop_shares"]
        bottleneck = {k: bottleneck[k] for k in order if k in bottleneck}

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
        if dumbbell:
            qd, _ = _link_delay(result, 0, "bottleneck", warmup_ns, ids, (50, 95, 99), f"bottleneck.sojourn.{g['name']}")
            if qd is not None:
                c["queue_delay_ms"] = qd
        else:
            # a topology: the class's queueing delay at each link side its data crosses
            by_link = {}
            for li, ln in enumerate(links):
                h = next((x for x in meta.get("histograms") or [] if x["name"] == f"{ln['name']}.sojourn.{g['name']}"), None)
                if h is None or not h["count"]:
                    continue
                qd, _ = _link_delay(result, li, ln["name"], warmup_ns, ids, (50, 95, 99), f"{ln['name']}.sojourn.{g['name']}")
                if qd is not None:
                    by_link[ln["name"]] = qd
            c["queue_delay_ms_by_link"] = by_link
        if g["kind"] in kinds_of("datagrams"):
            d = np.isin(dg["flow"], ids) & (dg["time_ns"] >= warmup_ns)
            c["rate_kbps"] = g["rate_bps"] / 1e3 if g.get("rate_bps") else None
            c["datagrams"] = {"sent": int(sent), "received": int(np.isin(dg["flow"], ids).sum()), "dropped": int(dropped)}
            c["one_way_delay_ms"] = distribution(dg["delay_ns"][d] / 1e6, OWD_PERCENTILES)
            if not sc["record"]["datagrams"]:
                c["one_way_delay_note"] = "datagram records were off (record.datagrams = false)"
        else:
            srtt = fs["srtt_ns"][np.isin(fs["flow"], ids) & (fs["time_ns"] >= warmup_ns)]
            c["srtt_ms"] = distribution(srtt[srtt >= 0] / 1e6, (5, 50, 95))
        if g["kind"] in kinds_of("downloads"):
            c["download_time_s"] = download_times(tr, gi, g.get("sizes"), warmup_ns)
        if g.get("receiver") == "palermo":
            c["receiver_reverts"] = int(fl["receiver_reverts"][sel].sum())
            c["receiver_returns"] = int(fl["receiver_returns"][sel].sum())
        classes[g["name"]] = c

    bottleneck_rev: dict[str, Any] | None = None
    if dumbbell:
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

    out = {
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
        "links": per_link,
        "classes": classes,
        "conservation": meta["conservation"],
    }
    if not dumbbell:
        # a topology has no one bottleneck: its links say it all, and the headline
        # figures speak of its first AQM link that data crosses
        del out["bottleneck"], out["bottleneck_rev"]
        out["primary_link"] = primary_link_of(meta)
    return out


def primary_link_of(meta: dict[str, Any]) -> str:
    """The link a run's headline figures speak of: the dumbbell's bottleneck; in a
    topology of [[links]], its first recorded link (by default the AQM links that
    data crosses), else its first link with an AQM, else its first link."""
    names = [ln["name"] for ln in meta["links"]]
    if "bottleneck" in names:
        return "bottleneck"
    if meta.get("logged_links"):
        return meta["logged_links"][0]
    return next((ln["name"] for ln in meta["links"] if ln["aqm"] != "droptail"), names[0])


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The headline link's block of a summary.json: `bottleneck` in a dumbbell, the
    primary link's entry of `links` in a topology."""
    if summary.get("bottleneck") is not None:
        return summary["bottleneck"]
    return summary["links"][summary["primary_link"]]


def resolve_link(run: Any, link: str) -> str:
    """A link's name in `run`: "bottleneck" stands for the run's primary link in a
    topology of [[links]], which has no link of that name."""
    if link != "bottleneck":
        return link
    return (getattr(run, "summary", None) or {}).get("primary_link", "bottleneck")


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}


def duration_ns(text: str) -> int:
    """Parse a duration string as the Rust core writes it ("100ms", "1.5s")."""
    text = text.strip()
    i = len(text)
    while i and not (text[i - 1].isdigit() or text[i - 1] == "."):
        i -= 1
    return round(float(text[:i]) * _UNITS[text[i:]])


_ns = duration_ns


# -- measures over a run's tables (a run in memory or a run folder) -------------------------
#
# `run` is an `aqmlab.folders.Run`: `run.table(name, columns, filters)` gives a pandas
# DataFrame of the columns of NAME.parquet (rows matching pyarrow-style filters), or None
# when the table or a column is absent (summaries-only runs, emulated runs, older runs).

MAX_SAMPLES_PER_RUN = 100_000  # per-packet values kept per run for pooled distributions
CAUSE_NAMES = ("overflow", "random", "deterministic")
@functools.cache
def kinds_of(family: str) -> tuple[str, ...]:
    """The traffic kinds of a family, as the core's registry says: "bulk" (long-lived
    TCP), "datagrams" (unresponsive UDP), "downloads" (finite transfers)."""
    from .results import schema

    return tuple(k for k, f in schema()["traffic_families"].items() if f == family)


def _dequeues(link: str) -> list[tuple[str, str, Any]]:
    return [("link", "=", link), ("event", "=", "dequeue")]


DEQUEUES = _dequeues("bottleneck")


def setting_ns(run: Any, path: str, default_ns: int | None = None) -> int | None:
    """A duration of the run's scenario by dotted path ("metrics.warmup"), in ns."""
    d: Any = run.scenario
    for p in path.split("."):
        if not isinstance(d, dict) or p not in d:
            return default_ns
        d = d[p]
    return duration_ns(d) if isinstance(d, str) else default_ns


def warmup_s(run: Any) -> float:
    """The scenario's `metrics.warmup` in seconds (0 when it has none)."""
    return (setting_ns(run, "metrics.warmup", 0) or 0) / 1e9


def thin(x: np.ndarray, n: int = MAX_SAMPLES_PER_RUN) -> np.ndarray:
    """At most `n` values, every k-th (keeps the distribution)."""
    if len(x) <= n:
        return x
    return x[:: int(math.ceil(len(x) / n))]


def histogram_sample(run: Any, name: str) -> np.ndarray | None:
    """Values (ms) that follow a streaming histogram of the run (histograms.parquet):
    its quantiles at evenly spaced probabilities, interpolated inside each bucket, as
    many as the histogram counts up to MAX_SAMPLES_PER_RUN, so that the run weighs in
    a pooled CDF as its packets would."""
    df = run.table("histograms", ["name", "lo_ms", "hi_ms", "count"])
    if df is None:
        return None
    d = df[df["name"].astype(str) == name]
    total = int(d["count"].sum())
    if not total:
        return None
    cum = np.concatenate([[0.0], np.cumsum(d["count"].to_numpy(float))]) / total
    edges = np.concatenate([[d["lo_ms"].iloc[0]], d["hi_ms"].to_numpy(float)])
    n = min(total, MAX_SAMPLES_PER_RUN)
    return np.interp((np.arange(n) + 0.5) / n, cum, edges)


def queue_delays(run: Any, link: str = "bottleneck", classes: Iterable[str] | None = None) -> np.ndarray | None:
    """Per-packet queueing delay (ms, dequeue minus enqueue) at `link` after the warm-up,
    thinned to MAX_SAMPLES_PER_RUN. Without packet rows (summaries only) the run's
    streaming histogram stands in (the whole run: histograms have no warm-up)."""
    link = resolve_link(run, link)
    cols = ["time_s", "sojourn_ms"] + (["class"] if classes is not None else [])
    df = run.table("packets", cols, _dequeues(link))
    if df is not None and len(df):
        sel = df["time_s"].to_numpy(float) >= warmup_s(run)
        if classes is not None:
            sel &= df["class"].astype(str).isin(list(classes)).to_numpy()
        return thin(df["sojourn_ms"].to_numpy(float)[sel])
    name = f"{link}.sojourn" + ("" if classes is None else "." + ".".join(classes))
    if classes is not None and len(list(classes)) != 1:
        return None
    return histogram_sample(run, name)


def delay_over_time(run: Any, link: str = "bottleneck", max_points: int = 30_000) -> tuple[np.ndarray, np.ndarray] | None:
    """(time s, queueing delay ms) of the packets leaving `link`, at most `max_points`."""
    link = resolve_link(run, link)
    df = run.table("packets", ["time_s", "sojourn_ms"], _dequeues(link))
    if df is None or not len(df):
        return None
    step = max(1, len(df) // max_points)
    return df["time_s"].to_numpy(float)[::step], df["sojourn_ms"].to_numpy(float)[::step]


def link_series(run: Any, link: str = "bottleneck", columns: Sequence[str] = ("backlog_bytes", "drop_prob", "aqm_delay_ms")):
    """The per-interval rows of `link` (timeseries.parquet, scope "link"), in time order."""
    link = resolve_link(run, link)
    ts = run.table("timeseries", ["time_s", *columns], [("scope", "=", "link"), ("link", "=", link)])
    return None if ts is None or ts.empty else ts.sort_values("time_s")


def utilization(run: Any, link: str = "bottleneck") -> np.ndarray | None:
    """Utilization of `link` per `metrics.utilization_interval` after the warm-up."""
    link = resolve_link(run, link)
    ts = link_series(run, link, ["utilization"])
    interval = setting_ns(run, "record.interval")
    window = setting_ns(run, "metrics.utilization_interval")
    if ts is None or not interval or not window:
        return None
    k = max(1, window // interval)
    u = ts["utilization"].to_numpy(float)
    t = ts["time_s"].to_numpy(float)
    n = len(u) // k
    if n == 0:
        return None
    means = u[: n * k].reshape(n, k).mean(axis=1)
    ends = t[: n * k].reshape(n, k)[:, -1]
    return means[ends - window / 1e9 >= warmup_s(run) - 1e-9]


def link_rate_bps(run: Any, link: str = "bottleneck") -> float:
    """The nominal rate of `link` (from summary.json; per-link figures when present)."""
    s = run.summary
    per = (s.get("links") or {}).get(resolve_link(run, link)) or (s.get(link) if link in ("bottleneck", "bottleneck_rev") else None) or {}
    return float(per.get("rate_mbps", headline(s)["rate_mbps"])) * 1e6


def drop_delays(run: Any, link: str = "bottleneck") -> dict[str, np.ndarray] | None:
    """Queueing delay (ms, backlog / link rate) when each drop at `link` happened, by
    cause (Kuhn & Ros Fig. 4); None without packet rows."""
    link = resolve_link(run, link)
    d = run.table("packets", ["cause", "backlog_bytes"], [("link", "=", link), ("event", "=", "drop")])
    if d is None:
        return None
    delay = d["backlog_bytes"].to_numpy(float) * 8 / link_rate_bps(run, link) * 1e3
    cause = d["cause"].astype(object).to_numpy()
    return {c: delay[cause == c] for c in CAUSE_NAMES}


def causes_over_time(run: Any, link: str = "bottleneck") -> Any:
    """Drops by cause and marks per record interval at `link` (columns time_s,
    overflow, random, deterministic, mark), or None."""
    link = resolve_link(run, link)
    ts = link_series(run, link, ["drops_overflow", "drops_random", "drops_deterministic", "marks"])
    if ts is None:
        return None
    return ts.rename(columns={"drops_overflow": "overflow", "drops_random": "random", "drops_deterministic": "deterministic", "marks": "mark"})


def class_kinds(run: Any) -> dict[str, str]:
    """Traffic class name -> flow kind (bulk, cbr, files, ...)."""
    return {name: c.get("kind", "") for name, c in run.summary.get("classes", {}).items()}


def flow_goodputs(run: Any, kinds: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Per-flow goodput (Mbps) over each flow's active time, by class."""
    df = run.table("flows", ["class", "kind", "goodput_mbps"])
    if df is None:
        return {}
    if kinds is not None:
        df = df[df["kind"].isin(kinds)]
    return {str(c): sub["goodput_mbps"].to_numpy(float) for c, sub in df.groupby(df["class"].astype(str), sort=False, observed=True)}


def interval_goodputs(run: Any, kinds: Sequence[str], classes: Sequence[str] | None = None) -> np.ndarray | None:
    """Per-flow goodput (Mbps) per `metrics.goodput_interval` after the warm-up, flows
    of `kinds` (and of the named `classes` when given)."""
    fl = run.table("flows", ["flow", "kind", "class"])
    ts = run.table("timeseries", ["time_s", "flow", "goodput_mbps"], [("scope", "=", "flow")])
    if fl is None or ts is None:
        return None
    keep = fl["kind"].isin(kinds)
    if classes is not None:
        keep &= fl["class"].astype(str).isin(list(classes))
    ids = set(fl.loc[keep, "flow"].tolist())
    f = ts[ts["flow"].isin(ids) & (ts["time_s"] > warmup_s(run))]
    if f.empty:
        return None
    gi = (setting_ns(run, "metrics.goodput_interval", 10**9) or 10**9) / 1e9
    bucket = np.floor((f["time_s"].to_numpy(float) - 1e-9) / gi)
    return f.assign(bucket=bucket).groupby(["flow", "bucket"])["goodput_mbps"].mean().to_numpy(float)


def goodput_delay_points(run: Any, link: str = "bottleneck") -> np.ndarray | None:
    """RFC 7928 §2.7's trade-off, per `metrics.goodput_interval` window after the
    warm-up: rows of (mean queueing delay of the packets that left `link` in the
    window, ms; goodput of all flows in the window, Mbps). Without packet rows the
    delay is the mean backlog over the link rate."""
    link = resolve_link(run, link)
    gi = (setting_ns(run, "metrics.goodput_interval", 10**9) or 10**9) / 1e9
    ts = run.table("timeseries", ["time_s", "goodput_mbps"], [("scope", "=", "flow")])
    if ts is None or ts.empty:
        return None
    w0 = warmup_s(run)
    t = ts["time_s"].to_numpy(float)
    end = float(run.summary["sim_seconds"])
    nwin = int(math.floor(end / gi + 1e-9))
    if nwin == 0:
        return None
    b = np.minimum(np.floor((t - 1e-9) / gi).astype(int), nwin - 1)
    interval = (setting_ns(run, "record.interval", 10**8) or 10**8) / 1e9
    # goodput_mbps is per record interval: the window's goodput is their mean over the flows' sum
    good = np.bincount(b, weights=ts["goodput_mbps"].to_numpy(float), minlength=nwin) * interval / gi
    pk = run.table("packets", ["time_s", "sojourn_ms"], _dequeues(link))
    if pk is not None and len(pk):
        pb = np.minimum(np.floor(pk["time_s"].to_numpy(float) / gi).astype(int), nwin - 1)
        cnt = np.bincount(pb, minlength=nwin)
        with np.errstate(invalid="ignore"):
            delay = np.bincount(pb, weights=pk["sojourn_ms"].to_numpy(float), minlength=nwin) / cnt
    else:
        ls = link_series(run, link, ["backlog_bytes"])
        if ls is None:
            return None
        lb = np.minimum(np.floor((ls["time_s"].to_numpy(float) - 1e-9) / gi).astype(int), nwin - 1)
        with np.errstate(invalid="ignore"):
            backlog = np.bincount(lb, weights=ls["backlog_bytes"].to_numpy(float), minlength=nwin) / np.bincount(lb, minlength=nwin)
        delay = backlog * 8 / link_rate_bps(run, link) * 1e3
    starts = np.arange(nwin) * gi
    keep = (starts >= w0 - 1e-9) & ~np.isnan(delay)
    return np.column_stack([delay[keep], good[keep]])


def transfers(run: Any) -> Any:
    """File transfers (`class`, `size_bytes`, `download_time_s`) that finished: from
    transfers.parquet when the run has one, else from the finished flows of a file kind."""
    import pandas as pd

    t = run.table("transfers", ["class", "size_bytes", "download_time_s"])
    if t is None:
        fl = run.table("flows", ["class", "kind", "start_s", "end_s", "bytes_delivered"])
        if fl is None:
            return None
        fl = fl[fl["kind"].isin(kinds_of("downloads")) & fl["end_s"].notna()]
        if fl.empty:
            return None
        t = pd.DataFrame({"class": fl["class"].astype(str), "size_bytes": fl["bytes_delivered"], "download_time_s": fl["end_s"] - fl["start_s"]})
    t = t[t["download_time_s"].notna()]
    return t if not t.empty else None


def transfer_rates(run: Any, classes: Sequence[str] | None = None) -> list[tuple[float, float, bool]]:
    """(size in bytes, average rate in Mbps, finished) of each single transfer of a run
    (flows of kind "transfer"): size over download time when it finished, else the
    bytes delivered by the end of the run over the time since its request."""
    t = run.table("transfers", ["flow", "class", "size_bytes", "request_s", "download_time_s"])
    fl = run.table("flows", ["flow", "kind", "bytes_delivered"])
    if t is None or fl is None:
        return []
    single = set(fl.loc[fl["kind"] == "transfer", "flow"].tolist())
    got = dict(zip(fl["flow"], fl["bytes_delivered"]))
    end = float(run.summary["sim_seconds"])
    out = []
    for flow, cls, size, req, dt in zip(t["flow"], t["class"].astype(str), t["size_bytes"].astype(float), t["request_s"].astype(float), t["download_time_s"].astype(float)):
        if flow not in single or (classes is not None and cls not in classes):
            continue
        if dt == dt and dt > 0:  # finished
            out.append((size, size * 8 / dt / 1e6, True))
        elif end > req:
            out.append((size, got.get(flow, 0) * 8 / (end - req) / 1e6, False))
    return out


def class_packets(run: Any, link: str = "bottleneck") -> dict[str, dict[str, float]] | None:
    """Per class at `link` after the warm-up (Jou, Tan & Baras Tables III-IV):
    `loss_pct` (packets dropped over packets arriving), `delay_s` (mean queueing delay
    of the packets sent on), `rate_kBps` (bytes sent on per second, kB = 1000 B)."""
    link = resolve_link(run, link)
    df = run.table("packets", ["time_s", "class", "uid", "size_bytes", "event", "sojourn_ms"], [("link", "=", link)])
    if df is None:
        return None
    w0 = warmup_s(run)
    df = df[df["time_s"] >= w0]
    span = max(float(run.summary["sim_seconds"]) - w0, 1e-9)
    out = {}
    for cls, d in df.groupby(df["class"].astype(str), sort=False):
        ev = d["event"].astype(str)
        arrived = d.loc[ev.isin(["enqueue", "drop"]), "uid"].nunique()
        dropped = int((ev == "drop").sum())
        deq = d[ev == "dequeue"]
        out[str(cls)] = {
            "loss_pct": 100.0 * dropped / arrived if arrived else float("nan"),
            "delay_s": float(deq["sojourn_ms"].mean()) / 1e3 if len(deq) else float("nan"),
            "rate_kBps": float(deq["size_bytes"].sum()) / span / 1e3,
        }
    return out


EWMA_TAU_S = 2.0  # time constant of the moving averages of the queue and probability figures


def ewma(t: np.ndarray, x: np.ndarray, tau_s: float = EWMA_TAU_S) -> np.ndarray:
    """Exponentially weighted moving average of samples x at times t, time constant tau_s
    (the weight of a sample is 1 - exp(-dt / tau_s), whatever the record interval)."""
    out = np.empty_like(x, dtype=float)
    acc = float(x[0]) if len(x) else 0.0
    prev = float(t[0]) if len(t) else 0.0
    for i, (ti, v) in enumerate(zip(t, x)):
        w = 1.0 - math.exp(-max(float(ti) - prev, 0.0) / tau_s)
        acc = (1 - w) * acc + w * float(v)
        prev = float(ti)
        out[i] = acc
    return out


def ecdf_points(x: np.ndarray, points: int = 2_000) -> tuple[np.ndarray, np.ndarray]:
    """An empirical CDF as (x, y), at most `points` quantiles (NaN left out)."""
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    if len(x) <= points:
        xs = np.sort(x)
        return xs, np.arange(1, len(xs) + 1) / max(len(xs), 1)
    p = np.linspace(0, 1, points)
    return np.quantile(x, p), p


# -- the headline figures of a summary -----------------------------------------------------

HEADLINE = [
    ("queue p50 (ms)", "bottleneck.queue_delay_ms.p50", 1),
    ("queue p90 (ms)", "bottleneck.queue_delay_ms.p90", 1),
    ("queue p95 (ms)", "bottleneck.queue_delay_ms.p95", 1),
    ("queue p99 (ms)", "bottleneck.queue_delay_ms.p99", 1),
    ("queue max (ms)", "bottleneck.queue_delay_ms.max", 1),
    ("utilization", "bottleneck.utilization.mean", 3),
    ("drop rate (%)", "bottleneck.drop_rate", 2),
    ("overflow share", "bottleneck.drop_shares.overflow", 2),
    ("random share", "bottleneck.drop_shares.random", 2),
    ("deterministic share", "bottleneck.drop_shares.deterministic", 2),
]
PERCENT = {"bottleneck.drop_rate"}


def get(d: Any, path: str) -> Any:
    """A value of a nested dict by dotted path, None when absent."""
    for p in path.split("."):
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def headline_columns(summaries: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(column, summary path, digits) of the headline table: the bottleneck's figures
    and each traffic class's goodput."""
    classes = list(dict.fromkeys(c for s in summaries for c in s.get("classes", {})))
    return list(HEADLINE) + [(f"{c} goodput (Mbps)", f"classes.{c}.goodput_mbps", 2) for c in classes]


def headline_values(summaries: Sequence[dict[str, Any]], path: str) -> tuple[float | None, float | None]:
    """Mean and standard deviation (None for one run) of a figure over runs."""
    scale = 100.0 if path in PERCENT else 1.0
    vals = [float(v) * scale for v in (get(s, path) for s in summaries) if v is not None]
    if not vals:
        return None, None
    return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else None)


# -- RFC 7928's measures (aqmlab characterize) ---------------------------------------------------


def loss_sync(run: Any, classes: Sequence[str] | None = None) -> float | None:
    """RFC 7928 §2.4: the global synchronization rate of Hassayoun & Ros ("Loss
    synchronization, router buffer sizing and high-speed TCP versions", 2009): the mean,
    over congestion events, of the fraction of the flows that reduced their window in
    the event. A reduction is a new ssthresh in the flow's time series (every window
    reduction sets one); reductions within one base RTT of an event's first belong to
    it. Bulk TCP flows of `classes` (all bulk classes by default); None with fewer than
    two flows or no reduction."""
    fl = run.table("flows", ["flow", "kind", "class", "base_rtt_ms"])
    fs = run.table("timeseries", ["time_s", "flow", "ssthresh_segments"], [("scope", "=", "flow")])
    if fl is None or fs is None or fs.empty:
        return None
    keep = fl["kind"].astype(str) == "bulk"
    if classes is not None:
        keep &= fl["class"].astype(str).isin(list(classes))
    ids = fl.loc[keep, "flow"].to_numpy()
    if len(ids) < 2:
        return None
    rtt_s = float(fl.loc[keep, "base_rtt_ms"].max()) / 1e3
    w0 = warmup_s(run)
    events: list[tuple[float, int]] = []
    for f, sub in fs[fs["flow"].isin(ids)].groupby("flow"):
        sub = sub.sort_values("time_s")
        ss = sub["ssthresh_segments"].to_numpy(float)
        t = sub["time_s"].to_numpy(float)
        prev = np.concatenate([[np.nan], ss[:-1]])
        new = ~np.isnan(ss) & ((np.isnan(prev)) | (ss != prev)) & (t >= w0)
        events += [(x, int(f)) for x in t[new]]
    if not events:
        return None
    events.sort()
    fractions, start, members = [], None, set()
    for t, f in events:
        if start is None or t - start > rtt_s:
            if members:
                fractions.append(len(members) / len(ids))
            start, members = t, set()
        members.add(f)
    fractions.append(len(members) / len(ids))
    return float(np.mean(fractions))


def ipdv_ms(run: Any, classes: Sequence[str]) -> float | None:
    """RFC 7928 §2.6 jitter: the mean absolute difference of the one-way delays of
    consecutive datagrams of each CBR flow of `classes` (IP packet delay variation,
    RFC 3393 / RFC 5481), after the warm-up."""
    dg = run.table("datagrams", ["time_s", "flow", "class", "one_way_delay_ms"])
    if dg is None or dg.empty:
        return None
    dg = dg[dg["class"].astype(str).isin(list(classes)) & (dg["time_s"] >= warmup_s(run))]
    diffs = [np.abs(np.diff(sub.sort_values("time_s")["one_way_delay_ms"].to_numpy(float))) for _, sub in dg.groupby("flow")]
    diffs = [d for d in diffs if len(d)]
    return float(np.concatenate(diffs).mean()) if diffs else None


def delay_cv(run: Any, link: str = "bottleneck") -> float | None:
    """§8 stability: the coefficient of variation (sd / mean) of the mean queueing delay
    per second after the warm-up."""
    got = delay_over_time(run, link)
    if got is None:
        return None
    t, d = (np.asarray(x, float) for x in got)
    keep = t >= warmup_s(run)
    if not keep.any():
        return None
    b = np.floor(t[keep]).astype(int)
    cnt = np.bincount(b)
    means = np.bincount(b, weights=d[keep])[cnt > 0] / cnt[cnt > 0]
    m = means.mean()
    return float(means.std() / m) if m > 0 and len(means) > 1 else None


def tcp_goodput(run: Any) -> float | None:
    """Goodput of all TCP flows together after the warm-up, Mb/s: their delivered bytes
    per record interval (timeseries.parquet) over the time from the warm-up to the end.
    Unlike the sum of the classes' goodputs, each over its own active time, it cannot
    exceed the capacity when some groups run for part of the time (§8's varying load)."""
    fl = run.table("flows", ["flow", "kind"])
    ts = run.table("timeseries", ["time_s", "flow", "goodput_mbps"], [("scope", "=", "flow")])
    if fl is None or ts is None or ts.empty:
        return None
    ids = set(fl.loc[~fl["kind"].astype(str).isin(kinds_of("datagrams")), "flow"].tolist())
    w0, end = warmup_s(run), float(run.summary["sim_seconds"])
    interval = (setting_ns(run, "record.interval", 10**8) or 10**8) / 1e9
    sel = ts["flow"].isin(ids) & (ts["time_s"] > w0 + 1e-9)
    return float(ts.loc[sel, "goodput_mbps"].sum() * interval / (end - w0)) if end > w0 else None
