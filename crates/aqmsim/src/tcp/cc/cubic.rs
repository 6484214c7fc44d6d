//! CUBIC (Xu, Ha, Rhee, Goel & Eggert, RFC 9438) as Linux's `tcp_cubic.c` computes
//! it: the window a whole number of segments, grown by one every `cnt` segments
//! acked (`tcp_cong_avoid_ai`); `cnt` from the cubic function one minimum RTT ahead
//! in fixed point (time in 1/1024 s, `K` from a cube root, C = 41 * 10 / 1024 and
//! beta = 717 / 1024 for the RFC's 0.4 and 0.7); the Reno-friendly estimate grown by
//! one segment per `cwnd * beta_scale / 8` acked, and taken when it is ahead, without
//! stopping the cubic growth when it is not; the epoch shifted over idle time
//! (`CA_EVENT_TX_START`, RFC 9438 §5.8); everything forgotten on a timeout.
//!
//! Slow start ends with HyStart (Ha & Rhee, "Taming the elephants: New TCP slow
//! start", 2011) as Linux runs it: rounds tracked from the first ACK whatever cwnd,
//! detection from cwnd 16: an ACK train longer than half the minimum RTT (plus the
//! pacing allowance), or a round's minimum RTT above the minimum by clamp(min/8, 4 ms,
//! 16 ms); or, with `hystart_plus_plus`, with HyStart++ (Balasubramanian, Huang &
//! Olson, RFC 9406): conservative slow start after a delay increase.

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, Conn, Window};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicParams {
    /// beta_cubic, the multiplicative decrease factor (RFC 9438 §4.6: 0.7; Linux
    /// applies it as `beta` / 1024 with `beta` = 717, which 0.7 rounds to).
    pub beta: f64,
    /// C, the scaling constant (RFC 9438 §5: 0.4; Linux `bic_scale` = 41, C =
    /// 41 * 10 / 1024, which 0.4 rounds to).
    pub c: f64,
    /// Fast convergence (RFC 9438 §4.7; Linux default on).
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 §4.3; Linux `tcp_friendliness` on).
    pub reno_friendly: bool,
    /// RFC 9438 §4.3 (a SHOULD): once W_est reaches the window before the last
    /// reduction (cwnd_prior), it grows by 1 segment per RTT instead of
    /// alpha_cubic. Linux's `tcp_cubic.c` has no such switch (its
    /// `tcp_friendliness` grows W_est by a constant `beta_scale`, alpha_cubic per
    /// RTT), nor had the kernels behind the seeds' experiments (Kuhn & Ros ran
    /// Linux's CUBIC module in ns-2): the default is Linux's, `false`
    /// (docs/emulation.md and docs/validation.md measure the difference).
    pub alpha_to_one: bool,
    /// HyStart (Linux `hystart` on).
    pub hystart: bool,
    /// HyStart acts only once cwnd reaches this many segments (Linux: 16).
    pub hystart_low_window: u32,
    /// ACKs closer than this form a train (Linux `hystart_ack_delta_us`: 2 ms).
    pub hystart_ack_delta: Duration,
    /// RTT samples per round before the delay test (Linux `HYSTART_MIN_SAMPLES`: 8).
    pub hystart_min_samples: u32,
    /// Delay-increase threshold clamp, low end (Linux `HYSTART_DELAY_MIN`: 4 ms).
    pub hystart_delay_min: Duration,
    /// Delay-increase threshold clamp, high end (Linux `HYSTART_DELAY_MAX`: 16 ms).
    pub hystart_delay_max: Duration,
    /// HyStart++ (RFC 9406) in place of Linux's HyStart: after a delay increase,
    /// conservative slow start (cwnd grows by a quarter) for up to 5 rounds, back to
    /// slow start if the RTT falls again. Not in Linux; off by default.
    pub hystart_plus_plus: bool,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            beta: 0.7,
            c: 0.4,
            fast_convergence: true,
            reno_friendly: true,
            alpha_to_one: false,
            hystart: true,
            hystart_low_window: 16,
            hystart_ack_delta: Duration::from_millis(2),
            hystart_min_samples: 8,
            hystart_delay_min: Duration::from_millis(4),
            hystart_delay_max: Duration::from_millis(16),
            hystart_plus_plus: false,
        }
    }
}

