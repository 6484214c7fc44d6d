"""Traffic classes, paths, changing links and receivers through the Python API:
per-class figures in summary.json, the new tables, trace files next to a scenario,
and the metric helpers computed by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import aqmlab
from aqmlab import measures

DOCS = Path(__file__).resolve().parent.parent / "docs"


def small(**extra):
    """A 10 Mbps dumbbell with one group per traffic kind."""
    sc = {
        "name": "mix",
        "duration": "20s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms", "buffer": "1bdp", "aqm": "pie"},
        "flows": [
            {"name": "voip", "kind": "cbr", "count": 2, "rate": "87kbps", "packet_size": "218B"},
            {"name": "files", "kind": "files", "count": 5, "sizes": ["15KB", "102KB"], "think": {"exponential": "1s"}},
            {"name": "web", "kind": "web", "count": 5, "think": {"exponential": "1s"}},
            {"name": "late", "kind": "transfer", "start": "5s", "size": "200KB"},
            {"name": "bulk", "kind": "bulk", "count": 2},
        ],
    }
    sc.update(extra)
    return sc


@pytest.fixture(scope="module")
def mix():
    return aqmlab.run(small(metrics={"goodput_interval": "5s"}, record={"flow_trace": ["bulk"]}))


def test_every_class_gets_the_figures_that_fit_it(mix):
    c = mix.summary["classes"]
    assert set(c) == {"voip", "files", "web", "late", "bulk"}
    owd = c["voip"]["one_way_delay_ms"]
    # 2 x (1 + 20 + 1) ms of propagation: the one-way delay is at least 22 ms
    assert owd["p5"] >= 22.0 and owd["p5"] <= owd["p50"] <= owd["p95"] <= owd["max"]
    assert c["voip"]["rate_kbps"] == 87.0
    assert c["voip"]["datagrams"]["sent"] > 1500
    assert 0.08 < c["voip"]["goodput_mbps_per_flow"]["mean"] < 0.09
    d = c["files"]["download_time_s"]
    assert set(d["by_size"]) == {"15KB", "102KB"}
    for size in ("15KB", "102KB"):
        b = d["by_size"][size]
        assert b["completed"] > 0 and b["p5"] <= b["p25"] <= b["p50"] <= b["p75"] <= b["p95"]
    assert d["by_size"]["15KB"]["p50"] < d["by_size"]["102KB"]["p50"]
    # Pareto sizes fall into decade bins
    assert all(re.fullmatch(r"[\d.]+[KM]?B-[\d.]+[KM]?B", k) for k in c["web"]["download_time_s"]["by_size"])
    assert c["late"]["download_time_s"]["all"]["completed"] == 1
    g = c["bulk"]["goodput_per_interval_mbps"]
    assert g["interval_s"] == 5.0
    assert g["per_flow"]["p10"] <= g["per_flow"]["p50"] <= g["per_flow"]["p90"]
    assert 0.5 < c["bulk"]["jain_index"] <= 1.0
    assert c["bulk"]["receiver"] == "drs"
    assert mix.summary["bottleneck_rev"]["aqm"] == "droptail"


def test_the_new_tables_are_written_and_every_column_is_documented(mix, tmp_path):
    out = mix.write(tmp_path / "run", report=True)
    doc = (DOCS / "outputs.md").read_text()
    for name in ("transfers", "datagrams", "flow_trace", "flows", "timeseries", "packets"):
        t = pq.read_table(out / f"{name}.parquet")
        assert t.schema.metadata[b"aqmlab.format_version"]
        section = doc.split(f"\n## {name}.parquet")[1].split("\n## ")[0]
        for col in t.column_names:
            assert f"`{col}`" in section, f"{name}.{col} is not in docs/outputs.md"
    tr = pq.read_table(out / "transfers.parquet").to_pandas()
    done = tr.dropna(subset=["end_s"])
    assert np.allclose(done.download_time_s, done.end_s - done.request_s)
    assert set(tr["class"].unique()) == {"files", "web", "late"}
    ft = pq.read_table(out / "flow_trace.parquet").to_pandas()
    assert set(ft.flow.unique()) == set(mix.flows.to_pandas().query("`class` == 'bulk'").flow)
    assert ft.groupby("flow").acked_bytes.apply(lambda s: s.is_monotonic_increasing).all()
    import re

    figs = set(re.findall(r"id='fig-([a-z_]+)'><svg ", (out / "report.html").read_text()))
    assert {"download_times", "cbr_goodput_delay", "class_delay_cdf", "flow_traces", "goodput"} <= figs
    summary = json.loads((out / "summary.json").read_text())
    assert summary["classes"]["voip"]["one_way_delay_ms"]["p50"] is not None


def test_a_trace_file_next_to_the_scenario_is_found_and_utilization_counts_opportunities(tmp_path):
    (tmp_path / "traces").mkdir()
    # 2 opportunities per 4 ms: 6 Mbps
    (tmp_path / "traces" / "link.trace").write_text("\n".join(["2", "4"]) + "\n")
    (tmp_path / "exp.toml").write_text(
        """
