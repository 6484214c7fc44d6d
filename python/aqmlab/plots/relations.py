"""Figure kinds that set one measure against another: goodput against queueing delay
(RFC 7928 §2.7), the CBR flows' goodput against their delay percentiles, each drop
cause's share against the delay when it struck, download time and transfer rate
against size, and loss, delay and rate per traffic class; with the data helpers
that the SVG drawings (`aqmlab.plots_svg`) share.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import measures as m
from .base import CAUSE_COLORS, MARKERS, Options, _facet_colors, _facets, _figure, _grid, _label, _legend, _series_legend, _short, _title, palette, pooled, seeds_note

if TYPE_CHECKING:
    from ..comparison import Series


def ellipse(p: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """The 1-σ ellipse of a two-dimensional Gaussian fitted to points `p` (rows of x,
    y): its centre (the mean), its full width and height along its axes, and its
    angle (degrees, of the width's axis from x)."""
    mu = p.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov(p.T))
    vals = np.clip(vals, 0, None)
    angle = math.degrees(math.atan2(vecs[1, 1], vecs[0, 1]))
    return mu, 2 * math.sqrt(vals[1]), 2 * math.sqrt(vals[0]), angle


def goodput_delay_title(series: list["Series"]) -> str:
    gi = series[0].first.scenario.get("metrics", {}).get("goodput_interval", "")
    return f"Goodput and queueing delay per {gi} interval: points, 1-σ ellipse, mean ×"


