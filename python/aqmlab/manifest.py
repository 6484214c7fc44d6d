"""manifest.json: how a run or sweep folder was made, so that it can be made again.

    {"aqmlab_version": "0.1.0", "commit": "…", "dirty": false, "command": ["aqmlab", "run", …],
     "cwd": "…", "host": "…", "os": "Linux 6.1.0 x86_64", "python": "3.11.7",
     "rustc": "rustc 1.95.0 (…)", "started": "2026-…Z", "wall_seconds": 0.9}

`commit` is the git commit of the source tree aqmlab was imported from when that is a
git checkout (an editable install, a clone on the path), else null; `rustc` is the
compiler that built the Rust core, read from the extension's own `.comment` section.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

NAME = "manifest.json"


@functools.lru_cache(maxsize=1)
def source_commit() -> tuple[Optional[str], Optional[bool]]:
    """(commit, modified) of the git checkout holding this package, or (None, None)."""
    here = Path(__file__).resolve().parent
    try:
        top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5)
        if top.returncode != 0:
            return None, None
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5).stdout.strip()
        status = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=5).stdout
        return commit or None, bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


@functools.lru_cache(maxsize=1)
def rustc_version() -> Optional[str]:
    """The rustc that built the extension (its ELF `.comment` section names it)."""
    import mmap

    from . import _core

    try:
        with open(_core.__file__, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            i = mm.find(b"rustc version ")
            if i < 0:
                return None
            j = mm.find(b")", i, i + 200)
            return mm[i:j + 1].decode("ascii", "replace").replace("rustc version", "rustc") if j > 0 else None
    except (OSError, ValueError):
        return None


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def make(*, started: Optional[str] = None, wall_seconds: Optional[float] = None, command: Optional[Sequence[str]] = None, **extra: Any) -> dict[str, Any]:
    """The manifest of a folder made now by this process (`command` defaults to sys.argv)."""
    from . import _core

    commit, dirty = source_commit()
    argv = list(command) if command is not None else [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    return {
        "format_version": 1,
        "aqmlab_version": _core.__version__,
        "commit": commit,
        "dirty": dirty,
        "command": argv,
        "cwd": os.getcwd(),
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "rustc": rustc_version(),
        "started": started or now_utc(),
        "wall_seconds": wall_seconds,
        **extra,
    }
