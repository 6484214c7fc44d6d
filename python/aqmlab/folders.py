"""Runs and sweeps as objects: what `aqmlab.load` returns, for notebooks and scripts.

    >>> import aqmlab
    >>> r = aqmlab.load("runs/madpie-proof-seed1")       # a run folder
    >>> r.summary["bottleneck"]["queue_delay_ms"]["p99"]
    >>> r.tables["packets"].to_pandas()                   # Arrow tables, read on first use
    >>> r.plot("queue_delay_cdf", style="paper")          # a matplotlib Figure
    >>> s = aqmlab.load("sweeps/proof")                   # a sweep folder
    >>> s.query("select count(*) from runs")

A `Run` shows its headline figures when it is the last expression of a notebook cell
(`_repr_html_`); so does a `Sweep`, one row per series. Nothing here touches the
matplotlib backend: figures are drawn on demand with the backend of the session.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]

TABLES = ("packets", "flows", "timeseries", "transfers", "datagrams", "flow_trace", "histograms")


class Tables(Mapping):
    """A run's tables by name (Arrow tables, loaded on first use; `.to_pandas()` for pandas)."""

    def __init__(self, run: "Run"):
        self._run = run
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str):
        if name not in self._cache:
            t = self._run._arrow(name)
            if t is None:
                raise KeyError(name)
            self._cache[name] = t
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(n for n in TABLES if self._run._has(n))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"Tables({', '.join(self)})"


class Run:
    """One run: its summary, scenario and manifest, its tables, its figures.

    A run folder (`aqmlab.load(path)`) reads its Parquet files on first use; a run in
    memory (`aqmlab.run(...)`, a `RunResult`) serves the same calls from its own
    columns. `params` are the sweep parameters of a run of a sweep."""

    path: Optional[Path]

    def __init__(self, path: PathLike, params: Optional[Mapping[str, Any]] = None):
        self.path = Path(path)
        if not (self.path / "summary.json").exists():
            raise FileNotFoundError(f"{self.path}: not a run folder (no summary.json)")
        self.summary: dict[str, Any] = json.loads((self.path / "summary.json").read_text())
        sc = self.path / "scenario.json"
        self.scenario = json.loads(sc.read_text()) if sc.exists() else {"name": self.summary.get("scenario"), "seed": self.summary.get("seed")}
        self.params = dict(params or {})
        self._frames: dict[Any, Any] = {}

    # identity --------------------------------------------------------------------------
    @property
    def seed(self) -> int:
        return int(self.summary.get("seed", 0))

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else f"{self.scenario.get('name')}-seed{self.seed}"

    @property
    def engine(self) -> str:
        """What ran it: "simulator", or "Linux KERNEL" for an emulated run."""
        em = self.summary.get("emulation")
        return f"Linux {em.get('kernel', '')}".strip() if em else "simulator"

    @property
    def manifest(self) -> Optional[dict[str, Any]]:
        """How the run was made (manifest.json): version, commit, command, host, times."""
        p = self.path / "manifest.json" if self.path is not None else None
        return json.loads(p.read_text()) if p is not None and p.exists() else None

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path is not None else ""
        from . import measures

        return f"<aqmlab Run {self.scenario.get('name')} seed {self.seed}, {measures.headline(self.summary)['aqm']}{where}>"

    # tables ------------------------------------------------------------------------------
    @property
    def tables(self) -> Tables:
        if "_tables" not in self._frames:
            self._frames["_tables"] = Tables(self)
        return self._frames["_tables"]

    def _has(self, name: str) -> bool:
        return (self.path / f"{name}.parquet").exists()

    def _arrow(self, name: str):
        import pyarrow.parquet as pq

        p = self.path / f"{name}.parquet"
        return pq.read_table(p) if p.exists() else None

    def _read(self, name: str, columns: Sequence[str], filters: Optional[list[tuple[str, str, Any]]]):
        import pyarrow.parquet as pq

        p = self.path / f"{name}.parquet"
        if not p.exists():
            return None
        have = set(pq.read_schema(p).names)
        if not set(columns) <= have or not all(f[0] in have for f in filters or []):
            return None
        return pq.read_table(p, columns=list(columns), filters=filters or None).to_pandas()

    def table(self, name: str, columns: Sequence[str], filters: Optional[list[tuple[str, str, Any]]] = None):
        """A pandas DataFrame of `columns` of table NAME (rows matching `filters`,
        pyarrow's [(column, "=", value)]), or None if the table or a column is absent."""
        key = (name, tuple(columns), repr(filters))
        if key not in self._frames:
            self._frames[key] = self._read(name, columns, filters)
        return self._frames[key]

    # figures -------------------------------------------------------------------------------
    def plot(self, kind: str, **style: Any):
        """A matplotlib Figure of this run: `kind` is one of `aqmlab.plots.kinds()`;
        `style` ("paper", "slides", "report"), `width`, `height` (inches) and the
        kind's options as keywords. None when the run lacks the kind's data."""
        from . import plots

        return plots.figure(kind, [self], **style)

    def _repr_html_(self) -> str:
        from . import report

        return report.run_card(self)


