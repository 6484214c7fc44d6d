//! DualPI2: the DualQ Coupled AQM of L4S.
//!
//! Sources: De Schepper, Briscoe & White, RFC 9332, "Dual-Queue Coupled Active Queue
//! Management (AQM) for Low Latency, Low Loss, and Scalable Throughput (L4S)" (2023):
//! the framework (§2), the PI2 example (Appendix A: `dualpi2_enqueue`,
//! `dualpi2_dequeue`, `dualpi2_update`) and the parameter derivation from the RTTs
//! (Appendix A.1, lines 9-14); De Schepper, Bondarenko, Tsang & Briscoe, "PI2: A
//! Linearized AQM for both Classic and Scalable TCP" (CoNEXT 2016); and Linux's
//! `sch_dualpi2` (mainline since v6.18) with `tc-dualpi2(8)` for the details the RFC
//! leaves open and for the defaults. No code is taken from Linux.
//!
//! Two FIFOs share one buffer. Packets carrying the L4S identifier (RFC 9331 §2:
//! ECT(1) or CE; with `any_ect` every ECN-capable packet) go to the L queue, the rest
//! to the C (classic) queue. Every `tupdate` a PI controller moves a base probability
//! p' by `alpha * (qdelay - target) + beta * (qdelay - qdelay_old)`, where qdelay is
//! the larger of the two queues' head sojourn times (Linux; RFC 9332 Appendix A.1
//! uses the C queue's). A classic packet is dropped (or, if ECT(0), marked) with
//! probability p_C = p'^2 (two independent draws, as Linux), an L packet is marked
//! with the coupled probability p_CL = k * p' (the `coupling_factor`); at dequeue an
//! L packet whose sojourn exceeds `step_thresh` (1 ms) is marked as well (the native
//! step AQM, RFC 9332 §2.5.1). When p_CL would exceed 1 the queue is overloaded
//! (RFC 9332 §4.2.2): L packets are all marked and, with `drop_on_overload`, dropped
//! with p_C like classic ones. No packet is marked or dropped by the AQM while both
//! queues together hold less than two MTUs. A weighted round robin (Linux's
//! `classic_protection`, 10 % for the C queue) serves the L queue first while
//! protecting the C queue from starvation (RFC 9332 §4.2.2).
//!
//! Counts by cause: coupled marks and classic and overload drops are `random`, step
//! marks and step drops `deterministic`, a full buffer `overflow`. The per-queue
//! figures (coupled vs step marks, classic drops, overload drops, each queue's
//! sojourn) are the AQM's [`Counter`]s.

use core::fmt;
use core::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::queue::{Backlog, Fifo, Limit};
use crate::time::{Duration, Time};
use crate::units::{Bytes, UnitError};
use crate::{Admit, Aqm, Cause, Counter, Ctx, Departure, Dropped, Ecn, Probe, QPacket, SojournTally, Transport};

/// The step threshold of the L queue: a sojourn time, or a number of packets in the L
/// queue (`tc-dualpi2(8)`: `step_thresh TIME|PACKETS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepThresh {
    Time(Duration),
    Packets(u32),
}

impl FromStr for StepThresh {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let t = s.trim();
        let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == ' ');
        let unit = t[digits.len()..].trim();
        if matches!(unit, "p" | "pkt" | "pkts" | "packet" | "packets") {
            return match digits.trim().parse::<u32>() {
                Ok(n) => Ok(StepThresh::Packets(n)),
                Err(_) => Err(UnitError(format!("invalid step threshold \"{s}\": a packet count must be a whole number"))),
            };
        }
        match t.parse::<Duration>() {
            Ok(d) => Ok(StepThresh::Time(d)),
            Err(_) => Err(UnitError(format!("invalid step threshold \"{s}\": expected a time such as \"1ms\" or a packet count such as \"5pkts\""))),
        }
    }
}

impl fmt::Display for StepThresh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepThresh::Time(d) => fmt::Display::fmt(d, f),
            StepThresh::Packets(n) => write!(f, "{n}pkts"),
        }
    }
}

impl Serialize for StepThresh {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StepThresh {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StepThresh;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time such as \"1ms\" or a packet count such as \"5pkts\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepThresh, E> {
                v.parse().map_err(|e: UnitError| E::custom(e))
            }
        }
        d.deserialize_str(V)
    }
}

/// DualPI2's parameters. Defaults are `tc-dualpi2(8)`'s (Linux `sch_dualpi2`); the
/// buffer (`limit`, 10000 packets in Linux) is the link's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Params {
    /// PI2's target queueing delay (tc-dualpi2: 15 ms; RFC 9332 A.1: 15 ms).
    pub target: Duration,
    /// Interval between probability updates (tc-dualpi2: 16 ms; RFC 9332 A.1:
    /// min(target, max_rtt/3) = 15 ms).
    pub tupdate: Duration,
    /// Integral gain, Hz (tc-dualpi2: 0.16; RFC 9332 A.1: 0.1 * tupdate / max_rtt^2).
    pub alpha: f64,
    /// Proportional gain, Hz (tc-dualpi2: 3.2; RFC 9332 A.1: 0.3 / max_rtt).
    pub beta: f64,
    /// Derive target, tupdate, alpha and beta from the worst-case RTT (RFC 9332
    /// A.1; tc-dualpi2 `max_rtt`). Off by default.
    pub max_rtt: Option<Duration>,
    /// With `max_rtt`: the typical RTT, the target (tc-dualpi2: max_rtt / 6).
    pub typical_rtt: Option<Duration>,
    /// k, the coupling factor: p_CL = k * p' (RFC 9332 §2.1; tc-dualpi2: 2).
    pub coupling_factor: f64,
    /// The L queue's step threshold, a time or a packet count (tc-dualpi2: 1 ms).
    pub step_thresh: StepThresh,
    /// The step applies only to packets that found at least this many packets in the
    /// L queue (tc-dualpi2: 0).
    pub min_qlen_step: u32,
    /// On overload (k * p' > 1), drop L packets with p'^2 as classic ones instead of
    /// only marking them (tc-dualpi2 `drop_on_overload`, the default; `overflow`
    /// keeps p' <= 1/k and lets the buffer overflow).
    pub drop_on_overload: bool,
    /// Take the coupled and classic decisions at enqueue (tc-dualpi2 `drop_enqueue`)
    /// instead of at dequeue (`drop_dequeue`, the default).
    pub drop_enqueue: bool,
    /// Classify every ECN-capable packet (ECT(0) too) into the L queue (tc-dualpi2
    /// `any_ect`) instead of ECT(1) and CE only (`l4s_ect`, the default).
    pub any_ect: bool,
    /// The C queue's share of the round robin when both queues are backlogged, in
    /// percent (tc-dualpi2 `classic_protection`: 10).
    pub classic_protection: u8,
    /// The MTU: no AQM action while both queues hold less than two of these, and the
    /// unit of the round robin's initial credit (Linux `psched_mtu`; 1500 B).
    pub mtu: Bytes,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            max_rtt: None,
            typical_rtt: None,
            coupling_factor: 2.0,
            step_thresh: StepThresh::Time(Duration::from_millis(1)),
            min_qlen_step: 0,
            drop_on_overload: true,
            drop_enqueue: false,
            any_ect: false,
            classic_protection: 10,
            mtu: Bytes(1500),
        }
    }
}

