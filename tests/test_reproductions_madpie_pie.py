"""Reproductions of Kuhn & Ros (MADPIE) §IV and §V and of the PIE slides' lab tests:
their measures by hand, the level that sets its own scenario, and short runs to the end."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aqmlab import comparison, plots
from aqmlab import reproductions as rp
from conftest import fig_texts
from aqmlab.grid import Grid


class Const(rp.Measure):
    def __init__(self, v, where=None):
        self.v, self.where = v, where or {}

    def value(self, ctx):
        return (self.v, None, 3) if self.v is not None else None

    def describe(self):
        return f"{self.v}"


class FakeSeries:
    """What the measures read of a series: its runs' params and pooled tables."""

    def __init__(self, params, transfers=None, delays=None, packets=None):
        self.runs = [SimpleNamespace(params=params, table=lambda name, cols, filters=None: packets)]
        self._t, self._d = transfers, delays

    def transfers(self):
        return self._t

    def class_delays(self, classes):
        return None if self._d is None else np.concatenate([self._d[c] for c in classes if c in self._d])


def test_combinators_by_hand():
    ctx = rp.Context([])
    assert rp.Reduction(Const(80.0), Const(60.0)).value(ctx)[0] == pytest.approx(25.0)  # 100 (80 - 60) / 80
    assert rp.Reduction(Const(40.0), Const(50.0)).value(ctx)[0] == pytest.approx(-25.0)
    assert rp.Reduction(Const(0.0), Const(5.0)).value(ctx) is None
    assert rp.smallest(Const(3.0), Const(-1.0), Const(2.0)).value(ctx)[0] == -1.0
    assert rp.largest(Const(3.0), Const(-1.0)).value(ctx)[0] == 3.0
    assert rp.smallest(Const(3.0), Const(None)).value(ctx) is None  # a missing part: no value
    assert (rp.largest(Const(1.0), Const(4.0)) - Const(1.5)).value(ctx)[0] == pytest.approx(2.5)


def test_download_and_class_delay_measures_by_hand():
    t = pd.DataFrame({
        "class": pd.Categorical(["files-100", "files-100", "files-100", "files-500", "files-100"]),
        "size_bytes": np.array([15000, 15000, 44000, 15000, 15000], dtype="uint64"),
        "download_time_s": [1.0, 3.0, 10.0, 7.0, np.nan],
    })
    s = FakeSeries({"AQM": "PIE"}, transfers=t, delays={"cbr-100": np.arange(0.0, 101.0), "cbr-500": np.full(50, 1000.0)})
    ctx = rp.Context([s])
    # 15 kB files of class files-100: 1 and 3 s (the unfinished NaN left out) -> median 2 s = 2000 ms
    assert rp.Download(50, {"AQM": "PIE"}, size_bytes=15000, classes=["files-100"], scale=1000).value(ctx)[0] == pytest.approx(2000.0)
    # every 15 kB file: 1, 3, 7 s -> median 3 s
    assert rp.Download(50, {"AQM": "PIE"}, size_bytes=15000).value(ctx)[0] == pytest.approx(3.0)
    assert rp.Download(50, {"AQM": "PIE"}, size_bytes=73000).value(ctx) is None
    assert rp.Download(50, {"AQM": "CoDel"}).value(ctx) is None
    # 0..100 ms: the 75th percentile is 75 ms; the other class does not leak in
    assert rp.ClassDelay(["cbr-100"], 75, {"AQM": "PIE"}).value(ctx)[0] == pytest.approx(75.0)
    assert rp.ClassDelay(["cbr-500"], 5, {"AQM": "PIE"}).value(ctx)[0] == pytest.approx(1000.0)


def test_window_delay_by_hand():
    pk = pd.DataFrame({"time_s": [10.0, 49.9, 50.0, 55.0, 59.9, 60.0], "sojourn_ms": [500.0, 500.0, 10.0, 20.0, 30.0, 900.0]})
    ctx = rp.Context([FakeSeries({"AQM": "PIE"}, packets=pk)])
    assert rp.WindowDelay(50, {"AQM": "PIE"}, 50, 60).value(ctx)[0] == pytest.approx(20.0)  # 10, 20, 30
    assert rp.WindowDelay(100, {"AQM": "PIE"}, 50, 60).value(ctx)[0] == pytest.approx(30.0)
    assert rp.WindowDelay(50, {"AQM": "PIE"}, 70, 80).value(ctx) is None


def test_a_level_may_set_its_own_base_scenario():
    g = Grid(scenario="pie-lab-5tcp", name="t")
    g.named("Test", {"5": {}, "udp": {"scenario": "pie-lab-udp"}, "20": {"scenario": "pie-lab-intensity", "flows.0.count": 20}})
    g.named("AQM", {"PIE": {}, "CoDel": {"bottleneck.aqm.kind": "codel"}})
    g.seeds = [1]
    plan = g.plan()
    by = {(r.params["Test"], r.params["AQM"]): r.scenario for r in plan.runs}
    assert len(by) == 6
    assert by[("5", "PIE")]["name"] == "pie-lab-5tcp" and [f["count"] for f in by[("5", "PIE")]["flows"]] == [5]
    assert by[("udp", "CoDel")]["name"] == "pie-lab-udp" and [f["kind"] for f in by[("udp", "CoDel")]["flows"]] == ["bulk", "cbr"]
    assert by[("udp", "CoDel")]["bottleneck"]["aqm"]["kind"] == "codel"
    assert by[("20", "PIE")]["name"] == "pie-lab-intensity" and by[("20", "PIE")]["flows"][0]["count"] == 20
    # the level's scenario is not passed on as a field override
    assert not any("scenario=" in o for r in plan.runs for o in r.overrides)