impl CcParams for CubicParams {
    const TITLE: &'static str = "CUBIC as Linux's tcp_cubic.c: integer window, HyStart, Reno-friendly alpha, epoch shifted over idle time";
    const SOURCE: &'static str = "Xu, Ha, Rhee, Goel & Eggert, RFC 9438; Ha & Rhee, \"Taming the elephants: New TCP slow start\" (HyStart); RFC 9406 (HyStart++)";
    const DOC: &'static [(&'static str, &'static str)] = &[
        ("beta", "beta_cubic, multiplicative decrease (RFC 9438 §4.6: 0.7; Linux 717/1024)"),
        ("c", "C, the scaling constant (RFC 9438 §5: 0.4; Linux bic_scale 41 = C * 1024 / 10)"),
        ("fast_convergence", "fast convergence (RFC 9438 §4.7; Linux: on)"),
        ("reno_friendly", "the Reno-friendly region (RFC 9438 §4.3; Linux tcp_friendliness: on)"),
        ("alpha_to_one", "switch W_est's growth to 1 segment per RTT once it passes cwnd_prior (RFC 9438 §4.3, a SHOULD; Linux: off)"),
        ("hystart", "HyStart slow-start exit (Linux: on)"),
        ("hystart_low_window", "HyStart detects from this cwnd on; rounds are tracked from the start (Linux: 16 segments)"),
        ("hystart_ack_delta", "ACKs closer than this form a train (Linux hystart_ack_delta_us: 2 ms)"),
        ("hystart_min_samples", "RTT samples per round before the delay test (Linux: 8)"),
        ("hystart_delay_min", "delay-increase threshold, low clamp (Linux: 4 ms)"),
        ("hystart_delay_max", "delay-increase threshold, high clamp (Linux: 16 ms)"),
        ("hystart_plus_plus", "HyStart++ (RFC 9406: conservative slow start) in place of Linux's HyStart (off)"),
    ];
    const LINUX: Option<&'static str> = Some("cubic");
    type Algo = Cubic;
    fn check(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("beta: must be in (0, 1), got {}", self.beta));
        }
        if !(self.c > 0.0 && self.c.is_finite() && self.c < 1000.0) {
            return Err(format!("c: must be positive (and below 1000), got {}", self.c));
        }
        if self.hystart_min_samples == 0 {
            return Err("hystart_min_samples: must be at least 1".into());
        }
        Ok(())
    }
    fn build(&self) -> Cubic {
        Cubic::new(self.clone())
    }
}

/// Linux `BICTCP_BETA_SCALE`: beta in units of 1/1024.
const BETA_SCALE: u64 = 1024;
/// Linux `BICTCP_HZ`: time in the cubic function counts 2^-10 s.
const BICTCP_HZ: u32 = 10;

/// HyStart's per-round state (Linux `struct bictcp`'s HyStart fields).
#[derive(Clone, Debug, Default)]
struct HyStart {
    found: bool,
    round_start: Time,
    last_ack: Time,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

/// HyStart++'s state (RFC 9406 §4.2).
#[derive(Clone, Debug, Default)]
struct HyStartPP {
    window_end: u64,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    /// In conservative slow start since this baseline, for this many rounds.
    css_baseline_min_rtt: Option<Duration>,
    css_rounds: u32,
}

/// RFC 9406 §4.3 constants.
const HSPP_MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const HSPP_MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const HSPP_MIN_RTT_DIVISOR: u64 = 8;
const HSPP_N_RTT_SAMPLE: u32 = 8;
const HSPP_CSS_GROWTH_DIVISOR: u32 = 4;
const HSPP_CSS_ROUNDS: u32 = 5;

#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// beta in 1/1024 (Linux `beta`: 717).
    beta: u64,
    /// Linux `beta_scale` = 8 (1024 + beta) / 3 / (1024 - beta): W_est grows by one
    /// segment per cwnd * beta_scale / 8 segments acked (alpha_cubic per RTT).
    beta_scale: u64,
    /// Linux `cube_rtt_scale` = bic_scale * 10 and `cube_factor` = 2^40 / cube_rtt_scale.
    cube_rtt_scale: u64,
    cube_factor: u64,
    /// `cnt`: cwnd grows by one per `cnt` segments acked.
    cnt: u32,
    /// W_max (`last_max_cwnd`, 0: none yet, or forgotten after a timeout).
    last_max_cwnd: u32,
    /// cwnd and time of the last recomputation of `cnt`.
    last_cwnd: u32,
    last_time: Option<u64>,
    /// The epoch's origin (W_max, or cwnd when above it) and K in 2^-10 s.
    origin: u32,
    k: u64,
    /// The minimum RTT (Linux's own `delay_min`, reset on a timeout).
    delay_min: Option<Duration>,
    /// Start of the current epoch, in jiffies (`epoch_start`; `None`: 0 in Linux).
    epoch_start: Option<u64>,
    /// Segments acked in this epoch toward W_est (`ack_cnt`), and W_est (`tcp_cwnd`).
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// cwnd at the last reduction (RFC 9438 cwnd_prior, for `alpha_to_one`).
    cwnd_prior: u32,
    hystart: HyStart,
    hspp: HyStartPP,
}

