//! FQ-PIE: flow queueing with a PIE per flow.
//!
//! Source: Linux's `sch_fq_pie` (Tahiliani, Patil, Saicharan, Bhasi, Monis &
//! Ramakrishnan, 2019; `tc-fq_pie(8)`), whose design follows FQ-CoDel (RFC 8290):
//! packets hashed into `flows` (1024) queues, a deficit round robin over a list of new
//! and a list of old queues with a quantum of one MTU, and instead of CoDel, PIE (RFC
//! 8033) on each queue: every `tupdate` each flow's drop probability is recomputed from
//! that flow's own queueing delay, and an arriving packet meets its flow's PIE at
//! enqueue. Linux's defaults: PIE's RFC 8033 gains, target and update interval, the
//! timestamp delay estimate (`dq_rate_estimator` off), ECN off, ECN marks only while
//! the flow's probability is at most 10 % (`ecn_prob`), a limit of 10240 packets (here
//! the link's buffer), and the first probability update half a second after start.
//! No code is taken from Linux.
//!
//! Each flow runs [`crate::pie`]'s own control law ([`crate::pie::early_drop`],
//! [`crate::pie::calculate_drop_prob`], [`crate::pie::process_dequeue`]) over its
//! [`PieVars`] and its backlog, as FQ-CoDel runs CoDel's: one PIE state per flow, one
//! PIE implementation. Where Linux's `pie.h` and aqmlab's PIE differ (the
//! two-packet safeguard counts `<=` here, `<` in Linux; the burst allowance is
//! restored at enqueue after a quiet period, RFC 8033 Appendix A, where Linux resets
//! the whole state in the update), FQ-PIE follows aqmlab's PIE.
//!
//! Linux counts arrivals that find the queue over `memory_limit` (32 MB) but does not
//! drop them; so does this FQ-PIE (the counter `overmemory`). The buffer limit drops
//! the arrival, as in Linux (FQ-CoDel instead drops from the fattest flow).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::fq_codel::mix;
use crate::pie::{calculate_drop_prob, early_drop, ecn_allowed, process_dequeue, DelayEstimator, PieParams, PieVars};
use crate::queue::{Backlog, Fifo, Limit};
use crate::time::{Duration, Time};
use crate::units::Bytes;
use crate::{signal, Admit, Aqm, Cause, Counter, Ctx, Departure, Dropped, Ecn, Probe, QPacket};

/// FQ-PIE's parameters. Defaults are Linux `sch_fq_pie`'s (`tc-fq_pie(8)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqPieParams {
    /// PIE's target queueing delay per flow (tc-fq_pie: 15 ms, RFC 8033 §4.1).
    pub target: Duration,
    /// Interval between probability updates (tc-fq_pie: 15 ms, RFC 8033 §4.2).
    pub tupdate: Duration,
    /// PIE's alpha, Hz (tc-fq_pie: 2/16 = 0.125, RFC 8033 §4.2).
    pub alpha: f64,
    /// PIE's beta, Hz (tc-fq_pie: 20/16 = 1.25, RFC 8033 §4.2).
    pub beta: f64,
    /// PIE's burst allowance per flow (Linux pie: 150 ms, RFC 8033 §4.4).
    pub max_burst: Duration,
    /// Mark ECN-capable packets instead of dropping (tc-fq_pie: off).
    pub ecn: bool,
    /// Mark only while the flow's probability is under this (tc-fq_pie `ecn_prob`: 10 %).
    pub ecn_prob: f64,
    /// Scale the probability by packet size (tc-fq_pie `bytemode`: off).
    pub bytemode: bool,
    /// Estimate the delay from the departure rate (RFC 8033 §4.3) instead of packet
    /// timestamps (tc-fq_pie `dq_rate_estimator`: off).
    pub dq_rate_estimator: bool,
    /// Number of flow queues (tc-fq_pie: 1024).
    pub flows: u32,
    /// DRR quantum (tc-fq_pie: the MTU, 1514 B on Ethernet).
    pub quantum: Bytes,
    /// Arrivals over this many queued bytes are counted (not dropped; tc-fq_pie: 32 MB).
    pub memory_limit: Bytes,
    /// Salt of the flow hash (fixed for determinism; Linux hashes with a random key).
    pub hash_perturbation: u64,
}

