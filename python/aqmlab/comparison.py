"""Runs side by side: `aqmlab compare DIR...`, the report of a sweep, and the report of
a single run (the comparison of one run).

Inputs are run folders (docs/outputs.md), sweep folders (docs/sweeps.md) or runs in
memory. Runs whose scenarios differ only in the seed form one *series*, pooled over
its seeds (as Kuhn & Ros pool their 20 repetitions); series are labelled by what
differs between them (a sweep's parameters, else the fields of scenario.json that
differ) and keep one colour in every figure. The figures are the kinds of
`aqmlab.plots`; the figures' data come from `aqmlab.measures`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import measures
from .folders import Run, find_runs  # noqa: F401  (re-exported: aqmlab.comparison.Run)
from .measures import transfer_rates  # noqa: F401  (re-exported for the reproductions)
from .plots import KINDS as FIGURES  # noqa: F401  (the figure kinds, by their former name here)
from .plots import Options  # noqa: F401

Label = Union[str, Callable[[Mapping[str, Any]], str], None]


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, Mapping):
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}{k}."))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out.update(_flat(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = d
    return out


# -- series -------------------------------------------------------------------------


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _short(key: str) -> str:
    parts = key.split(".")
    if len(parts) > 1 and parts[-1] == "kind":
        return parts[-2]
    return parts[-1]


@dataclass(eq=False)
class Series:
    """Runs that differ only in their seed, pooled."""

    runs: list[Run]
    values: dict[str, Any] = field(default_factory=dict)  # what sets this series apart
    color: str = "black"
    fmt: Union[str, Callable[[Mapping[str, Any]], str], None] = None  # label format, or a function of the values

    def label(self, exclude: Iterable[str] = ()) -> str:
        ex = set(exclude)
        vals = {k: v for k, v in self.values.items() if k not in ex}
        if callable(self.fmt):
            return self.fmt({k: _fmt_value(v) for k, v in self.values.items() if k not in ex})
        if self.fmt and not ex:
            try:
                return self.fmt.format(**{k.replace(".", "_"): _fmt_value(v) for k, v in self.values.items()})
            except (KeyError, IndexError, ValueError):
                pass
        if not vals:
            return self.aqm if not ex else ""
        return ", ".join(f"{_short(k)}={_fmt_value(v)}" if _short(k) not in ("aqm",) or not isinstance(v, str) else _fmt_value(v) for k, v in vals.items())

    @property
    def aqm(self) -> str:
        return str(measures.headline(self.runs[0].summary)["aqm"])

    @property
    def seeds(self) -> list[int]:
        return sorted(r.seed for r in self.runs)

    @property
    def first(self) -> Run:
        return min(self.runs, key=lambda r: r.seed)

    def get(self, key: str) -> Any:
        """A series value by name (a sweep parameter or a scenario field)."""
        if key in self.values:
            return self.values[key]
        if key in self.runs[0].params:
            return self.runs[0].params[key]
        return _flat(self.runs[0].scenario).get(key)

    # pooled data (cached): each run's measures (aqmlab.measures), concatenated -----------
    def _pool(self, fn: Callable[[Any], Optional[np.ndarray]]) -> Optional[np.ndarray]:
        parts = [v for v in (fn(r) for r in self.runs) if v is not None]
        return np.concatenate(parts) if parts else None

    def queue_delays_at(self, link: str = "bottleneck") -> Optional[np.ndarray]:
        """Per-packet queueing delay (ms) at `link` after the warm-up, seeds pooled."""
        return self._cached(("queue", link), lambda: self._pool(lambda r: measures.queue_delays(r, link)))

    @property
    def queue_delays(self) -> Optional[np.ndarray]:
        return self.queue_delays_at("bottleneck")

    def class_delays(self, classes: Iterable[str], link: str = "bottleneck") -> Optional[np.ndarray]:
        names = list(classes)
        return self._cached(("class", link, tuple(names)), lambda: self._pool(lambda r: measures.queue_delays(r, link, names)))

    def utilization_at(self, link: str = "bottleneck") -> Optional[np.ndarray]:
        return self._cached(("util", link), lambda: self._pool(lambda r: measures.utilization(r, link)))

    @property
    def utilization(self) -> Optional[np.ndarray]:
        return self.utilization_at("bottleneck")

    def drops_at(self, link: str = "bottleneck") -> Optional[dict[str, np.ndarray]]:
        """Queueing delay (ms) at each drop at `link`, by cause, seeds pooled."""

        def pooled():
            per = [d for d in (measures.drop_delays(r, link) for r in self.runs) if d is not None]
            return {c: np.concatenate([d[c] for d in per]) for c in measures.CAUSE_NAMES} if per else None

        return self._cached(("drops", link), pooled)

    @property
    def drops(self) -> Optional[dict[str, np.ndarray]]:
        return self.drops_at("bottleneck")

    def goodput_delay(self, link: str = "bottleneck") -> Optional[np.ndarray]:
        """RFC 7928 §2.7 points (delay ms, goodput Mbps) of every run."""
        return self._cached(("gd", link), lambda: self._pool(lambda r: measures.goodput_delay_points(r, link)))

    def classes_of(self, kinds: Optional[Sequence[str]]) -> list[str]:
        """Traffic classes of the given flow kinds (all with None), in order of appearance."""
        names: list[str] = []
        for r in self.runs:
            for n, k in measures.class_kinds(r).items():
                if (kinds is None or k in kinds) and n not in names:
                    names.append(n)
        return names

    def flow_goodputs(self, kinds: Optional[Sequence[str]] = None) -> dict[str, np.ndarray]:
        """Per-flow goodput (Mbps) over each flow's active time, by class, seeds pooled."""
        out: dict[str, list[np.ndarray]] = {}
        for r in self.runs:
            for c, v in measures.flow_goodputs(r, kinds).items():
                out.setdefault(c, []).append(v)
        return {c: np.concatenate(v) for c, v in out.items()}

    def interval_goodputs(self, kinds: Sequence[str], classes: Optional[Sequence[str]] = None) -> Optional[np.ndarray]:
        return self._pool(lambda r: measures.interval_goodputs(r, kinds, classes))

    def transfers(self) -> Optional[Any]:
        """Finished file transfers (class, size_bytes, download_time_s), seeds pooled."""
        import pandas as pd

        parts = [t for t in (measures.transfers(r) for r in self.runs) if t is not None]
        return pd.concat(parts, ignore_index=True) if parts else None

    def _cached(self, key: Any, fn: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = fn()
        return self._memo[key]

    @cached_property
    def _memo(self) -> dict[Any, Any]:
        return {}


def group(runs: Sequence[Run], label: Union[str, Callable[[Mapping[str, Any]], str], None] = None) -> list[Series]:
    """Pool runs that differ only in their seed; label series by what differs."""
    buckets: dict[str, list[Run]] = {}
    for r in runs:
        sc = {**{k: v for k, v in r.scenario.items() if k != "seed"}, "engine": _engine(r)}
        key = json.dumps(sc, sort_keys=True)
        buckets.setdefault(key, []).append(r)
    series = [Series(rs) for rs in buckets.values()]
    # labels: sweep parameters when every series has the same ones, else scenario fields
    pkeys = [tuple(s.runs[0].params) for s in series]
    if series and all(pkeys) and len(set(pkeys)) == 1:
        keys = [k for k in pkeys[0] if k != "seed" and len({_fmt_value(s.runs[0].params[k]) for s in series}) > 1]
        for s in series:
            s.values = {k: s.runs[0].params[k] for k in keys}
    else:
        flats = [_flat({**{k: v for k, v in s.runs[0].scenario.items() if k not in ("seed", "description")}, "engine": _engine(s.runs[0])}) for s in series]
        allk = [k for k in dict.fromkeys(k for f in flats for k in f)]
        common = [k for k in allk if all(k in f for f in flats)]
        diff = [k for k in common if len({json.dumps(f[k]) for f in flats}) > 1]
        if len(diff) > 1 and "name" in diff:
            diff.remove("name")
        if not diff:
            diff = [k for k in allk if len({json.dumps(f.get(k)) for f in flats}) > 1 and k != "name"]
        for s, f in zip(series, flats):
            s.values = {k: f.get(k, "–") for k in diff}
        if len({s.label() for s in series}) < len(series):
            for s in series:
                s.values = {"run": s.first.name}
    from .plots import palette

    for s, c in zip(series, palette(len(series))):
        s.color = c
        s.fmt = label
    return series




def _engine(r: Any) -> str:
    return getattr(r, "engine", "simulator")


# -- the headline table ---------------------------------------------------------------


def headline(series: list[Series]):
    """One row per series: mean (and standard deviation) over its seeds."""
    import pandas as pd

    cols = measures.headline_columns([r.summary for s in series for r in s.runs])
    rows = []
    for s in series:
        row: dict[str, Any] = {"series": s.label(), "aqm": s.aqm, "runs": len(s.runs)}
        for name, path, _ in cols:
            row[name], row[name + " sd"] = measures.headline_values([r.summary for r in s.runs], path)
        rows.append(row)
    return pd.DataFrame(rows)


def table_markdown(df) -> str:
    """The headline table as Markdown (what `aqmlab compare` prints)."""
    from .report import cell

    digits = {n: d for n, _, d in measures.HEADLINE}
    cols = [c for c in df.columns if not c.endswith(" sd")]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(cell(row[c], row.get(c + " sd"), digits.get(c, 2)) for c in cols) + " |")
    return "\n".join(lines)


