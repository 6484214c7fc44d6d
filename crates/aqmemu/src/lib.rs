//! # aqmemu: a userspace bottleneck for real Linux traffic
//!
//! Packets leave the senders' network namespace through one TUN device and enter the
//! receivers' namespace through another; in between, this process plays the
//! scenario's bottleneck link in both directions: a queue run by the very same
//! [`aqm`] state machine as the simulator, a transmitter that serializes packets at
//! the link rate, and a propagation delay line. It is the userspace equivalent of a
//! Linux qdisc plus netem (or of Mahimahi's link shells), and needs neither.
//!
//! Timing. The clock is CLOCK_MONOTONIC in integer nanoseconds. The transmitter keeps
//! exact byte accounting: a packet starts when the previous one finished (or when it
//! arrived, if the link was idle), however late the loop wakes, so the delivered rate
//! over any busy period is the configured one. The loop sleeps in `ppoll` until the
//! next deadline (a transmission end, a delivery, an AQM timer, a sample) minus a
//! short margin, then spins to the deadline.
//!
//! Records are the simulator's columns ([`aqmsim::record::PacketLog`],
//! [`aqmsim::record::LinkSeries`]) with times relative to the run's start, so the
//! Python side writes the same tables and summary for emulated and simulated runs.

pub mod packet;
pub mod plan;
pub mod sys;
pub mod trace;

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::os::fd::RawFd;

use aqm::{Admit, Ctx, Departure, Dropped, Duration, Limit, Qdisc, Rate, Stats, Time};
use aqmsim::record::{LinkInfo, LinkSeries, PacketLog, EV_DEQUEUE, EV_DROP, EV_ENQUEUE, EV_MARK};
use aqmsim::Scenario;
use rand_xoshiro::Xoshiro256PlusPlus;

pub use packet::{FlowMap, IpPacket, Pool};
pub use trace::Trace;

/// One direction of the bottleneck, as configured.
#[derive(Clone, Debug)]
pub struct PipeConfig {
    pub name: String,
    /// The rate at the start (and throughout, without a `schedule`).
    pub rate: Rate,
    /// Rate changes, from the run's start: from `at` on, the link runs at the rate
    /// (the scenario's `bottleneck.schedule`). A packet being serialized finishes at
    /// the rate it started with, as in the simulator.
    pub schedule: Vec<(Duration, Rate)>,
    /// One-way propagation delay added after serialization, for packets of no flow
    /// of the plan.
    pub delay: Duration,
    /// The propagation delay of each flow's packets in this direction (flow ids
    /// beyond the vector take `delay`): the flow's whole path (its group's access
    /// delays, the bottleneck's, its own extra delay), see [`plan::FlowPlan`].
    pub flow_delays: Vec<Duration>,
    pub aqm: aqm::AqmSpec,
    pub limit: Limit,
    /// A Mahimahi delivery trace instead of the constant rate (`rate` is then the
    /// trace's mean, for the AQMs that need a link rate).
    pub trace: Option<Trace>,
}

/// What the bottleneck process needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// Forward (senders to receivers) and reverse (ACKs) directions.
    pub pipes: [PipeConfig; 2],
    pub seed: u64,
    pub interval: Duration,
    /// Record one row per packet event (`record.packets`) on these pipes.
    pub log_packets: [bool; 2],
    pub flows: FlowMap,
    /// Ask for SCHED_FIFO (see [`sys::realtime_priority`]).
    pub realtime: bool,
    /// Do not sleep in `ppoll` closer than this to a deadline: spin instead (a
    /// sleeping thread wakes some microseconds late). More spin, more precision and
    /// more CPU.
    pub spin: Duration,
}

impl Config {
    /// The bottleneck of a scenario. The path between the namespaces has no access
    /// links, so their propagation delay is folded into the bottleneck's, per flow,
    /// keeping each flow's base RTT in the simulated dumbbell (`Scenario::base_rtt`,
    /// with the group's `path` and the flow's own `path.flow_delay`); the access
    /// links' rate (100 Mbps in Kuhn & Ros Fig. 1) is not emulated. The reverse
    /// direction has the scenario's `reverse_rate`, `reverse_delay`, `reverse_buffer`
    /// and `reverse_aqm`, as in the simulator.
    pub fn from_scenario(sc: &Scenario, flows: FlowMap) -> Result<Config, String> {
        let b = sc.dumbbell().ok_or_else(|| plan::NOT_A_DUMBBELL.to_string())?;
        let a = sc.access().delay;
        let fwd = sc.resolve_limit("bottleneck.buffer", b.buffer).map_err(|e| e.to_string())?;
        let rev = sc.resolve_limit("bottleneck.reverse_buffer", b.reverse_buffer.unwrap_or(b.buffer)).map_err(|e| e.to_string())?;
        let logged = |n: &str| sc.record.packets && sc.record.links.iter().any(|l| l == n);
        let [fwd_delays, rev_delays] = plan::flow_delays(&plan::plan(sc).map_err(|e| e.to_string())?);
        let schedule = b.schedule.iter().map(|s| (s.at, s.rate)).collect();
        Ok(Config {
            pipes: [
                PipeConfig {
                    name: "bottleneck".into(),
                    rate: b.rate,
                    schedule,
                    delay: a + b.delay + a,
                    flow_delays: fwd_delays,
                    aqm: b.aqm.clone(),
                    limit: fwd,
                    trace: None,
                },
                PipeConfig {
                    name: "bottleneck_rev".into(),
                    rate: b.rev_rate(),
                    schedule: Vec::new(),
                    delay: a + b.rev_delay() + a,
                    flow_delays: rev_delays,
                    aqm: b.reverse_aqm.clone(),
                    limit: rev,
                    trace: None,
                },
            ],
            seed: sc.seed,
            interval: sc.record.interval,
            log_packets: [logged("bottleneck"), logged("bottleneck_rev")],
            flows,
            realtime: true,
            spin: DEFAULT_SPIN,
        })
    }

