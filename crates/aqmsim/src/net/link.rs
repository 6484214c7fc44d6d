//! A unidirectional link: an egress queue run by an AQM, a transmitter, and the
//! counters its samples read. Its propagation delay is applied by whoever carries
//! its departures (the simulator's pipes, the emulator's delay line).
//!
//! The transmitter either serializes one packet at a time at the link rate, which
//! may follow a schedule of rate changes (Pan et al., PIE slides: 50 Mbps, then
//! 10 Mbps), or follows a Mahimahi trace ([`super::trace`]).
//!
//! A link is a state machine with its own timeline: its *operations* are the AQM's
//! timer, a scheduled rate change, the start of a transmission and a trace
//! opportunity, each at a time the link knows ([`Link::next_op`]); arrivals come from
//! outside ([`Link::enqueue`]). Whoever drives it performs operations and arrivals
//! in key order (time, then: timer, rate change, transmission, opportunity,
//! arrival), and may do so late, in batches, as long as nothing outside has needed
//! the link's state in between: the simulator advances a link only when an arrival
//! comes, when a sample reads it, or before a departure would be due downstream.
//! A departure leaves when its transmission starts (cut-through: its last bit's
//! time is known then) and is handed back with its start and end.
//!
//! A DropTail rate link without a rate schedule can instead be run *eagerly*
//! ([`eager`]): its fate is decided at the arrival, so an arrival books the packet's
//! whole passage at once, with no queue object and no operations.

mod eager;

use aqm::{Backlog, Cause, Ctx, Departure, Dropped, Duration, Limit, Qdisc, QPacket, Rate, Stats, Time};

use super::trace::{LinkTrace, TRACE_BYTES};
use crate::engine::Key;
use crate::record::{LinkInfo, LinkSeries};
use crate::rng::SimRng;

pub use eager::Eager;

/// Operation tags of a link's own timeline, in their order at equal times (the
/// simulator's event tags for the same kinds; arrivals come after them).
pub const OP_TIMER: u32 = 1;
pub const OP_STEP: u32 = 2;
pub const OP_TX: u32 = 3;
pub const OP_OPPORTUNITY: u32 = 4;
/// Tag bits above the link index in an operation's packed key.
pub const OP_TAG_SHIFT: u32 = 28;

#[inline]
fn op_key(t: Time, tag: u32, link: u16) -> Key {
    ((t.as_nanos() as u128) << 64) | (((tag << OP_TAG_SHIFT | link as u32) as u128) << 32)
}

/// What happens to a link's packets, for whoever records them. Each hook gets the
/// queue after the event (its backlog, and its probe for the AQM's estimates).
pub trait Observe<P: QPacket> {
    /// What the observer keeps of an arriving packet, taken before the queue owns it.
    type Info: Copy;
    fn info(&self, p: &P) -> Self::Info;
    /// Accepted into the queue (marked CE on the way in if `marked`).
    fn enqueued(&mut self, t: Time, p: Self::Info, q: &Qdisc<P>, marked: Option<Cause>);
    /// Handed to the transmitter after `sojourn` in the queue.
    fn dequeued(&mut self, t: Time, p: &P, sojourn: Duration, q: &Qdisc<P>, marked: Option<Cause>);
    /// Dropped (at the arrival, or from inside the queue with its sojourn).
    fn dropped(&mut self, t: Time, d: &Dropped<P>, q: &Qdisc<P>);
    /// Takes back a dropped packet once [`Observe::dropped`] has seen it (the
    /// emulator returns its buffer to its pool); by default it is simply dropped.
    #[inline]
    fn recycle(&mut self, _p: P) {}
}

/// An observer that records nothing.
pub struct NoObserver;
impl<P: QPacket> Observe<P> for NoObserver {
    type Info = ();
    fn info(&self, _p: &P) {}
    fn enqueued(&mut self, _t: Time, _p: (), _q: &Qdisc<P>, _m: Option<Cause>) {}
    fn dequeued(&mut self, _t: Time, _p: &P, _s: Duration, _q: &Qdisc<P>, _m: Option<Cause>) {}
    fn dropped(&mut self, _t: Time, _d: &Dropped<P>, _q: &Qdisc<P>) {}
}

