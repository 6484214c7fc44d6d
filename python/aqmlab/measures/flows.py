"""Measures of flows and traffic classes over a run's tables: each class's kind,
per-flow goodput over the active time and per interval, file transfers and their
rates, and per-class loss, delay and rate at a link (Jou, Tan & Baras Tables
III-IV).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .runs import kinds_of, resolve_link, setting_ns, warmup_s


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
