#!/usr/bin/env python3
"""Kill Dask workers (SIGKILL) in the middle of a sweep and check that no run is lost:
the lost worker's runs are run again, and a run whose worker is lost twice is recorded
as failed. Needs `aqmlab[sweep]` (dask.distributed).

    python scripts/dask_worker_kills.py                  # 5 sweeps with a worker killed, then the lost-twice case
    python scripts/dask_worker_kills.py --times 3 --runs 24 --seed 2

First a reference: the same sweep in local processes (`jobs=2`). Then two kinds of
trial, each on a fresh `distributed.LocalCluster` (a scheduler in this process, two
single-threaded worker processes under their nannies, which start a new worker when
one dies):

* killed worker (--times of them, Dask's default settings): once a random number of
  runs (0 to half of them) have finished, plus a random part of a run's time, one of
  the workers is killed with SIGKILL while it runs a run (the worker kills itself,
  from its event loop, after checking that it runs one). The runs it was running
  are lost; the scheduler gives them to another worker. Checks: the sweep ran every run
  and none failed; its index lists every run once, all "ok"; one folder per run; every
  run lost with the worker is among them, finished; every run folder identical to the
  reference's (Parquet files, scenario.json and conservation.ok byte-identical,
  summary.json and manifest.json identical but for the wall-clock fields and the
  command that made them).
* lost twice (one): the scheduler is told to give up on a task at the first lost
  worker (`distributed.scheduler.allowed-failures = 0`), so that the loss reaches
  aqmlab as KilledWorker; the sweep runs as `aqmlab sweep --cluster ADDRESS`. The
  worker running one chosen run is killed, then the worker running that run's second
  try (aqmlab tries a run lost to KilledWorker once more). Checks: exit status 1; that
  run, and only it, is recorded as failed (index status "failed" with the error,
  failures/RUN.json, the one line on stderr), every other run done and identical to
  the reference; then the same sweep started again in local processes runs only that
  run, and the folder ends identical to the reference.

The random moments come from --seed. Prints one line per trial and a summary; exit
status 0 if every check held.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_interrupts import compare_sweeps  # noqa: E402

AQMS = ["pie", "droptail", "codel", "red"]


def grid(runs: int) -> dict:
    seeds = list(range(1, max(1, runs // len(AQMS)) + 1))
    return dict(vary={"bottleneck.aqm.kind": AQMS}, seeds=seeds, set={"duration": "20s"}, progress=False, compare=False)


def grid_argv(kw: dict) -> list[str]:
    """The same grid on the command line."""
    return ["madpie-proof", "--vary", f"bottleneck.aqm.kind={','.join(AQMS)}", "--seeds", str(len(kw["seeds"])),
            "--set", f"duration={kw['set']['duration']}", "--no-compare", "-q"]


def done(runs: Path) -> set[str]:
    return {p.parent.name for p in runs.glob("*/summary.json")} if runs.exists() else set()


def die_if_running(record: str, runs: str, want: str | None = None, dask_worker=None) -> bool:  # noqa: ANN001
    """Run by client.run on one worker, in its event loop beside the task it runs: if it
    is running a run whose folder is not written yet (`want`: that task), write the keys
    it runs into `record` and SIGKILL its own process, so that the run is in flight at
    the instant of the kill."""
    keys = [str(ts.key) for ts in dask_worker.state.executing]
    if want is not None:
        keys = [k for k in keys if k == want]
    if not any(not (Path(runs) / run_of(k) / "summary.json").exists() for k in keys):
        return False
    Path(record).write_text(json.dumps(keys))
    os.kill(os.getpid(), signal.SIGKILL)
    return True


def kill_running(client, record: Path, runs: Path, rng: random.Random, stop: threading.Event, want: str | None = None) -> list[str]:  # noqa: ANN001
    """Kill a worker that is running a run (`want`: that task); the keys it was running
    ([] if the sweep ended first)."""
    record.unlink(missing_ok=True)
    while not stop.is_set():
        try:
            workers = sorted(client.scheduler_info()["workers"])
        except Exception:  # noqa: BLE001 - a worker being replaced
            workers = []
        rng.shuffle(workers)
        for w in workers:
            try:
                client.run(die_if_running, str(record), str(runs), want, workers=[w])  # False if it runs nothing (or not `want`)
            except Exception:  # noqa: BLE001 - the worker died answering (or was being replaced)
                pass
            if record.exists():  # written before the kill
                return json.loads(record.read_text())
        time.sleep(0.01)
    return []


def run_of(key: str) -> str:
    """aqmlab-run-NAME or aqmlab-run-NAME-tryN -> NAME"""
    name = key[len("aqmlab-run-"):]
    return name.rsplit("-try", 1)[0] if "-try" in name else name


def cluster():  # noqa: ANN201
    import logging

    import distributed

    # quiet: the nannies' warnings about the workers this script kills
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL)


def check_index(out: Path, total: int, failed: set[str]) -> list[str]:
    import pyarrow.parquet as pq

    idx = pq.read_table(out / "index.parquet").to_pydict()
    problems = []
    if len(idx["run"]) != total or len(set(idx["run"])) != total:
        problems.append(f"index: {len(idx['run'])} rows, {len(set(idx['run']))} runs, expected {total}")
    bad = {r for r, s in zip(idx["run"], idx["status"]) if s != "ok"}
    if bad != failed:
        problems.append(f"index: not ok {sorted(bad)}, expected {sorted(failed)}")
    folders = {p.name for p in (out / "runs").iterdir()}
    if folders != set(idx["run"]) - failed:
        problems.append(f"run folders: {len(folders)}, expected {total - len(failed)} ({sorted(folders ^ (set(idx['run']) - failed))[:3]})")
    return problems


def kill_trial(k: int, work: Path, ref: Path, kw: dict, rng: random.Random, per_run: float) -> dict:
    """A worker killed with runs in flight; Dask's defaults."""
    import aqmlab
    import distributed

    out = work / f"dask-{k}"
    runs = out / "runs"
    total = len(AQMS) * len(kw["seeds"])
    wait_for = rng.randint(0, total // 2)
    extra = rng.uniform(0.0, per_run)
    info: dict = {"trial": k}
    shutil.rmtree(out, ignore_errors=True)
    stop = threading.Event()
    t0 = time.perf_counter()
    with cluster() as lc, distributed.Client(lc) as client:

        def killer() -> None:
            while not stop.is_set() and len(done(runs)) < wait_for:
                time.sleep(0.01)
            stop.wait(extra)
            info["done_at_kill"] = len(done(runs))
            keys = kill_running(client, work / "killed.json", runs, rng, stop)
            info["killed_at_s"] = round(time.perf_counter() - t0, 2)
            # the runs it was running (less any that finished in the instant before)
            info["lost"] = sorted({run_of(x) for x in keys} - done(runs))

        th = threading.Thread(target=killer)
        th.start()
        try:
            res = aqmlab.sweep("madpie-proof", out=out, cluster=client, **kw)
        finally:
            stop.set()
            th.join()
    problems = []
    if (res.ran, res.failed) != (total, 0):
        problems.append(f"ran {res.ran}, failed {res.failed} ({res.failures})")
    problems += check_index(out, total, set())
    if not info.get("lost"):
        problems.append("no run was in flight on the killed worker")
    missing = [r for r in info.get("lost", []) if not (runs / r / "summary.json").exists()]
    if missing:
        problems.append(f"lost runs not run again: {missing}")
    counts: dict[str, int] = {}
    problems += compare_sweeps(ref / "runs", runs, counts)[:5]
    info.update(ran=res.ran, failed=res.failed, total=total, identical=counts["identical"], wall_clock_only=counts["wall_clock_only"],
                wall_s=round(time.perf_counter() - t0, 1), problems=problems)
    shutil.rmtree(out, ignore_errors=True)
    return info


def lost_twice_trial(work: Path, ref: Path, kw: dict, rng: random.Random) -> dict:
    """The worker running one run killed, then the worker running its second try."""
    import dask
    import distributed

    out = work / "dask-lost-twice"
    runs = out / "runs"
    total = len(AQMS) * len(kw["seeds"])
    names = sorted(p.name for p in (ref / "runs").iterdir())
    target = names[rng.randrange(len(names) // 2, len(names))]  # not among the first to start
    info: dict = {"target": target, "kills": []}
    shutil.rmtree(out, ignore_errors=True)
    stop = threading.Event()
    t0 = time.perf_counter()
    # a task lost with its worker fails at once (KilledWorker), and each worker holds only
    # the run it runs (no queued run lost beside it)
    settings = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings), cluster() as lc, distributed.Client(lc) as client:

        def killer() -> None:
            for want, which in ((f"aqmlab-run-{target}", "first"), (f"aqmlab-run-{target}-try2", "second")):
                if kill_running(client, work / "killed.json", runs, rng, stop, want=want):
                    info["kills"].append(f"{which} try at {time.perf_counter() - t0:.1f} s")

        th = threading.Thread(target=killer)
        th.start()
        try:
            p = subprocess.run([sys.executable, "-m", "aqmlab.cli", "sweep", *grid_argv(kw), "--cluster", lc.scheduler_address, "--out", str(out)],
                               capture_output=True, text=True, timeout=900)
        finally:
            stop.set()
            th.join()
    problems = [] if len(info["kills"]) == 2 else [f"killed {len(info['kills'])} times, not twice"]
    if p.returncode != 1:
        problems.append(f"exit status {p.returncode}, expected 1")
    err_lines = [x for x in p.stderr.splitlines() if x.strip()]
    if "Traceback" in p.stderr:
        problems.append("a traceback on stderr")
    import pyarrow.parquet as pq

    idx = pq.read_table(out / "index.parquet").to_pydict()
    failed = {r for r, st in zip(idx["run"], idx["status"]) if st != "ok"}
    # the chosen run, and any other run that was on a killed worker both times
    if target not in failed:
        problems.append(f"{target} is not recorded as failed")
    for r in sorted(failed):
        said = [x for x in err_lines if x.startswith(f"aqmlab: run {r} failed:")]
        if len(said) != 1 or "lost twice" not in said[0] or "KilledWorker" not in said[0]:
            problems.append(f"not one line saying {r} failed, lost twice, KilledWorker: {said[:2]}")
        rec_file = out / "failures" / f"{r}.json"
        rec = json.loads(rec_file.read_text()) if rec_file.exists() else {}
        if rec.get("status") != "failed" or "lost twice" not in rec.get("error", ""):
            problems.append(f"failures/{r}.json: {rec or 'missing'}")
        if r == target:
            info["error"] = rec.get("error", "")
    problems += check_index(out, total, failed)
    info["also_failed"] = sorted(failed - {target})
    import aqmlab

    # started again (locally): only the failed run runs, and the folder is complete
    res = aqmlab.sweep("madpie-proof", out=out, jobs=2, **kw)
    if (res.ran, res.skipped, res.failed) != (len(failed), total - len(failed), 0):
        problems.append(f"the second start: ran {res.ran}, skipped {res.skipped}, failed {res.failed}")
    problems += check_index(out, total, set())
    counts: dict[str, int] = {}
    problems += compare_sweeps(ref / "runs", runs, counts)[:5]
    info.update(code=p.returncode, total=total, ran_again=res.ran, identical=counts["identical"], wall_clock_only=counts["wall_clock_only"],
                wall_s=round(time.perf_counter() - t0, 1), problems=problems)
    shutil.rmtree(out, ignore_errors=True)
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", type=int, default=5, help="sweeps with a killed worker (default 5)")
    ap.add_argument("--runs", type=int, default=16, help="runs per sweep (a multiple of 4; default 16)")
    ap.add_argument("--seed", type=int, default=5, help="seed of the random moments")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one, removed at the end)")
    a = ap.parse_args(argv)
    import aqmlab

    rng = random.Random(a.seed)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="aqmlab-dask-kills-"))
    work.mkdir(parents=True, exist_ok=True)
    kw = grid(a.runs)
    ref = work / "reference"
    shutil.rmtree(ref, ignore_errors=True)
    t = time.perf_counter()
    r = aqmlab.sweep("madpie-proof", out=ref, jobs=2, **kw)
    per_run = 2 * (time.perf_counter() - t) / max(1, r.ran)
    print(f"reference: {r.ran} runs in local processes, {per_run:.1f} s per run and worker")
    failures = 0
    print(f"{'trial':<10}  {'killed at':>9}  {'runs done':>9}  {'lost':>4}  {'ran':>3}  {'failed':>6}  {'files identical':>15}  {'wall-clock only':>15}  result")
    for k in range(a.times):
        i = kill_trial(k, work, ref, kw, rng, per_run)
        failures += bool(i["problems"])
        print(f"{'kill ' + str(k + 1):<10}  {str(i.get('killed_at_s')) + ' s':>9}  {str(i.get('done_at_kill')) + '/' + str(i['total']):>9}  "
              f"{len(i.get('lost', [])):>4}  {i['ran']:>3}  {i['failed']:>6}  {i['identical']:>15}  {i['wall_clock_only']:>15}  "
              f"{'ok' if not i['problems'] else 'FAIL: ' + '; '.join(i['problems'])}")
    i = lost_twice_trial(work, ref, kw, rng)
    failures += bool(i["problems"])
    print(f"lost twice: run {i['target']}, its worker killed in its {' and in its '.join(i['kills'])}; exit status {i['code']}; recorded as: {i.get('error', '?')}")
    print(f"  other runs recorded as lost twice (on a killed worker both times): {len(i['also_failed'])} {i['also_failed']}")
    print(f"  then started again locally: {i['ran_again']} run(s) ran, {i['total'] - i['ran_again']} skipped; files {i['identical']} identical, {i['wall_clock_only']} but for the wall-clock fields; "
          f"{'ok' if not i['problems'] else 'FAIL: ' + '; '.join(i['problems'])}")
    print(f"{a.times + 1 - failures} of {a.times + 1} trials held every check")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