impl Default for FqPieParams {
    fn default() -> Self {
        let pie = PieParams::default();
        FqPieParams {
            target: pie.target,
            tupdate: pie.tupdate,
            alpha: pie.alpha,
            beta: pie.beta,
            max_burst: pie.max_burst,
            ecn: false,
            ecn_prob: 0.1,
            bytemode: false,
            dq_rate_estimator: false,
            flows: 1024,
            quantum: Bytes(1514),
            memory_limit: Bytes(32 << 20),
            hash_perturbation: 0,
        }
    }
}

impl FqPieParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "PIE target delay per flow (tc-fq_pie: 15 ms; RFC 8033 §4.1)"),
        ("tupdate", "probability update interval (tc-fq_pie: 15 ms; RFC 8033 §4.2)"),
        ("alpha", "PIE gain on (delay - target), Hz (tc-fq_pie: 0.125)"),
        ("beta", "PIE gain on (delay - delay_old), Hz (tc-fq_pie: 1.25)"),
        ("max_burst", "PIE burst allowance per flow (Linux pie: 150 ms; RFC 8033 §4.4)"),
        ("ecn", "mark ECN-capable packets instead of dropping (tc-fq_pie: off)"),
        ("ecn_prob", "mark only while the flow's probability is below this (tc-fq_pie: 10%)"),
        ("bytemode", "scale the probability by packet size (tc-fq_pie: off)"),
        ("dq_rate_estimator", "departure-rate delay estimate instead of timestamps (tc-fq_pie: off)"),
        ("flows", "number of hashed flow queues (tc-fq_pie: 1024)"),
        ("quantum", "DRR quantum (tc-fq_pie: the MTU, 1514 B)"),
        ("memory_limit", "arrivals above this backlog are counted, not dropped, as in Linux (tc-fq_pie: 32 MB)"),
        ("hash_perturbation", "salt of the flow hash (fixed for determinism; Linux: random)"),
    ];

    /// The PIE every flow runs.
    pub fn pie(&self) -> PieParams {
        PieParams {
            target: self.target,
            tupdate: self.tupdate,
            alpha: self.alpha,
            beta: self.beta,
            max_burst: self.max_burst,
            estimator: if self.dq_rate_estimator { DelayEstimator::DepartureRate } else { DelayEstimator::Timestamp },
            ecn: self.ecn,
            ecn_threshold: self.ecn_prob,
            bytemode: self.bytemode,
            ..PieParams::default()
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.pie().validate().map_err(|e| e.replace("ecn_threshold:", "ecn_prob:"))?;
        if self.flows == 0 || self.flows > 65_536 {
            return Err(format!("flows: must be in [1, 65536] (as in Linux), got {}", self.flows));
        }
        if self.quantum.0 == 0 {
            return Err("quantum: must be greater than zero".into());
        }
        Ok(())
    }
}

/// One flow queue: its packets, its DRR deficit and its PIE state.
#[derive(Debug)]
pub struct FlowQueue<P> {
    fifo: Fifo<P>,
    pub deficit: i64,
    pub vars: PieVars,
    /// On the new or the old list.
    pub active: bool,
}

/// Linux starts the probability timer half a second after the qdisc is created
/// (`fq_pie_init`: `jiffies + HZ / 2`), then runs it every `tupdate`.
const FIRST_UPDATE: Time = Time::from_millis(500);

/// FQ-PIE.
#[derive(Debug)]
pub struct FqPie<P> {
    pub params: FqPieParams,
    pie: PieParams,
    pub queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    backlog: Backlog,
    limit: Limit,
    next_update: Time,
    last_served: Option<u32>,
    /// Arrivals that found more than `memory_limit` bytes queued.
    pub overmemory: u64,
    /// Flows put on the new list.
    pub new_flow_count: u64,
}

impl<P: QPacket> FqPie<P> {
    pub fn new(params: &FqPieParams, limit: Limit) -> Self {
        let pie = params.pie();
        let queues = (0..params.flows).map(|_| FlowQueue { fifo: Fifo::new(), deficit: 0, vars: PieVars::new(&pie), active: false }).collect();
        FqPie {
            params: params.clone(),
            pie,
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog: Backlog::default(),
            limit,
            next_update: FIRST_UPDATE,
            last_served: None,
            overmemory: 0,
            new_flow_count: 0,
        }
    }

