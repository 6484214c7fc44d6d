"""Runs side by side: `aqmlab compare DIR...` and the report of a sweep.

Inputs are run folders (docs/outputs.md) or sweep folders (docs/sweeps.md). Runs
whose scenarios differ only in the seed form one *series*, pooled over its seeds (as
Kuhn & Ros pool their 20 repetitions); series are labelled by what differs between
them (a sweep's parameters, else the fields of scenario.json that differ).

The figures are declared as data (`FIGURES`: name, title, caption, drawing
function), in the styles of the source papers, and each reads only the tables it
needs: absent data (no CBR class, no file transfers, per-packet rows off) simply
skips the figure. Every figure is written as PNG and SVG with axes, units and a
legend, so that it stands on its own.

| figure | source |
|---|---|
| `queue_delay_cdf` | Kuhn & Ros, MADPIE, Fig. 2a/2c |
| `utilization_cdf` | Kuhn & Ros, Fig. 2b/2d |
| `queue_delay_time` | Kuhn & Ros, Fig. 3 (small multiples, one run per series) |
| `drop_causes` | Kuhn & Ros, Fig. 4 (share of each drop cause vs the queueing delay at the drop) |
| `goodput` | per-flow goodput per class (box plots) |
| `cbr_goodput_delay` | Kuhn & Ros, Fig. 6 (CBR goodput vs queueing-delay percentiles) |
| `download_times` | Kuhn & Ros, Fig. 7 (download time by file size, 5/25/50/75/95th percentiles) |
| `bulk_goodput_cdf` | Kuhn & Ros, Fig. 8 (CDF of the bulk flows' goodput per second) |
| `flow_traces` | Popovsky (Palermo), per-connection sequence, RTT and in-flight traces |
| `transfer_rate_by_size` | Popovsky Figs. 5-6 (rate of a late transfer against its size) |
| `class_metrics` | Jou, Tan & Baras Tables III-IV (loss, delay, rate per traffic class) |
| `download_time_by_size` | Jou, Tan & Baras Fig. 9 (small-file delivery time, mean and sd) |
| `backlog_time` | Jou, Tan & Baras Fig. 10 (queue length over time) |
| `drop_prob_time` | Jou, Tan & Baras Fig. 11 (dropping probability over time) |
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import metrics

DEQUEUES = [("link", "=", "bottleneck"), ("event", "=", "dequeue")]
MAX_SAMPLES_PER_RUN = 100_000  # per-packet values kept per run for pooled distributions
CDF_POINTS = 2_000

BULK_KINDS = ("bulk",)
CBR_KINDS = ("cbr",)
FILE_KINDS = ("files", "web", "transfer")


# -- loading ------------------------------------------------------------------------


class Run:
    """One run folder: its summary, scenario, sweep parameters, and lazily its tables."""

    def __init__(self, path: Path, params: Optional[dict[str, Any]] = None):
        self.path = Path(path)
        self.summary: dict[str, Any] = json.loads((self.path / "summary.json").read_text())
        sc = self.path / "scenario.json"
        self.scenario: dict[str, Any] = json.loads(sc.read_text()) if sc.exists() else {"name": self.summary.get("scenario"), "seed": self.summary.get("seed")}
        # what ran it, so that an emulated run (aqmlab emulate) and a simulated run of
        # the same scenario form two series
        em = self.summary.get("emulation")
        self.scenario["engine"] = f"Linux {em.get('kernel', '')}".strip() if em else "simulator"
        self.params = dict(params or {})
        self._tables: dict[tuple[str, tuple[str, ...]], Any] = {}

    @property
    def seed(self) -> int:
        return int(self.summary.get("seed", 0))

    @property
    def name(self) -> str:
        return self.path.name

    def table(self, name: str, columns: Sequence[str], filters: Optional[list[tuple[str, str, Any]]] = None):
        """A pandas DataFrame of `columns` of NAME.parquet (rows matching `filters`,
        pyarrow's [(column, op, value)]), or None if the file or a column is absent."""
        key = (name, tuple(columns), repr(filters))
        if key not in self._tables:
            import pyarrow.parquet as pq

            p = self.path / f"{name}.parquet"
            df = None
            if p.exists():
                have = set(pq.read_schema(p).names)
                if set(columns) <= have and all(f[0] in have for f in filters or []):
                    df = pq.read_table(p, columns=list(columns), filters=filters).to_pandas()
            self._tables[key] = df
        return self._tables[key]

    def histogram_sample(self, name: str) -> Optional[np.ndarray]:
        """Values (ms) that follow a streaming histogram of the run (histograms.parquet):
        its quantiles at evenly spaced probabilities, interpolated inside each bucket,
        as many as the histogram counts up to MAX_SAMPLES_PER_RUN, so that the run
        weighs in a pooled CDF as its packets would."""
        df = self.table("histograms", ["name", "lo_ms", "hi_ms", "count"])
        if df is None:
            return None
        d = df[df["name"].astype(str) == name]
        total = int(d["count"].sum())
        if not total:
            return None
        cum = np.concatenate([[0.0], np.cumsum(d["count"].to_numpy(float))]) / total
        edges = np.concatenate([[d["lo_ms"].iloc[0]], d["hi_ms"].to_numpy(float)])
        n = min(total, MAX_SAMPLES_PER_RUN)
        return np.interp((np.arange(n) + 0.5) / n, cum, edges)

    def warmup_s(self) -> float:
        try:
            return metrics._ns(self.scenario["metrics"]["warmup"]) / 1e9
        except (KeyError, TypeError):
            return 0.0

    def class_kinds(self) -> dict[str, str]:
        return {name: c.get("kind", "") for name, c in self.summary.get("classes", {}).items()}

    def class_packets(self) -> Optional[dict[str, dict[str, float]]]:
        """Per class at the bottleneck after the warm-up (Jou, Tan & Baras Tables III-IV):
        `loss_pct` (packets dropped over packets arriving), `delay_s` (mean queueing delay
        of the packets sent on), `rate_kBps` (bytes sent on per second, kB = 1000 B)."""
        if "_class_packets" not in self._tables:
            df = self.table("packets", ["time_s", "class", "uid", "size_bytes", "event", "sojourn_ms"], [("link", "=", "bottleneck")])
            out = None
            if df is not None:
                df = df[df["time_s"] >= self.warmup_s()]
                span = max(float(self.summary["sim_seconds"]) - self.warmup_s(), 1e-9)
                out = {}
                for cls, d in df.groupby(df["class"].astype(str), sort=False):
                    ev = d["event"].astype(str)
                    arrived = d.loc[ev.isin(["enqueue", "drop"]), "uid"].nunique()
                    dropped = int((ev == "drop").sum())
                    deq = d[ev == "dequeue"]
                    out[str(cls)] = {
                        "loss_pct": 100.0 * dropped / arrived if arrived else float("nan"),
                        "delay_s": float(deq["sojourn_ms"].mean()) / 1e3 if len(deq) else float("nan"),
                        "rate_kBps": float(deq["size_bytes"].sum()) / span / 1e3,
                    }
            self._tables["_class_packets"] = out  # type: ignore[index]
        return self._tables["_class_packets"]  # type: ignore[index]


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


def find_runs(dirs: Iterable[Union[str, os.PathLike[str]]]) -> list[Run]:
    """Run folders and the finished runs of sweep folders, in the order given."""
    runs: list[Run] = []
    for d in dirs:
        d = Path(d)
        if (d / "summary.json").exists():
            runs.append(Run(d))
        elif (d / "index.parquet").exists() or (d / "runs").is_dir():
            runs.extend(_sweep_runs(d))
        else:
            raise FileNotFoundError(f"{d}: neither a run folder (summary.json) nor a sweep folder (index.parquet)")
    return runs


def _sweep_runs(d: Path) -> list[Run]:
    idx = d / "index.parquet"
    if idx.exists():
        import pyarrow.parquet as pq

        df = pq.read_table(idx).to_pandas()
        pcols = [c for c in df.columns if c.startswith("param.")]
        out = []
        for _, row in df.iterrows():
            rd = d / row["dir"]
            if row["status"] == "ok" and (rd / "summary.json").exists():
                params = {c[len("param."):]: row[c] for c in pcols}
                out.append(Run(rd, {k: (None if (isinstance(v, float) and math.isnan(v)) else v) for k, v in params.items()}))
        return out
    return [Run(p) for p in sorted((d / "runs").iterdir()) if (p / "summary.json").exists()]


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


@dataclass
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
        return str(self.runs[0].summary["bottleneck"]["aqm"])

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

    # pooled data (cached) ------------------------------------------------------------
    @cached_property
    def queue_delays(self) -> Optional[np.ndarray]:
        """Per-packet sojourn (ms) at the bottleneck, after the warm-up, pooled. A run
        without packet rows (summaries only) contributes its streaming histogram
        instead (the whole run: histograms have no warm-up)."""
        parts = []
        for r in self.runs:
            df = r.table("packets", ["time_s", "sojourn_ms"], DEQUEUES)
            if df is not None and len(df):
                parts.append(_thin(df.loc[df["time_s"] >= r.warmup_s(), "sojourn_ms"].to_numpy(float)))
            elif (h := r.histogram_sample("bottleneck.sojourn")) is not None:  # packet rows off
                parts.append(h)
        return np.concatenate(parts) if parts else None

    def class_delays(self, classes: Iterable[str]) -> Optional[np.ndarray]:
        names = set(classes)
        parts = []
        for r in self.runs:
            df = r.table("packets", ["time_s", "class", "sojourn_ms"], DEQUEUES)
            if df is None:
                continue
            sel = (df["time_s"] >= r.warmup_s()) & df["class"].astype(str).isin(names)
            parts.append(_thin(df.loc[sel, "sojourn_ms"].to_numpy(float)))
        return np.concatenate(parts) if parts else None

    @cached_property
    def utilization(self) -> Optional[np.ndarray]:
        parts = []
        for r in self.runs:
            link = r.table("timeseries", ["time_s", "utilization"], [("scope", "=", "link"), ("link", "=", "bottleneck")])
            if link is None:
                continue
            link = link.sort_values("time_s")
            try:
                interval = metrics._ns(r.scenario["record"]["interval"])
                window = metrics._ns(r.scenario["metrics"]["utilization_interval"])
            except (KeyError, TypeError):
                continue
            k = max(1, window // interval)
            u = link["utilization"].to_numpy(float)
            t = link["time_s"].to_numpy(float)
            n = len(u) // k
            if n == 0:
                continue
            means = u[: n * k].reshape(n, k).mean(axis=1)
            ends = t[: n * k].reshape(n, k)[:, -1]
            parts.append(means[ends - window / 1e9 >= r.warmup_s() - 1e-9])
        return np.concatenate(parts) if parts else None

    @cached_property
    def drops(self) -> Optional[dict[str, np.ndarray]]:
        """Queueing delay (ms, backlog / rate) at each drop, by cause, pooled."""
        out: dict[str, list[np.ndarray]] = {"overflow": [], "random": [], "deterministic": []}
        seen = False
        for r in self.runs:
            d = r.table("packets", ["cause", "backlog_bytes"], [("link", "=", "bottleneck"), ("event", "=", "drop")])
            if d is None:
                continue
            seen = True
            rate_bps = r.summary["bottleneck"]["rate_mbps"] * 1e6
            delay = d["backlog_bytes"].to_numpy(float) * 8 / rate_bps * 1e3
            cause = d["cause"].astype(object).to_numpy()
            for c in out:
                out[c].append(delay[cause == c])
        if not seen:
            return None
        return {c: (np.concatenate(v) if v else np.array([])) for c, v in out.items()}

    def classes_of(self, kinds: Sequence[str]) -> list[str]:
        names: list[str] = []
        for r in self.runs:
            for n, k in r.class_kinds().items():
                if k in kinds and n not in names:
                    names.append(n)
        return names

    def flow_goodputs(self, kinds: Optional[Sequence[str]] = None) -> dict[str, np.ndarray]:
        """Per-flow goodput (Mbps) over each flow's active time, by class."""
        out: dict[str, list[float]] = {}
        for r in self.runs:
            df = r.table("flows", ["class", "kind", "goodput_mbps"])
            if df is None:
                continue
            if kinds is not None:
                df = df[df["kind"].isin(kinds)]
            for cls, sub in df.groupby(df["class"].astype(str), sort=False):
                out.setdefault(str(cls), []).extend(sub["goodput_mbps"].to_numpy(float))
        return {k: np.asarray(v) for k, v in out.items()}

    def interval_goodputs(self, kinds: Sequence[str], classes: Optional[Sequence[str]] = None) -> Optional[np.ndarray]:
        """Per-flow goodput (Mbps) per `metrics.goodput_interval`, flows of `kinds` (and of
        the named `classes` when given), pooled."""
        parts = []
        for r in self.runs:
            fl = r.table("flows", ["flow", "kind", "class"])
            ts = r.table("timeseries", ["time_s", "flow", "goodput_mbps"], [("scope", "=", "flow")])
            if fl is None or ts is None:
                continue
            keep = fl["kind"].isin(kinds)
            if classes is not None:
                keep &= fl["class"].astype(str).isin(list(classes))
            ids = set(fl.loc[keep, "flow"].tolist())
            f = ts[ts["flow"].isin(ids) & (ts["time_s"] > r.warmup_s())]
            if f.empty:
                continue
            try:
                gi = metrics._ns(r.scenario["metrics"]["goodput_interval"]) / 1e9
            except (KeyError, TypeError):
                gi = 1.0
            bucket = np.floor((f["time_s"].to_numpy(float) - 1e-9) / gi)
            g = f.assign(bucket=bucket).groupby(["flow", "bucket"])["goodput_mbps"].mean()
            parts.append(g.to_numpy(float))
        return np.concatenate(parts) if parts else None

    def transfers(self) -> Optional[Any]:
        """File transfers: `size_bytes`, `download_time_s`, `class`; from transfers.parquet
        when the runs have one, else from finite flows of a file kind in flows.parquet."""
        import pandas as pd

        parts = []
        for r in self.runs:
            t = r.table("transfers", ["class", "size_bytes", "download_time_s"])
            if t is None:
                fl = r.table("flows", ["class", "kind", "start_s", "end_s", "bytes_delivered"])
                if fl is None:
                    continue
                fl = fl[fl["kind"].isin(FILE_KINDS) & fl["end_s"].notna()]
                if fl.empty:
                    continue
                t = pd.DataFrame({"class": fl["class"].astype(str), "size_bytes": fl["bytes_delivered"], "download_time_s": fl["end_s"] - fl["start_s"]})
            parts.append(t[t["download_time_s"].notna()])
        if not parts:
            return None
        df = pd.concat(parts, ignore_index=True)
        return df if not df.empty else None


def _thin(x: np.ndarray) -> np.ndarray:
    """At most MAX_SAMPLES_PER_RUN values, every k-th (keeps the distribution)."""
    if len(x) <= MAX_SAMPLES_PER_RUN:
        return x
    return x[:: int(math.ceil(len(x) / MAX_SAMPLES_PER_RUN))]


def group(runs: Sequence[Run], label: Union[str, Callable[[Mapping[str, Any]], str], None] = None) -> list[Series]:
    """Pool runs that differ only in their seed; label series by what differs."""
    buckets: dict[str, list[Run]] = {}
    for r in runs:
        sc = {k: v for k, v in r.scenario.items() if k != "seed"}
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
        flats = [_flat({k: v for k, v in s.runs[0].scenario.items() if k not in ("seed", "description")}) for s in series]
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
    palette = _palette(len(series))
    for s, c in zip(series, palette):
        s.color = c
        s.fmt = label
    return series


def _palette(n: int) -> list[str]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [matplotlib.colors.to_hex(cmap(i % cmap.N)) for i in range(n)]


# -- figures ------------------------------------------------------------------------


@dataclass
class Options:
    """How a declared figure is drawn: `facet` splits panels by a series value,
    `where` keeps the series whose values match, `title` replaces the default."""

    facet: Optional[str] = None
    where: dict[str, Any] = field(default_factory=dict)
    title: Optional[str] = None
    max_panels: int = 12
    classes: Optional[list[str]] = None  # traffic classes (by name) a per-class figure keeps; None: all


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plots import STYLE

    return plt, STYLE


def _ecdf_points(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return x, x
    if len(x) <= CDF_POINTS:
        xs = np.sort(x)
        return xs, np.arange(1, len(xs) + 1) / len(xs)
    p = np.linspace(0, 1, CDF_POINTS)
    return np.quantile(x, p), p


def _facets(series: list[Series], opt: Options) -> list[tuple[str, list[Series]]]:
    if not opt.facet:
        return [("", series)]
    out: dict[str, list[Series]] = {}
    for s in series:
        out.setdefault(_fmt_value(s.get(opt.facet)), []).append(s)
    return list(out.items())[: opt.max_panels]


def _panel_colors(panels: list[tuple[str, list[Series]]], opt: Options) -> dict[int, str]:
    """Series colours; with facets, one colour per label within a panel, the same in every
    panel (e.g. RTT 500 ms has one colour in the PIE and the MADPIE panels)."""
    if not opt.facet:
        return {id(s): s.color for _, g in panels for s in g}
    labels = list(dict.fromkeys(s.label(exclude=[opt.facet]) for _, g in panels for s in g))
    pal = dict(zip(labels, _palette(len(labels))))
    return {id(s): pal[s.label(exclude=[opt.facet])] for _, g in panels for s in g}


def _grid_axes(plt, n: int, width: float = 4.2, height: float = 3.4, sharex=True, sharey=True):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    # room between rows for the x labels of each panel and the titles of the next row
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols + 0.6, height * rows + 0.4), sharex=sharex, sharey=sharey, squeeze=False,
                             gridspec_kw={"hspace": 0.45} if rows > 1 else None)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _seeds_note(series: list[Series]) -> str:
    ns = sorted({len(s.runs) for s in series})
    return f"{ns[0]} seed{'s' if ns[0] > 1 else ''} per series" if len(ns) == 1 else f"{ns[0]}–{ns[-1]} seeds per series"


def _cdf_figure(series: list[Series], opt: Options, values: Callable[[Series], Optional[np.ndarray]], xlabel: str, ylabel: str, title: str, clip_pct: Optional[float], xlim=None, legend="lower right"):
    data = [(s, values(s)) for s in series]
    data = [(s, v) for s, v in data if v is not None and len(v)]
    if not data:
        return None
    plt, STYLE = _plt()
    panels = _facets([s for s, _ in data], opt)
    vals = {id(s): v for s, v in data}
    colors = _panel_colors(panels, opt)
    with plt.rc_context(STYLE):
        fig, axes = _grid_axes(plt, len(panels), sharex=xlim is not None)
        for ax, (name, group_) in zip(axes, panels):
            # each panel its own range (the AQMs of a paper's figure differ by 10x), ending at
            # the 99.5th percentile of its widest series so that a few outliers do not squash it
            hi = max(np.nanpercentile(vals[id(s)], clip_pct) for s in group_) * 1.05 if clip_pct else None
            for s in group_:
                x, y = _ecdf_points(vals[id(s)])
                ax.plot(x, y, color=colors[id(s)], lw=1.5, label=s.label(exclude=[opt.facet] if opt.facet else []) or s.label())
            ax.set_ylim(0, 1.01)
            if xlim:
                ax.set_xlim(*xlim)
            else:
                ax.set_xlim(left=0, right=hi if hi and hi > 0 else None)
            ax.set_xlabel(xlabel)
            if opt.facet:
                ax.set_title(f"{_short(opt.facet)} = {name}")
            ax.legend(loc=legend)
        axes[0].set_ylabel(ylabel)
        for ax in axes[1:]:
            if ax.get_subplotspec().is_first_col():
                ax.set_ylabel(ylabel)
        fig.suptitle(opt.title or f"{title} ({_seeds_note([s for s, _ in data])}, pooled)", fontsize=10)
        return fig


def queue_delay_cdf(series: list[Series], opt: Options):
    return _cdf_figure(series, opt, lambda s: s.queue_delays, "queueing delay at the bottleneck (ms)", "CDF (fraction of packets)", "Queueing delay per packet", 99.5)


def utilization_cdf(series: list[Series], opt: Options):
    return _cdf_figure(series, opt, lambda s: s.utilization, "bottleneck utilization (fraction of each interval)", "CDF (fraction of intervals)", "Bottleneck utilization", None, xlim=(0, 1.02), legend="upper left")


def queue_delay_time(series: list[Series], opt: Options):
    runs = [(s, s.first) for s in series][: opt.max_panels]
    data = []
    for s, r in runs:
        d = r.table("packets", ["time_s", "sojourn_ms"], DEQUEUES)
        if d is None:
            continue
        step = max(1, len(d) // 30_000)
        data.append((s, r, d["time_s"].to_numpy(float)[::step], d["sojourn_ms"].to_numpy(float)[::step]))
    if not data:
        return None
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        cols = 1 if len(data) <= 3 else 2
        rows = math.ceil(len(data) / cols)
        # the y axis ends at the 99.9th percentile (a start-up burst would flatten the rest);
        # one scale for all panels unless it would flatten one of them
        tops = [float(np.nanpercentile(d, 99.9)) * 1.1 if len(d) else 1.0 for _, _, _, d in data]
        shared = max(tops) <= 1.5 * max(min(tops), 1e-9)
        fig, axes = plt.subplots(rows, cols, figsize=(7.5 * cols, 2.3 * rows + 0.6), sharex=True, squeeze=False)
        flat = axes.ravel()
        for ax in flat[len(data):]:
            ax.set_visible(False)
        for ax, (s, r, t, d), top in zip(flat, data, tops):
            ax.scatter(t, d, s=1, color=s.color, alpha=0.5, rasterized=True)
            ax.set_title(f"{s.label()} (seed {r.seed})", fontsize=9)
            ax.set_ylim(0, (max(tops) if shared else top) or 1)
            ax.set_xlim(0, r.summary["sim_seconds"])
        for ax in flat[: len(data)]:
            if ax.get_subplotspec().is_first_col():
                ax.set_ylabel("queueing delay (ms)")
            if ax.get_subplotspec().is_last_row() or ax is flat[len(data) - 1]:
                ax.set_xlabel("time (s)")
                ax.tick_params(labelbottom=True)
        fig.suptitle(opt.title or "Queueing delay over time (per-packet sojourn, one run per series)", fontsize=10)
        return fig


CAUSES = ("overflow", "random", "deterministic")
CAUSE_COLORS = {"overflow": "#7f7f7f", "random": "#1f77b4", "deterministic": "#d62728"}
MARKERS = "osD^v<>pPX*h"


def drop_causes(series: list[Series], opt: Options):
    """Kuhn & Ros Fig. 4: for each series and cause, the share r_x of drops (y) and the
    5th-95th percentile range of the queueing delay when those drops happened (x), with
    the median marked."""
    data = [(s, s.drops) for s in series]
    data = [(s, d) for s, d in data if d is not None and sum(len(v) for v in d.values())]
    if not data:
        return None
    plt, STYLE = _plt()
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 4.6))
        for i, (s, d) in enumerate(data):
            total = sum(len(v) for v in d.values())
            m = MARKERS[i % len(MARKERS)]
            for c in CAUSES:
                v = d[c]
                if not len(v):
                    continue
                share = len(v) / total
                p5, p50, p95 = np.percentile(v, [5, 50, 95])
                ls = "-" if i % 2 == 0 else "--"
                ax.plot([p5, p95], [share, share], color=CAUSE_COLORS[c], lw=2, ls=ls, alpha=0.85)
                ax.plot([p50], [share], marker=m, color=CAUSE_COLORS[c], ms=7, mec="black", mew=0.6)
        cause_h = [Line2D([], [], color=CAUSE_COLORS[c], lw=2, label=f"{c} drops") for c in CAUSES if any(len(d[c]) for _, d in data)]
        ser_h = [Line2D([], [], color="black", marker=MARKERS[i % len(MARKERS)], ls="-" if i % 2 == 0 else "--", lw=1, label=s.label()) for i, (s, _) in enumerate(data)]
        leg = ax.legend(handles=cause_h, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="cause (colour)")
        ax.add_artist(leg)
        ax.legend(handles=ser_h, loc="upper left", bbox_to_anchor=(1.01, 0.62), title="series (marker = median)")
        ax.set_xlabel("queueing delay when the drop occurred (ms): 5th–95th percentile, median marked")
        ax.set_ylabel("share of the drops r_x")
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlim(left=0)
        ax.set_title(opt.title or f"Drop causes and queueing delay at the drop ({_seeds_note([s for s, _ in data])}, pooled)")
        return fig


