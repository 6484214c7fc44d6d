"""The `aqmlab analyze` sub-commands' arguments, apart from the models so that building
the command line imports neither numpy nor scipy."""

from __future__ import annotations

import argparse
from typing import Any, Callable

JTB_RATE_BPS = 6e6  # Jou, Tan & Baras §V-VI, Figs. 10-11 and 17-21: C = 6 Mb/s
JTB_RTT_S = 0.064  # d_k = 64 ms round-trip propagation
JTB_BUFFER_PKTS = 600  # §VI does not state B; Figs. 18-20 span 0-600 packets


def _run(name: str) -> Callable[[Any], int]:
    def fn(a: Any) -> int:
        from . import cli

        return getattr(cli, name)(a)

    return fn


# ---- the sub-parser ------------------------------------------------------------------------
def _seed_arg(text: str) -> int:
    """A seed, 0 to 2^64 - 1 (a one-line usage error otherwise)."""
    from .. import inputs

    try:
        return inputs.seed_text(text, "")
    except inputs.InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(": ")) from None


def add_parser(sub: Any) -> None:
    an = sub.add_parser("analyze", help="models beside the simulation: the ARED queue model (Jou, Tan & Baras §VI), the PIE fluid model")
    asub = an.add_subparsers(dest="analysis", required=True)

    q = asub.add_parser("ared-queue", help="Jou, Tan & Baras §VI: the map f, equilibrium, stability, Markov-chain and linear distributions vs aqmlab's")
    q.add_argument("scenario", nargs="?", default=None, help="a scenario to simulate instead of the built-in §VI one (flows.0.count is set to each N; C and d are taken from it)")
    q.add_argument("--flows", "-n", type=int, nargs="+", default=[20, 40], help="numbers of persistent TCP flows (default: 20 40, as §VI)")
    q.add_argument("--rate-mbps", type=float, default=JTB_RATE_BPS / 1e6, help="link rate C in Mb/s (default 6)")
    q.add_argument("--rtt-ms", type=float, default=JTB_RTT_S * 1e3, help="round-trip propagation delay d in ms (default 64)")
    q.add_argument("--buffer-pkts", type=int, default=JTB_BUFFER_PKTS, help="buffer B in 1500-B packets (default 600)")
    q.add_argument("--s-factors", type=float, nargs="+", default=[0.5, 1.0, 2.0], help="update intervals S as multiples of the RTT at q_e (default 0.5 1 2)")
    q.add_argument("--W", type=float, default=None, help="mean window W̄ in bits (default: estimated from the simulation; with --no-sim the paper's 6.02e4)")
    q.add_argument("--sigma", type=float, default=None, help="flow-rate deviation sigma in bit/s (default: estimated; with --no-sim the paper's)")
    q.add_argument("--window", choices=["cwnd", "inflight", "little"], default="cwnd", help="how W̄ is estimated from the run (default cwnd, as §VI)")
    q.add_argument("--sigma-estimator", choices=["flow", "aggregate"], default="flow", help="sigma from each flow's rate deviation (default, as §VI) or from the aggregate's")
    q.add_argument("--aqm", default="auto", help="AQM kind of the simulation (default: ared_sliding, Adaptive RED with sliding thresholds, if this build has it, else pie)")
    q.add_argument("--duration", type=float, default=300.0, help="simulated seconds (default 300)")
    q.add_argument("--warmup", type=float, default=50.0, help="seconds left out of the estimates (default 50)")
    q.add_argument("--model-seconds", type=float, default=500.0, help="time span of the model trajectories in the figure (default 500 s, as Fig. 20)")
    q.add_argument("--seed", type=_seed_arg, default=1, help="the simulation's seed (default 1)")
    q.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a field of the simulated scenario (repeatable)")
    q.add_argument("--no-sim", action="store_true", help="model only, with --W/--sigma or the paper's values")
    q.add_argument("--out", default="analysis/ared-queue", help="output folder for figures, analysis.json, analysis.md (default analysis/ared-queue)")
    q.set_defaults(fn=_run("run_ared_queue"))

    p = asub.add_parser("pie-fluid", help="fluid TCP (Misra, Gong & Towsley) + PIE: trajectories vs aqmlab's, stability margin vs RTT")
    p.add_argument("scenario", nargs="?", default="madpie-proof", help="a PIE scenario (default madpie-proof: 10 flows, 10 Mb/s, target 20 ms, T_update 30 ms)")
    p.add_argument("--rtt-ms", type=float, nargs="+", default=[100.0, 300.0, 500.0], help="base RTTs to integrate and simulate (default 100 300 500)")
    p.add_argument("--duration", type=float, default=300.0, help="fluid model seconds (default 300)")
    p.add_argument("--dt", type=float, default=0.001, help="integration step in s (default 1 ms)")
    p.add_argument("--warmup", type=float, default=50.0, help="fluid seconds left out of its percentiles (default 50)")
    p.add_argument("--window", type=float, nargs=2, default=[100.0, 160.0], metavar=("FROM", "TO"), help="time window of the trajectory figure (s)")
    p.add_argument("--seed", type=_seed_arg, default=None, help="the simulations' seed (default: the scenario's)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field (repeatable)")
    p.add_argument("--no-sim", action="store_true", help="model only")
    p.add_argument("--out", default="analysis/pie-fluid", help="output folder for figures, analysis.json, analysis.md (default analysis/pie-fluid)")
    p.set_defaults(fn=_run("run_pie_fluid"))
