//! Adaptive RED, and Adaptive RED with sliding thresholds.
//!
//! Sources: Floyd, Gummadi & Shenker, "Adaptive RED: An Algorithm for Increasing the
//! Robustness of RED's Active Queue Management" (ICIR technical report, 2001; FGS01
//! below): every `interval` (0.5 s), `max_p` moves toward keeping the average queue
//! in the target band `[min_th + 0.4 (max_th - min_th), min_th + 0.6 (max_th - min_th)]`,
//! additively up by `alpha = min(0.01, max_p / 4)` while `max_p <= 0.5`,
//! multiplicatively down by `beta = 0.9` while `max_p >= 0.01`; gentle mode on; and
//! automatic parameters from a target delay and the link capacity `C` in packets
//! per second: `min_th = max(5, target_delay * C / 2)`, `max_th = 3 min_th`,
//! `w_q = 1 - exp(-1/C)`. Where FGS01 leaves a value open (the initial `max_p`) the
//! ns-2 RED that FGS01 was written in gives it (`linterm_ = 10`: 0.1).
//!
//! Sliding thresholds: Jou, Tan & Baras, "A Parallel Virtual Queue Structure for
//! Active Queue Management" (CSHCN TR 2003-18), §V: `minth` is scaled by `(1 + gamma)`
//! when the EWMA of the drop probability exceeds `P_U` and by `(1 - gamma)` when it
//! is below `P_L`, with `maxth = minth + D` (`D` fixed), `gamma = 0.05`. The report
//! leaves open how often the thresholds move and how the average probability is
//! filtered; here they move at each `max_p` adaptation (every `interval`) and the
//! probability is averaged per arrival with the queue's weight `w_q` (see the
//! `sliding` parameters).
//!
//! [`AredCore`] is the algorithm over a queue length it is told, so that RED+Tail's
//! second virtual queue ([`crate::red_tail`]) runs this same code.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Limit};
use crate::red::{check_prob, check_weight, threshold, EcnPolicy, RedConfig, RedControl, RedCore, RedQueue};
use crate::time::{Duration, Time};
use crate::units::{Bytes, QueueLimit, Rate};
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Probe, QPacket};

/// Jou, Tan & Baras §V: hold the average drop probability inside `(p_low, p_high)`
/// by sliding the thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlidingParams {
    /// gamma: relative step of `min_th` (§V: 0.05).
    pub gamma: f64,
    /// P_L (§V, Figs. 10-11: 0.01; RED+Tail experiment of Table IV: 0.005).
    pub p_low: f64,
    /// P_U (§V, Figs. 10-11: 0.02; RED+Tail experiment of Table IV: 0.010).
    pub p_high: f64,
    /// EWMA weight of the drop-probability average, per arrival; absent: the queue's
    /// `w_q` (the report says only "obtained by the EWMA algorithm").
    pub p_weight: Option<f64>,
}

impl Default for SlidingParams {
    fn default() -> Self {
        SlidingParams { gamma: 0.05, p_low: 0.01, p_high: 0.02, p_weight: None }
    }
}

impl SlidingParams {
    // the negated comparisons reject NaN too
    #[allow(clippy::nonminimal_bool)]
    pub fn validate(&self) -> Result<(), String> {
        if !(self.gamma > 0.0 && self.gamma < 1.0) {
            return Err(format!("sliding.gamma: must be in (0, 1), got {}", self.gamma));
        }
        if !(0.0..1.0).contains(&self.p_low) || !(self.p_high > self.p_low && self.p_high <= 1.0) {
            return Err(format!("sliding.p_high: need 0 <= p_low < p_high <= 1, got ({}, {})", self.p_low, self.p_high));
        }
        if let Some(w) = self.p_weight {
            check_weight("sliding.p_weight", w)?;
        }
        Ok(())
    }
}

