//! Random streams derived from the run's seed and a component's name.
//!
//! Every consumer of randomness (each AQM's coin, each flow group's start times,
//! each application's think times) draws from its own xoshiro256++ stream, seeded
//! from `(run seed, name)`. Adding a flow therefore leaves every other component's
//! draws unchanged, and the same seed gives the same run on every machine (the
//! derivation uses only integer arithmetic; distributions use `libm`).

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub type SimRng = Xoshiro256PlusPlus;

/// FNV-1a, 64 bit: a stable hash of a component's name.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64's finalizer: spreads nearby inputs far apart.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The stream named `name` for run seed `seed`.
pub fn stream(seed: u64, name: &str) -> SimRng {
    SimRng::seed_from_u64(mix(mix(seed) ^ fnv1a(name)))
}

/// Uniform in `[0, 1)`, 53 bits.
pub fn uniform(r: &mut SimRng) -> f64 {
    (r.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform in `(0, 1]` (safe under a logarithm).
fn uniform_open0(r: &mut SimRng) -> f64 {
    1.0 - uniform(r)
}

/// Exponential with the given mean.
pub fn exponential(r: &mut SimRng, mean: f64) -> f64 {
    -mean * libm::log(uniform_open0(r))
}

/// Pareto (type I) with scale `k` (the minimum) and shape `alpha`.
pub fn pareto(r: &mut SimRng, k: f64, alpha: f64) -> f64 {
    k / libm::pow(uniform_open0(r), 1.0 / alpha)
}

/// Uniform integer in `[0, n)`.
pub fn below(r: &mut SimRng, n: u64) -> u64 {
    assert!(n > 0);
    // Lemire's multiply-shift; the bias (< n / 2^64) is irrelevant at these sizes.
    ((r.next_u64() as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a1: Vec<u64> = (0..4).map({ let mut r = stream(7, "flow.1"); move |_| r.next_u64() }).collect();
        let a2: Vec<u64> = (0..4).map({ let mut r = stream(7, "flow.1"); move |_| r.next_u64() }).collect();
        let b: Vec<u64> = (0..4).map({ let mut r = stream(7, "flow.2"); move |_| r.next_u64() }).collect();
        let c: Vec<u64> = (0..4).map({ let mut r = stream(8, "flow.1"); move |_| r.next_u64() }).collect();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }

    #[test]
    fn distribution_means_within_tolerance() {
        let mut r = stream(1, "test");
        let n = 200_000;
        let m: f64 = (0..n).map(|_| exponential(&mut r, 9.5)).sum::<f64>() / n as f64;
        assert!((m - 9.5).abs() / 9.5 < 0.01, "exponential mean {m}");
        // Pareto K=2.3 kB, shape 1.3 has mean K*a/(a-1) = 9.97 kB; the heavy tail makes
        // the sample mean converge slowly, so compare the median, K * 2^(1/a).
        let mut xs: Vec<f64> = (0..n).map(|_| pareto(&mut r, 2.3, 1.3)).collect();
        xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = xs[n / 2];
        let want = 2.3 * libm::pow(2.0, 1.0 / 1.3);
        assert!((med - want).abs() / want < 0.01, "pareto median {med} vs {want}");
        assert!(xs[0] >= 2.3);
        let u: f64 = (0..n).map(|_| uniform(&mut r)).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.005);
    }
}
