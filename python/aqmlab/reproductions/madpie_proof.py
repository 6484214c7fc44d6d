"""Kuhn & Ros, "Improving PIE's performance over high-delay paths" (MADPIE), §III:
the proof of concept (Figs. 2-4).

10 CUBIC bulk flows from one sender over a 10 Mbps bottleneck (access 100 Mbps,
1 ms), bottleneck one-way delay 48 ms or 248 ms (base RTT 100 or 500 ms), a BDP
buffer, IW 10, SACK, flows starting uniformly in [0, 1] s, 300 s. PIE with target
20 ms and update interval 30 ms (and the 100 ms burst allowance of the ns-2 PIE the
paper used); MADPIE with the same and tau_DD = 30 ms. DropTail is not in §III: it is
the reference of §IV, run here for scale.

§III does not say how many runs it made; we run 20 seeds, as §IV does.
"""

from . import Axis, Claim, Figure, Pooled, Quick, Reproduction, Stat, above, approx, below

PIE = {"kind": "pie", "target": "20ms", "tupdate": "30ms", "max_burst": "100ms"}
# MADPIE = PIE's parameters plus tau_DD (Kuhn & Ros §II; §III: tau_DD = 30 ms).
MADPIE = {"kind": "madpie", "pie": {"target": "20ms", "tupdate": "30ms", "max_burst": "100ms"}, "tau_dd": "30ms"}

AQM = Axis(
    "AQM",
    {
        "PIE": {"bottleneck.aqm": PIE},
        "MADPIE": {"bottleneck.aqm": MADPIE},
        "DropTail": {"bottleneck.aqm": {"kind": "droptail"}},
    },
    note={"DropTail": "not in §III: the reference of §IV"},
)
RTT = Axis("RTT", {"100 ms": {"bottleneck.delay": "48ms"}, "500 ms": {"bottleneck.delay": "248ms"}})


def at(aqm: str, rtt: int) -> dict[str, str]:
    return {"AQM": aqm, "RTT": f"{rtt} ms"}


QD = "bottleneck.queue_delay_ms"

