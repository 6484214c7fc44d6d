"""Kuhn & Ros, "Improving PIE's performance over high-delay paths" (MADPIE), §IV:
performance with a traffic mix (Figs. 6-8).

The §III dumbbell (10 Mbps bottleneck, access links 100 Mbps / 1 ms, a BDP buffer)
with bottleneck one-way delay 48, 148 or 248 ms (base RTT 100, 300 or 500 ms),
carrying N_CBR = 4 CBR flows (87 kbps of 218-byte UDP packets), N_SF = 20 small-file
downloaders (15, 44, 73 or 102 kB, a new size for each download, exponential think
time of mean 9.5 s) and N_FTP = 10 CUBIC bulk flows (IW 10, SACK); all flows start
in [0, 1] s; 100 s per run, 20 independent seeds (§IV-A). DropTail, PIE (target
20 ms, update interval 30 ms) and MADPIE (the same, tau_DD = 25 ms).

The claims are §IV's text: the CBR delay percentiles (§IV-B), the download times by
file size (§IV-C) and the bulk goodput (§IV-D).
"""

from . import Axis, Claim, ClassDelay, Download, Figure, Quick, Reproduction, Stat, above, approx, below, largest, smallest
from . import madpie_proof as proof

# PIE as in §III: target 20 ms, update interval 30 ms, the 100 ms burst allowance (§IV-A: the same).
PIE = proof.PIE
# MADPIE = PIE's parameters plus tau_DD (Kuhn & Ros §IV-A: tau_DD = 25 ms).
MADPIE = {**proof.MADPIE, "tau_dd": "25ms"}

AQMS = ("DropTail", "PIE", "MADPIE")
AQM = Axis(
    "AQM",
    {
        "DropTail": {"bottleneck.aqm": {"kind": "droptail"}},
        "PIE": {"bottleneck.aqm": PIE},
        "MADPIE": {"bottleneck.aqm": MADPIE},
    },
)
RTTS = (100, 300, 500)
RTT = Axis("RTT", {"100 ms": {"bottleneck.delay": "48ms"}, "300 ms": {"bottleneck.delay": "148ms"}, "500 ms": {"bottleneck.delay": "248ms"}})


def at(aqm: str, rtt: int) -> dict[str, str]:
    return {"AQM": aqm, "RTT": f"{rtt} ms"}


def cbr(q: float, aqm: str, rtt: int) -> ClassDelay:
    return ClassDelay(["cbr"], q, at(aqm, rtt))


def dl(q: float, aqm: str, rtt: int, kb: int) -> Download:
    """Download time in ms of files of `kb` kB (the scenario's sizes are 1000-byte kB)."""
    return Download(q, at(aqm, rtt), size_bytes=kb * 1000, scale=1000)


SIZES = (15, 44, 73, 102)


def dt_margin(rtt: int):
    """The smallest margin, over the file sizes and the two AQMs, by which DropTail's
    median download time exceeds the AQM's (ms): > 0 when DT is slower for every size."""
    return smallest(*[dl(50, "DropTail", rtt, kb) - dl(50, aqm, rtt, kb) for kb in SIZES for aqm in ("PIE", "MADPIE")])


def util_margin(rtt: int):
    """DropTail's mean utilization minus the higher of PIE's and MADPIE's."""
    u = "bottleneck.utilization.mean"
    return Stat(u, at("DropTail", rtt)) - largest(Stat(u, at("PIE", rtt)), Stat(u, at("MADPIE", rtt)))


BULK = "classes.bulk.goodput_mbps"
CBR_GP = "classes.cbr.goodput_mbps_per_flow.mean"

