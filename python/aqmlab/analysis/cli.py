"""`aqmlab analyze ared-queue` and `aqmlab analyze pie-fluid`: each computes its model,
runs the matching aqmlab simulation (unless --no-sim), and writes figures (PNG and
SVG), `analysis.json` and `analysis.md` into --out."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np

from . import ared_queue as aq
from . import pie_fluid as pf

# ---- the seed-004 §VI scenario -------------------------------------------------------
from .args import JTB_BUFFER_PKTS, JTB_RATE_BPS, JTB_RTT_S  # noqa: F401
JTB_PAPER = {  # §VI, Fig. 17: measured from the paper's ns-2 runs
    "W_bits": 6.02e4,
    "sigma_bps": {20: 77021.0, 40: 128490.0},
}


def available_aqms() -> list[str]:
    import aqmlab

    return [k["kind"] for k in aqmlab.aqms()]


def jtb_aqm(kind: str) -> dict[str, Any]:
    """The AQM of the §VI runs: Adaptive RED with sliding thresholds (Table II: min_th
    20 KB, max_th 80 KB, so D = 60 KB; §V, Figs. 10-11: (P_L, P_U) = (0.01, 0.02))."""
    if kind == "ared_sliding":
        return {"kind": "ared_sliding", "min_th": "20KB", "max_th": "80KB", "sliding": {"p_low": 0.01, "p_high": 0.02}}
    if kind == "pie":
        return {"kind": "pie"}
    return {"kind": kind}


def jtb_scenario(N: int, aqm_kind: str, duration_s: float, buffer_pkts: int, seed: int) -> dict[str, Any]:
    """N persistent FTP (TCP) flows over C = 6 Mb/s with a 64 ms round-trip propagation
    delay (bottleneck 30 ms + two 1 ms access links each way)."""
    return {
        "name": f"jtb-vi-n{N}",
        "description": f"Jou, Tan & Baras §VI: {N} persistent TCP flows, 6 Mbps, RTT 64 ms, {aqm_kind}",
        "duration": f"{duration_s:g}s",
        "seed": seed,
        "bottleneck": {"rate": "6Mbps", "delay": "30ms", "buffer": f"{buffer_pkts}pkts", "aqm": jtb_aqm(aqm_kind)},
        "access": {"rate": "100Mbps", "delay": "1ms"},
        # ns-2 FTP over TCP Reno-style congestion control in the paper: NewReno with SACK
        # here, with ns-2's sender and receiver as the jou-* scenarios model them (segment
        # by segment, no receive buffer) instead of Linux's GSO skbs and receive buffer
        "flows": [
            {
                "name": "ftp",
                "kind": "bulk",
                "count": N,
                "start": {"uniform": ["0s", "1s"]},
                "tcp": {"cc": "newreno", "gso": "off", "receive_buffer": "unlimited"},
            }
        ],
        "record": {"flow_series": True},
    }


# ---- figures ----------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, name: str) -> list[str]:
    """NAME.png and NAME.svg in `out` (the figure is closed)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for ext in ("png", "svg"):
        fig.savefig(out / f"{name}.{ext}", dpi=150 if ext == "png" else None, bbox_inches="tight")
        files.append(f"{name}.{ext}")
    _plt().close(fig)
    return files


def _style():
    from ..plots import STYLE

    return _plt().rc_context(STYLE)


