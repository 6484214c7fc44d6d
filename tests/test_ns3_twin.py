"""The ns-3 twin: translation always; a real run when the ns3 wheel is installed."""

import importlib.util

import pytest

import aqmlab
from aqmlab import ns3


def test_translation_of_the_default_scenario():
    sc = aqmlab.resolve("madpie-proof")
    t = ns3.translate(sc, seed=3, out="/tmp/x")
    args = dict(a[2:].split("=", 1) for a in t.args)
    assert args["flows"] == "10" and args["seed"] == "3"
    assert args["rate"] == "10000000bps" and args["delay"] == "248000000ns"
    # 1 BDP at 10 Mbps and 2 * (1 + 248 + 1) ms = 625000 bytes
    assert args["buffer"] == "625000B"
    assert args["aqm"] == "pie" and float(args["pie_target_ms"]) == 20 and float(args["pie_tupdate_ms"]) == 30
    assert args["start_lo"] == "0.0" and args["start_hi"] == "1.0"
    assert any("handshake" in d for d in t.differences)


def test_untranslatable_settings_are_named():
    sc = aqmlab.resolve("madpie-proof", overrides=["bottleneck.aqm.estimator=interval"])
    with pytest.raises(ns3.NotTranslatable, match="estimator"):
        ns3.translate(sc, seed=1, out="/tmp/x")


@pytest.mark.skipif(importlib.util.find_spec("ns3") is None, reason="the ns3 wheel is not installed (pip install 'aqmlab[ns3]')")
def test_ns3_twin_runs_and_agrees_roughly(tmp_path):
    sc = aqmlab.resolve("madpie-proof", overrides=["bottleneck.delay=48ms", "duration=60s"])
    r = ns3.run(sc, seed=1, workdir=tmp_path)
    q = r.summary["queue_delay_ms"]
    # PIE holds its 20 ms target in ns-3 too
    assert 12 < q["p50"] < 30
    assert r.summary["utilization"]["mean"] > 0.9
