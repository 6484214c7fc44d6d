//! The network: links, the pipes that carry packets between them, and the routes
//! that say where each packet goes next. It moves packets; what they mean is the
//! endpoints' business.
//!
//! A packet enters its route's first link when its host sends it (after the flow's
//! own delay line, if it has one) and leaves at the route's end through a delivery
//! pipe, whose head is an engine slot: the simulator delivers the packet to its
//! endpoint at that time. In between, links are of two kinds:
//!
//! - An *eager* link (a DropTail rate link without a schedule or packet log,
//!   [`link`]'s `eager`) decides a packet's whole passage at its arrival (a
//!   booking) and hands it on at once. Fed by one host side or one link, it books
//!   a packet as soon as the packet leaves that input: no event at all. Fed by
//!   several, it takes arrivals from its input pipes in key order, as a lazy link
//!   does, and books each.
//! - Any other link is *lazy*: its input pipes hold the packets on their way to it,
//!   and it runs its own timeline (arrivals, transmissions, AQM timers, rate
//!   changes, trace opportunities) in key order when something needs it: a host
//!   sending into it, a sample reading it, or its *wake*, an engine slot at the
//!   latest time by which it must have produced its next departure (the earliest
//!   arrival or transmission start it has not run, plus its propagation delay: a
//!   departure is due downstream no earlier). Every departure with a due time up to
//!   the engine's time has therefore been produced, whatever the link's lag; a link
//!   behind a long propagation delay runs hundreds of packets per wake.
//!
//! Order. A link's operations and arrivals run in the order of their keys (the
//! engine's): time, then its AQM timer, rate change, transmission start and trace
//! opportunity, then arrivals by the index of the link they come from. A host's
//! packet enters at the key of the event that sent it. This is the order of a
//! simulation that runs every arrival and transmission as an event of its own
//! (`Sim::event_driven` runs the same scenarios with no eager links and with every
//! slot in the heap, and a test checks that it gives the same run bit for bit).

pub mod link;
pub mod topology;
pub mod trace;

use std::collections::VecDeque;

use aqm::{Cause, Duration, Time};

use crate::engine::{key_time, Engine, Key};
use crate::event::Packed;
use crate::packet::Packet;
use crate::record::Recorder;
use link::{Link, Observe, Sent};

/// The engine's events that belong to the network.
pub trait NetEvents: Packed {
    /// Link `l`'s delivery pipe head is due (its key orders deliveries by link).
    fn deliver(l: u16) -> Self;
    /// Link `l` must run up to now.
    fn wake(l: u16) -> Self;
    /// The head of flow `f`'s delay line is due.
    fn line(f: u32) -> Self;
}

/// The packed event tag of arrivals from link `from`'s pipe, for keys.
pub const TAG_ARRIVE: u32 = 5;

#[inline]
fn arrive_key(t: Time, from: u16) -> Key {
    ((t.as_nanos() as u128) << 64) | (((TAG_ARRIVE << link::OP_TAG_SHIFT | from as u32) as u128) << 32)
}

/// Where a packet goes after a hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Booked through this eager link at once.
    Book(u16),
    /// Into this pipe, towards this lazy link.
    Pipe(u32, u16),
    /// Into this pipe, to be delivered to the endpoint.
    Deliver(u32),
}

/// A route: the links a packet crosses, and what follows each.
#[derive(Clone, Debug, Default)]
pub struct Route {
    pub links: Vec<u16>,
    pub next: Vec<Next>,
}

/// Packets propagating from one link towards one next hop, in order of arrival
/// there (the link's delay is the same for all).
#[derive(Debug, Default)]
pub struct Pipe {
    q: VecDeque<(Time, Packet)>,
    /// The link the packets come from.
    from: u16,
}

/// A link's delivery pipe (its index) and the engine slot of its head.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryPipe {
    pipe: usize,
    slot: usize,
}

/// A flow's own extra delay before its first link (`path.flow_delay`): the same for
/// all its packets, so the line stays in time order.
#[derive(Debug, Default)]
struct Line {
    extra: Duration,
    q: VecDeque<(Time, Packet)>,
}