def goodput(series: list[Series], opt: Options):
    data = [(s, s.flow_goodputs()) for s in series]
    data = [(s, g) for s, g in data if g]
    if not data:
        return None
    classes = list(dict.fromkeys(c for _, g in data for c in g))
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(classes), figsize=(max(5.0, 1.0 + 0.8 * len(data)) * len(classes), 4.2), squeeze=False)
        for ax, cls in zip(axes[0], classes):
            rows = [(s, g[cls]) for s, g in data if cls in g and len(g[cls])]
            bp = ax.boxplot([v for _, v in rows], whis=(5, 95), showfliers=False, patch_artist=True, widths=0.6)
            for patch, (s, _) in zip(bp["boxes"], rows):
                patch.set_facecolor(s.color)
                patch.set_alpha(0.6)
            for med in bp["medians"]:
                med.set_color("black")
            ax.set_xticks(range(1, len(rows) + 1), [s.label() for s, _ in rows], rotation=30, ha="right")
            ax.set_ylabel("per-flow goodput (Mbps)")
            ax.set_title(f"class {cls}")
        fig.suptitle(opt.title or "Per-flow goodput (boxes: 25/50/75th percentiles, whiskers 5th/95th)", fontsize=10)
        return fig


CBR_PCTS = (5, 25, 50, 75, 95)


