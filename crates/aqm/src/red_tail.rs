//! RED+Tail: two parallel virtual queues in one physical buffer.
//!
//! Source: Jou, Tan & Baras, "A Parallel Virtual Queue Structure for Active Queue
//! Management" (CSHCN TR 2003-18), §III (the structure, the classifier, the service
//! rates), §IV and Table II (parameters), §V (the sliding-threshold variant of the
//! second queue, here the `ared.sliding` option).
//!
//! * Classifier (§III): "When a packet arrives with a new source-destination pair
//!   which has not been seen by the router in the past T sec, we treat it as a new TCP
//!   connection and identify this connection as a short-life connection; send the new
//!   connection packets to the drop-tail queue; set a counter for the number of packets
//!   of this connection; if the cumulative packets number is greater than a threshold
//!   N, ... redirect the subsequent packets ... to the Adaptive RED queue; remove the
//!   counter if there is no packet arrival in the last T sec." UDP always goes to the
//!   drop-tail queue (§I: "real time (web, UDP) ... drop-tail").
//! * Virtual queue 1, drop-tail: nothing is dropped unless the shared buffer is full.
//!   Its service rate (§III): `C1 = 0` if `q1 = 0`; `C1 = C1min` if `0 < q1 < minth1`;
//!   `C1 = min(q1 C / maxth1, C1max)` if `q1 >= minth1`. (Fig. 15 writes
//!   `max(C1min, min(q1 C / maxth1, C1max))`; the two agree when
//!   `C1min = minth1 C / maxth1`, the default here.)
//! * Virtual queue 2, Adaptive RED ([`AredCore`], the same code as the `ared` kind),
//!   served at `C2 = C - C1`, gentle mode (§IV).
//! * One physical buffer (the scenario's buffer; Table II: 160 KB) for both.
//!
//! Not in the report, chosen here and documented in docs/aqm/red_tail.md: C1min and
//! C1max, T and N (the report gives no values); how the two rates are realised on one
//! link (a work-conserving credit scheduler: each backlogged virtual queue earns
//! credit at its rate, the one with more credit sends next, and an empty one gives
//! its share to the other).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ared::{AredCore, AredParams};
use crate::queue::{Backlog, Fifo, Limit};
use crate::red::RedQueue;
use crate::time::{Duration, Time};
use crate::units::{Bytes, QueueLimit, Rate};
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Probe, QPacket, Transport};

/// RED+Tail's parameters. Defaults: Table II where it gives them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedTailParams {
    /// minth1 of the drop-tail queue's service rate (Table II: 2 KB).
    pub minth1: Bytes,
    /// maxth1 (Table II: 30 KB).
    pub maxth1: Bytes,
    /// C1min as a share of C; absent: minth1 / maxth1, which makes the §III rule and
    /// Fig. 15's formula agree (not given in the report).
    pub c1_min_share: Option<f64>,
    /// C1max as a share of C (not given in the report; 0.75 keeps a quarter of the
    /// link for the long-lived flows, "to prevent FTP connections from timeout").
    pub c1_max_share: f64,
    /// T: a pair unseen this long starts a new (short-lived) flow, and its counter is
    /// forgotten (not given; 5 s: longer than gaps inside a transfer, shorter than the
    /// 50 s think time of §II's web clients).
    pub classifier_timeout: Duration,
    /// N: packets after which a flow is long-lived (not given; 50: the web file sizes
    /// of §II, Pareto(2.3 KB, 1.3) with 1 KB packets, exceed 50 KB with probability
    /// (2.3/50)^1.3 = 0.018, near the report's "false alarm ... less than 0.02").
    pub classifier_packets: u32,
    /// The Adaptive RED of the second queue. Absent thresholds: Table II's
    /// minth2 = 20 KB, maxth2 = 80 KB; gentle mode as in §IV; `sliding` for §V.
    pub ared: AredParams,
}