impl DualPi2Params {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "PI2 target queueing delay (tc-dualpi2: 15 ms; RFC 9332 A.1)"),
        ("tupdate", "probability update interval (tc-dualpi2: 16 ms)"),
        ("alpha", "integral gain, Hz (tc-dualpi2: 0.16)"),
        ("beta", "proportional gain, Hz (tc-dualpi2: 3.2)"),
        ("max_rtt", "derive target/tupdate/alpha/beta from the worst-case RTT (RFC 9332 A.1; tc-dualpi2 max_rtt; off)"),
        ("typical_rtt", "with max_rtt: the typical RTT, used as the target (tc-dualpi2: max_rtt/6)"),
        ("coupling_factor", "k: p_CL = k * p' (RFC 9332 §2.1; tc-dualpi2: 2)"),
        ("step_thresh", "L-queue step threshold, \"1ms\" or \"5pkts\" (tc-dualpi2: 1 ms)"),
        ("min_qlen_step", "the step applies only above this L-queue length in packets (tc-dualpi2: 0)"),
        ("drop_on_overload", "when k*p' > 1, drop L packets with p'^2 (tc-dualpi2 drop_on_overload: on; off = overflow)"),
        ("drop_enqueue", "coupled/classic decisions at enqueue instead of dequeue (tc-dualpi2: drop_dequeue)"),
        ("any_ect", "classify ECT(0) into the L queue too (tc-dualpi2 any_ect; default l4s_ect: ECT(1) and CE)"),
        ("classic_protection", "C-queue weight of the round robin, percent (tc-dualpi2: 10)"),
        ("mtu", "no AQM action below two MTUs of backlog; WRR credit unit (Linux psched_mtu; 1500 B)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        if !(self.coupling_factor.is_finite() && self.coupling_factor > 0.0) {
            return Err(format!("coupling_factor: must be greater than zero, got {}", self.coupling_factor));
        }
        if self.tupdate.is_zero() {
            return Err("tupdate: must be greater than zero".into());
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(format!("alpha: must be a non-negative number, got {}", self.alpha));
        }
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(format!("beta: must be a non-negative number, got {}", self.beta));
        }
        if self.classic_protection > 100 {
            return Err(format!("classic_protection: a percentage in [0, 100], got {}", self.classic_protection));
        }
        if self.mtu.0 == 0 {
            return Err("mtu: must be greater than zero".into());
        }
        if let (Some(max), Some(typ)) = (self.max_rtt, self.typical_rtt) {
            if typ > max {
                return Err(format!("typical_rtt: must be at most max_rtt ({max}), got {typ}"));
            }
        }
        if self.max_rtt.is_some_and(|d| d.is_zero()) {
            return Err("max_rtt: must be greater than zero".into());
        }
        if self.typical_rtt.is_some_and(|d| d.is_zero()) {
            return Err("typical_rtt: must be greater than zero".into());
        }
        Ok(())
    }

    /// RFC 9332 Appendix A.1 (lines 9-14), as `tc-dualpi2` applies it with `max_rtt`
    /// or `typical_rtt`: target = typical RTT (default max_rtt / 6), tupdate =
    /// min(typical, max_rtt / 3), alpha = 0.1 * tupdate / max_rtt^2, beta = 0.3 /
    /// max_rtt. Given values of the four are replaced, as tc does.
    pub fn autotune(&mut self) {
        let (max, typ) = match (self.max_rtt, self.typical_rtt) {
            (None, None) => return,
            (Some(m), None) => (m, Duration::from_nanos((m.as_nanos() / 6).max(1_000))),
            (None, Some(t)) => (t.checked_mul(6).unwrap_or(Duration::MAX), t),
            (Some(m), Some(t)) => (m, t),
        };
        if max.is_zero() || typ.is_zero() {
            return; // validate() names the field
        }
        self.max_rtt = Some(max);
        self.typical_rtt = Some(typ);
        self.target = typ;
        self.tupdate = typ.min(max.div_u64(3)).max(Duration::from_micros(1));
        let m = max.as_secs_f64();
        self.alpha = 0.1 * self.tupdate.as_secs_f64() / (m * m);
        self.beta = 0.3 / m;
    }
}

/// A packet in the L queue, with whether the step applies to it (decided at enqueue).
#[derive(Debug)]
struct LPkt<P> {
    pkt: P,
    apply_step: bool,
}

impl<P: QPacket> QPacket for LPkt<P> {
    fn size_bytes(&self) -> u32 {
        self.pkt.size_bytes()
    }
    fn flow_key(&self) -> u64 {
        self.pkt.flow_key()
    }
    fn transport(&self) -> Transport {
        self.pkt.transport()
    }
    fn ecn(&self) -> Ecn {
        self.pkt.ecn()
    }
    fn set_ce(&mut self) {
        self.pkt.set_ce()
    }
}

