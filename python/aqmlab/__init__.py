"""aqmlab: a lab for active queue management.

    >>> import aqmlab
    >>> r = aqmlab.run("madpie-proof", seed=1, overrides={"bottleneck.delay": "48ms"})
    >>> r.summary["bottleneck"]["queue_delay_ms"]["p50"]
    >>> r.packets.to_pandas()          # one row per packet event at the bottleneck
    >>> r.write("runs/pie-rtt100")     # summary.json, *.parquet, report.html

Scenarios are TOML files, built-in names (``aqmlab.scenarios()``), or dicts with the
same structure. The schema lives in the Rust core; see docs/scenario.md.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Optional, Union

from typing import TYPE_CHECKING

from . import _core, inputs
from ._core import ScenarioError, SimulationError
from .scenario import ScenarioLike, builtin_names, resolve, source

if TYPE_CHECKING:
    from .results import RunResult


def __getattr__(name: str) -> Any:
    # RunResult brings NumPy and Arrow: loaded when first used, so that `import aqmlab`
    # (and the `aqmlab` command, which handles Ctrl-C from its first line) start quickly
    if name == "RunResult":
        from .results import RunResult

        return RunResult
    raise AttributeError(f"module 'aqmlab' has no attribute {name!r}")

__version__ = _core.__version__

__all__ = [
    "run",
    "resolve",
    "scenarios",
    "aqms",
    "sweep",
    "query",
    "compare",
    "reproduce",
    "RunResult",
    "ScenarioError",
    "SimulationError",
    "__version__",
]

Overrides = Union[Iterable[str], Mapping[str, Any], None]


def _override_list(overrides: Overrides) -> list[str]:
    from .inputs import override_list

    return override_list(overrides)


def run(
    scenario: ScenarioLike = None,
    *,
    seed: Optional[int] = None,
    overrides: Overrides = None,
    progress: Optional[Callable[[float], object]] = None,
) -> RunResult:
    """Run a scenario (a path, a built-in name, a dict, or None for the default).

    `overrides` sets fields by dotted path, as ``aqmlab run --set`` does: a dict
    ``{"bottleneck.aqm.kind": "droptail"}`` or strings ``["flows.0.count=20"]``.
    Raises ScenarioError (a ValueError) for bad input, naming the field and value,
    before anything runs: a run that would not fit in the memory available is one
    (its message names the estimate and the setting to turn). Raises SimulationError
    if the run breaks packet conservation.
    """
    from . import inputs

    seed = inputs.seed(seed)
    over = _override_list(overrides)
    src = source(scenario)
    inputs.check_memory(inputs.estimate(src.text, src.format, over, seed, src.base_dir))
    raw = _core.run(src.text, src.format, over, seed, progress, src.base_dir)
    from .results import RunResult

    return RunResult(raw)


def scenarios() -> list[str]:
    """Names of the built-in scenarios; the first is the default."""
    return builtin_names()


def aqms() -> list[dict[str, Any]]:
    """Every AQM with its parameters, defaults and sources."""
    return json.loads(_core.aqm_catalog())


def sweep(spec=None, **kwargs):
    """Run a grid of scenarios in parallel into one folder with an index; see
    `aqmlab.sweeps.sweep` and docs/sweeps.md."""
    from .sweeps import sweep as _sweep

    return _sweep(spec, **kwargs)


def query(dirs, sql: str):
    """DuckDB SQL over sweep folders (views `runs`, `flows`, `timeseries`, `packets`);
    returns a pandas DataFrame."""
    from .sweeps import query as _query

    return _query(dirs, sql)


def compare(dirs, out, **kwargs):
    """Put run or sweep folders side by side (report.html, figures, series.csv); see
    `aqmlab.comparison.compare`."""
    from .comparison import compare as _compare

    return _compare(list(dirs) if not isinstance(dirs, (str, bytes)) and hasattr(dirs, "__iter__") else [dirs], out, **kwargs)


def reproduce(name: str, **kwargs):
    """Run a reproduction of an experiment of the source papers; see docs/reproductions.md."""
    from .reproductions import reproduce as _reproduce

    return _reproduce(name, **kwargs)