    /// Replace the forward direction's constant rate by a delivery trace.
    pub fn with_trace(mut self, trace: Trace) -> Config {
        self.pipes[0].rate = trace.mean_rate();
        self.pipes[0].trace = Some(trace);
        self
    }
}

/// A trace-driven transmitter's state.
#[derive(Debug)]
struct TraceTx {
    trace: Trace,
    /// Opportunities count from here (the run's start).
    base: Time,
    /// The next opportunity's number.
    next: u64,
    /// The packet being carried across opportunities, with the bytes it still needs.
    in_tx: Option<(IpPacket, u64)>,
    /// Bytes of opportunities used, cumulative.
    used: u64,
}

/// Counters at the last sample, to turn cumulative figures into per-interval ones.
#[derive(Clone, Copy, Default)]
struct Mark {
    busy: u64,
    tx_bytes: u64,
    tx_packets: u64,
    stats: Stats,
}

/// A packet serialized and propagating: it reaches the far end at `due`. Ordered by
/// (due, seq), so that packets due at the same time leave in the order they entered.
#[derive(Debug)]
struct InLine {
    due: Time,
    seq: u64,
    pkt: IpPacket,
}

impl PartialEq for InLine {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for InLine {}
impl PartialOrd for InLine {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InLine {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// One direction: queue, transmitter, delay line.
pub struct Pipe {
    pub cfg: PipeConfig,
    pub qdisc: Qdisc<IpPacket>,
    rng: Xoshiro256PlusPlus,
    drops: Vec<Dropped<IpPacket>>,
    /// When the transmitter finishes the packet it is sending.
    link_free: Time,
    /// The run's start (the origin of the rate schedule), once known.
    origin: Option<Time>,
    /// The rate of the latest transmission and the schedule steps already in force.
    rate: Rate,
    step: usize,
    /// Packets serialized and propagating, earliest due first. A heap, because
    /// flows with different path delays overtake each other on the line.
    line: BinaryHeap<Reverse<InLine>>,
    line_seq: u64,
    busy_total: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub delivered: u64,
    pub write_errors: u64,
    mark: Mark,
    log: Option<u8>,
    trace: Option<TraceTx>,
    /// Trace opportunities used and offered at the last sample.
    trace_mark: (u64, u64),
    /// The time of the next sample (`Time::MAX` while none is due).
    horizon: Time,
    /// Transmissions the loop carried out, woken late, at virtual times after the next
    /// sample's: (time, bytes, packets, trace bytes used). They belong to the interval
    /// after it and are counted when that sample is taken, so that a late wake-up
    /// does not move bytes into an interval they were not sent in.
    ahead: VecDeque<(Time, u64, u64, u64)>,
}

impl Pipe {
    fn new(cfg: PipeConfig, seed: u64, log: Option<u8>) -> Pipe {
        let qdisc = Qdisc::new(&cfg.aqm, cfg.limit);
        let rng = aqmsim::rng::stream(seed, &cfg.name);
        let trace = cfg.trace.clone().map(|trace| TraceTx { trace, base: Time::ZERO, next: 0, in_tx: None, used: 0 });
        let rate = cfg.rate;
        Pipe { cfg, qdisc, rng, drops: Vec::new(), link_free: Time::ZERO, origin: None, rate, step: 0, line: BinaryHeap::new(), line_seq: 0, busy_total: 0, tx_bytes: 0, tx_packets: 0, delivered: 0, write_errors: 0, mark: Mark::default(), log, trace, trace_mark: (0, 0), horizon: Time::MAX, ahead: VecDeque::new() }
    }

    /// The run starts: a trace starts over from its first line, the rate schedule
    /// counts from here.
    fn start(&mut self, origin: Time, first_sample: Time) {
        self.origin = Some(origin);
        self.horizon = first_sample;
        if let Some(tx) = &mut self.trace {
            tx.base = origin;
            tx.next = 0;
        }
    }

    /// Count a transmission at virtual time `at`: now, or at the sample after the next
    /// if `at` lies beyond the next sample's time.
    fn count_tx(&mut self, at: Time, bytes: u64, packets: u64, used: u64) {
        if at > self.horizon {
            self.ahead.push_back((at, bytes, packets, used));
        } else {
            self.add_tx(bytes, packets, used);
        }
    }

    fn add_tx(&mut self, bytes: u64, packets: u64, used: u64) {
        self.tx_bytes += bytes;
        self.tx_packets += packets;
        if let Some(tx) = &mut self.trace {
            tx.used += used;
        }
    }

    fn idle(&self) -> bool {
        self.qdisc.backlog().is_empty() && self.trace.as_ref().is_none_or(|t| t.in_tx.is_none())
    }

