"""Reproductions of the experiments of the source papers, each declared as data.

A reproduction is one module in this package that defines ``EXPERIMENT``, a
`Reproduction`: the base scenario, the grid (named axes such as the AQM and the
RTT, each level a set of overrides), the seeds, a quick variant, the figures to
draw (kinds from `aqmlab.plots.kinds()` with their options), and the paper's
claims, each with the measure of aqmlab's runs to put beside it and a check that
gives the verdict. `aqmlab reproduce NAME` runs the grid as a sweep (resumable, on
local cores or a Dask cluster), draws the figures, and writes ``claims.md`` and
``claims.json`` beside the sweep's index.

Adding a reproduction (docs/reproductions.md): copy ``madpie_proof.py``, change the
data, and add a test that runs its ``--quick`` variant.
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..comparison import Options, Series

# -- declarations ---------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """A named dimension of the grid: level label -> overrides (dotted path -> value)."""

    name: str
    levels: Mapping[str, Mapping[str, Any]]
    note: Mapping[str, str] = field(default_factory=dict)  # why a level is there (e.g. "not in the paper")
    # crossed only with these levels of other axes (axis -> levels); recorded as "–"
    # elsewhere. A level may also set "scenario" to run on another built-in base.
    when: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A figure to draw: output name, kind (aqmlab.plots.kinds()), options."""

    name: str
    kind: str
    title: str
    facet: Optional[str] = None
    where: Mapping[str, Any] = field(default_factory=dict)
    classes: Optional[Sequence[str]] = None  # per-class figures: the traffic classes to keep

    def options(self) -> Options:
        return Options(facet=self.facet, where=dict(self.where), title=self.title, classes=None if self.classes is None else list(self.classes))


# measures: what aqmlab's runs say --------------------------------------------------------


