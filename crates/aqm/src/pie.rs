//! PIE: Proportional Integral controller Enhanced.
//!
//! Sources: Pan, Natarajan, Baker & White, RFC 8033 (2017), sections named beside
//! the code; Pan et al., "PIE: A lightweight latency control to address the
//! bufferbloat problem" (slides, 2012), for the departure-count estimator
//! (`est_del = queue_length / depart_count * T_update`). The structure (params,
//! vars, a periodic update) follows Linux's `include/net/pie.h`; no code is taken
//! from it.
//!
//! PIE drops at enqueue. Every `tupdate` it estimates the queueing delay and moves
//! the drop probability by `alpha * (delay - target) + beta * (delay - delay_old)`,
//! scaled down while the probability is small.
//!
//! [`Pie::decide`] and [`Pie::admit_decided`] are public so that MADPIE can add its
//! deterministic drop between PIE's random decision and the enqueue. The control law
//! itself ([`early_drop`], [`calculate_drop_prob`], [`process_dequeue`]) works on
//! one queue's [`PieVars`] and its backlog, so that FQ-PIE ([`crate::fq_pie`]) runs
//! one PIE state per flow queue with this same code.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit};
use crate::time::{Duration, Time};
use crate::units::Bytes;
use crate::{signal, Admit, Aqm, Cause, Ctx, Departure, Dropped, Probe, QPacket};

/// How PIE estimates the queueing delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelayEstimator {
    /// RFC 8033 §4.3 / Appendix B: measure the time to drain `dq_threshold` bytes while
    /// the queue holds at least that much; delay = backlog / departure rate.
    DepartureRate,
    /// RFC 8033 §4.3 (alternative): the sojourn time of the last packet dequeued,
    /// from its timestamp (Linux's default since v5.6).
    Timestamp,
    /// Pan et al. (2012) slides: bytes departed during the last `tupdate` give the
    /// rate; delay = backlog / depart_count * tupdate.
    Interval,
}

/// PIE's parameters. Defaults are RFC 8033's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PieParams {
    /// QDELAY_REF, the target queueing delay (RFC 8033 §4.1: 15 ms).
    pub target: Duration,
    /// T_UPDATE, the interval between probability updates (RFC 8033 §4.2: 15 ms).
    pub tupdate: Duration,
    /// alpha, in Hz (RFC 8033 §4.2: 0.125). Applied once per update, as in the RFC's
    /// pseudocode, Linux and ns-3: with a longer `tupdate` PIE moves its probability
    /// less often, so less per second, unless `scale_gains` is on.
    pub alpha: f64,
    /// beta, in Hz (RFC 8033 §4.2: 1.25); per update, as alpha.
    pub beta: f64,
    /// Scale alpha and beta by tupdate / 15 ms, the T_UPDATE the RFC chose its values
    /// for (§4.2), so that their effect per second does not depend on `tupdate`.
    /// Off by default: RFC 8033's pseudocode, Linux's sch_pie and ns-3 apply them
    /// per update whatever the interval (Kuhn & Ros ran tupdate = 30 ms unscaled).
    pub scale_gains: bool,
    /// MAX_BURST, the burst allowance (RFC 8033 §4.4: 150 ms).
    pub max_burst: Duration,
    /// Delay estimator (RFC 8033 §4.3: departure rate).
    pub estimator: DelayEstimator,
    /// DQ_THRESHOLD, bytes per departure-rate measurement (RFC 8033 §4.3: 2^14 = 16384 B).
    pub dq_threshold: Bytes,
    /// Weight of a new measurement in the averaged departure time (RFC 8033
    /// Appendix B: 1/4; FreeBSD's dummynet PIE, by the RFC's authors, uses 1/4 too).
    pub dq_weight: f64,
    /// MEAN_PKTSIZE: no early drop while the backlog is at most two such packets
    /// (RFC 8033 §4.1), and the reference size in byte mode. 1500 B (Linux uses the MTU).
    pub mean_pkt_size: Bytes,
    /// Scale the update down while the drop probability is small (RFC 8033 §4.2:
    /// divide by 2048 below 1e-6, ..., by 2 below 0.1).
    pub auto_scale: bool,
    /// Cap Drop Adjustment: at most +2 % per update once drop_prob >= 10 %
    /// (RFC 8033 §5.5; on by default as in ns-3 and FreeBSD).
    pub cap_drop_adjustment: bool,
    /// Mark ECN-capable packets instead of dropping them (RFC 8033 §5.1).
    pub ecn: bool,
    /// Above this drop probability, drop even ECN-capable packets; at or below it,
    /// mark them (RFC 8033 §5.1: 10 %).
    pub ecn_threshold: f64,
    /// Derandomization (RFC 8033 §5.4: off by default).
    pub derandomize: bool,
    /// Scale the drop probability by packet size / mean_pkt_size (Linux `bytemode`).
    pub bytemode: bool,
    /// Add 2 % per update while the delay exceeds 250 ms (Linux `sch_pie`; not in RFC 8033).
    pub high_delay_boost: bool,
    /// Leave CE-marked packets out of the delay measure (Khademi, Ros & Welzl's
    /// recommendation): their bytes are not counted in the backlog that the
    /// estimator converts to delay, and with the timestamp estimator their sojourn
    /// does not update it.
    pub ignore_ce_in_measure: bool,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            scale_gains: false,
            max_burst: Duration::from_millis(150),
            estimator: DelayEstimator::DepartureRate,
            dq_threshold: Bytes(16_384),
            dq_weight: 0.25,
            mean_pkt_size: Bytes(1500),
            auto_scale: true,
            cap_drop_adjustment: true,
            ecn: false,
            ecn_threshold: 0.1,
            derandomize: false,
            bytemode: false,
            high_delay_boost: false,
            ignore_ce_in_measure: false,
        }
    }
}