impl Default for RedTailParams {
    fn default() -> Self {
        RedTailParams {
            minth1: Bytes(2_000),
            maxth1: Bytes(30_000),
            c1_min_share: None,
            c1_max_share: 0.75,
            classifier_timeout: Duration::from_secs(5),
            classifier_packets: 50,
            // Table II: minth2 = 20 KB, maxth2 = 80 KB (also filled in by
            // `ared_params` when an `ared` table gives no thresholds)
            ared: AredParams { min_th: Some(QueueLimit::Bytes(20_000)), max_th: Some(QueueLimit::Bytes(80_000)), ..AredParams::default() },
        }
    }
}

impl RedTailParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("minth1", "drop-tail queue: below this C1 = C1min (Jou, Tan & Baras Table II: 2 KB)"),
        ("maxth1", "drop-tail queue: C1 = q1 C / maxth1 above minth1 (Table II: 30 KB)"),
        ("c1_min_share", "C1min / C; absent: minth1/maxth1 (not in the report; makes §III and Fig. 15 agree)"),
        ("c1_max_share", "C1max / C (not in the report; 0.75)"),
        ("classifier_timeout", "T: a pair unseen this long starts a short-lived flow (not in the report; 5 s)"),
        ("classifier_packets", "N: packets after which a flow goes to the ARED queue (not in the report; 50)"),
        ("ared", "the second queue's Adaptive RED (kind ared's parameters; thresholds default to Table II's 20 KB / 80 KB)"),
    ];

    /// The second queue's ARED, with Table II's thresholds where none are given.
    pub fn ared_params(&self) -> AredParams {
        let mut a = self.ared.clone();
        if a.min_th.is_none() && a.max_th.is_none() {
            a.min_th = Some(QueueLimit::Bytes(20_000));
            a.max_th = Some(QueueLimit::Bytes(80_000));
        }
        a
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.maxth1.0 == 0 {
            return Err("maxth1: must be greater than zero".into());
        }
        if self.minth1 > self.maxth1 {
            return Err(format!("minth1: must not exceed maxth1 ({} > {})", self.minth1, self.maxth1));
        }
        let max = self.c1_max_share;
        if !(max > 0.0 && max <= 1.0) {
            return Err(format!("c1_max_share: must be in (0, 1], got {max}"));
        }
        if let Some(min) = self.c1_min_share {
            if !(min > 0.0 && min <= max) {
                return Err(format!("c1_min_share: must be in (0, c1_max_share], got {min}"));
            }
        }
        if self.classifier_timeout.is_zero() {
            return Err("classifier_timeout: must be greater than zero".into());
        }
        self.ared_params().validate().map_err(|e| format!("ared.{e}"))
    }

    fn c1_min_share(&self) -> f64 {
        self.c1_min_share.unwrap_or(self.minth1.0 as f64 / self.maxth1.0 as f64)
    }
}

/// Which virtual queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vq {
    /// The drop-tail queue for short-lived and UDP traffic.
    Tail,
    /// The Adaptive RED queue for long-lived TCP.
    Red,
}

/// RED+Tail.
#[derive(Debug)]
pub struct RedTail<P> {
    pub params: RedTailParams,
    q1: Fifo<P>,
    pub ared: AredCore,
    q2: RedQueue<P>,
    limit: Limit,
    /// host pair -> (last arrival, packets since the pair was (re)seen)
    classifier: BTreeMap<u64, (Time, u32)>,
    /// Service credit of each virtual queue, in bytes.
    credit: [f64; 2],
    last: Time,
}

impl<P: QPacket> RedTail<P> {
    pub fn new(params: &RedTailParams, limit: Limit) -> Self {
        let ap = params.ared_params();
        RedTail {
            params: params.clone(),
            q1: Fifo::new(),
            ared: AredCore::new(&ap, limit),
            q2: RedQueue::new(ap.ecn_policy()),
            limit,
            classifier: BTreeMap::new(),
            credit: [0.0; 2],
            last: Time::ZERO,
        }
    }

