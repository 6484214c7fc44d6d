"""Sweeps: many runs in parallel, resumable, with one index that DuckDB queries.

    >>> import aqmlab
    >>> s = aqmlab.sweep("madpie-proof", vary={"bottleneck.aqm.kind": ["pie", "droptail"],
    ...                                        "bottleneck.delay": ["48ms", "248ms"]},
    ...                  seeds=5, set={"duration": "100s"}, out="sweeps/proof")
    >>> s.query('select "param.bottleneck.aqm.kind", avg("bottleneck.queue_delay_ms.p95") from runs group by 1')

A sweep folder holds::

    sweep.json        the grid (base scenario, fixed settings, dimensions, seeds) and its runs
    runs/NAME/        one run folder per combination and seed (docs/outputs.md)
    failures/NAME.json  the error of each run that failed (retried on the next start)
    index.parquet     one row per run: parameters, seed, status, error, headline figures
    report.html, figures/   the comparison of the runs (aqmlab compare)

Runs execute in a process pool over the local cores (``jobs``), or on a Dask
distributed cluster (``cluster``: a scheduler address or a ``distributed.Client``).
A run is done when its folder with summary.json exists: run folders are written
atomically, so a sweep that is killed resumes where it stopped. A run that fails is
recorded with its error and the others go on.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import _core, grid as _grid
from .grid import Grid, Plan, RunSpec, SweepSpecError

INDEX = "index.parquet"
SWEEP_JSON = "sweep.json"
FIXED_COLUMNS = ("run", "status", "error", "seed", "dir", "hash")
PARAM_PREFIX = "param."


# -- one run (in a worker process, or a Dask worker) -----------------------------------


def execute(task: Mapping[str, Any]) -> dict[str, Any]:
    """Run one scenario and write its folder. Never raises: failures are returned."""
    from .results import RunResult

    t0 = time.perf_counter()
    try:
        raw = _core.run(task["scenario"], "json", [], None, None)
        r = RunResult(raw)
        r.write(task["dir"], report=bool(task.get("report")))
        return {"run": task["run"], "status": "ok", "seconds": time.perf_counter() - t0}
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a Rust panic arrives as a BaseException
        return {
            "run": task["run"],
            "status": "failed",
            "error": f"{type(e).__name__}: {e}".strip().splitlines()[0] if str(e) else type(e).__name__,
            "traceback": traceback.format_exc(),
            "seconds": time.perf_counter() - t0,
        }


def _worker_init(parent: int) -> None:
    # Ctrl-C goes to the whole process group; the parent decides what happens.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    # A parent killed outright (SIGKILL) cannot stop its workers: they stop themselves.
    # The run in progress is lost; its half-written folder is removed on the next start.
    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    import threading

    threading.Thread(target=watch, name="aqmlab-parent-watch", daemon=True).start()


# -- executors ----------------------------------------------------------------------


def _local(tasks: list[dict[str, Any]], jobs: int) -> Iterator[dict[str, Any]]:
    if jobs <= 1:
        for t in tasks:
            yield execute(t)
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")  # no fork of a process with threads (the progress bar)
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),))
    pending = {ex.submit(execute, t): t for t in tasks}
    try:
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                t = pending.pop(f)
                try:
                    yield f.result()
                except BrokenProcessPool as e:
                    yield {"run": t["run"], "status": "failed", "error": f"worker process died: {e}"}
        ex.shutdown(wait=True)
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        for p in list(getattr(ex, "_processes", {}).values()):
            p.terminate()
        raise


def _check_workers(client: Any, out: Path) -> None:
    """The workers must see the output folder (a shared filesystem) and run this aqmlab."""
    from . import __version__

    seen = client.run(os.path.isdir, str(out))
    blind = [w for w, ok in seen.items() if not ok]
    if blind:
        raise RuntimeError(f"--cluster: the Dask workers {', '.join(blind[:3])} cannot see {out}; the output folder must be on a filesystem shared with the workers")
    versions = client.run(_aqmlab_version)
    other = {w: v for w, v in versions.items() if v != __version__}
    if other:
        w, v = next(iter(other.items()))
        raise RuntimeError(f"--cluster: worker {w} runs aqmlab {v}, this client {__version__}; install the same version on the workers")


def _aqmlab_version() -> str:
    import aqmlab

    return aqmlab.__version__


def _dask(tasks: list[dict[str, Any]], cluster: Any, out: Path) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the environment
        raise RuntimeError("--cluster needs dask.distributed: pip install 'aqmlab[sweep]'") from None
    own = not hasattr(cluster, "submit")
    client = Client(cluster, timeout="30s") if own else cluster
    try:
        _check_workers(client, out)
        futs = {client.submit(execute, t, key=f"aqmlab-run-{t['run']}", pure=False): t for t in tasks}
        try:
            for f in as_completed(futs):
                t = futs[f]
                try:
                    yield f.result()
                except Exception as e:  # KilledWorker, a lost worker...
                    yield {"run": t["run"], "status": "failed", "error": f"{type(e).__name__}: {e}"}
        except BaseException:
            client.cancel(list(futs))
            raise
    finally:
        if own:
            client.close()


# -- the sweep ----------------------------------------------------------------------


@dataclass
class SweepResult:
    out: Path
    plan: Plan
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    seconds: float = 0.0
    report: Optional[Path] = None
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def index_path(self) -> Path:
        return self.out / INDEX

    def index(self):
        """The index as a pandas DataFrame."""
        import pyarrow.parquet as pq

        return pq.read_table(self.index_path).to_pandas()

    def query(self, sql: str):
        """A DuckDB query over the sweep (views `runs`, `flows`, `timeseries`, `packets`); a DataFrame."""
        return query(self.out, sql)

    def run_dir(self, run: RunSpec | str) -> Path:
        return self.out / "runs" / (run if isinstance(run, str) else run.name)

    def load(self):
        """The sweep folder as an `aqmlab.Sweep` (runs, series, figures)."""
        from .folders import Sweep

        return Sweep(self.out)

    def plot(self, kind: str, **style: Any):
        """A matplotlib Figure of the sweep's series (`aqmlab.plots.kinds()`)."""
        return self.load().plot(kind, **style)

    def _repr_html_(self) -> str:
        return self.load()._repr_html_()