def short(monkeypatch, name, seeds, duration, **extra):
    e = rp.get(name)
    monkeypatch.setattr(e, "quick", rp.Quick(seeds=seeds, set={"duration": duration, **extra}))
    return e


def claims_of(d):
    data = json.loads((d / "claims.json").read_text())
    assert data["failed"] == 0 and data["quick"]
    return data, {c["claim"]: c for c in data["claims"]}


def test_madpie_mix_runs_to_the_end(monkeypatch, tmp_path):
    e = short(monkeypatch, "madpie-mix", 1, "20s")
    r = rp.reproduce("madpie-mix", out=tmp_path / "r", quick=True, jobs=2, progress=False)
    assert r.runs == 9 and r.failed == 0
    data, by = claims_of(tmp_path / "r")
    assert len(by) == len(e.claims)
    # DropTail's BDP buffer at RTT 500 ms holds up to 500 ms; PIE keeps the CBR tail far below
    dt = by["DropTail, RTT 500 ms: the CBR queueing delay is very high (95th percentile, DT − PIE)"]
    assert dt["aqmlab"] > 100 and dt["verdict"] == "agrees"
    # the per-RTT DropTail margins and utilization claims all have a value
    for c in data["claims"]:
        if c["claim"].startswith("RTT") and "DropTail" in c["claim"]:
            assert c["aqmlab"] is not None
    for f in ("fig6_cbr_goodput_delay", "fig7a_downloads_rtt100", "fig7b_downloads_rtt300", "fig7c_downloads_rtt500", "fig8_bulk_goodput_cdf"):
        assert (tmp_path / "r" / "figures" / f"{f}.png").stat().st_size > 5_000
    e_fig = next(f for f in e.figures if f.name == "fig7b_downloads_rtt300")
    text = fig_texts(plots.draw(e_fig.kind, comparison.group(comparison.find_runs([tmp_path / "r"]), e.label), e_fig.options()))
    assert "download time (s)" in text and "102 kB" in text


def test_madpie_rtt_mix_keeps_the_classes_apart(monkeypatch, tmp_path):
    short(monkeypatch, "madpie-rtt-mix", 1, "20s")
    r = rp.reproduce("madpie-rtt-mix", out=tmp_path / "r", quick=True, jobs=2, progress=False)
    assert r.runs == 3 and r.failed == 0
    data, _ = claims_of(tmp_path / "r")
    from aqmlab import comparison

    series = comparison.group(comparison.find_runs([tmp_path / "r"]), "{AQM}")
    ctx = rp.Context(series)
    for aqm in ("PIE", "MADPIE", "CoDel"):
        s = ctx.series({"AQM": aqm})
        t = s.transfers()
        assert set(t["class"].astype(str)) == {"files-100", "files-500"}
        # a download takes at least one round trip, 400 ms longer on the 500 ms path
        fast = rp.Download(50, {"AQM": aqm}, classes=["files-100"]).value(ctx)[0]
        slow = rp.Download(50, {"AQM": aqm}, classes=["files-500"]).value(ctx)[0]
        assert slow > fast + 0.4
    for f in ("fig10_cbr_rtt100", "fig11a_downloads_rtt100", "fig11b_downloads_rtt500", "fig12a_bulk_rtt100", "fig12b_bulk_rtt500"):
        assert (tmp_path / "r" / "figures" / f"{f}.png").exists(), f
    assert all(c["aqmlab"] is not None for c in data["claims"] if "CBR" in c["claim"])


def test_pie_lab_runs_each_test_on_its_scenario(monkeypatch, tmp_path):
    # the capacity change must fall inside the run: at 3 s (to 10 Mbps, a no-op on the 10 Mbps
    # tests); the warm-up too
    short(monkeypatch, "pie-lab", 1, "6s", **{"bottleneck.schedule": [{"at": "3s", "rate": "10Mbps"}], "metrics.warmup": "1s"})
    r = rp.reproduce("pie-lab", out=tmp_path / "r", quick=True, jobs=2, progress=False)
    assert r.runs == 12 and r.failed == 0
    data, _ = claims_of(tmp_path / "r")
    runs = [json.loads(p.read_text()) for p in (tmp_path / "r" / "runs").glob("*/scenario.json")]
    names = sorted({(sc["name"], sc["flows"][0]["count"], len(sc["flows"])) for sc in runs})
    assert names == [("pie-lab-5tcp", 5, 1), ("pie-lab-capacity", 100, 1), ("pie-lab-intensity", 20, 1), ("pie-lab-intensity", 50, 1),
                     ("pie-lab-intensity", 100, 1), ("pie-lab-udp", 5, 2)]
    assert {sc["bottleneck"]["aqm"]["kind"] for sc in runs} == {"pie", "codel"}
    assert {json.dumps(sc["bottleneck"]["schedule"]) for sc in runs if sc["name"] == "pie-lab-capacity"} != {"[]"}
    # 6 s: the windows after 50 s have no data and say so
    after = [c for c in data["claims"] if "Varying Capacity" in c["where"]]
    assert after and all(c["verdict"] == "not run" for c in after)
    assert (tmp_path / "r" / "figures" / "queue_delay_cdf.png").exists()