    /// §III: the drop-tail queue's service rate C1 (bits/s) at a backlog of `q1` bytes
    /// on a link of rate `c`.
    pub fn c1(&self, q1: u64, c: Rate) -> f64 {
        let c = c.bps() as f64;
        let p = &self.params;
        if q1 == 0 {
            0.0 // "if q1 = 0, then C1(t) := 0"
        } else if q1 < p.minth1.0 {
            p.c1_min_share() * c // "if 0 < q1 < minth1, then C1(t) := C1min"
        } else {
            // "if minth1 <= q1, then C1(t) := min(q1 C / maxth1, C1max)"
            (q1 as f64 * c / p.maxth1.0 as f64).min(p.c1_max_share * c)
        }
    }

    /// The rates (bits/s) each virtual queue is served at now: C1 and C2 = C - C1
    /// while both hold packets; the whole link for the only one that does.
    pub fn service_rates(&self, c: Rate) -> (f64, f64) {
        match (self.q1.is_empty(), self.q2.fifo.is_empty()) {
            (false, false) => {
                let c1 = self.c1(self.q1.bytes(), c);
                (c1, c.bps() as f64 - c1)
            }
            (false, true) => (c.bps() as f64, 0.0),
            (true, false) => (0.0, c.bps() as f64),
            (true, true) => (0.0, 0.0),
        }
    }

    /// The backlogs of the drop-tail and the Adaptive RED virtual queues.
    pub fn virtual_backlogs(&self) -> (Backlog, Backlog) {
        (self.q1.backlog(), self.q2.fifo.backlog())
    }

    /// Credit each backlogged queue with what its rate earned since the last event.
    fn advance(&mut self, now: Time, c: Rate) {
        let dt = now.saturating_since(self.last).as_secs_f64();
        self.last = now;
        if dt > 0.0 {
            let (r1, r2) = self.service_rates(c);
            self.credit[0] += r1 * dt / 8.0;
            self.credit[1] += r2 * dt / 8.0;
        }
    }

    /// §III's classifier.
    fn classify(&mut self, pkt: &P, now: Time) -> Vq {
        if pkt.transport() == Transport::Udp {
            return Vq::Tail;
        }
        let t = self.params.classifier_timeout;
        let e = self.classifier.entry(pkt.host_pair_key()).or_insert((now, 0));
        if now.saturating_since(e.0) > t {
            // unseen for T: a new (short-lived) connection
            e.1 = 0;
        }
        e.0 = now;
        e.1 = e.1.saturating_add(1);
        if e.1 > self.params.classifier_packets { Vq::Red } else { Vq::Tail }
    }
}

impl<P: QPacket> Aqm<P> for RedTail<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        self.advance(ctx.now, ctx.link_rate);
        let size = pkt.size_bytes();
        let total = Backlog { packets: self.q1.len() as u64 + self.q2.fifo.len() as u64, bytes: self.q1.bytes() + self.q2.fifo.bytes() };
        let overflow = self.limit.overflows(total, size);
        match self.classify(&pkt, ctx.now) {
            Vq::Tail => {
                // drop-tail: dropped only when the shared buffer is full
                if overflow {
                    drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
                    return Admit::Dropped(Cause::Overflow);
                }
                self.q1.push(pkt, ctx.now);
                Admit::Queued
            }
            // the Adaptive RED queue: the same enqueue path as the `ared` kind
            Vq::Red => self.q2.enqueue(&mut self.ared, pkt, overflow, ctx, drops),
        }
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        self.advance(ctx.now, ctx.link_rate);
        let which = match (self.q1.is_empty(), self.q2.fifo.is_empty()) {
            (true, true) => return None,
            (false, true) => Vq::Tail,
            (true, false) => Vq::Red,
            // the queue that has earned more service sends (ties: the drop-tail queue)
            (false, false) => {
                if self.credit[0] >= self.credit[1] {
                    Vq::Tail
                } else {
                    Vq::Red
                }
            }
        };
        let (d, i) = match which {
            Vq::Tail => {
                let q = self.q1.pop()?;
                (Departure { sojourn: ctx.now.saturating_since(q.enqueued_at), pkt: q.pkt, marked: None }, 0)
            }
            Vq::Red => (self.q2.dequeue(&mut self.ared, ctx.now)?, 1),
        };
        self.credit[i] -= d.pkt.size_bytes() as f64;
        if self.q1.is_empty() {
            self.credit[0] = 0.0;
        }
        if self.q2.fifo.is_empty() {
            self.credit[1] = 0.0;
        }
        Some(d)
    }

    fn backlog(&self) -> Backlog {
        let (a, b) = self.virtual_backlogs();
        Backlog { packets: a.packets + b.packets, bytes: a.bytes + b.bytes }
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.ared.next_timer())
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.ared.adapt(ctx.now, ctx.link_rate);
        // "Remove the counter if there is no packet arrival in the last T sec."
        let t = self.params.classifier_timeout;
        let now = ctx.now;
        self.classifier.retain(|_, e| now.saturating_since(e.0) <= t);
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: Some(self.ared.red.vars.pb.clamp(0.0, 1.0)), delay_estimate: None }
    }
}


