"""The figures: one catalogue of kinds, each a function of series of runs that returns a
matplotlib Figure.

    >>> import aqmlab
    >>> aqmlab.plots.kinds()                                   # name -> Kind(caption, ...)
    >>> fig = aqmlab.plots.figure("goodput_delay", ["sweeps/proof"], style="paper")
    >>> fig.savefig("goodput-delay.pdf")

A kind draws *series*: runs that differ only in their seed, pooled (see
`aqmlab.comparison.group`). A run report is the comparison of one run, so every kind
serves one run and many alike. The data come from the measures layer
(`aqmlab.measures`); a kind whose data a run lacks (no CBR class, packet rows off)
returns None and is left out of reports.

Figures are built on `matplotlib.figure.Figure` directly: this module never selects a
backend nor imports pyplot, so a notebook keeps its inline backend. Report pages draw
the same kinds as SVG instead (`draw_svg`, `aqmlab.plots_svg`): the same data, from
the helpers below that both drawings share, the same colours, titles and labels, in
milliseconds and without importing matplotlib. Every series keeps
one colour in every figure (its place in the comparison), from a colour-blind-safe
palette (Okabe & Ito; beyond eight series, viridis); legends sit outside the axes.
Styles: "report" (screen), "paper" (a 3.5 in column, 8 pt), "slides" (16:9, 14 pt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from . import measures as m

if TYPE_CHECKING:
    from .comparison import Series

# Okabe & Ito, "Color Universal Design" (2008): distinguishable under the common forms of
# colour blindness; black is left for reference lines.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
CAUSE_COLORS = {"overflow": "#7f7f7f", "random": "#0072B2", "deterministic": "#D55E00", "mark": "#009E73"}
MARKERS = "osD^v<>pPX*h"


def palette(n: int) -> list[str]:
    """`n` colours: Okabe & Ito's for up to 8, else evenly spaced along viridis."""
    if n <= len(OKABE_ITO):
        return OKABE_ITO[:n]
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    return [matplotlib.colors.to_hex(cmap(i / max(n - 1, 1) * 0.92)) for i in range(n)]


BASE = {
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "figure.dpi": 100,
}
STYLES: dict[str, dict[str, Any]] = {
    "report": {**BASE, "font.size": 9, "axes.titlesize": 9, "legend.fontsize": 8, "lines.linewidth": 1.5},
    "paper": {**BASE, "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7,
              "lines.linewidth": 1.0, "font.family": "serif", "savefig.dpi": 300, "pdf.fonttype": 42, "ps.fonttype": 42},
    "slides": {**BASE, "font.size": 14, "axes.titlesize": 14, "legend.fontsize": 12, "lines.linewidth": 2.2},
}
# a figure's size in each style, as a scale of its "report" size (paper: one 3.5 in column)
SCALE = {"report": 1.0, "paper": 0.55, "slides": 1.45}
STYLE = STYLES["report"]


@dataclass
class Options:
    """How a kind is drawn: `facet` splits panels by a series value, `where` keeps the
    series whose values match, `title` replaces the default, `classes` keeps those
    traffic classes in per-class figures; `style`, `width` and `height` (inches) size it."""

    facet: Optional[str] = None
    where: dict[str, Any] = field(default_factory=dict)
    title: Optional[str] = None
    max_panels: int = 12
    classes: Optional[list[str]] = None
    style: str = "report"
    width: Optional[float] = None
    height: Optional[float] = None
    link: str = "bottleneck"


@dataclass(frozen=True)
class Kind:
    """A figure kind: its name, drawing function (a matplotlib Figure), caption, and
    whether reports draw it. `svg` is the same kind drawn as SVG for report pages
    (`aqmlab.plots_svg`), or None."""

    name: str
    draw: Callable[[list["Series"], Options], Any]
    caption: str
    default: bool = True

    @property
    def svg(self) -> Optional[Callable[[list["Series"], Options], Any]]:
        from . import plots_svg

        return plots_svg.KINDS.get(self.name)


# -- building blocks ---------------------------------------------------------------------------


_FIGURE_CLASS: Any = None


