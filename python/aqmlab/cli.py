"""The `aqmlab` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _core, inputs, interrupts, progress


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

    from . import measures

    b = measures.headline(summary)
    q = b.get("queue_delay_ms") or {k: None for k in ("p50", "p90", "p99", "max", "mean")}
    u = b.get("utilization") or {k: None for k in ("mean", "p5", "p50")}
    t = Table(title=title, title_justify="left")
    for col in ("figure", "value"):
        t.add_column(col, justify="right" if col == "value" else "left")

    def f(v, d=1):
        return "–" if v is None else f"{v:.{d}f}"

    t.add_row("AQM" if "bottleneck" in summary else f"AQM of {summary['primary_link']}", b["aqm"])
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


def _prewarm(report: bool) -> None:
    """While the simulation runs (the core releases the GIL), import on the other core
    what writing the run folder needs (numpy, pyarrow and its Parquet writer; with the
    report also pandas, which its measures read tables with, and the report's code)
    and ask git for the manifest's commit: together they take longer than the default
    run's simulation."""
    import threading

    def imports() -> None:
        try:
            import pyarrow.parquet  # noqa: F401

            from . import results  # noqa: F401

            if report:
                from . import comparison, plots_svg  # noqa: F401
                from . import report as _report  # noqa: F401

                import pandas  # noqa: F401
                import pyarrow.compute  # noqa: F401
        except Exception:  # noqa: BLE001 - the real import reports it later
            pass

    def manifest() -> None:  # mostly waiting for git
        from . import manifest

        manifest.source_commit()
        manifest.rustc_version()

    threading.Thread(target=imports, name="aqmlab-prewarm", daemon=True).start()
    threading.Thread(target=manifest, name="aqmlab-prewarm-manifest", daemon=True).start()


def default_out(name: str, seed: int, overrides: Sequence[str]) -> Path:
    """runs/NAME-seedN, with the overrides in the name: short ones spelled out
    (runs/madpie-proof-seed1-aqm.kind=droptail), long ones as a hash of them."""
    base = f"{name}-seed{seed}"
    if not overrides:
        return Path("runs") / base
    parts = []
    for o in overrides:
        k, _, v = o.partition("=")
        key = ".".join(k.strip().split(".")[-2:])
        parts.append(f"{key}={v.strip().strip(chr(34))}")
    text = "-".join(parts)
    import re

    if len(text) > 48 or not re.fullmatch(r"[A-Za-z0-9_.=+,:-]+", text):
        import hashlib

        text = "set-" + hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
    return Path("runs") / f"{base}-{text}"


def _aqm_kind_warning(src: Any, overrides: Sequence[str], seed: Optional[int]) -> Optional[str]:
    """A warning when an override switches bottleneck.aqm.kind while the AQM had other
    parameters set (the new kind starts from its own defaults)."""
    idx = [i for i, o in enumerate(overrides) if o.partition("=")[0].strip() in ("bottleneck.aqm.kind", "bottleneck.aqm")]
    if not idx:
        return None
    before = list(overrides[: idx[-1]])
    try:
        old = json.loads(_core.resolve_scenario(src.text, src.format, before, seed, src.base_dir))
        new = json.loads(_core.resolve_scenario(src.text, src.format, list(overrides), seed, src.base_dir))
    except _core.ScenarioError:
        return None
    oa, na = old["bottleneck"]["aqm"], new["bottleneck"]["aqm"]
    if oa.get("kind") == na.get("kind"):
        return None
    sc = dict(old)
    sc["bottleneck"] = {**old["bottleneck"], "aqm": {"kind": oa["kind"]}}
    try:
        defaults = json.loads(_core.resolve_scenario(json.dumps(sc), "json", [], seed, src.base_dir))["bottleneck"]["aqm"]
    except _core.ScenarioError:
        return None
    set_params = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in oa.items() if k != "kind" and defaults.get(k) != v]
    if not set_params:
        return None
    return (f"bottleneck.aqm.kind={na['kind']} replaces the {oa['kind']} AQM and its settings ({', '.join(set_params)}); "
            f"the {na['kind']} AQM starts from its own defaults (set its parameters after the kind)")