/// Adaptive RED's parameters. Defaults are FGS01's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AredParams {
    /// Target queueing delay for the automatic thresholds (FGS01: 5 ms).
    pub target_delay: Duration,
    /// min_th in packets or bytes; absent: max(5 packets, target_delay * C / 2) (FGS01).
    pub min_th: Option<QueueLimit>,
    /// max_th; absent: 3 min_th (FGS01).
    pub max_th: Option<QueueLimit>,
    /// EWMA weight; absent: 1 - exp(-1/C), C in packets per second (FGS01).
    pub w_q: Option<f64>,
    /// Initial max_p (ns-2's RED default, linterm_ = 10: 0.1).
    pub max_p: f64,
    /// Adaptation interval (FGS01: 0.5 s).
    pub interval: Duration,
    /// Cap on the additive increase: alpha = min(this, max_p / 4) (FGS01: 0.01).
    pub alpha: f64,
    /// Multiplicative decrease factor (FGS01: 0.9).
    pub beta: f64,
    /// max_p is decreased only while at least this (FGS01: 0.01).
    pub max_p_floor: f64,
    /// max_p is increased only while at most this (FGS01: 0.5).
    pub max_p_ceiling: f64,
    /// Gentle mode (FGS01 recommends it: on).
    pub gentle: bool,
    /// Byte mode: probability scaled by size / mean_pkt_size (FJ93).
    pub byte_mode: bool,
    /// Packet size that converts the link rate to packets per second, and the
    /// typical packet of RED's idle-time correction (1500 B).
    pub mean_pkt_size: Bytes,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168 §5).
    pub ecn: bool,
    /// With `ecn`, drop ECN-capable packets too past the random region (ns-2 RED;
    /// Linux `harddrop`).
    pub ecn_harddrop: bool,
    /// Leave CE-marked packets out of the queue length (Khademi, Ros & Welzl, IETF 88).
    pub ignore_ce_in_measure: bool,
    /// Sliding thresholds (Jou, Tan & Baras §V); absent: fixed thresholds.
    pub sliding: Option<SlidingParams>,
}

impl Default for AredParams {
    fn default() -> Self {
        AredParams {
            target_delay: Duration::from_millis(5),
            min_th: None,
            max_th: None,
            w_q: None,
            max_p: 0.1,
            interval: Duration::from_millis(500),
            alpha: 0.01,
            beta: 0.9,
            max_p_floor: 0.01,
            max_p_ceiling: 0.5,
            gentle: true,
            byte_mode: false,
            mean_pkt_size: Bytes(1500),
            ecn: false,
            ecn_harddrop: false,
            ignore_ce_in_measure: false,
            sliding: None,
        }
    }
}

