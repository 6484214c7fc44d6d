//! LEDBAT, Low Extra Delay Background Transport (Shalunov, Hazel, Iyengar & Kuehlewind,
//! RFC 6817): a less-than-best-effort congestion control that keeps the queueing delay
//! it adds near TARGET and yields to standard TCP, which fills the queue past it.
//!
//! The controller follows RFC 6817 §2.4.2's pseudocode:
//! * the base delay is the minimum one-way delay of the last BASE_HISTORY minutes,
//!   one minimum per minute (`update_base_delay`: a new bucket when the minute of
//!   `now` differs from the minute of the last rollover);
//! * the current delay is FILTER over the last CURRENT_FILTER samples
//!   (`update_current_delay`), FILTER being the minimum (§3.4.2: a MIN filter over a
//!   few recent samples suits the noise of delay measurements);
//! * on each ACK, `queuing_delay = FILTER(current_delays) − MIN(base_delays)`,
//!   `off_target = (TARGET − queuing_delay) / TARGET`,
//!   `cwnd += GAIN × off_target × bytes_newly_acked × MSS / cwnd`, capped at
//!   `flightsize + ALLOWED_INCREASE × MSS` and floored at `MIN_CWND × MSS`;
//! * on loss, at most once per RTT (the sender's recovery episode):
//!   `cwnd = min(cwnd, max(cwnd / 2, MIN_CWND × MSS))`;
//! * after a timeout, cwnd is one segment (the sender sets it; the RTO backs off as
//!   CTO does).
//!
//! Constants (§2.5): TARGET 100 ms (the RFC's ceiling), GAIN 1 (its ceiling),
//! BASE_HISTORY 10, ALLOWED_INCREASE 1, MIN_CWND 2; CURRENT_FILTER 4 (ns-3's
//! `TcpLedbat` noise filter). INIT_CWND is the sender's `initial_window` (the RFC
//! says 2; set `tcp.initial_window = 2` for the RFC's start). The RFC's pseudocode
//! has no slow start; `slow_start = true` adds NewReno's up to ssthresh, as ns-3's
//! `TcpLedbat` does by default.
//!
//! What it measures: RFC 6817 has the receiver send back the one-way delay of each
//! data packet (its receive time minus the packet's send timestamp). Over TCP, as in
//! ns-3's `TcpLedbat` and the Linux TCP-LEDBAT module, the sender takes it from the
//! RFC 7323 timestamps of each ACK of new data: TSval (when the receiver sent the
//! ACK) minus TSecr (the send time of the data segment it echoes). The simulator's
//! clocks agree, so that is the forward one-way delay plus the time the receiver held
//! the ACK back (a delayed ACK: one segment's arrival gap when ACKing every second
//! segment). Only differences from the base delay matter, so a constant part of that
//! hold cancels; clock offset and skew, which the RFC's base-delay design absorbs,
//! are zero here.

use std::collections::VecDeque;

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, Window};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedbatParams {
    /// TARGET, the queueing delay LEDBAT aims at (RFC 6817 §2.5.1: 100 ms, the ceiling).
    pub target: Duration,
    /// GAIN, the window's reaction per unit off target (RFC 6817 §2.5.1: 1, the ceiling).
    pub gain: f64,
    /// BASE_HISTORY, the one-minute minima kept for the base delay (RFC 6817 §2.5.2: 10).
    pub base_history: u32,
    /// CURRENT_FILTER, the samples the current delay is the minimum of (ns-3: 4).
    pub current_filter: u32,
    /// ALLOWED_INCREASE, segments the window may exceed the flight by (RFC 6817 §2.5.1: 1).
    pub allowed_increase: f64,
    /// MIN_CWND, the smallest window in segments (RFC 6817 §2.5.1: 2).
    pub min_cwnd: f64,
    /// NewReno slow start up to ssthresh before the delay-based control (ns-3's
    /// default; not in RFC 6817's pseudocode, hence off).
    pub slow_start: bool,
}

impl Default for LedbatParams {
    fn default() -> Self {
        LedbatParams {
            target: Duration::from_millis(100),
            gain: 1.0,
            base_history: 10,
            current_filter: 4,
            allowed_increase: 1.0,
            min_cwnd: 2.0,
            slow_start: false,
        }
    }
}

