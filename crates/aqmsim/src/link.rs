//! A unidirectional link: an egress queue run by an AQM, a transmitter, and a
//! propagation pipe.
//!
//! The transmitter either serializes one packet at a time at the link rate, which
//! may follow a schedule of rate changes (Pan et al., PIE slides: 50 Mbps, then
//! 10 Mbps), or follows a Mahimahi trace (Netravali et al., "Mahimahi: accurate
//! record-and-replay for HTTP", USENIX ATC 2015): each line of the trace is a
//! millisecond timestamp at which up to 1500 bytes may leave, and the trace repeats
//! with the period of its last timestamp. As in Mahimahi's `LinkQueue`, an
//! opportunity can carry several small packets, a packet can take its bytes from
//! several opportunities, unused opportunities are lost, and a packet can only use
//! opportunities after its arrival.
//!
//! Packets leave the pipe in the order they entered it (the delay is the same for
//! all), so only the pipe's head needs an event: the FIFO fast path that keeps the
//! event heap small.
//!
//! A rate link puts a packet into the pipe as soon as its transmission starts, due
//! at the end of the transmission plus the delay (cut-through): its serialization
//! time is known then. The link stays busy until `tx_end`; only when packets wait
//! behind the transmitter is a wake-up scheduled at `tx_end` to start the next one.
//! A link whose queue is empty (most access links, an idle bottleneck) thus costs
//! no transmission-done event per packet. The counters still count a packet as sent
//! at the end of its transmission (see [`Link::sent_until`]).
//!
//! A DropTail rate link without a rate schedule and without packet records is run
//! *eagerly* ([`Eager`]): a FIFO that refuses only on overflow has no decision to
//! take later than the arrival, so the arrival books the packet's whole passage at
//! once — refused, or transmission start `max(arrival, end of the previous
//! transmission)`, end, and the time it reaches the next hop — with no queue object
//! and no wake-up events. If such a link's only input is one other link's pipe, the
//! simulator books a packet through it as soon as the packet enters that pipe (its
//! arrival time is then known and no earlier arrival can still come): one pipe
//! arrival event instead of two. A sampled link's counters and backlog are
//! *settled* lazily: each booking is kept until its time has come, so that the
//! per-interval samples see exactly what happened up to their time; an unsampled
//! link, read only at the end of the run, counts each packet when it books it.
//! At equal times a transmission start precedes an arrival (the departing packet no
//! longer counts toward the buffer), and a sample precedes both.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use aqm::{Backlog, Duration, Limit, Qdisc, Rate, Time};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::packet::Packet;
use crate::rng::SimRng;

/// Bytes one trace opportunity may carry (the and Mahimahi's MTU-sized
/// packet; Mahimahi's own constant is 1504, the largest TUN payload).
pub const TRACE_BYTES: u32 = 1500;

const MS: u64 = 1_000_000;

/// A Mahimahi trace: opportunity times in ms within one period, non-decreasing.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkTrace {
    /// The file it came from (absolute after parsing), or None if given inline.
    pub file: Option<String>,
    pub ms: Arc<Vec<u64>>,
}

