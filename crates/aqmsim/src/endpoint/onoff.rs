//! `onoff`: a UDP source that alternates on and off periods, as ns-3's
//! `OnOffApplication` and ns-2's Exponential and Pareto On/Off sources
//! (`Application/Traffic/Exponential`, `Application/Traffic/Pareto`).
//!
//! While on, the source sends `packet_size` datagrams at `rate`; while off, nothing.
//! The periods are drawn from `on` and `off` (fixed, exponential, uniform, or Pareto
//! with a mean and a shape, [`crate::dist::TimeDist`]), alternately from the flow's
//! own random stream, starting with an off period (ns-3's `StartApplication`
//! schedules the first on period after an off draw; ns-2's generator starts with
//! its idle time).
//!
//! As ns-3's `OnOffApplication` (`m_residualBits`), a datagram leaves when the
//! source has accumulated `packet_size * 8` bits of sending time at `rate`, and the
//! part accumulated when an on period ends is carried to the next one. So the
//! long-run rate is exactly `rate * E[on] / (E[on] + E[off])`, whatever the period
//! lengths. Time is counted in bit-nanoseconds (rate in b/s times ns) in integers:
//! nothing is rounded away between datagrams, and a datagram's time is the first
//! nanosecond at which its bits are complete.

use aqm::{Bytes, Duration, Rate, Time};
use serde::{Deserialize, Serialize};

use super::cbr::{check_datagrams, datagram, DatagramSink, DatagramSource};
use super::{AppEvent, Cx, FlowSetup, SendStep, TrafficKind};
use crate::dist::TimeDist;
use crate::rng::SimRng;

/// An on/off UDP source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffSpec {
    /// The sending rate while on, counting whole datagrams (IP + UDP headers
    /// included): ns-3's `DataRate`, ns-2's `rate_`.
    pub rate: Rate,
    /// Bytes on the wire per datagram, headers included (1500 B, as `cbr`).
    #[serde(default = "mtu")]
    pub packet_size: Bytes,
    /// The on periods (ns-2's `burst_time_`: exponential of mean 500 ms).
    #[serde(default = "half_second")]
    pub on: TimeDist,
    /// The off periods (ns-2's `idle_time_`: exponential of mean 500 ms).
    #[serde(default = "half_second")]
    pub off: TimeDist,
    /// Send datagrams ECN-capable (ECT(0)); an AQM then marks them instead of dropping.
    #[serde(default)]
    pub ecn: bool,
}

fn mtu() -> Bytes {
    Bytes(1500)
}

fn half_second() -> TimeDist {
    TimeDist::Exponential(Duration::from_millis(500))
}

impl OnOffSpec {
    /// The long-run sending rate, b/s: `rate * E[on] / (E[on] + E[off])`.
    pub fn mean_rate_bps(&self) -> f64 {
        let (on, off) = (self.on.mean().as_nanos() as f64, self.off.mean().as_nanos() as f64);
        self.rate.bps() as f64 * on / (on + off)
    }
}

impl TrafficKind for OnOffSpec {
    const FAMILY: &'static str = "datagrams";
    type Endpoint = OnOff;
    fn check(&self) -> Result<(), String> {
        check_datagrams(self.rate, self.packet_size)?;
        if self.on.mean().is_zero() {
            return Err(format!("on: the on periods must have a positive mean, got {}", self.on.mean()));
        }
        Ok(())
    }
    fn datagrams(&self) -> Option<(u64, u32)> {
        Some((self.mean_rate_bps().round() as u64, self.packet_size.0 as u32))
    }
    fn build(&self, f: &FlowSetup<'_>) -> OnOff {
        OnOff::new(self, f.rng(), f.start, f.stop)
    }
}

/// An on/off UDP source and its sink.
#[derive(Debug)]
pub struct OnOff {
    size: u32,
    rate_bps: u64,
    ecn: bool,
    on: TimeDist,
    off: TimeDist,
    rng: SimRng,
    /// No datagram leaves at or after this time.
    stop: Time,
    /// The current (or next) on period, `[on_from, on_until)`.
    on_from: Time,
    on_until: Time,
    /// Bit-nanoseconds accumulated towards the next datagram at `credit_at`.
    credit: u128,
    credit_at: Time,
    /// When the next datagram leaves (None: no more before `stop`).
    next: Option<Time>,
    /// Datagrams sent so far (the next one's number).
    pub sent: u64,
    /// On periods started so far (drawn, including any that began after `stop`).
    pub periods: u64,
    pub sink: DatagramSink,
}

impl OnOff {
    pub fn new(spec: &OnOffSpec, rng: SimRng, start: Time, stop: Time) -> OnOff {
        let mut s = OnOff {
            size: spec.packet_size.0 as u32,
            rate_bps: spec.rate.bps(),
            ecn: spec.ecn,
            on: spec.on.clone(),
            off: spec.off.clone(),
            rng,
            stop,
            on_from: start,
            on_until: start,
            credit: 0,
            credit_at: start,
            next: None,
            sent: 0,
            periods: 0,
            sink: DatagramSink::default(),
        };
        // the flow starts with an off period
        s.next_period(start);
        s.next = s.next_datagram();
        s
    }

