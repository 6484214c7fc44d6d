"""Figure kinds that show how a measure spreads over packets, intervals, flows or
files: the CDFs (queueing delay, per class, utilization, bulk goodput per interval)
and the boxes (per-flow goodput, download times by file size), with the data
helpers that the SVG drawings (`aqmlab.plots_svg`) share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from .. import measures as m
from .base import Options, _facet_colors, _facets, _figure, _grid, _label, _legend, _series_legend, _short, _title, pooled

if TYPE_CHECKING:
    from ..comparison import Series


@dataclass(frozen=True)
class Cdf:
    """A CDF kind: the values of a series, the axes' labels, the title, the percentile
    of the widest series where the x axis ends (None: `xlim`)."""

    values: Callable[["Series", Options], Optional[np.ndarray]]
    xlabel: Callable[[Options], str]
    ylabel: str
    title: str
    clip_pct: Optional[float] = 99.5
    xlim: Optional[tuple[float, float]] = None


CDFS = {
    "queue_delay_cdf": Cdf(lambda s, opt: s.queue_delays_at(opt.link), lambda opt: f"queueing delay at the {opt.link} (ms)", "CDF (fraction of packets)",
                           "Queueing delay per packet"),
    "utilization_cdf": Cdf(lambda s, opt: s.utilization_at(opt.link), lambda opt: f"{opt.link} utilization (fraction of each interval)",
                           "CDF (fraction of intervals)", "Utilization", None, (0, 1.02)),
    "bulk_goodput_cdf": Cdf(lambda s, opt: s.interval_goodputs(m.kinds_of("bulk"), opt.classes), lambda opt: "goodput of a bulk flow per interval (Mbps)",
                            "CDF (fraction of flow-intervals)", "Goodput of the bulk flows per interval"),
}


def cdf_data(series: list["Series"], opt: Options, kind: str) -> Optional[list[tuple["Series", np.ndarray]]]:
    """The series with values for CDF kind `kind`, and their values (None: no data;
    bulk_goodput_cdf needs bulk classes)."""
    if kind == "bulk_goodput_cdf" and not any(s.classes_of(m.kinds_of("bulk")) for s in series):
        return None
    data = [(s, CDFS[kind].values(s, opt)) for s in series]
    data = [(s, v) for s, v in data if v is not None and len(v)]
    return data or None


def _cdf(series: list["Series"], opt: Options, kind: str):
    spec = CDFS[kind]
    xlabel, ylabel, title, clip_pct, xlim = spec.xlabel(opt), spec.ylabel, spec.title, spec.clip_pct, spec.xlim
    data = cdf_data(series, opt, kind)
    if not data:
        return None
    panels = _facets([s for s, _ in data], opt)
    vals = {id(s): v for s, v in data}
    colors = _facet_colors(panels, opt)
    fig, axes = _grid(opt, len(panels), sharex=xlim is not None, sharey=True)
    for ax, (name, grp) in zip(axes, panels):
        # each panel its own range, ending at the clip percentile of its widest series
        hi = max(np.nanpercentile(vals[id(s)], clip_pct) for s in grp) * 1.05 if clip_pct else None
        for s in grp:
            x, y = m.ecdf_points(vals[id(s)])
            ax.plot(x, y, color=colors[id(s)], label=_label(s, opt))
        ax.set_ylim(0, 1.01)
        if xlim:
            ax.set_xlim(*xlim)
        else:
            ax.set_xlim(left=0, right=hi if hi and hi > 0 else None)
        ax.set_xlabel(xlabel)
        if opt.facet:
            ax.set_title(f"{_short(opt.facet)} = {name}")
    axes[0].set_ylabel(ylabel)
    handles, labels = [], []
    for s in dict.fromkeys(s for _, g in panels for s in g):
        from matplotlib.lines import Line2D

        lab = _label(s, opt)
        if lab not in labels:
            handles.append(Line2D([], [], color=colors[id(s)], lw=2))
            labels.append(lab)
    if len(labels) > 1:
        _legend(fig, handles, labels)
    _title(fig, opt, title + pooled([s for s, _ in data]))
    return fig


def queue_delay_cdf(series, opt):
    return _cdf(series, opt, "queue_delay_cdf")


def utilization_cdf(series, opt):
    return _cdf(series, opt, "utilization_cdf")


def class_delay_cdf(series, opt):
    """Queueing delay per traffic class: one panel per class, a line per series."""
    got = class_delay_data(series, opt)
    if got is None:
        return None
    classes, data = got
    fig, axes = _grid(opt, len(classes), sharey=True)
    for ax, c in zip(axes, classes):
        tops = []
        for s in series:
            v = data[(id(s), c)]
            if v is None or not len(v):
                continue
            x, y = m.ecdf_points(v)
            ax.plot(x, y, color=s.color)
            tops.append(np.nanpercentile(v, 99.5))
        ax.set_title(f"class {c}")
        ax.set_xlim(0, max(tops) * 1.05 if tops and max(tops) > 0 else None)
        ax.set_ylim(0, 1.01)
        ax.set_xlabel(f"queueing delay at the {opt.link} (ms)")
    axes[0].set_ylabel("CDF (fraction of packets)")
    _series_legend(fig, series, opt)
    _title(fig, opt, "Queueing delay per traffic class" + pooled(series))
    return fig


def class_delay_data(series: list["Series"], opt: Options) -> Optional[tuple[list[str], dict[tuple[int, str], Any]]]:
    """The classes drawn by class_delay_cdf (two or more, with data) and each series'
    delays per class, keyed (id(series), class)."""
    classes = list(dict.fromkeys(c for s in series for c in s.classes_of(None)))
    if opt.classes is not None:
        classes = [c for c in classes if c in opt.classes]
    if len(classes) < 2:
        return None
    data = {(id(s), c): s.class_delays([c]) for s in series for c in classes}
    classes = [c for c in classes if any(v is not None and len(v) for (i, cc), v in data.items() if cc == c)]
    return (classes, data) if classes else None


def goodput(series, opt):
    """Per-flow goodput by class: boxes (25/50/75th, whiskers 5th/95th) with the flows as
    dots; a CDF per series once a class has more than 30 flows in a series."""
    got = goodput_data(series, opt)
    if got is None:
        return None
    data, classes, many = got
    fig, axes = _figure(opt, max(4.2, 1.2 + 0.9 * len(data)) * len(classes) if not many else 4.4 * len(classes), 3.6, 1, len(classes))
    for ax, cls in zip(axes[0], classes):
        rows = [(s, g[cls]) for s, g in data if cls in g and len(g[cls])]
        if many:
            for s, v in rows:
                x, y = m.ecdf_points(v)
                ax.plot(x, y, color=s.color, drawstyle="steps-post")
            ax.set_xlabel("per-flow goodput (Mbps)")
            ax.set_ylabel("CDF (fraction of flows)")
            ax.set_xlim(left=0)
            ax.set_ylim(0, 1.01)
        else:
            bp = ax.boxplot([v for _, v in rows], whis=(5, 95), showfliers=False, patch_artist=True, widths=0.6)
            for patch, (s, _) in zip(bp["boxes"], rows):
                patch.set_facecolor(s.color)
                patch.set_alpha(0.35)
            for med in bp["medians"]:
                med.set_color("black")
            for i, ((s, v), jx) in enumerate(zip(rows, jitter([v for _, v in rows]))):
                ax.scatter(i + 1 + jx, v, s=9, color=s.color, zorder=3, linewidths=0)
            ax.set_xticks(range(1, len(rows) + 1), [_label(s, opt) if len(rows) > 1 else f"{len(v)} flows" for s, v in rows],
                          rotation=30 if len(rows) > 3 else 0, ha="right" if len(rows) > 3 else "center")
            ax.set_ylabel("per-flow goodput (Mbps)")
            ax.set_ylim(bottom=0)
        jain = [s.first.summary.get("classes", {}).get(cls, {}).get("jain_index") for s, _ in rows]
        jt = f" (Jain {jain[0]:.3f})" if len(rows) == 1 and jain[0] is not None else ""
        ax.set_title(f"class {cls}{jt}")
    if many:
        _series_legend(fig, [s for s, _ in data], opt)
    _title(fig, opt, goodput_title(many))
    return fig


def goodput_data(series: list["Series"], opt: Options) -> Optional[tuple[list[tuple["Series", dict[str, np.ndarray]]], list[str], bool]]:
    """Per-flow goodputs of each series by class, the classes drawn, and whether a
    class has so many flows (> 30 in a series) that a CDF replaces the boxes."""
    data = [(s, s.flow_goodputs()) for s in series]
    data = [(s, g) for s, g in data if g]
    if not data:
        return None
    classes = list(dict.fromkeys(c for _, g in data for c in g))
    if opt.classes is not None:
        classes = [c for c in classes if c in opt.classes] or classes
    many = max(len(g.get(c, ())) for _, g in data for c in classes) > 30
    return data, classes, many


def jitter(groups: Sequence[Any], half_width: float = 0.15) -> list[np.ndarray]:
    """Fixed horizontal offsets for the dots of each group (a seeded generator: the
    same figure every time)."""
    rng = np.random.default_rng(0)
    return [rng.uniform(-half_width, half_width, len(v)) for v in groups]


def goodput_title(many: bool) -> str:
    return "Per-flow goodput" + (" (CDF over the flows)" if many else " (boxes 25/50/75th, whiskers 5th/95th)")


def box_stats(v: Any) -> np.ndarray:
    """The 5th, 25th, 50th, 75th and 95th percentiles that the boxes draw."""
    return np.percentile(np.asarray(v, float), [5, 25, 50, 75, 95])


def bulk_goodput_cdf(series, opt):
    """Kuhn & Ros Fig. 8: CDF of the bulk flows' goodput, per flow and per interval."""
    return _cdf(series, opt, "bulk_goodput_cdf")


