#!/usr/bin/env python3
"""Kill `aqmlab emulate` with SIGKILL at random moments, then run `aqmlab emulate
--cleanup`, and check that nothing of the run is left: no process, namespace, TUN
device or work folder. Needs root, network namespaces and /dev/net/tun.

    sudo python scripts/emulate_kills.py              # 10 kills (the default)
    sudo python scripts/emulate_kills.py --times 4 --seed 3

Every other kill also kills the run's guard process (as `kill -9` of all of a run's
processes would), so that `--cleanup` has the leftovers to remove; otherwise the
guard removes them itself. The moments (during set-up, or with traffic flowing) come
from --seed. For each kill the script prints what `--cleanup` reported and what it
found before and after. Exit status 0 if nothing was left every time.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aqmlab.emulate import netns


def of_run(run_id: str) -> dict[str, list]:
    """Everything that belongs to one run, alive or not: processes (by its work folder
    on their command line, or inside its namespaces), namespaces, devices, folders."""
    spaces = [n for n in netns.namespaces() if n.startswith(f"{netns.PREFIX}{run_id}-")]
    procs = {pid for pid, cmd in netns._processes().items() if f"aqmlab-emulate-{run_id}-" in cmd}
    for ns in spaces:
        procs.update(netns.namespace_pids(ns))
    return {
        "processes": sorted(procs),
        "namespaces": spaces,
        "devices": [d for d in netns.devices() if d in (f"aqe{run_id}s", f"aqe{run_id}r")],
        "folders": [str(p) for p in Path(tempfile.gettempdir()).glob(f"aqmlab-emulate-{run_id}-*")],
    }


def count(d: dict[str, list]) -> str:
    return ", ".join(f"{len(v)} {k}" for k, v in d.items())


def short(d: dict[str, list]) -> str:
    """processes/namespaces/devices/folders"""
    return "/".join(str(len(d.get(k, []))) for k in ("processes", "namespaces", "devices", "folders"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", type=int, default=10)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args(argv)
    netns.preflight()
    rng = random.Random(a.seed)
    out = Path(tempfile.mkdtemp(prefix="emulate-kills-"))
    bad = 0
    first = subprocess.run([sys.executable, "-m", "aqmlab.cli", "emulate", "--cleanup"], capture_output=True, text=True)
    print(f"before: aqmlab emulate --cleanup: {first.stdout.strip() or first.stderr.strip()}; "
          f"then left on the machine: {count(netns.leftovers())}")
    print("counts are processes/namespaces/devices/folders: of the killed run 0.2 s after the kill, "
          "of that run after `aqmlab emulate --cleanup`, and of every run that is over, on the whole machine")
    print(f"{'#':>2}  {'killed after':>12}  {'phase':<7}  {'guard':<6}  {'run, before':>11}  {'run, after':>10}  {'machine, after':>14}  {'result':<6}  --cleanup said")
    for k in range(a.times):
        also_guard = k % 2 == 1
        delay = rng.uniform(0.3, 6.0)
        p = subprocess.Popen(
            [sys.executable, "-m", "aqmlab.cli", "emulate", "madpie-proof", "--set", "duration=30s", "--set", "flows.0.count=3", "--out", str(out / f"run{k}"), "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        time.sleep(delay)
        # the run's id, from its work folder (owner = this process)
        ids = [m.group(1) for f in Path(tempfile.gettempdir()).glob("aqmlab-emulate-*") for m in [netns._WORK.match(f.name)] if m and m.group(2) == str(p.pid)]
        guards = [pid for pid, cmd in netns._processes().items() if "_guard.py" in cmd and any(f"aqmlab-emulate-{i}-" in cmd for i in ids)]
        phase = "set-up" if not ids or not of_run(ids[0])["processes"] or len(of_run(ids[0])["namespaces"]) < 2 else "traffic"
        for pid in ([*guards] if also_guard else []) + [p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
        time.sleep(0.2)
        left_before = of_run(ids[0]) if ids else {}
        c = subprocess.run([sys.executable, "-m", "aqmlab.cli", "emulate", "--cleanup"], capture_output=True, text=True)
        left_after = of_run(ids[0]) if ids else {}
        total_after = netns.leftovers()
        ok = c.returncode == 0 and bool(ids) and not any(left_after.values()) and not any(total_after.values()) and not (out / f"run{k}").exists()
        bad += not ok
        said = c.stdout.strip() or c.stderr.strip()
        print(f"{k + 1:>2}  {delay:>10.1f} s  {phase:<7}  {'killed' if also_guard else 'alive':<6}  {short(left_before) if ids else 'no run id':>11}  "
              f"{short(left_after) if ids else '-':>10}  {short(total_after):>14}  {'ok' if ok else 'FAIL':<6}  {said}")
    print(f"{a.times - bad} of {a.times} kills left nothing behind after --cleanup; left on the machine at the end: {count(netns.leftovers())}")
    shutil.rmtree(out, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
