#!/usr/bin/env python3
"""The measurements behind docs/aqm/results.md, as Markdown on stdout.

    python scripts/aqm_family_results.py --seeds 5 > /tmp/aqm-results.md

Three experiments, each over several seeds (the spread is shown as min-max):

1. Kuhn & Ros, MADPIE §III: `madpie-proof` (PIE, target 20 ms, tupdate 30 ms,
   max_burst 100 ms) against `madpie-proof-madpie` (the same plus tau_DD = 30 ms) at
   base RTT 100 ms (bottleneck.delay = 48ms) and 500 ms (248ms), 300 s.
2. CoDel and FQ-CoDel on the same scenario (bottleneck.aqm.kind = codel / fq_codel,
   RFC defaults).
3. Khademi, Ros & Welzl (IETF 88) ECN: `ietf88-ecn` with 4, 16 and 64 flows, for
   CoDel, PIE and ARED: the ratio of the CE-mark rate with ECN to the drop rate
   without it, with and without the leave-CE-out option.

Needs the aqmlab package (maturin develop --release).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import aqmlab

RTTS = {100: "48ms", 500: "248ms"}


def spread(xs, fmt="{:.1f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    m = statistics.mean(xs)
    if len(xs) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def run(scenario, seed, **overrides):
    return aqmlab.run(scenario, seed=seed, overrides=overrides)


def section_iii(seeds):
    out = ["## 1. MADPIE §III: PIE and MADPIE, RTT 100 and 500 ms", ""]
    out.append("Per-packet queueing delay over the whole 300 s run (and, for the maximum, after a 20 s warm-up that leaves out the slow-start overshoot), mean utilization over 1 s intervals, drop shares by cause; MADPIE's deterministic drops with PIE's delay estimate at the moment of the drop (Fig. 4). Mean over seeds, (min-max).")
    out.append("")
    out.append("| RTT | AQM | p50 ms | p90 ms | max ms | max ms after 20 s | utilization | drops | random % | deterministic % | overflow % | DD at delay p5/p50/p95 ms |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for rtt, delay in RTTS.items():
        for name, sc in (("PIE", "madpie-proof"), ("MADPIE", "madpie-proof-madpie")):
            rows = []
            for s in seeds:
                r = run(sc, s, **{"bottleneck.delay": delay})
                b = r.summary["bottleneck"]
                warm = run(sc, s, **{"bottleneck.delay": delay, "metrics.warmup": "20s"}).summary["bottleneck"]["queue_delay_ms"]["max"]
                pk = r.raw["packets"]
                # drop events (event code 2) with cause deterministic (code 3)
                sel = (pk["event"] == 2) & (pk["cause"] == 3)
                est = pk["aqm_delay_ns"][sel] / 1e6
                dd = np.percentile(est, [5, 50, 95]) if est.size else [np.nan] * 3
                tot = sum(b["drops"].values())
                rows.append(
                    dict(
                        p50=b["queue_delay_ms"]["p50"],
                        p90=b["queue_delay_ms"]["p90"],
                        max=b["queue_delay_ms"]["max"],
                        warm=warm,
                        util=b["utilization"]["mean"],
                        drops=tot,
                        rd=100 * b["drops"]["random"] / tot,
                        dd=100 * b["drops"]["deterministic"] / tot,
                        bo=100 * b["drops"]["overflow"] / tot,
                        ddp=dd,
                    )
                )
            g = lambda k: [x[k] for x in rows]
            ddp = "/".join(f"{statistics.mean(x['ddp'][i] for x in rows):.0f}" for i in range(3)) if name == "MADPIE" else "-"
            out.append(
                f"| {rtt} | {name} | {spread(g('p50'))} | {spread(g('p90'))} | {spread(g('max'))} | {spread(g('warm'))} | {spread(g('util'), '{:.3f}')} | {spread(g('drops'), '{:.0f}')} | {spread(g('rd'))} | {spread(g('dd'))} | {spread(g('bo'))} | {ddp} |"
            )
    # How often PIE's own estimate is above tau_DD at RTT 100 ms (explains the DD share).
    fr = []
    for s in seeds:
        ls = run("madpie-proof", s, **{"bottleneck.delay": "48ms"}).raw["link_series"]
        d = ls["aqm_delay_ns"][ls["link"] == 0] / 1e6
        fr.append(100 * float(np.mean(d > 30)))
    out.append("")
    out.append(f"PIE at RTT 100 ms: its delay estimate is above tau_DD = 30 ms in {spread(fr)} % of the 100 ms samples.")
    return out


def codel_family(seeds):
    out = ["## 2. CoDel and FQ-CoDel on the MADPIE §III scenario", ""]
    out.append("`madpie-proof` with `bottleneck.aqm.kind` set, RFC 8289 / RFC 8290 defaults (target 5 ms, interval 100 ms). Jain's index over the 10 flows' goodputs.")
    out.append("")
    out.append("| RTT | AQM | p25 ms | p50 ms | p75 ms | p90 ms | max ms | utilization | Jain's index | drops (overflow/AQM) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for rtt, delay in RTTS.items():
        for kind in ("codel", "fq_codel", "pie"):
            rows = []
            for s in seeds:
                o = {"bottleneck.delay": delay, "bottleneck.aqm.kind": kind}
                if kind == "pie":
                    o.update({"bottleneck.aqm.target": "20ms", "bottleneck.aqm.tupdate": "30ms", "bottleneck.aqm.max_burst": "100ms"})
                b = run("madpie-proof", s, **o).summary
                q = b["bottleneck"]["queue_delay_ms"]
                d = b["bottleneck"]["drops"]
                rows.append(dict(p25=q["p25"], p50=q["p50"], p75=q["p75"], p90=q["p90"], max=q["max"], util=b["bottleneck"]["utilization"]["mean"], jain=b["classes"]["bulk"]["jain_index"], bo=d["overflow"], aqm=d["random"] + d["deterministic"]))
            g = lambda k: [x[k] for x in rows]
            label = {"codel": "CoDel", "fq_codel": "FQ-CoDel", "pie": "PIE (20 ms, for reference)"}[kind]
            out.append(
                f"| {rtt} | {label} | {spread(g('p25'))} | {spread(g('p50'))} | {spread(g('p75'))} | {spread(g('p90'))} | {spread(g('max'))} | {spread(g('util'), '{:.3f}')} | {spread(g('jain'), '{:.4f}')} | {spread(g('bo'), '{:.0f}')} / {spread(g('aqm'), '{:.0f}')} |"
            )
    return out


ECN_AQMS = {
    # seed 002's settings: CoDel 5 ms / 100 ms; PIE 20 ms / 30 ms (alpha 0.125, beta
    # 1.25); ARED per FGS01 (target delay 5 ms, automatic thresholds).
    "CoDel": {"bottleneck.aqm.kind": "codel"},
    "PIE": {"bottleneck.aqm.kind": "pie", "bottleneck.aqm.target": "20ms", "bottleneck.aqm.tupdate": "30ms", "bottleneck.aqm.ecn_threshold": 1.0},
    "PIE (ecn_threshold 10 %)": {"bottleneck.aqm.kind": "pie", "bottleneck.aqm.target": "20ms", "bottleneck.aqm.tupdate": "30ms"},
    "ARED": {"bottleneck.aqm.kind": "ared"},
}
PAPER = {"CoDel": {4: 1.256, 16: 1.356, 64: 6.117}, "PIE": {4: 1.156, 16: 1.106, 64: 6.569}, "ARED": {4: 6.621, 16: 3.465, 64: 3.873}}


def signal_rates(r, warmup_s):
    """(drops, marks) per packet arriving at the bottleneck, from the time series,
    counting the intervals that end after `warmup_s`."""
    ls = r.raw["link_series"]
    sel = (ls["link"] == 0) & (ls["time_ns"] > warmup_s * 1e9)
    arr = ls["arrivals"][sel].sum()
    drops = (ls["drops_overflow"][sel] + ls["drops_random"][sel] + ls["drops_deterministic"][sel]).sum()
    return drops / arr, ls["marks"][sel].sum() / arr


def ecn(seeds):
    out = ["## 3. ECN: CE marks with ECN over drops without it (Khademi, Ros & Welzl, IETF 88)", ""]
    out.append(
        "`ietf88-ecn` (10 Mbps, base RTT 100 ms, NewReno with SACK, 1000-packet buffer, 60 s), `flows.0.count` = 4, 16, 64. "
        "Without ECN: `flows.0.tcp.ecn=false`, `bottleneck.aqm.ecn=false`. Ratio = (CE marks per packet arriving at the bottleneck, with ECN) / "
        "(drops per packet arriving, without ECN), per seed, then mean (min-max); over the whole 60 s run, and after the first 10 s "
        "(the slow-start overshoot of the first seconds weighs heavily on whole-run counts). `leave CE out` adds `bottleneck.aqm.ignore_ce_in_measure=true`. "
        "Rates and goodput (the bulk class's total, Mbps) and median queueing delay are whole-run."
    )
    out.append("")
    out.append("| AQM | flows | paper | ratio | ratio, leave CE out | ratio after 10 s | ratio after 10 s, leave CE out | drop % no ECN | mark % ECN | mark % ECN, leave CE out | goodput no ECN / ECN / leave CE out | p50 delay ms no ECN / ECN / leave CE out |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, base in ECN_AQMS.items():
        for n in (4, 16, 64):
            rows = []
            for s in seeds:
                common = dict(base, **{"flows.0.count": n})
                no = run("ietf88-ecn", s, **common, **{"flows.0.tcp.ecn": False, "bottleneck.aqm.ecn": False})
                yes = run("ietf88-ecn", s, **common, **{"bottleneck.aqm.ecn": True})
                out_ = run("ietf88-ecn", s, **common, **{"bottleneck.aqm.ecn": True, "bottleneck.aqm.ignore_ce_in_measure": True})
                d, _ = signal_rates(no, 0)
                _, m1 = signal_rates(yes, 0)
                _, m2 = signal_rates(out_, 0)
                dw, _ = signal_rates(no, 10)
                _, m1w = signal_rates(yes, 10)
                _, m2w = signal_rates(out_, 10)
                sm = [x.summary for x in (no, yes, out_)]
                rows.append(
                    dict(
                        r1=m1 / d if d else None,
                        r2=m2 / d if d else None,
                        r1w=m1w / dw if dw else None,
                        r2w=m2w / dw if dw else None,
                        d=100 * d,
                        m1=100 * m1,
                        m2=100 * m2,
                        g=[x["classes"]["bulk"]["goodput_mbps"] for x in sm],
                        q=[x["bottleneck"]["queue_delay_ms"]["p50"] for x in sm],
                    )
                )
            g = lambda k: [x[k] for x in rows]
            paper = PAPER.get(name, {}).get(n, "-")
            gp = " / ".join(f"{statistics.mean(x['g'][i] for x in rows):.2f}" for i in range(3))
            qd = " / ".join(f"{statistics.mean(x['q'][i] for x in rows):.1f}" for i in range(3))
            f2 = "{:.2f}"
            out.append(
                f"| {name} | {n} | {paper} | {spread(g('r1'), f2)} | {spread(g('r2'), f2)} | {spread(g('r1w'), f2)} | {spread(g('r2w'), f2)} | {spread(g('d'), f2)} | {spread(g('m1'), f2)} | {spread(g('m2'), f2)} | {gp} | {qd} |"
            )
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--ecn-seeds", type=int, default=3)
    ap.add_argument("--only", choices=["madpie", "codel", "ecn"])
    a = ap.parse_args()
    seeds = list(range(1, a.seeds + 1))
    t0 = time.time()
    lines = [f"<!-- generated by scripts/aqm_family_results.py --seeds {a.seeds} --ecn-seeds {a.ecn_seeds}; aqmlab {aqmlab.__version__} -->", ""]
    if a.only in (None, "madpie"):
        lines += section_iii(seeds) + [""]
    if a.only in (None, "codel"):
        lines += codel_family(seeds) + [""]
    if a.only in (None, "ecn"):
        lines += ecn(list(range(1, a.ecn_seeds + 1))) + [""]
    lines.append(f"<!-- {time.time() - t0:.0f} s -->")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