class Measure:
    def value(self, ctx: "Context") -> Optional[tuple[float, Optional[float], int]]:
        """(value, standard deviation across seeds or None, number of runs), or None."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def wheres(self) -> list[Mapping[str, Any]]:
        return [self.where] if hasattr(self, "where") else []

    def __sub__(self, other: "Measure") -> "Measure":
        return Diff(self, other)

    def __truediv__(self, other: "Measure") -> "Measure":
        return Ratio(self, other)


def _where(w: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in w.items())


@dataclass
class Stat(Measure):
    """A figure of summary.json (dotted path), mean ± sd over the seeds of one series."""

    metric: str
    where: Mapping[str, Any]
    scale: float = 1.0

    def value(self, ctx):
        s = ctx.series(self.where)
        if s is None:
            return None
        vals = []
        for r in s.runs:
            v: Any = r.summary
            for p in self.metric.split("."):
                v = v.get(p) if isinstance(v, Mapping) else None
            if v is not None:
                vals.append(float(v) * self.scale)
        if not vals:
            return None
        return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else None), len(vals)

    def describe(self):
        return f"mean over seeds of {self.metric} ({_where(self.where)})"


@dataclass
class Pooled(Measure):
    """A percentile of a distribution pooled over the seeds of one series:
    `what` is "queue_delay" (per packet), "utilization" (per interval) or
    "drop_delay:CAUSE" (queueing delay when drops of CAUSE happened)."""

    what: str
    q: float
    where: Mapping[str, Any]

    def value(self, ctx):
        s = ctx.series(self.where)
        if s is None:
            return None
        if self.what == "queue_delay":
            x = s.queue_delays
        elif self.what == "utilization":
            x = s.utilization
        elif self.what.startswith("drop_delay:"):
            d = s.drops
            x = None if d is None else d[self.what.split(":", 1)[1]]
        else:
            raise KeyError(f"Pooled: unknown distribution {self.what!r}")
        if x is None or not len(x):
            return None
        return float(np.percentile(x, self.q)), None, len(s.runs)

    def describe(self):
        return f"{self.q:g}th percentile of {self.what}, seeds pooled ({_where(self.where)})"


@dataclass
class Diff(Measure):
    a: Measure
    b: Measure

    def value(self, ctx):
        va, vb = self.a.value(ctx), self.b.value(ctx)
        if va is None or vb is None:
            return None
        return va[0] - vb[0], None, min(va[2], vb[2])

    def describe(self):
        return f"({self.a.describe()}) − ({self.b.describe()})"

    def wheres(self):
        return self.a.wheres() + self.b.wheres()


# checks: the verdict ----------------------------------------------------------------


@dataclass
class Check:
    """`approx`: within `tol` of `target` agrees, within 2 tol is close. `below`/`above`:
    on the right side of `target` agrees, within `tol` of it on the wrong side is close."""

    op: str
    target: float
    tol: float = 0.0

    def verdict(self, v: float) -> str:
        if self.op == "approx":
            d = abs(v - self.target)
            return "agrees" if d <= self.tol else "close" if d <= 2 * self.tol else "differs"
        if self.op == "below":
            return "agrees" if v < self.target else "close" if v < self.target + self.tol else "differs"
        if self.op == "above":
            return "agrees" if v > self.target else "close" if v > self.target - self.tol else "differs"
        raise ValueError(self.op)

    def describe(self) -> str:
        sym = {"approx": "≈", "below": "<", "above": ">"}[self.op]
        return f"{sym} {self.target:g}" + (f" (± {self.tol:g})" if self.op == "approx" and self.tol else "")


def approx(target: float, tol: float) -> Check:
    return Check("approx", target, tol)


def below(target: float, tol: float = 0.0) -> Check:
    return Check("below", target, tol)


def above(target: float, tol: float = 0.0) -> Check:
    return Check("above", target, tol)


@dataclass
class Claim:
    """A claim of the paper, its number, and the measure of our runs that answers it."""

    where: str  # section / figure of the paper
    text: str  # the claim, quoted or paraphrased
    paper: str  # the paper's number as it states it
    measure: Measure
    check: Check
    unit: str = ""
    note: str = ""  # what to know when reading the comparison
    digits: int = 1


@dataclass
class Quick:
    seeds: int = 2
    set: Mapping[str, Any] = field(default_factory=dict)
    levels: Mapping[str, Sequence[str]] = field(default_factory=dict)  # axis -> the levels the quick variant keeps (default: all)


@dataclass
class Reproduction:
    name: str
    title: str  # the paper, by authors and title, and the section
    description: str
    scenario: str  # a built-in scenario (or a path)
    axes: Sequence[Axis]
    seeds: int
    figures: Sequence[Figure]
    claims: Sequence[Claim]
    set: Mapping[str, Any] = field(default_factory=dict)
    quick: Quick = field(default_factory=Quick)
    label: Union[str, Callable[[Mapping[str, Any]], str], None] = None  # series label format, e.g. "{AQM}, RTT {RTT}", or a function of the axis values
    seeds_note: str = ""
    notes: Sequence[str] = ()


# -- the registry -----------------------------------------------------------------------


def registry() -> dict[str, Reproduction]:
    out: dict[str, Reproduction] = {}
    for m in pkgutil.iter_modules(__path__):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{m.name}")
        exp = getattr(mod, "EXPERIMENT", None)
        if isinstance(exp, Reproduction):
            out[exp.name] = exp
    return out


def get(name: str) -> Reproduction:
    reg = registry()
    if name not in reg:
        raise KeyError(f"reproduce: no reproduction \"{name}\" (available: {', '.join(reg) or 'none'}; aqmlab reproduce --list)")
    return reg[name]


def print_list(console: Any) -> int:
    from rich.table import Table

    t = Table(title="Reproductions (aqmlab reproduce NAME [--quick])", title_justify="left")
    t.add_column("name")
    t.add_column("experiment")
    t.add_column("runs (quick)")
    for name, e in registry().items():
        # the grids' own counts (axes crossed only with some levels, quick subsets)
        t.add_row(name, e.title, f"{grid_for(e, False).size()} ({grid_for(e, True).size()})")
    console.print(t)
    return 0


# -- running --------------------------------------------------------------------------


class Context:
    """Our runs, as series keyed by the reproduction's axis labels."""

    def __init__(self, series: list[Series]):
        self._series = series

    def series(self, where: Mapping[str, Any]) -> Optional[Series]:
        for s in self._series:
            if all(str(s.runs[0].params.get(k)) == str(v) for k, v in where.items()):
                return s
        return None