def cmd_run(a: argparse.Namespace) -> int:
    from .manifest import make, now_utc
    from .scenario import source

    started = now_utc()
    t0 = time.perf_counter()
    try:
        src = source(a.scenario)
        resolved = json.loads(_core.resolve_scenario(src.text, src.format, a.set, a.seed, src.base_dir))
    except _core.ScenarioError as e:
        return _err(str(e))
    name = resolved["name"]
    out = Path(a.out) if a.out else default_out(name, resolved["seed"], a.set)
    from .folders import check_out_dir, is_run_dir

    try:
        check_out_dir(inputs.writable_dir(out))
        inputs.check_memory(inputs.estimate(src.text, src.format, a.set, a.seed, src.base_dir))
    except FileExistsError as e:
        return _err(str(e))
    if (warning := _aqm_kind_warning(src, a.set, a.seed)) and not a.quiet:
        print(f"aqmlab: warning: {warning}", file=sys.stderr)
    if out.is_dir() and any(out.iterdir()) and is_run_dir(out):
        print(f"aqmlab: replacing the run in {out}/", file=sys.stderr)
    show_bar = sys.stderr.isatty() and not a.quiet
    _prewarm(not a.no_report)
    interrupts.note(f"the run was stopped; nothing written to {out}")
    try:
        with _progress_runner(f"{name}", show_bar) as cb:
            raw = _core.run(src.text, src.format, a.set, a.seed, cb, src.base_dir)
        from .results import RunResult

        r = RunResult(raw)  # checks packet conservation
        man = make(started=started, wall_seconds=None, command=["aqmlab", *sys.argv[1:]] if a.argv is None else ["aqmlab", *a.argv])
        with progress.steps("report", show_bar and not a.no_report) as step:
            man["wall_seconds"] = round(time.perf_counter() - t0, 3)  # up to the end of the simulation; the files follow
            r.write(out, report=not a.no_report, manifest=man, progress=step)
    except _core.ScenarioError as e:
        return _err(str(e))
    except _core.SimulationError as e:
        return _err(str(e), 1)
    interrupts.note(None)
    elapsed = time.perf_counter() - t0
    if not a.quiet:
        con = _console()
        con.print(headline_table(r.summary, f"{name} (seed {r.meta['seed']})"))
        con.print(f"wrote {out}/ (summary.json, manifest.json, *.parquet{', report.html' if not a.no_report else ''}) in {elapsed:.2f} s")
    return 0


LIST_TOPICS = ("scenarios", "aqms", "tcp", "traffic")


