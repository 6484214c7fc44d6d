//! A Palermo-like receive-window controller (after Popovsky, "New buffer bloat
//! mitigation alternatives: infrastructure versus congestion control", §2).
//!
//! The paper describes what Palermo receivers do, not how: "the Palermo receivers
//! limited the senders using flow control to curb the length of the unacknowledged
//! in-flight bytes to a number just above the bandwidth delay product", and when a
//! connection that floods the queue arrives, the receiver "senses its share
//! decrease ... waits until it reaches a (kernel) configured threshold, and reverts
//! to a regular DRS behavior", regaining its behaviour once the competitor leaves.
//! The rule below is ours; docs/receivers.md states it with its reasoning.
//!
//! Measurements, all at the receiver:
//! - RTT samples from timestamp echoes (RFC 7323 §4.3, as Linux's
//!   `tcp_rcv_rtt_measure_ts`): the time from an ACK leaving to the arrival of data
//!   that echoes it. `min_rtt` is their minimum (the base RTT).
//! - Rounds of about one RTT (the smallest sample of the previous round). At each
//!   round's end, the delivery rate of the round (payload bytes received, duplicates
//!   left out, over the round's length); `rate_max` is the largest of the last
//!   `rate_rounds` rounds and `cap` the largest ever (the capacity estimate).
//!
//! Window, in the Palermo modes:
//!   W = gain * rate_max * min_rtt + extra_segments * MSS, at least min_segments * MSS
//! with `gain = startup_gain` until the rate stops growing by 25 % for three rounds
//! (the full-pipe test of BBR's STARTUP, Cardwell et al. 2016). Each receiver then
//! keeps about `(gain - 1) * BDP + extra` of its own bytes queued, so n Palermo
//! flows on one bottleneck settle where every flow has the same rate
//! (r_i = extra / (RTT - gain * min_rtt) for all i): fair and short.
//!
//! The base RTT is only right if the receiver saw the path without a queue. A late
//! connection first sees the queue that earlier ones keep, believes the BDP larger,
//! and would keep more in the queue than they do. So, as BBR's ProbeRTT (Cardwell,
//! Cheng, Gunn, Hassas Yeganeh & Jacobson, "BBR: congestion-based congestion
//! control", ACM Queue 2016: a 10 s min-RTT window, 200 ms at 4 packets), when no
//! sample has matched `min_rtt` for `probe_interval`, and once at the end of the
//! start-up, the receiver advertises `min_segments` for `probe_time` (at least two
//! rounds: one for the window to close, one to measure). Unlike BBR, the base RTT
//! only ever decreases: a probe during a flood by another connection would
//! otherwise take the flooded queue for the path. Rounds of a probe leave the rate
//! history alone.
//!
//! Mode changes, tested at each round's end:
//! - to DRS when, for `revert_after`, every round had share = rate / cap below
//!   `revert_share` and its smallest RTT sample above `revert_rtt_ratio * min_rtt`
//!   (a queue that Palermo receivers do not build: someone else is filling it);
//! - back to Palermo when, for `return_after`, every round had share at least
//!   `return_share` (the competition left).
//!
//! In DRS mode the window is Dynamic Right-Sizing's (Fisk & Feng 2001): twice the
//! bytes received in a round, so it never limits the sender. The right edge of the
//! window never moves left (RFC 9293 §3.8.6.2.2 discourages shrinking): a smaller
//! window takes effect as data arrives.

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

use super::ReceiveWindow;