    /// The queue a flow hashes to.
    pub fn queue_of(&self, flow_key: u64) -> usize {
        (mix(flow_key ^ self.params.hash_perturbation) % self.params.flows as u64) as usize
    }

    pub fn new_list(&self) -> &VecDeque<u32> {
        &self.new_flows
    }
    pub fn old_list(&self) -> &VecDeque<u32> {
        &self.old_flows
    }

    /// Every flow's PIE update (Linux `fq_pie_timer`: all flows, empty or not).
    pub fn update(&mut self, ctx: &mut Ctx<'_>) {
        for q in &mut self.queues {
            let backlog = q.vars.measured_backlog(&self.pie, q.fifo.bytes());
            calculate_drop_prob(&self.pie, &mut q.vars, backlog, ctx);
        }
        self.next_update = ctx.now + self.pie.tupdate;
    }
}

impl<P: QPacket> Aqm<P> for FqPie<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let idx = self.queue_of(pkt.flow_key());
        let size = pkt.size_bytes();
        let q = &mut self.queues[idx];
        if self.limit.overflows(self.backlog, size) {
            q.vars.accu_prob = 0.0;
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        if self.backlog.bytes > self.params.memory_limit.0 + size as u64 {
            self.overmemory += 1;
        }
        // The flow's PIE decides on its own backlog (Linux: sel_flow->backlog).
        let (pkt, admit) = if early_drop(&self.pie, &mut q.vars, q.fifo.bytes(), size, ctx) {
            // RFC 8033 §5.4 with §5.1: a mark restarts the accumulation as a drop does.
            q.vars.accu_prob = 0.0;
            match signal(pkt, Cause::Random, ecn_allowed(&self.pie, &q.vars), drops) {
                Ok(marked) => (marked, Admit::Marked(Cause::Random)),
                Err(admit) => return admit,
            }
        } else {
            (pkt, Admit::Queued)
        };
        q.vars.on_arrival(&self.pie, size as u64, pkt.ecn() == Ecn::Ce);
        q.fifo.push(pkt, ctx.now);
        self.backlog.packets += 1;
        self.backlog.bytes += size as u64;
        if !q.active {
            q.active = true;
            q.deficit = self.params.quantum.0 as i64;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        admit
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            let q = &mut self.queues[idx];
            if q.deficit <= 0 {
                q.deficit += self.params.quantum.0 as i64;
                if from_new { self.new_flows.pop_front() } else { self.old_flows.pop_front() };
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let Some(item) = q.fifo.pop() else {
                // Empty: a new flow passes through the old list if that is not empty
                // (against starvation), otherwise it leaves the lists.
                if from_new { self.new_flows.pop_front() } else { self.old_flows.pop_front() };
                if from_new && !self.old_flows.is_empty() {
                    self.old_flows.push_back(idx as u32);
                } else {
                    q.active = false;
                }
                continue;
            };
            let size = item.pkt.size_bytes() as u64;
            self.backlog.packets -= 1;
            self.backlog.bytes -= size;
            q.deficit -= size as i64;
            let sojourn = ctx.now.saturating_since(item.enqueued_at);
            let ce = item.pkt.ecn() == Ecn::Ce;
            process_dequeue(&self.pie, &mut q.vars, size, ce, sojourn, ctx.now, q.fifo.bytes());
            self.last_served = Some(idx as u32);
            return Some(Departure { pkt: item.pkt, sojourn, marked: None });
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.next_update)
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.update(ctx);
    }

    /// The largest flow probability, and the delay estimate of the flow served last.
    fn probe(&self) -> Probe {
        let p = self.queues.iter().map(|q| q.vars.drop_prob).fold(0.0, f64::max);
        let d = self.last_served.map(|i| self.queues[i as usize].vars.qdelay);
        Probe { drop_prob: Some(p), delay_estimate: d }
    }

    fn counters(&self, out: &mut Vec<Counter>) {
        out.push(Counter::count("", "overmemory", self.overmemory));
        out.push(Counter::count("", "new_flow_count", self.new_flow_count));
        out.push(Counter::count("", "new_flows_len", self.new_flows.len() as u64));
        out.push(Counter::count("", "old_flows_len", self.old_flows.len() as u64));
    }
}

