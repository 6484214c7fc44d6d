//! RED: Random Early Detection.
//!
//! Source: Floyd & Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM Transactions on Networking 1(4), 1993 (FJ93 below): the
//! detailed algorithm of its Fig. 2 (the average queue with the idle-time
//! correction, the two thresholds, `max_p`, the count-based spacing
//! `pa = pb / (1 - count * pb)`), its parameters (`w_q = 0.002`, `max_p = 1/50`,
//! `min_th = 5`, `max_th = 15` packets, as in its simulations), and its byte mode
//! (`pb <- pb * PacketSize / MaximumPacketSize`). Gentle mode: Floyd,
//! "Recommendation on using the gentle_ variant of RED" (2000): between `max_th`
//! and `2 max_th` the probability rises linearly from `max_p` to 1. Structure
//! (params, vars, a core of plain functions) after Linux's `include/net/red.h`;
//! no code is taken from it.
//!
//! The pieces are public because Adaptive RED ([`crate::ared`]) and RED+Tail
//! ([`crate::red_tail`]) are built from them: [`RedCore`] is the algorithm over a
//! queue length it is told, [`RedQueue`] the FIFO with ECN handling and the
//! CE-aware measure.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit, Queued};
use crate::time::Time;
use crate::units::{Bytes, QueueLimit, Rate};
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Ecn, Probe, QPacket};

/// RED's parameters. Defaults are FJ93's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedParams {
    /// min_th (FJ93 simulations: 5 packets). In packets ("5pkts") or bytes ("20KB");
    /// the unit chooses whether the queue is measured in packets or in bytes.
    pub min_th: QueueLimit,
    /// max_th (FJ93 simulations: 15 packets), in the same unit as `min_th`.
    pub max_th: QueueLimit,
    /// max_p, the probability at max_th (FJ93 simulations: 1/50).
    pub max_p: f64,
    /// w_q, the weight of the EWMA of the queue length (FJ93: 0.002).
    pub w_q: f64,
    /// Gentle mode (Floyd 2000): probability rising from max_p to 1 between max_th
    /// and 2 max_th instead of jumping to 1 at max_th. FJ93 has no gentle mode: off.
    pub gentle: bool,
    /// Byte mode (FJ93): scale the probability by packet size / `mean_pkt_size`.
    pub byte_mode: bool,
    /// The typical (maximum) packet size: the idle-time correction counts idle time
    /// in transmission times of such a packet, and byte mode divides by it (1500 B,
    /// an Ethernet MTU; ns-2's `mean_pktsize_` plays this role).
    pub mean_pkt_size: Bytes,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168 §5).
    pub ecn: bool,
    /// With `ecn`, still drop ECN-capable packets when the average is past the
    /// random region (forced drops), as ns-2's RED does and Linux's `harddrop`
    /// flag asks; off: mark them (Linux's default).
    pub ecn_harddrop: bool,
    /// Leave CE-marked packets out of the queue length RED averages (Khademi, Ros &
    /// Welzl, IETF 88: "exclude CE-marked packets from queue size").
    pub ignore_ce_in_measure: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th: QueueLimit::Packets(5),
            max_th: QueueLimit::Packets(15),
            max_p: 0.02,
            w_q: 0.002,
            gentle: false,
            byte_mode: false,
            mean_pkt_size: Bytes(1500),
            ecn: false,
            ecn_harddrop: false,
            ignore_ce_in_measure: false,
        }
    }
}

