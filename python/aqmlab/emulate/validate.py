"""`aqmlab validate linux`: the same scenarios in the simulator and on the real
kernel (`aqmlab emulate`), side by side.

Each case is a dumbbell scenario (1-16 bulk flows, RTT 20-200 ms, DropTail, PIE,
CoDel or FQ-CoDel, Linux's CUBIC, Reno or BBR) that runs `repeats` times on each
side, at seeds 1..repeats: the emulated and the simulated run of one seed start
their flows at the same instants (the emulator draws its plan from the simulator's
streams), so the kernel's spread over the repeats is its run-to-run spread plus the
same start-time variation the simulated seeds have.

The figures are those of `summary.json` on both sides, computed by the same code:
queueing delay p50 and p95, mean utilization, drops and CE marks at the bottleneck,
per class goodput and Jain's index, and per flow the retransmissions and the
retransmission timeouts. A figure agrees when the simulator's mean is within 10 %
of the kernel's, or within an absolute floor (2 ms of delay; 0.02 of a fraction; 2 %
of the bottleneck's rate for goodput), or within twice the kernel's run-to-run
standard deviation, whichever is largest. Timeouts per flow agree when the two means
are within a factor 1.5 of each other, or differ by at most 0.1 timeout per flow
per run (or twice the kernel's spread). The kernel's loss probes, D-SACKed segments,
undone reductions and recoveries are shown beside the simulator's for information.

The simulated side is Linux's TCP as the kernel runs it on these paths: a handshake
first, a 1448-byte MSS in 1500-byte packets (timestamps take 12 bytes of options),
the rest of `tcp` at its defaults (`ALIGN`); and the emulator's path, whose hosts
reach the bottleneck without access-link serialization (`PATH_ALIGN`).

Every run's figures are written as soon as it ends (`runs/CASE/SIDE-seedN.json`,
atomically) with a key of what it depends on: a kernel run on the case, its seed and
duration, the kernel's release and the emulator's format; a simulated run on the
resolved scenario and the simulator's build. A killed or interrupted validation
resumes where it stopped, and a rebuilt simulator reruns only the simulated side.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from .. import _core

# Bump when the emulator changes what a run measures: stored kernel runs are redone.
EMULATOR_FORMAT = 2


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    overrides: tuple[str, ...]
    # the bottleneck's rate in Mb/s (for the goodput floor)
    rate_mbps: float = 10.0
    scenario: str = "madpie-proof"


def _rtt_delay(rtt_ms: int) -> str:
    """The bottleneck's one-way delay for a base RTT: 2 x (1 + d + 1) ms."""
    return f"{(rtt_ms - 4) // 2}ms"


_AQM = {
    "droptail": 'bottleneck.aqm={kind="droptail"}',
    "pie": 'bottleneck.aqm={kind="pie"}',
    "codel": 'bottleneck.aqm={kind="codel"}',
    "fq_codel": 'bottleneck.aqm={kind="fq_codel"}',
}
_TITLE = {"droptail": "DropTail", "pie": "PIE", "codel": "CoDel", "fq_codel": "FQ-CoDel", "cubic": "CUBIC", "reno": "Reno", "bbr": "BBR"}


def _case(cc: str, flows: int, rtt: int, aqm: str, rate: int = 10, buffer: str = "1bdp", ecn: bool = False) -> Case:
    name = f"{cc}-{flows}f-{rtt}ms-{aqm}" + (f"-{rate}mbps" if rate != 10 else "") + (f"-{buffer}" if buffer != "1bdp" else "") + ("-ecn" if ecn else "")
    title = (f"{flows} {_TITLE[cc]} flow{'s' if flows > 1 else ''}, {rate} Mb/s, RTT {rtt} ms, {_TITLE[aqm]}, buffer {buffer}"
             + (", ECN" if ecn else ""))
    over = (
        f"bottleneck.rate={rate}Mbps",
        f"bottleneck.delay={_rtt_delay(rtt)}",
        f"bottleneck.buffer={buffer}",
        _AQM[aqm],
        f"flows.0.count={flows}",
        f'flows.0.tcp.cc="{cc}"',
    ) + (("flows.0.tcp.ecn=true",) if ecn else ())
    return Case(name, title, over, float(rate))


