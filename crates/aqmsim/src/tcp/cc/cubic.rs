//! CUBIC (Xu, Ha, Rhee, Goel & Eggert, RFC 9438), with Linux's constants and
//! choices where the RFC leaves room (noted beside each), and HyStart (Ha & Rhee,
//! "Taming the elephants: New TCP slow start", 2011) as Linux's `tcp_cubic.c` runs
//! it: ACK-train and delay-increase detection, on by default.

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, Window};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicParams {
    /// beta_cubic, the multiplicative decrease factor (RFC 9438 §4.6: 0.7).
    pub beta: f64,
    /// C, the scaling constant (RFC 9438 §5: 0.4).
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
        }
    }
}

impl CcParams for CubicParams {
    const TITLE: &'static str = "CUBIC with HyStart, Linux's constants and Reno-friendly alpha";
    const SOURCE: &'static str = "Xu, Ha, Rhee, Goel & Eggert, RFC 9438; Ha & Rhee, \"Taming the elephants: New TCP slow start\" (HyStart)";
    const DOC: &'static [(&'static str, &'static str)] = &[
        ("beta", "beta_cubic, multiplicative decrease (RFC 9438 §4.6: 0.7)"),
        ("c", "C, the scaling constant (RFC 9438 §5: 0.4)"),
        ("fast_convergence", "fast convergence (RFC 9438 §4.7; Linux: on)"),
        ("reno_friendly", "the Reno-friendly region (RFC 9438 §4.3; Linux tcp_friendliness: on)"),
        ("alpha_to_one", "switch W_est's growth to 1 segment per RTT once it passes cwnd_prior (RFC 9438 §4.3, a SHOULD; Linux: off)"),
        ("hystart", "HyStart slow-start exit (Linux: on)"),
        ("hystart_low_window", "HyStart acts from this cwnd on (Linux: 16 segments)"),
        ("hystart_ack_delta", "ACKs closer than this form a train (Linux hystart_ack_delta_us: 2 ms)"),
        ("hystart_min_samples", "RTT samples per round before the delay test (Linux: 8)"),
        ("hystart_delay_min", "delay-increase threshold, low clamp (Linux: 4 ms)"),
        ("hystart_delay_max", "delay-increase threshold, high clamp (Linux: 16 ms)"),
    ];
    const LINUX: Option<&'static str> = Some("cubic");
    type Algo = Cubic;
    fn check(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("beta: must be in (0, 1), got {}", self.beta));
        }
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err(format!("c: must be positive, got {}", self.c));
        }
        Ok(())
    }
    fn build(&self) -> Cubic {
        Cubic::new(self.clone())
    }
}

#[derive(Clone, Debug, Default)]
struct HyStart {
    found: bool,
    round_start: Time,
    last_ack: Time,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// W_max: the window before the last reduction (0 = none yet, or reset by a timeout).
    w_max: f64,
    /// cwnd when ssthresh was last set (cwnd_prior, RFC 9438 §4.6).
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Time>,
    /// K, seconds (RFC 9438 eq. 2).
    k: f64,
    /// The window W_cubic oscillates around in this epoch.
    origin: f64,
    /// W_est, the Reno-friendly estimate (RFC 9438 §4.3).
    w_est: f64,
    hystart: HyStart,
}

impl Cubic {
    pub fn new(p: CubicParams) -> Cubic {
        Cubic { p, w_max: 0.0, cwnd_prior: 0.0, epoch_start: None, k: 0.0, origin: 0.0, w_est: 0.0, hystart: HyStart::default() }
    }

