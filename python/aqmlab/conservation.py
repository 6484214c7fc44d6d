"""Packet conservation, enforced on every run (simulated or emulated).

A run's metadata carries balances of the form created = delivered + dropped +
in flight: `meta["conservation"]` for the whole run, and any balance nested in it
(per link, per flow: every mapping with those four keys, found wherever it sits, so
that balances the core adds later are checked without a change here). Each link's
queue counters (`meta["links"][i]["stats"]`) must balance too: every arrival was
dequeued, dropped (with a cause) or is still queued at the end, never a negative
number, never more than a packet limit holds, and equal to the queue's final backlog
where the core reports it.

`check` returns one line per balance (written to the run folder as
`conservation.ok`) or raises `SimulationError` with one line naming the balance that
does not hold: a bug, reported loudly, with nothing written.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ._core import SimulationError

BALANCE = ("created", "delivered", "dropped", "in_flight")
FILE = "conservation.ok"


def _balances(node: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        if all(k in node for k in BALANCE):
            yield path, node
        for k, v in node.items():
            if k in BALANCE:
                continue
            name = v.get("name") if isinstance(v, Mapping) and isinstance(v.get("name"), str) else k
            yield from _balances(v, f"{path} {name}".strip() if path else str(name))
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            name = v.get("name") if isinstance(v, Mapping) and isinstance(v.get("name"), (str, int)) else i
            yield from _balances(v, f"{path} {name}".strip())


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise SimulationError(f"packet conservation: {where} is {v!r}, not a count (a bug in aqmlab: please report it with the scenario and seed)")
    return v


def _fail(what: str) -> SimulationError:
    return SimulationError(f"packet conservation violated: {what} (a bug in aqmlab: please report it with the scenario and seed)")


def check(meta: Mapping[str, Any]) -> list[str]:
    """Every balance of a run's metadata; raises `SimulationError` if one fails."""
    lines = []
    cons = meta.get("conservation")
    if not isinstance(cons, Mapping):
        raise _fail("the run reports no conservation counters")
    found = list(_balances(cons, ""))
    for path, b in found:
        c, d, x, f = (_int(b[k], f"{(path + ' ') if path else ''}{k}") for k in BALANCE)
        label = f"{path}: " if path else ""
        if c != d + x + f:
            raise _fail(f"{label}created {c} != delivered {d} + dropped {x} + in flight {f}")
        lines.append(f"{label}created {c} = delivered {d} + dropped {x} + in flight {f}")
    for link in meta.get("links") or []:
        st = link.get("stats")
        if not isinstance(st, Mapping):
            continue
        name = link.get("name", "?")
        arrivals = _int(st.get("arrivals"), f"link {name} arrivals")
        enqueued = _int(st.get("enqueued"), f"link {name} enqueued")
        dequeued = _int(st.get("dequeued"), f"link {name} dequeued")
        drops = st.get("drops") or []
        dropped = sum(_int(v, f"link {name} drops") for v in drops)
        held = arrivals - dequeued - dropped
        if enqueued > arrivals or dequeued > enqueued:
            raise _fail(f"link {name}: {arrivals} arrived, {enqueued} queued, {dequeued} dequeued")
        if held < 0:
            raise _fail(f"link {name}: {arrivals} arrived < {dequeued} dequeued + {dropped} dropped")
        limit = link.get("limit_packets")
        if isinstance(limit, int) and held > limit:
            raise _fail(f"link {name}: {held} packets left in a queue of {limit}")
        for key in ("backlog_packets", "queued"):
            if isinstance(link.get(key), int) and link[key] != held:
                raise _fail(f"link {name}: {arrivals} arrived - {dequeued} dequeued - {dropped} dropped = {held}, but {link[key]} queued at the end")
        lines.append(f"link {name}: arrived {arrivals} = dequeued {dequeued} + dropped {dropped} + queued at the end {held}")
    return lines