def download_times(series, opt):
    """Kuhn & Ros Fig. 7: download time by file size, one box per series, boxes at the
    25/50/75th percentiles and whiskers at the 5th and 95th."""
    got = download_groups(series, opt)
    if got is None:
        return None
    names, data = got
    fig, axes = _figure(opt, max(6.4, 1.3 * len(names) * max(1, len(data)) * 0.6), 4.0)
    ax = axes[0, 0]
    width = 0.8 / len(data)
    for i, (s, groups) in enumerate(data):
        pos = [j + 1 - 0.4 + width * (i + 0.5) for j in range(len(names))]
        keep = [(p, g) for p, g in zip(pos, groups) if g]
        if not keep:
            continue
        bp = ax.boxplot([g for _, g in keep], positions=[p for p, _ in keep], widths=width * 0.85, whis=(5, 95), showfliers=False, patch_artist=True, manage_ticks=False)
        for patch in bp["boxes"]:
            patch.set_facecolor(s.color)
            patch.set_alpha(0.6)
        for med in bp["medians"]:
            med.set_color("black")
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_xlabel("file size")
    ax.set_ylabel("download time (s)")
    ax.set_ylim(bottom=0)
    _series_legend(fig, [s for s, _ in data], opt, lw=6)
    _title(fig, opt, "Download time by file size (boxes 25/50/75th, whiskers 5th/95th percentile)")
    return fig