pub struct Network {
    links: Vec<Link<Packet>>,
    /// Eager links booked straight from their single input (no input pipes, no wake).
    direct: Vec<bool>,
    /// Each lazy link's input pipes, by the index of the link they come from.
    inputs: Vec<Vec<u32>>,
    pipes: Vec<Pipe>,
    /// Each link's delivery pipe, if packets leave it for endpoints.
    deliver: Vec<Option<u32>>,
    /// Every route's hops, one after the other: each hop's link and what follows it.
    hops: Vec<(u16, Next)>,
    /// Per flow: where its data route and its return route start in `hops`.
    flow_route: Vec<[u32; 2]>,
    flow_group: Vec<u16>,
    lines: Vec<Line>,
    /// Each lazy link's wake time (`Time::MAX`: none), as set in the engine.
    wake: Vec<Time>,
    /// Each link's engine slots: its delivery pipe's head, its wake.
    deliver_slot: Vec<usize>,
    wake_slot: Vec<usize>,
    end: Time,
    /// Packets that stopped before an eager link they would reach after the end.
    beyond_end: u64,
    /// Links' departures, on their way to the next hop.
    out: Vec<Sent<Packet>>,
}

/// The recording side of a link's events.
struct Obs<'a> {
    rec: &'a mut Recorder,
    link: u16,
    rate_bps: u64,
}

impl Observe<Packet> for Obs<'_> {
    /// (flow, uid, kind, size)
    type Info = (u32, u64, u8, u32);
    #[inline]
    fn info(&self, p: &Packet) -> Self::Info {
        (p.flow, p.uid, p.kind.code(), p.size)
    }
    #[inline]
    fn enqueued(&mut self, t: Time, p: Self::Info, q: &aqm::Qdisc<Packet>, marked: Option<Cause>) {
        self.rec.enqueued(self.link, t, p, q, marked);
    }
    #[inline]
    fn dequeued(&mut self, t: Time, p: &Packet, sojourn: Duration, q: &aqm::Qdisc<Packet>, marked: Option<Cause>) {
        self.rec.dequeued(self.link, t, p, sojourn, q, marked);
        self.rec.sink_departure(self.link, t, p);
    }
    fn dropped(&mut self, t: Time, d: &aqm::Dropped<Packet>, q: &aqm::Qdisc<Packet>) {
        self.rec.dropped(self.link, t, &d.pkt, d.cause, d.sojourn, q.backlog().bytes, self.rate_bps, Some(q));
    }
}

impl Network {
    /// A network of `links` with each group's two routes (link indices); each flow's
    /// group and extra delay. Lazy links get input pipes, links at a route's end get
    /// a delivery pipe. Eager links are those that can be (DropTail, no schedule,
    /// not logged) with one input, unless `eager` is false.
    pub fn new(mut links: Vec<Link<Packet>>, routes: Vec<[Vec<u16>; 2]>, flows: Vec<(u16, Duration)>, logged: &[bool], end: Time, eager: bool) -> Network {
        const HOST: u16 = u16::MAX;
        let n = links.len();
        // what feeds each link: hosts or other links
        let mut feeds: Vec<Vec<u16>> = vec![Vec::new(); n];
        for r in routes.iter().flatten() {
            for (h, &l) in r.iter().enumerate() {
                let from = if h == 0 { HOST } else { r[h - 1] };
                if !feeds[l as usize].contains(&from) {
                    feeds[l as usize].push(from);
                }
            }
        }
        // An eager link fed by one host side or one link is booked straight through
        // from there (`direct`); fed by several, it takes its arrivals from its input
        // pipes in their order, as a lazy link does, and books each.
        let mut direct = vec![false; n];
        for (l, link) in links.iter_mut().enumerate() {
            if eager && link.can_be_eager() && !logged[l] {
                link.make_eager(end);
                direct[l] = feeds[l].len() == 1;
            }
        }
        let mut pipes: Vec<Pipe> = Vec::new();
        let mut pipe_to: std::collections::BTreeMap<(u16, Option<u16>), u32> = Default::default();
        let mut inputs: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut deliver: Vec<Option<u32>> = vec![None; n];
        let mut pipe = |from: u16, to: Option<u16>| -> u32 {
            *pipe_to.entry((from, to)).or_insert_with(|| {
                pipes.push(Pipe { q: VecDeque::new(), from });
                pipes.len() as u32 - 1
            })
        };
        let routes: Vec<[Route; 2]> = routes
            .into_iter()
            .map(|dirs| {
                dirs.map(|r| {
                    let next = (0..r.len())
                        .map(|h| match r.get(h + 1) {
                            None => {
                                let p = pipe(r[h], None);
                                deliver[r[h] as usize] = Some(p);
                                Next::Deliver(p)
                            }
                            Some(&m) if direct[m as usize] => Next::Book(m),
                            Some(&m) => Next::Pipe(pipe(r[h], Some(m)), m),
                        })
                        .collect();
                    Route { links: r, next }
                })
            })
            .collect();
        for ((from, to), p) in &pipe_to {
            if let Some(to) = to {
                inputs[*to as usize].push(*p);
            }
            debug_assert!(pipes[*p as usize].from == *from);
        }
        // arrivals at equal times come in the order of the link they come from
        for inp in &mut inputs {
            inp.sort_by_key(|&p| pipes[p as usize].from);
        }
        let mut hops = Vec::new();
        let starts: Vec<[u32; 2]> = routes
            .iter()
            .map(|dirs| {
                dirs.clone().map(|r| {
                    let at = hops.len() as u32;
                    hops.extend(r.links.iter().copied().zip(r.next.iter().copied()));
                    at
                })
            })
            .collect();
        let (flow_group, lines): (Vec<u16>, Vec<Line>) = flows.into_iter().map(|(g, extra)| (g, Line { extra, q: VecDeque::new() })).unzip();
        let flow_route = flow_group.iter().map(|&g| starts[g as usize]).collect();
        Network { links, direct, inputs, pipes, deliver, hops, flow_route, flow_group, lines, wake: vec![Time::MAX; n], deliver_slot: vec![usize::MAX; n], wake_slot: vec![usize::MAX; n], end, beyond_end: 0, out: Vec::with_capacity(16) }
    }