def cmd_list(a: argparse.Namespace) -> int:
    topic, name = a.topic, a.name
    if topic is not None and topic not in LIST_TOPICS:  # `aqmlab list pie`: a name without a topic
        topic, name = None, topic
    aqms = json.loads(_core.aqm_catalog())
    traffic = json.loads(_core.traffic_catalog())
    ccs = json.loads(_core.cc_catalog())
    scen = _core.builtin_scenarios()
    if name is not None:
        known = {"scenarios": [n for n, _ in scen], "aqms": [k["kind"] for k in aqms], "tcp": list(traffic["tcp"]) + ["receiver"] + [c["kind"] for c in ccs], "traffic": list(traffic["kinds"])}
        topics = [topic] if topic else [t for t in LIST_TOPICS if any(name in n for n in known[t])]
        hits = {t: [n for n in known[t] if name == n] or [n for n in known[t] if name in n] for t in topics}
        if not any(hits.values()):
            where = f" {topic}" if topic else ""
            return _err(f"list{where}: nothing named \"{name}\" (aqmlab list{where} shows them all)")
    else:
        hits = {t: None for t in ([topic] if topic else LIST_TOPICS)}
    if a.json:
        out: dict[str, Any] = {}
        if "scenarios" in hits:
            out["scenarios"] = {n: json.loads(_core.resolve_scenario(t)).get("description", "") for n, t in scen if hits["scenarios"] is None or n in hits["scenarios"]}
            out["default_scenario"] = scen[0][0]
        if "aqms" in hits:
            out["aqms"] = [k for k in aqms if hits["aqms"] is None or k["kind"] in hits["aqms"]]
        if "tcp" in hits or "traffic" in hits:
            out["traffic"] = traffic
        if "tcp" in hits:
            out["congestion_controls"] = [c for c in ccs if hits["tcp"] is None or c["kind"] in hits["tcp"]]
        print(json.dumps(out, indent=2))
        return 0
    from rich.markup import escape
    from rich.table import Table

    con = _console()
    if "scenarios" in hits:
        t = Table(title="Built-in scenarios (aqmlab run NAME; aqmlab show NAME prints one)", title_justify="left")
        t.add_column("name")
        t.add_column("description")
        for i, (n, text) in enumerate(scen):
            if hits["scenarios"] is None or n in hits["scenarios"]:
                t.add_row(n + (" (default)" if i == 0 else ""), escape(json.loads(_core.resolve_scenario(text)).get("description", "")))
        con.print(t)
    if "aqms" in hits:
        sel = [k for k in aqms if hits["aqms"] is None or k["kind"] in hits["aqms"]]
        if hits["aqms"] is None and name is None:
            t = Table(title="AQMs (bottleneck.aqm.kind; aqmlab list aqms NAME for the parameters)", title_justify="left")
            for col in ("kind", "algorithm", "source", "parameters"):
                t.add_column(col, justify="right" if col == "parameters" else "left")
            for k in sel:
                t.add_row(k["kind"], escape(k["title"]), escape(k["source"]), str(len(k["params"])))
            con.print(t)
        else:
            for k in sel:
                t = Table(title=f"AQM kind = \"{k['kind']}\": {escape(k['title'])} — {escape(k['source'])}", title_justify="left")
                t.add_column("parameter")
                t.add_column("default")
                t.add_column("meaning and source")
                for p in k["params"]:
                    t.add_row(p["name"], escape(json.dumps(p["default"])), escape(p["doc"]))
                if not k["params"]:
                    t.add_row("(none)", "", "the limit is the link's buffer")
                con.print(t)
    if "traffic" in hits:
        con.print(f"Flow kinds (flows.N.kind): {', '.join(k for k in traffic['kinds'] if hits['traffic'] is None or k in hits['traffic'])}")
    if "tcp" in hits:
        sel = hits["tcp"]
        cc_sel = [c for c in ccs if sel is None or c["kind"] in sel]
        if cc_sel:
            # each congestion control's title, source and parameters come from its file (tcp/cc/*.rs)
            t = Table(title="Congestion controls (flows.N.tcp.cc; aqmlab list tcp NAME for the parameters)", title_justify="left")
            for col in ("kind", "algorithm", "source", "runs in"):
                t.add_column(col)
            for c in cc_sel:
                where = ", ".join((["simulator"] if c["simulated"] else []) + ([f"kernel ({c['linux']})"] if c["linux"] else []))
                t.add_row(c["kind"], escape(c["title"]), escape(c["source"]), where)
            con.print(t)
            for c in cc_sel if sel is not None else []:
                t = Table(title=f"tcp.cc = {{ kind = \"{c['kind']}\", ... }}", title_justify="left")
                t.add_column("parameter")
                t.add_column("default")
                t.add_column("meaning and source")
                for p in c["params"]:
                    t.add_row(p["name"], escape(json.dumps(p["default"])), escape(p["doc"]))
                if not c["params"]:
                    t.add_row("(none)", "", "no parameters: the kernel module's constants")
                con.print(t)
        if sel is None or any(k != "receiver" and k not in {c["kind"] for c in ccs} for k in sel):
            t = Table(title="TCP settings (flows.N.tcp)", title_justify="left")
            t.add_column("setting")
            t.add_column("default")
            for k, v in traffic["tcp"].items():
                if sel is None or k in sel:
                    t.add_row(k, escape(json.dumps(v)))
            con.print(t)
        if sel is None or "receiver" in sel:
            t = Table(title='Palermo-like receiver: tcp.receiver = { kind = "palermo", ... }', title_justify="left")
            t.add_column("parameter")
            t.add_column("default")
            t.add_column("meaning")
            for k, v in traffic["palermo"].items():
                t.add_row(k, escape(json.dumps(v)), escape(traffic["palermo_doc"].get(k, "")))
            con.print(t)
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from .scenario import source, to_toml

    try:
        src = source(a.scenario)
        resolved = json.loads(_core.resolve_scenario(src.text, src.format, a.set, a.seed, src.base_dir))
    except _core.ScenarioError as e:
        return _err(str(e))
    print(json.dumps(resolved, indent=2, ensure_ascii=False) if a.json else to_toml(resolved), end="\n" if a.json else "")
    return 0