class SweepFailed(RuntimeError):
    """Every run of a sweep failed (the message gives the first error)."""


def build_grid(
    spec: Union[str, os.PathLike[str], Grid, Mapping[str, Any], None] = None,
    *,
    scenario: Any = None,
    vary: Optional[Mapping[str, Sequence[Any]]] = None,
    zip: Union[Mapping[str, Sequence[Any]], Sequence[Mapping[str, Sequence[Any]]], None] = None,
    levels: Optional[Mapping[str, Mapping[str, Mapping[str, Any]]]] = None,
    set: Optional[Mapping[str, Any]] = None,
    seeds: Union[int, Sequence[int], None] = None,
) -> Grid:
    """A grid from a spec (file, dict or Grid) and/or keyword arguments; keywords win."""
    if isinstance(spec, Grid):
        g = spec
    elif isinstance(spec, Mapping):
        g = _grid.from_dict(spec)
    elif spec is not None:
        p = Path(spec)
        if p.suffix == ".toml" and p.exists() and not _grid.is_scenario_file(p):
            g = _grid.load_spec(p)
        else:  # a built-in scenario name or a scenario file
            g = Grid(scenario=str(spec))
    else:
        g = Grid()
    if scenario is not None:
        g.scenario = scenario
    for k, v in (set or {}).items():
        g._drop(k)
        g.set[k] = v
    for k, vals in (vary or {}).items():
        g.vary(k, list(vals))
    for z in ([zip] if isinstance(zip, Mapping) else list(zip or [])):
        g.zip(z)
    for name, table in (levels or {}).items():
        g.named(name, table)
    if seeds is not None:
        g.seeds = _grid._seeds(seeds if isinstance(seeds, int) else list(seeds), "seeds")
    return g