    pub fn links(&self) -> &[Link<Packet>] {
        &self.links
    }

    /// Add the network's slots to the engine: the head of each delivery pipe, the
    /// wake of each lazy link.
    pub fn add_slots<E: NetEvents>(&mut self, eng: &mut Engine<E>) {
        for l in 0..self.links.len() {
            if self.deliver[l].is_some() {
                self.deliver_slot[l] = eng.add_slot(E::deliver(l as u16));
            }
            if !self.direct[l] {
                self.wake_slot[l] = eng.add_slot(E::wake(l as u16));
            }
        }
    }

    /// A flow's group.
    pub fn group_of(&self, flow: u32) -> u16 {
        self.flow_group[flow as usize]
    }

    /// The hop `p` is at on its route: the link, and what follows it.
    #[inline]
    fn hop(&self, p: &Packet) -> (u16, Next) {
        self.hops[p.hop as usize]
    }

    /// A host sends `p` during the event of key `k`: it enters its first link, after
    /// the flow's own delay line if it has one.
    #[inline(always)]
    pub fn send<E: NetEvents>(&mut self, p: &mut Packet, k: Key, eng: &mut Engine<E>, rec: &mut Recorder) {
        p.hop = self.flow_route[p.flow as usize][!p.kind.is_forward() as usize];
        let now = key_time(k);
        let line = &mut self.lines[p.flow as usize];
        if !line.extra.is_zero() {
            let at = now + line.extra;
            line.q.push_back((at, *p));
            if line.q.len() == 1 {
                eng.schedule(at, E::line(p.flow));
            }
            return;
        }
        self.enter(p, now, k, eng, rec);
    }

    /// Flow `f`'s delay line is due at `k`: its packets enter their first link.
    pub fn on_line<E: NetEvents>(&mut self, f: u32, k: Key, eng: &mut Engine<E>, rec: &mut Recorder) {
        let now = key_time(k);
        while let Some(&(t, _)) = self.lines[f as usize].q.front() {
            if t > now {
                eng.schedule(t, E::line(f));
                break;
            }
            let (_, mut p) = self.lines[f as usize].q.pop_front().expect("a head");
            self.enter(&mut p, now, k, eng, rec);
        }
    }

