"""Figures of a run, in the styles of the source papers: CDFs of queueing delay and
utilization (Kuhn & Ros, MADPIE Fig. 2), queueing delay over time (Fig. 3), shares
of drop causes against the queueing delay at the drop (Fig. 4), per-flow goodput
and congestion windows. Every figure stands on its own: axes with units, a legend,
a title naming the scenario."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import metrics

if TYPE_CHECKING:
    from .results import RunResult

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "savefig.bbox": "tight",
    # the same figure gives the same SVG bytes (no random ids)
    "svg.hashsalt": "aqmlab",
}

CAUSE_COLORS = {"overflow": "#7f7f7f", "random": "#1f77b4", "deterministic": "#d62728"}


def ecdf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(np.asarray(x, dtype=float))
    x = x[~np.isnan(x)]
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


def hist_cdf(r: "RunResult", name: str, ps: tuple[int, ...] = (5, 50, 95)) -> tuple[np.ndarray, np.ndarray, int, list] | None:
    """The CDF of a streaming histogram of the run (x in ms at each bucket's upper
    end, y), its count and percentiles (ms); None if it is missing or empty."""
    infos = r.meta.get("histograms") or []
    idx = next((i for i, m in enumerate(infos) if m["name"] == name), None)
    if idx is None or not infos[idx]["count"]:
        return None
    h = r.raw["histograms"]
    s = h["hist"] == idx
    cnt = h["count"][s]
    q = metrics.hist_distribution(infos[idx], h["lo_ns"][s], h["hi_ns"][s], cnt, ps, extremes=False)
    return h["hi_ns"][s] / 1e6, np.cumsum(cnt) / cnt.sum(), int(cnt.sum()), [q[f"p{p}"] for p in ps]


def _title(r: "RunResult", what: str) -> str:
    sc = r.scenario
    return f"{what} — {sc['name']} ({r.meta['links'][0]['aqm']}, seed {r.meta['seed']})"


def save_figure(fig: "plt.Figure", path: Path, **kw: object) -> None:
    """Save a figure whole or not at all (a temporary name, then moved into place),
    with the same bytes for the same figure (no date in the file, fixed SVG ids)."""
    ext = path.suffix.lstrip(".")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}{path.suffix}")
    meta = {"Date": None} if ext in ("svg", "pdf") else None
    try:
        with plt.rc_context({"svg.hashsalt": "aqmlab"}):
            fig.savefig(tmp, metadata=meta, **kw)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _save(fig: "plt.Figure", out: Path, name: str) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for ext in ("png", "svg"):
        p = out / f"{name}.{ext}"
        save_figure(fig, p, dpi=150 if ext == "png" else None)
        files.append(p.name)
    plt.close(fig)
    return files


def _dequeues(r: "RunResult") -> dict[str, np.ndarray] | None:
    pk = r.raw["packets"]
    if "bottleneck" not in r.meta["logged_links"]:
        return None
    li = r.meta["logged_links"].index("bottleneck")
    sel = (pk["link"] == li) & (pk["event"] == 1)
    return {"t": pk["time_ns"][sel] / 1e9, "d": pk["sojourn_ns"][sel] / 1e6, "flow": pk["flow"][sel]}


def queue_delay_cdf(r: "RunResult", out: Path) -> list[str]:
    dq = _dequeues(r)
    if dq is None:
        return _queue_delay_cdf_from_histograms(r, out)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        x, y = ecdf(dq["d"])
        ax.plot(x, y, lw=1.8, color="black", label="all packets")
        groups = r.flow_class[dq["flow"]] if len(dq["flow"]) else np.array([])
        if len(r.class_names) > 1:
            for gi, name in enumerate(r.class_names):
                x, y = ecdf(dq["d"][groups == gi])
                if len(x):
                    ax.plot(x, y, lw=1.0, label=name)
        marks = [(p, np.percentile(dq["d"], p) if len(dq["d"]) else np.nan) for p in (50, 90)]
        return _finish_delay_cdf(fig, ax, r, out, marks, "queueing delay at the bottleneck (ms)")


def _finish_delay_cdf(fig, ax, r: "RunResult", out: Path, marks, xlabel: str) -> list[str]:
    """The queueing-delay CDF's percentile marks, axes, legend and file."""
    for p, v in marks:
        ax.axhline(p / 100, color="grey", lw=0.6, ls=":")
        ax.annotate(f"p{p} = {v:.1f} ms", (v, p / 100), xytext=(5, -12), textcoords="offset points", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF (fraction of packets)")
    ax.set_ylim(0, 1.01)
    ax.set_xlim(left=0)
    ax.legend(loc="lower right")
    ax.set_title(_title(r, "Queueing delay"))
    return _save(fig, out, "queue_delay_cdf")


def _queue_delay_cdf_from_histograms(r: "RunResult", out: Path) -> list[str]:
    """Without packet rows (summaries only): the CDF from the streaming histograms
    (each bucket at its upper end, within 0.8 % of its values)."""
    total = hist_cdf(r, "bottleneck.sojourn", (50, 90))
    if total is None:
        return []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        x, y, _, (p50, p90) = total
        ax.step(x, y, where="post", lw=1.8, color="black", label="all packets")
        if len(r.class_names) > 1:
            for name in r.class_names:
                c = hist_cdf(r, f"bottleneck.sojourn.{name}")
                if c is not None:
                    ax.step(c[0], c[1], where="post", lw=1.0, label=name)
        return _finish_delay_cdf(fig, ax, r, out, [(50, p50), (90, p90)], "queueing delay at the bottleneck (ms, from the streaming histogram)")


def queue_delay_time(r: "RunResult", out: Path) -> list[str]:
    dq = _dequeues(r)
    ls = r.raw["link_series"]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(9, 4))
        if dq is not None and len(dq["t"]):
            step = max(1, len(dq["t"]) // 60000)
            ax.scatter(dq["t"][::step], dq["d"][::step], s=1, color="#1f77b4", alpha=0.4, rasterized=True, label="per-packet sojourn")
        sel = ls["link"] == 0
        est = ls["aqm_delay_ns"][sel]
        if np.any(est >= 0):
            ax.plot(ls["time_ns"][sel] / 1e9, np.where(est >= 0, est / 1e6, np.nan), color="black", lw=0.8, label="AQM delay estimate")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queueing delay (ms)")
        ax.set_xlim(0, r.meta["sim_seconds"])
        ax.set_ylim(bottom=0)
        prob = ls["drop_prob"][sel]
        if np.any(~np.isnan(prob)):
            ax2 = ax.twinx()
            ax2.plot(ls["time_ns"][sel] / 1e9, prob, color="#d62728", lw=0.7, alpha=0.8, label="drop probability")
            ax2.set_ylabel("drop probability", color="#d62728")
            ax2.set_ylim(0, max(0.05, float(np.nanmax(prob)) * 1.1))
            ax2.grid(False)
            ax2.spines["right"].set_visible(True)
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            ax.legend(h1 + h2, l1 + l2, loc="upper right", markerscale=6)
        else:
            ax.legend(loc="upper right", markerscale=6)
        ax.set_title(_title(r, "Queueing delay over time"))
        return _save(fig, out, "queue_delay_time")


def utilization_cdf(r: "RunResult", out: Path) -> list[str]:
    from . import metrics

    sc = r.scenario
    u = metrics.utilization_samples(
        r.raw["link_series"], 0, metrics._ns(sc["record"]["interval"]), metrics._ns(sc["metrics"]["utilization_interval"]), metrics._ns(sc["metrics"]["warmup"])
    )
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        x, y = ecdf(u)
        ax.step(x, y, where="post", color="black", lw=1.5, label=f"{sc['metrics']['utilization_interval']} samples, mean {np.mean(u):.3f}" if len(u) else "no samples")
        ax.set_xlabel("bottleneck utilization")
        ax.set_ylabel("CDF (fraction of intervals)")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.01)
        ax.legend(loc="upper left")
        ax.set_title(_title(r, "Utilization"))
        return _save(fig, out, "utilization_cdf")


