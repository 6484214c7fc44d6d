//! COBALT: CoDel and BLUE Alternate.
//!
//! Sources: Linux's `sch_cake` (Morton, Høiland-Jørgensen, Täht et al.), whose COBALT
//! (`cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`) is the reference,
//! described in Palmei, Gupta, Imputato, Morton, Tahiliani, Avallone & Täht, "Design
//! and Evaluation of COBALT Queue Discipline" (IEEE LANMAN 2019) and Høiland-Jørgensen,
//! Täht & Morton, "Piece of CAKE" (IEEE LANMAN 2018) §III-C; ns-3's
//! `CobaltQueueDisc` for the stand-alone queue around it. No code is taken from either.
//!
//! COBALT runs CoDel (RFC 8289) and BLUE (Feng, Kandlur, Saha & Shin, "BLUE: A New
//! Class of Active Queue Management Algorithms", 1999) side by side. CoDel's part is
//! sch_cake's restatement of the control law: `drop_next` is both the end of the
//! first interval above target and the signal schedule, `count` decays again while
//! the queue is below target or empty (instead of being reset), and the schedule uses
//! Linux's fixed-point reciprocal square root (a cache for counts below 16, then one
//! Newton step per change). BLUE's drop probability rises by `blue_increment` when the
//! queue overflows and falls by `blue_decrement` when it is found empty, each at most
//! once per `target`; BLUE only drops (never marks), for unresponsive flows.
//! Probabilities are 32-bit fixed point as in Linux, and times are signed
//! nanoseconds, so that the arithmetic is Linux's to the bit.
//!
//! The stand-alone `cobalt` kind is one such queue with a drop-tail limit: an arrival
//! that finds it full is dropped and counts as a BLUE overflow (ns-3
//! `CobaltQueueDisc::DoEnqueue`); at dequeue packets are dropped (cause
//! `deterministic` for CoDel, `random` for BLUE) until one may leave. The serialization
//! term of sch_cake's "over target" test (`mtu_time`) is zero, as in CAKE without a
//! shaper; ns-3's extra `BlueThreshold` rule (BLUE rises on a 400 ms sojourn) is not
//! Linux's and is not modelled. [`crate::cake`] runs one COBALT per flow queue with
//! these same functions.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit};
use crate::time::{Duration, Time};
use crate::{Admit, Aqm, Cause, Counter, Ctx, Departure, Dropped, Ecn, Probe, QPacket};

/// COBALT's parameters in the form its functions use (sch_cake `struct cobalt_params`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CobaltConsts {
    /// CoDel's interval, ns.
    pub interval: u64,
    /// CoDel's target and BLUE's update period, ns.
    pub target: u64,
    /// Serialization time of an MTU at the shaped rate, ns (0 unshaped).
    pub mtu_time: u64,
    /// BLUE's increment and decrement, 0.32 fixed point.
    pub p_inc: u32,
    pub p_dec: u32,
}

/// COBALT's state (sch_cake `struct cobalt_vars`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[derive(Default)]
pub struct CobaltVars {
    /// CoDel's signal count.
    pub count: u32,
    /// 1/sqrt(count), 0.32 fixed point.
    pub rec_inv_sqrt: u32,
    /// The next signal time, or when the last one was (signed ns).
    pub drop_next: i64,
    /// When BLUE last changed its probability (signed ns).
    pub blue_timer: i64,
    /// BLUE's drop probability, 0.32 fixed point.
    pub p_drop: u32,
    pub dropping: bool,
}


/// What [`should_drop`] decided for a packet just dequeued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// CoDel signalled and the packet is ECN-capable: set CE.
    pub mark: bool,
    /// CoDel signalled a packet that cannot be marked.
    pub codel_drop: bool,
    /// BLUE's coin.
    pub blue_drop: bool,
}

impl Verdict {
    pub fn drop(&self) -> bool {
        self.codel_drop || self.blue_drop
    }
    /// The cause of a drop: CoDel's schedule is deterministic, BLUE's coin random.
    pub fn cause(&self) -> Cause {
        if self.codel_drop { Cause::Deterministic } else { Cause::Random }
    }
}

const REC_INV_SQRT_CACHE: usize = 16;

/// One Newton step of 1/sqrt(count) in 0.32 fixed point (sch_cake `cobalt_newton_step`:
/// new = invsqrt / 2 * (3 - count * invsqrt^2)), with C's unsigned wrap-around.
fn newton_step(count: u32, rec_inv_sqrt: u32) -> u32 {
    let invsqrt = rec_inv_sqrt as u64;
    let invsqrt2 = (invsqrt * invsqrt) >> 32;
    let mut val = (3u64 << 32).wrapping_sub((count as u64).wrapping_mul(invsqrt2));
    val >>= 2;
    val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
    val as u32
}

