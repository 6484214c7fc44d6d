//! The simulation: a scenario's network and endpoints on the engine, and the
//! records they leave.
//!
//! [`Sim`] holds the [`Engine`] (time and events), the [`Network`] (links, pipes,
//! routes), one [`Endpoint`] per flow, and the [`Recorder`]. This file is the glue:
//! it turns engine events into calls on the network and the endpoints, stamps and
//! sends what endpoints emit, keeps one pending timer per flow, takes the
//! per-interval samples and checks packet conservation at the end.

use std::time::Instant;

use aqm::{Duration, Time};

use crate::endpoint::{AnyEndpoint, AppEvent, Cx, Endpoint, FlowSetup, SendStep};
use crate::engine::{Engine, Key, Model};
use crate::event::Packed;
use crate::net::topology;
use crate::net::{NetEvents, Network};
use crate::packet::Packet;
use crate::record::*;
use crate::rng::{self, SimRng};
use crate::scenario::{FlowSel, Scenario, ScenarioError, StartSpec};

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

/// The simulator's events. The packed form (`tag << 28 | index`) orders events at
/// equal times: a sample first (it sees the state before anything at its time),
/// then deliveries (by the link they leave), delay lines, CBR sends, flow starts,
/// requests, application stops, flow timers, and last the links' wakes (which
/// change nothing another event at their time could see); within a kind, by link
/// or flow index.
#[derive(Clone, Copy, Debug)]
enum Ev {
    Sample,
    /// The head of a link's delivery pipe is due.
    Deliver(u16),
    /// The head of a flow's own delay line is due.
    Line(u32),
    /// A CBR source's next datagram.
    CbrSend(u32),
    FlowStart(u32),
    /// A download client's next request.
    Request(u32),
    /// A bulk sender stops writing (the group's `stop`).
    AppStop(u32),
    FlowTimer(u32),
    /// A lazy link must run up to now.
    Wake(u16),
}

const TAG_DELIVER: u32 = 5;
const TAG_FLOW_TIMER: u32 = 11;
const TAG_WAKE: u32 = 15;
/// A packed event is `tag << TAG_SHIFT | index`.
const TAG_SHIFT: u32 = 28;
const INDEX_MASK: u32 = (1 << TAG_SHIFT) - 1;
const _: () = assert!(crate::scenario::MAX_FLOWS == INDEX_MASK as u64, "a flow index fits an event");
const _: () = assert!(crate::net::link::OP_TAG_SHIFT == TAG_SHIFT && crate::net::TAG_ARRIVE == TAG_DELIVER, "links' keys are events' keys");

impl Packed for Ev {
    #[inline]
    fn pack(self) -> u32 {
        let (tag, x) = match self {
            Ev::Sample => (0, 0),
            Ev::Deliver(l) => (TAG_DELIVER, l as u32),
            Ev::Line(f) => (6, f),
            Ev::CbrSend(f) => (7, f),
            Ev::FlowStart(f) => (8, f),
            Ev::Request(f) => (9, f),
            Ev::AppStop(f) => (10, f),
            Ev::FlowTimer(f) => (TAG_FLOW_TIMER, f),
            Ev::Wake(l) => (TAG_WAKE, l as u32),
        };
        debug_assert!(x <= INDEX_MASK);
        tag << TAG_SHIFT | x
    }
    #[inline]
    fn unpack(v: u32) -> Self {
        let x = v & INDEX_MASK;
        match v >> TAG_SHIFT {
            0 => Ev::Sample,
            TAG_DELIVER => Ev::Deliver(x as u16),
            6 => Ev::Line(x),
            7 => Ev::CbrSend(x),
            8 => Ev::FlowStart(x),
            9 => Ev::Request(x),
            10 => Ev::AppStop(x),
            TAG_FLOW_TIMER => Ev::FlowTimer(x),
            _ => Ev::Wake(x as u16),
        }
    }
    /// One pending per flow, most far ahead or superseded (lazy timers).
    #[inline]
    fn is_timer(self) -> bool {
        matches!(self, Ev::FlowTimer(_) | Ev::FlowStart(_) | Ev::AppStop(_) | Ev::Request(_))
    }
}

impl NetEvents for Ev {
    fn deliver(l: u16) -> Self {
        Ev::Deliver(l)
    }
    fn wake(l: u16) -> Self {
        Ev::Wake(l)
    }
    fn line(f: u32) -> Self {
        Ev::Line(f)
    }
}