impl LinkTrace {
    /// Parse Mahimahi's format: one non-negative integer per line, non-decreasing,
    /// the last one positive (Mahimahi `LinkQueue`'s checks).
    pub fn from_text(text: &str) -> Result<Vec<u64>, String> {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                if text.lines().skip(i).all(|l| l.trim().is_empty()) {
                    break; // trailing blank lines
                }
                return Err(format!("line {}: empty line", i + 1));
            }
            let ms: u64 = line.parse().map_err(|_| format!("line {}: \"{line}\" is not a whole number of milliseconds", i + 1))?;
            if v.last().is_some_and(|&l| ms < l) {
                return Err(format!("line {}: {ms} ms is before the previous line: timestamps must not decrease", i + 1));
            }
            v.push(ms);
        }
        Self::check(&v)?;
        Ok(v)
    }

    fn check(v: &[u64]) -> Result<(), String> {
        if v.is_empty() {
            return Err("no timestamps".into());
        }
        if v.windows(2).any(|w| w[1] < w[0]) {
            return Err("timestamps must not decrease".into());
        }
        if *v.last().unwrap() == 0 {
            return Err("the trace must last a nonzero time (its last timestamp is 0)".into());
        }
        Ok(())
    }

    /// From a scenario value: `"file.trace"`, `{ file = "file.trace" }`, or
    /// `{ ms = [1, 2, 3] }`. Errors are (dotted path, message).
    pub fn parse(path: &str, v: toml::Value, base_dir: Option<&Path>) -> Result<LinkTrace, (String, String)> {
        let file_err = |m: String| (format!("{path}.file"), m);
        let load = |name: &str| -> Result<LinkTrace, (String, String)> {
            let p = Path::new(name);
            let full = match base_dir {
                Some(b) if p.is_relative() => b.join(p),
                _ => p.to_path_buf(),
            };
            let text = std::fs::read_to_string(&full).map_err(|e| file_err(format!("cannot read \"{}\": {e}", full.display())))?;
            let ms = Self::from_text(&text).map_err(|m| file_err(format!("\"{}\": {m}", full.display())))?;
            let abs = std::path::absolute(&full).unwrap_or(full);
            Ok(LinkTrace { file: Some(abs.display().to_string()), ms: Arc::new(ms) })
        };
        match v {
            toml::Value::String(name) => load(&name),
            toml::Value::Table(mut t) => {
                let out = match (t.remove("file"), t.remove("ms")) {
                    (Some(toml::Value::String(name)), None) => load(&name)?,
                    (None, Some(toml::Value::Array(a))) => {
                        let ms = a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| match x {
                                toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
                                other => Err((format!("{path}.ms[{i}]"), format!("expected a whole number of milliseconds, got {other}"))),
                            })
                            .collect::<Result<Vec<u64>, _>>()?;
                        Self::check(&ms).map_err(|m| (format!("{path}.ms"), m))?;
                        LinkTrace { file: None, ms: Arc::new(ms) }
                    }
                    (Some(other), None) => return Err(file_err(format!("expected a file name, got {other}"))),
                    _ => return Err((path.to_string(), "expected a file name, { file = \"...\" } or { ms = [...] }".into())),
                };
                if let Some(k) = t.keys().next() {
                    return Err((format!("{path}.{k}"), "unknown field, expected `file` or `ms`".into()));
                }
                Ok(out)
            }
            other => Err((path.to_string(), format!("expected a file name or a table, got {}", other.type_str()))),
        }
    }

    pub fn period_ns(&self) -> u64 {
        *self.ms.last().unwrap() * MS
    }

    /// The mean rate: every opportunity used by a full 1500-byte packet.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.ms.len() as u128 * TRACE_BYTES as u128 * 8 * 1000;
        Rate::from_bps((bits / *self.ms.last().unwrap() as u128) as u64)
    }

    /// Opportunities at times `<= t`.
    pub fn count_upto(&self, t: Time) -> u64 {
        let p = self.period_ns();
        let (c, r) = (t.as_nanos() / p, t.as_nanos() % p);
        c * self.ms.len() as u64 + self.ms.partition_point(|&m| m * MS <= r) as u64
    }

    /// The first opportunity strictly after `t`.
    pub fn next_after(&self, t: Time) -> Time {
        let p = self.period_ns();
        let (c, r) = (t.as_nanos() / p, t.as_nanos() % p);
        let i = self.ms.partition_point(|&m| m * MS <= r);
        Time::from_nanos(if i < self.ms.len() { c * p + self.ms[i] * MS } else { (c + 1) * p + self.ms[0] * MS })
    }
}

impl Serialize for LinkTrace {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match &self.file {
            Some(f) => m.serialize_entry("file", f)?,
            None => m.serialize_entry("ms", &*self.ms)?,
        }
        m.end()
    }
}

/// How the transmitter takes packets from the queue.
pub enum Shaper {
    /// Serialize at `Link::rate`, with optional rate changes at given times.
    Rate { steps: Vec<(Time, Rate)>, next: usize },
    /// Mahimahi trace opportunities.
    Trace {
        trace: LinkTrace,
        /// Bytes of the packet in transmission (`Link::in_tx`) still to send.
        left: u32,
        /// An opportunity event is scheduled.
        pending: bool,
        /// Opportunities that carried at least one byte.
        used: u64,
    },
}

/// 8e9 / rate in ns per byte if that is a whole number, else 0.
fn exact_ns_per_byte(rate: Rate) -> u64 {
    let r = rate.bps();
    if r > 0 && 8_000_000_000 % r == 0 { 8_000_000_000 / r } else { 0 }
}

