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

use std::collections::VecDeque;
use std::time::Instant;

use aqm::{AqmSpec, Ctx, Dropped, Duration, Qdisc, Time};

use crate::event::EventQueue;
use crate::link::{ChainNext, Link, Shaper, TRACE_BYTES};
use crate::packet::Packet;
use crate::record::*;
use crate::rng::{self, SimRng};
use crate::scenario::{Connection, FlowSel, Scenario, ScenarioError, StartSpec, TrafficSpec};
use crate::tcp::palermo::Mode;
use crate::tcp::sender::{CaState, SenderStats};
use crate::tcp::{TcpReceiver, TcpSender};
use crate::traffic::{Cbr, Current, Downloads};

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
    /// A rate link's transmitter is free and packets wait in its queue.
    TxFree(u16),
    /// A trace link's delivery opportunity.
    Opportunity(u16),
    /// A scheduled rate change of a link.
    RateStep(u16),
    Arrive(u16),
    AqmTimer(u16),
    FlowStart(u32),
    FlowTimer(u32),
    /// A CBR source's next datagram.
    CbrSend(u32),
    /// A download client's next request.
    Request(u32),
    /// A bulk sender stops writing (the group's `stop`).
    AppStop(u32),
    /// The head of a flow's own delay line is due.
    Line(u32),
    Sample,
}

/// Up to this many links, pipe heads are kept apart from the heap (`Sim::pipe_heads`).
const MAX_LINKS_APART: usize = 32;

/// Tags of the most frequent events, dispatched without unpacking (`Sim::dispatch_packed`).
const TAG_TX_FREE: u32 = 3;
const TAG_ARRIVE: u32 = 5;
const TAG_FLOW_TIMER: u32 = 11;
/// A packed event is `tag << TAG_SHIFT | index`.
const TAG_SHIFT: u32 = 28;
const INDEX_MASK: u32 = (1 << TAG_SHIFT) - 1;
/// The most flows a run may have: their index fits an event's 28 bits (checked when
/// the scenario is validated).
pub(crate) const MAX_FLOWS: u64 = INDEX_MASK as u64;

impl crate::event::Packed for Ev {
    /// A 4-bit tag and a 28-bit link or flow index (`MAX_FLOWS`).
    /// The packed value orders events at equal times: a sample first (it sees the
    /// state before anything at its time), then AQM timers, rate changes,
    /// transmitters, trace opportunities, pipes, delay lines, CBR sends, flow starts,
    /// requests, application stops and flow timers; within a kind, by link or flow
    /// index.
    #[inline]
    fn pack(self) -> u32 {
        let (tag, x) = match self {
            Ev::Sample => (0, 0),
            Ev::AqmTimer(l) => (1, l as u32),
            Ev::RateStep(l) => (2, l as u32),
            Ev::TxFree(l) => (TAG_TX_FREE, l as u32),
            Ev::Opportunity(l) => (4, l as u32),
            Ev::Arrive(l) => (TAG_ARRIVE, l as u32),
            Ev::Line(f) => (6, f),
            Ev::CbrSend(f) => (7, f),
            Ev::FlowStart(f) => (8, f),
            Ev::Request(f) => (9, f),
            Ev::AppStop(f) => (10, f),
            Ev::FlowTimer(f) => (TAG_FLOW_TIMER, f),
        };
        debug_assert!(x <= INDEX_MASK);
        tag << TAG_SHIFT | x
    }
    #[inline]
    fn unpack(v: u32) -> Self {
        let x = v & INDEX_MASK;
        match v >> TAG_SHIFT {
            0 => Ev::Sample,
            1 => Ev::AqmTimer(x as u16),
            2 => Ev::RateStep(x as u16),
            TAG_TX_FREE => Ev::TxFree(x as u16),
            4 => Ev::Opportunity(x as u16),
            TAG_ARRIVE => Ev::Arrive(x as u16),
            6 => Ev::Line(x),
            7 => Ev::CbrSend(x),
            8 => Ev::FlowStart(x),
            9 => Ev::Request(x),
            10 => Ev::AppStop(x),
            _ => Ev::FlowTimer(x),
        }
    }
    /// One pending per flow, most far ahead or superseded (lazy timers).
    #[inline]
    fn is_timer(self) -> bool {
        matches!(self, Ev::FlowTimer(_) | Ev::FlowStart(_) | Ev::AppStop(_) | Ev::Request(_))
    }
}

/// What a TCP flow's application does.
enum App {
    /// Always data to send (until the group's stop time).
    Bulk,
    /// Files, web pages, or a single transfer.
    Downloads(Box<Downloads>),
}

struct TcpFlow {
    snd: TcpSender,
    rcv: TcpReceiver,
    /// The current connection; earlier connections' packets are discarded on arrival.
    conn: u32,
    /// Payload bytes delivered by the flow's earlier connections, and their
    /// senders' counters.
    delivered_before: u64,
    stats_before: SenderStats,
    min_rtt_before: Option<Duration>,
    app: App,
}

impl TcpFlow {
    /// The sender's counters over all the flow's connections.
    fn stats(&self) -> SenderStats {
        self.stats_before + self.snd.stats
    }

    /// The smallest RTT over all the flow's connections.
    fn min_rtt(&self) -> Option<Duration> {
        min_opt(self.min_rtt_before, self.snd.min_rtt())
    }
}

fn min_opt<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Payload bytes a TCP flow delivered over all its connections.
fn delivered_total(t: &TcpFlow) -> u64 {
    t.delivered_before + t.rcv.bytes_delivered
}

enum FlowKind {
    Tcp(Box<TcpFlow>),
    Cbr(Cbr),
}

struct Flow {
    group: u16,
    /// Its group's sender and receiver hosts ([`Scenario::host_ids`]), stamped on
    /// every packet it sends.
    hosts: [u16; 2],
    start: Time,
    /// Time of the pending timer event, if one is scheduled.
    timer_at: Option<Time>,
    /// Forward packets (data, SYN, datagrams) dropped anywhere, and ACKs dropped.
    drops: u64,
    ack_drops: u64,
    marks: u64,
    /// This flow's own extra one-way delay (`path.flow_delay`), and its delay line:
    /// every packet the flow's hosts send waits here first (the same delay for all,
    /// so the line stays in time order).
    extra: Duration,
    line: VecDeque<(Time, Packet)>,
    /// Record every ACK (`record.flow_trace`).
    traced: bool,
    kind: FlowKind,
}

