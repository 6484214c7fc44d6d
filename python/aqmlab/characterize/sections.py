"""RFC 7928's scenarios, one `Section` per section of the RFC (Kuhn, Natarajan,
Khademi & Ros, "Characterization Guidelines for Active Queue Management (AQM)").

A section gives, for one AQM variant, the *cases* to run: each a label per named
dimension (e.g. ``{"flows": "5"}``) and the scenario (a dict, the dumbbell or a
topology) with the AQM in it. `plan.py` turns cases into sweep runs; `analysis.py`
reads each section's figures from them. Sections that run nothing of their own
(§2.7 and §4.3 read §2's runs, §12 reads §8.3's, §11 is timed apart) have no cases.

The common setup (RFC 7928 §3): a dumbbell of 10 Mb/s with 1 ms access links, base
RTT 100 ms, a buffer of one bandwidth-delay product (§3.2), CUBIC with SACK and an
initial window of 10 (§3.3: "TCP, e.g. Cubic").
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .variants import L4S_CC, L4S_KINDS, Variant

RATE = "10Mbps"


@dataclass(frozen=True)
class Case:
    levels: dict[str, str]  # dimension -> level label (recorded in the index as param.<dim>)
    scenario: dict[str, Any]
    optional: bool = False  # a failure to plan it (a feature this build lacks) skips it with a note


@dataclass(frozen=True)
class Length:
    """Durations and seeds of a run of the suite."""

    quick: bool
    seeds: list[int]

    @property
    def duration(self) -> float:
        return 30.0 if self.quick else 100.0

    @property
    def warmup(self) -> float:
        return 5.0 if self.quick else 10.0


@dataclass
class Section:
    key: str  # the RFC's section number, the key in summary.json
    title: str  # the RFC's title of that section
    asks: str  # what the RFC asks
    does: str  # what aqmlab runs and measures (and where it differs)
    cases: Optional[Callable[[Variant, Length], list[Case]]] = None
    metrics: dict[str, str] = field(default_factory=dict)  # name -> meaning (docs/characterize.md)
    figures: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (file name, plots kind, Options keywords)
    uses: Optional[str] = None  # the section whose runs it reads


# -- building blocks ---------------------------------------------------------------------


def tcp(cc: str = "cubic", **kw: Any) -> dict[str, Any]:
    return {"cc": cc, "sack": True, "initial_window": kw.pop("initial_window", 10), **kw}


def bulk(name: str, count: int, start: Any = None, **kw: Any) -> dict[str, Any]:
    g = {"name": name, "kind": "bulk", "count": count, "start": start or {"uniform": ["0s", "1s"]}, "tcp": kw.pop("tcp", tcp())}
    g.update(kw)
    return g


def cbr(name: str, rate: str, size: str = "218B", count: int = 1, **kw: Any) -> dict[str, Any]:
    return {"name": name, "kind": "cbr", "count": count, "start": "0.5s", "rate": rate, "packet_size": size, **kw}


def files(name: str, count: int, sizes: Any = None, think: Any = None, **kw: Any) -> dict[str, Any]:
    g = {"name": name, "kind": "files", "count": count, "start": {"uniform": ["0s", "5s"]},
         "tcp": kw.pop("tcp", tcp(handshake=True))}
    if sizes is not None:
        g["sizes"] = sizes
    if think is not None:
        g["think"] = think
    g.update(kw)
    return g


def dumbbell(name: str, v: Variant, L: Length, flows: list[dict[str, Any]], *, buffer: str = "1bdp", delay: str = "48ms",
             aqm: Optional[dict[str, Any]] = None, duration: Optional[float] = None, **bottleneck: Any) -> dict[str, Any]:
    """A dumbbell with base RTT 2 × (1 + `delay` + 1) ms (100 ms by default)."""
    return {
        "name": f"rfc7928-{name}",
        "description": f"RFC 7928 {name}",
        "duration": f"{duration or L.duration:g}s",
        "bottleneck": {"rate": RATE, "delay": delay, "buffer": buffer, "aqm": copy.deepcopy(aqm or v.spec), **bottleneck},
        "access": {"rate": "100Mbps", "delay": "1ms"},
        "flows": flows,
        "metrics": {"warmup": f"{L.warmup:g}s"},
    }


def one(name: str, v: Variant, L: Length, flows: list[dict[str, Any]], **kw: Any) -> list[Case]:
    return [Case({}, dumbbell(name, v, L, flows, **kw))]


# -- the sections ---------------------------------------------------------------------------


def s2(v: Variant, L: Length) -> list[Case]:
    # bulk flows for goodput and synchronization, short downloads for completion and
    # start-up times (with the handshake), a VoIP-like CBR probe for jitter
    return one("§2", v, L, [bulk("bulk", 5), files("files", 10, think={"exponential": "2s"}), cbr("voip", "87kbps")])


def s44(v: Variant, L: Length) -> list[Case]:
    return one("§4.4", v, L, [bulk("mss1460", 3), bulk("mss536", 3, tcp=tcp(mss="536B"))])


def s45(v: Variant, L: Length) -> list[Case]:
    out = []
    for label, ecn in (("drop", False), ("ecn", True)):
        aqm = v.with_ecn() if ecn else v.spec
        out.append(Case({"signal": label}, dumbbell("§4.5", v, L, [bulk("bulk", 5, tcp=tcp(ecn=ecn))], aqm=aqm)))
    if v.l4s:
        # one classic flow (CUBIC, ECT(0): the C queue) beside one scalable flow
        # (Prague, ECT(1): the L queue)
        flows = [bulk("classic", 1, tcp=tcp(ecn=True)), bulk("l4s", 1, tcp=tcp(L4S_CC, ecn=True))]
        out.append(Case({"signal": "ect1"}, dumbbell("§4.5", v, L, flows), optional=True))
    return out


def ect1_note(v: Variant) -> Optional[str]:
    """Why §4.5's ECT(1) case does not run for `v`, or None when it does."""
    if not v.l4s:
        return f"signal ect1: not run: {v.kind} has no L4S queue (no ECT(1) classifier; L4S AQMs: {', '.join(L4S_KINDS)})"
    return None