def cbr_goodput_delay(series: list[Series], opt: Options):
    """Kuhn & Ros Fig. 6: for each series, the CBR flows' mean goodput (y) against the
    percentiles of their packets' queueing delay (x: 5, 25, 50, 75, 95th)."""
    data = []
    for s in series:
        cls = [c for c in s.classes_of(CBR_KINDS) if opt.classes is None or c in opt.classes]
        if not cls:
            continue
        d = s.class_delays(cls)
        g = s.flow_goodputs(CBR_KINDS)
        vals = np.concatenate([g[c] for c in cls if c in g]) if g else np.array([])
        if d is None or not len(d) or not len(vals):
            continue
        data.append((s, np.percentile(d, CBR_PCTS), float(vals.mean()) * 1000))
    if not data:
        return None
    plt, STYLE = _plt()
    panels = _facets([s for s, _, _ in data], opt)
    by = {id(s): (p, g) for s, p, g in data}
    colors = _panel_colors(panels, opt)
    with plt.rc_context(STYLE):
        fig, axes = _grid_axes(plt, len(panels), width=4.8, height=3.6)
        for ax, (name, grp) in zip(axes, panels):
            for i, s in enumerate(grp):
                p, g = by[id(s)]
                ax.plot(p, [g] * len(p), color=colors[id(s)], lw=1.2, marker="|", ms=12, mew=1.5, label=s.label(exclude=[opt.facet] if opt.facet else []) or s.label())
                ax.plot([p[2]], [g], "o", color=colors[id(s)], ms=5)
                if i == 0:
                    for pc, x in zip(CBR_PCTS, p):
                        ax.annotate(f"{pc}", (x, g), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7, color="#444")
            ax.set_xlabel("queueing delay of the CBR packets (ms)\n(5/25/50/75/95th percentiles)")
            ax.set_xlim(left=0)
            if opt.facet:
                ax.set_title(f"{_short(opt.facet)} = {name}")
            ax.legend(loc="best")
        axes[0].set_ylabel("mean goodput per CBR flow (kbps)")
        fig.suptitle(opt.title or "CBR traffic: goodput against queueing-delay percentiles", fontsize=10)
        return fig


