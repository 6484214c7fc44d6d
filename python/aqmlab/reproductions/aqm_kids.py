"""Khademi, Ros & Welzl, "Evaluating CoDel, FQ_CoDel and PIE: how good are they
really?" (ICCRG, IETF 88): the wired tests.

The slides' testbed: a dumbbell with 4 sender-receiver pairs, base RTT 100 ms, Linux's
default TCP with Reno, txqueuelen 1000, 60 s of iperf "repeated for 10 runs"; light,
moderate and heavy congestion are 4, 16 and 64 concurrent flows; per-packet RTT and
goodput per 5 s. AQMs with their defaults: CoDel (target 5 ms, interval 100 ms), PIE
(t_update 30 ms, target 20 ms, alpha 0.125, beta 1.25), ARED per Floyd, Gummadi &
Shenker (interval 500 ms, alpha min(0.01, p_max / 4), beta 0.9); FQ-CoDel against CoDel
at a 5 ms target; and the ECN table, the CE marks per packet with ECN over the drops
per packet without it, for 4, 16, 32 and 64 flows.

Four parts, one grid (the axis `Test`):
- "AQMs": built-ins `khademi-light/-moderate/-heavy` (10 Mbps: the slides give no rate)
  with CoDel, PIE and ARED at a 5 ms and a 20 ms target delay, and FQ-CoDel at 5 ms.
  The slides' "Parameter Sensitivity: Target Delay" figures do not list the targets
  they tried; 5 ms (CoDel's default, the FQ-CoDel, WLAN and ECN tests) and 20 ms (PIE's
  default) are our choice.
- "ECN": built-in `ietf88-ecn` (NewReno with SACK, IW 10, as measured in
  docs/aqm/results.md) with 4/16/32/64 flows, CoDel, PIE (marking at any probability,
  `ecn_threshold = 1`: the slides' "common ECN implementation that CE-marks only when it
  would otherwise drop") and ARED; ECN off, on, and on with CE-marked packets left out
  of the AQM's measurements (the slides' recommendation). The ratio is taken after the
  first 10 s (the slow start of the first seconds weighs heavily on whole-run counts).
"""

from __future__ import annotations

from typing import Optional

from . import Axis, Claim, Figure, PerRun, Pooled, Quick, Reproduction, SeedRatio, Stat, above, approx, below, levels_label

# the first seconds are left out of every figure of the "AQMs" test (metrics.warmup):
# with 64 flows the slow start of the first seconds fills the 1000-packet buffer (1.2 s)
# and CoDel needs some 5 s to drain it, which would dominate CoDel's upper percentiles;
# the ECN ratio leaves out the same 10 s
TEST = Axis("Test", {"AQMs": {"metrics.warmup": "10s"}, "ECN": {"scenario": "ietf88-ecn"}})

CONGESTION = Axis(
    "Congestion",
    {
        "light (4 flows)": {"scenario": "khademi-light"},
        "moderate (16 flows)": {"scenario": "khademi-moderate"},
        "heavy (64 flows)": {"scenario": "khademi-heavy"},
    },
    when={"Test": ["AQMs"]},
)


def codel(target: str) -> dict:
    return {"bottleneck.aqm": {"kind": "codel", "target": target, "interval": "100ms"}}


def pie(target: str) -> dict:
    return {"bottleneck.aqm": {"kind": "pie", "target": target, "tupdate": "30ms", "alpha": 0.125, "beta": 1.25}}


def ared(target: str) -> dict:
    return {"bottleneck.aqm": {"kind": "ared", "target_delay": target, "interval": "500ms", "beta": 0.9}}


AQM = Axis(
    "AQM",
    {
        "CoDel 5 ms": codel("5ms"),
        "CoDel 20 ms": codel("20ms"),
        "PIE 5 ms": pie("5ms"),
        "PIE 20 ms": pie("20ms"),
        "ARED 5 ms": ared("5ms"),
        "ARED 20 ms": ared("20ms"),
        "FQ-CoDel 5 ms": {"bottleneck.aqm": {"kind": "fq_codel", "target": "5ms", "interval": "100ms", "ecn": False}},
    },
    when={"Test": ["AQMs"]},
)