/// An eager link's arrival into its counters: refused on overflow, or enqueued.
#[inline]
fn count_arrival(st: &mut aqm::Stats, refused: bool, size: u32) {
    st.arrivals += 1;
    if refused {
        st.drops[aqm::Cause::Overflow.index()] += 1;
    } else {
        st.enqueued += 1;
        st.bytes_enqueued += size as u64;
    }
}

/// One booked passage through an eager link.
#[derive(Clone, Copy, Debug)]
struct Booked {
    arrive: Time,
    /// Transmission start (for a refused packet: when it would have started, which
    /// keeps `start` non-decreasing along the book).
    start: Time,
    end: Time,
    size: u32,
    refused: bool,
    /// Admitted packets and bytes booked before this one.
    before: (u64, u64),
}

/// The state of an eagerly run DropTail link (see the module doc).
#[derive(Debug, Default)]
pub struct Eager {
    /// Bookings not yet settled, in arrival order.
    book: VecDeque<Booked>,
    /// Entries at the front of `book` whose arrival the counters already hold.
    arrived: usize,
    /// Entries at the front of `book` that had started by the last booked arrival
    /// (the rest wait behind the transmitter then): the next booking's backlog
    /// starts here.
    started: usize,
    /// The end of the last booked transmission.
    horizon: Time,
    /// Admitted packets and bytes booked since the start.
    total: (u64, u64),
    /// Arrived (settled) and not yet started: the queue at the last settlement.
    queued: Backlog,
    last_arrive: Time,
    /// Only a sampled link keeps the book; an unsampled one (whose counters are read
    /// at the end of the run only) counts each packet when it books it, up to
    /// `run_end`, and keeps just the transmission starts still ahead, to know its
    /// backlog.
    unbooked: Option<Unbooked>,
}

#[derive(Debug)]
struct Unbooked {
    run_end: Time,
    /// (start, size) of admitted packets that waited at their arrival, oldest
    /// first; those that had started by the last booked arrival are gone.
    ahead: VecDeque<(Time, u32)>,
    ahead_bytes: u64,
}

impl Eager {
    /// Bookings not yet settled.
    pub fn booked(&self) -> usize {
        self.book.len()
    }
}

pub struct Link {
    pub name: String,
    /// The current rate (for a trace link: the trace's mean rate).
    pub rate: Rate,
    pub delay: Duration,
    pub limit: Limit,
    pub qdisc: Qdisc<Packet>,
    pub rng: SimRng,
    pub shaper: Shaper,
    /// Index in the packet log, if this link's packet events are recorded.
    pub log: Option<u8>,
    /// Index in the link time series, if sampled.
    pub sampled: bool,
    /// Trace links: the packet being carried by opportunities.
    pub in_tx: Option<Packet>,
    pub tx_started: Time,
    /// Rate links: the end of the current (or last) transmission; the packet is
    /// already in the pipe. The transmitter is busy while `now < tx_end`.
    pub tx_end: Time,
    /// Size of the last transmission started on a rate link (it is in progress
    /// while `now < tx_end`).
    tx_last_size: u32,
    /// A wake-up event is scheduled at `tx_end` to start the next transmission.
    pub wake_pending: bool,
    tx_rem: u64,
    /// Nanoseconds per byte when the rate divides 8e9 (10 Mbps: 800; 1 Gbps: 8):
    /// serialization is then one multiplication, exact; 0 otherwise.
    ns_per_byte: u64,
    pub pipe: VecDeque<(Time, Packet)>,
    /// Time of the pending AQM timer event, if one is scheduled.
    pub aqm_timer_at: Option<Time>,
    /// Time spent transmitting, and bytes and packets sent, counting the rate
    /// link's current transmission whole (see [`Link::sent_until`]).
    busy_ns: u64,
    tx_bytes: u64,
    tx_packets: u64,
    /// Capacity offered so far by a rate link, in bit-nanoseconds / 1e9 (bits ×
    /// 1e9), up to `cap_mark`.
    cap_bitns: u128,
    cap_mark: Time,
    /// Set for an eagerly run DropTail link ([`Link::make_eager`]).
    pub eager: Option<Box<Eager>>,
    /// An eager link fed only by this link's pipe: packets are booked through it
    /// when they enter that pipe.
    pub chain_from: Option<u16>,
    /// Which of the links this pipe feeds are booked through from it.
    pub chain_next: ChainNext,
}