/// 1/sqrt(n) for n < 16 in 0.32 fixed point: sch_cake's `inv_sqrt_cache` (entries 0
/// and 1 are both ~0, as close to 1.0 as fixed point gets).
const INV_SQRT_CACHE: [u32; REC_INV_SQRT_CACHE] = [
    u32::MAX,
    u32::MAX,
    3_037_000_500,
    2_479_700_525,
    2_147_483_647,
    1_920_767_767,
    1_753_413_056,
    1_623_345_051,
    1_518_500_250,
    1_431_655_765,
    1_358_187_914,
    1_294_981_364,
    1_239_850_263,
    1_191_209_601,
    1_147_878_294,
    1_108_955_788,
];

fn invsqrt(v: &mut CobaltVars) {
    if (v.count as usize) < REC_INV_SQRT_CACHE {
        v.rec_inv_sqrt = INV_SQRT_CACHE[v.count as usize];
    } else {
        v.rec_inv_sqrt = newton_step(v.count, v.rec_inv_sqrt);
    }
}

/// CoDel's control law `t + interval / sqrt(count)`, with Linux's `reciprocal_scale`.
fn control(t: i64, interval: u64, rec_inv_sqrt: u32) -> i64 {
    t + (((interval as u32) as u64 * rec_inv_sqrt as u64) >> 32) as i64
}

/// sch_cake `cobalt_queue_full`: the queue overflowed. True if BLUE went from
/// quiescent to active.
pub fn queue_full(v: &mut CobaltVars, p: &CobaltConsts, now: i64) -> bool {
    let mut up = false;
    if now - v.blue_timer > p.target as i64 {
        up = v.p_drop == 0;
        v.p_drop = v.p_drop.wrapping_add(p.p_inc);
        if v.p_drop < p.p_inc {
            v.p_drop = u32::MAX;
        }
        v.blue_timer = now;
    }
    v.dropping = true;
    v.drop_next = now;
    if v.count == 0 {
        v.count = 1;
    }
    up
}

/// sch_cake `cobalt_queue_empty`: the queue was serviced but found empty. True if BLUE
/// went from active to quiescent.
pub fn queue_empty(v: &mut CobaltVars, p: &CobaltConsts, now: i64) -> bool {
    let mut down = false;
    if v.p_drop != 0 && now - v.blue_timer > p.target as i64 {
        v.p_drop = v.p_drop.saturating_sub(p.p_dec);
        v.blue_timer = now;
        down = v.p_drop == 0;
    }
    v.dropping = false;
    if v.count != 0 && now - v.drop_next >= 0 {
        v.count -= 1;
        invsqrt(v);
        v.drop_next = control(v.drop_next, p.interval, v.rec_inv_sqrt);
    }
    down
}

/// sch_cake `cobalt_should_drop` for a packet just dequeued after `sojourn` ns, with
/// `bulk_flows` bulk flows counted against the serialization term (CAKE in ingress
/// mode; 0 otherwise). `markable`: ECN is on and the packet is ECT or CE. BLUE's coin
/// is drawn only while its probability is not zero.
pub fn should_drop(v: &mut CobaltVars, p: &CobaltConsts, now: i64, sojourn: u64, bulk_flows: u32, markable: bool, ctx: &mut Ctx<'_>) -> Verdict {
    let mut verdict = Verdict::default();
    let mut schedule = now - v.drop_next;
    let over_target = sojourn > p.target && sojourn > p.mtu_time * bulk_flows as u64 * 2 && sojourn > p.mtu_time * 4;
    let mut next_due = v.count != 0 && schedule >= 0;
    if over_target {
        if !v.dropping {
            v.dropping = true;
            v.drop_next = control(now, p.interval, v.rec_inv_sqrt);
        }
        if v.count == 0 {
            v.count = 1;
        }
    } else if v.dropping {
        v.dropping = false;
    }
    if next_due && v.dropping {
        // signal: an ECN mark if possible, otherwise a drop
        if markable {
            verdict.mark = true;
        } else {
            verdict.codel_drop = true;
        }
        v.count = v.count.wrapping_add(1);
        if v.count == 0 {
            v.count -= 1;
        }
        invsqrt(v);
        v.drop_next = control(v.drop_next, p.interval, v.rec_inv_sqrt);
        schedule = now - v.drop_next;
    } else {
        while next_due {
            v.count -= 1;
            invsqrt(v);
            v.drop_next = control(v.drop_next, p.interval, v.rec_inv_sqrt);
            schedule = now - v.drop_next;
            next_due = v.count != 0 && schedule >= 0;
        }
    }
    // Simple BLUE; the lack of ECN is deliberate (sch_cake).
    if v.p_drop != 0 {
        let draw = (ctx.rng.next_u64() >> 32) as u32;
        verdict.blue_drop = draw < v.p_drop;
    }
    // drop_next doubles as an activity timeout
    if v.count == 0 {
        v.drop_next = now + p.interval as i64;
    } else if schedule > 0 && !verdict.drop() {
        v.drop_next = now;
    }
    verdict
}

