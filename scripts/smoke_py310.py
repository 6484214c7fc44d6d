"""A smoke test for the oldest Python aqmlab supports (.ci/run runs it with 3.10):
a short run with its report, a sweep grid from a TOML file, `aqmlab show` as TOML."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import aqmlab
from aqmlab.grid import load_spec

assert sys.version_info[:2] == (3, 10), sys.version
with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    r = aqmlab.run("madpie-proof", overrides={"duration": "5s"})
    r.write(d / "run")
    assert (d / "run" / "report.html").exists() and json.loads((d / "run" / "summary.json").read_text())["sim_seconds"] == 5
    (d / "grid.toml").write_text('scenario = "madpie-proof"\nseeds = 2\n[set]\nduration = "5s"\n[vary]\n"bottleneck.aqm.kind" = ["pie", "droptail"]\n')
    assert load_spec(d / "grid.toml").size() == 4
    shown = subprocess.run([sys.executable, "-m", "aqmlab.cli", "show", "madpie-proof"], capture_output=True, text=True, check=True).stdout
    (d / "shown.toml").write_text(shown)
    subprocess.run([sys.executable, "-m", "aqmlab.cli", "run", str(d / "shown.toml"), "--set", "duration=5s", "--out", str(d / "again"), "-q"], check=True)
print("python 3.10 smoke test: ok")
