"""Comparison reports and reproductions."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import aqmlab
from aqmlab import comparison, plots
from aqmlab import reproductions as rp
from conftest import fig_texts

# the default kinds with data in a bulk-only run without per-ACK traces
BASE_FIGURES = {"queue_delay_cdf", "utilization_cdf", "goodput_delay", "queue_delay_time", "causes_time", "goodput", "cwnd_time"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two seeds of PIE and one of DropTail, as plain run folders."""
    d = tmp_path_factory.mktemp("runs")
    for name, seed, o in (("pie-1", 1, {}), ("pie-2", 2, {}), ("dt-1", 1, {"bottleneck.aqm.kind": "droptail"})):
        aqmlab.run("madpie-proof", seed=seed, overrides={"duration": "8s", "bottleneck.delay": "48ms", **o}).write(d / name, report=False)
    return d


def test_compare_pools_seeds_labels_by_what_differs_and_draws_every_figure(runs, tmp_path):
    res = aqmlab.compare([runs / "pie-1", runs / "pie-2", runs / "dt-1"], tmp_path / "cmp")
    labels = [s.label() for s in res.series]
    assert labels == ["pie", "droptail"]
    assert [len(s.runs) for s in res.series] == [2, 1]
    assert {n for n, _, _ in res.figures} == BASE_FIGURES  # no CBR, no downloads: those are skipped
    for name, files, _ in res.figures:
        assert files == [f"figures/{name}.png"]
        assert (tmp_path / "cmp" / files[0]).stat().st_size > 5_000, name
    text = fig_texts(plots.draw("queue_delay_cdf", res.series))
    assert "queueing delay at the bottleneck (ms)" in text and "CDF (fraction of packets)" in text and "droptail" in text and "2 seeds per series" in text
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert len(re.findall(r"<figure id='fig-[a-z_]+'><svg ", html)) == len(BASE_FIGURES) and "Headline figures" in html
    # the headline table: means over the seeds of the summaries
    t = pd.read_csv(tmp_path / "cmp" / "series.csv").set_index("series")
    p95 = [json.loads((runs / n / "summary.json").read_text())["bottleneck"]["queue_delay_ms"]["p95"] for n in ("pie-1", "pie-2")]
    assert t.loc["pie", "queue p95 (ms)"] == pytest.approx(np.mean(p95))
    assert t.loc["pie", "runs"] == 2


def test_pooled_delays_are_the_runs_dequeues(runs):
    series = comparison.group(comparison.find_runs([runs / "pie-1", runs / "pie-2"]))
    assert len(series) == 1
    pooled = series[0].queue_delays
    n = sum(json.loads((runs / r / "summary.json").read_text())["bottleneck"]["packets"]["dequeued"] for r in ("pie-1", "pie-2"))
    assert len(pooled) == n
    one = pq.read_table(runs / "pie-1" / "packets.parquet").to_pandas()
    one = one[(one.event == "dequeue") & (one.link == "bottleneck")]
    assert np.percentile(one.sojourn_ms, 95) == pytest.approx(json.loads((runs / "pie-1" / "summary.json").read_text())["bottleneck"]["queue_delay_ms"]["p95"])


def test_a_summaries_only_run_joins_the_queueing_delay_cdf_from_its_histogram(runs, tmp_path):
    # the same run as pie-1 without packet rows: its pooled delays follow the histogram
    aqmlab.run("madpie-proof", seed=1, overrides={"duration": "8s", "bottleneck.delay": "48ms", "record.packets": False}).write(tmp_path / "pie-1-summ", report=False)
    assert not (tmp_path / "pie-1-summ" / "packets.parquet").exists() or pq.read_table(tmp_path / "pie-1-summ" / "packets.parquet").num_rows == 0
    exact = comparison.group(comparison.find_runs([runs / "pie-1"]))[0].queue_delays
    approx = comparison.group(comparison.find_runs([tmp_path / "pie-1-summ"]))[0].queue_delays
    assert len(approx) == len(exact)  # one value per packet (below the thinning limit)
    for p in (25, 50, 75, 90, 99):
        # a bucket is at most 1/128 of its lower end wide (docs/outputs.md); 1 % covers it
        assert np.percentile(approx, p) == pytest.approx(np.percentile(exact, p), rel=0.01, abs=0.01), p
    res = aqmlab.compare([tmp_path / "pie-1-summ"], tmp_path / "cmp")
    assert "queue_delay_cdf" in {n for n, _, _ in res.figures}


def _as_traffic_mix(src: Path, dst: Path) -> None:
    """A run folder made to look like one with CBR and file-download classes (the
    traffic kinds of another branch): half the flows become CBR, plus a transfers table."""
    shutil.copytree(src, dst)
    s = json.loads((dst / "summary.json").read_text())
    s["classes"]["voip"] = dict(s["classes"]["bulk"], kind="cbr")
    s["classes"]["web"] = dict(s["classes"]["bulk"], kind="files")
    (dst / "summary.json").write_text(json.dumps(s))
    for name in ("flows", "packets"):
        t = pq.read_table(dst / f"{name}.parquet").to_pandas()
        t["class"] = np.where(t["flow"] < 5, "voip", t["class"].astype(str))
        if name == "flows":
            t["kind"] = np.where(t["flow"] < 5, "cbr", t["kind"])
        pq.write_table(pa.Table.from_pandas(t, preserve_index=False), dst / f"{name}.parquet")
    rng = np.random.default_rng(1)
    sizes = rng.choice([15_000, 44_000, 73_000, 102_000], 200)
    pq.write_table(pa.table({"class": ["web"] * 200, "size_bytes": sizes, "download_time_s": sizes / 1e5 + rng.exponential(0.3, 200)}), dst / "transfers.parquet")