impl CcParams for LedbatParams {
    const TITLE: &'static str = "LEDBAT: less-than-best-effort, holds its own queueing delay near 100 ms and yields to TCP";
    const SOURCE: &'static str = "Shalunov, Hazel, Iyengar & Kuehlewind, RFC 6817 (one-way delay from TCP timestamps, as ns-3's TcpLedbat)";
    const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "TARGET queueing delay (RFC 6817 §2.5.1: 100 ms, at most 100 ms)"),
        ("gain", "GAIN, window change per unit off target per RTT (RFC 6817: 1, at most 1)"),
        ("base_history", "BASE_HISTORY: one-minute delay minima kept for the base delay (RFC 6817: 10)"),
        ("current_filter", "CURRENT_FILTER: the current delay is the minimum of this many samples (ns-3: 4)"),
        ("allowed_increase", "ALLOWED_INCREASE: segments cwnd may exceed the flight by (RFC 6817: 1)"),
        ("min_cwnd", "MIN_CWND in segments (RFC 6817: 2)"),
        ("slow_start", "NewReno slow start up to ssthresh first (ns-3's default; not in RFC 6817: off)"),
    ];
    const LINUX: Option<&'static str> = None;
    type Algo = Ledbat;
    fn check(&self) -> Result<(), String> {
        if self.target.is_zero() || self.target > Duration::from_millis(100) {
            return Err(format!("target: must be in (0, 100ms] (RFC 6817 §2.5.1), got {}ms", self.target.as_secs_f64() * 1e3));
        }
        if !(self.gain > 0.0 && self.gain <= 1.0) {
            return Err(format!("gain: must be in (0, 1] (RFC 6817 §2.5.1), got {}", self.gain));
        }
        if self.base_history < 2 {
            return Err(format!("base_history: must be at least 2 (RFC 6817 §2.5.2), got {}", self.base_history));
        }
        if self.current_filter < 1 {
            return Err(format!("current_filter: must be at least 1, got {}", self.current_filter));
        }
        if !(self.allowed_increase >= 1.0 && self.allowed_increase.is_finite()) {
            return Err(format!("allowed_increase: must be at least 1 (RFC 6817 §2.5.1), got {}", self.allowed_increase));
        }
        if !(self.min_cwnd >= 1.0 && self.min_cwnd.is_finite()) {
            return Err(format!("min_cwnd: must be at least 1 segment, got {}", self.min_cwnd));
        }
        Ok(())
    }
    fn build(&self) -> Ledbat {
        Ledbat::new(self.clone())
    }
}

const MINUTE_NS: u64 = 60_000_000_000;

#[derive(Clone, Debug)]
pub struct Ledbat {
    p: LedbatParams,
    /// One minimum per minute, oldest first (RFC 6817 `base_delays`); at most `base_history`.
    base_delays: VecDeque<Duration>,
    /// The last `current_filter` samples, oldest first (`current_delays`).
    current_delays: VecDeque<Duration>,
    /// The minute of the last rollover (`last_rollover`); None = never ("-INFINITY").
    last_rollover_minute: Option<u64>,
}

impl Ledbat {
    pub fn new(p: LedbatParams) -> Ledbat {
        Ledbat { base_delays: VecDeque::new(), current_delays: VecDeque::new(), last_rollover_minute: None, p }
    }

    /// `update_base_delay` (RFC 6817 §2.4.2): a new minute starts a new bucket (the
    /// oldest leaves past BASE_HISTORY); within a minute the newest bucket keeps the minimum.
    fn update_base_delay(&mut self, delay: Duration, now: Time) {
        let minute = now.as_nanos() / MINUTE_NS;
        if self.last_rollover_minute != Some(minute) {
            self.last_rollover_minute = Some(minute);
            if self.base_delays.len() == self.p.base_history as usize {
                self.base_delays.pop_front();
            }
            self.base_delays.push_back(delay);
        } else if let Some(tail) = self.base_delays.back_mut() {
            *tail = (*tail).min(delay);
        }
    }

    /// `update_current_delay` (RFC 6817 §2.4.2): keep the last CURRENT_FILTER samples.
    fn update_current_delay(&mut self, delay: Duration) {
        if self.current_delays.len() == self.p.current_filter as usize {
            self.current_delays.pop_front();
        }
        self.current_delays.push_back(delay);
    }

    /// MIN(base_delays), the base one-way delay.
    pub fn base_delay(&self) -> Option<Duration> {
        self.base_delays.iter().copied().min()
    }

    /// FILTER(current_delays), the current one-way delay.
    pub fn current_delay(&self) -> Option<Duration> {
        self.current_delays.iter().copied().min()
    }

    /// FILTER(current_delays) − MIN(base_delays); None before the first sample.
    pub fn queuing_delay(&self) -> Option<Duration> {
        Some(self.current_delay()?.saturating_sub(self.base_delay()?))
    }
}

