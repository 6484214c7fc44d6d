"""`aqmlab characterize` (RFC 7928): a short run of a few sections for two AQMs, its
summary.json's structure, and figures that must move the way the RFC's literature
says (CoDel below DropTail's latency; LEDBAT yields behind DropTail's large buffer and
competes behind CoDel)."""

import json

import pytest

from aqmlab.characterize import characterize, plan_size
from aqmlab.characterize.analysis import elasticity, stat
from aqmlab.characterize.summary import _ellipse as ellipse
from aqmlab.characterize.variants import VariantError, parse


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rfc7928")
    return characterize(["droptail", "codel"], out=out, quick=True, sections=["2.7", "5.4"], jobs=2, progress=False)


def test_summary_has_the_sections_asked_for_and_each_figure_over_seeds(run):
    s = json.loads((run.out / "summary.json").read_text())
    assert s == run.summary
    assert set(s["sections"]) == {"2", "2.7", "5.4"}  # 2.7 brings the runs of 2
    assert [a["label"] for a in s["aqms"]] == ["droptail", "codel"]
    assert s["runs"]["planned"] == run.runs == 4 and s["runs"]["failed"] == 0
    for key in ("2", "5.4"):
        sec = s["sections"][key]
        assert sec["title"] and sec["rfc"] and sec["aqmlab"] and sec["metrics"]
        for aqm in ("droptail", "codel"):
            figs = sec["aqms"][aqm]
            assert set(figs) <= set(sec["metrics"]), set(figs) - set(sec["metrics"])
            for name, v in figs.items():
                assert v is None or (set(v) == {"mean", "sd", "n"} and v["n"] == 1 and v["sd"] is None), (key, aqm, name, v)
    gd = s["sections"]["2.7"]["aqms"]["codel"]
    assert gd["points"] >= 20 and len(gd["ellipse"]["center"]) == 2


def test_codel_holds_latency_below_droptail_and_ledbat_is_reprioritized(run):
    S = run.summary["sections"]
    dt, cd = S["2"]["aqms"]["droptail"], S["2"]["aqms"]["codel"]
    assert cd["delay_p50_ms"]["mean"] < 0.5 * dt["delay_p50_ms"]["mean"], (cd["delay_p50_ms"], dt["delay_p50_ms"])
    assert cd["delay_p95_ms"]["mean"] < dt["delay_p95_ms"]["mean"]
    # §2.7: the ellipses' centres move the same way
    assert S["2.7"]["aqms"]["codel"]["delay_ms"] < S["2.7"]["aqms"]["droptail"]["delay_ms"]
    # §5.4 (Gong, Rossi, Testa, Valenti & Täht): LEDBAT yields behind a 5-BDP DropTail
    # buffer and competes once CoDel keeps the queue below its 100 ms target
    assert S["5.4"]["aqms"]["droptail"]["lbe_share"]["mean"] < 0.25
    assert S["5.4"]["aqms"]["codel"]["lbe_share"]["mean"] > 0.3


def test_report_has_a_part_per_section_with_its_figures(run):
    page = (run.out / "report.html").read_text()
    for key in ("2", "2.7", "5.4"):
        assert f"id='s{key}'" in page
    assert "fig-s2.7-delay-goodput" in page and (run.out / "figures" / "s2.7-delay-goodput.png").stat().st_size > 1000
    assert page.count("<img") >= 4


def test_a_second_start_resumes_without_running_again(run):
    again = characterize(["droptail", "codel"], out=run.out, quick=True, sections=["2.7", "5.4"], jobs=1, progress=False, report=False)
    assert again.ran == 0 and again.failed == 0
    assert again.summary["sections"]["5.4"]["aqms"] == run.summary["sections"]["5.4"]["aqms"]


def test_variants_name_their_parameters_and_bad_ones_fail_in_one_line(cli, tmp_path):
    v = parse("pie:target=5ms,tupdate=30ms")
    assert (v.kind, v.params, v.label) == ("pie", {"target": "5ms", "tupdate": "30ms"}, "pie:target=5ms,tupdate=30ms")
    assert parse("codel").fq_form() == {"kind": "fq_codel"}
    assert parse("droptail").fq_form() is None
    for bad, word in (("pie:tagret=5ms", "tagret"), ("nosuchaqm", "nosuchaqm"), ("pie:target", "target")):
        with pytest.raises(VariantError, match=word):
            parse(bad)
    code, out, err = cli("characterize", "pie:tagret=5ms", "--quick", "--out", str(tmp_path / "x"))
    assert code == 2 and "tagret" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
    code, out, err = cli("characterize", "pie:target=-5ms", "--quick", "--out", str(tmp_path / "y"))
    assert code == 2 and "target" in err and len(err.strip().splitlines()) == 1, err


@pytest.fixture(scope="module")
def ecn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rfc7928-ecn")
    return characterize(["dualpi2", "codel"], out=out, quick=True, sections=["4.5"], jobs=2, progress=False, report=False)


def test_ect1_runs_where_the_aqm_has_an_l4s_queue_and_says_why_not_elsewhere(ecn_run):
    sec = ecn_run.summary["sections"]["4.5"]
    assert ecn_run.runs == 5 and ecn_run.failed == 0  # dualpi2: drop, ecn, ect1; codel: drop, ecn
    assert sec["levels"] == ["drop", "ecn", "ect1"]
    l4s = sec["aqms"]["dualpi2"]["ect1"]
    share = l4s["l4s_share"]["mean"]
    assert 0 < share < 1, share
    # DualPI2's L queue (Prague, ECT(1)) holds its packets far shorter than the C queue
    assert l4s["l4s_delay_p99_ms"]["mean"] < 0.5 * l4s["classic_delay_p99_ms"]["mean"], l4s
    assert "ect1" not in sec["aqms"]["codel"]
    assert any(n.startswith("signal ect1: not run") and "L4S" in n for n in sec["notes"]["codel"]), sec["notes"]
    assert not any("ect1" in n for n in sec["notes"].get("dualpi2", []))
    # DualPI2 has no ecn switch but marks ECT(0): the ecn case marks, the drop case drops
    d = sec["aqms"]["dualpi2"]
    assert d["ecn"]["marks"]["mean"] > 0 and d["drop"]["marks"]["mean"] == 0 and d["drop"]["drops"]["mean"] > 0
    assert any("marks ECN-capable packets always" in n for n in sec["notes"]["dualpi2"])
    assert sec["aqms"]["codel"]["mark_drop_ratio"] > 0


def test_the_plan_counts_runs_per_section_without_running():
    q = plan_size(["droptail", "pie"], quick=True)
    full = plan_size(["droptail", "pie"], quick=False)
    assert q["runs"] == sum(q["runs_by_section"].values())
    assert set(q["runs_by_section"]) >= {"2", "4.4", "4.5", "4.6", "5.1", "5.4", "6", "8", "8.3", "9.2", "10"}
    # PIE has an FQ form, DropTail not; the full run has 5 seeds and more cases
    assert q["runs_by_section"]["4.6"] == 3
    assert full["runs"] > 5 * q["runs"]


def test_helpers_by_hand():
    assert stat([1.0, 3.0, None]) == {"mean": 2.0, "sd": pytest.approx(2 ** 0.5), "n": 2}
    assert stat([None]) is None
    # y = 3 x^-1: elasticity -1
    assert elasticity([0.5, 1, 2], [6.0, 3.0, 1.5]) == pytest.approx(-1.0)
    import numpy as np

    e = ellipse(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]))
    assert e["center"] == [1.0, 1.0] and e["semi_axes"][0] == pytest.approx((4 / 3) ** 0.5)
