//! BLUE: an AQM driven by packet loss and link idle events instead of queue length.
//!
//! Source: Feng, Kandlur, Saha & Shin, "BLUE: A New Class of Active Queue Management
//! Algorithms", University of Michigan CSE-TR-387-99 (1999), §4 and its figure of the
//! algorithm; the same authors' "Stochastic Fair Blue: A Queue Management Algorithm
//! for Enforcing Fairness", IEEE INFOCOM 2001, §3, which restates it (and IEEE/ACM
//! Transactions on Networking 10(4), 2002, "The BLUE Active Queue Management
//! Algorithms", §IV). No code is taken from any implementation.
//!
//! BLUE keeps one probability `p_m` and drops (or, with ECN, marks) each arriving
//! packet with that probability. The figure of the algorithm, line by line:
//!
//! ```text
//! Upon packet loss (or Q_len > L) event:
//!     if ((now - last_update) > freeze_time) then
//!         p_m = p_m + d1
//!         last_update = now
//! Upon link idle event:
//!     if ((now - last_update) > freeze_time) then
//!         p_m = p_m - d2
//!         last_update = now
//! ```
//!
//! "If the queue is continually dropping packets due to buffer overflow, BLUE
//! increments p_m [...]. Conversely, if the queue becomes empty or if the link is
//! idle, BLUE decreases its marking probability" (§4). `freeze_time` is "the minimum
//! time interval between two successive updates of p_m"; `d1` is set "significantly
//! larger than d2" because "link underutilization can occur when congestion
//! management is either too conservative or too aggressive, but packet loss occurs
//! only when congestion management is too conservative". The variant that also
//! treats a queue longer than `L` as a loss event "allows room to be left in the
//! queue for transient bursts and allows the queue to control queueing delay when
//! the size of the queue being used is large" (§4): [`BlueParams::threshold`].
//!
//! Where the paper leaves a choice:
//! * The loss event is an arrival that finds the buffer full (the arrival is dropped
//!   with cause `overflow`); the `Q_len > L` event is an arrival that finds more than
//!   `L` packets (or bytes) queued before it. The update comes first, then the coin
//!   with the updated `p_m` (a packet refused for overflow draws no coin).
//! * The link idle event is a dequeue that leaves the queue empty (the link has
//!   nothing to send after this packet) or finds it empty, as Linux's `sch_sfb`
//!   lowers a bin's probability when it empties and `sch_cake`'s BLUE when the queue
//!   is found empty: the simulator's link asks for a packet only while one is queued.
//! * Increases and decreases share `last_update`, as in the figure, and an update
//!   counts (and starts a freeze) even where `p_m` is held in `[0, 1]`.
//! * `last_update` starts as "never": the first event always updates.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit};
use crate::time::{Duration, Time};
use crate::units::QueueLimit;
use crate::{Admit, Aqm, Cause, Counter, Ctx, Departure, Dropped, Probe, QPacket};

/// BLUE's parameters. The defaults are configuration B2 of the paper's comparison with
/// RED (§4.2, "Packet loss rates using RED and BLUE", the table of BLUE configurations:
/// B1 10 ms / 0.0025 / 0.00025, B2 100 ms / 0.0025 / 0.00025, B3 10 ms / 0.02 / 0.002,
/// B4 100 ms / 0.02 / 0.002 as freeze_time / d1 / d2): the smaller pair of steps with
/// the longer freeze time, which are also the defaults of Feng's BLUE code for ns
/// (increment 0.0025, decrement 0.00025, hold time 0.1 s). d1 = 10 d2 in every
/// configuration, "significantly larger" as §4.1 asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlueParams {
    /// δ1, the step up of `p_m` on a loss (or `Q_len > L`) event (0.0025).
    pub d1: f64,
    /// δ2, the step down of `p_m` on a link idle event, an order of magnitude below
    /// `d1` (0.00025).
    pub d2: f64,
    /// The least time between two updates of `p_m` (100 ms).
    pub freeze_time: Duration,
    /// `L`: an arrival that finds more than this queued (packets, "50pkts", or bytes,
    /// "75KB") is a loss event too (§4's variant). None: buffer overflow only, the
    /// algorithm as the paper's figure states it.
    pub threshold: Option<QueueLimit>,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168 §5); the paper's
    /// experiments run BLUE with ECN-capable sources. Overflow always drops.
    pub ecn: bool,
}