/// A flow: its endpoint and what the glue keeps of it.
struct Flow {
    group: u16,
    /// Its group's sender and receiver hosts ([`Scenario::host_ids`]), stamped on
    /// every packet it sends.
    hosts: [u16; 2],
    start: Time,
    /// Time of the pending timer event, if one is scheduled.
    timer_at: Option<Time>,
    /// Record every ACK (`record.flow_trace`).
    traced: bool,
    /// Its endpoint takes its packets without a hook context ([`Endpoint::lean_receiver`]).
    lean_rx: bool,
    extra: Duration,
    ep: AnyEndpoint,
}

/// Everything but the engine: what the engine's events act on.
struct World {
    net: Network,
    rec: Recorder,
    flows: Vec<Flow>,
    next_uid: u64,
    /// Scratch: what an endpoint hook emitted.
    out: Vec<Packet>,
    at: Vec<(Time, AppEvent)>,
    end: Time,
    interval: Duration,
    flow_series_on: bool,
}

pub struct Sim {
    eng: Engine<Ev>,
    w: World,
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
        let end = Time::ZERO + sc.duration;
        let built = topology::build_topology(sc)?;
        let host_ids = sc.host_ids();
        let mut flows = Vec::new();
        let mut flow_specs = Vec::new();
        for (gi, g) in sc.flows.iter().enumerate() {
            let stop = g.common.stop.map_or(end, |s| (Time::ZERO + s).min(end));
            let (fwd, rev) = sc.path_delays(gi);
            for (k, (start, extra)) in (0..g.common.count).zip(flow_draws(sc, gi)) {
                let base_rtt = fwd + rev + extra + extra;
                let setup = FlowSetup { flow: flows.len() as u32, index: k, group: &g.common.name, group_index: gi as u16, seed: sc.seed, start, stop, base_rtt };
                let ep = g.traffic.build(&setup);
                flows.push(Flow { group: gi as u16, hosts: host_ids[gi], start, timer_at: None, traced: false, lean_rx: ep.lean_receiver(), extra, ep });
                flow_specs.push((gi as u16, extra));
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
        let nlinks = built.links.len();
        let mut logged = vec![false; nlinks];
        for &l in &built.logged {
            logged[l as usize] = true;
        }
        let group_names: Vec<String> = sc.flows.iter().map(|g| g.common.name.clone()).collect();
        let flow_group: Vec<u16> = flows.iter().map(|f| f.group).collect();
        let mut rec = Recorder::new(nlinks, flow_group, &group_names, &built.logged, &built.monitors, Time::ZERO + sc.metrics.warmup, end);
        rec.record_datagrams = sc.record.datagrams;
        let captured = sc.pcap_links();
        if !captured.is_empty() {
            use crate::record::pcap::{FlowTcp, PcapSink};
            let links: Vec<(u16, String)> = captured.into_iter().map(|n| (built.links.iter().position(|l| l.name() == n).expect("validated link name") as u16, n)).collect();
            for &(l, _) in &links {
                logged[l as usize] = true; // a captured link runs packet by packet, as a logged one
            }
            let tcp = flows.iter().map(|f| sc.flows[f.group as usize].traffic.tcp().map(|t| FlowTcp { mss: t.mss.0 as u32, ecn: t.ecn })).collect();
            rec.add_sink(Box::new(PcapSink::new(links, tcp)));
        }
        let mut net = Network::new(built.links, built.routes, flow_specs, &logged, end, true);
        let mut eng = Engine::default();
        net.add_slots(&mut eng);
        for (i, f) in flows.iter().enumerate() {
            eng.schedule(f.start, Ev::FlowStart(i as u32));
            if let (true, Some(stop)) = (sc.flows[f.group as usize].traffic.stop_event(), sc.flows[f.group as usize].common.stop) {
                if Time::ZERO + stop < end {
                    eng.schedule(Time::ZERO + stop, Ev::AppStop(i as u32));
                }
            }
        }
        eng.schedule(Time::ZERO + sc.record.interval, Ev::Sample);
        let w = World { net, rec, flows, next_uid: 0, out: Vec::with_capacity(64), at: Vec::new(), end, interval: sc.record.interval, flow_series_on: sc.record.flow_series };
        Ok(Sim { eng, w, scenario: sc.clone() })
    }

    /// Run every link event by event: no eager DropTail links and every slot in
    /// the heap. For tests that show the fast paths give the same run bit for bit;
    /// call before `run`.
    #[doc(hidden)]
    pub fn event_driven(mut self) -> Sim {
        let sc = self.scenario.clone();
        let built = topology::build_topology(&sc).expect("built before");
        let mut logged = vec![false; built.links.len()];
        for &l in &built.logged {
            logged[l as usize] = true;
        }
        let flows = self.w.flows.iter().map(|f| (f.group, f.extra)).collect();
        self.w.net = Network::new(built.links, built.routes, flows, &logged, self.w.end, false);
        self.eng = Engine::default();
        self.w.net.add_slots(&mut self.eng);
        self.eng.slots_in_heap();
        for (i, f) in self.w.flows.iter().enumerate() {
            self.eng.schedule(f.start, Ev::FlowStart(i as u32));
            if let (true, Some(stop)) = (self.scenario.flows[f.group as usize].traffic.stop_event(), self.scenario.flows[f.group as usize].common.stop) {
                if Time::ZERO + stop < self.w.end {
                    self.eng.schedule(Time::ZERO + stop, Ev::AppStop(i as u32));
                }
            }
        }
        self.eng.schedule(Time::ZERO + self.scenario.record.interval, Ev::Sample);
        self
    }

    /// Run to the end. `progress` gets the fraction done about every 1 % of simulated
    /// time and returns `false` to stop.
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
        let wall = Instant::now();
        let end = self.w.end;
        if !self.eng.run(&mut self.w, end, progress) {
            return Err(SimError::Interrupted);
        }
        progress(1.0);
        self.check_conservation()?;
        let wall_seconds = wall.elapsed().as_secs_f64();
        Ok(self.finish(wall_seconds))
    }