impl PieParams {
    /// One line per parameter: what it is and where its default comes from.
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "target queueing delay QDELAY_REF (RFC 8033 §4.1)"),
        ("tupdate", "probability update interval T_UPDATE (RFC 8033 §4.2)"),
        ("alpha", "gain on (delay - target), Hz, applied per update (RFC 8033 §4.2)"),
        ("beta", "gain on (delay - delay_old), Hz, applied per update (RFC 8033 §4.2)"),
        ("scale_gains", "scale alpha and beta by tupdate / 15 ms, the RFC's T_UPDATE (off: per update, as the RFC's pseudocode, Linux, ns-3)"),
        ("max_burst", "burst allowance MAX_BURST (RFC 8033 §4.4)"),
        ("estimator", "departure_rate (RFC 8033 §4.3) | timestamp (RFC 8033 §4.3, Linux) | interval (Pan et al. 2012)"),
        ("dq_threshold", "bytes per departure-rate measurement DQ_THRESHOLD (RFC 8033 §4.3)"),
        ("dq_weight", "EWMA weight of a new departure-time measurement (RFC 8033 App. B)"),
        ("mean_pkt_size", "MEAN_PKTSIZE: no early drop below 2 of these (RFC 8033 §4.1)"),
        ("auto_scale", "scale updates down at small drop_prob (RFC 8033 §4.2)"),
        ("cap_drop_adjustment", "at most +2% per update above 10% (RFC 8033 §5.5)"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 8033 §5.1)"),
        ("ecn_threshold", "drop even ECN-capable packets above this probability (RFC 8033 §5.1)"),
        ("derandomize", "derandomized drops (RFC 8033 §5.4)"),
        ("bytemode", "scale probability by packet size (Linux sch_pie bytemode)"),
        ("high_delay_boost", "+2% per update while delay > 250 ms (Linux sch_pie, not RFC)"),
        ("ignore_ce_in_measure", "leave CE-marked packets out of the delay measure (Khademi, Ros & Welzl, IETF 88)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        // Linux takes the update period in microseconds (TCA_PIE_TUPDATE); a shorter one
        // would make a run of minutes take billions of updates
        if self.tupdate < Duration::from_micros(1) {
            return Err(format!("tupdate: {} is below the shortest update period, 1us", self.tupdate));
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(format!("alpha: must be a non-negative number, got {}", self.alpha));
        }
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(format!("beta: must be a non-negative number, got {}", self.beta));
        }
        if !(self.dq_weight > 0.0 && self.dq_weight <= 1.0) {
            return Err(format!("dq_weight: must be in (0, 1], got {}", self.dq_weight));
        }
        if !(0.0..=1.0).contains(&self.ecn_threshold) {
            return Err(format!("ecn_threshold: must be in [0, 1], got {}", self.ecn_threshold));
        }
        if self.dq_threshold.0 == 0 {
            return Err("dq_threshold: must be greater than zero".into());
        }
        if self.mean_pkt_size.0 == 0 {
            return Err("mean_pkt_size: must be greater than zero".into());
        }
        Ok(())
    }
}

/// PIE's state variables (RFC 8033 §4 names in comments).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PieVars {
    /// drop_prob_
    pub drop_prob: f64,
    /// current_qdelay
    pub qdelay: Duration,
    /// qdelay_old_
    pub qdelay_old: Duration,
    /// burst_allowance_
    pub burst_allowance: Duration,
    /// accu_prob_ (derandomization)
    pub accu_prob: f64,
    /// Time of the last probability update.
    pub last_update: Time,
    // departure-rate estimator (RFC 8033 §4.3)
    in_measurement: bool,
    measurement_start: Time,
    dq_count: u64,
    /// avg_dq_time_, normalised to the time to drain `dq_threshold` bytes, in ns.
    avg_dq_time_ns: f64,
    // interval estimator (Pan et al. 2012)
    depart_count: u64,
    /// Bytes of CE-marked packets in the queue (for `ignore_ce_in_measure`).
    ce_bytes: u64,
}

impl PieVars {
    /// Fresh state, with the whole burst allowance (RFC 8033 §4.4).
    pub fn new(params: &PieParams) -> PieVars {
        PieVars { burst_allowance: params.max_burst, ..PieVars::default() }
    }

