//! TCP Prague (De Schepper, Tilmans, Briscoe & Chang: Linux `tcp_prague.c`, the
//! L4S team's reference, version 0.7) after the Prague L4S requirements of RFC 9331
//! §4 (De Schepper & Briscoe, "The Explicit Congestion Notification (ECN) Protocol
//! for Low Latency, Low Loss, and Scalable Throughput (L4S)").
//!
//! A scalable controller that evolved from DCTCP:
//!
//! * its packets carry ECT(1), the L4S identifier (RFC 9331 §4.1), and it needs
//!   Accurate ECN feedback (§4.2, RFC 9768), so a `prague` flow has both whatever
//!   `tcp.ecn` and `tcp.accecn` say;
//! * alpha, the moving average of the marked fraction (gain 1/16), is kept in 2^-24
//!   units and stored upscaled by 16 so its remainder carries over; it is updated
//!   once per RTT, and, once the flow is RTT-independent, at most once per target
//!   RTT (25 ms);
//! * the window is fractional (`frac_cwnd`, 2^-20 segments); the socket's cwnd
//!   follows it one segment per ACK, rounded up, at least 2;
//! * additive increase on every ACK, in any state, for the segments it reports
//!   *not* marked (so the increase per RTT is proportional to (1 - p)/p), 1/cwnd
//!   per segment, scaled by (RTT / 25 ms)^2 below a 25 ms RTT once the flow has
//!   spent 4 rounds out of slow start (RFC 9331 §4.3 item 3, "reduce RTT
//!   dependence": a short-RTT flow then grows by one segment per 25 ms, as a 25 ms
//!   flow would);
//! * an ECN echo starts one reduction per RTT (the CWR state; at most one per
//!   25 ms once RTT-independent): `frac_cwnd -= frac_cwnd alpha / 2`, spread over
//!   the ACKs that follow (cwnd steps down by one segment per ACK);
//! * the first mark halves the window and starts alpha from 0 (Linux's default
//!   `prague_alpha_mode = 0`; `first_mark_halves = false` starts alpha at 1 as
//!   DCTCP does);
//! * a loss or a timeout halves `frac_cwnd` and stops the increase until the
//!   connection is Open again (§4.3 item 1, "fall back to Reno-friendly on loss");
//! * it paces (Linux `SK_PACING_NEEDED`, the sender's internal pacing of
//!   `tcp/pacing.rs`) at `mtu max(cwnd, in flight) / srtt`, twice that while cwnd <
//!   ssthresh / 2, in bursts of at most 250 µs at that rate (`prague_burst_shift`
//!   12: `tso_segs`), at least one segment.
//!
//! The sender leaves cwnd to it (Linux's `cong_control` hook): no proportional
//! rate reduction, no return to ssthresh when a reduction ends.
//!
//! Not modelled (the documentation of `prague` says so): the rate-based mode that
//! takes over below a window of 4 full-sized packets (`prague_cwnd_mode = 2`) and
//! shrinks the segment size below 1 Mb/s; the ±3 % pacing-rate variation of that
//! mode. Linux's Prague has no classic-ECN fallback in this
//! version (the detection heuristic of version 0.6, off by default there, was
//! removed): over a single-queue RFC 3168 AQM that marks ECT(1) as it marks ECT(0),
//! Prague answers each mark with alpha/2 and takes more than its share from Reno or
//! CUBIC flows (RFC 9331 §4.3 item 2 asks scalable senders to detect such AQMs).

use aqm::{Duration, Time};

use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CcParams, CongestionControl, Conn, RateSample, Window};

/// alpha's resolution: 2^-24 (`PRAGUE_ALPHA_BITS`).
const ALPHA_BITS: u32 = 24;
const MAX_ALPHA: u64 = 1 << ALPHA_BITS;
/// The fractional window's unit: 2^-20 segments (`CWND_UNIT`).
const CWND_UNIT: u32 = 20;
const ONE_CWND: u64 = 1 << CWND_UNIT;
/// alpha's gain 1/2^4 (`PRAGUE_SHIFT_G`).
const SHIFT_G: u32 = 4;
/// The smallest window (`MIN_CWND_RTT`).
const MIN_CWND: u64 = 2;
/// The RTT above which the increase is never scaled (`MAX_SCALED_RTT`: 100 ms).
const MAX_SCALED_RTT_US: u64 = 100_000;
/// The packet size the increase is expressed for (`MTU_SYS`).
const MTU_SYS: u64 = 1500;
/// The lowest pacing rate, bytes per second (`MINIMUM_RATE`: 100 kb/s).
const MINIMUM_RATE: u64 = 12_500;
/// A burst lasts at most 2^-12 s (about 250 µs) at the pacing rate (`prague_burst_shift`).
const BURST_SHIFT: u32 = 12;