/// A probability as 0.32 fixed point (rounded; 1.0 saturates).
pub fn fixed(x: f64) -> u32 {
    (x * 4_294_967_296.0).round().clamp(0.0, u32::MAX as f64) as u32
}

/// Signed nanoseconds of an instant.
#[inline]
pub fn ns(t: Time) -> i64 {
    t.as_nanos() as i64
}

/// The stand-alone COBALT's parameters. Defaults are sch_cake's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CobaltParams {
    /// CoDel's target, also BLUE's update period (sch_cake and ns-3: 5 ms).
    pub target: Duration,
    /// CoDel's interval (sch_cake and ns-3: 100 ms).
    pub interval: Duration,
    /// BLUE's increment per overflow (sch_cake `p_inc`: 1/256).
    pub blue_increment: f64,
    /// BLUE's decrement per empty queue (sch_cake `p_dec`: 1/4096).
    pub blue_decrement: f64,
    /// Mark ECN-capable packets where CoDel signals (sch_cake: always; ns-3 `UseEcn`
    /// off by default).
    pub ecn: bool,
}

impl Default for CobaltParams {
    fn default() -> Self {
        CobaltParams { target: Duration::from_millis(5), interval: Duration::from_millis(100), blue_increment: 1.0 / 256.0, blue_decrement: 1.0 / 4096.0, ecn: true }
    }
}

impl CobaltParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "CoDel target and BLUE update period (sch_cake: 5 ms)"),
        ("interval", "CoDel interval (sch_cake: 100 ms)"),
        ("blue_increment", "BLUE probability step up on overflow (sch_cake: 1/256)"),
        ("blue_decrement", "BLUE probability step down on an empty queue (sch_cake: 1/4096)"),
        ("ecn", "mark ECN-capable packets where CoDel signals (sch_cake: on; ns-3 UseEcn: off)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        if self.target.is_zero() {
            return Err("target: must be greater than zero".into());
        }
        if self.interval.is_zero() {
            return Err("interval: must be greater than zero".into());
        }
        for (name, x) in [("blue_increment", self.blue_increment), ("blue_decrement", self.blue_decrement)] {
            if !(0.0..=1.0).contains(&x) {
                return Err(format!("{name}: must be in [0, 1], got {x}"));
            }
        }
        Ok(())
    }

    pub fn consts(&self) -> CobaltConsts {
        CobaltConsts {
            interval: self.interval.as_nanos(),
            target: self.target.as_nanos(),
            mtu_time: 0,
            p_inc: fixed(self.blue_increment),
            p_dec: fixed(self.blue_decrement),
        }
    }
}

/// COBALT over one FIFO with a drop-tail limit.
#[derive(Debug)]
pub struct Cobalt<P> {
    pub params: CobaltParams,
    consts: CobaltConsts,
    pub vars: CobaltVars,
    fifo: Fifo<P>,
    limit: Limit,
    last_sojourn: Option<Duration>,
    /// Times BLUE went from quiescent to active.
    pub blue_activations: u64,
}

impl<P: QPacket> Cobalt<P> {
    pub fn new(params: &CobaltParams, limit: Limit) -> Self {
        Cobalt { params: params.clone(), consts: params.consts(), vars: CobaltVars::default(), fifo: Fifo::new(), limit, last_sojourn: None, blue_activations: 0 }
    }
}