/// What the coupled AQM decides for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    /// Marked CE: coupled (L) or classic (C).
    Mark,
    /// Dropped: a non-ECT packet signalled by p_C or p_CL.
    Drop,
    /// Dropped: an L packet on overload.
    OverloadDrop,
}

/// Counters of the L queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LCounters {
    pub enqueued: u64,
    pub coupled_marks: u64,
    pub coupled_drops: u64,
    pub step_marks: u64,
    pub step_drops: u64,
    pub overload_drops: u64,
    pub overflow_drops: u64,
    pub sojourn: SojournTally,
}

/// Counters of the C queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CCounters {
    pub enqueued: u64,
    pub marks: u64,
    pub drops: u64,
    pub overflow_drops: u64,
    pub sojourn: SojournTally,
}

/// DualPI2 over an L and a C FIFO sharing the link's buffer.
#[derive(Debug)]
pub struct DualPi2<P> {
    pub params: DualPi2Params,
    l: Fifo<LPkt<P>>,
    c: Fifo<P>,
    limit: Limit,
    /// p', the base probability (RFC 9332 §2.4).
    pub prob: f64,
    /// The queueing delay at the last update (PI2's qdelay_old).
    pub last_qdelay: Duration,
    pub last_update: Time,
    /// The round robin's credit: the L queue goes first while it is <= 0.
    pub credit: i64,
    credit_init: i64,
    wc: i64,
    wl: i64,
    pub lc: LCounters,
    pub cc: CCounters,
}

impl<P: QPacket> DualPi2<P> {
    pub fn new(params: &DualPi2Params, limit: Limit) -> Self {
        let mut params = params.clone();
        params.autotune();
        let wc = params.classic_protection as i64;
        let wl = 100 - wc;
        // Linux dualpi2_calculate_c_protection: credit starts at MTU * (wc - wl), so
        // that the L queue goes first when wl > wc.
        let credit_init = params.mtu.0 as i64 * (wc - wl);
        DualPi2 {
            params,
            l: Fifo::new(),
            c: Fifo::new(),
            limit,
            prob: 0.0,
            last_qdelay: Duration::ZERO,
            last_update: Time::ZERO,
            credit: credit_init,
            credit_init,
            wc,
            wl,
            lc: LCounters::default(),
            cc: CCounters::default(),
        }
    }

    /// Does a packet with this ECN field go to the L queue? (RFC 9331 §2, RFC 9332
    /// §2.5.1.1; Linux's `ecn_mask`: 01 for l4s_ect, 11 for any_ect.)
    pub fn is_l4s(&self, ecn: Ecn) -> bool {
        let mask = if self.params.any_ect { 0b11 } else { 0b01 };
        ecn.bits() & mask != 0
    }

    /// The classic drop/mark probability p_C = p'^2.
    pub fn p_classic(&self) -> f64 {
        self.prob * self.prob
    }

    /// The coupled L4S marking probability p_CL = k * p' (capped at 1).
    pub fn p_coupled(&self) -> f64 {
        (self.params.coupling_factor * self.prob).min(1.0)
    }

    fn total(&self) -> Backlog {
        let (l, c) = (self.l.backlog(), self.c.backlog());
        Backlog { packets: l.packets + c.packets, bytes: l.bytes + c.bytes }
    }

    /// The larger of the two queues' head sojourn times (Linux `get_queue_delays`).
    fn qdelay(&self, now: Time) -> Duration {
        let l = self.l.head_sojourn(now).unwrap_or(Duration::ZERO);
        let c = self.c.head_sojourn(now).unwrap_or(Duration::ZERO);
        l.max(c)
    }

    /// RFC 9332 Appendix A `dualpi2_update()` (with Linux's max of both queues' delays
    /// and its cap at 1/k when overload is not dropped).
    pub fn update(&mut self, ctx: &mut Ctx<'_>) {
        let p = &self.params;
        let q = self.qdelay(ctx.now);
        let cur = q.as_secs_f64();
        let delta = p.alpha * (cur - p.target.as_secs_f64()) + p.beta * (cur - self.last_qdelay.as_secs_f64());
        self.last_qdelay = q;
        let mut prob = (self.prob + delta).clamp(0.0, 1.0);
        if !p.drop_on_overload {
            // keep p_CL <= 1: window fairness instead of drops when overloaded
            prob = prob.min(1.0 / p.coupling_factor);
        }
        self.prob = prob;
        self.last_update = ctx.now;
    }

    /// One draw: true with probability `p`.
    #[inline]
    fn roll(ctx: &mut Ctx<'_>, p: f64) -> bool {
        ctx.uniform() < p
    }

    /// The coupled AQM's decision for a packet of the L or the C queue, with `backlog`
    /// bytes in both queues (Linux `must_drop`): nothing below two MTUs; C: p'^2 by two
    /// draws; L: k * p', or on overload a mark, and a drop with p'^2 when configured.
    fn must_drop(&self, in_l: bool, ecn: Ecn, backlog: u64, ctx: &mut Ctx<'_>) -> Verdict {
        if backlog < 2 * self.params.mtu.0 {
            return Verdict::Pass;
        }
        let prob = self.prob;
        let l_prob = prob * self.params.coupling_factor;
        let overload = self.params.drop_on_overload && l_prob > 1.0;
        if !in_l {
            if Self::roll(ctx, prob) && Self::roll(ctx, prob) {
                return if overload || ecn == Ecn::NotEct { Verdict::Drop } else { Verdict::Mark };
            }
            return Verdict::Pass;
        }
        if overload {
            if Self::roll(ctx, prob) && Self::roll(ctx, prob) {
                return Verdict::OverloadDrop;
            }
            return Verdict::Mark;
        }
        if Self::roll(ctx, l_prob) {
            return if ecn == Ecn::NotEct { Verdict::Drop } else { Verdict::Mark };
        }
        Verdict::Pass
    }