/// Prague's parameters: Linux's module parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PragueParams {
    /// Below this RTT the flow grows as a flow of this RTT would (Linux
    /// `prague_rtt_target`: 25 ms).
    pub rtt_target: Duration,
    /// Rounds out of slow start before the flow becomes RTT-independent (Linux
    /// `prague_rtt_transition`: 4).
    pub rtt_transition: u32,
    /// RTT-independent additive increase (RFC 9331 §4.3 item 3); off: one segment
    /// per RTT at any RTT, as DCTCP.
    pub rtt_scaling: bool,
    /// The first mark halves the window and alpha starts from 0 (Linux
    /// `prague_alpha_mode = 0`, the default); off: alpha starts at 1 (mode 1).
    pub first_mark_halves: bool,
}

impl Default for PragueParams {
    fn default() -> Self {
        PragueParams { rtt_target: Duration::from_millis(25), rtt_transition: 4, rtt_scaling: true, first_mark_halves: true }
    }
}

impl CcParams for PragueParams {
    const TITLE: &'static str = "TCP Prague: scalable (DCTCP-like) L4S sender with ECT(1), AccECN, RTT-independent increase and pacing";
    const SOURCE: &'static str = "De Schepper & Briscoe, RFC 9331 §4 (Prague L4S requirements); Linux tcp_prague.c v0.7 (De Schepper, Tilmans, Briscoe & Chang)";
    const DOC: &'static [(&'static str, &'static str)] = &[
        ("rtt_target", "below this RTT the flow grows as a flow of this RTT would (Linux prague_rtt_target: 25 ms)"),
        ("rtt_transition", "rounds out of slow start before the flow becomes RTT-independent (Linux prague_rtt_transition: 4)"),
        ("rtt_scaling", "RTT-independent additive increase (RFC 9331 §4.3); false: one segment per RTT at any RTT (default true)"),
        ("first_mark_halves", "the first CE mark halves the window and alpha starts from 0 (Linux prague_alpha_mode 0, default true); false: alpha starts at 1"),
    ];
    const LINUX: Option<&'static str> = Some("prague");
    const NEEDS_ECN: bool = true;
    const NEEDS_ACCECN: bool = true;
    const L4S: bool = true;
    type Algo = Prague;
    fn check(&self) -> Result<(), String> {
        if self.rtt_target.is_zero() || self.rtt_target.as_nanos() > MAX_SCALED_RTT_US * 1000 {
            return Err(format!("rtt_target: must be above 0 and at most 100ms (Linux scales no RTT above that), got {}", self.rtt_target));
        }
        Ok(())
    }
    fn build(&self) -> Prague {
        Prague { p: self.clone(), ..Prague::default() }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Prague {
    p: PragueParams,
    started: bool,
    cwr_stamp: Option<Time>,
    alpha_stamp: Time,
    /// alpha, 2^-24 units, times 16 (`upscaled_alpha`).
    upscaled_alpha: u64,
    /// The increase per unmarked segment acknowledged, 2^-20 units, before the 1/cwnd.
    ai_ack_increase: u64,
    /// The fractional window, 2^-20 segments.
    frac_cwnd: u64,
    /// The pacing rate, bytes per second (`rate_bytes`), and `sk_pacing_rate` (twice
    /// that early in slow start).
    rate_bytes: u64,
    pacing: u64,
    /// Segments per burst (`max_tso_burst`).
    max_tso_burst: u64,
    /// Segments delivered and reported CE-marked (the connection's `delivered`,
    /// `delivered_ce`) at the round's start; the round ends when snd_una reaches
    /// `next_seq`.
    old_delivered: u64,
    old_delivered_ce: u64,
    next_seq: u64,
    /// Rounds since the end of slow start.
    round: u32,
    /// A CE mark has been seen: there is an L4S AQM on the path.
    saw_ce: bool,
    /// Reducing after a loss: no increase until Open.
    in_loss: bool,
    /// Smoothed RTT, for the increase and the pacing rate.
    srtt: Option<Duration>,
}

/// Round to the nearest (`DIV64_U64_ROUND_CLOSEST`).
fn div_round(a: u128, b: u128) -> u128 {
    (a + b / 2) / b
}

impl Prague {
    /// alpha as a fraction.
    pub fn alpha(&self) -> f64 {
        (self.upscaled_alpha >> SHIFT_G) as f64 / MAX_ALPHA as f64
    }

    /// The fractional window, in segments.
    pub fn frac_cwnd(&self) -> f64 {
        self.frac_cwnd as f64 / ONE_CWND as f64
    }


    /// RFC 9331 §4.3 item 3: RTT-independent once out of slow start for a few rounds.
    fn rtt_indep(&self, w: &Window) -> bool {
        self.p.rtt_scaling && !w.in_slow_start() && self.round >= self.p.rtt_transition
    }

    /// `prague_update_pacing_rate` (the fractional-window mode): mtu / srtt per
    /// segment of the window (or in flight), at least 100 kb/s; twice that while cwnd
    /// < ssthresh / 2; bursts of 2^-12 s at that rate. Without an RTT sample Linux
    /// divides by nothing: a rate so high that nothing waits.
    fn update_pacing_rate(&mut self, w: &Window, in_flight: u64, mtu: u32) {
        let mut rate = (1_000_000u128 << 3) * mtu as u128;
        let srtt8 = self.srtt8();
        if srtt8 > 0 {
            rate /= srtt8 as u128;
        }
        let inflight = (self.frac_cwnd >> CWND_UNIT).max(in_flight) as u128;
        self.rate_bytes = (rate * inflight).max(MINIMUM_RATE as u128).min(u64::MAX as u128) as u64;
        let mut pacing = self.rate_bytes;
        if w.cwnd < (w.ssthresh / 2.0).floor() {
            pacing = pacing.saturating_mul(2);
        }
        self.pacing = pacing;
        self.max_tso_burst = ((pacing / mtu.max(1) as u64) >> BURST_SHIFT).max(1);
    }

    /// srtt in Linux's `srtt_us` unit, 1/8 µs.
    fn srtt8(&self) -> u64 {
        self.srtt.map_or(0, |d| d.as_nanos() * 8 / 1000)
    }

    /// `prague_ai_ack_increase`: 1 segment per window, times (RTT / target)^2 below the
    /// target once RTT-independent.
    fn update_ai(&mut self) {
        let rtt = self.srtt8();
        let target = self.p.rtt_target.as_nanos() * 8 / 1000;
        self.ai_ack_increase = if !self.p.rtt_scaling || self.round < self.p.rtt_transition || rtt == 0 || rtt > MAX_SCALED_RTT_US << 3 || rtt >= target {
            ONE_CWND
        } else {
            div_round(((rtt as u128) * (rtt as u128)) << CWND_UNIT, (target as u128) * (target as u128)) as u64
        };
    }

    fn new_round(&mut self, w: &Window, c: &Conn) {
        self.next_seq = c.snd_nxt;
        self.old_delivered = c.delivered;
        self.old_delivered_ce = c.delivered_ce;
        if !w.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.update_ai();
    }

    /// `prague_update_alpha`: fold the round's marked fraction into alpha.
    fn update_alpha(&mut self, w: &Window, c: &Conn) {
        if self.saw_ce {
            let mut ecn = c.delivered_ce - self.old_delivered_ce;
            if ecn > 0 {
                let acked = (c.delivered - self.old_delivered).max(1);
                ecn = (ecn << ALPHA_BITS) / acked;
            }
            let alpha = self.upscaled_alpha - (self.upscaled_alpha >> SHIFT_G) + ecn;
            self.alpha_stamp = c.now;
            self.upscaled_alpha = alpha.min(MAX_ALPHA << SHIFT_G);
        }
        self.new_round(w, c);
    }

    /// `prague_update_cwnd`: grow for the unmarked segments, then let cwnd follow the
    /// fractional window by one segment.
    fn update_cwnd(&mut self, w: &mut Window, rs: &RateSample, c: &Conn) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            if !self.saw_ce && self.p.first_mark_halves {
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && c.cwnd_limited {
            let mut acked = acked as u64;
            if w.in_slow_start() {
                acked = w.slow_start(acked as f64) as u64;
                self.frac_cwnd = (w.cwnd as u64) << CWND_UNIT;
                if acked == 0 {
                    self.update_ai();
                    return;
                }
            }
            let mut increase = acked as u128 * self.ai_ack_increase as u128;
            if self.frac_cwnd > 0 {
                increase = div_round(increase << CWND_UNIT, self.frac_cwnd as u128);
            }
            increase = increase * MTU_SYS as u128 / c.packet_size.max(1) as u128;
            self.frac_cwnd += (increase as u64).max(acked);
        }
        // adjust: one segment per ACK toward ceil(frac_cwnd), at least 2
        let target = self.frac_cwnd.div_ceil(ONE_CWND).max(MIN_CWND) as f64;
        if w.cwnd > target {
            w.cwnd -= 1.0;
            w.ssthresh = w.cwnd;
            self.update_ai();
        } else if w.cwnd < target {
            w.cwnd += 1.0;
            self.update_ai();
        }
    }

    /// `prague_enter_loss`: halve the fractional window, stop the increase.
    fn enter_loss(&mut self) {
        self.frac_cwnd -= self.frac_cwnd >> 1;
        self.in_loss = true;
    }
}

impl CongestionControl for Prague {
    /// Never called: Prague sets cwnd itself in [`CongestionControl::cong_control`].
    fn on_ack(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// `prague_init`, when the connection opens (with the handshake's RTT, if any).
    fn on_init(&mut self, w: &mut Window, c: &Conn) {
        self.started = true;
        self.upscaled_alpha = if self.p.first_mark_halves { 0 } else { MAX_ALPHA << SHIFT_G };
        self.frac_cwnd = (w.cwnd as u64) << CWND_UNIT;
        self.alpha_stamp = c.now;
        self.srtt = c.srtt;
        self.ai_ack_increase = ONE_CWND;
        self.saw_ce = c.delivered_ce > 0;
        self.update_pacing_rate(w, c.in_flight, c.packet_size);
        self.new_round(w, c);
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing)
    }

    fn tso_segs(&self) -> Option<u64> {
        Some(self.max_tso_burst)
    }

    /// `prague_ssthresh`: ssthresh stays; the reduction is Prague's own.
    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        w.ssthresh
    }

    /// A timeout's new loss episode (Linux `CA_EVENT_LOSS`): halve the fractional
    /// window.
    fn on_loss_event(&mut self, _w: &Window, _now: Time) {
        if self.started {
            self.enter_loss();
        }
    }

    fn set_state(&mut self, w: &mut Window, to: CaState, now: Time) {
        if !self.started {
            return;
        }
        match to {
            CaState::Recovery => self.enter_loss(),
            CaState::Open => self.in_loss = false,
            CaState::Cwr => {
                // `prague_enter_cwr`: one reduction per RTT, and at most one per
                // target RTT once RTT-independent.
                if self.rtt_indep(w) && self.cwr_stamp.is_some_and(|t| now.saturating_since(t) < self.p.rtt_target) {
                    return;
                }
                self.cwr_stamp = Some(now);
                let alpha = (self.upscaled_alpha >> SHIFT_G) as u128;
                let reduction = (alpha * self.frac_cwnd as u128 + MAX_ALPHA as u128) >> (ALPHA_BITS + 1);
                self.frac_cwnd -= reduction as u64;
            }
            CaState::Loss | CaState::Disorder => {}
        }
    }

    fn controls_cwnd(&self) -> bool {
        true
    }

    /// `prague_cong_control`, on every ACK after the sender's state machine.
    fn cong_control(&mut self, w: &mut Window, rs: &RateSample, c: &mut Conn) {
        if !self.started {
            self.on_init(w, c);
        }
        self.srtt = c.srtt.or(self.srtt);
        self.update_cwnd(w, rs, c);
        // RTT-independent on a step AQM: alpha at most once per target RTT
        let elapsed = c.snd_una >= self.next_seq;
        if elapsed && (!self.rtt_indep(w) || c.now.saturating_since(self.alpha_stamp) >= self.p.rtt_target) {
            self.update_alpha(w, c);
        }
        self.update_pacing_rate(w, c.in_flight, c.packet_size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ACKs as the sender hands them to Prague: the connection's running totals of
    /// segments delivered and reported CE-marked.
    #[derive(Default)]
    struct Feed {
        delivered: u64,
        ce: u64,
    }

    impl Feed {
        /// An ACK at `now_ms` delivering `acked` segments, `ce` of them reported marked.
        #[allow(clippy::too_many_arguments)]
        fn ack(&mut self, p: &mut Prague, w: &mut Window, now_ms: u64, snd_una: u64, snd_nxt: u64, acked: u64, ce: u64, srtt_ms: u64) {
            self.delivered += acked;
            self.ce += ce;
            let now = Time::from_millis(now_ms);
            let srtt = Some(Duration::from_millis(srtt_ms));
            let rs = RateSample { acked_sacked: acked, ece_delta: ce, ..RateSample::default() };
            let mut c = Conn {
                now,
                mss: 1460,
                srtt,
                min_rtt: srtt,
                in_flight: snd_nxt - snd_una,
                delivered: self.delivered,
                lost: 0,
                delivered_mstamp: now,
                app_limited: 0,
                ca_state: CaState::Open,
                wstamp: now,
                delivered_ce: self.ce,
                snd_una,
                snd_nxt,
                cwnd_limited: true,
                packet_size: 1500,
                ..Conn::default()
            };
            p.cong_control(w, &rs, &mut c);
        }
    }

    fn prague() -> (Prague, Feed) {
        (PragueParams::default().build(), Feed::default())
    }

    #[test]
    fn slow_start_grows_by_the_segments_acked_and_the_first_mark_halves() {
        let (mut p, mut f) = prague();
        let mut w = Window::new(10.0, 1e9);
        f.ack(&mut p, &mut w, 20, 2, 12, 2, 0, 20);
        assert_eq!(w.cwnd, 12.0);
        assert_eq!(p.frac_cwnd(), 12.0);
        // an ACK of 2 segments, both marked: the window is halved (6), no growth,
        // and cwnd steps down by one toward it; slow start ends
        f.ack(&mut p, &mut w, 21, 4, 14, 2, 2, 20);
        assert_eq!(p.frac_cwnd(), 6.0);
        assert_eq!(w.cwnd, 11.0);
        assert_eq!(w.ssthresh, 11.0);
        for i in 0..10 {
            f.ack(&mut p, &mut w, 22 + i, 5 + i, 15, 0, 0, 20);
        }
        assert_eq!(w.cwnd, 6.0, "one step per ACK down to the fractional window");
    }

    #[test]
    fn alpha_is_the_moving_average_of_the_marked_fraction_per_round() {
        let (mut p, mut f) = prague();
        let mut w = Window::new(100.0, 100.0);
        // one round of 100 segments, 10 marked (the first mark sets saw_ce)
        f.ack(&mut p, &mut w, 0, 0, 100, 0, 0, 20);
        assert_eq!(p.next_seq, 100);
        f.ack(&mut p, &mut w, 10, 50, 150, 90, 10, 20);
        assert_eq!(p.alpha(), 0.0, "the round is not over");
        f.ack(&mut p, &mut w, 20, 100, 200, 10, 0, 20);
        // alpha = 0 - 0 + F = 10/100 (upscaled by 16: g F is added to alpha)
        assert!((p.alpha() - 0.1 / 16.0).abs() < 1e-6, "{}", p.alpha());
        // rounds of 10 % marks: alpha converges to 0.1
        let mut seq = 100;
        for r in 0..200u64 {
            f.ack(&mut p, &mut w, 40 + 20 * r, seq + 100, seq + 200, 100, 10, 20);
            seq += 100;
        }
        assert!((p.alpha() - 0.1).abs() < 1e-3, "{}", p.alpha());
    }

    #[test]
    fn an_echo_cuts_the_fractional_window_by_alpha_over_two_once_per_round() {
        let (mut p, mut f) = prague();
        let mut w = Window::new(100.0, 100.0);
        f.ack(&mut p, &mut w, 0, 0, 100, 0, 0, 20);
        p.saw_ce = true;
        p.upscaled_alpha = (MAX_ALPHA / 4) << SHIFT_G; // alpha = 1/4
        let before = p.frac_cwnd();
        p.set_state(&mut w, CaState::Cwr, Time::from_millis(5));
        assert!((p.frac_cwnd() - before * (1.0 - 0.125)).abs() < 1e-6, "{} -> {}", before, p.frac_cwnd());
        // cwnd follows by one segment per ACK
        let c = w.cwnd;
        f.ack(&mut p, &mut w, 6, 1, 101, 0, 0, 20);
        assert_eq!(w.cwnd, c - 1.0);
    }

    #[test]
    fn the_increase_is_one_segment_per_rtt_then_rtt_independent_below_25_ms() {
        // Out of slow start, no marks, ACKs of one segment: a window of W segments
        // acked grows cwnd by one segment at any RTT during the first rounds; once
        // RTT-independent, by (RTT / 25 ms)^2 of a segment per RTT, i.e. one segment
        // per 25 ms of time.
        for (rtt_ms, per_rtt_late) in [(5u64, 1.0 / 25.0), (10, 4.0 / 25.0), (20, 16.0 / 25.0), (40, 1.0)] {
            let (mut p, mut f) = prague();
            let mut w = Window::new(50.0, 50.0);
            f.ack(&mut p, &mut w, 0, 0, 50, 0, 0, rtt_ms); // the connection starts
            let (mut seq, mut t) = (0u64, 0u64);
            let mut round = |p: &mut Prague, f: &mut Feed, w: &mut Window| {
                let n = w.cwnd as u64;
                let before = p.frac_cwnd();
                for _ in 0..n {
                    seq += 1;
                    f.ack(p, w, t, seq, seq + n, 1, 0, rtt_ms);
                }
                t += rtt_ms;
                p.frac_cwnd() - before
            };
            let first = round(&mut p, &mut f, &mut w);
            assert!((first - 1.0).abs() < 0.05, "rtt {rtt_ms}: first round grew {first}");
            for _ in 0..6 {
                round(&mut p, &mut f, &mut w);
            }
            let late = round(&mut p, &mut f, &mut w);
            assert!((late - per_rtt_late).abs() < 0.03 * per_rtt_late.max(0.1), "rtt {rtt_ms}: {late} per RTT, expected {per_rtt_late}");
        }
    }

    #[test]
    fn marked_segments_do_not_grow_the_window_and_a_loss_halves_it_and_stops_growth() {
        let (mut p, mut f) = prague();
        let mut w = Window::new(40.0, 40.0);
        f.ack(&mut p, &mut w, 0, 0, 40, 0, 0, 20);
        p.saw_ce = true;
        let half = p.frac_cwnd();
        f.ack(&mut p, &mut w, 1, 2, 42, 2, 2, 20);
        assert_eq!(p.frac_cwnd(), half, "two segments, both marked: no increase");
        p.set_state(&mut w, CaState::Recovery, Time::from_millis(2));
        assert_eq!(p.frac_cwnd(), half / 2.0);
        f.ack(&mut p, &mut w, 3, 4, 44, 2, 0, 20);
        assert_eq!(p.frac_cwnd(), half / 2.0, "no increase while recovering from a loss");
        p.set_state(&mut w, CaState::Open, Time::from_millis(4));
        f.ack(&mut p, &mut w, 5, 6, 46, 2, 0, 20);
        assert!(p.frac_cwnd() > half / 2.0);
    }

    #[test]
    fn it_paces_at_the_window_per_rtt_and_twice_that_early_in_slow_start() {
        let (mut p, mut f) = prague();
        let mut w = Window::new(100.0, 100.0);
        f.ack(&mut p, &mut w, 0, 0, 100, 0, 0, 20);
        // 100 segments of 1500 B per 20 ms = 7.5 MB/s, in bursts of 250 µs: 1.8
        // segments, so one (7.5e6 / 1500 = 5000 segments/s, >> 12 = 1)
        let r = p.pacing_rate().unwrap() as f64;
        assert!((r / 7.5e6 - 1.0).abs() < 0.02, "{r}");
        assert_eq!(p.tso_segs(), Some(1));
        // early in slow start (cwnd < ssthresh / 2) twice that
        p.update_pacing_rate(&Window::new(10.0, 1e9), 0, 1500);
        assert_eq!(p.pacing_rate(), Some(2 * p.rate_bytes));
        // before any RTT sample: no division, nothing waits
        let mut q = PragueParams::default().build();
        q.frac_cwnd = 10 << CWND_UNIT;
        q.update_pacing_rate(&Window::new(10.0, 1e9), 0, 1500);
        assert!(q.pacing_rate().unwrap() > 1_000_000_000);
    }

    #[test]
    fn bad_parameters_are_named() {
        assert!(PragueParams { rtt_target: Duration::ZERO, ..Default::default() }.check().unwrap_err().starts_with("rtt_target:"));
    }
}