    /// Take the head of the queue for transmission starting at `start`, recording it.
    fn dequeue_at(&mut self, now: Time, start: Time, rec: &mut Recorder, pool: &mut Pool) -> Option<IpPacket> {
        let mut ctx = Ctx { now, rng: &mut self.rng, link_rate: self.rate };
        let dep = self.qdisc.dequeue(&mut ctx, &mut self.drops);
        self.log_drops(rec, now, pool);
        let Departure { pkt, marked, .. } = dep?;
        let start = start.max(pkt.arrived);
        if let (Some(link), Some(rt), true) = (self.log, rec.rel(start), pkt.flow != u32::MAX) {
            let soj = start.saturating_since(pkt.arrived).as_nanos() as i64;
            let bl = self.qdisc.backlog().bytes;
            let ad = self.aqm_delay();
            rec.packets.push(rt, link, pkt.flow, pkt.uid, pkt.kind, pkt.len as u32, EV_DEQUEUE, 0, soj, bl, ad);
            if let Some(c) = marked {
                rec.packets.push(rt, link, pkt.flow, pkt.uid, pkt.kind, pkt.len as u32, EV_MARK, c.index() as u8 + 1, soj, bl, ad);
            }
        }
        Some(pkt)
    }

    /// Use every trace opportunity due by `now` (see [`trace`]).
    fn service_trace(&mut self, now: Time, rec: &mut Recorder, pool: &mut Pool) {
        loop {
            let tx = self.trace.as_ref().unwrap();
            let t = tx.trace.at(tx.base, tx.next);
            if t > now || self.idle() {
                break;
            }
            self.trace.as_mut().unwrap().next += 1;
            let mut credit = trace::OPPORTUNITY_BYTES;
            let (mut bytes, mut packets) = (0, 0);
            while credit > 0 {
                if self.trace.as_ref().unwrap().in_tx.is_none() {
                    if self.qdisc.backlog().is_empty() {
                        break;
                    }
                    let Some(pkt) = self.dequeue_at(now, t, rec, pool) else { break };
                    let len = pkt.len as u64;
                    self.trace.as_mut().unwrap().in_tx = Some((pkt, len));
                }
                let tx = self.trace.as_mut().unwrap();
                let (_, left) = tx.in_tx.as_mut().unwrap();
                let take = credit.min(*left);
                *left -= take;
                credit -= take;
                if *left == 0 {
                    let (pkt, _) = tx.in_tx.take().unwrap();
                    bytes += pkt.len as u64;
                    packets += 1;
                    self.to_line(t, pkt);
                }
            }
            self.count_tx(t, bytes, packets, trace::OPPORTUNITY_BYTES - credit);
        }
    }

    fn aqm_delay(&self) -> i64 {
        self.qdisc.probe().delay_estimate.map_or(-1, |d| d.as_nanos() as i64)
    }

    fn log_drops(&mut self, rec: &mut Recorder, t: Time, pool: &mut Pool) {
        for d in self.drops.drain(..) {
            if let (Some(link), Some(rt)) = (self.log, rec.rel(t)) {
                if d.pkt.flow != u32::MAX {
                    let soj = d.sojourn.map_or(-1, |s| s.as_nanos() as i64);
                    let bl = self.qdisc.backlog().bytes;
                    rec.packets.push(rt, link, d.pkt.flow, d.pkt.uid, d.pkt.kind, d.pkt.len as u32, EV_DROP, d.cause.index() as u8 + 1, soj, bl, -1);
                }
            }
            pool.put(d.pkt);
        }
    }

    /// A packet arrives at the queue.
    fn arrive(&mut self, pkt: IpPacket, now: Time, rec: &mut Recorder, pool: &mut Pool) {
        let (flow, uid, kind, len) = (pkt.flow, pkt.uid, pkt.kind, pkt.len as u32);
        if self.idle() {
            // opportunities that passed while the link had nothing to send are lost
            if let Some(tx) = &mut self.trace {
                let before_now = Time::from_nanos(now.as_nanos().saturating_sub(1));
                tx.next = tx.next.max(tx.trace.count_until(tx.base, before_now));
            }
        }
        let mut ctx = Ctx { now, rng: &mut self.rng, link_rate: self.rate };
        let admit = self.qdisc.enqueue(pkt, &mut ctx, &mut self.drops);
        if let (Some(link), Some(rt), true) = (self.log, rec.rel(now), flow != u32::MAX) {
            let bl = self.qdisc.backlog().bytes;
            let ad = self.aqm_delay();
            match admit {
                Admit::Queued => rec.packets.push(rt, link, flow, uid, kind, len, EV_ENQUEUE, 0, -1, bl, ad),
                Admit::Marked(c) => {
                    rec.packets.push(rt, link, flow, uid, kind, len, EV_ENQUEUE, 0, -1, bl, ad);
                    rec.packets.push(rt, link, flow, uid, kind, len, EV_MARK, c.index() as u8 + 1, -1, bl, ad);
                }
                Admit::Dropped(_) => {}
            }
        }
        self.log_drops(rec, now, pool);
    }

    /// Run AQM timers and start every transmission due by `now`.
    fn service(&mut self, now: Time, rec: &mut Recorder, pool: &mut Pool) {
        while let Some(t) = self.qdisc.next_timer() {
            if t > now {
                break;
            }
            let mut ctx = Ctx { now: t, rng: &mut self.rng, link_rate: self.rate };
            self.qdisc.on_timer(&mut ctx);
        }
        if self.trace.is_some() {
            return self.service_trace(now, rec, pool);
        }
        while self.link_free <= now && !self.qdisc.backlog().is_empty() {
            // exact byte accounting: back to back after the previous packet, or from
            // the moment this one arrived if the link was idle
            let Some(pkt) = self.dequeue_at(now, self.link_free, rec, pool) else { break };
            let start = self.link_free.max(pkt.arrived);
            let tx = self.rate_at(start).tx_time(pkt.len as u64);
            self.link_free = start + tx;
            self.busy_total += tx.as_nanos();
            self.count_tx(start, pkt.len as u64, 1, 0);
            self.to_line(self.link_free, pkt);
        }
    }

