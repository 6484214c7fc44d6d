//! FQ-CoDel: the Flow Queue CoDel packet scheduler and AQM.
//!
//! Source: Hoeiland-Joergensen, McKenney, Taht, Gettys & Dumazet, RFC 8290 (2018):
//! packets hashed into `flows` (1024) queues (§4.1.1, §5.2.5), each managed by CoDel
//! (§4, the per-queue state of [`crate::codel`], run by [`codel_dequeue`]); a deficit
//! round robin over a list of new and a list of old queues with a 1514-byte quantum
//! (§4.2, §5.2.4); on overflow, drop from the head of the queue with the largest byte
//! count, in a batch of up to 64 packets or half that queue's bytes (§4.1; Linux
//! `fq_codel_drop`, which also adds them to that queue's CoDel count), also when a
//! memory limit is passed (Linux `memory_limit`, 32 MB);
//! ECN marking on by default (§5.2.6). Structure after Linux's `sch_fq_codel.c`; no
//! code is taken from it.
//!
//! As in Linux, CoDel's "at most one MTU" rule looks at the backlog of the whole
//! FQ-CoDel (`sch->qstats.backlog`), not of the flow's own queue; packet memory is
//! counted as packet bytes (Linux counts buffer truesize).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::codel::{codel_dequeue, CeClock, CodelParams, CodelQueue, CodelVars, Stamped};
use crate::queue::{Backlog, Fifo, Limit, Queued};
use crate::time::{Duration, Time};
use crate::units::Bytes;
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Probe, QPacket};

/// FQ-CoDel's parameters. Defaults are RFC 8290's and Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelParams {
    /// CoDel's TARGET (RFC 8290 §5.2.2: 5 ms).
    pub target: Duration,
    /// CoDel's INTERVAL (RFC 8290 §5.2.1: 100 ms).
    pub interval: Duration,
    /// CoDel's MAXPACKET (RFC 8289 §5: the MTU, 1500 B).
    pub mtu: Bytes,
    /// DRR quantum (RFC 8290 §5.2.4: 1514 B, an Ethernet frame).
    pub quantum: Bytes,
    /// Number of flow queues (RFC 8290 §5.2.5: 1024).
    pub flows: u32,
    /// Memory limit: past it, drop as on overflow (Linux `memory_limit`: 32 MB).
    pub memory_limit: Bytes,
    /// Most packets dropped from the fattest queue in one overflow (RFC 8290 §4.1,
    /// Linux `drop_batch`: 64).
    pub drop_batch_size: u32,
    /// Mark ECN-capable packets instead of dropping (RFC 8290 §5.2.6: on by default).
    pub ecn: bool,
    /// Leave CE-marked packets' transmission time out of CoDel's sojourn (Khademi,
    /// Ros & Welzl, IETF 88; see docs/aqm/codel.md).
    pub ignore_ce_in_measure: bool,
    /// Salt of the flow hash (Linux draws a random perturbation; here fixed, 0).
    pub hash_perturbation: u64,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu: Bytes(1500),
            quantum: Bytes(1514),
            flows: 1024,
            memory_limit: Bytes(32 << 20),
            drop_batch_size: 64,
            ecn: true,
            ignore_ce_in_measure: false,
            hash_perturbation: 0,
        }
    }
}

