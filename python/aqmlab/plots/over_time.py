"""Figure kinds over time, one run per series (the lowest seed): queueing delay,
queue length, dropping probability, drops by cause, congestion windows, capacity,
and per-connection traces; with the data of each kind for one run (None without
it), which the SVG drawings (`aqmlab.plots_svg`) share.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

from .. import measures as m
from .base import CAUSE_COLORS, Options, _figure, _legend, _title, palette

if TYPE_CHECKING:
    from ..comparison import Series


def _time_panels(series, opt: Options, get: Callable[[Any], Any], draw_one: Callable[[Any, "Series", Any, Any], Optional[list]], ylabel: str, title: str,
                 height: float = 2.2):
    data = [(s, s.first, get(s.first)) for s in series[: opt.max_panels]]
    data = [(s, r, d) for s, r, d in data if d is not None]
    if not data:
        return None
    cols = 1 if len(data) <= 3 else 2
    rows = math.ceil(len(data) / cols)
    fig, axes = _figure(opt, 7.6 * cols + 1.8, height * rows + 0.7, rows, cols, sharex=True)
    flat = axes.ravel()
    for ax in flat[len(data):]:
        ax.set_visible(False)
    legend: dict[str, Any] = {}
    for ax, (s, r, d) in zip(flat, data):
        for h, lab in draw_one(ax, s, r, d) or []:
            legend.setdefault(lab, h)
        if len(data) > 1:
            ax.set_title(f"{s.label()} (seed {r.seed})")
        ax.set_xlim(0, float(r.summary["sim_seconds"]))
        ax.set_ylabel(ylabel)
    for ax in flat[: len(data)]:
        if ax.get_subplotspec().is_last_row() or ax is flat[len(data) - 1]:
            ax.set_xlabel("time (s)")
            ax.tick_params(labelbottom=True)
    _legend(fig, list(legend.values()), list(legend))
    _title(fig, opt, title + ("" if len(data) > 1 else f" (seed {data[0][1].seed})"))
    return fig


def aqm_estimate(r: Any, link: str) -> Optional[Any]:
    """The AQM's own delay estimate per record interval (time_s, aqm_delay_ms), if it keeps one."""
    ls = m.link_series(r, link, ["aqm_delay_ms"])
    return ls if ls is not None and ls["aqm_delay_ms"].notna().any() else None


def delay_ylim(q: np.ndarray) -> float:
    """The top of a queueing-delay axis: just above the 99.9th percentile."""
    return float(np.nanpercentile(q, 99.9)) * 1.1 or 1.0


def red_thresholds(r: Any) -> list[tuple[str, float]]:
    """Fixed RED/ARED thresholds of the scenario's bottleneck (name, kB), if any."""
    aqm = (r.scenario.get("bottleneck") or {}).get("aqm") or {}
    out = []
    if aqm.get("kind") in ("ared", "red") and not aqm.get("sliding"):
        for k in ("min_th", "max_th"):
            v = aqm.get(k)
            if isinstance(v, str) and v.upper().endswith("KB"):
                out.append((k, float(v[:-2])))
    return out


def drop_prob_data(r: Any, link: str) -> Optional[Any]:
    ts = m.link_series(r, link)
    return ts if ts is not None and ts["drop_prob"].notna().any() else None


CAUSES = ("overflow", "random", "deterministic", "mark")


def causes_data(r: Any, link: str) -> Optional[tuple[np.ndarray, list[str], list[np.ndarray]]]:
    """Drops by cause and marks per second at `link`: (end of each second, the
    causes that occur, their rates), or None when there are none."""
    ts = m.causes_over_time(r, link)
    if ts is None or not ts[list(CAUSES)].to_numpy(float).sum():
        return None
    t = ts["time_s"].to_numpy(float)
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    step = max(1, int(round(1.0 / dt)))  # per second
    n = len(t) // step
    names = [c for c in CAUSES if ts[c].sum()]
    ys = [ts[c].to_numpy(float)[: n * step].reshape(n, step).sum(axis=1) / (step * dt) for c in names]
    return t[: n * step].reshape(n, step)[:, -1], names, ys