def test_traffic_mix_figures_appear_when_their_data_does(runs, tmp_path):
    _as_traffic_mix(runs / "pie-1", tmp_path / "mix-pie")
    _as_traffic_mix(runs / "dt-1", tmp_path / "mix-dt")
    res = aqmlab.compare([tmp_path / "mix-pie", tmp_path / "mix-dt"], tmp_path / "cmp", figures=["cbr_goodput_delay", "download_times", "bulk_goodput_cdf"])
    assert {n for n, _, _ in res.figures} == {"cbr_goodput_delay", "download_times", "bulk_goodput_cdf"}
    text = fig_texts(plots.draw("download_times", res.series))
    assert "download time (s)" in text and "73 kB" in text
    assert "mean goodput per CBR flow (kbps)" in fig_texts(plots.draw("cbr_goodput_delay", res.series))
    # per class: one panel per class (bulk, voip; web has no packets of its own here)
    assert "class voip" in fig_texts(plots.draw("class_delay_cdf", res.series))


def test_cli_compare(cli, runs, tmp_path):
    code, out, err = cli("compare", str(runs / "pie-1"), str(runs / "dt-1"), "--out", "c", "--figures", "queue_delay_cdf,drop_causes")
    assert code == 0, err
    assert (tmp_path / "c" / "figures" / "queue_delay_cdf.png").exists() and (tmp_path / "c" / "figures" / "drop_causes.png").exists()
    assert "queue p95 (ms)" in out
    code, _, err = cli("compare", str(runs / "pie-1"), "--figures", "pie_chart")
    assert code == 2 and "pie_chart" in err
    code, _, err = cli("compare", str(tmp_path))
    assert code == 2 and "neither a run folder" in err


# -- reproductions ---------------------------------------------------------------------------


def test_checks_give_verdicts_by_hand():
    c = rp.approx(30, 5)
    assert [c.verdict(v) for v in (30, 34.9, 25.5, 39, 21, 41, 19)] == ["agrees", "agrees", "agrees", "close", "close", "differs", "differs"]
    assert [rp.below(50, 10).verdict(v) for v in (10, 55, 61)] == ["agrees", "close", "differs"]
    assert [rp.above(0.8, 0.1).verdict(v) for v in (0.9, 0.75, 0.6)] == ["agrees", "close", "differs"]


def test_every_reproduction_declares_valid_data():
    reg = rp.registry()
    assert "madpie-proof" in reg
    for name, e in reg.items():
        g = rp.grid_for(e, quick=True)
        plan = g.plan()  # every combination validates
        assert len(plan) == g.size() > 0
        for f in e.figures:
            assert f.kind in plots.kinds(), (name, f.kind)
        axes = {a.name: set(a.levels) for a in e.axes}
        for c in e.claims:
            for w in c.measure.wheres():
                for k, v in w.items():
                    assert v in axes[k], (name, c.text, k, v)


def test_reproduce_quick_madpie_proof_runs_to_the_end(cli, tmp_path):
    code, out, err = cli("reproduce", "madpie-proof", "--quick", "--out", "r")
    assert code == 0, err
    d = tmp_path / "r"
    claims = json.loads((d / "claims.json").read_text())
    assert claims["reproduction"] == "madpie-proof" and claims["quick"] and claims["failed"] == 0
    by = {c["claim"]: c for c in claims["claims"]}
    assert len(by) == len(rp.get("madpie-proof").claims)
    pie_max = by["RTT 100 ms: the maximum queueing delay with PIE"]
    assert pie_max["verdict"] in ("agrees", "close", "differs") and 50 < pie_max["aqmlab"] <= 100.5
    madpie_rows = [c for c in claims["claims"] if "MADPIE" in c["claim"]]
    assert madpie_rows and all(c["aqmlab"] is not None for c in madpie_rows)
    md = (d / "claims.md").read_text()
    assert "| § | the paper says | paper | aqmlab |" in md
    for f in ("fig2_queue_delay_cdf", "fig2_utilization_cdf", "fig3_queue_delay_time", "fig4_drop_causes"):
        assert (d / "figures" / f"{f}.png").stat().st_size > 5_000
    assert "The paper's claims beside aqmlab's" in (d / "report.html").read_text()
    idx = pq.read_table(d / "index.parquet").to_pandas()
    assert set(idx["param.RTT"]) == {"100 ms", "500 ms"} and (idx.status == "ok").all()
    # started again, it redoes nothing
    code, out, err = cli("reproduce", "madpie-proof", "--quick", "--out", "r")
    assert code == 0 and json.loads((d / "claims.json").read_text())["claims"] == claims["claims"]


def test_reproduce_list_and_unknown_names(cli):
    code, out, _ = cli("reproduce", "--list")
    assert code == 0 and "madpie-proof" in out and "madpie-mix" in out and "pvq" in out
    code, _, err = cli("reproduce", "nope")
    assert code == 2 and "nope" in err and len(err.strip().splitlines()) == 1
