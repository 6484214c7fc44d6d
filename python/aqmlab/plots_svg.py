"""The figure kinds drawn as SVG for the report pages (`aqmlab.svg`), one function per
kind of `aqmlab.plots`, from the same data (the helpers of `aqmlab.plots` and the
measures layer) with the same colours, axes, titles and legends. Each returns an
`svg.Figure`, or None where the matplotlib kind returns None (the runs lack its
data). `aqmlab.plots.kinds()` lists both drawings of a kind; notebooks, `aqmlab plot`
and paper figures use the matplotlib one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

from . import measures as m
from . import plots as P
from . import svg
from .svg import Figure, line_entry

if TYPE_CHECKING:
    from .comparison import Series
    from .plots import Options

SMALL = 460  # px: one small panel (a CDF)
WIDE = 1000  # px: the time figures, across the page
CELL = 380  # px: a panel of a grid


def _title(opt: "Options", default: str) -> str:
    return opt.title or default


def _series_legend(fig: Figure, series: list["Series"], opt: "Options", width: float = 2.0) -> None:
    if len(series) >= 2:
        fig.legend([line_entry(P._label(s, opt), s.color, width) for s in series])


def _grid(n: int, title: str, cell: float = CELL) -> Figure:
    cols = min(n, 3)
    return Figure(SMALL if n == 1 else cell * cols, title=title, cols=cols)


# -- distributions --------------------------------------------------------------------------------


def _cdf(series, opt, kind: str) -> Optional[Figure]:
    spec = P.CDFS[kind]
    data = P.cdf_data(series, opt, kind)
    if not data:
        return None
    panels = P._facets([s for s, _ in data], opt)
    vals = {id(s): v for s, v in data}
    colors = P._facet_colors(panels, opt)
    fig = _grid(len(panels), _title(opt, spec.title + P.pooled([s for s, _ in data])))
    for i, (name, grp) in enumerate(panels):
        ax = fig.axes(230)
        hi = max(np.nanpercentile(vals[id(s)], spec.clip_pct) for s in grp) * 1.05 if spec.clip_pct else None
        for s in grp:
            x, y = m.ecdf_points(vals[id(s)])
            ax.line(x, y, colors[id(s)], label=P._label(s, opt))
        ax.set(xlabel=spec.xlabel(opt), ylabel=spec.ylabel if i % 3 == 0 else "", ylim=(0, 1.01),
               xlim=spec.xlim if spec.xlim else (0, hi if hi and hi > 0 else None), title=f"{P._short(opt.facet)} = {name}" if opt.facet else None)
    labels: dict[str, str] = {}
    for s in dict.fromkeys(s for _, g in panels for s in g):
        labels.setdefault(P._label(s, opt), colors[id(s)])
    if len(labels) > 1:
        fig.legend([line_entry(lab, c) for lab, c in labels.items()])
    return fig


def queue_delay_cdf(series, opt):
    return _cdf(series, opt, "queue_delay_cdf")


def utilization_cdf(series, opt):
    return _cdf(series, opt, "utilization_cdf")


def bulk_goodput_cdf(series, opt):
    return _cdf(series, opt, "bulk_goodput_cdf")


def class_delay_cdf(series, opt):
    got = P.class_delay_data(series, opt)
    if got is None:
        return None
    classes, data = got
    fig = _grid(len(classes), _title(opt, "Queueing delay per traffic class" + P.pooled(series)))
    for i, c in enumerate(classes):
        ax = fig.axes(230)
        tops = []
        for s in series:
            v = data[(id(s), c)]
            if v is None or not len(v):
                continue
            x, y = m.ecdf_points(v)
            ax.line(x, y, s.color, label=P._label(s, opt))
            tops.append(np.nanpercentile(v, 99.5))
        ax.set(title=f"class {c}", xlabel=f"queueing delay at the {opt.link} (ms)", ylabel="CDF (fraction of packets)" if i % 3 == 0 else "",
               xlim=(0, max(tops) * 1.05 if tops and max(tops) > 0 else None), ylim=(0, 1.01))
    _series_legend(fig, series, opt)
    return fig


def goodput_delay(series, opt):
    data = [(s, s.goodput_delay(opt.link)) for s in series]
    data = [(s, p) for s, p in data if p is not None and len(p)]
    if not data:
        return None
    fig = Figure(640, title=_title(opt, P.goodput_delay_title([s for s, _ in data])))
    ax = fig.axes(300)
    t = np.linspace(0, 2 * math.pi, 97)
    for s, p in data:
        lab = P._label(s, opt)
        ax.dots(p[:, 0], p[:, 1], s.color, r=2.2, opacity=0.4, label=f"{lab}: one point per interval")
        if len(p) >= 3:
            mu, w, h, angle = P.ellipse(p)
            a = math.radians(angle)
            ex = mu[0] + w / 2 * np.cos(t) * math.cos(a) - h / 2 * np.sin(t) * math.sin(a)
            ey = mu[1] + w / 2 * np.cos(t) * math.sin(a) + h / 2 * np.sin(t) * math.cos(a)
            ax.line(ex, ey, s.color, 1.8, label=f"{lab}: 1-σ ellipse")
        mu = p.mean(axis=0)
        ax.markers([mu[0]], [mu[1]], s.color, "X", 5.0, edge="#000", label=f"{lab}: mean {mu[0]:.1f} ms, {mu[1]:.2f} Mbps")
    ax.set(xlabel="queueing delay, mean per interval (ms)", ylabel="goodput per interval (Mbps)", xlim=(0, None), ylim=(0, None))
    _series_legend(fig, [s for s, _ in data], opt)
    return fig


def goodput(series, opt):
    got = P.goodput_data(series, opt)
    if got is None:
        return None
    data, classes, many = got
    per = 440 if many else max(440, 140 + 90 * len(data))
    fig = Figure(per * len(classes), title=_title(opt, P.goodput_title(many)), cols=len(classes))
    for cls in classes:
        rows = [(s, g[cls]) for s, g in data if cls in g and len(g[cls])]
        ax = fig.axes(260)
        if many:
            for s, v in rows:
                x, y = m.ecdf_points(v)
                ax.line(x, y, s.color, step="post", label=P._label(s, opt))
            ax.set(xlabel="per-flow goodput (Mbps)", ylabel="CDF (fraction of flows)", xlim=(0, None), ylim=(0, 1.01))
        else:
            for i, ((s, v), jx) in enumerate(zip(rows, P.jitter([v for _, v in rows]))):
                lab = P._label(s, opt)
                ax.box(i + 1, P.box_stats(v), 0.6, s.color, label=f"{lab}: {len(v)} flows")
                ax.markers(i + 1 + jx, v, s.color, "o", 2.6, label=f"{lab}: each flow")
            ax.categories(range(1, len(rows) + 1), [P._label(s, opt) if len(rows) > 1 else f"{len(v)} flows" for s, v in rows], rotate=len(rows) > 3)
            ax.set(ylabel="per-flow goodput (Mbps)", ylim=(0, None), xlim=(0.4, len(rows) + 0.6))
        jain = [s.first.summary.get("classes", {}).get(cls, {}).get("jain_index") for s, _ in rows]
        jt = f" (Jain {jain[0]:.3f})" if len(rows) == 1 and jain[0] is not None else ""
        ax.set(title=f"class {cls}{jt}")
    if many:
        _series_legend(fig, [s for s, _ in data], opt)
    return fig


def cbr_goodput_delay(series, opt):
    data = P.cbr_data(series, opt)
    if not data:
        return None
    panels = P._facets([s for s, _, _ in data], opt)
    by = {id(s): (p, g) for s, p, g in data}
    colors = P._facet_colors(panels, opt)
    fig = _grid(len(panels), _title(opt, "CBR traffic: goodput against queueing-delay percentiles"), cell=420)
    for k, (name, grp) in enumerate(panels):
        ax = fig.axes(240)
        for i, s in enumerate(grp):
            p, g = by[id(s)]
            c = colors[id(s)]
            ax.line(p, [g] * len(p), c, 1.2, label=f"{P._label(s, opt)}: {g:.1f} kbps", markers="|", marker_size=6)
            ax.markers([p[2]], [g], c, "o", 3.5)
            if i == 0:
                for pc, x in zip(P.CBR_PCTS, p):
                    ax.text(x, g, f"{pc}", dy=-9, size=9)
        ax.set(xlabel="CBR packets' queueing delay (ms; 5/25/50/75/95th pct)", ylabel="mean goodput per CBR flow (kbps)" if k % 3 == 0 else "",
               xlim=(0, None), title=f"{P._short(opt.facet)} = {name}" if opt.facet else None)
    labels = list(dict.fromkeys(P._label(s, opt) for _, g in panels for s in g))
    if len(labels) > 1:
        col = {P._label(s, opt): colors[id(s)] for _, g in panels for s in g}
        fig.legend([line_entry(lab, col[lab]) for lab in labels])
    return fig


def download_times(series, opt):
    got = P.download_groups(series, opt)
    if got is None:
        return None
    names, data = got
    fig = Figure(max(640, 78 * len(names) * max(1, len(data))), title=_title(opt, "Download time by file size (boxes 25/50/75th, whiskers 5th/95th percentile)"))
    ax = fig.axes(280)
    width = 0.8 / len(data)
    for i, (s, groups) in enumerate(data):
        lab = P._label(s, opt)
        for j, g in enumerate(groups):
            if g:
                ax.box(j + 1 - 0.4 + width * (i + 0.5), P.box_stats(g), width * 0.85, s.color, opacity=0.6, label=f"{lab}, {names[j]}: {len(g)} files")
    ax.categories(range(1, len(names) + 1), names)
    ax.set(xlabel="file size", ylabel="download time (s)", ylim=(0, None), xlim=(0.5, len(names) + 0.5))
    if len(data) >= 2:
        fig.legend([svg.patch_entry(P._label(s, opt), s.color, 0.6) for s, _ in data])
    return fig


def download_time_by_size(series, opt, max_kb: float = 160.0, bin_kb: float = 10.0):
    data = [(s, s.transfers()) for s in series]
    data = [(s, t) for s, t in data if t is not None]
    if not data:
        return None
    fig = Figure(720, title=_title(opt, "Small file delivery time by size" + P.pooled([s for s, _ in data])))
    ax = fig.axes(280)
    for s, xs, ms, sd in P.size_bins(data, max_kb, bin_kb):
        ax.line(xs, ms, s.color, 1.3, markers="o", marker_size=3, label=P._label(s, opt))
        ax.errorbars(xs, ms, sd, s.color)
    ax.set(xlabel=f"file size (kB, bins of {bin_kb:g} kB)", ylabel="download time (s): mean ± sd", xlim=(0, max_kb), ylim=(0, None))
    _series_legend(fig, [s for s, _ in data], opt)
    return fig


def drop_causes(series, opt):
    data = [(s, s.drops_at(opt.link)) for s in series]
    data = [(s, d) for s, d in data if d is not None and sum(len(v) for v in d.values())]
    if not data:
        return None
    fig = Figure(700, title=_title(opt, "Drop causes and the queueing delay at the drop" + P.pooled([s for s, _ in data])))
    ax = fig.axes(280)
    shapes = "oDX"
    for i, (s, d) in enumerate(data):
        total = sum(len(v) for v in d.values())
        for c in m.CAUSE_NAMES:
            v = d[c]
            if not len(v):
                continue
            share = len(v) / total
            p5, p50, p95 = np.percentile(v, [5, 50, 95])
            ax.line([p5, p95], [share, share], P.CAUSE_COLORS[c], 5.0, opacity=0.85, label=f"{c} drops: {share:.0%}, delay {p5:.0f}–{p95:.0f} ms")
            ax.markers([p50], [share], s.color if len(data) > 1 else P.CAUSE_COLORS[c], shapes[i % len(shapes)], 4.5, edge="#000")
    causes = [c for c in m.CAUSE_NAMES if any(len(d[c]) for _, d in data)]
    entries = [line_entry(f"{c} drops", P.CAUSE_COLORS[c], 4) for c in causes]
    if len(data) > 1:
        entries += [svg.marker_entry(f"median: {P._label(s, opt)}", s.color, shapes[i % len(shapes)]) for i, (s, _) in enumerate(data)]
    fig.legend(entries)
    ax.set(xlabel="queueing delay at the drop (ms): 5th–95th percentile bar, median marker", ylabel="share of the drops", ylim=(-0.02, 1.05), xlim=(0, None))
    return fig


def class_metrics(series, opt):
    data = []
    for s in series:
        per = [p for p in (m.class_packets(r, opt.link) for r in s.runs) if p]
        if per:
            data.append((s, per))
    if not data:
        return None
    classes = list(dict.fromkeys(c for _, per in data for p in per for c in p))
    fig = Figure(1050, title=_title(opt, f"Loss, delay and rate per traffic class ({P.seeds_note([s for s, _ in data])}, mean ± sd)"), cols=3)
    width = 0.8 / len(data)
    for key, ylabel in (("loss_pct", "packet loss (%)"), ("delay_s", "mean queueing delay (s)"), ("rate_kBps", "rate (kB/s)")):
        ax = fig.axes(220)
        for i, (s, per) in enumerate(data):
            for j, c in enumerate(classes):
                v = [p[c][key] for p in per if c in p]
                mean = float(np.nanmean(v)) if v else float("nan")
                sd = float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0
                if math.isfinite(mean):
                    ax.bar(j - 0.4 + width * (i + 0.5), mean, width * 0.9, s.color, err=sd or None, label=f"{P._label(s, opt)}, {c}: {mean:.3g}")
        ax.categories(range(len(classes)), classes)
        ax.set(xlabel="traffic class", ylabel=ylabel, xlim=(-0.5, len(classes) - 0.5), ylim=(0, None))
    if len(data) >= 2:
        fig.legend([svg.patch_entry(P._label(s, opt), s.color, 1.0) for s, _ in data])
    return fig


def transfer_rate_by_size(series, opt):
    lines = P.transfer_lines(series, opt)
    if not lines:
        return None
    pal = P.palette(len(lines))
    fig = Figure(720, title=_title(opt, "Average rate of a late transfer against its size"))
    ax = fig.axes(280)
    for (name, pts), c in zip(lines.items(), pal):
        ax.line([p[0] / 1e3 for p in pts], [p[1] for p in pts], c, 1.5, label=name)
        for p in pts:
            ax.markers([p[0] / 1e3], [p[1]], c, "o", 3.5, hollow=not p[2])
    entries = [line_entry(name, c) for name, c in zip(lines, pal)]
    if any(not p[2] for pts in lines.values() for p in pts):
        entries.append(svg.marker_entry("not finished by the end of the run (rate so far)", "#777", "o", hollow=True))
    fig.legend(entries)
    ax.set(xlog=True, xlabel="size of the late transfer (kB, log scale)", ylabel="average rate of the late transfer (Mbps)", ylim=(0, None))
    return fig


# -- over time (one run per series: the lowest seed) ---------------------------------------------


def _time_panels(series, opt, get: Callable[[Any], Any], draw_one: Callable[[svg.Axes, "Series", Any, Any], list], kind: str,
                 height: float = 150, title: Optional[str] = None) -> Optional[Figure]:
    ylabel, default = P.TIME_KINDS[kind]
    data = [(s, s.first, get(s.first)) for s in series[: opt.max_panels]]
    data = [(s, r, d) for s, r, d in data if d is not None]
    if not data:
        return None
    cols = 1 if len(data) <= 3 else 2
    title = title or default
    fig = Figure(WIDE if cols == 1 else 1060, title=_title(opt, title + ("" if len(data) > 1 else f" (seed {data[0][1].seed})")), cols=cols)
    rows = math.ceil(len(data) / cols)
    for i, (s, r, d) in enumerate(data):
        ax = fig.axes(height)
        fig.legend(draw_one(ax, s, r, d) or [])
        ax.set(ylabel=ylabel, xlim=(0, float(r.summary["sim_seconds"])), title=f"{s.label()} (seed {r.seed})" if len(data) > 1 else None)
        last_row = i // cols == rows - 1 or i + cols >= len(data)
        ax.show_xticklabels = last_row
        if last_row:
            ax.set(xlabel="time (s)")
    return fig


def queue_delay_time(series, opt):
    def one(ax, s, r, d):
        t, q = d
        ax.dots(t, q, s.color, r=0.9, opacity=0.55, label="per-packet queueing delay")
        out = [svg.dot_entry("per-packet queueing delay", s.color)]
        ls = P.aqm_estimate(r, opt.link)
        if ls is not None:
            ax.line(ls["time_s"], ls["aqm_delay_ms"], "#000", 0.8, label="the AQM's delay estimate")
            out.append(line_entry("the AQM's delay estimate", "#000", 1.0))
        ax.set(ylim=(0, P.delay_ylim(q)))
        return out

    return _time_panels(series, opt, lambda r: m.delay_over_time(r, opt.link), one, "queue_delay_time", height=170)


def backlog_time(series, opt):
    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        q = ts["backlog_bytes"].to_numpy(float) / 1e3
        ax.line(t, q, s.color, 0.7, opacity=0.75, label="queue length")
        ax.line(t, m.ewma(t, q), "#000", 1.0, label=P.EWMA_LABEL)
        out = [line_entry("queue length", s.color, 1.5), line_entry(P.EWMA_LABEL, "#000", 1.2)]
        for k, v in P.red_thresholds(r):
            dash = "2 3" if k == "min_th" else "6 4"
            ax.hline(v, "#888", 1.0, dash, label=k)
            out.append(line_entry(k, "#888", 1.0, dash))
        ax.set(ylim=(0, None))
        return out

    return _time_panels(series, opt, lambda r: m.link_series(r, opt.link), one, "backlog_time")


def drop_prob_time(series, opt):
    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        p = ts["drop_prob"].to_numpy(float)
        avg = f"Avg. P (EWMA, {m.EWMA_TAU_S:g} s)"
        ax.line(t, p, s.color, 0.7, opacity=0.75, label="Inst. P (the AQM's probability)")
        ax.line(t, m.ewma(t, np.nan_to_num(p)), "#000", 1.0, label=avg)
        ax.set(ylim=(0, None))
        return [line_entry("Inst. P (the AQM's probability)", s.color, 1.5), line_entry(avg, "#000", 1.2)]

    return _time_panels(series, opt, lambda r: P.drop_prob_data(r, opt.link), one, "drop_prob_time")


def causes_time(series, opt):
    def one(ax, s, r, d):
        tt, names, ys = d
        labels = [P.cause_label(c) for c in names]
        ax.stack(tt, ys, [P.CAUSE_COLORS[c] for c in names], labels)
        ax.set(ylim=(0, None))
        return [svg.patch_entry(lab, P.CAUSE_COLORS[c]) for lab, c in zip(labels, names)]

    return _time_panels(series, opt, lambda r: P.causes_data(r, opt.link), one, "causes_time")


def cwnd_time(series, opt, max_flows: int = 8):
    def one(ax, s, r, f):
        flows = sorted(f["flow"].dropna().unique())[:max_flows]
        pal = P.palette(len(flows)) if len(series) == 1 else [s.color] * len(flows)
        t, fl, cw = f["time_s"].to_numpy(float), f["flow"].to_numpy(), f["cwnd_segments"].to_numpy(float)
        out = []
        for x, c in zip(flows, pal):
            sel = fl == x
            ax.line(t[sel], cw[sel], c, 0.9, opacity=1.0 if len(series) == 1 else 0.6, label=f"flow {int(x)}")
            out.append(line_entry(f"flow {int(x)}", c))
        ax.set(ylim=(0, None))
        return out if len(series) == 1 else []

    return _time_panels(series, opt, P.cwnd_data, one, "cwnd_time", height=190, title=f"Congestion windows of the first {max_flows} flows")


def capacity_time(series, opt):
    def one(ax, s, r, ts):
        ax.line(ts["time_s"], ts["capacity_mbps"], "#000", 1.2, step="pre", label="capacity")
        ax.line(ts["time_s"], ts["throughput_mbps"], s.color, 0.8, label="throughput")
        ax.set(ylim=(0, None))
        return [line_entry("capacity", "#000", 1.5), line_entry("throughput", s.color, 1.5)]

    return _time_panels(series, opt, lambda r: P.capacity_data(r, opt.link), one, "capacity_time")


def flow_traces(series, opt, max_flows: int = 5):
    data = P.flow_trace_data(series)
    if not data:
        return None
    n = len(data)
    fig = Figure(WIDE if n == 1 else min(1060, 480 * n), title=_title(opt, "Per-connection traces: data delivered, RTT and data in flight"), cols=n)
    cols = [("delivered_bytes", "delivered (MB)", 1e6, 1.0), ("rtt_ms", "RTT sample (ms)", 1.0, 0.7), ("in_flight_segments", "in flight (segments)", 1.0, 0.7)]
    entries: dict[str, svg.LegendEntry] = {}
    for row, (col, ylabel, scale, lw) in enumerate(cols):
        for j, (s, r, f) in enumerate(data):
            ax = fig.axes(130)
            flows = sorted(f["flow"].dropna().unique())[:max_flows]
            t, fl, v = f["time_s"].to_numpy(float), f["flow"].to_numpy(), f[col].to_numpy(float) / scale
            for x, c in zip(flows, P.palette(len(flows))):
                sel = fl == x
                ax.line(t[sel], v[sel], c, lw, label=f"flow {int(x)}")
                entries.setdefault(f"flow {int(x)}", line_entry(f"flow {int(x)}", c))
            ax.set(ylabel=ylabel if j == 0 else "", xlim=(0, float(r.summary["sim_seconds"])), title=f"{s.label()} (seed {r.seed})" if row == 0 else None)
            ax.show_xticklabels = row == len(cols) - 1
            if row == len(cols) - 1:
                ax.set(xlabel="time (s)")
    fig.legend(list(entries.values()))
    return fig


KINDS = {
    "queue_delay_cdf": queue_delay_cdf,
    "class_delay_cdf": class_delay_cdf,
    "utilization_cdf": utilization_cdf,
    "goodput_delay": goodput_delay,
    "queue_delay_time": queue_delay_time,
    "causes_time": causes_time,
    "drop_causes": drop_causes,
    "goodput": goodput,
    "cwnd_time": cwnd_time,
    "capacity_time": capacity_time,
    "cbr_goodput_delay": cbr_goodput_delay,
    "download_times": download_times,
    "bulk_goodput_cdf": bulk_goodput_cdf,
    "flow_traces": flow_traces,
    "backlog_time": backlog_time,
    "drop_prob_time": drop_prob_time,
    "class_metrics": class_metrics,
    "download_time_by_size": download_time_by_size,
    "transfer_rate_by_size": transfer_rate_by_size,
}
