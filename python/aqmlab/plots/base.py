"""The building blocks of every figure kind: the styles and the colour-blind-safe
palette, `Options` and `Kind`, the Figure class (it shows itself in a notebook
whatever the backend), panels, facets, legends and titles, and writing a figure
(`save`, `png_bytes`). The kinds are in `distributions`, `relations` and `over_time`;
the catalogue in `aqmlab.plots`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

if TYPE_CHECKING:
    from ..comparison import Series


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
# a figure's size in each style, as a scale of its "report" size: a one-panel paper
# figure is one 3.5 in column wide (4.2 in x 0.833), a wider one at most the 7.16 in
# of a two-column page (IEEE and ACM templates)
SCALE = {"report": 1.0, "paper": 3.5 / 4.2, "slides": 1.45}
PAPER_MAX_WIDTH = 7.16
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
        from .. import plots_svg

        return plots_svg.KINDS.get(self.name)


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
    width = w * s if opt.style != "paper" else min(w * s, PAPER_MAX_WIDTH)
    fig = figure_class()(figsize=(opt.width or width, opt.height or h * s), layout="constrained")
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
    from ..comparison import _fmt_value

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
    from ..comparison import _short as short

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