    /// Run until simulated time `t` (for tests that inspect the state mid-run).
    #[doc(hidden)]
    pub fn run_until(&mut self, t: Time) {
        self.eng.run(&mut self.w, t, &mut |_| true);
    }

    /// Every packet created is delivered, dropped with a cause, or still in a queue,
    /// a pipe or a delay line; and each queue accounts for what it accepted. The
    /// links first run up to now.
    pub fn check_conservation(&mut self) -> Result<(), SimError> {
        let now = self.eng.now();
        let w = &mut self.w;
        w.net.finish(now, &mut self.eng, &mut w.rec);
        w.rec.cons.in_flight = w.net.in_flight();
        let c = w.rec.cons;
        if !c.holds() {
            return Err(SimError::Conservation(format!("created {} != delivered {} + dropped {} + in flight {}", c.created, c.delivered, c.dropped, c.in_flight)));
        }
        for l in w.net.links() {
            if !l.conserved() {
                return Err(SimError::Conservation(format!("queue of link {} does not account for its packets: {:?}", l.name(), l.stats())));
            }
        }
        Ok(())
    }

    /// For tests only: lose a propagating packet without accounting for it, to show
    /// that the conservation check fires.
    #[doc(hidden)]
    pub fn debug_lose_a_packet(&mut self) -> bool {
        self.w.net.debug_lose_a_packet()
    }

    fn finish(mut self, wall_seconds: f64) -> RunOutput {
        let sc = &self.scenario;
        let w = &mut self.w;
        let links = w
            .net
            .links()
            .iter()
            .map(|l| l.info(l.stats()))
            .collect();
        let logged_links = sc.record.links.iter().filter(|_| sc.record.packets).cloned().collect();
        let mut ft = FlowTable::default();
        for (fi, f) in w.flows.iter().enumerate() {
            let (fwd, rev) = sc.path_delays(f.group as usize);
            ft.flow.push(fi as u32);
            ft.group.push(f.group);
            ft.start_ns.push(f.start.as_nanos());
            ft.drops.push(w.rec.flow_drops[fi]);
            ft.ack_drops.push(w.rec.flow_ack_drops[fi]);
            ft.marks.push(w.rec.flow_marks[fi]);
            let (tx, rx) = (w.rec.flow_ecn_sent[fi], w.rec.flow_ecn_received[fi]);
            for (col, n) in [&mut ft.sent_not_ect, &mut ft.sent_ect0, &mut ft.sent_ect1, &mut ft.sent_ce].into_iter().zip(tx) {
                col.push(n);
            }
            for (col, n) in [&mut ft.received_not_ect, &mut ft.received_ect0, &mut ft.received_ect1, &mut ft.received_ce].into_iter().zip(rx) {
                col.push(n);
            }
            ft.base_rtt_ns.push((fwd + rev + f.extra + f.extra).as_nanos());
            f.ep.finish(&mut ft);
        }
        let (histograms, histogram_buckets) = w.rec.histograms();
        let r = &mut w.rec;
        let mut out = RunOutput {
            scenario_json: sc.to_json(),
            seed: sc.seed,
            sim_ns: w.end.as_nanos(),
            wall_seconds,
            events: self.eng.events(),
            links,
            logged_links,
            groups: group_infos(sc),
            conservation: r.cons,
            packets: std::mem::take(&mut r.packets),
            link_series: std::mem::take(&mut r.link_series),
            flow_series: std::mem::take(&mut r.flow_series),
            flows: ft,
            flow_trace: std::mem::take(&mut r.flow_trace),
            transfers: std::mem::take(&mut r.transfers),
            datagrams: std::mem::take(&mut r.datagrams),
            histograms,
            histogram_buckets,
            files: Vec::new(),
        };
        out.files = w.rec.finish_sinks(&out);
        out
    }
}