    /// A packet whose serialization ends at `sent` propagates for its flow's delay.
    fn to_line(&mut self, sent: Time, pkt: IpPacket) {
        let delay = self.cfg.flow_delays.get(pkt.flow as usize).copied().unwrap_or(self.cfg.delay);
        self.line_seq += 1;
        self.line.push(Reverse(InLine { due: sent + delay, seq: self.line_seq, pkt }));
    }

    /// The scheduled rate at `t` (nondecreasing from call to call: transmissions
    /// start in time order).
    fn rate_at(&mut self, t: Time) -> Rate {
        if let Some(o) = self.origin {
            while let Some(&(at, rate)) = self.cfg.schedule.get(self.step) {
                if o + at > t {
                    break;
                }
                self.rate = rate;
                self.step += 1;
            }
        }
        self.rate
    }

    /// The capacity offered over (a, b], in bits per second: the schedule's rates
    /// weighted by the time each held.
    fn mean_rate_bps(&self, a: Time, b: Time) -> u64 {
        let Some(o) = self.origin else { return self.cfg.rate.bps() };
        let (mut bits, mut t, mut r) = (0u128, a, self.cfg.rate.bps());
        for &(at, rate) in &self.cfg.schedule {
            let s = o + at;
            if s >= b {
                break;
            }
            if s > t {
                bits += r as u128 * s.saturating_since(t).as_nanos() as u128;
                t = s;
            }
            r = rate.bps();
        }
        bits += r as u128 * b.saturating_since(t).as_nanos() as u128;
        (bits / b.saturating_since(a).as_nanos().max(1) as u128) as u64
    }

    /// Hand every packet whose propagation is over to the far end.
    fn deliver(&mut self, now: Time, out: RawFd, pool: &mut Pool, late: &mut Lateness, recording: Option<u64>) {
        while self.line.peek().is_some_and(|Reverse(x)| x.due <= now) {
            let Reverse(InLine { due, pkt, .. }) = self.line.pop().unwrap();
            if let Some(at) = recording {
                late.add(now.saturating_since(due), at);
            }
            if sys::write(out, pkt.bytes()) {
                self.delivered += 1;
            } else {
                self.write_errors += 1;
            }
            pool.put(pkt);
        }
    }

    fn next_deadline(&self) -> Option<Time> {
        let tx = match &self.trace {
            Some(t) => (!self.idle()).then(|| t.trace.at(t.base, t.next)),
            None => (!self.qdisc.backlog().is_empty()).then_some(self.link_free),
        };
        [tx, self.line.peek().map(|Reverse(x)| x.due), self.qdisc.next_timer()].into_iter().flatten().min()
    }

    /// Busy time up to `t`: every started transmission, less what lies after `t`.
    fn busy_until(&self, t: Time) -> u64 {
        self.busy_total - self.link_free.saturating_since(t).as_nanos()
    }

    /// Close the interval ending at `t`; `next` is the next sample's time
    /// (`Time::MAX` if none follows).
    fn sample(&mut self, t: Time, next: Time, rt: u64, index: u8, interval: Duration, s: &mut LinkSeries) {
        let mut busy = self.busy_until(t);
        let mut capacity = self.mean_rate_bps(Time::from_nanos(t.as_nanos().saturating_sub(interval.as_nanos())), t);
        if let Some(tx) = &self.trace {
            // a trace's capacity is what its opportunities offered in the interval, and
            // the link was "busy" for the share of it that packets used
            let offered = tx.trace.count_until(tx.base, t) * trace::OPPORTUNITY_BYTES;
            let (used0, offered0) = self.trace_mark;
            let (du, dof) = (tx.used - used0, offered - offered0);
            capacity = dof * 8 * 1_000_000_000 / interval.as_nanos().max(1);
            let share = if dof > 0 { (du as u128 * interval.as_nanos() as u128 / dof as u128) as u64 } else { 0 };
            busy = self.mark.busy + share;
            self.trace_mark = (tx.used, offered);
        }
        let st = self.qdisc.stats;
        let m = self.mark;
        let bl = self.qdisc.backlog();
        let probe = self.qdisc.probe();
        s.time_ns.push(rt);
        s.link.push(index as u16);
        s.capacity_bps.push(capacity);
        s.busy_ns.push(busy - m.busy);
        // The simulator counts a trace link's opportunities here; the emulator folds
        // them into busy_ns (the share of the interval that packets used) instead.
        s.opportunities.push(0);
        s.opportunities_used.push(0);
        s.tx_bytes.push(self.tx_bytes - m.tx_bytes);
        s.tx_packets.push(self.tx_packets - m.tx_packets);
        s.arrivals.push(st.arrivals - m.stats.arrivals);
        s.drops_overflow.push(st.drops[0] - m.stats.drops[0]);
        s.drops_random.push(st.drops[1] - m.stats.drops[1]);
        s.drops_deterministic.push(st.drops[2] - m.stats.drops[2]);
        s.marks.push(st.marked() - m.stats.marked());
        s.backlog_bytes.push(bl.bytes);
        s.backlog_packets.push(bl.packets);
        s.drop_prob.push(probe.drop_prob.unwrap_or(f64::NAN));
        s.aqm_delay_ns.push(probe.delay_estimate.map_or(-1, |d| d.as_nanos() as i64));
        self.mark = Mark { busy, tx_bytes: self.tx_bytes, tx_packets: self.tx_packets, stats: st };
        // the next interval starts: what was sent ahead of this sample, up to the
        // next one, is now counted
        self.horizon = next;
        while let Some(&(at, bytes, packets, used)) = self.ahead.front() {
            if at > next {
                break;
            }
            self.ahead.pop_front();
            self.add_tx(bytes, packets, used);
        }
    }