def fig_mapping(models: dict[int, aq.QueueModel], out: Path, name: str, title: str, labels: Optional[dict[int, str]] = None) -> list[str]:
    """Figs. 18-19: f(q) against the 45-degree line, q in packets."""
    plt = _plt()
    with _style():
        fig, ax = plt.subplots(figsize=(5.5, 5.0))
        L = next(iter(models.values())).L_bits
        hi = max(max(m.B_bits, 2 * m.equilibrium()) for m in models.values() if np.isfinite(m.B_bits)) / L
        q = np.linspace(0, hi, 600)
        for key, m in models.items():
            y = m.f(q * L) / L
            lab = (labels or {}).get(key, str(key))
            (line,) = ax.plot(q, y, lw=1.6, label=lab)
            qe = m.equilibrium() / L
            ax.plot([qe], [qe], "o", color=line.get_color(), ms=5)
        ax.plot([0, hi], [0, hi], color="black", lw=0.8, ls="--", label="45° line")
        ax.set_xlim(0, hi)
        ax.set_ylim(0, hi)
        ax.set_xlabel("$q_n$ (packets of 1500 B)")
        ax.set_ylabel("$f(q_n)$ (packets of 1500 B)")
        ax.legend(loc="upper left")
        ax.set_title(title)
        return _save(fig, out, name)


def fig_distributions(panels: list[dict[str, Any]], out: Path) -> list[str]:
    """Fig. 21: simulated (aqmlab), Markov chain (17)-(19) and linear approximation (21)."""
    plt = _plt()
    with _style():
        fig, axes = plt.subplots(len(panels), 1, figsize=(6.4, 3.2 * len(panels)), squeeze=False)
        for ax, p in zip(axes[:, 0], panels):
            kb = p["bins_kbytes"]
            w = kb[1] - kb[0]
            if p.get("sim") is not None:
                ax.bar(kb, p["sim"], width=w, color="#bbbbbb", align="edge", label=f"aqmlab simulation ({p['aqm']})")
            ax.plot(kb + w / 2, p["markov"], color="#1f77b4", lw=1.5, label="Markov chain, eq. (17)-(19)")
            if p.get("linear") is not None:
                ax.plot(kb + w / 2, p["linear"], color="#d62728", lw=1.2, ls="--", label="linear approximation, eq. (21)")
            ax.set_xlabel("queue length q (KB)")
            ax.set_ylabel("probability per 1500 B bin")
            ax.set_title(f"N = {p['N']}, S = RTT: steady-state queue length")
            ax.set_xlim(0, p.get("xmax_kbytes", kb[-1]))
            ax.legend(loc="upper right")
        fig.tight_layout()
        return _save(fig, out, "queue_distributions")


def fig_trajectories(series: list[tuple[str, np.ndarray, np.ndarray]], out: Path, title: str) -> list[str]:
    """Fig. 20: queue length of the model (15) with noise for S = RTT and 2 RTT."""
    plt = _plt()
    with _style():
        fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.4 * len(series)), sharex=True, squeeze=False)
        for ax, (lab, t, q) in zip(axes[:, 0], series):
            ax.plot(t, q, lw=0.9, color="black")
            ax.set_ylabel("queue (packets)")
            ax.set_title(lab)
            ax.set_ylim(bottom=0)
            ax.set_xlim(left=0)
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        return _save(fig, out, "model_queue_trajectories")