impl Cubic {
    pub fn new(p: CubicParams) -> Cubic {
        let beta = (p.beta * BETA_SCALE as f64).round() as u64;
        let bic_scale = (p.c * 1024.0 / 10.0).round().max(1.0) as u64;
        let cube_rtt_scale = bic_scale * 10;
        Cubic {
            beta,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta).max(1),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale,
            p,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: None,
            origin: 0,
            k: 0,
            delay_min: None,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            cwnd_prior: 0,
            hystart: HyStart::default(),
            hspp: HyStartPP::default(),
        }
    }

    pub fn w_max(&self) -> f64 {
        self.last_max_cwnd as f64
    }
    /// K in seconds.
    pub fn k(&self) -> f64 {
        self.k as f64 / (1u64 << BICTCP_HZ) as f64
    }
    pub fn cnt(&self) -> u32 {
        self.cnt
    }
    pub fn hystart_found(&self) -> bool {
        self.hystart.found
    }
    pub fn in_conservative_slow_start(&self) -> bool {
        self.hspp.css_baseline_min_rtt.is_some()
    }
    /// W_cubic(t) = C (t - K)^3 + W_max (RFC 9438 eq. 1), t in seconds since the
    /// epoch, from this epoch's origin and K.
    pub fn w_cubic(&self, t: f64) -> f64 {
        let c = self.cube_rtt_scale as f64 / 1024.0;
        let d = t - self.k();
        self.origin as f64 + c * d * d * d
    }

    /// Linux `bictcp_reset`: forget W_max, the epoch, the minimum RTT and HyStart's
    /// verdict.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = None;
        self.origin = 0;
        self.k = 0;
        self.delay_min = None;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.hystart.found = false;
    }

    /// Linux `bictcp_hystart_reset`: a new round starts now, until `snd_nxt` is acked.
    fn hystart_reset(&mut self, now: Time, snd_nxt: u64) {
        let h = &mut self.hystart;
        h.round_start = now;
        h.last_ack = now;
        h.end_seq = snd_nxt;
        h.curr_rtt = None;
        h.sample_cnt = 0;
    }

    /// Linux `bictcp_update`: recompute `cnt`, segments acked per increment.
    fn update(&mut self, cwnd: u32, acked: u32, s: &AckSample) {
        self.ack_cnt += acked as u64;
        let now = s.now;
        // in jiffies, as tcp_jiffies32: recompute at most 32 times a second unless
        // cwnd changed (HZ / 32 jiffies), and at most once a jiffy
        let now_j = s.jiffies(now);
        let since = self.last_time.map(|t| now_j.saturating_sub(t));
        let per_32th = (s.to_jiffies(Duration::from_secs(1)) / 32).max(1);
        if self.last_cwnd == cwnd && since.is_some_and(|d| d <= per_32th) {
            return;
        }
        if !(self.epoch_start.is_some() && since == Some(0)) {
            self.last_cwnd = cwnd;
            self.last_time = Some(now_j);
            let epoch = match self.epoch_start {
                Some(e) => e,
                None => {
                    // RFC 9438 §4.2: a new epoch on the first ACK in congestion
                    // avoidance; K from the distance to W_max (eq. 2), else grow from
                    // cwnd (Linux: K = 0, origin = cwnd).
                    let e = s.jiffies(now);
                    self.epoch_start = Some(e);
                    self.ack_cnt = acked as u64;
                    self.tcp_cwnd = cwnd as u64;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin = cwnd;
                    } else {
                        self.k = icbrt(self.cube_factor * (self.last_max_cwnd - cwnd) as u64);
                        self.origin = self.last_max_cwnd;
                    }
                    e
                }
            };
            // t in 2^-10 s, one minimum RTT ahead (Linux: the look-ahead is delay_min;
            // RFC 9438 §4.2 says the smoothed RTT)
            let tick_ns = s.tick.as_nanos().max(1) as u128;
            let ahead = self.delay_min.map_or(0, |d| s.to_jiffies(d));
            let t_j = s.jiffies(now).saturating_sub(epoch) + ahead;
            let t = ((t_j as u128 * tick_ns) << BICTCP_HZ) / 1_000_000_000;
            let offs = t.abs_diff(self.k as u128);
            // C (t - K)^3 in segments: cube_rtt_scale * offs^3 >> (10 + 3 * BICTCP_HZ)
            let delta = (self.cube_rtt_scale as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
            let target: u128 = if t < self.k as u128 { (self.origin as u128).saturating_sub(delta) } else { self.origin as u128 + delta };
            self.cnt = if target > cwnd as u128 { (cwnd as u128 / (target - cwnd as u128)) as u32 } else { 100 * cwnd };
            // while there is no W_max, grow at least 5 % per RTT
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // RFC 9438 §4.3, the Reno-friendly region, as Linux's tcp_friendliness:
        // W_est grows one segment per cwnd * beta_scale / 8 acked (alpha_cubic per
        // RTT); if it is ahead of cwnd, cwnd grows toward it at least as fast.
        if self.p.reno_friendly {
            let per = if self.p.alpha_to_one && self.tcp_cwnd >= self.cwnd_prior as u64 && self.cwnd_prior > 0 {
                cwnd as u64 // RFC 9438 §4.3: alpha = 1 past cwnd_prior
            } else {
                (cwnd as u64 * self.beta_scale) >> 3
            }
            .max(1);
            while self.ack_cnt > per {
                self.ack_cnt -= per;
                self.tcp_cwnd += 1;
            }
            if self.tcp_cwnd > cwnd as u64 {
                let max_cnt = (cwnd as u64 / (self.tcp_cwnd - cwnd as u64)) as u32;
                self.cnt = self.cnt.min(max_cnt);
            }
        }
        // at most one segment per two acked: 1.5x per RTT (RFC 9438 §4.4)
        self.cnt = self.cnt.max(2);
    }

    fn hystart_update(&mut self, w: &mut Window, s: &AckSample, delay: Duration) {
        let delay_min = self.delay_min.unwrap_or(delay);
        // a round ends when the ACK passes what was sent when it began; rounds are
        // tracked whatever cwnd (Linux's "fix incorrect HyStart round
        // start detection"), detection starts at hystart_low_window
        if s.snd_una > self.hystart.end_seq {
            self.hystart_reset(s.now, s.snd_nxt);
        }
        let p = &self.p;
        if w.cwnd < p.hystart_low_window as f64 {
            return;
        }
        let h = &mut self.hystart;
        // ACK train: ACKs closely spaced for longer than half of the minimum RTT
        // plus the allowance for TSO/GRO aggregation (Linux halves it for a sender
        // that does not pace, as here: `SK_PACING_NONE`)
        if s.now.saturating_since(h.last_ack) <= p.hystart_ack_delta {
            h.last_ack = s.now;
            let threshold = (delay_min + hystart_ack_delay(linux_pacing_rate(w, s))).div_u64(2);
            if s.now.saturating_since(h.round_start) > threshold {
                h.found = true;
            }
        }
        // Delay increase: the minimum of the round's first samples exceeds the
        // minimum RTT by delay_min/8, clamped to [4 ms, 16 ms].
        h.curr_rtt = Some(h.curr_rtt.map_or(delay, |c| c.min(delay)));
        if h.sample_cnt < p.hystart_min_samples {
            h.sample_cnt += 1;
        } else {
            let thresh = delay_min.div_u64(8).max(p.hystart_delay_min).min(p.hystart_delay_max);
            if h.curr_rtt.unwrap() > delay_min + thresh {
                h.found = true;
            }
        }
        if h.found {
            w.ssthresh = w.cwnd;
        }
    }

    /// RFC 9406 §4.2 for one ACK in slow start or conservative slow start: returns
    /// the segments cwnd may grow by.
    fn hystart_pp(&mut self, w: &mut Window, s: &AckSample, acked: u32) -> u32 {
        let h = &mut self.hspp;
        // L: no limit for a sender that does not pace (RFC 9406 §4.3)
        let l = u32::MAX;
        // a new round: the ACK passes windowEnd
        if s.snd_una > h.window_end {
            h.window_end = s.snd_nxt;
            h.last_round_min_rtt = h.current_round_min_rtt;
            h.current_round_min_rtt = None;
            h.rtt_sample_count = 0;
            if h.css_baseline_min_rtt.is_some() {
                h.css_rounds += 1;
                if h.css_rounds >= HSPP_CSS_ROUNDS {
                    // CSS lasted CSS_ROUNDS rounds: enter congestion avoidance
                    w.ssthresh = w.cwnd;
                    h.css_baseline_min_rtt = None;
                    return 0;
                }
            }
        }
        if let Some(r) = s.rtt {
            h.current_round_min_rtt = Some(h.current_round_min_rtt.map_or(r, |c| c.min(r)));
            h.rtt_sample_count += 1;
        }
        let grow = acked.min(l);
        match h.css_baseline_min_rtt {
            None => {
                if h.rtt_sample_count >= HSPP_N_RTT_SAMPLE {
                    if let (Some(cur), Some(last)) = (h.current_round_min_rtt, h.last_round_min_rtt) {
                        let thresh = last.div_u64(HSPP_MIN_RTT_DIVISOR).min(HSPP_MAX_RTT_THRESH).max(HSPP_MIN_RTT_THRESH);
                        if cur >= last + thresh {
                            h.css_baseline_min_rtt = Some(cur);
                            h.css_rounds = 0;
                        }
                    }
                }
                grow
            }
            Some(base) => {
                if h.rtt_sample_count >= HSPP_N_RTT_SAMPLE && h.current_round_min_rtt.is_some_and(|c| c < base) {
                    // the delay increase was spurious: back to slow start
                    h.css_baseline_min_rtt = None;
                    return grow;
                }
                // conservative slow start: a quarter of slow start's growth
                w.cnt += grow;
                let inc = w.cnt / HSPP_CSS_GROWTH_DIVISOR;
                w.cnt -= inc * HSPP_CSS_GROWTH_DIVISOR;
                inc
            }
        }
    }
}

