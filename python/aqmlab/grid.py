"""Sweep grids: which runs a sweep (or a reproduction) is made of.

A grid is a base scenario, fixed overrides, a list of *dimensions* crossed with one
another, and the seeds. A dimension is a list of *levels*; a level is the set of
overrides it applies (dotted paths, as ``aqmlab run --set`` takes them) and the
parameter values it records in the index:

* ``vary``: one dimension per key, one level per value
  (``"bottleneck.delay" = ["48ms", "248ms"]``);
* ``zip``: several keys varied together, element by element (one dimension);
* ``levels``: named levels, each a table of overrides
  (``[levels.aqm] PIE = {"bottleneck.aqm" = {kind = "pie", target = "20ms"}}``);
  the index records the level's name under the dimension's name. A level's
  ``scenario`` key (``{scenario = "palermo-codel-drs"}``) replaces the base scenario
  for its runs, so that one grid can span several built-in scenarios; a named
  dimension built with ``when`` (Python API) is crossed only with the levels it names
  of other dimensions and recorded as ``–`` elsewhere (e.g. file sizes only for the
  late-arrival test).

Every combination is validated by the Rust core (the one place that knows the
schema) before anything runs; a bad field is a one-line ``ScenarioError`` naming the
field, the value and the combination. A run is named stably from its parameters:
readable parts plus a short hash of its fully resolved scenario, so that a resumed
sweep recognizes the runs it has already done and a changed setting gives a new run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from . import _core
from .scenario import ScenarioLike, Source, source

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the same parser, from PyPI
    import tomli as tomllib

LEVEL_SCENARIO = "scenario"  # the override key by which a level replaces the base scenario
SPEC_KEYS = ("name", "description", "scenario", "seeds", "set", "vary", "zip", "levels")


class SweepSpecError(_core.ScenarioError):
    """A sweep spec that cannot be expanded (the message names the key)."""


# -- values ---------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_literal(v: Any) -> str:
    """A Python value as a TOML literal, the form ``--set KEY=VALUE`` reads."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, Mapping):
        items = ", ".join(f"{k if _BARE_KEY.match(str(k)) else json.dumps(str(k))} = {toml_literal(x)}" for k, x in v.items())
        return "{" + items + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_literal(x) for x in v) + "]"
    raise SweepSpecError(f"sweep: cannot express {v!r} ({type(v).__name__}) as a scenario value")


def parse_literal(raw: str) -> Any:
    """A command-line value: TOML when it is a TOML value (``20``, ``true``,
    ``["0s", "1s"]``), a string otherwise (``48ms``), as ``--set`` reads it."""
    raw = raw.strip()
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def split_values(raw: str) -> list[str]:
    """Split ``V1,V2,...`` on the commas that are not inside brackets, braces or quotes."""
    out, depth, quote, cur = [], 0, "", []
    for ch in raw:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out]


def parse_assignment(text: str, what: str) -> tuple[str, str]:
    if "=" not in text:
        raise SweepSpecError(f"{what}: \"{text}\" is not KEY=VALUE")
    k, v = text.split("=", 1)
    k = k.strip()
    if not k or any(not p for p in k.split(".")):
        raise SweepSpecError(f"{what}: \"{k}\" is not a dotted field path")
    return k, v


def display(v: Any) -> str:
    """A value as it reads in a label or an index cell."""
    if isinstance(v, str):
        return v
    if isinstance(v, Mapping) and "kind" in v:
        rest = {k: x for k, x in v.items() if k != "kind"}
        return str(v["kind"]) + ("" if not rest else " " + toml_literal(rest))
    return toml_literal(v)


# -- the grid -------------------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    """One value of a dimension: the overrides it applies and what the index records."""

    params: dict[str, Any]
    overrides: dict[str, Any]


NOT_CROSSED = "–"  # the index value of a `when` dimension where it does not apply


@dataclass(frozen=True)
class Dimension:
    name: str
    levels: tuple[Level, ...]
    kind: str = "vary"  # vary | zip | levels
    # crossed only with combinations whose dimensions (by name) are at one of the
    # given levels; elsewhere a single level with no overrides, recorded as NOT_CROSSED
    when: Optional[tuple[tuple[str, tuple[str, ...]], ...]] = None

    def applies(self, params: Mapping[str, Any]) -> bool:
        return all(str(params.get(k)) in v for k, v in self.when or ())