/// Parameters of the Palermo-like receiver, settable per flow group as
/// `tcp.receiver = { kind = "palermo", ... }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PalermoParams {
    /// Window over the estimated BDP in steady state: the queue each flow keeps is
    /// about (gain - 1) * base RTT ("just above the bandwidth delay product").
    pub gain: f64,
    /// Window gain until the pipe is full: the rate may double per round, as in
    /// slow start (BBR's STARTUP uses 2/ln 2; 2 keeps the start-up queue at 1 BDP).
    pub startup_gain: f64,
    /// Segments added to the window: the part that makes flows converge to equal
    /// rates (a Vegas-like alpha).
    pub extra_segments: u32,
    /// The window never goes below this many segments (fast retransmit needs a few).
    pub min_segments: u32,
    /// Rounds over which the delivery rate's maximum is taken.
    pub rate_rounds: u32,
    /// Revert to DRS when the share falls below this ...
    pub revert_share: f64,
    /// ... while the round's smallest RTT exceeds this multiple of the base RTT ...
    pub revert_rtt_ratio: f64,
    /// ... for this long (Popovsky Fig. 4: the competitor arrives at 17 s, the
    /// Palermo receiver reverts at 28 s; the queue takes a few seconds to build).
    pub revert_after: Duration,
    /// Return to Palermo behaviour when the share is at least this ...
    pub return_share: f64,
    /// ... for this long.
    pub return_after: Duration,
    /// Probe the base RTT when no sample has matched it for this long (BBR: 10 s).
    pub probe_interval: Duration,
    /// How long a probe holds the window at `min_segments` (BBR: 200 ms; at least
    /// two rounds).
    pub probe_time: Duration,
}

impl Default for PalermoParams {
    fn default() -> Self {
        PalermoParams {
            gain: 1.1,
            startup_gain: 2.0,
            extra_segments: 2,
            min_segments: 4,
            rate_rounds: 4,
            revert_share: 0.3,
            revert_rtt_ratio: 2.0,
            revert_after: Duration::from_secs(5),
            return_share: 0.8,
            return_after: Duration::from_secs(2),
            probe_interval: Duration::from_secs(10),
            probe_time: Duration::from_millis(200),
        }
    }
}

impl PalermoParams {
    /// Name and meaning of every parameter (a test checks it lists exactly the fields).
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("gain", "window over the estimated BDP in steady state (ours: 1.1, a queue of about 10 % of the base RTT)"),
        ("startup_gain", "window gain until the delivery rate stops growing (as BBR's STARTUP; ours: 2)"),
        ("extra_segments", "segments added to the window, which makes competing Palermo flows converge to equal rates"),
        ("min_segments", "smallest window, in segments"),
        ("rate_rounds", "rounds (about one RTT each) over which the delivery rate's maximum is taken"),
        ("revert_share", "revert to DRS when rate / capacity estimate stays below this ..."),
        ("revert_rtt_ratio", "... while the RTT stays above this multiple of the base RTT ..."),
        ("revert_after", "... for this long (ours: 5 s; Popovsky Fig. 4 reverts 11 s after the competitor arrives)"),
        ("return_share", "return to Palermo behaviour when rate / capacity estimate stays at least this ..."),
        ("return_after", "... for this long"),
        ("probe_interval", "re-measure the base RTT when no sample matched it for this long (as BBR's ProbeRTT: 10 s)"),
        ("probe_time", "how long a probe holds the window at min_segments (BBR: 200 ms; at least two rounds)"),
    ];

    // the negated comparisons reject NaN too
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn validate(&self) -> Result<(), String> {
        if !(self.gain >= 1.0 && self.gain.is_finite()) {
            return Err(format!("gain: must be at least 1, got {}", self.gain));
        }
        if !(self.startup_gain >= self.gain && self.startup_gain.is_finite()) {
            return Err(format!("startup_gain: must be at least gain ({}), got {}", self.gain, self.startup_gain));
        }
        if self.min_segments == 0 {
            return Err("min_segments: must be at least 1".into());
        }
        if self.rate_rounds == 0 || self.rate_rounds > MAX_ROUNDS as u32 {
            return Err(format!("rate_rounds: must be between 1 and {MAX_ROUNDS}, got {}", self.rate_rounds));
        }
        for (name, v) in [("revert_share", self.revert_share), ("return_share", self.return_share)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name}: must be in [0, 1], got {v}"));
            }
        }
        if self.revert_share >= self.return_share {
            return Err(format!("revert_share: must be below return_share ({}), got {}", self.return_share, self.revert_share));
        }
        if self.probe_interval.is_zero() {
            return Err("probe_interval: must be greater than zero".into());
        }
        if !(self.revert_rtt_ratio >= 1.0) {
            return Err(format!("revert_rtt_ratio: must be at least 1, got {}", self.revert_rtt_ratio));
        }
        Ok(())
    }
}