    /// The bit-nanoseconds a datagram takes.
    fn need(&self) -> u128 {
        self.size as u128 * 8 * 1_000_000_000
    }

    /// An off period from `t`, then the next on period.
    fn next_period(&mut self, t: Time) {
        let off = self.off.sample(&mut self.rng);
        let on = self.on.sample(&mut self.rng);
        self.on_from = t + off;
        self.on_until = self.on_from + on;
        self.credit_at = self.on_from;
        self.periods += 1;
    }

    /// When the next datagram's bits are complete: in the current on period if they
    /// are before its end, else in a later one (the bits of the rest of this period
    /// carried over).
    fn next_datagram(&mut self) -> Option<Time> {
        let rate = self.rate_bps as u128;
        loop {
            if self.on_from >= self.stop {
                return None;
            }
            let missing = self.need().saturating_sub(self.credit);
            let due = self.credit_at + Duration::from_nanos(missing.div_ceil(rate) as u64);
            if due < self.on_until {
                return (due < self.stop).then_some(due);
            }
            self.credit += rate * self.on_until.saturating_since(self.credit_at).as_nanos() as u128;
            self.next_period(self.on_until);
        }
    }

    /// The send event at `now`: the datagram due now, and the next one's time.
    #[inline]
    fn step(&mut self, flow: u32, now: Time) -> SendStep {
        if self.next != Some(now) {
            return SendStep::Nothing;
        }
        // the bits up to now, less the datagram's: the rounding up to a whole
        // nanosecond is kept for the next one
        self.credit += self.rate_bps as u128 * now.saturating_since(self.credit_at).as_nanos() as u128;
        self.credit -= self.need();
        self.credit_at = now;
        let p = datagram(flow, self.sent, self.size, self.ecn, now);
        self.sent += 1;
        self.next = self.next_datagram();
        SendStep::Datagram(p, self.next)
    }

    /// The datagrams' departure times up to `until`, for the tests.
    #[cfg(test)]
    fn times_until(&mut self, until: Time) -> Vec<Time> {
        let mut out = Vec::new();
        while let Some(t) = self.next.filter(|&t| t < until) {
            self.credit += self.rate_bps as u128 * t.saturating_since(self.credit_at).as_nanos() as u128;
            self.credit -= self.need();
            self.credit_at = t;
            self.sent += 1;
            out.push(t);
            self.next = self.next_datagram();
        }
        out
    }
}

impl DatagramSource for OnOff {
    fn begin(&mut self, cx: &mut Cx<'_>) {
        if let Some(t) = self.next {
            cx.at.push((t, AppEvent::Send));
        }
    }
    #[inline]
    fn step(&mut self, flow: u32, now: Time) -> SendStep {
        OnOff::step(self, flow, now)
    }
    fn sink(&self) -> &DatagramSink {
        &self.sink
    }
    fn sink_mut(&mut self) -> &mut DatagramSink {
        &mut self.sink
    }
    fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::ParetoTime;
    use crate::rng;

    fn spec(rate: &str, size: u64, on: TimeDist, off: TimeDist) -> OnOffSpec {
        OnOffSpec { rate: rate.parse().unwrap(), packet_size: Bytes(size), on, off, ecn: false }
    }

    fn source(s: &OnOffSpec, seed: u64, stop: Time) -> OnOff {
        s.check().unwrap();
        OnOff::new(s, rng::stream(seed, "group.g.flow.0"), Time::ZERO, stop)
    }

    fn fixed(ms: u64) -> TimeDist {
        TimeDist::Fixed(Duration::from_millis(ms))
    }

    #[test]
    fn fixed_periods_give_hand_computed_times_and_carry_the_partial_datagram() {
        // 1 Mb/s, 1000 B = 8000 bits = 8 ms per datagram; off 10 ms, on 20 ms. First
        // on period [10, 30) ms: datagrams complete at 18 and 26 ms; 4 ms of bits
        // (half a datagram) are left at 30 ms. Next on period [40, 60): the carried
        // half completes at 44, then 52; 60 ms ends with 8 ms of bits = exactly one
        // datagram, which is not sent at 60 (the period is over) but at the start
        // of the next on period, 70 ms (its bits are complete), then 78, 86.
        let s = spec("1Mbps", 1000, fixed(20), fixed(10));
        let mut o = source(&s, 1, Time::from_secs(1));
        let got: Vec<u64> = o.times_until(Time::from_millis(90)).iter().map(|t| t.as_nanos() / 1_000_000).collect();
        assert_eq!(got, vec![18, 26, 44, 52, 70, 78, 86]);
        // the exact long-run rate: 2/3 of 1 Mb/s
        assert!((s.mean_rate_bps() - 2e6 / 3.0).abs() < 1e-6);
        assert_eq!(s.datagrams(), Some((666_667, 1000)));
    }