def goodput_delay(series, opt):
    """RFC 7928 §2.7: goodput against queueing delay, a point per goodput interval of
    each run, and per series the 1-σ ellipse of a two-dimensional Gaussian fitted to its
    points (mean and covariance), as in Winstein & Balakrishnan's throughput-delay plots
    that the RFC follows; the cross marks the mean."""
    from matplotlib.patches import Ellipse

    data = [(s, s.goodput_delay(opt.link)) for s in series]
    data = [(s, p) for s, p in data if p is not None and len(p)]
    if not data:
        return None
    fig, axes = _figure(opt, 6.4, 4.2)
    ax = axes[0, 0]
    for s, p in data:
        ax.scatter(p[:, 0], p[:, 1], s=6, color=s.color, alpha=0.35, linewidths=0, rasterized=len(p) > 2000)
        mu = p.mean(axis=0)
        ax.plot([mu[0]], [mu[1]], marker="X", ms=9, color=s.color, mec="black", mew=0.6, ls="")
        if len(p) >= 3:
            mu, w, h, angle = ellipse(p)
            ax.add_patch(Ellipse(tuple(mu), w, h, angle=angle, fill=False, color=s.color, lw=1.8))
    ax.set_xlabel("queueing delay, mean per interval (ms)")
    ax.set_ylabel("goodput per interval (Mbps)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    _series_legend(fig, [s for s, _ in data], opt)
    _title(fig, opt, goodput_delay_title([s for s, _ in data]))
    return fig


CBR_PCTS = (5, 25, 50, 75, 95)


def cbr_goodput_delay(series, opt):
    """Kuhn & Ros Fig. 6: for each series, the CBR flows' mean goodput (y) against the
    percentiles of their packets' queueing delay (x: 5, 25, 50, 75, 95th)."""
    data = cbr_data(series, opt)
    if not data:
        return None
    panels = _facets([s for s, _, _ in data], opt)
    by = {id(s): (p, g) for s, p, g in data}
    colors = _facet_colors(panels, opt)
    fig, axes = _grid(opt, len(panels), width=4.8, height=3.4, sharey=True)
    for ax, (name, grp) in zip(axes, panels):
        for i, s in enumerate(grp):
            p, g = by[id(s)]
            ax.plot(p, [g] * len(p), color=colors[id(s)], lw=1.2, marker="|", ms=12, mew=1.5)
            ax.plot([p[2]], [g], "o", color=colors[id(s)], ms=5)
            if i == 0:
                for pc, x in zip(CBR_PCTS, p):
                    ax.annotate(f"{pc}", (x, g), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7, color="#444")
        ax.set_xlabel("queueing delay of the CBR packets (ms)\n(5/25/50/75/95th percentiles)")
        ax.set_xlim(left=0)
        if opt.facet:
            ax.set_title(f"{_short(opt.facet)} = {name}")
    axes[0].set_ylabel("mean goodput per CBR flow (kbps)")
    from matplotlib.lines import Line2D

    labels = list(dict.fromkeys(_label(s, opt) for _, g in panels for s in g))
    if len(labels) > 1:
        col = {_label(s, opt): colors[id(s)] for _, g in panels for s in g}
        _legend(fig, [Line2D([], [], color=col[lab], lw=2) for lab in labels], labels)
    _title(fig, opt, "CBR traffic: goodput against queueing-delay percentiles")
    return fig


def cbr_data(series: list["Series"], opt: Options) -> list[tuple["Series", np.ndarray, float]]:
    """Per series with CBR classes: the CBR packets' queueing-delay percentiles
    (CBR_PCTS, ms) and the mean goodput per CBR flow (kbps)."""
    data = []
    for s in series:
        cls = [c for c in s.classes_of(m.kinds_of("datagrams")) if opt.classes is None or c in opt.classes]
        if not cls:
            continue
        d = s.class_delays(cls)
        g = s.flow_goodputs(m.kinds_of("datagrams"))
        vals = np.concatenate([g[c] for c in cls if c in g]) if g else np.array([])
        if d is None or not len(d) or not len(vals):
            continue
        data.append((s, np.percentile(d, CBR_PCTS), float(vals.mean()) * 1000))
    return data


def download_time_by_size(series, opt, max_kb: float = 160.0, bin_kb: float = 10.0):
    """Jou, Tan & Baras Fig. 9: mean and standard deviation of the download time of the
    files up to `max_kb`, in bins of `bin_kb` by file size, one line per series."""
    data = [(s, s.transfers()) for s in series]
    data = [(s, t) for s, t in data if t is not None]
    if not data:
        return None
    fig, axes = _figure(opt, 7.2, 4.2)
    ax = axes[0, 0]
    for s, xs, ms, sd in size_bins(data, max_kb, bin_kb):
        ax.errorbar(xs, ms, yerr=sd, color=s.color, marker="o", ms=4, lw=1.3, capsize=2)
    ax.set_xlabel(f"file size (kB, bins of {bin_kb:g} kB)")
    ax.set_ylabel("download time (s): mean ± sd")
    ax.set_xlim(0, max_kb)
    ax.set_ylim(bottom=0)
    _series_legend(fig, [s for s, _ in data], opt)
    _title(fig, opt, "Small file delivery time by size" + pooled([s for s, _ in data]))
    return fig


def size_bins(data: list[tuple["Series", Any]], max_kb: float, bin_kb: float) -> list[tuple["Series", list[float], list[float], list[float]]]:
    """Per series: bin centres (kB, each series a little apart), mean and standard
    deviation of the download times of the bins with 3 files or more."""
    edges = np.arange(0.0, max_kb + bin_kb, bin_kb)
    out = []
    for i, (s, t) in enumerate(data):
        kb = t["size_bytes"].to_numpy(float) / 1e3
        dt = t["download_time_s"].to_numpy(float)
        idx = np.digitize(kb, edges) - 1
        xs, ms, sd = [], [], []
        for b in range(len(edges) - 1):
            v = dt[idx == b]
            if len(v) >= 3:
                xs.append((edges[b] + edges[b + 1]) / 2 + (i - (len(data) - 1) / 2) * bin_kb * 0.12)
                ms.append(float(v.mean()))
                sd.append(float(v.std(ddof=1)))
        out.append((s, xs, ms, sd))
    return out


def drop_causes(series, opt):
    """Kuhn & Ros Fig. 4: for each series and cause, the share r_x of the drops (y) and
    the 5th-95th percentile of the queueing delay when those drops happened (x), the
    median marked."""
    from matplotlib.lines import Line2D

    data = [(s, s.drops_at(opt.link)) for s in series]
    data = [(s, d) for s, d in data if d is not None and sum(len(v) for v in d.values())]
    if not data:
        return None
    fig, axes = _figure(opt, 6.4, 4.0)
    ax = axes[0, 0]
    for i, (s, d) in enumerate(data):
        total = sum(len(v) for v in d.values())
        mk = MARKERS[i % len(MARKERS)]
        for c in m.CAUSE_NAMES:
            v = d[c]
            if not len(v):
                continue
            share = len(v) / total
            p5, p50, p95 = np.percentile(v, [5, 50, 95])
            ax.plot([p5, p95], [share, share], color=CAUSE_COLORS[c], lw=2.5, alpha=0.85, solid_capstyle="butt")
            ax.plot([p50], [share], marker=mk, color=s.color if len(data) > 1 else CAUSE_COLORS[c], ms=7, mec="black", mew=0.6)
    handles = [Line2D([], [], color=CAUSE_COLORS[c], lw=3) for c in m.CAUSE_NAMES if any(len(d[c]) for _, d in data)]
    labels = [f"{c} drops" for c in m.CAUSE_NAMES if any(len(d[c]) for _, d in data)]
    if len(data) > 1:
        handles += [Line2D([], [], color=s.color, marker=MARKERS[i % len(MARKERS)], mec="black", ls="") for i, (s, _) in enumerate(data)]
        labels += [f"median: {_label(s, opt)}" for s, _ in data]
    _legend(fig, handles, labels)
    ax.set_xlabel("queueing delay at the drop (ms): 5th–95th percentile bar, median marker")
    ax.set_ylabel("share of the drops")
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlim(left=0)
    _title(fig, opt, "Drop causes and the queueing delay at the drop" + pooled([s for s, _ in data]))
    return fig


def class_metrics(series, opt):
    """Jou, Tan & Baras Tables III-IV as bars: loss, mean queueing delay and rate of each
    traffic class at the bottleneck after the warm-up, one bar per series (mean over
    seeds, error bar one standard deviation)."""
    data = []
    for s in series:
        per = [p for p in (m.class_packets(r, opt.link) for r in s.runs) if p]
        if per:
            data.append((s, per))
    if not data:
        return None
    classes = list(dict.fromkeys(c for _, per in data for p in per for c in p))
    fig, axes = _figure(opt, 12.5, 3.8, 1, 3)
    width = 0.8 / len(data)
    for ax, (key, ylabel) in zip(axes[0], (("loss_pct", "packet loss (%)"), ("delay_s", "mean queueing delay (s)"), ("rate_kBps", "rate (kB/s)"))):
        for i, (s, per) in enumerate(data):
            vals = [[p[c][key] for p in per if c in p] for c in classes]
            means = [float(np.nanmean(v)) if v else np.nan for v in vals]
            sds = [float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0 for v in vals]
            x = np.arange(len(classes)) - 0.4 + width * (i + 0.5)
            ax.bar(x, means, width * 0.9, yerr=sds, color=s.color, capsize=2)
        ax.set_xticks(range(len(classes)), classes)
        ax.set_xlabel("traffic class")
        ax.set_ylabel(ylabel)
    _series_legend(fig, [s for s, _ in data], opt, lw=6)
    _title(fig, opt, f"Loss, delay and rate per traffic class ({seeds_note([s for s, _ in data])}, mean ± sd)")
    return fig


def transfer_rate_by_size(series, opt):
    """Popovsky Figs. 5-6: the average rate of a late transfer (size / download time)
    against its size, one line per value of the series key named by `facet` (the
    experiment), points at the sizes run, mean over seeds; a hollow marker where the
    transfer had not finished by the end of the run (its rate so far)."""
    from matplotlib.lines import Line2D

    lines = transfer_lines(series, opt)
    if not lines:
        return None
    pal = palette(len(lines))
    fig, axes = _figure(opt, 7.2, 4.2)
    ax = axes[0, 0]
    for (name, pts), c in zip(lines.items(), pal):
        pts = sorted(pts)
        ax.plot([p[0] / 1e3 for p in pts], [p[1] for p in pts], color=c, lw=1.5)
        for p in pts:
            ax.plot([p[0] / 1e3], [p[1]], marker="o", color=c, mfc=c if p[2] else "white", ms=6)
    handles = [Line2D([], [], color=c, lw=2) for c in pal]
    labels = list(lines)
    if any(not p[2] for pts in lines.values() for p in pts):
        handles.append(Line2D([], [], marker="o", color="grey", mfc="white", ls=""))
        labels.append("not finished by the end of the run (rate so far)")
    _legend(fig, handles, labels)
    ax.set_xscale("log")
    ax.set_xlabel("size of the late transfer (kB, log scale)")
    ax.set_ylabel("average rate of the late transfer (Mbps)")
    ax.set_ylim(bottom=0)
    _title(fig, opt, "Average rate of a late transfer against its size")
    return fig


def transfer_lines(series: list["Series"], opt: Options) -> dict[str, list[tuple[float, float, bool]]]:
    """Lines of transfer_rate_by_size: per value of `opt.facet` (else per series), the
    (size in bytes, mean rate in Mbps, finished in every seed) of each size run."""
    from ..comparison import _fmt_value

    key = opt.facet
    lines: dict[str, list[tuple[float, float, bool]]] = {}
    for s in series:
        rows = [x for r in s.runs for x in m.transfer_rates(r)]
        if not rows:
            continue
        name = _fmt_value(s.get(key)) if key else s.label()
        for sz in sorted({x[0] for x in rows}):
            sel = [x for x in rows if x[0] == sz]
            lines.setdefault(name, []).append((sz, float(np.mean([x[1] for x in sel])), all(x[2] for x in sel)))
    return {k: sorted(v) for k, v in lines.items()}