def cmd_plot(a: argparse.Namespace) -> int:
    from . import plots

    if a.list:
        for name, k in plots.kinds().items():
            print(f"{name:24s} {k.caption}")
        return 0
    if not a.dirs:
        return _err("plot: give one or more run or sweep folders (aqmlab plot --list shows the kinds)")
    if a.kind not in plots.KINDS:
        return _err(f"--kind: unknown figure kind \"{a.kind}\" (expected one of: {', '.join(plots.KINDS)})")
    fmt = a.format or (Path(a.out).suffix.lstrip(".").lower() if a.out else "") or "pdf"
    out = Path(a.out) if a.out else Path(f"{a.kind}.{fmt}")
    if fmt not in ("pdf", "svg", "png"):
        return _err(f"--out: \"{out}\": unknown format \"{fmt}\" (pdf, svg or png)")
    opts: dict[str, Any] = {}
    if a.title:
        opts["title"] = a.title
    if a.facet:
        opts["facet"] = a.facet
    if a.link:
        opts["link"] = a.link
    try:
        fig = plots.figure(a.kind, a.dirs, style=a.style, width=a.width, height=a.height, **opts)
    except FileNotFoundError as e:
        return _err(str(e))
    if fig is None:
        return _err(f"plot: the runs have no data for \"{a.kind}\" (e.g. no CBR class, no downloads, or packet records off)", 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        plots.save(fig, tmp, fmt, dpi=a.dpi)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"wrote {out}")
    return 0


