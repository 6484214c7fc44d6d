"""Reproductions of seeds 002-004 (aqm-kids, palermo, pvq) and what they added to the
framework: grid levels that name their base scenario, axes crossed only with some
levels, per-run measures, per-class packet figures, late-transfer rates."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from aqmlab import comparison, grid, measures
from aqmlab import reproductions as rp

# -- the grid: a level's own base scenario, a dimension crossed with some levels ----------


def test_a_level_names_its_base_scenario_and_a_gated_axis_crosses_only_its_levels():
    g = grid.Grid(scenario="palermo-fifo-drs", seeds=[1])
    g.named("Test", {"fifo": {}, "codel": {"scenario": "palermo-codel-drs"}, "late": {"scenario": "palermo-late-arrival"}})
    g.named("Size", {"3 kB": {"flows.1.size": "3KB"}, "30 kB": {"flows.1.size": "30KB"}}, when={"Test": ["late"]})
    plan = g.plan()
    # by hand: fifo × (–), codel × (–), late × (3 kB, 30 kB) = 4 runs, not 3 × 2
    assert g.size() == len(plan) == 4
    got = [(r.params["Test"], r.params["Size"], r.scenario["name"]) for r in plan.runs]
    assert got == [
        ("fifo", "–", "palermo-fifo-drs"),
        ("codel", "–", "palermo-codel-drs"),
        ("late", "3 kB", "palermo-late-arrival"),
        ("late", "30 kB", "palermo-late-arrival"),
    ]
    assert [r.scenario["flows"][1]["size"] for r in plan.runs[2:]] == ["3KB", "30KB"]
    assert plan.runs[1].scenario["bottleneck"]["aqm"]["kind"] == "codel"
    desc = g.describe()["dimensions"][1]
    assert desc["when"] == {"Test": ["late"]}


def test_quick_keeps_only_the_named_levels():
    e = rp.get("palermo")
    g = rp.grid_for(e, quick=True)
    tests = {r.params["Test"] for r in g.plan().runs}
    assert tests == set(e.quick.levels["Test"])
    assert {r.params["Size"] for r in g.plan().runs} == {"–", "30 kB"}
    full = rp.grid_for(e, quick=False)
    # 4 trace tests + 4 late-arrival tests × 6 sizes
    assert full.size() == 4 + 4 * 6


# -- measures, by hand ----------------------------------------------------------------------


class FakeRun:
    def __init__(self, seed, params, value):
        self.seed, self.params, self.value = seed, params, value


def test_per_run_and_seed_ratio_pair_runs_by_seed():
    a = comparison.Series([FakeRun(1, {"X": "a"}, 2.0), FakeRun(2, {"X": "a"}, 6.0)])
    b = comparison.Series([FakeRun(2, {"X": "b"}, 3.0), FakeRun(1, {"X": "b"}, 4.0), FakeRun(3, {"X": "b"}, 9.0)])
    ctx = rp.Context([a, b])
    pa = rp.PerRun(lambda r: r.value, {"X": "a"}, "v")
    pb = rp.PerRun(lambda r: r.value, {"X": "b"}, "v")
    assert pa.value(ctx)[0] == 4.0 and pa.value(ctx)[2] == 2
    # seed 1: 2/4 = 0.5, seed 2: 6/3 = 2 (seed 3 has no partner): mean 1.25
    v, sd, n = rp.SeedRatio(pa, pb).value(ctx)
    assert (v, n) == (1.25, 2) and sd == pytest.approx(((0.5 - 1.25) ** 2 + (2 - 1.25) ** 2) ** 0.5)
    # a ratio of means: 4 / ((3 + 4 + 9) / 3)
    assert (pa / pb).value(ctx)[0] == pytest.approx(4 / (16 / 3))


def _fake_run(tmp_path, packets, sim_seconds=10.0, warmup="2s", transfers=None, flows=None):
    d = tmp_path / "run"
    d.mkdir()
    (d / "summary.json").write_text(json.dumps({"seed": 1, "sim_seconds": sim_seconds, "bottleneck": {"aqm": "x"}, "classes": {}}))
    (d / "scenario.json").write_text(json.dumps({"name": "x", "seed": 1, "metrics": {"warmup": warmup}}))
    pd.DataFrame(packets).to_parquet(d / "packets.parquet")
    if transfers is not None:
        pd.DataFrame(transfers).to_parquet(d / "transfers.parquet")
        pd.DataFrame(flows).to_parquet(d / "flows.parquet")
    return comparison.Run(d)


def test_class_packets_loss_delay_and_rate_by_hand(tmp_path):
    rows = []

    def pkt(t, cls, uid, ev, soj=None, size=1000):
        rows.append({"time_s": t, "link": "bottleneck", "class": cls, "uid": uid, "size_bytes": size, "event": ev, "sojourn_ms": soj})

    pkt(1.0, "web", 0, "enqueue")  # before the 2 s warm-up: left out
    pkt(1.5, "web", 0, "dequeue", 500.0)
    for uid, t in ((1, 3.0), (2, 4.0), (3, 5.0)):
        pkt(t, "web", uid, "enqueue")
        pkt(t + 0.1, "web", uid, "dequeue", 100.0 * uid)
    pkt(6.0, "web", 4, "drop")  # dropped on arrival
    pkt(7.0, "cbr", 5, "enqueue", size=500)
    pkt(7.2, "cbr", 5, "dequeue", 40.0, size=500)
    c = measures.class_packets(_fake_run(tmp_path, rows))
    # web: 4 arrivals after 2 s, 1 drop -> 25 %; delay (100 + 200 + 300) / 3 ms; 3000 B over 8 s
    assert c["web"]["loss_pct"] == pytest.approx(25.0)
    assert c["web"]["delay_s"] == pytest.approx(0.2)
    assert c["web"]["rate_kBps"] == pytest.approx(3000 / 8 / 1e3)
    assert c["cbr"] == {"loss_pct": 0.0, "delay_s": pytest.approx(0.04), "rate_kBps": pytest.approx(500 / 8 / 1e3)}


def test_transfer_rates_finished_and_unfinished_by_hand(tmp_path):
    r = _fake_run(
        tmp_path,
        [{"time_s": 0.0, "link": "bottleneck", "class": "late", "uid": 0, "size_bytes": 1, "event": "enqueue", "sojourn_ms": None}],
        sim_seconds=60.0,
        transfers={"flow": [1, 2, 3], "class": ["late", "late", "web"], "size_bytes": [30_000, 3_000_000, 5_000], "request_s": [20.0, 20.0, 1.0], "download_time_s": [2.4, None, 1.0]},
        flows={"flow": [1, 2, 3], "kind": ["transfer", "transfer", "web"], "bytes_delivered": [30_000, 1_000_000, 5_000]},
    )
    got = measures.transfer_rates(r)
    # 30 kB in 2.4 s = 0.1 Mbps; 1 MB delivered in the 40 s since the request = 0.2 Mbps; web flows are not single transfers
    assert got == [(30_000.0, pytest.approx(0.1), True), (3_000_000.0, pytest.approx(0.2), False)]
    assert measures.transfer_rates(r, ["web"]) == []


# -- the quick variants run to the end ------------------------------------------------------


@pytest.mark.parametrize("name", ["aqm-kids", "palermo", "pvq"])
def test_reproduce_quick_runs_to_the_end(cli, tmp_path, name):
    code, out, err = cli("reproduce", name, "--quick", "--out", "r")
    assert code == 0, err
    d = tmp_path / "r"
    claims = json.loads((d / "claims.json").read_text())
    assert claims["reproduction"] == name and claims["quick"] and claims["failed"] == 0
    assert len(claims["claims"]) == len(rp.get(name).claims)
    measured = [c for c in claims["claims"] if c["aqmlab"] is not None]
    assert len(measured) >= len(claims["claims"]) // 3
    assert all(c["verdict"] in ("agrees", "close", "differs") for c in measured)
    figs = {p.stem for p in (d / "figures").glob("*.png")}
    assert figs, "no figure drawn"
    for f in figs:
        assert (d / "figures" / f"{f}.png").stat().st_size > 2_000
    idx = pq.read_table(d / "index.parquet").to_pandas()
    assert (idx.status == "ok").all()
    by = {c["claim"]: c for c in claims["claims"]}
    if name == "aqm-kids":
        # the ECN ratio with 64 flows: several times more marks than drops (CoDel), as in the table
        assert by["CoDel, 64 flows: CE marks with ECN / drops without (per arriving packet, after 10 s)"]["aqmlab"] > 2
        assert {"fq_codel_vs_codel", "ecn_64_flows_delay"} <= figs
    elif name == "palermo":
        # Fig. 2: the FIFO's RTT grows towards a second; CoDel keeps it near the 70 ms base
        assert by["FIFO, DRS: the RTT grows to about 1 s (median smoothed RTT of the late connection, 20-60 s)"]["aqmlab"] > 700
        assert by["CoDel, DRS: the RTT stays around 200 ms (median smoothed RTT of the late connection, 20-60 s)"]["aqmlab"] < 150
        assert {"fig2_traces", "fig4_traces", "fig5_late_rate"} <= figs
    else:
        # Table III: DropTail's delay is the longest, RED+Tail protects the CBR packets
        assert by["DropTail:FTP mean queueing delay"]["aqmlab"] > by["Adaptive RED:FTP mean queueing delay"]["aqmlab"]
        assert by["RED+Tail:CBR packet loss"]["aqmlab"] < by["Adaptive RED:CBR packet loss"]["aqmlab"]
        assert {"table3_class_metrics", "fig9_download_time", "fig10_queue_length", "fig11_drop_prob"} <= figs


def test_time_based_moving_average_by_hand():
    import math

    import numpy as np

    w = 1 - math.exp(-1)  # samples 2 s apart, time constant 2 s
    got = measures.ewma(np.array([0.0, 2.0, 4.0]), np.array([0.0, 10.0, 10.0]), 2.0)
    assert got.tolist() == pytest.approx([0.0, 10 * w, 10 * w + w * (10 - 10 * w)])