def cause_label(c: str) -> str:
    return f"{c} {'marks' if c == 'mark' else 'drops'}"


def cwnd_data(r: Any) -> Optional[Any]:
    f = r.table("timeseries", ["time_s", "flow", "cwnd_segments"], [("scope", "=", "flow")])
    return None if f is None or f.empty or not f["cwnd_segments"].notna().any() else f


def capacity_data(r: Any, link: str) -> Optional[Any]:
    ts = m.link_series(r, link, ["capacity_mbps", "throughput_mbps"])
    if ts is None or ts["capacity_mbps"].min() == ts["capacity_mbps"].max():
        return None
    return ts


def flow_trace_data(series: list["Series"]) -> list[tuple["Series", Any, Any]]:
    """The flow traces of the first run of up to four series (delivered_bytes, rtt_ms, in_flight_segments)."""
    data = []
    for s in series[:4]:
        r = s.first
        tr = r.table("flow_trace", ["time_s", "flow", "acked_bytes", "rtt_ms", "in_flight_segments"])
        if tr is None or tr.empty:
            continue
        data.append((s, r, tr.rename(columns={"acked_bytes": "delivered_bytes"})))
    return data


TIME_KINDS = {  # kind: (y label, title)
    "queue_delay_time": ("queueing delay (ms)", "Queueing delay over time"),
    "backlog_time": ("queue length (kB)", "Queue length over time"),
    "drop_prob_time": ("dropping probability", "Dropping probability over time"),
    "causes_time": ("drops, marks per second", "Drops by cause and marks over time"),
    "cwnd_time": ("cwnd (segments)", "Congestion windows of the first 8 flows"),
    "capacity_time": ("Mbps", "Capacity and throughput over time"),
}
EWMA_LABEL = f"moving average (EWMA, {m.EWMA_TAU_S:g} s)"


def queue_delay_time(series, opt):
    """Kuhn & Ros Fig. 3: per-packet queueing delay over time, with the AQM's own delay
    estimate where it keeps one; each y axis ends just above its 99.9th percentile."""

    def one(ax, s, r, d):
        t, q = d
        h = ax.scatter(t, q, s=1, color=s.color, alpha=0.5, rasterized=True, linewidths=0)
        out = [(h, "per-packet queueing delay")]
        ls = aqm_estimate(r, opt.link)
        if ls is not None:
            (ln,) = ax.plot(ls["time_s"], ls["aqm_delay_ms"], color="black", lw=0.7)
            out.append((ln, "the AQM's delay estimate"))
        ax.set_ylim(0, delay_ylim(q))
        return out

    return _time_panels(series, opt, lambda r: m.delay_over_time(r, opt.link), one, *TIME_KINDS["queue_delay_time"])


def backlog_time(series, opt):
    """Jou, Tan & Baras Fig. 10: the queue length over time (kB, each record interval) and
    its moving average; fixed RED thresholds dashed when the scenario has them."""

    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        q = ts["backlog_bytes"].to_numpy(float) / 1e3
        (a,) = ax.plot(t, q, color=s.color, lw=0.6, alpha=0.7)
        (b,) = ax.plot(t, m.ewma(t, q), color="black", lw=1.0)
        out = [(a, "queue length"), (b, EWMA_LABEL)]
        for k, v in red_thresholds(r):
            out.append((ax.axhline(v, color="grey", ls=":" if k == "min_th" else "--", lw=1), k))
        ax.set_ylim(bottom=0)
        return out

    return _time_panels(series, opt, lambda r: m.link_series(r, opt.link), one, *TIME_KINDS["backlog_time"])


def drop_prob_time(series, opt):
    """Jou, Tan & Baras Fig. 11: the AQM's dropping probability over time (its value at
    each record interval) and its moving average."""

    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        p = ts["drop_prob"].to_numpy(float)
        (a,) = ax.plot(t, p, color=s.color, lw=0.6, alpha=0.7)
        (b,) = ax.plot(t, m.ewma(t, np.nan_to_num(p)), color="black", lw=1.0)
        ax.set_ylim(bottom=0)
        return [(a, "Inst. P (the AQM's probability)"), (b, f"Avg. P (EWMA, {m.EWMA_TAU_S:g} s)")]

    return _time_panels(series, opt, lambda r: drop_prob_data(r, opt.link), one, *TIME_KINDS["drop_prob_time"])