def goodput(r: "RunResult", out: Path) -> list[str]:
    f = r.flows.to_pandas()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for gi, name in enumerate(r.class_names):
            sub = f[f["class"] == name]
            ax.bar(sub["flow"], sub["goodput_mbps"], color=colors[gi % len(colors)], label=f"{name} (Jain {r.summary['classes'][name]['jain_index'] or float('nan'):.3f})")
        ax.set_xlabel("flow")
        ax.set_ylabel("goodput (Mbps)")
        ax.legend(loc="upper right")
        ax.set_title(_title(r, "Per-flow goodput"))
        return _save(fig, out, "goodput")


def cwnd(r: "RunResult", out: Path, max_flows: int = 10) -> list[str]:
    fs = r.raw["flow_series"]
    if not len(fs["time_ns"]):
        return []
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
        for f in np.unique(fs["flow"])[:max_flows]:
            s = fs["flow"] == f
            t = fs["time_ns"][s] / 1e9
            axes[0].plot(t, fs["cwnd"][s], lw=0.7, label=f"flow {f}")
            srtt = fs["srtt_ns"][s]
            axes[1].plot(t, np.where(srtt >= 0, srtt / 1e6, np.nan), lw=0.7)
        axes[0].set_ylabel("cwnd (segments)")
        axes[1].set_ylabel("smoothed RTT (ms)")
        axes[1].set_xlabel("time (s)")
        axes[0].legend(loc="upper right", ncol=5)
        axes[0].set_title(_title(r, "Congestion windows and RTTs"))
        return _save(fig, out, "cwnd_rtt")