impl crate::AqmParams for RedTailParams {
    const TITLE: &'static str = "RED+Tail: drop-tail and Adaptive RED virtual queues sharing one buffer";
    const SOURCE: &'static str = "Jou, Tan & Baras, \"A Parallel Virtual Queue Structure for AQM\", CSHCN TR 2003-18, §III";
    const DOC: &'static [(&'static str, &'static str)] = RedTailParams::DOC;
    type Algo<P: QPacket> = RedTail<P>;
    fn check(&self) -> Result<(), String> {
        RedTailParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ared.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        RedTail::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use crate::Ecn;

    /// A packet for RED+Tail tests: TCP or UDP, host pair = flow.
    #[derive(Clone, Debug)]
    struct Tp {
        #[allow(dead_code)] // names the packet in failure output
        id: u64,
        size: u32,
        pair: u64,
        udp: bool,
    }
    impl QPacket for Tp {
        fn size_bytes(&self) -> u32 {
            self.size
        }
        fn flow_key(&self) -> u64 {
            self.pair
        }
        fn transport(&self) -> Transport {
            if self.udp { Transport::Udp } else { Transport::Tcp }
        }
        fn ecn(&self) -> Ecn {
            Ecn::NotEct
        }
        fn set_ce(&mut self) {}
    }

    fn ctx3<'a>(now: Time, r: &'a mut rand_xoshiro::Xoshiro256PlusPlus) -> Ctx<'a> {
        Ctx { now, rng: r, link_rate: Rate::from_mbps(3) }
    }

    #[test]
    fn service_rates_at_given_q1_follow_section_iii() {
        // Table II: minth1 2 KB, maxth1 30 KB; C = 3 Mbps; C1min = (2/30) C = 200 kbps,
        // C1max = 0.75 C = 2.25 Mbps.
        let q: RedTail<Tp> = RedTail::new(&RedTailParams::default(), Limit::bytes(160_000));
        let c = Rate::from_mbps(3);
        let cases = [(0, 0.0), (1_000, 200_000.0), (1_999, 200_000.0), (2_000, 200_000.0), (15_000, 1_500_000.0), (22_500, 2_250_000.0), (27_000, 2_250_000.0), (160_000, 2_250_000.0)];
        for (q1, want) in cases {
            assert!((q.c1(q1, c) - want).abs() < 1e-6, "q1 {q1}: {} vs {want}", q.c1(q1, c));
        }
        // With C1min = 0.1 C = 300 kbps the §III rule is followed as written: below
        // minth1 C1min, at minth1 q1 C / maxth1 = 200 kbps (Fig. 15's max() would
        // keep 300 kbps).
        let q: RedTail<Tp> = RedTail::new(&RedTailParams { c1_min_share: Some(0.1), ..RedTailParams::default() }, Limit::bytes(160_000));
        assert!((q.c1(1_000, c) - 300_000.0).abs() < 1e-6);
        assert!((q.c1(2_000, c) - 200_000.0).abs() < 1e-6);
    }

    /// Both queues backlogged, q1 held at `n1` packets of 1000 B: the share of the
    /// link the drop-tail queue gets, over 3000 departures at the link's pace.
    fn tail_share(n1: u64) -> f64 {
        let params = RedTailParams {
            classifier_packets: 0, // every TCP packet is long-lived: straight to the RED queue
            ared: AredParams { min_th: Some(QueueLimit::Bytes(50_000_000)), max_th: Some(QueueLimit::Bytes(100_000_000)), ..AredParams::default() },
            ..RedTailParams::default()
        };
        let mut q: RedTail<Tp> = RedTail::new(&params, Limit::bytes(200_000_000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        for i in 0..5000 {
            q.enqueue(Tp { id: i, size: 1000, pair: 7, udp: false }, &mut ctx3(Time::ZERO, &mut r), &mut drops);
        }
        for i in 0..n1 {
            q.enqueue(Tp { id: 10_000 + i, size: 1000, pair: 9, udp: true }, &mut ctx3(Time::ZERO, &mut r), &mut drops);
        }
        assert!(drops.is_empty());
        assert_eq!(q.virtual_backlogs().0.packets, n1);
        let step = Rate::from_mbps(3).tx_time(1000);
        let mut t = Time::ZERO;
        let mut from_tail = 0;
        for k in 0..3000 {
            t += step;
            let d = q.dequeue(&mut ctx3(t, &mut r), &mut drops).unwrap();
            if d.pkt.udp {
                from_tail += 1;
                q.enqueue(Tp { id: 20_000 + k, size: 1000, pair: 9, udp: true }, &mut ctx3(t, &mut r), &mut drops);
            }
        }
        from_tail as f64 / 3000.0
    }

    #[test]
    fn the_link_is_shared_at_c1_and_c_minus_c1() {
        // q1 = 15 KB: C1 = 15/30 C = C/2. q1 = 5 KB: C1 = C/6. q1 = 1 KB: C1min = C/15.
        // q1 = 27 KB: C1max = 0.75 C.
        for (n1, want) in [(15, 0.5), (5, 1.0 / 6.0), (1, 1.0 / 15.0), (27, 0.75)] {
            let got = tail_share(n1);
            assert!((got - want).abs() < 0.01, "q1 = {n1} KB: share {got} vs {want}");
        }
    }

    #[test]
    fn an_empty_virtual_queue_gives_the_link_to_the_other() {
        let q: RedTail<Tp> = RedTail::new(&RedTailParams::default(), Limit::bytes(160_000));
        assert_eq!(q.service_rates(Rate::from_mbps(3)), (0.0, 0.0));
        let mut q: RedTail<Tp> = RedTail::new(&RedTailParams::default(), Limit::bytes(160_000));
        let mut r = rng(1);
        q.enqueue(Tp { id: 1, size: 1000, pair: 1, udp: true }, &mut ctx3(Time::ZERO, &mut r), &mut Vec::new());
        assert_eq!(q.service_rates(Rate::from_mbps(3)), (3e6, 0.0));
    }

    #[test]
    fn the_classifier_sends_a_pairs_first_n_packets_to_the_tail_queue() {
        let params = RedTailParams { classifier_packets: 3, classifier_timeout: Duration::from_secs(1), ..RedTailParams::default() };
        let mut q: RedTail<Tp> = RedTail::new(&params, Limit::bytes(1_000_000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        let mut at = |q: &mut RedTail<Tp>, id: u64, ms: u64, udp: bool| {
            q.enqueue(Tp { id, size: 1000, pair: 5, udp }, &mut ctx3(Time::from_millis(ms), &mut r), &mut drops);
            let (a, b) = q.virtual_backlogs();
            (a.packets, b.packets)
        };
        assert_eq!(at(&mut q, 1, 0, false), (1, 0));
        assert_eq!(at(&mut q, 2, 100, false), (2, 0));
        assert_eq!(at(&mut q, 3, 200, false), (3, 0));
        assert_eq!(at(&mut q, 4, 300, false), (3, 1), "the 4th packet (> N = 3) is long-lived");
        assert_eq!(at(&mut q, 5, 1300, false), (3, 2), "gap of exactly T: still the same flow");
        assert_eq!(at(&mut q, 6, 2301, false), (4, 2), "unseen for more than T: a new short-lived flow");
        assert_eq!(at(&mut q, 7, 2302, true), (5, 2), "UDP always goes to the drop-tail queue");
        // idle pairs are forgotten at the periodic update
        q.on_timer(&mut ctx3(Time::from_millis(2500), &mut r));
        assert_eq!(q.classifier.len(), 1);
        q.on_timer(&mut ctx3(Time::from_millis(4000), &mut r));
        assert!(q.classifier.is_empty());
    }

    #[test]
    fn the_tail_queue_drops_only_when_the_shared_buffer_is_full() {
        let params = RedTailParams { classifier_packets: 0, ..RedTailParams::default() };
        let mut q: RedTail<Tp> = RedTail::new(&params, Limit::bytes(10_000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        for i in 0..8 {
            assert_eq!(q.enqueue(Tp { id: i, size: 1000, pair: 1, udp: false }, &mut ctx3(Time::ZERO, &mut r), &mut drops), Admit::Queued);
        }
        for i in 0..2 {
            assert_eq!(q.enqueue(Tp { id: 10 + i, size: 1000, pair: 2, udp: true }, &mut ctx3(Time::ZERO, &mut r), &mut drops), Admit::Queued);
        }
        assert_eq!(q.enqueue(Tp { id: 20, size: 1000, pair: 2, udp: true }, &mut ctx3(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.backlog(), Backlog { packets: 10, bytes: 10_000 });
    }

    #[test]
    fn the_red_queue_runs_adaptive_red_on_its_own_length() {
        // An average far above 2 maxth2 forces drops of long-lived packets while the
        // drop-tail queue still takes UDP.
        let params = RedTailParams { classifier_packets: 0, ..RedTailParams::default() };
        let mut q: RedTail<Tp> = RedTail::new(&params, Limit::bytes(1_000_000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.enqueue(Tp { id: 0, size: 1000, pair: 1, udp: false }, &mut ctx3(Time::ZERO, &mut r), &mut drops);
        assert_eq!((q.ared.red.cfg.min_th, q.ared.red.cfg.max_th, q.ared.red.cfg.bytes), (20_000.0, 80_000.0, true));
        assert!(q.ared.red.cfg.gentle);
        q.ared.red.vars.avg = 200_000.0;
        q.ared.red.cfg.w_q = 1e-300;
        assert_eq!(q.enqueue(Tp { id: 1, size: 1000, pair: 1, udp: false }, &mut ctx3(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Deterministic));
        assert_eq!(q.enqueue(Tp { id: 2, size: 1000, pair: 2, udp: true }, &mut ctx3(Time::ZERO, &mut r), &mut drops), Admit::Queued);
    }

    #[test]
    fn table_ii_thresholds_apply_only_when_none_are_given() {
        let p = RedTailParams { ared: AredParams { min_th: Some(QueueLimit::Packets(10)), ..AredParams::default() }, ..RedTailParams::default() };
        let a = p.ared_params();
        assert_eq!((a.min_th, a.max_th), (Some(QueueLimit::Packets(10)), None));
        let a = RedTailParams::default().ared_params();
        assert_eq!((a.min_th, a.max_th), (Some(QueueLimit::Bytes(20_000)), Some(QueueLimit::Bytes(80_000))));
        let e = RedTailParams { ared: AredParams { beta: 2.0, ..AredParams::default() }, ..RedTailParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("ared.beta:"), "{e}");
    }
}
