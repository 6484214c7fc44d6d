"""Jou, Tan & Baras, "A Parallel Virtual Queue Structure for Active Queue Management":
Tables III and IV, Fig. 9 (§IV) and Figs. 10-11 (§V).

§IV: a 3 Mbps bottleneck shared by 10 persistent FTP flows (round-trip propagation
delay 64 ms), 800 web clients (HTTP/1.1, Pareto file sizes K = 2.3 KB, shape 1.3,
exponential think time of mean 50 s, round trips uniform in (16, 240) ms) and one CBR
source (1 KB every 50 ms), web and CBR from t = 100 s, 160 KB of buffer, 400 s; the
router runs RED+Tail (Table II), Adaptive RED or DropTail (Table III), or RED+Tail with
the sliding thresholds of §V on its Adaptive RED queue, (P_L, P_U) = (0.005, 0.010)
(Table IV). Built-ins `jou-web-redtail`, `jou-web-ared`, `jou-web-droptail`,
`jou-web-redtail-sliding`.

§V (Figs. 10-11): Adaptive RED with fixed thresholds (20/80 KB) against the sliding
thresholds (gamma 0.05, (P_L, P_U) = (0.01, 0.02)): 20 FTP flows on 6 Mbps from 0 s,
20 more from 100 s to 300 s, d_k = 64 ms, 500 s. Built-ins `jou-ftp-20-20` (sliding)
and `jou-ftp-20-20-fixed`.

The report fixed the simulator's seed ("the processes of web requests and file sizes
had the same sample paths in all experiments"): one run per policy. We run 5 seeds per
policy; a seed gives every policy the same web requests and file sizes (per-component
random streams). Tables III and IV are taken after t = 100 s (`metrics.warmup`), when
the web and CBR traffic is on.
"""

from __future__ import annotations

from typing import Optional

from .. import measures
from . import Axis, Claim, Figure, PerRun, Quick, Reproduction, Stat, above, approx

WEB = {"metrics.warmup": "100s"}
POLICY = Axis(
    "Policy",
    {
        "RED+Tail": {"scenario": "jou-web-redtail", **WEB},
        "Adaptive RED": {"scenario": "jou-web-ared", **WEB},
        "DropTail": {"scenario": "jou-web-droptail", **WEB},
        # Table IV: the Adaptive RED virtual queue with §V's sliding thresholds,
        # desired region of the dropping probability (0.005, 0.010)
        "RED+Tail, dynamic thresholds": {"scenario": "jou-web-redtail-sliding", **WEB},
        # Figs. 10-11
        "ARED, fixed thresholds": {"scenario": "jou-ftp-20-20-fixed"},
        "ARED, dynamic thresholds": {"scenario": "jou-ftp-20-20"},
    },
)

WEB_POLICIES = ["RED+Tail", "Adaptive RED", "DropTail", "RED+Tail, dynamic thresholds"]
FTP_POLICIES = ["ARED, fixed thresholds", "ARED, dynamic thresholds"]


def at(policy: str) -> dict[str, str]:
    return {"Policy": policy}


# -- measures over a run's records ------------------------------------------------------


def class_stat(cls: str, key: str):
    def fn(r) -> Optional[float]:
        t = measures.class_packets(r)
        return None if not t or cls not in t else t[cls][key]

    return fn


def download_mean(lo_kb: float, hi_kb: float):
    """Mean download time of the web files of size in (lo, hi] kB requested after the warm-up."""

    def fn(r) -> Optional[float]:
        t = r.table("transfers", ["class", "size_bytes", "request_s", "download_time_s"])
        if t is None:
            return None
        kb = t["size_bytes"] / 1e3
        sel = (t["class"].astype(str) == "web") & (kb > lo_kb) & (kb <= hi_kb) & (t["request_s"] >= measures.warmup_s(r)) & t["download_time_s"].notna()
        return float(t.loc[sel, "download_time_s"].mean()) if sel.any() else None

    return fn