def drop_causes(r: "RunResult", out: Path) -> list[str]:
    """Kuhn & Ros Fig. 4: the share r_x of each drop cause, and the distribution of the
    queueing delay (backlog / link rate) when drops of that cause happened."""
    pk = r.raw["packets"]
    # per cause: (x, y) of the CDF, count, and p5/p50/p95 in ms
    curves: dict[str, tuple[np.ndarray, np.ndarray, int, Any]] = {}
    if "bottleneck" in r.meta["logged_links"]:
        li = r.meta["logged_links"].index("bottleneck")
        sel = (pk["link"] == li) & (pk["event"] == 2)
        rate = r.meta["links"][0]["rate_bps"]
        delay = pk["backlog_bytes"][sel] * 8 / rate * 1e3
        cause = pk["cause"][sel]
        for code, name in ((1, "overflow"), (2, "random"), (3, "deterministic")):
            d = delay[cause == code]
            if len(d):
                x, y = ecdf(d)
                curves[name] = (x, y, len(d), np.percentile(d, [5, 50, 95]))
    else:
        # no packet rows: the streaming histograms of the delay at drops
        for name in ("overflow", "random", "deterministic"):
            c = hist_cdf(r, f"bottleneck.drop_delay.{name}")
            if c is not None:
                curves[name] = c
    if not curves:
        return []
    n = sum(c[2] for c in curves.values())
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for name in ("overflow", "random", "deterministic"):
            if name in curves:
                x, y, k, (p5, p50, p95) = curves[name]
                ax.plot(x, y, color=CAUSE_COLORS[name], lw=1.5, label=f"{name}: r = {k / n:.2f} (p5/p50/p95 = {p5:.0f}/{p50:.0f}/{p95:.0f} ms)")
        ax.set_xlabel("queueing delay when the drop occurred (ms)")
        ax.set_ylabel("CDF (fraction of drops of the cause)")
        ax.set_xlim(left=0)
        ax.set_ylim(0, 1.01)
        ax.legend(loc="lower right")
        ax.set_title(_title(r, f"Drop causes ({n} drops)"))
        return _save(fig, out, "drop_causes")


def _classes_of_kind(r: "RunResult", kinds: tuple[str, ...]) -> list[tuple[int, str]]:
    return [(gi, g["name"]) for gi, g in enumerate(r.meta["groups"]) if g["kind"] in kinds]