ECN_AQM = Axis(
    "ECN AQM",
    {
        "CoDel": codel("5ms"),
        "PIE": {"bottleneck.aqm": {"kind": "pie", "target": "20ms", "tupdate": "30ms", "ecn_threshold": 1.0}},
        "ARED": ared("5ms"),
    },
    when={"Test": ["ECN"]},
)
FLOWS = Axis("Flows", {f"{n} flows": {"flows.0.count": n} for n in (4, 16, 32, 64)}, when={"Test": ["ECN"]})
ECN = Axis(
    "ECN",
    {
        "ECN off": {"flows.0.tcp.ecn": False, "bottleneck.aqm.ecn": False},
        "ECN on": {"flows.0.tcp.ecn": True, "bottleneck.aqm.ecn": True},
        "ECN on, CE left out": {"flows.0.tcp.ecn": True, "bottleneck.aqm.ecn": True, "bottleneck.aqm.ignore_ce_in_measure": True},
    },
    note={"ECN on, CE left out": "the slides' recommendation, not measured in them"},
    when={"Test": ["ECN"]},
)

AFTER_S = 10.0


def signal_rate(which: str, after_s: float = AFTER_S):
    """CE marks ("marks") or drops ("drops") per packet arriving at the bottleneck, over
    the record intervals ending after `after_s`."""

    def fn(r) -> Optional[float]:
        ts = r.table("timeseries", ["time_s", "arrivals", "drops_overflow", "drops_random", "drops_deterministic", "marks"], [("scope", "=", "link"), ("link", "=", "bottleneck")])
        if ts is None:
            return None
        w = ts[ts["time_s"] > after_s]
        a = float(w["arrivals"].sum())
        if not a:
            return None
        if which == "marks":
            return float(w["marks"].sum()) / a
        return float((w["drops_overflow"] + w["drops_random"] + w["drops_deterministic"]).sum()) / a

    return fn


def ecn(aqm: str, flows: int, mode: str) -> dict[str, str]:
    """mode: "off", "on" or "on, CE left out"."""
    return {"Test": "ECN", "ECN AQM": aqm, "Flows": f"{flows} flows", "ECN": f"ECN {mode}"}


def ratio(aqm: str, flows: int, mode: str = "on") -> SeedRatio:
    return SeedRatio(
        PerRun(signal_rate("marks"), ecn(aqm, flows, mode), f"CE marks per arriving packet after {AFTER_S:g} s"),
        PerRun(signal_rate("drops"), ecn(aqm, flows, "off"), f"drops per arriving packet after {AFTER_S:g} s"),
    )


# Khademi, Ros & Welzl, the ECN table: p_marking|ecn / p_drop|noecn
PAPER_RATIO = {
    4: {"CoDel": 1.256, "PIE": 1.156, "ARED": 6.621},
    16: {"CoDel": 1.356, "PIE": 1.106, "ARED": 3.465},
    32: {"CoDel": 1.719, "PIE": 1.591, "ARED": 4.303},
    64: {"CoDel": 6.117, "PIE": 6.569, "ARED": 3.873},
}

LEVEL = {"light": "light (4 flows)", "moderate": "moderate (16 flows)", "heavy": "heavy (64 flows)"}


def at(aqm: str, level: str) -> dict[str, str]:
    return {"Test": "AQMs", "AQM": aqm, "Congestion": LEVEL[level]}


def qd(q: float, aqm: str, level: str) -> Pooled:
    return Pooled("queue_delay", q, at(aqm, level))


def goodput(where: dict[str, str]) -> Stat:
    return Stat("classes.tcp.goodput_mbps", where) if where.get("Test") == "AQMs" else Stat("classes.bulk.goodput_mbps", where)