def download_times(series: list[Series], opt: Options):
    """Kuhn & Ros Fig. 7: download time by file size, one box per series, boxes at the
    25/50/75th percentiles and whiskers at the 5th and 95th."""
    data = [(s, s.transfers()) for s in series]
    if opt.classes is not None:
        data = [(s, None if t is None else t[t["class"].astype(str).isin(list(opt.classes))]) for s, t in data]
    data = [(s, t) for s, t in data if t is not None and not t.empty]
    if not data:
        return None
    sizes = sorted({int(x) for _, t in data for x in t["size_bytes"].unique()})
    if len(sizes) > 12:  # continuous sizes (e.g. Pareto): bin them
        edges = np.unique(np.quantile(np.concatenate([t["size_bytes"].to_numpy(float) for _, t in data]), np.linspace(0, 1, 7)))
        label_of = lambda x: int(np.searchsorted(edges[1:-1], x, side="right"))  # noqa: E731
        names = [f"{edges[i] / 1e3:.0f}–{edges[i + 1] / 1e3:.0f} kB" for i in range(len(edges) - 1)]
    else:
        label_of = sizes.index  # type: ignore[assignment]
        names = [f"{x / 1e3:.0f} kB" for x in sizes]
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6.4, 1.3 * len(names) * max(1, len(data)) * 0.6), 4.4))
        width = 0.8 / len(data)
        for i, (s, t) in enumerate(data):
            groups = [[] for _ in names]
            for sz, dt in zip(t["size_bytes"].to_numpy(float), t["download_time_s"].to_numpy(float)):
                groups[label_of(sz)].append(dt)
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
            ax.plot([], [], color=s.color, lw=6, alpha=0.6, label=s.label())
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_xlabel("file size")
        ax.set_ylabel("download time (s)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left")
        ax.set_title(opt.title or "Download time by file size (boxes 25/50/75th, whiskers 5th/95th percentile)")
        return fig