impl RedParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("min_th", "minimum threshold, packets or bytes (FJ93 simulations: 5 packets)"),
        ("max_th", "maximum threshold, same unit (FJ93 simulations: 15 packets)"),
        ("max_p", "drop probability at max_th (FJ93 simulations: 1/50)"),
        ("w_q", "EWMA weight of the average queue (FJ93: 0.002)"),
        ("gentle", "probability max_p..1 between max_th and 2 max_th (Floyd 2000); off in FJ93"),
        ("byte_mode", "scale the probability by size / mean_pkt_size (FJ93 byte mode)"),
        ("mean_pkt_size", "typical packet: idle-time correction and byte mode (1500 B)"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 3168 §5)"),
        ("ecn_harddrop", "drop ECN-capable packets too above the random region (ns-2; Linux harddrop)"),
        ("ignore_ce_in_measure", "leave CE-marked packets out of the queue length (Khademi, Ros & Welzl, IETF 88)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        let (min, min_b) = threshold("min_th", self.min_th)?;
        let (max, max_b) = threshold("max_th", self.max_th)?;
        if min_b != max_b {
            return Err(format!("max_th: must be in the same unit as min_th ({} vs {})", self.max_th, self.min_th));
        }
        if min >= max {
            return Err(format!("max_th: must be greater than min_th ({} <= {})", self.max_th, self.min_th));
        }
        check_prob("max_p", self.max_p)?;
        check_weight("w_q", self.w_q)?;
        if self.mean_pkt_size.0 == 0 {
            return Err("mean_pkt_size: must be greater than zero".into());
        }
        Ok(())
    }

    pub(crate) fn config(&self) -> RedConfig {
        let (min_th, bytes) = threshold("min_th", self.min_th).expect("validated");
        let (max_th, _) = threshold("max_th", self.max_th).expect("validated");
        RedConfig {
            min_th,
            max_th,
            bytes,
            max_p: self.max_p,
            w_q: self.w_q,
            gentle: self.gentle,
            byte_mode: self.byte_mode,
            pkt_size: self.mean_pkt_size.0,
        }
    }

    pub(crate) fn ecn_policy(&self) -> EcnPolicy {
        EcnPolicy { ecn: self.ecn, harddrop: self.ecn_harddrop, ignore_ce_in_measure: self.ignore_ce_in_measure }
    }
}

/// A threshold as RED uses it: its value and whether it counts bytes.
pub(crate) fn threshold(field: &str, q: QueueLimit) -> Result<(f64, bool), String> {
    match q {
        QueueLimit::Packets(n) => Ok((n as f64, false)),
        QueueLimit::Bytes(b) => Ok((b as f64, true)),
        QueueLimit::Bdp(_) => Err(format!("{field}: give a threshold in packets or bytes (\"5pkts\", \"20KB\"), not \"{q}\"")),
    }
}

pub(crate) fn check_prob(field: &str, p: f64) -> Result<(), String> {
    if p.is_finite() && p > 0.0 && p <= 1.0 { Ok(()) } else { Err(format!("{field}: must be in (0, 1], got {p}")) }
}

pub(crate) fn check_weight(field: &str, w: f64) -> Result<(), String> {
    if w.is_finite() && w > 0.0 && w <= 1.0 { Ok(()) } else { Err(format!("{field}: must be in (0, 1], got {w}")) }
}

/// RED's constants in effect: from [`RedParams`], or computed by Adaptive RED.
#[derive(Clone, Debug, PartialEq)]
pub struct RedConfig {
    /// Thresholds, in packets or (with `bytes`) in bytes.
    pub min_th: f64,
    pub max_th: f64,
    /// The queue is measured in bytes.
    pub bytes: bool,
    pub max_p: f64,
    pub w_q: f64,
    pub gentle: bool,
    pub byte_mode: bool,
    /// The typical packet, in bytes.
    pub pkt_size: u64,
}

/// RED's state variables (FJ93 names in comments).
#[derive(Clone, Debug, PartialEq)]
pub struct RedVars {
    /// avg, the average queue (packets or bytes).
    pub avg: f64,
    /// count, packets since the last marked packet (-1: below min_th).
    pub count: i64,
    /// q_time, the start of the current idle period (the queue is empty).
    pub idle_since: Option<Time>,
    /// p_b of the last arrival, before the count-based spacing.
    pub pb: f64,
}

impl Default for RedVars {
    fn default() -> Self {
        // FJ93 Fig. 2 initialization: avg <- 0, count <- -1; the queue starts empty.
        RedVars { avg: 0.0, count: -1, idle_since: Some(Time::ZERO), pb: 0.0 }
    }
}

/// The RED algorithm over a queue length it is told.
#[derive(Clone, Debug)]
pub struct RedCore {
    pub cfg: RedConfig,
    pub vars: RedVars,
}

impl RedCore {
    pub fn new(cfg: RedConfig) -> Self {
        RedCore { cfg, vars: RedVars::default() }
    }