def figure_class() -> Any:
    """matplotlib's Figure, plus `_repr_png_` so that a notebook shows it whatever the
    backend (it is not registered with pyplot, whose inline hook would)."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        class AqmlabFigure(Figure):
            def _repr_png_(self) -> bytes:
                return png_bytes(self)

        _FIGURE_CLASS = AqmlabFigure
    return _FIGURE_CLASS


def _figure(opt: Options, w: float, h: float, rows: int = 1, cols: int = 1, **kw: Any):
    """A constrained-layout Figure (not registered with pyplot) and its axes grid."""
    s = SCALE.get(opt.style, 1.0)
    fig = figure_class()(figsize=(opt.width or w * s, opt.height or h * s), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def _grid(opt: Options, n: int, width: float = 4.2, height: float = 3.2, **kw: Any):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = _figure(opt, width * cols + (1.6 if n > 1 else 0), height * rows, rows, cols, **kw)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _legend(fig: Any, handles: Sequence[Any], labels: Sequence[str], title: Optional[str] = None) -> None:
    """One legend for the figure, below the axes, in as many columns as its width holds."""
    import matplotlib

    pairs = [(h, lab) for h, lab in zip(handles, labels) if lab]
    if not pairs:
        return
    size = matplotlib.font_manager.FontProperties(size=matplotlib.rcParams["legend.fontsize"]).get_size_in_points()
    per_row = fig.get_figwidth() * 72 / (0.6 * size)  # characters that fit across the figure
    width = max(len(lab) for _, lab in pairs) + 6  # a label and its handle
    fig.legend([h for h, _ in pairs], [lab for _, lab in pairs], loc="outside lower center",
               ncols=max(1, min(len(pairs), int(per_row // width))), title=title)


def _series_legend(fig: Any, series: Sequence["Series"], opt: Options, lw: float = 2.0) -> None:
    if len(series) < 2:
        return
    from matplotlib.lines import Line2D

    labels = [_label(s, opt) for s in series]
    _legend(fig, [Line2D([], [], color=s.color, lw=lw) for s in series], labels)


def _label(s: "Series", opt: Options) -> str:
    return s.label(exclude=[opt.facet] if opt.facet else []) or s.label()


def _facets(series: list["Series"], opt: Options) -> list[tuple[str, list["Series"]]]:
    if not opt.facet:
        return [("", series)]
    from .comparison import _fmt_value

    out: dict[str, list[Series]] = {}
    for s in series:
        out.setdefault(_fmt_value(s.get(opt.facet)), []).append(s)
    return list(out.items())[: opt.max_panels]


def _facet_colors(panels: list[tuple[str, list["Series"]]], opt: Options) -> dict[int, str]:
    """With facets, one colour per label within a panel, the same in every panel."""
    if not opt.facet:
        return {id(s): s.color for _, g in panels for s in g}
    labels = list(dict.fromkeys(_label(s, opt) for _, g in panels for s in g))
    pal = dict(zip(labels, palette(len(labels))))
    return {id(s): pal[_label(s, opt)] for _, g in panels for s in g}


def _short(key: str) -> str:
    from .comparison import _short as short

    return short(key)


def pooled(series: Sequence["Series"]) -> str:
    """" (N seeds per series, pooled)" when a series pools runs, else ""."""
    return f" ({seeds_note(series)}, pooled)" if any(len(s.runs) > 1 for s in series) else ""


def seeds_note(series: Sequence["Series"]) -> str:
    ns = sorted({len(s.runs) for s in series})
    return f"{ns[0]} seed{'s' if ns[0] > 1 else ''} per series" if len(ns) == 1 else f"{ns[0]}–{ns[-1]} seeds per series"


def _title(fig: Any, opt: Options, default: str) -> None:
    """The figure's title; a paper figure has none unless asked (its caption says it)."""
    if opt.title or opt.style != "paper":
        fig.suptitle(opt.title or default, fontsize="medium", wrap=True)  # wrapped to the figure's width, never cut


# -- distributions --------------------------------------------------------------------------------


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
    ax.set_xlabel("queueing delay when the drop happened (ms): bar 5th–95th percentile, marker the median")
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
    from .comparison import _fmt_value

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