    /// `p` reaches the link of its hop `p.hop` at `at` (a host's packet: in the event
    /// of key `k`).
    fn enter<E: NetEvents>(&mut self, p: &mut Packet, at: Time, k: Key, eng: &mut Engine<E>, rec: &mut Recorder) {
        let l = self.hop(p).0;
        if self.direct[l as usize] {
            self.book(l, p, at, eng, rec);
            return;
        }
        self.advance(l, k, eng, rec);
        if self.links[l as usize].is_eager() {
            self.book(l, p, at, eng, rec);
            self.refresh_wake(l, eng);
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        let link = &mut self.links[l as usize];
        let mut obs = Obs { rec, link: l, rate_bps: link.rate().bps() };
        link.enqueue(*p, at, &mut obs, &mut out);
        self.route_out(l, &mut out, eng, rec);
        self.out = out;
        self.refresh_wake(l, eng);
    }

    /// Book `p` through eager link `l`, where it arrives at `at`, and on.
    #[inline]
    fn book<E: NetEvents>(&mut self, l: u16, p: &mut Packet, at: Time, eng: &mut Engine<E>, rec: &mut Recorder) {
        if let Some(due) = self.book_one(l, p, at, eng.now(), rec) {
            self.emit(l, p, due, eng, rec);
        }
    }

    /// Book `p` through eager link `l` where it arrives at `at`: when it reaches the
    /// next hop, or None if refused.
    #[inline]
    fn book_one(&mut self, l: u16, p: &Packet, at: Time, now: Time, rec: &mut Recorder) -> Option<Time> {
        let link = &mut self.links[l as usize];
        if link.booked() >= 256 {
            // keeps the book short; an arrival from an input pipe may lie before now
            link.settle(Time::from_nanos(now.min(at).as_nanos().saturating_sub(1)));
        }
        match link.book(at, p.size, p.ecn()) {
            Ok((start, end)) => {
                rec.booked(l, p.flow, start, start.saturating_since(at));
                Some(end + link.delay())
            }
            Err(backlog) => {
                // refused on overflow (in the link's own stats when it counts or settles)
                rec.dropped(l, at, p, Cause::Overflow, None, backlog, link.rate().bps(), None::<&aqm::Qdisc<Packet>>);
                None
            }
        }
    }

    /// `p` left link `l` (its hop `p.hop`) and reaches the next hop at `due`: booked
    /// through the eager links that follow, then into a pipe. The packet is copied
    /// once, into the pipe it ends in.
    #[inline]
    fn emit<E: NetEvents>(&mut self, mut l: u16, p: &mut Packet, mut due: Time, eng: &mut Engine<E>, rec: &mut Recorder) {
        loop {
            let next = self.hop(p).1;
            match next {
                Next::Book(m) => {
                    if due > self.end {
                        // it would reach the eager link after the end: it stays in flight here
                        self.beyond_end += 1;
                        return;
                    }
                    p.hop += 1;
                    match self.book_one(m, p, due, eng.now(), rec) {
                        Some(d) => (l, due) = (m, d),
                        None => return,
                    }
                }
                Next::Pipe(pp, m) => {
                    p.hop += 1;
                    self.pipes[pp as usize].q.push_back((due, *p));
                    let w = due + self.links[m as usize].delay();
                    if w < self.wake[m as usize] {
                        self.wake[m as usize] = w;
                        eng.set_slot(self.wake_slot[m as usize], Some(w));
                    }
                    return;
                }
                Next::Deliver(pp) => {
                    let q = &mut self.pipes[pp as usize].q;
                    debug_assert!(q.back().is_none_or(|b| b.0 <= due), "a pipe stays in time order");
                    q.push_back((due, *p));
                    if q.len() == 1 {
                        eng.set_slot(self.deliver_slot[l as usize], Some(due));
                    }
                    return;
                }
            }
        }
    }

    /// Route the departures of link `l`.
    #[inline]
    fn route_out<E: NetEvents>(&mut self, l: u16, out: &mut Vec<Sent<Packet>>, eng: &mut Engine<E>, rec: &mut Recorder) {
        if out.is_empty() {
            return;
        }
        let delay = self.links[l as usize].delay();
        for s in out.iter_mut() {
            self.emit(l, &mut s.pkt, s.end + delay, eng, rec);
        }
        out.clear();
    }

    /// Run lazy link `l`'s operations and arrivals of keys below `bound`.
    fn advance<E: NetEvents>(&mut self, l: u16, bound: Key, eng: &mut Engine<E>, rec: &mut Recorder) {
        let mut out = std::mem::take(&mut self.out);
        // The earliest input arrival: only this link's pops change its inputs (a
        // route crosses a link once, so what leaves it never comes back to it here).
        let mut head = self.input_head(l);
        loop {
            let op = self.links[l as usize].next_op(l);
            let (ik, ip) = head;
            if op.min(ik) >= bound {
                break;
            }
            if op == u128::MAX && self.links[l as usize].is_eager() {
                let (t, mut p) = self.pipes[ip as usize].q.pop_front().expect("an input");
                head = self.input_head(l);
                self.book(l, &mut p, t, eng, rec);
                continue;
            }
            let link = &mut self.links[l as usize];
            let mut obs = Obs { rec, link: l, rate_bps: link.rate().bps() };
            if op < ik {
                link.do_op(op, &mut obs, &mut out);
            } else {
                let (t, p) = self.pipes[ip as usize].q.pop_front().expect("an input");
                link.enqueue(p, t, &mut obs, &mut out);
                head = self.input_head(l);
            }
            self.route_out(l, &mut out, eng, rec);
        }
        self.out = out;
    }

    /// The key and pipe of link `l`'s earliest input arrival (`u128::MAX`: none).
    #[inline]
    fn input_head(&self, l: u16) -> (Key, u32) {
        let mut head = (u128::MAX, u32::MAX);
        for &p in &self.inputs[l as usize] {
            let pipe = &self.pipes[p as usize];
            if let Some(&(t, _)) = pipe.q.front() {
                let k = arrive_key(t, pipe.from);
                if k < head.0 {
                    head = (k, p);
                }
            }
        }
        head
    }

    /// Set lazy link `l`'s wake: the earliest arrival or transmission it has not
    /// run, plus its delay (no departure of it is due downstream before).
    fn refresh_wake<E: NetEvents>(&mut self, l: u16, eng: &mut Engine<E>) {
        let link = &self.links[l as usize];
        let mut t = link.next_start();
        for &p in &self.inputs[l as usize] {
            if let Some(&(a, _)) = self.pipes[p as usize].q.front() {
                t = t.min(a);
            }
        }
        let w = if t == Time::MAX { Time::MAX } else { t + link.delay() };
        if w != self.wake[l as usize] {
            self.wake[l as usize] = w;
            eng.set_slot(self.wake_slot[l as usize], (w != Time::MAX).then_some(w));
        }
    }

    /// Link `l`'s wake is due (event `ev`): run it up to now.
    pub fn on_wake<E: NetEvents>(&mut self, l: u16, ev: u32, eng: &mut Engine<E>, rec: &mut Recorder) {
        self.wake[l as usize] = Time::MAX;
        let k = eng.key_of(ev);
        self.advance(l, k, eng, rec);
        self.refresh_wake(l, eng);
    }

    /// Link `l`'s delivery pipe and that pipe's engine slot.
    #[inline]
    pub fn delivery_pipe(&self, l: u16) -> DeliveryPipe {
        DeliveryPipe { pipe: self.deliver[l as usize].expect("a delivery pipe") as usize, slot: self.deliver_slot[l as usize] }
    }

    /// The head of delivery pipe `d` if it is due by now, in place (the caller
    /// hands it to its endpoint, then drops it with [`Network::pop_delivery`]);
    /// when none is due, the pipe's slot is set to its next head.
    #[inline]
    pub fn delivery_head<E: NetEvents>(&self, d: DeliveryPipe, eng: &mut Engine<E>) -> Option<&Packet> {
        match self.pipes[d.pipe].q.front() {
            Some((t, p)) if *t <= eng.now() => Some(p),
            head => {
                eng.set_slot(d.slot, head.map(|h| h.0));
                None
            }
        }
    }

    /// Drop the head of delivery pipe `d`: delivered.
    #[inline]
    pub fn pop_delivery(&mut self, d: DeliveryPipe) {
        self.pipes[d.pipe].q.pop_front();
    }

    /// Bring every sampled link to just before `now` (a sample sees the state before
    /// anything at its own time) and write their rows.
    pub fn sample<E: NetEvents>(&mut self, now: Time, interval: Duration, eng: &mut Engine<E>, rec: &mut Recorder) {
        let bound = (now.as_nanos() as u128) << 64;
        for l in 0..self.links.len() {
            if !self.links[l].sampled() {
                continue;
            }
            if !self.direct[l] {
                self.advance(l as u16, bound, eng, rec);
                self.refresh_wake(l as u16, eng);
            }
            self.links[l].sample(now, interval, l as u16, &mut rec.link_series);
        }
    }

    /// The end of the run at `end`: every link runs up to it (inclusive).
    pub fn finish<E: NetEvents>(&mut self, end: Time, eng: &mut Engine<E>, rec: &mut Recorder) {
        let bound = ((end.as_nanos() as u128) << 64) | ((u32::MAX as u128) << 32);
        for l in 0..self.links.len() {
            if !self.direct[l] {
                self.advance(l as u16, bound, eng, rec);
            }
        }
        for l in &mut self.links {
            l.settle(end);
        }
    }

    /// Packets held by the network: queued, carried, propagating, in delay lines.
    pub fn in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.held()).sum::<u64>()
            + self.pipes.iter().map(|p| p.q.len() as u64).sum::<u64>()
            + self.lines.iter().map(|l| l.q.len() as u64).sum::<u64>()
            + self.beyond_end
    }

    /// For tests only: lose a propagating packet without accounting for it.
    #[doc(hidden)]
    pub fn debug_lose_a_packet(&mut self) -> bool {
        self.pipes.iter_mut().any(|p| p.q.pop_front().is_some())
    }
}