@dataclass
class Grid:
    """A base scenario, fixed overrides, crossed dimensions and seeds."""

    scenario: ScenarioLike = None
    set: dict[str, Any] = field(default_factory=dict)
    dimensions: list[Dimension] = field(default_factory=list)
    seeds: Optional[list[int]] = None  # None: the scenario's own seed
    name: str = "sweep"
    description: str = ""
    base_dir: Optional[Path] = None  # where a relative scenario path is found

    # builders ---------------------------------------------------------------------
    def vary(self, key: str, values: Sequence[Any]) -> "Grid":
        from .inputs import values as _values

        values = _values(values, f"vary.\"{key}\"")
        if not values:
            raise SweepSpecError(f"vary.\"{key}\": no values")
        self._drop(key)
        self.dimensions.append(Dimension(key, tuple(Level({key: v}, {key: v}) for v in values), "vary"))
        return self

    def zip(self, table: Mapping[str, Sequence[Any]]) -> "Grid":
        from .inputs import values as _values

        keys = list(table)
        if not keys:
            raise SweepSpecError("zip: an empty group")
        table = {k: _values(table[k], f"zip.\"{k}\"") for k in keys}
        lengths = {k: len(list(table[k])) for k in keys}
        if len(set(lengths.values())) != 1:
            desc = ", ".join(f"\"{k}\" has {n}" for k, n in lengths.items())
            raise SweepSpecError(f"zip: zipped keys need lists of one length ({desc})")
        if not next(iter(lengths.values())):
            raise SweepSpecError(f"zip: \"{keys[0]}\" has no values")
        for k in keys:
            self._drop(k)
        rows = zip(*(list(table[k]) for k in keys))
        levels = tuple(Level(dict(zip(keys, r)), dict(zip(keys, r))) for r in rows)
        self.dimensions.append(Dimension("+".join(keys), levels, "zip"))
        return self

    def named(
        self,
        name: str,
        levels: Mapping[str, Mapping[str, Any]],
        when: Mapping[str, Iterable[str]] | None = None,
    ) -> "Grid":
        if not levels:
            raise SweepSpecError(f"levels.{name}: no levels")
        for label, ov in levels.items():
            if not isinstance(ov, Mapping):
                raise SweepSpecError(f"levels.{name}.{label}: expected a table of overrides, got {toml_literal(ov)}")
        gate = tuple((k, tuple(str(x) for x in v)) for k, v in (when or {}).items()) or None
        self.dimensions.append(
            Dimension(name, tuple(Level({name: label}, dict(ov)) for label, ov in levels.items()), "levels", gate)
        )
        return self

    def _drop(self, key: str) -> None:
        """A key varied again (e.g. from the command line) replaces its earlier role."""
        self.set.pop(key, None)
        keep = []
        for d in self.dimensions:
            if d.kind == "vary" and d.name == key:
                continue
            if d.kind == "zip" and key in d.levels[0].overrides:
                raise SweepSpecError(f"vary: \"{key}\" is already zipped with {', '.join(k for k in d.levels[0].overrides if k != key)}")
            keep.append(d)
        self.dimensions = keep

    # expansion --------------------------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        names: list[str] = []
        for d in self.dimensions:
            for k in d.levels[0].params:
                if k not in names:
                    names.append(k)
        return names

    def combinations(self) -> Iterable[tuple[Level, ...]]:
        if not any(d.when for d in self.dimensions):
            yield from itertools.product(*(d.levels for d in self.dimensions))
            return
        seen: set[str] = set()
        for combo in itertools.product(*(d.levels for d in self.dimensions)):
            params = {k: v for lv in combo for k, v in lv.params.items()}
            combo = tuple(lv if d.applies(params) else Level({d.name: NOT_CROSSED}, {}) for d, lv in zip(self.dimensions, combo))
            key = json.dumps([lv.params for lv in combo], default=str)
            if key not in seen:
                seen.add(key)
                yield combo

    def size(self) -> int:
        n = sum(1 for _ in self.combinations())
        return n * (len(self.seeds) if self.seeds else 1)

    def source(self) -> Source:
        return self._source_of(self.scenario)

    def _source_of(self, sc: ScenarioLike) -> Source:
        if isinstance(sc, (str, Path)) and self.base_dir is not None:
            p = self.base_dir / str(sc)
            builtins = dict(_core.builtin_scenarios())
            if str(sc) not in builtins and p.exists():
                sc = p
        return source(sc)

    def plan(self) -> "Plan":
        """Validate every combination and name its run; raises ScenarioError."""
        src = self.source()
        base_over = [f"{k}={toml_literal(v)}" for k, v in self.set.items()]
        try:
            _core.resolve_scenario(src.text, src.format, base_over, None)
        except _core.ScenarioError as e:
            raise _core.ScenarioError(f"{e} (in the sweep's fixed settings)") from None
        seeds: list[Optional[int]] = list(self.seeds) if self.seeds else [None]
        for s in seeds:
            if s is not None and (not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**64):
                raise SweepSpecError(f"seeds: {s!r} is not a seed (an integer from 0 to {2**64 - 1})")
        if len(set(seeds)) != len(seeds):
            raise SweepSpecError(f"seeds: repeated seed in {seeds}")
        runs: list[RunSpec] = []
        for combo in self.combinations():
            params: dict[str, Any] = {}
            overrides = dict(self.set)
            for lv in combo:
                params.update(lv.params)
                overrides.update(lv.overrides)
            # a level may name its own base scenario (`scenario`), e.g. the several tests of
            # one paper; its other overrides apply to that base
            csrc = self._source_of(overrides.pop(LEVEL_SCENARIO)) if LEVEL_SCENARIO in overrides else src
            over = [f"{k}={toml_literal(v)}" for k, v in overrides.items()]
            for s in seeds:
                try:
                    resolved = json.loads(_core.resolve_scenario(csrc.text, csrc.format, over, s))
                except _core.ScenarioError as e:
                    where = ", ".join(f"{k}={display(v)}" for k, v in params.items())
                    raise _core.ScenarioError(f"{e} (in the sweep combination {where or 'base'}{'' if s is None else f', seed {s}'})") from None
                runs.append(RunSpec.make(params, resolved, over))
        names = [r.name for r in runs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise SweepSpecError(f"sweep: two combinations give the same scenario (run {dup}); a varied value has no effect")
        return Plan(self, runs, src.origin)

    def describe(self) -> dict[str, Any]:
        """The grid as plain data (written to sweep.json)."""
        sc = self.scenario
        return {
            "name": self.name,
            "description": self.description,
            "scenario": sc if isinstance(sc, (str, type(None))) else (str(sc) if isinstance(sc, Path) else "<dict>"),
            "set": self.set,
            "dimensions": [
                {"name": d.name, "kind": d.kind, "levels": [{"params": l.params, "overrides": l.overrides} for l in d.levels], **({"when": {k: list(v) for k, v in d.when}} if d.when else {})}
                for d in self.dimensions
            ],
            "seeds": self.__dict__.get("_seed_list"),
        }


class Seeds(list):
    """A grid's seeds (a list; empty when the scenario's own seed is used) that is also
    the builder ``grid.seeds(5)`` (seeds 1..5) or ``grid.seeds([1, 2, 7])``, which
    returns the grid so that builders chain like ``.vary`` and ``.zip``."""

    def __init__(self, grid: "Grid", values: Optional[list[int]]):
        super().__init__(values or [])
        self._grid = grid

    def __call__(self, seeds: "int | Sequence[int]") -> "Grid":
        self._grid.seeds = _seeds(seeds if isinstance(seeds, int) else list(seeds), "seeds")
        return self._grid


class _SeedsAttribute:
    def __get__(self, grid: Optional["Grid"], owner: type) -> Any:
        if grid is None:
            return None  # the dataclass default
        return Seeds(grid, grid.__dict__.get("_seed_list"))

    def __set__(self, grid: "Grid", value: Optional[Sequence[int]]) -> None:
        grid.__dict__["_seed_list"] = None if value is None else list(value)


Grid.seeds = _SeedsAttribute()  # type: ignore[assignment]


def _short_key(key: str) -> str:
    parts = key.split(".")
    if len(parts) > 1 and parts[-1] == "kind":
        return parts[-2]
    return parts[-1]


def _slug(text: str, limit: int = 24) -> str:
    s = re.sub(r"[^A-Za-z0-9.+]+", "-", text).strip("-.")
    return s[:limit].rstrip("-.") or "x"


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its name, parameters, seed and resolved scenario."""

    name: str
    params: dict[str, Any]
    seed: int
    overrides: tuple[str, ...]
    scenario: dict[str, Any]
    hash: str

    @staticmethod
    def make(params: dict[str, Any], resolved: dict[str, Any], overrides: list[str]) -> "RunSpec":
        digest = hashlib.sha256(json.dumps(resolved, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]
        parts = []
        for k, v in params.items():
            val = v.get("kind", "table") if isinstance(v, Mapping) else display(v)
            parts.append(f"{_slug(_short_key(k), 16)}-{_slug(str(val))}")
        parts.append(f"s{resolved['seed']}")
        readable = "_".join(parts)[:96]
        return RunSpec(f"{readable}_{digest}", dict(params), int(resolved["seed"]), tuple(overrides), resolved, digest)

    def scenario_json(self) -> str:
        return json.dumps(self.scenario)


@dataclass
class Plan:
    grid: Grid
    runs: list[RunSpec]
    origin: str

    def __len__(self) -> int:
        return len(self.runs)


# -- spec files -----------------------------------------------------------------------


def _seeds(v: Any, where: str) -> Optional[list[int]]:
    if v is None:
        return None
    if isinstance(v, bool):
        raise SweepSpecError(f"{where}: expected a count or a list of seeds, got {toml_literal(v)}")
    if isinstance(v, int):
        if v < 1:
            raise SweepSpecError(f"{where}: a count of seeds must be at least 1, got {v}")
        if v > 1_000_000:
            raise SweepSpecError(f"{where}: {v} seeds are too many (at most 1000000 in one sweep)")
        return list(range(1, v + 1))
    if isinstance(v, (list, tuple)) and v and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**64 for s in v):
        return list(v)
    raise SweepSpecError(f"{where}: expected a count or a list of non-negative integers, got {toml_literal(v)}")


def parse_seeds(text: str) -> list[int]:
    """``--seeds 5`` (seeds 1..5) or ``--seeds 1,2,7``."""
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise SweepSpecError(f"--seeds: \"{text}\" is neither a count nor a comma-separated list of integers") from None
    return _seeds(vals[0] if len(vals) == 1 and "," not in text else vals, "--seeds")  # type: ignore[return-value]


def from_dict(d: Mapping[str, Any], where: str = "sweep spec", base_dir: Optional[Path] = None) -> Grid:
    unknown = [k for k in d if k not in SPEC_KEYS]
    if unknown:
        raise SweepSpecError(f"{where}: unknown key \"{unknown[0]}\" (expected one of: {', '.join(SPEC_KEYS)})")
    g = Grid(scenario=d.get("scenario"), name=str(d.get("name", "sweep")), description=str(d.get("description", "")), base_dir=base_dir)
    fixed = d.get("set", {})
    if not isinstance(fixed, Mapping):
        raise SweepSpecError(f"{where}: set: expected a table of overrides")
    g.set = dict(fixed)
    vary = d.get("vary", {})
    if not isinstance(vary, Mapping):
        raise SweepSpecError(f"{where}: vary: expected a table of lists")
    for k, vals in vary.items():
        if not isinstance(vals, list):
            raise SweepSpecError(f"{where}: vary.\"{k}\": expected a list of values, got {toml_literal(vals)}")
        if k in g.set:
            raise SweepSpecError(f"{where}: \"{k}\" is both fixed (set) and varied")
        g.vary(k, vals)
    zips = d.get("zip", [])
    for i, z in enumerate([zips] if isinstance(zips, Mapping) else zips):
        if not isinstance(z, Mapping) or any(not isinstance(v, list) for v in z.values()):
            raise SweepSpecError(f"{where}: zip: expected tables of lists")
        for k in z:
            if k in g.set:
                raise SweepSpecError(f"{where}: \"{k}\" is both fixed (set) and zipped")
            if any(k in dim.levels[0].overrides for dim in g.dimensions):
                raise SweepSpecError(f"{where}: \"{k}\" is varied twice")
        g.zip(z)
    levels = d.get("levels", {})
    if not isinstance(levels, Mapping):
        raise SweepSpecError(f"{where}: levels: expected tables of named levels")
    for name, table in levels.items():
        if not isinstance(table, Mapping):
            raise SweepSpecError(f"{where}: levels.{name}: expected a table of named levels")
        g.named(name, table)
    g.seeds = _seeds(d.get("seeds"), f"{where}: seeds")
    return g


def load_spec(path: str | Path) -> Grid:
    from .scenario import read_text

    p = Path(path)
    if not p.exists():
        raise SweepSpecError(f"sweep spec: no file \"{p}\"")
    try:
        d = tomllib.loads(read_text(p, "sweep spec"))
    except tomllib.TOMLDecodeError as e:
        raise SweepSpecError(f"sweep spec {p}: invalid TOML: {str(e).splitlines()[0]}") from None
    return from_dict(d, f"sweep spec {p}", base_dir=p.parent)


def is_scenario_file(path: Path) -> bool:
    """A scenario TOML (has a bottleneck or flows) rather than a sweep spec."""
    try:
        d = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return "bottleneck" in d or "flows" in d
