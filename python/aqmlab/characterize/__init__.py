"""`aqmlab characterize AQM [AQM ...]`: RFC 7928 (Kuhn, Natarajan, Khademi & Ros,
"Characterization Guidelines for Active Queue Management (AQM)") for any AQM, in one
command.

Every section of the RFC that asks for experiments is a set of scenarios
(`sections.py`); for the AQMs given (kinds or ``kind:param=value,...`` variants) they
are run as one sweep (`aqmlab.sweeps.run_plan`: resumable, on the local cores or a
Dask cluster), each run a folder under ``OUT/runs/``. Then each section's figures are
read from its runs (`analysis.py`) into ``OUT/summary.json`` (``sections`` keyed by
the RFC's section number, docs/characterize.md) and ``OUT/report.html`` (one part per
section, the RFC's figures, a table comparing the AQMs).

    >>> import aqmlab.characterize as ch
    >>> r = ch.characterize(["droptail", "pie", "codel"], out="rfc7928", quick=True)
    >>> r.summary["sections"]["5.4"]["aqms"]["pie"]["lbe_share"]["mean"]
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from .sections import SECTIONS, Length, keys, select
from .variants import VariantError, parse_all

__all__ = ["characterize", "Result", "SECTIONS", "keys", "VariantError"]

SUMMARY = "summary.json"
FULL_SEEDS = 5
QUICK_SEEDS = 1


@dataclass
class Result:
    out: Path
    summary: dict[str, Any]
    report: Optional[Path]
    runs: int
    ran: int
    failed: int
    seconds: float
    failures: dict[str, str] = field(default_factory=dict)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def seeds_for(quick: bool, seeds: Union[int, Sequence[int], None]) -> list[int]:
    if seeds is None:
        return list(range(1, (QUICK_SEEDS if quick else FULL_SEEDS) + 1))
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"characterize: --seeds: at least 1, got {seeds}")
        return list(range(1, seeds + 1))
    return list(seeds)


def plan_size(aqms: Sequence[str], quick: bool = False, seeds: Union[int, Sequence[int], None] = None, sections: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """The sweep's size without running it: runs in all and per section."""
    from .plan import build, describe

    built = build(select(list(sections) if sections else None), parse_all(list(aqms)), Length(quick, seeds_for(quick, seeds)))
    return describe(built)


def characterize(
    aqms: Sequence[str],
    *,
    out: Union[str, os.PathLike[str]],
    quick: bool = False,
    seeds: Union[int, Sequence[int], None] = None,
    jobs: Optional[int] = None,
    cluster: Any = None,
    sections: Optional[Sequence[str]] = None,
    progress: Optional[bool] = None,
    report: bool = True,
    command: Optional[Sequence[str]] = None,
    force: bool = False,
) -> Result:
    """Run RFC 7928's scenarios for `aqms` into `out` and write summary.json and report.html.

    Args:
        aqms: AQM kinds or variants, ``"pie"`` or ``"pie:target=20ms,tupdate=30ms"``.
        out: the folder (a sweep folder; a run that is stopped resumes when started again).
        quick: shorter runs (30 s), one seed, fewer levels: a first look.
        seeds: a count (1..N) or a list; default 5 (quick: 1).
        jobs: local worker processes (default: all cores).
        cluster: a Dask scheduler address or a `distributed.Client` (the folder must be
            shared with the workers).
        sections: only these sections (with the ones whose runs they read).
        progress: progress bars (default: when stderr is a terminal).
        report: write report.html.
        command: the command line, for manifest.json.
        force: replace a different characterization (or sweep) in `out`, keeping the
            runs the two share (e.g. another AQM added); without it such a folder is
            refused.

    Returns:
        A `Result`: the summary (as summary.json), the report's path, run counts, seconds.

    Raises:
        VariantError: a bad AQM argument (nothing is run).
        ScenarioError: a parameter value the AQM refuses (nothing is run).
    """
    from .. import sweeps
    from ..folders import Run
    from . import plan as _plan, summary as _summary

    t0 = time.perf_counter()
    variants = parse_all(list(aqms))
    length = Length(quick, seeds_for(quick, seeds))
    secs = select(list(sections) if sections else None)
    built = _plan.build(secs, variants, length)
    out = Path(out)
    show = sys.stderr.isatty() if progress is None else progress
    from .. import interrupts

    interrupts.note(f"finished runs are kept in {out}; the same command resumes the characterization")
    res = sweeps.run_plan(built.plan, out, jobs=jobs, cluster=cluster, compare=False, progress=show, label="characterize",
                          extra={"characterize": {"aqms": [v.label for v in variants], "quick": quick, "seeds": length.seeds, "sections": [s.key for s in secs]}},
                          command=command, force=force)
    if res.failed and not res.ran and not res.skipped:
        first = next(iter(res.failures.items()))
        raise RuntimeError(f"characterize: all {res.failed} runs failed (errors in {out / 'failures'}/); the first, {first[0]}: {first[1]}")
    runs = [Run(out / "runs" / r.name, r.params) for r in built.plan.runs if (out / "runs" / r.name / "summary.json").exists()]
    from ..progress import steps

    with steps("summary", show) as step:
        summ = _summary.build(secs, variants, runs, built, length, progress=step)
    if "11" in summ["sections"]:
        with steps("§11 cost", show) as step:
            summ["sections"]["11"]["aqms"] = _summary.cost(variants, quick, progress=step)
    summ["runs"] = {"planned": len(built.plan.runs), "ran": res.ran, "already_done": res.skipped, "failed": res.failed, "failures": res.failures}
    summ["wall_seconds"] = time.perf_counter() - t0
    _write_json(out / SUMMARY, summ)
    page = None
    if report:
        from . import report as _report

        with steps("report", show) as step:
            page = _report.write(out, summ, secs, variants, runs, progress=step, parallel=cluster is None)
        summ["wall_seconds"] = time.perf_counter() - t0
        _write_json(out / SUMMARY, summ)
    return Result(out, summ, page, len(built.plan.runs), res.ran, res.failed, time.perf_counter() - t0, res.failures)


def main(a: Any, console: Any) -> int:
    """The CLI command (aqmlab characterize ...)."""
    r = characterize(a.aqms, out=a.out, quick=a.quick, seeds=a.seeds, jobs=a.jobs, cluster=a.cluster, sections=a.sections, report=not a.no_report,
                     command=a.argv, force=a.force)
    from .report import console_table

    console_table(console, r.summary)
    console.print(f"{r.runs} runs ({r.ran} ran, {r.runs - r.ran - r.failed} already done, {r.failed} failed) in {r.seconds:.0f} s; wrote {r.out}/summary.json"
                  + (f" and {r.report}" if r.report else ""))
    return 1 if r.failed else 0
