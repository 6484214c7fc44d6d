"""Kuhn & Ros, "Improving PIE's performance over high-delay paths" (MADPIE), §V:
traffic mix and RTT mix (Figs. 10-12).

The §IV traffic on two paths that share the 10 Mbps bottleneck (one-way delay 48 ms):
the senders of one set sit 1 ms from R1 (base RTT 100 ms), those of the other 201 ms
(base RTT 500 ms), Fig. 9. Per path: 4 CBR flows (87 kbps, 218 B), 20 small-file
downloaders and 2 CUBIC bulk flows (§V-A: "N_FTP-500 = N_FTP-500 = 2", and §V-C's "4
bulk flows"). The buffer is the BDP of the higher RTT. PIE and MADPIE as in §IV
(target 20 ms, update 30 ms, tau_DD 25 ms); CoDel with its defaults (target 5 ms,
interval 100 ms, §V-B). 100 s x 20 seeds, as in §IV. DropTail is not in §V.

The claims are §V's text, per RTT class: the CBR flows on the 100 ms path (§V-B,
Fig. 10), the downloads on each path (§V-C, Fig. 11), the bulk flows on each path
(§V-D, Fig. 12).
"""

from . import (
    Axis, Claim, ClassDelay, Download, Figure, Quick, Reduction, Reproduction, Stat, above, approx, below, largest, smallest,
)
from . import madpie_proof as proof

# PIE as in §III: target 20 ms, update interval 30 ms, the 100 ms burst allowance (§IV-A: the same).
PIE = proof.PIE
# MADPIE = PIE's parameters plus tau_DD (Kuhn & Ros §V-A: "the parameterization of PIE
# and MADPIE ... as in §IV", tau_DD = 25 ms).
MADPIE = {**proof.MADPIE, "tau_dd": "25ms"}
# CoDel with its default target (5 ms, §V-B) and interval (100 ms, §I).
CODEL = {"kind": "codel", "target": "5ms", "interval": "100ms"}

AQM = Axis(
    "AQM",
    {"PIE": {"bottleneck.aqm": PIE}, "MADPIE": {"bottleneck.aqm": MADPIE}, "CoDel": {"bottleneck.aqm": CODEL}},
)


def at(aqm: str) -> dict[str, str]:
    return {"AQM": aqm}


def cbr100(q: float, aqm: str) -> ClassDelay:
    return ClassDelay(["cbr-100"], q, at(aqm))


def dl(q: float, aqm: str, rtt: int, kb=None) -> Download:
    """Download time (ms) of the downloads on the `rtt` path, files of `kb` kB or all."""
    return Download(q, at(aqm), size_bytes=None if kb is None else kb * 1000, classes=[f"files-{rtt}"], scale=1000)


SIZES = (15, 44, 73, 102)
AQMS = ("PIE", "MADPIE", "CoDel")


def spread(q: float, rtt: int):
    """The largest difference, over file sizes and pairs of AQMs, of a percentile of the
    download time (ms): ≈ 0 when the AQMs give "quite the same" percentile."""
    return largest(*[dl(q, a, rtt, kb) - dl(q, b, rtt, kb) for kb in SIZES for a in AQMS for b in AQMS if a != b])


def gp(aqm: str, rtt: int) -> Stat:
    return Stat(f"classes.bulk-{rtt}.goodput_mbps", at(aqm))