    /// A packet of `size` bytes entered the queue (for `ignore_ce_in_measure`).
    #[inline]
    pub fn on_arrival(&mut self, params: &PieParams, size: u64, ce: bool) {
        if params.ignore_ce_in_measure && ce {
            self.ce_bytes += size;
        }
    }

    /// The backlog the delay estimator converts to delay: `backlog` bytes, without
    /// the CE-marked ones with `ignore_ce_in_measure`.
    #[inline]
    pub fn measured_backlog(&self, params: &PieParams, backlog: u64) -> u64 {
        if params.ignore_ce_in_measure {
            backlog - self.ce_bytes
        } else {
            backlog
        }
    }
}

// PIE's control law over one queue's state, the queue seen only through its backlog
// in bytes: what PIE runs on its single FIFO, and what FQ-PIE runs on each flow queue
// (Linux's `pie_drop_early`, `pie_calculate_probability` and `pie_process_dequeue`
// in `include/net/pie.h` have the same shape).

/// Safeguard PIE to be work-conserving (RFC 8033 §4.1): no early drop while the
/// delay was under half the target and the probability is under 20 %, or while the
/// queue holds at most two mean-size packets.
#[inline]
pub fn safeguard_applies(p: &PieParams, v: &PieVars, backlog: u64) -> bool {
    (v.qdelay_old < p.target.div_u64(2) && v.drop_prob < 0.2) || backlog <= 2 * p.mean_pkt_size.0
}

/// PIE's random early drop decision for an arriving packet of `size` bytes at a
/// queue holding `backlog` bytes (the buffer limit is the caller's): the burst
/// allowance (RFC 8033 §4.4, reset after a quiet period as in its Appendix A
/// `enque()`), then `drop_early()` (§4.1, with derandomization §5.4 and Linux's
/// byte mode). True: drop (or mark).
#[inline]
pub fn early_drop(p: &PieParams, v: &mut PieVars, backlog: u64, size: u32, ctx: &mut Ctx<'_>) -> bool {
    let half = p.target.div_u64(2);
    // RFC 8033 Appendix A, enque(): reset the burst allowance once the queue has
    // been quiet (no drop probability, both delay samples under target/2).
    if v.drop_prob == 0.0 && v.qdelay < half && v.qdelay_old < half {
        v.burst_allowance = p.max_burst;
    }
    // RFC 8033 §4.4: no random drop while burst allowance remains.
    if !v.burst_allowance.is_zero() {
        return false;
    }
    if safeguard_applies(p, v, backlog) {
        return false;
    }
    let mut prob = v.drop_prob;
    if p.bytemode {
        prob = (prob * size as f64 / p.mean_pkt_size.0 as f64).min(1.0);
    }
    // Derandomization (RFC 8033 §5.4).
    if p.derandomize {
        if v.drop_prob == 0.0 {
            v.accu_prob = 0.0;
        }
        v.accu_prob += v.drop_prob;
        if v.accu_prob < 0.85 {
            return false;
        }
        if v.accu_prob >= 8.5 {
            return true;
        }
    }
    ctx.uniform() < prob
}

/// May a congestion signal be a CE mark at this probability (RFC 8033 §5.1)?
#[inline]
pub fn ecn_allowed(p: &PieParams, v: &PieVars) -> bool {
    // RFC 8033 §5.1: mark while drop_prob_ is at or below the threshold (10 %), drop
    // above it (Linux sch_pie: prob <= MAX_PROB / 10).
    p.ecn && v.drop_prob <= p.ecn_threshold
}