const MAX_ROUNDS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Palermo window with the start-up gain.
    Startup,
    /// Palermo window with the steady gain.
    Steady,
    /// Dynamic Right-Sizing: the window does not limit the sender.
    Drs,
}

#[derive(Clone, Debug)]
pub struct Palermo {
    p: PalermoParams,
    mss: u64,
    pub mode: Mode,
    pub min_rtt: Option<Duration>,
    /// When a sample last matched (or set) `min_rtt`.
    min_rtt_stamp: Time,
    /// A base-RTT probe in progress: when it began.
    probing: Option<Time>,
    /// Probe at the next chance (after the start-up).
    probe_due: bool,
    pub probes: u32,
    round_start: Time,
    round_bytes_start: u64,
    round_len: Duration,
    round_min_rtt: Option<Duration>,
    /// Delivery rates of the last rounds (bytes per second), ring buffer.
    rates: [f64; MAX_ROUNDS],
    /// Bytes received per round, same ring.
    round_bytes: [u64; MAX_ROUNDS],
    n_rounds: u64,
    /// Largest delivery rate ever seen: the capacity estimate.
    pub cap: f64,
    startup_best: f64,
    startup_flat_rounds: u32,
    bad_since: Option<Time>,
    good_since: Option<Time>,
    /// Mode changes, for the records.
    pub reverts: u32,
    pub returns: u32,
}

impl Palermo {
    pub fn new(p: &PalermoParams, mss: u64) -> Palermo {
        Palermo {
            p: p.clone(),
            mss,
            mode: Mode::Startup,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probing: None,
            probe_due: false,
            probes: 0,
            round_start: Time::ZERO,
            round_bytes_start: 0,
            round_len: Duration::ZERO,
            round_min_rtt: None,
            rates: [0.0; MAX_ROUNDS],
            round_bytes: [0; MAX_ROUNDS],
            n_rounds: 0,
            cap: 0.0,
            startup_best: 0.0,
            startup_flat_rounds: 0,
            bad_since: None,
            good_since: None,
            reverts: 0,
            returns: 0,
        }
    }

    /// An RTT sample from a timestamp echo.
    pub fn on_rtt(&mut self, now: Time, rtt: Duration, bytes_received: u64) {
        if self.min_rtt.is_none_or(|m| rtt <= m) {
            self.min_rtt = Some(rtt);
            self.min_rtt_stamp = now;
        }
        self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.update_probe(now);
        if self.round_len.is_zero() {
            // the first sample starts the first round
            self.round_len = rtt.max(Duration::from_millis(1));
            self.round_start = now;
            self.round_bytes_start = bytes_received;
            self.round_min_rtt = None;
        }
    }

    /// Start or end a base-RTT probe.
    fn update_probe(&mut self, now: Time) {
        match self.probing {
            None => {
                let stale = now.saturating_since(self.min_rtt_stamp) > self.p.probe_interval;
                if self.mode != Mode::Drs && self.n_rounds > 0 && (stale || self.probe_due) {
                    self.probing = Some(now);
                    self.probe_due = false;
                    self.probes += 1;
                }
            }
            Some(t0) => {
                if now.saturating_since(t0) >= self.p.probe_time.max(self.round_len + self.round_len) {
                    // The probe's samples have lowered min_rtt if they could (on_rtt).
                    self.min_rtt_stamp = now;
                    self.probing = None;
                }
            }
        }
    }

    /// A base-RTT probe is under way (the window is at its minimum).
    pub fn probing(&self) -> bool {
        self.probing.is_some()
    }

