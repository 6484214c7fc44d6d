"""Checks of everything a command or an API call is given, made before any work: each
failure is an `InputError` (a `ScenarioError`, so a `ValueError`) with one line that
names the field and the value; the command line turns it into exit code 2 with
nothing written.

Besides the scenario itself (checked by the Rust core), these are: seeds (0 to
2^64 - 1), counts of worker processes (at least 1), output folders (writable, probed
by creating and removing a temporary folder in the nearest existing parent), override
lists (not a string, which Python would split into characters), and the memory a run
will take (`aqmsim::budget`, through `_core.memory_estimate`) against the memory the
machine has available.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from . import _core

SEED_MAX = 2**64 - 1
# environment variable that sets the memory a run may take ("8GB", "512MB", or "off")
MEMORY_ENV = "AQMLAB_MEMORY_BUDGET"


class InputError(_core.ScenarioError):
    """An input that cannot be used: the message names the field and the value."""


def seed(value: Any, field: str = "seed") -> Optional[int]:
    """A run's seed: an integer from 0 to 2^64 - 1 (or None: the scenario's)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{field}: {value!r} is not an integer (a seed is 0 to {SEED_MAX})")
    if not 0 <= value <= SEED_MAX:
        raise InputError(f"{field}: {value} is out of range (a seed is 0 to {SEED_MAX})")
    return value


def seed_text(text: str, field: str = "--seed") -> int:
    """A seed written on the command line."""
    try:
        v = int(text.strip(), 10)
    except ValueError:
        raise InputError(f"{field}: \"{text}\" is not an integer (a seed is 0 to {SEED_MAX})") from None
    return seed(v, field)  # type: ignore[return-value]


def positive(value: Any, field: str, what: str = "worker processes") -> Optional[int]:
    """A count that must be at least 1 (or None: the default)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{field}: {value!r} is not an integer (the number of {what}, at least 1)")
    if value < 1:
        raise InputError(f"{field}: {value} (the number of {what} must be at least 1)")
    return value


def positive_text(text: str, field: str, what: str = "worker processes") -> int:
    try:
        v = int(text.strip(), 10)
    except ValueError:
        raise InputError(f"{field}: \"{text}\" is not an integer (the number of {what}, at least 1)") from None
    return positive(v, field, what)  # type: ignore[return-value]


# The temporary folder of an output check (a sweep's next start removes one that a
# kill left behind).
WRITE_CHECK_PREFIX = ".aqmlab-write-check-"


def writable_dir(dest: str | os.PathLike[str], field: str = "--out") -> Path:
    """An output folder that can be created (or written into): its nearest existing
    parent is a folder in which a temporary folder can be made and removed. Nothing
    is left behind by the check."""
    d = Path(dest)
    if str(dest) == "":
        raise InputError(f"{field}: an empty path")
    if d.exists() and not d.is_dir():
        raise InputError(f"{field}: \"{d}\" exists and is not a folder")
    probe_in = d if d.exists() else d.parent
    while not probe_in.exists():
        if probe_in.parent == probe_in:
            break
        probe_in = probe_in.parent
    if not probe_in.is_dir():
        raise InputError(f"{field}: \"{d}\" cannot be created: \"{probe_in}\" is not a folder")
    try:
        t = tempfile.mkdtemp(prefix=WRITE_CHECK_PREFIX, dir=probe_in)
    except OSError as e:
        raise InputError(f"{field}: \"{d}\" cannot be written: {e.strerror or e} in \"{probe_in}\"") from None
    shutil.rmtree(t, ignore_errors=True)
    return d


def override_list(overrides: Any, field: str = "overrides") -> list[str]:
    """`--set`-style overrides from the Python API: a dict {path: value} or a list of
    "KEY=VALUE" strings; a single string is refused (it would be split into its
    characters)."""
    if overrides is None:
        return []
    if isinstance(overrides, (str, bytes)):
        raise InputError(f"{field}: a string ({overrides!r}); give a dict {{\"path\": value}} or a list of \"KEY=VALUE\" strings")
    if isinstance(overrides, Mapping):
        out = []
        for k, v in overrides.items():
            if not isinstance(k, str):
                raise InputError(f"{field}: the key {k!r} is not a dotted field path")
            if isinstance(v, bool):
                lit = "true" if v else "false"
            elif isinstance(v, (int, float)):
                lit = repr(v)
            else:
                try:
                    lit = json.dumps(v)
                except (TypeError, ValueError):
                    raise InputError(f"{field}.{k}: {v!r} is not a scenario value") from None
            out.append(f"{k}={lit}")
        return out
    if not isinstance(overrides, Iterable):
        raise InputError(f"{field}: {overrides!r} is neither a dict nor a list of \"KEY=VALUE\" strings")
    out = list(overrides)
    for o in out:
        if not isinstance(o, str):
            raise InputError(f"{field}: {o!r} is not a \"KEY=VALUE\" string")
    return out


def values(v: Any, field: str) -> list[Any]:
    """The values of a varied field: a list (or tuple); a string or a single value is
    refused, since a string would be split into characters."""
    if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
        raise InputError(f"{field}: {v!r} is not a list of values (write [{v!r}] for one)")
    return list(v)


# -- memory ---------------------------------------------------------------------------

_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _bytes(text: str) -> int:
    t = text.strip().upper().replace(" ", "")
    for u in sorted(_UNITS, key=len, reverse=True):
        if t.endswith(u):
            return int(float(t[: -len(u)]) * _UNITS[u])
    return int(float(t))


def available_memory() -> Optional[int]:
    """The memory a run may take: `AQMLAB_MEMORY_BUDGET` if set ("off": no limit, None),
    else what the kernel reports available (MemAvailable), within the cgroup's limit."""
    env = os.environ.get(MEMORY_ENV)
    if env:
        if env.strip().lower() in ("off", "none", "0"):
            return None
        try:
            return _bytes(env)
        except ValueError:
            raise InputError(f"{MEMORY_ENV}: \"{env}\" is not an amount of memory (e.g. 8GB, 512MB, or off)") from None
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            avail = min(avail or 2**63, max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return avail


def human(n: float) -> str:
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n:.0f} B"


