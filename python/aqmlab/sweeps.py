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
atomically, so a sweep that is interrupted or killed resumes where it stopped, and
the index is rewritten from the folders on disk whatever happens. A run whose worker
process dies (killed, out of memory) or whose Dask worker is lost is tried once more;
a run that fails is recorded with its error and the others go on.

Before anything is written, every run is validated, the output folder is checked
writable, and the memory of the largest run is checked against the machine's (fewer
local workers run at once if that many would not fit). A folder that holds a
different sweep is refused unless ``force`` (its runs that the new sweep shares are
kept, the others removed).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import _core, grid as _grid, inputs, interrupts
from .grid import Grid, Plan, RunSpec, SweepSpecError

INDEX = "index.parquet"
SWEEP_JSON = "sweep.json"
PARAM_PREFIX = "param."


# -- one run (in a worker process, or a Dask worker) -----------------------------------


def execute(task: Mapping[str, Any]) -> dict[str, Any]:
    """Run one scenario and write its folder. Never raises: failures are returned."""
    from .results import RunResult

    t0 = time.perf_counter()
    if os.environ.get("AQMLAB_TEST_DIE_ON_RUN") == task["run"] and (_in_worker or _in_dask_worker_process()):
        os._exit(9)  # for the tests: a worker process that dies while it runs this run
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


_in_worker = False


def _in_dask_worker_process() -> bool:
    """Whether this runs in a Dask worker of its own process (not in the client's)."""
    if "distributed" not in sys.modules:
        return False
    try:
        from distributed import get_worker

        return get_worker().nanny is not None  # a worker process started by a nanny
    except (ImportError, ValueError, AttributeError):
        return False


def _worker_init(parent: int) -> None:
    global _in_worker
    _in_worker = True
    # Ctrl-C goes to the whole process group; the parent decides what happens (it
    # stops the workers). The worker started with SIGINT and SIGTERM blocked (see
    # `spawning`): SIGINT stays ignored, SIGTERM gets its default action back.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    # A parent killed outright (SIGKILL) cannot stop its workers: they die with it.
    # The run in progress is lost; its half-written folder is removed on the next start.
    interrupts.die_with_parent(parent)


# -- executors ----------------------------------------------------------------------


LOST_TWICE = "lost twice"


def _lost(t: Mapping[str, Any], why: str) -> dict[str, Any]:
    return {"run": t["run"], "status": "failed", "error": f"the worker running it was {LOST_TWICE} ({why.splitlines()[0] if why else 'no reason given'})"}


