//! Random `--set` overrides on the built-in scenarios and on documents assembled from
//! valid pieces: the schema's paths with typed, extreme and nonsense values, plus raw
//! strings from the input. Never a panic; a run or a one-line error.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/aqmsim/tests/scenario_check/mod.rs"]
mod scenario_check;

use scenario_check::Mix;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let mut m = Mix(u64::from_le_bytes(data[..8].try_into().unwrap()));
    let text = if m.below(3) == 0 {
        scenario_check::assembled(&mut m)
    } else {
        let all = aqmsim::builtin::SCENARIOS;
        all[m.below(all.len())].1.to_string()
    };
    let mut o = vec!["duration=\"2s\"".to_string(), "metrics.warmup=\"0s\"".to_string()];
    let n = m.below(5);
    o.extend(scenario_check::overrides(&mut m, n));
    // the rest of the input: raw assignments, one per line
    o.extend(String::from_utf8_lossy(&data[8..]).lines().take(8).map(str::to_string));
    if let Err(e) = scenario_check::check(&text, &o, scenario_check::FUZZ) {
        panic!("{e}\n--- overrides: {o:?}\n--- document:\n{text}");
    }
});