def cmd_completion(a: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["aqmlab"], shell=a.shell))
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
    con.print(f"{grid.name}: {len(plan)} runs = {dims} × {len(grid.seeds or [None])} seed(s); base {plan.origin}")
    if a.dry_run:
        for r in plan.runs:
            con.print(f"  {r.name}")
        return 0
    before = sum((Path(a.out) / "runs" / r.name / "summary.json").exists() for r in plan.runs)
    interrupts.note(f"no run started; {before} of {len(plan)} runs were done before, in {a.out}; the same command resumes" if before
                    else f"nothing run yet; the same command starts the sweep in {a.out}")
    try:
        res = sw.run_plan(
            plan, a.out, jobs=a.jobs, cluster=a.cluster, reports=a.reports, compare=not a.no_compare,
            label=grid.name, on_failure=lambda run, err: print(f"aqmlab: run {run} failed: {err}", file=sys.stderr),
            command=["aqmlab", *(a.argv if a.argv is not None else sys.argv[1:])],
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


def _query_args(a: argparse.Namespace) -> tuple[list[str], str]:
    """The folders and the SQL: `-e SQL DIR...`, `SQL DIR...` or `DIR... SQL`."""
    args = list(a.args)
    if a.sql is not None:
        return args, a.sql
    if len(args) < 2:
        raise ValueError("query: give the SQL and one or more sweep folders (aqmlab query 'select ...' DIR, or -e SQL)")
    if not Path(args[0]).is_dir():
        return args[1:], args[0]
    return args[:-1], args[-1]


def cmd_query(a: argparse.Namespace) -> int:
    from . import sweeps as sw

    try:
        dirs, sql = _query_args(a)
        if not dirs:
            raise ValueError("query: give one or more sweep folders")
        con = sw.connect(*dirs)
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        return _err(str(e))
    import duckdb

    try:
        df = con.sql(sql).df()
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
        from .plots import KINDS

        bad = [f for f in figs if f not in KINDS]
        if bad:
            return _err(f"--figures: unknown figure \"{bad[0]}\" (expected some of: {', '.join(KINDS)})")
    missing = [d for d in dirs if not d.exists()]
    if missing:
        return _err(f"compare: no folder \"{missing[0]}\"")
    try:
        inputs.writable_dir(out)
    except inputs.InputError as e:
        return _err(str(e))
    interrupts.note(f"the comparison in {out} was not finished (report.html and series.csv are written last)")
    try:
        with progress.steps("compare", sys.stderr.isatty()) as step:
            res = compare.compare(dirs, out, figures=figs, title=a.title or "Comparison: " + ", ".join(str(d) for d in dirs), progress=step, parallel=True)
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
    if a.reference == "linux":
        return _validate_linux(a)
    from . import ns3

    con = _console()
    if a.out is None:
        a.out = "validation-ns3"
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


def _scenario_names(**_: Any) -> list[str]:
    return [n for n, _ in _core.builtin_scenarios()]


def _validate_linux(a: argparse.Namespace) -> int:
    from .emulate import EmulationError
    from .emulate import validate as val

    con = _console()
    if a.repeats < 2:
        return _err(f"validate: --repeats: {a.repeats} (at least 2, for the kernel's run-to-run spread)")
    out = a.out or ("validation-linux-quick" if a.quick else "validation-linux")
    interrupts.note(f"finished runs are kept in {out}; the same command resumes the validation")
    try:
        cases = val.cases_by_name(a.cases, a.quick)
        v = val.validate([c.name for c in cases], repeats=a.repeats, out=a.out, quick=a.quick, jobs=a.jobs, extra=a.set,
                         sim_only=a.sim_only, console=con)
    except (ValueError, _core.ScenarioError) as e:
        return _err(str(e))
    except EmulationError as e:
        return _err(f"{e} (finished runs are kept; the validation resumes when started again)", 1)
    con.print(f"{v.agreeing} of {len(v.compared)} figures agree (within 10 %, the floor or twice the kernel's spread; timeouts within 1.5x); table in {out}/validation.md")
    for r in v.compared:
        if r.agrees is False:
            con.print(f"  differs: {r.case}: {r.figure}: aqmlab {r.aqmlab[0]:.4g} vs Linux {r.linux[0]:.4g} (tolerance {r.tolerance:.3g})")
    for name, err in v.errors.items():
        con.print(f"  not simulated: {name}: {err}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aqmlab", description="A lab for active queue management: simulate AQMs and TCP at a bottleneck.")
    p.add_argument("--version", action="version", version=f"aqmlab {_core.__version__}", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        a = sp.add_argument("scenario", nargs="?", default=None,
                            help="a .toml or .json scenario file, a run folder (its scenario.json), or a built-in name (default: madpie-proof)")
        a.completer = _scenario_names  # type: ignore[attr-defined]
        sp.add_argument("--seed", type=_seed, default=None, help="the run's seed, 0 to 2^64 - 1 (overrides the scenario's)")
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field by its dotted path, e.g. bottleneck.aqm.kind=droptail (repeatable)")

    r = sub.add_parser("run", help="run a scenario and write its results", description="Run a scenario and write its folder: tables, summary.json, manifest.json, report.html.")
    common(r)
    r.add_argument("--out", default=None, help="output folder (default: runs/NAME-seedN, plus the --set overrides or a hash of them)")
    r.add_argument("--no-report", action="store_true", help="skip report.html and its figures")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    r.set_defaults(fn=cmd_run)

    ls = sub.add_parser("list", help="list built-in scenarios, AQMs, TCP settings and flow kinds (optionally one by NAME)",
                        description="aqmlab list [scenarios|aqms|tcp|traffic] [NAME]: everything, one topic, or the entries matching NAME.")
    ls.add_argument("topic", nargs="?", default=None, help=f"one of {', '.join(LIST_TOPICS)} (default: all), or a NAME to look up")
    ls.add_argument("name", nargs="?", default=None, help="show only this entry (an exact name, else the names containing it)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ls.set_defaults(fn=cmd_list)

    sh = sub.add_parser("show", help="print a scenario with every default filled in, as TOML that aqmlab run reads")
    common(sh)
    sh.add_argument("--json", action="store_true", help="print JSON instead of TOML")
    sh.set_defaults(fn=cmd_show)

    pl = sub.add_parser("plot", help="draw one figure of runs or sweeps for a paper or slides (PDF, SVG or PNG)",
                        description="Draw one figure kind of run folders or sweep folders; runs that differ only in their seed are pooled into one series.")
    pl.add_argument("dirs", nargs="*", metavar="RUN_OR_SWEEP", help="run folders or sweep folders")
    pl.add_argument("--kind", "-k", default="queue_delay_cdf", help="the figure kind (default queue_delay_cdf; --list shows them all)")
    pl.add_argument("--format", "-f", choices=("pdf", "svg", "png"), default=None, help="the file format (default: from --out's suffix, else pdf)")
    pl.add_argument("--style", choices=("paper", "slides", "report"), default="paper", help="paper: a 3.5 in column, 8 pt; slides: large type; report: the reports' (default paper)")
    pl.add_argument("--width", type=float, default=None, help="figure width in inches (default: the style's)")
    pl.add_argument("--height", type=float, default=None, help="figure height in inches (default: the style's)")
    pl.add_argument("--dpi", type=int, default=None, help="resolution of a PNG (default 150; paper style 300)")
    pl.add_argument("--title", default=None, help="replace the figure's title")
    pl.add_argument("--facet", default=None, metavar="KEY", help="one panel per value of a series key (a sweep parameter), where the kind supports it")
    pl.add_argument("--link", default=None, help="the link to measure (default bottleneck)")
    pl.add_argument("--out", "-o", default=None, help="the output file (default KIND.FORMAT)")
    pl.add_argument("--list", action="store_true", help="list the figure kinds and exit")
    pl.set_defaults(fn=cmd_plot)

    co = sub.add_parser("completion", help="print a shell completion script: eval \"$(aqmlab completion bash)\"")
    co.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete in")
    co.set_defaults(fn=cmd_completion)

    e = sub.add_parser("emulate", help="run a scenario on real Linux TCP through a userspace bottleneck (root; namespaces and TUN)")
    common(e)
    e.add_argument("--out", default=None, help="output folder (default: runs/NAME-seedN-emulated)")
    e.add_argument("--no-report", action="store_true", help="skip report.html and the figures")
    e.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    e.add_argument("--trace", default=None, metavar="FILE", help="a Mahimahi delivery trace (one time in ms per line) for the senders-to-receivers direction instead of bottleneck.rate")
    e.add_argument("--offload", action="append", default=None, metavar="NAME=on|off", help="turn an offload of the TUN devices on or off (tso, gso, gro, sg), e.g. gro=off (repeatable)")
    e.add_argument("--cleanup", action="store_true", help="remove the namespaces, devices, processes and work folders of emulations that are over (killed runs), say what was removed, then exit")
    e.set_defaults(fn=cmd_emulate)

    b = sub.add_parser("bench", help="time whole runs of a scenario (release build)")
    common(b)
    b.add_argument("--repeat", type=_arg(inputs.positive_text, "runs"), default=3, help="runs to time (the best and median are reported)")
    b.add_argument("--no-packets", action="store_true", help="turn per-packet records off (record.packets = false)")
    b.add_argument("--vs", choices=["ns3"], default=None, help="also run the scenario's ns-3 twin (pip install 'aqmlab[ns3]') and print the speed ratio")
    b.add_argument("--suite", action="store_true", help="time the reference scenarios of the performance page (the scenario argument is ignored)")
    b.add_argument("--scaling", action="store_true", help="the scaling table instead: wall time, events/s, packets/s and peak memory as the bottleneck rate (10 Mbps to 10 Gbps) and the flows (1 to 10,000) grow, summaries only; --repeat runs per point")
    b.add_argument("--quick", action="store_true", help="with --scaling: leave out the 10,000-flow point and the 60 s memory run")
    b.add_argument("--json", default=None, metavar="FILE", help="with --suite or --scaling: also write the figures as JSON")
    b.set_defaults(fn=cmd_bench)

    sw = sub.add_parser(
        "sweep",
        help="run every combination of varied fields and seeds, in parallel, with an index",
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
    sw.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    sw.set_defaults(fn=cmd_sweep)

    q = sub.add_parser("query", help="SQL (DuckDB) over sweep folders: views runs, flows, timeseries, packets",
                       description="aqmlab query SQL DIR... (or aqmlab query DIR... -e SQL; the SQL last is accepted too).")
    q.add_argument("args", nargs="*", metavar="SQL_OR_DIR", help="the SQL and the sweep folders")
    q.add_argument("-e", "--execute", dest="sql", default=None, metavar="SQL", help="the SQL (then every argument is a folder)")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format (default table)")
    q.set_defaults(fn=cmd_query)

    c = sub.add_parser("compare", help="put runs or sweeps side by side: a table and figures in report.html")
    c.add_argument("dirs", nargs="+", metavar="DIR", help="run folders or sweep folders")
    c.add_argument("--out", default=None, help="output folder (default: the sweep folder when one is given, else ./comparison)")
    c.add_argument("--figures", default=None, help="a comma-separated subset of the figure kinds (aqmlab plot --list)")
    c.add_argument("--title", default=None, help="the report's title (default: Comparison: the folders)")
    c.set_defaults(fn=cmd_compare)

    rp = sub.add_parser("reproduce", help="re-run an experiment of the source papers: figures and the paper's claims beside ours")
    rp.add_argument("name", nargs="?", default=None, help="the experiment (aqmlab reproduce --list)")
    rp.add_argument("--list", action="store_true", help="list the reproductions and their run counts (full and --quick)")
    rp.add_argument("--quick", action="store_true", help="the short version (fewer seeds, shorter runs)")
    rp.add_argument("--out", default=None, help="output folder (default: reproductions/NAME[-quick])")
    rp.add_argument("--jobs", "-j", type=_jobs, default=None, help="local worker processes (default: all cores)")
    rp.add_argument("--cluster", default=None, metavar="ADDRESS", help="a running Dask scheduler (the folder must be shared)")
    rp.add_argument("--seeds", type=_arg(inputs.positive_text, "seeds"), default=None, help="override the number of seeds")
    rp.add_argument("--force", action="store_true", help="replace a different run of the reproduction already in --out (other seeds or --quick)")
    rp.set_defaults(fn=cmd_reproduce)

    va = sub.add_parser("validate", help="cross-validate against ns-3 3.44 (pip install 'aqmlab[ns3]') or the Linux kernel (aqmlab emulate; root): the same scenarios, side by side")
    va.add_argument("reference", choices=["ns3", "linux"], help="the reference: ns-3, or the real kernel through aqmlab emulate")
    va.add_argument("cases", nargs="*", help="cases of the standard set (default: all of it; see docs/validation.md)")
    va.add_argument("--seeds", type=int, default=5, help="ns3: seeds per case and simulator (default 5)")
    va.add_argument("--repeats", type=int, default=3, help="linux: runs per case on each side, seeds 1..N (default 3)")
    va.add_argument("--sim-only", action="store_true", help="linux: run only the simulated side (compare with the kernel runs already stored)")
    va.add_argument("--quick", action="store_true", help="ns3: runs of at most 60 s; linux: three cases of 10 s")
    va.add_argument("--out", default=None, help="output folder (resumes the runs already in it; default validation-ns3 or validation-linux)")
    va.add_argument("--jobs", type=_jobs, default=None, help="parallel runs (default: the number of cores)")
    va.add_argument("--no-align", action="store_true", help="keep aqmlab's Linux-like TCP defaults instead of ns-3's handshake, RTO and ACK policy")
    va.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a field in every case (both simulators); flows.{tcp}.… applies to every TCP group")
    va.set_defaults(fn=cmd_validate)

    from .analysis.args import add_parser as add_analyze

    add_analyze(sub)
    from .characterize.cli import add_parser as add_characterize

    add_characterize(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `aqmlab` command. Every subcommand runs inside `interrupts.handling()`: a
    first Ctrl-C or SIGTERM stops it cleanly with one line and exit code 130 or 143,
    a second forces; bad input is one line and exit code 2."""
    with interrupts.handling():
        try:
            parser = build_parser()
            if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions (aqmlab completion SHELL)
                import argcomplete

                argcomplete.autocomplete(parser)
            try:
                args = parser.parse_args(argv)
            except SystemExit as e:  # usage errors (one line), --help, --version
                return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            args.argv = list(argv) if argv is not None else None
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