/// Linux `tcp_update_pacing_rate`, which Linux computes for every connection, paced
/// or not: mss x max(cwnd, packets_out) / srtt, at 200 % while cwnd is below half
/// of ssthresh and 120 % after, in bytes per second (0 before an RTT sample).
fn linux_pacing_rate(w: &Window, s: &AckSample) -> f64 {
    let Some(srtt) = s.srtt.filter(|d| !d.is_zero()) else { return 0.0 };
    let ratio = if w.cwnd < w.ssthresh / 2.0 { 2.0 } else { 1.2 };
    s.mss as f64 * w.cwnd.max(s.packets_out as f64) * ratio / srtt.as_secs_f64()
}

/// Linux `hystart_ack_delay`: the cushion for TSO/GRO aggregation, 4 GSO packets
/// of 64 KB at the pacing rate, at most 1 ms.
fn hystart_ack_delay(pacing_rate: f64) -> Duration {
    if pacing_rate <= 0.0 {
        return Duration::ZERO;
    }
    let ns = (65_536.0 * 4.0 * 1e9 / pacing_rate).min(1e6);
    Duration::from_nanos(ns as u64)
}

/// Integer cube root, rounded down (Linux approximates it with a table and one
/// Newton step, within 0.2 %).
fn icbrt(a: u64) -> u64 {
    let mut x = libm::cbrt(a as f64) as u64;
    while (x as u128 + 1).pow(3) <= a as u128 {
        x += 1;
    }
    while x > 0 && (x as u128).pow(3) > a as u128 {
        x -= 1;
    }
    x
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        // Linux cubictcp_cong_avoid
        if !s.cwnd_limited {
            return;
        }
        let mut acked = s.acked;
        if w.in_slow_start() {
            if self.p.hystart && self.p.hystart_plus_plus {
                // RFC 9406: slow start, or conservative slow start, by HyStart++
                let grow = self.hystart_pp(w, s, acked);
                if w.in_slow_start() {
                    w.slow_start(grow as f64);
                }
                return;
            }
            acked = w.slow_start(acked as f64) as u32;
            if acked == 0 {
                return;
            }
        }
        let cwnd = w.cwnd as u32;
        self.update(cwnd, acked, s);
        w.cong_avoid_ai(self.cnt, acked);
    }

    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        // Linux cubictcp_recalc_ssthresh
        self.epoch_start = None;
        let cwnd = w.cwnd as u64;
        // RFC 9438 §4.7 fast convergence: a loss before reaching the previous W_max
        // means a new flow is taking its share; release bandwidth faster.
        self.last_max_cwnd = if self.p.fast_convergence && cwnd < self.last_max_cwnd as u64 {
            (cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE)) as u32
        } else {
            cwnd as u32
        };
        self.cwnd_prior = cwnd as u32;
        self.hspp.css_baseline_min_rtt = None;
        // RFC 9438 §4.6: ssthresh = cwnd * beta (Linux keeps at least 2 segments)
        ((cwnd * self.beta / BETA_SCALE).max(2)) as f64
    }

    fn on_timeout(&mut self, _w: &Window, s: &AckSample) {
        // Linux cubictcp_state(TCP_CA_Loss): forget W_max, the epoch and the minimum
        // RTT, restart HyStart (RFC 9438 §4.8 leaves the details to the implementation)
        self.reset();
        self.hystart_reset(s.now, s.snd_nxt);
        self.hspp = HyStartPP { window_end: s.snd_nxt, ..HyStartPP::default() };
    }

    fn on_init(&mut self, _w: &mut Window, c: &Conn) {
        // Linux cubictcp_init, at the connection's start: nothing sent yet, so the
        // first round ends at the first ACK of data (end_seq = snd_nxt = 0)
        self.reset();
        self.hystart_reset(c.now, 0);
        self.hspp = HyStartPP::default();
    }

    fn on_tx_start(&mut self, _w: &mut Window, c: &Conn) {
        // RFC 9438 §5.8 / Linux cubictcp_cwnd_event(CA_EVENT_TX_START): after an
        // idle period, shift the epoch by it (in jiffies since the last send), so
        // that cwnd does not jump along the cubic curve for the time nothing was sent.
        let now_j = c.jiffies(c.now);
        let delta = now_j.saturating_sub(c.jiffies(c.lsndtime));
        if let (Some(ep), true) = (self.epoch_start, delta > 0) {
            self.epoch_start = Some((ep + delta).min(now_j));
        }
    }

    fn on_rtt(&mut self, w: &mut Window, s: &AckSample) {
        // Linux cubictcp_acked
        let Some(rtt) = s.rtt else { return };
        // no delay samples in the first second of an epoch (after a reduction)
        if let Some(e) = self.epoch_start {
            if s.jiffies(s.now).saturating_sub(e) < s.to_jiffies(Duration::from_secs(1)) {
                return;
            }
        }
        let delay = rtt.max(Duration::from_micros(1));
        if self.delay_min.is_none_or(|m| m > delay) {
            self.delay_min = Some(delay);
        }
        if !self.p.hystart_plus_plus && !self.hystart.found && w.in_slow_start() && self.p.hystart {
            self.hystart_update(w, s, delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(4); // HZ = 250

    fn sample(now: Time, acked: u32, rtt_ms: u64) -> AckSample {
        AckSample {
            now,
            acked,
            rtt: Some(Duration::from_millis(rtt_ms)),
            min_rtt: Some(Duration::from_millis(rtt_ms)),
            cwnd_limited: true,
            tick: TICK,
            ..AckSample::default()
        }
    }

    /// Feed one window of single-segment ACKs per RTT, spread evenly, for `secs`,
    /// with an RTT sample on each.
    fn drive(cc: &mut Cubic, w: &mut Window, start: Time, secs: f64, rtt_ms: u64, mut each_rtt: impl FnMut(f64, &Cubic, &Window)) -> Time {
        let rtt = Duration::from_millis(rtt_ms);
        let mut t = start;
        let end = start + Duration::from_nanos((secs * 1e9) as u64);
        while t < end {
            let n = w.cwnd.floor() as u64;
            let step = Duration::from_nanos(rtt.as_nanos() / n);
            for _ in 0..n {
                t += step;
                let s = sample(t, 1, rtt_ms);
                cc.on_rtt(w, &s);
                cc.on_ack(w, &s);
            }
            each_rtt(t.saturating_since(start).as_secs_f64(), cc, w);
        }
        t
    }

    fn after_loss(cc: &mut Cubic, cwnd: f64) -> Window {
        let w = Window::new(cwnd, 1e9);
        let ss = cc.on_congestion(&w, Time::ZERO);
        Window::new(ss, ss)
    }

    #[test]
    fn linux_fixed_point_constants() {
        // beta 0.7 -> 717/1024; C 0.4 -> bic_scale 41, cube_rtt_scale 410; beta_scale
        // = 8 (1024 + 717) / 3 / (1024 - 717) = 13928 / 3 / 307 = 15 (integer steps)
        let cc = Cubic::new(CubicParams::default());
        assert_eq!((cc.beta, cc.cube_rtt_scale, cc.beta_scale), (717, 410, 15));
        assert_eq!(cc.cube_factor, (1u64 << 40) / 410);
        assert_eq!(icbrt(26), 2);
        assert_eq!(icbrt(27), 3);
        assert_eq!(icbrt(u64::MAX), 2_642_245);
    }

    #[test]
    fn window_follows_the_cubic_function_after_a_loss() {
        let mut cc = Cubic::new(CubicParams { reno_friendly: false, ..CubicParams::default() });
        // ssthresh = 100 * 717 / 1024 = 70 (integer)
        let mut w = after_loss(&mut cc, 100.0);
        assert_eq!(w.cwnd, 70.0);
        assert_eq!(cc.w_max(), 100.0);
        let start = Time::from_secs(1);
        let mut checked = 0;
        drive(&mut cc, &mut w, start, 8.0, 100, |t, cc, w| {
            // K = cbrt(W_max (1 - beta) / C) = cbrt(75) = 4.217 s (RFC 9438 eq. 2),
            // here cbrt(cube_factor * 30) in 2^-10 s = 4.216 s
            assert!((cc.k() - 75f64.cbrt()).abs() < 0.005, "K {}", cc.k());
            // cwnd tracks C (t - K)^3 + W_max, reached one RTT ahead, in whole segments
            let want = 0.4 * (t - cc.k()).powi(3) + 100.0;
            assert!((w.cwnd - want).abs() < 0.03 * want + 2.0, "t={t:.2}: cwnd {:.2} vs W_cubic {want:.2}", w.cwnd);
            assert_eq!(w.cwnd, w.cwnd.floor());
            checked += 1;
        });
        assert!(checked > 60);
        // concave then flat around W_max at t = K, convex beyond
        assert!(w.cwnd > 100.0 + 0.4 * (8.0 - 75f64.cbrt()).powi(3) * 0.8);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_loss_comes_early() {
        let mut cc = Cubic::new(CubicParams::default());
        cc.on_congestion(&Window::new(100.0, 1e9), Time::ZERO);
        // next loss at 80 < W_max = 100: W_max = 80 * (1024 + 717) / 2048 = 68,
        // ssthresh = 80 * 717 / 1024 = 56 (Linux's integer arithmetic)
        let ss = cc.on_congestion(&Window::new(80.0, 70.0), Time::ZERO);
        assert_eq!(cc.w_max(), 68.0);
        assert_eq!(ss, 56.0);
        // without fast convergence W_max is the window at loss
        let mut cc = Cubic::new(CubicParams { fast_convergence: false, ..CubicParams::default() });
        cc.on_congestion(&Window::new(100.0, 1e9), Time::ZERO);
        cc.on_congestion(&Window::new(80.0, 70.0), Time::ZERO);
        assert_eq!(cc.w_max(), 80.0);
    }

    #[test]
    fn reno_friendly_region_grows_like_reno_for_small_windows() {
        // W_max = 10 at RTT 100 ms: ssthresh = 7; the cubic curve is nearly flat for
        // K = cbrt(7.5) = 1.96 s, while W_est grows one segment per cwnd * 15 / 8
        // acked: 8/15 = 0.533 per RTT, alpha_cubic as Linux has it. After 1 s (10
        // RTTs) 7 + 5.3 = 12.3 segments, whole: 12 or 13.
        let alpha = 8.0 / 15.0;
        let mut cc = Cubic::new(CubicParams::default());
        assert!(!CubicParams::default().alpha_to_one);
        let mut w = after_loss(&mut cc, 10.0);
        assert_eq!(w.cwnd, 7.0);
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        let expect = 7.0 + 10.0 * alpha;
        assert!((w.cwnd - expect).abs() <= 1.0, "cwnd {} vs {expect}", w.cwnd);
        assert!(w.cwnd > cc.w_cubic(1.0) + 2.0);
        // RFC 9438's switch to 1 per RTT past cwnd_prior = 10 (alpha_to_one): W_est
        // reaches 10 after (10 - 7) / 0.533 = 5.6 RTTs, then 4.4 more: 14.4
        let mut cc = Cubic::new(CubicParams { alpha_to_one: true, ..CubicParams::default() });
        let mut w = after_loss(&mut cc, 10.0);
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        let expect = 10.0 + (10.0 - 3.0 / alpha);
        assert!((w.cwnd - expect).abs() <= 1.0, "cwnd {} vs {expect}", w.cwnd);
        // without the Reno-friendly region, cwnd stays on the flat cubic curve
        let mut cc = Cubic::new(CubicParams { reno_friendly: false, ..CubicParams::default() });
        let mut w = after_loss(&mut cc, 10.0);
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        assert!(w.cwnd <= 10.0, "{}", w.cwnd);
    }

    #[test]
    fn growth_never_stalls_at_the_reno_friendly_edge() {
        // No W_max yet (after a timeout), cwnd 50 in congestion avoidance: the cubic
        // curve starts flat at 50 (K = 0), W_est grows 0.53 per RTT, and Linux grows
        // cwnd at least 5 % per RTT meanwhile (cnt <= 20). Once cwnd passes W_est with
        // W_cubic still below W_est, growth goes on: Linux takes the smaller cnt of
        // the two regions, never none. 10 RTTs of 5 %: 50 * 1.05^10 = 81.
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window::new(50.0, 40.0);
        let mut last = w.cwnd;
        drive(&mut cc, &mut w, Time::from_secs(5), 1.0, 100, |t, _, w| {
            assert!(w.cwnd >= last + 1.0 || t < 0.15, "stalled at t {t:.2}: {}", w.cwnd);
            last = w.cwnd;
        });
        assert!(w.cwnd >= 50.0 * 1.045f64.powi(10), "{}", w.cwnd);
    }

    #[test]
    fn idle_time_shifts_the_epoch() {
        // RFC 9438 §5.8: after 2 s without sending, the cubic curve resumes where it
        // left off. Two identical flows 1 s into an epoch after a loss at 100; one
        // learns of a 2 s idle period (CA_EVENT_TX_START), the other not: the one
        // that did computes its target at t = 1 s (cnt large: slow growth near the
        // plateau's approach), the other at t = 3 s (nearer W_max: faster).
        let run = |tell: bool| {
            let mut cc = Cubic::new(CubicParams { reno_friendly: false, ..CubicParams::default() });
            let mut w = after_loss(&mut cc, 100.0);
            let t = drive(&mut cc, &mut w, Time::from_secs(1), 1.0, 100, |_, _, _| {});
            let resume = t + Duration::from_secs(2);
            let mut s = sample(resume, 1, 100);
            if tell {
                // the first send after the idle period; the last was at t
                cc.on_tx_start(&mut w, &Conn { now: resume, lsndtime: t, tick: TICK, ..Conn::default() });
            }
            s.now = resume + Duration::from_millis(50);
            cc.on_ack(&mut w, &s);
            cc.cnt()
        };
        let (shifted, not) = (run(true), run(false));
        // W_cubic(1.1 s) ~ 100 - 0.4 * 3.1^3 = 88 vs W_cubic(3.1 s) ~ 100 - 0.4 * 1.1^3 = 99.5
        assert!(shifted > not, "cnt {shifted} (shifted) vs {not}");
    }

    #[test]
    fn hystart_leaves_slow_start_when_delay_rises() {
        // min RTT 100 ms: threshold = clamp(100/8, 4, 16) = 12.5 ms. Samples of 110 ms
        // stay in slow start; 113 ms samples end it after the 8 samples of a round.
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window::new(32.0, 1e9);
        let mut s = sample(Time::from_millis(1000), 1, 100);
        s.snd_una = 1;
        s.snd_nxt = 100;
        cc.on_rtt(&mut w, &s);
        for i in 0..20 {
            s.now = Time::from_millis(1010 + 3 * i);
            s.rtt = Some(Duration::from_millis(110));
            s.snd_una = 2 + i;
            cc.on_rtt(&mut w, &s);
        }
        assert!(!cc.hystart_found());
        assert_eq!(w.ssthresh, 1e9);
        // new round (snd_una passes end_seq = 100), higher delay
        for i in 0..10 {
            s.now = Time::from_millis(2000 + 3 * i);
            s.rtt = Some(Duration::from_millis(113));
            s.snd_una = 101 + i;
            s.snd_nxt = 200;
            cc.on_rtt(&mut w, &s);
        }
        assert!(cc.hystart_found());
        assert_eq!(w.ssthresh, 32.0);
    }

    #[test]
    fn hystart_tracks_rounds_below_the_low_window() {
        // Linux ("fix incorrect HyStart round start detection"): a round that
        // starts while cwnd < 16 is still a round. A
        // round starts at 1000 ms at cwnd 10 (end_seq 60); cwnd reaches 16 at 1010 ms.
        // The ACK train is measured from the round's start, where the last train ACK
        // is still 1000 ms: no train in this round (before that fix the round restarted at
        // 1010 ms and the train was found at 1031 ms). The next round starts when
        // snd_una passes 60 (at 1060 ms): ACKs 1 ms apart then end slow start after
        // more than (40 + 0) / 2 = 20 ms, at 1081 ms.
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window::new(10.0, 1e9);
        let mut s = sample(Time::from_millis(1000), 1, 40);
        s.snd_una = 1;
        s.snd_nxt = 60;
        cc.on_rtt(&mut w, &s);
        for i in 1..=100u64 {
            s.now = Time::from_millis(1000 + i);
            s.snd_una = 1 + i;
            s.snd_nxt = 60 + 2 * i;
            if i == 10 {
                w.cwnd = 16.0;
            }
            cc.on_rtt(&mut w, &s);
            assert_eq!(cc.hystart_found(), i >= 81, "ack {i}");
            if cc.hystart_found() {
                break;
            }
        }
        assert!(cc.hystart_found());
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        // ACKs 1 ms apart for more than min_rtt/2 = 20 ms (min RTT 40 ms).
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window::new(64.0, 1e9);
        let mut s = sample(Time::from_millis(500), 1, 40);
        s.snd_una = 1;
        s.snd_nxt = 1000;
        cc.on_rtt(&mut w, &s); // starts the round
        for i in 1..=25 {
            s.now = Time::from_millis(500 + i);
            s.snd_una = 1 + i;
            cc.on_rtt(&mut w, &s);
        }
        assert!(cc.hystart_found());
        assert_eq!(w.ssthresh, 64.0);
    }

    #[test]
    fn timeout_forgets_w_max_and_the_minimum_rtt() {
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window::new(20.0, 1e9);
        cc.on_rtt(&mut w, &sample(Time::from_secs(10), 1, 30));
        assert_eq!(cc.delay_min, Some(Duration::from_millis(30)));
        cc.on_congestion(&Window::new(50.0, 1e9), Time::ZERO);
        cc.on_timeout(&Window::new(35.0, 35.0), &sample(Time::from_secs(11), 0, 30));
        assert_eq!(cc.w_max(), 0.0);
        assert_eq!(cc.delay_min, None);
    }

    #[test]
    fn hystart_plus_plus_enters_conservative_slow_start_then_congestion_avoidance() {
        // RFC 9406: round min RTT 40 ms, then 50 ms (>= 40 + max(4, min(40/8, 16)) =
        // 45): conservative slow start, cwnd growing a quarter as fast, for 5 rounds,
        // then ssthresh = cwnd.
        let mut cc = Cubic::new(CubicParams { hystart_plus_plus: true, ..CubicParams::default() });
        let mut w = Window::new(20.0, 1e9);
        let mut seq = 0;
        let mut t = Time::from_secs(1);
        let mut round = |cc: &mut Cubic, w: &mut Window, rtt: u64| {
            let n = w.cwnd as u64;
            let before = w.cwnd;
            let end = seq + n;
            for _ in 0..n {
                seq += 1;
                t += Duration::from_millis(1);
                let mut s = sample(t, 1, rtt);
                s.snd_una = seq;
                s.snd_nxt = end + n;
                cc.on_ack(w, &s);
            }
            w.cwnd - before
        };
        assert_eq!(round(&mut cc, &mut w, 40), 20.0); // slow start: doubles
        let grow = round(&mut cc, &mut w, 40);
        assert_eq!(grow, 40.0);
        round(&mut cc, &mut w, 50); // the increase is seen within this round
        assert!(cc.in_conservative_slow_start());
        let n = w.cwnd;
        let grow = round(&mut cc, &mut w, 50);
        assert!((grow - n / 4.0).abs() <= 1.0, "CSS grows a quarter: {grow} of {n}");
        for _ in 0..4 {
            round(&mut cc, &mut w, 50);
        }
        // the 5th CSS round's end sets ssthresh = cwnd; the rest of that ACK round is
        // congestion avoidance (a few segments more)
        assert!(!w.in_slow_start(), "after 5 CSS rounds, congestion avoidance");
        assert!(w.cwnd - w.ssthresh <= 5.0, "{} vs {}", w.cwnd, w.ssthresh);
    }
}