EXPERIMENT = Reproduction(
    name="madpie-rtt-mix",
    title="Kuhn & Ros, MADPIE §V: traffic mix and RTT mix (Figs. 10-12)",
    description=(
        "The §IV mix on a 100 ms and a 500 ms path at once (per path: 4 CBR flows of 87 kbps, 20 small-file "
        "downloaders, 2 CUBIC bulk flows), 10 Mbps bottleneck with the BDP of 500 ms, 100 s x 20 seeds; "
        "PIE (target 20 ms, update 30 ms), MADPIE (the same, tau_DD 25 ms) and CoDel (target 5 ms, interval 100 ms)."
    ),
    scenario="madpie-rtt-mix",
    axes=[AQM],
    seeds=20,
    quick=Quick(seeds=3, set={"duration": "40s"}),
    label="{AQM}",
    figures=[
        Figure("fig10_cbr_rtt100", "cbr_goodput_delay", "Kuhn & Ros Fig. 10: CBR goodput against the queueing-delay percentiles, CBR flows with RTT 100 ms", classes=["cbr-100"]),
        Figure("cbr_rtt500", "cbr_goodput_delay", "CBR goodput against the queueing-delay percentiles, CBR flows with RTT 500 ms (not a figure of §V)", classes=["cbr-500"]),
        Figure("fig11a_downloads_rtt100", "download_times", "Kuhn & Ros Fig. 11a: small-file download time, RTT 100 ms", classes=["files-100"]),
        Figure("fig11b_downloads_rtt500", "download_times", "Kuhn & Ros Fig. 11b: small-file download time, RTT 500 ms", classes=["files-500"]),
        Figure("fig12a_bulk_rtt100", "bulk_goodput_cdf", "Kuhn & Ros Fig. 12a: CDF of the goodput of the bulk flows with RTT 100 ms (1 s intervals)", classes=["bulk-100"]),
        Figure("fig12b_bulk_rtt500", "bulk_goodput_cdf", "Kuhn & Ros Fig. 12b: CDF of the goodput of the bulk flows with RTT 500 ms (1 s intervals)", classes=["bulk-500"]),
        Figure("queue_delay_cdf", "queue_delay_cdf", "Queueing delay per packet, all classes (not a figure of §V)"),
        Figure("queue_delay_time", "queue_delay_time", "Queueing delay over time, one run per AQM (not a figure of §V)"),
    ],
    claims=[
        # §V-B, CBR traffic on the 100 ms path (Fig. 10)
        Claim("§V-B, Fig. 10", "PIE: the queueing delay of the RTT-100 CBR flows momentarily rises above (95th percentile)", "60 ms",
              cbr100(95, "PIE"), approx(60, 10), "ms", note="'momentarily': read as the highest percentile of Fig. 10, the 95th"),
        Claim("§V-B, Fig. 10", "MADPIE: the queueing delay of the RTT-100 CBR flows momentarily rises above (95th percentile)", "40 ms",
              cbr100(95, "MADPIE"), approx(40, 10), "ms"),
        Claim("§V-B, Fig. 10", "CoDel maintains a lower queueing delay than PIE (RTT-100 CBR median, CoDel − PIE)", "< 0",
              cbr100(50, "CoDel") - cbr100(50, "PIE"), below(0, 2), "ms"),
        Claim("§V-B, Fig. 10", "With MADPIE the median queueing delay is lower than with PIE (RTT-100 CBR, MADPIE − PIE)", "< 0",
              cbr100(50, "MADPIE") - cbr100(50, "PIE"), below(0, 2), "ms"),
        Claim("§V-B, Fig. 10", "MADPIE's latency reduction for the 75th percentile (RTT-100 CBR, vs PIE)", "≈ 13 %",
              Reduction(cbr100(75, "PIE"), cbr100(75, "MADPIE")), approx(13, 7), "%"),
        Claim("§V-B, Fig. 10", "MADPIE's latency reduction for the 95th percentile (RTT-100 CBR, vs PIE)", "≈ 21 %",
              Reduction(cbr100(95, "PIE"), cbr100(95, "MADPIE")), approx(21, 7), "%"),
        Claim("§V-B, Fig. 10", "MADPIE's higher percentiles are close to CoDel's (RTT-100 CBR 95th percentile, MADPIE − CoDel)", "≈ 0 ms",
              cbr100(95, "MADPIE") - cbr100(95, "CoDel"), approx(0, 10), "ms"),
        # §V-C, downloads (Fig. 11)
        Claim("§V-C, Fig. 11a", "RTT 100 ms: the 5th-50th percentiles of the download time are quite the same with the three AQMs (largest difference of the medians over sizes)", "≈ 0 ms",
              spread(50, 100), approx(0, 100), "ms", digits=0),
        Claim("§V-C, Fig. 11a", "RTT 100 ms: the 95th percentile of the download time is always lower with MADPIE (smallest margin over sizes and the other AQMs)", "> 0 ms",
              smallest(*[dl(95, a, 100, kb) - dl(95, "MADPIE", 100, kb) for kb in SIZES for a in ("PIE", "CoDel")]), above(0, 100), "ms", digits=0),
        Claim("§V-C, Fig. 11a", "RTT 100 ms, 102 kB: the 95th percentile is slightly lower with MADPIE than with PIE (PIE − MADPIE)", "> 0 ms",
              dl(95, "PIE", 100, 102) - dl(95, "MADPIE", 100, 102), above(0, 100), "ms", digits=0),
        Claim("§V-C, Fig. 11a", "RTT 100 ms, 102 kB: the 95th percentile is slightly lower with CoDel than with PIE (PIE − CoDel)", "> 0 ms",
              dl(95, "PIE", 100, 102) - dl(95, "CoDel", 100, 102), above(0, 100), "ms", digits=0),
        Claim("§V-C, Fig. 11b", "RTT 500 ms: the performance is quite the same with CoDel and PIE (median download time, all sizes, CoDel − PIE)", "≈ 0 ms",
              dl(50, "CoDel", 500) - dl(50, "PIE", 500), approx(0, 100), "ms", digits=0),
        Claim("§V-C, Fig. 11b", "RTT 500 ms: MADPIE provides lower download times (median, all sizes, MADPIE − the better of PIE and CoDel)", "< 0 ms",
              dl(50, "MADPIE", 500) - smallest(dl(50, "PIE", 500), dl(50, "CoDel", 500)), below(0, 50), "ms", digits=0),
        Claim("§V-C, Fig. 11b", "RTT 500 ms: MADPIE provides lower download times (95th percentile, all sizes, MADPIE − the better of PIE and CoDel)", "< 0 ms",
              dl(95, "MADPIE", 500) - smallest(dl(95, "PIE", 500), dl(95, "CoDel", 500)), below(0, 100), "ms", digits=0),
        # §V-D, bulk flows (Fig. 12)
        *[
            Claim(f"§V-D, Fig. 12{'a' if rtt == 100 else 'b'}", f"RTT {rtt} ms: CoDel gives the bulk flows a lower goodput than PIE (CoDel − PIE, 2 flows)", "< 0",
                  gp("CoDel", rtt) - gp("PIE", rtt), below(0, 0.1), "Mbps", digits=2)
            for rtt in (100, 500)
        ],
        *[
            Claim(f"§V-D, Fig. 12{'a' if rtt == 100 else 'b'}", f"RTT {rtt} ms: MADPIE slightly reduces the bulk flows' goodput (MADPIE − PIE, 2 flows)", "slightly < 0",
                  gp("MADPIE", rtt) - gp("PIE", rtt), below(0, 0.1), "Mbps", digits=2)
            for rtt in (100, 500)
        ],
        *[
            Claim(f"§V-D, Fig. 12{'a' if rtt == 100 else 'b'}", f"RTT {rtt} ms: MADPIE's goodput is a trade-off between CoDel and PIE (the smaller of MADPIE − CoDel and PIE − MADPIE)", "≥ 0",
                  smallest(gp("MADPIE", rtt) - gp("CoDel", rtt), gp("PIE", rtt) - gp("MADPIE", rtt)), above(0, 0.1), "Mbps", digits=2,
                  note="" if rtt == 100 else "+0.03 (agrees) with a receiver that ACKs every second segment, −0.02 with Linux's receive buffer")
            for rtt in (100, 500)
        ],
    ],
    notes=[
        "Classes: cbr-100, files-100, bulk-100 on the 100 ms path; cbr-500, files-500, bulk-500 on the 500 ms path.",
        "CBR percentiles pool every packet of the RTT-100 CBR flows over the seeds; download times pool every completed download.",
        "Bulk goodput: the class's total over its 2 flows, mean over seeds.",
        "The paper's numbers are read from its text.",
        "The receivers model Linux's receive buffer (tcp.receive_buffer = \"linux\": every segment that grows the window, and every pushed segment, is ACKed at once) and the senders Linux's GSO skbs with their PSH (tcp.gso = \"linux\"), the defaults (the changelog records how the verdicts moved when they became the defaults).",
    ],
)