/// RFC 8033 §4.2 calculate_drop_prob(), run every `tupdate`, for a queue whose
/// measured backlog is `backlog` bytes.
pub fn calculate_drop_prob(p: &PieParams, v: &mut PieVars, backlog: u64, ctx: &mut Ctx<'_>) {
    v.last_update = ctx.now;
    // The delay estimate (RFC 8033 §4.3).
    match p.estimator {
        DelayEstimator::DepartureRate => {
            v.qdelay = if v.avg_dq_time_ns > 0.0 {
                Duration::from_nanos((backlog as f64 * v.avg_dq_time_ns / p.dq_threshold.0 as f64).round() as u64)
            } else {
                Duration::ZERO
            };
        }
        DelayEstimator::Timestamp => {
            // The last dequeued packet's sojourn; zero once the queue is empty.
            if backlog == 0 {
                v.qdelay = Duration::ZERO;
            }
        }
        DelayEstimator::Interval => {
            // Pan et al. (2012): est_del = queue_length / depart_count * T_update.
            v.qdelay = if backlog == 0 {
                Duration::ZERO
            } else if v.depart_count > 0 {
                Duration::from_nanos((backlog as u128 * p.tupdate.as_nanos() as u128 / v.depart_count as u128) as u64)
            } else {
                // Nothing left in a whole interval: fall back to the link rate.
                ctx.link_rate.tx_time(backlog)
            };
            v.depart_count = 0;
        }
    }
    let cur = v.qdelay.as_secs_f64();
    let old = v.qdelay_old.as_secs_f64();
    // RFC 8033 §4.2: the PI step, once per update. The RFC's alpha and beta are
    // for T_UPDATE = 15 ms; `scale_gains` keeps their effect per second at
    // another interval (a step tupdate / 15 ms as large).
    let gain = if p.scale_gains { p.tupdate.as_secs_f64() / 0.015 } else { 1.0 };
    let mut delta = gain * (p.alpha * (cur - p.target.as_secs_f64()) + p.beta * (cur - old));
    // RFC 8033 §4.2: auto-tuning of alpha and beta by the drop probability's range.
    if p.auto_scale {
        let dp = v.drop_prob;
        delta /= if dp < 0.000_001 {
            2048.0
        } else if dp < 0.000_01 {
            512.0
        } else if dp < 0.000_1 {
            128.0
        } else if dp < 0.001 {
            32.0
        } else if dp < 0.01 {
            8.0
        } else if dp < 0.1 {
            2.0
        } else {
            1.0
        };
    }
    // RFC 8033 §5.5 Cap Drop Adjustment.
    if p.cap_drop_adjustment && v.drop_prob >= 0.1 && delta > 0.02 {
        delta = 0.02;
    }
    // Linux sch_pie: extra push while the delay is very high.
    if p.high_delay_boost && v.qdelay > Duration::from_millis(250) {
        delta += 0.02;
    }
    let mut prob = v.drop_prob + delta;
    // RFC 8033 §4.2: decay the probability exponentially when the queue is idle.
    if v.qdelay.is_zero() && v.qdelay_old.is_zero() {
        prob *= 0.98;
    }
    v.drop_prob = prob.clamp(0.0, 1.0);
    v.qdelay_old = v.qdelay;
    // RFC 8033 §4.4: the burst allowance runs down by T_UPDATE each update.
    v.burst_allowance = v.burst_allowance.saturating_sub(p.tupdate);
}

/// A packet of `size` bytes left the queue after `sojourn`, leaving `backlog` bytes
/// behind: feed the delay estimator (RFC 8033 §4.3).
#[inline]
pub fn process_dequeue(p: &PieParams, v: &mut PieVars, size: u64, ce: bool, sojourn: Duration, now: Time, backlog: u64) {
    if ce && p.ignore_ce_in_measure {
        v.ce_bytes -= size;
    }
    match p.estimator {
        DelayEstimator::DepartureRate => {
            // RFC 8033 §4.3 / Appendix B: count bytes in the current measurement
            // cycle; when DQ_THRESHOLD bytes have left, fold the drain time into
            // the average.
            if v.in_measurement {
                v.dq_count += size;
                if v.dq_count >= p.dq_threshold.0 {
                    let dq_time = now.saturating_since(v.measurement_start).as_nanos() as f64;
                    // normalise to the time for exactly dq_threshold bytes
                    let sample = dq_time * p.dq_threshold.0 as f64 / v.dq_count as f64;
                    v.avg_dq_time_ns = if v.avg_dq_time_ns == 0.0 {
                        sample
                    } else {
                        p.dq_weight * sample + (1.0 - p.dq_weight) * v.avg_dq_time_ns
                    };
                    v.in_measurement = false;
                }
            }
            // Start a cycle when the queue holds DQ_THRESHOLD bytes.
            if !v.in_measurement && backlog >= p.dq_threshold.0 {
                v.in_measurement = true;
                v.measurement_start = now;
                v.dq_count = 0;
            }
        }
        DelayEstimator::Timestamp => {
            if !(ce && p.ignore_ce_in_measure) {
                v.qdelay = sojourn;
            }
        }
        DelayEstimator::Interval => v.depart_count += size,
    }
}

/// PIE over one FIFO.
#[derive(Debug)]
pub struct Pie<P> {
    pub params: PieParams,
    pub vars: PieVars,
    fifo: Fifo<P>,
    limit: Limit,
}

impl<P: QPacket> Pie<P> {
    pub fn new(params: &PieParams, limit: Limit) -> Self {
        Pie { params: params.clone(), vars: PieVars::new(params), fifo: Fifo::new(), limit }
    }

    /// The delay estimate PIE currently acts on.
    pub fn current_qdelay(&self) -> Duration {
        self.vars.qdelay
    }

    /// The decision for an arriving packet of `size` bytes, before any ECN handling:
    /// `Some(Overflow)` if the buffer is full, `Some(Random)` if PIE's random early
    /// drop fires, `None` to enqueue.
    #[inline]
    pub fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause> {
        // Buffer limit: drop-tail behaviour underneath the AQM.
        if self.limit.overflows(self.fifo.backlog(), size) {
            return Some(Cause::Overflow);
        }
        if early_drop(&self.params, &mut self.vars, self.fifo.bytes(), size, ctx) { Some(Cause::Random) } else { None }
    }

    /// [`safeguard_applies`] to this queue. Public for MADPIE, whose deterministic
    /// drop applies only where PIE's random policy does.
    #[inline]
    pub fn safeguard_applies(&self) -> bool {
        safeguard_applies(&self.params, &self.vars, self.fifo.bytes())
    }

