"""The Python API and the files of a run (DESIGN.md "What a run writes")."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import aqmlab
from conftest import short

QUEUE_KEYS = {"p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "max", "mean"}
UTIL_KEYS = {"mean", "p5", "p25", "p50", "p75", "p95"}


@pytest.fixture(scope="module")
def result():
    return aqmlab.run("madpie-proof", seed=4, overrides=short(**{"bottleneck.delay": "48ms"}))


def test_summary_has_the_contract_keys(result):
    s = result.summary
    for k in ("scenario", "seed", "sim_seconds", "wall_seconds", "events"):
        assert k in s
    b = s["bottleneck"]
    assert set(b["queue_delay_ms"]) == QUEUE_KEYS
    assert set(b["utilization"]) == UTIL_KEYS
    assert set(b["packets"]) >= {"enqueued", "dequeued", "dropped", "marked"}
    assert set(b["drops"]) == {"overflow", "random", "deterministic"}
    c = s["classes"]["bulk"]
    for k in ("goodput_mbps", "loss_rate", "jain_index", "queue_delay_ms"):
        assert k in c
    json.dumps(s)  # serializable


def test_summary_agrees_with_the_tables(result):
    s = result.summary
    pk = result.packets.to_pandas()
    deq = pk[(pk.event == "dequeue") & (pk.link == "bottleneck")]
    assert len(deq) == s["bottleneck"]["packets"]["dequeued"]
    assert np.isclose(np.percentile(deq.sojourn_ms, 50), s["bottleneck"]["queue_delay_ms"]["p50"])
    assert deq.sojourn_ms.max() == pytest.approx(s["bottleneck"]["queue_delay_ms"]["max"])
    drops = pk[pk.event == "drop"]
    assert len(drops) == s["bottleneck"]["packets"]["dropped"]
    assert (drops.cause == "random").sum() == s["bottleneck"]["drops"]["random"]
    fl = result.flows.to_pandas()
    assert fl.drops.sum() >= s["bottleneck"]["packets"]["dropped"] - s["classes"]["bulk"]["ack_drops"]
    # goodput: bytes delivered over each flow's active time
    assert fl.goodput_mbps.sum() == pytest.approx(s["classes"]["bulk"]["goodput_mbps"], rel=1e-9)


def test_every_enqueued_packet_is_dequeued_or_dropped_or_still_queued(result):
    pk = result.packets.to_pandas()
    pk = pk[pk.link == "bottleneck"]
    enq = set(pk[pk.event == "enqueue"].uid)
    deq = set(pk[pk.event == "dequeue"].uid)
    dropped = set(pk[pk.event == "drop"].uid)
    assert deq <= enq
    left = enq - deq - dropped
    ts = result.timeseries.to_pandas()
    last = ts[(ts.scope == "link") & (ts.link == "bottleneck")].iloc[-1]
    assert last.time_s == result.meta["sim_seconds"]
    assert len(left) == last.backlog_packets
    c = result.meta["conservation"]
    assert c["created"] == c["delivered"] + c["dropped"] + c["in_flight"]


def test_utilization_is_busy_time_per_second(result):
    ts = result.timeseries.to_pandas()
    link = ts[(ts.scope == "link") & (ts.link == "bottleneck")]
    assert (link.utilization <= 1.0 + 1e-12).all() and (link.utilization >= 0).all()
    per_s = link.groupby((link.time_s - 1e-9) // 1).utilization.mean()
    assert per_s.mean() == pytest.approx(result.summary["bottleneck"]["utilization"]["mean"], rel=1e-9)


def test_tables_are_self_describing_parquet(result, tmp_path):
    result.write(tmp_path / "run", report=False)
    t = pq.read_table(tmp_path / "run" / "packets.parquet")
    md = t.schema.metadata
    assert md[b"aqmlab.seed"] == b"4"
    assert json.loads(md[b"aqmlab.scenario"])["name"] == "madpie-proof"
    assert set(t.column_names) >= {"time_s", "flow", "class", "size_bytes", "event", "cause", "sojourn_ms"}
    ts = pq.read_table(tmp_path / "run" / "timeseries.parquet")
    assert {"utilization", "cwnd_segments", "srtt_ms", "drop_prob", "backlog_bytes"} <= set(ts.column_names)


def _strip(s):
    s = dict(s)
    for k in ("wall_seconds", "events_per_second"):
        s.pop(k)
    return s


def test_same_seed_same_summary_another_seed_differs(tmp_path):
    a = aqmlab.run("madpie-proof", seed=11, overrides=short())
    b = aqmlab.run("madpie-proof", seed=11, overrides=short())
    c = aqmlab.run("madpie-proof", seed=12, overrides=short())
    a.write(tmp_path / "a", report=False)
    b.write(tmp_path / "b", report=False)
    sa = json.loads((tmp_path / "a" / "summary.json").read_text())
    sb = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert _strip(sa) == _strip(sb)
    assert _strip(sa) != _strip(c.summary)
    assert sa["classes"]["bulk"]["goodput_mbps"] != c.summary["classes"]["bulk"]["goodput_mbps"]


def test_api_errors_are_value_errors_naming_the_field():
    with pytest.raises(aqmlab.ScenarioError, match=r"bottleneck\.rate"):
        aqmlab.run("madpie-proof", overrides={"bottleneck.rate": "fast"})
    with pytest.raises(ValueError, match="nope"):
        aqmlab.run("nope")


def test_dict_scenarios_and_dict_overrides():
    sc = aqmlab.resolve("madpie-proof", overrides=["duration=3s"])
    sc["flows"][0]["count"] = 2
    r = aqmlab.run(sc, overrides={"bottleneck.aqm.kind": "droptail"})
    assert r.summary["bottleneck"]["aqm"] == "droptail"
    assert r.summary["classes"]["bulk"]["flows"] == 2


def test_progress_is_reported():
    seen = []
    aqmlab.run("madpie-proof", overrides=short(), progress=seen.append)
    assert seen[-1] == 1.0 and len(seen) >= 50 and seen == sorted(seen)


def test_summaries_only_mode_matches_the_packet_rows():
    """With packet records off, summary.json's queueing delays come from the
    streaming histograms: within their 0.4 % bucket error (and numpy's interpolation
    between ranks) of the exact figures from the packet rows of the same run; mean
    and max exact; the histograms written to histograms.parquet."""
    o = short(**{"metrics.warmup": "5s", "duration": "30s"})
    full = aqmlab.run("madpie-mix", seed=3, overrides=o)
    lean = aqmlab.run("madpie-mix", seed=3, overrides={**o, "record.packets": False, "record.datagrams": False})
    assert lean.packets.num_rows == 0 and full.packets.num_rows > 0
    a, b = full.summary["bottleneck"], lean.summary["bottleneck"]
    assert "histogram" in b["queue_delay_note"] and "queue_delay_note" not in a

    def close(x, y, what):
        assert (x is None) == (y is None), what
        if x is not None:
            # 1/256 of the value, plus 1 us of slack for interpolating between ranks
            assert abs(x - y) <= x / 256 + 1e-3, (what, x, y)

    for k, v in a["queue_delay_ms"].items():
        close(v, b["queue_delay_ms"][k], f"bottleneck {k}")
    assert b["queue_delay_ms"]["max"] == a["queue_delay_ms"]["max"]
    assert abs(b["queue_delay_ms"]["mean"] - a["queue_delay_ms"]["mean"]) < 1e-9
    for name, c in full.summary["classes"].items():
        for k, v in c["queue_delay_ms"].items():
            close(v, lean.summary["classes"][name]["queue_delay_ms"][k], f"{name} {k}")
    # every other figure is the same: records do not change the simulation
    assert b["drops"] == a["drops"] and b["utilization"] == a["utilization"]
    h = lean.histograms.to_pandas()
    counts = {m["name"]: m["count"] for m in lean.meta["histograms"]}
    assert h.groupby("name", observed=True)["count"].sum().to_dict() == {k: v for k, v in counts.items() if v}
    assert (h["lo_ms"] < h["hi_ms"]).all()


def test_the_table_writer_starts_after_pyarrow_registered_its_kernels(tmp_path):
    """The run folder's tables are written by a thread while the report is drawn. pyarrow
    registers its compute kernels on the first import of pyarrow.compute, unlocked; if
    that import ran in another thread during a write, the writer's kernel lookups could
    miss ("No function registered with name: unique", seen in CI). A run's tables are
    built without pyarrow.compute, so the writer must import it before it starts."""
    script = r"""
import sys, threading
import aqmlab

r = aqmlab.run(overrides=["duration=5s"])
assert "pyarrow._compute" not in sys.modules, "the check needs a process without it"
seen = []
start = threading.Thread.start
def checked_start(self):
    if self.name == "aqmlab-write-tables":
        seen.append("pyarrow._compute" in sys.modules)
    return start(self)
threading.Thread.start = checked_start
r.write(sys.argv[1], report=False)
print(seen)
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "run")], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[True]"