# -- the comparison -------------------------------------------------------------------


@dataclass
class CompareResult:
    out: Path
    report: Path
    figures: list[tuple[str, list[str], str]]
    table: Any
    series: list[Series]


FigureRequest = Union[str, tuple[str, str, Options]]


def compare(
    dirs: Sequence[Union[str, "os.PathLike[str]", Run]],
    out: Union[str, "os.PathLike[str]"],
    *,
    figures: Optional[Sequence[FigureRequest]] = None,
    title: str = "Comparison",
    label: Label = None,
    intro_html: str = "",
    quiet: bool = False,
    runs: Optional[list[Run]] = None,
    progress: Optional[Callable[[int, int, str], None]] = None,
    files: bool = True,
    parallel: bool = False,
    on_started: Optional[Callable[[], None]] = None,
) -> CompareResult:
    """Put runs side by side: a headline table (series.csv) and figures, in report.html.

    `dirs` are run folders, sweep folders or `Run`s; `figures` lists figure kinds
    (`aqmlab.plots.kinds()`) or (file name, kind, Options) triples, by default every
    default kind, each skipped when its data is absent. report.html draws the figures
    as SVG (`aqmlab.plots.draw_svg`: no matplotlib, a few milliseconds each); a kind
    without an SVG drawing is embedded as a PNG. With `files`, every figure is also
    written to figures/NAME.png by matplotlib. `progress` is called as (done, total,
    figure name) while the figures are drawn. With `parallel` a forked process draws
    half of the PNGs (see `render`); `on_started` is called once that process exists
    (at once when there are no PNGs to draw), so that the caller may start threads of
    its own.
    """
    from . import plots, report

    out = Path(out)
    runs = runs if runs is not None else find_runs(dirs)
    if not runs:
        raise FileNotFoundError("compare: no finished runs in " + ", ".join(str(d) for d in dirs))
    series = group(runs, label)
    out.mkdir(parents=True, exist_ok=True)
    requests = [(f, f, Options()) if isinstance(f, str) else f for f in (figures if figures is not None else plots.default_kinds())]
    n = len(requests)
    svgs: list[Optional[str]] = [None] * n
    pngs: list[Optional[bytes]] = [None] * n
    has_svg = [plots.KINDS[kind].svg is not None for _, kind, _ in requests]
    as_png = [i for i in range(n) if files or not has_svg[i]]
    if progress:
        progress(0, n, "")
    done = 0
    if as_png:
        def png_progress(k: int, total: int, name: str) -> None:
            if progress and k:
                progress(min(k, n), n, name)

        got = render(series, [requests[i] for i in as_png], progress=png_progress, parallel=parallel, on_started=on_started)
        for i, png in zip(as_png, got):
            pngs[i] = png
        done = len(as_png)
    elif on_started:
        on_started()
    for i, (name, kind, o) in enumerate(requests):
        if not has_svg[i] or (files and pngs[i] is None):  # no data: matplotlib drew nothing either
            continue
        svgs[i] = plots.draw_svg(kind, series, o, ident=f"fig{i}-{kind}")
        if i not in as_png:
            done += 1
            if progress:
                progress(done, n, name)
    table = headline(series)
    drawn = []
    for i, (name, kind, _) in enumerate(requests):
        if svgs[i] is None and pngs[i] is None:
            continue
        paths = []
        if files and pngs[i] is not None:
            (out / "figures").mkdir(exist_ok=True)
            _write_bytes(out / "figures" / f"{name}.png", pngs[i])
            paths.append(f"figures/{name}.png")
        drawn.append((name, paths, plots.KINDS[kind].caption, svgs[i] if svgs[i] is not None else pngs[i]))
    if files:
        _write_text(out / "series.csv", table.to_csv(index=False))
    page = report.page(title, series, table, [(n, cap, fig) for n, _, cap, fig in drawn], intro_html=intro_html, base=out)
    path = out / "report.html"
    _write_text(path, page)
    return CompareResult(out, path, [(n, p, c) for n, p, c, _ in drawn], table, series)