/// The links a pipe feeds that are booked through from it (see `chain_from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainNext {
    None,
    /// It feeds one link, booked through.
    To(u16),
    /// Some of the links it feeds are booked through: look up the packet's path.
    ByPath,
}

impl Link {
    pub fn new(name: &str, rate: Rate, delay: Duration, limit: Limit, qdisc: Qdisc<Packet>, rng: SimRng) -> Link {
        Link {
            name: name.to_string(),
            rate,
            delay,
            limit,
            qdisc,
            rng,
            shaper: Shaper::Rate { steps: Vec::new(), next: 0 },
            log: None,
            sampled: false,
            in_tx: None,
            tx_started: Time::ZERO,
            tx_end: Time::ZERO,
            tx_last_size: 0,
            wake_pending: false,
            tx_rem: 0,
            ns_per_byte: exact_ns_per_byte(rate),
            pipe: VecDeque::new(),
            aqm_timer_at: None,
            busy_ns: 0,
            tx_bytes: 0,
            tx_packets: 0,
            cap_bitns: 0,
            cap_mark: Time::ZERO,
            eager: None,
            chain_from: None,
            chain_next: ChainNext::None,
        }
    }

    /// Can this link be run eagerly: a DropTail rate link with no rate schedule?
    pub fn can_be_eager(&self) -> bool {
        self.qdisc.aqm.kind() == "droptail" && matches!(&self.shaper, Shaper::Rate { steps, .. } if steps.is_empty())
    }

    /// Run this link eagerly; `run_end` is the end of the run (an unsampled link
    /// counts a packet as sent when it starts by then).
    pub fn make_eager(&mut self, run_end: Time) {
        debug_assert!(self.can_be_eager());
        let unbooked = (!self.sampled).then(|| Unbooked { run_end, ahead: VecDeque::new(), ahead_bytes: 0 });
        self.eager = Some(Box::new(Eager { unbooked, ..Default::default() }));
    }

    /// Book a packet of `size` bytes arriving at `at` (no earlier than any booked
    /// arrival) on an eager link. DropTail's rule on the backlog at `at` (the
    /// admitted packets whose transmission has not started by then): `Ok((start,
    /// end))` of its transmission, or `Err(backlog bytes)` if refused.
    #[inline]
    pub fn book(&mut self, at: Time, size: u32) -> Result<(Time, Time), u64> {
        let e = self.eager.as_deref_mut().expect("an eager link");
        debug_assert!(at >= e.last_arrive, "arrivals at an eager link are booked in time order");
        e.last_arrive = at;
        let backlog = match &mut e.unbooked {
            Some(u) => {
                while let Some(&(_, size)) = u.ahead.front().filter(|a| a.0 <= at) {
                    u.ahead.pop_front();
                    u.ahead_bytes -= size as u64;
                }
                Backlog { packets: u.ahead.len() as u64, bytes: u.ahead_bytes }
            }
            None => {
                // arrivals come in time order, so the first entry still waiting moves forward
                let mut i = e.started;
                while e.book.get(i).is_some_and(|b| b.start <= at) {
                    i += 1;
                }
                e.started = i;
                e.book.get(i).map_or(Backlog::default(), |b| Backlog { packets: e.total.0 - b.before.0, bytes: e.total.1 - b.before.1 })
            }
        };
        let (start, before) = (at.max(e.horizon), e.total);
        let refused = self.limit.overflows(backlog, size);
        let end = if refused { start } else { start + self.tx_duration(size) };
        let e = self.eager.as_deref_mut().expect("an eager link");
        if let Some(u) = &mut e.unbooked {
            let st = &mut self.qdisc.stats;
            count_arrival(st, refused, size);
            if refused {
                return Err(backlog.bytes);
            }
            if start <= u.run_end {
                st.dequeued += 1;
                st.bytes_dequeued += size as u64;
            }
            if start > at {
                // it waits: later arrivals before its start see it in the buffer
                u.ahead.push_back((start, size));
                u.ahead_bytes += size as u64;
            }
            e.horizon = end;
            return Ok((start, end));
        }
        e.book.push_back(Booked { arrive: at, start, end, size, refused, before });
        if refused {
            return Err(backlog.bytes);
        }
        e.horizon = end;
        e.total.0 += 1;
        e.total.1 += size as u64;
        Ok((start, end))
    }