impl AredParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target_delay", "target delay for the automatic thresholds (FGS01: 5 ms)"),
        ("min_th", "min threshold, packets or bytes; absent: max(5, target_delay*C/2) packets (FGS01)"),
        ("max_th", "max threshold; absent: 3 min_th (FGS01)"),
        ("w_q", "EWMA weight; absent: 1 - exp(-1/C), C in packets/s (FGS01)"),
        ("max_p", "initial max_p (ns-2 RED default linterm_ = 10)"),
        ("interval", "max_p adaptation interval (FGS01: 0.5 s)"),
        ("alpha", "additive increase min(alpha, max_p/4) (FGS01: 0.01)"),
        ("beta", "multiplicative decrease (FGS01: 0.9)"),
        ("max_p_floor", "decrease only while max_p >= this (FGS01: 0.01)"),
        ("max_p_ceiling", "increase only while max_p <= this (FGS01: 0.5)"),
        ("gentle", "gentle mode, recommended by FGS01 (on)"),
        ("byte_mode", "scale the probability by size / mean_pkt_size (FJ93 byte mode)"),
        ("mean_pkt_size", "packet size for C in packets/s and the idle-time correction (1500 B)"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 3168 §5)"),
        ("ecn_harddrop", "drop ECN-capable packets too above the random region (ns-2; Linux harddrop)"),
        ("ignore_ce_in_measure", "leave CE-marked packets out of the queue length (Khademi, Ros & Welzl, IETF 88)"),
        ("sliding", "sliding thresholds { gamma = 0.05, p_low = 0.01, p_high = 0.02, p_weight = w_q } (Jou, Tan & Baras §V); absent: fixed"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        if self.target_delay.is_zero() {
            return Err("target_delay: must be greater than zero".into());
        }
        let min = self.min_th.map(|q| threshold("min_th", q)).transpose()?;
        let max = self.max_th.map(|q| threshold("max_th", q)).transpose()?;
        if let (Some((a, ab)), Some((b, bb))) = (min, max) {
            if ab != bb {
                return Err("max_th: must be in the same unit as min_th".into());
            }
            if a >= b {
                return Err(format!("max_th: must be greater than min_th ({b} <= {a})"));
            }
        }
        if let Some(w) = self.w_q {
            check_weight("w_q", w)?;
        }
        check_prob("max_p", self.max_p)?;
        // an adaptation period under a microsecond would make a run of minutes take
        // billions of adaptations (FGS01 use 0.5 s)
        if self.interval < Duration::from_micros(1) {
            return Err(format!("interval: {} is below the shortest adaptation period, 1us", self.interval));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(format!("alpha: must be positive, got {}", self.alpha));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("beta: must be in (0, 1), got {}", self.beta));
        }
        check_prob("max_p_floor", self.max_p_floor)?;
        check_prob("max_p_ceiling", self.max_p_ceiling)?;
        if self.max_p_floor > self.max_p_ceiling {
            return Err("max_p_floor: must not exceed max_p_ceiling".into());
        }
        if self.mean_pkt_size.0 == 0 {
            return Err("mean_pkt_size: must be greater than zero".into());
        }
        if let Some(s) = &self.sliding {
            s.validate()?;
        }
        Ok(())
    }

    /// RED's constants: given thresholds and weight, or FGS01's automatic ones for a
    /// link of `rate`.
    pub fn config(&self, rate: Rate) -> RedConfig {
        let s = self.mean_pkt_size.0 as f64;
        // C, the link capacity in packets per second (FGS01).
        let c = rate.bps() as f64 / (8.0 * s);
        // FGS01: min_th = max(5, target_delay * C / 2) packets; max_th = 3 min_th.
        let auto_min_pkts = (self.target_delay.as_secs_f64() * c / 2.0).max(5.0);
        let given_min = self.min_th.map(|q| threshold("min_th", q).expect("validated"));
        let given_max = self.max_th.map(|q| threshold("max_th", q).expect("validated"));
        let bytes = given_min.or(given_max).is_some_and(|(_, b)| b);
        let unit = if bytes { s } else { 1.0 };
        let min_th = given_min.map_or(auto_min_pkts * unit, |(v, _)| v);
        let max_th = given_max.map_or(3.0 * min_th, |(v, _)| v);
        // FGS01: w_q = 1 - exp(-1/C).
        let w_q = self.w_q.unwrap_or_else(|| 1.0 - libm::exp(-1.0 / c.max(1e-9)));
        RedConfig { min_th, max_th, bytes, max_p: self.max_p, w_q, gentle: self.gentle, byte_mode: self.byte_mode, pkt_size: self.mean_pkt_size.0 }
    }

    pub(crate) fn ecn_policy(&self) -> EcnPolicy {
        EcnPolicy { ecn: self.ecn, harddrop: self.ecn_harddrop, ignore_ce_in_measure: self.ignore_ce_in_measure }
    }
}

/// The sliding-threshold state (Jou, Tan & Baras §V).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlidingVars {
    /// P̄_d, the EWMA of the drop probability.
    pub p_avg: f64,
    /// D = max_th - min_th, kept constant.
    pub d: f64,
}

/// Adaptive RED over a queue length it is told: RED's core plus the `max_p`
/// adaptation and, optionally, the sliding thresholds.
#[derive(Clone, Debug)]
pub struct AredCore {
    pub params: AredParams,
    pub red: RedCore,
    pub sliding: Option<SlidingVars>,
    /// RED's constants are computed from the link rate at the first call that knows it.
    resolved: bool,
    /// The buffer, to keep sliding thresholds inside it.
    limit: Limit,
    pub last_adapt: Time,
}

impl AredCore {
    pub fn new(params: &AredParams, limit: Limit) -> Self {
        AredCore {
            params: params.clone(),
            red: RedCore::new(params.config(Rate::from_mbps(10))),
            sliding: None,
            resolved: false,
            limit,
            last_adapt: Time::ZERO,
        }
    }