# ---- ared-queue ---------------------------------------------------------------------------
def run_ared_queue(a: argparse.Namespace) -> int:
    import aqmlab

    out = Path(a.out)  # written only once the inputs are valid
    try:
        aqmlab.inputs.writable_dir(out)
    except aqmlab.ScenarioError as e:
        print(f"aqmlab: error: {e}", file=sys.stderr)
        return 2
    C, d, L = a.rate_mbps * 1e6, a.rtt_ms / 1e3, 1500 * 8.0
    if a.scenario:
        # a user's scenario: C and d from its bottleneck and access links
        try:
            sc0 = aqmlab.resolve(a.scenario, list(a.set))
        except aqmlab.ScenarioError as e:
            print(f"aqmlab: error: {e}", file=sys.stderr)
            return 2
        C = _rate_bps(sc0["bottleneck"]["rate"])
        d = 2 * (_dur_s(sc0["bottleneck"]["delay"]) + 2 * _dur_s(sc0["access"]["delay"]))
        aqm_of_scenario = sc0["bottleneck"]["aqm"]["kind"]
    B = a.buffer_pkts * L
    kinds = available_aqms()
    aqm = a.aqm if a.aqm != "auto" else ("ared_sliding" if "ared_sliding" in kinds else "pie")
    if a.scenario:
        if a.aqm != "auto":
            print("aqmlab: error: --aqm: with a SCENARIO, set its AQM in the file or with --set bottleneck.aqm.kind=...", file=sys.stderr)
            return 2
        aqm = aqm_of_scenario
    if not a.no_sim and aqm not in kinds:
        print(f"aqmlab: error: --aqm: no AQM kind \"{aqm}\" in this build (have: {', '.join(kinds)})", file=sys.stderr)
        return 2
    factors = sorted(set(a.s_factors) | {1.0})
    result: dict[str, Any] = {"model": "Jou, Tan & Baras §VI", "C_bps": C, "d_s": d, "B_packets": a.buffer_pkts, "L_bits": L,
                              "S_factors": factors, "aqm_simulated": None if a.no_sim else aqm, "cases": {}}
    panels, models_rtt, trajs = [], {}, []
    sim_traj = None
    for N in a.flows:
        case: dict[str, Any] = {"N": N}
        est = None
        if not a.no_sim:
            sc = jtb_scenario(N, aqm, a.duration, a.buffer_pkts, a.seed)
            if a.scenario:
                sc = a.scenario
            r = aqmlab.run(sc, overrides=list(a.set) + ([f"flows.0.count={N}"] if a.scenario else []))
            # the slot length of the estimate: the measured mean RTT (S = RTT)
            pk = r.raw["packets"]
            rtt_sim = d + _mean_backlog_bits(r, a.warmup) / C
            est = aq.estimate_from_run(r, S_s=rtt_sim, n_states=a.buffer_pkts + 1, L_bits=L, d_s=d, C_bps=C, warmup_s=a.warmup, window=a.window, sigma_from=a.sigma_estimator)
            case["simulation"] = {"scenario": r.scenario["name"], "aqm": aqm, "seed": r.meta["seed"], "duration_s": r.meta["sim_seconds"],
                                  "warmup_s": a.warmup, "mean_rtt_s": rtt_sim, **est.as_dict(),
                                  "queue_delay_ms": r.summary["bottleneck"]["queue_delay_ms"]}
            del pk
        paper_sigma = JTB_PAPER["sigma_bps"].get(N)
        W = a.W if a.W is not None else (est.W_bits if est else JTB_PAPER["W_bits"])
        sigma = a.sigma if a.sigma is not None else (est.sigma_bps if est else paper_sigma)
        if sigma is None:
            print(f"aqmlab: error: --sigma: needed for N = {N} with --no-sim (the paper gives sigma for N = 20 and 40 only)", file=sys.stderr)
            return 2
        case["W_bits"], case["sigma_bps"] = W, sigma
        case["W_sigma_source"] = "given" if a.W is not None else ("simulation" if est else "paper (Fig. 17)")
        base = aq.QueueModel.homogeneous(N, C, d, W, 1.0, sigma_bps=sigma, B_bits=B, L_bits=L)
        qe = base.equilibrium()
        rtt = d + qe / C
        case["q_e_bits"], case["q_e_kbytes"], case["q_e_packets"], case["rtt_at_q_e_s"] = qe, qe / 8000, qe / L, rtt
        case["S_bound_eq10_s"] = base.S_bound_prop61()
        per_S = {}
        for k in factors:
            m = base.with_S(k * rtt)
            st = m.stability()
            pi = m.stationary()
            zs = np.arange(len(pi)) * L
            mean = float(np.sum(pi * zs))
            st["markov_mean_kbytes"] = mean / 8000
            st["markov_std_kbytes"] = float(np.sqrt(np.sum(pi * (zs - mean) ** 2))) / 8000
            var = m.linear_variance_bits2()
            st["linear_std_kbytes"] = math.sqrt(var) / 8000 if np.isfinite(var) else None
            traj = m.simulate(5000, q0=qe, seed=a.seed)
            st["iterated_std_kbytes"] = float(np.std(traj[500:])) / 8000
            traj = traj[: int(math.ceil(a.model_seconds / m.S_s)) + 1]
            per_S[f"{k:g}"] = st
            if k in (1.0, 2.0) and N == max(a.flows):
                trajs.append((f"N = {N}, S = {k:g} RTT (f'(q_e) = {st['fprime_q_e']:.2f})", np.arange(len(traj)) * m.S_s, traj / L))
            if k == 1.0:
                models_rtt[N] = m
                linear = m.linear_distribution()
                panel = {"N": N, "aqm": aqm, "bins_kbytes": np.arange(len(pi)) * L / 8000, "markov": pi, "linear": linear,
                         "sim": est.queue_hist if est else None}
                tv = {"markov_vs_linear": aq.total_variation(pi, linear) if linear is not None else None}
                if est:
                    tv["sim_vs_markov"] = aq.total_variation(est.queue_hist, pi)
                    tv["sim_vs_linear"] = aq.total_variation(est.queue_hist, linear) if linear is not None else None
                    tv["sim_slot_sampled_vs_markov"] = aq.total_variation(est.queue_slot_hist, pi)
                case["total_variation_S_RTT"] = tv
                hi_kb = max(2 * qe / 8000, (mean + 5 * st["markov_std_kbytes"] * 8000) / 8000)
                if est:
                    hi_kb = max(hi_kb, (est.queue_mean_bits + 4 * est.queue_std_bits) / 8000)
                panel["xmax_kbytes"] = min(hi_kb, B / 8000)
                panels.append(panel)
        case["by_S_factor"] = per_S
        result["cases"][str(N)] = case
        if est is not None and N == max(a.flows):
            ts, qs = _backlog_series(r, 0.1)
            sim_traj = (f"aqmlab simulation, N = {N}, {aqm}: bottleneck backlog every 100 ms", ts, qs / L)
    files = []
    files += fig_mapping(models_rtt, out, "mapping_S_rtt", "Mapping f and equilibria, S = RTT (Jou, Tan & Baras Fig. 18)",
                         {N: f"N = {N}" for N in models_rtt})
    Nmax = max(a.flows)
    cm = result["cases"][str(Nmax)]
    bm = aq.QueueModel.homogeneous(Nmax, C, d, cm["W_bits"], 1.0, sigma_bps=cm["sigma_bps"], B_bits=B, L_bits=L)
    files += fig_mapping({k: bm.with_S(k * cm["rtt_at_q_e_s"]) for k in factors}, out, "mapping_S_factors",
                         f"Mapping f for N = {Nmax} and S = k RTT (Jou, Tan & Baras Fig. 19)", {k: f"S = {k:g} RTT" for k in factors})
    files += fig_distributions(panels, out)
    if trajs:
        files += fig_trajectories(trajs + ([sim_traj] if sim_traj else []), out, "The model (15) with noise (Jou, Tan & Baras Fig. 20) beside the simulation")
    result["figures"] = files
    out.mkdir(parents=True, exist_ok=True)
    (out / "analysis.json").write_text(json.dumps(result, indent=2, default=_jsonable) + "\n")
    md = ared_markdown(result)
    (out / "analysis.md").write_text(md)
    print(md)
    return 0