def link_window(column: str, t0: float, t1: float, how: str = "mean"):
    """Over the bottleneck's record intervals ending in (t0, t1]: the mean of `column`
    ("mean"), or drops over arrivals ("drop_rate")."""

    def fn(r) -> Optional[float]:
        ts = r.table("timeseries", ["time_s", "drop_prob", "backlog_bytes", "arrivals", "drops_overflow", "drops_random", "drops_deterministic"], [("scope", "=", "link"), ("link", "=", "bottleneck")])
        if ts is None:
            return None
        w = ts[(ts["time_s"] > t0) & (ts["time_s"] <= t1)]
        if w.empty:
            return None
        if how == "drop_rate":
            a = w["arrivals"].sum()
            return float((w["drops_overflow"] + w["drops_random"] + w["drops_deterministic"]).sum() / a) if a else None
        return float(w[column].mean())

    return fn


def class_sum(metric: str):
    def fn(r) -> Optional[float]:
        return sum(float(c.get(metric) or 0) for c in r.summary.get("classes", {}).values())

    return fn


# -- Tables III and IV -----------------------------------------------------------------

# (policy, class) -> (loss %, delay s, rate KB/s), Jou, Tan & Baras Table III and Table IV
TABLE = {
    ("RED+Tail", "ftp"): (2.747, 0.184, 209.465),
    ("RED+Tail", "web"): (1.278, 0.114, 144.455),
    ("RED+Tail", "cbr"): (0.300, 0.109, 19.867),
    ("Adaptive RED", "ftp"): (4.149, 0.143, 217.531),
    ("Adaptive RED", "web"): (4.514, 0.143, 137.124),
    ("Adaptive RED", "cbr"): (3.950, 0.141, 19.140),
    ("DropTail", "ftp"): (1.916, 0.349, 215.243),
    ("DropTail", "web"): (4.234, 0.340, 138.983),
    ("DropTail", "cbr"): (1.550, 0.342, 19.601),
    ("RED+Tail, dynamic thresholds", "ftp"): (0.899, 0.318, 209.455),
    ("RED+Tail, dynamic thresholds", "web"): (2.306, 0.093, 144.505),
    ("RED+Tail, dynamic thresholds", "cbr"): (0.519, 0.091, 19.827),
}
NAMES = {"ftp": "FTP", "web": "WEB", "cbr": "CBR"}


def table_claims() -> list[Claim]:
    out = []
    for (pol, cls), (loss, delay, rate) in TABLE.items():
        where = "Table IV" if "dynamic" in pol else "Table III"
        w = at(pol)
        # tolerances: loss a third of the paper's value (at least 0.3 points), delay a
        # quarter, rate a tenth: the report gives one run per policy
        out.append(Claim(where, f"{pol}:{NAMES[cls]} packet loss", f"{loss:.3f} %", PerRun(class_stat(cls, "loss_pct"), w, f"{cls} packets dropped / arrived at the bottleneck (%)"), approx(loss, round(max(loss / 3, 0.3), 2)), "%", digits=2))
        out.append(Claim(where, f"{pol}:{NAMES[cls]} mean queueing delay", f"{delay:.3f} s", PerRun(class_stat(cls, "delay_s"), w, f"mean queueing delay of the {cls} packets (s)"), approx(delay, round(delay / 4, 3)), "s", digits=3))
        out.append(Claim(where, f"{pol}:{NAMES[cls]} rate", f"{rate:.3f} KB/s", PerRun(class_stat(cls, "rate_kBps"), w, f"{cls} bytes sent on by the bottleneck per second (kB/s)"), approx(rate, round(rate / 10, 1)), "kB/s"))
    return out


def loss(pol: str, cls: str) -> PerRun:
    return PerRun(class_stat(cls, "loss_pct"), at(pol), f"{cls} loss (%)")


def delay(pol: str, cls: str) -> PerRun:
    return PerRun(class_stat(cls, "delay_s"), at(pol), f"{cls} mean queueing delay (s)")


def dl(pol: str, lo: float, hi: float) -> PerRun:
    return PerRun(download_mean(lo, hi), at(pol), f"mean download time of web files of ({lo:g}, {hi:g}] kB (s)")


P40 = (100.0, 300.0)  # Figs. 10-11: while 40 flows share the link