    /// Data arrived; `bytes_received` counts every new payload byte so far.
    pub fn on_data(&mut self, now: Time, bytes_received: u64) {
        self.update_probe(now);
        if self.round_len.is_zero() || now < self.round_start + self.round_len {
            return;
        }
        let elapsed = now - self.round_start;
        let bytes = bytes_received - self.round_bytes_start;
        let rate = bytes as f64 / elapsed.as_secs_f64();
        if self.probing.is_none() {
            let i = (self.n_rounds % MAX_ROUNDS as u64) as usize;
            self.rates[i] = rate;
            self.round_bytes[i] = bytes;
            self.n_rounds += 1;
            self.cap = self.cap.max(rate);
            self.end_of_round(now, rate);
        }
        if let Some(r) = self.round_min_rtt {
            self.round_len = r.max(Duration::from_millis(1));
        }
        self.round_start = now;
        self.round_bytes_start = bytes_received;
        self.round_min_rtt = None;
    }

    fn end_of_round(&mut self, now: Time, rate: f64) {
        let share = if self.cap > 0.0 { rate / self.cap } else { 1.0 };
        match self.mode {
            Mode::Startup | Mode::Steady => {
                if self.mode == Mode::Startup {
                    // BBR's full-pipe test: three rounds without 25 % growth.
                    if rate >= 1.25 * self.startup_best {
                        self.startup_best = rate;
                        self.startup_flat_rounds = 0;
                    } else {
                        self.startup_flat_rounds += 1;
                        if self.startup_flat_rounds >= 3 {
                            self.mode = Mode::Steady;
                            // drain the start-up queue and re-measure the base RTT
                            self.probe_due = true;
                        }
                    }
                }
                let queued = match (self.round_min_rtt, self.min_rtt) {
                    (Some(r), Some(m)) => r.as_secs_f64() > self.p.revert_rtt_ratio * m.as_secs_f64(),
                    _ => false,
                };
                if share < self.p.revert_share && queued {
                    let since = *self.bad_since.get_or_insert(now);
                    if now - since >= self.p.revert_after {
                        self.mode = Mode::Drs;
                        self.reverts += 1;
                        self.bad_since = None;
                        self.good_since = None;
                    }
                } else {
                    self.bad_since = None;
                }
            }
            Mode::Drs => {
                if share >= self.p.return_share {
                    let since = *self.good_since.get_or_insert(now);
                    if now - since >= self.p.return_after {
                        self.mode = Mode::Steady;
                        self.returns += 1;
                        self.good_since = None;
                        self.bad_since = None;
                    }
                } else {
                    self.good_since = None;
                }
            }
        }
    }

    fn recent<'a, T: Copy>(&'a self, ring: &'a [T; MAX_ROUNDS]) -> impl Iterator<Item = T> + 'a {
        let n = self.n_rounds.min(self.p.rate_rounds as u64) as usize;
        let last = self.n_rounds as usize;
        (0..n).map(move |k| ring[(last - 1 - k) % MAX_ROUNDS])
    }

    /// The window this receiver wants to advertise, in bytes (None: no limit yet).
    pub fn window(&self) -> Option<u64> {
        if self.n_rounds == 0 {
            return None; // nothing measured yet: the sender's initial window limits it
        }
        let floor = (self.p.min_segments as u64 * self.mss) as f64;
        if self.probing.is_some() {
            return Some(floor as u64);
        }
        let w = match self.mode {
            Mode::Drs => {
                // Fisk & Feng: twice what arrived in a round never limits the sender.
                let b = self.recent(&self.round_bytes).max().unwrap_or(0);
                (2 * b + 10 * self.mss) as f64
            }
            Mode::Startup | Mode::Steady => {
                let gain = if self.mode == Mode::Startup { self.p.startup_gain } else { self.p.gain };
                let rate = self.recent(&self.rates).fold(0.0, f64::max);
                let bdp = rate * self.min_rtt.map_or(0.0, |m| m.as_secs_f64());
                gain * bdp + (self.p.extra_segments as u64 * self.mss) as f64
            }
        };
        Some(w.max(floor).round() as u64)
    }
}


