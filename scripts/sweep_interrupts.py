#!/usr/bin/env python3
"""Interrupt a sweep at random moments, resume it each time, and compare the result
with the same sweep run without interruption.

    python scripts/sweep_interrupts.py                 # 20 interruptions (the default)
    python scripts/sweep_interrupts.py --times 5 --runs 12 --work /tmp/si

Each interruption starts `aqmlab sweep` (in a session of its own, as a terminal
would), waits (every fifth time a random moment in its start-up, otherwise until 0 to
3 more runs have finished and a random part of a run longer), and sends SIGINT (to the process, or to its whole
process group as a terminal's Ctrl-C does) or SIGTERM; some interruptions send a
second SIGINT shortly after the first (the forced exit). After each it checks:

* the exit code: 130 (SIGINT), 143 (SIGTERM), or 0 if the sweep had finished; or the
  process killed by the signal itself (-2, -15: what a shell shows as 130 and 143) when
  the signal came before aqmlab's handling was installed (the interpreter starting), or,
  for a second SIGINT, after it was taken down (the interpreter exiting, the one line
  already printed);
* stderr: its last line is the one-line message, and there is no traceback;
* no process of the sweep is left (nothing in its process group);
* after a clean stop: the index lists as done exactly the runs whose folders are
  complete, each once, and no temporary file or folder is left.

Then the sweep is resumed to its end and compared with a reference sweep run
without interruption: the same files; every Parquet file, scenario.json,
conservation.ok, the report and sweep.json byte-identical; summary.json identical but
for the wall-clock fields (`wall_seconds`, `events_per_second`); index.parquet
identical but for those columns; manifest.json identical but for what records the
sitting (start and wall time, command, run counts, working folder). The random moments come from --seed, so a failure can be
replayed. Exit status 0 if every check held.
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
import time
from pathlib import Path

WALL = ("wall_seconds", "events_per_second")
# manifest.json records how and when a folder was made (the sitting: start time, wall
# time, command, counts of this start): compared without those
MANIFEST_SITTING = ("started", "wall_seconds", "command", "runs", "cwd")


def sweep_cmd(out: Path, runs: int, jobs: int, compare: bool = True) -> list[str]:
    # runs = 4 AQMs x delays x seeds; short runs with every record on
    aqms = "pie,droptail,codel,red"
    seeds = max(1, runs // 8)
    delays = "10ms,48ms" if runs >= 8 else "10ms"
    return [
        sys.executable, "-m", "aqmlab.cli", "sweep", "madpie-proof",
        "--vary", f"bottleneck.aqm.kind={aqms}", "--vary", f"bottleneck.delay={delays}",
        "--seeds", str(seeds), "--set", "duration=20s", "--jobs", str(jobs), "--out", str(out),
    ] + ([] if compare else ["--no-compare"])


def group_alive(pgid: int) -> list[int]:
    alive = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
            if int(f[2]) == pgid and f[0] != "Z":
                alive.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return alive


def temporaries(out: Path) -> list[str]:
    return [str(p.relative_to(out)) for p in out.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]


def index_consistent(out: Path) -> str | None:
    """None if the index matches the run folders, else what is wrong."""
    import pyarrow.parquet as pq

    idx = out / "index.parquet"
    done = {p.parent.name for p in (out / "runs").glob("*/summary.json")} if (out / "runs").exists() else set()
    if not idx.exists():
        return None if not done else f"no index, {len(done)} runs done"
    t = pq.read_table(idx).to_pydict()
    names = t["run"]
    if len(names) != len(set(names)):
        return "a run is listed twice"
    ok = {r for r, s in zip(names, t["status"]) if s == "ok"}
    if ok != done:
        return f"index says {len(ok)} done, folders {len(done)} ({sorted(ok ^ done)[:2]})"
    return None


def done_runs(out: Path) -> int:
    return len(list((out / "runs").glob("*/summary.json"))) if (out / "runs").exists() else 0


def interrupt_once(cmd: list[str], out: Path, total: int, rng: random.Random, k: int, env: dict[str, str], first: float, per_run: float) -> dict:
    """Start the sweep and interrupt it: every fifth time during its start-up (a random
    moment before the first run could finish), otherwise once 0 to 3 more runs have
    finished, plus a random part of a run's time."""
    mode = ["SIGINT", "SIGINT-group", "SIGTERM", "SIGINT-twice"][k % 4]
    before = done_runs(out)
    p = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env,
        # Ctrl-C as at a terminal: a background job (`&`, nohup) starts with SIGINT
        # ignored, and an interpreter keeps it so until aqmlab installs its handling
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    t0 = time.perf_counter()
    if k % 5 == 0 or before >= total:
        # during the start-up, or (all runs done) while the sweep finishes its report
        time.sleep(rng.uniform(0.3, 0.9 * first))
    else:
        more = min(rng.randint(0, 3), total - before)
        while p.poll() is None and done_runs(out) < before + more:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, per_run))
    delay = time.perf_counter() - t0
    sent = None
    if p.poll() is None:
        if mode == "SIGTERM":
            os.kill(p.pid, signal.SIGTERM)
            sent = signal.SIGTERM
        elif mode == "SIGINT-group":
            os.killpg(p.pid, signal.SIGINT)
            sent = signal.SIGINT
        else:
            os.kill(p.pid, signal.SIGINT)
            sent = signal.SIGINT
            if mode == "SIGINT-twice":
                time.sleep(rng.uniform(0.02, 0.3))
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGINT)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        return {"mode": mode, "delay": delay, "problems": ["did not stop within 120 s"]}
    problems = []
    # 128 + the signal after a clean stop; killed by the signal itself (-signal, which
    # a shell shows as the same 128 + signal) when it came before Python had started
    # aqmlab's handling, while nothing had been done yet, or (a second SIGINT) while
    # the interpreter exits after the first was handled
    expected = {0} if sent is None else {0, 128 + int(sent), -int(sent)}
    if p.returncode not in expected:
        problems.append(f"exit code {p.returncode}, expected one of {sorted(expected)}")
    lines = [l for l in err.splitlines() if l.strip()]
    if "Traceback" in err:
        problems.append("a traceback: " + err[-300:])
    if p.returncode in (130, 143):
        last = lines[-1] if lines else ""
        if not last.startswith("aqmlab: interrupted"):
            problems.append(f"last line is not the interruption message: {last!r}")
    time.sleep(0.2)
    left = group_alive(p.pid)
    if left:
        problems.append(f"processes left: {left}")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    forced = any("interrupted again" in l for l in lines)
    return {"mode": mode, "delay": round(delay, 2), "code": p.returncode, "forced": forced, "message": lines[-1] if lines else "", "problems": problems}