name = "exp"
duration = "5s"
[bottleneck]
delay = "10ms"
buffer = "200pkts"
trace = "traces/link.trace"
[[flows]]
name = "flood"
kind = "cbr"
rate = "3Mbps"
"""
    )
    r = aqmlab.run(str(tmp_path / "exp.toml"))
    b = r.summary["bottleneck"]
    assert b["rate_mbps"] == 6.0
    assert b["trace"] == str((tmp_path / "traces" / "link.trace").resolve())
    # 3 Mbps of 1500-byte datagrams use half the opportunities
    assert abs(b["utilization"]["mean"] - 0.5) < 0.01
    ts = r.timeseries.to_pandas()
    link = ts[(ts.scope == "link") & (ts.link == "bottleneck") & (ts.time_s > 0.2)]
    assert (link.opportunities == 50).all() and (link.capacity_mbps == 6.0).all()
    # the resolved scenario names the file absolutely: it runs from anywhere
    again = aqmlab.run(r.scenario)
    assert again.summary["bottleneck"]["utilization"]["mean"] == b["utilization"]["mean"]


def test_scenario_errors_name_the_new_fields():
    cases = {
        "flows.1.sizes=[]": "flows[1].sizes",
        "flows.1.think=12": "flows[1].think",
        "flows.0.rate=\"0bps\"": "flows[0].rate",
        "flows.4.tcp.receiver.kind=palermo": None,
        "flows.4.tcp.receiver=palermo": None,
        "bottleneck.schedule=[{ at = \"1s\", rat = \"1Mbps\" }]": "bottleneck.schedule[0].rat",
        "bottleneck.trace={ ms = [3, 1] }": "bottleneck.trace.ms",
        "flows.4.path.flow_delay={ exponential = \"5ms\" }": "flows[4].path.flow_delay",
        "record.flow_trace=[99]": "record.flow_trace[0]",
        "bottleneck.reverse_aqm.kind=nosuch": "bottleneck.reverse_aqm.kind",
    }
    for setting, path in cases.items():
        if path is None:
            aqmlab.resolve(small(), [setting])
            continue
        with pytest.raises(aqmlab.ScenarioError) as e:
            aqmlab.resolve(small(), [setting])
        assert str(e.value).startswith(path + ":"), (setting, str(e.value))
    with pytest.raises(aqmlab.ScenarioError, match=r"flows\[4\].tcp.receiver.gain"):
        aqmlab.resolve(small(), ["flows.4.tcp.receiver=palermo", "flows.4.tcp.receiver.gain=0.5"])


def test_goodput_windows_by_hand():
    # two flows sampled every second for 4 s; windows of 2 s
    fs = {
        "time_ns": np.array([1, 2, 3, 4, 2, 3, 4], dtype=np.uint64) * 10**9,
        "flow": np.array([0, 0, 0, 0, 1, 1, 1], dtype=np.uint32),
        "delivered_bytes": np.array([100, 250, 250, 1250, 0, 500, 500], dtype=np.uint64),
    }
    per, total = measures.goodput_windows(fs, np.array([0, 1]), np.array([0, 1_500_000_000]), 10**9, 2 * 10**9, 4 * 10**9, 0, None)
    mbps = lambda b: b * 8 / 2 / 1e6  # noqa: E731
    # flow 0: 250 B then 1000 B; flow 1 (started at 1.5 s): 0 B then 500 B
    assert np.allclose(sorted(per), sorted([mbps(250), mbps(1000), mbps(0), mbps(500)]))
    assert np.allclose(total, [mbps(250), mbps(1500)])
    # a warm-up of 2 s leaves the first window out
    per, total = measures.goodput_windows(fs, np.array([0, 1]), np.array([0, 1_500_000_000]), 10**9, 2 * 10**9, 4 * 10**9, 2 * 10**9, None)
    assert np.allclose(sorted(per), [mbps(500), mbps(1000)])


def test_download_times_by_size_by_hand():
    tr = {
        "group": np.array([0, 0, 0, 0, 1], dtype=np.uint16),
        "size_bytes": np.array([15_000, 15_000, 102_000, 102_000, 15_000], dtype=np.uint64),
        "request_ns": np.array([0, 10, 20, 30, 0], dtype=np.uint64) * 10**9,
        "end_ns": np.array([1, 13, 25, -1, 1], dtype=np.int64) * 10**9,
    }
    d = measures.download_times(tr, 0, [15_000, 102_000], 0)
    assert d["all"]["completed"] == 3 and d["all"]["unfinished"] == 1
    assert d["by_size"]["15KB"]["p50"] == pytest.approx(2.0)  # of 1 s and 3 s
    assert d["by_size"]["102KB"]["p50"] == pytest.approx(5.0)
    assert d["by_size"]["102KB"]["unfinished"] == 1


def test_trace_utilization_by_hand():
    ls = {
        "link": np.array([0, 0, 1, 1]),
        "busy_ns": np.array([50, 100, 0, 0]) * 10**6,
        "opportunities": np.array([0, 0, 10, 0]),
        "opportunities_used": np.array([0, 0, 4, 0]),
    }
    u = measures.link_utilization(ls, 0.1)
    assert np.allclose(u[:3], [0.5, 1.0, 0.4]) and np.isnan(u[3])


def test_palermo_receivers_in_the_summary():
    r = aqmlab.run("palermo-mixed")
    c = r.summary["classes"]["palermo"]
    assert c["receiver"] == "palermo"
    assert c["receiver_reverts"] == 1 and c["receiver_returns"] == 1
    ts = r.timeseries.to_pandas()
    flow0 = ts[(ts.scope == "flow") & (ts.flow == 0)]
    assert flow0.rwnd_bytes.notna().any()


def test_an_onoff_class_gets_the_udp_figures_and_stays_out_of_the_tcp_goodput(tmp_path):
    # 4 on/off sources (2 Mb/s while on, on 200 ms / off 800 ms on average: 0.4 Mb/s
    # each in the long run) beside 2 bulk TCP flows. The class is found as UDP by the
    # registry's "datagrams" family: one-way delays, datagram counts, its mean rate,
    # no srtt; the report's UDP table; and tcp_goodput counts the bulk flows only.
    oo = {"name": "oo", "kind": "onoff", "count": 4, "rate": "2Mbps", "packet_size": "1000B",
          "on": {"exponential": "200ms"}, "off": {"exponential": "800ms"}}
    r = aqmlab.run(small(duration="60s", flows=[oo, {"name": "bulk", "kind": "bulk", "count": 2}]))
    r.write(tmp_path / "run")
    run = aqmlab.load(tmp_path / "run")
    c = run.summary["classes"]["oo"]
    assert c["kind"] == "onoff" and c["rate_kbps"] == 400.0
    assert "srtt_ms" not in c
    assert c["one_way_delay_ms"]["p5"] >= 22.0  # 2 x (1 + 20 + 1) ms of propagation
    dg = c["datagrams"]
    assert dg["sent"] > 10_000 and 0 <= dg["sent"] - dg["received"] - dg["dropped"] < 20
    # 60 cycles per source: the mean of 4 sources' rates has a standard deviation of
    # about 30 kb/s around 400 kb/s
    assert 0.25 < c["goodput_mbps_per_flow"]["mean"] < 0.55
    assert "UDP sources" in (tmp_path / "run" / "report.html").read_text()
    bulk = run.summary["classes"]["bulk"]["goodput_mbps"]
    assert measures.tcp_goodput(run) == pytest.approx(bulk, rel=0.05)
    assert bulk < 9.0  # the on/off traffic took its share
