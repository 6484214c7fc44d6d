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
    "manifest.json",
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
    html = (d / "report.html").read_text()
    assert "id='fig-queue_delay_cdf'><svg " in html and "madpie-proof" in html
    assert "\\u00a7" not in html and "§" in html  # no escaped JSON: the scenario is TOML
    m = json.loads((d / "manifest.json").read_text())
    assert m["command"] == ["aqmlab", "run", "--set", "duration=30s", "--out", "r"]
    assert m["aqmlab_version"] and m["python"] and m["host"] and m["os"].startswith(("Linux", "Darwin"))
    assert m["started"].endswith("Z") and m["wall_seconds"] > 0 and "commit" in m and m["rustc"].startswith("rustc ")


def test_default_output_folder_is_named_after_scenario_and_seed(cli, tmp_path):
    code, _, err = cli("run", "--seed", "3", "--set", "duration=5s", "--no-report")
    assert code == 0, err
    assert (tmp_path / "runs" / "madpie-proof-seed3-duration=5s" / "summary.json").exists()
    assert not (tmp_path / "runs" / "madpie-proof-seed3-duration=5s" / "report.html").exists()


@pytest.mark.parametrize(
    "override, field, value",
    [
        ("colour=red", "colour", "colour"),
        ("bottleneck.rate=10", "bottleneck.rate", "10"),
        ("bottleneck.delay=-5ms", "bottleneck.delay", "-5ms"),
        ("bottleneck.aqm.kind=nosuch", "bottleneck.aqm.kind", "nosuch"),
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
    cc = d["traffic"]["tcp"]["cc"]  # a name, or the congestion control's table with its kind
    assert (cc if isinstance(cc, str) else cc["kind"]) == "cubic"
    code, out, _ = cli("list")
    assert code == 0 and "8033" in out and "madpie-proof" in out and "fq_codel" in out


def test_show_prints_the_resolved_scenario(cli):
    code, out, _ = cli("show", "madpie-proof", "--set", "bottleneck.delay=48ms", "--json")
    assert code == 0
    s = json.loads(out)
    assert s["bottleneck"]["delay"] == "48ms"
    assert s["bottleneck"]["aqm"]["alpha"] == 0.125


def test_show_prints_toml_that_runs_to_the_same_results(cli, tmp_path):
    code, out, err = cli("show", "madpie-proof", "--set", "duration=5s", "--set", "bottleneck.delay=48ms", "--seed", "4")
    assert code == 0, err
    import tomllib

    assert tomllib.loads(out)["bottleneck"]["delay"] == "48ms"
    (tmp_path / "shown.toml").write_text(out)
    assert cli("run", "shown.toml", "--out", "a", "--no-report")[0] == 0
    assert cli("run", "madpie-proof", "--set", "duration=5s", "--set", "bottleneck.delay=48ms", "--seed", "4", "--out", "b", "--no-report")[0] == 0
    sa, sb = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("a", "b"))
    for s in (sa, sb):
        s.pop("wall_seconds"), s.pop("events_per_second")
    assert sa == sb


def _images(html: str) -> list[str]:
    import re

    return re.findall(r"<figure id='fig-[a-z_]+'>(.*?)</figure>", html, re.S)


def test_a_run_folder_and_its_scenario_json_run_again_to_identical_figures(cli, tmp_path):
    assert cli("run", "--set", "duration=8s", "--seed", "2", "--out", "first")[0] == 0
    for again, arg in (("again", "first"), ("again-json", "first/scenario.json")):
        code, _, err = cli("run", arg, "--out", again)
        assert code == 0, err
        for f in ("packets.parquet", "flows.parquet", "timeseries.parquet"):
            assert pq.read_table(tmp_path / again / f).equals(pq.read_table(tmp_path / "first" / f)), (again, f)
        imgs = _images((tmp_path / again / "report.html").read_text())
        assert len(imgs) >= 5 and imgs == _images((tmp_path / "first" / "report.html").read_text()), again


def test_default_folder_names_carry_the_overrides_and_replacing_a_run_says_so(cli, tmp_path):
    code, _, err = cli("run", "--set", "duration=5s", "--no-report")
    assert code == 0 and err == ""
    assert (tmp_path / "runs" / "madpie-proof-seed1-duration=5s" / "summary.json").exists()
    long = ["--set", "duration=5s", "--set", "bottleneck.delay=48ms", "--set", "bottleneck.aqm.target=15ms", "--set", "flows.0.count=3"]
    assert cli("run", *long, "--no-report")[0] == 0
    hashed = [p.name for p in (tmp_path / "runs").iterdir() if "-set-" in p.name]
    assert len(hashed) == 1 and hashed[0].startswith("madpie-proof-seed1-set-") and len(hashed[0].rsplit("-", 1)[1]) == 8
    code, _, err = cli("run", "--set", "duration=5s", "--no-report")
    assert code == 0 and "replacing the run in runs/madpie-proof-seed1-duration=5s" in err


def test_switching_the_aqm_kind_with_its_parameters_set_warns(cli):
    code, _, err = cli("show", "madpie-proof", "--set", "bottleneck.aqm.kind=codel")
    assert code == 0  # show does not warn
    code, _, err = cli("run", "madpie-proof", "--set", "duration=2s", "--set", "bottleneck.aqm.kind=codel", "--no-report", "--out", "w")
    assert code == 0
    assert "warning: bottleneck.aqm.kind=codel replaces the pie AQM and its settings (target=20ms" in err
    code, _, err = cli("run", "madpie-proof", "--set", "duration=2s", "--set", "bottleneck.aqm.target=25ms", "--no-report", "--out", "w")
    assert code == 0 and "warning" not in err


def test_every_option_has_help_text():
    import argparse

    from aqmlab.cli import build_parser

    def walk(p, where):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    yield from walk(sp, f"{where} {name}")
            elif not isinstance(a, argparse._HelpAction):
                yield where, a

    missing = [f"{w}: {a.option_strings or a.dest}" for w, a in walk(build_parser(), "aqmlab") if not a.help]
    assert missing == []


def test_the_command_line_loads_no_numeric_library_to_start(cli):
    code = "import sys, aqmlab.cli as c; c.build_parser(); print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'matplotlib', 'pyarrow', 'pandas'}))"
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(cli, shell):
    code, out, _ = cli("completion", shell)
    assert code == 0 and "aqmlab" in out and len(out) > 200


def test_completion_offers_subcommands_and_scenarios(tmp_path):
    import os
    import subprocess
    import sys

    def complete(line: str) -> list[str]:
        out = tmp_path / "completions"
        env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\n",
               "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
        subprocess.run([sys.executable, "-m", "aqmlab.cli"], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True)
        return out.read_text().split()

    assert "run" in complete("aqmlab ru")
    assert "madpie-proof" in complete("aqmlab run madpie-p")


def test_list_filters_by_topic_and_name(cli):
    code, out, _ = cli("list", "aqms", "pie")
    assert code == 0 and "tupdate" in out and "RFC 8033" in out and "codel" not in out.lower().split("madpie")[0]
    code, out, _ = cli("list", "scenarios")
    assert code == 0 and "madpie-proof" in out and "tupdate" not in out
    code, out, _ = cli("list", "aqms", "--json")
    assert code == 0 and {a["kind"] for a in json.loads(out)["aqms"]} >= {"pie", "codel"} and "scenarios" not in json.loads(out)
    code, _, err = cli("list", "aqms", "nope")
    assert code == 2 and "nope" in err and len(err.strip().splitlines()) == 1
    code, out, _ = cli("list", "tcp")
    assert code == 0 and "cubic" in out
    # the congestion controls' titles and sources come from their files (tcp/cc/*.rs)
    code, out, _ = cli("list", "tcp", "bbr")
    assert code == 0 and "BBR" in out and "Cardwell" in out and "(none)" in out
    code, out, _ = cli("list", "tcp", "bbr", "--json")
    (bbr,) = json.loads(out)["congestion_controls"]
    assert bbr["kind"] == "bbr" and bbr["simulated"] and bbr["linux"] == "bbr" and bbr["params"] == []


def test_plot_writes_pdf_svg_and_png_in_paper_and_slides_styles(cli, tmp_path):
    assert cli("run", "--set", "duration=6s", "--out", "r1", "--no-report")[0] == 0
    assert cli("run", "--set", "duration=6s", "--set", "bottleneck.aqm.kind=droptail", "--out", "r2", "--no-report")[0] == 0
    code, out, err = cli("plot", "r1", "r2", "--kind", "goodput_delay", "--out", "gd.pdf")
    assert code == 0, err
    assert (tmp_path / "gd.pdf").read_bytes()[:5] == b"%PDF-"
    code, _, err = cli("plot", "r1", "--kind", "queue_delay_cdf", "--format", "svg", "--style", "slides", "--width", "8", "--height", "4.5", "--out", "q.svg")
    assert code == 0, err
    svg = (tmp_path / "q.svg").read_text()
    assert "<svg" in svg and 'width="576pt"' in svg and 'height="324pt"' in svg
    code, _, err = cli("plot", "r1", "--kind", "cwnd_time", "--format", "png")
    assert code == 0 and (tmp_path / "cwnd_time.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = cli("plot", "r1", "--kind", "nope")
    assert code == 2 and "nope" in err and "goodput_delay" in err
    code, _, err = cli("plot", "r1", "--kind", "download_times")
    assert code == 1 and "no data" in err
    code, out, _ = cli("plot", "--list")
    assert code == 0 and "goodput_delay" in out and "RFC 7928" in out


def test_bench_prints_speed(cli):
    code, out, err = cli("bench", "--set", "duration=10s", "--repeat", "1")
    assert code == 0, err
    assert "events per second" in out and "bottleneck packets per second" in out


def test_paper_figures_keep_every_label_inside_the_page(cli, tmp_path):
    """A paper figure is a 3.5 in column (one panel) or at most a 7.16 in page width,
    and none of its text (titles, axis labels, tick labels, legend) is cut off."""
    import aqmlab
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    assert cli("run", "madpie-mix", "--set", "duration=8s", "--set", "metrics.warmup=1s", "--out", "mix", "--no-report")[0] == 0
    assert cli("run", "madpie-mix", "--set", "duration=8s", "--set", "metrics.warmup=1s", "--set", "bottleneck.aqm.kind=codel",
               "--out", "mix2", "--no-report")[0] == 0
    drawn = 0
    for kind in aqmlab.plots.kinds():
        fig = aqmlab.plots.figure(kind, [tmp_path / "mix", tmp_path / "mix2"], style="paper")
        if fig is None:
            continue
        w, h = fig.get_size_inches()
        assert w <= 7.16 + 1e-9, (kind, w)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        tight = fig.get_tightbbox(canvas.get_renderer())  # inches: every artist drawn, text included
        assert tight.x0 >= -0.02 and tight.y0 >= -0.02 and tight.x1 <= w + 0.02 and tight.y1 <= h + 0.02, (kind, tight, (w, h))
        drawn += 1
    assert drawn >= 8
