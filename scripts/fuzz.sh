#!/usr/bin/env bash
# Long fuzzing outside CI: the cargo-fuzz targets of fuzz/ (scenario parser, overrides,
# every AQM of the registry), each for HOURS (default 1), at the lowest priority, one
# process per target. Needs nightly Rust and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
#   ./scripts/fuzz.sh 8            # eight hours each
# Runs in fork mode: a finding is kept and the fuzzing goes on. Findings (a crash,
# time-out or out-of-memory input each) land in fuzz/artifacts/TARGET/; replay one with
#   cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-...
# Logs: fuzz/logs/TARGET.log (executions, coverage, corpus size).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
hours="${1:-1}"
seconds=$(python3 -c "print(int(float('$hours') * 3600))")
targets=(scenario_text scenario_overrides aqm)
mkdir -p logs
nice -n 19 cargo +nightly fuzz build -O
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    seeds=()
    [ "$t" = scenario_text ] && seeds=(../scenarios) && dict=(-dict=scenario.dict) || dict=()
    nice -n 19 cargo +nightly fuzz run -O "$t" "corpus/$t" "${seeds[@]}" -- \
        -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 "${dict[@]}" \
        >"logs/$t.log" 2>&1 &
done
wait
for t in "${targets[@]}"; do
    echo "== $t"; grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done" "logs/$t.log" | tail -3
    ls "artifacts/$t" 2>/dev/null | sed 's/^/  finding: /' || true
done
