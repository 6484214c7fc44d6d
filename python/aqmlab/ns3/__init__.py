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

from .. import metrics


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
    rtt_ns = 2 * (2 * metrics._ns(sc["access"]["delay"]) + metrics._ns(sc["bottleneck"]["delay"]))
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
    return metrics._ns(text) / 1e6


def translate(sc: dict[str, Any], seed: int, out: str) -> Translation:
    """ns-3 arguments for a resolved scenario, and what cannot match exactly."""
    diffs = [
        "ns-3 TCP always opens with a three-way handshake (aqmlab's default skips it)",
        "ns-3 has no Linux quick-ACK start: every ACK is delayed from the first segment",
        "ns-3 computes the RTO as RFC 6298 with MinRto 200 ms (aqmlab default: Linux's SRTT + max(4 RTTVAR, 200 ms))",
        "ns-3's CUBIC and HyStart follow ns-3's own implementation of the Linux algorithm",
    ]
    if len(sc["flows"]) != 1:
        raise NotTranslatable("flows: the ns-3 twin has one flow group")
    g = sc["flows"][0]
    if g["kind"] != "bulk":
        raise NotTranslatable(f"flows[0].kind: \"{g['kind']}\" (the ns-3 twin runs bulk TCP only)")
    tcp = g["tcp"]
    if tcp["cc"] not in ("cubic", "newreno"):
        raise NotTranslatable(f"flows[0].tcp.cc: \"{tcp['cc']}\"")
    start = g["start"]
    lo, hi = (start["uniform"] if isinstance(start, dict) else [start, start])
    b = sc["bottleneck"]
    a = sc["access"]
    args = {
        "flows": g["count"],
        "seed": seed,
        "rate": f"{_bps(b['rate'])}bps",
        "delay": f"{metrics._ns(b['delay'])}ns",
        "access_rate": f"{_bps(a['rate'])}bps",
        "access_delay": f"{metrics._ns(a['delay'])}ns",
        "buffer": _buffer(sc, b["buffer"]),
        "access_buffer": _buffer(sc, a["buffer"]),
        "duration": metrics._ns(sc["duration"]) / 1e9,
        "start_lo": metrics._ns(lo) / 1e9,
        "start_hi": metrics._ns(hi) / 1e9,
        "cc": tcp["cc"],
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
        if q["estimator"] == "departure_rate":
            diffs.append(f"PIE departure-rate average: ns-3 weighs a new measurement 1/2, aqmlab {q['dq_weight']} (RFC 8033 App. B: 1/4)")
        diffs.append("PIE safeguard: ns-3 uses MeanPktSize 1000 B, aqmlab mean_pkt_size " + q["mean_pkt_size"])
        diffs.append("PIE burst allowance: ns-3 (from ns-2) also holds drop_prob at 0 while the allowance lasts; RFC 8033 keeps updating it")
    elif kind == "droptail":
        args["aqm"] = "droptail"
    elif kind in ("codel", "fq_codel"):
        args.update(aqm=kind, codel_target_ms=_ms(q["target"]), codel_interval_ms=_ms(q["interval"]))
    elif kind in ("red", "ared"):
        args.update(aqm=kind)
        diffs.append("RED/ARED parameters: ns-3's automatic settings (Floyd et al. 2001) are used")
    else:
        raise NotTranslatable(f"bottleneck.aqm.kind: \"{kind}\" has no ns-3 counterpart here")
    return Translation([f"--{k}={v}" for k, v in args.items()], diffs)


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
    dur = metrics._ns(sc["duration"]) / 1e9
    rx = np.array(js["rx_bytes"], dtype=float)
    summary = {
        "queue_delay_ms": metrics.distribution(soj),
        "utilization": metrics.distribution(util, metrics.UTIL_PERCENTILES, extremes=False),
        "drops": js["drops"],
        "marks": js["marks"],
        "goodput_mbps": float(rx.sum() * 8 / dur / 1e6),
        "jain_index": metrics.jain_index(rx),
    }
    return Ns3Run(wall, summary, t.differences)