def _progress(total: int, enabled: bool, label: str):
    from contextlib import contextmanager

    @contextmanager
    def ctx():
        if not enabled:
            yield lambda ok: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        cols = [
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TextColumn("[red]{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
        ]
        with Progress(*cols, transient=False) as p:
            task = p.add_task(label, total=total, failed=0)
            failed = 0

            def step(ok: bool) -> None:
                nonlocal failed
                failed += 0 if ok else 1
                p.update(task, advance=1, failed=failed)

            yield step

    return ctx()


def check_sweep_dir(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise FileExistsError(f"--out: \"{out}\" exists and is not a directory")
        if any(out.iterdir()) and not (out / SWEEP_JSON).exists():
            raise FileExistsError(f"--out: \"{out}\" is not empty and does not hold an aqmlab sweep; choose another folder")


def _clean_temporaries(runs_dir: Path) -> None:
    """Half-written folders of runs killed while writing (never a finished run)."""
    if runs_dir.exists():
        for p in runs_dir.iterdir():
            if p.name.startswith(".") and (".tmp-" in p.name or ".old-" in p.name):
                shutil.rmtree(p, ignore_errors=True)


def run_plan(
    plan: Plan,
    out: Union[str, os.PathLike[str]],
    *,
    jobs: Optional[int] = None,
    cluster: Any = None,
    reports: bool = False,
    compare: bool = True,
    progress: Optional[bool] = None,
    label: str = "sweep",
    on_failure: Optional[Callable[[str, str], None]] = None,
    extra: Optional[Mapping[str, Any]] = None,
    command: Optional[Sequence[str]] = None,
) -> SweepResult:
    """Run (or resume) the runs of a validated plan into `out`; manifest.json records
    how (the command line, host, versions, start and wall time of this sitting)."""
    from . import manifest as _manifest

    out = Path(out).absolute()
    check_sweep_dir(out)
    runs_dir, fail_dir = out / "runs", out / "failures"
    runs_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out / SWEEP_JSON, {
        "format_version": 1,
        "aqmlab_version": _core.__version__,
        "grid": plan.grid.describe(),
        "origin": plan.origin,
        **(dict(extra) if extra else {}),
        "runs": [{"run": r.name, "seed": r.seed, "params": r.params, "hash": r.hash, "overrides": list(r.overrides)} for r in plan.runs],
    })
    _clean_temporaries(runs_dir)
    todo = [r for r in plan.runs if not (runs_dir / r.name / "summary.json").exists()]
    res = SweepResult(out, plan, skipped=len(plan.runs) - len(todo))
    for r in todo:
        (fail_dir / f"{r.name}.json").unlink(missing_ok=True)
    tasks = [{"run": r.name, "scenario": r.scenario_json(), "dir": str(runs_dir / r.name), "report": reports} for r in todo]
    if jobs is None:
        jobs = os.cpu_count() or 1
    show = sys.stderr.isatty() if progress is None else progress
    started = _manifest.now_utc()
    t0 = time.perf_counter()
    try:
        if tasks:
            results = _dask(tasks, cluster, out) if cluster is not None else _local(tasks, jobs)
            with _progress(len(tasks), show, label) as step:
                for rec in results:
                    ok = rec["status"] == "ok"
                    if ok:
                        res.ran += 1
                    else:
                        res.failed += 1
                        res.failures[rec["run"]] = rec["error"]
                        fail_dir.mkdir(exist_ok=True)
                        _write_json(fail_dir / f"{rec['run']}.json", rec)
                        if on_failure:
                            on_failure(rec["run"], rec["error"])
                    step(ok)
    finally:
        res.seconds = time.perf_counter() - t0
        write_index(out, plan)
    if compare and (res.ran + res.skipped) > 0:
        from . import comparison as _compare

        from .progress import steps

        with steps("comparison", show) as step:
            res.report = _compare.compare([out], out=out, title=f"{plan.grid.name}: {len(plan.runs)} runs", quiet=True, progress=step,
                                          parallel=cluster is None).report  # no fork beside a Dask client's threads
    _write_json(out / _manifest.NAME, _manifest.make(started=started, wall_seconds=time.perf_counter() - t0, command=command,
                                                       runs={"planned": len(plan.runs), "ran": res.ran, "skipped": res.skipped, "failed": res.failed}))
    return res


def sweep(
    spec: Union[str, os.PathLike[str], Grid, Mapping[str, Any], None] = None,
    *,
    out: Union[str, os.PathLike[str]],
    scenario: Any = None,
    vary: Optional[Mapping[str, Sequence[Any]]] = None,
    zip: Union[Mapping[str, Sequence[Any]], Sequence[Mapping[str, Sequence[Any]]], None] = None,
    levels: Optional[Mapping[str, Mapping[str, Mapping[str, Any]]]] = None,
    set: Optional[Mapping[str, Any]] = None,
    seeds: Union[int, Sequence[int], None] = None,
    jobs: Optional[int] = None,
    cluster: Any = None,
    reports: bool = False,
    compare: bool = True,
    progress: Optional[bool] = None,
) -> SweepResult:
    """Run every combination of a grid in parallel into one folder with an index.

    Every combination is validated before anything runs or is written; a sweep that
    is stopped resumes where it stopped when started again with the same `out`.

    Args:
        spec: a sweep file (TOML), a dict with its keys, a `Grid`, or a base scenario
            (built-in name or scenario file); the keywords add to it.
        out: the sweep folder (resumed when it holds the same sweep).
        scenario: the base scenario (replaces the spec's).
        vary: keys to cross, each with its values: ``{"bottleneck.delay": ["48ms", "248ms"]}``.
        zip: keys varied together, element by element (a dict, or a list of dicts).
        levels: named levels: ``{"aqm": {"PIE": {"bottleneck.aqm.kind": "pie"}}}``.
        set: fields fixed for every run.
        seeds: a count (1..N) or a list of seeds.
        jobs: local worker processes (default: all cores).
        cluster: a Dask scheduler address or a `distributed.Client` (the folder must
            be shared with the workers).
        reports: also write report.html for every run.
        compare: write the sweep's comparison report (report.html, figures/).
        progress: show progress bars (default: when stderr is a terminal).

    Returns:
        A `SweepResult`: counts, `.query(sql)`, `.index()`, `.load()` (an `aqmlab.Sweep`).

    Raises:
        SweepFailed: every run failed (a script that sweeps then exits non-zero); with
            some failures it returns, and `failed` and `failures` say which.
        ScenarioError: a combination is not a valid scenario (nothing is run).
    """
    g = build_grid(spec, scenario=scenario, vary=vary, zip=zip, levels=levels, set=set, seeds=seeds)
    plan = g.plan()
    check_sweep_dir(Path(out))
    res = run_plan(plan, out, jobs=jobs, cluster=cluster, reports=reports, compare=compare, progress=progress, label=g.name)
    if res.failed and not res.ran and not res.skipped:
        first = next(iter(res.failures.items()))
        raise SweepFailed(f"sweep: all {res.failed} runs failed (errors in {Path(out) / 'failures'}/); the first, {first[0]}: {first[1]}")
    return res


# -- the index ----------------------------------------------------------------------


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """summary.json as dotted columns: {"bottleneck": {"drops": {"random": 3}}} -> bottleneck.drops.random."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        elif isinstance(v, (list, tuple)):
            out[key] = json.dumps(v)
        else:
            out[key] = v
    return out


def index_rows(out: Path, plan: Plan) -> list[dict[str, Any]]:
    rows = []
    for r in plan.runs:
        d = out / "runs" / r.name
        row: dict[str, Any] = {"run": r.name, "status": "pending", "error": None, "seed": r.seed, "dir": f"runs/{r.name}", "hash": r.hash}
        for k, v in r.params.items():
            row[PARAM_PREFIX + k] = _grid.display(v) if isinstance(v, Mapping) else v
        summ = d / "summary.json"
        fail = out / "failures" / f"{r.name}.json"
        if summ.exists():
            row["status"] = "ok"
            s = json.loads(summ.read_text())
            for k, v in flatten(s).items():
                if k not in row:
                    row[k] = v
        elif fail.exists():
            row["status"] = "failed"
            row["error"] = json.loads(fail.read_text()).get("error")
            row["scenario"] = r.scenario.get("name")
        rows.append(row)
    return rows


def write_index(out: Path, plan: Plan) -> Path:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = index_rows(out, plan)
    df = pd.DataFrame(rows)
    for c in df.columns:
        if df[c].dtype == object:
            types = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and v != v)}
            if len(types) > 1 and not types <= {int, float}:
                df[c] = [None if v is None else (v if isinstance(v, str) else _grid.toml_literal(v)) for v in df[c]]
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({
        b"aqmlab.format_version": b"1",
        b"aqmlab.version": _core.__version__.encode(),
        b"aqmlab.sweep": json.dumps(plan.grid.describe()).encode(),
    })
    path = out / INDEX
    tmp = out / f".{INDEX}.tmp-{os.getpid()}"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


# -- queries ------------------------------------------------------------------------


def connect(*dirs: Union[str, os.PathLike[str]]):
    """A DuckDB connection with views over sweep folders: `runs` (index.parquet),
    `flows`, `timeseries`, `packets` (every run's table, with a `run` column)."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover
        raise RuntimeError("queries need duckdb: pip install 'aqmlab[sweep]'") from None
    con = duckdb.connect()
    idx = [str(Path(d) / INDEX) for d in dirs]
    for p in idx:
        if not Path(p).exists():
            raise FileNotFoundError(f"{Path(p).parent}: no {INDEX} (not a sweep folder)")
    con.execute(f"create view runs as select * from read_parquet({_sql_list(idx)}, union_by_name = true)")
    for table in ("flows", "timeseries", "packets"):
        globs = [str(Path(d) / "runs" / "*" / f"{table}.parquet") for d in dirs]
        try:
            con.execute(
                f"create view {table} as select regexp_extract(filename, '([^/\\\\]+)[/\\\\]{table}\\.parquet$', 1) as run, * exclude (filename) "
                f"from read_parquet({_sql_list(globs)}, filename = true, union_by_name = true)"
            )
        except duckdb.Error:
            pass  # no run has this table yet
    return con


def _sql_list(items: Iterable[str]) -> str:
    return "[" + ", ".join("'" + s.replace("'", "''") + "'" for s in items) + "]"


def query(dirs: Union[str, os.PathLike[str], Sequence[Union[str, os.PathLike[str]]]], sql: str):
    """Run SQL over one or more sweep folders; returns a pandas DataFrame."""
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    con = connect(*dirs)
    try:
        return con.sql(sql).df()
    finally:
        con.close()
