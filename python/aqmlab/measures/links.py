"""Measures of a link over a run's tables: per-packet queueing delay (or its stand-in
from the streaming histogram), delay over time, the per-interval rows, utilization,
the link's rate, the queueing delay at each drop by cause, drops and marks over time,
and RFC 7928 §2.7's goodput against delay per interval.

`run` is an `aqmlab.folders.Run`: `run.table(name, columns, filters)` gives a pandas
DataFrame of the columns of NAME.parquet (rows matching pyarrow-style filters), or None
when the table or a column is absent (summaries-only runs, emulated runs, older runs).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from .runs import _dequeues, resolve_link, setting_ns, warmup_s
from .stats import MAX_SAMPLES_PER_RUN, thin
from .summary import headline


CAUSE_NAMES = ("overflow", "random", "deterministic")


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
