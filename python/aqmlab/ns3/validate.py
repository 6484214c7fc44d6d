"""`aqmlab validate ns3`: the same scenarios in aqmlab and in ns-3 3.44, side by side.

Each case is a scenario both simulators can express (`aqmlab.ns3.translate`), run
with several seeds in each. The headline figures of every run are computed with the
same definitions (`aqmlab.metrics`; `aqmlab.ns3.summarize` for the twin), and the
table gives, per figure, the mean and the seed-to-seed standard deviation in each
simulator, the difference, and the verdict: the two agree when the difference is
within the seed-to-seed spread (sqrt(sd_aqmlab^2 + sd_ns3^2)), or within 10 % of
ns-3's value, or below a small absolute floor (1 ms of delay, 0.01 of a fraction,
2 % of the class's fair share of goodput), whichever is largest.

aqmlab's side is aligned with ns-3 where aqmlab has ns-3's behaviour as an option
(`ALIGN`: the three-way handshake, RFC 6298's RTO, no quick-ACK start, RFC 6675
loss detection without tail loss probes, F-RTO, D-SACK or SACK compression, exact
timers); the
settings that cannot match are listed with the table (`Translation.differences`).
Every run's figures are written as soon as it ends (``runs/CASE/SIM-seedN.json``,
atomically), so a killed validation resumes where it stopped.
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
import time
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from .. import _core


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    scenario: str
    overrides: tuple[str, ...] = ()


_S3_AQMS = {
    # Kuhn & Ros §III: PIE with target 20 ms, update 30 ms (burst allowance 100 ms)
    "pie": "bottleneck.aqm={kind=\"pie\",target=\"20ms\",tupdate=\"30ms\",max_burst=\"100ms\"}",
    "codel": "bottleneck.aqm={kind=\"codel\"}",
    "fq_codel": "bottleneck.aqm={kind=\"fq_codel\"}",
    "ared": "bottleneck.aqm={kind=\"ared\"}",
    "droptail": "bottleneck.aqm={kind=\"droptail\"}",
}
_UDP_ONLY = 'flows=[{name="udp",kind="cbr",count=2,rate="6Mbps",packet_size="1500B",start={uniform=["0s","1s"]}}]'
_AQM_TITLE = {"pie": "PIE", "codel": "CoDel", "fq_codel": "FQ-CoDel", "ared": "ARED", "droptail": "DropTail"}

STANDARD: list[Case] = [
    Case(f"s3-{aqm}-rtt{rtt}", f"Kuhn & Ros §III, {_AQM_TITLE[aqm]}, RTT {rtt} ms", "madpie-proof",
         (over, f"bottleneck.delay={(rtt - 4) // 2}ms"))
    for rtt in (100, 500)
    for aqm, over in _S3_AQMS.items()
] + [
    # The AQMs alone, without TCP: two unresponsive 6 Mbps floods on 10 Mbps (20 %
    # overload) for 100 s. Any difference here is the AQM implementations', not TCP's.
    Case(f"open-loop-{aqm}", f"{_AQM_TITLE[aqm]} alone: 2 UDP floods of 6 Mbps on 10 Mbps, 1000-packet buffer", "pie-lab-udp",
         (over, _UDP_ONLY))
    for aqm, over in _S3_AQMS.items() if aqm != "droptail"
] + [
    Case("udp-floods", "PIE slides: 5 CUBIC flows + 2 UDP floods of 6 Mbps, PIE 30 ms", "pie-lab-udp"),
    Case("capacity-drop", "PIE slides: 100 CUBIC flows, 50 -> 10 Mbps at 50 s, PIE 30 ms", "pie-lab-capacity"),
]

# aqmlab options set to ns-3's behaviour, for every TCP group ({i}: the group index)
ALIGN = (
    "flows.{i}.tcp.handshake=true",
    "flows.{i}.tcp.rto_style=\"rfc6298\"",
    "flows.{i}.tcp.quickack=0",
    "flows.{i}.tcp.recovery=\"rfc6675\"",
    "flows.{i}.tcp.tlp=false",
    "flows.{i}.tcp.frto=false",
    "flows.{i}.tcp.dsack=false",
    "flows.{i}.tcp.sack_compression=false",
    "flows.{i}.tcp.receive_buffer=\"unlimited\"",
    "flows.{i}.tcp.gso=\"off\"",
    "flows.{i}.tcp.tick=\"0s\"",
)
ALIGN_NOTE = [
    "aqmlab side aligned with ns-3: three-way handshake on, RTO per RFC 6298 (min 200 ms), no quick-ACK start",
]


@dataclass(frozen=True)
class Figure:
    key: str  # dotted path in the summary; {class} is each TCP/CBR class
    label: str
    unit: str
    floor: float  # absolute agreement floor
    per_class: bool = False


FIGURES = [
    Figure("bottleneck.queue_delay_ms.p50", "queueing delay p50", "ms", 1.0),
    Figure("bottleneck.queue_delay_ms.p90", "queueing delay p90", "ms", 1.0),
    Figure("bottleneck.queue_delay_ms.p99", "queueing delay p99", "ms", 1.0),
    Figure("bottleneck.utilization.mean", "utilization (mean of 1 s)", "", 0.01),
    Figure("bottleneck.drop_rate", "drop rate (drops / arrivals)", "", 0.001),
    Figure("bottleneck.drop_shares.random", "share of drops: random", "", 0.01),
    Figure("bottleneck.drop_shares.deterministic", "share of drops: deterministic", "", 0.01),
    Figure("bottleneck.drop_shares.overflow", "share of drops: overflow", "", 0.01),
    Figure("classes.{class}.goodput_mbps", "goodput", "Mbps", 0.0, per_class=True),
    Figure("classes.{class}.jain_index", "Jain's fairness index", "", 0.01, per_class=True),
]


def cases_by_name(names: Sequence[str]) -> list[Case]:
    if not names or list(names) == ["standard"]:
        return list(STANDARD)
    known = {c.name: c for c in STANDARD}
    out = []
    for n in names:
        if n not in known:
            raise ValueError(f"validate: unknown case {n!r} (known: {', '.join(known)}, or 'standard')")
        out.append(known[n])
    return out


def resolved(case: Case, extra: Sequence[str] = (), quick: bool = False, align: bool = True) -> dict[str, Any]:
    from ..scenario import resolve

    base = resolve(case.scenario, list(case.overrides))
    tcp_groups = [i for i, g in enumerate(base["flows"]) if g["kind"] in ("bulk", "files", "web", "transfer")]
    # "flows.{tcp}.…" applies to every TCP group (and to none in a UDP-only case)
    extra = [e.format(tcp=i) for e in extra for i in (tcp_groups if "{tcp}" in e else [None])]
    sc = resolve(case.scenario, list(case.overrides) + list(extra))
    over = list(case.overrides) + list(extra)
    if align:
        for i, g in enumerate(sc["flows"]):
            if g["kind"] in ("bulk", "files", "web", "transfer"):
                over += [a.format(i=i) for a in ALIGN]
    if quick:
        over.append(f"duration={min(60.0, _seconds(sc['duration']))}s")
    return resolve(case.scenario, over)


def _seconds(text: str) -> float:
    from ..metrics import _ns

    return _ns(text) / 1e9


# -- one run (in a worker process) ----------------------------------------------------


@functools.lru_cache(maxsize=1)
def _build_id() -> str:
    """The simulator build: a digest of the compiled core, so that a rebuilt aqmlab redoes its runs."""
    import hashlib

    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:16]


def run_key(sim: str, sc: dict[str, Any], seed: int) -> str:
    """What a run's result depends on: aqmlab's resolved scenario, or the twin's
    arguments (and its source), with the seed. A stored run with another key is redone."""
    import hashlib

    if sim == "aqmlab":
        text = json.dumps(dict(sc, seed=seed), sort_keys=True) + _build_id()
    else:
        from importlib import resources

        from . import translate

        args = [a for a in translate(sc, seed, "OUT").args]
        from importlib import metadata

        text = json.dumps(args) + resources.files(__package__).joinpath("dumbbell.cc").read_text() + metadata.version("ns3")
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _run_one(sim: str, sc: dict[str, Any], seed: int, dest: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    if sim == "aqmlab":
        from ..results import RunResult

        sc = dict(sc, seed=seed)
        summary = RunResult(_core.run(json.dumps(sc), "json", [], seed, None)).summary
        wall = time.perf_counter() - t0
    else:
        from . import run as ns3_run

        r = ns3_run(sc, seed, Path(dest).parent / f"ns3-work-{seed}")
        summary, wall = r.summary, r.wall_seconds
        for f in Path(dest).parent.glob(f"ns3-work-{seed}/*"):
            f.unlink()
        Path(dest).parent.joinpath(f"ns3-work-{seed}").rmdir()
    rec = {"sim": sim, "seed": seed, "key": run_key(sim, sc, seed), "wall_seconds": wall, "summary": summary}
    tmp = dest + f".tmp{os.getpid()}"
    Path(tmp).write_text(json.dumps(rec))
    os.replace(tmp, dest)
    return rec


def _get(summary: dict[str, Any], key: str) -> Optional[float]:
    """A number of a summary by dotted path (comparison's lookup), or None."""
    from ..measures import get as lookup

    v = lookup(summary, key)
    return float(v) if isinstance(v, (int, float)) else None


@dataclass
class Row:
    case: str
    figure: str
    unit: str
    aqmlab: tuple[float, float, int]
    ns3: tuple[float, float, int]
    tolerance: float
    agrees: bool

    @property
    def diff(self) -> float:
        return self.aqmlab[0] - self.ns3[0]


def _mean_sd(vals: list[float]) -> tuple[float, float, int]:
    return (statistics.fmean(vals), statistics.stdev(vals) if len(vals) > 1 else 0.0, len(vals))


def compare(case: Case, sc: dict[str, Any], recs: dict[str, list[dict[str, Any]]]) -> list[Row]:
    rows = []
    for f in FIGURES:
        keys = [(f.key, f.label)]
        if f.per_class:
            keys = [(f.key.format(**{"class": g["name"]}), f"{f.label} ({g['name']})") for g in sc["flows"]]
        for key, label in keys:
            a = [v for r in recs["aqmlab"] if (v := _get(r["summary"], key)) is not None]
            n = [v for r in recs["ns3"] if (v := _get(r["summary"], key)) is not None]
            if not a or not n:
                continue
            ma, mn = _mean_sd(a), _mean_sd(n)
            floor = f.floor
            if key.endswith("goodput_mbps"):
                floor = 0.02 * abs(mn[0])
            tol = max(math.hypot(ma[1], mn[1]), 0.10 * abs(mn[0]), floor)
            rows.append(Row(case.name, label, f.unit, ma, mn, tol, abs(ma[0] - mn[0]) <= tol + 1e-12))
    return rows


@dataclass
class Validation:
    cases: list[Case]
    rows: list[Row] = field(default_factory=list)
    differences: dict[str, list[str]] = field(default_factory=dict)
    wall: dict[str, dict[str, float]] = field(default_factory=dict)
    seeds: int = 0

    @property
    def agreeing(self) -> int:
        return sum(r.agrees for r in self.rows)


def _fmt(x: float, unit: str) -> str:
    if unit == "ms" or unit == "Mbps":
        return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"
    return f"{x:.3f}"


def markdown(v: Validation, quick: bool) -> str:
    lines = [
        "# aqmlab against ns-3 3.44",
        "",
        f"{len(v.cases)} cases, {v.seeds} seeds each{' (quick: at most 60 s per run)' if quick else ''}. "
        "Each cell: mean ± standard deviation over the seeds. A figure agrees when |aqmlab − ns-3| is within "
        "the seed-to-seed spread, 10 % of ns-3's value, or the absolute floor. "
        f"**{v.agreeing} of {len(v.rows)} figures agree.**",
        "",
        *[f"- {n}" for n in ALIGN_NOTE],
        "",
    ]
    for c in v.cases:
        rows = [r for r in v.rows if r.case == c.name]
        w = v.wall.get(c.name, {})
        lines += [f"## {c.name}: {c.title}", "",
                  f"`aqmlab validate ns3 {c.name}` — scenario `{c.scenario}`{' with ' + ', '.join(f'`{o}`' for o in c.overrides) if c.overrides else ''}; "
                  f"wall time per run: aqmlab {w.get('aqmlab', float('nan')):.2f} s, ns-3 {w.get('ns3', float('nan')):.2f} s.", "",
                  "| figure | aqmlab | ns-3 | difference | agrees |", "|---|---|---|---|---|"]
        for r in rows:
            u = f" {r.unit}" if r.unit else ""
            lines.append(f"| {r.figure} | {_fmt(r.aqmlab[0], r.unit)} ± {_fmt(r.aqmlab[1], r.unit)}{u} | {_fmt(r.ns3[0], r.unit)} ± {_fmt(r.ns3[1], r.unit)}{u} "
                         f"| {_fmt(r.diff, r.unit)} (tolerance {_fmt(r.tolerance, r.unit)}) | {'yes' if r.agrees else '**no**'} |")
        lines += ["", "Settings that cannot match exactly:", ""] + [f"- {d}" for d in v.differences.get(c.name, [])] + [""]
    return "\n".join(lines)


def validate(names: Sequence[str] = (), *, seeds: int = 5, out: Optional[Path] = None, quick: bool = False, jobs: Optional[int] = None,
             align: bool = True, extra: Sequence[str] = (), console: Any = None) -> Validation:
    from . import build, translate

    cases = cases_by_name(names)
    out = Path(out or "validation-ns3")
    build()
    scs = {c.name: resolved(c, extra, quick, align) for c in cases}  # bad input fails here, before anything is written
    for c in cases:
        translate(scs[c.name], 1, "OUT")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    v = Validation(cases, seeds=seeds)
    for c in cases:
        v.differences[c.name] = translate(scs[c.name], 1, "/dev/null").differences
    todo, recs = [], {c.name: {"aqmlab": [], "ns3": []} for c in cases}
    for c in cases:
        d = out / "runs" / c.name
        d.mkdir(parents=True, exist_ok=True)
        for sim in ("ns3", "aqmlab"):
            for s in range(1, seeds + 1):
                dest = d / f"{sim}-seed{s}.json"
                rec = json.loads(dest.read_text()) if dest.exists() else None
                if rec is not None and rec.get("key") == run_key(sim, scs[c.name], s):
                    recs[c.name][sim].append(rec)
                else:
                    todo.append((c.name, sim, s, str(dest)))
    done = sum(len(x["aqmlab"]) + len(x["ns3"]) for x in recs.values())
    if console is not None and done:
        console.print(f"{done} runs already done in {out}, {len(todo)} to run")
    from .. import inputs

    jobs = inputs.positive(jobs, "jobs") or os.cpu_count() or 1
    from ..sweeps import new_pool, spawning, stop_pool

    pool = new_pool(jobs)
    try:
        with spawning():
            futs = {pool.submit(_run_one, sim, scs[name], s, dest): (name, sim, s) for name, sim, s, dest in todo}
        for k, fut in enumerate(as_completed(futs), 1):
            name, sim, s = futs[fut]
            rec = fut.result()
            recs[name][sim].append(rec)
            if console is not None:
                console.print(f"[{k}/{len(todo)}] {name} {sim} seed {s}: {rec['wall_seconds']:.2f} s")
        pool.shutdown(wait=True)
    except BaseException:
        # Ctrl-C, SIGTERM or a failed run: the workers are stopped now, not after the
        # runs still queued (finished runs are in their files; a restart resumes)
        stop_pool(pool)
        raise
    for c in cases:
        r = recs[c.name]
        v.rows += compare(c, scs[c.name], r)
        v.wall[c.name] = {sim: statistics.fmean(x["wall_seconds"] for x in r[sim]) for sim in r if r[sim]}
    md = markdown(v, quick)
    for name, text in (("validation.md", md), ("validation.json", json.dumps({
        "seeds": seeds, "quick": quick, "agreeing": v.agreeing, "figures": len(v.rows),
        "rows": [r.__dict__ | {"diff": r.diff} for r in v.rows], "differences": v.differences, "wall_seconds": v.wall,
    }, indent=1))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)
    return v