impl FqCodelParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "CoDel TARGET per queue (RFC 8290 §5.2.2: 5 ms)"),
        ("interval", "CoDel INTERVAL per queue (RFC 8290 §5.2.1: 100 ms)"),
        ("mtu", "CoDel MAXPACKET, checked against the whole backlog as Linux does (1500 B)"),
        ("quantum", "DRR quantum (RFC 8290 §5.2.4: 1514 B)"),
        ("flows", "number of hashed flow queues (RFC 8290 §5.2.5: 1024)"),
        ("memory_limit", "packet bytes held before overflow drops (Linux memory_limit: 32 MB)"),
        ("drop_batch_size", "packets dropped at most per overflow from the fattest queue (RFC 8290 §4.1, Linux: 64)"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 8290 §5.2.6: on)"),
        ("ignore_ce_in_measure", "leave CE-marked packets' transmission time out of the sojourn (Khademi, Ros & Welzl, IETF 88)"),
        ("hash_perturbation", "salt of the flow hash (fixed for determinism; Linux draws it at random)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        self.codel().validate()?;
        if self.quantum.0 == 0 {
            return Err("quantum: must be greater than zero".into());
        }
        // Linux refuses more than 65536 flow queues (sch_fq_codel.c, fq_codel_change);
        // the queues are allocated up front, so four billion would take all the memory
        if self.flows == 0 || self.flows > 65_536 {
            return Err(format!("flows: must be 1 to 65536, got {}", self.flows));
        }
        if self.drop_batch_size == 0 {
            return Err("drop_batch_size: must be at least 1, got 0".into());
        }
        if self.memory_limit.0 == 0 {
            return Err("memory_limit: must be greater than zero".into());
        }
        Ok(())
    }

    /// The CoDel every flow queue runs.
    pub fn codel(&self) -> CodelParams {
        CodelParams { target: self.target, interval: self.interval, mtu: self.mtu, ecn: self.ecn, ignore_ce_in_measure: self.ignore_ce_in_measure }
    }
}

/// One flow queue: its packets, its DRR deficit and its CoDel state.
#[derive(Debug)]
pub struct FlowQueue<P> {
    fifo: Fifo<Stamped<P>>,
    pub deficit: i64,
    pub cvars: CodelVars,
    /// On the new or the old list ("active" in RFC 8290 §4.1).
    pub active: bool,
}

/// A flow queue as CoDel reaches it: its FIFO, with the qdisc's backlog kept in step.
struct FlowView<'a, P> {
    fifo: &'a mut Fifo<Stamped<P>>,
    total: &'a mut Backlog,
}

impl<P: QPacket> CodelQueue<P> for FlowView<'_, P> {
    fn pop(&mut self) -> Option<Queued<Stamped<P>>> {
        let q = self.fifo.pop()?;
        self.total.packets -= 1;
        self.total.bytes -= q.pkt.size_bytes() as u64;
        Some(q)
    }
    fn backlog_bytes(&self) -> u64 {
        // Linux passes &sch->qstats.backlog: the whole qdisc's bytes.
        self.total.bytes
    }
}

/// FQ-CoDel.
#[derive(Debug)]
pub struct FqCodel<P> {
    pub params: FqCodelParams,
    codel: CodelParams,
    pub queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    backlog: Backlog,
    limit: Limit,
    ce: CeClock,
    last_delay: Option<Duration>,
}

/// splitmix64's finalizer: a fixed, platform-independent hash of the flow key.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl<P: QPacket> FqCodel<P> {
    pub fn new(params: &FqCodelParams, limit: Limit) -> Self {
        let queues = (0..params.flows).map(|_| FlowQueue { fifo: Fifo::new(), deficit: 0, cvars: CodelVars::default(), active: false }).collect();
        FqCodel {
            params: params.clone(),
            codel: params.codel(),
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog: Backlog::default(),
            limit,
            ce: CeClock::default(),
            last_delay: None,
        }
    }

    /// The queue a flow hashes to (RFC 8290 §4.1.1).
    pub fn queue_of(&self, flow_key: u64) -> usize {
        (mix(flow_key ^ self.params.hash_perturbation) % self.params.flows as u64) as usize
    }

    pub fn new_list(&self) -> &VecDeque<u32> {
        &self.new_flows
    }
    pub fn old_list(&self) -> &VecDeque<u32> {
        &self.old_flows
    }

    fn over_limit(&self) -> bool {
        let b = self.backlog;
        self.limit.packets.is_some_and(|p| b.packets > p) || self.limit.bytes.is_some_and(|x| b.bytes > x) || b.bytes > self.params.memory_limit.0
    }

    /// RFC 8290 §4.1 / Linux `fq_codel_drop`: from the queue with the most bytes, drop
    /// packets from the head until half its bytes are gone or `drop_batch_size`
    /// packets are.
    fn drop_from_fattest(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) {
        let mut fat = 0;
        let mut max = 0;
        for (i, q) in self.queues.iter().enumerate() {
            if q.fifo.bytes() > max {
                max = q.fifo.bytes();
                fat = i;
            }
        }
        let threshold = max / 2;
        let q = &mut self.queues[fat];
        let mut len = 0;
        let mut n = 0;
        while let Some(item) = q.fifo.pop() {
            let size = item.pkt.size_bytes() as u64;
            len += size;
            n += 1;
            self.backlog.packets -= 1;
            self.backlog.bytes -= size;
            drops.push(Dropped { pkt: item.pkt.pkt, cause: Cause::Overflow, sojourn: Some(now.saturating_since(item.enqueued_at)) });
            if n >= self.params.drop_batch_size || len >= threshold {
                break;
            }
        }
        // Linux fq_codel_drop: the drops count toward that queue's CoDel too
        // (`flow->cvars.count += i`), so its control law signals harder when it
        // next drops (RFC 8289 count, resumed from count - lastcount).
        q.cvars.count = q.cvars.count.saturating_add(n);
    }
}