    /// Bring an eager link's counters, backlog and transmitter up to `t` inclusive:
    /// arrivals (admitted or refused) at or before `t` are counted, and
    /// transmissions that started at or before `t` leave the queue.
    pub fn settle(&mut self, t: Time) {
        let Some(e) = self.eager.as_deref_mut() else { return };
        let st = &mut self.qdisc.stats;
        while let Some(b) = e.book.get(e.arrived).filter(|b| b.arrive <= t) {
            count_arrival(st, b.refused, b.size);
            if !b.refused {
                e.queued.packets += 1;
                e.queued.bytes += b.size as u64;
            }
            e.arrived += 1;
        }
        while e.arrived > 0 {
            let b = e.book[0];
            if !b.refused {
                if b.start > t {
                    break;
                }
                st.dequeued += 1;
                st.bytes_dequeued += b.size as u64;
                e.queued.packets -= 1;
                e.queued.bytes -= b.size as u64;
                self.tx_started = b.start;
                self.tx_end = b.end;
                self.tx_last_size = b.size;
                self.busy_ns += (b.end - b.start).as_nanos();
                self.tx_bytes += b.size as u64;
                self.tx_packets += 1;
            }
            e.book.pop_front();
            e.arrived -= 1;
            e.started = e.started.saturating_sub(1);
        }
    }