def bulk_goodput_cdf(series: list[Series], opt: Options):
    """Kuhn & Ros Fig. 8: CDF of the bulk flows' goodput, per flow and per interval."""
    if not any(s.classes_of(BULK_KINDS) for s in series):
        return None
    return _cdf_figure(series, opt, lambda s: s.interval_goodputs(BULK_KINDS, opt.classes), "goodput of a bulk flow per interval (Mbps)", "CDF (fraction of flow-intervals)", "Goodput of the bulk flows", 99.5)


def flow_traces(series: list[Series], opt: Options, max_flows: int = 5):
    """Popovsky (Palermo) style: per-connection delivered data, RTT and in-flight."""
    data = []
    for s in series[:4]:
        r = s.first
        # per-ACK traces (record.flow_trace) when the run has them, else the sampled series
        tr = r.table("flow_trace", ["time_s", "flow", "acked_bytes", "rtt_ms", "in_flight_segments"])
        if tr is not None and not tr.empty:
            f = tr.rename(columns={"acked_bytes": "delivered_bytes"})
        else:
            f = r.table("timeseries", ["time_s", "flow", "delivered_bytes", "rtt_ms", "in_flight_segments"], [("scope", "=", "flow")])
        if f is None or f.empty:
            continue
        data.append((s, r, f))
    if not data:
        return None
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(3, len(data), figsize=(4.6 * len(data) + 0.6, 7.4), sharex="col", squeeze=False)
        for j, (s, r, f) in enumerate(data):
            flows = sorted(f["flow"].dropna().unique())[:max_flows]
            for fl in flows:
                x = f[f["flow"] == fl]
                axes[0, j].plot(x["time_s"], x["delivered_bytes"] / 1e6, lw=0.9, label=f"flow {int(fl)}")
                axes[1, j].plot(x["time_s"], x["rtt_ms"], lw=0.7)
                axes[2, j].plot(x["time_s"], x["in_flight_segments"], lw=0.7)
            axes[0, j].set_title(f"{s.label()} (seed {r.seed})", fontsize=9)
            axes[2, j].set_xlabel("time (s)")
            axes[0, j].legend(loc="upper left", fontsize=7)
        axes[0, 0].set_ylabel("delivered (MB)")
        axes[1, 0].set_ylabel("RTT sample (ms)")
        axes[2, 0].set_ylabel("in flight (segments)")
        fig.suptitle(opt.title or "Per-connection traces: data delivered, RTT and data in flight", fontsize=10)
        return fig


CLASS_METRICS = (("loss_pct", "packet loss (%)"), ("delay_s", "mean queueing delay (s)"), ("rate_kBps", "rate (kB/s)"))


def class_metrics(series: list[Series], opt: Options):
    """Jou, Tan & Baras Tables III-IV as bars: loss, mean queueing delay and rate of each
    traffic class at the bottleneck after the warm-up, one bar per series (mean over
    seeds, error bar one standard deviation)."""
    data = []
    for s in series:
        per = [r.class_packets() for r in s.runs]
        per = [p for p in per if p]
        if per:
            data.append((s, per))
    if not data:
        return None
    classes = list(dict.fromkeys(c for _, per in data for p in per for c in p))
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.2), squeeze=False)
        width = 0.8 / len(data)
        for ax, (key, ylabel) in zip(axes[0], CLASS_METRICS):
            for i, (s, per) in enumerate(data):
                vals = [[p[c][key] for p in per if c in p] for c in classes]
                means = [float(np.nanmean(v)) if v else np.nan for v in vals]
                sds = [float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0 for v in vals]
                x = np.arange(len(classes)) - 0.4 + width * (i + 0.5)
                ax.bar(x, means, width * 0.9, yerr=sds, color=s.color, label=s.label(), capsize=2)
            ax.set_xticks(range(len(classes)), classes)
            ax.set_xlabel("traffic class")
            ax.set_ylabel(ylabel)
        axes[0][0].legend(loc="upper left", fontsize=7)
        fig.suptitle(opt.title or f"Loss, delay and rate per traffic class ({_seeds_note([s for s, _ in data])}, mean ± sd)", fontsize=10)
        return fig