impl Model<Ev> for World {
    #[inline]
    fn handle(&mut self, eng: &mut Engine<Ev>, v: u32) {
        let x = v & INDEX_MASK;
        match v >> TAG_SHIFT {
            TAG_DELIVER => self.on_deliver(eng, x as u16, v),
            TAG_FLOW_TIMER => self.on_flow_timer(eng, x as usize, v),
            _ => match Ev::unpack(v) {
                Ev::Sample => self.on_sample(eng),
                Ev::Line(f) => {
                    let k = eng.key_of(v);
                    self.net.on_line(f, k, eng, &mut self.rec);
                }
                Ev::CbrSend(f) => self.on_send(eng, f as usize, v),
                Ev::Request(f) => self.app(eng, f as usize, AppEvent::Request, v),
                Ev::AppStop(f) => self.app(eng, f as usize, AppEvent::Stop, v),
                Ev::FlowStart(f) => self.on_flow_start(eng, f as usize, v),
                Ev::Wake(l) => self.net.on_wake(l, v, eng, &mut self.rec),
                Ev::Deliver(_) | Ev::FlowTimer(_) => unreachable!("matched above"),
            },
        }
    }
}

/// Send `p` of a flow with `hosts` (sender, receiver) and connection `conn` during
/// the event of key `k`, stamped with the next uid, its connection and hosts.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn send_one(net: &mut Network, rec: &mut Recorder, next_uid: &mut u64, hosts: [u16; 2], conn: u32, p: &mut Packet, k: Key, eng: &mut Engine<Ev>) {
    let [sender, receiver] = hosts;
    p.uid = *next_uid;
    *next_uid += 1;
    p.conn = conn;
    (p.src_host, p.dst_host) = if p.kind.is_forward() { (sender, receiver) } else { (receiver, sender) };
    rec.sent(p);
    net.send(p, k, eng, rec);
}

/// Run an endpoint hook with its context, then send what it emitted (stamped with
/// its connection, during the event `v`) and schedule what it asked for.
macro_rules! with_cx {
    ($w:ident, $eng:ident, $fi:expr, $v:expr, |$ep:ident, $cx:ident| $body:expr) => {{
        let fi = $fi;
        let now = $eng.now();
        let f = &mut $w.flows[fi];
        let mut $cx = Cx { now, flow: fi as u32, out: &mut $w.out, at: &mut $w.at, rec: &mut $w.rec, end: $w.end, traced: f.traced };
        let $ep = &mut f.ep;
        $body;
        $w.flush($eng, fi, $v);
    }};
}

impl World {
    /// Send the packets an endpoint emitted and schedule its application events.
    #[inline]
    fn flush(&mut self, eng: &mut Engine<Ev>, fi: usize, v: u32) {
        if !self.out.is_empty() {
            self.send_out(eng, fi, v);
        }
        if !self.at.is_empty() {
            self.schedule_app_events(eng, fi);
        }
        self.sync_flow_timer(eng, fi);
    }

    /// Send the packets an endpoint emitted, stamped with its connection and hosts.
    fn send_out(&mut self, eng: &mut Engine<Ev>, fi: usize, v: u32) {
        let conn = self.flows[fi].ep.connection();
        let hosts = self.flows[fi].hosts;
        let k = eng.key_of(v);
        // stamped in place and passed down by reference: the packet is copied once,
        // where the network keeps it
        for p in self.out.iter_mut() {
            send_one(&mut self.net, &mut self.rec, &mut self.next_uid, hosts, conn, p, k, eng);
        }
        self.out.clear();
    }