def fq_claims() -> list[Claim]:
    out = []
    for lv in ("light", "moderate", "heavy"):
        out.append(Claim("FQ_CoDel", f"{lv}: FQ-CoDel's median delay is lower than CoDel's (FQ-CoDel − CoDel, pooled p50)", "lower",
                         qd(50, "FQ-CoDel 5 ms", lv) - qd(50, "CoDel 5 ms", lv), below(0, 1), "ms"))
        out.append(Claim("FQ_CoDel", f"{lv}: FQ-CoDel's 10th percentile is lower than CoDel's (FQ-CoDel − CoDel, pooled p10)", "lower",
                         qd(10, "FQ-CoDel 5 ms", lv) - qd(10, "CoDel 5 ms", lv), below(0, 0.5), "ms", digits=2))
    out += [
        Claim("FQ_CoDel", "heavy: FQ-CoDel has the longer upper tail (FQ-CoDel − CoDel, pooled p99)", "longer",
              qd(99, "FQ-CoDel 5 ms", "heavy") - qd(99, "CoDel 5 ms", "heavy"), above(0, 2), "ms"),
        Claim("FQ_CoDel", "heavy: more jitter with FQ-CoDel (p90 − p10 spread, FQ-CoDel − CoDel)", "higher",
              (qd(90, "FQ-CoDel 5 ms", "heavy") - qd(10, "FQ-CoDel 5 ms", "heavy")) - (qd(90, "CoDel 5 ms", "heavy") - qd(10, "CoDel 5 ms", "heavy")), above(0, 2), "ms"),
        Claim("FQ_CoDel", "heavy: close to 100 % flow-level fairness with FQ-CoDel (Jain's index of the 64 flows' goodputs)", "≈ 1",
              Stat("classes.tcp.jain_index", at("FQ-CoDel 5 ms", "heavy")), above(0.99, 0.01), digits=4),
    ]
    return out


def ared_claims() -> list[Claim]:
    out = []
    for lv in ("moderate", "heavy"):
        for other, how in (("CoDel 5 ms", "defaults, the same 5 ms target"), ("PIE 20 ms", "PIE's default 20 ms target"), ("PIE 5 ms", "the same 5 ms target")):
            out.append(Claim("Conclusions", f"{lv}: ARED outperforms {other.split()[0]} on delay ({how}; {other} − ARED 5 ms, pooled p50)", "ARED lower",
                             qd(50, other, lv) - qd(50, "ARED 5 ms", lv), above(0, 1), "ms"))
    out.append(Claim("Conclusions", "light: ARED performs worse with very few flows (goodput, CoDel 5 ms − ARED 5 ms)", "ARED lower",
                     goodput(at("CoDel 5 ms", "light")) - goodput(at("ARED 5 ms", "light")), above(0, 0.1), "Mbps", digits=2))
    for a in ("CoDel", "PIE", "ARED"):
        out.append(Claim("Parameter sensitivity", f"moderate: {a} with a 20 ms target keeps a longer queue than with 5 ms (p50, 20 ms − 5 ms)", "longer",
                         qd(50, f"{a} 20 ms", "moderate") - qd(50, f"{a} 5 ms", "moderate"), above(0, 1), "ms"))
    return out


def ecn_claims() -> list[Claim]:
    out = []
    for n, row in PAPER_RATIO.items():
        for aqm, v in row.items():
            out.append(Claim("ECN table", f"{aqm}, {n} flows: CE marks with ECN / drops without (per arriving packet, after 10 s)", f"{v:.3f}",
                             ratio(aqm, n), approx(v, round(0.25 * v, 2)), digits=2))
    out.append(Claim("ECN", "ARED, 4 flows: with ECN the goodput drops (ECN on − off)", "significantly lower",
                     goodput(ecn("ARED", 4, "on")) - goodput(ecn("ARED", 4, "off")), below(0, 0.1), "Mbps", digits=2))
    for aqm in ("CoDel", "PIE", "ARED"):
        out.append(Claim("ECN, recommendation", f"{aqm}, 64 flows: leaving CE-marked packets out of the AQM's measure lowers the ratio (CE left out − plain)", "lower (proposed)",
                         ratio(aqm, 64, "on, CE left out") - ratio(aqm, 64), below(0, 0.2), digits=2))
    return out