impl Default for BlueParams {
    fn default() -> Self {
        BlueParams { d1: 0.0025, d2: 0.00025, freeze_time: Duration::from_millis(100), threshold: None, ecn: true }
    }
}

impl BlueParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("d1", "step up of p_m on a loss (or Q_len > L) event (Feng et al. §4.2, configuration B2: 0.0025, also their ns code's default)"),
        ("d2", "step down of p_m on a link idle event, an order of magnitude below d1 (Feng et al. §4.2, B2: 0.00025)"),
        ("freeze_time", "least time between two updates of p_m (Feng et al. §4.2, B2: 100 ms; B1 and B3 use 10 ms)"),
        ("threshold", "L: an arrival finding more than this queued is a loss event too (packets or bytes; §4's variant); none: overflow only"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 3168 §5; the paper's experiments use ECN); overflow always drops"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        for (name, x) in [("d1", self.d1), ("d2", self.d2)] {
            if !(x.is_finite() && x > 0.0 && x <= 1.0) {
                return Err(format!("{name}: must be in (0, 1], got {x}"));
            }
        }
        if let Some(l) = self.threshold {
            crate::red::threshold("threshold", l)?;
        }
        Ok(())
    }
}

/// BLUE over one FIFO.
#[derive(Debug)]
pub struct Blue<P> {
    fifo: Fifo<P>,
    limit: Limit,
    params: BlueParams,
    /// `L` as (value, in bytes), from `threshold`.
    threshold: Option<(u64, bool)>,
    /// p_m, the marking (or drop) probability.
    p_m: f64,
    /// When p_m last changed (None: never).
    last_update: Option<Time>,
    increases: u64,
    decreases: u64,
}

impl<P: QPacket> Blue<P> {
    pub fn new(params: &BlueParams, limit: Limit) -> Self {
        let threshold = params.threshold.map(|l| {
            let (v, bytes) = crate::red::threshold("threshold", l).expect("validated");
            (v as u64, bytes)
        });
        Blue { fifo: Fifo::new(), limit, params: params.clone(), threshold, p_m: 0.0, last_update: None, increases: 0, decreases: 0 }
    }

    /// The marking probability p_m.
    pub fn p_m(&self) -> f64 {
        self.p_m
    }

    /// "if ((now - last_update) > freeze_time)".
    fn thawed(&self, now: Time) -> bool {
        self.last_update.is_none_or(|t| now.saturating_since(t) > self.params.freeze_time)
    }

    /// Upon packet loss (or Q_len > L) event.
    fn loss_event(&mut self, now: Time) {
        if self.thawed(now) {
            self.p_m = (self.p_m + self.params.d1).min(1.0);
            self.last_update = Some(now);
            self.increases += 1;
        }
    }

    /// Upon link idle event.
    fn idle_event(&mut self, now: Time) {
        if self.thawed(now) {
            self.p_m = (self.p_m - self.params.d2).max(0.0);
            self.last_update = Some(now);
            self.decreases += 1;
        }
    }

    /// Q_len > L for an arrival that finds `b` queued.
    fn over_threshold(&self, b: Backlog) -> bool {
        self.threshold.is_some_and(|(l, bytes)| if bytes { b.bytes > l } else { b.packets > l })
    }
}

impl<P: QPacket> Aqm<P> for Blue<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let b = self.fifo.backlog();
        if self.limit.overflows(b, pkt.size_bytes()) {
            self.loss_event(ctx.now);
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        if self.over_threshold(b) {
            self.loss_event(ctx.now);
        }
        // "drops or marks packets with probability p_m as they enter the queue"
        if self.p_m > 0.0 && ctx.uniform() < self.p_m {
            return match crate::signal(pkt, Cause::Random, self.params.ecn, drops) {
                Ok(marked) => {
                    self.fifo.push(marked, ctx.now);
                    Admit::Marked(Cause::Random)
                }
                Err(dropped) => dropped,
            };
        }
        self.fifo.push(pkt, ctx.now);
        Admit::Queued
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let q = self.fifo.pop();
        if self.fifo.is_empty() {
            self.idle_event(ctx.now);
        }
        let q = q?;
        Some(Departure { sojourn: ctx.now.saturating_since(q.enqueued_at), pkt: q.pkt, marked: None })
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.p_m), delay_estimate: None }
    }

    fn counters(&self, out: &mut Vec<Counter>) {
        out.push(Counter::count("", "p_increases", self.increases));
        out.push(Counter::count("", "p_decreases", self.decreases));
    }
}

