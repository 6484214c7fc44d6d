"""aqmlab: a lab for active queue management.

    >>> import aqmlab
    >>> r = aqmlab.run("madpie-proof", seed=1, overrides={"bottleneck.delay": "48ms"})
    >>> r.summary["bottleneck"]["queue_delay_ms"]["p50"]
    >>> r.tables["packets"].to_pandas()     # one row per packet event at the bottleneck
    >>> r.plot("queue_delay_cdf")           # a matplotlib Figure
    >>> r.write("runs/pie-rtt100")          # summary.json, *.parquet, manifest.json, report.html
    >>> aqmlab.load("runs/pie-rtt100")      # a run folder (or a sweep folder) as an object

Scenarios are TOML files, built-in names (``aqmlab.scenarios()``), run folders, or dicts
with the same structure. The schema lives in the Rust core; see the scenario reference.
Importing aqmlab is light: numpy, pyarrow and matplotlib load when first needed, and
the matplotlib backend is never changed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _core, inputs
from ._core import ScenarioError, SimulationError
from .scenario import ScenarioLike, builtin_names, resolve, source
from .sweeps import sweep  # light: numpy, pandas and Dask load when a sweep runs

if TYPE_CHECKING:
    import os

    from .comparison import CompareResult
    from .folders import Run, Sweep
    from .results import RunResult

__version__ = _core.__version__

__all__ = [
    "run",
    "load",
    "resolve",
    "scenarios",
    "aqms",
    "sweep",
    "query",
    "compare",
    "reproduce",
    "plots",
    "Run",
    "Sweep",
    "RunResult",
    "ScenarioError",
    "SimulationError",
    "__version__",
]

Overrides = Union[Iterable[str], Mapping[str, Any], None]

_LAZY = {"RunResult": ("results", "RunResult"), "Run": ("folders", "Run"), "Sweep": ("folders", "Sweep"), "Grid": ("grid", "Grid")}
_SUBMODULES = {"plots", "measures", "comparison", "results", "folders", "sweeps", "grid", "report", "manifest", "reproductions", "cli"}


def __getattr__(name: str) -> Any:  # PEP 562: heavy modules load on first use
    import importlib

    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'aqmlab' has no attribute {name!r}")


def _override_list(overrides: Overrides) -> list[str]:
    from .inputs import override_list

    return override_list(overrides)


def run(
    scenario: ScenarioLike = None,
    *,
    seed: Optional[int] = None,
    overrides: Overrides = None,
    progress: Optional[Callable[[float], object]] = None,
) -> "RunResult":
    """Run a scenario and return its results in memory.

    Args:
        scenario: a TOML or JSON scenario file, a run folder (its scenario.json), a
            built-in name (`aqmlab.scenarios()`), a dict with the scenario's structure,
            or None for the default scenario.
        seed: the run's seed (overrides the scenario's).
        overrides: fields to set by dotted path, as `aqmlab run --set` does: a dict
            ``{"bottleneck.aqm.kind": "droptail"}`` or strings ``["flows.0.count=20"]``.
        progress: called with the simulated fraction (0 to 1) as the run goes.

    Returns:
        A `RunResult`: `.summary`, `.tables`, `.plot(kind)`, `.write(folder)`.

    Raises:
        ScenarioError: bad input, before anything runs (a ValueError naming the field
            and value): a bad scenario, override or seed, or a run that would not fit in
            the memory available (the message names the estimate and the setting to turn).
        SimulationError: the run broke an invariant (packet conservation).
    """
    from .manifest import now_utc
    from .results import RunResult

    seed = inputs.seed(seed)
    over = _override_list(overrides)
    src = source(scenario)
    inputs.check_memory(inputs.estimate(src.text, src.format, over, seed, src.base_dir))
    started = now_utc()
    raw = _core.run(src.text, src.format, over, seed, progress, src.base_dir)
    r = RunResult(raw)
    r.__dict__["started"] = started
    return r


def load(path: Union[str, "os.PathLike[str]"]) -> Union["Run", "Sweep"]:
    """Open a run folder as a `Run`, or a sweep folder as a `Sweep`.

    Both show a table of headline figures in a notebook, and have `.summary`,
    `.tables` (Arrow tables; `.to_pandas()`) and `.plot(kind, style=...)`.
    """
    from .folders import load as _load

    return _load(path)


def scenarios() -> list[str]:
    """Names of the built-in scenarios; the first is the default."""
    return builtin_names()


def aqms() -> list[dict[str, Any]]:
    """Every AQM with its parameters, defaults and sources."""
    return json.loads(_core.aqm_catalog())


def query(dirs: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]], sql: str):
    """DuckDB SQL over sweep folders (views `runs`, `flows`, `timeseries`, `packets`);
    returns a pandas DataFrame."""
    from .sweeps import query as _query

    return _query(dirs, sql)


def compare(
    dirs: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]", "Run"]]],
    out: Union[str, "os.PathLike[str]"],
    *,
    figures: Optional[Sequence[str]] = None,
    title: str = "Comparison",
    label: Union[str, Callable[[Mapping[str, Any]], str], None] = None,
) -> "CompareResult":
    """Put run or sweep folders side by side: report.html, figures/*.png, series.csv.

    Args:
        dirs: run folders, sweep folders or `Run`s (one or many).
        out: the output folder.
        figures: figure kinds to draw (`aqmlab.plots.kinds()`); default: every
            default kind whose data the runs have.
        title: the report's title.
        label: a series label format ("{bottleneck_aqm_kind}") or a function of the
            series' values.

    Returns:
        A `CompareResult`: `.report`, `.figures`, `.table` (pandas), `.series`.
    """
    from .comparison import compare as _compare

    items = [dirs] if isinstance(dirs, (str, bytes)) or not hasattr(dirs, "__iter__") else list(dirs)
    return _compare(items, out, figures=figures, title=title, label=label)


def reproduce(name: str, **kwargs: Any):
    """Run a reproduction of an experiment of the source papers (`aqmlab reproduce --list`)."""
    from .reproductions import reproduce as _reproduce

    return _reproduce(name, **kwargs)
