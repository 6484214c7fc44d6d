"""Sweeps: grid expansion, validation, parallel runs, the DuckDB index, resuming a
killed sweep, failures, and the same results on a Dask LocalCluster."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import aqmlab
from aqmlab import grid, sweeps

SHORT = {"duration": "6s"}


def _summary(d):
    s = json.loads((Path(d) / "summary.json").read_text())
    for k in ("wall_seconds", "events_per_second"):
        s.pop(k)
    return s


# -- grid expansion -------------------------------------------------------------------


def test_crossed_dimensions_and_seeds_give_every_combination():
    g = grid.from_dict({"scenario": "madpie-proof", "vary": {"bottleneck.aqm.kind": ["pie", "droptail"], "bottleneck.delay": ["48ms", "148ms", "248ms"]}, "seeds": 2})
    plan = g.plan()
    assert len(plan) == 2 * 3 * 2 == g.size()
    combos = {(r.params["bottleneck.aqm.kind"], r.params["bottleneck.delay"], r.seed) for r in plan.runs}
    assert combos == {(a, d, s) for a in ("pie", "droptail") for d in ("48ms", "148ms", "248ms") for s in (1, 2)}
    for r in plan.runs:  # each run's scenario carries its values
        assert r.scenario["bottleneck"]["aqm"]["kind"] == r.params["bottleneck.aqm.kind"]
        assert r.scenario["bottleneck"]["delay"] == r.params["bottleneck.delay"]
        assert r.scenario["seed"] == r.seed
    # PIE keeps the base scenario's parameters; DropTail replaces the table
    pie = next(r for r in plan.runs if r.params["bottleneck.aqm.kind"] == "pie")
    assert pie.scenario["bottleneck"]["aqm"]["target"] == "20ms"


def test_zipped_keys_vary_together_and_cross_the_rest():
    g = grid.from_dict({
        "scenario": "madpie-proof",
        "vary": {"bottleneck.aqm.kind": ["pie", "droptail"]},
        "zip": [{"bottleneck.delay": ["48ms", "248ms"], "bottleneck.buffer": ["83pkts", "417pkts"]}],
        "seeds": [5],
    })
    plan = g.plan()
    assert len(plan) == 4
    pairs = {(r.params["bottleneck.delay"], r.params["bottleneck.buffer"]) for r in plan.runs}
    assert pairs == {("48ms", "83pkts"), ("248ms", "417pkts")}
    assert all(r.seed == 5 for r in plan.runs)


def test_named_levels_apply_their_overrides():
    g = grid.from_dict({
        "scenario": "madpie-proof",
        "levels": {"rtt": {"100": {"bottleneck.delay": "48ms"}, "500": {"bottleneck.delay": "248ms"}}},
        "set": {"duration": "7s", "flows.0.count": 3},
    })
    plan = g.plan()
    by = {r.params["rtt"]: r for r in plan.runs}
    assert by["100"].scenario["bottleneck"]["delay"] == "48ms" and by["500"].scenario["bottleneck"]["delay"] == "248ms"
    assert all(r.scenario["duration"] == "7s" and r.scenario["flows"][0]["count"] == 3 for r in plan.runs)


def test_whole_tables_as_values():
    g = sweeps.build_grid("madpie-proof", vary={"bottleneck.aqm": [{"kind": "pie", "target": "5ms"}, {"kind": "droptail"}]})
    plan = g.plan()
    aqm = [r.scenario["bottleneck"]["aqm"] for r in plan.runs]
    assert aqm[0]["kind"] == "pie" and aqm[0]["target"] == "5ms" and aqm[0]["tupdate"] == "15ms"  # RFC 8033 default
    assert aqm[1] == {"kind": "droptail"}


def test_run_names_are_stable_readable_and_change_with_the_scenario():
    a = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "248ms"]}, seeds=2).plan()
    b = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "248ms"]}, seeds=2).plan()
    assert [r.name for r in a.runs] == [r.name for r in b.runs]
    assert len({r.name for r in a.runs}) == 4
    assert a.runs[0].name.startswith("delay-48ms_s1_")
    c = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "248ms"]}, seeds=2, set={"duration": "10s"}).plan()
    assert not {r.name for r in a.runs} & {r.name for r in c.runs}  # another setting, another run


def test_command_line_values_are_read_as_set_reads_them():
    assert grid.split_values('48ms, 248ms') == ["48ms", "248ms"]
    assert grid.split_values('["0s", "1s"],["0s","2s"]') == ['["0s", "1s"]', '["0s","2s"]']
    assert [grid.parse_literal(v) for v in ("20", "0.5", "true", "48ms", '["0s", "1s"]')] == [20, 0.5, True, "48ms", ["0s", "1s"]]
    assert grid.toml_literal({"kind": "pie", "target": "20ms", "ecn": True}) == '{kind = "pie", target = "20ms", ecn = true}'
    assert grid.parse_seeds("5") == [1, 2, 3, 4, 5] and grid.parse_seeds("3,9") == [3, 9]


# -- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"scenario": "madpie-proof", "vary": {"bottleneck.delay": ["48ms", "-5ms"]}}, ["bottleneck.delay", "-5ms"]),
        ({"scenario": "madpie-proof", "vary": {"bottleneck.aqm.kind": ["pie", "nosuch"]}}, ["bottleneck.aqm.kind", "nosuch"]),
        ({"scenario": "madpie-proof", "vary": {"bottleneck.aqm.target": ["20ms", "20"]}}, ["bottleneck.aqm.target", "20"]),
        ({"scenario": "madpie-proof", "set": {"colour": "red"}}, ["colour"]),
        ({"scenario": "madpie-proof", "varry": {}}, ["varry"]),
        ({"scenario": "madpie-proof", "zip": [{"bottleneck.delay": ["48ms"], "duration": ["5s", "6s"]}]}, ["zip", "bottleneck.delay", "duration"]),
        ({"scenario": "madpie-proof", "vary": {"bottleneck.delay": []}}, ["bottleneck.delay", "no values"]),
        ({"scenario": "madpie-proof", "seeds": 0}, ["seeds"]),
        ({"scenario": "nope"}, ["nope"]),
    ],
)
def test_a_bad_field_or_value_is_named(spec, words):
    with pytest.raises(aqmlab.ScenarioError) as e:
        grid.from_dict(spec).plan()
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_cli_validates_the_whole_grid_before_writing_anything(cli, tmp_path):
    code, out, err = cli("sweep", "madpie-proof", "--vary", "bottleneck.delay=48ms,248ms", "--vary", "bottleneck.rate=10Mbps,fast", "--out", "sw")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aqmlab: error: ")
    assert "bottleneck.rate" in lines[0] and "fast" in lines[0]
    assert not (tmp_path / "sw").exists()


def test_cli_refuses_a_folder_that_is_not_a_sweep(cli, tmp_path):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep")
    code, _, err = cli("sweep", "madpie-proof", "--set", "duration=3s", "--out", "precious")
    assert code == 2 and "precious" in err
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep"


# -- running and querying ----------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("sw") / "small"
    res = aqmlab.sweep(
        "madpie-proof",
        vary={"bottleneck.aqm.kind": ["pie", "droptail"], "bottleneck.delay": ["48ms", "248ms"]},
        seeds=2,
        set=SHORT,
        out=out,
        jobs=2,
        progress=False,
    )
    return res


def test_a_sweep_writes_one_run_folder_per_combination_and_an_index(small):
    assert (small.ran, small.skipped, small.failed) == (8, 0, 0)
    idx = small.index()
    assert len(idx) == 8 and set(idx.status) == {"ok"}
    assert {"run", "status", "error", "seed", "param.bottleneck.aqm.kind", "param.bottleneck.delay", "bottleneck.queue_delay_ms.p95", "classes.bulk.goodput_mbps"} <= set(idx.columns)
    for _, row in idx.iterrows():
        d = small.out / row["dir"]
        s = json.loads((d / "summary.json").read_text())
        assert s["bottleneck"]["aqm"] == row["param.bottleneck.aqm.kind"]
        assert s["bottleneck"]["queue_delay_ms"]["p95"] == pytest.approx(row["bottleneck.queue_delay_ms.p95"])
        assert s["seed"] == row["seed"]
        assert json.loads((d / "scenario.json").read_text())["bottleneck"]["delay"] == row["param.bottleneck.delay"]
        assert not (d / "report.html").exists()  # per-run reports are off by default
    assert (small.out / "report.html").exists() and (small.out / "sweep.json").exists()


def test_duckdb_answers_p95_queueing_delay_by_aqm_and_rtt(small):
    df = aqmlab.query(small.out, """
        select "bottleneck.aqm" as aqm, "classes.bulk.base_rtt_ms" as rtt_ms,
               count(*) as runs, avg("bottleneck.queue_delay_ms.p95") as p95_ms
        from runs where status = 'ok' group by all order by aqm, rtt_ms""")
    assert list(zip(df.aqm, df.rtt_ms, df.runs)) == [("droptail", 100, 2), ("droptail", 500, 2), ("pie", 100, 2), ("pie", 500, 2)]
    # the same numbers straight from the run folders
    for _, row in df.iterrows():
        vals = []
        for d in (small.out / "runs").iterdir():
            s = json.loads((d / "summary.json").read_text())
            if s["bottleneck"]["aqm"] == row.aqm and s["classes"]["bulk"]["base_rtt_ms"] == row.rtt_ms:
                vals.append(s["bottleneck"]["queue_delay_ms"]["p95"])
        assert row.p95_ms == pytest.approx(np.mean(vals))
    # a BDP DropTail buffer queues longer than PIE, and up to one base RTT
    p95 = {(a, r): v for a, r, v in zip(df.aqm, df.rtt_ms, df.p95_ms)}
    for rtt in (100, 500):
        assert p95[("pie", rtt)] < p95[("droptail", rtt)] <= rtt


def test_duckdb_views_over_every_runs_tables(small):
    df = aqmlab.query(small.out, "select count(distinct run) as runs, count(*) as flows from flows")
    assert df.runs[0] == 8 and df.flows[0] == 80
    df = aqmlab.query(small.out, "select r.\"param.bottleneck.aqm.kind\" as aqm, sum(f.drops) as drops from flows f join runs r using (run) group by 1 order by 1")
    assert list(df.aqm) == ["droptail", "pie"] and (df.drops > 0).all()


def test_cli_query(cli, small):
    code, out, err = cli("query", str(small.out), 'select "param.bottleneck.aqm.kind" as aqm, count(*) as n from runs group by 1 order by 1', "--format", "csv")
    assert code == 0, err
    assert out.strip().splitlines() == ["aqm,n", "droptail,4", "pie,4"]
    sql = 'select "param.bottleneck.aqm.kind" as aqm, count(*) as n from runs group by 1 order by 1'
    for args in ((sql, str(small.out)), (str(small.out), "-e", sql), ("-e", sql, str(small.out))):  # the SQL first, or with -e
        code, out2, err = cli("query", *args, "--format", "csv")
        assert code == 0 and out2 == out, (args, err)
    code, _, err = cli("query", sql)
    assert code == 2 and "sweep folders" in err


def test_a_finished_sweep_started_again_runs_nothing(small):
    before = {p.name: (p / "summary.json").stat().st_mtime_ns for p in (small.out / "runs").iterdir()}
    res = aqmlab.sweep(
        "madpie-proof", vary={"bottleneck.aqm.kind": ["pie", "droptail"], "bottleneck.delay": ["48ms", "248ms"]},
        seeds=2, set=SHORT, out=small.out, jobs=2, progress=False, compare=False,
    )
    assert (res.ran, res.skipped) == (0, 8)
    assert before == {p.name: (p / "summary.json").stat().st_mtime_ns for p in (small.out / "runs").iterdir()}


# -- resuming after a kill ------------------------------------------------------------------


def test_a_killed_sweep_resumes_without_redoing_finished_runs(tmp_path):
    args = [sys.executable, "-m", "aqmlab.cli", "sweep", "madpie-proof", "--vary", "bottleneck.delay=48ms,98ms,148ms,198ms,248ms",
            "--seeds", "3", "--set", "duration=25s", "--jobs", "2", "--no-compare", "--out", "sw"]
    p = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    runs = tmp_path / "sw" / "runs"
    t0 = time.time()
    while time.time() - t0 < 120:
        done = [d for d in runs.iterdir() if (d / "summary.json").exists() and not d.name.startswith(".")] if runs.exists() else []
        if len(done) >= 4 or p.poll() is not None:
            break
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)  # the whole job, workers included, as a scheduler would
    p.wait()
    # a run killed between its last file and the move into place leaves a hidden temporary folder: not a finished run
    finished = {d.name: (d / "summary.json").stat().st_mtime_ns for d in runs.iterdir() if (d / "summary.json").exists() and not d.name.startswith(".")}
    assert 4 <= len(finished) < 15, "the sweep should be stopped halfway"
    q = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    assert f"{15 - len(finished)} ran, {len(finished)} already done, 0 failed" in " ".join(q.stdout.split())
    for name, mtime in finished.items():  # untouched
        assert (runs / name / "summary.json").stat().st_mtime_ns == mtime
    idx = pq.read_table(tmp_path / "sw" / "index.parquet").to_pandas()
    assert len(idx) == 15 and set(idx.status) == {"ok"}
    assert not [p for p in runs.iterdir() if p.name.startswith(".")]  # no half-written folders left


# -- failures --------------------------------------------------------------------------------


def _same_sweep(plan) -> str:
    """The sweep.json of a sweep folder that holds `plan` (so that it is resumed)."""
    return json.dumps({"grid": {"name": plan.grid.name}, "runs": [{"run": r.name, "hash": r.hash} for r in plan.runs]})


def test_a_failing_run_is_recorded_and_the_others_complete(tmp_path):
    g = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "148ms", "248ms"]}, set=SHORT)
    plan = g.plan()
    victim = plan.runs[1].name
    (tmp_path / "sw" / "runs").mkdir(parents=True)
    (tmp_path / "sw" / "sweep.json").write_text(_same_sweep(plan))
    (tmp_path / "sw" / "runs" / victim).write_text("a file where the run folder should go")
    res = sweeps.run_plan(plan, tmp_path / "sw", jobs=2, progress=False)
    assert (res.ran, res.failed) == (2, 1)
    assert "FileExistsError" in res.failures[victim]
    idx = res.index().set_index("run")
    assert idx.loc[victim, "status"] == "failed" and "FileExistsError" in idx.loc[victim, "error"]
    assert (idx.drop(victim).status == "ok").all()
    assert json.loads((tmp_path / "sw" / "failures" / f"{victim}.json").read_text())["traceback"]
    # fixed, the next start runs only the failed run
    (tmp_path / "sw" / "runs" / victim).unlink()
    res = sweeps.run_plan(plan, tmp_path / "sw", jobs=2, progress=False, compare=False)
    assert (res.ran, res.skipped, res.failed) == (1, 2, 0)
    assert set(res.index().status) == {"ok"} and not (tmp_path / "sw" / "failures" / f"{victim}.json").exists()


def test_cli_reports_a_failed_run_and_exits_nonzero(cli, tmp_path):
    plan = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "248ms"]}, set={"duration": "3s"}).plan()
    (tmp_path / "sw" / "runs").mkdir(parents=True)
    (tmp_path / "sw" / "sweep.json").write_text(_same_sweep(plan))
    (tmp_path / "sw" / "runs" / plan.runs[0].name).write_text("x")
    code, out, err = cli("sweep", "madpie-proof", "--vary", "bottleneck.delay=48ms,248ms", "--set", "duration=3s", "--out", "sw", "--no-compare")
    assert code == 1
    assert f"run {plan.runs[0].name} failed" in err
    assert "1 ran, 0 already done, 1 failed" in " ".join(out.split())


def test_a_script_whose_sweep_fails_entirely_exits_nonzero(tmp_path):
    # every run's folder is blocked by a file: aqmlab.sweep raises, so the script fails
    kw = dict(vary={"bottleneck.delay": ["48ms", "248ms"]}, set={"duration": "3s"})
    plan = sweeps.build_grid("madpie-proof", **kw).plan()
    (tmp_path / "sw" / "runs").mkdir(parents=True)
    # the same sweep's header, so the folder is taken as this sweep's (not refused as another's)
    runs = [{"run": r.name, "hash": r.hash} for r in plan.runs]
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps({"grid": {"name": "madpie-proof"}, "runs": runs}))
    for r in plan.runs:
        (tmp_path / "sw" / "runs" / r.name).write_text("x")
    script = tmp_path / "s.py"
    script.write_text("import aqmlab\nif __name__ == '__main__':\n    aqmlab.sweep('madpie-proof', out='sw', jobs=1, progress=False, "
                      f"vary={kw['vary']!r}, set={kw['set']!r})\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 1 and "SweepFailed: sweep: all 2 runs failed" in p.stderr


# -- Dask ------------------------------------------------------------------------------------


def test_a_local_cluster_gives_the_same_summaries_as_local_processes(tmp_path):
    distributed = pytest.importorskip("distributed")
    kw = dict(vary={"bottleneck.aqm.kind": ["pie", "droptail"]}, seeds=[3, 4], set={"duration": "8s", "bottleneck.delay": "98ms"}, progress=False, compare=False)
    local = aqmlab.sweep("madpie-proof", out=tmp_path / "local", jobs=2, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = aqmlab.sweep("madpie-proof", out=tmp_path / "dask", cluster=cluster.scheduler_address, **kw)
    assert local.ran == remote.ran == 4 and remote.failed == 0
    names = sorted(p.name for p in (tmp_path / "local" / "runs").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "dask" / "runs").iterdir())
    for n in names:
        assert _summary(tmp_path / "local" / "runs" / n) == _summary(tmp_path / "dask" / "runs" / n)
    a = pq.read_table(tmp_path / "local" / "runs" / names[0] / "packets.parquet")
    b = pq.read_table(tmp_path / "dask" / "runs" / names[0] / "packets.parquet")
    assert a.equals(b)


def test_a_dask_worker_killed_mid_sweep_loses_no_run(tmp_path):
    # a worker process killed (SIGKILL) while it runs: Dask reschedules its runs (or
    # they fail with KilledWorker and get one more try here); every run is done once
    distributed = pytest.importorskip("distributed")
    import threading

    kw = dict(vary={"bottleneck.aqm.kind": ["pie", "droptail", "codel", "red"]}, seeds=[1, 2, 3, 4], set={"duration": "30s"}, progress=False, compare=False)
    runs = tmp_path / "dask" / "runs"
    at_kill: list[int] = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        victim = next(iter(client.run(os.getpid).values()))

        def killer() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (runs.exists() and len(list(runs.glob("*/summary.json"))) >= 2):
                time.sleep(0.02)
            at_kill.append(len(list(runs.glob("*/summary.json"))))
            os.kill(victim, signal.SIGKILL)

        t = threading.Thread(target=killer)
        t.start()
        res = aqmlab.sweep("madpie-proof", out=tmp_path / "dask", cluster=client, **kw)
        t.join()
    assert at_kill and at_kill[0] < 16, at_kill  # killed with runs still to do
    assert (res.ran, res.failed) == (16, 0)
    idx = res.index()
    assert len(idx) == 16 and set(idx.status) == {"ok"} and idx.run.is_unique
    assert sorted(p.name for p in runs.iterdir()) == sorted(idx.run)
    print(f"\nDask worker {victim} killed after {at_kill[0]} of 16 runs: {res.ran} ran, {res.failed} failed, all 16 in the index")


def test_a_run_whose_dask_worker_is_lost_twice_is_recorded_as_failed(tmp_path, monkeypatch):
    # on Dask: a lost worker's task ends in KilledWorker at once (allowed-failures = 0),
    # aqmlab tries the run once more, and when that worker is lost too the run is
    # recorded as failed with the error; the others are done. The worker process dies
    # each time it starts the chosen run (AQMLAB_TEST_DIE_ON_RUN, inherited by the
    # cluster's worker processes), so both losses happen whatever the machine's load
    # (a killer polling the workers from outside missed the short retry on a busy
    # machine; scripts/dask_worker_kills.py still kills workers at random times)
    import importlib.util

    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    spec = importlib.util.spec_from_file_location("dask_worker_kills", Path(__file__).resolve().parents[1] / "scripts" / "dask_worker_kills.py")
    kills = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kills)
    kw = dict(vary={"bottleneck.aqm.kind": ["pie", "droptail", "codel", "red"]}, set={"duration": "30s"})
    target = sweeps.build_grid("madpie-proof", **kw).plan().runs[2].name
    out = tmp_path / "dask"
    monkeypatch.setenv("AQMLAB_TEST_DIE_ON_RUN", target)
    settings = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings), kills.cluster() as lc, distributed.Client(lc) as client:
        res = aqmlab.sweep("madpie-proof", out=out, cluster=client, progress=False, compare=False, **kw)
    assert target in res.failures and "lost twice" in res.failures[target] and "KilledWorker" in res.failures[target], res.failures
    assert res.failed == len(res.failures) and res.ran + res.failed == 4
    idx = res.index().set_index("run")
    assert idx.loc[target, "status"] == "failed" and "lost twice" in idx.loc[target, "error"]
    assert (out / "failures" / f"{target}.json").exists()
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(idx.index[idx.status == "ok"])


def test_runs_whose_worker_is_lost_twice_are_recorded_as_failed(tmp_path, monkeypatch):
    # the rule, on the local pool: a worker process that dies (here: each time the
    # victim runs) breaks the pool; its runs go to a new pool once, then are recorded
    g = sweeps.build_grid("madpie-proof", vary={"bottleneck.delay": ["48ms", "148ms", "248ms"]}, set=SHORT)
    plan = g.plan()
    victim = plan.runs[1].name
    monkeypatch.setenv("AQMLAB_TEST_DIE_ON_RUN", victim)
    res = sweeps.run_plan(plan, tmp_path / "sw", jobs=2, progress=False, compare=False)
    assert res.failed == 1 and victim in res.failures and "lost twice" in res.failures[victim], res.failures
    assert res.ran == 2
    idx = res.index().set_index("run")
    assert idx.loc[victim, "status"] == "failed" and "lost twice" in idx.loc[victim, "error"]