    /// What the queue holds (for an eager link: as of its last settlement).
    pub fn backlog(&self) -> Backlog {
        match &self.eager {
            Some(e) if e.unbooked.is_some() => {
                // counted when booked: what has not started by the end of the run
                let s = &self.qdisc.stats;
                Backlog { packets: s.enqueued - s.dequeued, bytes: s.bytes_enqueued - s.bytes_dequeued }
            }
            Some(e) => e.queued,
            None => self.qdisc.backlog(),
        }
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

    pub fn with_schedule(mut self, steps: Vec<(Time, Rate)>) -> Link {
        self.shaper = Shaper::Rate { steps, next: 0 };
        self
    }

    pub fn with_trace(mut self, trace: LinkTrace) -> Link {
        self.rate = trace.mean_rate();
        self.ns_per_byte = exact_ns_per_byte(self.rate);
        self.shaper = Shaper::Trace { trace, left: 0, pending: false, used: 0 };
        self
    }

    pub fn is_trace(&self) -> bool {
        matches!(self.shaper, Shaper::Trace { .. })
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

    /// The time of the next scheduled rate change, if any.
    pub fn next_step_at(&self) -> Option<Time> {
        match &self.shaper {
            Shaper::Rate { steps, next } => steps.get(*next).map(|s| s.0),
            Shaper::Trace { .. } => None,
        }
    }

    /// Apply the scheduled rate change due at `now`. A packet being serialized
    /// finishes at the old rate; the next one starts at the new rate.
    pub fn apply_step(&mut self, now: Time) {
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

    /// Capacity offered up to `now`, in bits: the integral of the rate for a rate
    /// link, full opportunities for a trace link.
    pub fn capacity_bits(&self, now: Time) -> u128 {
        match &self.shaper {
            Shaper::Rate { .. } => {
                (self.cap_bitns + self.rate.bps() as u128 * now.saturating_since(self.cap_mark).as_nanos() as u128) / 1_000_000_000
            }
            Shaper::Trace { trace, .. } => trace.count_upto(now) as u128 * TRACE_BYTES as u128 * 8,
        }
    }

    /// Trace links: (opportunities offered up to `now`, opportunities used).
    pub fn opportunities(&self, now: Time) -> (u64, u64) {
        match &self.shaper {
            Shaper::Rate { .. } => (0, 0),
            Shaper::Trace { trace, used, .. } => (trace.count_upto(now), *used),
        }
    }

    /// Is a rate link's transmitter busy at `now`?
    pub fn is_busy(&self, now: Time) -> bool {
        now < self.tx_end
    }

    /// Start transmitting `p` on a rate link at `now`: returns the time its last
    /// bit leaves (the packet then propagates for `delay`).
    pub fn begin_tx(&mut self, p: &Packet, now: Time) -> Time {
        debug_assert!(!self.is_busy(now));
        let d = self.tx_duration(p.size);
        self.tx_started = now;
        self.tx_end = now + d;
        self.tx_last_size = p.size;
        self.busy_ns += d.as_nanos();
        self.tx_bytes += p.size as u64;
        self.tx_packets += 1;
        self.tx_end
    }

    /// A trace link finished carrying a packet at `now`.
    pub fn count_sent(&mut self, p: &Packet) {
        self.tx_bytes += p.size as u64;
        self.tx_packets += 1;
    }

    /// (time spent transmitting, bytes sent, packets sent) up to `now`, as if the
    /// counters moved at the end of each transmission and busy time accrued during
    /// it: the part of a rate link's current transmission after `now` is taken out.
    /// Busy time is 0 on trace links, whose utilization counts opportunities.
    pub fn sent_until(&self, now: Time) -> (u64, u64, u64) {
        if self.is_trace() {
            return (0, self.tx_bytes, self.tx_packets);
        }
        if self.is_busy(now) {
            let ahead = self.tx_end.saturating_since(now).as_nanos();
            (self.busy_ns - ahead, self.tx_bytes - self.tx_last_size as u64, self.tx_packets - 1)
        } else {
            (self.busy_ns, self.tx_bytes, self.tx_packets)
        }
    }

    /// Packets held by this link: queued, being transmitted, or propagating.
    pub fn in_flight(&self) -> u64 {
        self.qdisc.backlog().packets + self.in_tx.is_some() as u64 + self.pipe.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::AqmSpec;

    fn link(rate: Rate) -> Link {
        Link::new("x", rate, Duration::ZERO, Limit::packets(10), Qdisc::new(&AqmSpec::default(), Limit::packets(10)), crate::rng::stream(1, "x"))
    }

    #[test]
    fn serialization_is_exact_over_many_packets() {
        // 1500 B at 3 Mbps: 4 ms; 1000 B at 3 Mbps: 2.6667 ms. Three 1000 B packets
        // take exactly 8 ms in total.
        let mut l = link(Rate::from_mbps(3));
        let total: u64 = (0..3).map(|_| l.tx_duration(1000).as_nanos()).sum();
        assert_eq!(total, 8_000_000);
        assert_eq!(l.tx_duration(1500), Duration::from_millis(4));
    }

    #[test]
    fn an_eager_link_books_droptail_passages_and_settles_them_in_time() {
        // 10 Mbps: 1500 B take 1.2 ms. Buffer of 2 packets (the one being sent is
        // not in the buffer). Four packets at t = 0: the first is sent at once, two
        // wait (starts 1.2 and 2.4 ms), the fourth finds 2 waiting and is refused.
        let ms = |x: f64| Time::from_nanos((x * 1e6) as u64);
        let mut l = link(Rate::from_mbps(10));
        l.limit = Limit::packets(2);
        l.sampled = true;
        l.make_eager(Time::MAX);
        assert_eq!(l.book(ms(0.0), 1500), Ok((ms(0.0), ms(1.2))));
        assert_eq!(l.book(ms(0.0), 1500), Ok((ms(1.2), ms(2.4))));
        assert_eq!(l.book(ms(0.0), 1500), Ok((ms(2.4), ms(3.6))));
        assert_eq!(l.book(ms(0.0), 1500), Err(3000));
        // at 1.2 ms the second packet starts (a start precedes an arrival at the
        // same time): one waits, so this one is admitted, to start at 3.6 ms
        assert_eq!(l.book(ms(1.2), 1500), Ok((ms(3.6), ms(4.8))));
        // at 10 ms the link is idle: sent at once
        assert_eq!(l.book(ms(10.0), 500), Ok((ms(10.0), ms(10.4))));
        // just before 1.2 ms: 4 arrivals, 1 refused, 1 sent (busy until 1.2 ms), 2 waiting
        l.settle(Time::from_nanos(ms(1.2).as_nanos() - 1));
        let st = l.qdisc.stats;
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.drops[0]), (4, 3, 1, 1));
        assert_eq!(l.backlog(), Backlog { packets: 2, bytes: 3000 });
        assert_eq!(l.sent_until(ms(1.0)), (1_000_000, 0, 0), "the first transmission is under way");
        // at 1.2 ms: the fifth arrived, the second started; the first has been sent
        l.settle(ms(1.2));
        let st = l.qdisc.stats;
        assert_eq!((st.arrivals, st.enqueued, st.dequeued), (5, 4, 2));
        assert_eq!(l.backlog(), Backlog { packets: 2, bytes: 3000 });
        assert_eq!(l.sent_until(ms(1.2)), (1_200_000, 1500, 1));
        assert!(l.conserved());
        // at the end everything has left
        l.settle(ms(20.0));
        let st = l.qdisc.stats;
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.bytes_dequeued), (6, 5, 5, 6500));
        assert_eq!(l.backlog(), Backlog::default());
        assert_eq!(l.sent_until(ms(20.0)), (5_200_000, 6500, 5));
        assert!(l.conserved());
    }