def _mixed(rate: int, rtt: int, buffer: str) -> Case:
    """BBR and CUBIC sharing one bottleneck: two flows each, in two groups."""
    groups = ('flows=[{name="bbr",kind="bulk",count=2,start={uniform=["0s","1s"]},tcp={cc="bbr"}},'
              '{name="cubic",kind="bulk",count=2,start={uniform=["0s","1s"]},tcp={cc="cubic"}}]')
    over = (f"bottleneck.rate={rate}Mbps", f"bottleneck.delay={_rtt_delay(rtt)}", f"bottleneck.buffer={buffer}", _AQM["droptail"], groups)
    return Case(f"bbr+cubic-2+2f-{rtt}ms-droptail-{rate}mbps-{buffer}", f"2 BBR and 2 CUBIC flows, {rate} Mb/s, RTT {rtt} ms, DropTail, buffer {buffer}",
                over, float(rate))


STANDARD: list[Case] = [
    _case("cubic", 1, 20, "droptail"),
    _case("cubic", 4, 20, "pie"),
    _case("cubic", 16, 20, "droptail"),
    _case("cubic", 16, 20, "fq_codel"),
    _case("cubic", 4, 100, "droptail"),
    _case("cubic", 4, 100, "codel"),
    _case("cubic", 4, 100, "fq_codel", ecn=True),
    _case("cubic", 16, 100, "pie"),
    _case("cubic", 1, 200, "pie"),
    _case("reno", 4, 20, "droptail"),
    _case("reno", 16, 100, "codel"),
    _case("bbr", 1, 40, "droptail", rate=20, buffer="2bdp"),
    _case("bbr", 4, 40, "droptail", rate=20, buffer="2bdp"),
    _mixed(20, 40, "2bdp"),
    _case("bbr", 4, 100, "pie"),
    _case("bbr", 16, 20, "fq_codel"),
]

# `--quick`: three cases (CUBIC under DropTail and CoDel, the BBR case of the issue), 10 s
QUICK = ["cubic-1f-20ms-droptail", "cubic-4f-100ms-codel", "bbr-4f-40ms-droptail-20mbps-2bdp"]
DURATION_S = 30.0
QUICK_DURATION_S = 10.0

# The simulator's TCP set to what Linux negotiates on these paths, for every TCP group.
ALIGN = ("flows.{i}.tcp.handshake=true", "flows.{i}.tcp.mss=1448B", "flows.{i}.tcp.header=52B")
# The emulator's access "links" are the namespaces' TUN devices: a sender's segments
# reach the bottleneck microseconds apart, with no access-link serialization. A
# simulated 100 Mb/s access link spaces back-to-back segments by 0.12 ms, and in a
# deterministic simulation that spacing can lock the arrivals to a fixed phase of the
# bottleneck's departures (Floyd & Jacobson, "On Traffic Phase Effects in
# Packet-Switched Gateways"): at 16 flows through DropTail the second segment of
# every pair then took the slot the departure before it freed, and the drops fell on
# the recoveries' lone retransmissions, five times the kernel's timeouts. The
# simulated side's access links are as fast as the emulator's.
PATH_ALIGN = ("access.rate=100Gbps",)
ALIGN_NOTE = (
    "simulator aligned with the kernel's connections: handshake, MSS 1448 B in 1500-byte packets (12 bytes of timestamp option); "
    "and with the emulator's path: access links of 100 Gb/s (the emulator's hosts reach the bottleneck through TUN devices, without serialization)"
)

SIDES = ("linux", "aqmlab")


def cases_by_name(names: Sequence[str], quick: bool = False) -> list[Case]:
    known = {c.name: c for c in STANDARD}
    if not names or list(names) == ["standard"]:
        return [known[n] for n in QUICK] if quick else list(STANDARD)
    out = []
    for n in names:
        if n not in known:
            raise ValueError(f"validate linux: unknown case {n!r} (known: {', '.join(known)}, or 'standard')")
        out.append(known[n])
    return out


def case_overrides(case: Case, quick: bool, extra: Sequence[str] = ()) -> list[str]:
    """The overrides of both sides: the case, its duration, the user's `--set`
    (`flows.{tcp}.…` applies to every TCP group)."""
    from ..scenario import resolve

    over = list(case.overrides) + [f"duration={QUICK_DURATION_S if quick else DURATION_S:g}s"]
    if any("{tcp}" in e for e in extra):
        tcp = [i for i, g in enumerate(resolve(case.scenario, over)["flows"]) if g["kind"] != "cbr"]
        extra = [e.format(tcp=i) for e in extra for i in (tcp if "{tcp}" in e else [None])]
    return over + list(extra)


