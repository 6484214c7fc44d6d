//! CAKE: Common Applications Kept Enhanced.
//!
//! Sources: Høiland-Jørgensen, Täht & Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways" (IEEE LANMAN 2018), and Linux's `sch_cake`
//! with `tc-cake(8)` for every detail and default. No code is taken from Linux.
//!
//! What is modelled, as `sch_cake` does it:
//!
//! * **Flow isolation** (paper §III-B): packets are hashed to 1024 queues with an
//!   8-way set-associative hash (a flow keeps "its" queue while it is active and
//!   collisions are rare; `cake_hash`). `flow_mode` picks what is hashed: nothing
//!   (`flowblind`), the source, destination or both hosts, the flow (`flows`), or the
//!   flow with fairness between hosts too: `dual-srchost`, `dual-dsthost` and
//!   `triple-isolate` (the default), where each flow's DRR quantum is divided by the
//!   number of bulk flows of its source and/or destination host.
//! * **DRR++** (paper §III-B): a new flow goes on the "new" (sparse) list and is
//!   served first; a flow that uses up its quantum moves to the bulk rotation; an
//!   emptied flow whose COBALT state is not at rest waits on the "decaying" list.
//! * **COBALT** per flow queue ([`crate::cobalt`], paper §III-C), with CAKE's rate-
//!   dependent target and interval (`cake_set_rate`): at a shaped rate, target is at
//!   least 1.5 MTU serialization times and interval grows to match.
//! * **Overflow**: above the memory limit or the link's buffer, drop from the head of
//!   the queue with the most bytes (`cake_drop`), which counts as a BLUE overflow for it.
//! * **The shaper** (paper §III-A): with `bandwidth`, CAKE releases packets no faster
//!   than that rate in deficit mode (`cake_advance_shaper`), each packet counted with
//!   the overhead compensation of `tc-cake(8)`: `overhead` bytes added, at least `mpu`,
//!   then ATM cell framing (48 bytes of payload per 53-byte cell) or PTM 64/65 coding.
//!   Packet sizes in aqmlab are IP sizes: `overhead` is added to the IP length, as tc
//!   does once an overhead is given (it first strips the Ethernet header). `ingress`
//!   charges dropped packets to the shaper too and counts bulk flows in COBALT's
//!   over-target test, as tc-cake's `ingress` keyword. Unshaped (the default), CAKE
//!   sends as fast as the link takes packets.
//! * **The ACK filter** (paper §III-D, `cake_ack_filter`): an arriving TCP ACK may
//!   remove one older pure ACK of the same flow from its queue when the new one makes
//!   it redundant (a cumulative ACK at least as high, SACK information at least as
//!   complete, the same ECE/CWR flags); `aggressive` also removes a single such ACK
//!   right ahead of the new one. Removed ACKs count as `deterministic` drops.
//!
//! Not modelled: Diffserv tins (every packet is in one best-effort tin; Linux's default
//! `diffserv3` puts unmarked traffic in one tin at the full rate too, so for traffic
//! without DSCP marks the two agree), `autorate-ingress`, NAT lookups, `wash`, GSO
//! splitting, and per-packet memory overhead (memory counts packet bytes, Linux counts
//! buffer truesize).


use std::collections::VecDeque;

use crate::cobalt::{self, CobaltConsts, CobaltVars};
use crate::fq_codel::mix;
use crate::packet::seq_after;
use crate::queue::{Backlog, Limit};
use crate::time::{Duration, Time};
use crate::{Admit, Aqm, Cause, Counter, Ctx, Departure, Dropped, Ecn, Probe, QPacket, TcpAck};

mod ack_filter;
mod hashing;
mod params;

pub use ack_filter::sack_compare;
pub use params::*;
use params::{DST_IP, FLOWS, SRC_IP};

/// Number of flow queues (sch_cake `CAKE_QUEUES`).
pub const QUEUES: usize = 1024;
/// Ways of the set-associative hash (sch_cake `CAKE_SET_WAYS`).
pub const WAYS: usize = 8;

/// Which rotation a flow queue is in (sch_cake `CAKE_SET_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    None,
    Sparse,
    /// Counted as sparse, but in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Debug)]
struct Item<P> {
    pkt: P,
    at: Time,
    /// The size the shaper counts (sch_cake `adjusted_len`).
    adjusted: u32,
}

/// One flow queue.
#[derive(Debug)]
pub struct Flow<P> {
    items: VecDeque<Item<P>>,
    pub backlog: u64,
    pub deficit: i32,
    pub cvars: CobaltVars,
    pub srchost: u16,
    pub dsthost: u16,
    pub set: Set,
    pub dropped: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

const NEW: usize = 0;
const OLD: usize = 1;
const DECAYING: usize = 2;

/// Three intrusive doubly linked lists over the flow queues (Linux's `list_head`
/// flowchains): O(1) removal from anywhere.
#[derive(Debug)]
struct Lists {
    next: Vec<u16>,
    prev: Vec<u16>,
}

impl Lists {
    fn new() -> Lists {
        let n = QUEUES + 3;
        Lists { next: (0..n as u16).collect(), prev: (0..n as u16).collect() }
    }
    fn head(list: usize) -> usize {
        QUEUES + list
    }
    fn front(&self, list: usize) -> Option<usize> {
        let h = Self::head(list);
        let f = self.next[h] as usize;
        (f != h).then_some(f)
    }
    fn is_empty(&self, list: usize) -> bool {
        self.front(list).is_none()
    }
    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.prev[i] as usize, self.next[i] as usize);
        self.next[p] = n as u16;
        self.prev[n] = p as u16;
        self.next[i] = i as u16;
        self.prev[i] = i as u16;
    }
    fn move_tail(&mut self, i: usize, list: usize) {
        self.unlink(i);
        let h = Self::head(list);
        let last = self.prev[h] as usize;
        self.next[last] = i as u16;
        self.prev[i] = last as u16;
        self.next[i] = h as u16;
        self.prev[h] = i as u16;
    }
    fn len(&self, list: usize) -> u64 {
        let h = Self::head(list);
        let (mut n, mut i) = (0, self.next[h] as usize);
        while i != h {
            n += 1;
            i = self.next[i] as usize;
        }
        n
    }
}