    #[test]
    fn an_unsampled_eager_link_decides_alike_and_counts_up_to_the_end_of_the_run() {
        // the bookings of the test above, on a link read only at the end of a run
        // that ends at 3.6 ms: the same decisions; the packet starting at 10 ms is
        // still queued at the end
        let ms = |x: f64| Time::from_nanos((x * 1e6) as u64);
        let mut l = link(Rate::from_mbps(10));
        l.limit = Limit::packets(2);
        l.make_eager(ms(3.6));
        let got: Vec<_> = [(0.0, 1500), (0.0, 1500), (0.0, 1500), (0.0, 1500), (1.2, 1500), (10.0, 500)].iter().map(|&(t, b)| l.book(ms(t), b)).collect();
        assert_eq!(got, vec![Ok((ms(0.0), ms(1.2))), Ok((ms(1.2), ms(2.4))), Ok((ms(2.4), ms(3.6))), Err(3000), Ok((ms(3.6), ms(4.8))), Ok((ms(10.0), ms(10.4)))]);
        l.settle(ms(3.6));
        let st = l.qdisc.stats;
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.drops[0], st.bytes_dequeued), (6, 5, 4, 1, 6000));
        assert_eq!(l.backlog(), Backlog { packets: 1, bytes: 500 });
        assert!(l.conserved());
    }

    #[test]
    fn a_rate_step_changes_serialization_and_offered_capacity() {
        let mut l = link(Rate::from_mbps(50)).with_schedule(vec![(Time::from_secs(50), Rate::from_mbps(10))]);
        assert_eq!(l.tx_duration(1500), Duration::from_micros(240));
        assert_eq!(l.next_step_at(), Some(Time::from_secs(50)));
        l.apply_step(Time::from_secs(50));
        assert_eq!(l.next_step_at(), None);
        assert_eq!(l.tx_duration(1500), Duration::from_micros(1200));
        // 50 s at 50 Mbps + 10 s at 10 Mbps
        assert_eq!(l.capacity_bits(Time::from_secs(60)), 50 * 50_000_000 + 10 * 10_000_000);
    }

    #[test]
    fn trace_text_follows_mahimahi_s_rules() {
        assert_eq!(LinkTrace::from_text("1\n1\n3\n10\n\n").unwrap(), vec![1, 1, 3, 10]);
        assert!(LinkTrace::from_text("5\n3\n").unwrap_err().contains("line 2"));
        assert!(LinkTrace::from_text("0\n0\n").unwrap_err().contains("nonzero"));
        assert!(LinkTrace::from_text("1\n\n2\n").unwrap_err().contains("line 2"));
        assert!(LinkTrace::from_text("1.5\n").unwrap_err().contains("line 1"));
        assert!(LinkTrace::from_text("").is_err());
    }

    #[test]
    fn trace_opportunities_repeat_with_the_period_of_the_last_line() {
        let t = LinkTrace { file: None, ms: Arc::new(vec![1, 1, 3, 10]) };
        // 4 opportunities per 10 ms: 4 * 1500 * 8 bits / 10 ms = 4.8 Mbps
        assert_eq!(t.mean_rate().bps(), 4_800_000);
        assert_eq!(t.count_upto(Time::ZERO), 0);
        assert_eq!(t.count_upto(Time::from_millis(1)), 2);
        assert_eq!(t.count_upto(Time::from_micros(2999)), 2);
        assert_eq!(t.count_upto(Time::from_millis(10)), 4);
        assert_eq!(t.count_upto(Time::from_millis(11)), 6);
        assert_eq!(t.count_upto(Time::from_millis(1000)), 400);
        assert_eq!(t.next_after(Time::ZERO), Time::from_millis(1));
        assert_eq!(t.next_after(Time::from_millis(1)), Time::from_millis(3));
        assert_eq!(t.next_after(Time::from_millis(3)), Time::from_millis(10));
        assert_eq!(t.next_after(Time::from_millis(10)), Time::from_millis(11));
        assert_eq!(t.next_after(Time::from_micros(10_500)), Time::from_millis(11));
    }
}