    /// A send event of flow `fi`: a lean datagram source ([`Endpoint::on_send`])
    /// sends its datagram and asks for its next send event without a hook context
    /// (it has no timers to poll); any other endpoint runs its `on_app` hook.
    #[inline(never)]
    fn on_send(&mut self, eng: &mut Engine<Ev>, fi: usize, v: u32) {
        match self.flows[fi].ep.on_send(fi as u32, eng.now()) {
            SendStep::Hook => self.app(eng, fi, AppEvent::Send, v),
            SendStep::Nothing => {}
            SendStep::Datagram(mut p, next) => {
                debug_assert!(self.flows[fi].ep.poll_at().is_none(), "a lean source has no timers");
                let (conn, hosts, k) = (self.flows[fi].ep.connection(), self.flows[fi].hosts, eng.key_of(v));
                send_one(&mut self.net, &mut self.rec, &mut self.next_uid, hosts, conn, &mut p, k, eng);
                if let Some(t) = next {
                    eng.schedule(t, Ev::CbrSend(fi as u32));
                }
            }
        }
    }

    /// Schedule the application events an endpoint hook asked for.
    fn schedule_app_events(&mut self, eng: &mut Engine<Ev>, fi: usize) {
        for (t, ev) in self.at.drain(..) {
            let f = fi as u32;
            eng.schedule(
                t,
                match ev {
                    AppEvent::Send => Ev::CbrSend(f),
                    AppEvent::Request => Ev::Request(f),
                    AppEvent::Stop => Ev::AppStop(f),
                },
            );
        }
    }

    /// Keep one pending timer event per flow at its earliest deadline. Later
    /// deadlines are found when the earlier event fires (lazy timers: a moving RTO
    /// deadline costs no heap operations).
    #[inline]
    fn sync_flow_timer(&mut self, eng: &mut Engine<Ev>, fi: usize) {
        let f = &mut self.flows[fi];
        if let Some(w) = f.ep.poll_at() {
            let w = w.max(eng.now());
            if f.timer_at.is_none_or(|s| w < s) {
                f.timer_at = Some(w);
                eng.schedule(w, Ev::FlowTimer(fi as u32));
            }
            // else: the pending event is early; it will find nothing due and re-arm.
        }
    }

    fn on_flow_start(&mut self, eng: &mut Engine<Ev>, fi: usize, v: u32) {
        with_cx!(self, eng, fi, v, |ep, cx| ep.start(&mut cx));
    }

    fn app(&mut self, eng: &mut Engine<Ev>, fi: usize, ev: AppEvent, v: u32) {
        with_cx!(self, eng, fi, v, |ep, cx| ep.on_app(ev, &mut cx));
    }

    fn on_flow_timer(&mut self, eng: &mut Engine<Ev>, fi: usize, v: u32) {
        let now = eng.now();
        if self.flows[fi].timer_at != Some(now) {
            return; // superseded by an earlier deadline
        }
        self.flows[fi].timer_at = None;
        with_cx!(self, eng, fi, v, |ep, cx| ep.on_timer(&mut cx));
    }

    /// Link `l`'s delivery pipe is due: hand each packet due to its endpoint (read
    /// in place in the pipe, then dropped from it).
    fn on_deliver(&mut self, eng: &mut Engine<Ev>, l: u16, v: u32) {
        let d = self.net.delivery_pipe(l);
        while let Some(p) = self.net.delivery_head(d, eng) {
            self.rec.received(p);
            let fi = p.flow as usize;
            let f = &mut self.flows[fi];
            if p.conn != f.ep.connection() {
                self.net.pop_delivery(d);
                continue; // for an earlier connection of this flow: discarded
            }
            if f.lean_rx {
                f.ep.receive(p, eng.now(), &mut self.rec);
                self.net.pop_delivery(d);
                continue;
            }
            with_cx!(self, eng, fi, v, |ep, cx| {
                ep.on_packet(p, &mut cx);
                self.net.pop_delivery(d)
            });
        }
    }

    fn on_sample(&mut self, eng: &mut Engine<Ev>) {
        let now = eng.now();
        self.net.sample(now, self.interval, eng, &mut self.rec);
        if self.flow_series_on {
            for (fi, f) in self.flows.iter().enumerate() {
                if f.start > now {
                    continue;
                }
                let r = &mut self.rec.flow_series;
                r.time_ns.push(now.as_nanos());
                r.flow.push(fi as u32);
                f.ep.sample(r);
            }
        }
        let next = now + self.interval;
        if next <= self.end {
            eng.schedule(next, Ev::Sample);
        }
    }
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
    sc.flows
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
            sizes: g.traffic.sizes(),
            rate_bps: g.traffic.datagrams().map(|c| c.0),
            packet_size: g.traffic.datagrams().map(|c| c.1),
        })
        .collect()
}

/// Parse, build and run a scenario.
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(f64) -> bool) -> Result<RunOutput, SimError> {
    Sim::new(sc)?.run(progress)
}