    /// Fix RED's constants for a link of `rate` (once).
    pub fn resolve(&mut self, rate: Rate) {
        if self.resolved {
            return;
        }
        self.resolved = true;
        let vars = self.red.vars.clone();
        self.red = RedCore::new(self.params.config(rate));
        self.red.vars = vars;
        if self.params.sliding.is_some() {
            self.sliding = Some(SlidingVars { p_avg: 0.0, d: self.red.cfg.max_th - self.red.cfg.min_th });
        }
    }

    /// An arrival that finds `q` (packets or bytes) in the queue: RED's average.
    pub fn on_arrival(&mut self, q: f64, now: Time, rate: Rate) {
        self.resolve(rate);
        self.red.on_arrival(q, now, rate);
    }

    /// RED's decision for the arrival (after [`AredCore::on_arrival`]).
    pub fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause> {
        let d = self.red.decide(size, ctx);
        if let (Some(sv), Some(sp)) = (&mut self.sliding, &self.params.sliding) {
            // Jou, Tan & Baras §V: "P̄_d is the average dropping probability obtained by
            // the EWMA algorithm" (of the instantaneous probability, Fig. 11).
            let w = sp.p_weight.unwrap_or(self.red.cfg.w_q);
            sv.p_avg = (1.0 - w) * sv.p_avg + w * self.red.vars.pb;
        }
        d
    }

    pub fn on_empty(&mut self, now: Time) {
        self.red.on_empty(now);
    }

    pub fn next_timer(&self) -> Time {
        self.last_adapt + self.params.interval
    }

    /// Every `interval`: FGS01's `max_p` adaptation, then the sliding thresholds.
    pub fn adapt(&mut self, now: Time, rate: Rate) {
        self.resolve(rate);
        self.last_adapt = now;
        // Through an idle period the stored average is stale (it decays only at the
        // next arrival): adapt on the average an arrival now would see, as Linux's
        // red_adaptative_algo does; else an idle link would raise max_p.
        let avg = self.red.avg_at(now, rate);
        let c = &mut self.red.cfg;
        // FGS01: target = [min_th + 0.4 (max_th - min_th), min_th + 0.6 (max_th - min_th)]
        let lo = c.min_th + 0.4 * (c.max_th - c.min_th);
        let hi = c.min_th + 0.6 * (c.max_th - c.min_th);
        let p = &self.params;
        if avg > hi && c.max_p <= p.max_p_ceiling {
            // "increase max_p: max_p <- max_p + alpha", alpha = min(0.01, max_p / 4)
            c.max_p += p.alpha.min(c.max_p / 4.0);
        } else if avg < lo && c.max_p >= p.max_p_floor {
            // "decrease max_p: max_p <- max_p * beta"
            c.max_p *= p.beta;
        }
        c.max_p = c.max_p.min(1.0);
        if let (Some(sv), Some(sp)) = (&self.sliding, &self.params.sliding) {
            // Jou, Tan & Baras §V: minth <- minth (1 +/- gamma); maxth <- minth + D.
            let factor = if sv.p_avg > sp.p_high {
                1.0 + sp.gamma
            } else if sv.p_avg < sp.p_low {
                1.0 - sp.gamma
            } else {
                return;
            };
            // Kept inside the buffer (our choice; the report does not bound them):
            // at least one packet, and max_th no larger than the buffer.
            let unit = if c.bytes { c.pkt_size as f64 } else { 1.0 };
            let floor = unit;
            let buffer = match (c.bytes, self.limit.packets, self.limit.bytes) {
                (false, Some(n), _) => Some(n as f64),
                (false, None, Some(b)) => Some(b as f64 / c.pkt_size as f64),
                (true, _, Some(b)) => Some(b as f64),
                (true, Some(n), None) => Some(n as f64 * c.pkt_size as f64),
                _ => None,
            };
            let mut min = (c.min_th * factor).max(floor);
            if let Some(b) = buffer {
                min = min.min((b - sv.d).max(floor));
            }
            c.min_th = min;
            c.max_th = min + sv.d;
        }
    }
}