EXPERIMENT = Reproduction(
    name="pvq",
    title="Jou, Tan & Baras, A Parallel Virtual Queue Structure for AQM: Tables III-IV, Fig. 9, Figs. 10-11",
    description=(
        "§IV: 10 FTP flows, 800 web clients and one CBR source on 3 Mbps with 160 KB of buffer, 400 s (web and CBR from 100 s; "
        "figures after 100 s): RED+Tail, Adaptive RED and DropTail (Table III), RED+Tail with sliding thresholds (Table IV), "
        "web file delivery times (Fig. 9). §V: 20 FTP flows on 6 Mbps plus 20 from 100 s to 300 s, 500 s: Adaptive RED with "
        "fixed against sliding thresholds (Figs. 10-11)."
    ),
    scenario="jou-web-redtail",
    axes=[POLICY],
    seeds=5,
    quick=Quick(seeds=1, set={"duration": "170s"}),
    label="{Policy}",
    figures=[
        Figure("table3_class_metrics", "class_metrics", "Jou, Tan & Baras Table III: loss, delay and rate per traffic class after 100 s", where={"Policy": ["RED+Tail", "Adaptive RED", "DropTail"]}),
        Figure("table4_class_metrics", "class_metrics", "Jou, Tan & Baras Tables III-IV: RED+Tail with fixed (Table III) and sliding (Table IV) thresholds", where={"Policy": ["RED+Tail", "RED+Tail, dynamic thresholds"]}),
        Figure("fig9_download_time", "download_time_by_size", "Jou, Tan & Baras Fig. 9: small web file delivery time by size (mean ± sd)", where={"Policy": WEB_POLICIES}),
        Figure("fig10_queue_length", "backlog_time", "Jou, Tan & Baras Fig. 10: queue length, 20 FTP flows + 20 from 100 s to 300 s, 6 Mbps", where={"Policy": FTP_POLICIES}),
        Figure("fig11_drop_prob", "drop_prob_time", "Jou, Tan & Baras Fig. 11: dropping probability, fixed and sliding thresholds", where={"Policy": FTP_POLICIES}),
        Figure("fig4_queue_length_web", "backlog_time", "Jou, Tan & Baras Figs. 1 and 4: queue length with web and CBR traffic from 100 s", where={"Policy": ["RED+Tail", "Adaptive RED"]}),
    ],
    claims=table_claims()
    + [
        Claim("§IV", "RED+Tail cuts the web loss of Adaptive RED (ARED − RED+Tail)", "4.51 → 1.28 %", loss("Adaptive RED", "web") - loss("RED+Tail", "web"), above(0, 0.5), "points", digits=2),
        Claim("§IV", "RED+Tail cuts the CBR loss of Adaptive RED (ARED − RED+Tail)", "3.95 → 0.30 %", loss("Adaptive RED", "cbr") - loss("RED+Tail", "cbr"), above(0, 0.5), "points", digits=2),
        Claim("§IV", "RED+Tail lowers the FTP loss of Adaptive RED by a longer FTP delay (ARED − RED+Tail, loss)", "4.15 → 2.75 %", loss("Adaptive RED", "ftp") - loss("RED+Tail", "ftp"), above(0, 0.5), "points", digits=2),
        Claim("§IV", "... and the FTP delay is longer with RED+Tail (RED+Tail − ARED)", "0.143 → 0.184 s", delay("RED+Tail", "ftp") - delay("Adaptive RED", "ftp"), above(0, 0.01), "s", digits=3),
        Claim("§IV", "RED+Tail's web and CBR delay ≈ the drop-tail queue's (maxth1 / C = 80 ms lower bound; ≈ 110 ms)", "≈ 0.110 s", delay("RED+Tail", "web"), approx(0.110, 0.03), "s", digits=3),
        Claim("§IV, Fig. 9", "RED+Tail: web files of about 30 KB (20-40 kB) download in about the loss-free time of Table I", "≈ 0.88 s", dl("RED+Tail", 20, 40), approx(0.88, 0.3), "s", digits=2),
        Claim("§IV, Fig. 9", "RED+Tail: web files of about 90 KB (80-100 kB) download in about the loss-free time of Table I", "≈ 1.18 s", dl("RED+Tail", 80, 100), approx(1.18, 0.4), "s", digits=2),
        Claim("§IV, Fig. 9", "Adaptive RED's delivery time is three times RED+Tail's (files of 20-160 kB)", "≈ 3×", dl("Adaptive RED", 20, 160) / dl("RED+Tail", 20, 160), approx(3, 1), "×", digits=2),
        Claim("§IV, Fig. 9", "DropTail's delivery time is about 2.5 times Adaptive RED's (files of 20-160 kB)", "≈ 2.5×", dl("DropTail", 20, 160) / dl("Adaptive RED", 20, 160), approx(2.5, 0.8), "×", digits=2),
        Claim("§V, Table IV", "Sliding thresholds lower RED+Tail's FTP loss (fixed − sliding)", "2.747 → 0.899 %", loss("RED+Tail", "ftp") - loss("RED+Tail, dynamic thresholds", "ftp"), above(0, 0.5), "points", digits=2),
        Claim("§V, Table IV", "... at the cost of a longer FTP delay (sliding − fixed)", "0.184 → 0.318 s", delay("RED+Tail, dynamic thresholds", "ftp") - delay("RED+Tail", "ftp"), above(0, 0.02), "s", digits=3),
        Claim("§V, Table IV", "... and a higher web loss (sliding − fixed)", "1.278 → 2.306 %", loss("RED+Tail, dynamic thresholds", "web") - loss("RED+Tail", "web"), above(0, 0.5), "points", digits=2),
        Claim("§V, Fig. 11", "Fixed thresholds, 40 flows (100-300 s): the dropping probability is large", "≈ 0.05", PerRun(link_window("drop_prob", *P40), at("ARED, fixed thresholds"), "mean of the AQM's probability over 100-300 s"), approx(0.05, 0.015), digits=3),
        Claim("§V, Fig. 11", "Dynamic thresholds, 40 flows (100-300 s): a much lower average dropping probability, within (P_L, P_U) = (0.01, 0.02)", "≈ 0.014", PerRun(link_window("drop_prob", *P40), at("ARED, dynamic thresholds"), "mean of the AQM's probability over 100-300 s"), approx(0.014, 0.005), digits=3),
        Claim("§V, Fig. 11", "Dynamic thresholds: packets dropped over packets arriving, 100-300 s", "≈ 0.014", PerRun(link_window("", *P40, how="drop_rate"), at("ARED, dynamic thresholds"), "drops / arrivals over 100-300 s"), approx(0.014, 0.005), digits=3),
        Claim("§V, Fig. 10", "Dynamic thresholds give a higher packet delay (mean queueing delay, dynamic − fixed)", "higher", Stat("bottleneck.queue_delay_ms.mean", at("ARED, dynamic thresholds")) - Stat("bottleneck.queue_delay_ms.mean", at("ARED, fixed thresholds")), above(0, 5), "ms"),
        Claim("§V", "Both schemes keep the link fully used (utilization, dynamic thresholds)", "100 %", Stat("bottleneck.utilization.mean", at("ARED, dynamic thresholds"), 100), above(98, 2), "%"),
        Claim("§V", "... and with a lower loss the dynamic scheme has a higher goodput (all FTP flows, dynamic − fixed)", "higher", PerRun(class_sum("goodput_mbps"), at("ARED, dynamic thresholds"), "goodput of all classes (Mbps)") - PerRun(class_sum("goodput_mbps"), at("ARED, fixed thresholds"), "goodput of all classes (Mbps)"), above(0, 0.02), "Mbps", digits=3),
    ],
    notes=[
        "Loss, delay and rate per class come from the packet records at the bottleneck after 100 s: loss = packets dropped / packets arriving, delay = mean queueing delay of the packets sent on, rate = bytes sent on per second (kB = 1000 B; the report's three rates add up to the 375 kB/s of the link).",
        "The report ran one simulation per policy with a fixed seed; we run 5 seeds and give mean ± sd. Tolerances (ours): loss a third of the paper's value (at least 0.3 points), delay a quarter, rate a tenth.",
        "Table I's loss-free delivery times (0.88 s for 30 KB, 1.18 s for 90 KB) come from a stand-alone one-hop path whose delay the report does not give; our web round trips are uniform in (16, 240) ms plus the queue.",
        "The probability in Fig. 11 is the AQM's own (recorded each second); Fig. 10 draws the instantaneous queue and a moving average of it, not RED's own average, and the sliding thresholds are not drawn (they are not recorded).",
    ],
)