EXPERIMENT = Reproduction(
    name="madpie-proof",
    title="Kuhn & Ros, MADPIE §III: proof of concept (Figs. 2-4)",
    description=(
        "10 CUBIC bulk flows, 10 Mbps bottleneck with a BDP buffer, base RTT 100 or 500 ms, 300 s; "
        "PIE (target 20 ms, update 30 ms, burst allowance 100 ms), MADPIE (the same, tau_DD 30 ms), "
        "and DropTail as a reference. Queueing delay per packet; utilization per second."
    ),
    scenario="madpie-proof",
    axes=[AQM, RTT],
    seeds=20,
    quick=Quick(seeds=3, set={"duration": "100s"}),
    label="{AQM}, RTT {RTT}",
    figures=[
        Figure("fig2_queue_delay_cdf", "queue_delay_cdf", "Kuhn & Ros Fig. 2a/2c: CDF of the queueing delay per packet", facet="AQM"),
        Figure("fig2_utilization_cdf", "utilization_cdf", "Kuhn & Ros Fig. 2b/2d: CDF of the bottleneck utilization (1 s samples)", facet="AQM"),
        Figure("fig3_queue_delay_time", "queue_delay_time", "Kuhn & Ros Fig. 3: queueing delay over time at RTT 500 ms", where={"RTT": "500 ms"}),
        Figure("fig4_drop_causes", "drop_causes", "Kuhn & Ros Fig. 4: share of each drop cause and the queueing delay at the drop", where={"AQM": ["PIE", "MADPIE"]}),
        Figure("goodput", "goodput", "Per-flow goodput of the 10 bulk flows"),
    ],
    claims=[
        Claim("§III, Fig. 2a", "RTT 100 ms: the maximum queueing delay with PIE", "≈ 100 ms", Stat(f"{QD}.max", at("PIE", 100)), approx(100, 15), "ms"),
        Claim("§III, Fig. 2c", "RTT 100 ms: the maximum queueing delay with MADPIE", "≈ 80 ms", Stat(f"{QD}.max", at("MADPIE", 100)), approx(80, 15), "ms"),
        Claim(
            "§III, Fig. 2", "RTT 100 ms: no noticeable difference between MADPIE and PIE (median delay, MADPIE − PIE)", "≈ 0 ms",
            Pooled("queue_delay", 50, at("MADPIE", 100)) - Pooled("queue_delay", 50, at("PIE", 100)), approx(0, 3), "ms",
        ),
        Claim("§III, Fig. 2a", "RTT 500 ms: 20 % of PIE's samples are above (80th percentile)", "30 ms", Pooled("queue_delay", 80, at("PIE", 500)), approx(30, 5), "ms"),
        Claim("§III, Fig. 2c", "RTT 500 ms: 20 % of MADPIE's samples are above (80th percentile)", "20 ms", Pooled("queue_delay", 80, at("MADPIE", 500)), approx(20, 5), "ms"),
        Claim("§III", "RTT 500 ms: 90 % of PIE's samples are below (90th percentile)", "50 ms", Pooled("queue_delay", 90, at("PIE", 500)), approx(50, 10), "ms",
              note="PIE per RFC 8033 (ours) vs the ns-2 PIE of 2015 (the paper's)"),
        Claim("§III", "RTT 500 ms: 90 % of MADPIE's samples are below tau_DD (90th percentile)", "30 ms", Pooled("queue_delay", 90, at("MADPIE", 500)), approx(30, 5), "ms"),
        Claim(
            "§III", "RTT 500 ms: MADPIE lowers the maximum queueing delay (PIE − MADPIE)", "≈ 60 ms",
            Stat(f"{QD}.max", at("PIE", 500)) - Stat(f"{QD}.max", at("MADPIE", 500)), approx(60, 20), "ms",
        ),
        Claim(
            "§III, Fig. 2b/2d", "RTT 500 ms: the latency reduction does not lower the utilization (MADPIE − PIE, mean)", "≥ 0",
            Stat("bottleneck.utilization.mean", at("MADPIE", 500)) - Stat("bottleneck.utilization.mean", at("PIE", 500)), above(-0.01, 0.01), digits=3,
        ),
        Claim(
            "§I, §III", "PIE's utilization drops when the RTT grows (RTT 500 − RTT 100, mean)", "lower",
            Stat("bottleneck.utilization.mean", at("PIE", 500)) - Stat("bottleneck.utilization.mean", at("PIE", 100)), below(0, 0.01), digits=3,
        ),
        Claim("§III, Fig. 4", "PIE, RTT 100 ms: most drops are the AQM's, not overflow (random share)", "most", Stat("bottleneck.drop_shares.random", at("PIE", 100), 100), above(50, 10), "%"),
        Claim("§III, Fig. 4", "PIE, RTT 500 ms: most drops are the AQM's, not overflow (random share)", "most", Stat("bottleneck.drop_shares.random", at("PIE", 500), 100), above(50, 10), "%"),
        Claim("§III, Fig. 4", "PIE, RTT 500 ms: the queueing delay at the drops rises above (95th percentile at random drops)", "> 90 ms", Pooled("drop_delay:random", 95, at("PIE", 500)), above(90, 15), "ms"),
        Claim("§III, Fig. 4", "MADPIE, RTT 100 ms: random drops' share", "> 80 %", Stat("bottleneck.drop_shares.random", at("MADPIE", 100), 100), above(80, 10), "%"),
        Claim("§III, Fig. 4", "MADPIE, RTT 500 ms: deterministic drops' share r_DD", "≈ 70 %", Stat("bottleneck.drop_shares.deterministic", at("MADPIE", 500), 100), approx(70, 10), "%"),
        Claim("§III, Fig. 4", "MADPIE, RTT 500 ms: queueing delay at deterministic drops, 5th percentile", "≈ 30 ms", Pooled("drop_delay:deterministic", 5, at("MADPIE", 500)), approx(30, 5), "ms"),
        Claim("§III, Fig. 4", "MADPIE, RTT 500 ms: queueing delay at deterministic drops, median", "≈ 34 ms", Pooled("drop_delay:deterministic", 50, at("MADPIE", 500)), approx(34, 5), "ms"),
        Claim(
            "§III, Fig. 4", "MADPIE, RTT 500 ms: queueing delay at deterministic drops, 95th percentile", "≈ 48 ms",
            Pooled("drop_delay:deterministic", 95, at("MADPIE", 500)), approx(48, 8), "ms",
            note="64 ms (close) with Linux's receive buffer and GSO skbs (the defaults); 61 ms with a receiver that ACKs every second segment and no GSO, 65 ms with the receive buffer alone",
        ),
    ],
    notes=[
        "Queueing delay: per-packet sojourn in the bottleneck queue; at a drop, the backlog over the link rate (as Fig. 4).",
        "Percentiles marked 'pooled' pool every packet of all seeds of a series; the others are the mean ± sd over seeds of each run's figure.",
        "The paper's numbers are read from its text; its figures show single curves, without the number of runs.",
        "The receivers model Linux's receive buffer (tcp.receive_buffer = \"linux\": every segment that grows the window, and every pushed segment, is ACKed at once) and the senders Linux's GSO skbs with their PSH (tcp.gso = \"linux\"), the defaults (the changelog records how the verdicts moved when they became the defaults).",
    ],
)