@dataclass
class ClaimResult:
    claim: Claim
    value: Optional[float]
    sd: Optional[float]
    runs: int
    verdict: str
    note: str

    def ours(self) -> str:
        if self.value is None:
            return "–"
        d = self.claim.digits
        txt = f"{self.value:.{d}f}" + (f" ± {self.sd:.{d}f}" if self.sd is not None else "")
        return txt + (f" {self.claim.unit}" if self.claim.unit else "")


@dataclass
class ReproductionResult:
    name: str
    out: Path
    claims: list[ClaimResult]
    seconds: float
    runs: int
    failed: int
    report: Path


def grid_for(e: Reproduction, quick: bool, seeds: Optional[int] = None):
    from ..grid import Grid

    g = Grid(scenario=e.scenario, name=e.name + ("-quick" if quick else ""), description=e.title)
    g.set = dict(e.set)
    if quick:
        g.set.update(e.quick.set)
    for a in e.axes:
        keep = {lab: ov for lab, ov in a.levels.items() if not (quick and a.name in e.quick.levels and lab not in e.quick.levels[a.name])}
        g.named(a.name, keep, when=a.when or None)
    n = seeds or (e.quick.seeds if quick else e.seeds)
    g.seeds = list(range(1, n + 1))
    return g


def reproduce(
    name: str,
    *,
    out: Union[str, Path, None] = None,
    quick: bool = False,
    jobs: Optional[int] = None,
    cluster: Any = None,
    seeds: Optional[int] = None,
    progress: Optional[bool] = None,
    force: bool = False,
) -> ReproductionResult:
    """Run reproduction `name`: its sweep, figures, and claims table (docs/reproductions.md).
    A folder that holds another run of it (other seeds, --quick) is refused unless `force`."""
    from .. import comparison, sweeps

    e = get(name)
    out = Path(out) if out else Path("reproductions") / (name + ("-quick" if quick else ""))
    g = grid_for(e, quick, seeds)
    plan = g.plan()
    t0 = time.perf_counter()
    res = sweeps.run_plan(plan, out, jobs=jobs, cluster=cluster, compare=False, progress=progress, label=g.name,
                          extra={"reproduction": name, "quick": quick}, force=force)
    from .. import interrupts

    interrupts.note(f"all {len(plan.runs)} runs are done and indexed in {out}; the claims and the report were not finished (the same command writes them)")
    runs = comparison.find_runs([out])
    series = comparison.group(runs, e.label)
    ctx = Context(series)
    results = evaluate(e, ctx)
    figs = [(f.name, f.kind, f.options()) for f in e.figures]
    intro = _intro_html(e, quick, results, res)
    import sys

    from ..progress import steps

    with steps("figures", sys.stderr.isatty() if progress is None else progress) as step:
        cmp = comparison.compare([out], out, figures=figs, title=f"{e.title}{' (quick)' if quick else ''}", label=e.label, intro_html=intro, runs=runs,
                                 progress=step, parallel=cluster is None)
    write_claims(out, e, results, quick, time.perf_counter() - t0, len(plan.runs), res.failed)
    return ReproductionResult(name, out, results, time.perf_counter() - t0, len(plan.runs), res.failed, cmp.report)


def evaluate(e: Reproduction, ctx: Context) -> list[ClaimResult]:
    out = []
    for c in e.claims:
        v = c.measure.value(ctx)
        if v is None:
            out.append(ClaimResult(c, None, None, 0, "not run", "no data in these runs"))
            continue
        value, sd, n = v
        out.append(ClaimResult(c, value, sd, n, c.check.verdict(value), c.note))
    return out