def s46(v: Variant, L: Length) -> list[Case]:
    flows = [bulk("bulk", 4), cbr("sparse", "87kbps")]
    out = [Case({"scheduling": "single queue" if v.kind not in ("fq_codel", "fq_pie", "cake") else "FQ"}, dumbbell("§4.6", v, L, flows))]
    fq = v.fq_form()
    if fq is not None and fq["kind"] != v.kind:
        out.append(Case({"scheduling": "FQ"}, dumbbell("§4.6", v, L, flows, aqm=fq)))
    return out


def s51(v: Variant, L: Length) -> list[Case]:
    ccs = ["cubic"] if L.quick else ["cubic", "newreno"]
    return [Case({"cc": cc, "flows": str(n)}, dumbbell("§5.1", v, L, [bulk("tcp", n, tcp=tcp(cc))])) for cc in ccs for n in (1, 5)]


def s52(v: Variant, L: Length) -> list[Case]:
    # one TCP-friendly application (one CUBIC flow) against an aggressive one: four
    # parallel CUBIC connections with an initial window of 32
    return one("§5.2", v, L, [bulk("friendly", 1), bulk("aggressive", 4, tcp=tcp(initial_window=32))])


def s53(v: Variant, L: Length) -> list[Case]:
    return one("§5.3", v, L, [bulk("tcp", 5), cbr("unresponsive", "5Mbps", "1500B")])


def s54(v: Variant, L: Length) -> list[Case]:
    # a buffer of 5 BDPs (500 ms): CUBIC alone would hold the queue far above LEDBAT's
    # 100 ms target (Gong, Rossi, Testa, Valenti & Täht)
    flows = [bulk("ledbat", 1, start={"uniform": ["0s", "0.5s"]}, tcp=tcp("ledbat", initial_window=2)),
             bulk("cubic", 1, start={"uniform": ["0s", "0.5s"]})]
    return one("§5.4", v, L, flows, buffer="5bdp", duration=max(L.duration, 60.0))


