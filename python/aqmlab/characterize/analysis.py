"""Each section's figures from its runs: summary.json's figures where they exist, the
measures layer's (`aqmlab.measures`: among them RFC 7928's loss synchronization, IPDV
jitter, the stability of the delay, the TCP goodput and the §2.7 ellipse) for the
rest, shares such as `lbe_share` here; then the mean, standard deviation and count
over the seeds of every (AQM, case)."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from .. import measures

Stat = dict[str, Any]  # {"mean", "sd", "n"}


def _get(d: Any, path: str) -> Any:
    for p in path.split("."):
        if not isinstance(d, Mapping):
            return None
        d = d.get(p)
    return d


def _f(x: Any) -> Optional[float]:
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else x


def stat(values: Iterable[Optional[float]]) -> Optional[Stat]:
    v = [x for x in (_f(x) for x in values) if x is not None]
    if not v:
        return None
    return {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1)) if len(v) > 1 else None, "n": len(v)}


# -- per-run measures -------------------------------------------------------------------


def primary_link(run: Any) -> str:
    return "bottleneck" if run.summary.get("bottleneck") else run.summary.get("primary_link", "bottleneck")


def link_block(run: Any, link: Optional[str] = None) -> dict[str, Any]:
    s = run.summary
    link = link or primary_link(run)
    if link == "bottleneck" and s.get("bottleneck"):
        return s["bottleneck"]
    return (s.get("links") or {}).get(link) or {}


def tcp_classes(run: Any) -> dict[str, dict[str, Any]]:
    return {n: c for n, c in run.summary["classes"].items() if c.get("kind") not in measures.kinds_of("datagrams")}


def downloads(run: Any, cls: str, q: str = "p50", smallest: bool = False) -> Optional[float]:
    c = run.summary["classes"].get(cls) or {}
    dt = c.get("download_time_s") or {}
    if smallest:
        by = dt.get("by_size") or {}
        if not by:
            return None
        first = min(by.values(), key=lambda x: x.get("size_bytes") or math.inf)
        return _f(first.get(q))
    return _f(_get(dt, f"all.{q}"))


def common(run: Any) -> dict[str, Optional[float]]:
    """RFC 7928 §2's figures of any run: goodput of the TCP classes, queueing delay at
    the bottleneck (or a topology's first AQM link), loss and marks there, utilization,
    jitter (IPDV of the UDP flows, else the standard deviation of the queueing delay)."""
    b = link_block(run)
    qd = b.get("queue_delay_ms") or {}
    pk = b.get("packets") or {}
    arrived = _f(pk.get("arrived")) or 0.0
    cbrs = [n for n, c in run.summary["classes"].items() if c.get("kind") in measures.kinds_of("datagrams")]
    jitter = measures.ipdv_ms(run, cbrs) if cbrs else None
    if jitter is None:
        x = measures.queue_delays(run, primary_link(run))
        jitter = float(np.std(x)) if x is not None and len(x) > 1 else None
    return {
        "goodput_mbps": measures.tcp_goodput(run),
        "delay_p50_ms": _f(qd.get("p50")),
        "delay_p95_ms": _f(qd.get("p95")),
        "delay_p99_ms": _f(qd.get("p99")),
        "delay_mean_ms": _f(qd.get("mean")),
        "jitter_ms": jitter,
        "loss_rate": _f(b.get("drop_rate")),
        "mark_rate": (_f(pk.get("marked")) or 0.0) / arrived if arrived else None,
        "utilization": _f(_get(b, "utilization.mean")),
    }


def share(run: Any, cls: str) -> Optional[float]:
    g = {n: _f(c.get("goodput_mbps")) or 0.0 for n, c in tcp_classes(run).items()}
    tot = sum(g.values())
    return g.get(cls, 0.0) / tot if tot > 0 else None


def cg(run: Any, cls: str, path: str = "goodput_mbps") -> Optional[float]:
    return _f(_get(run.summary["classes"].get(cls) or {}, path))


def class_goodputs_jain(run: Any) -> Optional[float]:
    g = measures.flow_goodputs(run, ["bulk"])
    x = np.concatenate(list(g.values())) if g else np.array([])
    return measures.jain_index(x) if len(x) > 1 else None


# section key -> per-run measures beyond `common`
def _s2(r):
    return {"fct_p50_s": downloads(r, "files"), "fct_p95_s": downloads(r, "files", "p95"), "startup_p50_s": downloads(r, "files", smallest=True),
            "loss_sync": measures.loss_sync(r), "voip_owd_p99_ms": cg(r, "voip", "one_way_delay_ms.p99")}


def _s44(r):
    small, large = cg(r, "mss536"), cg(r, "mss1460")
    return {"goodput_mss1460_mbps": large, "goodput_mss536_mbps": small, "small_large_ratio": small / large if small is not None and large else None,
            "loss_mss1460": cg(r, "mss1460", "loss_rate"), "loss_mss536": cg(r, "mss536", "loss_rate")}


def _s45(r):
    b = link_block(r)
    out = {"drops": _f(_get(b, "packets.dropped")), "marks": _f(_get(b, "packets.marked"))}
    if "l4s" in r.summary["classes"]:
        out.update({"l4s_share": share(r, "l4s"), "l4s_delay_p99_ms": cg(r, "l4s", "queue_delay_ms.p99"), "classic_delay_p99_ms": cg(r, "classic", "queue_delay_ms.p99")})
    return out


def _s46(r):
    return {"sparse_owd_p99_ms": cg(r, "sparse", "one_way_delay_ms.p99"), "bulk_jain": cg(r, "bulk", "jain_index")}


def _s51(r):
    return {"jain": cg(r, "tcp", "jain_index"), "loss_sync": measures.loss_sync(r)}


def _s52(r):
    return {"aggressive_share": share(r, "aggressive"), "friendly_goodput_mbps": cg(r, "friendly")}


def _s53(r):
    return {"tcp_goodput_mbps": cg(r, "tcp"), "unresponsive_loss": cg(r, "unresponsive", "loss_rate"), "unresponsive_owd_p99_ms": cg(r, "unresponsive", "one_way_delay_ms.p99")}


def _s54(r):
    return {"lbe_share": share(r, "ledbat"), "ledbat_goodput_mbps": cg(r, "ledbat"), "cubic_goodput_mbps": cg(r, "cubic")}


def _s6(r):
    a, b = cg(r, "rtt100"), cg(r, "rtt2")
    return {"goodput_ratio": b / a if a and b is not None else None, "jain": class_goodputs_jain(r)}


def _s7(r):
    return {"iw10_fct_p50_s": downloads(r, "iw10"), "iw10_fct_p95_s": downloads(r, "iw10", "p95"), "iw10_loss": cg(r, "iw10", "loss_rate"),
            "video_chunk_p95_s": downloads(r, "video", "p95")}


def _s8(r):
    return {"delay_cv": measures.delay_cv(r, primary_link(r)), "loss_sync": measures.loss_sync(r)}


def _s91(r):
    return {"voip_owd_p99_ms": cg(r, "voip", "one_way_delay_ms.p99"), "files_fct_p50_s": downloads(r, "files"), "video_chunk_p95_s": downloads(r, "video", "p95"),
            "bulk_goodput_mbps": cg(r, "bulk")}


def _s92(r):
    return {"forward_goodput_mbps": cg(r, "forward"), "backward_goodput_mbps": cg(r, "backward"),
            "forward_delay_p95_ms": _f(_get(link_block(r, "b"), "queue_delay_ms.p95")), "backward_delay_p95_ms": _f(_get(link_block(r, "b_rev"), "queue_delay_ms.p95")),
            "ack_drops": sum(_f(c.get("ack_drops")) or 0.0 for c in r.summary["classes"].values())}


def _s10(r):
    return {"goodput_a_mbps": cg(r, "a"), "goodput_b_mbps": cg(r, "b"), "goodput_c_mbps": cg(r, "c"), "jain": class_goodputs_jain(r),
            "delay_p95_first_ms": _f(_get(link_block(r, "lm"), "queue_delay_ms.p95")), "delay_p95_second_ms": _f(_get(link_block(r, "mr"), "queue_delay_ms.p95"))}


PER_RUN: dict[str, Callable[[Any], dict[str, Optional[float]]]] = {
    "2": _s2, "4.4": _s44, "4.5": _s45, "4.6": _s46, "5.1": _s51, "5.2": _s52, "5.3": _s53, "5.4": _s54,
    "6": _s6, "7": _s7, "8": _s8, "8.3": lambda r: {}, "9.1": _s91, "9.2": _s92, "10": _s10,
}

COMMON_DOC = {
    "goodput_mbps": "goodput of all TCP flows together (Mb/s), from the warm-up to the end (§2.5)",
    "delay_p50_ms": "median queueing delay at the bottleneck (a topology: its first AQM link), ms (§2.6)",
    "delay_p95_ms": "95th percentile of the queueing delay, ms",
    "delay_p99_ms": "99th percentile of the queueing delay, ms",
    "delay_mean_ms": "mean queueing delay, ms",
    "jitter_ms": "IPDV of the CBR flows (mean |difference| of consecutive one-way delays), ms; without CBR flows the standard deviation of the queueing delay (§2.6)",
    "loss_rate": "packets dropped at the bottleneck / packets arriving (§2.3)",
    "mark_rate": "packets CE-marked at the bottleneck / packets arriving",
    "utilization": "mean bottleneck utilization per second",
}

SECTION_DOC: dict[str, dict[str, str]] = {
    "2": {"fct_p50_s": "median download time of the 15-102 kB files, request to last byte, s (§2.1)", "fct_p95_s": "95th percentile of it",
          "startup_p50_s": "median download time of the smallest (15 kB) files, handshake included: aqmlab's flow start-up time (§2.2)",
          "loss_sync": "global synchronization rate of the bulk flows (§2.4; Hassayoun & Ros)", "voip_owd_p99_ms": "99th percentile one-way delay of the VoIP probe, ms"},
    "2.7": {"delay_ms": "mean of the per-interval mean queueing delays, ms", "goodput_mbps": "mean per-interval goodput, Mb/s",
            "ellipse": "the 1-σ ellipse of the points: center [delay, goodput], semi-axes (major, minor) and the major axis's angle in degrees", "points": "number of points"},
    "4.4": {"goodput_mss1460_mbps": "goodput of the 1460-byte-segment class", "goodput_mss536_mbps": "goodput of the 536-byte class",
            "small_large_ratio": "goodput of the small-packet class / the large one", "loss_mss1460": "loss rate of the large-packet class", "loss_mss536": "loss rate of the small-packet class"},
    "4.5": {"drops": "packets dropped at the bottleneck", "marks": "packets CE-marked", "mark_drop_ratio": "marks with ECN / drops without (per AQM; Khademi, Ros & Welzl's ratio)",
            "l4s_share": "ECT(1): the scalable flow's goodput share", "l4s_delay_p99_ms": "ECT(1): its 99th percentile queueing delay", "classic_delay_p99_ms": "ECT(1): the classic flow's"},
    "4.6": {"sparse_owd_p99_ms": "99th percentile one-way delay of the sparse CBR flow, ms", "bulk_jain": "Jain's index of the bulk flows' goodputs", "fq_form": "the FQ form run (or why none)"},
    "5.1": {"jain": "Jain's index of the flows' goodputs", "loss_sync": "global synchronization rate (with 5 flows)"},
    "5.2": {"aggressive_share": "the 4-connection application's share of the goodput", "friendly_goodput_mbps": "the single flow's goodput"},
    "5.3": {"tcp_goodput_mbps": "goodput of the 5 CUBIC flows", "unresponsive_loss": "loss rate of the CBR flow", "unresponsive_owd_p99_ms": "its 99th percentile one-way delay"},
    "5.4": {"lbe_share": "LEDBAT goodput / (LEDBAT + CUBIC goodput)", "ledbat_goodput_mbps": "LEDBAT's goodput", "cubic_goodput_mbps": "CUBIC's goodput"},
    "6": {"goodput_ratio": "goodput of the RTT2 flow / the 100 ms flow's", "jain": "Jain's index of the two flows' goodputs"},
    "7": {"iw10_fct_p50_s": "median time of the 14.6 kB (IW10) transfers, s", "iw10_fct_p95_s": "95th percentile of it", "iw10_loss": "loss rate of the burst class",
          "video_chunk_p95_s": "95th percentile download time of the 625 kB video chunks, s"},
    "8": {"delay_cv": "coefficient of variation of the per-second mean queueing delay", "loss_sync": "global synchronization rate"},
    "8.3": {"parameter": "the parameter varied and its value at 1x"},
    "9.1": {"voip_owd_p99_ms": "99th percentile one-way delay of the VoIP flows", "files_fct_p50_s": "median file download time", "video_chunk_p95_s": "95th percentile video chunk time",
            "bulk_goodput_mbps": "bulk goodput"},
    "9.2": {"forward_goodput_mbps": "goodput L->R", "backward_goodput_mbps": "goodput R->L", "forward_delay_p95_ms": "95th percentile queueing delay L->R",
            "backward_delay_p95_ms": "the same R->L", "ack_drops": "ACKs dropped"},
    "10": {"goodput_a_mbps": "goodput of the 5 flows crossing both AQMs", "goodput_b_mbps": "of those crossing only the second", "goodput_c_mbps": "of those crossing only the first",
           "jain": "Jain's index over all 15 flows", "delay_p95_first_ms": "95th percentile queueing delay at the first AQM", "delay_p95_second_ms": "at the second"},
    "11": {"ns_per_packet": "CPU time of the fixed run / packets through the bottleneck, ns", "ns_per_packet_over_droptail": "the same minus DropTail's (the AQM's own cost)",
           "cpu_s": "least CPU time of the run, s", "packets": "packets through the bottleneck", "events": "simulator events"},
    "12": {"parameters": "every parameter: name, default, value in this variant, meaning",
           "elasticity": "d log(figure) / d log(parameter) over §8.3's runs (least squares), for delay_p95_ms, goodput_mbps, loss_rate"},
}


def per_run(section: str, run: Any) -> dict[str, Optional[float]]:
    out = common(run)
    out.update(PER_RUN.get(section, lambda r: {})(run))
    return out


def aggregate(rows: Sequence[dict[str, Optional[float]]]) -> dict[str, Optional[Stat]]:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return {k: stat(r.get(k) for r in rows) for k in keys}


def elasticity(scales: Sequence[float], values: Sequence[Optional[float]]) -> Optional[float]:
    pts = [(math.log(s), math.log(v)) for s, v in zip(scales, values) if v is not None and v > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    if np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, y, 1)[0])