    fn count_verdict(&mut self, in_l: bool, v: Verdict) {
        match (in_l, v) {
            (_, Verdict::Pass) => {}
            (true, Verdict::Mark) => self.lc.coupled_marks += 1,
            (true, Verdict::Drop) => self.lc.coupled_drops += 1,
            (true, Verdict::OverloadDrop) => self.lc.overload_drops += 1,
            (false, Verdict::Mark) => self.cc.marks += 1,
            (false, Verdict::Drop | Verdict::OverloadDrop) => self.cc.drops += 1,
        }
    }
}

impl<P: QPacket> Aqm<P> for DualPi2<P> {
    fn enqueue(&mut self, mut pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let ecn = pkt.ecn();
        let in_l = self.is_l4s(ecn);
        let total = self.total();
        // RFC 9332 A `dualpi2_enqueue`: the shared buffer.
        if self.limit.overflows(total, pkt.size_bytes()) {
            if in_l {
                self.lc.overflow_drops += 1;
            } else {
                self.cc.overflow_drops += 1;
            }
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        let mut admit = Admit::Queued;
        if self.params.drop_enqueue {
            let v = self.must_drop(in_l, ecn, total.bytes, ctx);
            self.count_verdict(in_l, v);
            match v {
                Verdict::Pass => {}
                Verdict::Mark => {
                    pkt.set_ce();
                    admit = Admit::Marked(Cause::Random);
                }
                Verdict::Drop | Verdict::OverloadDrop => {
                    drops.push(Dropped { pkt, cause: Cause::Random, sojourn: None });
                    return Admit::Dropped(Cause::Random);
                }
            }
        }
        if in_l {
            // Linux `skb_apply_step`: decided against the L queue found at arrival.
            let apply_step = self.l.len() as u64 >= self.params.min_qlen_step as u64;
            self.lc.enqueued += 1;
            self.l.push(LPkt { pkt, apply_step }, ctx.now);
        } else {
            self.cc.enqueued += 1;
            self.c.push(pkt, ctx.now);
        }
        admit
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let now = ctx.now;
        loop {
            // The weighted round robin (Linux `dequeue_packet`): the L queue while the
            // credit is not positive or the C queue is empty; a dequeue from one while
            // the other waits moves the credit by the size times the other's weight.
            let (l_len, c_len) = (self.l.len(), self.c.len());
            let (in_l, pkt, enqueued_at, apply_step, credit_change) = if l_len > 0 && (c_len == 0 || self.credit <= 0) {
                let q = self.l.pop().expect("L queue not empty");
                let size = q.pkt.size_bytes() as i64;
                let change = if c_len > 0 { self.wc * size } else { 0 };
                (true, q.pkt.pkt, q.enqueued_at, q.pkt.apply_step, change)
            } else if c_len > 0 {
                let q = self.c.pop().expect("C queue not empty");
                let size = q.pkt.size_bytes() as i64;
                let change = if l_len > 0 { -self.wl * size } else { 0 };
                (false, q.pkt, q.enqueued_at, false, change)
            } else {
                self.credit = self.credit_init;
                return None;
            };
            let mut pkt = pkt;
            let sojourn = now.saturating_since(enqueued_at);
            let mut marked = None;
            if !self.params.drop_enqueue {
                let backlog = self.total().bytes;
                let v = self.must_drop(in_l, pkt.ecn(), backlog, ctx);
                self.count_verdict(in_l, v);
                match v {
                    Verdict::Pass => {}
                    Verdict::Mark => {
                        pkt.set_ce();
                        marked = Some(Cause::Random);
                    }
                    Verdict::Drop | Verdict::OverloadDrop => {
                        drops.push(Dropped { pkt, cause: Cause::Random, sojourn: Some(sojourn) });
                        continue;
                    }
                }
            }
            if in_l {
                // The native L4S AQM: a step at `step_thresh` (Linux `do_step_aqm`).
                let over = match self.params.step_thresh {
                    StepThresh::Time(t) => sojourn > t,
                    StepThresh::Packets(n) => self.l.len() as u64 > n as u64,
                };
                if apply_step && over {
                    if pkt.ecn() == Ecn::NotEct {
                        self.lc.step_drops += 1;
                        drops.push(Dropped { pkt, cause: Cause::Deterministic, sojourn: Some(sojourn) });
                        continue;
                    }
                    pkt.set_ce();
                    self.lc.step_marks += 1;
                    marked = Some(Cause::Deterministic);
                }
                self.lc.sojourn.add(sojourn);
            } else {
                self.cc.sojourn.add(sojourn);
            }
            self.credit += credit_change;
            return Some(Departure { pkt, sojourn, marked });
        }
    }

    fn backlog(&self) -> Backlog {
        self.total()
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.last_update + self.params.tupdate)
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.update(ctx);
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.p_classic()), delay_estimate: Some(self.last_qdelay) }
    }

    fn counters(&self, out: &mut Vec<Counter>) {
        out.push(Counter::fraction("", "prob_base", self.prob));
        out.push(Counter::fraction("", "prob_classic", self.p_classic()));
        out.push(Counter::fraction("", "prob_coupled", self.p_coupled()));
        let l = &self.lc;
        out.push(Counter::count("l", "backlog", self.l.len() as u64));
        out.push(Counter::count("l", "enqueued", l.enqueued));
        out.push(Counter::count("l", "coupled_marks", l.coupled_marks));
        out.push(Counter::count("l", "step_marks", l.step_marks));
        out.push(Counter::count("l", "coupled_drops", l.coupled_drops));
        out.push(Counter::count("l", "step_drops", l.step_drops));
        out.push(Counter::count("l", "overload_drops", l.overload_drops));
        out.push(Counter::count("l", "overflow_drops", l.overflow_drops));
        l.sojourn.counters("l", out);
        let c = &self.cc;
        out.push(Counter::count("c", "backlog", self.c.len() as u64));
        out.push(Counter::count("c", "enqueued", c.enqueued));
        out.push(Counter::count("c", "marks", c.marks));
        out.push(Counter::count("c", "drops", c.drops));
        out.push(Counter::count("c", "overflow_drops", c.overflow_drops));
        c.sojourn.counters("c", out);
    }
}

