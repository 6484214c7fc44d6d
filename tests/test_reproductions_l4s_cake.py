"""The L4S and CAKE reproductions (l4s-coexistence, cake-isolation), the scalable
senders through the CLI, and the ECN codepoint counts of summary.json."""

import json

import pytest

from aqmlab import comparison
from aqmlab import reproductions as rp
from aqmlab.reproductions import cake_isolation


class FakeRun:
    def __init__(self, seed, params, summary):
        self.seed, self.params, self.summary = seed, params, summary


def test_the_share_of_the_single_flow_host_by_hand():
    def run(seed, one, eight):
        return FakeRun(seed, {"Mode": "m", "Hosts": "h"}, {"classes": {"one": {"goodput_mbps": one}, "eight": {"goodput_mbps": eight}}})

    ctx = rp.Context([comparison.Series([run(1, 5.0, 5.0), run(2, 1.0, 9.0)])])
    v, sd, n = cake_isolation.Share({"Mode": "m", "Hosts": "h"}).value(ctx)
    # seed 1: 5/10, seed 2: 1/10
    assert (v, n) == (pytest.approx(0.3), 2) and sd == pytest.approx(((0.5 - 0.3) ** 2 + (0.1 - 0.3) ** 2) ** 0.5)
    assert cake_isolation.Share({"Mode": "other"}).value(ctx) is None


def test_the_grids_cross_what_they_say():
    g = rp.grid_for(rp.get("l4s-coexistence"), quick=False)
    assert g.size() == 2 * 4 * 2 * 3  # senders x RTTs x flow counts x seeds
    runs = g.plan().runs
    dctcp = next(r for r in runs if r.params["Sender"] == "DCTCP")
    assert dctcp.scenario["bottleneck"]["aqm"]["any_ect"] is True and dctcp.scenario["flows"][1]["tcp"]["ecn"] is False
    rtt80 = next(r for r in runs if r.params["RTT"] == "80 ms")
    assert rtt80.scenario["bottleneck"]["delay"] == "39ms"
    g = rp.grid_for(rp.get("cake-isolation"), quick=False)
    assert g.size() == len(cake_isolation.MODES) * 2 * 3


@pytest.mark.parametrize("name", ["l4s-coexistence", "cake-isolation"])
def test_reproduce_quick_runs_to_the_end(cli, tmp_path, name):
    code, out, err = cli("reproduce", name, "--quick", "--out", "r")
    assert code == 0, err
    claims = json.loads((tmp_path / "r" / "claims.json").read_text())
    assert claims["reproduction"] == name and claims["quick"] and claims["failed"] == 0
    assert len(claims["claims"]) == len(rp.get(name).claims)
    measured = {c["claim"]: c for c in claims["claims"] if c["aqmlab"] is not None}
    assert len(measured) >= len(claims["claims"]) // 3
    assert any((tmp_path / "r" / "figures").glob("*.png"))
    if name == "l4s-coexistence":
        c = rp.get(name).claims
        l99, c50, util, ratio = (measured[c[i].text]["aqmlab"] for i in range(4))
        # the bounds for 1 Prague + 1 CUBIC at 40 Mb/s, RTT 20 ms
        assert l99 <= 3.0 and abs(c50 - 15.0) <= 3.0 and util >= 0.95 and 0.5 <= ratio <= 3.0, (l99, c50, util, ratio)
    else:
        c = rp.get(name).claims
        triple, flows = measured[c[0].text]["aqmlab"], measured[c[1].text]["aqmlab"]
        assert abs(triple - 0.5) <= 0.1 and abs(flows - 1 / 9) <= 0.05, (triple, flows)


def test_a_prague_flow_reports_its_codepoints_and_dualpi2_its_queues(cli, tmp_path):
    code, out, err = cli("run", "l4s-coexistence", "--out", "o", "--no-report", "--set", "duration=20s", "--set", "metrics.warmup=5s")
    assert code == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    sc, cl = s["classes"]["scalable"]["ecn"], s["classes"]["classic"]["ecn"]
    # Prague sends ECT(1) only, CUBIC with ECN ECT(0) only (retransmissions Not-ECT)
    assert sc["sent"]["ect1"] > 10_000 and sc["sent"]["ect0"] == sc["sent"]["not_ect"] == 0
    assert cl["sent"]["ect0"] > 1_000 and cl["sent"]["ect1"] == 0
    # the marks that reached the receiver (some marked packets are still in flight at the end)
    assert 0 < sc["received"]["ce"] <= s["classes"]["scalable"]["marks"]
    b = s["bottleneck"]
    # what reached the bottleneck ECT(1) left it ECT(1) or CE
    assert b["ecn"]["arrived"]["ce"] == 0
    assert b["ecn"]["departed"]["ect1"] + b["ecn"]["departed"]["ce"] + b["ecn"]["departed"]["ect0"] + b["ecn"]["departed"]["not_ect"] == b["packets"]["dequeued"]
    q = b["queues"]
    assert q["l"]["coupled_marks"] > 0 and q["l"]["sojourn_mean_ms"] < 1.0 < q["c"]["sojourn_mean_ms"]
    assert 0.0 < q["all"]["prob_base"] < 1.0


@pytest.mark.parametrize(
    "sets, field",
    [
        (["bottleneck.aqm={kind=\"droptail\"}"], "flows[0].tcp.cc"),
        (["flows.0.tcp.ecn=false"], "flows[0].tcp.ecn"),
        (["flows.0.tcp.accecn=false"], "flows[0].tcp.accecn"),
        (["bottleneck.aqm={kind=\"dualpi2\", coupling_factor=0}"], "bottleneck.aqm.coupling_factor"),
        (["bottleneck.aqm={kind=\"cake\", flow_mode=\"per-host\"}"], "bottleneck.aqm.flow_mode"),
    ],
)
def test_bad_l4s_input_is_a_one_line_error_naming_the_field(cli, tmp_path, sets, field):
    args = ["run", "l4s-coexistence", "--out", "o", "--no-report"]
    for s in sets:
        args += ["--set", s]
    code, out, err = cli(*args)
    assert code != 0
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and field in lines[0], err
    assert not (tmp_path / "o").exists()
