"""End-to-end checks of the foundation against Kuhn & Ros, "Improving PIE's
performance over high-delay paths" (MADPIE), §III: 10 CUBIC flows, 10 Mbps, BDP
buffer, 300 s, PIE with target 20 ms and update interval 30 ms."""

import pytest

import aqmlab

RTT100 = {"bottleneck.delay": "48ms"}


def run(seed=1, **o):
    return aqmlab.run("madpie-proof", seed=seed, overrides=o).summary


@pytest.fixture(scope="module")
def pie100():
    return [run(seed=s, **RTT100) for s in (1, 2, 3)]


@pytest.fixture(scope="module")
def pie500():
    return [run(seed=s) for s in (1, 2, 3)]


def test_pie_holds_its_target_at_100ms(pie100):
    for s in pie100:
        b = s["bottleneck"]
        assert abs(b["queue_delay_ms"]["p50"] - 20) < 4, b["queue_delay_ms"]
        assert b["utilization"]["mean"] >= 0.9
        # most drops are PIE's own, not buffer overflow (Kuhn & Ros §III, Fig. 4)
        assert b["drops"]["random"] > 5 * b["drops"]["overflow"]
        # the maximum delay is about 100 ms (§III: "≈100 ms with PIE")
        assert 60 < b["queue_delay_ms"]["max"] < 160


def test_pie_oscillates_widely_at_500ms(pie100, pie500):
    """§III: with a 500 ms RTT PIE's queueing delay oscillates widely: the buffer
    empties, then bursts well above the target."""
    for s100, s500 in zip(pie100, pie500):
        q100, q500 = s100["bottleneck"]["queue_delay_ms"], s500["bottleneck"]["queue_delay_ms"]
        spread100 = q100["p90"] - q100["p10"]
        spread500 = q500["p90"] - q500["p10"]
        assert spread500 > 1.5 * spread100
        assert q500["p10"] < 2 and q500["p50"] < 15, q500  # often (nearly) empty
        assert q500["p90"] > 40, q500  # but far above target 10 % of the time
        assert s500["bottleneck"]["utilization"]["mean"] < s100["bottleneck"]["utilization"]["mean"]


def test_droptail_with_a_bdp_buffer_fills_it():
    for delay, rtt in (("48ms", 100), ("248ms", 500)):
        b = run(**{"bottleneck.delay": delay, "bottleneck.aqm.kind": "droptail"})["bottleneck"]
        q = b["queue_delay_ms"]
        # the buffer holds one BDP = one base RTT of queueing at the bottleneck rate
        assert q["max"] <= rtt * 1.001 and q["max"] > 0.95 * rtt, q
        assert q["p50"] > 0.5 * rtt, q
        assert b["utilization"]["mean"] > 0.97
        assert b["drops"]["random"] == 0 and b["drops"]["overflow"] > 0


def test_flows_share_fairly(pie100):
    for s in pie100:
        c = s["classes"]["bulk"]
        assert c["jain_index"] > 0.95
        assert 9.0 < c["goodput_mbps"] < 10.0
        assert c["timeouts"] < 10