def download_times(r: "RunResult", out: Path) -> list[str]:
    """Kuhn & Ros Fig. 7: download time per file size, boxes from the 25th to the
    75th percentile with the median, whiskers at the 5th and 95th."""
    classes = _classes_of_kind(r, ("files", "web", "transfer"))
    if not classes:
        return []
    summary = r.summary["classes"]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * sum(len(summary[n]["download_time_s"]["by_size"]) for _, n in classes)), 4.0))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        x = 0
        ticks, labels = [], []
        drawn = False
        for ci, (_, name) in enumerate(classes):
            for label, d in summary[name]["download_time_s"]["by_size"].items():
                if d["p50"] is None:
                    continue
                drawn = True
                stats = [{"med": d["p50"], "q1": d["p25"], "q3": d["p75"], "whislo": d["p5"], "whishi": d["p95"], "label": label}]
                b = ax.bxp(stats, positions=[x], widths=0.6, showfliers=False, patch_artist=True)
                for patch in b["boxes"]:
                    patch.set_facecolor(colors[ci % len(colors)])
                    patch.set_alpha(0.6)
                ticks.append(x)
                labels.append(f"{label}\n(n={d['completed']})" if len(classes) == 1 else f"{name}\n{label}\n(n={d['completed']})")
                x += 1
            x += 0.5
        if not drawn:
            plt.close(fig)
            return []
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("download time (s)")
        ax.set_ylim(bottom=0)
        ax.set_title(_title(r, "Download times: p5, p25, median, p75, p95"))
        return _save(fig, out, "download_times")


def cbr_delay(r: "RunResult", out: Path) -> list[str]:
    """Kuhn & Ros Fig. 6: a CBR class's goodput against its delay percentiles
    (here the one-way delay; p5-p95 whiskers, p25-p75 thick, median dot)."""
    classes = _classes_of_kind(r, ("cbr",))
    if not classes:
        return []
    summary = r.summary["classes"]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        drawn = False
        for ci, (_, name) in enumerate(classes):
            c = summary[name]
            d = c["one_way_delay_ms"]
            if d["p50"] is None:
                continue
            drawn = True
            y = c["goodput_mbps_per_flow"]["mean"] * 1e3
            col = colors[ci % len(colors)]
            ax.plot([d["p5"], d["p95"]], [y, y], color=col, lw=1)
            ax.plot([d["p25"], d["p75"]], [y, y], color=col, lw=5, alpha=0.7)
            ax.plot([d["p50"]], [y], "o", color="black", ms=4)
            ax.annotate(f"{name}: p5/p25/p50/p75/p95 = {d['p5']:.0f}/{d['p25']:.0f}/{d['p50']:.0f}/{d['p75']:.0f}/{d['p95']:.0f} ms", (d["p5"], y), xytext=(0, 6), textcoords="offset points", fontsize=7)
        if not drawn:
            plt.close(fig)
            return []
        ax.set_xlabel("one-way delay (ms)")
        ax.set_ylabel("mean goodput per flow (kbps)")
        ax.set_title(_title(r, "CBR: goodput and one-way delay"))
        return _save(fig, out, "cbr_delay")


def goodput_intervals(r: "RunResult", out: Path) -> list[str]:
    """Khademi, Ros & Welzl: per-flow goodput per interval (box p25-p75, whiskers
    p10-p90), one box per class."""
    from . import metrics

    sc = r.scenario
    fs = r.raw["flow_series"]
    if not len(fs["time_ns"]):
        return []
    interval_ns = metrics._ns(sc["record"]["interval"])
    window_ns = metrics._ns(sc["metrics"]["goodput_interval"])
    end_ns = round(r.meta["sim_seconds"] * 1e9)
    warmup_ns = metrics._ns(sc["metrics"]["warmup"])
    fl = r.raw["flows"]
    data, names = [], []
    for gi, g in enumerate(r.meta["groups"]):
        sel = fl["group"] == gi
        stop = sc["flows"][gi].get("stop") if gi < len(sc["flows"]) else None
        per, _ = metrics.goodput_windows(fs, fl["flow"][sel], fl["start_ns"][sel], interval_ns, window_ns, end_ns, warmup_ns, metrics._ns(stop) if stop else None)
        if len(per):
            data.append(per)
            names.append(g["name"])
    if not data:
        return []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.boxplot(data, whis=(10, 90), showfliers=False, tick_labels=names)
        ax.set_ylabel(f"goodput per flow per {sc['metrics']['goodput_interval']} (Mbps)")
        ax.set_ylim(bottom=0)
        ax.set_title(_title(r, "Goodput per interval (whiskers p10-p90)"))
        return _save(fig, out, "goodput_intervals")