def causes_time(series, opt):
    """Drops by cause and ECN marks per second at the link, stacked."""

    def one(ax, s, r, d):
        tt, names, ys = d
        polys = ax.stackplot(tt, *ys, colors=[CAUSE_COLORS[c] for c in names], alpha=0.85, step="pre", linewidth=0)
        ax.set_ylim(bottom=0)
        return [(p, cause_label(c)) for p, c in zip(polys, names)]

    return _time_panels(series, opt, lambda r: causes_data(r, opt.link), one, *TIME_KINDS["causes_time"])


def cwnd_time(series, opt, max_flows: int = 8):
    """Congestion window of the first flows over time (segments, each record interval)."""

    def one(ax, s, r, f):
        flows = sorted(f["flow"].dropna().unique())[:max_flows]
        pal = palette(len(flows)) if len(series) == 1 else [s.color] * len(flows)
        out = []
        for fl, c in zip(flows, pal):
            x = f[f["flow"] == fl]
            (ln,) = ax.plot(x["time_s"], x["cwnd_segments"], lw=0.8, color=c, alpha=1.0 if len(series) == 1 else 0.6)
            out.append((ln, f"flow {int(fl)}"))
        ax.set_ylim(bottom=0)
        return out if len(series) == 1 else []

    return _time_panels(series, opt, cwnd_data, one, "cwnd (segments)", f"Congestion windows of the first {max_flows} flows", height=2.6)


def capacity_time(series, opt):
    """The link's capacity and throughput over time, when the capacity changes (a
    schedule or a trace; Pan et al.'s capacity drop)."""

    def one(ax, s, r, ts):
        (a,) = ax.step(ts["time_s"], ts["capacity_mbps"], where="pre", color="black", lw=1.2)
        (b,) = ax.plot(ts["time_s"], ts["throughput_mbps"], color=s.color, lw=0.7)
        ax.set_ylim(bottom=0)
        return [(a, "capacity"), (b, "throughput")]

    return _time_panels(series, opt, lambda r: capacity_data(r, opt.link), one, *TIME_KINDS["capacity_time"])


def flow_traces(series, opt, max_flows: int = 5):
    """Popovsky (Palermo) Figs. 2-6: per-connection delivered data, RTT samples and data
    in flight, at ACK granularity when the run traced the flows (record.flow_trace)."""
    data = flow_trace_data(series)
    if not data:
        return None
    fig, axes = _figure(opt, 4.6 * len(data) + 1.6, 7.0, 3, len(data), sharex="col")
    legend: dict[str, Any] = {}
    for j, (s, r, f) in enumerate(data):
        flows = sorted(f["flow"].dropna().unique())[:max_flows]
        for fl, c in zip(flows, palette(len(flows))):
            x = f[f["flow"] == fl]
            step = max(1, len(x) // 20_000)
            (ln,) = axes[0, j].plot(x["time_s"][::step], x["delivered_bytes"][::step] / 1e6, lw=0.9, color=c)
            axes[1, j].plot(x["time_s"][::step], x["rtt_ms"][::step], lw=0.6, color=c)
            axes[2, j].plot(x["time_s"][::step], x["in_flight_segments"][::step], lw=0.6, color=c)
            legend.setdefault(f"flow {int(fl)}", ln)
        axes[0, j].set_title(f"{s.label()} (seed {r.seed})")
        axes[2, j].set_xlabel("time (s)")
    axes[0, 0].set_ylabel("delivered (MB)")
    axes[1, 0].set_ylabel("RTT sample (ms)")
    axes[2, 0].set_ylabel("in flight (segments)")
    _legend(fig, list(legend.values()), list(legend))
    _title(fig, opt, "Per-connection traces: data delivered, RTT and data in flight")
    return fig