RUN_FILES = {
    "summary.json",
    "scenario.json",
    "packets.parquet",
    "flows.parquet",
    "timeseries.parquet",
    "transfers.parquet",
    "datagrams.parquet",
    "flow_trace.parquet",
    "histograms.parquet",
    "report.html",
    "figures",
    "manifest.json",
    "conservation.ok",
    "series.csv",
}


CAPTURE = re.compile(r"packets(\.[A-Za-z0-9_-]+)?\.pcap")
"""The name of a libpcap capture in a run folder (`record.pcap`)."""


def is_run_dir(d: Path) -> bool:
    """An existing folder that holds a previous run (and nothing else)."""
    entries = {e.name for e in d.iterdir()}
    return "summary.json" in entries and all(CAPTURE.fullmatch(e) for e in entries - RUN_FILES)


def check_out_dir(dest: str | os.PathLike[str]) -> Path:
    """Refuse an output folder that would overwrite something other than a run."""
    d = Path(dest)
    if d.exists():
        if not d.is_dir():
            raise FileExistsError(f"--out: \"{d}\" exists and is not a directory")
        if any(d.iterdir()) and not is_run_dir(d):
            raise FileExistsError(f"--out: \"{d}\" is not empty and does not hold an aqmlab run; choose another folder")
    return d


def _replace_dir(new: Path, dest: Path) -> None:
    """Move `new` to `dest`, replacing a previous run folder there."""
    if dest.exists():
        check_out_dir(dest)
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, dest)


def is_sweep_dir(d: Path) -> bool:
    return (d / "index.parquet").exists() or (d / "sweep.json").exists()


class Sweep:
    """A sweep folder: its index, its runs (with their parameters), its series."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        if not is_sweep_dir(self.path) and not (self.path / "runs").is_dir():
            raise FileNotFoundError(f"{self.path}: not a sweep folder (no index.parquet or sweep.json)")
        self._runs: Optional[list[Run]] = None

    def __repr__(self) -> str:
        return f"<aqmlab Sweep {self.path}: {len(self.runs)} finished runs>"

    @property
    def spec(self) -> dict[str, Any]:
        """sweep.json: the grid and its runs."""
        p = self.path / "sweep.json"
        return json.loads(p.read_text()) if p.exists() else {}

    @property
    def index(self):
        """index.parquet as a pandas DataFrame: one row per run, parameters and figures."""
        import pyarrow.parquet as pq

        return pq.read_table(self.path / "index.parquet").to_pandas()

    summary = index

    @property
    def tables(self) -> dict[str, Any]:
        import pyarrow.parquet as pq

        return {"index": pq.read_table(self.path / "index.parquet")}

    @property
    def runs(self) -> list[Run]:
        """The finished runs, each with its sweep parameters (`Run.params`)."""
        if self._runs is None:
            self._runs = _sweep_runs(self.path)
        return self._runs

    def series(self, label: Any = None) -> list[Any]:
        """The runs grouped into series (runs that differ only in their seed)."""
        from .comparison import group

        return group(self.runs, label)

    def query(self, sql: str):
        """DuckDB SQL over the sweep (views `runs`, `flows`, `timeseries`, `packets`)."""
        from .sweeps import query

        return query(self.path, sql)

    def plot(self, kind: str, **style: Any):
        """A matplotlib Figure of the sweep's series; see `Run.plot`."""
        from . import plots

        return plots.figure(kind, self.runs, **style)

    def _repr_html_(self) -> str:
        from . import report

        return report.series_card(self.series(), title=str(self.path))


def load(path: PathLike) -> Union[Run, Sweep]:
    """A run folder as a `Run`, a sweep folder as a `Sweep`."""
    p = Path(path)
    if (p / "summary.json").exists():
        return Run(p)
    if is_sweep_dir(p):
        return Sweep(p)
    raise FileNotFoundError(f"{p}: neither a run folder (summary.json) nor a sweep folder (index.parquet)")


def find_runs(dirs: Iterable[Union[PathLike, Run, Sweep]]) -> list[Run]:
    """Run folders and the finished runs of sweep folders, in the order given."""
    runs: list[Run] = []
    for d in dirs:
        if isinstance(d, Run):
            runs.append(d)
            continue
        if isinstance(d, Sweep):
            runs.extend(d.runs)
            continue
        d = Path(d)
        if (d / "summary.json").exists():
            runs.append(Run(d))
        elif is_sweep_dir(d) or (d / "runs").is_dir():
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
    runs = d / "runs"
    return [Run(p) for p in sorted(runs.iterdir()) if (p / "summary.json").exists()] if runs.is_dir() else []