@contextmanager
def spawning() -> Iterator[None]:
    """Start worker processes with SIGINT and SIGTERM blocked: a signal that arrives
    while a worker is being started waits until it is (the parent is never cut off in
    the middle of handing a new worker its start-up data), and the worker, which
    inherits the mask, cannot be interrupted in its own start-up (a traceback on the
    terminal); `_worker_init` then lets SIGTERM in again."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def new_pool(jobs: int) -> Any:
    """A process pool of fresh interpreters (no fork of a process with threads, such as
    the progress bar's) whose workers ignore Ctrl-C and die with this process."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init, initargs=(os.getpid(),))


def stop_pool(ex: Any) -> None:
    """Stop a process pool now: pending runs cancelled, workers killed and reaped
    (what a worker was writing is in a temporary folder, removed on the next start)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(5.0)


def _local(tasks: list[dict[str, Any]], jobs: int) -> Iterator[dict[str, Any]]:
    if jobs <= 1:
        for t in tasks:
            yield execute(t)
        return
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    # A worker that dies (killed, out of memory) breaks the whole pool: every run not
    # finished comes back as BrokenProcessPool. The pool runs its runs in the order
    # they were given, so the ones in progress were the first unfinished ones (at most
    # one per worker, and one queued): those are suspects, tried again one at a time in
    # a worker of their own; the others go to a new pool as if nothing had happened.
    queue, suspects = list(tasks), []
    while queue:
        ex = new_pool(min(jobs, len(queue)))
        order, queue = queue, []
        unfinished = {t["run"]: t for t in order}  # in the order given
        broken = False
        try:
            with spawning():
                pending = {ex.submit(execute, t): t for t in order}
            while pending:
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                interrupts.check()
                for f in done:
                    t = pending.pop(f)
                    try:
                        rec = f.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    del unfinished[t["run"]]
                    yield rec
            ex.shutdown(wait=True)
        except BaseException:
            stop_pool(ex)
            raise
        if broken:
            left = list(unfinished.values())
            k = min(jobs, len(order)) + 1
            suspects += left[:k]
            queue = left[k:]
    for t in suspects:
        ex = new_pool(1)
        try:
            with spawning():
                f = ex.submit(execute, t)
            while not wait([f], timeout=0.5)[0]:
                interrupts.check()
            try:
                rec = f.result()
            except BrokenProcessPool as e:
                rec = _lost(t, f"its process died: {e}")
            ex.shutdown(wait=True)
        except BaseException:
            stop_pool(ex)
            raise
        yield rec


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
        # Dask reschedules the runs of a worker it loses; a run whose workers are lost
        # again and again ends in KilledWorker (or the like), and gets one more try here
        futs = {client.submit(execute, t, key=f"aqmlab-run-{t['run']}", pure=False): t for t in tasks}
        tried: dict[str, int] = {t["run"]: 1 for t in tasks}
        ac = as_completed(list(futs))
        try:
            for f in ac:
                t = futs.pop(f)
                try:
                    yield f.result()
                except Exception as e:  # KilledWorker, a lost connection, ...
                    why = f"{type(e).__name__}: {e}".splitlines()[0]
                    if tried[t["run"]] < 2:
                        tried[t["run"]] += 1
                        g = client.submit(execute, t, key=f"aqmlab-run-{t['run']}-try{tried[t['run']]}", pure=False)
                        futs[g] = t
                        ac.add(g)
                    else:
                        yield _lost(t, why)
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
    for name, v in (("set", set), ("vary", vary), ("levels", levels)):
        if v is not None and not isinstance(v, Mapping):
            raise inputs.InputError(f"{name}: {v!r} is not a dict of field paths")
    if zip is not None and not isinstance(zip, Mapping) and (isinstance(zip, (str, bytes)) or not all(isinstance(z, Mapping) for z in zip)):
        raise inputs.InputError(f"zip: {zip!r} is neither a dict of field paths nor a list of them")
    if seeds is not None and not isinstance(seeds, int) and (isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence)):
        raise inputs.InputError(f"seeds: {seeds!r} is neither a count nor a list of seeds")
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
        g.vary(k, vals)
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


def check_sweep_dir(out: Path, plan: Optional[Plan] = None, force: bool = False) -> None:
    """Refuse a folder that is not a sweep folder, and one that holds a different
    sweep than `plan` (other runs) unless `force`."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise FileExistsError(f"--out: \"{out}\" exists and is not a directory")
        if any(out.iterdir()) and not (out / SWEEP_JSON).exists():
            raise FileExistsError(f"--out: \"{out}\" is not empty and does not hold an aqmlab sweep; choose another folder")
        if plan is not None and (out / SWEEP_JSON).exists() and not force:
            old = _read_sweep(out)
            new = {(r.name, r.hash) for r in plan.runs}
            if old is None:
                raise FileExistsError(f"--out: \"{out}\" holds a sweep.json that cannot be read; choose another folder, or --force to replace it")
            if old["runs"] != new:
                shared = len(old["runs"] & new)
                raise FileExistsError(
                    f"--out: \"{out}\" holds a different sweep (\"{old['name']}\", {len(old['runs'])} runs; this one has {len(new)}, "
                    f"{shared} in common); choose another folder, or --force to replace it"
                )


def _read_sweep(out: Path) -> Optional[dict[str, Any]]:
    try:
        d = json.loads((out / SWEEP_JSON).read_text())
        return {"name": d.get("grid", {}).get("name", "?"), "runs": {(r["run"], r["hash"]) for r in d["runs"]}}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _clean_temporaries(out: Path) -> None:
    """Half-written files and folders of a sweep or of runs killed while writing
    (temporary names only: never a finished run)."""
    for d in (out, out / "runs", out / "failures", out / "figures"):
        if d.exists():
            for p in d.iterdir():
                if p.name.startswith(".") and (".tmp-" in p.name or ".old-" in p.name):
                    if p.is_dir():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)


