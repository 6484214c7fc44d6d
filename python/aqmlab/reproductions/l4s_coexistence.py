"""L4S coexistence through DualPI2: De Schepper, Bondarenko, Tsang & Briscoe, "PI2: A
Linearized AQM for both Classic and Scalable TCP" (CoNEXT 2016), and the evaluation
behind De Schepper, Briscoe & White, RFC 9332 (the DualQ Coupled AQM).

PI2's idea: one PI controller computes p'; classic (Reno-like) traffic is dropped or
marked with p_C = p'^2, which linearises its square-root response, and scalable
traffic (DCTCP, Prague) is marked with p_L = k p' (k = 2), so that both get a share of
the link in rough balance. RFC 9332 puts the two in two queues (the L queue with a
1 ms step of its own, the C queue held near 15 ms) and couples them through p'.

The grid: the scalable sender (TCP Prague sending ECT(1) beside CUBIC with ECN; or
DCTCP, ECT(0), with DualPI2's `any_ect` beside CUBIC without ECN, so that the
classic flow stays in the C queue), the base RTT (10, 20, 40, 80 ms, both flows
alike), and the flow counts (1 + 1, 4 + 4), through 40 Mb/s, 60 s, 3 seeds, the
first 10 s left out. The built-in scenario `l4s-coexistence` is the Prague, 20 ms,
1 + 1 case.

Neither source gives a table of numbers to set beside ours: the paper's and the
RFC's statements are the design targets (15 ms for the classic queue, a 1 ms step,
k = 2 for rough rate balance) and qualitative results; the issue's bounds (p99 of
the L queue <= 3 ms, utilization >= 0.95, Prague/CUBIC within 0.5-3) are the checks.
"""

from __future__ import annotations

from . import Axis, Claim, Figure, Quick, Reproduction, Stat, above, approx, below, largest, levels_label, smallest

SENDER = Axis(
    "Sender",
    {
        "Prague": {"flows.0.tcp.cc": "prague", "flows.1.tcp.ecn": True},
        "DCTCP": {"flows.0.tcp.cc": "dctcp", "flows.1.tcp.ecn": False, "bottleneck.aqm.any_ect": True},
    },
    note={"DCTCP": "DCTCP sends ECT(0): DualPI2 classifies it as L4S with any_ect, and the CUBIC flow runs without ECN so that it stays in the C queue"},
)
# base RTT = 2 x (bottleneck delay + 2 x 0.5 ms access)
RTT = Axis("RTT", {f"{r} ms": {"bottleneck.delay": f"{r / 2 - 1:g}ms"} for r in (10, 20, 40, 80)})
FLOWS = Axis("Flows", {"1+1": {"flows.0.count": 1, "flows.1.count": 1}, "4+4": {"flows.0.count": 4, "flows.1.count": 4}})


def at(sender: str = "Prague", rtt: int = 20, flows: str = "1+1") -> dict[str, str]:
    return {"Sender": sender, "RTT": f"{rtt} ms", "Flows": flows}


def ratio(**w) -> object:
    """The scalable flows' mean per-flow goodput over the classic flows' (means over seeds)."""
    return Stat("classes.scalable.goodput_mbps_per_flow.mean", at(**w)) / Stat("classes.classic.goodput_mbps_per_flow.mean", at(**w))


RTTS = (10, 20, 40, 80)
L99 = "classes.scalable.queue_delay_ms.p99"
C50 = "classes.classic.queue_delay_ms.p50"
UTIL = "bottleneck.utilization.mean"