/// sch_cake's `quantum_div`: 65535 / n, and 65535 for 0.
fn quantum_div(n: u16) -> u32 {
    if n == 0 { 65_535 } else { 65_535 / n as u32 }
}

/// Hash figures (sch_cake's per-tin way statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WayStats {
    pub directs: u64,
    pub hits: u64,
    pub misses: u64,
    pub collisions: u64,
}

/// CAKE, with one best-effort tin.
#[derive(Debug)]
pub struct Cake<P> {
    pub params: CakeParams,
    pub cparams: CobaltConsts,
    pub flow_quantum: u32,
    shaper: Option<ShaperRate>,
    pub flows: Vec<Flow<P>>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    lists: Lists,
    pub bulk_flow_count: u16,
    pub sparse_flow_count: u16,
    pub decaying_flow_count: u16,
    pub unresponsive_flow_count: u16,
    backlog: Backlog,
    limit: Limit,
    pub buffer_limit: u64,
    time_next_packet: i64,
    failsafe_next_packet: i64,
    throttled: Option<Time>,
    pub ways: WayStats,
    pub ack_drops: u64,
    avg_delay: u64,
    peak_delay: u64,
    base_delay: u64,
}

/// sch_cake `cake_ewma`.
fn ewma(avg: u64, sample: u64, shift: u32) -> u64 {
    avg - (avg >> shift) + (sample >> shift)
}

impl<P: QPacket> Cake<P> {
    pub fn new(params: &CakeParams, limit: Limit) -> Self {
        let target = params.target().as_nanos();
        let interval = params.rtt.as_nanos();
        let rate = params.bandwidth.map(|r| r.bps() / 8);
        let shaper = rate.map(ShaperRate::new);
        // cake_set_rate
        let flow_quantum = match rate {
            Some(r) => (r >> 12).clamp(300, 1514) as u32,
            None => 1514,
        };
        let byte_target_ns = shaper.map_or(0, |s| s.time(params.mtu.0));
        let c_target = (byte_target_ns * 3 / 2).max(target);
        let c_interval = (interval + c_target - target).max(c_target * 2);
        let cparams = CobaltConsts { interval: c_interval, target: c_target, mtu_time: byte_target_ns, p_inc: 1 << 24, p_dec: 1 << 20 };
        // cake_reconfigure
        let auto = match rate {
            Some(r) => ((r as u128 * (interval / 1000) as u128 / 250_000) as u64).max(4 << 20),
            None => u64::MAX,
        };
        let buffer_limit = params.memlimit.map_or(auto, |m| m.0).min((10_240 * params.mtu.0).max(params.memlimit.map_or(0, |m| m.0)));
        let flows = (0..QUEUES)
            .map(|_| Flow { items: VecDeque::new(), backlog: 0, deficit: 0, cvars: CobaltVars::default(), srchost: 0, dsthost: 0, set: Set::None, dropped: 0 })
            .collect();
        Cake {
            params: params.clone(),
            cparams,
            flow_quantum,
            shaper,
            flows,
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            lists: Lists::new(),
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            backlog: Backlog::default(),
            limit,
            buffer_limit,
            time_next_packet: 0,
            failsafe_next_packet: 0,
            throttled: None,
            ways: WayStats::default(),
            ack_drops: 0,
            avg_delay: 0,
            peak_delay: 0,
            base_delay: 0,
        }
    }

    /// sch_cake `cake_advance_shaper`: charge `len` (adjusted) bytes to the shaper.
    fn advance_shaper(&mut self, len: u32, drop: bool) {
        if let Some(s) = self.shaper {
            let dur = s.time(len as u64) as i64;
            self.time_next_packet += dur;
            if !drop {
                self.failsafe_next_packet += dur + (dur >> 1);
            }
        }
    }

    /// Take the head of flow `idx`, keeping the counts.
    fn pop(&mut self, idx: usize) -> Option<Item<P>> {
        let item = self.flows[idx].items.pop_front()?;
        let len = item.pkt.size_bytes() as u64;
        self.flows[idx].backlog -= len;
        self.backlog.packets -= 1;
        self.backlog.bytes -= len;
        Some(item)
    }

    /// sch_cake `cake_drop`: drop the head of the flow with the most bytes.
    fn drop_fattest(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) {
        let mut fat = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                fat = i;
            }
        }
        let Some(item) = self.pop(fat) else { return };
        if cobalt::queue_full(&mut self.flows[fat].cvars, &self.cparams, cobalt::ns(now)) {
            self.unresponsive_flow_count += 1;
        }
        self.flows[fat].dropped += 1;
        if self.params.ingress {
            self.advance_shaper(item.adjusted, true);
        }
        drops.push(Dropped { pkt: item.pkt, cause: Cause::Overflow, sojourn: Some(now.saturating_since(item.at)) });
    }

    fn over_limit(&self) -> bool {
        let b = self.backlog;
        b.bytes > self.buffer_limit || self.limit.packets.is_some_and(|p| b.packets > p) || self.limit.bytes.is_some_and(|x| b.bytes > x)
    }
}