impl RedControl for AredCore {
    fn measures_bytes(&self) -> bool {
        self.red.cfg.bytes
    }
    fn on_arrival(&mut self, q: f64, now: Time, rate: Rate) {
        AredCore::on_arrival(self, q, now, rate)
    }
    fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause> {
        AredCore::decide(self, size, ctx)
    }
    fn on_empty(&mut self, now: Time) {
        AredCore::on_empty(self, now)
    }
}

/// Adaptive RED over one FIFO.
#[derive(Debug)]
pub struct Ared<P> {
    pub core: AredCore,
    queue: RedQueue<P>,
    limit: Limit,
}

impl<P: QPacket> Ared<P> {
    pub fn new(params: &AredParams, limit: Limit) -> Self {
        Ared { core: AredCore::new(params, limit), queue: RedQueue::new(params.ecn_policy()), limit }
    }
}

impl<P: QPacket> Aqm<P> for Ared<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let overflow = self.limit.overflows(self.queue.fifo.backlog(), pkt.size_bytes());
        self.queue.enqueue(&mut self.core, pkt, overflow, ctx, drops)
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        self.queue.dequeue(&mut self.core, ctx.now)
    }

    fn backlog(&self) -> Backlog {
        self.queue.fifo.backlog()
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.core.next_timer())
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.core.adapt(ctx.now, ctx.link_rate);
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.core.red.vars.pb.clamp(0.0, 1.0)), delay_estimate: None }
    }
}


impl crate::AqmParams for AredParams {
    const TITLE: &'static str = "Adaptive RED: max_p adapted toward a target queue, automatic parameters";
    const SOURCE: &'static str = "Floyd, Gummadi & Shenker, \"Adaptive RED\", ICIR technical report, 2001";
    const DOC: &'static [(&'static str, &'static str)] = AredParams::DOC;
    type Algo<P: QPacket> = Ared<P>;
    fn check(&self) -> Result<(), String> {
        AredParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Ared::new(self, limit)
    }
}

/// `ared_sliding`: Adaptive RED with sliding thresholds on unless the table gives its
/// own (Jou, Tan & Baras §V). The same parameters and algorithm as `ared`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AredSlidingParams(pub AredParams);

impl Default for AredSlidingParams {
    fn default() -> Self {
        AredSlidingParams(AredParams { sliding: Some(SlidingParams::default()), ..AredParams::default() })
    }
}

