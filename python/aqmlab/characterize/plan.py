"""The sections' cases as one sweep plan: every (section, AQM, case, seed) a run of
the sweep machinery (`aqmlab.sweeps.run_plan`: resumable, local cores or Dask), named
stably from its parameters ``section``, ``aqm`` and the case's dimensions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _core
from ..grid import Grid, Plan, RunSpec
from .sections import Length, Section
from .variants import Variant


@dataclass
class Built:
    plan: Plan
    skipped: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # section -> aqm -> why a case did not run
    dims: dict[str, list[str]] = field(default_factory=dict)  # section -> its dimensions, in order


def build(sections: list[Section], variants: list[Variant], length: Length) -> Built:
    """Every run, validated (a bad AQM parameter is a one-line ScenarioError naming it)."""
    runs: list[RunSpec] = []
    out = Built(Plan(Grid(name="characterize"), [], "rfc7928"))
    for sec in sections:
        if sec.cases is None:
            continue
        for v in variants:
            for case in sec.cases(v, length):
                dims = out.dims.setdefault(sec.key, [])
                for d in case.levels:
                    if d not in dims:
                        dims.append(d)
                g = Grid(scenario=case.scenario, name=f"rfc7928-{sec.key}")
                g.named("section", {sec.key: {}})
                g.named("aqm", {v.label: {}})
                for d, lab in case.levels.items():
                    g.named(d, {lab: {}})
                g.seeds = list(length.seeds)
                try:
                    p = g.plan()
                except _core.ScenarioError as e:
                    if case.optional:
                        where = ", ".join(f"{k} {x}" for k, x in case.levels.items())
                        out.skipped.setdefault(sec.key, {}).setdefault(v.label, []).append(f"{where}: not run: {e}")
                        continue
                    raise _core.ScenarioError(f"characterize {v.label}, §{sec.key}: {e}") from None
                runs.extend(p.runs)
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise RuntimeError(f"characterize: two runs share the name {dup}")
    out.plan.runs = runs
    return out


def describe(built: Built) -> dict[str, Any]:
    per: dict[str, int] = {}
    for r in built.plan.runs:
        k = str(r.params["section"])
        per[k] = per.get(k, 0) + 1
    return {"runs": len(built.plan.runs), "runs_by_section": per}