/// A departure: the packet, when its transmission started, and when its last bit left.
pub struct Sent<P> {
    pub pkt: P,
    pub start: Time,
    pub end: Time,
}

/// How the transmitter takes packets from the queue.
enum Shaper<P> {
    /// Serialize at `Link::rate`, with optional rate changes at given times.
    Rate { steps: Vec<(Time, Rate)>, next: usize },
    /// Mahimahi trace opportunities.
    Trace {
        trace: LinkTrace,
        /// The packet being carried, and its bytes still to carry.
        in_tx: Option<P>,
        left: u32,
        /// The next opportunity to use, while the link has something to carry.
        next: Option<Time>,
        /// Opportunities that carried at least one byte.
        used: u64,
    },
}

/// 8e9 / rate in ns per byte if that is a whole number, else 0.
fn exact_ns_per_byte(rate: Rate) -> u64 {
    let r = rate.bps();
    if r > 0 && 8_000_000_000 % r == 0 { 8_000_000_000 / r } else { 0 }
}

/// Counters at the previous sample, to turn totals into per-interval figures.
#[derive(Clone, Copy, Default)]
struct Mark {
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

/// A link's settings.
pub struct LinkConfig<'a> {
    pub name: &'a str,
    pub rate: Rate,
    pub delay: Duration,
    pub limit: Limit,
    pub aqm: &'a aqm::AqmSpec,
    /// Rate changes: from each time on, the link runs at the rate.
    pub schedule: Vec<(Time, Rate)>,
    pub trace: Option<LinkTrace>,
    /// The AQM's random stream.
    pub rng: SimRng,
}

pub struct Link<P: QPacket> {
    name: String,
    /// The current rate (for a trace link: the trace's mean rate).
    rate: Rate,
    delay: Duration,
    limit: Limit,
    qdisc: Qdisc<P>,
    rng: SimRng,
    shaper: Shaper<P>,
    /// The time of the last operation or arrival: nothing happens before it.
    clock: Time,
    /// Rate links: the end of the current (or last) transmission. The transmitter
    /// is busy while `now < tx_end`.
    tx_end: Time,
    /// Size of the last transmission started (in progress while `now < tx_end`).
    tx_last_size: u32,
    /// The fraction of a nanosecond of serialization carried to the next packet.
    tx_rem: u64,
    /// Nanoseconds per byte when the rate divides 8e9 (10 Mbps: 800; 1 Gbps: 8):
    /// serialization is then one multiplication, exact; 0 otherwise.
    ns_per_byte: u64,
    /// Time spent transmitting, and bytes and packets sent, counting a rate link's
    /// current transmission whole (see [`Link::sent_until`]).
    busy_ns: u64,
    tx_bytes: u64,
    tx_packets: u64,
    /// Capacity offered so far by a rate link, in bit-nanoseconds / 1e9, up to `cap_mark`.
    cap_bitns: u128,
    cap_mark: Time,
    /// Set for an eagerly run DropTail link ([`Link::make_eager`]).
    eager: Option<Box<Eager>>,
    sampled: bool,
    mark: Mark,
    drops: Vec<Dropped<P>>,
    /// The AQM holds its packets back (CAKE's shaper): its dequeue gave nothing with
    /// packets queued. The transmitter waits for the AQM's timer.
    held: bool,
}