def _backlog_series(r: Any, every_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The bottleneck backlog (bits) sampled every `every_s` from the per-packet rows."""
    pk = r.raw["packets"]
    li = r.meta["logged_links"].index("bottleneck")
    sel = pk["link"] == li
    t = pk["time_ns"][sel] / 1e9
    b = pk["backlog_bytes"][sel].astype(float) * 8
    ts = np.arange(0.0, r.meta["sim_seconds"], every_s)
    i = np.searchsorted(t, ts, side="right") - 1
    return ts, np.where(i >= 0, b[np.maximum(i, 0)], 0.0)


def _mean_backlog_bits(r: Any, warmup_s: float) -> float:
    pk = r.raw["packets"]
    li = r.meta["logged_links"].index("bottleneck")
    sel = (pk["link"] == li) & (pk["time_ns"] >= warmup_s * 1e9)
    t = np.r_[pk["time_ns"][sel] / 1e9, r.meta["sim_seconds"]]
    b = pk["backlog_bytes"][sel].astype(float) * 8
    dt = np.diff(t)
    return float(np.sum(b * dt) / max(dt.sum(), 1e-12))


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return str(x)


def _f(v: Any, nd: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{nd}g}" if abs(v) >= 1e4 or (v != 0 and abs(v) < 1e-3) else f"{v:.{nd}f}"
    return str(v)


def ared_markdown(res: dict[str, Any]) -> str:
    lines = [f"# Adaptive RED queue model (Jou, Tan & Baras §VI): C = {res['C_bps'] / 1e6:g} Mb/s, d = {res['d_s'] * 1e3:g} ms, B = {res['B_packets']} packets", ""]
    lines += ["| N | W̄ (bits) | sigma (bit/s) | source | q_e (KB) | RTT at q_e (ms) | S bound eq. (10) (ms) |", "|---|---|---|---|---|---|---|"]
    for N, c in res["cases"].items():
        lines.append(f"| {N} | {c['W_bits']:.4g} | {c['sigma_bps']:.4g} | {c['W_sigma_source']} | {c['q_e_kbytes']:.1f} | {c['rtt_at_q_e_s'] * 1e3:.1f} | {c['S_bound_eq10_s'] * 1e3:.1f} |")
    if any("simulation" in c for c in res["cases"].values()):
        lines += ["", "Estimates from the simulation (the one used is in the table above):", "",
                  "| N | W̄ cwnd (bits) | W̄ in flight (bits) | W̄ Little (bits) | sigma per flow (bit/s) | sigma aggregate (bit/s) | drop rate | utilization |", "|---|---|---|---|---|---|---|---|"]
        for N, c in res["cases"].items():
            s = c.get("simulation")
            if s:
                w, sg = s["W_bits_by_estimator"], s["sigma_bps_by_estimator"]
                lines.append(f"| {N} | {_f(w.get('cwnd'))} | {_f(w.get('inflight'))} | {_f(w.get('little'))} | {_f(sg['flow'])} | {_f(sg['aggregate'])} | {_f(s['drop_rate'], 4)} | {_f(s['utilization'])} |")
    lines += ["", "| N | S | f'(q_e) | f'(q_e) >= 0 (Prop. 6.2) | eq. (10) (Prop. 6.1) | verdict | Markov std (KB) | linear std (KB) | iterated model std (KB) |", "|---|---|---|---|---|---|---|---|---|"]
    for N, c in res["cases"].items():
        for k, s in c["by_S_factor"].items():
            lines.append(f"| {N} | {k} RTT | {s['fprime_q_e']:.3f} | {_f(s['prop62_fprime_nonneg'])} | {_f(s['prop61_holds'])} | {s['verdict']} | {s['markov_std_kbytes']:.1f} | {_f(s['linear_std_kbytes'], 1)} | {s['iterated_std_kbytes']:.1f} |")
    lines += ["", "Distributions at S = RTT, total-variation distance (0 = identical, 1 = disjoint):", "",
              "| N | simulated AQM | sim mean / std (KB) | model q_e / Markov std (KB) | TV sim-Markov | TV sim-linear | TV Markov-linear | TV slot-sampled sim-Markov |", "|---|---|---|---|---|---|---|---|"]
    for N, c in res["cases"].items():
        tv = c["total_variation_S_RTT"]
        s = c.get("simulation", {})
        s1 = c["by_S_factor"]["1"]
        sim_ms = f"{s['queue_mean_kbytes']:.1f} / {s['queue_std_kbytes']:.1f}" if s else "–"
        lines.append(f"| {N} | {s.get('aqm', '–')} | {sim_ms} | {c['q_e_kbytes']:.1f} / {s1['markov_std_kbytes']:.1f} | {_f(tv.get('sim_vs_markov'))} | {_f(tv.get('sim_vs_linear'))} | {_f(tv.get('markov_vs_linear'))} | {_f(tv.get('sim_slot_sampled_vs_markov'))} |")
    lines += ["", "Figures: " + ", ".join(f for f in res.get("figures", []) if f.endswith(".png")), ""]
    return "\n".join(lines)


# ---- pie-fluid ---------------------------------------------------------------------------
def _dur_s(v: str) -> float:
    from ..measures import duration_ns as _ns

    return _ns(v) / 1e9


def _rate_bps(v: str) -> float:
    text = v.strip()
    for u, m in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3), ("bps", 1.0)):
        if text.endswith(u):
            return float(text[: -len(u)]) * m
    raise ValueError(f"rate: {v!r}")


def run_pie_fluid(a: argparse.Namespace) -> int:
    import aqmlab

    out = Path(a.out)  # written only once the inputs are valid
    try:
        aqmlab.inputs.writable_dir(out)
    except aqmlab.ScenarioError as e:
        print(f"aqmlab: error: {e}", file=sys.stderr)
        return 2
    try:
        sc = aqmlab.resolve(a.scenario, list(a.set))
    except aqmlab.ScenarioError as e:
        print(f"aqmlab: error: {e}", file=sys.stderr)
        return 2
    bn = sc["bottleneck"]
    aqm = bn["aqm"]
    if aqm.get("kind") != "pie":  # MADPIE's deterministic drops are not in the model
        print(f"aqmlab: error: bottleneck.aqm.kind: the fluid model closes the loop with PIE, got \"{aqm.get('kind')}\"", file=sys.stderr)
        return 2
    N = sum(int(g.get("count", 1)) for g in sc["flows"] if g.get("kind", "bulk") == "bulk")
    rate = _rate_bps(bn["rate"])
    acc = _dur_s(sc["access"]["delay"])
    pie_auto = pf.Pie(target_s=_dur_s(aqm["target"]), tupdate_s=_dur_s(aqm["tupdate"]), alpha=float(aqm["alpha"]), beta=float(aqm["beta"]),
                      auto_scale=True, cap_drop_adjustment=bool(aqm.get("cap_drop_adjustment", True)))
    pie_fixed = pf.Pie(**{**pie_auto.__dict__, "auto_scale": False})
    variants = {"auto-tuned (RFC 8033)": pie_auto, "fixed alpha, beta": pie_fixed}
    sim_variant = "auto-tuned (RFC 8033)" if aqm.get("auto_scale", True) else "fixed alpha, beta"
    net0 = pf.Net.from_rates(N, rate, 0.1)
    res: dict[str, Any] = {"model": "Misra, Gong & Towsley fluid TCP + PIE (Pan et al. HPSR 2013, RFC 8033)", "scenario": sc["name"], "N": N,
                           "rate_bps": rate, "C_pps": net0.C_pps, "pie": {k: v.__dict__ for k, v in variants.items()},
                           "simulated_pie": sim_variant, "rtts": {}}
    sweep_rtts = np.logspace(math.log10(0.01), math.log10(1.0), 120)
    res["sweep"] = {k: pf.margin_sweep(net0, v, sweep_rtts) for k, v in variants.items()}
    res["largest_stable_rtt_s"] = {k: pf.largest_stable_rtt(net0, v) for k, v in variants.items()}
    res["stable_rtt_ranges_s"] = {k: pf.stable_ranges(rows) for k, rows in res["sweep"].items()}
    traj = []
    warm = a.warmup
    for rtt_ms in a.rtt_ms:
        rtt = rtt_ms / 1e3
        delay_s = rtt / 2 - 2 * acc
        row: dict[str, Any] = {"rtt_ms": rtt_ms, "bottleneck_delay_ms": delay_s * 1e3}
        buf_pkts = None
        if bn["buffer"].endswith("bdp"):
            buf_pkts = float(bn["buffer"][:-3]) * rate * rtt / (8 * 1500)
        net = pf.Net.from_rates(N, rate, rtt, buffer_pkts=buf_pkts)
        fl = {}
        for k, v in variants.items():
            m = pf.margins(net, v)
            f = pf.integrate(net, v, a.duration, dt_s=a.dt, W_init=float(sc["flows"][0].get("tcp", {}).get("initial_window", 10)))
            osc = pf.oscillation(f["qdelay_s"], f["t_s"], warm)
            osc["utilization"] = float(np.mean(f["utilization"][f["t_s"] >= warm]))
            fl[k] = {"margins": m, "fluid_qdelay": osc}
            if k == sim_variant:
                fluid_t, fluid_q = f["t_s"], f["qdelay_s"] * 1e3
        row["fluid"] = fl
        sim_t = sim_q = None
        if not a.no_sim:
            r = aqmlab.run(a.scenario, overrides=list(a.set) + [f"bottleneck.delay={delay_s * 1e3:g}ms", f"metrics.warmup={warm:g}s"], seed=a.seed)
            qd = r.summary["bottleneck"]["queue_delay_ms"]
            row["simulation"] = {"queue_delay_ms": qd, "spread_p90_p10_ms": qd["p90"] - qd["p10"], "utilization_mean": r.summary["bottleneck"]["utilization"]["mean"],
                                 "seed": r.meta["seed"], "duration_s": r.meta["sim_seconds"], "warmup_s": r.scenario["metrics"]["warmup"]}
            pk = r.raw["packets"]
            li = r.meta["logged_links"].index("bottleneck")
            s = (pk["link"] == li) & (pk["event"] == 1)
            sim_t, sim_q = pk["time_ns"][s] / 1e9, pk["sojourn_ns"][s] / 1e6
        traj.append((rtt_ms, fluid_t, fluid_q, sim_t, sim_q))
        res["rtts"][str(rtt_ms)] = row
    files = fig_pie_trajectories(traj, out, a.window, sim_variant, res)
    files += fig_margin_sweep(res, out)
    res["figures"] = files
    out.mkdir(parents=True, exist_ok=True)
    (out / "analysis.json").write_text(json.dumps(res, indent=2, default=_jsonable) + "\n")
    md = pie_markdown(res)
    (out / "analysis.md").write_text(md)
    print(md)
    return 0


def fig_pie_trajectories(traj: list, out: Path, window: list[float], variant: str, res: dict[str, Any]) -> list[str]:
    plt = _plt()
    t0, t1 = window
    with _style():
        fig, axes = plt.subplots(len(traj), 1, figsize=(9, 2.6 * len(traj)), sharex=True, squeeze=False)
        for ax, (rtt_ms, ft, fq, st, sq) in zip(axes[:, 0], traj):
            if st is not None:
                sel = (st >= t0) & (st <= t1)
                step = max(1, int(sel.sum()) // 20000)
                ax.scatter(st[sel][::step], sq[sel][::step], s=1, color="#1f77b4", alpha=0.35, rasterized=True, label="aqmlab: per-packet sojourn")
            sel = (ft >= t0) & (ft <= t1)
            ax.plot(ft[sel], fq[sel], color="black", lw=1.1, label=f"fluid model, PIE {variant}")
            pm = res["rtts"][str(rtt_ms)]["fluid"][variant]["margins"]["phase_margin_deg"]
            ax.set_title(f"base RTT {rtt_ms:g} ms: linearized phase margin {pm:.0f}°" if pm is not None else f"base RTT {rtt_ms:g} ms")
            ax.set_ylabel("queueing delay (ms)")
            ax.set_ylim(bottom=0)
            ax.legend(loc="upper right", markerscale=6)
        axes[-1, 0].set_xlabel("time (s)")
        axes[-1, 0].set_xlim(t0, t1)
        fig.suptitle(f"{res['scenario']}: {res['N']} flows, {res['rate_bps'] / 1e6:g} Mb/s — fluid model beside the packet simulation", fontsize=10)
        fig.tight_layout()
        return _save(fig, out, "pie_fluid_trajectories")


def fig_margin_sweep(res: dict[str, Any], out: Path) -> list[str]:
    plt = _plt()
    with _style():
        fig, ax = plt.subplots()
        for (k, rows), c in zip(res["sweep"].items(), ("#1f77b4", "#d62728")):
            r = np.array([x["rtt_s"] for x in rows]) * 1e3
            pm = np.array([np.nan if x.get("phase_margin_deg") is None else x["phase_margin_deg"] for x in rows])
            ls = res["largest_stable_rtt_s"][k]
            lab = f"PIE {k}" + (f" (stable up to {ls * 1e3:.0f} ms)" if ls else "")
            ax.semilogx(r, pm, color=c, lw=1.6, label=lab)
        for rtt_ms, row in res["rtts"].items():
            if "simulation" in row:
                ax.axvline(float(rtt_ms), color="grey", lw=0.6, ls=":")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("base RTT (ms)")
        ax.set_ylabel("phase margin of the linearized loop (deg)")
        ax.set_ylim(max(-200, ax.get_ylim()[0]), 100)
        ax.legend(loc="lower left")
        pie = next(iter(res["pie"].values()))
        ax.set_title(f"PIE (target {pie['target_s'] * 1e3:g} ms, T {pie['tupdate_s'] * 1e3:g} ms), {res['N']} flows, {res['rate_bps'] / 1e6:g} Mb/s: stability vs RTT")
        return _save(fig, out, "pie_stability_margin")


def pie_markdown(res: dict[str, Any]) -> str:
    lines = [f"# PIE fluid model vs packet simulation: {res['scenario']}, {res['N']} flows, {res['rate_bps'] / 1e6:g} Mb/s", ""]
    for k, v in res["largest_stable_rtt_s"].items():
        rng = ", ".join(f"{a * 1e3:.0f}-{b * 1e3:.0f} ms" for a, b in res["stable_rtt_ranges_s"][k])
        lines.append(f"- PIE {k}: linearized loop stable up to a base RTT of {'> 1000' if v is None else f'{v * 1e3:.0f}'} ms (stable on the 10-1000 ms sweep at: {rng or 'none'})")
    lines += ["", "| RTT (ms) | PIE | p0 | alpha, beta at p0 | phase margin (deg) | gain margin (dB) | fluid p10 / p50 / p90 (ms) | fluid p90-p10 (ms) | fluid utilization | sim p10 / p50 / p90 (ms) | sim p90-p10 (ms) | sim utilization |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for rtt, row in res["rtts"].items():
        s = row.get("simulation")
        for k, f in row["fluid"].items():
            m, o = f["margins"], f["fluid_qdelay"]
            simcols = "– | – | –"
            if s and k == res["simulated_pie"]:
                q = s["queue_delay_ms"]
                simcols = f"{q['p10']:.1f} / {q['p50']:.1f} / {q['p90']:.1f} | {s['spread_p90_p10_ms']:.1f} | {s['utilization_mean']:.3f}"
            lines.append(f"| {rtt} | {k} | {m['p0']:.4f} | {m['alpha_eff']:.4g}, {m['beta_eff']:.4g} | {_f(m.get('phase_margin_deg'), 1)} | {_f(m.get('gain_margin_db'), 1)} | "
                         f"{o['p10_ms']:.1f} / {o['p50_ms']:.1f} / {o['p90_ms']:.1f} | {o['spread_p90_p10_ms']:.1f} | {o['utilization']:.3f} | {simcols} |")
    lines += ["", "Figures: " + ", ".join(f for f in res.get("figures", []) if f.endswith(".png")), ""]
    return "\n".join(lines)
