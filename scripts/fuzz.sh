#!/usr/bin/env bash
# Long fuzzing outside CI: the cargo-fuzz targets of fuzz/ (scenario parser, overrides,
# every AQM of the registry), each for HOURS (default 1), at the lowest priority. Needs
# nightly Rust and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
#   ./scripts/fuzz.sh 8              # eight hours each, the three targets side by side
#   ./scripts/fuzz.sh 0.15 --serial  # nine minutes each, one target after the other (one core)
#   TARGETS="scenario_text aqm" ./scripts/fuzz.sh 1   # some of the targets
# HOURS is wall time. The fuzzers run at nice 19 (NICE=0 for a bounded run at the normal
# priority; at nice 19 on a busy machine they get little of a core).
# Runs in fork mode: a finding is kept and the fuzzing goes on. Findings (a crash,
# time-out or out-of-memory input each) land in fuzz/artifacts/TARGET/; replay one with
#   cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-...
# Logs: fuzz/logs/TARGET.log (executions, coverage, corpus size). The corpus of earlier
# runs (fuzz/corpus/TARGET/) is the starting point (fork mode first replays it, which
# takes minutes for the scenario targets); SEEDS_ONLY=1 starts instead from the seeds
# alone (scenarios/*.toml for scenario_text), in fuzz/corpus/TARGET-seeds-only/. Ends
# with a table: per target the wall and CPU seconds, executions, executions per wall
# second, coverage (libFuzzer's cov), corpus size and findings.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
hours="${1:-1}"
serial="${2:-}"
nice="${NICE:-19}"
seconds=$(python3 -c "print(int(float('$hours') * 3600))")
read -r -a targets <<<"${TARGETS:-scenario_text scenario_overrides aqm}"
mkdir -p logs
nice -n "$nice" cargo +nightly fuzz build -O
run() {
    local t=$1 seeds=() dict=() corpus="corpus/$1"
    [ -n "${SEEDS_ONLY:-}" ] && corpus="corpus/$1-seeds-only"
    mkdir -p "$corpus" "artifacts/$t"
    if [ "$t" = scenario_text ]; then seeds=(../scenarios); dict=(-dict=scenario.dict); fi
    # CPU seconds of the fuzzer and its children: logs/TARGET.cpu
    /usr/bin/time -f "%U %S" -o "logs/$t.cpu" nice -n "$nice" cargo +nightly fuzz run -O "$t" "$corpus" "${seeds[@]}" -- \
        -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 "${dict[@]}" \
        >"logs/$t.log" 2>&1 || echo "$t: cargo fuzz exited with status $? (see fuzz/logs/$t.log)"
}
for t in "${targets[@]}"; do
    if [ "$serial" = --serial ]; then run "$t"; else run "$t" & fi
done
wait
python3 - "${targets[@]}" <<'PY'
import re, sys
from pathlib import Path
print(f"{'target':<20} {'wall s':>6} {'CPU s':>6} {'executions':>10} {'exec/s':>6} {'coverage':>8} {'corpus':>6}  findings (oom/timeout/crash; files in artifacts/)")
for t in sys.argv[1:]:
    last = [l for l in Path(f"logs/{t}.log").read_text(errors="replace").splitlines() if re.match(r"#\d+:", l)]
    m = re.match(r"#(\d+):.* cov: (\d+) .*corp: (\d+) .*oom/timeout/crash: (\S+) time: (\d+)s", last[-1]) if last else None
    # (executions: after the replay of the corpus, which libFuzzer's fork mode does not count)
    found = sorted(p.name for p in Path(f"artifacts/{t}").iterdir()) if Path(f"artifacts/{t}").exists() else []
    if not m:
        print(f"{t:<20} no status line in logs/{t}.log")
        continue
    n, cov, corp, ftc, secs = m.groups()
    cpu = Path(f"logs/{t}.cpu")
    try:
        cpu_s = f"{sum(float(x) for x in cpu.read_text().split()[-2:]):.0f}"
    except (OSError, ValueError):
        cpu_s = "?"
    print(f"{t:<20} {secs:>6} {cpu_s:>6} {n:>10} {int(n) // max(1, int(secs)):>6} {cov:>8} {corp:>6}  {ftc}; {', '.join(found) or 'none'}")
PY