def download_groups(series: list["Series"], opt: Options) -> Optional[tuple[list[str], list[tuple["Series", list[list[float]]]]]]:
    """The file-size groups of download_times (each size, or six bins of equal counts
    when sizes are many) and each series' download times (s) per group."""
    data = [(s, s.transfers()) for s in series]
    if opt.classes is not None:
        data = [(s, None if t is None else t[t["class"].astype(str).isin(list(opt.classes))]) for s, t in data]
    data = [(s, t) for s, t in data if t is not None and not t.empty]
    if not data:
        return None
    sizes = sorted({int(x) for _, t in data for x in t["size_bytes"].unique()})
    if len(sizes) > 12:  # continuous sizes (e.g. Pareto): bin them
        edges = np.unique(np.quantile(np.concatenate([t["size_bytes"].to_numpy(float) for _, t in data]), np.linspace(0, 1, 7)))

        def label_of(x: float) -> int:
            return int(np.searchsorted(edges[1:-1], x, side="right"))

        names = [f"{edges[i] / 1e3:.0f}–{edges[i + 1] / 1e3:.0f} kB" for i in range(len(edges) - 1)]
    else:
        label_of = sizes.index  # type: ignore[assignment]
        names = [f"{x / 1e3:.0f} kB" for x in sizes]
    out = []
    for s, t in data:
        groups: list[list[float]] = [[] for _ in names]
        for sz, dt in zip(t["size_bytes"].to_numpy(float), t["download_time_s"].to_numpy(float)):
            groups[label_of(sz)].append(dt)
        out.append((s, groups))
    return names, out