# -- over time (one run per series: the lowest seed) ---------------------------------------------


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


# The data of each time kind for one run (None without it), shared by both renderings.


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


# -- the catalogue -------------------------------------------------------------------------------

_KINDS = [
    Kind("queue_delay_cdf", queue_delay_cdf, "CDF of the per-packet queueing delay at the bottleneck, seeds pooled (Kuhn & Ros, MADPIE Fig. 2a/2c); a run without packet rows enters through its streaming histogram (whole run, within 0.4 %). The x axis ends at the 99.5th percentile of the widest series."),
    Kind("class_delay_cdf", class_delay_cdf, "CDF of the queueing delay of each traffic class, one panel per class (drawn when there are two classes or more)."),
    Kind("utilization_cdf", utilization_cdf, "CDF of the bottleneck utilization per `metrics.utilization_interval` (1 s by default), seeds pooled (Kuhn & Ros Fig. 2b/2d)."),
    Kind("goodput_delay", goodput_delay, "Goodput of all flows against the mean queueing delay, a point per `metrics.goodput_interval` of each run, with each series' 1-σ ellipse and mean (RFC 7928 §2.7)."),
    Kind("queue_delay_time", queue_delay_time, "Per-packet queueing delay over time, one run (the lowest seed) per series, with the AQM's delay estimate (Kuhn & Ros Fig. 3); each y axis ends just above its 99.9th percentile, so a start-up burst may be cut."),
    Kind("causes_time", causes_time, "Drops by cause (overflow, random, deterministic) and ECN marks per second at the bottleneck, stacked, one run per series."),
    Kind("drop_causes", drop_causes, "Share of each drop cause (y) and the queueing delay (backlog / link rate) when those drops happened: a bar from the 5th to the 95th percentile, the median marked (Kuhn & Ros Fig. 4).", False),
    Kind("goodput", goodput, "Goodput of each flow over its active time, per class: boxes at the 25/50/75th percentiles, whiskers at the 5th and 95th, the flows as dots; a CDF over the flows when a class has more than 30."),
    Kind("cwnd_time", cwnd_time, "Congestion windows of the first flows over time, one run per series."),
    Kind("capacity_time", capacity_time, "Capacity and throughput of the bottleneck over time when the capacity changes (Pan et al.'s capacity drop; trace-driven links)."),
    Kind("cbr_goodput_delay", cbr_goodput_delay, "CBR flows: mean goodput per flow against the 5/25/50/75/95th percentiles of their packets' queueing delay (Kuhn & Ros Fig. 6)."),
    Kind("download_times", download_times, "File download times by file size: boxes at the 25/50/75th percentiles, whiskers at the 5th and 95th (Kuhn & Ros Fig. 7)."),
    Kind("bulk_goodput_cdf", bulk_goodput_cdf, "CDF of the goodput of each bulk flow per `metrics.goodput_interval` (Kuhn & Ros Fig. 8).", False),
    Kind("flow_traces", flow_traces, "Per-connection traces of one run per series: data delivered, RTT samples, segments in flight (Popovsky, Palermo Figs. 2-6)."),
    Kind("backlog_time", backlog_time, "Queue length at the bottleneck per record interval and its moving average, one run per series; fixed RED thresholds dashed (Jou, Tan & Baras Fig. 10).", False),
    Kind("drop_prob_time", drop_prob_time, "The AQM's dropping probability per record interval and its moving average, one run per series (Jou, Tan & Baras Fig. 11).", False),
    Kind("class_metrics", class_metrics, "Packet loss, mean queueing delay and rate (kB/s) of each traffic class at the bottleneck after the warm-up; mean over seeds, error bars one standard deviation (Jou, Tan & Baras Tables III-IV).", False),
    Kind("download_time_by_size", download_time_by_size, "Download time of the files up to 160 kB by size (10 kB bins, at least 3 files per point): mean and standard deviation, seeds pooled (Jou, Tan & Baras Fig. 9).", False),
    Kind("transfer_rate_by_size", transfer_rate_by_size, "Average rate (size over download time) of a late-arriving transfer against its size, one line per experiment; hollow markers: not finished by the end of the run, rate so far (Popovsky Figs. 5-6).", False),
]
KINDS: dict[str, Kind] = {k.name: k for k in _KINDS}


