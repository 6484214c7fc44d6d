#!/usr/bin/env python3
"""The measurements behind docs/traffic.md and docs/receivers.md, against the seed
papers' descriptions:

  python scripts/traffic_checks.py madpie-mix  [--seeds 20]   # Kuhn & Ros §IV, RTT 500 ms: DropTail, PIE, MADPIE
  python scripts/traffic_checks.py capacity    [--aqm pie]    # Pan et al.: 100 flows, 50 -> 10 Mbps at 50 s
  python scripts/traffic_checks.py palermo                    # Popovsky §2: FIFO+DRS, CoDel+DRS, FIFO+Palermo
  python scripts/traffic_checks.py late                       # Popovsky §3 Fig. 5: late arrivals of 3 kB .. 18 MB

Each prints a table; nothing is written to disk.
"""

from __future__ import annotations

import argparse

import numpy as np

import aqmlab


def pct(x, ps):
    x = np.asarray(x, dtype=float)
    return [float(np.percentile(x, p)) if len(x) else float("nan") for p in ps]


# The AQMs of Kuhn & Ros §IV with the paper's parameters (PIE: 20 ms, 30 ms, 100 ms
# burst allowance; MADPIE: the same PIE and tau_DD = 30 ms).
MADPIE_MIX_AQMS = {
    "droptail": ["bottleneck.aqm.kind=droptail"],
    "pie": [],
    "madpie": ["bottleneck.aqm={ kind = \"madpie\", tau_dd = \"30ms\", pie = { target = \"20ms\", tupdate = \"30ms\", max_burst = \"100ms\" } }"],
}


def madpie_mix(seeds: int, aqms: list[str]) -> None:
    print(f"Kuhn & Ros §IV traffic mix, RTT 500 ms, 100 s, seeds 1..{seeds} (pooled)")
    for aqm in aqms:
        owd, dl, bulk, util, qd = [], {}, [], [], []
        for seed in range(1, seeds + 1):
            r = aqmlab.run("madpie-mix", seed=seed, overrides=MADPIE_MIX_AQMS[aqm])
            d = r.raw["datagrams"]
            owd.append(d["delay_ns"] / 1e6)
            t = r.raw["transfers"]
            g = [x["name"] for x in r.meta["groups"]].index("files")
            for size in (15_000, 44_000, 73_000, 102_000):
                m = (t["group"] == g) & (t["size_bytes"] == size) & (t["end_ns"] >= 0)
                dl.setdefault(size, []).append((t["end_ns"][m] - t["request_ns"][m].astype(np.int64)) / 1e9)
            s = r.summary
            bulk.append(s["classes"]["bulk"]["goodput_mbps"])
            util.append(s["bottleneck"]["utilization"]["mean"])
            qd.append(s["bottleneck"]["queue_delay_ms"]["p50"])
        owd = np.concatenate(owd)
        print(f"\n== {aqm}: utilization {np.mean(util):.3f}, queueing delay median {np.mean(qd):.1f} ms (mean over seeds)")
        print("CBR one-way delay (ms)   p5 {:.0f}  p25 {:.0f}  p50 {:.0f}  p75 {:.0f}  p95 {:.0f}  p99 {:.0f}".format(*pct(owd, (5, 25, 50, 75, 95, 99))))
        for size, v in dl.items():
            v = np.concatenate(v)
            print(f"download {size // 1000:>3} kB (s)  n {len(v):>5}  " + "  ".join(f"p{p} {q:.2f}" for p, q in zip((5, 25, 50, 75, 95), pct(v, (5, 25, 50, 75, 95)))))
        print(f"bulk goodput (10 flows)  mean {np.mean(bulk):.2f} Mbps  (seeds: min {np.min(bulk):.2f}, max {np.max(bulk):.2f})")


def capacity(aqm: str, seed: int) -> None:
    r = aqmlab.run("pie-lab-capacity", seed=seed, overrides={"bottleneck.aqm.kind": aqm} if aqm != "pie" else None)
    p = r.raw["packets"]
    sel = (p["event"] == 1) & (p["link"] == 0)
    t = p["time_ns"][sel] / 1e9
    soj = p["sojourn_ns"][sel] / 1e6
    print(f"Pan et al. capacity drop, 100 CUBIC flows, 50 -> 10 Mbps at 50 s, {aqm}, seed {seed}")
    print("window (s)      p50 (ms)   p95 (ms)   max (ms)   utilization")
    ls = r.raw["link_series"]
    lsel = ls["link"] == 0
    for a, b in [(5, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 51), (51, 52), (52, 53), (53, 55), (55, 60), (60, 70), (70, 80), (80, 90), (90, 100)]:
        m = (t > a) & (t <= b)
        u = ls["busy_ns"][lsel & (ls["time_ns"] > a * 1e9) & (ls["time_ns"] <= b * 1e9)]
        q = pct(soj[m], (50, 95)) + [float(soj[m].max()) if m.any() else float("nan")]
        print(f"{a:>4}-{b:<4}     {q[0]:8.1f}   {q[1]:8.1f}   {q[2]:8.1f}   {u.mean() / 1e8:8.3f}")


