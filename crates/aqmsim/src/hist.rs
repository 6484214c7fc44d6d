//! Streaming log-linear histograms (the layout of Gil Tene's HdrHistogram): fixed
//! memory whatever the number of samples, so that a run without per-packet records
//! still gives the queueing-delay distribution.
//!
//! Values below 2^7 = 128 have a bucket each (exact). Above, each power of two
//! `[2^e, 2^(e+1))` is split into 128 buckets of width `2^(e-7)`: a bucket's width is
//! at most 1/128 of its lower bound, so its midpoint is within 1/256 (0.39 %) of any
//! value in it. With nanoseconds that is exact below 128 ns and within 0.39 % above,
//! up to 2^64 ns. 7,424 buckets of 8 bytes (58 KiB), allocated at the first sample.

/// Sub-bucket bits: 128 buckets per power of two.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets: 128 exact ones, then 128 per power of two from 2^7 to 2^63.
pub const BUCKETS: usize = (SUB + (64 - SUB_BITS as u64) * SUB) as usize;

/// The bucket of a value.
#[inline]
pub fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // the highest set bit, >= 7
    let shift = e - SUB_BITS;
    (SUB + shift as u64 * SUB + ((v >> shift) - SUB)) as usize
}

/// The values `[lo, hi)` of a bucket.
pub fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i + 1);
    }
    let shift = (i - SUB) / SUB;
    let sub = (i - SUB) % SUB + SUB;
    let lo = sub << shift;
    (lo, lo.saturating_add(1 << shift))
}

/// A histogram of `u64` values with their exact count, sum, minimum and maximum.
#[derive(Clone, Debug, Default)]
pub struct LogHist {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl LogHist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
            self.min = v;
        }
        self.counts[index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// The non-empty buckets: (index, count), in value order.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i, *c))
    }

    /// The value of rank `r` (0-based, in sorted order) within its bucket's error:
    /// the midpoint of the bucket holding it.
    pub fn at_rank(&self, r: u64) -> Option<u64> {
        let mut seen = 0;
        for (i, c) in self.nonzero() {
            seen += c;
            if r < seen {
                let (lo, hi) = bounds(i);
                return Some(lo + (hi - lo) / 2);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_by_hand() {
        assert_eq!(index(0), 0);
        assert_eq!(index(127), 127);
        // 128..255: width 1 (e = 7, shift 0)
        assert_eq!(index(128), 128);
        assert_eq!(index(255), 255);
        // 256..511: width 2
        assert_eq!(index(256), 256);
        assert_eq!(index(257), 256);
        assert_eq!(index(258), 257);
        assert_eq!(bounds(257), (258, 260));
        // 1 ms = 1_000_000 ns: highest bit 19, width 2^12 = 4096; 1e6 >> 12 = 244
        assert_eq!(index(1_000_000), (128 + 12 * 128 + (244 - 128)) as usize);
        assert_eq!(bounds(index(1_000_000)), (244 << 12, 245 << 12));
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        assert_eq!(bounds(BUCKETS - 1).0, 255 << 56);
    }

    proptest! {
        #[test]
        fn every_value_is_in_its_bucket_and_the_midpoint_is_within_0_39_percent(v in any::<u64>()) {
            let (lo, hi) = bounds(index(v));
            prop_assert!(lo <= v && (v < hi || hi == u64::MAX));
            let mid = lo + (hi - lo) / 2;
            prop_assert!((mid as f64 - v as f64).abs() <= v as f64 / 256.0);
        }

        #[test]
        fn ranks_match_the_sorted_values(mut vs in proptest::collection::vec(0u64..10_000_000_000, 1..500)) {
            let mut h = LogHist::default();
            for &v in &vs {
                h.record(v);
            }
            vs.sort();
            for (r, &v) in vs.iter().enumerate() {
                let got = h.at_rank(r as u64).unwrap();
                prop_assert!((got as f64 - v as f64).abs() <= v as f64 / 256.0, "rank {r}: {got} vs {v}");
            }
            prop_assert_eq!(h.count, vs.len() as u64);
            prop_assert_eq!(h.min, vs[0]);
            prop_assert_eq!(h.max, *vs.last().unwrap());
            prop_assert_eq!(h.sum, vs.iter().map(|&v| v as u128).sum::<u128>());
        }
    }
}