def download_time_by_size(series: list[Series], opt: Options, max_kb: float = 160.0, bin_kb: float = 10.0):
    """Jou, Tan & Baras Fig. 9: mean and standard deviation of the download time of the
    files up to `max_kb`, in bins of `bin_kb` by file size, one line per series."""
    data = [(s, s.transfers()) for s in series]
    data = [(s, t) for s, t in data if t is not None]
    if not data:
        return None
    edges = np.arange(0.0, max_kb + bin_kb, bin_kb)
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 4.4))
        for i, (s, t) in enumerate(data):
            kb = t["size_bytes"].to_numpy(float) / 1e3
            dt = t["download_time_s"].to_numpy(float)
            idx = np.digitize(kb, edges) - 1
            xs, ms, sd = [], [], []
            for b in range(len(edges) - 1):
                v = dt[idx == b]
                if len(v) >= 3:
                    xs.append((edges[b] + edges[b + 1]) / 2 + (i - (len(data) - 1) / 2) * bin_kb * 0.12)
                    ms.append(v.mean())
                    sd.append(v.std(ddof=1))
            ax.errorbar(xs, ms, yerr=sd, color=s.color, marker="o", ms=4, lw=1.3, capsize=2, label=s.label())
        ax.set_xlabel(f"file size (kB, bins of {bin_kb:g} kB)")
        ax.set_ylabel("download time (s): mean ± sd")
        ax.set_xlim(0, max_kb)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left")
        ax.set_title(opt.title or f"Small file delivery time by size ({_seeds_note([s for s, _ in data])}, pooled)")
        return fig


def _link_series(r: Run):
    ts = r.table("timeseries", ["time_s", "backlog_bytes", "drop_prob", "arrivals", "drops_overflow", "drops_random", "drops_deterministic"], [("scope", "=", "link"), ("link", "=", "bottleneck")])
    return None if ts is None or ts.empty else ts.sort_values("time_s")


def _time_panels(series: list[Series], opt: Options, draw_one: Callable[[Any, Series, Run, Any], None], ylabel: str, title: str):
    runs = [(s, s.first) for s in series][: opt.max_panels]
    data = [(s, r, _link_series(r)) for s, r in runs]
    data = [(s, r, ts) for s, r, ts in data if ts is not None]
    if not data:
        return None
    plt, STYLE = _plt()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(data), 1, figsize=(8.0, 2.5 * len(data) + 0.6), sharex=True, squeeze=False)
        for ax, (s, r, ts) in zip(axes[:, 0], data):
            draw_one(ax, s, r, ts)
            ax.set_title(f"{s.label()} (seed {r.seed})", fontsize=9)
            ax.set_ylabel(ylabel)
            ax.set_xlim(0, r.summary["sim_seconds"])
            ax.legend(loc="upper left", fontsize=7, frameon=True, framealpha=0.85)
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(opt.title or title, fontsize=10)
        return fig


EWMA_TAU_S = 2.0  # time constant of the moving averages of backlog_time / drop_prob_time


def _ewma(t: np.ndarray, x: np.ndarray, tau_s: float = EWMA_TAU_S) -> np.ndarray:
    """Exponentially weighted moving average of samples x at times t, time constant tau_s
    (the weight of a sample is 1 - exp(-dt / tau_s), whatever the record interval)."""
    out = np.empty_like(x, dtype=float)
    acc = float(x[0]) if len(x) else 0.0
    prev = float(t[0]) if len(t) else 0.0
    for i, (ti, v) in enumerate(zip(t, x)):
        w = 1.0 - math.exp(-max(float(ti) - prev, 0.0) / tau_s)
        acc = (1 - w) * acc + w * float(v)
        prev = float(ti)
        out[i] = acc
    return out


def backlog_time(series: list[Series], opt: Options):
    """Jou, Tan & Baras Fig. 10: the bottleneck's queue length over time (kB, each record
    interval) and its moving average, one run per series; the fixed RED thresholds of
    the scenario are drawn when it has them."""

    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        q = ts["backlog_bytes"].to_numpy(float) / 1e3
        ax.plot(t, q, color=s.color, lw=0.5, alpha=0.6, label="queue length")
        ax.plot(t, _ewma(t, q), color="black", lw=1.0, label=f"moving average (EWMA, {EWMA_TAU_S:g} s time constant)")
        aqm = (r.scenario.get("bottleneck") or {}).get("aqm") or {}
        if aqm.get("kind") in ("ared", "red") and not aqm.get("sliding"):
            for k, ls in (("min_th", ":"), ("max_th", "--")):
                v = aqm.get(k)
                if isinstance(v, str) and v.upper().endswith("KB"):
                    ax.axhline(float(v[:-2]), color="grey", ls=ls, lw=1, label=k)
        ax.set_ylim(bottom=0)

    return _time_panels(series, opt, one, "queue length (kB)", "Queue length at the bottleneck over time (one run per series)")


def drop_prob_time(series: list[Series], opt: Options):
    """Jou, Tan & Baras Fig. 11: the AQM's dropping probability over time (its value at
    each record interval) and its moving average, one run per series."""

    def one(ax, s, r, ts):
        t = ts["time_s"].to_numpy(float)
        p = ts["drop_prob"].to_numpy(float)
        ax.plot(t, p, color=s.color, lw=0.5, alpha=0.6, label="Inst. P (AQM's probability)")
        ax.plot(t, _ewma(t, np.nan_to_num(p)), color="black", lw=1.0, label=f"Avg. P (EWMA, {EWMA_TAU_S:g} s time constant)")
        ax.set_ylim(bottom=0)

    return _time_panels(series, opt, one, "dropping probability", "Dropping probability over time (one run per series)")