impl<P: QPacket> Aqm<P> for Cake<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let now = ctx.now;
        let idx = self.classify(&pkt);
        // the shaper's schedule is not left in the past while idle
        if self.backlog.packets == 0 && self.time_next_packet < cobalt::ns(now) {
            self.time_next_packet = cobalt::ns(now);
            self.failsafe_next_packet = cobalt::ns(now);
        }
        let len = pkt.size_bytes() as u64;
        let adjusted = adjusted_len(&self.params, pkt.size_bytes());
        self.flows[idx].items.push_back(Item { pkt, at: now, adjusted });
        self.flows[idx].backlog += len;
        self.backlog.packets += 1;
        self.backlog.bytes += len;
        if self.params.ack_filter != AckFilter::Off {
            if let Some(i) = self.ack_filter(idx) {
                let item = self.flows[idx].items.remove(i).expect("eligible ACK in the queue");
                let l = item.pkt.size_bytes() as u64;
                self.flows[idx].backlog -= l;
                self.backlog.packets -= 1;
                self.backlog.bytes -= l;
                self.ack_drops += 1;
                if self.params.ingress {
                    self.advance_shaper(item.adjusted, true);
                }
                drops.push(Dropped { pkt: item.pkt, cause: Cause::Deterministic, sojourn: Some(now.saturating_since(item.at)) });
            }
        }
        // the flow's rotation
        match self.flows[idx].set {
            Set::None | Set::Decaying => {
                if self.flows[idx].set == Set::Decaying {
                    self.decaying_flow_count -= 1;
                }
                self.lists.move_tail(idx, NEW);
                self.flows[idx].set = Set::Sparse;
                self.sparse_flow_count += 1;
                let load = self.host_load(idx);
                self.flows[idx].deficit = ((self.flow_quantum * quantum_div(load)) >> 16) as i32;
            }
            Set::SparseWait => {
                self.flows[idx].set = Set::Bulk;
                self.sparse_flow_count -= 1;
                self.bulk_flow_count += 1;
                self.bulk_hosts(idx, true);
            }
            Set::Sparse | Set::Bulk => {}
        }
        while self.over_limit() {
            self.drop_fattest(now, drops);
        }
        Admit::Queued
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let now = ctx.now;
        let tnow = cobalt::ns(now);
        let mut first_flow = true;
        'begin: loop {
            if self.backlog.packets == 0 {
                return None;
            }
            // the global shaper
            if self.shaper.is_some() && self.time_next_packet > tnow && self.failsafe_next_packet > tnow {
                let next = self.time_next_packet.min(self.failsafe_next_packet);
                self.throttled = Some(Time::from_nanos(next as u64));
                return None;
            }
            'retry: loop {
                let list = if first_flow && !self.lists.is_empty(DECAYING) {
                    DECAYING
                } else if !self.lists.is_empty(NEW) {
                    NEW
                } else if !self.lists.is_empty(OLD) {
                    OLD
                } else if !self.lists.is_empty(DECAYING) {
                    DECAYING
                } else {
                    continue 'begin;
                };
                let idx = self.lists.front(list).expect("list not empty");
                first_flow = false;
                // DRR++ with host fairness
                if self.flows[idx].deficit <= 0 {
                    if self.flows[idx].set == Set::Sparse {
                        if !self.flows[idx].items.is_empty() {
                            self.sparse_flow_count -= 1;
                            self.bulk_flow_count += 1;
                            self.bulk_hosts(idx, true);
                            self.flows[idx].set = Set::Bulk;
                        } else {
                            self.flows[idx].set = Set::SparseWait;
                        }
                    }
                    let load = self.host_load(idx);
                    // a random dither against accumulated round-off (sch_cake)
                    let dither = (ctx.rng.next_u64() >> 48) as u32;
                    self.flows[idx].deficit += ((self.flow_quantum * quantum_div(load) + dither) >> 16) as i32;
                    self.lists.move_tail(idx, OLD);
                    continue 'retry;
                }
                // a packet through COBALT
                loop {
                    let Some(item) = self.pop(idx) else {
                        // the queue was empty
                        if cobalt::queue_empty(&mut self.flows[idx].cvars, &self.cparams, tnow) {
                            self.unresponsive_flow_count -= 1;
                        }
                        let (set, cv) = (self.flows[idx].set, self.flows[idx].cvars);
                        if cv.p_drop != 0 || cv.count != 0 || tnow < cv.drop_next {
                            // keep it until its COBALT state has decayed
                            self.lists.move_tail(idx, DECAYING);
                            match set {
                                Set::Bulk => {
                                    self.bulk_flow_count -= 1;
                                    self.bulk_hosts(idx, false);
                                    self.decaying_flow_count += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    self.sparse_flow_count -= 1;
                                    self.decaying_flow_count += 1;
                                }
                                Set::Decaying | Set::None => {}
                            }
                            self.flows[idx].set = Set::Decaying;
                        } else {
                            self.lists.unlink(idx);
                            match set {
                                Set::Sparse | Set::SparseWait => self.sparse_flow_count -= 1,
                                Set::Bulk => {
                                    self.bulk_flow_count -= 1;
                                    self.bulk_hosts(idx, false);
                                }
                                Set::Decaying => self.decaying_flow_count -= 1,
                                Set::None => {}
                            }
                            self.flows[idx].set = Set::None;
                        }
                        continue 'begin;
                    };
                    let sojourn = now.saturating_since(item.at);
                    let bulk = if self.params.ingress { self.bulk_flow_count as u32 } else { 0 };
                    let mut pkt = item.pkt;
                    let markable = pkt.ecn().is_ect() || pkt.ecn() == Ecn::Ce;
                    let v = cobalt::should_drop(&mut self.flows[idx].cvars, &self.cparams, tnow, sojourn.as_nanos(), bulk, markable, ctx);
                    if v.mark {
                        pkt.set_ce();
                    }
                    // the last packet of a queue is never dropped
                    if !v.drop() || self.flows[idx].items.is_empty() {
                        let d = sojourn.as_nanos();
                        self.avg_delay = ewma(self.avg_delay, d, 8);
                        self.peak_delay = ewma(self.peak_delay, d, if d > self.peak_delay { 2 } else { 8 });
                        self.base_delay = ewma(self.base_delay, d, if d < self.base_delay { 2 } else { 8 });
                        self.advance_shaper(item.adjusted, false);
                        self.flows[idx].deficit -= item.adjusted as i32;
                        self.throttled = None;
                        let marked = v.mark.then_some(Cause::Deterministic);
                        return Some(Departure { pkt, sojourn, marked });
                    }
                    self.flows[idx].dropped += 1;
                    drops.push(Dropped { pkt, cause: v.cause(), sojourn: Some(sojourn) });
                    if self.params.ingress {
                        self.advance_shaper(item.adjusted, true);
                        self.flows[idx].deficit -= item.adjusted as i32;
                        continue 'retry;
                    }
                }
            }
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    /// While the shaper holds packets back: when it lets the next one go.
    fn next_timer(&self) -> Option<Time> {
        self.throttled
    }

    /// The shaper's release time has come: the next dequeue may send.
    fn on_timer(&mut self, _ctx: &mut Ctx<'_>) {
        self.throttled = None;
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: None, delay_estimate: Some(Duration::from_nanos(self.avg_delay)) }
    }

    fn counters(&self, out: &mut Vec<Counter>) {
        out.push(Counter::count("", "sparse_flows", self.sparse_flow_count as u64 + self.decaying_flow_count as u64));
        out.push(Counter::count("", "bulk_flows", self.bulk_flow_count as u64));
        out.push(Counter::count("", "unresponsive_flows", self.unresponsive_flow_count as u64));
        out.push(Counter::count("", "ack_drops", self.ack_drops));
        out.push(Counter::count("", "way_indirect_hits", self.ways.hits));
        out.push(Counter::count("", "way_misses", self.ways.misses));
        out.push(Counter::count("", "way_collisions", self.ways.collisions));
        out.push(Counter::nanos("", "avg_delay", Duration::from_nanos(self.avg_delay)));
        out.push(Counter::nanos("", "peak_delay", Duration::from_nanos(self.peak_delay)));
        out.push(Counter::nanos("", "base_delay", Duration::from_nanos(self.base_delay)));
        out.push(Counter::count("", "old_flows_len", self.lists.len(OLD)));
    }
}

