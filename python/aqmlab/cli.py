"""The `aqmlab` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _core, inputs, interrupts


def _err(msg: str, code: int = 2) -> int:
    print(f"aqmlab: error: {' '.join(str(msg).split())}", file=sys.stderr)
    return code


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line: `aqmlab: error: <what> (see aqmlab run --help)`."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"aqmlab: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _arg(check, *extra):
    """An argparse type from an `inputs` check (its message without the field name,
    which argparse puts first)."""

    def parse(text: str):
        try:
            return check(text, "", *extra)
        except inputs.InputError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(": ")) from None

    parse.__name__ = check.__name__
    return parse


_seed = _arg(inputs.seed_text)
_jobs = _arg(inputs.positive_text, "worker processes")


def _console(quiet: bool = False):
    from rich.console import Console

    return Console(stderr=False, quiet=quiet, highlight=False)


def _progress_runner(label: str, enabled: bool):
    """A context that yields a progress callback (a rich bar on a terminal)."""
    from contextlib import contextmanager

    @contextmanager
    def ctx():
        if not enabled:
            yield None
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        with Progress(TextColumn(label), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeRemainingColumn(), transient=True) as p:
            task = p.add_task(label, total=1.0)
            yield lambda frac: p.update(task, completed=frac)

    return ctx()


def headline_table(summary: dict[str, Any], title: str):
    from rich.markup import escape
    from rich.table import Table

    b = summary["bottleneck"]
    q, u = b["queue_delay_ms"], b["utilization"]
    t = Table(title=title, title_justify="left")
    for col in ("figure", "value"):
        t.add_column(col, justify="right" if col == "value" else "left")

    def f(v, d=1):
        return "–" if v is None else f"{v:.{d}f}"

    t.add_row("AQM", b["aqm"])
    t.add_row("queueing delay p50 / p90 / p99 / max (ms)", " / ".join(f(q[k]) for k in ("p50", "p90", "p99", "max")))
    t.add_row("queueing delay mean (ms)", f(q["mean"]))
    t.add_row("utilization mean / p5 / p50", " / ".join(f(u[k], 3) for k in ("mean", "p5", "p50")))
    d = b["drops"]
    t.add_row("drops overflow / random / deterministic", f"{d['overflow']} / {d['random']} / {d['deterministic']}")
    t.add_row("marks", str(b["packets"]["marked"]))
    for name, c in summary["classes"].items():
        t.add_row(f"{escape(name)}: goodput (Mbps), Jain", f"{f(c['goodput_mbps'], 2)}, {f(c['jain_index'], 3)}")
        t.add_row(f"{escape(name)}: loss rate, retransmits, timeouts", f"{f((c['loss_rate'] or 0) * 100, 2)} %, {c['retransmits']}, {c['timeouts']}")
    t.add_row("simulated / wall (s)", f"{summary['sim_seconds']:.0f} / {summary['wall_seconds']:.3f}")
    t.add_row("events (per second)", f"{summary['events']:,} ({(summary['events_per_second'] or 0) / 1e6:.1f} M/s)")
    return t


def cmd_run(a: argparse.Namespace) -> int:
    from . import results
    from .scenario import source

    try:
        src = source(a.scenario)
        resolved = json.loads(_core.resolve_scenario(src.text, src.format, a.set, a.seed, src.base_dir))
    except _core.ScenarioError as e:
        return _err(str(e))
    name = resolved["name"]
    out = Path(a.out) if a.out else Path("runs") / f"{name}-seed{resolved['seed']}"
    try:
        results.check_out_dir(inputs.writable_dir(out))
        inputs.check_memory(inputs.estimate(src.text, src.format, a.set, a.seed, src.base_dir))
    except FileExistsError as e:
        return _err(str(e))
    con = _console(a.quiet)
    show_bar = sys.stderr.isatty() and not a.quiet
    t0 = time.perf_counter()
    interrupts.note(f"the run was stopped; nothing written to {out}")
    try:
        with _progress_runner(f"{name}", show_bar) as cb:
            raw = _core.run(src.text, src.format, a.set, a.seed, cb, src.base_dir)
        r = results.RunResult(raw)
        r.write(out, report=not a.no_report)
    except _core.ScenarioError as e:
        return _err(str(e))
    except _core.SimulationError as e:
        return _err(str(e), 1)
    interrupts.note(None)
    elapsed = time.perf_counter() - t0
    con.print(headline_table(r.summary, f"{name} (seed {r.meta['seed']})"))
    con.print(f"wrote {out}/ (summary.json, packets/flows/timeseries.parquet{', report.html' if not a.no_report else ''}) in {elapsed:.2f} s")
    return 0


def cmd_list(a: argparse.Namespace) -> int:
    aqms = json.loads(_core.aqm_catalog())
    traffic = json.loads(_core.traffic_catalog())
    scen = _core.builtin_scenarios()
    if a.json:
        descr = {n: json.loads(_core.resolve_scenario(t)).get("description", "") for n, t in scen}
        print(json.dumps({"scenarios": descr, "default_scenario": scen[0][0], "aqms": aqms, "traffic": traffic}, indent=2))
        return 0
    from rich.table import Table

    con = _console()
    t = Table(title="Built-in scenarios (aqmlab run NAME)", title_justify="left")
    t.add_column("name")
    t.add_column("description")
    for i, (n, text) in enumerate(scen):
        d = json.loads(_core.resolve_scenario(text)).get("description", "")
        t.add_row(n + (" (default)" if i == 0 else ""), d)
    con.print(t)
    for k in aqms:
        t = Table(title=f"AQM kind = \"{k['kind']}\": {k['title']} — {k['source']}", title_justify="left")
        t.add_column("parameter")
        t.add_column("default")
        t.add_column("meaning and source")
        for p in k["params"]:
            t.add_row(p["name"], json.dumps(p["default"]), p["doc"])
        if not k["params"]:
            t.add_row("(none)", "", "the limit is the link's buffer")
        con.print(t)
    t = Table(title=f"Flow kinds: {', '.join(traffic['kinds'])}; TCP settings (flows.N.tcp)", title_justify="left")
    t.add_column("setting")
    t.add_column("default")
    for k, v in traffic["tcp"].items():
        t.add_row(k, json.dumps(v))
    con.print(t)
    t = Table(title='Palermo-like receiver: tcp.receiver = { kind = "palermo", ... } (docs/receivers.md)', title_justify="left")
    t.add_column("parameter")
    t.add_column("default")
    t.add_column("meaning")
    for k, v in traffic["palermo"].items():
        t.add_row(k, json.dumps(v), traffic["palermo_doc"].get(k, ""))
    con.print(t)
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from .scenario import source

    try:
        src = source(a.scenario)
        print(json.dumps(json.loads(_core.resolve_scenario(src.text, src.format, a.set, a.seed, src.base_dir)), indent=2))
    except _core.ScenarioError as e:
        return _err(str(e))
    return 0


def cmd_emulate(a: argparse.Namespace) -> int:
    from . import emulate as emu

    if a.cleanup:
        try:
            emu.netns.preflight()
        except emu.EmulationError as e:
            return _err(str(e), 1)
        found = emu.cleanup_all()
        print(emu.netns.describe_removed(found))
        return 0
    return emu.cli_run(a, headline_table, _err, _console, _progress_runner)


def cmd_bench(a: argparse.Namespace) -> int:
    from . import bench

    if a.scaling:
        return bench.scaling(a)
    return bench.main(a)


def _grid_from_args(a: argparse.Namespace):
    from . import grid as g
    from .sweeps import build_grid

    spec = a.spec
    if spec is None and a.scenario is None:
        raise g.SweepSpecError("sweep: give a sweep file, or a base scenario with --vary (see aqmlab sweep --help)")
    vary = {}
    for text in a.vary:
        k, raw = g.parse_assignment(text, "--vary")
        vary[k] = [g.parse_literal(v) for v in g.split_values(raw)]
    zips = []
    for text in a.zip:
        zk = {}
        for part in text.split(";"):
            k, raw = g.parse_assignment(part, "--zip")
            zk[k] = [g.parse_literal(v) for v in g.split_values(raw)]
        zips.append(zk)
    fixed = {}
    for text in a.set:
        k, raw = g.parse_assignment(text, "--set")
        fixed[k] = g.parse_literal(raw)
    seeds = g.parse_seeds(a.seeds) if a.seeds else None
    return build_grid(spec, scenario=a.scenario, vary=vary, zip=zips, set=fixed, seeds=seeds)


def cmd_sweep(a: argparse.Namespace) -> int:
    from . import sweeps as sw

    try:
        grid = _grid_from_args(a)
        plan = grid.plan()
        inputs.writable_dir(a.out)
        sw.check_sweep_dir(Path(a.out), plan, force=a.force)
    except _core.ScenarioError as e:
        return _err(str(e))
    except FileExistsError as e:
        return _err(str(e))
    con = _console(a.quiet)
    dims = " × ".join(f"{d.name} ({len(d.levels)})" for d in grid.dimensions) or "no varied field"
    con.print(f"sweep {grid.name}: {len(plan)} runs = {dims} × {len(grid.seeds or [None])} seed(s); base {plan.origin}")
    if a.dry_run:
        for r in plan.runs:
            con.print(f"  {r.name}")
        return 0
    interrupts.note(f"nothing run yet; the same command starts the sweep in {a.out}")
    try:
        res = sw.run_plan(
            plan, a.out, jobs=a.jobs, cluster=a.cluster, reports=a.reports, compare=not a.no_compare,
            label=grid.name, on_failure=lambda run, err: print(f"aqmlab: run {run} failed: {err}", file=sys.stderr),
            force=a.force, on_note=lambda text: print(f"aqmlab: {text}", file=sys.stderr),
        )
    except (_core.ScenarioError, FileExistsError) as e:
        return _err(str(e))
    except RuntimeError as e:
        return _err(str(e))
    con.print(
        f"{len(plan)} runs: {res.ran} ran, {res.skipped} already done, {res.failed} failed, in {res.seconds:.1f} s; "
        f"index {a.out}/index.parquet" + (f", report {a.out}/report.html" if res.report else "")
    )
    if res.failed:
        print(f"aqmlab: {res.failed} of {len(plan)} runs failed (their errors are in {a.out}/failures/ and the index); the same command tries them again", file=sys.stderr)
    return 1 if res.failed else 0


def cmd_query(a: argparse.Namespace) -> int:
    from . import sweeps as sw

    try:
        con = sw.connect(*a.dirs)
    except (FileNotFoundError, RuntimeError) as e:
        return _err(str(e))
    import duckdb

    try:
        df = con.sql(a.sql).df()
    except duckdb.Error as e:
        return _err(str(e).splitlines()[0])
    if a.format == "csv":
        df.to_csv(sys.stdout, index=False)
    elif a.format == "json":
        print(df.to_json(orient="records", indent=2))
    else:
        from rich.table import Table

        t = Table()
        for c in df.columns:
            t.add_column(str(c), justify="right" if df[c].dtype.kind in "iuf" else "left")
        for row in df.itertuples(index=False):
            t.add_row(*("–" if v is None or (isinstance(v, float) and v != v) else (f"{v:.4g}" if isinstance(v, float) else str(v)) for v in row))
        _console().print(t)
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from . import comparison as compare

    dirs = [Path(d) for d in a.dirs]
    out = Path(a.out) if a.out else (dirs[0] if len(dirs) == 1 and not (dirs[0] / "summary.json").exists() else Path("comparison"))
    figs = None
    if a.figures:
        figs = [f.strip() for f in a.figures.split(",")]
        bad = [f for f in figs if f not in compare.FIGURES]
        if bad:
            return _err(f"--figures: unknown figure \"{bad[0]}\" (expected some of: {', '.join(compare.FIGURES)})")
    missing = [d for d in dirs if not d.exists()]
    if missing:
        return _err(f"compare: no folder \"{missing[0]}\"")
    try:
        inputs.writable_dir(out)
    except inputs.InputError as e:
        return _err(str(e))
    interrupts.note(f"the comparison in {out} was not finished (report.html and series.csv are written last)")
    try:
        res = compare.compare(dirs, out, figures=figs, title=a.title or "Comparison: " + ", ".join(str(d) for d in dirs))
    except FileNotFoundError as e:
        return _err(str(e))
    interrupts.note(None)
    con = _console()
    con.print(compare.table_markdown(res.table))
    con.print(f"wrote {res.report} with {len(res.figures)} figures ({', '.join(n for n, _, _ in res.figures)}) and {out}/series.csv")
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    from . import reproductions as rp

    if a.list or not a.name:
        return rp.print_list(_console())
    interrupts.note("nothing run yet")
    try:
        return rp.main(a.name, out=a.out, quick=a.quick, jobs=a.jobs, cluster=a.cluster, console=_console(), seeds=a.seeds, force=a.force)
    except (_core.ScenarioError, KeyError, FileExistsError, RuntimeError) as e:
        return _err(str(e).strip("'\""))


def cmd_validate(a: argparse.Namespace) -> int:
    from . import ns3

    con = _console()
    if a.seeds < 2:
        return _err(f"validate: --seeds: {a.seeds} (at least 2, for the seed-to-seed spread)")
    interrupts.note(f"finished runs are kept in {a.out}; the same command resumes the validation")
    try:
        from .ns3 import validate as val

        cases = val.cases_by_name(a.cases)
        v = val.validate([c.name for c in cases], seeds=a.seeds, out=a.out, quick=a.quick, jobs=a.jobs, align=not a.no_align, extra=a.set, console=con)
    except (ns3.Ns3Unavailable, ns3.NotTranslatable, ValueError, RuntimeError, _core.ScenarioError) as e:
        return _err(f"{e} (finished runs are kept; the validation resumes when started again)" if isinstance(e, RuntimeError) else str(e))
    con.print(f"{v.agreeing} of {len(v.rows)} figures agree (within the seed-to-seed spread, 10 %, or the floor); table in {a.out}/validation.md")
    for r in v.rows:
        if not r.agrees:
            con.print(f"  differs: {r.case}: {r.figure}: aqmlab {r.aqmlab[0]:.4g} vs ns-3 {r.ns3[0]:.4g} (tolerance {r.tolerance:.3g})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aqmlab", description="A lab for active queue management: simulate AQMs and TCP at a bottleneck.")
    p.add_argument("--version", action="version", version=f"aqmlab {_core.__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("scenario", nargs="?", default=None, help="a .toml file or a built-in name (default: the built-in default, madpie-proof)")
        sp.add_argument("--seed", type=_seed, default=None, help="the run's seed, 0 to 2^64 - 1 (overrides the scenario's)")
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field by its dotted path, e.g. bottleneck.aqm.kind=droptail (repeatable)")

    r = sub.add_parser("run", help="run a scenario and write its results")
    common(r)
    r.add_argument("--out", default=None, help="output folder (default: runs/NAME-seedN)")
    r.add_argument("--no-report", action="store_true", help="skip report.html and the figures")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    r.set_defaults(fn=cmd_run)

    ls = sub.add_parser("list", help="list built-in scenarios, AQMs with their parameters, and TCP settings")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)

    sh = sub.add_parser("show", help="print a scenario with every default filled in")
    common(sh)
    sh.set_defaults(fn=cmd_show)

    e = sub.add_parser("emulate", help="run a scenario on real Linux TCP through a userspace bottleneck (root; namespaces and TUN)")
    common(e)
    e.add_argument("--out", default=None, help="output folder (default: runs/NAME-seedN-emulated)")
    e.add_argument("--no-report", action="store_true", help="skip report.html and the figures")
    e.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    e.add_argument("--trace", default=None, metavar="FILE", help="a Mahimahi delivery trace (one time in ms per line) for the senders-to-receivers direction instead of bottleneck.rate")
    e.add_argument("--cleanup", action="store_true", help="remove namespaces, devices and processes left by killed runs, then exit")
    e.set_defaults(fn=cmd_emulate)

    b = sub.add_parser("bench", help="time whole runs of a scenario (release build)")
    common(b)
    b.add_argument("--repeat", type=_arg(inputs.positive_text, "runs"), default=3, help="runs to time (the best and median are reported)")
    b.add_argument("--no-packets", action="store_true", help="turn per-packet records off (record.packets = false)")
    b.add_argument("--vs", choices=["ns3"], default=None, help="also run the scenario's ns-3 twin (pip install 'aqmlab[ns3]') and print the speed ratio")
    b.add_argument("--suite", action="store_true", help="time the reference scenarios of docs/performance.md (the scenario argument is ignored)")
    b.add_argument("--scaling", action="store_true", help="the scaling table instead: wall time, events/s, packets/s and peak memory as the bottleneck rate (10 Mbps to 10 Gbps) and the flows (1 to 10,000) grow, summaries only (docs/performance.md); --repeat runs per point")
    b.add_argument("--quick", action="store_true", help="with --scaling: leave out the 10,000-flow point and the 60 s memory run")
    b.add_argument("--json", default=None, metavar="FILE", help="with --suite or --scaling: also write the figures as JSON")
    b.set_defaults(fn=cmd_bench)

    sw = sub.add_parser(
        "sweep",
        help="run every combination of varied fields and seeds, in parallel, with an index (docs/sweeps.md)",
        description="Run a grid of scenarios. SPEC is a sweep file (TOML: scenario, seeds, [set], [vary], [[zip]], [levels.NAME]) "
        "or a base scenario (built-in name or scenario file) to combine with --vary/--seeds.",
    )
    sw.add_argument("spec", nargs="?", default=None, help="a sweep file, or a base scenario")
    sw.add_argument("--out", required=True, help="the sweep folder (resumed if it holds the same sweep)")
    sw.add_argument("--scenario", default=None, help="the base scenario (replaces the spec's)")
    sw.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...", help="vary a field over values, crossed with the others (repeatable)")
    sw.add_argument("--zip", action="append", default=[], metavar="K1=A,B;K2=C,D", help="vary fields together, element by element (repeatable)")
    sw.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fix a field for every run (repeatable)")
    sw.add_argument("--seeds", default=None, help="a count (1..N) or a list (1,2,7)")
    sw.add_argument("--jobs", "-j", type=_jobs, default=None, help="local worker processes (default: all cores; 1 runs in this process)")
    sw.add_argument("--cluster", default=None, metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (the folder must be shared)")
    sw.add_argument("--reports", action="store_true", help="write report.html and figures for every run (slow)")
    sw.add_argument("--no-compare", action="store_true", help="skip the sweep's comparison report")
    sw.add_argument("--dry-run", action="store_true", help="validate and list the runs, run nothing")
    sw.add_argument("--force", action="store_true", help="replace a different sweep already in --out (the runs both share are kept)")
    sw.add_argument("--quiet", "-q", action="store_true")
    sw.set_defaults(fn=cmd_sweep)

    q = sub.add_parser("query", help="SQL (DuckDB) over sweep folders: views runs, flows, timeseries, packets")
    q.add_argument("dirs", nargs="+", metavar="DIR", help="sweep folders, then the SQL as the last argument")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table")
    q.set_defaults(fn=cmd_query)

    c = sub.add_parser("compare", help="put runs or sweeps side by side: a table and figures in report.html")
    c.add_argument("dirs", nargs="+", metavar="DIR", help="run folders or sweep folders")
    c.add_argument("--out", default=None, help="output folder (default: the sweep folder when one is given, else ./comparison)")
    c.add_argument("--figures", default=None, help="a comma-separated subset of: queue_delay_cdf, utilization_cdf, queue_delay_time, drop_causes, goodput, cbr_goodput_delay, download_times, bulk_goodput_cdf, flow_traces")
    c.add_argument("--title", default=None)
    c.set_defaults(fn=cmd_compare)

    rp = sub.add_parser("reproduce", help="re-run an experiment of the source papers: figures and the paper's claims beside ours")
    rp.add_argument("name", nargs="?", default=None, help="the experiment (aqmlab reproduce --list)")
    rp.add_argument("--list", action="store_true", help="list the reproductions and what each needs")
    rp.add_argument("--quick", action="store_true", help="the short version (fewer seeds, shorter runs)")
    rp.add_argument("--out", default=None, help="output folder (default: reproductions/NAME[-quick])")
    rp.add_argument("--jobs", "-j", type=_jobs, default=None)
    rp.add_argument("--cluster", default=None, metavar="ADDRESS")
    rp.add_argument("--seeds", type=_arg(inputs.positive_text, "seeds"), default=None, help="override the number of seeds")
    rp.add_argument("--force", action="store_true", help="replace a different run of the reproduction already in --out (other seeds or --quick)")
    rp.set_defaults(fn=cmd_reproduce)

    va = sub.add_parser("validate", help="cross-validate against ns-3 3.44 (pip install 'aqmlab[ns3]'): the same scenarios in both, side by side")
    va.add_argument("reference", choices=["ns3"], help="the reference simulator")
    va.add_argument("cases", nargs="*", help="cases of the standard set (default: all of it; see docs/validation.md)")
    va.add_argument("--seeds", type=int, default=5, help="seeds per case and simulator (default 5)")
    va.add_argument("--quick", action="store_true", help="runs of at most 60 s")
    va.add_argument("--out", default="validation-ns3", help="output folder (resumes the runs already in it)")
    va.add_argument("--jobs", type=_jobs, default=None, help="parallel runs (default: the number of cores)")
    va.add_argument("--no-align", action="store_true", help="keep aqmlab's Linux-like TCP defaults instead of ns-3's handshake, RTO and ACK policy")
    va.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a field in every case (both simulators); flows.{tcp}.… applies to every TCP group")
    va.set_defaults(fn=cmd_validate)

    from .analysis.cli import add_parser as add_analyze

    add_analyze(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `aqmlab` command. Every subcommand runs inside `interrupts.handling()`: a
    first Ctrl-C or SIGTERM stops it cleanly with one line and exit code 130 or 143,
    a second forces; bad input is one line and exit code 2."""
    with interrupts.handling():
        try:
            try:
                args = build_parser().parse_args(argv)
            except SystemExit as e:  # usage errors (one line), --help, --version
                return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            if args.cmd == "query":
                if len(args.dirs) < 2:
                    return _err("query: give one or more sweep folders, then the SQL")
                args.sql = args.dirs.pop()
            code = args.fn(args)
            interrupts.check()  # a signal whose exception a finalizer swallowed
            return code
        except KeyboardInterrupt as e:
            print(interrupts.message(e), file=sys.stderr)
            return interrupts.exit_code(e)
        except BrokenPipeError:
            return 0
        except (_core.ScenarioError, FileExistsError) as e:
            # input checks of any command that did not catch them itself
            return _err(str(e))


if __name__ == "__main__":
    sys.exit(main())
