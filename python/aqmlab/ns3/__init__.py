"""ns-3 as the reference: run an aqmlab scenario's twin in ns-3 3.44 (the `ns3`
wheel from PyPI, `pip install 'aqmlab[ns3]'`) for speed comparison and
cross-validation.

The twin is `dumbbell.cc`, compiled once against the wheel's headers and libraries
into a cache folder. `translate()` maps the scenarios both can express (the
dumbbell; bulk TCP with CUBIC or NewReno; DropTail, PIE, CoDel, FQ-CoDel, RED,
Adaptive RED) and lists the settings the two cannot match exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from .. import measures


class Ns3Unavailable(RuntimeError):
    """ns-3 (or a C++ compiler) is missing."""


class NotTranslatable(ValueError):
    """The scenario uses something the ns-3 twin cannot express."""


NS3_LIBS = ["core", "network", "internet", "point-to-point", "applications", "traffic-control", "stats", "bridge"]


def find_ns3() -> tuple[Path, Path, str]:
    """The include and library folders of the installed ns3 wheel, and its version."""
    try:
        dist = metadata.distribution("ns3")
    except metadata.PackageNotFoundError as e:
        raise Ns3Unavailable("ns-3 is not installed: pip install 'aqmlab[ns3]' (the ns3 wheel, 3.44)") from e
    base = Path(dist.locate_file("ns3"))
    inc, lib = base / "include", base / "lib64"
    if not (inc / "ns3" / "core-module.h").exists():
        raise Ns3Unavailable(f"ns-3 headers not found under {inc}")
    return inc, lib, dist.version


def build(quiet: bool = True) -> Path:
    """Compile the twin (once per source and ns-3 version); returns the binary."""
    inc, lib, version = find_ns3()
    src = resources.files(__package__).joinpath("dumbbell.cc").read_bytes()
    key = hashlib.sha256(src + version.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("AQMLAB_CACHE", Path.home() / ".cache" / "aqmlab")) / f"ns3-twin-{key}"
    exe = cache / "dumbbell"
    if exe.exists():
        return exe
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if not cxx:
        raise Ns3Unavailable("no C++ compiler (g++) to build the ns-3 twin")
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "dumbbell.cc").write_bytes(src)
    core = sorted(lib.glob("libns3*-core.so"))
    if not core:
        raise Ns3Unavailable(f"ns-3 libraries not found under {lib}")
    prefix = core[0].name[3 : -len("-core.so")]  # e.g. "ns3.44"
    libs = [f"-l{prefix}-{m}" for m in NS3_LIBS]
    tmp = cache / f"dumbbell.tmp{os.getpid()}"
    cmd = [cxx, "-O2", "-std=c++20", f"-I{inc}", str(cache / "dumbbell.cc"), "-o", str(tmp), f"-L{lib}", f"-Wl,-rpath,{lib}", *libs]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise Ns3Unavailable(f"building the ns-3 twin failed: {p.stderr.strip().splitlines()[-1] if p.stderr else p.returncode}")
    os.replace(tmp, exe)
    return exe


@dataclass
class Translation:
    args: list[str]
    differences: list[str] = field(default_factory=list)


def _bdp_bytes(sc: dict[str, Any]) -> int:
    rate = _bps(sc["bottleneck"]["rate"])
    rtt_ns = 2 * (2 * measures.duration_ns(sc["access"]["delay"]) + measures.duration_ns(sc["bottleneck"]["delay"]))
    return rate * rtt_ns // 8 // 1_000_000_000


_RATE = {"bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9}


def _bps(text: str) -> int:
    for unit in sorted(_RATE, key=len, reverse=True):
        if text.endswith(unit):
            return round(float(text[: -len(unit)]) * _RATE[unit])
    raise NotTranslatable(f"rate {text}")


def _buffer(sc: dict[str, Any], text: str) -> str:
    if text.endswith("bdp"):
        return f"{round(float(text[:-3]) * _bdp_bytes(sc))}B"
    if text.endswith(("pkts", "pkt", "packets")):
        return f"{int(''.join(c for c in text if c.isdigit()))}p"
    sizes = {"KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1000, "kB": 1000, "MB": 10**6, "GB": 10**9, "B": 1}
    for unit in sorted(sizes, key=len, reverse=True):
        if text.endswith(unit):
            return f"{round(float(text[: -len(unit)]) * sizes[unit])}B"
    raise NotTranslatable(f"buffer {text}")


def _ms(text: str) -> float:
    return measures.duration_ns(text) / 1e6


def translate(sc: dict[str, Any], seed: int, out: str) -> Translation:
    """ns-3 arguments for a resolved scenario, and what cannot match exactly."""
    diffs = [
        "ns-3's CUBIC and HyStart follow ns-3's own implementation of the Linux algorithm",
        "ns-3's point-to-point links add a 2-byte PPP header to every packet (aqmlab: none)",
        "TCP timestamps on in both (aqmlab's segments echo their send time, RFC 7323); ns-3's 12-byte option comes out of the segment (mss - 12 payload bytes, Linux's 1448 for 1460), so packets keep aqmlab's size on the wire and goodput per packet is 0.8 % lower",
    ]
    groups, tcp = [], None
    for i, g in enumerate(sc["flows"]):
        where = f"flows[{i}]"
        if g.get("path"):
            raise NotTranslatable(f"{where}.path: per-group paths have no counterpart in the ns-3 twin")
        if g.get("stop") is not None:
            raise NotTranslatable(f"{where}.stop: the ns-3 twin's flows run to the end")
        st = g.get("start", "0s")
        lo, hi = (st["uniform"] if isinstance(st, dict) else [st, st])
        span = f"{g['count']}:{measures.duration_ns(lo) / 1e9}:{measures.duration_ns(hi) / 1e9}"
        if g["kind"] == "bulk":
            if tcp is not None and g["tcp"] != tcp:
                raise NotTranslatable(f"{where}.tcp: the ns-3 twin has one TCP configuration for all groups")
            tcp = g["tcp"]
            groups.append(f"bulk:{span}")
        elif g["kind"] == "cbr":
            if g.get("ecn"):
                raise NotTranslatable(f"{where}.ecn: ECN-capable UDP has no counterpart in the ns-3 twin")
            groups.append(f"cbr:{span}:{_bps(g['rate'])}:{int(g['packet_size'].rstrip('B'))}")
        else:
            raise NotTranslatable(f"{where}.kind: \"{g['kind']}\" (the ns-3 twin runs bulk TCP and CBR UDP)")
    if tcp is None:  # UDP only: the TCP settings are not used
        from ..scenario import resolve

        tcp = resolve("madpie-proof")["flows"][0]["tcp"]
        diffs = [d for d in diffs if "TCP" not in d and "CUBIC" not in d]
    cc = tcp["cc"]["kind"]
    if cc not in ("cubic", "newreno"):
        raise NotTranslatable(f"flows[].tcp.cc: \"{cc}\"")
    if tcp["receiver"]["kind"] not in ("drs", "fixed") or tcp.get("receive_window"):
        raise NotTranslatable("flows[].tcp.receiver: only a receiver that does not limit the window translates")
    if not tcp["handshake"] and any(g["kind"] == "bulk" for g in sc["flows"]):
        diffs.append("ns-3 TCP always opens with a three-way handshake (this scenario skips it: flows.*.tcp.handshake = false)")
    if tcp["quickack"] and any(g["kind"] == "bulk" for g in sc["flows"]):
        diffs.append(f"ns-3 has no Linux quick-ACK start: every ACK is delayed from the first segment (flows.*.tcp.quickack = {tcp['quickack']})")
    if tcp["rto_style"] != "rfc6298" and any(g["kind"] == "bulk" for g in sc["flows"]):
        diffs.append(f"ns-3 computes the RTO as RFC 6298 (flows.*.tcp.rto_style = \"{tcp['rto_style']}\")")
    # ns-3 3.44's TCP: RFC 6675 loss detection, no tail loss probe, F-RTO or D-SACK
    # undo, exact timers, every out-of-order segment ACKed at once
    for key, linux, what in (("recovery", "rack", "detects losses by RFC 6675's DupThresh rule, not RACK"), ("tlp", True, "sends no tail loss probes"),
                             ("frto", True, "has no F-RTO"), ("dsack", True, "neither sends nor uses D-SACK blocks"),
                             ("sack_compression", True, "ACKs every out-of-order segment at once"),
                             ("receive_buffer", "linux", "has no receive-buffer autotuning: its receiver neither ACKs window growth nor sends window updates"),
                             ("gso", "linux", "sends segment by segment: no GSO skbs, no PSH")):
        if tcp.get(key) == linux and any(g["kind"] == "bulk" for g in sc["flows"]):
            diffs.append(f"ns-3 {what} (flows.*.tcp.{key} = {json.dumps(linux)})")
    b = sc["bottleneck"]
    a = sc["access"]
    if b.get("trace"):
        raise NotTranslatable("bottleneck.trace: Mahimahi traces have no counterpart in the ns-3 twin")
    if b.get("reverse_aqm", {"kind": "droptail"}).get("kind") != "droptail":
        raise NotTranslatable("bottleneck.reverse_aqm: the ns-3 twin's reverse bottleneck is a FIFO")
    steps = ",".join(f"{measures.duration_ns(x['at']) / 1e9}:{_bps(x['rate'])}" for x in b.get("schedule") or [])
    args = {
        "groups": ";".join(groups),
        "steps": steps,
        "seed": seed,
        "rate": f"{_bps(b['rate'])}bps",
        "delay": f"{measures.duration_ns(b['delay'])}ns",
        "access_rate": f"{_bps(a['rate'])}bps",
        "access_delay": f"{measures.duration_ns(a['delay'])}ns",
        "buffer": _buffer(sc, b["buffer"]),
        "access_buffer": _buffer(sc, a["buffer"]),
        "duration": measures.duration_ns(sc["duration"]) / 1e9,
        "cc": cc,
        "iw": tcp["initial_window"],
        "mss": int(tcp["mss"].rstrip("B")),
        "sack": str(tcp["sack"]).lower(),
        "ecn": str(tcp["ecn"]).lower(),
        "ack_every": tcp["ack_every"] if tcp["delayed_ack"] else 1,
        "delack_ms": _ms(tcp["delack_timeout"]),
        "rto_min_ms": _ms(tcp["rto_min"]),
        "out": out,
    }
    q = b["aqm"]
    kind = q["kind"]
    if kind == "pie":
        args.update(aqm="pie", pie_target_ms=_ms(q["target"]), pie_tupdate_ms=_ms(q["tupdate"]), pie_burst_ms=_ms(q["max_burst"]),
                    pie_alpha=q["alpha"], pie_beta=q["beta"])
        if q["estimator"] == "interval":
            raise NotTranslatable("bottleneck.aqm.estimator: \"interval\" (ns-3 PIE has departure_rate and timestamp)")
        args["pie_dq_rate"] = str(q["estimator"] == "departure_rate").lower()
        args.update(pie_mean_pkt=int(q["mean_pkt_size"].rstrip("B")), pie_dq_threshold=int(q["dq_threshold"].rstrip("B")),
                    pie_cap_drop=str(q["cap_drop_adjustment"]).lower(), pie_derandomize=str(q["derandomize"]).lower())
        if not q["auto_scale"] or q.get("high_delay_boost") or q.get("bytemode") or q.get("scale_gains"):
            raise NotTranslatable("bottleneck.aqm: PIE auto_scale off, bytemode, high_delay_boost or scale_gains have no ns-3 counterpart")
        if q["estimator"] == "departure_rate":
            diffs.append(f"PIE departure-rate average: ns-3 weighs a new measurement 1/2, aqmlab {q['dq_weight']} (RFC 8033 App. B: 1/4)")
        diffs.append("PIE burst allowance: ns-3 (from ns-2) also holds drop_prob at 0 while the allowance lasts; RFC 8033 keeps updating it")
    elif kind == "droptail":
        args["aqm"] = "droptail"
    elif kind in ("codel", "fq_codel"):
        args.update(aqm=kind, codel_target_ms=_ms(q["target"]), codel_interval_ms=_ms(q["interval"]))
        if kind == "fq_codel" and args["buffer"].endswith("B"):
            # ns-3's FqCoDelQueueDisc counts its limit in packets (a byte limit drops every packet)
            pkts = max(1, round(int(args["buffer"][:-1]) / (int(tcp["mss"].rstrip("B")) + 40)))
            diffs.append(f"FQ-CoDel limit: ns-3 counts packets, so the {args['buffer']} buffer becomes {pkts} full-size packets")
            args["buffer"] = f"{pkts}p"
        if kind == "fq_codel":
            args.update(fq_quantum=int(q["quantum"].rstrip("B")), fq_flows=q["flows"])
            diffs.append(f"FQ-CoDel: ns-3 has {q.get('flows', 1024)} queues hashed from the 5-tuple with a random perturbation; aqmlab hashes flow ids")
    elif kind in ("red", "ared"):
        args.update(aqm=kind, red_mean_pkt=int(q["mean_pkt_size"].rstrip("B")), red_max_p=q["max_p"])
        if kind == "ared":
            if any(q.get(k) is not None for k in ("min_th", "max_th", "w_q")) or q.get("sliding"):
                raise NotTranslatable("bottleneck.aqm: explicit ARED thresholds and sliding thresholds are not translated (the twin uses the automatic settings)")
            args["red_target_ms"] = _ms(q["target_delay"])
        else:
            th = [_buffer(sc, str(q[k])) for k in ("min_th", "max_th")]
            if not all(t.endswith("p") for t in th) or not args["buffer"].endswith("p"):
                raise NotTranslatable("bottleneck.aqm: RED thresholds translate in packets with a packet-limited buffer only")
            args.update(red_min_th=th[0][:-1], red_max_th=th[1][:-1], red_qw=q["w_q"])
        diffs.append(f"{kind.upper()}: ns-3's `Wait` option (ns-2's wait_, p_a = p_b / (2 - count p_b)) is off in the twin, so both space drops as Floyd & Jacobson's p_a = p_b / (1 - count p_b)")
        diffs.append(f"{kind.upper()}: both use the automatic thresholds of Floyd, Gummadi & Shenker (min_th = max(5, target x C / 2), max_th = 3 min_th, w_q = 1 - exp(-1/C)); ns-3 keeps them in bytes for a byte-limited queue")
    else:
        raise NotTranslatable(f"bottleneck.aqm.kind: \"{kind}\" has no ns-3 counterpart here")
    return Translation([f"--{k}={v}" for k, v in args.items() if v != ""], diffs)


@dataclass
class Ns3Run:
    wall_seconds: float
    summary: dict[str, Any]
    differences: list[str]


def run(sc: dict[str, Any], seed: int, workdir: Path) -> Ns3Run:
    """Run the ns-3 twin of a resolved scenario; figures computed as aqmlab's."""
    exe = build()
    workdir.mkdir(parents=True, exist_ok=True)
    out = str(workdir / f"ns3-seed{seed}")
    t = translate(sc, seed, out)
    t0 = time.perf_counter()
    p = subprocess.run([str(exe), *t.args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"ns-3 failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    js = json.loads(Path(out + ".json").read_text())
    soj = np.fromfile(out + ".sojourn", dtype=np.float64)
    util = np.fromfile(out + ".util", dtype=np.float64)
    return Ns3Run(wall, summarize(sc, js, soj, util), t.differences)


def summarize(sc: dict[str, Any], js: dict[str, Any], soj: np.ndarray, util: np.ndarray) -> dict[str, Any]:
    """The twin's figures, with the keys and definitions of aqmlab's summary.json
    (aqmlab.measures): queueing delay per dequeued packet, utilization per second,
    per-class goodput over each flow's active time, Jain's index of those."""
    dur = measures.duration_ns(sc["duration"]) / 1e9
    rx = np.array(js["rx_bytes"], dtype=float)
    group = np.array(js["group"], dtype=int)
    start = np.array(js["start"], dtype=float)
    drops = js["drops"]
    arrived = js["enqueued"] + js["refused"]  # ns-3's Enqueue trace fires for accepted packets only
    classes = {}
    for gi, g in enumerate(sc["flows"]):
        sel = group == gi
        # aqmlab counts a datagram's bytes on the wire (IP and UDP headers: 28 B); ns-3's sink the payload
        scale = int(g["packet_size"].rstrip("B")) / (int(g["packet_size"].rstrip("B")) - 28) if g["kind"] == "cbr" else 1.0
        per_flow = rx[sel] * scale * 8 / np.maximum(dur - start[sel], 1e-9) / 1e6
        classes[g["name"]] = {"kind": g["kind"], "flows": int(sel.sum()), "goodput_mbps": float(per_flow.sum()),
                              "jain_index": measures.jain_index(per_flow)}
    total = sum(drops.values())
    return {
        "bottleneck": {
            "queue_delay_ms": measures.distribution(soj),
            "utilization": measures.distribution(util, measures.UTIL_PERCENTILES, extremes=False),
            "drops": drops,
            "marks": js["marks"],
            "drop_rate": total / arrived if arrived else 0.0,
            "drop_shares": {k: (v / total if total else 0.0) for k, v in drops.items()},
        },
        "classes": classes,
        "ns3": {k: js[k] for k in ("enqueued", "refused", "dequeued")},
    }