impl<P: QPacket> Aqm<P> for FqCodel<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        // RFC 8290 §4.1: classify, timestamp, add to the flow's queue ...
        let idx = self.queue_of(pkt.flow_key());
        let size = pkt.size_bytes() as u64;
        let q = &mut self.queues[idx];
        q.fifo.push(Stamped { pkt, ce_clock: self.ce.0 }, ctx.now);
        self.backlog.packets += 1;
        self.backlog.bytes += size;
        // ... "if the queue is not currently active, it is added to the end of the list
        // of new queues, and its deficit is initiated to the configured quantum" ...
        if !q.active {
            q.active = true;
            q.deficit = self.params.quantum.0 as i64;
            self.new_flows.push_back(idx as u32);
        }
        // ... then, over the limit, drop from the fattest queue (the arrival is
        // usually not among the packets dropped).
        while self.over_limit() {
            self.drop_from_fattest(ctx.now, drops);
        }
        Admit::Queued
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        // RFC 8290 §4.2.
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            let quantum = self.params.quantum.0 as i64;
            let q = &mut self.queues[idx];
            if q.deficit <= 0 {
                // "the queue ... is given an additional amount of deficit (the configured
                // quantum) and put onto the end of the list of old queues"
                q.deficit += quantum;
                if from_new { self.new_flows.pop_front() } else { self.old_flows.pop_front() };
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut view = FlowView { fifo: &mut q.fifo, total: &mut self.backlog };
            match codel_dequeue(&self.codel, &mut q.cvars, &mut self.ce, &mut view, ctx, drops) {
                None => {
                    // "if the queue is empty ... a queue in the list of new queues is moved
                    // to the end of the list of old queues (if that is not empty), to
                    // prevent starvation; otherwise it is removed from the list".
                    if from_new { self.new_flows.pop_front() } else { self.old_flows.pop_front() };
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        q.active = false;
                    }
                }
                Some(dep) => {
                    q.deficit -= dep.pkt.size_bytes() as i64;
                    self.last_delay = Some(q.cvars.ldelay);
                    return Some(dep);
                }
            }
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: None, delay_estimate: self.last_delay }
    }
}


