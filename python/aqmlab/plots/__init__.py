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

Figures are built on `matplotlib.figure.Figure` directly: this package never selects a
backend nor imports pyplot, so a notebook keeps its inline backend. Report pages draw
the same kinds as SVG instead (`draw_svg`, `aqmlab.plots_svg`): the same data, from
the helpers that both drawings share, the same colours, titles and labels, in
milliseconds and without importing matplotlib. Every series keeps
one colour in every figure (its place in the comparison), from a colour-blind-safe
palette (Okabe & Ito; beyond eight series, viridis); legends sit outside the axes.
Styles: "report" (screen), "paper" (a 3.5 in column, 8 pt), "slides" (16:9, 14 pt).

The package: `base` (styles, palette, `Options`, `Kind`, panels, legends, `save`),
`distributions` (CDFs and boxes), `relations` (one measure against another),
`over_time` (time series and per-connection traces), and here the catalogue
(`kinds`, `draw`, `draw_svg`, `figure`). Every name of those modules that other code
uses is importable from `aqmlab.plots`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from .base import (  # noqa: F401
    BASE, CAUSE_COLORS, MARKERS, OKABE_ITO, SCALE, STYLE, STYLES, Kind, Options, _facet_colors, _facets, _label, _short,
    figure_class, palette, png_bytes, pooled, save, seeds_note,
)
from .distributions import (  # noqa: F401
    CDFS, Cdf, box_stats, bulk_goodput_cdf, cdf_data, class_delay_cdf, class_delay_data, download_groups, download_times,
    goodput, goodput_data, goodput_title, jitter, queue_delay_cdf, utilization_cdf,
)
from .over_time import (  # noqa: F401
    CAUSES, EWMA_LABEL, TIME_KINDS, aqm_estimate, backlog_time, capacity_data, capacity_time, cause_label, causes_data,
    causes_time, cwnd_data, cwnd_time, delay_ylim, drop_prob_data, drop_prob_time, flow_trace_data, flow_traces,
    queue_delay_time, red_thresholds,
)
from .relations import (  # noqa: F401
    CBR_PCTS, cbr_data, cbr_goodput_delay, class_metrics, download_time_by_size, drop_causes, ellipse, goodput_delay,
    goodput_delay_title, size_bins, transfer_lines, transfer_rate_by_size,
)

if TYPE_CHECKING:
    from ..comparison import Series


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
    from ..comparison import _fmt_value

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
    from ..comparison import Series, group
    from ..folders import find_runs

    items = list(runs) if not isinstance(runs, (str, bytes)) and hasattr(runs, "__iter__") else [runs]
    series = items if items and all(isinstance(x, Series) for x in items) else group(find_runs(items), label)
    return draw(kind, series, Options(style=style, width=width, height=height, **options))