def claims_markdown(e: Reproduction, results: Sequence[ClaimResult], quick: bool) -> str:
    lines = [
        f"# {e.title}{' (quick)' if quick else ''}",
        "",
        e.description,
        "",
        "| § | the paper says | paper | aqmlab | check | verdict | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.claim
        unit = f" {c.unit}" if c.unit else ""
        lines.append(f"| {c.where} | {c.text} | {c.paper} | {r.ours()} | {c.check.describe()}{unit} | {r.verdict} | {r.note} |")
    lines += ["", "aqmlab: mean ± standard deviation over the seeds of each series, or a percentile of the seeds pooled (see the measure in claims.json)."]
    if e.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in e.notes]
    return "\n".join(lines) + "\n"


def write_claims(out: Path, e: Reproduction, results: Sequence[ClaimResult], quick: bool, seconds: float, runs: int, failed: int) -> None:
    (out / "claims.md").write_text(claims_markdown(e, results, quick), encoding="utf-8")
    data = {
        "reproduction": e.name,
        "title": e.title,
        "quick": quick,
        "runs": runs,
        "failed": failed,
        "seconds": seconds,
        "claims": [
            {
                "where": r.claim.where, "claim": r.claim.text, "paper": r.claim.paper, "unit": r.claim.unit,
                "aqmlab": r.value, "aqmlab_sd": r.sd, "runs": r.runs, "check": r.claim.check.describe(),
                "verdict": r.verdict, "note": r.note, "measure": r.claim.measure.describe(),
            }
            for r in results
        ],
    }
    (out / "claims.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _intro_html(e: Reproduction, quick: bool, results: Sequence[ClaimResult], res: Any) -> str:
    import html

    rows = "".join(
        f"<tr><td>{html.escape(r.claim.where)}</td><td>{html.escape(r.claim.text)}</td><td>{html.escape(r.claim.paper)}</td>"
        f"<td>{html.escape(r.ours())}</td><td class='{r.verdict.replace(' ', '-')}'>{html.escape(r.verdict)}</td><td>{html.escape(r.note)}</td></tr>"
        for r in results
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in e.notes)
    return (
        f"<p>{html.escape(e.description)}</p>"
        + (f"<p class='note'>Quick variant: {e.quick.seeds} seeds, {html.escape(json.dumps(dict(e.quick.set)))}; the full run is <code>aqmlab reproduce {e.name}</code>.</p>" if quick else "")
        + "<h2>The paper's claims beside aqmlab's</h2><table><tr><th>§</th><th>the paper says</th><th>paper</th><th>aqmlab</th><th>verdict</th><th>note</th></tr>"
        + rows + "</table>"
        + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "")
        + f"<p class='meta'>{res.ran} runs ran, {res.skipped} were already done, {res.failed} failed.</p>"
    )


def main(name: str, *, out=None, quick=False, jobs=None, cluster=None, console=None, seeds=None, force=False) -> int:
    r = reproduce(name, out=out, quick=quick, jobs=jobs, cluster=cluster, seeds=seeds, force=force)
    if console is not None:
        from rich.table import Table

        t = Table(title=f"{name}{' (quick)' if quick else ''}: the paper beside aqmlab", title_justify="left")
        for col in ("§", "the paper says", "paper", "aqmlab", "verdict"):
            t.add_column(col)
        colors = {"agrees": "green", "close": "yellow", "differs": "red", "not run": "dim"}
        for c in r.claims:
            t.add_row(c.claim.where, c.claim.text, c.claim.paper, c.ours(), f"[{colors.get(c.verdict, 'white')}]{c.verdict}[/]")
        console.print(t)
        console.print(f"{r.runs} runs ({r.failed} failed) in {r.seconds:.1f} s; wrote {r.out}/claims.md, claims.json, report.html, figures/")
    return 1 if r.failed else 0


# -- measures added for the MADPIE §IV/§V and PIE-slides reproductions ---------------------


