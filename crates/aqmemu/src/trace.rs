//! A Mahimahi packet-delivery trace (Netravali et al., "Mahimahi: Accurate
//! Record-and-Replay for HTTP", USENIX ATC 2015, §3.2, the link shell): one line per
//! delivery opportunity, the time in milliseconds at which the link may deliver one
//! MTU of 1504 bytes; the trace repeats with its last time as the period. As in
//! Mahimahi's link queue, a packet may use the rest of an opportunity that a previous
//! packet started, and a packet larger than what is left continues at the next one;
//! an opportunity that finds the queue empty is lost.

use aqm::{Duration, Rate, Time};

/// Bytes one opportunity carries (Mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u64 = 1504;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Opportunity times in ms, non-decreasing, the last one > 0.
    pub ms: Vec<u64>,
}

impl Trace {
    pub fn new(ms: Vec<u64>) -> Result<Trace, String> {
        if ms.is_empty() {
            return Err("trace: no delivery opportunities".into());
        }
        if let Some(i) = (1..ms.len()).find(|&i| ms[i] < ms[i - 1]) {
            return Err(format!("trace: line {}: {} ms comes before the previous line's {} ms", i + 1, ms[i], ms[i - 1]));
        }
        if *ms.last().unwrap() == 0 {
            return Err("trace: the last time must be greater than 0 ms (it is the period)".into());
        }
        Ok(Trace { ms })
    }

    pub fn period(&self) -> Duration {
        Duration::from_millis(*self.ms.last().unwrap())
    }

    /// The average rate the trace offers.
    pub fn mean_rate(&self) -> Rate {
        Rate::from_bps(self.ms.len() as u64 * OPPORTUNITY_BYTES * 8 * 1000 / *self.ms.last().unwrap())
    }

    /// Time of opportunity number `i` (counted from 0 across repetitions) after `base`.
    pub fn at(&self, base: Time, i: u64) -> Time {
        let n = self.ms.len() as u64;
        base + Duration::from_millis((i / n) * self.ms.last().unwrap() + self.ms[(i % n) as usize])
    }

    /// How many opportunities fall at or before `t`.
    pub fn count_until(&self, base: Time, t: Time) -> u64 {
        let Some(d) = t.checked_since(base) else { return 0 };
        let period = self.period().as_nanos();
        let (cycles, rest) = (d.as_nanos() / period, d.as_nanos() % period);
        cycles * self.ms.len() as u64 + self.ms.partition_point(|&m| m * 1_000_000 <= rest) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opportunities_repeat_with_the_last_time_as_period() {
        let t = Trace::new(vec![1, 1, 2]).unwrap();
        let b = Time::from_millis(100);
        let at: Vec<u64> = (0..6).map(|i| (t.at(b, i) - b).as_nanos() / 1_000_000).collect();
        assert_eq!(at, [1, 1, 2, 3, 3, 4]);
        assert_eq!(t.count_until(b, b), 0);
        assert_eq!(t.count_until(b, b + Duration::from_millis(1)), 2);
        assert_eq!(t.count_until(b, b + Duration::from_millis(3)), 5);
        assert_eq!(t.count_until(b, Time::ZERO), 0);
        // 3 x 1504 B every 2 ms
        assert_eq!(t.mean_rate().bps(), 3 * 1504 * 8 * 500);
    }

    #[test]
    fn malformed_traces_are_refused_with_the_line() {
        assert!(Trace::new(vec![]).is_err());
        assert_eq!(Trace::new(vec![1, 3, 2]).unwrap_err(), "trace: line 3: 2 ms comes before the previous line's 3 ms");
        assert!(Trace::new(vec![0, 0]).is_err());
    }
}