impl ReceiveWindow for Palermo {
    fn on_rtt(&mut self, now: Time, rtt: Duration, bytes_received: u64) {
        Palermo::on_rtt(self, now, rtt, bytes_received)
    }
    fn on_data(&mut self, now: Time, bytes_received: u64) {
        Palermo::on_data(self, now, bytes_received)
    }
    fn window(&self) -> Option<u64> {
        Palermo::window(self)
    }
    /// The `receiver_mode` codes (record.rs): 1 start-up, 2 steady, 3 DRS, 4 probing.
    fn mode_code(&self) -> u8 {
        match self.mode {
            _ if self.probing() => 4,
            Mode::Startup => 1,
            Mode::Steady => 2,
            Mode::Drs => 3,
        }
    }
    fn reverts(&self) -> u32 {
        self.reverts
    }
    fn returns(&self) -> u32 {
        self.returns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    /// Feed `rounds` rounds of `rtt` with `bytes_per_round` each, starting at `t0`.
    fn feed(p: &mut Palermo, t0: u64, rtt: u64, rounds: u64, bytes_per_round: u64, received: &mut u64) -> u64 {
        let mut t = t0;
        for _ in 0..rounds {
            // ten arrivals per round, each with an RTT sample
            for k in 1..=10 {
                t += rtt / 10;
                *received += bytes_per_round / 10;
                let _ = k;
                p.on_rtt(ms(t), Duration::from_millis(rtt), *received);
                p.on_data(ms(t), *received);
            }
        }
        t
    }

    #[test]
    fn doc_lists_exactly_the_serialized_fields() {
        let v = serde_json::to_value(PalermoParams::default()).unwrap();
        let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut doc: Vec<&str> = PalermoParams::DOC.iter().map(|(n, _)| *n).collect();
        fields.sort();
        doc.sort();
        assert_eq!(fields, doc);
    }

    #[test]
    fn no_limit_before_the_first_round_then_gain_times_bdp_plus_extra() {
        let p0 = PalermoParams::default();
        let mut p = Palermo::new(&p0, MSS);
        assert_eq!(p.window(), None);
        let mut rx = 0;
        // 100 ms rounds of 125 000 B: 1.25 MB/s (10 Mbps), BDP 125 000 B.
        feed(&mut p, 0, 100, 1, 125_000, &mut rx);
        // The first sample (at 10 ms) opened the first round; it has not ended yet.
        assert_eq!(p.window(), None);
        feed(&mut p, 100, 100, 1, 125_000, &mut rx);
        // It ended with the first arrival at or after 110 ms: 125 000 B in 100 ms.
        assert_eq!(p.mode, Mode::Startup);
        let w = p.window().unwrap();
        let want = 2.0 * 1_250_000.0 * 0.1 + 2.0 * MSS as f64;
        assert!((w as f64 - want).abs() < 1.0, "{w} vs {want}");
    }

    #[test]
    fn startup_ends_after_three_rounds_without_growth_then_steady_gain() {
        let mut p = Palermo::new(&PalermoParams::default(), MSS);
        let mut rx = 0;
        // the rate doubles for a few rounds then stays flat
        let mut t = 0;
        for b in [12_500u64, 25_000, 50_000, 100_000] {
            t = feed(&mut p, t, 100, 1, b, &mut rx);
            assert_eq!(p.mode, Mode::Startup);
        }
        t = feed(&mut p, t, 100, 2, 100_000, &mut rx);
        assert_eq!(p.mode, Mode::Startup, "two flat rounds are not enough");
        t = feed(&mut p, t, 100, 2, 100_000, &mut rx);
        assert_eq!(p.mode, Mode::Steady);
        // leaving the start-up, the receiver drains the queue to re-measure the base RTT
        assert!(p.probing());
        assert_eq!(p.window(), Some(4 * MSS));
        feed(&mut p, t, 100, 3, 100_000, &mut rx);
        assert!(!p.probing());
        assert_eq!(p.probes, 1);
        // steady: 1.1 * 1 MB/s * 100 ms + 2 MSS = 112 000 B (the probe's rounds do
        // not enter the rate history)
        let w = p.window().unwrap();
        assert!((w as f64 - 112_000.0).abs() < 200.0, "{w}");
    }

    #[test]
    fn a_base_rtt_not_matched_for_probe_interval_is_probed_and_never_grows() {
        // Samples of 150 ms after a base of 100 ms: a standing queue (or a longer
        // path). After probe_interval (10 s) without a sample at the base, the
        // receiver probes; the base stays at 100 ms (a flood must not become the base).
        let mut p = Palermo::new(&PalermoParams::default(), MSS);
        let mut rx = 0;
        let t = feed(&mut p, 0, 100, 20, 100_000, &mut rx);
        assert_eq!(p.probes, 1, "the probe after the start-up");
        assert_eq!(p.min_rtt, Some(Duration::from_millis(100)));
        let t = feed(&mut p, t, 150, 66, 150_000, &mut rx);
        assert_eq!(p.probes, 1, "9.9 s after the last match: no probe yet");
        let t = feed(&mut p, t, 150, 1, 150_000, &mut rx);
        assert_eq!(p.probes, 2);
        assert!(p.probing());
        assert_eq!(p.window(), Some(4 * MSS));
        // the probe drains the queue: samples at 90 ms lower the base
        feed(&mut p, t, 90, 4, 90_000, &mut rx);
        assert!(!p.probing());
        assert_eq!(p.min_rtt, Some(Duration::from_millis(90)));
        let mut q = Palermo::new(&PalermoParams::default(), MSS);
        let t = feed(&mut q, 0, 100, 20, 100_000, &mut rx);
        feed(&mut q, t, 150, 80, 150_000, &mut rx);
        assert_eq!(q.min_rtt, Some(Duration::from_millis(100)), "never raised");
    }

    #[test]
    fn reverts_to_drs_after_a_sustained_low_share_with_a_long_queue_and_returns() {
        let params = PalermoParams { revert_after: Duration::from_secs(1), return_after: Duration::from_millis(300), ..PalermoParams::default() };
        let mut p = Palermo::new(&params, MSS);
        let mut rx = 0;
        let t = feed(&mut p, 0, 100, 10, 100_000, &mut rx);
        assert_eq!(p.mode, Mode::Steady);
        // Someone floods the queue: RTT 400 ms, our share 10 %.
        let t2 = feed(&mut p, t, 400, 2, 40_000, &mut rx);
        assert_eq!(p.mode, Mode::Steady, "0.8 s of low share is not yet enough");
        let t3 = feed(&mut p, t2, 400, 2, 40_000, &mut rx);
        assert_eq!(p.mode, Mode::Drs);
        assert_eq!(p.reverts, 1);
        // DRS window: twice the bytes of a round (40 000, with the ring's max) + 10 MSS
        let w = p.window().unwrap();
        assert!((2 * 40_000..=2 * 40_000 + 10 * MSS + 1000).contains(&w), "{w}");
        // The competitor leaves: our rate is back at the capacity.
        let t4 = feed(&mut p, t3, 400, 1, 400_000, &mut rx);
        assert_eq!(p.mode, Mode::Drs);
        feed(&mut p, t4, 400, 2, 400_000, &mut rx);
        assert_eq!(p.mode, Mode::Steady);
        assert_eq!(p.returns, 1);
    }

    #[test]
    fn a_low_share_with_a_short_queue_is_other_palermo_flows_and_keeps_the_mode() {
        // Four Palermo flows share the link: each gets 25 % but the RTT stays near
        // the base: no revert.
        let params = PalermoParams { revert_after: Duration::from_secs(1), ..PalermoParams::default() };
        let mut p = Palermo::new(&params, MSS);
        let mut rx = 0;
        let t = feed(&mut p, 0, 100, 10, 100_000, &mut rx);
        feed(&mut p, t, 120, 50, 30_000, &mut rx);
        assert_eq!(p.mode, Mode::Steady);
    }

    #[test]
    fn invalid_parameters_are_rejected_with_the_field_name() {
        let bad = PalermoParams { gain: 0.9, ..PalermoParams::default() };
        assert!(bad.validate().unwrap_err().starts_with("gain:"));
        let bad = PalermoParams { revert_share: 0.9, ..PalermoParams::default() };
        assert!(bad.validate().unwrap_err().starts_with("revert_share:"));
        let bad = PalermoParams { rate_rounds: 0, ..PalermoParams::default() };
        assert!(bad.validate().unwrap_err().starts_with("rate_rounds:"));
        assert!(PalermoParams::default().validate().is_ok());
    }
}