impl<P: QPacket> Link<P> {
    pub fn new(c: LinkConfig<'_>) -> Link<P> {
        let qdisc = Qdisc::new(c.aqm, c.limit);
        let mut rate = c.rate;
        let shaper = match c.trace {
            Some(trace) => {
                rate = trace.mean_rate();
                Shaper::Trace { trace, in_tx: None, left: 0, next: None, used: 0 }
            }
            None => Shaper::Rate { steps: c.schedule, next: 0 },
        };
        Link {
            name: c.name.to_string(),
            rate,
            delay: c.delay,
            limit: c.limit,
            qdisc,
            rng: c.rng,
            shaper,
            clock: Time::ZERO,
            tx_end: Time::ZERO,
            tx_last_size: 0,
            tx_rem: 0,
            ns_per_byte: exact_ns_per_byte(rate),
            busy_ns: 0,
            tx_bytes: 0,
            tx_packets: 0,
            cap_bitns: 0,
            cap_mark: Time::ZERO,
            eager: None,
            sampled: false,
            mark: Mark::default(),
            drops: Vec::with_capacity(16),
            held: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    /// The current rate (a trace link: its mean rate).
    pub fn rate(&self) -> Rate {
        self.rate
    }
    pub fn delay(&self) -> Duration {
        self.delay
    }
    pub fn limit(&self) -> Limit {
        self.limit
    }
    pub fn stats(&self) -> Stats {
        self.qdisc.stats
    }
    pub fn aqm_kind(&self) -> &'static str {
        self.qdisc.aqm.kind()
    }
    pub fn qdisc(&self) -> &Qdisc<P> {
        &self.qdisc
    }
    pub fn is_trace(&self) -> bool {
        matches!(self.shaper, Shaper::Trace { .. })
    }
    pub fn is_eager(&self) -> bool {
        self.eager.is_some()
    }
    pub fn sampled(&self) -> bool {
        self.sampled
    }
    pub fn set_sampled(&mut self, on: bool) {
        self.sampled = on;
    }

    /// The link as a run's metadata describes it, with these counters (its own
    /// [`Link::stats`], or a copy taken earlier).
    pub fn info(&self, stats: Stats) -> LinkInfo {
        LinkInfo {
            name: self.name.clone(),
            rate_bps: self.rate.bps(),
            delay_ns: self.delay.as_nanos(),
            aqm: self.aqm_kind().to_string(),
            limit_packets: self.limit.packets,
            limit_bytes: self.limit.bytes,
            stats,
            counters: self.qdisc.counters(),
        }
    }

    /// Can this link be run eagerly: a DropTail rate link with no rate schedule?
    pub fn can_be_eager(&self) -> bool {
        self.qdisc.aqm.kind() == "droptail" && matches!(&self.shaper, Shaper::Rate { steps, .. } if steps.is_empty())
    }

    // ---- the link's own timeline --------------------------------------------

    /// The key of the link's next operation (`u128::MAX`: none), `idx` being the
    /// link's index in the keys. An eager link has none.
    #[inline]
    pub fn next_op(&self, idx: u16) -> Key {
        if self.eager.is_some() {
            return u128::MAX;
        }
        let mut k = u128::MAX;
        if let Some(t) = self.qdisc.next_timer() {
            k = op_key(t.max(self.clock), OP_TIMER, idx);
        }
        match &self.shaper {
            Shaper::Rate { steps, next } => {
                if let Some(&(t, _)) = steps.get(*next) {
                    k = k.min(op_key(t, OP_STEP, idx));
                }
                if self.qdisc.backlog().packets > 0 && !self.held {
                    k = k.min(op_key(self.tx_end.max(self.clock), OP_TX, idx));
                }
            }
            Shaper::Trace { next: Some(t), .. } => k = k.min(op_key(*t, OP_OPPORTUNITY, idx)),
            Shaper::Trace { .. } => {}
        }
        k
    }

    /// When this link next starts a transmission or uses a trace opportunity that it
    /// knows of (`Time::MAX`: none): no departure of it leaves earlier.
    #[inline]
    pub fn next_start(&self) -> Time {
        if self.eager.is_some() {
            return Time::MAX;
        }
        match &self.shaper {
            Shaper::Rate { .. } if self.held => self.qdisc.next_timer().unwrap_or(Time::MAX).max(self.tx_end),
            Shaper::Rate { .. } if self.qdisc.backlog().packets > 0 => self.tx_end.max(self.clock),
            Shaper::Trace { next: Some(t), .. } => *t,
            _ => Time::MAX,
        }
    }

    /// Perform the operation of key `k` (from [`Link::next_op`]); departures go to `out`.
    pub fn do_op<O: Observe<P>>(&mut self, k: Key, obs: &mut O, out: &mut Vec<Sent<P>>) {
        let t = crate::engine::key_time(k);
        debug_assert!(t >= self.clock);
        self.clock = t;
        match crate::engine::key_event(k) >> OP_TAG_SHIFT {
            OP_TIMER => {
                let mut ctx = Ctx { now: t, rng: &mut self.rng, link_rate: self.rate };
                self.qdisc.on_timer(&mut ctx);
                // an AQM that held its packets back may release them now
                self.held = false;
            }
            OP_STEP => self.apply_step(t),
            OP_TX => self.start_tx(t, obs, out),
            _ => self.opportunity(t, obs, out),
        }
    }

    /// A packet arrives at `now` (no earlier than the link's last operation): the AQM
    /// takes it or drops it; an idle rate link starts sending it at once.
    #[inline]
    pub fn enqueue<O: Observe<P>>(&mut self, p: P, now: Time, obs: &mut O, out: &mut Vec<Sent<P>>) {
        debug_assert!(self.eager.is_none() && now >= self.clock);
        self.clock = now;
        let mut ctx = Ctx { now, rng: &mut self.rng, link_rate: self.rate };
        let info = obs.info(&p);
        match self.qdisc.enqueue(p, &mut ctx, &mut self.drops) {
            aqm::Admit::Queued => obs.enqueued(now, info, &self.qdisc, None),
            aqm::Admit::Marked(c) => obs.enqueued(now, info, &self.qdisc, Some(c)),
            // a refused packet is in the drop list
            aqm::Admit::Dropped(_) => {}
        }
        self.report_drops(now, obs);
        let queued = self.qdisc.backlog().packets > 0;
        match &mut self.shaper {
            // Mahimahi: an arriving packet can use the opportunities after its arrival
            Shaper::Trace { next, trace, in_tx, .. } => {
                if next.is_none() && queued {
                    debug_assert!(in_tx.is_none());
                    *next = Some(trace.next_after(now));
                }
            }
            Shaper::Rate { .. } => {
                if now >= self.tx_end && !self.held {
                    self.start_tx(now, obs, out);
                }
            }
        }
    }

    #[inline]
    fn report_drops<O: Observe<P>>(&mut self, t: Time, obs: &mut O) {
        if self.drops.is_empty() {
            return;
        }
        for d in self.drops.drain(..) {
            obs.dropped(t, &d, &self.qdisc);
            obs.recycle(d.pkt);
        }
    }

    /// Take the next packet from the queue (the AQM decides which, and may drop
    /// some on the way), observing the departure.
    #[inline]
    fn dequeue<O: Observe<P>>(&mut self, now: Time, obs: &mut O) -> Option<P> {
        let mut ctx = Ctx { now, rng: &mut self.rng, link_rate: self.rate };
        let dep = self.qdisc.dequeue(&mut ctx, &mut self.drops);
        let out = dep.map(|Departure { pkt, sojourn, marked }| {
            obs.dequeued(now, &pkt, sojourn, &self.qdisc, marked);
            pkt
        });
        self.report_drops(now, obs);
        out
    }

    /// Start the next transmission of a rate link at `now`.
    fn start_tx<O: Observe<P>>(&mut self, now: Time, obs: &mut O, out: &mut Vec<Sent<P>>) {
        if let Some(p) = self.dequeue(now, obs) {
            let end = self.begin_tx(p.size_bytes(), now);
            out.push(Sent { pkt: p, start: now, end });
        } else if self.qdisc.backlog().packets > 0 {
            // nothing may leave yet (a shaper): wait for the AQM's timer
            self.held = true;
        }
    }

    /// A trace link's delivery opportunities at `now` (Mahimahi `LinkQueue::
    /// rationalize`): each carries up to 1500 bytes, from one or several packets; a
    /// packet leaves when its last byte has been carried.
    fn opportunity<O: Observe<P>>(&mut self, now: Time, obs: &mut O, out: &mut Vec<Sent<P>>) {
        let Shaper::Trace { trace, .. } = &self.shaper else { unreachable!("an opportunity on a rate link") };
        let n = trace.count_upto(now) - trace.count_upto(Time::from_nanos(now.as_nanos() - 1));
        for _ in 0..n {
            let mut room = TRACE_BYTES;
            let mut carried = false;
            while room > 0 {
                let Shaper::Trace { in_tx, .. } = &self.shaper else { unreachable!() };
                if in_tx.is_none() {
                    let Some(p) = self.dequeue(now, obs) else { break };
                    let Shaper::Trace { in_tx, left, .. } = &mut self.shaper else { unreachable!() };
                    *left = p.size_bytes();
                    *in_tx = Some(p);
                }
                let Shaper::Trace { in_tx, left, .. } = &mut self.shaper else { unreachable!() };
                let amount = room.min(*left);
                *left -= amount;
                room -= amount;
                carried = true;
                if *left == 0 {
                    let p = in_tx.take().expect("a packet in transit");
                    self.tx_bytes += p.size_bytes() as u64;
                    self.tx_packets += 1;
                    out.push(Sent { pkt: p, start: now, end: now });
                }
            }
            if carried {
                if let Shaper::Trace { used, .. } = &mut self.shaper {
                    *used += 1;
                }
            }
        }
        let busy = self.qdisc.backlog().packets > 0;
        let Shaper::Trace { trace, next, in_tx, .. } = &mut self.shaper else { unreachable!() };
        *next = (busy || in_tx.is_some()).then(|| trace.next_after(now));
    }

    /// Serialization time of `bytes`, exact over many packets: the fraction of a
    /// nanosecond left over is carried to the next packet.
    #[inline]
    pub fn tx_duration(&mut self, bytes: u32) -> Duration {
        if self.ns_per_byte != 0 {
            debug_assert_eq!(self.tx_rem, 0);
            return Duration::from_nanos(bytes as u64 * self.ns_per_byte);
        }
        let r = self.rate.bps();
        // in 64 bits when it fits (always, for packets and rates below ~2 Tbps)
        let (q, rem) = match (bytes as u64).checked_mul(8_000_000_000).and_then(|b| b.checked_add(self.tx_rem)) {
            Some(num) => (num / r, num % r),
            None => {
                let num = bytes as u128 * 8_000_000_000 + self.tx_rem as u128;
                ((num / r as u128) as u64, (num % r as u128) as u64)
            }
        };
        self.tx_rem = rem;
        Duration::from_nanos(q)
    }

    /// Start transmitting `size` bytes at `now` on a rate link: returns the time the
    /// last bit leaves.
    #[inline]
    fn begin_tx(&mut self, size: u32, now: Time) -> Time {
        debug_assert!(now >= self.tx_end);
        let d = self.tx_duration(size);
        self.tx_end = now + d;
        self.tx_last_size = size;
        self.busy_ns += d.as_nanos();
        self.tx_bytes += size as u64;
        self.tx_packets += 1;
        self.tx_end
    }

    /// Apply the scheduled rate change due at `now`. A packet being serialized
    /// finishes at the old rate; the next one starts at the new rate.
    fn apply_step(&mut self, now: Time) {
        let Shaper::Rate { steps, next } = &mut self.shaper else { return };
        let Some(&(at, rate)) = steps.get(*next) else { return };
        debug_assert_eq!(at, now);
        *next += 1;
        self.cap_bitns += self.rate.bps() as u128 * now.saturating_since(self.cap_mark).as_nanos() as u128;
        self.cap_mark = now;
        self.rate = rate;
        self.ns_per_byte = exact_ns_per_byte(rate);
        self.tx_rem = 0;
    }

    // ---- counters ---------------------------------------------------------------

    /// Capacity offered up to `now`, in bits: the integral of the rate for a rate
    /// link, full opportunities before `now` for a trace link (see
    /// [`Link::opportunities`]).
    pub fn capacity_bits(&self, now: Time) -> u128 {
        match &self.shaper {
            Shaper::Rate { .. } => (self.cap_bitns + self.rate.bps() as u128 * now.saturating_since(self.cap_mark).as_nanos() as u128) / 1_000_000_000,
            Shaper::Trace { trace, .. } => Self::offered(trace, now) as u128 * TRACE_BYTES as u128 * 8,
        }
    }

    /// Opportunities before `now`: those at `now` come after a sample at `now`, as
    /// its other operations do, and count in the next interval with what they carry.
    fn offered(trace: &LinkTrace, now: Time) -> u64 {
        if now == Time::ZERO { 0 } else { trace.count_upto(Time::from_nanos(now.as_nanos() - 1)) }
    }

    /// Trace links: (opportunities offered before `now`, opportunities used).
    fn opportunities(&self, now: Time) -> (u64, u64) {
        match &self.shaper {
            Shaper::Rate { .. } => (0, 0),
            Shaper::Trace { trace, used, .. } => (Self::offered(trace, now), *used),
        }
    }

    /// (time spent transmitting, bytes sent, packets sent) up to `now`, as if the
    /// counters moved at the end of each transmission and busy time accrued during
    /// it: the part of a rate link's current transmission after `now` is taken out.
    /// Busy time is 0 on trace links, whose utilization counts opportunities.
    pub fn sent_until(&self, now: Time) -> (u64, u64, u64) {
        if self.is_trace() {
            return (0, self.tx_bytes, self.tx_packets);
        }
        if now < self.tx_end {
            let ahead = self.tx_end.saturating_since(now).as_nanos();
            (self.busy_ns - ahead, self.tx_bytes - self.tx_last_size as u64, self.tx_packets - 1)
        } else {
            (self.busy_ns, self.tx_bytes, self.tx_packets)
        }
    }

    /// What the queue holds (for an eager link: as of its last settlement).
    pub fn backlog(&self) -> Backlog {
        match &self.eager {
            Some(e) => e.backlog(&self.qdisc.stats),
            None => self.qdisc.backlog(),
        }
    }

    /// Packets held: queued, or being carried by a trace link. An eager link holds
    /// none: a booked packet is on its way to the next hop at once.
    pub fn held(&self) -> u64 {
        if self.eager.is_some() {
            return 0;
        }
        let carrying = matches!(&self.shaper, Shaper::Trace { in_tx: Some(_), .. }) as u64;
        self.qdisc.backlog().packets + carrying
    }

    /// Packet conservation inside the queue (see [`Qdisc::conserved`]); an eager
    /// link's queue is its settled backlog.
    pub fn conserved(&self) -> bool {
        match &self.eager {
            None => self.qdisc.conserved(),
            Some(_) => {
                let s = &self.qdisc.stats;
                s.arrivals == s.enqueued + s.dropped() && s.enqueued == s.dequeued + self.backlog().packets
            }
        }
    }

    /// Close the sampling interval ending at `now` (the link's state is that just
    /// before `now`: operations and arrivals at `now` come after a sample) and write
    /// its row, as link `index` of the series.
    pub fn sample(&mut self, now: Time, interval: Duration, index: u16, r: &mut LinkSeries) {
        self.settle(Time::from_nanos(now.as_nanos() - 1));
        let m = self.mark;
        let (busy, tx_bytes, tx_packets) = self.sent_until(now);
        let st = self.qdisc.stats;
        let cap_bits = self.capacity_bits(now);
        let (opp, opp_used) = self.opportunities(now);
        r.time_ns.push(now.as_nanos());
        r.link.push(index);
        r.capacity_bps.push(((cap_bits - m.cap_bits) * 1_000_000_000 / interval.as_nanos() as u128) as u64);
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
        let bl = self.backlog();
        r.backlog_bytes.push(bl.bytes);
        r.backlog_packets.push(bl.packets);
        let probe = self.qdisc.probe();
        r.drop_prob.push(probe.drop_prob.unwrap_or(f64::NAN));
        r.aqm_delay_ns.push(probe.delay_estimate.map_or(-1, |d| d.as_nanos() as i64));
        self.mark = Mark { busy, tx_bytes, tx_packets, arrivals: st.arrivals, drops: st.drops, marks: st.marked(), cap_bits, opp, opp_used };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Kind, Packet};
    use aqm::AqmSpec;

    fn link(rate: Rate, aqm: &AqmSpec, limit: Limit) -> Link<Packet> {
        Link::new(LinkConfig { name: "x", rate, delay: Duration::ZERO, limit, aqm, schedule: Vec::new(), trace: None, rng: crate::rng::stream(1, "x") })
    }

    fn pkt(uid: u64, size: u32) -> Packet {
        Packet::new(uid, 0, Kind::Data, size, Time::ZERO)
    }

    /// Drive a link in key order: operations, then each arrival at its time.
    fn drive(l: &mut Link<Packet>, arrivals: &[(u64, u32)], until: Time) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        let mut got = Vec::new();
        let mut arr = arrivals.iter().peekable();
        loop {
            let op = l.next_op(0);
            let next_arrival = arr.peek().map(|&&(t, _)| op_key(Time::from_nanos(t), 5, 0)).unwrap_or(u128::MAX);
            let k = op.min(next_arrival);
            if k == u128::MAX || crate::engine::key_time(k) > until {
                break;
            }
            if op < next_arrival {
                l.do_op(op, &mut NoObserver, &mut out);
            } else {
                let &(t, size) = arr.next().unwrap();
                l.enqueue(pkt(t, size), Time::from_nanos(t), &mut NoObserver, &mut out);
            }
            got.extend(out.drain(..).map(|s| (s.pkt.uid, s.start.as_nanos(), s.end.as_nanos())));
        }
        got
    }