def palermo() -> None:
    print("Popovsky §2: two CUBIC flows (second at 17 s), 10 Mbps, 70 ms upstream delay, 1000-packet FIFO")
    print("scenario                 RTT p50/p95 (ms, per ACK, 20-60 s)   goodput first/second (Mbps, 20-60 s)   Jain   queue p50/p95 (ms)")
    for name in ("palermo-fifo-drs", "palermo-codel-drs", "palermo-fifo-palermo"):
        try:
            r = aqmlab.run(name) if name in aqmlab.scenarios() else aqmlab.run(f"scenarios/{name}.toml")
        except aqmlab.ScenarioError as e:
            print(f"{name:<24} not available: {e}")
            continue
        x = r.raw["flow_trace"]
        m = (x["time_ns"] > 20e9) & (x["rtt_ns"] >= 0)
        rtt = pct(x["rtt_ns"][m] / 1e6, (50, 95))
        fs = r.raw["flow_series"]

        def at(f, ts):
            return fs["delivered_bytes"][(fs["flow"] == f) & (fs["time_ns"] == int(ts * 1e9))][0]

        gp = [(at(f, 60) - at(f, 20)) * 8 / 40 / 1e6 for f in (0, 1)]
        jain = sum(gp) ** 2 / (2 * sum(g * g for g in gp))
        q = r.summary["bottleneck"]["queue_delay_ms"]
        print(f"{name:<24} {rtt[0]:7.0f} / {rtt[1]:<7.0f}                        {gp[0]:5.2f} / {gp[1]:<5.2f}                       {jain:.3f}   {q['p50']:.1f} / {q['p95']:.1f}")
    r = aqmlab.run("palermo-mixed")
    fs = r.raw["flow_series"]
    print("\npalermo-mixed (Fig. 4): Palermo-like first flow, DRS competitor from 17 s to 45 s")
    print(f"reverts {r.raw['flows']['receiver_reverts'][0]}, returns {r.raw['flows']['receiver_returns'][0]}")
    mode = fs["receiver_mode"][fs["flow"] == 0]
    tt = fs["time_ns"][fs["flow"] == 0] / 1e9
    drs = tt[mode == 3]
    if len(drs):
        print(f"DRS behaviour from {drs.min():.1f} s to {drs.max():.1f} s")
    for a, b in [(5, 17), (17, 25), (25, 35), (35, 45), (45, 50), (50, 70)]:
        m0 = (fs["flow"] == 0) & (fs["time_ns"] > a * 1e9) & (fs["time_ns"] <= b * 1e9)
        srtt = fs["srtt_ns"][m0]
        print(f"  {a:>2}-{b:<2} s: srtt {np.mean(srtt[srtt >= 0]) / 1e6:7.0f} ms")


def late() -> None:
    print("Popovsky §3 Fig. 5: average rate (Mbps) of a connection arriving at 20 s beside a long transfer")
    cases = {
        "FIFO, DRS": [],
        "FIFO, Palermo": ["flows.0.tcp.receiver=palermo", "flows.1.tcp.receiver=palermo"],
        "CoDel, DRS": ["bottleneck.aqm.kind=codel", "bottleneck.aqm.target=18ms"],
    }
    sizes = ["3KB", "30KB", "300KB", "3MB", "18MB"]
    print(f"{'':<16}" + "".join(f"{s:>10}" for s in sizes))
    for label, sets in cases.items():
        row = []
        for size in sizes:
            try:
                r = aqmlab.run("palermo-late-arrival", overrides=sets + [f"flows.1.size={size}", "duration=120s"])
            except aqmlab.ScenarioError:
                row = None
                break
            t = r.raw["transfers"]
            row.append(t["size_bytes"][0] * 8 / ((t["end_ns"][0] - int(t["request_ns"][0])) / 1e9) / 1e6 if t["end_ns"][0] >= 0 else float("nan"))
        print(f"{label:<16}" + ("".join(f"{x:10.3f}" for x in row) if row else "  not available (no CoDel in this build)"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["madpie-mix", "capacity", "palermo", "late"])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--aqm", default="pie")
    a = ap.parse_args()
    if a.what == "madpie-mix":
        madpie_mix(a.seeds, list(MADPIE_MIX_AQMS))
    elif a.what == "capacity":
        capacity(a.aqm, a.seed)
    elif a.what == "late":
        late()
    else:
        palermo()


if __name__ == "__main__":
    main()
