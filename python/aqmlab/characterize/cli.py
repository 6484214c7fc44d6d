"""`aqmlab characterize AQM [AQM ...]`: the command line (docs/characterize.md)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    from .sections import keys

    p = sub.add_parser("characterize", help="RFC 7928 for AQMs: every section's scenarios as one sweep; summary.json and report.html",
                       description="Characterize AQMs by RFC 7928 (Kuhn, Natarajan, Khademi & Ros, Characterization Guidelines for AQM). "
                                   "Each AQM is a kind (pie) or a variant (pie:target=20ms,tupdate=30ms).")
    p.add_argument("aqms", nargs="+", metavar="AQM", help="kinds or kind:param=value,... variants (aqmlab list aqms)")
    p.add_argument("--out", default=None, help="output folder, required unless --plan (a sweep folder: resumes when started again)")
    p.add_argument("--quick", action="store_true", help="a first look: 30 s runs, one seed, fewer levels")
    p.add_argument("--seeds", type=int, default=None, help="seeds per case (default 5; quick: 1)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS", help="a running Dask scheduler (the folder must be shared)")
    p.add_argument("--sections", default=None, help=f"a comma-separated subset of the sections ({','.join(keys())})")
    p.add_argument("--plan", action="store_true", help="print the sweep's size per section and exit (nothing is run)")
    p.add_argument("--no-report", action="store_true", help="summary.json only")
    p.add_argument("--force", action="store_true", help="replace a different characterization (or sweep) in --out, keeping the runs they share")
    p.set_defaults(fn=run)


def run(a: argparse.Namespace) -> int:
    from .. import _core, interrupts
    from ..cli import _console, _err
    from . import main, plan_size
    from .variants import VariantError

    a.sections = [s.strip() for s in a.sections.split(",") if s.strip()] if a.sections else None
    con = _console()
    interrupts.note("nothing run yet")
    try:
        if a.plan:
            d = plan_size(a.aqms, a.quick, a.seeds, a.sections)
            for k, n in d["runs_by_section"].items():
                con.print(f"§{k}: {n} runs")
            con.print(f"{d['runs']} runs in all")
            return 0
        if not a.out:
            return _err("characterize: --out: required (the folder for the runs, summary.json and report.html)")
        return main(a, con)
    except (VariantError, ValueError, _core.ScenarioError, FileExistsError, RuntimeError) as e:
        return _err(str(e).strip("'\""))
