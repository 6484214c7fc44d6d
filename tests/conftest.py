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


def fig_texts(fig) -> str:
    """Every text of a matplotlib Figure (titles, labels, tick labels, legends), joined."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    return "\n".join(t.get_text() for t in fig.findobj(Text))