def _write_text(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    """The whole file or the old one: an interruption leaves no half-written file (a
    temporary left by a forced exit is removed when a sweep starts again)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _draw_png(series: list[Series], req: tuple[str, str, Options]) -> Optional[bytes]:
    from . import plots

    fig = plots.draw(req[1], series, req[2])
    return None if fig is None else plots.png_bytes(fig)


def render(series: list[Series], requests: Sequence[tuple[str, str, Options]], *, progress: Optional[Callable[[int, int, str], None]] = None,
           parallel: bool = False, on_started: Optional[Callable[[], None]] = None, child_timeout_s: float = 60.0) -> list[Optional[bytes]]:
    """The PNG of each requested figure (None where the runs lack its data).

    With `parallel` (and `os.fork`), a forked child draws every other figure while
    this process draws the rest: matplotlib holds the GIL, so a second core needs a
    second process, and a fork shares the runs' tables without copying or pickling
    them. The child returns its PNGs through a pipe; a child that fails or does not
    answer within `child_timeout_s` is killed and its figures are drawn here."""
    import threading

    n = len(requests)
    out: list[Optional[bytes]] = [None] * n
    done = 0

    def tick(name: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, n, name)

    if progress:
        progress(0, n, "")
    theirs: list[int] = []
    pid, rfd = None, None
    if parallel and n >= 4 and hasattr(os, "fork"):
        for t in threading.enumerate():  # no import half-done in another thread at the fork
            if t.name.startswith("aqmlab-prewarm"):
                t.join()
        theirs = list(range(1, n, 2))
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: draw, send, leave without running the parent's cleanup
            code = 1
            try:
                os.close(rfd)
                import pickle

                data = pickle.dumps({i: _draw_png(series, requests[i]) for i in theirs})
                with os.fdopen(wfd, "wb") as w:
                    w.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(wfd)
    if on_started:
        on_started()
    for i in range(n):
        if i not in theirs:
            out[i] = _draw_png(series, requests[i])
            tick(requests[i][0])
    if pid is not None:
        got = _collect(pid, rfd, child_timeout_s)
        for i in theirs:
            out[i] = got[i] if got is not None and i in got else _draw_png(series, requests[i])
            tick(requests[i][0])
    return out


def _collect(pid: int, rfd: int, timeout_s: float) -> Optional[dict[int, Optional[bytes]]]:
    """Read the child's answer (None if it failed or timed out) and reap it."""
    import pickle
    import select
    import signal
    import time

    chunks = []
    deadline = time.monotonic() + timeout_s
    ok = True
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([rfd], [], [], left)[0]:
                ok = False
                os.kill(pid, signal.SIGKILL)
                break
            b = os.read(rfd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(rfd)
        _, status = os.waitpid(pid, 0)
    if not ok or status != 0:
        return None
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a truncated answer: draw those figures here
        return None
