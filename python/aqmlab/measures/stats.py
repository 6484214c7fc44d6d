"""Statistics of a run's values: percentiles (`distribution`), the same from a
streaming histogram (`hist_distribution`, `histogram`), Jain's fairness index,
thinning, the moving average and the empirical CDF the figures draw.
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


MAX_SAMPLES_PER_RUN = 100_000  # per-packet values kept per run for pooled distributions


def thin(x: np.ndarray, n: int = MAX_SAMPLES_PER_RUN) -> np.ndarray:
    """At most `n` values, every k-th (keeps the distribution)."""
    if len(x) <= n:
        return x
    return x[:: int(math.ceil(len(x) / n))]


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