def _replace_sweep(out: Path, plan: Plan) -> None:
    """--force: keep the runs the new sweep shares with the old, remove the rest."""
    keep = {r.name for r in plan.runs}
    for p in list(out.iterdir()):
        if p.name == "runs":
            for r in p.iterdir():
                if r.name not in keep:
                    shutil.rmtree(r, ignore_errors=True)
        elif p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def check_memory(plan: Plan, jobs: int, cluster: Any = None) -> int:
    """Refuse a plan whose largest run would not fit in the memory available; return
    how many local workers may run at once (at most `jobs`)."""
    if not plan.runs:
        return jobs
    biggest, spec = -1, None
    for r in plan.runs:
        est = inputs.estimate(r.scenario_json(), "json", [], None, None)
        if est["process_bytes"] > biggest:
            biggest, spec = est["process_bytes"], (r, est)
    avail = inputs.available_memory()
    if avail is None or spec is None:
        return jobs
    r, est = spec
    inputs.check_memory(est, what=f"run {r.name}" if len(plan.runs) > 1 else "the run", available=avail)
    if cluster is not None:
        return jobs
    return max(1, min(jobs, avail // max(1, biggest)))


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
    force: bool = False,
    on_note: Optional[Callable[[str], None]] = None,
) -> SweepResult:
    """Run (or resume) the runs of a validated plan into `out`; manifest.json records
    how (the command line, host, versions, start and wall time of this sitting)."""
    from . import manifest as _manifest

    jobs = inputs.positive(jobs, "jobs")
    out = Path(out).absolute()
    inputs.writable_dir(out, "out")
    check_sweep_dir(out, plan, force)
    if jobs is None:
        jobs = os.cpu_count() or 1
    fit = check_memory(plan, jobs, cluster)
    if fit < jobs and on_note is not None:
        on_note(f"memory: {fit} runs at once instead of {jobs}, so that they fit in the memory available")
    jobs = fit
    runs_dir, fail_dir = out / "runs", out / "failures"
    if force and (out / SWEEP_JSON).exists():
        _replace_sweep(out, plan)
    _clean_temporaries(out)
    runs_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out / SWEEP_JSON, {
        "format_version": 1,
        "aqmlab_version": _core.__version__,
        "grid": plan.grid.describe(),
        "origin": plan.origin,
        **(dict(extra) if extra else {}),
        "runs": [{"run": r.name, "seed": r.seed, "params": r.params, "hash": r.hash, "overrides": list(r.overrides)} for r in plan.runs],
    })
    todo = [r for r in plan.runs if not (runs_dir / r.name / "summary.json").exists()]
    res = SweepResult(out, plan, skipped=len(plan.runs) - len(todo))
    for r in todo:
        (fail_dir / f"{r.name}.json").unlink(missing_ok=True)
    tasks = [{"run": r.name, "scenario": r.scenario_json(), "dir": str(runs_dir / r.name), "report": reports} for r in todo]
    show = sys.stderr.isatty() if progress is None else progress
    started = _manifest.now_utc()
    t0 = time.perf_counter()
    results: Optional[Iterator[dict[str, Any]]] = None
    interrupted = False
    try:
        if tasks:
            results = _dask(tasks, cluster, out) if cluster is not None else _local(tasks, jobs)
            with _progress(len(tasks), show, label) as step:
                for rec in results:
                    interrupts.check()
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
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        # workers stopped first (closing the generator stops its pool), then the index
        # from the run folders on disk, which a first signal does not cut short
        if results is not None:
            results.close()
        res.seconds = time.perf_counter() - t0
        with interrupts.deferred():
            _clean_temporaries(out)
            rows = write_index(out, plan)
        if interrupted:
            done = sum(1 for r in rows if r["status"] == "ok")
            interrupts.note(f"{done} of {len(plan.runs)} runs finished, kept and indexed in {out}/index.parquet; workers stopped; the same command resumes")
    if compare and (res.ran + res.skipped) > 0:
        from . import comparison as _compare

        from .progress import steps

        interrupts.note(f"all {len(plan.runs)} runs are done and indexed in {out}/index.parquet; the comparison report was not finished (the same command writes it)")
        with steps("comparison", show) as step:
            res.report = _compare.compare([out], out=out, title=f"{plan.grid.name}: {len(plan.runs)} runs", quiet=True, progress=step,
                                          parallel=cluster is None).report  # no fork beside a Dask client's threads
        interrupts.note(None)
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
    force: bool = False,
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
        force: replace a different sweep already in `out` (the runs both share are
            kept); without it such a folder is refused.

    Returns:
        A `SweepResult`: counts, `.query(sql)`, `.index()`, `.load()` (an `aqmlab.Sweep`).

    Raises:
        SweepFailed: every run failed (a script that sweeps then exits non-zero); with
            some failures it returns, and `failed` and `failures` say which.
        ScenarioError: a combination is not a valid scenario, `out` cannot be written,
            or the largest run would not fit in memory (nothing is run).
    """
    inputs.positive(jobs, "jobs")
    g = build_grid(spec, scenario=scenario, vary=vary, zip=zip, levels=levels, set=set, seeds=seeds)
    plan = g.plan()
    res = run_plan(plan, out, jobs=jobs, cluster=cluster, reports=reports, compare=compare, progress=progress, label=g.name, force=force)
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


def write_index(out: Path, plan: Plan) -> list[dict[str, Any]]:
    """Write index.parquet (atomically) from the run folders on disk; returns its rows."""
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
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return rows


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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
