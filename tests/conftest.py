import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def cli(tmp_path):
    """Run the `aqmlab` command; returns (exit code, stdout, stderr)."""

    def run(*args, cwd=None):
        p = subprocess.run([sys.executable, "-m", "aqmlab.cli", *args], capture_output=True, text=True, cwd=cwd or tmp_path)
        return p.returncode, p.stdout, p.stderr

    return run


def short(**extra):
    """Overrides for a short version of the default scenario."""
    o = {"duration": "20s"}
    o.update(extra)
    return o