EXPERIMENT = Reproduction(
    name="l4s-coexistence",
    title="De Schepper et al., PI2 (CoNEXT 2016) and RFC 9332: scalable and classic TCP through DualPI2",
    description=(
        "One (or four) scalable flows beside as many CUBIC flows through DualPI2 with tc-dualpi2's defaults (target 15 ms, "
        "tupdate 16 ms, k = 2, step 1 ms), 40 Mb/s, base RTT 10-80 ms, 60 s, the first 10 s left out: TCP Prague (ECT(1), "
        "AccECN) beside CUBIC with ECN, or DCTCP with any_ect beside CUBIC without ECN. Per-queue delay (the scalable "
        "class is the L queue, the classic class the C queue), utilization, and the per-flow rate ratio."
    ),
    scenario="l4s-coexistence",
    axes=[SENDER, RTT, FLOWS],
    seeds=3,
    quick=Quick(seeds=1, set={"duration": "30s"}, levels={"Sender": ["Prague"], "RTT": ["20 ms", "80 ms"], "Flows": ["1+1"]}),
    label=levels_label(),
    figures=[
        Figure("class_delay", "class_delay_cdf", "Queueing delay of each class: the L queue (scalable) and the C queue (classic)", facet="Sender"),
        Figure("goodput", "goodput", "Per-flow goodput of the scalable and classic flows"),
        Figure("utilization", "utilization_cdf", "Bottleneck utilization (1 s samples)", facet="Sender"),
        Figure("marks", "causes_time", "Marks and drops per second, one run per series", where={"RTT": "20 ms", "Flows": "1+1"}),
    ],
    claims=[
        Claim("RFC 9332 §1, A.1", "Prague, 20 ms, 1+1: the L4S queue stays around the 1 ms step (99th percentile of the scalable class's queueing delay)",
              "≈ 1 ms (≤ 3 ms)", Stat(L99, at()), below(3.0, 1.0), "ms", digits=2),
        Claim("RFC 9332 A.1", "Prague, 20 ms, 1+1: the classic queue is held near DualPI2's target (median of the classic class's queueing delay)",
              "15 ms", Stat(C50, at()), approx(15, 3), "ms"),
        Claim("RFC 9332 §1", "Prague, 20 ms, 1+1: the link stays full (mean utilization)", "≥ 0.95", Stat(UTIL, at()), above(0.95, 0.02), digits=3),
        Claim("RFC 9332 §2.1; PI2 §3", "Prague, 20 ms, 1+1: k = 2 aims at a rough balance of rates (Prague / CUBIC per flow); Linux testbeds measured about 2",
              "≈ 1 (Linux: ≈ 2)", ratio(), approx(1.75, 1.25), digits=2,
              note="see docs/aqm/dualpi2.md: the classic flow's RTT includes the 15 ms queue; Prague cuts at most once per RTT, and the L queue's 2p' falls short of the classic p'^2's root"),
        Claim("RFC 9332 §2.1", "Prague, 1+1: the rate ratio over base RTTs 10-80 ms, smallest", "> 0.5",
              smallest(*(ratio(rtt=r) for r in RTTS)), above(0.5, 0.1), digits=2),
        Claim("RFC 9332 §2.1", "Prague, 1+1: the rate ratio over base RTTs 10-80 ms, largest", "< 3",
              largest(*(ratio(rtt=r) for r in RTTS)), below(3.0, 0.5), digits=2),
        Claim("RFC 9332 §1", "Prague, 1+1: the L queue's 99th percentile at every base RTT 10-80 ms, largest", "≤ 3 ms",
              largest(*(Stat(L99, at(rtt=r)) for r in RTTS)), below(3.0, 1.0), "ms", digits=2),
        Claim("RFC 9332 A.1", "Prague, 4+4, 20 ms: the classic queue's median", "15 ms", Stat(C50, at(flows="4+4")), approx(15, 3), "ms"),
        Claim("RFC 9332 §2.1", "Prague, 4+4, 20 ms: per-flow rate ratio", "≈ 1 (Linux: ≈ 2)", ratio(flows="4+4"), approx(1.75, 1.25), digits=2),
        Claim("PI2 §5", "DCTCP (any_ect), 20 ms, 1+1: DCTCP and CUBIC in rough balance (per-flow rate ratio)", "≈ 1",
              ratio(sender="DCTCP"), approx(1.75, 1.25), digits=2),
        Claim("PI2 §5", "DCTCP (any_ect), 20 ms, 1+1: the scalable queue stays short (99th percentile)", "≈ 1 ms",
              Stat(L99, at(sender="DCTCP")), below(3.0, 1.0), "ms", digits=2),
        Claim("PI2 §5", "DCTCP (any_ect), 20 ms, 1+1: the classic queue near target (median)", "15 ms", Stat(C50, at(sender="DCTCP")), approx(15, 3), "ms"),
    ],
    seeds_note="3 seeds per case (the quick variant: 1 seed, 30 s, Prague at 20 and 80 ms).",
    notes=[
        "The scalable class is the L queue and the classic class the C queue (Prague sends ECT(1); with any_ect DCTCP's ECT(0) goes to L too, so the classic CUBIC runs without ECN).",
        "Prague paces itself (Linux's SK_PACING_NEEDED) in bursts of about 250 µs of its rate; DCTCP and CUBIC send what each ACK releases (docs/tcp.md).",
        "The rate ratio divides the mean per-flow goodput of the scalable class by the classic class's, after the 10 s warm-up; means over seeds.",
    ],
)