impl crate::spec::AqmParams for DualPi2Params {
    const TITLE: &'static str = "DualQ Coupled PI2 (L4S): an L and a classic queue, p_C = p'^2, p_CL = k*p', a step in the L queue";
    const SOURCE: &'static str = "De Schepper, Briscoe & White, RFC 9332 (2023); Linux sch_dualpi2, tc-dualpi2(8)";
    const DOC: &'static [(&'static str, &'static str)] = DualPi2Params::DOC;
    type Algo<P: QPacket> = Box<DualPi2<P>>;
    fn check(&self) -> Result<(), String> {
        DualPi2Params::validate(self)
    }
    fn complete(&mut self) {
        self.autotune();
    }
    fn marks_ecn(&self) -> bool {
        true
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Box::new(DualPi2::new(self, limit))
    }
    fn built_bytes<P: QPacket>(&self) -> usize {
        std::mem::size_of::<DualPi2<P>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn p(id: u64, ecn: Ecn) -> TestPkt {
        TestPkt { id, size: 1500, flow: id, ecn }
    }

    fn dq(params: DualPi2Params) -> DualPi2<TestPkt> {
        DualPi2::new(&params, Limit::packets(10_000))
    }

    fn put(q: &mut DualPi2<TestPkt>, pkt: TestPkt, t: Time) -> Admit {
        let mut r = rng(7);
        q.enqueue(pkt, &mut ctx(t, &mut r), &mut Vec::new())
    }

    fn take(q: &mut DualPi2<TestPkt>, t: Time, r: &mut rand_xoshiro::Xoshiro256PlusPlus) -> (Option<Departure<TestPkt>>, Vec<Dropped<TestPkt>>) {
        let mut drops = Vec::new();
        let d = q.dequeue(&mut ctx(t, r), &mut drops);
        (d, drops)
    }

    #[test]
    fn classification_by_the_l4s_identifier() {
        // RFC 9331 §2 / RFC 9332 A: ECN field "modulo 2 == 1" (ECT(1), CE) -> L.
        let q = dq(DualPi2Params::default());
        assert!(q.is_l4s(Ecn::Ect1) && q.is_l4s(Ecn::Ce));
        assert!(!q.is_l4s(Ecn::Ect0) && !q.is_l4s(Ecn::NotEct));
        // any_ect: every ECN-capable packet.
        let q = dq(DualPi2Params { any_ect: true, ..DualPi2Params::default() });
        assert!(q.is_l4s(Ecn::Ect1) && q.is_l4s(Ecn::Ce) && q.is_l4s(Ecn::Ect0));
        assert!(!q.is_l4s(Ecn::NotEct));
    }

    #[test]
    fn pi2_update_sequence_by_hand() {
        // RFC 9332 A `dualpi2_update`: p' += alpha*(curq - target) + beta*(curq - prevq),
        // p_CL = k p', p_C = p'^2. alpha 0.16, beta 3.2, target 15 ms, k 2.
        // A classic packet enqueued at 0; updates at 25, 50 ms with it still at the head
        // (sojourn 25 and 50 ms), then with the head 10 ms old at 75 ms.
        //   1: 0.16*(0.025-0.015) + 3.2*(0.025-0)     = 0.0016 + 0.08   -> p' = 0.0816
        //   2: 0.16*(0.050-0.015) + 3.2*(0.050-0.025) = 0.0056 + 0.08   -> p' = 0.1672
        //   3: 0.16*(0.010-0.015) + 3.2*(0.010-0.050) = -0.0008 - 0.128 -> p' = 0.0384
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        put(&mut q, p(1, Ecn::NotEct), Time::ZERO);
        q.update(&mut ctx(Time::from_millis(25), &mut r));
        assert!((q.prob - 0.0816).abs() < 1e-12, "{}", q.prob);
        q.update(&mut ctx(Time::from_millis(50), &mut r));
        assert!((q.prob - 0.1672).abs() < 1e-12, "{}", q.prob);
        take(&mut q, Time::from_millis(50), &mut r);
        put(&mut q, p(2, Ecn::NotEct), Time::from_millis(65));
        q.update(&mut ctx(Time::from_millis(75), &mut r));
        assert!((q.prob - 0.0384).abs() < 1e-12, "{}", q.prob);
        assert!((q.p_classic() - 0.0384 * 0.0384).abs() < 1e-15);
        assert!((q.p_coupled() - 0.0768).abs() < 1e-15);
        assert_eq!(q.last_qdelay, Duration::from_millis(10));
        // an empty queue: qdelay 0: 0.16*(-0.015) + 3.2*(-0.010) = -0.0344 -> 0.004
        take(&mut q, Time::from_millis(75), &mut r);
        q.update(&mut ctx(Time::from_millis(91), &mut r));
        assert!((q.prob - 0.004).abs() < 1e-12, "{}", q.prob);
        // 0.16*(-0.015) + 3.2*(0 - 0) = -0.0024 -> 0.0016, then the floor at zero
        q.update(&mut ctx(Time::from_millis(107), &mut r));
        assert!((q.prob - 0.0016).abs() < 1e-12, "{}", q.prob);
        q.update(&mut ctx(Time::from_millis(123), &mut r));
        assert_eq!(q.prob, 0.0);
    }

    #[test]
    fn the_pi_input_is_the_larger_of_the_two_head_delays() {
        // Linux get_queue_delays: max(qdelay_L, qdelay_C). L head 30 ms old, C head 5 ms:
        // 0.16*(0.030-0.015) + 3.2*0.030 = 0.0024 + 0.096 = 0.0984.
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        put(&mut q, p(1, Ecn::Ect1), Time::ZERO);
        put(&mut q, p(2, Ecn::NotEct), Time::from_millis(25));
        q.update(&mut ctx(Time::from_millis(30), &mut r));
        assert!((q.prob - 0.0984).abs() < 1e-12, "{}", q.prob);
        assert_eq!(q.last_qdelay, Duration::from_millis(30));
    }

    #[test]
    fn without_drop_on_overload_p_is_capped_at_one_over_k() {
        let mut q = dq(DualPi2Params { drop_on_overload: false, ..DualPi2Params::default() });
        let mut r = rng(1);
        put(&mut q, p(1, Ecn::NotEct), Time::ZERO);
        q.update(&mut ctx(Time::from_secs(1), &mut r));
        assert_eq!(q.prob, 0.5);
        let mut q = dq(DualPi2Params::default());
        put(&mut q, p(1, Ecn::NotEct), Time::ZERO);
        q.update(&mut ctx(Time::from_secs(1), &mut r));
        assert_eq!(q.prob, 1.0);
    }

    #[test]
    fn timer_every_tupdate() {
        let mut q = dq(DualPi2Params::default());
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(16)));
        let mut r = rng(1);
        q.on_timer(&mut ctx(Time::from_millis(16), &mut r));
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(32)));
    }

    #[test]
    fn the_round_robin_gives_the_c_queue_its_weight() {
        // Credit starts at 1500 * (10 - 90) = -120000 (the L queue first). Each L dequeue
        // while C waits adds 10 * 1500 = 15000; each C dequeue while L waits subtracts
        // 90 * 1500 = 135000. By hand: L x8 (credit -120000 -> 0), L (0 -> 15000), C
        // (15000 -> -120000), then again L x9, C: 9 L packets per C packet.
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        for i in 0..30 {
            put(&mut q, p(100 + i, Ecn::Ect1), Time::ZERO);
            put(&mut q, p(200 + i, Ecn::NotEct), Time::ZERO);
        }
        let order: Vec<char> = (0..20)
            .map(|_| {
                let (d, drops) = take(&mut q, Time::ZERO, &mut r);
                assert!(drops.is_empty());
                if d.unwrap().pkt.id < 200 { 'L' } else { 'C' }
            })
            .collect();
        assert_eq!(order.iter().collect::<String>(), "LLLLLLLLLCLLLLLLLLLC");
        assert_eq!(q.credit, -120_000);
        // classic_protection 50: credit starts at 0 (L first), +75000 / -75000: L, C, L, C
        let mut q = dq(DualPi2Params { classic_protection: 50, ..DualPi2Params::default() });
        for i in 0..4 {
            put(&mut q, p(100 + i, Ecn::Ect1), Time::ZERO);
            put(&mut q, p(200 + i, Ecn::NotEct), Time::ZERO);
        }
        let order: String = (0..6).map(|_| if take(&mut q, Time::ZERO, &mut r).0.unwrap().pkt.id < 200 { 'L' } else { 'C' }).collect();
        assert_eq!(order, "LCLCLC");
    }

    #[test]
    fn a_lone_queue_is_served_and_the_credit_resets_when_both_are_empty() {
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        for i in 0..3 {
            put(&mut q, p(200 + i, Ecn::NotEct), Time::ZERO);
        }
        for _ in 0..3 {
            assert!(take(&mut q, Time::ZERO, &mut r).0.is_some());
        }
        // C dequeued with L empty: no credit change
        assert_eq!(q.credit, -120_000);
        put(&mut q, p(1, Ecn::Ect1), Time::ZERO);
        put(&mut q, p(2, Ecn::NotEct), Time::ZERO);
        q.credit = 5; // as if mid-cycle
        assert_eq!(take(&mut q, Time::ZERO, &mut r).0.unwrap().pkt.id, 2, "positive credit: C first");
        assert_eq!(take(&mut q, Time::ZERO, &mut r).0.unwrap().pkt.id, 1);
        assert!(take(&mut q, Time::ZERO, &mut r).0.is_none());
        assert_eq!(q.credit, -120_000, "reset on empty");
    }

    #[test]
    fn step_marks_l_packets_above_one_millisecond() {
        // p' = 0: only the step acts. Sojourns 1 ms (not above) and 1.001 ms (above).
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        for i in 0..4 {
            put(&mut q, p(i, Ecn::Ect1), Time::ZERO);
        }
        let (d, _) = take(&mut q, Time::from_millis(1), &mut r);
        assert_eq!(d.unwrap().marked, None);
        let (d, _) = take(&mut q, Time::from_micros(1001), &mut r);
        let d = d.unwrap();
        assert_eq!((d.marked, d.pkt.ecn), (Some(Cause::Deterministic), Ecn::Ce));
        // a CE packet above the step counts as a step mark too (Linux: INET_ECN_set_ce
        // succeeds on CE)
        put(&mut q, p(9, Ecn::Ce), Time::from_millis(2));
        let _ = take(&mut q, Time::from_millis(5), &mut r);
        let _ = take(&mut q, Time::from_millis(5), &mut r);
        let (d, _) = take(&mut q, Time::from_millis(5), &mut r);
        assert_eq!(d.unwrap().marked, Some(Cause::Deterministic));
        assert_eq!(q.lc.step_marks, 4);
        assert_eq!(q.lc.coupled_marks, 0);
        // classic packets never see the step
        put(&mut q, p(20, Ecn::Ect0), Time::ZERO);
        assert_eq!(take(&mut q, Time::from_millis(50), &mut r).0.unwrap().marked, None);
    }

    #[test]
    fn step_in_packets_counts_the_l_queue_left_behind() {
        // step_thresh 2 packets: marked while more than 2 L packets remain after the
        // dequeue (Linux do_step_aqm uses the L queue length after dequeue).
        let mut q = dq(DualPi2Params { step_thresh: StepThresh::Packets(2), ..DualPi2Params::default() });
        let mut r = rng(1);
        for i in 0..5 {
            put(&mut q, p(i, Ecn::Ect1), Time::ZERO);
        }
        let marks: Vec<bool> = (0..5).map(|_| take(&mut q, Time::from_secs(1), &mut r).0.unwrap().marked.is_some()).collect();
        assert_eq!(marks, vec![true, true, false, false, false]);
    }

    #[test]
    fn min_qlen_step_exempts_packets_that_found_a_short_l_queue() {
        let mut q = dq(DualPi2Params { min_qlen_step: 2, ..DualPi2Params::default() });
        let mut r = rng(1);
        for i in 0..4 {
            put(&mut q, p(i, Ecn::Ect1), Time::ZERO);
        }
        // packets 0 and 1 found 0 and 1 packets ahead: exempt; 2 and 3 found 2 and 3
        let marks: Vec<bool> = (0..4).map(|_| take(&mut q, Time::from_millis(10), &mut r).0.unwrap().marked.is_some()).collect();
        assert_eq!(marks, vec![false, false, true, true]);
    }

    #[test]
    fn no_signal_below_two_mtus() {
        // p' = 1 would signal every packet; 2 packets = 3000 B, after taking one 1500 B
        // < 3000 B left: no signal. The step is off (time threshold not reached).
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        q.prob = 1.0;
        put(&mut q, p(1, Ecn::NotEct), Time::ZERO);
        put(&mut q, p(2, Ecn::NotEct), Time::ZERO);
        let (d, drops) = take(&mut q, Time::ZERO, &mut r);
        assert!(d.is_some() && drops.is_empty());
        // with three queued, 3000 B remain after the first dequeue: dropped (p_C = 1),
        // then 1500 B remain: the next is sent
        let mut q = dq(DualPi2Params::default());
        q.prob = 1.0;
        for i in 0..3 {
            put(&mut q, p(i, Ecn::NotEct), Time::ZERO);
        }
        let (d, drops) = take(&mut q, Time::ZERO, &mut r);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].cause, Cause::Random);
        assert_eq!(d.unwrap().pkt.id, 1);
        assert_eq!(q.cc.drops, 1);
    }

    /// Signal frequencies at a fixed p' over `n` departures, each dequeued with a deep
    /// backlog behind it: (marks per packet sent, drops per packet taken from the queue).
    fn frequencies(params: DualPi2Params, prob: f64, ecn: Ecn, n: usize) -> (f64, f64, DualPi2<TestPkt>) {
        let mut q = dq(params);
        let mut r = rng(3);
        q.prob = prob;
        let (mut marks, mut drops) = (0, 0);
        for i in 0..n as u64 {
            while q.backlog().packets < 12 {
                let id = i * 100 + q.backlog().packets;
                put(&mut q, p(id, ecn), Time::ZERO);
            }
            let (d, dr) = take(&mut q, Time::ZERO, &mut r);
            drops += dr.len();
            if d.is_some_and(|d| d.marked.is_some()) {
                marks += 1;
            }
        }
        (marks as f64 / n as f64, drops as f64 / (drops + n) as f64, q)
    }

    #[test]
    fn classic_packets_see_p_squared_and_l_packets_k_p() {
        // p' = 0.2: p_C = 0.04, p_CL = 0.4.
        let (m, d, q) = frequencies(DualPi2Params::default(), 0.2, Ecn::NotEct, 40_000);
        assert_eq!(m, 0.0);
        assert!((d - 0.04).abs() < 0.005, "{d}");
        assert_eq!(q.cc.drops as f64 / (q.cc.drops + 40_000) as f64, d);
        let (m, d, q) = frequencies(DualPi2Params::default(), 0.2, Ecn::Ect0, 40_000);
        assert_eq!(d, 0.0);
        assert!((m - 0.04).abs() < 0.005, "{m}");
        assert_eq!(q.cc.marks as f64 / 40_000.0, m);
        let (m, d, q) = frequencies(DualPi2Params::default(), 0.2, Ecn::Ect1, 40_000);
        assert_eq!(d, 0.0);
        assert!((m - 0.4).abs() < 0.01, "{m}");
        assert_eq!(q.lc.coupled_marks as f64 / 40_000.0, m);
        // coupling factor 1.5: p_CL = 0.3
        let (m, _, _) = frequencies(DualPi2Params { coupling_factor: 1.5, ..DualPi2Params::default() }, 0.2, Ecn::Ect1, 40_000);
        assert!((m - 0.3).abs() < 0.01, "{m}");
    }

    #[test]
    fn overload_marks_every_l_packet_and_drops_with_p_squared() {
        // p' = 0.6, k = 2: k p' = 1.2 > 1. L packets: dropped with 0.36, the rest marked;
        // classic ECT(0) packets dropped (not marked) with 0.36.
        let (m, d, q) = frequencies(DualPi2Params::default(), 0.6, Ecn::Ect1, 20_000);
        assert!((d - 0.36).abs() < 0.015, "{d}");
        assert!((m - 1.0).abs() < 1e-12, "every L packet sent is marked: {m}");
        assert_eq!(q.lc.overload_drops as f64 / (q.lc.overload_drops + 20_000) as f64, d);
        let (m, d, _) = frequencies(DualPi2Params::default(), 0.6, Ecn::Ect0, 20_000);
        assert_eq!(m, 0.0);
        assert!((d - 0.36).abs() < 0.015, "{d}");
        // without drop_on_overload p' stays <= 1/k: at p' = 0.5, L packets all marked,
        // none dropped
        let (m, d, _) = frequencies(DualPi2Params { drop_on_overload: false, ..DualPi2Params::default() }, 0.5, Ecn::Ect1, 5_000);
        assert_eq!((m, d), (1.0, 0.0));
    }

    #[test]
    fn drop_enqueue_signals_at_arrival() {
        let mut q = dq(DualPi2Params { drop_enqueue: true, ..DualPi2Params::default() });
        let mut r = rng(1);
        q.prob = 1.0;
        // below 2 MTU nothing happens
        assert_eq!(put(&mut q, p(1, Ecn::Ect0), Time::ZERO), Admit::Queued);
        assert_eq!(put(&mut q, p(2, Ecn::Ect0), Time::ZERO), Admit::Queued);
        // 3000 B queued: p_C = 1, and k p' = 2 > 1 is overload: classic ECT dropped
        let mut drops = Vec::new();
        assert_eq!(q.enqueue(p(3, Ecn::Ect0), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Random));
        assert_eq!(drops[0].sojourn, None);
        q.prob = 0.3; // k p' = 0.6: no overload, p_C = 0.09
        let mut n = 0;
        for i in 0..5_000 {
            if let Admit::Marked(Cause::Random) = q.enqueue(p(10 + i, Ecn::Ect1), &mut ctx(Time::ZERO, &mut r), &mut drops) {
                n += 1;
            }
        }
        assert!((n as f64 / 5_000.0 - 0.6).abs() < 0.025, "{n}");
        // no signal at dequeue (the step aside)
        let (d, dr) = take(&mut q, Time::ZERO, &mut r);
        assert!(dr.is_empty() && d.unwrap().marked.is_none());
    }

    #[test]
    fn the_shared_buffer_overflows_for_both_queues() {
        let mut q: DualPi2<TestPkt> = DualPi2::new(&DualPi2Params::default(), Limit::packets(3));
        put(&mut q, p(1, Ecn::Ect1), Time::ZERO);
        put(&mut q, p(2, Ecn::NotEct), Time::ZERO);
        put(&mut q, p(3, Ecn::Ect1), Time::ZERO);
        assert_eq!(put(&mut q, p(4, Ecn::NotEct), Time::ZERO), Admit::Dropped(Cause::Overflow));
        assert_eq!(put(&mut q, p(5, Ecn::Ect1), Time::ZERO), Admit::Dropped(Cause::Overflow));
        assert_eq!((q.lc.overflow_drops, q.cc.overflow_drops), (1, 1));
        assert_eq!(q.backlog(), Backlog { packets: 3, bytes: 4500 });
    }

    #[test]
    fn autotuning_from_the_rtts_follows_rfc_9332_appendix_a() {
        // max_rtt 100 ms, typical 15 ms: RFC 9332 A.1's example: target 15 ms, tupdate
        // min(15, 33.3) = 15 ms, alpha = 0.1 * 0.015 / 0.01 = 0.15 Hz, beta = 3 Hz.
        let mut prm = DualPi2Params { max_rtt: Some(Duration::from_millis(100)), typical_rtt: Some(Duration::from_millis(15)), ..DualPi2Params::default() };
        prm.autotune();
        assert_eq!((prm.target, prm.tupdate), (Duration::from_millis(15), Duration::from_millis(15)));
        assert!((prm.alpha - 0.15).abs() < 1e-12 && (prm.beta - 3.0).abs() < 1e-12, "{} {}", prm.alpha, prm.beta);
        // max_rtt alone: typical = max/6 = 33.333 ms; tupdate = min(33.333, 100/3 = 33.333)
        let mut prm = DualPi2Params { max_rtt: Some(Duration::from_millis(200)), ..DualPi2Params::default() };
        prm.autotune();
        assert_eq!(prm.typical_rtt, Some(Duration::from_nanos(33_333_333)));
        assert_eq!(prm.target, Duration::from_nanos(33_333_333));
        assert_eq!(prm.tupdate, Duration::from_nanos(33_333_333));
        assert!((prm.beta - 1.5).abs() < 1e-12);
        assert!((prm.alpha - 0.1 * 0.033_333_333 / 0.04).abs() < 1e-12);
        // typical alone: max = 6 x typical
        let mut prm = DualPi2Params { typical_rtt: Some(Duration::from_millis(10)), ..DualPi2Params::default() };
        prm.autotune();
        assert_eq!(prm.max_rtt, Some(Duration::from_millis(60)));
        assert_eq!((prm.target, prm.tupdate), (Duration::from_millis(10), Duration::from_millis(10)));
        // idempotent: a resolved spec parses back to itself
        let again = { let mut x = prm.clone(); x.autotune(); x };
        assert_eq!(again, prm);
    }

    #[test]
    fn bad_parameters_are_named() {
        let bad = |f: fn(&mut DualPi2Params)| {
            let mut x = DualPi2Params::default();
            f(&mut x);
            x.validate().unwrap_err()
        };
        assert!(bad(|x| x.coupling_factor = 0.0).starts_with("coupling_factor:"));
        assert!(bad(|x| x.coupling_factor = -1.0).starts_with("coupling_factor:"));
        assert!(bad(|x| x.classic_protection = 101).starts_with("classic_protection:"));
        assert!(bad(|x| {
            x.max_rtt = Some(Duration::from_millis(10));
            x.typical_rtt = Some(Duration::from_millis(20));
        })
        .starts_with("typical_rtt:"));
    }

    #[test]
    fn step_thresholds_parse_in_time_or_packets() {
        assert_eq!("1ms".parse::<StepThresh>().unwrap(), StepThresh::Time(Duration::from_millis(1)));
        assert_eq!("500us".parse::<StepThresh>().unwrap(), StepThresh::Time(Duration::from_micros(500)));
        assert_eq!("5pkts".parse::<StepThresh>().unwrap(), StepThresh::Packets(5));
        assert_eq!("5 packets".parse::<StepThresh>().unwrap(), StepThresh::Packets(5));
        assert_eq!("7p".parse::<StepThresh>().unwrap(), StepThresh::Packets(7));
        assert!("1.5pkts".parse::<StepThresh>().is_err());
        assert!("5".parse::<StepThresh>().is_err());
        for s in ["1ms", "5pkts"] {
            assert_eq!(s.parse::<StepThresh>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn counters_name_each_queue() {
        let mut q = dq(DualPi2Params::default());
        let mut r = rng(1);
        put(&mut q, p(1, Ecn::Ect1), Time::ZERO);
        put(&mut q, p(2, Ecn::NotEct), Time::ZERO);
        take(&mut q, Time::from_millis(3), &mut r);
        take(&mut q, Time::from_millis(4), &mut r);
        let mut out = Vec::new();
        q.counters(&mut out);
        let get = |qu: &str, n: &str| out.iter().find(|c| c.queue == qu && c.name == n).unwrap().value;
        assert_eq!(get("l", "step_marks"), crate::Value::Count(1));
        assert_eq!(get("l", "sojourn_max"), crate::Value::Nanos(3_000_000));
        assert_eq!(get("c", "sojourn_total"), crate::Value::Nanos(4_000_000));
        assert_eq!(get("c", "dequeued"), crate::Value::Count(1));
    }
}
