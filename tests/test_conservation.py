"""Packet conservation is enforced on every run: the balances are checked before
anything is written, listed in conservation.ok, and a run that breaks one fails loudly
(SimulationError, exit status 1, one line, nothing written)."""

from __future__ import annotations

import copy
import json

import pytest

import aqmlab
from aqmlab import _core, cli, conservation, sweeps
from aqmlab.results import RunResult

SHORT = {"duration": "5s", "record.packets": False}


@pytest.fixture(scope="module")
def raw():
    src = aqmlab.source("madpie-proof")
    return _core.run(src.text, src.format, [f"{k}={json.dumps(v)}" for k, v in SHORT.items()])


def _doctored(raw, change):
    r = dict(raw)
    meta = json.loads(raw["meta"])
    change(meta)
    r["meta"] = json.dumps(meta)
    return r


def test_every_balance_of_a_run_is_checked_and_written(raw, tmp_path):
    r = RunResult(dict(raw))
    c = r.meta["conservation"]
    assert c["created"] == c["delivered"] + c["dropped"] + c["in_flight"] and c["created"] > 1000
    # the whole run, then one line per link (bottleneck, its reverse, the access links)
    assert r.conservation[0] == f"created {c['created']} = delivered {c['delivered']} + dropped {c['dropped']} + in flight {c['in_flight']}"
    links = [l for l in r.conservation if l.startswith("link ")]
    assert len(links) == len(r.meta["links"]) >= 2
    b = next(l for l in r.meta["links"] if l["name"] == "bottleneck")["stats"]
    held = b["arrivals"] - b["dequeued"] - sum(b["drops"])
    assert f"link bottleneck: arrived {b['arrivals']} = dequeued {b['dequeued']} + dropped {sum(b['drops'])} + queued at the end {held}" in links
    r.write(tmp_path / "run", report=False)
    assert (tmp_path / "run" / "conservation.ok").read_text().splitlines() == r.conservation


@pytest.mark.parametrize(
    "what, change, says",
    [
        ("a packet lost", lambda m: m["conservation"].__setitem__("delivered", m["conservation"]["delivered"] - 1), "created"),
        ("a packet made twice", lambda m: m["conservation"].__setitem__("in_flight", m["conservation"]["in_flight"] + 1), "in flight"),
        ("a queue that lost one", lambda m: m["links"][0]["stats"].__setitem__("dequeued", m["links"][0]["stats"]["arrivals"] + 1), "link"),
        ("a counter gone wrong", lambda m: m["links"][0]["stats"].__setitem__("arrivals", -1), "not a count"),
        ("no counters at all", lambda m: m.pop("conservation"), "no conservation counters"),
    ],
)
def test_a_broken_balance_fails_loudly_on_one_line(raw, tmp_path, what, change, says):
    bad = _doctored(raw, change)
    with pytest.raises(aqmlab.SimulationError) as e:
        RunResult(bad)
    msg = str(e.value)
    assert msg.startswith("packet conservation") and says in msg and "\n" not in msg, msg
    assert "report it" in msg


def test_balances_the_core_adds_per_link_or_per_flow_are_checked_too(raw):
    # the shape the core may report next: lists of named balances inside "conservation"
    def per_flow(ok: bool):
        def change(m):
            m["conservation"]["flows"] = [{"name": f"flow {i}", "created": 10, "delivered": 7, "dropped": 2, "in_flight": 1 if ok or i != 3 else 2} for i in range(5)]
            m["conservation"]["links"] = {"bottleneck": {"created": 5, "delivered": 5, "dropped": 0, "in_flight": 0}}
        return change

    good = RunResult(_doctored(raw, per_flow(True)))
    assert "flows flow 3: created 10 = delivered 7 + dropped 2 + in flight 1" in good.conservation
    assert "links bottleneck: created 5 = delivered 5 + dropped 0 + in flight 0" in good.conservation
    with pytest.raises(aqmlab.SimulationError) as e:
        RunResult(_doctored(raw, per_flow(False)))
    assert "flows flow 3: created 10 != delivered 7 + dropped 2 + in flight 2" in str(e.value)


def test_the_command_exits_1_and_writes_nothing(raw, tmp_path, monkeypatch, capsys):
    bad = _doctored(raw, lambda m: m["conservation"].__setitem__("dropped", m["conservation"]["dropped"] + 3))
    monkeypatch.setattr(_core, "run", lambda *a, **k: copy.copy(bad))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", "--set", "duration=5s", "--out", "r"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and err.startswith("aqmlab: error: packet conservation violated: created"), err
    assert list(tmp_path.iterdir()) == []


def test_in_a_sweep_the_run_is_recorded_as_failed_with_the_message(raw, tmp_path, monkeypatch):
    bad = _doctored(raw, lambda m: m["conservation"].__setitem__("dropped", 0))
    monkeypatch.setattr(_core, "run", lambda *a, **k: copy.copy(bad))
    plan = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "98ms"]}, set=SHORT).plan()
    res = sweeps.run_plan(plan, tmp_path / "sw", jobs=1, progress=False, compare=False)
    assert res.failed == 2 and all("packet conservation violated" in e for e in res.failures.values())
    assert not list((tmp_path / "sw" / "runs").iterdir())


def test_the_checker_reads_any_balance_wherever_it_sits():
    meta = {"conservation": {"created": 3, "delivered": 1, "dropped": 1, "in_flight": 1, "per_link": [{"created": 1, "delivered": 1, "dropped": 0, "in_flight": 0}]}}
    assert conservation.check(meta) == ["created 3 = delivered 1 + dropped 1 + in flight 1", "per_link 0: created 1 = delivered 1 + dropped 0 + in flight 0"]