def _cached(s: Any, key: Any, make: Callable[[], Any]) -> Any:
    """A series' table read once for all the claims that ask for it."""
    cache = s.__dict__.setdefault("_measure_cache", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _percentile(ctx: "Context", where: Mapping[str, Any], q: float, values: Callable[[Any], Optional[np.ndarray]], scale: float = 1.0):
    """The q-th percentile (times `scale`) of `values(series)` for the series at `where`."""
    s = ctx.series(where)
    if s is None:
        return None
    x = values(s)
    if x is None or not len(x):
        return None
    return float(np.percentile(x, q)) * scale, None, len(s.runs)


@dataclass
class ClassDelay(Measure):
    """A percentile of the queueing delay (ms) of the packets of some traffic classes (by
    class name, e.g. "cbr" or "cbr-100"), every packet of all seeds of a series pooled:
    the CBR percentiles of Kuhn & Ros Figs. 6 and 10."""

    classes: Sequence[str]
    q: float
    where: Mapping[str, Any]

    def value(self, ctx):
        return _percentile(ctx, self.where, self.q, lambda s: _cached(s, ("class_delays", tuple(self.classes)), lambda: s.class_delays(self.classes)))

    def describe(self):
        return f"{self.q:g}th percentile of the queueing delay of classes {', '.join(self.classes)}, seeds pooled ({_where(self.where)})"


@dataclass
class Download(Measure):
    """A percentile of the download time (s, times `scale`) of the completed file
    transfers of a series, seeds pooled; only files of `size_bytes` when given, only the
    classes named when given (Kuhn & Ros Figs. 7 and 11)."""

    q: float
    where: Mapping[str, Any]
    size_bytes: Optional[int] = None
    classes: Sequence[str] = ()
    scale: float = 1.0

    def value(self, ctx):
        return _percentile(ctx, self.where, self.q, self._times, self.scale)

    def _times(self, s) -> Optional[np.ndarray]:
        t = _cached(s, "transfers", s.transfers)
        if t is None:
            return None
        if self.size_bytes is not None:
            t = t[t["size_bytes"].astype("int64") == int(self.size_bytes)]
        if self.classes:
            t = t[t["class"].astype(str).isin(list(self.classes))]
        x = t["download_time_s"].to_numpy(float)
        return x[~np.isnan(x)]

    def describe(self):
        what = f"{self.size_bytes} B files" if self.size_bytes is not None else "all files"
        cls = f" of classes {', '.join(self.classes)}" if self.classes else ""
        return f"{self.q:g}th percentile of the download time of {what}{cls}, seeds pooled, x{self.scale:g} ({_where(self.where)})"


@dataclass
class WindowDelay(Measure):
    """A percentile of the per-packet queueing delay (ms) at the bottleneck between
    `start_s` and `end_s` of each run, seeds pooled (e.g. after a capacity change)."""

    q: float
    where: Mapping[str, Any]
    start_s: float
    end_s: float

    def value(self, ctx):
        return _percentile(ctx, self.where, self.q, self._delays)

    def _delays(self, s) -> np.ndarray:
        from ..measures import DEQUEUES

        parts = []
        for r in s.runs:
            df = r.table("packets", ["time_s", "sojourn_ms"], DEQUEUES)
            if df is None:
                continue
            t = df["time_s"].to_numpy(float)
            parts.append(df["sojourn_ms"].to_numpy(float)[(t >= self.start_s) & (t < self.end_s)])
        return np.concatenate(parts) if parts else np.array([])

    def describe(self):
        return f"{self.q:g}th percentile of the queueing delay in [{self.start_s:g}, {self.end_s:g}) s, seeds pooled ({_where(self.where)})"


@dataclass
class Extreme(Measure):
    """The smallest (`op="min"`) or largest (`op="max"`) value of several measures:
    "for every file size", "higher than with any of the AQMs"."""

    op: str
    parts: Sequence[Measure]

    def value(self, ctx):
        vals = [m.value(ctx) for m in self.parts]
        if any(v is None for v in vals):
            return None
        pick = min if self.op == "min" else max
        best = pick(vals, key=lambda v: v[0])
        return best[0], None, min(v[2] for v in vals)

    def describe(self):
        return f"{self.op} of [" + "; ".join(m.describe() for m in self.parts) + "]"

    def wheres(self):
        return [w for m in self.parts for w in m.wheres()]


def smallest(*parts: Measure) -> Measure:
    return Extreme("min", parts)


def largest(*parts: Measure) -> Measure:
    return Extreme("max", parts)


@dataclass
class Reduction(Measure):
    """How much lower `b` is than `a`, in % of `a`: 100 (a − b) / a ("a latency
    reduction of 13 % for the 75th percentiles")."""

    a: Measure
    b: Measure

    def value(self, ctx):
        va, vb = self.a.value(ctx), self.b.value(ctx)
        if va is None or vb is None or va[0] == 0:
            return None
        return 100.0 * (va[0] - vb[0]) / va[0], None, min(va[2], vb[2])

    def describe(self):
        return f"100 × (({self.a.describe()}) − ({self.b.describe()})) / ({self.a.describe()})"

    def wheres(self):
        return self.a.wheres() + self.b.wheres()


# -- measures added for seeds 002-004 (appended) ------------------------------------------


@dataclass
class PerRun(Measure):
    """`fn(run)` (an `aqmlab.Run`) for each run of one series, mean ± sd over the seeds;
    `what` names it in claims.json. For figures summary.json does not hold (a class's
    loss from the packet records, a receiver's revert time from the flow series)."""

    fn: Callable[[Any], Optional[float]]
    where: Mapping[str, Any]
    what: str

    def _values(self, ctx) -> Optional[dict[int, float]]:
        s = ctx.series(self.where)
        if s is None:
            return None
        out = {}
        for r in s.runs:
            v = self.fn(r)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                out[r.seed] = float(v)
        return out or None

    def value(self, ctx):
        v = self._values(ctx)
        if not v:
            return None
        x = list(v.values())
        return float(np.mean(x)), (float(np.std(x, ddof=1)) if len(x) > 1 else None), len(x)

    def describe(self):
        return f"mean over seeds of {self.what} ({_where(self.where)})"


@dataclass
class SeedRatio(Measure):
    """a / b seed by seed (the runs of two series paired by their seed), mean ± sd:
    e.g. the CE-mark rate with ECN over the drop rate without it (Khademi, Ros & Welzl)."""

    a: PerRun
    b: PerRun

    def value(self, ctx):
        va, vb = self.a._values(ctx), self.b._values(ctx)
        if not va or not vb:
            return None
        x = [va[k] / vb[k] for k in sorted(set(va) & set(vb)) if vb[k]]
        if not x:
            return None
        return float(np.mean(x)), (float(np.std(x, ddof=1)) if len(x) > 1 else None), len(x)

    def describe(self):
        return f"seed by seed ({self.a.describe()}) / ({self.b.describe()})"

    def wheres(self):
        return self.a.wheres() + self.b.wheres()


@dataclass
class Ratio(Measure):
    """The ratio of two measures' values (means over seeds)."""

    a: Measure
    b: Measure

    def value(self, ctx):
        va, vb = self.a.value(ctx), self.b.value(ctx)
        if va is None or vb is None or not vb[0]:
            return None
        return va[0] / vb[0], None, min(va[2], vb[2])

    def describe(self):
        return f"({self.a.describe()}) / ({self.b.describe()})"

    def wheres(self):
        return self.a.wheres() + self.b.wheres()


def levels_label(skip: Sequence[str] = ()) -> Callable[[Mapping[str, Any]], str]:
    """A series label: the axis levels of the series joined by commas, leaving out the
    axes named in `skip` and the axes not crossed with it ("–")."""
    from ..grid import NOT_CROSSED

    def label(values: Mapping[str, Any]) -> str:
        return ", ".join(str(v) for k, v in values.items() if k not in skip and str(v) != NOT_CROSSED)

    return label