    /// Enqueue `pkt` given a decision from [`Pie::decide`] (possibly amended, as MADPIE
    /// does): congestion signals become CE marks for ECN-capable packets while the
    /// probability is under `ecn_threshold` (RFC 8033 §5.1), drops otherwise.
    #[inline]
    pub fn admit_decided(&mut self, pkt: P, decision: Option<Cause>, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let pkt = match decision {
            None => pkt,
            Some(Cause::Overflow) => {
                self.vars.accu_prob = 0.0;
                drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
                return Admit::Dropped(Cause::Overflow);
            }
            Some(cause) => {
                // RFC 8033 §5.4: the accumulated probability restarts after each
                // congestion signal. §5.1 makes a CE mark that signal in place of a
                // drop, so a mark restarts it too (Linux's sch_pie restarts it when
                // the random decision fires, mark or drop); restarting on drops only
                // lets it grow past 8.5, where every ECN-capable packet is marked.
                self.vars.accu_prob = 0.0;
                let ecn_ok = ecn_allowed(&self.params, &self.vars);
                match signal(pkt, cause, ecn_ok, drops) {
                    Ok(marked) => {
                        self.push(marked, ctx.now);
                        return Admit::Marked(cause);
                    }
                    Err(admit) => return admit,
                }
            }
        };
        self.push(pkt, ctx.now);
        Admit::Queued
    }

    #[inline]
    fn push(&mut self, pkt: P, now: Time) {
        self.vars.on_arrival(&self.params, pkt.size_bytes() as u64, pkt.ecn() == crate::Ecn::Ce);
        self.fifo.push(pkt, now);
    }

    /// RFC 8033 §4.2 calculate_drop_prob(), run every `tupdate`.
    pub fn update(&mut self, ctx: &mut Ctx<'_>) {
        let backlog = self.vars.measured_backlog(&self.params, self.fifo.bytes());
        calculate_drop_prob(&self.params, &mut self.vars, backlog, ctx);
    }
}

impl<P: QPacket> Aqm<P> for Pie<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let decision = self.decide(pkt.size_bytes(), ctx);
        self.admit_decided(pkt, decision, ctx, drops)
    }

    #[inline]
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let q = self.fifo.pop()?;
        let sojourn = ctx.now.saturating_since(q.enqueued_at);
        let ce = q.pkt.ecn() == crate::Ecn::Ce;
        process_dequeue(&self.params, &mut self.vars, q.pkt.size_bytes() as u64, ce, sojourn, ctx.now, self.fifo.bytes());
        Some(Departure { pkt: q.pkt, sojourn, marked: None })
    }

    #[inline]
    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }

    #[inline]
    fn next_timer(&self) -> Option<Time> {
        Some(self.vars.last_update + self.params.tupdate)
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.update(ctx);
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.vars.drop_prob), delay_estimate: Some(self.vars.qdelay) }
    }
}


