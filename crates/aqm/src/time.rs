//! Integer-nanosecond time.
//!
//! [`Time`] is an instant (nanoseconds since the start of a run or of a bottleneck
//! process); [`Duration`] is a span. Both are `u64` nanoseconds: no floating-point
//! clock anywhere, so that equal inputs give bit-identical outputs on any machine.
//! The shape follows smoltcp's `time.rs`: an instant and a duration kept apart,
//! with only the arithmetic that makes sense between them.

use core::fmt;
use core::ops::{Add, AddAssign, Sub, SubAssign};

/// An instant, in nanoseconds since the origin of the clock that produced it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

/// A span of time in nanoseconds (never negative).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as `f64`, for reporting only (never fed back into the clock).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// `self - earlier`, or zero if `earlier` is later than `self`.
    pub const fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    pub const fn checked_since(self, earlier: Time) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as `f64`: for control laws written in seconds (PIE's alpha and beta
    /// are in Hz) and for reporting.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    pub const fn checked_mul(self, k: u64) -> Option<Duration> {
        match self.0.checked_mul(k) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }
    pub fn mul_f64(self, k: f64) -> Duration {
        Duration((self.0 as f64 * k).round().max(0.0) as u64)
    }
    pub fn div_u64(self, k: u64) -> Duration {
        Duration(self.0 / k)
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.checked_add(d.0).expect("time overflow"))
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Duration> for Time {
    type Output = Time;
    fn sub(self, d: Duration) -> Time {
        Time(self.0.checked_sub(d.0).expect("time before origin"))
    }
}
impl Sub<Time> for Time {
    type Output = Duration;
    /// Panics if `rhs` is later than `self`; use [`Time::saturating_since`] where that can happen.
    fn sub(self, rhs: Time) -> Duration {
        Duration(self.0.checked_sub(rhs.0).expect("negative duration"))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.checked_add(d.0).expect("duration overflow"))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.checked_sub(d.0).expect("negative duration"))
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}", Duration(self.0))
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Duration {
    /// The shortest exact rendering in the largest unit that divides it: `20ms`, `1.5s`, `250us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::units::fmt_scaled(f, self.0 as u128, &[(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_and_span_arithmetic() {
        let t = Time::from_millis(10) + Duration::from_micros(500);
        assert_eq!(t.as_nanos(), 10_500_000);
        assert_eq!(t - Time::from_millis(10), Duration::from_micros(500));
        assert_eq!(Time::from_millis(1).saturating_since(Time::from_millis(2)), Duration::ZERO);
        assert_eq!(Time::from_millis(1).checked_since(Time::from_millis(2)), None);
    }

    #[test]
    fn display_uses_largest_exact_unit() {
        assert_eq!(Duration::from_millis(20).to_string(), "20ms");
        assert_eq!(Duration::from_millis(1500).to_string(), "1.5s");
        assert_eq!(Duration::from_nanos(1).to_string(), "1ns");
        assert_eq!(Duration::ZERO.to_string(), "0s");
    }
}
