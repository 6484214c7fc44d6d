#!/usr/bin/env python3
"""Run the catalogue of bad inputs (tests/test_bad_inputs.py) and print its size and
pass count, by command.

    python scripts/bad_input_catalogue.py

Each case of the catalogue is one pytest test that checks, for one bad input, that the
command exits with status 2 (the Python API: raises the expected exception), that
stderr is one line starting `aqmlab: error: ` and naming the field and the value, that
there is no traceback, that the working folder is still empty and the input files are
unchanged. This script runs exactly those tests (in this process, through pytest) and
tabulates the outcomes. Exit status 0 if every case passed and there are at least 100.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


class Outcomes:
    """A pytest plugin that keeps each catalogue case's outcome."""

    def __init__(self) -> None:
        self.result: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):  # noqa: ANN001 (pytest hook)
        if report.when == "call" or report.outcome != "passed":
            self.result[report.nodeid] = report.outcome


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    import pytest

    sys.path.insert(0, str(TESTS))
    import test_bad_inputs as cat

    plugin = Outcomes()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        pytest.main([str(TESTS / "test_bad_inputs.py"), "-q", "-p", "no:cacheprovider", "-rN", "--tb=line"], plugins=[plugin])

    def outcome(test: str, case_id: str) -> str:
        hits = [v for k, v in plugin.result.items() if k.split("::")[-1] == f"{test}[{case_id}]"]
        return hits[0] if hits else "not run"

    cli_test = "test_bad_command_line_input_is_one_line_and_writes_nothing"
    api_test = "test_bad_python_api_input_raises_one_line_and_writes_nothing"
    rows: dict[str, list[int]] = collections.OrderedDict()
    failed: list[str] = []
    codes = collections.Counter(c.code for c in cat.CASES)
    for c in cat.CASES:
        group = f"aqmlab {c.argv[0]}" if c.argv else "aqmlab (no command)"
        if c.argv and c.argv[0] not in ("run", "show", "bench", "emulate", "sweep", "query", "compare", "reproduce", "validate", "analyze"):
            group = "aqmlab (unknown command)"
        r = rows.setdefault(group, [0, 0])
        r[0] += 1
        o = outcome(cli_test, c.id)
        r[1] += o == "passed"
        if o != "passed":
            failed.append(f"{c.id}: {o}")
    for c in cat.API_CASES:
        r = rows.setdefault("Python API", [0, 0])
        r[0] += 1
        o = outcome(api_test, c.id)
        r[1] += o == "passed"
        if o != "passed":
            failed.append(f"{c.id}: {o}")

    width = max(len(k) for k in rows)
    print(f"{'input to':<{width}}  cases  passed")
    for k, (n, ok) in rows.items():
        print(f"{k:<{width}}  {n:>5}  {ok:>6}")
    total = sum(n for n, _ in rows.values())
    passed = sum(ok for _, ok in rows.values())
    print(f"{'total':<{width}}  {total:>5}  {passed:>6}")
    print(f"command-line cases expecting exit status {', '.join(f'{k} ({v})' for k, v in sorted(codes.items()))}; "
          "each checked for one line naming the field and the value, no traceback, nothing written, inputs unchanged")
    for f in failed:
        print(f"FAILED {f}")
    return 0 if not failed and total >= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