    /// FJ93 Fig. 2, "calculate the new average queue size avg" on an arrival that
    /// finds `q` (packets or bytes, as configured) in the queue.
    pub fn on_arrival(&mut self, q: f64, now: Time, link_rate: Rate) {
        let w = self.cfg.w_q;
        match self.vars.idle_since.take() {
            // "if the queue is nonempty: avg <- (1 - w_q) avg + w_q q"
            None => self.vars.avg = (1.0 - w) * self.vars.avg + w * q,
            // "else m <- f(time - q_time); avg <- (1 - w_q)^m avg": m is the number
            // of typical packets the link could have sent while the queue was idle.
            Some(t) => {
                let idle = now.saturating_since(t).as_nanos() as f64;
                let s = link_rate.tx_time(self.cfg.pkt_size).as_nanos().max(1) as f64;
                self.vars.avg *= libm::pow(1.0 - w, idle / s);
            }
        }
    }

    /// The average an arrival at `now` would start from: the current one while the
    /// queue is busy, decayed by the idle time otherwise (FJ93's idle-time
    /// correction), without changing the state (Linux red_calc_qavg_from_idle_time).
    pub fn avg_at(&self, now: Time, link_rate: Rate) -> f64 {
        match self.vars.idle_since {
            None => self.vars.avg,
            Some(t) => {
                let idle = now.saturating_since(t).as_nanos() as f64;
                let s = link_rate.tx_time(self.cfg.pkt_size).as_nanos().max(1) as f64;
                self.vars.avg * libm::pow(1.0 - self.cfg.w_q, idle / s)
            }
        }
    }

    /// FJ93 Fig. 2, "when queue becomes empty: q_time <- time".
    pub fn on_empty(&mut self, now: Time) {
        self.vars.idle_since = Some(now);
    }

    /// The marking probability p_b at the current average (before byte mode and the
    /// count-based spacing), and whether the average is past the random region.
    pub fn pb(&self) -> (f64, bool) {
        let c = &self.cfg;
        let avg = self.vars.avg;
        if avg < c.min_th {
            (0.0, false)
        } else if avg < c.max_th {
            // FJ93: p_b <- max_p (avg - min_th) / (max_th - min_th)
            (c.max_p * (avg - c.min_th) / (c.max_th - c.min_th), false)
        } else if c.gentle && avg < 2.0 * c.max_th {
            // Floyd 2000: from max_p at max_th to 1 at 2 max_th
            (c.max_p + (1.0 - c.max_p) * (avg - c.max_th) / c.max_th, false)
        } else {
            (1.0, true)
        }
    }

    /// FJ93 Fig. 2, the decision for an arriving packet of `size` bytes, after
    /// [`RedCore::on_arrival`]: `Some(Random)` if the coin marks it, `Some(Deterministic)`
    /// for the forced drop past the random region (a decision with probability one),
    /// `None` to let it in.
    pub fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause> {
        let (pb, forced) = self.pb();
        self.vars.pb = pb;
        if forced {
            // "else if max_th <= avg: mark the arriving packet; count <- 0"
            self.vars.count = 0;
            return Some(Cause::Deterministic);
        }
        if self.vars.avg < self.cfg.min_th {
            // "else count <- -1"
            self.vars.count = -1;
            return None;
        }
        // "if min_th <= avg < max_th: increment count"
        self.vars.count += 1;
        let mut pb = pb;
        if self.cfg.byte_mode {
            // FJ93 byte mode: p_b <- p_b * PacketSize / MaximumPacketSize
            pb = (pb * size as f64 / self.cfg.pkt_size as f64).min(1.0);
        }
        // "p_a <- p_b / (1 - count * p_b)": uniform spacing of marks; once
        // count * p_b reaches 1 the mark is certain.
        let denom = 1.0 - self.vars.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if pa > 0.0 && ctx.uniform() < pa {
            // "with probability p_a: mark the arriving packet; count <- 0"
            self.vars.count = 0;
            Some(Cause::Random)
        } else {
            None
        }
    }
}

