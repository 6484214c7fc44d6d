//! # aqm: active queue management as pure state machines
//!
//! Every algorithm here is a queue discipline that owns its packets and decides, at
//! enqueue and at dequeue, which to keep, which to drop and which to mark. None of
//! them knows about an event loop, a socket or a simulator: time comes in as an
//! argument ([`Ctx::now`]), randomness comes in as an argument ([`Ctx::rng`]), and
//! periodic work is announced through [`Aqm::next_timer`] and run by [`Aqm::on_timer`].
//! The same code runs inside the aqmlab simulator and inside the userspace bottleneck
//! that carries real Linux traffic.
//!
//! Structure follows the Linux qdiscs (`include/net/pie.h`, `include/net/codel.h`):
//! parameters (plain serde data that double as the scenario schema), state, and
//! counters by cause kept apart.

pub mod ared;
pub mod blue;
pub mod cake;
pub mod cobalt;
pub mod codel;
pub mod droptail;
pub mod dualpi2;
pub mod fq_codel;
pub mod fq_pie;
pub mod madpie;
pub mod packet;
pub mod pie;
pub mod queue;
pub mod red;
pub mod red_tail;
pub mod spec;
pub mod time;
pub mod units;

pub use packet::{Ecn, QPacket, TcpAck, Transport};
pub use queue::{Backlog, Fifo, Limit, Queued};
pub use spec::{AnyAqm, AqmSpec, Qdisc};
pub use time::{Duration, Time};
pub use units::{Bytes, QueueLimit, Rate};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Why a packet was dropped or marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The buffer was full (drop-tail behaviour, in every AQM).
    Overflow,
    /// The AQM's probabilistic decision (RED's and PIE's coin).
    Random,
    /// A decision taken with probability one by a control law: MADPIE's deterministic
    /// drop, CoDel's drop schedule.
    Deterministic,
}

impl Cause {
    pub const ALL: [Cause; 3] = [Cause::Overflow, Cause::Random, Cause::Deterministic];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            Cause::Overflow => "overflow",
            Cause::Random => "random",
            Cause::Deterministic => "deterministic",
        }
    }
}

/// What an AQM call may use from the outside world.
pub struct Ctx<'a> {
    /// The current time.
    pub now: Time,
    /// This AQM's own random stream.
    pub rng: &'a mut dyn rand_core::Rng,
    /// The rate of the link the queue drains into, for algorithms that need it
    /// (Adaptive RED's automatic parameters, RED+Tail's service rates).
    pub link_rate: Rate,
}

impl Ctx<'_> {
    /// A uniform draw in `[0, 1)` with 53 bits of precision, identical on every platform.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A packet that left the queue without being transmitted.
#[derive(Debug)]
pub struct Dropped<P> {
    pub pkt: P,
    pub cause: Cause,
    /// Time it spent in the queue, for packets dropped from inside the queue (CoDel
    /// drops at dequeue; FQ-CoDel drops from the longest queue). `None` for packets
    /// refused at enqueue.
    pub sojourn: Option<Duration>,
}

/// The fate of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Queued,
    /// Queued with its CE codepoint set (RFC 3168) for this cause.
    Marked(Cause),
    /// Refused; the packet is in the drop list.
    Dropped(Cause),
}

/// A packet handed to the link.
#[derive(Debug)]
pub struct Departure<P> {
    pub pkt: P,
    pub sojourn: Duration,
    /// Set if the AQM marked it CE on the way out (CoDel marks at dequeue).
    pub marked: Option<Cause>,
}

/// Instantaneous internal state worth plotting.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probe {
    /// The current drop (or mark) probability, for probabilistic AQMs.
    pub drop_prob: Option<f64>,
    /// The AQM's own estimate of the queueing delay, where it keeps one.
    pub delay_estimate: Option<Duration>,
}

/// The value of a [`Counter`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// Events or packets.
    Count(u64),
    /// A time, in nanoseconds.
    Nanos(u64),
    /// A probability or another number in `[0, 1]`.
    Fraction(f64),
}