impl<P: QPacket> Aqm<P> for Cobalt<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        if self.limit.overflows(self.fifo.backlog(), pkt.size_bytes()) {
            if queue_full(&mut self.vars, &self.consts, ns(ctx.now)) {
                self.blue_activations += 1;
            }
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        self.fifo.push(pkt, ctx.now);
        Admit::Queued
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let now = ns(ctx.now);
        loop {
            let Some(item) = self.fifo.pop() else {
                queue_empty(&mut self.vars, &self.consts, now);
                return None;
            };
            let sojourn = ctx.now.saturating_since(item.enqueued_at);
            self.last_sojourn = Some(sojourn);
            let mut pkt = item.pkt;
            let markable = self.params.ecn && (pkt.ecn().is_ect() || pkt.ecn() == Ecn::Ce);
            let v = should_drop(&mut self.vars, &self.consts, now, sojourn.as_nanos(), 0, markable, ctx);
            if v.drop() {
                drops.push(Dropped { pkt, cause: v.cause(), sojourn: Some(sojourn) });
                continue;
            }
            let marked = v.mark.then(|| {
                pkt.set_ce();
                Cause::Deterministic
            });
            return Some(Departure { pkt, sojourn, marked });
        }
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.vars.p_drop as f64 / 4_294_967_296.0), delay_estimate: self.last_sojourn }
    }

    fn counters(&self, out: &mut Vec<Counter>) {
        out.push(Counter::count("", "codel_count", self.vars.count as u64));
        out.push(Counter::count("", "blue_activations", self.blue_activations));
    }
}