    /// Counts the packets handed back after their drop.
    struct Recycler(Vec<u64>);
    impl Observe<Packet> for Recycler {
        type Info = ();
        fn info(&self, _p: &Packet) {}
        fn enqueued(&mut self, _t: Time, _p: (), _q: &Qdisc<Packet>, _m: Option<Cause>) {}
        fn dequeued(&mut self, _t: Time, _p: &Packet, _s: Duration, _q: &Qdisc<Packet>, _m: Option<Cause>) {}
        fn dropped(&mut self, _t: Time, _d: &Dropped<Packet>, _q: &Qdisc<Packet>) {}
        fn recycle(&mut self, p: Packet) {
            self.0.push(p.uid);
        }
    }

    #[test]
    fn a_dropped_packet_is_handed_back_to_the_observer() {
        // one packet on the wire, one waiting (buffer of 1): the third and fourth are refused
        let mut l = link(Rate::from_mbps(10), &AqmSpec::default(), Limit::packets(1));
        let mut obs = Recycler(Vec::new());
        for uid in 0..4 {
            l.enqueue(pkt(uid, 1500), Time::ZERO, &mut obs, &mut Vec::new());
        }
        assert_eq!(obs.0, [2, 3]);
        assert_eq!(l.stats().drops[0], 2);
    }