impl CongestionControl for Ledbat {
    fn on_delay(&mut self, owd: Duration, now: Time) {
        self.update_base_delay(owd, now);
        self.update_current_delay(owd);
    }

    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        let acked = s.acked as f64;
        if self.p.slow_start && w.in_slow_start() {
            if s.cwnd_limited {
                w.slow_start(acked);
            }
            return;
        }
        // No delay sample yet (no timestamps echoed): the window stays.
        let Some(q) = self.queuing_delay() else { return };
        // RFC 6817 §2.4.2 "on acknowledgment", in segments (MSS = 1):
        // off_target = (TARGET - queuing_delay) / TARGET
        let target = self.p.target.as_secs_f64();
        let off_target = (target - q.as_secs_f64()) / target;
        // cwnd += GAIN * off_target * bytes_newly_acked * MSS / cwnd
        let mut cwnd = w.cwnd + self.p.gain * off_target * acked / w.cwnd;
        // max_allowed_cwnd = flightsize + ALLOWED_INCREASE * MSS, flightsize being the
        // data outstanding before this ACK
        let flightsize = (s.snd_nxt - s.snd_una) as f64 + acked;
        cwnd = cwnd.min(flightsize + self.p.allowed_increase);
        // cwnd = max(cwnd, MIN_CWND * MSS)
        w.cwnd = cwnd.max(self.p.min_cwnd);
    }

    /// RFC 6817 §2.4.2 "on data loss" (at most once per RTT: the sender's recovery
    /// episode): cwnd = min(cwnd, max(cwnd / 2, MIN_CWND * MSS)).
    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        w.cwnd.min((w.cwnd / 2.0).max(self.p.min_cwnd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }
    fn at_s(x: u64) -> Time {
        Time::from_nanos(x * 1_000_000_000)
    }
    fn ack(acked: u32, in_flight: u64) -> AckSample {
        // in_flight: what remains outstanding after this ACK
        AckSample { now: Time::ZERO, acked, rtt: None, min_rtt: None, cwnd_limited: true, snd_una: 100, snd_nxt: 100 + in_flight, ..AckSample::default() }
    }

    #[test]
    fn base_delay_is_the_minimum_of_the_last_ten_one_minute_buckets() {
        let mut l = Ledbat::new(LedbatParams::default());
        // minute 0: 50, 40, 45 -> bucket 40
        for (t, d) in [(0, 50), (10, 40), (59, 45)] {
            l.on_delay(ms(d), at_s(t));
        }
        assert_eq!(l.base_delays, [ms(40)]);
        // minutes 1..=9: buckets 60, 61, ..., 68 (each minute's first sample opens it)
        for m in 1..=9u64 {
            l.on_delay(ms(60 + m - 1), at_s(60 * m));
            l.on_delay(ms(200), at_s(60 * m + 30));
        }
        assert_eq!(l.base_delays.len(), 10);
        assert_eq!(l.base_delay(), Some(ms(40)));
        // minute 10: the 11th bucket pushes minute 0's 40 ms out
        l.on_delay(ms(90), at_s(600));
        assert_eq!(l.base_delays.len(), 10);
        assert_eq!(l.base_delay(), Some(ms(60)));
        assert_eq!(*l.base_delays.back().unwrap(), ms(90));
        // a route change to a longer path: after ten more minutes the base follows it
        for m in 11..=20u64 {
            l.on_delay(ms(120), at_s(60 * m));
        }
        assert_eq!(l.base_delay(), Some(ms(120)));
    }

    #[test]
    fn current_delay_is_the_minimum_of_the_last_four_samples() {
        let mut l = Ledbat::new(LedbatParams::default());
        assert_eq!(l.queuing_delay(), None);
        for d in [30, 70, 80, 90] {
            l.on_delay(ms(d), at_s(1));
        }
        assert_eq!(l.current_delay(), Some(ms(30)));
        assert_eq!(l.queuing_delay(), Some(ms(0)));
        l.on_delay(ms(100), at_s(1)); // 30 leaves the filter
        assert_eq!(l.current_delay(), Some(ms(70)));
        assert_eq!(l.queuing_delay(), Some(ms(40)));
    }

    /// `cwnd += GAIN × off_target × acked / cwnd` (in segments): +1/cwnd per segment at
    /// zero queueing delay (one segment per RTT), nothing at TARGET, −1/cwnd per segment
    /// at twice TARGET; GAIN scales it.
    #[test]
    fn window_moves_by_gain_times_off_target() {
        for (gain, base, cur, want) in [(1.0, 20, 20, 10.2), (1.0, 20, 120, 10.0), (1.0, 20, 220, 9.8), (0.5, 20, 70, 10.05)] {
            let mut l = Ledbat::new(LedbatParams { gain, ..Default::default() });
            l.on_delay(ms(base), at_s(0));
            for _ in 0..4 {
                l.on_delay(ms(cur), at_s(1));
            }
            let mut w = Window::new(10.0, INF);
            l.on_ack(&mut w, &ack(2, 8));
            assert!((w.cwnd - want).abs() < 1e-12, "gain {gain}, queueing {} ms: cwnd {} want {want}", cur - base, w.cwnd);
        }
    }

    const INF: f64 = super::super::INFINITE_SSTHRESH;

    #[test]
    fn window_is_capped_by_the_flight_plus_allowed_increase_and_floored_at_min_cwnd() {
        let mut l = Ledbat::new(LedbatParams::default());
        l.on_delay(ms(10), at_s(0));
        // application-limited: 3 segments outstanding before the ACK of 1 -> cap 4
        let mut w = Window::new(10.0, INF);
        l.on_ack(&mut w, &ack(1, 2));
        assert_eq!(w.cwnd, 4.0);
        // a queue far above target drives it down, never below MIN_CWND
        for _ in 0..4 {
            l.on_delay(ms(1010), at_s(1));
        }
        let mut w = Window::new(2.5, INF);
        l.on_ack(&mut w, &ack(2, 1));
        assert_eq!(w.cwnd, 2.0);
    }

    #[test]
    fn loss_halves_the_window_down_to_min_cwnd_and_never_raises_it() {
        let mut l = Ledbat::new(LedbatParams::default());
        let mut ssthresh = |c: f64| l.on_congestion(&Window::new(c, INF), Time::ZERO);
        assert_eq!(ssthresh(20.0), 10.0);
        assert_eq!(ssthresh(3.0), 2.0);
        assert_eq!(ssthresh(1.5), 1.5);
    }

    #[test]
    fn without_slow_start_the_window_grows_one_segment_per_window_at_most() {
        let mut l = Ledbat::new(LedbatParams::default());
        l.on_delay(ms(25), at_s(0));
        let mut w = Window::new(2.0, INF);
        // one RTT: a window of ACKs, one segment each, with no queueing delay
        for _ in 0..2 {
            l.on_ack(&mut w, &ack(1, 1));
        }
        assert!((w.cwnd - (2.0 + 0.5 + 1.0 / 2.5)).abs() < 1e-12, "{}", w.cwnd);
        // with slow_start it doubles per RTT like NewReno until ssthresh
        let mut l = Ledbat::new(LedbatParams { slow_start: true, ..Default::default() });
        let mut w = Window::new(2.0, 3.0);
        l.on_delay(ms(25), at_s(0));
        l.on_ack(&mut w, &ack(2, 2));
        assert_eq!(w.cwnd, 3.0);
    }

    proptest::proptest! {
        /// Any sequence of delay samples and ACKs: the window stays within
        /// [MIN_CWND, max(MIN_CWND, flight before the ACK + ALLOWED_INCREASE)] after
        /// every ACK, the base delay
        /// is the least sample of the buckets kept, at most BASE_HISTORY of them, and
        /// the current delay the least of the last CURRENT_FILTER samples.
        #[test]
        fn window_and_filters_keep_their_bounds(
            ops in proptest::collection::vec((0u64..300_000, 0u64..2_000, 1u32..8, 0u64..60), 1..200),
        ) {
            let p = LedbatParams::default();
            let mut l = Ledbat::new(p.clone());
            let mut w = Window::new(2.0, INF);
            let mut now_ms = 0u64;
            let mut samples: Vec<(u64, u64)> = vec![];
            for (gap_ms, delay_ms, acked, in_flight) in ops {
                now_ms += gap_ms;
                l.on_delay(ms(delay_ms), Time::from_millis(now_ms));
                samples.push((now_ms / 60_000, delay_ms));
                l.on_ack(&mut w, &ack(acked, in_flight));
                let cap = (in_flight + acked as u64) as f64 + p.allowed_increase;
                proptest::prop_assert!(w.cwnd >= p.min_cwnd - 1e-9);
                proptest::prop_assert!(w.cwnd <= cap.max(p.min_cwnd) + 1e-9, "cwnd {} cap {cap}", w.cwnd);
                let minutes: Vec<u64> = {
                    let mut m: Vec<u64> = samples.iter().map(|s| s.0).collect();
                    m.dedup();
                    m
                };
                let kept = &minutes[minutes.len().saturating_sub(p.base_history as usize)..];
                let base = samples.iter().filter(|s| kept.contains(&s.0)).map(|s| s.1).min().unwrap();
                proptest::prop_assert_eq!(l.base_delay(), Some(ms(base)));
                let cur = samples.iter().rev().take(p.current_filter as usize).map(|s| s.1).min().unwrap();
                proptest::prop_assert_eq!(l.current_delay(), Some(ms(cur)));
            }
        }
    }

    #[test]
    fn parameters_outside_the_rfc_s_bounds_are_refused_by_name() {
        for (p, field) in [
            (LedbatParams { target: ms(150), ..Default::default() }, "target"),
            (LedbatParams { gain: 1.5, ..Default::default() }, "gain"),
            (LedbatParams { allowed_increase: 0.5, ..Default::default() }, "allowed_increase"),
            (LedbatParams { current_filter: 0, ..Default::default() }, "current_filter"),
        ] {
            let e = p.check().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
        assert!(LedbatParams::default().check().is_ok());
    }
}
