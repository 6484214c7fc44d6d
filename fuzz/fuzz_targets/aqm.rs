//! Every AQM of the registry, with random parameters derived from its defaults and a
//! random packet sequence: the invariants of `crates/aqm/tests/harness` (each packet
//! back exactly once, the limit kept, probabilities in [0, 1], drops and marks counted
//! by cause) or a one-line refusal of the parameters.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/aqm/tests/harness/mod.rs"]
mod harness;

#[derive(Arbitrary, Debug)]
struct Input {
    kind: u8,
    param_seed: u64,
    mutation_rate: u8,
    limit: u32,
    rng_seed: u64,
    ops: Vec<(bool, u16, u16, u8, u8)>,
}

fuzz_target!(|input: Input| {
    let kinds = aqm::AqmSpec::KINDS;
    let kind = kinds[input.kind as usize % kinds.len()].kind;
    let spec = match harness::random_spec(kind, input.param_seed, (input.mutation_rate % 60) as u32) {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.is_empty() && !e.contains('\n'), "{kind}: error not on one line: {e:?}");
            return;
        }
    };
    let ops: Vec<harness::Op> = input
        .ops
        .iter()
        .take(2000)
        .map(|&(arrive, gap, size, flow, ecn)| {
            let gap_us = gap as u32 % 5000;
            if arrive {
                harness::Op::Arrive { gap_us, size: 1 + size as u32 % 9000, flow: flow % 16, ecn }
            } else {
                harness::Op::Depart { gap_us }
            }
        })
        .collect();
    if let Err(e) = harness::play(&spec, harness::limit_of(input.limit), &ops, input.rng_seed) {
        panic!("{spec:?}: {e}");
    }
});