    /// W_cubic(t) = C (t - K)^3 + W_max (RFC 9438 eq. 1), t in seconds since the epoch.
    pub fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        self.p.c * d * d * d + self.origin
    }

    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    pub fn k(&self) -> f64 {
        self.k
    }
    pub fn hystart_found(&self) -> bool {
        self.hystart.found
    }

    /// alpha_cubic = 3 (1 - beta) / (1 + beta) (RFC 9438 §4.3), 1 once W_est has
    /// reached the window before the last reduction (unless `alpha_to_one` is off,
    /// as in Linux).
    fn alpha(&self) -> f64 {
        if self.p.alpha_to_one && self.w_est >= self.cwnd_prior { 1.0 } else { 3.0 * (1.0 - self.p.beta) / (1.0 + self.p.beta) }
    }

    fn congestion_avoidance(&mut self, w: &mut Window, acked: f64, s: &AckSample) {
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                // RFC 9438 §4.2: a new epoch starts on the first ACK in congestion
                // avoidance. K from the distance to W_max; with no W_max above cwnd
                // (none yet, or reset), grow from cwnd (Linux: origin = cwnd, K = 0).
                self.epoch_start = Some(s.now);
                if self.w_max > w.cwnd {
                    self.k = libm::cbrt((self.w_max - w.cwnd) / self.p.c);
                    self.origin = self.w_max;
                } else {
                    self.k = 0.0;
                    self.origin = w.cwnd;
                }
                self.w_est = w.cwnd;
                s.now
            }
        };
        let t = s.now.saturating_since(epoch).as_secs_f64();
        // Linux uses the minimum RTT for the look-ahead (RFC 9438 §4.2 says the
        // smoothed RTT); t + RTT makes cwnd reach W_cubic(t) one RTT later.
        let rtt = s.min_rtt.map(|d| d.as_secs_f64()).unwrap_or(0.1);
        // RFC 9438 §4.3: the Reno-friendly estimate.
        self.w_est += self.alpha() * acked / w.cwnd;
        if self.p.reno_friendly && self.w_cubic(t) < self.w_est {
            if self.w_est > w.cwnd {
                w.cwnd = self.w_est;
            }
            return;
        }
        // RFC 9438 §4.4/§4.5: target = W_cubic(t + RTT), kept in [cwnd, 1.5 cwnd].
        let target = self.w_cubic(t + rtt).clamp(w.cwnd, 1.5 * w.cwnd);
        let mut incr = (target - w.cwnd) / w.cwnd * acked;
        // Linux: while there is no W_max, grow at least 5 % per RTT (ca->cnt <= 20).
        if self.w_max == 0.0 {
            incr = incr.max(acked / 20.0);
        }
        w.cwnd += incr;
    }

    fn hystart_update(&mut self, w: &mut Window, s: &AckSample, rtt: Duration) {
        let p = &self.p;
        let h = &mut self.hystart;
        if h.found {
            return;
        }
        // A round ends when the ACK passes what was sent when it began.
        if s.snd_una > h.end_seq {
            h.round_start = s.now;
            h.last_ack = s.now;
            h.end_seq = s.snd_nxt;
            h.curr_rtt = None;
            h.sample_cnt = 0;
        }
        let delay_min = s.min_rtt.unwrap_or(rtt);
        // ACK train: ACKs closely spaced for longer than half the minimum RTT.
        if s.now.saturating_since(h.last_ack) <= p.hystart_ack_delta {
            h.last_ack = s.now;
            if s.now.saturating_since(h.round_start) > delay_min.div_u64(2) {
                h.found = true;
            }
        }
        // Delay increase: the minimum of the round's first samples exceeds the
        // minimum RTT by delay_min/8, clamped to [4 ms, 16 ms].
        h.curr_rtt = Some(h.curr_rtt.map_or(rtt, |c| c.min(rtt)));
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

    fn reset(&mut self, now: Time, snd_nxt: u64) {
        self.w_max = 0.0;
        self.epoch_start = None;
        self.hystart = HyStart { round_start: now, last_ack: now, end_seq: snd_nxt, ..HyStart::default() };
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        // (the sender calls on_ack only with segments delivered, so acked > 0 here
        // outside slow start)
        if let Some(acked) = w.after_slow_start(s) {
            self.congestion_avoidance(w, acked, s);
        }
    }

    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        self.epoch_start = None;
        // RFC 9438 §4.7 fast convergence: a loss before reaching the previous W_max
        // means a new flow is taking its share; release bandwidth faster.
        self.w_max = if self.p.fast_convergence && w.cwnd < self.w_max {
            w.cwnd * (1.0 + self.p.beta) / 2.0
        } else {
            w.cwnd
        };
        self.cwnd_prior = w.cwnd;
        // RFC 9438 §4.6: ssthresh = cwnd * beta (Linux keeps at least 2 segments).
        (w.cwnd * self.p.beta).max(2.0)
    }

    fn on_timeout(&mut self, _w: &Window, now: Time) {
        // Linux `bictcp_state(TCP_CA_Loss)`: forget W_max and the epoch, restart
        // HyStart (RFC 9438 §4.8 leaves the details to the implementation).
        self.reset(now, 0);
    }

    fn on_rtt(&mut self, w: &mut Window, s: &AckSample) {
        if let Some(rtt) = s.rtt {
            if self.p.hystart && w.in_slow_start() && w.cwnd >= self.p.hystart_low_window as f64 {
                self.hystart_update(w, s, rtt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(now: Time, acked: u32, min_rtt_ms: u64) -> AckSample {
        AckSample { acked, rtt: Some(Duration::from_millis(min_rtt_ms)), min_rtt: Some(Duration::from_millis(min_rtt_ms)), ..AckSample::at(now) }
    }

    /// Feed one window of single-segment ACKs per RTT, spread evenly, for `secs`.
    fn drive(cc: &mut Cubic, w: &mut Window, start: Time, secs: f64, rtt_ms: u64, mut on_rtt: impl FnMut(f64, &Cubic, &Window)) {
        let rtt = Duration::from_millis(rtt_ms);
        let mut t = start;
        let end = start + Duration::from_nanos((secs * 1e9) as u64);
        while t < end {
            let n = w.cwnd.floor() as u64;
            let step = Duration::from_nanos(rtt.as_nanos() / n);
            for _ in 0..n {
                t += step;
                cc.on_ack(w, &sample(t, 1, rtt_ms));
            }
            on_rtt(t.saturating_since(start).as_secs_f64(), cc, w);
        }
    }

    #[test]
    fn window_follows_the_cubic_function_after_a_loss() {
        let mut cc = Cubic::new(CubicParams { reno_friendly: false, ..CubicParams::default() });
        let mut w = Window { cwnd: 100.0, ssthresh: 1e9 };
        let ss = cc.on_congestion(&w, Time::ZERO);
        assert!((ss - 70.0).abs() < 1e-9);
        assert_eq!(cc.w_max(), 100.0);
        w = Window { cwnd: ss, ssthresh: ss };
        let start = Time::from_secs(1);
        let mut checked = 0;
        drive(&mut cc, &mut w, start, 8.0, 100, |t, cc, w| {
            // K = cbrt(W_max (1 - beta) / C) = cbrt(75) = 4.217 s (RFC 9438 eq. 2)
            assert!((cc.k() - 75f64.cbrt()).abs() < 1e-9);
            // cwnd tracks C (t - K)^3 + W_max, reached one RTT ahead
            let want = 0.4 * (t - cc.k()).powi(3) + 100.0;
            assert!((w.cwnd - want).abs() < 0.03 * want + 1.0, "t={t:.2}: cwnd {:.2} vs W_cubic {want:.2}", w.cwnd);
            checked += 1;
        });
        assert!(checked > 60);
        // concave then flat around W_max at t = K, convex beyond: well above W_max at 8 s
        assert!(w.cwnd > 100.0 + 0.4 * (8.0 - 75f64.cbrt()).powi(3) * 0.8);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_loss_comes_early() {
        let mut cc = Cubic::new(CubicParams::default());
        cc.on_congestion(&Window { cwnd: 100.0, ssthresh: 1e9 }, Time::ZERO);
        // next loss at 80 < W_max = 100: W_max = 80 * (1 + 0.7) / 2 = 68
        let ss = cc.on_congestion(&Window { cwnd: 80.0, ssthresh: 70.0 }, Time::ZERO);
        assert!((cc.w_max() - 68.0).abs() < 1e-9);
        assert!((ss - 56.0).abs() < 1e-9);
        // without fast convergence W_max is the window at loss
        let mut cc = Cubic::new(CubicParams { fast_convergence: false, ..CubicParams::default() });
        cc.on_congestion(&Window { cwnd: 100.0, ssthresh: 1e9 }, Time::ZERO);
        cc.on_congestion(&Window { cwnd: 80.0, ssthresh: 70.0 }, Time::ZERO);
        assert_eq!(cc.w_max(), 80.0);
    }

    #[test]
    fn reno_friendly_region_grows_like_reno_for_small_windows() {
        // W_max = 10 at RTT 100 ms: the cubic curve is nearly flat for K = cbrt(7.5) =
        // 1.96 s, while W_est grows by alpha = 3*0.3/1.7 = 0.529 segments per RTT from
        // 7 until it reaches cwnd_prior = 10 (after 3/0.529 = 5.67 RTTs), then by 1
        // per RTT (RFC 9438 §4.3): after 1 s (10 RTTs), 10 + 4.33 = 14.33 segments,
        // far above W_cubic(1 s) = 9.65.
        let mut cc = Cubic::new(CubicParams { alpha_to_one: true, ..CubicParams::default() });
        let mut w = Window { cwnd: 10.0, ssthresh: 1e9 };
        let ss = cc.on_congestion(&w, Time::ZERO);
        w = Window { cwnd: ss, ssthresh: ss };
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        let alpha = 3.0 * 0.3 / 1.7;
        let expect = 10.0 + (10.0 - 3.0 / alpha);
        assert!((w.cwnd - expect).abs() < 0.5, "cwnd {} vs {expect}", w.cwnd);
        assert!(w.cwnd > cc.w_cubic(1.0) + 3.0);
        // without the Reno-friendly region, cwnd stays on the flat cubic curve
        let mut cc = Cubic::new(CubicParams { reno_friendly: false, ..CubicParams::default() });
        let mut w = Window { cwnd: 10.0, ssthresh: 1e9 };
        let ss = cc.on_congestion(&w, Time::ZERO);
        w = Window { cwnd: ss, ssthresh: ss };
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        assert!(w.cwnd < 10.5, "{}", w.cwnd);
        // as Linux (no switch to 1, the default): W_est grows by alpha for all 10
        // RTTs, 7 + 5.29
        let mut cc = Cubic::new(CubicParams::default());
        assert!(!CubicParams::default().alpha_to_one);
        let mut w = Window { cwnd: 10.0, ssthresh: 1e9 };
        let ss = cc.on_congestion(&w, Time::ZERO);
        w = Window { cwnd: ss, ssthresh: ss };
        drive(&mut cc, &mut w, Time::ZERO, 1.0, 100, |_, _, _| {});
        let expect = 7.0 + 10.0 * alpha;
        assert!((w.cwnd - expect).abs() < 0.5, "cwnd {} vs {expect}", w.cwnd);
    }

    #[test]
    fn hystart_leaves_slow_start_when_delay_rises() {
        // min RTT 100 ms: threshold = clamp(100/8, 4, 16) = 12.5 ms. Samples of 110 ms
        // stay in slow start; 113 ms samples end it after the 8 samples of a round.
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window { cwnd: 32.0, ssthresh: 1e9 };
        let mut s = sample(Time::from_millis(1000), 1, 100);
        s.min_rtt = Some(Duration::from_millis(100));
        for i in 0..20 {
            s.now = Time::from_millis(1000 + 3 * i);
            s.rtt = Some(Duration::from_millis(110));
            s.snd_una = 1 + i;
            s.snd_nxt = 100;
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
    fn hystart_ack_train_ends_slow_start() {
        // ACKs 1 ms apart for more than min_rtt/2 = 20 ms (min RTT 40 ms).
        let mut cc = Cubic::new(CubicParams::default());
        let mut w = Window { cwnd: 64.0, ssthresh: 1e9 };
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
    fn timeout_forgets_w_max() {
        let mut cc = Cubic::new(CubicParams::default());
        cc.on_congestion(&Window { cwnd: 50.0, ssthresh: 1e9 }, Time::ZERO);
        cc.on_timeout(&Window { cwnd: 35.0, ssthresh: 35.0 }, Time::ZERO);
        assert_eq!(cc.w_max(), 0.0);
    }
}
