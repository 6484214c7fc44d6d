//! Property tests over arbitrary scenario documents (see `scenario_check/`): built-in
//! scenarios mutated at random, documents assembled from valid pieces, random
//! overrides. None may panic; each ends in a run (or a deadline) or a one-line error,
//! and every scenario that parses reads back from its resolved JSON unchanged. The
//! same checks run for hours under cargo-fuzz (`fuzz/`); what they found is pinned
//! below as regression tests.

mod scenario_check;

use proptest::prelude::*;
use scenario_check::{assembled, check, mutated_builtin, overrides, Mix, Outcome, CI};

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn mutated_builtin_scenarios_run_or_are_refused_on_one_line(seed in any::<u64>()) {
        let text = mutated_builtin(&mut Mix(seed));
        check(&text, &[], CI).map_err(|e| TestCaseError::fail(format!("{e}\n--- document:\n{text}")))?;
    }

    #[test]
    fn assembled_documents_run_or_are_refused_on_one_line(seed in any::<u64>()) {
        let text = assembled(&mut Mix(seed));
        check(&text, &[], CI).map_err(|e| TestCaseError::fail(format!("{e}\n--- document:\n{text}")))?;
    }

    #[test]
    fn random_overrides_run_or_are_refused_on_one_line(seed in any::<u64>(), n in 1usize..4) {
        let mut m = Mix(seed);
        let (name, text) = aqmsim::builtin::SCENARIOS[m.below(aqmsim::builtin::SCENARIOS.len())];
        let mut o = vec!["duration=\"2s\"".to_string(), "metrics.warmup=\"0s\"".to_string()];
        o.extend(overrides(&mut m, n));
        check(text, &o, CI).map_err(|e| TestCaseError::fail(format!("{e}\n--- {name} with {o:?}")))?;
    }
}

#[test]
fn the_generators_reach_every_outcome() {
    // guard against vacuous properties: over a few hundred documents each generator
    // makes some that run and some that are refused
    let mut ran = [0; 3];
    let mut refused = [0; 3];
    for seed in 0..150u64 {
        let docs = [
            (mutated_builtin(&mut Mix(seed)), vec![]),
            (assembled(&mut Mix(seed)), vec![]),
            (aqmsim::builtin::SCENARIOS[0].1.to_string(), {
                let mut o = vec!["duration=\"2s\"".to_string(), "metrics.warmup=\"0s\"".to_string()];
                o.extend(overrides(&mut Mix(seed), 1));
                o
            }),
        ];
        for (i, (text, o)) in docs.iter().enumerate() {
            match check(text, o, CI).unwrap_or_else(|e| panic!("{e}\n{text}\n{o:?}")) {
                Outcome::Ran | Outcome::Stopped => ran[i] += 1,
                Outcome::Refused(_) => refused[i] += 1,
                Outcome::TooBig => {}
            }
        }
    }
    // (mutations mostly break a document: they exercise the errors; a few still run)
    for (i, least_ran) in [(0, 3), (1, 30), (2, 5)] {
        assert!(ran[i] >= least_ran && refused[i] >= 10, "generator {i}: {} ran, {} refused", ran[i], refused[i]);
    }
}

// -- what the fuzzing found (fuzz/, scripts/fuzz.sh), each pinned -----------------------

fn refused(overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match check(aqmsim::builtin::get("madpie-proof").unwrap(), &o, CI) {
        Ok(Outcome::Refused(m)) => m,
        other => panic!("{overrides:?}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_initial_retransmission_timeout_of_zero_is_refused_instead_of_running_forever() {
    // the timer fired again and again at the same instant; the run never advanced
    let m = refused(&["duration=\"2s\"", "flows.0.tcp.rto_initial=\"0s\""]);
    assert!(m.starts_with("flows[0].tcp.rto_initial: must be positive"), "{m}");
}

#[test]
fn delays_that_overflow_the_clock_are_refused_instead_of_panicking() {
    // a path's delays of 2^64-1 ns each were accepted; summing them panicked
    let m = refused(&["flows.0.path.sender_delay=\"18446744073709551615ns\"", "flows.0.path.receiver_delay=\"18446744073709551615ns\""]);
    assert!(m.starts_with("flows[0].path.") && m.contains("invalid duration \"18446744073709551615ns\": at most 10000000s"), "{m}");
}

#[test]
fn errors_stay_on_one_line_when_the_input_holds_control_characters() {
    // an unknown key with a carriage return in it came back verbatim in the message
    for text in ["\"a\\rb\" = 1\n", "\"\\u0001aqm\\r\" = 2\n"] {
        match check(text, &[], CI) {
            Ok(Outcome::Refused(m)) => assert!(!m.chars().any(char::is_control), "{m:?}"),
            other => panic!("{other:?}"),
        }
    }
    let m = refused(&["--set \r\u{0}x"]);
    assert!(!m.chars().any(char::is_control), "{m:?}");
}