/// What a RED-family queue asks of its controller: RED's core, or Adaptive RED's.
pub trait RedControl {
    /// The queue is measured in bytes (else in packets).
    fn measures_bytes(&self) -> bool;
    /// An arrival that finds `q` in the queue: update the average.
    fn on_arrival(&mut self, q: f64, now: Time, rate: Rate);
    /// The decision for the arrival, after `on_arrival`.
    fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause>;
    /// The queue has become (or stays) empty at `now`.
    fn on_empty(&mut self, now: Time);
}

impl RedControl for RedCore {
    fn measures_bytes(&self) -> bool {
        self.cfg.bytes
    }
    fn on_arrival(&mut self, q: f64, now: Time, rate: Rate) {
        RedCore::on_arrival(self, q, now, rate)
    }
    fn decide(&mut self, size: u32, ctx: &mut Ctx<'_>) -> Option<Cause> {
        RedCore::decide(self, size, ctx)
    }
    fn on_empty(&mut self, now: Time) {
        RedCore::on_empty(self, now)
    }
}

/// How a RED queue treats ECN-capable packets and CE marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnPolicy {
    pub ecn: bool,
    pub harddrop: bool,
    pub ignore_ce_in_measure: bool,
}

/// The FIFO under a RED decision: applies the decision (mark or drop, RFC 3168 §5),
/// the buffer limit, and keeps the CE-marked backlog for `ignore_ce_in_measure`.
#[derive(Debug)]
pub struct RedQueue<P> {
    pub fifo: Fifo<P>,
    pub policy: EcnPolicy,
    ce: Backlog,
}

impl<P: QPacket> RedQueue<P> {
    pub fn new(policy: EcnPolicy) -> Self {
        RedQueue { fifo: Fifo::new(), policy, ce: Backlog::default() }
    }

    /// The queue length RED averages, in packets or bytes; without the CE-marked
    /// packets if so configured (Khademi, Ros & Welzl, IETF 88).
    pub fn measure(&self, bytes: bool) -> f64 {
        let b = self.fifo.backlog();
        let (pk, by) = if self.policy.ignore_ce_in_measure { (b.packets - self.ce.packets, b.bytes - self.ce.bytes) } else { (b.packets, b.bytes) };
        if bytes { by as f64 } else { pk as f64 }
    }

    /// Apply `decision` to `pkt`: a signal marks an ECN-capable packet (RFC 3168 §5:
    /// "only if the router would otherwise have dropped the packet") and drops any
    /// other; an admitted packet that does not fit (`overflow`) is dropped as such.
    pub fn admit(&mut self, mut pkt: P, decision: Option<Cause>, overflow: bool, now: Time, drops: &mut Vec<Dropped<P>>) -> Admit {
        let mut marked = None;
        if let Some(cause) = decision {
            let may_mark = self.policy.ecn && !(self.policy.harddrop && cause == Cause::Deterministic);
            if may_mark && pkt.ecn().is_ect() {
                marked = Some(cause);
            } else {
                drops.push(Dropped { pkt, cause, sojourn: None });
                return Admit::Dropped(cause);
            }
        }
        if overflow {
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        if marked.is_some() {
            pkt.set_ce();
        }
        self.push(pkt, now);
        marked.map_or(Admit::Queued, Admit::Marked)
    }

    fn push(&mut self, pkt: P, now: Time) {
        if pkt.ecn() == Ecn::Ce {
            self.ce.packets += 1;
            self.ce.bytes += pkt.size_bytes() as u64;
        }
        self.fifo.push(pkt, now);
    }

    pub fn pop(&mut self) -> Option<Queued<P>> {
        let q = self.fifo.pop()?;
        if q.pkt.ecn() == Ecn::Ce {
            self.ce.packets -= 1;
            self.ce.bytes -= q.pkt.size_bytes() as u64;
        }
        Some(q)
    }

    /// The RED enqueue path (FJ93 Fig. 2) with controller `ctl`: average, decide,
    /// apply the decision; `overflow` if the packet does not fit in the buffer. RED
    /// decides first and the buffer limit applies to what it admits (as ns-2's RED).
    pub fn enqueue<C: RedControl>(&mut self, ctl: &mut C, pkt: P, overflow: bool, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        ctl.on_arrival(self.measure(ctl.measures_bytes()), ctx.now, ctx.link_rate);
        let decision = ctl.decide(pkt.size_bytes(), ctx);
        let admit = self.admit(pkt, decision, overflow, ctx.now, drops);
        if self.fifo.is_empty() {
            // the arrival was refused: the idle period goes on (its decay is applied)
            ctl.on_empty(ctx.now);
        }
        admit
    }

    /// The head packet, telling `ctl` when the queue empties (FJ93: "when queue
    /// becomes empty: q_time <- time").
    pub fn dequeue<C: RedControl>(&mut self, ctl: &mut C, now: Time) -> Option<Departure<P>> {
        let q = self.pop()?;
        if self.fifo.is_empty() {
            ctl.on_empty(now);
        }
        Some(Departure { sojourn: now.saturating_since(q.enqueued_at), pkt: q.pkt, marked: None })
    }
}

/// RED over one FIFO.
#[derive(Debug)]
pub struct Red<P> {
    pub params: RedParams,
    pub core: RedCore,
    queue: RedQueue<P>,
    limit: Limit,
}

impl<P: QPacket> Red<P> {
    pub fn new(params: &RedParams, limit: Limit) -> Self {
        Red { params: params.clone(), core: RedCore::new(params.config()), queue: RedQueue::new(params.ecn_policy()), limit }
    }
}

impl<P: QPacket> Aqm<P> for Red<P> {
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

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.core.vars.pb.clamp(0.0, 1.0)), delay_estimate: None }
    }
}