def resolved(case: Case, over: Sequence[str], align: bool = True) -> dict[str, Any]:
    """The simulated side's scenario, with the alignment for every TCP group."""
    from ..scenario import resolve

    base = resolve(case.scenario, list(over))
    extra = ([a.format(i=i) for i, g in enumerate(base["flows"]) if g["kind"] != "cbr" for a in ALIGN] + list(PATH_ALIGN)) if align else []
    return resolve(case.scenario, list(over) + extra)


def _build_id() -> str:
    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:16]


# The `tcp` fields the emulator reads (the rest is the simulator's TCP model; the
# kernel's TCP is the kernel's).
KERNEL_TCP_FIELDS = frozenset({"cc", "ecn", "slow_start_after_idle", "receiver"})
_TCP_FIELD = re.compile(r"^flows\.[^.=]+\.tcp\.([A-Za-z_]+)")


def kernel_overrides(over: Sequence[str]) -> list[str]:
    """The overrides a kernel run depends on: all but those of a `tcp` field only the
    simulator reads (`--set 'flows.{tcp}.tcp.gso="linux"'` keeps the kernel runs)."""
    keep = []
    for o in over:
        m = _TCP_FIELD.match(o)
        if m is None or m.group(1) in KERNEL_TCP_FIELDS:
            keep.append(o)
    return keep


def run_key(side: str, case: Case, over: Sequence[str], seed: int, sc: Optional[dict[str, Any]] = None) -> str:
    """What a stored run depends on; a run stored with another key is redone."""
    if side == "linux":
        text = json.dumps({"scenario": case.scenario, "overrides": kernel_overrides(over), "seed": seed, "kernel": os.uname().release, "format": EMULATOR_FORMAT})
    else:
        text = json.dumps(dict(sc or {}, seed=seed), sort_keys=True) + _build_id()
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# -- one run ------------------------------------------------------------------------


def _flow_summary(raw: dict[str, Any]) -> dict[str, list[int]]:
    """Per-flow counters of a run (the columns that exist)."""
    fl = raw["flows"]
    return {k: [int(x) for x in fl[k]] for k in ("retransmits", "timeouts", "recoveries", "loss_probes", "loss_probe_recoveries", "dsacks", "undos", "spurious_rtos", "lost_retransmits") if k in fl}


def _write(dest: Path, rec: dict[str, Any]) -> dict[str, Any]:
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(rec))
    os.replace(tmp, dest)
    return rec


def run_sim(case: Case, over: Sequence[str], sc: dict[str, Any], seed: int, dest: str) -> dict[str, Any]:
    """One simulated run (in a worker process); a scenario the simulator refuses is
    stored as such."""
    from ..results import RunResult

    t0 = time.perf_counter()
    rec: dict[str, Any] = {"side": "aqmlab", "seed": seed, "key": run_key("aqmlab", case, over, seed, sc)}
    try:
        r = RunResult(_core.run(json.dumps(dict(sc, seed=seed)), "json", [], seed, None))
        rec.update(summary=r.summary, flows=_flow_summary(r.raw))
    except _core.ScenarioError as e:
        rec["error"] = str(e)
    rec["wall_seconds"] = time.perf_counter() - t0
    return _write(Path(dest), rec)


def run_kernel(case: Case, over: Sequence[str], seed: int, dest: str) -> dict[str, Any]:
    """One emulated run on the kernel (real time; root)."""
    from . import emulate

    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = emulate(case.scenario, list(over), seed)
    em = r.summary.get("emulation", {})
    rec = {
        "side": "linux",
        "seed": seed,
        "key": run_key("linux", case, over, seed),
        "wall_seconds": time.perf_counter() - t0,
        "load_average": load,
        "summary": r.summary,
        "flows": _flow_summary(r.raw),
        "counters": em.get("sender_tcp_counters", {}),
        "flow_counters": em.get("flow_counters", {}),
        "offloads": em.get("offloads", {}),
    }
    return _write(Path(dest), rec)


# -- comparison ---------------------------------------------------------------------