def flow_trace(r: "RunResult", out: Path) -> list[str]:
    """Popovsky Figs. 2-4: per connection, the bytes acknowledged (sequence advance),
    the RTT samples and the bytes in flight, at ACK granularity."""
    x = r.raw["flow_trace"]
    if not len(x["time_ns"]):
        return []
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
        for f in np.unique(x["flow"]):
            s = x["flow"] == f
            t = x["time_ns"][s] / 1e9
            step = max(1, int(s.sum()) // 20000)
            label = f"flow {f} ({r.class_names[r.flow_class[f]]})"
            axes[0].plot(t[::step], x["acked_bytes"][s][::step] / 1e6, lw=1, label=label)
            rtt = x["rtt_ns"][s][::step]
            axes[1].plot(t[::step], np.where(rtt >= 0, rtt / 1e6, np.nan), lw=0.6)
            axes[2].plot(t[::step], x["unacked"][s][::step] * 1.46, lw=0.6)
        axes[0].set_ylabel("acknowledged (MB)")
        axes[1].set_ylabel("RTT sample (ms)")
        axes[1].set_ylim(bottom=0)
        axes[2].set_ylabel("unacknowledged (kB, ~)")
        axes[2].set_xlabel("time (s)")
        axes[0].legend(loc="upper left")
        axes[0].set_title(_title(r, "Per-connection sequence, RTT and data in flight"))
        return _save(fig, out, "flow_trace")


def capacity_time(r: "RunResult", out: Path) -> list[str]:
    """Capacity and throughput of the bottleneck over time, when the capacity changes
    (a schedule or a trace)."""
    ls = r.raw["link_series"]
    sel = ls["link"] == 0
    cap = ls["capacity_bps"][sel]
    if not len(cap) or cap.min() == cap.max():
        return []
    interval_s = ls["time_ns"][sel][0] / 1e9
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(9, 4))
        t = ls["time_ns"][sel] / 1e9
        ax.step(t, cap / 1e6, where="pre", color="black", lw=1.2, label="capacity")
        ax.plot(t, ls["tx_bytes"][sel] * 8 / interval_s / 1e6, color="#1f77b4", lw=0.7, label="throughput")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Mbps")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right")
        ax.set_title(_title(r, "Bottleneck capacity and throughput"))
        return _save(fig, out, "capacity_time")


FIGURES: list[tuple[str, Callable[["RunResult", Path], list[str]], str]] = [
    ("queue_delay_cdf", queue_delay_cdf, "CDF of the per-packet queueing delay at the bottleneck (Kuhn & Ros, Fig. 2a/2c)."),
    ("utilization_cdf", utilization_cdf, "CDF of the bottleneck utilization per interval (Kuhn & Ros, Fig. 2b/2d)."),
    ("queue_delay_time", queue_delay_time, "Queueing delay over time, with the AQM's own delay estimate and drop probability (Kuhn & Ros, Fig. 3)."),
    ("drop_causes", drop_causes, "Drop causes and the queueing delay when they happened (Kuhn & Ros, Fig. 4)."),
    ("goodput", goodput, "Goodput of each flow, with Jain's fairness index per class."),
    ("cwnd_rtt", cwnd, "Congestion windows and smoothed RTTs of the first flows."),
    ("capacity_time", capacity_time, "Capacity and throughput of the bottleneck over time (Pan et al.'s capacity drop; trace-driven links)."),
    ("goodput_intervals", goodput_intervals, "Per-flow goodput per metrics.goodput_interval, per class (Khademi, Ros & Welzl: 5 s)."),
    ("cbr_delay", cbr_delay, "CBR goodput against one-way delay percentiles (Kuhn & Ros, Fig. 6)."),
    ("download_times", download_times, "Download times per file size: p5, p25, median, p75, p95 (Kuhn & Ros, Fig. 7)."),
    ("flow_trace", flow_trace, "Per-connection acknowledged bytes, RTT samples and data in flight at ACK granularity (Popovsky, Figs. 2-4)."),
]


def draw_all(r: "RunResult", out: Path) -> list[tuple[str, list[str], str]]:
    drawn = []
    for name, fn, caption in FIGURES:
        files = fn(r, out)
        if files:
            drawn.append((name, files, caption))
    return drawn
