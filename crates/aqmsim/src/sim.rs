//! The simulation: builds the dumbbell of a scenario, runs the event loop, and
//! collects the records.
//!
//! Topology (Kuhn & Ros, MADPIE Fig. 1), per flow group `g`:
//!
//! ```text
//!   snd_g --access--> R1 ==bottleneck==> R2 --access--> dst_g      (data)
//!   snd_g <--access-- R1 <=bottleneck_rev= R2 <--access-- dst_g    (ACKs)
//! ```
//!
//! Each group has its own access links; all groups share the bottleneck in each
//! direction.

use std::time::Instant;

use aqm::{AqmSpec, Ctx, Dropped, Duration, Qdisc, Time};

use crate::event::EventQueue;
use crate::link::Link;
use crate::packet::Packet;
use crate::record::*;
use crate::rng::{self, SimRng};
use crate::scenario::{Scenario, ScenarioError, StartSpec, TrafficSpec};
use crate::tcp::sender::CaState;
use crate::tcp::{TcpReceiver, TcpSender};

pub const BOTTLENECK: usize = 0;
pub const BOTTLENECK_REV: usize = 1;

#[derive(Debug)]
pub enum SimError {
    Scenario(ScenarioError),
    /// Packet conservation failed: a bug, reported loudly.
    Conservation(String),
    /// Stopped by the progress callback (Ctrl-C).
    Interrupted,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "{e}"),
            SimError::Conservation(m) => write!(f, "packet conservation violated: {m}"),
            SimError::Interrupted => write!(f, "interrupted"),
        }
    }
}
impl std::error::Error for SimError {}

impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> Self {
        SimError::Scenario(e)
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    TxDone(u16),
    Arrive(u16),
    AqmTimer(u16),
    FlowStart(u32),
    FlowTimer(u32),
    Sample,
}

struct TcpFlow {
    snd: TcpSender,
    rcv: TcpReceiver,
}

enum FlowKind {
    Tcp(Box<TcpFlow>),
}

struct Flow {
    group: u16,
    start: Time,
    /// Time of the pending timer event, if one is scheduled.
    timer_at: Option<Time>,
    /// Forward packets (data, SYN, datagrams) dropped anywhere, and ACKs dropped.
    drops: u64,
    ack_drops: u64,
    marks: u64,
    kind: FlowKind,
}

struct Group {
    fwd: Vec<u16>,
    rev: Vec<u16>,
}

/// Counters at the previous sample, to turn totals into per-interval figures.
#[derive(Clone, Copy, Default)]
struct LinkMark {
    busy: u64,
    tx_bytes: u64,
    tx_packets: u64,
    arrivals: u64,
    drops: [u64; 3],
    marks: u64,
}

