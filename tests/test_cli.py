"""The command line: the default run, listings, and bad input."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

EXPECTED_FILES = {
    "summary.json",
    "scenario.json",
    "packets.parquet",
    "flows.parquet",
    "timeseries.parquet",
    "transfers.parquet",
    "datagrams.parquet",
    "flow_trace.parquet",
    "histograms.parquet",
    "conservation.ok",
    "report.html",
    "figures",
}


def test_default_run_writes_every_file_and_prints_the_headline(cli, tmp_path):
    code, out, err = cli("run", "--set", "duration=30s", "--out", "r")
    assert code == 0, err
    d = tmp_path / "r"
    assert {p.name for p in d.iterdir()} == EXPECTED_FILES
    s = json.loads((d / "summary.json").read_text())
    assert s["scenario"] == "madpie-proof" and s["sim_seconds"] == 30
    c = s["conservation"]
    assert (d / "conservation.ok").read_text().splitlines()[0] == (
        f"created {c['created']} = delivered {c['delivered']} + dropped {c['dropped']} + in flight {c['in_flight']}"
    )
    assert "queueing delay p50" in out and "utilization" in out
    assert (d / "figures" / "queue_delay_cdf.png").stat().st_size > 10_000
    assert (d / "figures" / "queue_delay_cdf.svg").exists()
    html = (d / "report.html").read_text()
    assert "queue_delay_cdf.svg" in html and "madpie-proof" in html


def test_default_output_folder_is_named_after_scenario_and_seed(cli, tmp_path):
    code, _, err = cli("run", "--seed", "3", "--set", "duration=5s", "--no-report")
    assert code == 0, err
    assert (tmp_path / "runs" / "madpie-proof-seed3" / "summary.json").exists()
    assert not (tmp_path / "runs" / "madpie-proof-seed3" / "report.html").exists()


@pytest.mark.parametrize(
    "override, field, value",
    [
        ("colour=red", "colour", "colour"),
        ("bottleneck.rate=10", "bottleneck.rate", "10"),
        ("bottleneck.delay=-5ms", "bottleneck.delay", "-5ms"),
        ("bottleneck.aqm.kind=blue", "bottleneck.aqm.kind", "blue"),
        ("bottleneck.buffer=0pkts", "bottleneck.buffer", "0pkts"),
        ("bottleneck.aqm.target=20", "bottleneck.aqm.target", "20"),
        ("flows.0.tcp.cc=vegas", "flows[0].tcp.cc", "vegas"),
        ("flows.0.count=0", "flows[0].count", "0"),
        ("duration=0s", "duration", ""),
    ],
)
def test_bad_input_is_a_one_line_error_naming_field_and_value_and_nothing_is_written(cli, tmp_path, override, field, value):
    code, out, err = cli("run", "--set", override, "--out", "bad")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("aqmlab: error: ")
    assert field in lines[0] and value in lines[0], lines[0]
    assert not (tmp_path / "bad").exists()
    assert not any(p.name.startswith(".bad") for p in tmp_path.iterdir())


def test_missing_scenario_file_is_a_clear_error(cli):
    code, _, err = cli("run", "no-such-file.toml")
    assert code == 2 and "no-such-file.toml" in err and len(err.strip().splitlines()) == 1


def test_invalid_toml_is_a_clear_error(cli, tmp_path):
    (tmp_path / "broken.toml").write_text("duration = \n")
    code, _, err = cli("run", "broken.toml")
    assert code == 2 and "TOML" in err


def test_a_scenario_file_runs(cli, tmp_path):
    (tmp_path / "s.toml").write_text(
        """
        name = "tiny"
        duration = "5s"
        [bottleneck]
        rate = "5Mbps"
        delay = "10ms"
        buffer = "50pkts"
        aqm = "pie"
        [[flows]]
        name = "bulk"
        count = 2
        """
    )
    code, _, err = cli("run", "s.toml", "--out", "o", "--no-report")
    assert code == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["scenario"] == "tiny" and s["bottleneck"]["aqm"] == "pie"
    assert s["bottleneck"]["buffer_packets"] == 50


def test_out_refuses_a_folder_that_is_not_a_run(cli, tmp_path):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("do not delete")
    code, _, err = cli("run", "--set", "duration=5s", "--out", "precious")
    assert code == 2 and "precious" in err
    assert (tmp_path / "precious" / "thesis.tex").read_text() == "do not delete"


def test_rerun_replaces_a_previous_run_folder(cli, tmp_path):
    assert cli("run", "--set", "duration=5s", "--out", "r", "--no-report")[0] == 0
    assert cli("run", "--set", "duration=6s", "--out", "r", "--no-report")[0] == 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["sim_seconds"] == 6


def test_list_shows_scenarios_aqms_parameters_and_sources(cli):
    code, out, _ = cli("list", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["default_scenario"] == "madpie-proof"
    kinds = {a["kind"]: a for a in d["aqms"]}
    assert {"droptail", "pie"} <= set(kinds)
    pie = {p["name"]: p for p in kinds["pie"]["params"]}
    assert pie["target"]["default"] == "15ms" and "RFC 8033" in pie["target"]["doc"]
    assert pie["tupdate"]["default"] == "15ms"
    assert d["traffic"]["tcp"]["cc"]["kind"] == "cubic"  # tcp.cc is a table of the registry
    code, out, _ = cli("list")
    assert code == 0 and "RFC 8033" in out and "madpie-proof" in out


def test_show_prints_the_resolved_scenario(cli):
    code, out, _ = cli("show", "madpie-proof", "--set", "bottleneck.delay=48ms")
    assert code == 0
    s = json.loads(out)
    assert s["bottleneck"]["delay"] == "48ms"
    assert s["bottleneck"]["aqm"]["alpha"] == 0.125


def test_bench_prints_speed(cli):
    code, out, err = cli("bench", "--set", "duration=10s", "--repeat", "1")
    assert code == 0, err
    assert "events per second" in out and "bottleneck packets per second" in out
