"""The `aqmlab` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _core


def _err(msg: str, code: int = 2) -> int:
    print(f"aqmlab: error: {msg}", file=sys.stderr)
    return code


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
        results.check_out_dir(out)
    except FileExistsError as e:
        return _err(str(e))
    con = _console(a.quiet)
    show_bar = sys.stderr.isatty() and not a.quiet
    t0 = time.perf_counter()
    try:
        with _progress_runner(f"{name}", show_bar) as cb:
            raw = _core.run(src.text, src.format, a.set, a.seed, cb, src.base_dir)
    except _core.ScenarioError as e:
        return _err(str(e))
    except _core.SimulationError as e:
        return _err(str(e), 1)
    except KeyboardInterrupt:
        print("aqmlab: interrupted; nothing written", file=sys.stderr)
        return 130
    r = results.RunResult(raw)
    try:
        r.write(out, report=not a.no_report)
    except KeyboardInterrupt:
        print("aqmlab: interrupted; nothing written", file=sys.stderr)
        return 130
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


def cmd_bench(a: argparse.Namespace) -> int:
    from . import bench

    return bench.main(a)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aqmlab", description="A lab for active queue management: simulate AQMs and TCP at a bottleneck.")
    p.add_argument("--version", action="version", version=f"aqmlab {_core.__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("scenario", nargs="?", default=None, help="a .toml file or a built-in name (default: the built-in default, madpie-proof)")
        sp.add_argument("--seed", type=int, default=None, help="the run's seed (overrides the scenario's)")
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

    b = sub.add_parser("bench", help="time whole runs of a scenario (release build)")
    common(b)
    b.add_argument("--repeat", type=int, default=3, help="runs to time (the best and median are reported)")
    b.add_argument("--no-packets", action="store_true", help="turn per-packet records off (record.packets = false)")
    b.add_argument("--vs", choices=["ns3"], default=None, help="also run the scenario's ns-3 twin (pip install 'aqmlab[ns3]') and print the speed ratio")
    b.set_defaults(fn=cmd_bench)

    from .analysis.cli import add_parser as add_analyze

    add_analyze(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
