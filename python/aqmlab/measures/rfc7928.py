"""RFC 7928's measures that `aqmlab characterize` adds to the summary figures: loss
synchronization (§2.4), IP packet delay variation (§2.6), the stability of the
queueing delay (§8) and the TCP goodput over a varying load.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .links import delay_over_time
from .runs import kinds_of, setting_ns, warmup_s


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