impl crate::AqmParams for PieParams {
    const TITLE: &'static str = "Proportional Integral controller Enhanced";
    const SOURCE: &'static str = "Pan et al., RFC 8033 (2017)";
    const DOC: &'static [(&'static str, &'static str)] = PieParams::DOC;
    type Algo<P: QPacket> = Pie<P>;
    fn check(&self) -> Result<(), String> {
        PieParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Pie::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn pie(params: PieParams) -> Pie<TestPkt> {
        Pie::new(&params, Limit::packets(1000))
    }

    fn fill(q: &mut Pie<TestPkt>, n: u64, now: Time) {
        for i in 0..n {
            q.fifo.push(pkt(i, 1500), now);
        }
    }

    fn params_timestamp() -> PieParams {
        PieParams { estimator: DelayEstimator::Timestamp, ..PieParams::default() }
    }

    #[test]
    fn probability_update_follows_the_pi_law_with_scaling() {
        // drop_prob = 0.05 (in [0.01, 0.1): p is halved), delay 25 ms, old 20 ms,
        // target 15 ms: p = 0.125*(0.025-0.015) + 1.25*(0.025-0.020) = 0.00125 + 0.00625
        // = 0.0075, halved = 0.00375 -> drop_prob = 0.05375.
        let mut q = pie(params_timestamp());
        fill(&mut q, 10, Time::ZERO);
        q.vars.drop_prob = 0.05;
        q.vars.qdelay = Duration::from_millis(25);
        q.vars.qdelay_old = Duration::from_millis(20);
        let mut r = rng(1);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert!((q.vars.drop_prob - 0.05375).abs() < 1e-12, "{}", q.vars.drop_prob);
        assert_eq!(q.vars.qdelay_old, Duration::from_millis(25));
    }

    #[test]
    fn alpha_beta_scaling_at_each_probability_band() {
        // Same error terms (p = 0.0075 unscaled) at each band of RFC 8033 §4.2.
        let cases = [
            (0.0, 2048.0),
            (0.000_000_5, 2048.0),
            (0.000_005, 512.0),
            (0.000_05, 128.0),
            (0.000_5, 32.0),
            (0.005, 8.0),
            (0.05, 2.0),
            (0.5, 1.0),
        ];
        for (start, div) in cases {
            let mut q = pie(params_timestamp());
            fill(&mut q, 10, Time::ZERO);
            q.vars.drop_prob = start;
            q.vars.qdelay = Duration::from_millis(25);
            q.vars.qdelay_old = Duration::from_millis(20);
            let mut r = rng(1);
            q.update(&mut ctx(Time::from_millis(15), &mut r));
            let want = start + 0.0075 / div;
            assert!((q.vars.drop_prob - want).abs() < 1e-15, "start {start}: {} vs {want}", q.vars.drop_prob);
        }
        // Without auto-scaling the full step applies even at zero probability.
        let mut q = pie(PieParams { auto_scale: false, ..params_timestamp() });
        fill(&mut q, 10, Time::ZERO);
        q.vars.qdelay = Duration::from_millis(25);
        q.vars.qdelay_old = Duration::from_millis(20);
        let mut r = rng(1);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert!((q.vars.drop_prob - 0.0075).abs() < 1e-15);
    }

    #[test]
    fn gains_apply_per_update_unless_scaled_with_tupdate() {
        // delay 25 ms, old 20 ms, target 15 ms, drop_prob 0.5 (no auto-scaling band):
        // step 0.0075 per update at tupdate 15 ms and, unscaled, at 30 ms too (half
        // as much per second); with scale_gains, 30 / 15 = 2 times it, 0.015.
        let step = |tupdate_ms: u64, scale_gains: bool| {
            let mut q = pie(PieParams { tupdate: Duration::from_millis(tupdate_ms), scale_gains, ..params_timestamp() });
            fill(&mut q, 10, Time::ZERO);
            q.vars.drop_prob = 0.5;
            q.vars.qdelay = Duration::from_millis(25);
            q.vars.qdelay_old = Duration::from_millis(20);
            let mut r = rng(1);
            q.update(&mut ctx(Time::from_millis(tupdate_ms), &mut r));
            q.vars.drop_prob - 0.5
        };
        assert!((step(15, false) - 0.0075).abs() < 1e-12);
        assert!((step(30, false) - 0.0075).abs() < 1e-12);
        assert!((step(15, true) - 0.0075).abs() < 1e-12);
        assert!((step(30, true) - 0.015).abs() < 1e-12, "{}", step(30, true));
    }

    #[test]
    fn cap_drop_adjustment_limits_steps_above_ten_percent() {
        // drop_prob 0.3, delay jumps 20 -> 120 ms: p = 0.125*0.105 + 1.25*0.1 = 0.138125 > 0.02
        let mut q = pie(params_timestamp());
        fill(&mut q, 10, Time::ZERO);
        q.vars.drop_prob = 0.3;
        q.vars.qdelay = Duration::from_millis(120);
        q.vars.qdelay_old = Duration::from_millis(20);
        let mut r = rng(1);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert!((q.vars.drop_prob - 0.32).abs() < 1e-12);
        // with the cap off, the full step
        let mut q = pie(PieParams { cap_drop_adjustment: false, ..params_timestamp() });
        fill(&mut q, 10, Time::ZERO);
        q.vars.drop_prob = 0.3;
        q.vars.qdelay = Duration::from_millis(120);
        q.vars.qdelay_old = Duration::from_millis(20);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert!((q.vars.drop_prob - 0.438125).abs() < 1e-12);
    }

    #[test]
    fn idle_queue_decays_the_probability_by_two_percent_per_update() {
        let mut q = pie(params_timestamp());
        q.vars.drop_prob = 0.5;
        let mut r = rng(1);
        // empty queue: delay 0 and old delay 0. p = 0.125*(0 - 0.015) = -0.001875 at
        // band >= 0.1 (no scaling), then decay: (0.5 - 0.001875) * 0.98.
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        let want = (0.5 - 0.001875) * 0.98;
        assert!((q.vars.drop_prob - want).abs() < 1e-12, "{}", q.vars.drop_prob);
        let mut last = q.vars.drop_prob;
        for k in 2..50 {
            q.update(&mut ctx(Time::from_millis(15 * k), &mut r));
            assert!(q.vars.drop_prob < last);
            last = q.vars.drop_prob;
        }
    }

    #[test]
    fn probability_stays_bounded() {
        let mut q = pie(PieParams { cap_drop_adjustment: false, auto_scale: false, ..params_timestamp() });
        fill(&mut q, 10, Time::ZERO);
        let mut r = rng(1);
        q.vars.qdelay = Duration::from_secs(100);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert_eq!(q.vars.drop_prob, 1.0);
        q.vars.qdelay = Duration::ZERO;
        q.vars.qdelay_old = Duration::from_secs(100);
        q.update(&mut ctx(Time::from_millis(30), &mut r));
        assert_eq!(q.vars.drop_prob, 0.0);
    }

    #[test]
    fn burst_allowance_protects_then_runs_down_by_tupdate() {
        // MAX_BURST 150 ms, T_UPDATE 15 ms: ten updates exhaust it.
        let mut q = pie(params_timestamp());
        assert_eq!(q.vars.burst_allowance, Duration::from_millis(150));
        fill(&mut q, 100, Time::ZERO);
        q.vars.drop_prob = 1.0; // would drop everything
        q.vars.qdelay = Duration::from_millis(100);
        q.vars.qdelay_old = Duration::from_millis(100);
        let mut r = rng(1);
        let mut c = ctx(Time::ZERO, &mut r);
        assert_eq!(q.decide(1500, &mut c), None, "burst allowance bypasses random drop");
        for k in 1..=10 {
            q.update(&mut ctx(Time::from_millis(15 * k), &mut r));
            q.vars.drop_prob = 1.0;
            assert_eq!(q.vars.burst_allowance, Duration::from_millis(150 - 15 * k));
        }
        let mut c = ctx(Time::from_millis(151), &mut r);
        assert_eq!(q.decide(1500, &mut c), Some(Cause::Random));
    }

    #[test]
    fn burst_allowance_is_restored_after_a_quiet_period() {
        let mut q = pie(params_timestamp());
        q.vars.burst_allowance = Duration::ZERO;
        q.vars.drop_prob = 0.0;
        q.vars.qdelay = Duration::from_millis(7); // < 15/2
        q.vars.qdelay_old = Duration::from_millis(7);
        let mut r = rng(1);
        q.decide(1500, &mut ctx(Time::ZERO, &mut r));
        assert_eq!(q.vars.burst_allowance, Duration::from_millis(150));
        // not quiet: delay at target/2 exactly does not restore it
        q.vars.burst_allowance = Duration::ZERO;
        q.vars.qdelay = Duration::from_micros(7500);
        q.decide(1500, &mut ctx(Time::ZERO, &mut r));
        assert_eq!(q.vars.burst_allowance, Duration::ZERO);
    }

    #[test]
    fn no_early_drop_under_half_target_and_twenty_percent() {
        let mut q = pie(params_timestamp());
        fill(&mut q, 100, Time::ZERO);
        q.vars.burst_allowance = Duration::ZERO;
        q.vars.qdelay = Duration::from_millis(30);
        let mut r = rng(1);
        // old delay 7 ms < 7.5 ms and p = 0.19 < 0.2: never drop
        q.vars.qdelay_old = Duration::from_millis(7);
        q.vars.drop_prob = 0.19;
        for _ in 0..1000 {
            assert_eq!(q.decide(1500, &mut ctx(Time::ZERO, &mut r)), None);
        }
        // p = 0.2: the safeguard no longer applies and drops happen at about 20 %
        q.vars.drop_prob = 0.2;
        let n = (0..10_000).filter(|_| q.decide(1500, &mut ctx(Time::ZERO, &mut r)).is_some()).count();
        assert!((1800..2200).contains(&n), "{n}");
        // old delay at target/2 with p < 0.2: drops happen
        q.vars.drop_prob = 0.1;
        q.vars.qdelay_old = Duration::from_micros(7500);
        let n = (0..10_000).filter(|_| q.decide(1500, &mut ctx(Time::ZERO, &mut r)).is_some()).count();
        assert!((850..1150).contains(&n), "{n}");
    }

    #[test]
    fn no_early_drop_with_two_packets_or_fewer_queued() {
        let mut q = pie(params_timestamp());
        fill(&mut q, 2, Time::ZERO);
        q.vars.burst_allowance = Duration::ZERO;
        q.vars.drop_prob = 1.0;
        q.vars.qdelay_old = Duration::from_millis(100);
        let mut r = rng(1);
        assert_eq!(q.decide(1500, &mut ctx(Time::ZERO, &mut r)), None);
        fill(&mut q, 1, Time::ZERO);
        assert_eq!(q.decide(1500, &mut ctx(Time::ZERO, &mut r)), Some(Cause::Random));
    }

    #[test]
    fn departure_rate_estimator_measures_the_drain_rate() {
        // 10 Mbps: a 1500 B packet leaves every 1.2 ms. With 40 packets queued, the
        // first cycle starts at the first dequeue and ends after 11 packets (16500 B
        // >= 16384): 11 * 1.2 ms for 16500 B -> 13.10 ms per 16384 B. With 28 packets
        // (42000 B) left, delay = 42000 / 16500 * 13.2 ms = 33.6 ms.
        let mut q = pie(PieParams::default());
        let mut r = rng(1);
        let mut drops = Vec::new();
        fill(&mut q, 40, Time::ZERO);
        let mut t = Time::ZERO;
        for _ in 0..12 {
            t += Duration::from_micros(1200);
            q.dequeue(&mut ctx(t, &mut r), &mut drops).unwrap();
        }
        q.update(&mut ctx(t, &mut r));
        let ms = q.vars.qdelay.as_millis_f64();
        assert!((ms - 33.6).abs() < 0.01, "{ms}");
    }

    #[test]
    fn timestamp_estimator_uses_the_last_sojourn() {
        let mut q = pie(params_timestamp());
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.enqueue(pkt(0, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops);
        q.enqueue(pkt(1, 1500), &mut ctx(Time::from_millis(1), &mut r), &mut drops);
        q.dequeue(&mut ctx(Time::from_millis(12), &mut r), &mut drops);
        q.update(&mut ctx(Time::from_millis(15), &mut r));
        assert_eq!(q.vars.qdelay_old, Duration::from_millis(12));
        // queue drained: the estimate resets to zero at the next update
        q.dequeue(&mut ctx(Time::from_millis(16), &mut r), &mut drops);
        q.update(&mut ctx(Time::from_millis(30), &mut r));
        assert_eq!(q.vars.qdelay_old, Duration::ZERO);
    }

    #[test]
    fn interval_estimator_follows_the_2012_slides() {
        // 20 packets queued; 10 packets (15000 B) departed in the 30 ms interval:
        // est = 15000 B (left) / 15000 B * 30 ms = 30 ms.
        let mut q = pie(PieParams { estimator: DelayEstimator::Interval, tupdate: Duration::from_millis(30), ..PieParams::default() });
        let mut r = rng(1);
        let mut drops = Vec::new();
        fill(&mut q, 20, Time::ZERO);
        for k in 0..10 {
            q.dequeue(&mut ctx(Time::from_millis(3 * k), &mut r), &mut drops);
        }
        q.update(&mut ctx(Time::from_millis(30), &mut r));
        assert_eq!(q.vars.qdelay, Duration::from_millis(30));
    }

    #[test]
    fn ecn_capable_packets_are_marked_below_the_threshold_and_dropped_above() {
        let mut q = pie(PieParams { ecn: true, ..params_timestamp() });
        fill(&mut q, 10, Time::ZERO);
        let mut r = rng(1);
        let mut drops = Vec::new();
        let ect = TestPkt { id: 99, size: 1500, flow: 1, ecn: crate::Ecn::Ect0 };
        q.vars.drop_prob = 0.05;
        let a = q.admit_decided(ect.clone(), Some(Cause::Random), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Marked(Cause::Random));
        assert!(drops.is_empty());
        // RFC 8033 §5.1 marks while the probability is at or below the threshold
        // (Linux sch_pie: prob <= MAX_PROB / 10): exactly 10 % still marks ...
        q.vars.drop_prob = 0.1;
        let a = q.admit_decided(ect.clone(), Some(Cause::Random), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Marked(Cause::Random));
        assert!(drops.is_empty());
        // ... and above it the packet is dropped
        q.vars.drop_prob = 0.100_001;
        let a = q.admit_decided(ect, Some(Cause::Random), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Dropped(Cause::Random));
        // a non-ECT packet is always dropped
        q.vars.drop_prob = 0.05;
        let a = q.admit_decided(pkt(5, 1500), Some(Cause::Random), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Dropped(Cause::Random));
    }

    #[test]
    fn derandomized_marks_reset_the_accumulated_probability_as_drops_do() {
        // RFC 8033 §5.4: accu_prob_ restarts from 0 after each congestion signal. With
        // ECN (§5.1) a mark is that signal in place of a drop, so marks restart it
        // too; otherwise it only grows, passes 8.5 and every packet is marked. At
        // drop_prob 0.02 a signal needs at least 0.85 / 0.02 = 43 packets of
        // accumulation, then a coin of probability 0.02 per packet (about 50 more):
        // over 20000 ECT packets about 20000 / 93 = 215 marks, within 2x of the
        // 400 that plain random marking at 0.02 gives, never far above it.
        let mut q = pie(PieParams { ecn: true, derandomize: true, ..params_timestamp() });
        fill(&mut q, 10, Time::ZERO);
        q.vars.burst_allowance = Duration::ZERO;
        q.vars.qdelay_old = Duration::from_millis(100);
        q.vars.drop_prob = 0.02;
        let mut r = rng(3);
        let mut drops = Vec::new();
        let ect = TestPkt { id: 7, size: 1500, flow: 1, ecn: crate::Ecn::Ect0 };
        let mut marks = 0;
        for _ in 0..20_000 {
            let mut c = ctx(Time::ZERO, &mut r);
            let d = q.decide(1500, &mut c);
            if let Admit::Marked(_) = q.admit_decided(ect.clone(), d, &mut c, &mut drops) {
                marks += 1;
            }
            q.fifo.pop();
            assert!(q.vars.accu_prob < 8.5, "accumulation ran away: {}", q.vars.accu_prob);
        }
        assert!(drops.is_empty());
        assert!((150..=300).contains(&marks), "{marks} marks");
    }

    #[test]
    fn timer_runs_every_tupdate() {
        let mut q = pie(PieParams { tupdate: Duration::from_millis(30), ..PieParams::default() });
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(30)));
        let mut r = rng(1);
        q.on_timer(&mut ctx(Time::from_millis(30), &mut r));
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(60)));
    }
}