    fn in_flight(&self) -> u64 {
        let carrying = self.trace.as_ref().is_some_and(|t| t.in_tx.is_some()) as u64;
        self.qdisc.backlog().packets + self.line.len() as u64 + carrying
    }
}

/// How late packets left the delay line (the write time minus the due time), in
/// 1 µs buckets up to 10 ms: the bottleneck's own timing error.
pub struct Lateness {
    pub buckets_us: Vec<u64>,
    /// The first stalls (deliveries more than 1 ms late): (time since the start in
    /// ns, lateness in ns), at most [`Lateness::MAX_STALLS`].
    pub stalls: Vec<(u64, u64)>,
}

impl Lateness {
    const BUCKETS: usize = 10_001;
    pub const MAX_STALLS: usize = 100;
    fn new() -> Self {
        Lateness { buckets_us: vec![0; Self::BUCKETS], stalls: Vec::new() }
    }
    fn add(&mut self, d: Duration, at: u64) {
        if d.as_nanos() > 1_000_000 && self.stalls.len() < Self::MAX_STALLS {
            self.stalls.push((at, d.as_nanos()));
        }
        let i = ((d.as_nanos() / 1000) as usize).min(Self::BUCKETS - 1);
        self.buckets_us[i] += 1;
    }
    /// The `q`-quantile (0..=1) in microseconds (the bucket's upper edge).
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let n: u64 = self.buckets_us.iter().sum();
        if n == 0 {
            return None;
        }
        let target = ((q * n as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.buckets_us.iter().enumerate() {
            acc += c;
            if acc >= target {
                return Some(i as u64 + 1);
            }
        }
        None
    }
}

/// Records are kept only after the run's start (`start` on the control channel),
/// with times relative to it.
struct Recorder {
    origin: Option<Time>,
    /// Recording ends here (the run's duration after its start).
    end: Time,
    packets: PacketLog,
    series: LinkSeries,
}

impl Recorder {
    #[inline]
    fn rel(&self, t: Time) -> Option<u64> {
        if t > self.end {
            return None;
        }
        self.origin.and_then(|o| t.checked_since(o)).map(|d| d.as_nanos())
    }
}

/// Everything the bottleneck recorded.
pub struct Output {
    pub links: Vec<LinkInfo>,
    pub logged_links: Vec<String>,
    pub packets: PacketLog,
    pub link_series: LinkSeries,
    /// Nanoseconds from the start to the stop of recording.
    pub recorded_ns: u64,
    /// Over the whole life of the bottleneck: packets that arrived, were written
    /// out, were dropped, were still inside at the stop.
    pub arrived: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
    /// Packets that were not IPv4 (never forwarded) and packets the far device refused.
    pub ignored: u64,
    pub write_errors: u64,
    /// CPU time this thread used while recording, in ns (user + system).
    pub cpu_ns: u64,
    /// Delivery lateness of the packets delivered while recording.
    pub lateness: Lateness,
    /// Whether the loop ran under SCHED_FIFO.
    pub realtime: bool,
}

/// The file descriptors of a run: the TUN device in the senders' namespace, the one
/// in the receivers' namespace, and the control channel (a pipe or socket; lines
/// `start <CLOCK_MONOTONIC ns> <duration ns>` and `stop`; end of file also stops).
/// Packets are forwarded from the first moment to the stop; they are recorded, and
/// counted in the links' statistics, from the start for the duration.
#[derive(Clone, Copy, Debug)]
pub struct Fds {
    pub senders: RawFd,
    pub receivers: RawFd,
    pub control: RawFd,
}

/// The default of [`Config::spin`] (measured in docs/emulation.md).
pub const DEFAULT_SPIN: Duration = Duration::from_micros(20);
/// Packets read from one device per pass, so that neither direction starves the other.
const READ_BATCH: usize = 64;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run the bottleneck until the control channel says stop (or closes).
pub fn run(cfg: &Config, fds: Fds) -> Result<Output, String> {
    for fd in [fds.senders, fds.receivers, fds.control] {
        sys::set_nonblocking(fd).map_err(|e| format!("fd {fd}: {e}"))?;
    }
    sys::tight_timer_slack();
    let realtime = cfg.realtime && sys::realtime_priority();
    let epoch = sys::monotonic_ns();
    let clock = || Time::from_nanos(sys::monotonic_ns().saturating_sub(epoch));
    let mut logged_links = Vec::new();
    let mut pipes: Vec<Pipe> = cfg
        .pipes
        .iter()
        .enumerate()
        .map(|(i, pc)| {
            let log = cfg.log_packets[i].then(|| {
                logged_links.push(pc.name.clone());
                (logged_links.len() - 1) as u8
            });
            Pipe::new(pc.clone(), cfg.seed, log)
        })
        .collect();
    let ins = [fds.senders, fds.receivers];
    let outs = [fds.receivers, fds.senders];
    let mut rec = Recorder { origin: None, end: Time::MAX, packets: PacketLog::default(), series: LinkSeries::default() };
    let mut pool = Pool::default();
    let mut uid = 0u64;
    let mut ignored = 0u64;
    let mut ctl_buf: Vec<u8> = Vec::new();
    let mut next_sample = Time::MAX;
    let mut base: Vec<(Stats, u64)> = Vec::new();
    let mut last: Option<Vec<(Stats, u64)>> = None;
    let mut cpu0 = 0u64;
    let mut lateness = Lateness::new();
    let mut cpu_end = 0u64;
    let mut readable = [true, true, true];
    let stop_at;
    loop {
        let now = clock();
        // control channel
        if readable[2] {
            let mut b = [0u8; 256];
            let mut closed = false;
            loop {
                match sys::read(fds.control, &mut b) {
                    Ok(Some(0)) => {
                        closed = true;
                        break;
                    }
                    Ok(Some(n)) => ctl_buf.extend_from_slice(&b[..n]),
                    Ok(None) => break,
                    Err(e) => return Err(format!("control channel: {e}")),
                }
            }
            let mut stop = closed;
            while let Some(i) = ctl_buf.iter().position(|&c| c == b'\n') {
                let line: Vec<u8> = ctl_buf.drain(..=i).collect();
                let line = String::from_utf8_lossy(&line);
                let mut words = line.split_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some("start"), Some(t), Some(d)) => {
                        let (Ok(abs), Ok(dur)) = (t.parse::<u64>(), d.parse::<u64>()) else {
                            return Err(format!("control channel: bad start command {line:?}"));
                        };
                        let origin = Time::from_nanos(abs.saturating_sub(epoch));
                        rec.origin = Some(origin);
                        rec.end = origin + Duration::from_nanos(dur);
                        next_sample = origin + cfg.interval;
                        for p in pipes.iter_mut() {
                            p.start(origin, next_sample);
                        }
                        base = pipes.iter().map(|p| (p.qdisc.stats, p.write_errors)).collect();
                        cpu0 = thread_cpu_ns();
                    }
                    (Some("stop"), _, _) => stop = true,
                    (None, _, _) => {}
                    (Some(_), _, _) => return Err(format!("control channel: unknown command {line:?}")),
                }
            }
            if stop {
                stop_at = now;
                break;
            }
        }
        // arrivals
        for dir in 0..2 {
            if !readable[dir] {
                continue;
            }
            for _ in 0..READ_BATCH {
                let mut p = pool.get();
                match sys::read(ins[dir], &mut p.buf[..]) {
                    Ok(Some(n)) if n > 0 => {
                        p.len = n;
                        if !p.parse(&cfg.flows, dir == 0) {
                            ignored += 1;
                            pool.put(p);
                            continue;
                        }
                        p.uid = uid;
                        uid += 1;
                        p.arrived = clock();
                        let t = p.arrived;
                        pipes[dir].arrive(p, t, &mut rec, &mut pool);
                    }
                    Ok(_) => {
                        pool.put(p);
                        break;
                    }
                    Err(e) => return Err(format!("reading the {} TUN device: {e}", ["senders'", "receivers'"][dir])),
                }
            }
        }
        // transmissions, deliveries, samples
        let now = clock();
        for (dir, p) in pipes.iter_mut().enumerate() {
            p.service(now, &mut rec, &mut pool);
            p.deliver(now, outs[dir], &mut pool, &mut lateness, rec.rel(now));
        }
        if last.is_none() && now >= rec.end {
            last = Some(pipes.iter().map(|p| (p.qdisc.stats, p.write_errors)).collect());
            cpu_end = thread_cpu_ns();
        }
        while next_sample <= now && next_sample <= rec.end {
            let rt = rec.rel(next_sample).unwrap_or(0);
            let after = next_sample + cfg.interval;
            let horizon = if after <= rec.end { after } else { Time::MAX };
            for (i, p) in pipes.iter_mut().enumerate() {
                p.sample(next_sample, horizon, rt, i as u8, cfg.interval, &mut rec.series);
            }
            next_sample = after;
        }
        // sleep until the next deadline, then spin the last stretch
        let sample_due = if next_sample <= rec.end { next_sample } else { Time::MAX };
        let deadline = pipes.iter().filter_map(Pipe::next_deadline).chain([sample_due, if last.is_none() { rec.end } else { Time::MAX }]).min().unwrap_or(Time::MAX);
        let now = clock();
        let wait = deadline.saturating_since(now).as_nanos();
        let spin = cfg.spin.as_nanos();
        let sleep = if wait > spin { (wait - spin).min(100_000_000) } else { 0 };
        readable = sys::wait_readable(&[fds.senders, fds.receivers, fds.control], sleep);
    }
    let cpu_ns = if cpu_end > 0 { cpu_end } else { thread_cpu_ns() }.saturating_sub(cpu0);
    let recorded_ns = rec.rel(stop_at.min(rec.end)).unwrap_or(0);
    if base.is_empty() {
        base = vec![(Stats::default(), 0); 2];
    }
    let last = last.unwrap_or_else(|| pipes.iter().map(|p| (p.qdisc.stats, p.write_errors)).collect());
    let mut out = Output {
        links: Vec::new(),
        logged_links,
        packets: rec.packets,
        link_series: rec.series,
        recorded_ns,
        arrived: 0,
        delivered: 0,
        dropped: 0,
        in_flight: 0,
        ignored,
        write_errors: 0,
        cpu_ns,
        lateness,
        realtime,
    };
    for ((p, (s0, w0)), (s, w1)) in pipes.iter().zip(base).zip(last) {
        let stats = Stats {
            arrivals: s.arrivals - s0.arrivals,
            enqueued: s.enqueued - s0.enqueued,
            dequeued: s.dequeued - s0.dequeued,
            drops: [0, 1, 2].map(|i| s.drops[i] - s0.drops[i]),
            marks: [0, 1, 2].map(|i| s.marks[i] - s0.marks[i]),
            bytes_enqueued: s.bytes_enqueued - s0.bytes_enqueued,
            bytes_dequeued: s.bytes_dequeued - s0.bytes_dequeued,
            ecn_arrived: [0, 1, 2, 3].map(|i| s.ecn_arrived[i] - s0.ecn_arrived[i]),
            ecn_dequeued: [0, 1, 2, 3].map(|i| s.ecn_dequeued[i] - s0.ecn_dequeued[i]),
        };
        out.arrived += p.qdisc.stats.arrivals;
        out.delivered += p.delivered;
        out.dropped += p.qdisc.stats.dropped();
        out.in_flight += p.in_flight();
        out.write_errors += w1 - w0;
        out.links.push(LinkInfo {
            name: p.cfg.name.clone(),
            rate_bps: p.cfg.rate.bps(),
            delay_ns: p.cfg.delay.as_nanos(),
            aqm: p.qdisc.aqm.kind().to_string(),
            limit_packets: p.cfg.limit.packets,
            limit_bytes: p.cfg.limit.bytes,
            stats,
            counters: p.qdisc.counters(),
        });
    }
    // every packet read was forwarded, dropped with a cause, or is still inside
    let wrote: u64 = pipes.iter().map(|p| p.delivered + p.write_errors).sum();
    if out.arrived != wrote + out.dropped + out.in_flight {
        return Err(format!("packet conservation broken: {} arrived, {} written, {} dropped, {} inside", out.arrived, wrote, out.dropped, out.in_flight));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(trace: Option<Trace>) -> PipeConfig {
        PipeConfig {
            name: "bottleneck".into(),
            rate: Rate::from_mbps(12),
            schedule: Vec::new(),
            delay: Duration::from_millis(10),
            flow_delays: Vec::new(),
            aqm: aqm::AqmSpec::default(),
            limit: Limit::packets(100),
            trace,
        }
    }

    fn pipe(trace: Option<Trace>) -> Pipe {
        Pipe::new(config(trace), 1, None)
    }

    fn recorder() -> Recorder {
        Recorder { origin: None, end: Time::MAX, packets: PacketLog::default(), series: LinkSeries::default() }
    }

    fn send(p: &mut Pipe, at: Time, sizes: &[usize], pool: &mut Pool, rec: &mut Recorder) {
        send_flow(p, at, sizes, u32::MAX, pool, rec)
    }

    fn send_flow(p: &mut Pipe, at: Time, sizes: &[usize], flow: u32, pool: &mut Pool, rec: &mut Recorder) {
        for &len in sizes {
            let mut pkt = IpPacket::empty();
            pkt.len = len;
            pkt.flow = flow;
            pkt.arrived = at;
            p.arrive(pkt, at, rec, pool);
        }
    }

    fn due_ms(p: &Pipe) -> Vec<f64> {
        let mut due: Vec<Time> = p.line.iter().map(|Reverse(x)| x.due).collect();
        due.sort();
        due.into_iter().map(|t| t.as_nanos() as f64 / 1e6).collect()
    }

    #[test]
    fn a_rate_step_applies_to_packets_that_start_after_it() {
        // 12 Mbps, then 6 Mbps from 2 ms after the start (at 5 ms): 1500 B take 1 ms,
        // then 2 ms. The packet that starts at 1.5 ms finishes at the old rate.
        let mut cfg = config(None);
        cfg.schedule = vec![(Duration::from_millis(2), Rate::from_mbps(6))];
        let (mut p, mut pool, mut rec) = (Pipe::new(cfg, 1, None), Pool::default(), recorder());
        p.start(Time::from_millis(3), Time::MAX);
        send(&mut p, Time::from_micros(3_500), &[750, 1500, 1500, 1500], &mut pool, &mut rec);
        p.service(Time::from_millis(20), &mut rec, &mut pool);
        // 3.5 -> 4.0, 4.0 -> 5.0 (starts before the step at 5 ms), 5.0 -> 7.0, 7.0 -> 9.0
        assert_eq!(due_ms(&p), [14.0, 15.0, 17.0, 19.0]);
        // capacity over (4, 6] ms: 1 ms at 12 Mbps and 1 ms at 6 Mbps
        assert_eq!(p.mean_rate_bps(Time::from_millis(4), Time::from_millis(6)), 9_000_000);
        assert_eq!(p.mean_rate_bps(Time::from_millis(6), Time::from_millis(8)), 6_000_000);
        assert_eq!(p.mean_rate_bps(Time::from_millis(0), Time::from_millis(2)), 12_000_000);
    }

    #[test]
    fn each_flow_propagates_for_its_own_delay_and_may_overtake() {
        // flow 0: 50 ms, flow 1: 10 ms; other packets: the pipe's 10 ms
        let mut cfg = config(None);
        cfg.flow_delays = vec![Duration::from_millis(50), Duration::from_millis(10)];
        let (mut p, mut pool, mut rec) = (Pipe::new(cfg, 1, None), Pool::default(), recorder());
        send_flow(&mut p, Time::ZERO, &[1500], 0, &mut pool, &mut rec);
        send_flow(&mut p, Time::ZERO, &[1500], 1, &mut pool, &mut rec);
        send_flow(&mut p, Time::ZERO, &[1500], 7, &mut pool, &mut rec);
        p.service(Time::ZERO, &mut rec, &mut pool);
        p.service(Time::from_millis(3), &mut rec, &mut pool);
        assert_eq!(due_ms(&p), [12.0, 13.0, 51.0]);
        // the tun write fails on fd -1 (counted, not delivered): what matters is the order
        let mut late = Lateness::new();
        p.deliver(Time::from_millis(20), -1, &mut pool, &mut late, None);
        assert_eq!(due_ms(&p), [51.0]);
        assert_eq!(p.write_errors, 2);
    }

    #[test]
    fn constant_rate_link_sends_back_to_back_then_waits_for_arrivals() {
        // 12 Mbps: 1500 B take 1 ms; + 10 ms propagation
        let (mut p, mut pool, mut rec) = (pipe(None), Pool::default(), recorder());
        send(&mut p, Time::ZERO, &[1500, 1500, 1500], &mut pool, &mut rec);
        // the loop wakes late (at 5 ms): the packets still leave back to back from 0
        p.service(Time::from_millis(5), &mut rec, &mut pool);
        assert_eq!(due_ms(&p), [11.0, 12.0, 13.0]);
        send(&mut p, Time::from_millis(20), &[750], &mut pool, &mut rec);
        p.service(Time::from_millis(20), &mut rec, &mut pool);
        assert_eq!(due_ms(&p)[3], 20.0 + 0.5 + 10.0);
        assert_eq!(p.busy_until(Time::from_millis(30)), 3_500_000);
    }

    #[test]
    fn a_late_wake_up_counts_each_transmission_in_the_interval_it_was_sent_in() {
        // 12 Mbps: 1500 B take 1 ms; samples every 2 ms. The loop wakes at 5 ms and
        // sends back to back from 0: transmissions start at 0, 1, ..., 4 ms.
        let (mut p, mut pool, mut rec) = (pipe(None), Pool::default(), recorder());
        let ms = Time::from_millis;
        p.start(ms(0), ms(2));
        send(&mut p, ms(0), &[1500; 5], &mut pool, &mut rec);
        p.service(ms(5), &mut rec, &mut pool);
        let iv = Duration::from_millis(2);
        // intervals (0, 2], (2, 4], (4, 6]: starts at 0, 1, 2 | 3, 4 | none
        p.sample(ms(2), ms(4), 0, 0, iv, &mut rec.series);
        p.sample(ms(4), ms(6), 0, 0, iv, &mut rec.series);
        p.sample(ms(6), Time::MAX, 0, 0, iv, &mut rec.series);
        assert_eq!(rec.series.tx_packets, [3, 2, 0]);
        assert_eq!(rec.series.tx_bytes, [4500, 3000, 0]);
        // and busy time: 2 ms, 2 ms, the last millisecond
        assert_eq!(rec.series.busy_ns, [2_000_000, 2_000_000, 1_000_000]);
        // after the last sample, transmissions count at once
        send(&mut p, ms(7), &[750], &mut pool, &mut rec);
        p.service(ms(7), &mut rec, &mut pool);
        assert_eq!((p.tx_packets, p.tx_bytes), (6, 8250));
    }

    #[test]
    fn trace_link_shares_and_splits_opportunities_like_mahimahi() {
        // opportunities at 1, 1, 2 ms, then 3, 3, 4 ms, ... of 1504 B each
        let (mut p, mut pool, mut rec) = (pipe(Some(Trace::new(vec![1, 1, 2]).unwrap())), Pool::default(), recorder());
        p.start(Time::ZERO, Time::MAX);
        // two 1000 B packets: the first fits in opportunity 1, the second takes the
        // remaining 504 B of it and 496 B of opportunity 2 (also at 1 ms)
        send(&mut p, Time::ZERO, &[1000, 1000], &mut pool, &mut rec);
        p.service(Time::from_millis(10), &mut rec, &mut pool);
        assert_eq!(due_ms(&p), [11.0, 11.0]);
        // the rest of opportunity 2 and those from 2 ms to 9 ms passed while the queue
        // was empty: lost. Arrivals at 10 ms use the opportunities at 10, 11 and 11 ms.
        send(&mut p, Time::from_millis(10), &[1504, 1504, 1504], &mut pool, &mut rec);
        p.service(Time::from_millis(20), &mut rec, &mut pool);
        assert_eq!(&due_ms(&p)[2..], [20.0, 21.0, 21.0]);
        assert!(p.idle());
        assert_eq!(p.trace.as_ref().unwrap().used, 2000 + 3 * 1504);
    }

    #[test]
    fn lateness_quantiles_are_bucket_upper_edges() {
        let mut l = Lateness::new();
        assert_eq!(l.quantile_us(0.5), None);
        for us in [0u64, 0, 3, 3, 3, 7, 20, 50_000] {
            l.add(Duration::from_micros(us), 0);
        }
        // 8 samples: the 4th is 3 us (bucket [3, 4) us), the 8th is past 10 ms
        assert_eq!(l.quantile_us(0.5), Some(4));
        assert_eq!(l.quantile_us(0.25), Some(1));
        assert_eq!(l.quantile_us(1.0), Some(10_001));
        assert_eq!(l.stalls, vec![(0, 50_000_000)]);
    }
}
