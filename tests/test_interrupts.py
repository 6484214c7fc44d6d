"""Ctrl-C and SIGTERM: every command stops cleanly with one line and exit code 130 or
143, keeps what was finished, leaves no process or half-written file; a second
Ctrl-C forces. The long version (20 interruptions of a sweep at random moments) is
`scripts/sweep_interrupts.py`; a short one runs here."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aqmlab import cli, interrupts

ROOT = Path(__file__).resolve().parents[1]
# a run that takes many seconds and little memory (summaries only)
LONG = ["--set", "duration=30000s", "--set", "record.packets=false", "--set", "record.flow_series=false"]


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "aqmlab.cli", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
        # as at a terminal (a background job starts with SIGINT ignored, and Python keeps it so)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _group(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(f[2]) == pgid and f[0] != "Z":
                out.append(int(d))
    return out


def _wait_for(cond, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_writes_nothing_and_says_so_on_one_line(tmp_path, sig):
    p = _start(["run", *LONG, "--out", "r"], tmp_path)
    time.sleep(3.0)  # imports, checks, then the simulation
    assert p.poll() is None
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"aqmlab: interrupted ({signal.Signals(sig).name}): "), err
    assert "nothing written" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_sweep_stops_its_workers_keeps_and_indexes_finished_runs(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "sw"
    # two short runs finish, two long ones are in progress when the signal comes
    args = ["sweep", "madpie-proof", "--zip", "duration=20s,21s,30000s,30001s", "--set", "record.packets=false", "--set", "record.flow_series=false", "--jobs", "2", "--out", str(out)]
    p = _start(args, tmp_path)
    _wait_for(lambda: len(list(out.glob("runs/*/summary.json"))) == 2)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)  # Ctrl-C at a terminal: the whole process group
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and lines[-1].startswith("aqmlab: interrupted (SIGINT): 2 of 4 runs finished, kept and indexed"), err
    time.sleep(0.3)
    assert _group(p.pid) == []  # the workers are gone
    idx = pq.read_table(out / "index.parquet").to_pandas()
    assert sorted(idx.status) == ["ok", "ok", "pending", "pending"]
    assert not [q for q in out.rglob("*") if ".tmp-" in q.name or ".old-" in q.name]
    # SIGTERM on the next start (a scheduler stopping the job): exit code 143
    p = _start(args, tmp_path)
    time.sleep(4.0)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143 and err.strip().splitlines()[-1].startswith("aqmlab: interrupted (SIGTERM): 2 of 4 runs finished"), err
    time.sleep(0.3)
    assert _group(p.pid) == []


def test_a_sweep_interrupted_again_and_again_ends_identical_to_an_uninterrupted_one(tmp_path):
    # the short version of scripts/sweep_interrupts.py (SIGINT, Ctrl-C to the group,
    # SIGTERM; each time: exit code, one line, no process left, index consistent)
    spec = importlib.util.spec_from_file_location("sweep_interrupts", ROOT / "scripts" / "sweep_interrupts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--times", "3", "--runs", "4", "--no-compare", "--work", str(tmp_path)]) == 0


def test_a_second_signal_forces_an_exit_at_once_and_kills_the_children(tmp_path):
    # a command whose cleanup would take long (a section a first signal does not cut
    # short, with a child process): the second Ctrl-C ends it at once, child killed
    code = textwrap.dedent(
        """
        import os, signal, subprocess, sys, time
        from aqmlab import interrupts
        with interrupts.handling():
            child = subprocess.Popen(["sleep", "60"])
            print(child.pid, flush=True)
            try:
                with interrupts.deferred():
                    os.kill(os.getpid(), signal.SIGINT)   # held: the section goes on
                    time.sleep(0.2)
                    print("held", flush=True)
                    os.kill(os.getpid(), signal.SIGINT)   # the second: forced
                    time.sleep(5)
                    print("not reached", flush=True)
            finally:
                print("cleanup ran", flush=True)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    out = p.stdout.split()
    assert p.returncode == 130, p.stderr
    assert out[1:] == ["held"], out
    assert p.stderr.strip().startswith("aqmlab: interrupted again (SIGINT): stopped at once"), p.stderr
    child = int(out[0])

    def dead() -> bool:
        try:
            return open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    # SIGKILL is delivered when the child next runs: on a loaded machine it can still
    # be runnable ("R") for a moment after the parent has exited (`sleep 60` left alive
    # would sleep, "S", for a minute)
    _wait_for(dead, timeout=10.0)