def estimate(text: str, format: str, overrides: Sequence[str], seed: Optional[int], base_dir: Optional[str]) -> dict[str, Any]:
    """The memory estimate of a run (see `aqmsim::budget`)."""
    return json.loads(_core.memory_estimate(text, format, list(overrides), seed, base_dir))


def check_memory(est: Mapping[str, Any], what: str = "the run", available: Optional[int] = None, share: int = 1) -> None:
    """Refuse a run whose estimate does not fit in the memory available (divided among
    `share` runs at once), naming the estimate, its largest part and the knob to turn."""
    avail = available_memory() if available is None else available
    if avail is None:
        return
    need = est["process_bytes"]
    room = avail // max(1, share)
    if need <= room:
        return
    # the parts that take most, and the settings that shrink them, until the rest fits
    taking, knobs, left = [], [], need
    for part in est["parts"]:
        if left <= room or len(taking) == 3:
            break
        taking.append(f"{_count(part)} take {human(part['bytes'])}")
        if part["knob"] not in knobs:
            knobs.append(part["knob"])
        left -= part["bytes"]
    where = f"the {human(avail)} available" + (f" to each of {share} runs at once" if share > 1 else "")
    raise InputError(
        f"memory: {what} needs about {human(need)}, more than {where} ({', '.join(taking)}); "
        f"to fit, {' and '.join(knobs)} (or set {MEMORY_ENV})"
    )


def _count(part: Mapping[str, Any]) -> str:
    n = f"{part['count']:,}"
    return {
        "flows": f"{n} flows",
        "record.packets": f"{n} packet records",
        "record.flow_series": f"{n} flow samples",
        "record.datagrams": f"{n} datagram records",
        "record.flow_trace": f"{n} ACK records",
        "transfers": f"{n} downloads",
        "timeseries": f"{n} link samples",
        "queue": f"{n} queued packets",
    }.get(part["name"], f"{part['name']} {n}")
