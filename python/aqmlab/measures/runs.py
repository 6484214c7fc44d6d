"""What the measures read of a run besides its tables: durations as the core writes
them, settings of its scenario in ns, the warm-up, the traffic kinds of a family
(the core's registry), the link a name stands for, and the filter of a link's
dequeue rows.
"""

from __future__ import annotations

import functools
from typing import Any


def resolve_link(run: Any, link: str) -> str:
    """A link's name in `run`: "bottleneck" stands for the run's primary link in a
    topology of [[links]], which has no link of that name."""
    if link != "bottleneck":
        return link
    return (getattr(run, "summary", None) or {}).get("primary_link", "bottleneck")


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}


def duration_ns(text: str) -> int:
    """Parse a duration string as the Rust core writes it ("100ms", "1.5s")."""
    text = text.strip()
    i = len(text)
    while i and not (text[i - 1].isdigit() or text[i - 1] == "."):
        i -= 1
    return round(float(text[:i]) * _UNITS[text[i:]])


_ns = duration_ns


def ecn_codepoints() -> list[str]:
    """The ECN codepoints' names in the order of the per-codepoint counters (the
    schema's `ecn` code table): not_ect, ect0, ect1, ce."""
    from ..results import codes

    return codes("ecn")


@functools.cache
def kinds_of(family: str) -> tuple[str, ...]:
    """The traffic kinds of a family, as the core's registry says: "bulk" (long-lived
    TCP), "datagrams" (unresponsive UDP), "downloads" (finite transfers)."""
    from ..results import schema

    return tuple(k for k, f in schema()["traffic_families"].items() if f == family)


def _dequeues(link: str) -> list[tuple[str, str, Any]]:
    return [("link", "=", link), ("event", "=", "dequeue")]


DEQUEUES = _dequeues("bottleneck")


def setting_ns(run: Any, path: str, default_ns: int | None = None) -> int | None:
    """A duration of the run's scenario by dotted path ("metrics.warmup"), in ns."""
    d: Any = run.scenario
    for p in path.split("."):
        if not isinstance(d, dict) or p not in d:
            return default_ns
        d = d[p]
    return duration_ns(d) if isinstance(d, str) else default_ns


def warmup_s(run: Any) -> float:
    """The scenario's `metrics.warmup` in seconds (0 when it has none)."""
    return (setting_ns(run, "metrics.warmup", 0) or 0) / 1e9
