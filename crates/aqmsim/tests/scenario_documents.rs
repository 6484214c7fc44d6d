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
        let mut o = vec!["duration=\"2s\"".to_string()];
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
                let mut o = vec!["duration=\"2s\"".to_string()];
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