def kinds() -> dict[str, Kind]:
    """Every figure kind by name; `Kind.default` says whether reports draw it."""
    return dict(KINDS)


def default_kinds() -> list[str]:
    return [k.name for k in _KINDS if k.default]


def _matches(value: Any, want: Any) -> bool:
    from .comparison import _fmt_value

    if isinstance(want, (list, tuple, set)):
        return any(_fmt_value(value) == _fmt_value(w) for w in want)
    return _fmt_value(value) == _fmt_value(want)


def draw(kind: str, series: list["Series"], opt: Optional[Options] = None):
    """Figure `kind` of the series (those matching `opt.where`), or None without data."""
    import matplotlib

    opt = opt or Options()
    if kind not in KINDS:
        raise KeyError(f"figure kind \"{kind}\" (expected one of: {', '.join(KINDS)})")
    if opt.style not in STYLES:
        raise ValueError(f"style \"{opt.style}\" (expected one of: {', '.join(STYLES)})")
    sel = [s for s in series if all(_matches(s.get(k), v) for k, v in opt.where.items())]
    if not sel:
        return None
    with matplotlib.rc_context(STYLES[opt.style]):
        fig = KINDS[kind].draw(sel, opt)
    if fig is not None:
        fig.aqmlab_style = opt.style  # `save` writes it with the style's settings (fonts, dpi)
    return fig


def draw_svg(kind: str, series: list["Series"], opt: Optional[Options] = None, ident: Optional[str] = None) -> Optional[str]:
    """Figure `kind` of the series as an `<svg>` element for a report page (None
    without data, or when the kind has no SVG drawing): the same data, colours and
    labels as `draw`, in milliseconds and without matplotlib. `ident` keeps the
    element's internal ids unique within a page."""
    opt = opt or Options()
    if kind not in KINDS:
        raise KeyError(f"figure kind \"{kind}\" (expected one of: {', '.join(KINDS)})")
    fn = KINDS[kind].svg
    sel = [s for s in series if all(_matches(s.get(k), v) for k, v in opt.where.items())]
    if fn is None or not sel:
        return None
    fig = fn(sel, opt)
    return None if fig is None else fig.render(ident or f"fig-{kind}")


def figure(kind: str, runs: Iterable[Any], *, style: str = "report", width: Optional[float] = None, height: Optional[float] = None,
           label: Any = None, **options: Any):
    """A matplotlib Figure of `kind` for runs: `Run`s, `Sweep`s, run or sweep folders,
    or `Series` (runs that differ only in their seed are pooled into one series).
    `style` is "report", "paper" or "slides"; `width`/`height` in inches; other
    keywords are `Options` (facet, where, title, classes, link). None without data."""
    from .comparison import Series, group
    from .folders import find_runs

    items = list(runs) if not isinstance(runs, (str, bytes)) and hasattr(runs, "__iter__") else [runs]
    series = items if items and all(isinstance(x, Series) for x in items) else group(find_runs(items), label)
    return draw(kind, series, Options(style=style, width=width, height=height, **options))


def save(fig: Any, path: Any, fmt: Optional[str] = None, dpi: Optional[int] = None) -> None:
    """Write a Figure to a file (the format from `fmt` or the file's suffix), with the
    settings of the style it was drawn in (paper: TrueType fonts in PDF, 300 dpi PNG)."""
    import matplotlib

    style = STYLES.get(getattr(fig, "aqmlab_style", "report"), STYLES["report"])
    with matplotlib.rc_context(style):
        fig.savefig(path, format=fmt, dpi=dpi or style.get("savefig.dpi", 150))  # the asked size: no tight crop


def png_bytes(fig: Any, dpi: int = 100) -> bytes:
    import io

    buf = io.BytesIO()
    # constrained layout already fits the figure (no second drawing pass for a tight box);
    # zlib's fastest level: a third of the encoding time for files a fifth larger
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()
