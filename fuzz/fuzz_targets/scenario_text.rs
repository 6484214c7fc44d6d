//! The scenario parser on arbitrary text: never a panic; a scenario (which then
//! round-trips through its resolved JSON and, when cheap, runs without breaking
//! conservation) or a one-line error. Lines at the top of the form `--set KEY=VALUE`
//! are taken as overrides. Seed corpus: `scenarios/*.toml`; dictionary: `scenario.dict`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/aqmsim/tests/scenario_check/mod.rs"]
mod scenario_check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut overrides = Vec::new();
    let mut rest = text;
    while let Some(line) = rest.strip_prefix("--set ") {
        let (o, tail) = line.split_once('\n').unwrap_or((line, ""));
        overrides.push(o.to_string());
        rest = tail;
    }
    if let Err(e) = scenario_check::check(rest, &overrides, scenario_check::FUZZ) {
        panic!("{e}");
    }
});