impl crate::AqmParams for RedParams {
    const TITLE: &'static str = "Random Early Detection";
    const SOURCE: &'static str = "Floyd & Jacobson, IEEE/ACM Trans. Networking 1(4), 1993";
    const DOC: &'static [(&'static str, &'static str)] = RedParams::DOC;
    type Algo<P: QPacket> = Red<P>;
    fn check(&self) -> Result<(), String> {
        RedParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Red::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn core(min: f64, max: f64, max_p: f64) -> RedCore {
        RedCore::new(RedConfig { min_th: min, max_th: max, bytes: false, max_p, w_q: 0.002, gentle: false, byte_mode: false, pkt_size: 1500 })
    }

    #[test]
    fn average_is_the_ewma_of_the_queue_at_arrivals() {
        // w_q = 0.002, nonempty queue of 10: avg = 0.002*10 = 0.02, then
        // 0.998*0.02 + 0.002*10 = 0.03996.
        let mut c = core(5.0, 15.0, 0.02);
        c.vars.idle_since = None;
        c.on_arrival(10.0, Time::ZERO, Rate::from_mbps(10));
        assert!((c.vars.avg - 0.02).abs() < 1e-15);
        c.on_arrival(10.0, Time::ZERO, Rate::from_mbps(10));
        assert!((c.vars.avg - 0.03996).abs() < 1e-15);
    }

    #[test]
    fn idle_time_decays_the_average_by_the_packets_that_could_have_been_sent() {
        // 10 Mbps, 1500 B: s = 1.2 ms. Idle 120 ms: m = 100, avg <- 0.998^100 avg.
        let mut c = core(5.0, 15.0, 0.02);
        c.vars.avg = 8.0;
        c.vars.idle_since = Some(Time::from_millis(1000));
        c.on_arrival(0.0, Time::from_millis(1120), Rate::from_mbps(10));
        let want = 8.0 * 0.998f64.powi(100);
        assert!((c.vars.avg - want).abs() < 1e-12, "{} vs {want}", c.vars.avg);
        assert_eq!(c.vars.idle_since, None);
    }

    #[test]
    fn probability_is_linear_between_the_thresholds() {
        let mut c = core(5.0, 15.0, 0.02);
        for (avg, want) in [(4.99, 0.0), (5.0, 0.0), (10.0, 0.01), (12.5, 0.015)] {
            c.vars.avg = avg;
            assert!((c.pb().0 - want).abs() < 1e-15, "avg {avg}");
            assert!(!c.pb().1);
        }
        c.vars.avg = 15.0;
        assert_eq!(c.pb(), (1.0, true));
        // gentle: at 22.5 = 1.5 max_th, p = 0.02 + 0.98 * 7.5/15 = 0.51; forced at 30
        c.cfg.gentle = true;
        c.vars.avg = 22.5;
        assert!((c.pb().0 - 0.51).abs() < 1e-15);
        assert!(!c.pb().1);
        c.vars.avg = 30.0;
        assert_eq!(c.pb(), (1.0, true));
    }

    #[test]
    fn count_based_spacing_raises_the_probability_after_each_unmarked_packet() {
        // FJ93: p_a = p_b / (1 - count p_b). With p_b = 0.01 fixed (avg 10 between 5
        // and 15 with max_p 0.02), after k unmarked packets in the region count = k
        // on the next arrival, so p_a = 0.01 / (1 - 0.01 k). Check the decision
        // against a uniform draw from an identical stream.
        let mut c = core(5.0, 15.0, 0.02);
        c.vars.avg = 10.0;
        c.cfg.w_q = 1e-300; // keep avg fixed
        let mut r = rng(7);
        let mut shadow = rng(7);
        let mut expected_count = -1i64;
        for _ in 0..5000 {
            c.on_arrival(10.0, Time::ZERO, Rate::from_mbps(10));
            let d = c.decide(1500, &mut ctx(Time::ZERO, &mut r));
            expected_count += 1;
            let pa = if expected_count as f64 * 0.01 >= 1.0 { 1.0 } else { 0.01 / (1.0 - 0.01 * expected_count as f64) };
            let u = ctx(Time::ZERO, &mut shadow).uniform();
            let want = u < pa;
            assert_eq!(d.is_some(), want, "count {expected_count}, p_a {pa}");
            if want {
                assert_eq!(d, Some(Cause::Random));
                expected_count = 0;
                assert_eq!(c.vars.count, 0);
            }
        }
        // the spacing caps the gap: count can never exceed 1/p_b = 100
        let mut c = core(5.0, 15.0, 0.02);
        c.vars.avg = 10.0;
        c.vars.count = 99; // next arrival makes count 100: p_a = 0.01/(1-1) -> certain
        let mut r = rng(1);
        assert_eq!(c.decide(1500, &mut ctx(Time::ZERO, &mut r)), Some(Cause::Random));
    }

    #[test]
    fn marks_are_uniformly_spaced_about_one_in_one_over_twice_pb() {
        // With the count-based spacing the gap between marks is uniform on
        // [1, 1/p_b]: mean about (1/p_b + 1)/2 = 50.5 packets at p_b = 0.01 (FJ93).
        let mut c = core(5.0, 15.0, 0.02);
        c.vars.avg = 10.0;
        c.cfg.w_q = 1e-300;
        let mut r = rng(3);
        let n = 200_000;
        let mut marks = 0;
        for _ in 0..n {
            if c.decide(1500, &mut ctx(Time::ZERO, &mut r)).is_some() {
                marks += 1;
            }
        }
        let gap = n as f64 / marks as f64;
        assert!((gap - 50.5).abs() < 1.5, "{gap}");
    }

    #[test]
    fn below_min_th_resets_count_and_above_max_th_forces() {
        let mut c = core(5.0, 15.0, 0.02);
        let mut r = rng(1);
        c.vars.avg = 3.0;
        c.vars.count = 40;
        assert_eq!(c.decide(1500, &mut ctx(Time::ZERO, &mut r)), None);
        assert_eq!(c.vars.count, -1);
        c.vars.avg = 16.0;
        assert_eq!(c.decide(1500, &mut ctx(Time::ZERO, &mut r)), Some(Cause::Deterministic));
        assert_eq!(c.vars.count, 0);
    }

    #[test]
    fn count_starts_at_minus_one_so_the_first_arrival_in_the_region_has_p_a_equal_p_b() {
        // FJ93 Fig. 2: "Initialization: count <- -1"; the first arrival that finds
        // avg between the thresholds increments it to 0, so p_a = p_b / (1 - 0 p_b)
        // = p_b exactly. Had count started at 0, that arrival would see count 1 and
        // p_a = p_b / (1 - p_b). At p_b = 0.5 (avg 10 between 5 and 15, max_p 1):
        // about 50 % of fresh queues mark their first arrival, not 100 %.
        let mut marks = 0;
        let mut r = rng(11);
        for _ in 0..10_000 {
            let mut c = core(5.0, 15.0, 1.0);
            assert_eq!(c.vars.count, -1);
            c.vars.avg = 10.0;
            if c.decide(1500, &mut ctx(Time::ZERO, &mut r)).is_some() {
                marks += 1;
            } else {
                assert_eq!(c.vars.count, 0);
            }
        }
        assert!((4_800..5_200).contains(&marks), "{marks}");
    }

    #[test]
    fn byte_mode_scales_by_packet_size() {
        // p_b = 0.01 at avg 10; a 150 B packet in byte mode has p_b = 0.001, and with
        // count 0 p_a = 0.001: about 100 marks in 100 000 fresh tries.
        let mut c = core(5.0, 15.0, 0.02);
        c.cfg.byte_mode = true;
        c.vars.avg = 10.0;
        let mut r = rng(5);
        let mut marks = 0;
        for _ in 0..100_000 {
            c.vars.count = -1;
            if c.decide(150, &mut ctx(Time::ZERO, &mut r)).is_some() {
                marks += 1;
            }
        }
        assert!((70..130).contains(&marks), "{marks}");
    }

    fn ect(id: u64) -> TestPkt {
        TestPkt { id, size: 1500, flow: 1, ecn: Ecn::Ect0 }
    }

    #[test]
    fn ecn_marks_instead_of_dropping_and_harddrop_drops_forced() {
        let p = RedParams { ecn: true, ..RedParams::default() };
        let mut q: Red<TestPkt> = Red::new(&p, Limit::packets(100));
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.core.vars.avg = 20.0; // past max_th: forced
        q.core.vars.idle_since = None;
        q.core.cfg.w_q = 1e-300;
        let a = q.enqueue(ect(1), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Marked(Cause::Deterministic));
        let a = q.enqueue(pkt(2, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Dropped(Cause::Deterministic));
        let p = RedParams { ecn: true, ecn_harddrop: true, ..RedParams::default() };
        let mut q: Red<TestPkt> = Red::new(&p, Limit::packets(100));
        q.core.vars.avg = 20.0;
        q.core.vars.idle_since = None;
        q.core.cfg.w_q = 1e-300;
        let a = q.enqueue(ect(3), &mut ctx(Time::ZERO, &mut r), &mut drops);
        assert_eq!(a, Admit::Dropped(Cause::Deterministic));
    }

    #[test]
    fn ce_marked_packets_can_be_left_out_of_the_measure() {
        let p = RedParams { ignore_ce_in_measure: true, ..RedParams::default() };
        let mut q: RedQueue<TestPkt> = RedQueue::new(p.ecn_policy());
        let mut drops = Vec::new();
        q.admit(pkt(1, 1500), None, false, Time::ZERO, &mut drops);
        q.admit(ect(2), Some(Cause::Random), false, Time::ZERO, &mut drops); // not allowed to mark: dropped
        assert_eq!(drops.len(), 1);
        let mut q: RedQueue<TestPkt> = RedQueue::new(EcnPolicy { ecn: true, ..p.ecn_policy() });
        q.admit(pkt(1, 1000), None, false, Time::ZERO, &mut drops);
        q.admit(ect(2), Some(Cause::Random), false, Time::ZERO, &mut drops);
        assert_eq!(q.fifo.len(), 2);
        assert_eq!(q.measure(false), 1.0);
        assert_eq!(q.measure(true), 1000.0);
        q.pop();
        q.pop();
        assert_eq!(q.measure(false), 0.0);
        q.policy.ignore_ce_in_measure = false;
        q.admit(ect(3), Some(Cause::Random), false, Time::ZERO, &mut drops);
        assert_eq!(q.measure(false), 1.0);
    }

    #[test]
    fn validation_names_the_field() {
        let e = RedParams { max_th: QueueLimit::Bytes(30_000), ..RedParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("max_th:"), "{e}");
        let e = RedParams { max_th: QueueLimit::Packets(5), ..RedParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("max_th:"), "{e}");
        let e = RedParams { min_th: QueueLimit::Bdp(1.0), ..RedParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("min_th:"), "{e}");
        let e = RedParams { max_p: 0.0, ..RedParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("max_p:"), "{e}");
    }
}