    #[test]
    fn datagram_times_round_up_to_the_nanosecond_without_drift() {
        // 3 Mb/s, 1000 B: 8000 / 3e6 s = 2666666.67 ns per datagram; always on
        // (off 0 s, on 1000 s): datagram k completes at ceil(k * 8e12 / 3e6) ns.
        let s = spec("3Mbps", 1000, fixed(1_000_000), fixed(0));
        let mut o = source(&s, 2, Time::from_secs(10));
        let got = o.times_until(Time::from_secs(10));
        assert_eq!(got.len(), 3749, "floor(10 s / 2.6667 ms) = 3750, minus the one due at exactly 10 s");
        for (k, t) in got.iter().enumerate() {
            let k = k as u128 + 1;
            assert_eq!(t.as_nanos() as u128, (k * 8_000_000_000_000).div_ceil(3_000_000), "datagram {k}");
        }
    }

    fn mean_rate(s: &OnOffSpec, seed: u64, secs: u64) -> f64 {
        let mut o = source(s, seed, Time::from_secs(secs));
        let n = o.times_until(Time::from_secs(secs)).len();
        n as f64 * s.packet_size.0 as f64 * 8.0 / secs as f64
    }

    #[test]
    fn exponential_periods_send_at_rate_times_on_over_on_plus_off() {
        // ns-2's Exponential On/Off defaults for the periods (means 500 ms each) at
        // 1 Mb/s: 0.5 Mb/s in the long run. The rate is `rate` times the on
        // fraction sum(X) / sum(X + Y) of n cycles; by the delta method its variance
        // is (E[Y]^2 Var X + E[X]^2 Var Y) / (n (E[X] + E[Y])^2) = 0.125 / n, so over
        // 2000 s (n = 2000 cycles of 1 s) its standard deviation is 0.0079, 7.9 kb/s:
        // 40 kb/s is 5 standard deviations.
        let s = spec("1Mbps", 1000, half(), half());
        assert_eq!(s.mean_rate_bps(), 500_000.0);
        let r = mean_rate(&s, 3, 2000);
        assert!((r - 500_000.0).abs() < 40_000.0, "{r}");
        // on 100 ms, off 300 ms: a quarter of 4 Mb/s; n = 5000 cycles of 0.4 s,
        // variance (0.09 * 0.01 + 0.01 * 0.09) / (5000 * 0.16), standard deviation
        // 0.0015 of 4 Mb/s = 6 kb/s: 30 kb/s is 5.
        let s = spec("4Mbps", 1500, TimeDist::Exponential(Duration::from_millis(100)), TimeDist::Exponential(Duration::from_millis(300)));
        assert_eq!(s.mean_rate_bps(), 1_000_000.0);
        let r = mean_rate(&s, 4, 2000);
        assert!((r - 1_000_000.0).abs() < 30_000.0, "{r}");
    }

    fn half() -> TimeDist {
        TimeDist::Exponential(Duration::from_millis(500))
    }

    #[test]
    fn pareto_periods_send_at_rate_times_on_over_on_plus_off() {
        // ns-2's Pareto On/Off defaults for the periods (means 500 ms, shape 1.5):
        // heavy tails, so the sample mean converges slowly; over 20 000 s (about
        // 20 000 cycles) the rate is within 10 % of 0.5 Mb/s.
        let p = TimeDist::Pareto(ParetoTime { mean: Duration::from_millis(500), shape: 1.5 });
        let s = spec("1Mbps", 1000, p.clone(), p);
        assert_eq!(s.mean_rate_bps(), 500_000.0);
        let r = mean_rate(&s, 5, 20_000);
        assert!((r - 500_000.0).abs() < 50_000.0, "{r}");
    }

    #[test]
    fn the_same_seed_gives_the_same_datagrams_and_another_seed_others() {
        let s = spec("2Mbps", 500, half(), half());
        let a = source(&s, 7, Time::from_secs(60)).times_until(Time::from_secs(60));
        let b = source(&s, 7, Time::from_secs(60)).times_until(Time::from_secs(60));
        let c = source(&s, 8, Time::from_secs(60)).times_until(Time::from_secs(60));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.len() > 1000);
    }

    #[test]
    fn nothing_leaves_at_or_after_stop() {
        let s = spec("1Mbps", 1000, fixed(20), fixed(10));
        let mut o = source(&s, 1, Time::from_millis(44));
        assert_eq!(o.times_until(Time::MAX).len(), 2, "18 and 26 ms; 44 ms is the stop");
        // a flow whose first on period starts after stop sends nothing
        let mut o = source(&s, 1, Time::from_millis(10));
        assert!(o.next.is_none());
        assert!(o.times_until(Time::MAX).is_empty());
    }

    #[test]
    fn checks_name_the_field() {
        let bad = |s: OnOffSpec| s.check().unwrap_err();
        assert!(bad(spec("0bps", 1000, half(), half())).starts_with("rate:"));
        assert!(bad(spec("1Mbps", 28, half(), half())).starts_with("packet_size:"));
        assert!(bad(spec("1Mbps", 1000, fixed(0), half())).starts_with("on:"));
        assert!(spec("1Mbps", 1000, half(), fixed(0)).check().is_ok(), "off periods of zero: always on");
    }
}