impl crate::AqmParams for BlueParams {
    const TITLE: &'static str = "BLUE: drop/mark probability raised on loss, lowered on idle link";
    const SOURCE: &'static str = "Feng, Kandlur, Saha & Shin, BLUE, U. Michigan CSE-TR-387-99 (1999) §4; SFB, INFOCOM 2001 §3";
    const DOC: &'static [(&'static str, &'static str)] = BlueParams::DOC;
    type Algo<P: QPacket> = Blue<P>;
    fn check(&self) -> Result<(), String> {
        BlueParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Blue::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use crate::Ecn;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    fn blue(params: BlueParams, limit: Limit) -> Blue<TestPkt> {
        params.validate().unwrap();
        Blue::new(&params, limit)
    }

    /// Steps with no coin in the way: d1 and d2 exact in binary (1/4, 1/16) and no
    /// arrival admitted while p_m > 0 except where a test says so.
    fn exact() -> BlueParams {
        BlueParams { d1: 0.25, d2: 0.0625, ..BlueParams::default() }
    }

    #[test]
    fn overflow_raises_p_at_most_once_per_freeze_time() {
        // Buffer of 2 packets, freeze_time 100 ms: the third arrival at 0 ms
        // overflows (p 0 -> 0.25, the first event always counts); overflows at 50 ms
        // and exactly 100 ms are frozen ("> freeze_time" is strict); one at 100 ms +
        // 1 ns counts (0.5), one at 150 ms is frozen, one at 201 ms counts (0.75).
        let mut q = blue(exact(), Limit::packets(2));
        let mut r = rng(1);
        let mut drops = Vec::new();
        for i in 0..2 {
            assert_eq!(q.enqueue(pkt(i, 1500), &mut ctx(ms(0), &mut r), &mut drops), Admit::Queued);
        }
        let steps = [(ms(0), 0.25), (ms(50), 0.25), (ms(100), 0.25), (ms(100) + Duration::from_nanos(1), 0.5), (ms(150), 0.5), (ms(201), 0.75)];
        for (i, (t, want)) in steps.into_iter().enumerate() {
            let a = q.enqueue(pkt(10 + i as u64, 1500), &mut ctx(t, &mut r), &mut drops);
            assert_eq!(a, Admit::Dropped(Cause::Overflow), "at {t:?}");
            assert_eq!(q.p_m(), want, "at {t:?}");
        }
        assert_eq!(drops.len(), 6);
        assert!(drops.iter().all(|d| d.cause == Cause::Overflow && d.sojourn.is_none()));
        assert_eq!((q.increases, q.decreases), (3, 0));
        // p is held at 1
        for k in 0..3 {
            q.enqueue(pkt(20 + k, 1500), &mut ctx(ms(400 + 200 * k), &mut r), &mut drops);
        }
        assert_eq!(q.p_m(), 1.0);
        assert_eq!(q.increases, 6);
    }

    #[test]
    fn an_idle_link_lowers_p_at_most_once_per_freeze_time_sharing_the_freeze_with_rises() {
        // p raised to 0.25 at 0 ms by an overflow (buffer of 1), then the queue
        // empties at 60 ms (frozen: 60 ms after the rise), at 110 ms (0.25 - 0.0625
        // = 0.1875), the link finds it empty at 150 ms (frozen) and at 211 ms (0.125);
        // an overflow at 250 ms is frozen by that decrease; one at 312 ms rises to
        // 0.375.
        let mut q = blue(exact(), Limit::packets(1));
        let mut r = rng(2);
        let mut drops = Vec::new();
        assert_eq!(q.enqueue(pkt(0, 1000), &mut ctx(ms(0), &mut r), &mut drops), Admit::Queued);
        assert_eq!(q.enqueue(pkt(1, 1000), &mut ctx(ms(0), &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.p_m(), 0.25);
        let d = q.dequeue(&mut ctx(ms(60), &mut r), &mut drops).unwrap();
        assert_eq!((d.pkt.id, d.sojourn), (0, Duration::from_millis(60)));
        assert_eq!(q.p_m(), 0.25, "frozen");
        // refill without the coin: p_m > 0 draws; put one in place by hand instead
        q.fifo.push(pkt(2, 1000), ms(100));
        q.dequeue(&mut ctx(ms(110), &mut r), &mut drops).unwrap();
        assert_eq!(q.p_m(), 0.1875);
        assert!(q.dequeue(&mut ctx(ms(150), &mut r), &mut drops).is_none());
        assert_eq!(q.p_m(), 0.1875, "frozen");
        assert!(q.dequeue(&mut ctx(ms(211), &mut r), &mut drops).is_none());
        assert_eq!(q.p_m(), 0.125);
        q.fifo.push(pkt(3, 1000), ms(240));
        assert_eq!(q.enqueue(pkt(4, 1000), &mut ctx(ms(250), &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.p_m(), 0.125, "frozen by the decrease at 211 ms");
        assert_eq!(q.enqueue(pkt(5, 1000), &mut ctx(ms(312), &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.p_m(), 0.375);
        assert_eq!((q.increases, q.decreases), (2, 2));
    }

    #[test]
    fn p_stays_at_zero_on_an_idle_link_and_the_update_still_freezes() {
        // From p = 0, the empty-queue event at 5 ms keeps p at 0 but counts as an
        // update (the figure's "p_m = p_m - d2; last_update = now"), so an overflow
        // 50 ms later is frozen and one 106 ms later rises.
        let mut q = blue(exact(), Limit::packets(1));
        let mut r = rng(3);
        let mut drops = Vec::new();
        assert!(q.dequeue(&mut ctx(ms(5), &mut r), &mut drops).is_none());
        assert_eq!((q.p_m(), q.decreases), (0.0, 1));
        q.enqueue(pkt(0, 1500), &mut ctx(ms(10), &mut r), &mut drops);
        q.enqueue(pkt(1, 1500), &mut ctx(ms(55), &mut r), &mut drops);
        assert_eq!(q.p_m(), 0.0);
        q.enqueue(pkt(2, 1500), &mut ctx(ms(106), &mut r), &mut drops);
        assert_eq!(q.p_m(), 0.25);
    }

    #[test]
    fn the_paper_s_steps_accumulate_as_hand_computed() {
        // Defaults: d1 = 0.0025, d2 = 0.00025, freeze 100 ms. Overflows every 101 ms
        // for 10 events: p = 10 d1 = 0.025; then 4 idle events 101 ms apart:
        // p = 0.025 - 4 d2 = 0.024.
        let p = BlueParams::default();
        assert_eq!((p.d1, p.d2, p.freeze_time, p.threshold, p.ecn), (0.0025, 0.00025, Duration::from_millis(100), None, true));
        let mut q = blue(p, Limit::packets(0));
        let mut r = rng(4);
        let mut drops = Vec::new();
        let mut t = ms(0);
        let mut want = 0.0;
        for i in 0..10 {
            q.enqueue(pkt(i, 1500), &mut ctx(t, &mut r), &mut drops);
            want += 0.0025;
            assert!((q.p_m() - want).abs() < 1e-15, "{} vs {want}", q.p_m());
            t += Duration::from_millis(101);
        }
        for _ in 0..4 {
            q.dequeue(&mut ctx(t, &mut r), &mut drops);
            t += Duration::from_millis(101);
        }
        assert!((q.p_m() - 0.024).abs() < 1e-12, "{}", q.p_m());
        assert_eq!(drops.len(), 10);
    }

    #[test]
    fn a_queue_longer_than_l_is_a_loss_event() {
        // L = 2 packets, buffer 100: the arrivals finding 0, 1, 2 packets do nothing;
        // the one finding 3 (> 2) raises p. In bytes: L = 3000 B, an arrival finding
        // 3000 B does nothing, one finding 4500 B raises p.
        let p = BlueParams { threshold: Some(QueueLimit::Packets(2)), d1: 1e-9, ..BlueParams::default() };
        let mut q = blue(p, Limit::packets(100));
        let mut r = rng(5);
        let mut drops = Vec::new();
        for i in 0..3 {
            q.enqueue(pkt(i, 1500), &mut ctx(ms(i), &mut r), &mut drops);
            assert_eq!(q.p_m(), 0.0);
        }
        q.enqueue(pkt(3, 1500), &mut ctx(ms(3), &mut r), &mut drops);
        assert_eq!(q.p_m(), 1e-9);
        let p = BlueParams { threshold: Some(QueueLimit::Bytes(3000)), d1: 1e-9, ..BlueParams::default() };
        let mut q = blue(p, Limit::packets(100));
        for i in 0..3 {
            q.enqueue(pkt(i, 1500), &mut ctx(ms(i), &mut r), &mut drops);
        }
        assert_eq!(q.increases, 0, "the third arrival found 3000 B: not more than L");
        q.enqueue(pkt(3, 1500), &mut ctx(ms(3), &mut r), &mut drops);
        assert_eq!(q.increases, 1, "the fourth found 4500 B");
        assert!(drops.is_empty());
        let e = BlueParams { threshold: Some(QueueLimit::Bdp(1.0)), ..BlueParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("threshold:"), "{e}");
    }

    #[test]
    fn arrivals_are_dropped_or_marked_with_probability_p() {
        // p_m = 0.25 after one overflow; each arrival then draws u from the AQM's
        // stream and is signalled if u < 0.25. Compare with a shadow stream: the
        // overflow draws nothing, each later arrival draws once. ECN on: ECT
        // packets are marked (CE set, kept), Not-ECT ones dropped; ECN off: all dropped.
        for ecn in [true, false] {
            let mut q = blue(BlueParams { ecn, ..exact() }, Limit::packets(1));
            let mut r = rng(6);
            let mut shadow = rng(6);
            let mut drops = Vec::new();
            q.enqueue(pkt(0, 1500), &mut ctx(ms(0), &mut r), &mut drops);
            q.enqueue(pkt(1, 1500), &mut ctx(ms(0), &mut r), &mut drops);
            assert_eq!(q.p_m(), 0.25);
            q.limit = Limit::packets(1_000_000);
            let (mut signals, n) = (0, 40_000u64);
            for i in 0..n {
                let e = if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
                let a = q.enqueue(TestPkt { id: 10 + i, size: 1500, flow: 0, ecn: e }, &mut ctx(ms(1), &mut r), &mut drops);
                let hit = ctx(ms(1), &mut shadow).uniform() < 0.25;
                let want = match (hit, ecn && e.is_ect()) {
                    (false, _) => Admit::Queued,
                    (true, true) => Admit::Marked(Cause::Random),
                    (true, false) => Admit::Dropped(Cause::Random),
                };
                assert_eq!(a, want, "arrival {i}");
                signals += hit as u32;
            }
            // about a quarter: 10 000, standard deviation 87
            assert!((9_600..10_400).contains(&signals), "{signals}");
            let marked = q.fifo.backlog().packets - 1 - (n - signals as u64);
            if ecn {
                assert!(marked > 4_000, "{marked}");
            } else {
                assert_eq!(marked, 0);
            }
            assert!(drops.iter().skip(1).all(|d| d.cause == Cause::Random));
        }
    }

    #[test]
    fn probe_and_counters_show_p_and_the_updates() {
        let mut q = blue(exact(), Limit::packets(0));
        let mut r = rng(7);
        let mut drops = Vec::new();
        q.enqueue(pkt(0, 100), &mut ctx(ms(0), &mut r), &mut drops);
        assert_eq!(Aqm::<TestPkt>::probe(&q).drop_prob, Some(0.25));
        let mut out = Vec::new();
        q.counters(&mut out);
        assert_eq!(out, vec![Counter::count("", "p_increases", 1), Counter::count("", "p_decreases", 0)]);
    }

    #[test]
    fn validation_names_the_field() {
        for (p, field) in [
            (BlueParams { d1: 0.0, ..BlueParams::default() }, "d1:"),
            (BlueParams { d1: 1.5, ..BlueParams::default() }, "d1:"),
            (BlueParams { d2: -0.1, ..BlueParams::default() }, "d2:"),
            (BlueParams { d2: f64::NAN, ..BlueParams::default() }, "d2:"),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
        assert!(BlueParams { freeze_time: Duration::ZERO, threshold: Some(QueueLimit::Bytes(0)), ..BlueParams::default() }.validate().is_ok());
    }
}