EXPERIMENT = Reproduction(
    name="madpie-mix",
    title="Kuhn & Ros, MADPIE §IV: traffic mix (Figs. 6-8)",
    description=(
        "4 CBR flows (87 kbps, 218 B), 20 small-file downloaders (15/44/73/102 kB, exp(9.5 s) think time) and "
        "10 CUBIC bulk flows on a 10 Mbps bottleneck with a BDP buffer, base RTT 100, 300 or 500 ms, 100 s x 20 seeds; "
        "DropTail, PIE (target 20 ms, update 30 ms) and MADPIE (the same, tau_DD 25 ms)."
    ),
    scenario="madpie-mix",
    axes=[AQM, RTT],
    seeds=20,
    quick=Quick(seeds=2, set={"duration": "40s"}),
    label="{AQM}, RTT {RTT}",
    figures=[
        Figure("fig6_cbr_goodput_delay", "cbr_goodput_delay", "Kuhn & Ros Fig. 6b-d: CBR goodput against the queueing-delay percentiles, one panel per AQM", facet="AQM"),
        Figure("fig7a_downloads_rtt100", "download_times", "Kuhn & Ros Fig. 7a: small-file download time, RTT 100 ms", where={"RTT": "100 ms"}),
        Figure("fig7b_downloads_rtt300", "download_times", "Kuhn & Ros Fig. 7b: small-file download time, RTT 300 ms", where={"RTT": "300 ms"}),
        Figure("fig7c_downloads_rtt500", "download_times", "Kuhn & Ros Fig. 7c: small-file download time, RTT 500 ms", where={"RTT": "500 ms"}),
        Figure("fig8_bulk_goodput_cdf", "bulk_goodput_cdf", "Kuhn & Ros Fig. 8a-c: CDF of the bulk flows' goodput (1 s intervals), one panel per RTT", facet="RTT"),
        Figure("queue_delay_cdf", "queue_delay_cdf", "Queueing delay per packet (all classes), one panel per RTT (not a figure of §IV)", facet="RTT"),
    ],
    claims=[
        # §IV-B, CBR traffic (Fig. 6)
        Claim("§IV-B, Fig. 6b", "DropTail, RTT 500 ms: the CBR queueing delay is very high (95th percentile, DT − PIE)", "off the figure's scale",
              cbr(95, "DropTail", 500) - cbr(95, "PIE", 500), above(100, 50), "ms"),
        Claim("§IV-B, Fig. 6c/6d", "RTT 100 ms: MADPIE does not differ much from PIE (CBR 95th percentile, PIE − MADPIE)", "≈ 0 ms",
              cbr(95, "PIE", 100) - cbr(95, "MADPIE", 100), approx(0, 5), "ms"),
        Claim("§IV-B, Fig. 6c/6d", "RTT 500 ms: MADPIE reduces the CBR queueing delay's 75th percentile by (PIE − MADPIE)", "5 ms",
              cbr(75, "PIE", 500) - cbr(75, "MADPIE", 500), approx(5, 3), "ms",
              note="'when the RTT increases': read as RTT 500 ms; 3.2 ms (agrees) with a receiver that ACKs every second segment, 1.2 ms with Linux's receive buffer"),
        Claim("§IV-B, Fig. 6c/6d", "RTT 500 ms: MADPIE reduces the CBR queueing delay's 95th percentile by (PIE − MADPIE)", "30 ms",
              cbr(95, "PIE", 500) - cbr(95, "MADPIE", 500), approx(30, 10), "ms"),
        Claim("§IV-B, Fig. 6c/6d", "RTT 500 ms: without noticeable impact on the CBR goodput (MADPIE − PIE, per flow)", "≈ 0 kbps",
              Stat(CBR_GP, at("MADPIE", 500), 1000) - Stat(CBR_GP, at("PIE", 500), 1000), approx(0, 1.0), "kbps", digits=2),
        # §IV-C, small-file downloads (Fig. 7)
        *[
            Claim("§IV-C, Fig. 7", f"RTT {rtt} ms: DropTail's download time is higher than with either AQM for every file size (smallest margin of the medians)", "> 0 ms",
                  dt_margin(rtt), above(0, 50), "ms", digits=0)
            for rtt in RTTS
        ],
        Claim("§IV-C, Fig. 7b", "RTT 300 ms: MADPIE reduces the 95th percentile of the 73 kB download time by (PIE − MADPIE)", "≈ 700 ms",
              dl(95, "PIE", 300, 73) - dl(95, "MADPIE", 300, 73), approx(700, 250), "ms", digits=0,
              note="588 ms (agrees) with a receiver that ACKs every second segment, 423 ms with Linux's receive buffer"),
        Claim("§IV-C, Fig. 7c", "RTT 500 ms: MADPIE reduces the 75th percentile of the 102 kB download time by (PIE − MADPIE)", "≈ 500 ms",
              dl(75, "PIE", 500, 102) - dl(75, "MADPIE", 500, 102), approx(500, 200), "ms", digits=0),
        # §IV-D, bulk flows (Fig. 8)
        Claim("§IV-D, Fig. 8", "DropTail: the impact of the RTT on the bulk goodput can hardly be noticed (RTT 500 − RTT 100, 10 flows)", "≈ 0 Mbps",
              Stat(BULK, at("DropTail", 500)) - Stat(BULK, at("DropTail", 100)), approx(0, 0.5), "Mbps", digits=2),
        *[
            Claim("§IV-D", f"RTT {rtt} ms: without AQM the bottleneck utilization is higher than with PIE or MADPIE (DT − the higher AQM)", "> 0",
                  util_margin(rtt), above(0, 0.01), digits=3)
            for rtt in RTTS
        ],
        Claim("§IV-D, Fig. 8c", "RTT 500 ms: MADPIE's latency gain costs the bulk flows a small goodput degradation (MADPIE − PIE, 10 flows)", "small, < 0",
              Stat(BULK, at("MADPIE", 500)) - Stat(BULK, at("PIE", 500)), below(0, 0.2), "Mbps", digits=2),
        Claim("§IV-D, Fig. 8a", "RTT 100 ms: MADPIE and PIE give the bulk flows about the same goodput (MADPIE − PIE, 10 flows)", "≈ 0 Mbps",
              Stat(BULK, at("MADPIE", 100)) - Stat(BULK, at("PIE", 100)), approx(0, 0.2), "Mbps", digits=2,
              note="§I/§VI: MADPIE does not affect PIE when the RTT is < 100 ms"),
    ],
    notes=[
        "CBR percentiles pool every CBR packet's queueing delay at the bottleneck over the seeds (Fig. 6 plots them against the mean goodput per CBR flow).",
        "Download times pool every completed download of the seeds; downloads still running at the end are left out (as the paper's box plots must).",
        "§IV-B and §IV-C quote differences 'when the RTT increases' and per RTT; the paper's numbers are read from its text.",
        "The file sizes are 15, 44, 73 and 102 kB (the paper writes 'Kb' in §IV-C; §IV-A says kB).",
        "The receivers model Linux's receive buffer (tcp.receive_buffer = \"linux\": every segment that grows the window, and every pushed segment, is ACKed at once) and the senders Linux's GSO skbs with their PSH (tcp.gso = \"linux\"), the defaults. With receivers that ACK every second segment and senders without GSO (\"unlimited\", \"off\") the tally is the same, 14 / 2 / 0 (with the receive buffer alone it was 12 / 4 / 0).",
    ],
)
