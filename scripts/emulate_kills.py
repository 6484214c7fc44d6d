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
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aqmlab.emulate import netns


def of_run(run_id: str) -> dict[str, list]:
    """Everything that belongs to one run, alive or not."""
    return {
        "processes": [pid for pid, cmd in netns._processes().items() if f"aqmlab-emulate-{run_id}-" in cmd],
        "namespaces": [n for n in netns.namespaces() if n.startswith(f"{netns.PREFIX}{run_id}-")],
        "devices": [d for d in netns.devices() if d in (f"aqe{run_id}s", f"aqe{run_id}r")],
        "folders": [str(p) for p in Path(tempfile.gettempdir()).glob(f"aqmlab-emulate-{run_id}-*")],
    }


def count(d: dict[str, list]) -> str:
    return ", ".join(f"{len(v)} {k}" for k, v in d.items())


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
    print(f"before: aqmlab emulate --cleanup: {first.stdout.strip()}")
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
                import os

                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
        time.sleep(0.2)
        left_before = of_run(ids[0]) if ids else {}
        c = subprocess.run([sys.executable, "-m", "aqmlab.cli", "emulate", "--cleanup"], capture_output=True, text=True)
        left_after = of_run(ids[0]) if ids else {}
        total_after = netns.leftovers()
        ok = c.returncode == 0 and not any(left_after.values()) and not any(total_after.values()) and not (out / f"run{k}").exists()
        bad += not ok
        print(f"{k + 1:2d}. SIGKILL after {delay:4.1f} s ({phase}{', guard killed too' if also_guard else ''}): run {ids[0] if ids else '?'}; "
              f"present 0.2 s later: {count(left_before) if ids else 'no run id'}; --cleanup: {c.stdout.strip() or c.stderr.strip()}; "
              f"left after: {count(left_after) if ids else '-'} -> {'ok' if ok else 'FAIL'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