RTT2_MS = {True: (20, 300), False: (5, 20, 50, 100, 200, 300, 560)}


def s6(v: Variant, L: Length) -> list[Case]:
    out = []
    for rtt in RTT2_MS[L.quick]:
        # bottleneck 1 ms, access 1 ms: a group's RTT is 2 × (sender_delay + 2 ms)
        flows = [bulk("rtt100", 1, path={"sender_delay": "48ms"}), bulk("rtt2", 1, path={"sender_delay": f"{rtt / 2 - 2:g}ms"})]
        out.append(Case({"rtt2": f"{rtt}ms"}, dumbbell("§6", v, L, flows, delay="1ms")))
    return out


def s7(v: Variant, L: Length) -> list[Case]:
    flows = [
        bulk("bulk", 2),
        # short transfers of one initial window (10 × 1460 B), back to back: IW10 bursts
        files("iw10", 10, sizes="14600B", think={"exponential": "0.5s"}),
        # a video-like on/off source: 2 s chunks of a 2.5 Mb/s stream on one connection
        files("video", 1, sizes="625KB", think={"uniform": ["1.5s", "2.5s"]}, connection="persistent", tcp=tcp()),
    ]
    return one("§7", v, L, flows)


LOADS = {"mild": 4, "medium": 16, "heavy": 64}  # Khademi, Ros & Welzl's light/moderate/heavy


def s8(v: Variant, L: Length) -> list[Case]:
    d = L.duration
    loads = ("mild", "heavy") if L.quick else ("mild", "medium", "heavy")
    out = [Case({"congestion": k}, dumbbell("§8", v, L, [bulk("tcp", LOADS[k])])) for k in loads]
    # the congestion level changes: 4 flows throughout, 16 more in the middle third
    varying = [bulk("base", 4), bulk("surge", 16, start={"uniform": [f"{d / 3:g}s", f"{d / 3 + 1:g}s"]}, stop=f"{2 * d / 3:g}s")]
    out.append(Case({"congestion": "varying load"}, dumbbell("§8", v, L, varying)))
    # the capacity changes: 10 -> 5 -> 10 Mb/s
    sched = [{"at": f"{d / 3:g}s", "rate": "5Mbps"}, {"at": f"{2 * d / 3:g}s", "rate": RATE}]
    out.append(Case({"congestion": "varying capacity"}, dumbbell("§8", v, L, [bulk("tcp", 16)], schedule=sched)))
    return out


SCALES = {True: (0.5, 1.0, 2.0), False: (0.25, 0.5, 1.0, 2.0, 4.0)}