impl crate::spec::AqmParams for CakeParams {
    const TITLE: &'static str = "CAKE: shaper, set-associative flow queueing with host isolation, COBALT per flow, ACK filter";
    const SOURCE: &'static str = "Hoeiland-Joergensen, Taht & Morton, \"Piece of CAKE\" (LANMAN 2018); Linux sch_cake, tc-cake(8)";
    const DOC: &'static [(&'static str, &'static str)] = CakeParams::DOC;
    type Algo<P: QPacket> = Box<Cake<P>>;
    fn check(&self) -> Result<(), String> {
        CakeParams::validate(self)
    }
    fn complete(&mut self) {
        self.target = Some(self.target());
    }
    fn marks_ecn(&self) -> bool {
        true
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Box::new(Cake::new(self, limit))
    }
    fn built_bytes<P: QPacket>(&self) -> usize {
        use std::mem::size_of;
        // the flows, their set tags and hosts, and the lists' links (QUEUES + 3 heads)
        size_of::<Cake<P>>() + QUEUES * (size_of::<Flow<P>>() + size_of::<u32>() + size_of::<Host>()) + 2 * (QUEUES + 3) * size_of::<u16>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Bytes, Rate};
    use crate::testing::{ctx, rng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A packet with hosts and, for ACKs, TCP acknowledgement fields.
    #[derive(Clone, Debug, PartialEq)]
    struct Cp {
        id: u64,
        size: u32,
        flow: u64,
        src: u64,
        dst: u64,
        ecn: Ecn,
        ack: Option<TcpAck>,
    }

    impl QPacket for Cp {
        fn size_bytes(&self) -> u32 {
            self.size
        }
        fn flow_key(&self) -> u64 {
            self.flow
        }
        fn src_host(&self) -> u64 {
            self.src
        }
        fn dst_host(&self) -> u64 {
            self.dst
        }
        fn tcp_ack(&self) -> Option<TcpAck> {
            self.ack
        }
        fn ecn(&self) -> Ecn {
            self.ecn
        }
        fn set_ce(&mut self) {
            self.ecn = Ecn::Ce;
        }
    }

    fn data(id: u64, flow: u64, src: u64, dst: u64) -> Cp {
        Cp { id, size: 1500, flow, src, dst, ecn: Ecn::NotEct, ack: None }
    }

    fn ack(id: u64, ackno: u32, sack: &[(u32, u32)]) -> Cp {
        let mut a = TcpAck { ack: ackno, pure: true, ..TcpAck::default() };
        for (i, &b) in sack.iter().enumerate() {
            a.sack[i] = b;
        }
        a.sack_len = sack.len() as u8;
        Cp { id, size: 52, flow: 9, src: 2, dst: 1, ecn: Ecn::NotEct, ack: Some(a) }
    }

    fn cake(params: CakeParams) -> Cake<Cp> {
        Cake::new(&params, Limit::packets(10_000))
    }

    fn put(q: &mut Cake<Cp>, p: Cp, t: Time, r: &mut Xoshiro256PlusPlus) -> Vec<Dropped<Cp>> {
        let mut drops = Vec::new();
        q.enqueue(p, &mut ctx(t, r), &mut drops);
        drops
    }

    fn take(q: &mut Cake<Cp>, t: Time, r: &mut Xoshiro256PlusPlus) -> Option<Departure<Cp>> {
        q.dequeue(&mut ctx(t, r), &mut Vec::new())
    }

    fn mode(m: FlowMode) -> CakeParams {
        CakeParams { flow_mode: m, ..CakeParams::default() }
    }

    #[test]
    fn defaults_are_tc_cakes() {
        let q = cake(CakeParams::default());
        // unlimited: flow quantum 1514, COBALT target 5 ms = rtt/20, interval 100 ms
        assert_eq!(q.flow_quantum, 1514);
        assert_eq!((q.cparams.target, q.cparams.interval, q.cparams.mtu_time), (5_000_000, 100_000_000, 0));
        assert_eq!((q.cparams.p_inc, q.cparams.p_dec), (1 << 24, 1 << 20));
        // memory: 10240 MTUs
        assert_eq!(q.buffer_limit, 10_240 * 1514);
        // rtt 200 ms without a target: target 10 ms (tc-cake: rtt / 20)
        assert_eq!(CakeParams { rtt: Duration::from_millis(200), ..CakeParams::default() }.target(), Duration::from_millis(10));
    }

    #[test]
    fn a_shaped_cake_adapts_quantum_target_interval_and_memory_to_the_rate() {
        // 1 Mbit/s = 125000 B/s: rate_ns = 8000 << 21 (shift 21): 8000 ns per byte.
        // flow quantum = 125000 >> 12 = 30 -> at least 300. MTU 1514 B takes 12.112 ms:
        // target = max(1.5 x 12.112, 5) = 18.168 ms; interval = max(100 + 18.168 - 5,
        // 2 x 18.168) = 113.168 ms. Memory: max(4 x 125000 x 0.1, 4 MB) = 4 MiB.
        let q = cake(CakeParams { bandwidth: Some(Rate::from_mbps(1)), ..CakeParams::default() });
        assert_eq!(ShaperRate::new(125_000), ShaperRate { rate_ns: 8000 << 21, rate_shft: 21 });
        assert_eq!(q.flow_quantum, 300);
        assert_eq!(q.cparams.mtu_time, 12_112_000);
        assert_eq!(q.cparams.target, 18_168_000);
        assert_eq!(q.cparams.interval, 113_168_000);
        assert_eq!(q.buffer_limit, 4 << 20);
        // 100 Mbit/s: quantum min(12.5e6 >> 12 = 3051, 1514) = 1514; MTU 121.12 us:
        // target stays 5 ms; memory 4 x 12.5e6 x 0.1 = 5 MB
        let q = cake(CakeParams { bandwidth: Some(Rate::from_mbps(100)), ..CakeParams::default() });
        assert_eq!(q.flow_quantum, 1514);
        assert_eq!(q.cparams.target, 5_000_000);
        assert_eq!(q.buffer_limit, 5_000_000);
    }

    #[test]
    fn overhead_compensation_as_tc_cake() {
        let p = |overhead, mpu, framing| CakeParams { overhead, mpu, framing, ..CakeParams::default() };
        assert_eq!(adjusted_len(&p(0, 0, Framing::None), 1500), 1500);
        assert_eq!(adjusted_len(&p(18, 0, Framing::None), 1500), 1518);
        assert_eq!(adjusted_len(&p(-20, 0, Framing::None), 1500), 1480);
        assert_eq!(adjusted_len(&p(0, 64, Framing::None), 40), 64);
        // ATM: 1500 + 10 = 1510 B -> 32 cells (31.46) x 53 = 1696 B
        assert_eq!(adjusted_len(&p(10, 0, Framing::Atm), 1500), 1696);
        // 48 B exactly: one cell
        assert_eq!(adjusted_len(&p(8, 0, Framing::Atm), 40), 53);
        // PTM: 1500 + ceil(1500/64) = 1500 + 24
        assert_eq!(adjusted_len(&p(0, 0, Framing::Ptm), 1500), 1524);
    }

    #[test]
    fn the_shaper_spaces_packets_at_the_configured_rate() {
        // 1 Mbit/s: 1500 B every 12 ms, 1696 B (ATM, overhead 10) every 13.568 ms.
        for (params, gap) in [
            (CakeParams { bandwidth: Some(Rate::from_mbps(1)), ..CakeParams::default() }, 12_000_000u64),
            (CakeParams { bandwidth: Some(Rate::from_mbps(1)), overhead: 10, framing: Framing::Atm, ..CakeParams::default() }, 13_568_000),
        ] {
            let mut q = cake(params);
            let mut r = rng(1);
            for i in 0..3 {
                put(&mut q, data(i, 1, 1, 2), Time::ZERO, &mut r);
            }
            assert_eq!(take(&mut q, Time::ZERO, &mut r).unwrap().pkt.id, 0);
            assert!(take(&mut q, Time::ZERO, &mut r).is_none(), "held back by the shaper");
            assert_eq!(Aqm::<Cp>::next_timer(&q), Some(Time::from_nanos(gap)));
            assert!(take(&mut q, Time::from_nanos(gap - 1), &mut r).is_none());
            q.on_timer(&mut ctx(Time::from_nanos(gap), &mut r));
            assert_eq!(Aqm::<Cp>::next_timer(&q), None);
            assert_eq!(take(&mut q, Time::from_nanos(gap), &mut r).unwrap().pkt.id, 1);
            assert!(take(&mut q, Time::from_nanos(gap + 1), &mut r).is_none());
            assert_eq!(Aqm::<Cp>::next_timer(&q), Some(Time::from_nanos(2 * gap)));
        }
        // unshaped: never held back, no timer
        let mut q = cake(CakeParams::default());
        let mut r = rng(1);
        for i in 0..3 {
            put(&mut q, data(i, 1, 1, 2), Time::ZERO, &mut r);
        }
        for _ in 0..3 {
            assert!(take(&mut q, Time::ZERO, &mut r).is_some());
        }
        assert_eq!(Aqm::<Cp>::next_timer(&q), None);
    }

    #[test]
    fn flow_modes_hash_what_they_name() {
        // (flow, src, dst): a and b share the source host, a and c the destination
        let (a, b, c) = (data(1, 10, 1, 2), data(2, 11, 1, 3), data(3, 12, 4, 2));
        let idx = |m: FlowMode, p: &Cp| {
            let mut q = cake(mode(m));
            q.classify(p)
        };
        assert_eq!(idx(FlowMode::Flowblind, &a), 0);
        assert_eq!(idx(FlowMode::Flowblind, &c), 0);
        // one queue per source host
        let mut q = cake(mode(FlowMode::Srchost));
        let (qa, qb, qc) = (q.classify(&a), q.classify(&b), q.classify(&c));
        assert!(qa == qb && qa != qc);
        let mut q = cake(mode(FlowMode::Dsthost));
        let (qa, qb, qc) = (q.classify(&a), q.classify(&b), q.classify(&c));
        assert!(qa == qc && qa != qb);
        // host pairs: all three differ
        let mut q = cake(mode(FlowMode::Hosts));
        let (qa, qb, qc) = (q.classify(&a), q.classify(&b), q.classify(&c));
        assert!(qa != qb && qb != qc && qa != qc);
        // flows, and the dual and triple modes, which hash flows
        for m in [FlowMode::Flows, FlowMode::DualSrchost, FlowMode::DualDsthost, FlowMode::TripleIsolate] {
            let mut q = cake(mode(m));
            let (qa, qb, qc) = (q.classify(&a), q.classify(&b), q.classify(&c));
            assert!(qa != qb && qb != qc && qa != qc, "{m:?}");
        }
    }

    #[test]
    fn the_set_associative_hash_gives_colliding_flows_their_own_queue_until_the_set_is_full() {
        // Find nine flows whose hashes fall in the same 8-way set.
        let q0 = cake(mode(FlowMode::Flows));
        let set_of = |f: u64| (q0.hash32(f) as usize % QUEUES) / WAYS;
        let target = set_of(0);
        let flows: Vec<u64> = (0..).filter(|&f| set_of(f) == target).take(9).collect();
        let mut q = cake(mode(FlowMode::Flows));
        let mut r = rng(1);
        let mut queues = Vec::new();
        for (i, &f) in flows.iter().enumerate() {
            put(&mut q, data(i as u64, f, 1, 2), Time::ZERO, &mut r);
            queues.push(q.classify(&data(99, f, 1, 2)));
        }
        // the first eight have eight distinct queues of the set; the ninth collides
        let first: std::collections::BTreeSet<usize> = queues[..8].iter().copied().collect();
        assert_eq!(first.len(), 8);
        assert!(first.iter().all(|&i| i / WAYS == target));
        assert!(first.contains(&queues[8]));
        assert_eq!(q.ways.collisions, 1);
        // a packet of an active flow finds its queue again: direct or indirect hit
        assert!(q.ways.directs + q.ways.hits >= 8);
    }

    /// Bytes each flow gets when all are backlogged, over `n` dequeues.
    fn shares(params: CakeParams, flows: &[(u64, u64, u64)], n: usize) -> Vec<f64> {
        let mut q = cake(params);
        let mut r = rng(4);
        let mut got = vec![0u64; flows.len()];
        let mut queued = vec![0usize; flows.len()];
        let mut id = 0;
        for _ in 0..n {
            for (k, &(f, s, d)) in flows.iter().enumerate() {
                while queued[k] < 3 {
                    put(&mut q, data(id, f, s, d), Time::ZERO, &mut r);
                    queued[k] += 1;
                    id += 1;
                }
            }
            // sojourn 0: COBALT never acts
            let d = take(&mut q, Time::ZERO, &mut r).unwrap();
            let k = flows.iter().position(|x| x.0 == d.pkt.flow).unwrap();
            got[k] += d.pkt.size as u64;
            queued[k] -= 1;
        }
        let total: u64 = got.iter().sum();
        got.iter().map(|&g| g as f64 / total as f64).collect()
    }

    #[test]
    fn triple_isolate_shares_the_link_between_hosts_first() {
        // Host 1 sends one flow, host 2 eight flows (to distinct receivers 10, 20..27).
        let mut flows = vec![(1u64, 1u64, 10u64)];
        for k in 0..8 {
            flows.push((100 + k, 2, 20 + k));
        }
        // triple-isolate: host 2's flows each get a quantum divided by 8 (its bulk flow
        // count): the single flow of host 1 gets half the link.
        let s = shares(CakeParams::default(), &flows, 20_000);
        assert!((s[0] - 0.5).abs() < 0.03, "{s:?}");
        // dual-srchost: the same
        let s = shares(mode(FlowMode::DualSrchost), &flows, 20_000);
        assert!((s[0] - 0.5).abs() < 0.03, "{s:?}");
        // flows: per-flow fairness, 1/9
        let s = shares(mode(FlowMode::Flows), &flows, 20_000);
        assert!((s[0] - 1.0 / 9.0).abs() < 0.02, "{s:?}");
        // dual-dsthost: the destinations all differ, so per flow again
        let s = shares(mode(FlowMode::DualDsthost), &flows, 20_000);
        assert!((s[0] - 1.0 / 9.0).abs() < 0.02, "{s:?}");
        // srchost: one queue per source host: half each
        let s = shares(mode(FlowMode::Srchost), &flows, 20_000);
        assert!((s[0] - 0.5).abs() < 0.03, "{s:?}");
        // triple-isolate with all nine flows to one receiver: the destination has 9
        // bulk flows, more than either source: every flow's quantum is divided by 9
        let same_dst: Vec<(u64, u64, u64)> = flows.iter().map(|&(f, s, _)| (f, s, 77)).collect();
        let s = shares(CakeParams::default(), &same_dst, 20_000);
        assert!((s[0] - 1.0 / 9.0).abs() < 0.02, "{s:?}");
    }

    #[test]
    fn a_new_sparse_flow_goes_before_the_bulk_flows() {
        let mut q = cake(CakeParams::default());
        let mut r = rng(1);
        for i in 0..20 {
            put(&mut q, data(i, 1, 1, 2), Time::ZERO, &mut r);
        }
        // the flow's first quantum is 1514 x 65535 >> 16 = 1513 B: two packets go
        // (1513 -> 13 -> -1487); at the third it is found in deficit with packets
        // left: it becomes bulk, gets a new quantum, and sends from the old list
        for i in 0..2 {
            assert_eq!(take(&mut q, Time::ZERO, &mut r).unwrap().pkt.id, i);
            assert_eq!((q.sparse_flow_count, q.bulk_flow_count), (1, 0));
        }
        assert_eq!(take(&mut q, Time::ZERO, &mut r).unwrap().pkt.id, 2);
        assert_eq!((q.sparse_flow_count, q.bulk_flow_count), (0, 1));
        put(&mut q, data(100, 2, 3, 4), Time::ZERO, &mut r);
        assert_eq!(q.sparse_flow_count, 1);
        assert_eq!(take(&mut q, Time::ZERO, &mut r).unwrap().pkt.id, 100, "the sparse flow first");
        assert_eq!(take(&mut q, Time::ZERO, &mut r).unwrap().pkt.id, 3);
    }

    #[test]
    fn each_flow_queue_has_its_own_cobalt() {
        // Flow 1 keeps a standing queue of packets 20 ms old; flow 2 sends one packet at
        // a time. Only flow 1 is signalled (ECT: marked).
        let mut q = cake(CakeParams::default());
        let mut r = rng(1);
        let mut id = 0;
        let (mut m1, mut m2) = (0, 0);
        let mut queued1 = 0;
        for ms in 0..600u64 {
            let now = Time::from_millis(ms);
            while queued1 < 20 {
                let mut p = data(id, 1, 1, 2);
                p.ecn = Ecn::Ect0;
                // stamped 20 ms in the past: a standing queue
                put(&mut q, p, Time::from_nanos(now.as_nanos().saturating_sub(20_000_000)), &mut r);
                queued1 += 1;
                id += 1;
            }
            if ms % 10 == 0 {
                let mut p = data(id, 2, 3, 4);
                p.ecn = Ecn::Ect0;
                put(&mut q, p, now, &mut r);
                id += 1;
            }
            if let Some(d) = take(&mut q, now, &mut r) {
                if d.pkt.flow == 1 {
                    queued1 -= 1;
                }
                if d.marked.is_some() {
                    if d.pkt.flow == 1 { m1 += 1 } else { m2 += 1 }
                }
            }
        }
        assert!(m1 > 5, "{m1}");
        assert_eq!(m2, 0);
    }

    #[test]
    fn overflow_drops_the_head_of_the_fattest_flow_and_feeds_its_blue() {
        let mut q: Cake<Cp> = Cake::new(&CakeParams::default(), Limit::packets(10));
        let mut r = rng(1);
        for i in 0..7 {
            assert!(put(&mut q, data(i, 1, 1, 2), Time::from_millis(1), &mut r).is_empty());
        }
        for i in 0..3 {
            assert!(put(&mut q, data(10 + i, 2, 3, 4), Time::from_millis(1), &mut r).is_empty());
        }
        let d = put(&mut q, data(20, 2, 3, 4), Time::from_millis(10), &mut r);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].pkt.id, d[0].cause, d[0].sojourn), (0, Cause::Overflow, Some(Duration::from_millis(9))));
        let f1 = q.classify(&data(0, 1, 1, 2));
        assert_eq!(q.flows[f1].cvars.p_drop, 1 << 24);
        assert_eq!(q.unresponsive_flow_count, 1);
        assert_eq!(q.backlog(), Backlog { packets: 10, bytes: 15_000 });
        // the memory limit too
        let mut q: Cake<Cp> = Cake::new(&CakeParams { memlimit: Some(Bytes(4000)), ..CakeParams::default() }, Limit::packets(100));
        for i in 0..3 {
            put(&mut q, data(i, 1, 1, 2), Time::ZERO, &mut r);
        }
        assert_eq!(q.backlog().packets, 2);
    }

    #[test]
    fn sack_comparison_as_sch_cake() {
        let a = |ackno, s: &[(u32, u32)]| ack(0, ackno, s).ack.unwrap();
        assert_eq!(sack_compare(&a(10, &[]), &a(12, &[])), 0);
        assert_eq!(sack_compare(&a(10, &[(20, 30)]), &a(12, &[])), -1);
        assert_eq!(sack_compare(&a(10, &[]), &a(12, &[(20, 30)])), 1);
        // covered, and b SACKs more: 1; equal: 0
        assert_eq!(sack_compare(&a(10, &[(20, 30)]), &a(10, &[(20, 40)])), 1);
        assert_eq!(sack_compare(&a(10, &[(20, 30)]), &a(12, &[(20, 30)])), 0);
        // a block b does not cover: -1
        assert_eq!(sack_compare(&a(10, &[(20, 30), (50, 60)]), &a(10, &[(20, 40)])), -1);
        // a D-SACK (below the cumulative ACK): -1
        assert_eq!(sack_compare(&a(30, &[(20, 25)]), &a(40, &[(20, 25)])), -1);
    }

    #[test]
    fn the_ack_filter_removes_redundant_acks() {
        let on = CakeParams { ack_filter: AckFilter::On, ..CakeParams::default() };
        let mut q = cake(on.clone());
        let mut r = rng(1);
        // conservative: a second eligible ACK is needed; the one nearest the head goes
        assert!(put(&mut q, ack(1, 100, &[]), Time::ZERO, &mut r).is_empty());
        assert!(put(&mut q, ack(2, 101, &[]), Time::ZERO, &mut r).is_empty());
        let d = put(&mut q, ack(3, 102, &[]), Time::from_millis(1), &mut r);
        assert_eq!(d.iter().map(|x| x.pkt.id).collect::<Vec<_>>(), vec![1]);
        assert_eq!((d[0].cause, d[0].sojourn), (Cause::Deterministic, Some(Duration::from_millis(1))));
        assert_eq!(q.ack_drops, 1);
        assert_eq!(q.backlog().packets, 2);
        // aggressive: a single eligible ACK right ahead of the new one goes
        let mut q = cake(CakeParams { ack_filter: AckFilter::Aggressive, ..CakeParams::default() });
        assert!(put(&mut q, ack(1, 100, &[]), Time::ZERO, &mut r).is_empty());
        assert_eq!(put(&mut q, ack(2, 101, &[]), Time::ZERO, &mut r).len(), 1);
        // a duplicate ACK with new SACK information makes the older one redundant; the
        // older SACKing something the newer does not keeps it
        let mut q = cake(on.clone());
        put(&mut q, ack(1, 100, &[(110, 120)]), Time::ZERO, &mut r);
        put(&mut q, ack(2, 100, &[(110, 130)]), Time::ZERO, &mut r);
        let d = put(&mut q, ack(3, 100, &[(110, 140)]), Time::ZERO, &mut r);
        assert_eq!(d.iter().map(|x| x.pkt.id).collect::<Vec<_>>(), vec![1]);
        let mut q = cake(on.clone());
        put(&mut q, ack(1, 100, &[(150, 160)]), Time::ZERO, &mut r);
        put(&mut q, ack(2, 100, &[(110, 130)]), Time::ZERO, &mut r);
        assert!(put(&mut q, ack(3, 100, &[(110, 140)]), Time::ZERO, &mut r).is_empty());
        // the same ACK number and the same SACK: nothing new, nothing removed
        let mut q = cake(on.clone());
        for i in 0..3 {
            assert!(put(&mut q, ack(i, 100, &[]), Time::ZERO, &mut r).is_empty());
        }
        // a change of ECE between them protects the older ones
        let mut q = cake(on.clone());
        let mut e = ack(2, 101, &[]);
        e.ack.as_mut().unwrap().ece = true;
        put(&mut q, ack(1, 100, &[]), Time::ZERO, &mut r);
        put(&mut q, e, Time::ZERO, &mut r);
        assert!(put(&mut q, ack(3, 102, &[]), Time::ZERO, &mut r).is_empty());
        // data packets and higher cumulative ACKs are never removed
        let mut q = cake(on);
        let mut dack = ack(1, 100, &[]);
        dack.ack.as_mut().unwrap().pure = false;
        put(&mut q, dack, Time::ZERO, &mut r);
        put(&mut q, ack(2, 200, &[]), Time::ZERO, &mut r);
        assert!(put(&mut q, ack(3, 150, &[]), Time::ZERO, &mut r).is_empty());
    }

    #[test]
    fn a_queue_is_released_only_when_its_cobalt_state_has_decayed() {
        let mut q = cake(CakeParams::default());
        let mut r = rng(1);
        put(&mut q, data(1, 1, 1, 2), Time::ZERO, &mut r);
        let idx = q.classify(&data(0, 1, 1, 2));
        assert_eq!(q.flows[idx].set, Set::Sparse);
        take(&mut q, Time::ZERO, &mut r);
        // with nothing queued, dequeue returns at once (sch_cake checks qlen first):
        // the emptied queue stays on the new list, still sparse
        assert!(take(&mut q, Time::ZERO, &mut r).is_none());
        assert_eq!(q.flows[idx].set, Set::Sparse);
        // with another flow's packet queued, the dequeue visits it and finds it empty:
        // drop_next (the activity timeout, now + 100 ms) is ahead, so it waits on the
        // decaying list, no longer counted as sparse
        put(&mut q, data(2, 3, 3, 4), Time::from_millis(1), &mut r);
        assert_eq!(take(&mut q, Time::from_millis(1), &mut r).unwrap().pkt.id, 2);
        assert_eq!((q.flows[idx].set, q.decaying_flow_count, q.sparse_flow_count), (Set::Decaying, 1, 1));
        // a new packet of the flow brings it back as sparse
        put(&mut q, data(3, 1, 1, 2), Time::from_millis(2), &mut r);
        assert_eq!((q.flows[idx].set, q.decaying_flow_count, q.sparse_flow_count), (Set::Sparse, 0, 2));
        // drained and visited more than 100 ms later, the state is at rest: released
        take(&mut q, Time::from_millis(2), &mut r);
        take(&mut q, Time::from_millis(200), &mut r);
        put(&mut q, data(4, 5, 5, 6), Time::from_millis(300), &mut r);
        take(&mut q, Time::from_millis(300), &mut r);
        assert_eq!(q.flows[idx].set, Set::None);
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = CakeParams { overhead: 300, ..CakeParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("overhead:"), "{e}");
        let e = CakeParams { rtt: Duration::ZERO, ..CakeParams::default() }.validate().unwrap_err();
        assert!(e.starts_with("rtt:"), "{e}");
        let e = crate::AqmSpec::from_kind("cake", serde_json::json!({"flow_mode": "triple"})).unwrap_err().to_string();
        assert!(e.contains("triple") && e.contains("triple-isolate"), "{e}");
    }
}