    #[test]
    fn serialization_is_exact_over_many_packets() {
        // 1500 B at 3 Mbps: 4 ms; 1000 B at 3 Mbps: 2.6667 ms. Three 1000 B packets
        // take exactly 8 ms in total.
        let mut l = link(Rate::from_mbps(3), &AqmSpec::default(), Limit::packets(10));
        let total: u64 = (0..3).map(|_| l.tx_duration(1000).as_nanos()).sum();
        assert_eq!(total, 8_000_000);
        assert_eq!(l.tx_duration(1500), Duration::from_millis(4));
    }

    #[test]
    fn a_rate_link_sends_back_to_back_and_refuses_what_overflows() {
        // 10 Mbps: 1500 B take 1.2 ms. Buffer of 2 packets (the one being sent is
        // not in the buffer). Four packets at t = 0: the first is sent at once, two
        // wait, the fourth finds 2 waiting and is refused; a fifth at 1.2 ms finds
        // one waiting (a start precedes an arrival at the same time).
        let ms = |x: f64| (x * 1e6) as u64;
        let mut l = link(Rate::from_mbps(10), &AqmSpec::default(), Limit::packets(2));
        let got = drive(&mut l, &[(0, 1500), (0, 1500), (0, 1500), (0, 1500), (ms(1.2), 1500), (ms(10.0), 500)], Time::from_secs(1));
        let starts: Vec<(u64, u64)> = got.iter().map(|&(_, s, e)| (s, e)).collect();
        assert_eq!(starts, vec![(0, ms(1.2)), (ms(1.2), ms(2.4)), (ms(2.4), ms(3.6)), (ms(3.6), ms(4.8)), (ms(10.0), ms(10.4))]);
        let st = l.stats();
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.drops[0]), (6, 5, 5, 1));
        assert!(l.conserved());
        assert_eq!(l.sent_until(Time::from_millis(11)), (5_200_000, 6500, 5));
        let info = l.info(l.stats());
        assert_eq!((info.name.as_str(), info.rate_bps, info.aqm.as_str(), info.limit_packets, info.stats.arrivals), ("x", 10_000_000, "droptail", Some(2), 6));
    }

    #[test]
    fn a_rate_step_changes_serialization_and_offered_capacity() {
        let mut l: Link<Packet> = Link::new(LinkConfig {
            name: "x",
            rate: Rate::from_mbps(50),
            delay: Duration::ZERO,
            limit: Limit::packets(10),
            aqm: &AqmSpec::default(),
            schedule: vec![(Time::from_secs(50), Rate::from_mbps(10))],
            trace: None,
            rng: crate::rng::stream(1, "x"),
        });
        assert_eq!(l.tx_duration(1500), Duration::from_micros(240));
        let k = l.next_op(0);
        assert_eq!(crate::engine::key_time(k), Time::from_secs(50));
        l.do_op(k, &mut NoObserver, &mut Vec::new());
        assert_eq!(l.next_op(0), u128::MAX);
        assert_eq!(l.tx_duration(1500), Duration::from_micros(1200));
        // 50 s at 50 Mbps + 10 s at 10 Mbps
        assert_eq!(l.capacity_bits(Time::from_secs(60)), 50 * 50_000_000 + 10 * 10_000_000);
    }

    #[test]
    fn a_trace_link_carries_packets_on_the_opportunities_after_their_arrival() {
        // opportunities at 1, 1, 3 and 10 ms, repeating every 10 ms: a 3000 B packet
        // arriving at 0.5 ms takes both opportunities at 1 ms; one arriving at
        // exactly 3 ms cannot use the opportunity at 3 ms (Mahimahi) and leaves on
        // the one at 10 ms.
        let trace = LinkTrace { file: None, ms: std::sync::Arc::new(vec![1, 1, 3, 10]) };
        let mut l: Link<Packet> = Link::new(LinkConfig {
            name: "x",
            rate: Rate::from_mbps(1),
            delay: Duration::ZERO,
            limit: Limit::packets(10),
            aqm: &AqmSpec::default(),
            schedule: Vec::new(),
            trace: Some(trace),
            rng: crate::rng::stream(1, "x"),
        });
        let got = drive(&mut l, &[(500_000, 3000), (3_000_000, 1500)], Time::from_millis(30));
        assert_eq!(got, vec![(500_000, 1_000_000, 1_000_000), (3_000_000, 10_000_000, 10_000_000)]);
    }

    #[test]
    fn an_opportunity_at_a_sample_s_time_counts_in_the_next_interval_with_what_it_carries() {
        // opportunities at 5, 10, 15, 20 ms, ...; three packets queued at 0; samples
        // every 10 ms, each taken before the operations at its own time
        let trace = LinkTrace { file: None, ms: std::sync::Arc::new(vec![5, 10]) };
        let mut l: Link<Packet> = Link::new(LinkConfig {
            name: "x",
            rate: Rate::from_mbps(1),
            delay: Duration::ZERO,
            limit: Limit::packets(10),
            aqm: &AqmSpec::default(),
            schedule: Vec::new(),
            trace: Some(trace),
            rng: crate::rng::stream(1, "x"),
        });
        let mut r = LinkSeries::default();
        let iv = Duration::from_millis(10);
        let before = |ms: u64| Time::from_nanos(ms * 1_000_000 - 1);
        assert_eq!(drive(&mut l, &[(0, 1500), (0, 1500), (0, 1500)], before(10)).len(), 1);
        l.sample(Time::from_millis(10), iv, 0, &mut r);
        assert_eq!(drive(&mut l, &[], before(20)).len(), 2);
        l.sample(Time::from_millis(20), iv, 0, &mut r);
        // [0, 10) ms: the opportunity at 5 ms; [10, 20) ms: those at 10 and 15 ms
        assert_eq!((r.opportunities, r.opportunities_used, r.tx_packets), (vec![1, 2], vec![1, 2], vec![1, 2]));
        assert_eq!(r.capacity_bps, [1_200_000, 2_400_000]);
    }
}
