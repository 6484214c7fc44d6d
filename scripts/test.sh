#!/usr/bin/env bash
# The whole test suite, Rust and Python, from a fresh clone:
#   ./scripts/test.sh
# Installs what it needs into the active Python environment (a virtualenv is
# recommended): the package in release mode with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: cargo test (aqm, aqmsim)"
cargo test --release --workspace --quiet

echo "== Python: installing aqmlab[test,docs] (release build)"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet ".[test,docs]"

echo "== Python: pytest"
# run from outside the source tree so that the installed package is what is tested;
# the tests also build the docs site strictly and run the notebooks in examples/
(cd tests && python -m pytest "$@")