impl crate::spec::AqmParams for CobaltParams {
    const TITLE: &'static str = "COBALT: CoDel and BLUE side by side (the AQM of CAKE), on one queue";
    const SOURCE: &'static str = "Linux sch_cake's COBALT; Palmei et al., \"Design and Evaluation of COBALT Queue Discipline\" (LANMAN 2019)";
    const DOC: &'static [(&'static str, &'static str)] = CobaltParams::DOC;
    type Algo<P: QPacket> = Cobalt<P>;
    fn check(&self) -> Result<(), String> {
        CobaltParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Cobalt::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn the_reciprocal_square_root_cache_is_close_to_one_over_sqrt() {
        let c = &INV_SQRT_CACHE;
        assert_eq!(c[0], u32::MAX);
        // Linux: "both the '0' and '1' entries in the invsqrt cache are 0xFFFFFFFF"
        assert_eq!(c[1], u32::MAX);
        for (n, &x) in c.iter().enumerate().skip(2) {
            let want = 1.0 / (n as f64).sqrt();
            let got = x as f64 / 4_294_967_296.0;
            assert!((got - want).abs() < 1e-6, "n={n}: {got} vs {want}");
        }
        // and above the cache one Newton step per count keeps it close
        let mut v = CobaltVars { count: 15, rec_inv_sqrt: c[15], ..CobaltVars::default() };
        for n in 16..200u32 {
            v.count = n;
            invsqrt(&mut v);
            let got = v.rec_inv_sqrt as f64 / 4_294_967_296.0;
            assert!((got - 1.0 / (n as f64).sqrt()).abs() < 1e-3, "n={n}: {got}");
        }
    }

    fn consts() -> CobaltConsts {
        CobaltParams::default().consts()
    }

    /// Signal times (ms) of dequeues every ms in `from..to`, each with `sojourn_ms`.
    fn signals(v: &mut CobaltVars, from: u64, to: u64, sojourn_ms: u64, r: &mut rand_xoshiro::Xoshiro256PlusPlus) -> Vec<u64> {
        let p = consts();
        let mut times = Vec::new();
        for ms in from..to {
            let now = Time::from_millis(ms);
            let d = should_drop(v, &p, ns(now), sojourn_ms * 1_000_000, 0, true, &mut ctx(now, r));
            assert!(!d.drop());
            if d.mark {
                times.push(ms);
            }
        }
        times
    }

    #[test]
    fn codel_signals_on_the_interval_over_sqrt_count_schedule() {
        // A fresh queue: under target (1 ms sojourns) from 900 ms, so drop_next is an
        // activity timeout now + 100 ms; then 20 ms sojourns (> 5 ms) from 1000 ms.
        // The first episode of a fresh queue: rec_inv_sqrt is still 0 (Linux zeroes
        // the state), so drop_next = 1000 + 0 and the next dequeue signals: 1001; then
        // count 2: + 100/sqrt(2) = 70.71 -> 1071, count 3: + 57.74 -> 1128.45 -> 1129,
        // + 50 -> 1178.45 -> 1179, + 44.72 -> 1223.17 -> 1224, + 40.82 -> 1263.99 -> 1264,
        // + 37.80 = 1301.79 (past 1300).
        let mut v = CobaltVars::default();
        let mut r = rng(1);
        assert!(signals(&mut v, 900, 1000, 1, &mut r).is_empty());
        assert_eq!(signals(&mut v, 1000, 1300, 20, &mut r), vec![1001, 1071, 1129, 1179, 1224, 1264]);
        assert_eq!(v.count, 7);
        // Below target the count decays back to 0 (one step per due schedule point),
        // leaving rec_inv_sqrt at 1/sqrt(0) = ~0: a later episode waits one interval.
        assert!(signals(&mut v, 1300, 3000, 1, &mut r).is_empty());
        assert_eq!((v.count, v.rec_inv_sqrt), (0, u32::MAX));
        // From 3000 ms: drop_next = 3000 + 99.99999997 ms: signals at 3100, then + 70.71
        // -> 3171, + 57.74 -> 3229, + 50 -> 3279.
        assert_eq!(signals(&mut v, 3000, 3300, 20, &mut r), vec![3100, 3171, 3229, 3279]);
        // A non-ECN packet at the next due time is dropped (CoDel: deterministic).
        let now = Time::from_millis(3400);
        let d = should_drop(&mut v, &consts(), ns(now), 20_000_000, 0, false, &mut ctx(now, &mut r));
        assert!(d.codel_drop && !d.mark && d.cause() == Cause::Deterministic);
    }

    #[test]
    fn below_target_the_count_decays_instead_of_resetting() {
        // count 4 with drop_next in the past, sojourn under target: not dropping; each
        // due schedule point takes one off the count (sch_cake, unlike RFC 8289).
        let p = consts();
        let mut v = CobaltVars { count: 4, dropping: true, drop_next: 0, ..CobaltVars::default() };
        let mut r = rng(1);
        let now = Time::from_millis(1000);
        let d = should_drop(&mut v, &p, ns(now), 1_000_000, 0, true, &mut ctx(now, &mut r));
        assert!(!d.drop() && !d.mark && !v.dropping);
        // drop_next walks 0 -> +57.7 (count 3) -> +70.7 (2) -> +100 (1) -> +100 (0):
        // 328.4 ms < 1000 ms: count reaches 0, then drop_next = now + interval.
        assert_eq!(v.count, 0);
        assert_eq!(v.drop_next, ns(now) + 100_000_000);
    }

    #[test]
    fn blue_rises_on_overflow_and_falls_on_empty_at_most_once_per_target() {
        let p = consts();
        let mut v = CobaltVars::default();
        assert!(queue_full(&mut v, &p, 10_000_000), "quiescent -> active");
        assert_eq!(v.p_drop, 1 << 24);
        assert!(v.dropping && v.count == 1 && v.drop_next == 10_000_000);
        // within 5 ms: no change
        assert!(!queue_full(&mut v, &p, 14_000_000));
        assert_eq!(v.p_drop, 1 << 24);
        queue_full(&mut v, &p, 15_000_001);
        assert_eq!(v.p_drop, 2 << 24);
        // empty: 2/256 - 1/4096 after 5 ms
        assert!(!queue_empty(&mut v, &p, 20_000_002));
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
        // saturates at ~0 on the way up
        v.p_drop = u32::MAX - 10;
        queue_full(&mut v, &p, 40_000_000);
        assert_eq!(v.p_drop, u32::MAX);
        // and at 0 on the way down; "down" when it reaches 0
        v.p_drop = 100;
        assert!(queue_empty(&mut v, &p, 50_000_000));
        assert_eq!(v.p_drop, 0);
    }

    #[test]
    fn blue_drops_with_its_probability_and_never_marks() {
        let p = consts();
        let mut r = rng(5);
        let mut v = CobaltVars { p_drop: fixed(0.25), ..CobaltVars::default() };
        let n = 40_000;
        let mut drops = 0;
        for i in 0..n {
            let now = Time::from_micros(i);
            // 1 ms sojourn: under target, CoDel quiet
            let d = should_drop(&mut v, &p, ns(now), 1_000_000, 0, true, &mut ctx(now, &mut r));
            assert!(!d.mark && !d.codel_drop);
            if d.blue_drop {
                drops += 1;
                assert_eq!(d.cause(), Cause::Random);
            }
        }
        assert!((drops as f64 / n as f64 - 0.25).abs() < 0.01, "{drops}");
    }

    #[test]
    fn the_standalone_queue_drops_arrivals_when_full_and_feeds_blue() {
        let mut q: Cobalt<TestPkt> = Cobalt::new(&CobaltParams::default(), Limit::packets(2));
        let mut r = rng(1);
        let mut drops = Vec::new();
        for i in 0..2 {
            assert_eq!(q.enqueue(pkt(i, 1500), &mut ctx(Time::from_millis(10), &mut r), &mut drops), Admit::Queued);
        }
        assert_eq!(q.enqueue(pkt(2, 1500), &mut ctx(Time::from_millis(10), &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.vars.p_drop, 1 << 24);
        assert_eq!(q.blue_activations, 1);
        let d = Aqm::<TestPkt>::probe(&q).drop_prob.unwrap();
        assert!((d - 1.0 / 256.0).abs() < 1e-12);
    }
}
