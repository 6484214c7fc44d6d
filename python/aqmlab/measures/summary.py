"""summary.json: `summarize` makes it from the raw columns the core hands back (each
link's figures, each traffic class's, the reverse bottleneck's; `link_utilization`
is the utilization column `results.py` adds to the link rows); `headline` and the
headline table read it back for reports, comparisons and the command line.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .runs import _ns, ecn_codepoints, kinds_of
from .stats import DOWNLOAD_PERCENTILES, GOODPUT_PERCENTILES, HIST_NOTE, OWD_PERCENTILES, QUEUE_PERCENTILES, UTIL_PERCENTILES, _num, distribution, histogram, jain_index


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
    if "ecn_arrived" in st:
        out["ecn"] = {
            "arrived": dict(zip(ecn_codepoints(), st["ecn_arrived"])),
            "departed": dict(zip(ecn_codepoints(), st["ecn_dequeued"])),
        }
    if ln.get("counters"):
        out["queues"] = aqm_counters(ln["counters"])
    return out


def aqm_counters(counters: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """An AQM's own end-of-run figures by sub-queue (DualPI2's `l` and `c`; `all`
    for the whole): counts as they are, times in ms, and each queue's mean sojourn
    when it keeps a total."""
    out: dict[str, dict[str, Any]] = {}
    for c in counters:
        q = out.setdefault(c["queue"] or "all", {})
        (kind, v), = c["value"].items()
        if kind == "nanos":
            q[f"{c['name']}_ms"] = v / 1e6
        else:
            q[c["name"]] = v
    for q in out.values():
        if "sojourn_total_ms" in q and q.get("dequeued"):
            q["sojourn_mean_ms"] = q["sojourn_total_ms"] / q["dequeued"]
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
        order = ["aqm", "rate_mbps", "delay_ms", "buffer_packets", "buffer_bytes", "queue_delay_ms", "queue_delay_note", "trace", "capacity_mbps", "utilization", "packets", "drops", "marks", "drop_rate", "drop_shares", "ecn", "queues"]
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
            "ecn": {
                "sent": {cp: int(fl[f"sent_{cp}"][sel].sum()) for cp in ecn_codepoints()},
                "received": {cp: int(fl[f"received_{cp}"][sel].sum()) for cp in ecn_codepoints()},
            },
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


# -- the headline figures of a summary -----------------------------------------------------


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The headline link's block of a summary.json: `bottleneck` in a dumbbell, the
    primary link's entry of `links` in a topology."""
    if summary.get("bottleneck") is not None:
        return summary["bottleneck"]
    return summary["links"][summary["primary_link"]]


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