impl crate::spec::AqmParams for FqPieParams {
    const TITLE: &'static str = "Flow Queue PIE: DRR over hashed flow queues, a PIE in each";
    const SOURCE: &'static str = "Linux sch_fq_pie (Tahiliani et al., 2019), tc-fq_pie(8); PIE per RFC 8033";
    const DOC: &'static [(&'static str, &'static str)] = FqPieParams::DOC;
    type Algo<P: QPacket> = Box<FqPie<P>>;
    fn check(&self) -> Result<(), String> {
        FqPieParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Box::new(FqPie::new(self, limit))
    }
    fn built_bytes<P: QPacket>(&self) -> usize {
        std::mem::size_of::<FqPie<P>>() + self.flows as usize * std::mem::size_of::<FlowQueue<P>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn fq(params: FqPieParams) -> FqPie<TestPkt> {
        FqPie::new(&params, Limit::packets(10_240))
    }

    fn p(id: u64, flow: u64) -> TestPkt {
        TestPkt { id, size: 1500, flow, ecn: Ecn::NotEct }
    }

    fn send(q: &mut FqPie<TestPkt>, pkt: TestPkt, now: Time, r: &mut rand_xoshiro::Xoshiro256PlusPlus) -> Admit {
        q.enqueue(pkt, &mut ctx(now, r), &mut Vec::new())
    }

    fn take(q: &mut FqPie<TestPkt>, now: Time, r: &mut rand_xoshiro::Xoshiro256PlusPlus) -> Option<u64> {
        q.dequeue(&mut ctx(now, r), &mut Vec::new()).map(|d| d.pkt.id)
    }

    const A: u64 = 1;
    const B: u64 = 2;

    #[test]
    fn defaults_are_linux_fq_pie() {
        let d = FqPieParams::default();
        let pie = d.pie();
        assert_eq!((pie.target, pie.tupdate), (Duration::from_millis(15), Duration::from_millis(15)));
        assert_eq!((pie.alpha, pie.beta), (0.125, 1.25));
        assert_eq!(pie.estimator, DelayEstimator::Timestamp);
        assert_eq!((d.flows, d.quantum, d.memory_limit), (1024, Bytes(1514), Bytes(32 << 20)));
        assert!(!pie.ecn && pie.ecn_threshold == 0.1);
        let q = fq(d);
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(500)));
    }

    #[test]
    fn drr_over_new_and_old_lists_with_a_1514_byte_quantum() {
        // As FQ-CoDel (RFC 8290 §4.2) by hand: A1, A2 (deficit 1514 -> 14 -> -1486), B1,
        // B2, then A3 (28 -> -1472), B3.
        let mut q = fq(FqPieParams::default());
        let mut r = rng(1);
        for i in 0..3 {
            send(&mut q, p(10 + i, A), Time::ZERO, &mut r);
        }
        for i in 0..3 {
            send(&mut q, p(20 + i, B), Time::ZERO, &mut r);
        }
        let order: Vec<u64> = (0..7).filter_map(|_| take(&mut q, Time::from_millis(1), &mut r)).collect();
        assert_eq!(order, vec![10, 11, 20, 21, 12, 22]);
        assert!(q.new_list().is_empty() && q.old_list().is_empty());
        assert_eq!(q.new_flow_count, 2);
    }

    #[test]
    fn each_flow_has_its_own_pie() {
        // A keeps a standing queue: its sojourns (timestamp estimator) feed its own PIE;
        // B's single packets see none of it.
        let mut q = fq(FqPieParams::default());
        let mut r = rng(1);
        for i in 0..100 {
            send(&mut q, p(i, A), Time::ZERO, &mut r);
        }
        // A packet of A leaves after 40 ms in the queue; B sends and is served at once.
        while q.queues[q.queue_of(A)].fifo.len() > 90 {
            take(&mut q, Time::from_millis(40), &mut r);
        }
        send(&mut q, p(1000, B), Time::from_millis(40), &mut r);
        assert_eq!(take(&mut q, Time::from_millis(40), &mut r), Some(1000), "a new flow goes first");
        // the update at 500 ms: A's delay estimate 40 ms, B's 0 (empty)
        q.update(&mut ctx(Time::from_millis(500), &mut r));
        let (va, vb) = (&q.queues[q.queue_of(A)].vars, &q.queues[q.queue_of(B)].vars);
        assert_eq!(va.qdelay, Duration::from_millis(40));
        // RFC 8033 §4.2 at drop_prob 0 (scaled by 1/2048):
        // (0.125*(0.040-0.015) + 1.25*0.040) / 2048
        let want = (0.125 * 0.025 + 1.25 * 0.040) / 2048.0;
        assert!((va.drop_prob - want).abs() < 1e-15, "{}", va.drop_prob);
        assert_eq!((vb.qdelay, vb.drop_prob), (Duration::ZERO, 0.0));
        assert_eq!(Aqm::<TestPkt>::next_timer(&q), Some(Time::from_millis(515)));
    }

    #[test]
    fn the_flow_pie_drops_at_enqueue_on_its_own_backlog() {
        let mut q = fq(FqPieParams::default());
        let mut r = rng(1);
        // A: a large backlog and a drop probability of 1 without burst allowance.
        for i in 0..10 {
            send(&mut q, p(i, A), Time::ZERO, &mut r);
        }
        let ia = q.queue_of(A);
        q.queues[ia].vars.burst_allowance = Duration::ZERO;
        q.queues[ia].vars.drop_prob = 1.0;
        q.queues[ia].vars.qdelay_old = Duration::from_millis(100);
        let mut drops = Vec::new();
        assert_eq!(q.enqueue(p(50, A), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Random));
        // B, whose PIE is at rest, is admitted
        assert_eq!(q.enqueue(p(51, B), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Queued);
        // with ECN on and an ECT packet: dropped above ecn_prob, marked below
        let mut q2 = fq(FqPieParams { ecn: true, ..FqPieParams::default() });
        for i in 0..10 {
            send(&mut q2, p(i, A), Time::ZERO, &mut r);
        }
        let v = &mut q2.queues[ia].vars;
        v.burst_allowance = Duration::ZERO;
        v.drop_prob = 1.0;
        v.qdelay_old = Duration::from_millis(100);
        let ect = TestPkt { id: 60, size: 1500, flow: A, ecn: Ecn::Ect0 };
        assert_eq!(q2.enqueue(ect.clone(), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Random));
        q2.queues[ia].vars.drop_prob = 0.05;
        let n = (0..2000).filter(|_| q2.enqueue(ect.clone(), &mut ctx(Time::ZERO, &mut r), &mut drops) == Admit::Marked(Cause::Random)).count();
        assert!((60..140).contains(&n), "{n}");
    }

    #[test]
    fn the_buffer_limit_drops_the_arrival_and_memory_is_only_counted() {
        let mut q: FqPie<TestPkt> = FqPie::new(&FqPieParams { memory_limit: Bytes(3000), ..FqPieParams::default() }, Limit::packets(4));
        let mut r = rng(1);
        for i in 0..4 {
            assert_eq!(send(&mut q, p(i, A), Time::ZERO, &mut r), Admit::Queued);
        }
        // the 4th found 4500 B, not more than 3000 + 1500
        assert_eq!(q.overmemory, 0);
        // the 5th is over the buffer limit: dropped, and (as in Linux) not counted
        assert_eq!(send(&mut q, p(4, B), Time::ZERO, &mut r), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.overmemory, 0);
        assert_eq!(q.backlog(), Backlog { packets: 4, bytes: 6000 });
        // after one departure, the next arrival finds 4500 B: admitted, not counted;
        // with 6000 B queued again the one after that is counted
        take(&mut q, Time::ZERO, &mut r);
        assert_eq!(send(&mut q, p(5, B), Time::ZERO, &mut r), Admit::Queued);
        take(&mut q, Time::ZERO, &mut r);
        q.params.memory_limit = Bytes(2000);
        assert_eq!(send(&mut q, p(6, B), Time::ZERO, &mut r), Admit::Queued);
        assert_eq!(q.overmemory, 1);
    }
}
