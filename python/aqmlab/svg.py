"""A small SVG chart writer for the report pages: axes with "nice" ticks, lines,
steps, dots, stacked areas, boxes, bars, error bars and closed curves, panel grids,
a title and a legend below, written as one `<svg>` element that the page embeds.

It exists for speed: a report page's figures are drawn in a few milliseconds each,
with no matplotlib import (0.6 s) and no rasterisation (0.2-0.3 s a figure). The
figures a person saves, styles and puts in a paper stay matplotlib Figures
(`aqmlab.plots`); this module draws the same kinds, from the same data, for the
page. The text is the page's own (its font, selectable), every series carries a
tooltip (`<title>`), and the drawing scales with the page's width (a `viewBox`).

Dense marks are reduced to what the page can show: a line keeps, in each column of
half a pixel, its first, lowest, highest and last points (the line drawn is the same
to the eye); dots are merged per half pixel into one path.

    >>> fig = Figure(440, title="Utilization")
    >>> ax = fig.axes(330)
    >>> ax.line([0, 0.5, 1], [0, 0.2, 1], color="#0072B2", label="pie")
    >>> ax.set(xlabel="utilization", ylabel="CDF", xlim=(0, 1.02), ylim=(0, 1.01))
    >>> text = fig.render("fig-utilization")
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

FONT = 12.0  # px: tick labels and legend; titles a little larger
CHAR = 0.58  # average advance of a character, in font sizes (system sans fonts, digits and lower case)
INK = "#222"
AXIS = "#555"
GRID = "#e3e3e3"


def esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def text_width(s: str, size: float = FONT) -> float:
    """An estimate of a string's width in px (no font metrics in Python: the layout
    leaves room for the widest common fonts)."""
    return len(s) * size * CHAR


def wrap(s: str, width_px: float, size: float) -> list[str]:
    """Words of `s` in lines that fit `width_px`."""
    per = max(8, int(width_px / (size * CHAR)))
    lines: list[str] = []
    cur = ""
    for w in s.split():
        if cur and len(cur) + 1 + len(w) > per:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return lines + ([cur] if cur else [])


def nice_ticks(lo: float, hi: float, n: int = 6) -> np.ndarray:
    """Tick values covering [lo, hi] at a step of 1, 2, 2.5 or 5 times a power of ten,
    at most about `n` of them (matplotlib's MaxNLocator does the same)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return np.array([lo]) if math.isfinite(lo) else np.array([])
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = mag
    for k in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = k * mag
        if (hi - lo) / step <= n:
            break
    k = np.arange(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)
    return np.round(k * step, max(0, 3 - int(math.floor(math.log10(step)))))  # 0.6, not 0.6000000000000001


def tick_labels(ticks: np.ndarray) -> list[str]:
    """Tick values as text with the fewest decimals that tell them apart."""
    if len(ticks) == 0:
        return []
    step = float(np.min(np.diff(ticks))) if len(ticks) > 1 else (abs(float(ticks[0])) or 1.0)
    dec = 0
    while dec < 6 and not np.allclose(np.round(ticks, dec), ticks, rtol=0, atol=step * 1e-6):
        dec += 1
    return [f"{0.0 if t == 0 else t:.{dec}f}" for t in ticks]  # never "-0"


def log_ticks(lo: float, hi: float) -> np.ndarray:
    """Powers of ten inside [lo, hi] (with 2 and 5 times them when there are few)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [10.0 ** e for e in range(a, b + 1)]
    if b - a <= 2:
        ticks = [k * 10.0 ** e for e in range(a, b + 1) for k in (1, 2, 5)]
    return np.array([t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)])


def _num(v: float) -> str:
    """A pixel coordinate: one decimal, no trailing zero."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _coords(xs: np.ndarray, ys: np.ndarray) -> list[str]:
    return [f"{_num(x)} {_num(y)}" for x, y in zip(xs.tolist(), ys.tolist())]


def _tenths(v: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(v, float) * 10).astype(np.int64)


def polyline_d(px: np.ndarray, py: np.ndarray) -> str:
    """Path data of a polyline, in tenths of a pixel (drawn with `scale(.1)`), each
    point relative to the one before: about six characters a point."""
    x, y = _tenths(px), _tenths(py)
    if len(x) == 1:
        return f"M{x[0]} {y[0]}h0"
    d = np.empty(2 * (len(x) - 1), np.int64)
    d[0::2], d[1::2] = np.diff(x), np.diff(y)
    return f"M{x[0]} {y[0]}l" + " ".join(map(str, d.tolist()))


def dots_d(px: np.ndarray, py: np.ndarray) -> str:
    """Path data of dots (each a zero-length segment with round caps), in tenths of a
    pixel, relative moves."""
    x, y = _tenths(px), _tenths(py)
    dx, dy = np.diff(x), np.diff(y)
    return f"M{x[0]} {y[0]}h0" + "".join(map("m{} {}h0".format, dx.tolist(), dy.tolist()))


def decimate(px: np.ndarray, py: np.ndarray, res: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """A polyline in pixels reduced to its first, lowest, highest and last point in
    each column `res` px wide (points in order, x increasing): drawn at this size it
    looks the same. Lines whose x goes back and forth are returned as they are."""
    n = len(px)
    if n < 4 * 400 or np.any(np.diff(px) < 0):
        return px, py
    col = np.floor(px / res).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ends = np.r_[starts[1:], n] - 1
    if len(starts) * 4 >= n:
        return px, py
    # per column: index of the min and the max of y
    ymin_i = np.minimum.reduceat(np.where(np.isnan(py), np.inf, py), starts)
    ymax_i = np.maximum.reduceat(np.where(np.isnan(py), -np.inf, py), starts)
    keep = np.zeros(n, bool)
    keep[starts] = True
    keep[ends] = True
    seg = np.repeat(np.arange(len(starts)), ends - starts + 1)
    keep |= (py == ymin_i[seg]) | (py == ymax_i[seg])
    # several equal minima in a column: one is enough, but keeping them is harmless
    return px[keep], py[keep]


@dataclass
class Mark:
    kind: str
    data: dict[str, Any]
    label: Optional[str] = None


@dataclass
class LegendEntry:
    label: str
    kind: str  # "line", "dot", "patch", "marker"
    color: str
    width: float = 2.0
    dash: Optional[str] = None
    opacity: float = 1.0
    marker: str = "o"
    hollow: bool = False


class Axes:
    """One panel: marks in data coordinates, drawn when the figure is rendered."""

    def __init__(self, fig: "Figure", height: float):
        self.fig = fig
        self.height = height
        self.marks: list[Mark] = []
        self.xlim: list[Optional[float]] = [None, None]
        self.ylim: list[Optional[float]] = [None, None]
        self.xlabel = ""
        self.ylabel = ""
        self.title = ""
        self.xlog = False
        self.xcats: Optional[list[tuple[float, str]]] = None
        self.xcat_rotate = False
        self.hidden = False
        self.show_xticklabels = True

    # -- settings ---------------------------------------------------------------------
    def set(self, *, xlabel: Optional[str] = None, ylabel: Optional[str] = None, title: Optional[str] = None,
            xlim: Optional[Sequence[Optional[float]]] = None, ylim: Optional[Sequence[Optional[float]]] = None, xlog: Optional[bool] = None) -> "Axes":
        if xlabel is not None:
            self.xlabel = xlabel
        if ylabel is not None:
            self.ylabel = ylabel
        if title is not None:
            self.title = title
        if xlim is not None:
            self.xlim = [None if v is None else float(v) for v in xlim]
        if ylim is not None:
            self.ylim = [None if v is None else float(v) for v in ylim]
        if xlog is not None:
            self.xlog = xlog
        return self

    def categories(self, positions: Sequence[float], labels: Sequence[str], rotate: bool = False) -> None:
        """Text labels at x positions instead of numeric ticks (box plots, bars)."""
        self.xcats = [(float(p), str(lab)) for p, lab in zip(positions, labels)]
        self.xcat_rotate = rotate

    # -- marks ------------------------------------------------------------------------
    def line(self, x: Any, y: Any, color: str, width: float = 1.5, *, opacity: float = 1.0, dash: Optional[str] = None,
             step: Optional[str] = None, label: Optional[str] = None, markers: Optional[str] = None, marker_size: float = 3.0) -> None:
        """A polyline; `step` "post" holds each value until the next x, "pre" takes the
        next value at once (matplotlib's steps-post / steps-pre)."""
        x, y = np.asarray(x, float), np.asarray(y, float)
        self.marks.append(Mark("line", {"x": x, "y": y, "color": color, "width": width, "opacity": opacity, "dash": dash, "step": step,
                                        "markers": markers, "ms": marker_size}, label))

    def dots(self, x: Any, y: Any, color: str, r: float = 1.5, *, opacity: float = 1.0, label: Optional[str] = None) -> None:
        """Many small round dots (a scatter), merged per half pixel into one path."""
        self.marks.append(Mark("dots", {"x": np.asarray(x, float), "y": np.asarray(y, float), "color": color, "r": r, "opacity": opacity}, label))

    def markers(self, x: Any, y: Any, color: str, shape: str = "o", size: float = 4.0, *, edge: Optional[str] = None,
                hollow: bool = False, label: Optional[str] = None) -> None:
        """A few markers: "o" circle, "x" cross, "X" bold cross, "D" diamond, "|" tick."""
        self.marks.append(Mark("markers", {"x": np.atleast_1d(np.asarray(x, float)), "y": np.atleast_1d(np.asarray(y, float)), "color": color,
                                           "shape": shape, "size": size, "edge": edge, "hollow": hollow}, label))

    def stack(self, x: Any, ys: Sequence[Any], colors: Sequence[str], labels: Sequence[str], opacity: float = 0.85) -> None:
        """Stacked areas over x, held from one x to the next (matplotlib's step="pre")."""
        self.marks.append(Mark("stack", {"x": np.asarray(x, float), "ys": [np.asarray(v, float) for v in ys], "colors": list(colors),
                                         "labels": list(labels), "opacity": opacity}))

    def box(self, pos: float, stats: Sequence[float], width: float, color: str, *, opacity: float = 0.35, label: Optional[str] = None) -> None:
        """A box from the 25th to the 75th percentile, the median in black, whiskers
        to the 5th and 95th: `stats` = (p5, p25, p50, p75, p95)."""
        self.marks.append(Mark("box", {"pos": float(pos), "s": [float(v) for v in stats], "w": float(width), "color": color, "opacity": opacity}, label))

    def bar(self, pos: float, height: float, width: float, color: str, *, err: Optional[float] = None, label: Optional[str] = None) -> None:
        self.marks.append(Mark("bar", {"pos": float(pos), "h": float(height), "w": float(width), "color": color, "err": err}, label))

    def errorbars(self, x: Any, y: Any, err: Any, color: str, width: float = 1.2) -> None:
        self.marks.append(Mark("err", {"x": np.asarray(x, float), "y": np.asarray(y, float), "e": np.asarray(err, float), "color": color, "width": width}))

    def hline(self, y: float, color: str = AXIS, width: float = 1.0, dash: Optional[str] = None, label: Optional[str] = None) -> None:
        self.marks.append(Mark("hline", {"y": float(y), "color": color, "width": width, "dash": dash}, label))

    def text(self, x: float, y: float, s: str, dy: float = -7.0, size: float = 10.0, color: str = "#444") -> None:
        self.marks.append(Mark("text", {"x": float(x), "y": float(y), "s": s, "dy": dy, "size": size, "color": color}))

    # -- limits -----------------------------------------------------------------------
    def _extent(self, axis: str) -> tuple[float, float]:
        vals: list[np.ndarray] = []
        for m in self.marks:
            d = m.data
            if m.kind in ("line", "dots", "markers"):
                vals.append(d[axis])
            elif m.kind == "stack":
                if axis == "x":
                    vals.append(d["x"])
                else:
                    vals.append(np.array([0.0]))
                    if d["ys"]:
                        vals.append(np.sum(d["ys"], axis=0))
            elif m.kind == "box":
                vals.append(np.array([d["pos"] - d["w"] / 2, d["pos"] + d["w"] / 2] if axis == "x" else [d["s"][0], d["s"][4]]))
            elif m.kind == "bar":
                top = d["h"] + (d["err"] or 0.0)
                vals.append(np.array([d["pos"] - d["w"] / 2, d["pos"] + d["w"] / 2] if axis == "x" else [0.0, top]))
            elif m.kind == "err":
                vals.append(d["x"] if axis == "x" else np.r_[d["y"] - d["e"], d["y"] + d["e"]])
            elif m.kind == "hline" and axis == "y":
                vals.append(np.array([d["y"]]))
        if self.xcats and axis == "x":
            vals.append(np.array([p for p, _ in self.xcats]))
        v = np.concatenate([np.asarray(a, float).ravel() for a in vals]) if vals else np.array([])
        v = v[np.isfinite(v)]
        if self.xlog and axis == "x":
            v = v[v > 0]
        if not len(v):
            return (1.0, 10.0) if self.xlog and axis == "x" else (0.0, 1.0)
        return float(v.min()), float(v.max())

    def limits(self, axis: str) -> tuple[float, float]:
        lim = self.xlim if axis == "x" else self.ylim
        lo, hi = lim
        if lo is not None and hi is not None:
            return lo, hi
        dlo, dhi = self._extent(axis)
        if self.xlog and axis == "x":
            a, b = math.log10(dlo), math.log10(dhi)
            pad = (b - a) * 0.05 or 0.5
            return (lo if lo is not None else 10 ** (a - pad)), (hi if hi is not None else 10 ** (b + pad))
        if lo is not None:
            dlo = lo
        if hi is not None:
            dhi = hi
        span = dhi - dlo
        if span <= 0:  # one value: 5 % of it either side (matplotlib's nonsingular)
            dlo, dhi = (dlo - 0.05 * abs(dlo), dhi + 0.05 * abs(dhi)) if dhi else (-0.5, 0.5)
            span = dhi - dlo
        pad = span * 0.05  # matplotlib's default margins
        return (lo if lo is not None else dlo - pad), (hi if hi is not None else dhi + pad)


class Figure:
    """A figure: a title, a grid of panels (`axes`), a legend below them."""

    def __init__(self, width: float, *, title: str = "", cols: int = 1):
        self.width = float(width)
        self.title = title
        self.cols = max(1, cols)
        self.panels: list[Axes] = []
        self.legend_entries: list[LegendEntry] = []

    def axes(self, height: float) -> Axes:
        ax = Axes(self, height)
        self.panels.append(ax)
        return ax

    def legend(self, entries: Sequence[LegendEntry]) -> None:
        seen = {e.label for e in self.legend_entries}
        for e in entries:
            if e.label and e.label not in seen:
                self.legend_entries.append(e)
                seen.add(e.label)

    # -- rendering --------------------------------------------------------------------
    def render(self, ident: str) -> str:
        """The figure as an `<svg>` element; `ident` prefixes its clip-path ids, so
        that many figures live in one page."""
        out: list[str] = []
        W = self.width
        y = 6.0
        title_size = FONT + 1
        for line in wrap(self.title, W - 20, title_size) if self.title else []:
            y += title_size + 4
            out.append(f'<text x="{_num(W / 2)}" y="{_num(y)}" text-anchor="middle" font-size="{title_size:g}" font-weight="600" fill="{INK}">{esc(line)}</text>')
        y += 8 if self.title else 0
        cols = min(self.cols, max(1, len(self.panels)))
        cell_w = W / cols
        rows = math.ceil(len(self.panels) / cols)
        # one left margin for all panels: the widest y tick labels, plus the y label
        prepared = [self._prepare(ax) for ax in self.panels]
        left = max((p["left"] for p in prepared), default=40.0)
        for r in range(rows):
            row = list(range(r * cols, min((r + 1) * cols, len(self.panels))))
            row_h = max(self._panel_height(self.panels[i], prepared[i]) for i in row)
            for j, i in enumerate(row):
                ax = self.panels[i]
                if ax.hidden:
                    continue
                out.append(self._panel(ax, prepared[i], f"{ident}-{i}", j * cell_w, y, cell_w, row_h, left))
            y += row_h + 6
        if self.legend_entries:
            legend, h = self._legend(W, y)
            out.append(legend)
            y += h
        H = math.ceil(y + 4)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(W)}" height="{H}" viewBox="0 0 {_num(W)} {H}" role="img" '
                f'font-family="system-ui, -apple-system, \'Segoe UI\', Roboto, \'DejaVu Sans\', sans-serif" font-size="{FONT:g}">'
                f'<title>{esc(self.title)}</title>{"".join(out)}</svg>')

    def _prepare(self, ax: Axes) -> dict[str, Any]:
        x0, x1 = ax.limits("x")
        y0, y1 = ax.limits("y")
        if ax.xlog:
            xt = log_ticks(x0, x1)
            xl = [f"{t:g}" for t in xt]
        elif ax.xcats is not None:
            xt = np.array([p for p, _ in ax.xcats])
            xl = [lab for _, lab in ax.xcats]
        else:
            xt = nice_ticks(x0, x1, 7)
            xl = tick_labels(xt)
        yt = nice_ticks(y0, y1, 6)
        yl = tick_labels(yt)
        ywidth = max((text_width(s) for s in yl), default=10.0)
        left = ywidth + 10 + (FONT + 6 if ax.ylabel else 0)
        rot = ax.xcats is not None and ax.xcat_rotate
        xlab_h = (max((text_width(s) for s in xl), default=0) * 0.5 + FONT) if rot else FONT + 4
        return {"x": (x0, x1), "y": (y0, y1), "xt": xt, "xl": xl, "yt": yt, "yl": yl, "left": left, "xlab_h": xlab_h, "rot": rot}

    def _panel_height(self, ax: Axes, p: dict[str, Any]) -> float:
        top = FONT + 11 if ax.title else 4
        bottom = (p["xlab_h"] if ax.show_xticklabels else 4) + (FONT + 8 if ax.xlabel else 2)
        return top + ax.height + bottom

    def _panel(self, ax: Axes, p: dict[str, Any], ident: str, cx: float, cy: float, cw: float, ch: float, left: float) -> str:
        o: list[str] = []
        top = FONT + 11 if ax.title else 4
        px0, px1 = cx + left, cx + cw - 14
        py0, py1 = cy + top, cy + top + ax.height  # py0 top of the plot area
        (x0, x1), (y0, y1) = p["x"], p["y"]
        if ax.xlog:
            lx0, lx1 = math.log10(x0), math.log10(x1)

            def sx(v: Any) -> Any:
                v = np.asarray(v, float)
                with np.errstate(divide="ignore", invalid="ignore"):
                    return px0 + (np.log10(np.where(v > 0, v, np.nan)) - lx0) / (lx1 - lx0) * (px1 - px0)
        else:
            def sx(v: Any) -> Any:
                return px0 + (np.asarray(v, float) - x0) / ((x1 - x0) or 1.0) * (px1 - px0)

        def sy(v: Any) -> Any:
            return py1 - (np.asarray(v, float) - y0) / ((y1 - y0) or 1.0) * (py1 - py0)

        if ax.title:
            o.append(f'<text x="{_num((px0 + px1) / 2)}" y="{_num(cy + FONT + 1)}" text-anchor="middle" fill="{INK}">{esc(ax.title)}</text>')
        # grid and ticks
        grid = []
        for t in p["yt"]:
            yy = float(sy(t))
            grid.append(f"M{_num(px0)} {_num(yy)}H{_num(px1)}")
            o.append(f'<text x="{_num(px0 - 6)}" y="{_num(yy + FONT * 0.35)}" text-anchor="end" fill="{AXIS}">{esc(p["yl"][list(p["yt"]).index(t)])}</text>')
        for t, lab in zip(p["xt"], p["xl"]):
            xx = float(sx(t))
            if not (px0 - 0.5 <= xx <= px1 + 0.5):
                continue
            if ax.xcats is None:
                grid.append(f"M{_num(xx)} {_num(py0)}V{_num(py1)}")
            if ax.show_xticklabels:
                if p["rot"]:
                    o.append(f'<text transform="translate({_num(xx)} {_num(py1 + 12)}) rotate(-30)" text-anchor="end" fill="{AXIS}">{esc(lab)}</text>')
                else:
                    o.append(f'<text x="{_num(xx)}" y="{_num(py1 + FONT + 3)}" text-anchor="middle" fill="{AXIS}">{esc(lab)}</text>')
            o.append(f'<path d="M{_num(xx)} {_num(py1)}v4" stroke="{AXIS}"/>')
        o.insert(0, f'<path d="{"".join(grid)}" stroke="{GRID}" stroke-width="1" fill="none"/>')
        # the marks, clipped to the plot area
        o.append(f'<clipPath id="{ident}"><rect x="{_num(px0)}" y="{_num(py0 - 2)}" width="{_num(px1 - px0 + 2)}" height="{_num(py1 - py0 + 2)}"/></clipPath>')
        o.append(f'<g clip-path="url(#{ident})">')
        for m in ax.marks:
            o.append(self._mark(m, sx, sy, (px0, px1, py0, py1)))
        o.append("</g>")
        # axes lines (left and bottom, as the matplotlib styles here: no box)
        o.append(f'<path d="M{_num(px0)} {_num(py0)}V{_num(py1)}H{_num(px1)}" stroke="{AXIS}" fill="none"/>')
        if ax.xlabel:
            ly = py1 + (p["xlab_h"] if ax.show_xticklabels else 4) + FONT + 4
            o.append(f'<text x="{_num((px0 + px1) / 2)}" y="{_num(ly)}" text-anchor="middle" fill="{INK}">{esc(ax.xlabel)}</text>')
        if ax.ylabel:
            lx = cx + FONT + 2
            o.append(f'<text transform="translate({_num(lx)} {_num((py0 + py1) / 2)}) rotate(-90)" text-anchor="middle" fill="{INK}">{esc(ax.ylabel)}</text>')
        return "".join(o)

    def _mark(self, m: Mark, sx: Any, sy: Any, box: tuple[float, float, float, float]) -> str:
        d = m.data
        tip = f"<title>{esc(m.label)}</title>" if m.label else ""
        if m.kind == "line":
            x, y = d["x"], d["y"]
            if d["step"] and len(x) > 1:
                if d["step"] == "post":
                    x, y = np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]
                else:
                    x, y = np.repeat(x, 2)[:-1], np.repeat(y, 2)[1:]
            px, py = sx(x), sy(y)
            ok = np.isfinite(px) & np.isfinite(py)
            parts = []
            # a NaN breaks the line, as in matplotlib
            breaks = np.flatnonzero(~ok)
            start = 0
            for b in list(breaks) + [len(px)]:
                if b - start >= 1:
                    parts.append(polyline_d(*decimate(px[start:b], py[start:b])))
                start = b + 1
            if not parts:
                return ""
            dash = f' stroke-dasharray="{" ".join(str(float(v) * 10) for v in d["dash"].split())}"' if d["dash"] else ""
            op = f' stroke-opacity="{d["opacity"]:g}"' if d["opacity"] < 1 else ""
            s = (f'<path transform="scale(.1)" d="{"".join(parts)}" stroke="{d["color"]}" stroke-width="{d["width"] * 10:g}"{dash}{op} fill="none" '
                 f'stroke-linejoin="round" stroke-linecap="round">{tip}</path>')
            if d["markers"]:
                s += self._markers(px[ok], py[ok], d["color"], d["markers"], d["ms"], None, False, "")
            return s
        if m.kind == "dots":
            px, py = sx(d["x"]), sy(d["y"])
            ok = np.isfinite(px) & np.isfinite(py)
            qx, qy = np.round(px[ok] * 2), np.round(py[ok] * 2)
            if not len(qx):
                return ""
            key = np.unique(qx.astype(np.int64) * 1_000_003 + qy.astype(np.int64))
            ux, uy = (key // 1_000_003) / 2, (key % 1_000_003) / 2
            op = f' stroke-opacity="{d["opacity"]:g}"' if d["opacity"] < 1 else ""
            return (f'<path transform="scale(.1)" d="{dots_d(ux, uy)}" stroke="{d["color"]}" stroke-width="{20 * d["r"]:g}" stroke-linecap="round"{op} '
                    f'fill="none">{tip}</path>')
        if m.kind == "markers":
            return self._markers(sx(d["x"]), sy(d["y"]), d["color"], d["shape"], d["size"], d["edge"], d["hollow"], tip)
        if m.kind == "stack":
            x = d["x"]
            base = np.zeros(len(x))
            o = []
            for v, c, lab in zip(d["ys"], d["colors"], d["labels"]):
                top = base + np.nan_to_num(v)
                # each value held from the previous x up to its own (step "pre")
                xs = np.repeat(x, 2)[:-1] if len(x) > 1 else x
                ts = np.repeat(top, 2)[1:] if len(x) > 1 else top
                bs = np.repeat(base, 2)[1:] if len(x) > 1 else base
                pts = _coords(sx(np.r_[xs, xs[::-1]]), sy(np.r_[ts, bs[::-1]]))
                o.append(f'<path d="M{"L".join(pts)}Z" fill="{c}" fill-opacity="{d["opacity"]:g}" stroke="none"><title>{esc(lab)}</title></path>')
                base = top
            return "".join(o)
        if m.kind == "box":
            p5, p25, p50, p75, p95 = d["s"]
            xa, xb = float(sx(d["pos"] - d["w"] / 2)), float(sx(d["pos"] + d["w"] / 2))
            xm = (xa + xb) / 2
            cap = (xb - xa) * 0.25
            ya, yb, ym, y5, y95 = (float(sy(v)) for v in (p75, p25, p50, p5, p95))
            c = d["color"]
            return (f'<g>{tip}<path d="M{_num(xm)} {_num(yb)}V{_num(y5)}M{_num(xm - cap)} {_num(y5)}H{_num(xm + cap)}'
                    f'M{_num(xm)} {_num(ya)}V{_num(y95)}M{_num(xm - cap)} {_num(y95)}H{_num(xm + cap)}" stroke="{AXIS}" fill="none"/>'
                    f'<rect x="{_num(xa)}" y="{_num(ya)}" width="{_num(xb - xa)}" height="{_num(max(yb - ya, 0.5))}" fill="{c}" fill-opacity="{d["opacity"]:g}" stroke="{c}"/>'
                    f'<path d="M{_num(xa)} {_num(ym)}H{_num(xb)}" stroke="{INK}" stroke-width="1.5"/></g>')
        if m.kind == "bar":
            xa, xb = float(sx(d["pos"] - d["w"] / 2)), float(sx(d["pos"] + d["w"] / 2))
            y0, yh = float(sy(0.0)), float(sy(d["h"]))
            s = f'<rect x="{_num(xa)}" y="{_num(min(y0, yh))}" width="{_num(xb - xa)}" height="{_num(abs(y0 - yh))}" fill="{d["color"]}">{tip}</rect>'
            if d["err"]:
                xm = (xa + xb) / 2
                ya, yb = float(sy(d["h"] - d["err"])), float(sy(d["h"] + d["err"]))
                s += f'<path d="M{_num(xm)} {_num(ya)}V{_num(yb)}M{_num(xm - 3)} {_num(ya)}h6M{_num(xm - 3)} {_num(yb)}h6" stroke="{INK}" fill="none"/>'
            return s
        if m.kind == "err":
            xs, ya, yb = sx(d["x"]), sy(d["y"] - d["e"]), sy(d["y"] + d["e"])
            path = "".join(f"M{_num(x)} {_num(a)}V{_num(b)}M{_num(x - 3)} {_num(a)}h6M{_num(x - 3)} {_num(b)}h6" for x, a, b in zip(xs.tolist(), ya.tolist(), yb.tolist())
                           if math.isfinite(a) and math.isfinite(b))
            return f'<path d="{path}" stroke="{d["color"]}" stroke-width="{d["width"]:g}" fill="none"/>'
        if m.kind == "hline":
            yy = float(sy(d["y"]))
            dash = f' stroke-dasharray="{d["dash"]}"' if d["dash"] else ""
            return f'<path d="M{_num(box[0])} {_num(yy)}H{_num(box[1])}" stroke="{d["color"]}" stroke-width="{d["width"]:g}"{dash}>{tip}</path>'
        if m.kind == "text":
            return (f'<text x="{_num(float(sx(d["x"])))}" y="{_num(float(sy(d["y"])) + d["dy"])}" text-anchor="middle" font-size="{d["size"]:g}" '
                    f'fill="{d["color"]}">{esc(d["s"])}</text>')
        raise ValueError(f"mark kind {m.kind!r}")

    @staticmethod
    def _markers(px: np.ndarray, py: np.ndarray, color: str, shape: str, size: float, edge: Optional[str], hollow: bool, tip: str) -> str:
        o = []
        r = size
        stroke = f' stroke="{edge}" stroke-width="0.8"' if edge else ""
        for x, y in zip(np.atleast_1d(px).tolist(), np.atleast_1d(py).tolist()):
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            if shape == "o":
                fill = "#fff" if hollow else color
                o.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{r:g}" fill="{fill}" stroke="{edge or color}" stroke-width="{1.2 if hollow else 0.8}"/>')
            elif shape == "D":
                o.append(f'<path d="M{_num(x)} {_num(y - r)}L{_num(x + r)} {_num(y)}L{_num(x)} {_num(y + r)}L{_num(x - r)} {_num(y)}Z" fill="{color}"{stroke}/>')
            elif shape == "|":
                o.append(f'<path d="M{_num(x)} {_num(y - r)}V{_num(y + r)}" stroke="{color}" stroke-width="1.6"/>')
            elif shape in ("x", "X"):
                w = 2.6 if shape == "X" else 1.4
                path = f"M{_num(x - r)} {_num(y - r)}L{_num(x + r)} {_num(y + r)}M{_num(x - r)} {_num(y + r)}L{_num(x + r)} {_num(y - r)}"
                if shape == "X" and edge:
                    o.append(f'<path d="{path}" stroke="{edge}" stroke-width="{w + 1.6:g}" stroke-linecap="round"/>')
                o.append(f'<path d="{path}" stroke="{color}" stroke-width="{w:g}" stroke-linecap="round"/>')
            else:
                raise ValueError(f"marker shape {shape!r}")
        return f"<g>{tip}{''.join(o)}</g>" if tip else "".join(o)

    def _legend(self, W: float, y: float) -> tuple[str, float]:
        """Entries in rows centred below the panels, as many per row as fit."""
        items = [(e, 26 + text_width(e.label) + 16) for e in self.legend_entries]
        rows: list[list[tuple[LegendEntry, float]]] = [[]]
        used = 0.0
        for e, w in items:
            if rows[-1] and used + w > W - 20:
                rows.append([])
                used = 0.0
            rows[-1].append((e, w))
            used += w
        o = []
        yy = y + 4
        for row in rows:
            yy += FONT + 6
            x = (W - sum(w for _, w in row)) / 2
            for e, w in row:
                cy = yy - FONT * 0.35
                if e.kind == "line":
                    dash = f' stroke-dasharray="{e.dash}"' if e.dash else ""
                    o.append(f'<path d="M{_num(x)} {_num(cy)}h20" stroke="{e.color}" stroke-width="{e.width:g}"{dash} stroke-opacity="{e.opacity:g}"/>')
                elif e.kind == "patch":
                    o.append(f'<rect x="{_num(x + 2)}" y="{_num(cy - 5)}" width="16" height="10" fill="{e.color}" fill-opacity="{e.opacity:g}"/>')
                elif e.kind == "dot":
                    o.append(f'<circle cx="{_num(x + 10)}" cy="{_num(cy)}" r="2.5" fill="{e.color}" fill-opacity="{e.opacity:g}"/>')
                else:
                    o.append(self._markers(np.array([x + 10]), np.array([cy]), e.color, e.marker, 4.0, "#000" if e.marker in "XD" else None, e.hollow, ""))
                o.append(f'<text x="{_num(x + 26)}" y="{_num(yy)}" fill="{INK}">{esc(e.label)}</text>')
                x += w
        return "".join(o), (yy - y) + 6


def line_entry(label: str, color: str, width: float = 2.0, dash: Optional[str] = None) -> LegendEntry:
    return LegendEntry(label, "line", color, width, dash)


def patch_entry(label: str, color: str, opacity: float = 0.85) -> LegendEntry:
    return LegendEntry(label, "patch", color, opacity=opacity)


def marker_entry(label: str, color: str, marker: str = "o", hollow: bool = False) -> LegendEntry:
    return LegendEntry(label, "marker", color, marker=marker, hollow=hollow)


def dot_entry(label: str, color: str, opacity: float = 1.0) -> LegendEntry:
    return LegendEntry(label, "dot", color, opacity=opacity)