def transfer_rates(r: Run, classes: Optional[Sequence[str]] = None) -> list[tuple[float, float, bool]]:
    """(size in bytes, average rate in Mbps, finished) of each single transfer of a run
    (flows of kind "transfer"): size over download time when it finished, else the
    bytes delivered by the end of the run over the time since its request."""
    t = r.table("transfers", ["flow", "class", "size_bytes", "request_s", "download_time_s"])
    fl = r.table("flows", ["flow", "kind", "bytes_delivered"])
    if t is None or fl is None:
        return []
    single = set(fl.loc[fl["kind"] == "transfer", "flow"].tolist())
    got = dict(zip(fl["flow"], fl["bytes_delivered"]))
    end = float(r.summary["sim_seconds"])
    out = []
    for flow, cls, size, req, dt in zip(t["flow"], t["class"].astype(str), t["size_bytes"].astype(float), t["request_s"].astype(float), t["download_time_s"].astype(float)):
        if flow not in single or (classes is not None and cls not in classes):
            continue
        if dt == dt and dt > 0:  # finished
            out.append((size, size * 8 / dt / 1e6, True))
        elif end > req:
            out.append((size, got.get(flow, 0) * 8 / (end - req) / 1e6, False))
    return out


def transfer_rate_by_size(series: list[Series], opt: Options):
    """Popovsky Figs. 5-6: the average rate of a late transfer (size / download time)
    against its size, one line per value of the series key named by `facet` (the
    experiment), points at the sizes run, mean over seeds; a hollow marker where the
    transfer had not finished by the end of the run (its rate so far)."""
    key = opt.facet
    lines: dict[str, list[tuple[float, float, bool]]] = {}
    for s in series:
        rows = [x for r in s.runs for x in transfer_rates(r)]
        if not rows:
            continue
        name = _fmt_value(s.get(key)) if key else s.label()
        for sz in sorted({x[0] for x in rows}):
            sel = [x for x in rows if x[0] == sz]
            lines.setdefault(name, []).append((sz, float(np.mean([x[1] for x in sel])), all(x[2] for x in sel)))
    if not lines:
        return None
    plt, STYLE = _plt()
    pal = _palette(len(lines))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 4.4))
        for (name, pts), c in zip(lines.items(), pal):
            pts = sorted(pts)
            ax.plot([p[0] / 1e3 for p in pts], [p[1] for p in pts], color=c, lw=1.5, label=name)
            for p in pts:
                ax.plot([p[0] / 1e3], [p[1]], marker="o", color=c, mfc=c if p[2] else "white", ms=6)
        if any(not p[2] for pts in lines.values() for p in pts):
            ax.plot([], [], marker="o", color="grey", mfc="white", ls="", label="not finished by the end of the run (rate so far)")
        ax.set_xscale("log")
        ax.set_xlabel("size of the late transfer (kB, log scale)")
        ax.set_ylabel("average rate of the late transfer (Mbps)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize=8)
        ax.set_title(opt.title or "Average rate of a late transfer against its size")
        return fig


@dataclass(frozen=True)
class FigureSpec:
    name: str
    draw: Callable[[list[Series], Options], Any]
    caption: str


FIGURES: dict[str, FigureSpec] = {
    f.name: f
    for f in [
        FigureSpec("queue_delay_cdf", queue_delay_cdf, "CDF of the per-packet queueing delay at the bottleneck, seeds pooled (Kuhn & Ros, MADPIE Fig. 2a/2c); a run without packet rows enters through its streaming histogram (whole run, within 0.4 %). The x axis ends at the 99.5th percentile of the widest series."),
        FigureSpec("utilization_cdf", utilization_cdf, "CDF of the bottleneck utilization per `metrics.utilization_interval` (1 s by default), seeds pooled (Kuhn & Ros Fig. 2b/2d)."),
        FigureSpec("queue_delay_time", queue_delay_time, "Per-packet queueing delay over time, one run (the lowest seed) per series (Kuhn & Ros Fig. 3); each y axis ends just above the panel's 99.9th percentile, so a start-up burst may be cut."),
        FigureSpec("drop_causes", drop_causes, "Share r_x of each drop cause (y) and the queueing delay (backlog / link rate) when those drops happened: a bar from the 5th to the 95th percentile with the median marked (Kuhn & Ros Fig. 4)."),
        FigureSpec("goodput", goodput, "Goodput of each flow over its active time, per class; boxes at the 25/50/75th percentiles, whiskers at the 5th and 95th."),
        FigureSpec("cbr_goodput_delay", cbr_goodput_delay, "CBR flows: mean goodput per flow against the 5/25/50/75/95th percentiles of their packets' queueing delay (Kuhn & Ros Fig. 6)."),
        FigureSpec("download_times", download_times, "File download times by file size; boxes at the 25/50/75th percentiles, whiskers at the 5th and 95th (Kuhn & Ros Fig. 7)."),
        FigureSpec("bulk_goodput_cdf", bulk_goodput_cdf, "CDF of the goodput of each bulk flow per `metrics.goodput_interval` (Kuhn & Ros Fig. 8)."),
        FigureSpec("class_metrics", class_metrics, "Packet loss, mean queueing delay and rate (kB/s) of each traffic class at the bottleneck after the warm-up; mean over seeds, error bars one standard deviation (Jou, Tan & Baras Tables III-IV)."),
        FigureSpec("download_time_by_size", download_time_by_size, "Download time of the files up to 160 kB by size (10 kB bins, at least 3 files per point): mean and standard deviation, seeds pooled (Jou, Tan & Baras Fig. 9)."),
        FigureSpec("backlog_time", backlog_time, "Queue length at the bottleneck per record interval and its moving average, one run per series; fixed RED thresholds dashed (Jou, Tan & Baras Fig. 10)."),
        FigureSpec("drop_prob_time", drop_prob_time, "The AQM's dropping probability per record interval and its moving average, one run per series (Jou, Tan & Baras Fig. 11)."),
        FigureSpec("transfer_rate_by_size", transfer_rate_by_size, "Average rate (size over download time) of a late-arriving transfer against its size, one line per experiment; hollow markers: not finished by the end of the run, rate so far (Popovsky Figs. 5-6)."),
        FigureSpec("flow_traces", flow_traces, "Per-connection traces of one run per series: data delivered, RTT samples, segments in flight (Popovsky, Palermo Figs. 2-6)."),
    ]
}

# the experiment-specific kinds (Jou et al., Popovsky Figs. 5-6) are drawn when a
# reproduction asks for them, not by default
DEFAULT_FIGURES = [n for n in FIGURES if n not in ("class_metrics", "download_time_by_size", "backlog_time", "drop_prob_time", "transfer_rate_by_size")]


def _matches(value: Any, want: Any) -> bool:
    if isinstance(want, (list, tuple, set)):
        return any(_fmt_value(value) == _fmt_value(w) for w in want)
    return _fmt_value(value) == _fmt_value(want)


def draw(name: str, series: list[Series], out: Path, opt: Optional[Options] = None, kind: Optional[str] = None) -> list[str]:
    """Draw figure `kind` (default: `name`) into out/figures/NAME.{png,svg}; [] if no data."""
    opt = opt or Options()
    spec = FIGURES[kind or name]
    sel = [s for s in series if all(_matches(s.get(k), v) for k, v in opt.where.items())]
    if not sel:
        return []
    fig = spec.draw(sel, opt)
    if fig is None:
        return []
    plt, _ = _plt()
    d = out / "figures"
    d.mkdir(parents=True, exist_ok=True)
    files = []
    from .plots import save_figure

    for ext in ("png", "svg"):
        p = d / f"{name}.{ext}"
        save_figure(fig, p, dpi=150 if ext == "png" else None, bbox_inches="tight")
        files.append(f"figures/{p.name}")
    plt.close(fig)
    return files


# -- the headline table ---------------------------------------------------------------

HEADLINE = [
    ("queue p50 (ms)", "bottleneck.queue_delay_ms.p50", 1),
    ("queue p90 (ms)", "bottleneck.queue_delay_ms.p90", 1),
    ("queue p95 (ms)", "bottleneck.queue_delay_ms.p95", 1),
    ("queue p99 (ms)", "bottleneck.queue_delay_ms.p99", 1),
    ("queue max (ms)", "bottleneck.queue_delay_ms.max", 1),
    ("utilization", "bottleneck.utilization.mean", 3),
    ("drop rate (%)", "bottleneck.drop_rate", 2),
    ("overflow share", "bottleneck.drop_shares.overflow", 2),
    ("random share", "bottleneck.drop_shares.random", 2),
    ("deterministic share", "bottleneck.drop_shares.deterministic", 2),
]


def _get(d: Mapping[str, Any], path: str) -> Any:
    for p in path.split("."):
        if not isinstance(d, Mapping) or p not in d:
            return None
        d = d[p]
    return d


def headline(series: list[Series]):
    """One row per series: mean (and standard deviation) over its seeds."""
    import pandas as pd

    rows = []
    classes = list(dict.fromkeys(c for s in series for r in s.runs for c in r.summary.get("classes", {})))
    for s in series:
        row: dict[str, Any] = {"series": s.label(), "aqm": s.aqm, "runs": len(s.runs)}
        cols = list(HEADLINE) + [(f"{c} goodput (Mbps)", f"classes.{c}.goodput_mbps", 2) for c in classes]
        for name, path, _ in cols:
            vals = [_get(r.summary, path) for r in s.runs]
            vals = [float(v) for v in vals if v is not None]
            scale = 100 if path.endswith("drop_rate") else 1
            row[name] = float(np.mean(vals)) * scale if vals else None
            row[name + " sd"] = float(np.std(vals, ddof=1)) * scale if len(vals) > 1 else None
        rows.append(row)
    return pd.DataFrame(rows)


def _table_html(df, digits: Mapping[str, int]) -> str:
    cols = [c for c in df.columns if not c.endswith(" sd")]
    out = ["<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"]
    for _, row in df.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if isinstance(v, float):
                if math.isnan(v):
                    cells.append("–")
                    continue
                d = digits.get(c, 2)
                sd = row.get(c + " sd")
                txt = f"{v:.{d}f}" + (f" ± {sd:.{d}f}" if isinstance(sd, float) and not math.isnan(sd) else "")
                cells.append(txt)
            else:
                cells.append(html.escape(str(v)))
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def table_markdown(df) -> str:
    digits = {n: d for n, _, d in HEADLINE}
    cols = [c for c in df.columns if not c.endswith(" sd")]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if isinstance(v, float):
                d = digits.get(c, 2)
                sd = row.get(c + " sd")
                cells.append("–" if math.isnan(v) else f"{v:.{d}f}" + (f" ± {sd:.{d}f}" if isinstance(sd, float) and not math.isnan(sd) else ""))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- the report ---------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1150px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #555; }
.meta { color: #555; font-size: 0.9em; } .note { background: #fff8e0; padding: 0.5em 0.8em; }
.agrees { color: #1a7f37; } .differs { color: #b42318; } .close { color: #9a6700; } .skipped { color: #777; }
"""


@dataclass
class CompareResult:
    out: Path
    report: Path
    figures: list[tuple[str, list[str], str]]
    table: Any
    series: list[Series]


def compare(
    dirs: Sequence[Union[str, os.PathLike[str]]],
    out: Union[str, os.PathLike[str]],
    *,
    figures: Optional[Sequence[Union[str, tuple[str, str, Options]]]] = None,
    title: str = "Comparison",
    label: Union[str, Callable[[Mapping[str, Any]], str], None] = None,
    intro_html: str = "",
    quiet: bool = False,
    runs: Optional[list[Run]] = None,
) -> CompareResult:
    """Put runs side by side: a headline table (series.csv) and figures, in report.html.

    `figures` lists figure kinds (names of FIGURES) or (file name, kind, Options)
    triples; by default every kind, each skipped when its data is absent.
    """
    out = Path(out)
    runs = runs if runs is not None else find_runs(dirs)
    if not runs:
        raise FileNotFoundError("compare: no finished runs in " + ", ".join(str(d) for d in dirs))
    series = group(runs, label)
    out.mkdir(parents=True, exist_ok=True)
    table = headline(series)
    _atomic_write(out / "series.csv", table.to_csv(index=False))
    drawn = []
    from . import interrupts

    for f in figures if figures is not None else DEFAULT_FIGURES:
        interrupts.check()
        name, kind, opt = (f, f, Options()) if isinstance(f, str) else f
        files = draw(name, series, out, opt, kind)
        if files:
            drawn.append((name, files, FIGURES[kind].caption))
    digits = {n: d for n, _, d in HEADLINE}
    body = [
        f"<h1>{html.escape(title)}</h1>",
        intro_html,
        f"<p class='meta'>{len(runs)} runs in {len(series)} series · {_seeds_note(series)} · values are means over seeds ± standard deviation</p>",
        "<h2>Headline figures</h2>",
        _table_html(table, digits),
        "<h2>Figures</h2>",
    ]
    for name, files, caption in drawn:
        svg = next(f for f in files if f.endswith(".svg"))
        body.append(f"<figure><img src='{svg}' alt='{html.escape(name)}'><figcaption><b>{html.escape(name)}</b>: {html.escape(caption)} Files: {', '.join(files)}</figcaption></figure>")
    body.append("<h2>Series</h2><table><tr><th>series</th><th>seeds</th><th>run folders</th></tr>")
    for s in series:
        folders = ", ".join(html.escape(os.path.relpath(r.path, out)) for r in sorted(s.runs, key=lambda r: r.seed)[:6]) + (" …" if len(s.runs) > 6 else "")
        body.append(f"<tr><td>{html.escape(s.label())}</td><td>{', '.join(map(str, s.seeds))}</td><td>{folders}</td></tr>")
    body.append("</table>")
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)} — aqmlab</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    report = out / "report.html"
    _atomic_write(report, page)
    return CompareResult(out, report, drawn, table, series)


def _atomic_write(path: Path, text: str) -> None:
    """The whole file or the old one: an interruption leaves no half-written file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
