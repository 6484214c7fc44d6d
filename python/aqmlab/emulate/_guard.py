"""The guard of one `aqmlab emulate` run.

`python .../aqmlab/emulate/_guard.py WORK RUN_ID` is started by the emulation before
anything else of the run exists but its work folder, in a session of its own (no
Ctrl-C or hang-up from the terminal reaches it). It reads its stdin until the
emulation closes it: after `done`, the emulation has removed everything itself; on a
bare end of file the emulation died (SIGKILL, a crash), and the guard removes what the
run left: its processes, namespaces, devices and work folder. So an emulation leaves
nothing behind on any exit path; `aqmlab emulate --cleanup` remains for a guard that
was killed too.

It is started as a script, not as `-m aqmlab...`, and loads only `netns.py`: a small,
quick process that does not import the package (NumPy, Arrow).
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    work, run_id = argv
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    last = ""
    for line in sys.stdin:  # until the emulation closes the pipe, or dies
        last = line.strip() or last
    if last == "done":
        return 0
    spec = importlib.util.spec_from_file_location("aqmlab_emulate_netns", Path(__file__).with_name("netns.py"))
    assert spec is not None and spec.loader is not None
    netns = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = netns
    spec.loader.exec_module(netns)
    netns.remove_run(netns.Names(run_id), Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