def _get(summary: dict[str, Any], key: str) -> Optional[float]:
    from ..measures import get

    v = get(summary, key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass
class Row:
    case: str
    figure: str
    unit: str
    linux: tuple[float, float, int]
    aqmlab: Optional[tuple[float, float, int]]
    tolerance: float
    agrees: Optional[bool]  # None: not compared (information, or no simulated value)
    rule: str = "10 %"

    @property
    def diff(self) -> Optional[float]:
        return None if self.aqmlab is None else self.aqmlab[0] - self.linux[0]


def _mean_sd(vals: list[float]) -> tuple[float, float, int]:
    return (statistics.fmean(vals), statistics.stdev(vals) if len(vals) > 1 else 0.0, len(vals))


def tolerance(kernel: tuple[float, float, int], floor: float) -> float:
    """10 % of the kernel's mean, the floor, or twice its run-to-run spread."""
    return max(0.10 * abs(kernel[0]), floor, 2.0 * kernel[1])


def timeouts_agree(sim: float, kernel: tuple[float, float, int]) -> bool:
    """Timeouts per flow: within a factor 1.5, or within 0.1 per flow per run (or
    twice the kernel's spread) of each other."""
    k = kernel[0]
    if abs(sim - k) <= max(0.1, 2.0 * kernel[1]):
        return True
    return min(sim, k) > 0 and max(sim, k) <= 1.5 * min(sim, k)


# run-level counters shown for information: Linux's namespace counters (nstat) and
# the simulator's per-flow ones, summed
INFO = [
    ("loss probes (TLP) per run", ("TCPLossProbes",), "loss_probes"),
    ("tail-loss-probe recoveries per run", ("TCPLossProbeRecovery",), "loss_probe_recoveries"),
    ("D-SACK blocks received per run", ("TCPDSACKRecv", "TCPDSACKOfoRecv"), None),
    ("D-SACKed segments per run", None, "dsacks"),
    ("undone reductions per run", ("TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo"), "undos"),
    ("spurious timeouts (F-RTO) per run", ("TCPSpuriousRTOs",), "spurious_rtos"),
    ("SACK recoveries per run", ("TCPSackRecovery",), "recoveries"),
    ("lost retransmissions per run", ("TCPLostRetransmit",), "lost_retransmits"),
    ("HyStart exits per run", ("TCPHystartTrainDetect", "TCPHystartDelayDetect"), None),
]


def compare(case: Case, sc: dict[str, Any], recs: dict[str, list[dict[str, Any]]]) -> list[Row]:
    lin = [r for r in recs["linux"] if "summary" in r]
    sim = [r for r in recs["aqmlab"] if "summary" in r]
    rows: list[Row] = []
    if not lin:
        return rows

    def add(label: str, unit: str, lin_vals: list[float], sim_vals: list[float], floor: float, rule: str = "10 %") -> None:
        if not lin_vals:
            return
        k = _mean_sd(lin_vals)
        a = _mean_sd(sim_vals) if sim_vals else None
        if rule == "1.5x":
            tol = max(0.1, 2.0 * k[1])
            ok = None if a is None else timeouts_agree(a[0], k)
        elif rule == "info":
            tol, ok = float("nan"), None
        else:
            tol = tolerance(k, floor)
            ok = None if a is None else abs(a[0] - k[0]) <= tol + 1e-12
        rows.append(Row(case.name, label, unit, k, a, tol, ok, rule))

    def vals(rs: list[dict[str, Any]], key: str) -> list[float]:
        return [v for r in rs if (v := _get(r["summary"], key)) is not None]

    add("queueing delay p50", "ms", vals(lin, "bottleneck.queue_delay_ms.p50"), vals(sim, "bottleneck.queue_delay_ms.p50"), 2.0)
    add("queueing delay p95", "ms", vals(lin, "bottleneck.queue_delay_ms.p95"), vals(sim, "bottleneck.queue_delay_ms.p95"), 2.0)
    add("utilization (mean of 1 s)", "", vals(lin, "bottleneck.utilization.mean"), vals(sim, "bottleneck.utilization.mean"), 0.02)
    add("drops at the bottleneck", "", vals(lin, "bottleneck.packets.dropped"), vals(sim, "bottleneck.packets.dropped"), 0.0)
    if any(g["tcp"]["ecn"] for g in sc["flows"] if g["kind"] != "cbr"):
        add("CE marks at the bottleneck", "", vals(lin, "bottleneck.packets.marked"), vals(sim, "bottleneck.packets.marked"), 0.0)
    for g in sc["flows"]:
        name, n = g["name"], g["count"]
        cls = f"classes.{name}"
        add(f"goodput ({name})", "Mbps", vals(lin, f"{cls}.goodput_mbps"), vals(sim, f"{cls}.goodput_mbps"), 0.02 * case.rate_mbps)
        if n > 1:
            add(f"Jain's index ({name})", "", vals(lin, f"{cls}.jain_index"), vals(sim, f"{cls}.jain_index"), 0.02)
        per = lambda rs, k: [v / n for v in vals(rs, f"{cls}.{k}")]  # noqa: E731
        add(f"retransmissions per flow ({name})", "", per(lin, "retransmits"), per(sim, "retransmits"), 0.0)
        add(f"timeouts per flow ({name})", "", per(lin, "timeouts"), per(sim, "timeouts"), 0.0, rule="1.5x")
    for label, linux_keys, sim_col in INFO:
        lv = [float(sum(r.get("counters", {}).get(k, 0) for k in linux_keys)) for r in lin] if linux_keys else []
        if label.startswith("D-SACKed segments"):
            lv = [float(sum(r.get("flow_counters", {}).get("dsack_dups", []))) for r in lin]
        sv = [float(sum(r["flows"][sim_col])) for r in sim if sim_col and sim_col in r.get("flows", {})]
        if lv:
            add(label, "", lv, sv, 0.0, rule="info")
    return rows


# -- the whole validation ---------------------------------------------------------------


@dataclass
class Validation:
    cases: list[Case]
    repeats: int
    quick: bool
    rows: list[Row] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    @property
    def compared(self) -> list[Row]:
        return [r for r in self.rows if r.rule != "info"]

    @property
    def agreeing(self) -> int:
        return sum(1 for r in self.compared if r.agrees)


def _fmt(x: Optional[float], unit: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if unit in ("ms", "Mbps"):
        return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def _ms(t: tuple[float, float, int], unit: str) -> str:
    return f"{_fmt(t[0], unit)} ± {_fmt(t[1], unit)}"


def markdown(v: Validation) -> str:
    comp = v.compared
    lines = [
        "# aqmlab against the Linux kernel",
        "",
        f"{len(v.cases)} cases, {v.repeats} runs per side (seeds 1-{v.repeats}), "
        f"{QUICK_DURATION_S if v.quick else DURATION_S:g} s each; kernel {os.uname().release}. Each cell: mean ± standard deviation "
        "over the runs. A figure agrees when |aqmlab − Linux| is within 10 % of Linux's mean, an absolute floor (2 ms, 0.02, "
        "2 % of the link rate for goodput) or twice Linux's run-to-run spread; timeouts per flow within a factor 1.5 (or 0.1 per "
        f"flow). **{v.agreeing} of {len(comp)} figures agree.** Rows marked *info* are shown, not judged.",
        "",
        f"- {ALIGN_NOTE}",
        "",
    ]
    for c in v.cases:
        rows = [r for r in v.rows if r.case == c.name]
        runs = v.runs.get(c.name, {})
        lin = [r for r in runs.get("linux", []) if "summary" in r]
        lines += [f"## {c.name}: {c.title}", ""]
        if c.name in v.errors:
            lines += [f"Simulator: {v.errors[c.name]}", ""]
        if lin:
            load = [r.get("load_average", float("nan")) for r in lin]
            stalls = [r["summary"].get("emulation", {}).get("stalls", 0) for r in lin]
            off = lin[0].get("offloads", {}).get("senders", {})
            lines += [
                f"Kernel runs: wall {statistics.fmean(r['wall_seconds'] for r in lin):.1f} s each, load average {min(load):.1f}-{max(load):.1f} "
                f"at their start, deliveries more than 1 ms late {min(stalls)}-{max(stalls)} per run; sender device offloads "
                + (", ".join(f"{k} {'on' if x else 'off' if x is not None else '?'}" for k, x in off.items()) or "not reported")
                + ".",
                "",
            ]
        lines += ["| figure | Linux | aqmlab | difference | tolerance | agrees |", "|---|---|---|---|---|---|"]
        for r in rows:
            u = f" {r.unit}" if r.unit else ""
            sim = _ms(r.aqmlab, r.unit) + u if r.aqmlab else "–"
            tol = "info" if r.rule == "info" else ("×1.5 or " + _fmt(r.tolerance, r.unit) if r.rule == "1.5x" else _fmt(r.tolerance, r.unit))
            verdict = "info" if r.rule == "info" else ("–" if r.agrees is None else ("yes" if r.agrees else "**no**"))
            lines.append(f"| {r.figure} | {_ms(r.linux, r.unit)}{u} | {sim} | {_fmt(r.diff, r.unit)} | {tol} | {verdict} |")
        lines.append("")
    return "\n".join(lines)


def validate(names: Sequence[str] = (), *, repeats: int = 3, out: Optional[Path] = None, quick: bool = False, jobs: Optional[int] = None,
             extra: Sequence[str] = (), sim_only: bool = False, console: Any = None) -> Validation:
    """Run (or resume) the validation and write `validation.md` and `validation.json`."""
    from . import netns

    cases = cases_by_name(names, quick)
    out = Path(out or ("validation-linux-quick" if quick else "validation-linux"))
    overs = {c.name: case_overrides(c, quick, extra) for c in cases}
    # bad input fails here, before anything runs or is written (both sides' scenario)
    scs = {}
    for c in cases:
        resolved(c, overs[c.name], align=False)
        scs[c.name] = resolved(c, overs[c.name])
    (out / "runs").mkdir(parents=True, exist_ok=True)
    v = Validation(cases, repeats, quick)
    recs: dict[str, dict[str, list[dict[str, Any]]]] = {c.name: {"linux": [], "aqmlab": []} for c in cases}
    todo: dict[str, list[tuple[str, int, str]]] = {"linux": [], "aqmlab": []}
    for c in cases:
        d = out / "runs" / c.name
        d.mkdir(parents=True, exist_ok=True)
        for side in SIDES:
            for s in range(1, repeats + 1):
                dest = d / f"{side}-seed{s}.json"
                rec = json.loads(dest.read_text()) if dest.exists() else None
                key = run_key(side, c, overs[c.name], s, scs[c.name])
                if rec is not None and rec.get("key") == key:
                    recs[c.name][side].append(rec)
                else:
                    todo[side].append((c.name, s, str(dest)))
    known = {c.name: c for c in cases}
    if todo["linux"] and not sim_only:
        netns.preflight()  # root, namespaces, TUN: one line and nothing run otherwise
    say = console.print if console is not None else (lambda *a: None)
    done = sum(len(x[s]) for x in recs.values() for s in SIDES)
    if done:
        say(f"{done} runs already done in {out}; to run: {len(todo['aqmlab'])} simulated, {0 if sim_only else len(todo['linux'])} on the kernel")
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        futs = {pool.submit(run_sim, known[n], overs[n], scs[n], s, dest): (n, s) for n, s, dest in todo["aqmlab"]}
        for k, fut in enumerate(as_completed(futs), 1):
            n, s = futs[fut]
            rec = fut.result()
            recs[n]["aqmlab"].append(rec)
            say(f"[{k}/{len(futs)}] {n} simulated seed {s}: {rec['wall_seconds']:.2f} s" + (" (not simulated)" if "error" in rec else ""))
    if not sim_only:
        for k, (n, s, dest) in enumerate(todo["linux"], 1):
            say(f"[{k}/{len(todo['linux'])}] {n} on the kernel, seed {s} ({QUICK_DURATION_S if quick else DURATION_S:g} s of real time) ...")
            rec = run_kernel(known[n], overs[n], s, dest)
            recs[n]["linux"].append(rec)
    for c in cases:
        r = recs[c.name]
        for side in SIDES:
            r[side].sort(key=lambda x: x["seed"])
        errs = [x["error"] for x in r["aqmlab"] if "error" in x]
        if errs:
            v.errors[c.name] = errs[0]
        v.rows += compare(c, scs[c.name], r)
        v.runs[c.name] = r
    md = markdown(v)
    js = {
        "repeats": repeats, "quick": quick, "kernel": os.uname().release, "agreeing": v.agreeing, "figures": len(v.compared),
        "rows": [r.__dict__ | {"diff": r.diff} for r in v.rows], "errors": v.errors,
        "cases": [{"name": c.name, "title": c.title, "overrides": overs[c.name]} for c in cases],
    }
    for name, text in (("validation.md", md), ("validation.json", json.dumps(js, indent=1, allow_nan=True))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)
    return v