impl crate::AqmParams for FqCodelParams {
    const TITLE: &'static str = "Flow Queue CoDel: DRR over hashed flow queues, CoDel in each";
    const SOURCE: &'static str = "Hoeiland-Joergensen, McKenney, Taht, Gettys & Dumazet, RFC 8290 (2018)";
    const DOC: &'static [(&'static str, &'static str)] = FqCodelParams::DOC;
    type Algo<P: QPacket> = Box<FqCodel<P>>;
    fn check(&self) -> Result<(), String> {
        FqCodelParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Box::new(FqCodel::new(self, limit))
    }
    fn built_bytes<P: QPacket>(&self) -> usize {
        std::mem::size_of::<FqCodel<P>>() + self.flows as usize * std::mem::size_of::<FlowQueue<P>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn fq(params: FqCodelParams, limit: Limit) -> FqCodel<TestPkt> {
        FqCodel::new(&params, limit)
    }

    fn p(id: u64, flow: u64) -> TestPkt {
        TestPkt { id, size: 1500, flow, ecn: crate::Ecn::NotEct }
    }

    fn send(q: &mut FqCodel<TestPkt>, id: u64, flow: u64, now: Time) -> Vec<Dropped<TestPkt>> {
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.enqueue(p(id, flow), &mut ctx(now, &mut r), &mut drops);
        drops
    }

    fn take(q: &mut FqCodel<TestPkt>, now: Time) -> Option<u64> {
        let mut r = rng(1);
        q.dequeue(&mut ctx(now, &mut r), &mut Vec::new()).map(|d| d.pkt.id)
    }

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;

    #[test]
    fn flows_hash_to_distinct_queues_here() {
        let q = fq(FqCodelParams::default(), Limit::packets(1000));
        let (a, b, c) = (q.queue_of(A), q.queue_of(B), q.queue_of(C));
        assert!(a != b && b != c && a != c);
        assert!(a < 1024 && b < 1024 && c < 1024);
    }

    #[test]
    fn drr_order_with_a_1514_byte_quantum() {
        // RFC 8290 §4.2 by hand, 1500 B packets, quantum 1514. New list [A, B].
        // A: deficit 1514 -> A1 (14) -> A2 (-1486); A gets +1514 = 28, to old.
        // B: B1, B2 likewise; old = [A, B]. A: 28 -> A3 (-1472); +1514 = 42, to the
        // tail; B: B3. Then both are found empty and leave the lists.
        let mut q = fq(FqCodelParams::default(), Limit::packets(1000));
        for i in 0..3 {
            send(&mut q, 10 + i, A, Time::ZERO);
        }
        for i in 0..3 {
            send(&mut q, 20 + i, B, Time::ZERO);
        }
        let order: Vec<u64> = (0..7).filter_map(|_| take(&mut q, Time::from_millis(1))).collect();
        assert_eq!(order, vec![10, 11, 20, 21, 12, 22]);
        assert!(q.new_list().is_empty() && q.old_list().is_empty());
        assert!(q.queues.iter().all(|f| !f.active));
    }

    #[test]
    fn a_new_flow_is_served_before_the_old_ones_and_an_emptied_one_waits_on_the_old_list() {
        // Quantum 4500 B = three 1500 B packets per turn, to see the lists at work.
        let mut q = fq(FqCodelParams { quantum: Bytes(4500), ..FqCodelParams::default() }, Limit::packets(1000));
        for i in 0..10 {
            send(&mut q, 10 + i, A, Time::ZERO);
        }
        // A (new, deficit 4500): 10, 11, 12; then +4500, to the old list, 13.
        let first: Vec<u64> = (0..4).filter_map(|_| take(&mut q, Time::ZERO)).collect();
        assert_eq!(first, vec![10, 11, 12, 13]);
        assert_eq!(q.old_list().iter().copied().collect::<Vec<_>>(), vec![q.queue_of(A) as u32]);
        send(&mut q, 30, C, Time::ZERO);
        assert_eq!(q.new_list().iter().copied().collect::<Vec<_>>(), vec![q.queue_of(C) as u32]);
        assert_eq!(take(&mut q, Time::ZERO), Some(30), "the new flow goes first");
        // C is now empty on the new list while the old list is not: it moves to the
        // end of the old list (RFC 8290 §4.2, against starvation); A (deficit 3000)
        // sends 14.
        assert_eq!(take(&mut q, Time::ZERO), Some(14));
        assert!(q.queues[q.queue_of(C)].active);
        assert_eq!(q.old_list().iter().copied().collect::<Vec<_>>(), vec![q.queue_of(A) as u32, q.queue_of(C) as u32]);
        // A packet for C now is not "new": C waits behind A's turn (A: 15 with its
        // last 1500 B of deficit), then sends 31 (deficit 3000), then A again.
        send(&mut q, 31, C, Time::ZERO);
        assert!(q.new_list().is_empty());
        let next: Vec<u64> = (0..3).filter_map(|_| take(&mut q, Time::ZERO)).collect();
        assert_eq!(next, vec![15, 31, 16]);
        // C, found empty on the old list, has left it.
        assert!(!q.queues[q.queue_of(C)].active);
    }

    #[test]
    fn an_emptied_new_flow_leaves_when_the_old_list_is_empty() {
        let mut q = fq(FqCodelParams::default(), Limit::packets(1000));
        send(&mut q, 1, A, Time::ZERO);
        assert_eq!(take(&mut q, Time::ZERO), Some(1));
        assert_eq!(take(&mut q, Time::ZERO), None);
        assert!(!q.queues[q.queue_of(A)].active);
        assert!(q.new_list().is_empty() && q.old_list().is_empty());
        // and comes back as a new flow
        send(&mut q, 2, A, Time::ZERO);
        assert_eq!(q.new_list().len(), 1);
    }

    #[test]
    fn overflow_drops_half_of_the_fattest_queue_from_its_head() {
        // limit 20 packets: A holds 16 (24000 B), B 4; B's 5th makes 21. A is the
        // fattest: drop from its head until 12000 B are gone: 8 packets, ids 0..8.
        let mut q = fq(FqCodelParams::default(), Limit::packets(20));
        for i in 0..16 {
            assert!(send(&mut q, i, A, Time::ZERO).is_empty());
        }
        for i in 0..4 {
            assert!(send(&mut q, 100 + i, B, Time::from_millis(1)).is_empty());
        }
        let d = send(&mut q, 104, B, Time::from_millis(3));
        assert_eq!(d.iter().map(|x| x.pkt.id).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert!(d.iter().all(|x| x.cause == Cause::Overflow && x.sojourn == Some(Duration::from_millis(3))));
        assert_eq!(q.backlog(), Backlog { packets: 13, bytes: 19_500 });
        // Linux fq_codel_drop: "tell codel to increase its signal strength also":
        // the 8 overflow drops add to A's CoDel count; B's is untouched.
        let (a, b) = (q.queue_of(A), q.queue_of(B));
        assert_eq!((q.queues[a].cvars.count, q.queues[b].cvars.count), (8, 0));
        // with a batch of 3, only 3 go
        let mut q = fq(FqCodelParams { drop_batch_size: 3, ..FqCodelParams::default() }, Limit::packets(20));
        for i in 0..16 {
            send(&mut q, i, A, Time::ZERO);
        }
        for i in 0..5 {
            send(&mut q, 100 + i, B, Time::ZERO);
        }
        assert_eq!(q.backlog().packets, 18);
    }

    #[test]
    fn the_memory_limit_also_triggers_overflow_drops() {
        // 10 kB of memory: the 7th 1500 B packet (10500 B) overflows; A is the only and
        // fattest queue: drop until 5250 B are gone: 4 packets.
        let mut q = fq(FqCodelParams { memory_limit: Bytes(10_000), ..FqCodelParams::default() }, Limit::packets(1000));
        for i in 0..6 {
            assert!(send(&mut q, i, A, Time::ZERO).is_empty());
        }
        assert_eq!(send(&mut q, 6, A, Time::ZERO).len(), 4);
        assert_eq!(q.backlog().packets, 3);
    }

    #[test]
    fn each_queue_has_its_own_codel() {
        // A: a standing queue of 300 packets from t = 0; B: one packet every 10 ms.
        // The link takes a packet every 1.2 ms. CoDel drops from A only; B's packets
        // wait at most a DRR round and B's CoDel never enters the dropping state.
        let mut q = fq(FqCodelParams::default(), Limit::packets(10_000));
        for i in 0..300 {
            send(&mut q, i, A, Time::ZERO);
        }
        let mut r = rng(1);
        let mut drops = Vec::new();
        let mut b_id = 1000;
        let mut next_b = Time::ZERO;
        let mut t = Time::ZERO;
        let mut b_sojourn = Duration::ZERO;
        while t < Time::from_millis(350) {
            if t >= next_b {
                q.enqueue(p(b_id, B), &mut ctx(t, &mut r), &mut drops);
                b_id += 1;
                next_b += Duration::from_millis(10);
            }
            if let Some(d) = q.dequeue(&mut ctx(t, &mut r), &mut drops) {
                if d.pkt.flow == B {
                    b_sojourn = b_sojourn.max(d.sojourn);
                }
            }
            t += Duration::from_micros(1200);
        }
        assert!(!drops.is_empty());
        assert!(drops.iter().all(|d| d.pkt.flow == A && d.cause == Cause::Deterministic));
        assert!(q.queues[q.queue_of(A)].cvars.dropping);
        assert!(!q.queues[q.queue_of(B)].cvars.dropping);
        assert!(b_sojourn <= Duration::from_micros(2400), "{b_sojourn:?}");
    }
}