EXPERIMENT = Reproduction(
    name="aqm-kids",
    title="Khademi, Ros & Welzl, Evaluating CoDel, FQ_CoDel and PIE (IETF 88): target delay, congestion levels, FQ-CoDel vs CoDel, ECN",
    description=(
        "Bulk Reno flows over a 10 Mbps bottleneck, base RTT 100 ms, 1000-packet buffer, 60 s, 10 runs each. "
        "AQMs: CoDel, PIE and ARED at target delays of 5 and 20 ms and FQ-CoDel at 5 ms under light, moderate and heavy "
        "congestion (4/16/64 flows); the ECN test: CoDel, PIE and ARED with 4/16/32/64 NewReno flows, ECN off, on, "
        "and on with CE-marked packets left out of the AQM's measure."
    ),
    scenario="khademi-light",
    axes=[TEST, CONGESTION, AQM, ECN_AQM, FLOWS, ECN],
    seeds=10,
    quick=Quick(
        seeds=1,
        set={"duration": "15s"},
        levels={"Congestion": ["light (4 flows)", "heavy (64 flows)"], "AQM": ["CoDel 5 ms", "ARED 5 ms", "FQ-CoDel 5 ms"], "ECN AQM": ["CoDel", "ARED"], "Flows": ["4 flows", "64 flows"]},
    ),
    label=levels_label(skip=("Test",)),
    figures=[
        Figure("target_delay_cdf", "queue_delay_cdf", "Khademi, Ros & Welzl, target delay: per-packet queueing delay (RTT = 100 ms + this)",
               facet="Congestion", where={"Test": "AQMs", "AQM": ["CoDel 5 ms", "CoDel 20 ms", "PIE 5 ms", "PIE 20 ms", "ARED 5 ms", "ARED 20 ms"]}),
        Figure("target_delay_goodput", "bulk_goodput_cdf", "Khademi, Ros & Welzl, target delay: goodput per flow per 5 s interval",
               facet="Congestion", where={"Test": "AQMs", "AQM": ["CoDel 5 ms", "PIE 20 ms", "ARED 5 ms"]}),
        Figure("fq_codel_vs_codel", "queue_delay_cdf", "Khademi, Ros & Welzl, FQ_CoDel vs CoDel (target 5 ms): per-packet queueing delay",
               facet="Congestion", where={"Test": "AQMs", "AQM": ["CoDel 5 ms", "FQ-CoDel 5 ms"]}),
        Figure("fq_codel_goodput", "goodput", "FQ-CoDel vs CoDel, heavy congestion: per-flow goodput",
               where={"Test": "AQMs", "AQM": ["CoDel 5 ms", "FQ-CoDel 5 ms"], "Congestion": "heavy (64 flows)"}),
        Figure("ecn_64_flows_delay", "queue_delay_cdf", "Khademi, Ros & Welzl, ECN: queueing delay with 64 flows, ECN off / on / CE left out",
               facet="ECN AQM", where={"Test": "ECN", "Flows": "64 flows"}),
        Figure("ecn_drop_causes", "drop_causes", "ECN off: drops by cause and the queueing delay at the drop, 4 and 64 flows",
               where={"Test": "ECN", "ECN": "ECN off", "Flows": ["4 flows", "64 flows"]}),
    ],
    claims=fq_claims() + ared_claims() + ecn_claims(),
    notes=[
        "The slides give figures, not numbers, except the ECN table; the other claims are the slides' words (FQ_CoDel slides, Conclusions) checked as signs.",
        "Per-packet RTT in the slides = the 100 ms base RTT plus the queueing delay measured here.",
        "The AQMs test leaves out the first 10 s (metrics.warmup): with 64 flows the slow start fills the 1000-packet buffer and CoDel takes about 5 s to drain it (p99 1.1 s in 0-5 s, 60-150 ms after 10 s).",
        "Target delays 5 and 20 ms are our choice (the slides do not list them). 10 Mbps is our choice (the slides give no rate).",
        "ECN ratio: per seed, CE marks per arriving packet (ECN on) over drops per arriving packet (ECN off, same seed), after the first 10 s; mean ± sd over the seeds.",
        "The receivers model Linux's receive buffer (tcp.receive_buffer = \"linux\": every segment that grows the window, and every pushed segment, is ACKed at once) and the senders Linux's GSO skbs with their PSH (tcp.gso = \"linux\"), the defaults (the changelog records how the verdicts moved when they became the defaults).",
    ],
)