pub struct Sim {
    pub now: Time,
    end: Time,
    events: EventQueue<Ev>,
    links: Vec<Link>,
    groups: Vec<Group>,
    flows: Vec<Flow>,
    next_uid: u64,
    out: Vec<Packet>,
    drops: Vec<Dropped<Packet>>,
    cons: Conservation,
    events_done: u64,
    interval: Duration,
    flow_series_on: bool,
    marks: Vec<LinkMark>,
    rec_packets: PacketLog,
    rec_links: LinkSeries,
    rec_flows: FlowSeries,
    logged_links: Vec<String>,
    scenario: Scenario,
}

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, SimError> {
        let seed = sc.seed;
        let mut links = Vec::new();
        let b = &sc.bottleneck;
        let fwd_limit = sc.resolve_limit("bottleneck.buffer", b.buffer)?;
        let rev_limit = sc.resolve_limit("bottleneck.reverse_buffer", b.reverse_buffer.unwrap_or(b.buffer))?;
        let access_limit = sc.resolve_limit("access.buffer", sc.access.buffer)?;
        let droptail = AqmSpec::default();
        links.push(Link::new("bottleneck", b.rate, b.delay, fwd_limit, Qdisc::new(&b.aqm, fwd_limit), rng::stream(seed, "link.bottleneck")));
        links.push(Link::new("bottleneck_rev", b.rate, b.delay, rev_limit, Qdisc::new(&droptail, rev_limit), rng::stream(seed, "link.bottleneck_rev")));
        links[BOTTLENECK].sampled = true;
        links[BOTTLENECK_REV].sampled = true;
        let mut groups = Vec::new();
        let mut flows = Vec::new();
        let a = &sc.access;
        for (gi, g) in sc.flows.iter().enumerate() {
            let name = &g.common.name;
            let mut add = |suffix: &str| {
                let n = format!("{name}.{suffix}");
                links.push(Link::new(&n, a.rate, a.delay, access_limit, Qdisc::new(&droptail, access_limit), rng::stream(seed, &format!("link.{n}"))));
                (links.len() - 1) as u16
            };
            let up = add("up");
            let down = add("down");
            let up_rev = add("up_rev");
            let down_rev = add("down_rev");
            groups.push(Group { fwd: vec![up, BOTTLENECK as u16, down], rev: vec![up_rev, BOTTLENECK_REV as u16, down_rev] });
            let mut start_rng: SimRng = rng::stream(seed, &format!("group.{name}.start"));
            for k in 0..g.common.count {
                let id = flows.len() as u32;
                let start = match g.common.start {
                    StartSpec::At(t) => Time::ZERO + t,
                    StartSpec::Uniform(lo, hi) => {
                        let span = (hi - lo).as_nanos();
                        let off = if span == 0 { 0 } else { rng::below(&mut start_rng, span + 1) };
                        Time::ZERO + lo + Duration::from_nanos(off)
                    }
                };
                let _ = k;
                let kind = match &g.traffic {
                    TrafficSpec::Bulk(bs) => FlowKind::Tcp(Box::new(TcpFlow { snd: TcpSender::new(id, &bs.tcp), rcv: TcpReceiver::new(id, &bs.tcp) })),
                };
                flows.push(Flow { group: gi as u16, start, timer_at: None, drops: 0, ack_drops: 0, marks: 0, kind });
            }
        }
        let mut logged_links = Vec::new();
        for name in &sc.record.links {
            if !sc.record.packets {
                break;
            }
            let idx = links.iter().position(|l| &l.name == name).expect("validated link name");
            links[idx].log = Some(logged_links.len() as u8);
            logged_links.push(name.clone());
        }
        let nlinks = links.len();
        let mut sim = Sim {
            now: Time::ZERO,
            end: Time::ZERO + sc.duration,
            events: EventQueue::default(),
            links,
            groups,
            flows,
            next_uid: 0,
            out: Vec::with_capacity(64),
            drops: Vec::with_capacity(16),
            cons: Conservation::default(),
            events_done: 0,
            interval: sc.record.interval,
            flow_series_on: sc.record.flow_series,
            marks: vec![LinkMark::default(); nlinks],
            rec_packets: PacketLog::default(),
            rec_links: LinkSeries::default(),
            rec_flows: FlowSeries::default(),
            logged_links,
            scenario: sc.clone(),
        };
        for (i, f) in sim.flows.iter().enumerate() {
            sim.events.push(f.start, Ev::FlowStart(i as u32));
        }
        for li in 0..nlinks {
            sim.sync_aqm_timer(li);
        }
        sim.events.push(Time::ZERO + sim.interval, Ev::Sample);
        Ok(sim)
    }

    /// Run to the end. `progress` gets the fraction done about every 1 % of simulated
    /// time and returns `false` to stop.
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
        let wall = Instant::now();
        let step = (self.end.as_nanos() / 100).max(1);
        let mut next_report = step;
        while let Some(t) = self.events.peek_time() {
            if t > self.end {
                break;
            }
            let (t, ev) = self.events.pop().unwrap();
            self.now = t;
            self.events_done += 1;
            if t.as_nanos() >= next_report {
                if !progress(t.as_nanos() as f64 / self.end.as_nanos() as f64) {
                    return Err(SimError::Interrupted);
                }
                next_report = (t.as_nanos() / step + 1) * step;
            }
            match ev {
                Ev::TxDone(l) => self.on_tx_done(l as usize),
                Ev::Arrive(l) => self.on_arrive(l as usize),
                Ev::AqmTimer(l) => self.on_aqm_timer(l as usize),
                Ev::FlowStart(f) => self.on_flow_start(f as usize),
                Ev::FlowTimer(f) => self.on_flow_timer(f as usize),
                Ev::Sample => self.on_sample(),
            }
        }
        self.now = self.end;
        progress(1.0);
        self.check_conservation()?;
        let wall_seconds = wall.elapsed().as_secs_f64();
        Ok(self.finish(wall_seconds))
    }

    // ---- links --------------------------------------------------------------

    fn inject(&mut self, mut p: Packet) {
        p.uid = self.next_uid;
        self.next_uid += 1;
        p.hop = 0;
        self.cons.created += 1;
        let link = self.path(&p)[0];
        self.link_enqueue(link as usize, p);
    }

    fn path(&self, p: &Packet) -> &[u16] {
        let g = &self.groups[self.flows[p.flow as usize].group as usize];
        if p.kind.is_forward() { &g.fwd } else { &g.rev }
    }

    fn link_enqueue(&mut self, li: usize, p: Packet) {
        let now = self.now;
        let (flow, uid, kind, size) = (p.flow, p.uid, p.kind as u8, p.size);
        let l = &mut self.links[li];
        let mut ctx = Ctx { now, rng: &mut l.rng, link_rate: l.rate };
        let admit = l.qdisc.enqueue(p, &mut ctx, &mut self.drops);
        if let Some(log) = l.log {
            let backlog = l.qdisc.backlog().bytes;
            match admit {
                aqm::Admit::Queued => self.rec_packets.push(now.as_nanos(), log, flow, uid, kind, size, EV_ENQUEUE, 0, -1, backlog, -1),
                aqm::Admit::Marked(c) => {
                    let d = probe_delay(&l.qdisc);
                    self.rec_packets.push(now.as_nanos(), log, flow, uid, kind, size, EV_ENQUEUE, 0, -1, backlog, -1);
                    self.rec_packets.push(now.as_nanos(), log, flow, uid, kind, size, EV_MARK, c as u8 + 1, -1, backlog, d);
                }
                aqm::Admit::Dropped(_) => {}
            }
        }
        if let aqm::Admit::Marked(_) = admit {
            self.flows[flow as usize].marks += 1;
        }
        self.take_drops(li);
        if self.links[li].in_tx.is_none() {
            self.start_tx(li);
        }
        self.sync_aqm_timer(li);
    }

    fn take_drops(&mut self, li: usize) {
        if self.drops.is_empty() {
            return;
        }
        let now = self.now.as_nanos();
        let l = &self.links[li];
        let backlog = l.qdisc.backlog().bytes;
        let d_est = probe_delay(&l.qdisc);
        for d in self.drops.drain(..) {
            self.cons.dropped += 1;
            let f = &mut self.flows[d.pkt.flow as usize];
            if d.pkt.kind.is_forward() {
                f.drops += 1;
            } else {
                f.ack_drops += 1;
            }
            if let Some(log) = l.log {
                let soj = d.sojourn.map_or(-1, |s| s.as_nanos() as i64);
                self.rec_packets.push(now, log, d.pkt.flow, d.pkt.uid, d.pkt.kind as u8, d.pkt.size, EV_DROP, d.cause as u8 + 1, soj, backlog, d_est);
            }
        }
    }

    fn start_tx(&mut self, li: usize) {
        let now = self.now;
        let l = &mut self.links[li];
        debug_assert!(l.in_tx.is_none());
        let mut ctx = Ctx { now, rng: &mut l.rng, link_rate: l.rate };
        let dep = l.qdisc.dequeue(&mut ctx, &mut self.drops);
        if let Some(dep) = dep {
            let p = dep.pkt;
            if let Some(log) = l.log {
                let backlog = l.qdisc.backlog().bytes;
                self.rec_packets.push(now.as_nanos(), log, p.flow, p.uid, p.kind as u8, p.size, EV_DEQUEUE, 0, dep.sojourn.as_nanos() as i64, backlog, -1);
                if let Some(c) = dep.marked {
                    self.rec_packets.push(now.as_nanos(), log, p.flow, p.uid, p.kind as u8, p.size, EV_MARK, c as u8 + 1, dep.sojourn.as_nanos() as i64, backlog, probe_delay(&l.qdisc));
                }
            }
            if dep.marked.is_some() {
                self.flows[p.flow as usize].marks += 1;
            }
            let l = &mut self.links[li];
            let d = l.tx_duration(p.size);
            l.in_tx = Some(p);
            l.tx_started = now;
            self.events.push(now + d, Ev::TxDone(li as u16));
        }
        self.take_drops(li);
    }

    fn on_tx_done(&mut self, li: usize) {
        let now = self.now;
        let l = &mut self.links[li];
        let p = l.in_tx.take().expect("a packet in transmission");
        l.busy_ns += now.saturating_since(l.tx_started).as_nanos();
        l.tx_bytes += p.size as u64;
        l.tx_packets += 1;
        let at = now + l.delay;
        l.pipe.push_back((at, p));
        if l.pipe.len() == 1 {
            self.events.push(at, Ev::Arrive(li as u16));
        }
        self.start_tx(li);
        self.sync_aqm_timer(li);
    }

    fn on_arrive(&mut self, li: usize) {
        let now = self.now;
        while let Some(&(t, p)) = self.links[li].pipe.front() {
            if t > now {
                self.events.push(t, Ev::Arrive(li as u16));
                break;
            }
            self.links[li].pipe.pop_front();
            self.forward(p);
        }
    }

    fn forward(&mut self, mut p: Packet) {
        p.hop += 1;
        let path = self.path(&p);
        if (p.hop as usize) < path.len() {
            let next = path[p.hop as usize] as usize;
            self.link_enqueue(next, p);
        } else {
            self.deliver(p);
        }
    }

    fn on_aqm_timer(&mut self, li: usize) {
        let now = self.now;
        let l = &mut self.links[li];
        if l.aqm_timer_at != Some(now) {
            return; // superseded
        }
        l.aqm_timer_at = None;
        if l.qdisc.next_timer().is_some_and(|t| t <= now) {
            let mut ctx = Ctx { now, rng: &mut l.rng, link_rate: l.rate };
            l.qdisc.on_timer(&mut ctx);
        }
        self.sync_aqm_timer(li);
    }

    fn sync_aqm_timer(&mut self, li: usize) {
        let l = &mut self.links[li];
        if let Some(t) = l.qdisc.next_timer() {
            let t = t.max(self.now);
            if l.aqm_timer_at.is_none_or(|s| t < s) {
                l.aqm_timer_at = Some(t);
                self.events.push(t, Ev::AqmTimer(li as u16));
            }
        }
    }

    // ---- endpoints ----------------------------------------------------------

    fn deliver(&mut self, p: Packet) {
        self.cons.delivered += 1;
        let fi = p.flow as usize;
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        match &mut self.flows[fi].kind {
            FlowKind::Tcp(t) => {
                if p.kind.is_forward() {
                    t.rcv.on_packet(&p, now, &mut out);
                } else {
                    t.snd.on_packet(&p, now, &mut out);
                }
            }
        }
        self.send_all(&mut out);
        self.out = out;
        self.sync_flow_timer(fi);
    }

    fn send_all(&mut self, out: &mut Vec<Packet>) {
        for p in out.drain(..) {
            self.inject(p);
        }
    }

    fn on_flow_start(&mut self, fi: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        match &mut self.flows[fi].kind {
            FlowKind::Tcp(t) => t.snd.start(now, None, &mut out),
        }
        self.send_all(&mut out);
        self.out = out;
        self.sync_flow_timer(fi);
    }

    fn on_flow_timer(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].timer_at != Some(now) {
            return; // superseded by an earlier deadline
        }
        self.flows[fi].timer_at = None;
        let mut out = std::mem::take(&mut self.out);
        match &mut self.flows[fi].kind {
            FlowKind::Tcp(t) => {
                t.snd.on_timer(now, &mut out);
                t.rcv.on_timer(now, &mut out);
            }
        }
        self.send_all(&mut out);
        self.out = out;
        self.sync_flow_timer(fi);
    }

    /// Keep one pending timer event per flow at its earliest deadline. Later
    /// deadlines are found when the earlier event fires (lazy timers: a moving RTO
    /// deadline costs no heap operations).
    fn sync_flow_timer(&mut self, fi: usize) {
        let f = &mut self.flows[fi];
        let want = match &f.kind {
            FlowKind::Tcp(t) => match (t.snd.poll_at(), t.rcv.poll_at()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        if let Some(w) = want {
            let w = w.max(self.now);
            if f.timer_at.is_none_or(|s| w < s) {
                f.timer_at = Some(w);
                self.events.push(w, Ev::FlowTimer(fi as u32));
            } else if f.timer_at.is_some_and(|s| s < w) {
                // The pending event is early: it will find nothing due and re-arm.
            }
        }
    }

    // ---- sampling -----------------------------------------------------------

    fn on_sample(&mut self) {
        let now = self.now;
        for (li, l) in self.links.iter().enumerate() {
            if !l.sampled {
                continue;
            }
            let m = &mut self.marks[li];
            let busy = l.busy_until(now);
            let st = &l.qdisc.stats;
            let r = &mut self.rec_links;
            r.time_ns.push(now.as_nanos());
            r.link.push(li as u8);
            r.capacity_bps.push(l.rate.bps());
            r.busy_ns.push(busy - m.busy);
            r.tx_bytes.push(l.tx_bytes - m.tx_bytes);
            r.tx_packets.push(l.tx_packets - m.tx_packets);
            r.arrivals.push(st.arrivals - m.arrivals);
            r.drops_overflow.push(st.drops[0] - m.drops[0]);
            r.drops_random.push(st.drops[1] - m.drops[1]);
            r.drops_deterministic.push(st.drops[2] - m.drops[2]);
            r.marks.push(st.marked() - m.marks);
            let bl = l.qdisc.backlog();
            r.backlog_bytes.push(bl.bytes);
            r.backlog_packets.push(bl.packets);
            let probe = l.qdisc.probe();
            r.drop_prob.push(probe.drop_prob.unwrap_or(f64::NAN));
            r.aqm_delay_ns.push(probe.delay_estimate.map_or(-1, |d| d.as_nanos() as i64));
            *m = LinkMark { busy, tx_bytes: l.tx_bytes, tx_packets: l.tx_packets, arrivals: st.arrivals, drops: st.drops, marks: st.marked() };
        }
        if self.flow_series_on {
            for (fi, f) in self.flows.iter().enumerate() {
                if f.start > now {
                    continue;
                }
                let FlowKind::Tcp(t) = &f.kind;
                let s = &t.snd;
                let r = &mut self.rec_flows;
                r.time_ns.push(now.as_nanos());
                r.flow.push(fi as u32);
                r.cwnd.push(s.w.cwnd);
                r.ssthresh.push(if s.w.ssthresh >= crate::tcp::cc::INFINITE_SSTHRESH { f64::NAN } else { s.w.ssthresh });
                r.srtt_ns.push(s.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
                r.rtt_ns.push(s.last_rtt().map_or(-1, |d| d.as_nanos() as i64));
                r.rto_ns.push(s.rtt.rto().as_nanos());
                r.in_flight.push(s.pipe());
                r.delivered_bytes.push(t.rcv.bytes_delivered);
                r.snd_una.push(s.snd_una);
                r.retransmits.push(s.stats.retransmits);
                r.ca_state.push(match s.ca_state {
                    CaState::Open => 0,
                    CaState::Recovery => 1,
                    CaState::Loss => 2,
                    CaState::Cwr => 3,
                });
            }
        }
        let next = now + self.interval;
        if next <= self.end {
            self.events.push(next, Ev::Sample);
        }
    }

    // ---- the end ------------------------------------------------------------

    fn in_flight(&self) -> u64 {
        self.links.iter().map(Link::in_flight).sum()
    }

    /// Every packet created is delivered, dropped with a cause, or still in a queue,
    /// a transmitter or a pipe; and each queue accounts for what it accepted.
    pub fn check_conservation(&mut self) -> Result<(), SimError> {
        self.cons.in_flight = self.in_flight();
        if !self.cons.holds() {
            let c = self.cons;
            return Err(SimError::Conservation(format!(
                "created {} != delivered {} + dropped {} + in flight {}",
                c.created, c.delivered, c.dropped, c.in_flight
            )));
        }
        for l in &self.links {
            if !l.qdisc.conserved() {
                return Err(SimError::Conservation(format!("queue of link {} does not account for its packets: {:?}", l.name, l.qdisc.stats)));
            }
        }
        Ok(())
    }

    /// For tests only: lose a queued or propagating packet without accounting for it,
    /// to show that the conservation check fires.
    #[doc(hidden)]
    pub fn debug_lose_a_packet(&mut self) -> bool {
        for l in &mut self.links {
            if l.pipe.pop_front().is_some() {
                return true;
            }
        }
        false
    }

    /// Run until simulated time `t` (for tests that inspect the state mid-run).
    #[doc(hidden)]
    pub fn run_until(&mut self, t: Time) {
        while let Some(nt) = self.events.peek_time() {
            if nt > t {
                break;
            }
            let (nt, ev) = self.events.pop().unwrap();
            self.now = nt;
            match ev {
                Ev::TxDone(l) => self.on_tx_done(l as usize),
                Ev::Arrive(l) => self.on_arrive(l as usize),
                Ev::AqmTimer(l) => self.on_aqm_timer(l as usize),
                Ev::FlowStart(f) => self.on_flow_start(f as usize),
                Ev::FlowTimer(f) => self.on_flow_timer(f as usize),
                Ev::Sample => self.on_sample(),
            }
        }
        self.now = t;
    }

    fn finish(mut self, wall_seconds: f64) -> RunOutput {
        let sc = &self.scenario;
        let links = self
            .links
            .iter()
            .map(|l| LinkInfo {
                name: l.name.clone(),
                rate_bps: l.rate.bps(),
                delay_ns: l.delay.as_nanos(),
                aqm: l.qdisc.aqm.kind().to_string(),
                limit_packets: l.limit.packets,
                limit_bytes: l.limit.bytes,
                stats: l.qdisc.stats,
            })
            .collect();
        let groups = sc
            .flows
            .iter()
            .enumerate()
            .map(|(gi, g)| GroupInfo {
                name: g.common.name.clone(),
                kind: g.traffic.kind().to_string(),
                count: g.common.count,
                cc: g.traffic.tcp().map(|t| t.cc.name().to_string()),
                base_rtt_ns: sc.base_rtt(gi).as_nanos(),
            })
            .collect();
        let mut ft = FlowTable::default();
        for (fi, f) in self.flows.iter().enumerate() {
            let FlowKind::Tcp(t) = &f.kind;
            ft.flow.push(fi as u32);
            ft.group.push(f.group);
            ft.start_ns.push(f.start.as_nanos());
            ft.end_ns.push(t.rcv.completed_at.map_or(-1, |x| x.as_nanos() as i64));
            ft.bytes_delivered.push(t.rcv.bytes_delivered);
            ft.segments_sent.push(t.snd.stats.segments_sent);
            ft.retransmits.push(t.snd.stats.retransmits);
            ft.timeouts.push(t.snd.stats.timeouts);
            ft.recoveries.push(t.snd.stats.recoveries);
            ft.ecn_reductions.push(t.snd.stats.ecn_reductions);
            ft.drops.push(f.drops);
            ft.ack_drops.push(f.ack_drops);
            ft.marks.push(f.marks);
            ft.min_rtt_ns.push(t.snd.min_rtt().map_or(-1, |d| d.as_nanos() as i64));
            ft.srtt_ns.push(t.snd.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
            ft.base_rtt_ns.push(sc.base_rtt(f.group as usize).as_nanos());
        }
        self.cons.in_flight = self.in_flight();
        RunOutput {
            scenario_json: sc.to_json(),
            seed: sc.seed,
            sim_ns: self.end.as_nanos(),
            wall_seconds,
            events: self.events_done,
            links,
            logged_links: std::mem::take(&mut self.logged_links),
            groups,
            conservation: self.cons,
            packets: std::mem::take(&mut self.rec_packets),
            link_series: std::mem::take(&mut self.rec_links),
            flow_series: std::mem::take(&mut self.rec_flows),
            flows: ft,
        }
    }
}

fn probe_delay(q: &Qdisc<Packet>) -> i64 {
    q.probe().delay_estimate.map_or(-1, |d| d.as_nanos() as i64)
}

/// Parse, build and run a scenario.
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
    Sim::new(sc)?.run(progress)
}