impl crate::AqmParams for AredSlidingParams {
    const TITLE: &'static str = "Adaptive RED with sliding thresholds holding the drop probability in (P_L, P_U)";
    const SOURCE: &'static str = "Jou, Tan & Baras, \"A Parallel Virtual Queue Structure for AQM\", CSHCN TR 2003-18, §V";
    const DOC: &'static [(&'static str, &'static str)] = AredParams::DOC;
    type Algo<P: QPacket> = Ared<P>;
    fn check(&self) -> Result<(), String> {
        self.0.validate()
    }
    fn complete(&mut self) {
        self.0.sliding.get_or_insert_with(SlidingParams::default);
    }
    fn marks_ecn(&self) -> bool {
        self.0.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Ared::new(&self.0, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn automatic_parameters_follow_fgs01() {
        // 10 Mbps, 1500 B: C = 833.33 pkt/s. target 5 ms: 5 ms * C / 2 = 2.08 < 5, so
        // min_th = 5, max_th = 15; w_q = 1 - exp(-1/833.33) = 0.0011993.
        let c = AredParams::default().config(Rate::from_mbps(10));
        assert_eq!((c.min_th, c.max_th, c.bytes), (5.0, 15.0, false));
        assert!((c.w_q - (1.0 - (-1.0f64 / (10e6 / 12000.0)).exp())).abs() < 1e-15);
        assert!((c.w_q - 0.0011993).abs() < 1e-7, "{}", c.w_q);
        // 100 Mbps, target 20 ms: C = 8333.3; 0.02 * 8333.3 / 2 = 83.33 packets.
        let c = AredParams { target_delay: Duration::from_millis(20), ..AredParams::default() }.config(Rate::from_mbps(100));
        assert!((c.min_th - 83.333_333).abs() < 1e-5 && (c.max_th - 250.0).abs() < 1e-5, "{c:?}");
        // given bytes: max_th defaults to 3 min_th in bytes
        let c = AredParams { min_th: Some(QueueLimit::Bytes(20_000)), ..AredParams::default() }.config(Rate::from_mbps(3));
        assert_eq!((c.min_th, c.max_th, c.bytes), (20_000.0, 60_000.0, true));
        // only max_th in bytes: min_th automatic, converted to bytes
        let c = AredParams { max_th: Some(QueueLimit::Bytes(80_000)), ..AredParams::default() }.config(Rate::from_mbps(10));
        assert_eq!((c.min_th, c.max_th, c.bytes), (7500.0, 80_000.0, true));
    }

    fn adapted(avgs: &[f64], max_p: f64) -> Vec<f64> {
        // thresholds 5 and 15: target band [9, 11]
        let p = AredParams { max_p, ..AredParams::default() };
        let mut a = AredCore::new(&p, Limit::packets(100));
        let rate = Rate::from_mbps(10);
        a.resolve(rate);
        a.red.vars.idle_since = None; // a busy queue: the average is current
        avgs.iter()
            .enumerate()
            .map(|(k, &avg)| {
                a.red.vars.avg = avg;
                a.adapt(Time::from_millis(500 * (k as u64 + 1)), rate);
                a.red.cfg.max_p
            })
            .collect()
    }

    #[test]
    fn max_p_after_a_sequence_of_intervals() {
        // FGS01 by hand, from max_p = 0.1:
        //  avg 12 > 11: + min(0.01, 0.025) = 0.11
        //  avg 12:      + min(0.01, 0.0275) = 0.12
        //  avg 10 (in band): unchanged 0.12
        //  avg 8 < 9:  * 0.9 = 0.108
        //  avg 8:      * 0.9 = 0.0972
        let got = adapted(&[12.0, 12.0, 10.0, 8.0, 8.0], 0.1);
        let want = [0.11, 0.12, 0.12, 0.108, 0.0972];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
        // Small max_p: alpha = max_p / 4. From 0.02: 0.025, 0.03125, 0.0390625.
        let got = adapted(&[20.0, 20.0, 20.0], 0.02);
        for (g, w) in got.iter().zip([0.025, 0.03125, 0.0390625]) {
            assert!((g - w).abs() < 1e-15, "{got:?}");
        }
    }

    #[test]
    fn adaptation_through_an_idle_period_uses_the_decayed_average() {
        // The queue empties at 0 with avg 14, above the band [9, 11]; at the 500 ms
        // adaptation it has been idle 500 ms, room for 500 / 1.2 = 416.7 packets at
        // 10 Mbps: the average an arrival would see is 14 (1 - w_q)^416.7 = 14 e^-0.5
        // = 8.49 < 9 (Linux red_adaptative_algo: red_calc_qavg_from_idle_time), so
        // max_p decreases, 0.1 -> 0.09, rather than rising to 0.11 on the stale 14.
        let p = AredParams::default();
        let mut a = AredCore::new(&p, Limit::packets(100));
        let rate = Rate::from_mbps(10);
        a.resolve(rate);
        a.red.vars.avg = 14.0;
        a.red.on_empty(Time::ZERO);
        a.adapt(Time::from_millis(500), rate);
        assert!((a.red.cfg.max_p - 0.09).abs() < 1e-12, "{}", a.red.cfg.max_p);
        // the decay is applied by the next arrival, as before: the state is untouched
        assert_eq!((a.red.vars.avg, a.red.vars.idle_since), (14.0, Some(Time::ZERO)));
        // after a short idle time the average is still above the band: increase
        let mut a = AredCore::new(&p, Limit::packets(100));
        a.resolve(rate);
        a.red.vars.avg = 14.0;
        a.red.on_empty(Time::from_millis(490));
        a.adapt(Time::from_millis(500), rate);
        assert!((a.red.cfg.max_p - 0.11).abs() < 1e-12, "{}", a.red.cfg.max_p);
    }

    #[test]
    fn max_p_stays_in_its_band() {
        // Decrease stops once max_p < 0.01: from 0.0105 one step to 0.00945, then stuck.
        let got = adapted(&[0.0, 0.0, 0.0], 0.0105);
        assert!((got[0] - 0.00945).abs() < 1e-15 && got[1] == got[0] && got[2] == got[0], "{got:?}");
        // Increase stops once max_p > 0.5: 0.495 -> 0.505 -> stuck.
        let got = adapted(&[14.0, 14.0], 0.495);
        assert!((got[0] - 0.505).abs() < 1e-15 && got[1] == got[0], "{got:?}");
    }

    #[test]
    fn timer_runs_every_interval() {
        let mut q: Ared<TestPkt> = Ared::new(&AredParams::default(), Limit::packets(100));
        assert_eq!(q.next_timer(), Some(Time::from_millis(500)));
        let mut r = rng(1);
        q.on_timer(&mut ctx(Time::from_millis(500), &mut r));
        assert_eq!(q.next_timer(), Some(Time::from_millis(1000)));
    }

    #[test]
    fn sliding_thresholds_move_by_gamma_and_keep_their_distance() {
        // min 20 KB, max 80 KB (D = 60 KB), gamma 0.05, (P_L, P_U) = (0.005, 0.01).
        let p = AredParams {
            min_th: Some(QueueLimit::Bytes(20_000)),
            max_th: Some(QueueLimit::Bytes(80_000)),
            sliding: Some(SlidingParams { p_low: 0.005, p_high: 0.01, ..SlidingParams::default() }),
            ..AredParams::default()
        };
        let mut a = AredCore::new(&p, Limit::bytes(160_000));
        let rate = Rate::from_mbps(3);
        a.resolve(rate);
        a.red.vars.avg = 50_000.0; // in the ARED band [44 KB, 56 KB]: max_p unchanged
        a.sliding.as_mut().unwrap().p_avg = 0.02; // > P_U: up
        a.adapt(Time::from_millis(500), rate);
        assert!((a.red.cfg.min_th - 21_000.0).abs() < 1e-9 && (a.red.cfg.max_th - 81_000.0).abs() < 1e-9);
        a.adapt(Time::from_millis(1000), rate);
        assert!((a.red.cfg.min_th - 22_050.0).abs() < 1e-9 && (a.red.cfg.max_th - 82_050.0).abs() < 1e-9);
        a.sliding.as_mut().unwrap().p_avg = 0.007; // inside: still
        a.adapt(Time::from_millis(1500), rate);
        assert!((a.red.cfg.min_th - 22_050.0).abs() < 1e-9);
        a.sliding.as_mut().unwrap().p_avg = 0.001; // < P_L: down
        a.adapt(Time::from_millis(2000), rate);
        assert!((a.red.cfg.min_th - 20_947.5).abs() < 1e-9 && (a.red.cfg.max_th - 80_947.5).abs() < 1e-9);
        // never past the buffer: max_th <= 160 KB, i.e. min_th <= 100 KB
        a.sliding.as_mut().unwrap().p_avg = 0.5;
        for k in 0..100 {
            a.adapt(Time::from_millis(2500 + 500 * k), rate);
        }
        assert!((a.red.cfg.min_th - 100_000.0).abs() < 1e-9 && (a.red.cfg.max_th - 160_000.0).abs() < 1e-9);
    }

    #[test]
    fn the_probability_average_follows_the_instantaneous_probability() {
        let p = AredParams {
            w_q: Some(0.5),
            sliding: Some(SlidingParams { p_weight: Some(0.5), ..SlidingParams::default() }),
            ..AredParams::default()
        };
        let mut a = AredCore::new(&p, Limit::packets(100));
        let rate = Rate::from_mbps(10);
        let mut r = rng(1);
        a.resolve(rate);
        a.red.vars.idle_since = None;
        a.red.vars.avg = 10.0; // p_b = 0.1 * 5/10 = 0.05
        a.red.cfg.w_q = 1e-300;
        a.decide(1500, &mut ctx(Time::ZERO, &mut r));
        assert!((a.sliding.as_ref().unwrap().p_avg - 0.025).abs() < 1e-15);
        a.decide(1500, &mut ctx(Time::ZERO, &mut r));
        assert!((a.sliding.as_ref().unwrap().p_avg - 0.0375).abs() < 1e-15);
    }
}