def scaled(value: Any, k: float) -> Any:
    """A parameter's default times k: "15ms" -> "7.5ms", 0.1 -> 0.05."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * k
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", str(value))
    if not m:
        raise ValueError(f"cannot scale {value!r}")
    return f"{float(m.group(1)) * k:g}{m.group(2)}"


def sensitivity_param(v: Variant) -> tuple[str, str]:
    """(what is varied, its value in the variant): the main parameter, or the buffer."""
    p = v.main_param()
    if p is None:
        return "buffer", "1bdp"
    return p, v.params.get(p, v.default(p))


def s83(v: Variant, L: Length) -> list[Case]:
    name, value = sensitivity_param(v)
    out = []
    for k in SCALES[L.quick]:
        if name == "buffer":
            sc = dumbbell("§8.3", v, L, [bulk("tcp", LOADS["medium"])], buffer=f"{k:g}bdp")
        else:
            sc = dumbbell("§8.3", v, L, [bulk("tcp", LOADS["medium"])], aqm={**v.spec, name: scaled(value, k)})
        out.append(Case({"scale": f"x{k:g}"}, sc))
    return out


def s91(v: Variant, L: Length) -> list[Case]:
    # Kuhn & Ros §IV's mix (CBR, file downloads, bulk) with a video-like on/off source
    flows = [
        cbr("voip", "87kbps", count=4),
        files("files", 10, think={"exponential": "2s"}),
        files("video", 1, sizes="625KB", think={"uniform": ["1.5s", "2.5s"]}, connection="persistent", tcp=tcp()),
        bulk("bulk", 5),
    ]
    return one("§9.1", v, L, flows)


def s92(v: Variant, L: Length) -> list[Case]:
    # one 10 Mb/s link, the AQM on both of its sides; 5 bulk flows each way, so that each
    # direction's data shares its queue with the other direction's ACKs
    acc = {"rate": "100Mbps", "delay": "1ms", "buffer": "1000pkts"}
    links = [
        {"name": "b", "from": "L", "to": "R", "rate": RATE, "delay": "48ms", "buffer": "1bdp", "aqm": v.spec, "reverse": {"aqm": v.spec}},
        {"name": "fa", "from": "hf", "to": "L", **acc}, {"name": "fb", "from": "R", "to": "hf2", **acc},
        {"name": "rb", "from": "hr", "to": "R", **acc}, {"name": "ra", "from": "L", "to": "hr2", **acc},
    ]
    flows = [bulk("forward", 5, route=["fa", "b", "fb"]), bulk("backward", 5, route=["rb", "b", "ra"])]
    sc = {"name": "rfc7928-§9.2", "description": "RFC 7928 §9.2", "duration": f"{L.duration:g}s", "links": links, "flows": flows,
          "metrics": {"warmup": f"{L.warmup:g}s"}}
    return [Case({}, sc)]


def s10(v: Variant, L: Length) -> list[Case]:
    # scenarios/aqm-series.toml: two 10 Mb/s links in series, the AQM at both; group a
    # crosses both, c only the first, b only the second
    acc = {"rate": "100Mbps", "delay": "1ms", "buffer": "1000pkts"}
    links = [
        {"name": "lm", "from": "L", "to": "M", "rate": RATE, "delay": "10ms", "buffer": "1bdp", "aqm": v.spec},
        {"name": "mr", "from": "M", "to": "R", "rate": RATE, "delay": "10ms", "buffer": "1bdp", "aqm": v.spec},
    ] + [{"name": n, "from": f, "to": t, **acc} for n, f, t in
         (("la", "ha", "L"), ("ra", "R", "ha2"), ("lb", "hb", "M"), ("rb", "R", "hb2"), ("lc", "hc", "L"), ("mc", "M", "hc2"))]
    flows = [bulk("a", 5, route=["la", "lm", "mr", "ra"]), bulk("b", 5, route=["lb", "mr", "rb"]), bulk("c", 5, route=["lc", "lm", "mc"])]
    sc = {"name": "rfc7928-§10", "description": "RFC 7928 §10 (aqm-series)", "duration": f"{L.duration:g}s", "links": links, "flows": flows,
          "metrics": {"warmup": f"{L.warmup:g}s"}}
    return [Case({}, sc)]


SECTIONS: list[Section] = [
    Section("2", "End-to-End Metrics", "Flow completion time (§2.1), flow start-up time (§2.2), packet loss (§2.3), loss synchronization (§2.4), goodput (§2.5), latency and jitter (§2.6).",
            "5 CUBIC bulk flows, 10 file downloaders (15-102 kB, handshake on, think time exp(2 s)) and a VoIP-like 87 kb/s CBR probe. Every other section reports the same figures for its own runs.",
            s2, figures=[("s2-queue-delay", "queue_delay_cdf", {}), ("s2-downloads", "download_times", {}), ("s2-goodput", "goodput", {})]),
    Section("2.7", "Discussion on the Trade-Off between Latency and Goodput", "Plot goodput against queueing delay per interval, with each AQM's points and the ellipse that contains them (after Winstein's throughput-delay plots).",
            "§2's runs: a point per goodput interval (1 s) of each run, the 1-σ ellipse of a Gaussian fitted to each AQM's points, and its mean.",
            figures=[("s2.7-delay-goodput", "goodput_delay", {})], uses="2"),
    Section("4.3", "Comparing AQM Schemes", "Compare AQMs on the same scenarios, by the §2.7 trade-off and §2's metrics, with their default parameters.",
            "The comparison table of §2's runs: one row per AQM, the headline figures side by side.", uses="2"),
    Section("4.4", "Packet Sizes and Congestion Notification", "Test with packets of several sizes: does the AQM drop per packet or per byte, and how does that treat small-packet flows?",
            "3 CUBIC flows with 1460-byte segments beside 3 with 536-byte segments; the goodput and loss of each class.",
            s44, figures=[("s4.4-goodput", "goodput", {}), ("s4.4-classes", "class_metrics", {})]),
    Section("4.5", "Interaction with ECN", "Compare ECN marking with dropping for the same load; for AQMs that know L4S, ECT(1) senders.",
            "5 CUBIC flows without ECN (the AQM drops) and with ECN (the AQM marks: its `ecn` switch turned on where it has one; DualPI2 and CAKE mark always; an AQM that cannot mark, such as DropTail, drops ECN-capable packets too). ECT(1), where the AQM has an L4S queue (DualPI2): one TCP Prague flow (ECT(1), the L queue) beside one CUBIC flow with ECN (ECT(0), the C queue).",
            s45, figures=[("s4.5-queue-delay", "queue_delay_cdf", {"facet": "signal"}), ("s4.5-causes", "causes_time", {})]),
    Section("4.6", "Interaction with Scheduling", "Characterize the AQM alone and under a scheduler (fair queuing), e.g. its FQ form.",
            "4 CUBIC flows and a sparse 87 kb/s CBR flow, under the AQM alone and under its FQ form (CoDel -> FQ-CoDel, PIE -> FQ-PIE, COBALT -> CAKE).",
            s46, figures=[("s4.6-class-delay", "class_delay_cdf", {})]),
    Section("5.1", "TCP-Friendly Sender", "Long-lived TCP flows with the same initial window through the AQM (§5.1.1); with different initial windows (§5.1.2).",
            "1 and 5 CUBIC flows (full run: NewReno too), all with an initial window of 10 (§5.1.1). §5.1.2's short flow with another initial window beside a long one is not run.", s51, figures=[("s5.1-queue-delay", "queue_delay_cdf", {"facet": "flows"})]),
    Section("5.2", "Aggressive Transport Sender", "A sender more aggressive than TCP-friendly ones (a larger initial window, parallel connections).",
            "One CUBIC flow against an application of 4 parallel CUBIC connections with an initial window of 32; `aggressive_share` is the latter's share of the goodput (1/2 is per-application fairness).",
            s52, figures=[("s5.2-goodput", "goodput", {})]),
    Section("5.3", "Unresponsive Transport Sender", "An unresponsive (UDP) sender beside TCP: does the AQM keep latency low and TCP alive?",
            "5 CUBIC flows and a 5 Mb/s CBR flow of 1500-byte packets (half the capacity).", s53,
            figures=[("s5.3-class-delay", "class_delay_cdf", {}), ("s5.3-goodput", "goodput", {})]),
    Section("5.4", "Less-than-Best-Effort Transport Sender", "A less-than-best-effort sender (LEDBAT) beside TCP: it should yield, and an AQM may change that.",
            "One LEDBAT flow (RFC 6817, target 100 ms, initial window 2) and one CUBIC flow behind a 500 ms (5 BDP) buffer, 60 s or more; `lbe_share` = LEDBAT's goodput / the total. DropTail lets CUBIC hold the queue above LEDBAT's target, so LEDBAT yields; an AQM keeps the queue below it, so LEDBAT competes as a loss-based flow (Gong, Rossi, Testa, Valenti & Täht).",
            s54, figures=[("s5.4-goodput", "goodput", {}), ("s5.4-cwnd", "cwnd_time", {})]),
    Section("6", "Round-Trip Time Fairness", "Two flows, one with a 100 ms RTT and one whose RTT ranges over the RFC's span; the goodput ratio.",
            "Two CUBIC flows, RTT 100 ms and RTT2 (quick: 20 and 300 ms; full: 5-560 ms); `goodput_ratio` = the RTT2 flow's goodput / the 100 ms flow's.",
            s6, figures=[("s6-goodput", "goodput", {"facet": "rtt2"})]),
    Section("7", "Burst Absorption", "Bursty traffic: web-like transfers, IW10 bursts, a video-like on/off source; does the AQM absorb bursts without needless drops?",
            "2 CUBIC bulk flows, 10 clients fetching 14.6 kB (one IW10 burst each) with think times exp(0.5 s), and a video-like client fetching 625 kB chunks every 2 s on one connection.",
            s7, figures=[("s7-downloads", "download_times", {}), ("s7-queue-time", "queue_delay_time", {})]),
    Section("8", "Stability", "Mild, medium and heavy congestion; a congestion level and a capacity that vary over time (§8.2.2-8.2.6).",
            "4, 16 and 64 CUBIC flows (Khademi, Ros & Welzl's light, moderate, heavy; quick: 4 and 64); 4 flows with 16 more in the middle third; 16 flows with the capacity 10 -> 5 -> 10 Mb/s at thirds. `delay_cv` = the coefficient of variation of the queueing delay per second.",
            s8, figures=[("s8-queue-time", "queue_delay_time", {"facet": "congestion"}), ("s8-capacity", "capacity_time", {"where": {"congestion": "varying capacity"}})]),
    Section("8.3", "Parameter Sensitivity and Stability Analysis", "How the results move as the AQM's parameters change, and whether it stays stable.",
            "16 CUBIC flows with the AQM's main parameter (target, else max_p; DropTail: the buffer) at 0.5x, 1x and 2x (full: 0.25x-4x) its value.",
            s83, figures=[("s8.3-delay-goodput", "goodput_delay", {})]),
    Section("9.1", "Traffic Mix", "A realistic mix: bulk, web, streaming, interactive.",
            "4 VoIP-like CBR flows (87 kb/s, 218 B), 10 file downloaders, a video-like client and 5 bulk CUBIC flows (Kuhn & Ros §IV's mix plus video).",
            s91, figures=[("s9.1-class-delay", "class_delay_cdf", {}), ("s9.1-downloads", "download_times", {})]),
    Section("9.2", "Bidirectional Traffic", "Traffic in both directions: data shares each queue with the other direction's ACKs.",
            "One 10 Mb/s link with the AQM on both sides, 5 CUBIC flows each way (a topology of [[links]] with routes).",
            s92, figures=[("s9.2-goodput", "goodput", {})]),
    Section("10", "Example of a Multi-AQM Scenario", "Two AQMs in series on one path.",
            "scenarios/aqm-series.toml with the AQM on both 10 Mb/s links: 5 flows cross both, 5 share only the first, 5 only the second.",
            s10, figures=[("s10-goodput", "goodput", {})]),
    Section("11", "Implementation Cost", "The AQM's cost: operations per packet and per update, memory, or measured time.",
            "Measured, not simulated: the CPU time of one fixed run (16 CUBIC flows, 10 Mb/s, 60 s, summaries only; the least of 5 rounds over the AQMs in turn) per bottleneck packet, and its difference to DropTail's, on this machine. Not part of the sweep; machine-dependent."),
    Section("12", "Operator Control and Auto-Tuning", "Which parameters an operator sets, their defaults, and how the results move when the main ones change.",
            "The AQM's parameters and defaults from the catalogue (`aqmlab list aqms KIND`), and the slope of §8.3's figures against its main parameter.", uses="8.3"),
]

BY_KEY = {s.key: s for s in SECTIONS}


def keys() -> list[str]:
    return [s.key for s in SECTIONS]


def select(only: Optional[list[str]]) -> list[Section]:
    """The sections named (with those whose runs they read), in the RFC's order."""
    if not only:
        return list(SECTIONS)
    bad = [k for k in only if k not in BY_KEY]
    if bad:
        raise ValueError(f"characterize: --sections: no section {', '.join(bad)} (sections: {', '.join(keys())})")
    want = set(only)
    for k in only:
        if BY_KEY[k].uses:
            want.add(BY_KEY[k].uses)
    return [s for s in SECTIONS if s.key in want]