impl Value {
    /// The value as a number (nanoseconds for times).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Count(n) | Value::Nanos(n) => n as f64,
            Value::Fraction(x) => x,
        }
    }
}

/// A figure an AQM keeps beyond [`Stats`], by sub-queue: DualPI2's coupled and step
/// marks in its L queue, its classic drops in the C queue, and so on. A recorder shows
/// them by name without knowing the AQM; [`Stats`] stays the contract every AQM keeps
/// (counts by cause).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Counter {
    /// The sub-queue it belongs to (`"l"`, `"c"` for DualPI2), or `""` for the whole.
    pub queue: &'static str,
    pub name: &'static str,
    pub value: Value,
}

impl Counter {
    pub fn count(queue: &'static str, name: &'static str, n: u64) -> Counter {
        Counter { queue, name, value: Value::Count(n) }
    }
    pub fn nanos(queue: &'static str, name: &'static str, d: Duration) -> Counter {
        Counter { queue, name, value: Value::Nanos(d.as_nanos()) }
    }
    pub fn fraction(queue: &'static str, name: &'static str, x: f64) -> Counter {
        Counter { queue, name, value: Value::Fraction(x) }
    }
}

/// Per-sub-queue departure figures an AQM with several queues keeps for its
/// [`Counter`]s: packets dequeued, and their total and largest sojourn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SojournTally {
    pub packets: u64,
    pub total: Duration,
    pub max: Duration,
}

impl SojournTally {
    #[inline]
    pub fn add(&mut self, sojourn: Duration) {
        self.packets += 1;
        self.total = Duration::from_nanos(self.total.as_nanos() + sojourn.as_nanos());
        self.max = self.max.max(sojourn);
    }
    /// Counters `dequeued`, `sojourn_total`, `sojourn_max` of `queue`.
    pub fn counters(&self, queue: &'static str, out: &mut Vec<Counter>) {
        out.push(Counter::count(queue, "dequeued", self.packets));
        out.push(Counter::nanos(queue, "sojourn_total", self.total));
        out.push(Counter::nanos(queue, "sojourn_max", self.max));
    }
}

/// A queue discipline.
///
/// Contract, checked by the property tests in `tests/`: every packet given to
/// `enqueue` comes back exactly once, from `dequeue` or in a drop list; the backlog
/// never exceeds the limit; probabilities stay in `[0, 1]`.
pub trait Aqm<P: QPacket> {
    /// Offer an arriving packet. Packets dropped by this call (the arriving one, or
    /// others for schemes that drop from inside the queue) are pushed onto `drops`.
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit;
    /// Hand the next packet to the link, or `None` if nothing is left. Packets dropped
    /// on the way (CoDel) are pushed onto `drops`. An AQM that holds packets back
    /// (CAKE's shaper) returns `None` with a backlog; its [`Aqm::next_timer`] then says
    /// when to ask again.
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>>;
    fn backlog(&self) -> Backlog;
    /// When this AQM next needs [`Aqm::on_timer`] (PIE's periodic update), if ever.
    fn next_timer(&self) -> Option<Time> {
        None
    }
    fn on_timer(&mut self, _ctx: &mut Ctx<'_>) {}
    fn probe(&self) -> Probe {
        Probe::default()
    }
    /// Named figures beyond [`Stats`] (see [`Counter`]), appended to `out`; none by
    /// default. Called when a recorder samples, not per packet.
    fn counters(&self, _out: &mut Vec<Counter>) {}
}

/// What the registry needs from an AQM's file, implemented on its parameters (plain
/// serde data with `deny_unknown_fields` and defaults from the algorithm's source).
pub trait AqmParams: Clone + std::fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned {
    /// One-line description for `aqmlab list`.
    const TITLE: &'static str;
    /// The primary source, by authors and title (or RFC).
    const SOURCE: &'static str;
    /// One line per parameter: what it is and where its default comes from.
    const DOC: &'static [(&'static str, &'static str)];
    /// The state machine these parameters build.
    type Algo<P: QPacket>: Aqm<P>;
    /// Checks that cannot be expressed in types; the message starts with the field name.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// Whether it can mark ECN-capable packets CE instead of dropping them, as set (a
    /// scenario refuses an L4S sender on a path where nothing marks).
    fn marks_ecn(&self) -> bool {
        false
    }
    /// Fill in what parsing leaves implied (Adaptive RED with sliding thresholds turns
    /// them on when the table does not give them).
    fn complete(&mut self) {}
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P>;
    /// The heap a freshly built state machine holds before any packet arrives (a boxed
    /// state machine, per-flow queues, hash tables), for the memory estimate of a run.
    /// `tests/built_bytes.rs` checks it against what `build` allocates, for every kind.
    fn built_bytes<P: QPacket>(&self) -> usize {
        0
    }
}

/// A boxed AQM is an AQM (large state machines are boxed to keep [`AnyAqm`] small).
impl<P: QPacket, A: Aqm<P> + ?Sized> Aqm<P> for Box<A> {
    #[inline]
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        (**self).enqueue(pkt, ctx, drops)
    }
    #[inline]
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        (**self).dequeue(ctx, drops)
    }
    #[inline]
    fn backlog(&self) -> Backlog {
        (**self).backlog()
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        (**self).next_timer()
    }
    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        (**self).on_timer(ctx)
    }
    fn probe(&self) -> Probe {
        (**self).probe()
    }
    fn counters(&self, out: &mut Vec<Counter>) {
        (**self).counters(out)
    }
}

