"""CAKE's flow and host isolation: Høiland-Jørgensen, Täht & Morton, "Piece of CAKE: A
Comprehensive Queue Management Solution for Home Gateways" (IEEE LANMAN 2018), §3.3
(flow isolation and host fairness) and its evaluation of the isolation modes.

CAKE hashes each packet into a flow queue and, in its host-aware modes, also into
its source and destination hosts; the deficit round robin then gives each *host* an
equal share first and splits a host's share between its flows. `triple-isolate`
(the default) does that for both ends at once. So a host that opens eight flows does
not take eight times the share of a host that opens one, where per-flow fairness
(`flows`, FQ-CoDel's) gives the single flow 1/9.

The grid: the flow mode, and where the two hosts send: to hosts of their own (two
host pairs) or to one server (the receiving host shared through path.receiver_host).
10 Mb/s, base RTT 24 ms, CUBIC, 40 s, 3 seeds, the first 5 s left out. The measure
is the single-flow host's share of the goodput.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from . import Axis, Claim, Figure, Measure, Quick, Reproduction, _where, approx

MODES = ["triple-isolate", "flows", "srchost", "dsthost", "hosts", "dual-srchost", "dual-dsthost", "flowblind"]
MODE = Axis("Mode", {m: {"bottleneck.aqm.flow_mode": m} for m in MODES})
HOSTS = Axis(
    "Hosts",
    {
        "own hosts": {},
        "one server": {"flows.0.path.receiver_host": "server", "flows.1.path.receiver_host": "server"},
    },
    note={"one server": "both hosts upload to one server: the destination is shared"},
)


def at(mode: str, hosts: str = "own hosts") -> dict[str, str]:
    return {"Mode": mode, "Hosts": hosts}


@dataclass
class Share(Measure):
    """The single-flow host's share of the goodput (class `one` over `one` + `eight`),
    after the warm-up, mean ± sd over the seeds of one series."""

    where: Mapping[str, Any]

    def value(self, ctx):
        s = ctx.series(self.where)
        if s is None:
            return None
        vals = []
        for r in s.runs:
            c = r.summary.get("classes", {})
            a, b = (c.get(k, {}).get("goodput_mbps") for k in ("one", "eight"))
            if a is not None and b is not None and a + b > 0:
                vals.append(a / (a + b))
        if not vals:
            return None
        return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else None), len(vals)

    def describe(self):
        return f"mean over seeds of the single-flow host's share of the goodput ({_where(self.where)})"


HALF, NINTH = 0.5, 0.111  # 1/2 and 1/9

EXPERIMENT = Reproduction(
    name="cake-isolation",
    title="Høiland-Jørgensen, Täht & Morton, Piece of CAKE (LANMAN 2018): host isolation",
    description=(
        "A host with one CUBIC bulk flow and a host with eight share a 10 Mb/s CAKE bottleneck (base RTT 24 ms, 40 s, "
        "the first 5 s left out), in each of CAKE's flow-isolation modes, each host sending to a host of its own or both "
        "to one server. The single-flow host's share of the goodput: 1/2 under host fairness, 1/9 under per-flow fairness."
    ),
    scenario="cake-isolation",
    axes=[MODE, HOSTS],
    seeds=3,
    quick=Quick(seeds=1, set={"duration": "20s"}, levels={"Mode": ["triple-isolate", "flows", "dual-srchost"]}),
    label="{Mode}, {Hosts}",
    figures=[
        Figure("goodput", "goodput", "Per-flow goodput of the single-flow host and of the eight-flow host", facet="Hosts"),
        Figure("class_delay", "class_delay_cdf", "Queueing delay of each host's packets"),
    ],
    claims=[
        Claim("§3.3", "triple-isolate (the default), two host pairs: the hosts share the link half and half", "1/2", Share(at("triple-isolate")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "flows (per-flow fairness): the single flow gets 1/9", "1/9", Share(at("flows")), approx(NINTH, 0.03), digits=3),
        Claim("§3.3", "srchost: one queue per sending host (its flows share it), served in turn: half and half", "1/2", Share(at("srchost")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "dual-srchost: fairness between sending hosts first, then between a host's flows", "1/2", Share(at("dual-srchost")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "dsthost, two host pairs: one queue per destination host, and the destinations differ: half and half", "1/2", Share(at("dsthost")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "hosts: one queue per source-destination pair, two pairs: half and half", "1/2", Share(at("hosts")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "flowblind: one queue for all, no isolation (the single flow gets about its per-flow share of a FIFO)", "≈ 1/9",
              Share(at("flowblind")), approx(NINTH, 0.05), digits=3),
        Claim("§3.3", "dual-srchost, one server: the senders still share half and half", "1/2", Share(at("dual-srchost", "one server")), approx(HALF, 0.05), digits=3),
        Claim("§3.3", "dsthost, one server: one destination, so one queue for all nine flows, as flowblind", "≈ 1/9", Share(at("dsthost", "one server")), approx(NINTH, 0.05), digits=3),
        Claim("§3.3", "triple-isolate, one server: a flow's share follows the busier of its two hosts (the server's nine flows), so per-flow shares",
              "1/9", Share(at("triple-isolate", "one server")), approx(NINTH, 0.03), digits=3,
              note="sch_cake divides by the larger bulk-flow count of a flow's source and destination hosts"),
    ],
    seeds_note="3 seeds per case (the quick variant: 1 seed, 20 s, triple-isolate, flows and dual-srchost).",
    notes=[
        "Each flow group is one host pair in the dumbbell (docs/scenario.md, hosts); path.receiver_host = \"server\" gives both groups one receiving host.",
        "The paper evaluates the modes on a testbed; its statements of §3.3 are the design (host fairness first, then flow fairness), which the arithmetic 1/2 and 1/9 make checkable.",
    ],
)
