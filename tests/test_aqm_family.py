"""End-to-end checks of the AQM family (RED, Adaptive RED, MADPIE, CoDel, FQ-CoDel,
RED+Tail, ECN) against the claims of the source documents. Each 300 s run takes well
under a second in a release build."""

import subprocess
import sys

import pytest

import aqmlab

KINDS = [k["kind"] for k in aqmlab.aqms()]
RTT = {100: "48ms", 500: "248ms"}


def summary(scenario="madpie-proof", seed=1, **o):
    return aqmlab.run(scenario, seed=seed, overrides=o).summary


def test_the_catalog_lists_the_whole_family():
    assert set(KINDS) >= {"droptail", "pie", "madpie", "red", "ared", "ared_sliding", "codel", "fq_codel", "red_tail"}
    for k in aqmlab.aqms():
        assert k["source"] and k["title"]
        for p in k["params"]:
            assert p["doc"], (k["kind"], p["name"])


def test_aqmlab_list_shows_every_kind():
    p = subprocess.run([sys.executable, "-m", "aqmlab.cli", "list", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import json

    kinds = {k["kind"] for k in json.loads(p.stdout)["aqms"]}
    assert kinds == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_aqm_runs_the_madpie_scenario_and_accounts_for_every_packet(kind):
    # conservation is checked by the run itself (a violation raises SimulationError)
    s = summary(**{"bottleneck.aqm.kind": kind, "bottleneck.delay": "48ms", "duration": "60s"})
    b = s["bottleneck"]
    assert b["aqm"] == kind
    assert b["utilization"]["mean"] > 0.85, b["utilization"]
    p = b["packets"]
    refused = p["arrived"] - p["enqueued"]
    assert 0 <= refused <= p["dropped"]
    # what was accepted left, was dropped from inside, or is still queued
    assert p["dequeued"] + (p["dropped"] - refused) <= p["enqueued"]
    assert p["enqueued"] - p["dequeued"] - (p["dropped"] - refused) < 1000
    if kind == "droptail":
        assert b["drops"]["random"] == 0 and b["drops"]["deterministic"] == 0
    else:
        # every AQM signals congestion by its own decision, not only by overflow
        assert b["drops"]["random"] + b["drops"]["deterministic"] > 100, b["drops"]
    # same seed, same drops
    again = summary(**{"bottleneck.aqm.kind": kind, "bottleneck.delay": "48ms", "duration": "60s"})["bottleneck"]
    assert again["drops"] == b["drops"] and again["queue_delay_ms"] == b["queue_delay_ms"]


# --- Kuhn & Ros, MADPIE §III ---------------------------------------------------


@pytest.fixture(scope="module")
def proof():
    """PIE and MADPIE at both RTTs, three seeds, with and without a 20 s warm-up."""
    out = {}
    for rtt, delay in RTT.items():
        for name in ("madpie-proof", "madpie-proof-madpie"):
            for seed in (1, 2, 3):
                out[(rtt, name, seed)] = summary(name, seed, **{"bottleneck.delay": delay})
                out[(rtt, name, seed, "warm")] = summary(name, seed, **{"bottleneck.delay": delay, "metrics.warmup": "20s"})
    return out


def test_madpie_at_500ms_cuts_the_delay_tail_without_losing_utilization(proof):
    for seed in (1, 2, 3):
        pie = proof[(500, "madpie-proof", seed)]["bottleneck"]
        mad = proof[(500, "madpie-proof-madpie", seed)]["bottleneck"]
        # §III: "90 % of the samples show a queuing delay lower than 30 ms (that is
        # tau_DD) with MADPIE as opposed to 50 ms with PIE"
        assert mad["queue_delay_ms"]["p90"] < 0.7 * pie["queue_delay_ms"]["p90"], (mad["queue_delay_ms"], pie["queue_delay_ms"])
        assert mad["queue_delay_ms"]["p90"] < 45
        # "the maximum queuing delay is reduced by about 60 ms" (after the start-up)
        wp = proof[(500, "madpie-proof", seed, "warm")]["bottleneck"]["queue_delay_ms"]["max"]
        wm = proof[(500, "madpie-proof-madpie", seed, "warm")]["bottleneck"]["queue_delay_ms"]["max"]
        assert wm < wp - 30, (wm, wp)
        assert mad["queue_delay_ms"]["max"] < pie["queue_delay_ms"]["max"]
        # "deterministic part of MADPIE is responsible for around 70 % of the drops"
        assert 0.6 < mad["drop_shares"]["deterministic"] < 0.9, mad["drop_shares"]
        assert pie["drops"]["deterministic"] == 0
        # "this latency reduction does not induce a lower bottleneck utilization"
        assert mad["utilization"]["mean"] >= pie["utilization"]["mean"] - 0.005


def test_madpie_at_100ms_is_close_to_pie(proof):
    for seed in (1, 2, 3):
        pie = proof[(100, "madpie-proof", seed)]["bottleneck"]
        mad = proof[(100, "madpie-proof-madpie", seed)]["bottleneck"]
        assert abs(mad["utilization"]["mean"] - pie["utilization"]["mean"]) < 0.005
        assert abs(mad["queue_delay_ms"]["p50"] - pie["queue_delay_ms"]["p50"]) < 5
        # the deterministic drops trim the upper tail only
        assert mad["queue_delay_ms"]["p99"] <= pie["queue_delay_ms"]["p99"]
        # random drops remain the majority at 100 ms (the paper: more than 80 %;
        # here about 60 %, see docs/aqm/results.md)
        assert mad["drops"]["random"] > mad["drops"]["deterministic"]


def test_deterministic_drops_happen_above_tau_dd():
    r = aqmlab.run("madpie-proof-madpie", seed=1)
    pk = r.packets.to_pandas()
    dd = pk[(pk.event == "drop") & (pk.cause == "deterministic")]
    assert len(dd) > 1000
    # PIE's estimate was above tau_DD = 30 ms when the drop was armed; by the drop it
    # has moved little (Fig. 4: 5th percentile about 30 ms)
    assert dd.aqm_delay_ms.quantile(0.05) > 25
    # at most one per 30 ms update interval (updates at multiples of 30 ms)
    raw = r.raw["packets"]
    t = raw["time_ns"][(raw["event"] == 2) & (raw["cause"] == 3)]
    slots = t // 30_000_000
    assert len(set(slots.tolist())) == len(slots)


# --- CoDel and FQ-CoDel ---------------------------------------------------------


@pytest.mark.parametrize("rtt", [100, 500])
def test_codel_holds_the_delay_near_its_target_and_fq_codel_is_fairer(rtt):
    for seed in (1, 2):
        c = summary(seed=seed, **{"bottleneck.aqm.kind": "codel", "bottleneck.delay": RTT[rtt]})
        f = summary(seed=seed, **{"bottleneck.aqm.kind": "fq_codel", "bottleneck.delay": RTT[rtt]})
        cq, fq = c["bottleneck"]["queue_delay_ms"], f["bottleneck"]["queue_delay_ms"]
        # RFC 8289: a standing queue of about TARGET = 5 ms
        assert 1 < cq["p50"] < 12, cq
        assert 0.5 < fq["p50"] < 8, fq
        assert cq["p90"] < 25 and fq["p90"] < 25
        assert c["classes"]["bulk"]["jain_index"] < f["classes"]["bulk"]["jain_index"]
        assert f["classes"]["bulk"]["jain_index"] > 0.999
        # CoDel's signals come from its control law
        assert c["bottleneck"]["drops"]["deterministic"] > 10 * c["bottleneck"]["drops"]["random"]


# --- Adaptive RED and RED+Tail ----------------------------------------------------


def test_ared_keeps_the_average_near_its_automatic_target():
    # FGS01 at 10 Mbps, 1500 B packets, 5 ms: min_th 5, max_th 15 packets; the target
    # band [9, 11] packets is 10.8-13.2 ms of queue. Per-packet delay centres below it
    # (the average lags the instantaneous queue), well inside [0, 2 max_th].
    s = summary(**{"bottleneck.aqm.kind": "ared", "bottleneck.delay": "48ms"})
    q = s["bottleneck"]["queue_delay_ms"]
    assert 2 < q["p50"] < 15, q
    assert q["p99"] < 40, q
    assert s["bottleneck"]["utilization"]["mean"] > 0.9


def test_sliding_thresholds_trade_delay_for_fewer_drops():
    # Jou, Tan & Baras §V: raising the thresholds when the drop probability is above
    # P_U lowers the drop rate at the cost of delay.
    base = {"bottleneck.delay": "48ms", "flows.0.count": 40}
    a = summary(**base, **{"bottleneck.aqm.kind": "ared"})["bottleneck"]
    s = summary(**base, **{"bottleneck.aqm.kind": "ared_sliding", "bottleneck.aqm.sliding.p_low": 0.005, "bottleneck.aqm.sliding.p_high": 0.01})["bottleneck"]
    assert s["drop_rate"] < a["drop_rate"], (s["drop_rate"], a["drop_rate"])
    assert s["queue_delay_ms"]["p50"] > a["queue_delay_ms"]["p50"]


def test_red_tail_sends_long_lived_flows_to_its_red_queue():
    # Bulk flows pass the classifier's N = 50 packets within a second: from then on the
    # Adaptive RED queue with Table II's thresholds (20-80 KB, i.e. 16-64 ms at
    # 10 Mbps) holds them.
    s = summary(**{"bottleneck.aqm.kind": "red_tail", "bottleneck.delay": "48ms"})
    b = s["bottleneck"]
    assert 16 < b["queue_delay_ms"]["p50"] < 64, b["queue_delay_ms"]
    assert b["drops"]["random"] > 100
    assert b["utilization"]["mean"] > 0.95


# --- ECN (Khademi, Ros & Welzl, IETF 88) ---------------------------------------------


def rates(kind, flows, ecn, ignore=False, seed=1, **extra):
    o = {"bottleneck.aqm.kind": kind, "flows.0.count": flows, "flows.0.tcp.ecn": ecn, "bottleneck.aqm.ecn": ecn, **extra}
    if ignore:
        o["bottleneck.aqm.ignore_ce_in_measure"] = True
    p = summary("ietf88-ecn", seed, **o)["bottleneck"]["packets"]
    return p["dropped"] / p["arrived"], p["marked"] / p["arrived"]


PIE20 = {"bottleneck.aqm.target": "20ms", "bottleneck.aqm.tupdate": "30ms", "bottleneck.aqm.ecn_threshold": 1.0}


@pytest.mark.parametrize("kind, extra", [("codel", {}), ("pie", PIE20), ("ared", {})])
def test_ecn_marks_replace_drops_and_heavy_congestion_inflates_them(kind, extra):
    d4, _ = rates(kind, 4, False, **extra)
    drops4, m4 = rates(kind, 4, True, **extra)
    assert m4 > 0 and drops4 < 0.2 * m4, (drops4, m4)  # marks instead of drops
    d64, _ = rates(kind, 64, False, **extra)
    _, m64 = rates(kind, 64, True, **extra)
    _, m64_out = rates(kind, 64, True, ignore=True, **extra)
    # seed 002: with 64 flows CE marks far outnumber the drops the same AQM makes
    # without ECN (3.9 to 6.6 times), and more so than with 4 flows
    assert m64 / d64 > 2.5, (kind, m64, d64)
    assert m64 / d64 > m4 / d4
    # the remedy: leaving CE-marked packets out of the measure lowers the marking
    assert m64_out < 0.8 * m64, (kind, m64_out, m64)


def test_pie_drops_ecn_capable_packets_above_its_threshold():
    # RFC 8033 §5.1: above 10 % drop probability, ECN-capable packets are dropped
    drops, marks = rates("pie", 64, True, **{"bottleneck.aqm.target": "20ms", "bottleneck.aqm.tupdate": "30ms"})
    assert drops > 0.1 and marks < 0.01, (drops, marks)


def test_nested_parameters_are_named_in_errors():
    with pytest.raises(aqmlab.ScenarioError, match=r"bottleneck\.aqm\.pie\.alpha"):
        aqmlab.run("madpie-proof-madpie", overrides={"bottleneck.aqm.pie.alpha": -1.0})
    with pytest.raises(aqmlab.ScenarioError, match=r"bottleneck\.aqm\.max_th"):
        aqmlab.run("madpie-proof", overrides={"bottleneck.aqm.kind": "red", "bottleneck.aqm.max_th": "2pkts"})