/// Apply a congestion signal to a packet: with ECN allowed and an ECN-capable packet,
/// set CE and queue it (RFC 3168 §5: mark where the router would otherwise drop);
/// otherwise drop it.
pub(crate) fn signal<P: QPacket>(mut pkt: P, cause: Cause, ecn_allowed: bool, drops: &mut Vec<Dropped<P>>) -> Result<P, Admit> {
    if ecn_allowed && pkt.ecn().is_ect() {
        pkt.set_ce();
        Ok(pkt)
    } else {
        drops.push(Dropped { pkt, cause, sojourn: None });
        Err(Admit::Dropped(cause))
    }
}

/// Counters by cause, kept by [`Qdisc`] for any AQM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Packets offered to `enqueue`.
    pub arrivals: u64,
    /// Packets accepted into the queue.
    pub enqueued: u64,
    /// Packets handed to the link.
    pub dequeued: u64,
    /// Drops by cause (index with [`Cause::index`]).
    pub drops: [u64; 3],
    /// CE marks by cause.
    pub marks: [u64; 3],
    pub bytes_enqueued: u64,
    pub bytes_dequeued: u64,
    /// Arrivals by ECN codepoint as they came (index with [`Ecn::index`]: Not-ECT,
    /// ECT(0), ECT(1), CE).
    pub ecn_arrived: [u64; 4],
    /// Departures by ECN codepoint as they left (after any CE mark).
    pub ecn_dequeued: [u64; 4],
}

impl Stats {
    pub fn dropped(&self) -> u64 {
        self.drops.iter().sum()
    }
    pub fn marked(&self) -> u64 {
        self.marks.iter().sum()
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the unit tests of every algorithm.
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[derive(Clone, Debug, PartialEq)]
    pub struct TestPkt {
        pub id: u64,
        pub size: u32,
        pub flow: u64,
        pub ecn: Ecn,
    }
    impl QPacket for TestPkt {
        fn size_bytes(&self) -> u32 {
            self.size
        }
        fn flow_key(&self) -> u64 {
            self.flow
        }
        fn ecn(&self) -> Ecn {
            self.ecn
        }
        fn set_ce(&mut self) {
            self.ecn = Ecn::Ce;
        }
    }
    pub fn pkt(id: u64, size: u32) -> TestPkt {
        TestPkt { id, size, flow: 0, ecn: Ecn::NotEct }
    }
    pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed)
    }
    pub fn ctx<'a>(now: Time, rng: &'a mut Xoshiro256PlusPlus) -> Ctx<'a> {
        Ctx { now, rng, link_rate: Rate::from_mbps(10) }
    }
}