def compare_sweeps(a: Path, b: Path, counts: dict[str, int] | None = None) -> list[str]:
    """Differences between two sweep folders, ignoring only the wall-clock fields;
    `counts` gets how many files were byte-identical and how many equal but for them."""
    import pyarrow.parquet as pq

    counts = {} if counts is None else counts
    counts.update(identical=0, wall_clock_only=0)
    diffs = []
    fa = {str(p.relative_to(a)) for p in a.rglob("*") if p.is_file()}
    fb = {str(p.relative_to(b)) for p in b.rglob("*") if p.is_file()}
    if fa != fb:
        diffs.append(f"file lists differ: only in reference {sorted(fa - fb)[:3]}, only in resumed {sorted(fb - fa)[:3]}")
    for rel in sorted(fa & fb):
        x, y = (a / rel).read_bytes(), (b / rel).read_bytes()
        if x == y:
            counts["identical"] += 1
            continue
        counts["wall_clock_only"] += 1
        name = Path(rel).name
        if name in ("summary.json", "manifest.json"):
            jx, jy = json.loads(x), json.loads(y)
            for k in WALL + (MANIFEST_SITTING if name == "manifest.json" else ()):
                jx.pop(k, None), jy.pop(k, None)
            if jx != jy:
                diffs.append(f"{rel}: differs beyond the wall-clock fields")
        elif name == "index.parquet":
            tx, ty = pq.read_table(a / rel), pq.read_table(b / rel)
            keep = [c for c in tx.column_names if c not in WALL]
            if tx.column_names != ty.column_names or not tx.select(keep).equals(ty.select(keep)):
                diffs.append(f"{rel}: differs beyond the wall-clock columns")
        else:
            diffs.append(f"{rel}: bytes differ")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", type=int, default=20, help="interruptions (default 20)")
    ap.add_argument("--runs", type=int, default=64, help="runs in the sweep (default 64)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7, help="seed of the random moments")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one, removed at the end)")
    ap.add_argument("--no-compare", action="store_true", help="sweeps without their comparison report (quicker)")
    a = ap.parse_args(argv)
    cmd = lambda out: sweep_cmd(out, a.runs, a.jobs, not a.no_compare)  # noqa: E731
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="aqmlab-sweep-interrupts-"))
    work.mkdir(parents=True, exist_ok=True)
    ref, res = work / "reference", work / "resumed"
    for d in (ref, res):
        shutil.rmtree(d, ignore_errors=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    rng = random.Random(a.seed)
    failures = 0
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd(ref), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    first = None
    while p.poll() is None:
        if first is None and any((ref / "runs").glob("*/summary.json")):
            first = time.perf_counter() - t0
        time.sleep(0.02)
    err = p.stderr.read() if p.stderr else ""
    if p.returncode != 0:
        print(f"the reference sweep failed ({p.returncode}): {err[-500:]}")
        return 1
    ref_s = time.perf_counter() - t0
    n_runs = len(list((ref / "runs").iterdir()))
    first = first or ref_s
    per_run = max(0.05, (ref_s - first) / max(1, n_runs - 1) * a.jobs)  # one worker's time per run
    print(f"reference sweep: {n_runs} runs in {ref_s:.1f} s; the first finished after {first:.1f} s, then one every {per_run / a.jobs:.2f} s")
    history = []
    for k in range(a.times):
        before = len(list((res / "runs").glob("*/summary.json"))) if (res / "runs").exists() else 0
        rec = interrupt_once(cmd(res), res, n_runs, rng, k, env, first, per_run)
        after = len(list((res / "runs").glob("*/summary.json"))) if (res / "runs").exists() else 0
        if not rec.get("forced") and (res / "sweep.json").exists():
            tmp = temporaries(res)
            if tmp:
                rec["problems"].append(f"temporaries left after a clean stop: {tmp[:3]}")
            bad = index_consistent(res)
            if bad:
                rec["problems"].append(f"index: {bad}")
        rec["runs_done"] = f"{before} -> {after}"
        history.append(rec)
        failures += bool(rec["problems"])
        flag = "FAIL " + "; ".join(rec["problems"]) if rec["problems"] else "ok"
        print(f"{k + 1:2d}. {rec['mode']:<13} after {rec['delay']:.2f} s: exit {rec.get('code')}, runs done {rec['runs_done']}{' (forced)' if rec.get('forced') else ''}: {flag}")
        if rec.get("message"):
            print(f"      {rec['message'][:150]}")
    r = subprocess.run(cmd(res), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"the final resume failed ({r.returncode}): {r.stderr[-500:]}")
        return 1
    counts: dict[str, int] = {}
    diffs = compare_sweeps(ref, res, counts)
    interrupted = sum(1 for h in history if h.get("code") in (130, 143))
    print(f"{interrupted} of {a.times} starts were interrupted ({sum(1 for h in history if h.get('forced'))} forced by a second Ctrl-C), "
          f"{failures} with a problem; after the final resume: {'identical to the uninterrupted sweep (but for the wall-clock fields)' if not diffs else 'DIFFERENT'}")
    print(f"  {counts['identical'] + counts['wall_clock_only']} files compared: {counts['identical']} byte-identical, "
          f"{counts['wall_clock_only']} (summary.json, manifest.json, index.parquet) equal but for the wall-clock fields")
    for d in diffs[:20]:
        print("  " + d)
    (work / "history.json").write_text(json.dumps(history, indent=1))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not failures and not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