def test_a_first_signal_during_a_protected_section_is_raised_when_it_ends(tmp_path):
    code = textwrap.dedent(
        """
        import os, signal
        from aqmlab import interrupts
        steps = []
        with interrupts.handling():
            try:
                with interrupts.deferred():
                    os.kill(os.getpid(), signal.SIGTERM)
                    steps.append("section finished")
                steps.append("not reached")
            except interrupts.Interrupted as e:
                steps.append(f"raised {e.name} {e.exit_code}")
        print(";".join(steps))
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert p.stdout.strip() == "section finished;raised SIGTERM 143", p.stdout + p.stderr


@pytest.mark.parametrize("cmd", ["run", "sweep", "compare", "reproduce", "validate", "emulate", "query", "show", "list", "bench"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_every_command_turns_an_interruption_into_one_line_and_its_exit_code(cmd, sig, monkeypatch, capsys, tmp_path):
    # the handling lives in cli.main, around every command (a new one gets it too)
    monkeypatch.chdir(tmp_path)

    def interrupted(a):
        interrupts.note("what this command keeps")
        raise interrupts.Interrupted(sig)

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd").choices[cmd]
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    sub.set_defaults(fn=interrupted)
    argv = {"validate": ["validate", "ns3"], "query": ["query", ".", "select 1"], "compare": ["compare", "."], "sweep": ["sweep", "--out", "s"]}.get(cmd, [cmd])
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert cli.main(argv) == 128 + sig
    err = capsys.readouterr().err
    assert err == f"aqmlab: interrupted ({signal.Signals(sig).name}): what this command keeps\n"
    # and the handlers are put back afterwards
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_an_interrupted_reproduction_keeps_its_finished_runs(tmp_path):
    out = tmp_path / "rep"
    p = _start(["reproduce", "madpie-proof", "--quick", "--jobs", "1", "--out", str(out)], tmp_path)
    _wait_for(lambda: len(list(out.glob("runs/*/summary.json"))) >= 1, timeout=120)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    if p.returncode == 0:
        pytest.skip("the quick reproduction finished before the signal")
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("aqmlab: interrupted (SIGTERM): "), err
    done = {q.parent.name for q in out.glob("runs/*/summary.json")}
    assert done
    import pyarrow.parquet as pq

    idx = pq.read_table(out / "index.parquet").to_pandas()
    assert set(idx[idx.status == "ok"].run) == done
    assert json.loads((out / "sweep.json").read_text())["reproduction"] == "madpie-proof"


def test_a_signal_swallowed_by_a_finalizer_is_raised_again_at_the_next_check():
    # raised inside __del__ (or a weakref callback), the exception would be printed as
    # "Exception ignored in ..." and lost; it is kept and raised at the next check()
    code = textwrap.dedent(
        """
        import os, signal, time
        from aqmlab import interrupts

        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.1)  # the handler runs here, inside the finalizer

        with interrupts.handling():
            x = Finalized()
            del x
            print("went on", flush=True)
            try:
                interrupts.check()
                print("not raised")
            except interrupts.Interrupted as e:
                print("raised", e.name)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert p.stdout.split("\n")[:2] == ["went on", "raised SIGINT"], p.stdout + p.stderr
    assert "Exception ignored" not in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_resumed_sweep_interrupted_before_its_first_run_says_what_was_done_before(tmp_path, monkeypatch, capsys):
    # found by scripts/sweep_interrupts.py: a resumed sweep stopped in its start-up said
    # "nothing run yet; the same command starts the sweep" beside runs done earlier
    import shutil

    from aqmlab import sweeps

    out = tmp_path / "s"
    argv = ["sweep", "madpie-proof", "--vary", "bottleneck.delay=10ms,20ms", "--set", "duration=2s", "--no-compare", "-q", "--out", str(out)]
    assert cli.main(argv) == 0
    capsys.readouterr()

    def stopped(*a, **k):
        raise interrupts.Interrupted(signal.SIGINT)

    monkeypatch.setattr(sweeps, "run_plan", stopped)
    assert cli.main(argv) == 130
    assert capsys.readouterr().err == f"aqmlab: interrupted (SIGINT): no run started; 2 of 2 runs were done before, in {out}; the same command resumes\n"
    shutil.rmtree(out)  # a new folder
    assert cli.main(argv) == 130
    assert capsys.readouterr().err == f"aqmlab: interrupted (SIGINT): nothing run yet; the same command starts the sweep in {out}\n"