struct Group {
    /// The links a packet crosses: data (sender to receiver), then ACKs.
    paths: [[u16; 3]; 2],
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
    cap_bits: u128,
    opp: u64,
    opp_used: u64,
}

pub struct Sim {
    pub now: Time,
    end: Time,
    events: EventQueue<Ev>,
    /// With few links, each pipe's head arrival time (ns; `u64::MAX`: none) is kept
    /// here instead of in the heap: the next event is the smaller of the heap's top
    /// and the earliest head (as the key of `Ev::Arrive(link)`, so that the order is
    /// the heap's: by time, then by link). Same order, no heap work for the most
    /// frequent event.
    pipe_heads: Vec<u64>,
    /// The key of the earliest of `pipe_heads`, unless `heads_stale` (the earliest
    /// was taken): then the next `next_event` scans for it again. A head is only
    /// ever set in an empty slot, so setting one cannot raise the minimum.
    head_min: u128,
    heads_stale: bool,
    heads_apart: bool,
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
    datagrams_on: bool,
    marks: Vec<LinkMark>,
    rec_packets: PacketLog,
    rec_links: LinkSeries,
    rec_flows: FlowSeries,
    rec_trace: FlowTrace,
    rec_transfers: TransferLog,
    rec_datagrams: DatagramLog,
    hists: Histograms,
    /// Dequeues from this time on go into the sojourn histograms (`metrics.warmup`).
    hist_from: Time,
    logged_links: Vec<String>,
    scenario: Scenario,
}

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, SimError> {
        for (gi, g) in sc.flows.iter().enumerate() {
            if let Some(tcp) = g.traffic.tcp().filter(|t| !t.cc.simulated()) {
                let cc = tcp.cc.kind();
                return Err(ScenarioError {
                    path: format!("flows[{gi}].tcp.cc"),
                    message: format!("\"{cc}\" is a Linux congestion control for `aqmlab emulate`; the simulator has no {}", cc.to_uppercase()),
                }
                .into());
            }
        }
        let seed = sc.seed;
        let end = Time::ZERO + sc.duration;
        let mut links = Vec::new();
        let b = &sc.bottleneck;
        let fwd_limit = sc.resolve_limit("bottleneck.buffer", b.buffer)?;
        let rev_limit = sc.resolve_limit("bottleneck.reverse_buffer", b.reverse_buffer.unwrap_or(b.buffer))?;
        let access_limit = sc.resolve_limit("access.buffer", sc.access.buffer)?;
        let droptail = AqmSpec::default();
        let mut bottleneck = Link::new("bottleneck", b.rate, b.delay, fwd_limit, Qdisc::new(&b.aqm, fwd_limit), rng::stream(seed, "link.bottleneck"));
        if let Some(t) = &b.trace {
            bottleneck = bottleneck.with_trace(t.clone());
        } else if !b.schedule.is_empty() {
            bottleneck = bottleneck.with_schedule(b.schedule.iter().map(|s| (Time::ZERO + s.at, s.rate)).collect());
        }
        links.push(bottleneck);
        links.push(Link::new(
            "bottleneck_rev",
            b.rev_rate(),
            b.rev_delay(),
            rev_limit,
            Qdisc::new(&b.reverse_aqm, rev_limit),
            rng::stream(seed, "link.bottleneck_rev"),
        ));
        links[BOTTLENECK].sampled = true;
        links[BOTTLENECK_REV].sampled = true;
        let mut groups = Vec::new();
        let mut flows = Vec::new();
        let a = &sc.access;
        let host_ids = sc.host_ids();
        for (gi, g) in sc.flows.iter().enumerate() {
            let name = &g.common.name;
            let path = &g.common.path;
            let snd_delay = path.sender_delay.unwrap_or(a.delay);
            let rcv_delay = path.receiver_delay.unwrap_or(a.delay);
            let ret_delay = path.return_delay.unwrap_or(Duration::ZERO);
            let mut add = |suffix: &str, delay: Duration| {
                let n = format!("{name}.{suffix}");
                links.push(Link::new(&n, a.rate, delay, access_limit, Qdisc::new(&droptail, access_limit), rng::stream(seed, &format!("link.{n}"))));
                (links.len() - 1) as u16
            };
            // data: sender -> R1 -> R2 -> receiver; ACKs: receiver -> R2 -> R1 -> sender
            let up = add("up", snd_delay);
            let down = add("down", rcv_delay);
            let up_rev = add("up_rev", rcv_delay + ret_delay);
            let down_rev = add("down_rev", snd_delay);
            groups.push(Group { paths: [[up, BOTTLENECK as u16, down], [up_rev, BOTTLENECK_REV as u16, down_rev]] });
            let stop = g.common.stop.map_or(end, |s| (Time::ZERO + s).min(end));
            for (k, (start, extra)) in (0..g.common.count).zip(flow_draws(sc, gi)) {
                let id = flows.len() as u32;
                let tcp = |cfg: &crate::tcp::TcpConfig, app: App| {
                    FlowKind::Tcp(Box::new(TcpFlow { snd: TcpSender::new(id, cfg), rcv: TcpReceiver::new(id, cfg), conn: 0, delivered_before: 0, stats_before: SenderStats::default(), min_rtt_before: None, app }))
                };
                let downloads = |single: Option<u64>, persistent: bool| {
                    App::Downloads(Box::new(Downloads {
                        rng: rng::stream(seed, &format!("group.{name}.flow.{k}")),
                        single,
                        persistent,
                        requested: 0,
                        completed: 0,
                        current: None,
                        stop,
                    }))
                };
                let kind = match &g.traffic {
                    TrafficSpec::Bulk(bs) => tcp(&bs.tcp, App::Bulk),
                    TrafficSpec::Files(d) | TrafficSpec::Web(d) => tcp(&d.tcp, downloads(None, d.connection == Connection::Persistent)),
                    TrafficSpec::Transfer(t) => tcp(&t.tcp, downloads(Some(t.size.0), false)),
                    TrafficSpec::Cbr(c) => FlowKind::Cbr(Cbr::new(c.packet_size.0 as u32, c.rate.bps(), c.ecn, start, stop)),
                };
                flows.push(Flow {
                    group: gi as u16,
                    hosts: host_ids[gi],
                    start,
                    timer_at: None,
                    drops: 0,
                    ack_drops: 0,
                    marks: 0,
                    extra,
                    line: VecDeque::new(),
                    traced: false,
                    kind,
                });
            }
        }
        for sel in &sc.record.flow_trace {
            match sel {
                FlowSel::Id(i) => flows[*i as usize].traced = true,
                FlowSel::Group(name) => {
                    let gi = sc.flows.iter().position(|g| &g.common.name == name).expect("validated group name");
                    for f in flows.iter_mut().filter(|f| f.group as usize == gi) {
                        f.traced = true;
                    }
                }
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
        // Eager DropTail links (link.rs): every DropTail rate link without packet
        // records, booked through from its upstream pipe when that is its only input.
        for l in links.iter_mut().filter(|l| l.can_be_eager() && l.log.is_none()) {
            l.make_eager(end);
        }
        const ENDPOINT: u16 = u16::MAX;
        let mut inputs: Vec<Vec<u16>> = vec![Vec::new(); links.len()];
        for g in &groups {
            for path in &g.paths {
                for (h, &l) in path.iter().enumerate() {
                    let from = if h == 0 { ENDPOINT } else { path[h - 1] };
                    if !inputs[l as usize].contains(&from) {
                        inputs[l as usize].push(from);
                    }
                }
            }
        }
        for (l, inp) in links.iter_mut().zip(&inputs) {
            if let ([from], true) = (inp.as_slice(), l.eager.is_some()) {
                l.chain_from = (*from != ENDPOINT).then_some(*from);
            }
        }
        // what each pipe feeds, so that a packet entering it needs no path lookup
        // unless some but not all of its next hops are booked through
        for li in 0..links.len() {
            let next: Vec<u16> = (0..links.len() as u16).filter(|&n| inputs[n as usize].contains(&(li as u16))).collect();
            let chained = |n: &u16| links[*n as usize].chain_from == Some(li as u16);
            links[li].chain_next = match next.as_slice() {
                [n] if chained(n) => ChainNext::To(*n),
                _ if next.iter().any(chained) => ChainNext::ByPath,
                _ => ChainNext::None,
            };
        }
        let nlinks = links.len();
        let mut sim = Sim {
            now: Time::ZERO,
            end,
            events: EventQueue::default(),
            pipe_heads: vec![u64::MAX; nlinks],
            head_min: u128::MAX,
            heads_stale: false,
            heads_apart: nlinks <= MAX_LINKS_APART,
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
            datagrams_on: sc.record.datagrams,
            marks: vec![LinkMark::default(); nlinks],
            rec_packets: PacketLog::default(),
            rec_links: LinkSeries::default(),
            rec_flows: FlowSeries::default(),
            rec_trace: FlowTrace::default(),
            rec_transfers: TransferLog::default(),
            rec_datagrams: DatagramLog::default(),
            hists: Histograms { bottleneck_sojourn_by_group: vec![Default::default(); sc.flows.len()], ..Default::default() },
            hist_from: Time::ZERO + sc.metrics.warmup,
            logged_links,
            scenario: sc.clone(),
        };
        for (i, f) in sim.flows.iter().enumerate() {
            sim.events.push(f.start, Ev::FlowStart(i as u32));
            if let (FlowKind::Tcp(t), Some(stop)) = (&f.kind, sc.flows[f.group as usize].common.stop) {
                if matches!(t.app, App::Bulk) && Time::ZERO + stop < end {
                    sim.events.push(Time::ZERO + stop, Ev::AppStop(i as u32));
                }
            }
        }
        for li in 0..nlinks {
            sim.sync_aqm_timer(li);
            if let Some(t) = sim.links[li].next_step_at() {
                sim.events.push(t, Ev::RateStep(li as u16));
            }
        }
        sim.events.push(Time::ZERO + sim.interval, Ev::Sample);
        Ok(sim)
    }

    /// Run every link event by event: no eager DropTail links (link.rs), and every
    /// pipe's head arrival in the event heap (as with more than `MAX_LINKS_APART`
    /// links). For tests that show the fast paths give the same run bit for bit;
    /// call before `run`.
    #[doc(hidden)]
    pub fn event_driven(mut self) -> Sim {
        self.heads_apart = false;
        for l in &mut self.links {
            l.eager = None;
            l.chain_from = None;
            l.chain_next = ChainNext::None;
        }
        self
    }

    /// Take the next event due at or before `until`: the heap's top or a pipe head.
    #[inline]
    fn next_event(&mut self, until: Time) -> Option<(Time, u32)> {
        let hk = self.events.peek_key().unwrap_or(u128::MAX);
        if self.heads_stale {
            // the first of the earliest: at equal times the lower link comes first,
            // as in the heap's key
            let (mut li, mut t) = (0, u64::MAX);
            for (i, &h) in self.pipe_heads.iter().enumerate() {
                if h < t {
                    (li, t) = (i, h);
                }
            }
            self.head_min = if t == u64::MAX { u128::MAX } else { crate::event::entry(Time::from_nanos(t), 0, Ev::Arrive(li as u16)) };
            self.heads_stale = false;
        }
        let pk = self.head_min;
        let k = hk.min(pk);
        if k == u128::MAX || (k >> 64) as u64 > until.as_nanos() {
            return None;
        }
        if pk < hk {
            // the key's event is Arrive(link)
            let v = (k >> 32) as u32;
            self.pipe_heads[(v & INDEX_MASK) as usize] = u64::MAX;
            self.heads_stale = true;
            return Some((Time::from_nanos((k >> 64) as u64), v));
        }
        self.events.pop_packed()
    }

    /// The head of a link's pipe is due at `t`.
    #[inline]
    fn schedule_arrive(&mut self, li: usize, t: Time) {
        if self.heads_apart {
            debug_assert_eq!(self.pipe_heads[li], u64::MAX, "a head is set in an empty slot");
            self.pipe_heads[li] = t.as_nanos();
            self.head_min = self.head_min.min(crate::event::entry(t, 0, Ev::Arrive(li as u16)));
        } else {
            self.events.push(t, Ev::Arrive(li as u16));
        }
    }

    /// `dispatch` of a packed event, matched once on its tag.
    #[inline]
    fn dispatch_packed(&mut self, v: u32) {
        use crate::event::Packed;
        let x = (v & INDEX_MASK) as usize;
        match v >> TAG_SHIFT {
            TAG_ARRIVE => self.on_arrive(x),
            TAG_TX_FREE => self.on_tx_free(x),
            TAG_FLOW_TIMER => self.on_flow_timer(x),
            _ => self.dispatch(Ev::unpack(v)),
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::TxFree(l) => self.on_tx_free(l as usize),
            Ev::Opportunity(l) => self.on_opportunity(l as usize),
            Ev::RateStep(l) => self.on_rate_step(l as usize),
            Ev::Arrive(l) => self.on_arrive(l as usize),
            Ev::AqmTimer(l) => self.on_aqm_timer(l as usize),
            Ev::FlowStart(f) => self.on_flow_start(f as usize),
            Ev::FlowTimer(f) => self.on_flow_timer(f as usize),
            Ev::CbrSend(f) => self.on_cbr_send(f as usize),
            Ev::Request(f) => self.request(f as usize),
            Ev::AppStop(f) => self.on_app_stop(f as usize),
            Ev::Line(f) => self.on_line(f as usize),
            Ev::Sample => self.on_sample(),
        }
    }

    /// Run to the end. `progress` gets the fraction done about every 1 % of simulated
    /// time and returns `false` to stop.
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
        let wall = Instant::now();
        let step = (self.end.as_nanos() / 100).max(1);
        let mut next_report = step;
        while let Some((t, ev)) = self.next_event(self.end) {
            self.now = t;
            self.events_done += 1;
            if t.as_nanos() >= next_report {
                if !progress(t.as_nanos() as f64 / self.end.as_nanos() as f64) {
                    return Err(SimError::Interrupted);
                }
                next_report = (t.as_nanos() / step + 1) * step;
            }
            self.dispatch_packed(ev);
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
        let fi = p.flow as usize;
        let f = &mut self.flows[fi];
        let [sender, receiver] = f.hosts;
        (p.src_host, p.dst_host) = if p.kind.is_forward() { (sender, receiver) } else { (receiver, sender) };
        if !f.extra.is_zero() {
            let at = self.now + f.extra;
            f.line.push_back((at, p));
            if f.line.len() == 1 {
                self.events.push(at, Ev::Line(fi as u32));
            }
            return;
        }
        let link = self.path(&p)[0];
        self.link_enqueue(link as usize, p);
    }

    /// The head of a flow's delay line is due: its packets enter their first link.
    fn on_line(&mut self, fi: usize) {
        let now = self.now;
        while let Some(&(t, p)) = self.flows[fi].line.front() {
            if t > now {
                self.events.push(t, Ev::Line(fi as u32));
                break;
            }
            self.flows[fi].line.pop_front();
            let link = self.path(&p)[0];
            self.link_enqueue(link as usize, p);
        }
    }

    fn path(&self, p: &Packet) -> &[u16] {
        let g = &self.groups[self.flows[p.flow as usize].group as usize];
        &g.paths[!p.kind.is_forward() as usize]
    }

    fn link_enqueue(&mut self, li: usize, p: Packet) {
        let now = self.now;
        if self.links[li].eager.is_some() {
            if let Some(due) = self.book(li, &p, now) {
                self.pipe_push(li, due, &p);
            }
            return;
        }
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
        let queued = self.links[li].qdisc.backlog().packets > 0;
        if let Shaper::Trace { pending, trace, .. } = &mut self.links[li].shaper {
            // Mahimahi: an arriving packet can use the opportunities after its arrival.
            if !*pending && queued {
                *pending = true;
                let at = trace.next_after(now);
                self.events.push(at, Ev::Opportunity(li as u16));
            }
        } else {
            let l = &mut self.links[li];
            if !l.wake_pending {
                if l.is_busy(now) {
                    // one wake-up when the transmitter frees, for all that queue meanwhile
                    l.wake_pending = true;
                    self.events.push(l.tx_end, Ev::TxFree(li as u16));
                } else {
                    self.start_tx(li);
                }
            }
        }
        self.sync_aqm_timer(li);
    }

    #[inline]
    fn take_drops(&mut self, li: usize) {
        if !self.drops.is_empty() {
            self.account_drops(li);
        }
    }

    #[cold]
    fn account_drops(&mut self, li: usize) {
        let now = self.now.as_nanos();
        let l = &self.links[li];
        let (backlog, d_est, log) = (l.qdisc.backlog().bytes, probe_delay(&l.qdisc), l.log);
        let mut drops = std::mem::take(&mut self.drops);
        for d in drops.drain(..) {
            self.count_drop(li, d.cause, &d.pkt, backlog);
            if let Some(log) = log {
                let soj = d.sojourn.map_or(-1, |s| s.as_nanos() as i64);
                self.rec_packets.push(now, log, d.pkt.flow, d.pkt.uid, d.pkt.kind as u8, d.pkt.size, EV_DROP, d.cause as u8 + 1, soj, backlog, d_est);
            }
        }
        self.drops = drops;
    }

    /// A dropped packet in the run's counters: conservation, the flow's drops, and
    /// at the bottleneck the queueing delay at the drop, backlog over rate (Kuhn &
    /// Ros Fig. 4).
    fn count_drop(&mut self, li: usize, cause: aqm::Cause, pkt: &Packet, backlog_bytes: u64) {
        self.cons.dropped += 1;
        if li == BOTTLENECK {
            let x = (backlog_bytes as u128 * 8_000_000_000 / self.links[li].rate.bps().max(1) as u128) as u64;
            self.hists.drop_delay[cause.index()].record(x);
        }
        let f = &mut self.flows[pkt.flow as usize];
        if pkt.kind.is_forward() {
            f.drops += 1;
        } else {
            f.ack_drops += 1;
        }
    }

    /// Take the next packet from a link's queue (the AQM decides which, and may drop
    /// some on the way), recording the dequeue.
    fn dequeue_one(&mut self, li: usize) -> Option<Packet> {
        let now = self.now;
        let l = &mut self.links[li];
        let mut ctx = Ctx { now, rng: &mut l.rng, link_rate: l.rate };
        let dep = l.qdisc.dequeue(&mut ctx, &mut self.drops);
        let out = dep.map(|dep| {
            let p = dep.pkt;
            if li <= BOTTLENECK_REV && now >= self.hist_from {
                record_sojourn(&mut self.hists, &self.flows, li, p.flow, dep.sojourn.as_nanos());
            }
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
            p
        });
        self.take_drops(li);
        out
    }

    /// Start the next transmission of an idle rate link. The packet goes into the
    /// pipe at once, due when its last bit has left plus the propagation delay
    /// (cut-through); a wake-up is scheduled at the end of the transmission only if
    /// packets wait behind it.
    fn start_tx(&mut self, li: usize) {
        if let Some(p) = self.dequeue_one(li) {
            let now = self.now;
            let l = &mut self.links[li];
            let end = l.begin_tx(&p, now);
            let at = end + l.delay;
            if l.qdisc.backlog().packets > 0 {
                l.wake_pending = true;
                self.events.push(end, Ev::TxFree(li as u16));
            }
            self.pipe_push(li, at, &p);
        }
    }

    /// A packet enters a link's propagation pipe, due at the next hop at `at`. If
    /// that hop is an eager link fed by this pipe alone, the packet is booked through
    /// it at once (link.rs) and enters its pipe instead, and so on down the path.
    fn pipe_push(&mut self, mut li: usize, mut at: Time, p: &Packet) {
        let mut hop = p.hop;
        while at <= self.end {
            let next = match self.links[li].chain_next {
                ChainNext::None => None,
                ChainNext::To(n) => Some(n),
                ChainNext::ByPath => self.path(p).get(hop as usize + 1).copied().filter(|&n| self.links[n as usize].chain_from == Some(li as u16)),
            };
            let Some(next) = next else { break };
            hop += 1;
            match self.book(next as usize, p, at) {
                Some(due) => (li, at) = (next as usize, due),
                None => return, // refused
            }
        }
        let l = &mut self.links[li];
        debug_assert!(l.pipe.back().is_none_or(|b| b.0 <= at), "the pipe stays in time order");
        let mut q = *p;
        q.hop = hop;
        l.pipe.push_back((at, q));
        if l.pipe.len() == 1 {
            self.schedule_arrive(li, at);
        }
    }

    /// A packet reaches an eager DropTail link at `at` (now, or later when booked
    /// through from the upstream pipe): its passage is decided at once (link.rs,
    /// [`Link::book`]). Returns when it reaches the next hop, or `None` if refused.
    fn book(&mut self, li: usize, p: &Packet, at: Time) -> Option<Time> {
        let now = self.now;
        let l = &mut self.links[li];
        if l.eager.as_ref().is_some_and(|e| e.booked() >= 256) {
            l.settle(Time::from_nanos(now.as_nanos().saturating_sub(1))); // keeps the book short
        }
        match l.book(at, p.size) {
            Ok((start, end)) => {
                let due = end + l.delay;
                if li <= BOTTLENECK_REV && start >= self.hist_from && start <= self.end {
                    record_sojourn(&mut self.hists, &self.flows, li, p.flow, start.saturating_since(at).as_nanos());
                }
                Some(due)
            }
            Err(backlog) => {
                // refused on overflow (in the link's own stats when it counts or settles)
                self.count_drop(li, aqm::Cause::Overflow, p, backlog);
                None
            }
        }
    }

    fn on_tx_free(&mut self, li: usize) {
        let l = &mut self.links[li];
        l.wake_pending = false;
        debug_assert!(!l.is_busy(self.now));
        self.start_tx(li);
        self.sync_aqm_timer(li);
    }

    /// A trace link's delivery opportunities at `now` (Mahimahi `LinkQueue::
    /// rationalize`): each carries up to 1500 bytes, from one or several packets; a
    /// packet leaves when its last byte has been carried.
    fn on_opportunity(&mut self, li: usize) {
        let now = self.now;
        let Shaper::Trace { trace, .. } = &self.links[li].shaper else { unreachable!("opportunity on a rate link") };
        let n = trace.count_upto(now) - trace.count_upto(Time::from_nanos(now.as_nanos() - 1));
        for _ in 0..n {
            let mut room = TRACE_BYTES;
            let mut used = false;
            while room > 0 {
                if self.links[li].in_tx.is_none() {
                    let Some(p) = self.dequeue_one(li) else { break };
                    let l = &mut self.links[li];
                    l.in_tx = Some(p);
                    l.tx_started = now;
                    if let Shaper::Trace { left, .. } = &mut l.shaper {
                        *left = p.size;
                    }
                }
                let l = &mut self.links[li];
                let Shaper::Trace { left, .. } = &mut l.shaper else { unreachable!() };
                let amount = room.min(*left);
                *left -= amount;
                room -= amount;
                used = true;
                if *left == 0 {
                    let p = l.in_tx.take().expect("a packet in transit");
                    l.count_sent(&p);
                    let at = now + l.delay;
                    self.pipe_push(li, at, &p);
                }
            }
            if used {
                if let Shaper::Trace { used, .. } = &mut self.links[li].shaper {
                    *used += 1;
                }
            }
        }
        let busy = self.links[li].in_tx.is_some() || self.links[li].qdisc.backlog().packets > 0;
        let Shaper::Trace { trace, pending, .. } = &mut self.links[li].shaper else { unreachable!() };
        if busy {
            let at = trace.next_after(now);
            self.events.push(at, Ev::Opportunity(li as u16));
        } else {
            *pending = false;
        }
        self.sync_aqm_timer(li);
    }

    fn on_rate_step(&mut self, li: usize) {
        let now = self.now;
        self.links[li].apply_step(now);
        if let Some(t) = self.links[li].next_step_at() {
            self.events.push(t, Ev::RateStep(li as u16));
        }
    }

    fn on_arrive(&mut self, li: usize) {
        let now = self.now;
        while let Some(&(t, p)) = self.links[li].pipe.front() {
            if t > now {
                self.schedule_arrive(li, t);
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
        // An AQM that holds packets back (CAKE's shaper) lets them go at its timer: an
        // idle rate link with a backlog starts again (never the case otherwise: a rate
        // link goes idle only with its queue empty).
        let l = &mut self.links[li];
        if !matches!(l.shaper, Shaper::Trace { .. }) && !l.wake_pending && !l.is_busy(now) && l.qdisc.backlog().packets > 0 {
            self.start_tx(li);
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
        match &mut self.flows[fi].kind {
            FlowKind::Cbr(c) => {
                c.received += 1;
                c.rx_bytes += p.size as u64;
                if self.datagrams_on {
                    let r = &mut self.rec_datagrams;
                    r.time_ns.push(now.as_nanos());
                    r.flow.push(p.flow);
                    r.seq.push(p.seq);
                    r.size.push(p.size);
                    r.delay_ns.push(now.saturating_since(p.sent_at).as_nanos());
                    r.ce.push(p.ecn == aqm::Ecn::Ce);
                }
            }
            FlowKind::Tcp(t) => {
                if p.conn != t.conn {
                    return; // for an earlier connection of this flow: discarded
                }
                let mut out = std::mem::take(&mut self.out);
                if p.kind.is_forward() {
                    t.rcv.on_packet(&p, now, &mut out);
                } else {
                    t.snd.on_packet(&p, now, &mut out);
                    if self.flows[fi].traced {
                        self.trace_ack(fi, &p);
                    }
                }
                self.send_all(fi, &mut out);
                self.out = out;
                if p.kind.is_forward() {
                    self.check_download_done(fi);
                }
                self.sync_flow_timer(fi);
            }
        }
    }

    fn trace_ack(&mut self, fi: usize, a: &Packet) {
        let FlowKind::Tcp(t) = &self.flows[fi].kind else { return };
        let s = &t.snd;
        let r = &mut self.rec_trace;
        r.time_ns.push(self.now.as_nanos());
        r.flow.push(fi as u32);
        r.conn.push(t.conn);
        r.acked_bytes.push(s.stats.bytes_acked);
        r.snd_una.push(s.snd_una);
        r.snd_nxt.push(s.snd_nxt);
        r.cwnd.push(s.w.cwnd);
        r.in_flight.push(s.pipe());
        r.unacked.push(s.outstanding());
        r.rtt_ns.push(s.last_rtt().map_or(-1, |d| d.as_nanos() as i64));
        r.srtt_ns.push(s.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
        r.rwnd.push(window_col(a.rwnd));
    }

    /// Send what an endpoint produced, stamped with the flow's connection.
    fn send_all(&mut self, fi: usize, out: &mut Vec<Packet>) {
        let conn = match &self.flows[fi].kind {
            FlowKind::Tcp(t) => t.conn,
            FlowKind::Cbr(_) => 0,
        };
        for mut p in out.drain(..) {
            p.conn = conn;
            self.inject(p);
        }
    }

    fn on_flow_start(&mut self, fi: usize) {
        let now = self.now;
        match &mut self.flows[fi].kind {
            FlowKind::Cbr(_) => self.on_cbr_send(fi),
            FlowKind::Tcp(t) if matches!(t.app, App::Downloads(_)) => self.request(fi),
            FlowKind::Tcp(t) => {
                let mut out = std::mem::take(&mut self.out);
                t.snd.start(now, None, &mut out);
                self.send_all(fi, &mut out);
                self.out = out;
                self.sync_flow_timer(fi);
            }
        }
    }

    fn on_cbr_send(&mut self, fi: usize) {
        let now = self.now;
        let FlowKind::Cbr(c) = &mut self.flows[fi].kind else { unreachable!() };
        if now >= c.stop {
            return;
        }
        let (p, next) = c.emit(fi as u32, now);
        if let Some(t) = next {
            self.events.push(t, Ev::CbrSend(fi as u32));
        }
        self.inject(p);
    }

    /// A download client asks for its next file (or a transfer starts).
    fn request(&mut self, fi: usize) {
        let now = self.now;
        let g = self.flows[fi].group as usize;
        let spec = &self.scenario.flows[g].traffic;
        let (sizes, cfg) = match spec {
            TrafficSpec::Files(d) | TrafficSpec::Web(d) => (Some(&d.sizes), &d.tcp),
            TrafficSpec::Transfer(t) => (None, &t.tcp),
            _ => unreachable!("requests come from download flows"),
        };
        let FlowKind::Tcp(t) = &mut self.flows[fi].kind else { unreachable!() };
        let App::Downloads(d) = &mut t.app else { unreachable!() };
        let size = d.size(sizes);
        let mut out = std::mem::take(&mut self.out);
        if d.persistent && d.requested > 0 {
            t.snd.send_more(now, size, &mut out);
            t.rcv.expect_more(t.snd.app_segments());
        } else {
            if d.requested > 0 {
                // a new connection: fresh state; what is left of the old one is discarded
                t.conn += 1;
                t.delivered_before += t.rcv.bytes_delivered;
                t.stats_before = t.stats_before + t.snd.stats;
                t.min_rtt_before = min_opt(t.min_rtt_before, t.snd.min_rtt());
                t.snd = TcpSender::new(fi as u32, cfg);
                t.rcv = TcpReceiver::new(fi as u32, cfg);
            }
            t.snd.start(now, Some(size), &mut out);
            t.rcv.expect_segments = Some(t.snd.segments_for(size));
        }
        let r = &mut self.rec_transfers;
        r.flow.push(fi as u32);
        r.group.push(g as u16);
        r.index.push(d.requested);
        r.conn.push(t.conn);
        r.size_bytes.push(size);
        r.request_ns.push(now.as_nanos());
        r.end_ns.push(-1);
        r.retransmits.push(-1);
        r.timeouts.push(-1);
        d.current = Some(Current { row: r.flow.len() - 1, retx0: t.snd.stats.retransmits, rto0: t.snd.stats.timeouts });
        d.requested += 1;
        self.send_all(fi, &mut out);
        self.out = out;
        self.sync_flow_timer(fi);
    }

    /// After data reached a download client: if the file is complete, note its end
    /// and schedule the next request after a think time.
    fn check_download_done(&mut self, fi: usize) {
        let now = self.now;
        let g = self.flows[fi].group as usize;
        let FlowKind::Tcp(t) = &mut self.flows[fi].kind else { return };
        let App::Downloads(d) = &mut t.app else { return };
        if d.current.is_none() || t.rcv.completed_at.is_none() {
            return;
        }
        let cur = d.current.take().unwrap();
        let r = &mut self.rec_transfers;
        r.end_ns[cur.row] = now.as_nanos() as i64;
        r.retransmits[cur.row] = (t.snd.stats.retransmits - cur.retx0) as i64;
        r.timeouts[cur.row] = (t.snd.stats.timeouts - cur.rto0) as i64;
        d.completed += 1;
        let think = match &self.scenario.flows[g].traffic {
            TrafficSpec::Files(s) | TrafficSpec::Web(s) => Some(&s.think),
            _ => None,
        };
        if let Some(at) = d.next_request(now, think) {
            if at < self.end {
                self.events.push(at, Ev::Request(fi as u32));
            }
        }
    }

    fn on_app_stop(&mut self, fi: usize) {
        let now = self.now;
        if let FlowKind::Tcp(t) = &mut self.flows[fi].kind {
            t.snd.close(now);
        }
        self.sync_flow_timer(fi);
    }

    fn on_flow_timer(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].timer_at != Some(now) {
            return; // superseded by an earlier deadline
        }
        self.flows[fi].timer_at = None;
        let mut out = std::mem::take(&mut self.out);
        if let FlowKind::Tcp(t) = &mut self.flows[fi].kind {
            t.snd.on_timer(now, &mut out);
            t.rcv.on_timer(now, &mut out);
        }
        self.send_all(fi, &mut out);
        self.out = out;
        self.sync_flow_timer(fi);
    }

    /// Keep one pending timer event per flow at its earliest deadline. Later
    /// deadlines are found when the earlier event fires (lazy timers: a moving RTO
    /// deadline costs no heap operations).
    fn sync_flow_timer(&mut self, fi: usize) {
        let f = &mut self.flows[fi];
        let want = match &f.kind {
            FlowKind::Tcp(t) => min_opt(t.snd.poll_at(), t.rcv.poll_at()),
            FlowKind::Cbr(_) => None,
        };
        if let Some(w) = want {
            let w = w.max(self.now);
            if f.timer_at.is_none_or(|s| w < s) {
                f.timer_at = Some(w);
                self.events.push(w, Ev::FlowTimer(fi as u32));
            }
            // else: the pending event is early; it will find nothing due and re-arm.
        }
    }

    // ---- sampling -----------------------------------------------------------

    fn on_sample(&mut self) {
        let now = self.now;
        for (li, l) in self.links.iter_mut().enumerate() {
            if !l.sampled {
                continue;
            }
            // a sample precedes what happens at its own time (link.rs)
            l.settle(Time::from_nanos(now.as_nanos() - 1));
            let m = &mut self.marks[li];
            let (busy, tx_bytes, tx_packets) = l.sent_until(now);
            let st = &l.qdisc.stats;
            let r = &mut self.rec_links;
            let cap_bits = l.capacity_bits(now);
            let (opp, opp_used) = l.opportunities(now);
            r.time_ns.push(now.as_nanos());
            r.link.push(li as u8);
            r.capacity_bps.push(((cap_bits - m.cap_bits) * 1_000_000_000 / self.interval.as_nanos() as u128) as u64);
            r.busy_ns.push(busy - m.busy);
            r.opportunities.push(opp - m.opp);
            r.opportunities_used.push(opp_used - m.opp_used);
            r.tx_bytes.push(tx_bytes - m.tx_bytes);
            r.tx_packets.push(tx_packets - m.tx_packets);
            r.arrivals.push(st.arrivals - m.arrivals);
            r.drops_overflow.push(st.drops[0] - m.drops[0]);
            r.drops_random.push(st.drops[1] - m.drops[1]);
            r.drops_deterministic.push(st.drops[2] - m.drops[2]);
            r.marks.push(st.marked() - m.marks);
            let bl = l.backlog();
            r.backlog_bytes.push(bl.bytes);
            r.backlog_packets.push(bl.packets);
            let probe = l.qdisc.probe();
            r.drop_prob.push(probe.drop_prob.unwrap_or(f64::NAN));
            r.aqm_delay_ns.push(probe.delay_estimate.map_or(-1, |d| d.as_nanos() as i64));
            *m = LinkMark {
                busy,
                tx_bytes,
                tx_packets,
                arrivals: st.arrivals,
                drops: st.drops,
                marks: st.marked(),
                cap_bits,
                opp,
                opp_used,
            };
        }
        if self.flow_series_on {
            for (fi, f) in self.flows.iter().enumerate() {
                if f.start > now {
                    continue;
                }
                let r = &mut self.rec_flows;
                r.time_ns.push(now.as_nanos());
                r.flow.push(fi as u32);
                let t = match &f.kind {
                    FlowKind::Tcp(t) => t,
                    FlowKind::Cbr(c) => {
                        r.cwnd.push(f64::NAN);
                        r.ssthresh.push(f64::NAN);
                        r.srtt_ns.push(-1);
                        r.rtt_ns.push(-1);
                        r.rto_ns.push(0);
                        r.in_flight.push(0);
                        r.delivered_bytes.push(c.rx_bytes);
                        r.snd_una.push(c.sent);
                        r.retransmits.push(0);
                        r.ca_state.push(0);
                        r.rwnd.push(-1);
                        r.receiver_mode.push(0);
                        continue;
                    }
                };
                let s = &t.snd;
                r.cwnd.push(s.w.cwnd);
                r.ssthresh.push(if s.w.ssthresh >= crate::tcp::cc::INFINITE_SSTHRESH { f64::NAN } else { s.w.ssthresh });
                r.srtt_ns.push(s.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
                r.rtt_ns.push(s.last_rtt().map_or(-1, |d| d.as_nanos() as i64));
                r.rto_ns.push(s.rtt.rto().as_nanos());
                r.in_flight.push(s.pipe());
                r.delivered_bytes.push(delivered_total(t));
                r.snd_una.push(s.snd_una);
                r.retransmits.push(t.stats().retransmits);
                r.ca_state.push(match s.ca_state {
                    CaState::Open => 0,
                    CaState::Recovery => 1,
                    CaState::Loss => 2,
                    CaState::Cwr => 3,
                });
                r.rwnd.push(window_col(t.rcv.last_rwnd));
                r.receiver_mode.push(t.rcv.palermo.as_deref().map_or(0, |p| match p.mode {
                    _ if p.probing() => 4,
                    Mode::Startup => 1,
                    Mode::Steady => 2,
                    Mode::Drs => 3,
                }));
            }
        }
        let next = now + self.interval;
        if next <= self.end {
            self.events.push(next, Ev::Sample);
        }
    }

    // ---- the end ------------------------------------------------------------

    fn in_flight(&self) -> u64 {
        self.links.iter().map(Link::in_flight).sum::<u64>() + self.flows.iter().map(|f| f.line.len() as u64).sum::<u64>()
    }

    /// Every packet created is delivered, dropped with a cause, or still in a queue,
    /// a transmitter or a pipe; and each queue accounts for what it accepted.
    pub fn check_conservation(&mut self) -> Result<(), SimError> {
        for l in &mut self.links {
            l.settle(self.now);
        }
        self.cons.in_flight = self.in_flight();
        if !self.cons.holds() {
            let c = self.cons;
            return Err(SimError::Conservation(format!(
                "created {} != delivered {} + dropped {} + in flight {}",
                c.created, c.delivered, c.dropped, c.in_flight
            )));
        }
        for l in &self.links {
            if !l.conserved() {
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
        while let Some((nt, ev)) = self.next_event(t) {
            self.now = nt;
            self.dispatch_packed(ev);
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
        let groups = group_infos(sc);
        let mut ft = FlowTable::default();
        for (fi, f) in self.flows.iter().enumerate() {
            let (fwd, rev) = sc.path_delays(f.group as usize);
            ft.flow.push(fi as u32);
            ft.group.push(f.group);
            ft.start_ns.push(f.start.as_nanos());
            ft.drops.push(f.drops);
            ft.ack_drops.push(f.ack_drops);
            ft.marks.push(f.marks);
            ft.base_rtt_ns.push((fwd + rev + f.extra + f.extra).as_nanos());
            let t = match &f.kind {
                FlowKind::Tcp(t) => t,
                FlowKind::Cbr(c) => {
                    ft.end_ns.push(-1);
                    ft.bytes_delivered.push(c.rx_bytes);
                    ft.segments_sent.push(c.sent);
                    for col in [&mut ft.retransmits, &mut ft.timeouts, &mut ft.recoveries, &mut ft.ecn_reductions] {
                        col.push(0);
                    }
                    ft.min_rtt_ns.push(-1);
                    ft.srtt_ns.push(-1);
                    ft.transfers.push(0);
                    ft.receiver_reverts.push(0);
                    ft.receiver_returns.push(0);
                    continue;
                }
            };
            let end = match &t.app {
                App::Bulk => t.snd.finished_at,
                App::Downloads(d) if d.single.is_some() => t.rcv.completed_at,
                App::Downloads(_) => None,
            };
            ft.end_ns.push(end.map_or(-1, |x| x.as_nanos() as i64));
            ft.bytes_delivered.push(delivered_total(t));
            let st = t.stats();
            ft.segments_sent.push(st.segments_sent);
            ft.retransmits.push(st.retransmits);
            ft.timeouts.push(st.timeouts);
            ft.recoveries.push(st.recoveries);
            ft.ecn_reductions.push(st.ecn_reductions);
            ft.min_rtt_ns.push(t.min_rtt().map_or(-1, |d| d.as_nanos() as i64));
            ft.srtt_ns.push(t.snd.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
            ft.transfers.push(match &t.app {
                App::Downloads(d) => d.completed,
                App::Bulk => 0,
            });
            let pal = t.rcv.palermo.as_deref();
            ft.receiver_reverts.push(pal.map_or(0, |p| p.reverts));
            ft.receiver_returns.push(pal.map_or(0, |p| p.returns));
        }
        self.cons.in_flight = self.in_flight();
        let group_names: Vec<String> = sc.flows.iter().map(|g| g.common.name.clone()).collect();
        if let [only] = self.hists.bottleneck_sojourn_by_group.as_mut_slice() {
            *only = self.hists.bottleneck_sojourn.clone();
        }
        let (histograms, histogram_buckets) = self.hists.table(&group_names);
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
            flow_trace: std::mem::take(&mut self.rec_trace),
            transfers: std::mem::take(&mut self.rec_transfers),
            datagrams: std::mem::take(&mut self.rec_datagrams),
            histograms,
            histogram_buckets,
        }
    }
}

/// An advertised window for the records: -1 when it does not limit.
fn window_col(w: u64) -> i64 {
    if w >= crate::tcp::receiver::UNLIMITED_WINDOW { -1 } else { w as i64 }
}

/// A departure's time in a bottleneck queue, into the sojourn histograms. With one
/// flow group the group's histogram is the whole one: it is copied at the end
/// (`Sim::finish`) instead of kept twice.
#[inline]
fn record_sojourn(h: &mut Histograms, flows: &[Flow], li: usize, flow: u32, soj: u64) {
    if li == BOTTLENECK {
        h.bottleneck_sojourn.record(soj);
        if h.bottleneck_sojourn_by_group.len() > 1 {
            h.bottleneck_sojourn_by_group[flows[flow as usize].group as usize].record(soj);
        }
    } else {
        h.bottleneck_rev_sojourn.record(soj);
    }
}

fn probe_delay(q: &Qdisc<Packet>) -> i64 {
    q.probe().delay_estimate.map_or(-1, |d| d.as_nanos() as i64)
}

/// Each flow of group `gi`: its start time and its extra one-way path delay
/// (`path.flow_delay`), drawn from the group's own streams. The emulator draws them
/// here too, so that an emulated run starts its flows at the simulator's instants.
pub fn flow_draws(sc: &Scenario, gi: usize) -> Vec<(Time, Duration)> {
    let g = &sc.flows[gi];
    let name = &g.common.name;
    let mut start_rng: SimRng = rng::stream(sc.seed, &format!("group.{name}.start"));
    let mut delay_rng: SimRng = rng::stream(sc.seed, &format!("group.{name}.flow_delay"));
    (0..g.common.count)
        .map(|_| {
            let start = match g.common.start {
                StartSpec::At(t) => Time::ZERO + t,
                StartSpec::Uniform(lo, hi) => {
                    let span = (hi - lo).as_nanos();
                    let off = if span == 0 { 0 } else { rng::below(&mut start_rng, span + 1) };
                    Time::ZERO + lo + Duration::from_nanos(off)
                }
            };
            let extra = g.common.path.flow_delay.as_ref().map_or(Duration::ZERO, |d| d.sample(&mut delay_rng));
            (start, extra)
        })
        .collect()
}

/// The flow groups as every run's metadata describes them.
pub fn group_infos(sc: &Scenario) -> Vec<GroupInfo> {
    sc
        .flows
        .iter()
        .enumerate()
        .map(|(gi, g)| GroupInfo {
            name: g.common.name.clone(),
            kind: g.traffic.kind().to_string(),
            count: g.common.count,
            cc: g.traffic.tcp().map(|t| t.cc.kind().to_string()),
            receiver: g.traffic.tcp().map(|t| t.receiver.name().to_string()),
            base_rtt_ns: sc.base_rtt(gi).as_nanos(),
            first_flow: sc.flow_ids(gi).start,
            sizes: match &g.traffic {
                TrafficSpec::Files(d) | TrafficSpec::Web(d) => d.sizes.support(),
                TrafficSpec::Transfer(t) => Some(vec![t.size.0]),
                _ => None,
            },
            rate_bps: match &g.traffic {
                TrafficSpec::Cbr(c) => Some(c.rate.bps()),
                _ => None,
            },
            packet_size: match &g.traffic {
                TrafficSpec::Cbr(c) => Some(c.packet_size.0 as u32),
                _ => None,
            },
        })
        .collect()
}

/// Parse, build and run a scenario.
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
    Sim::new(sc)?.run(progress)
}
