//! The operation-sequence harness shared by the property tests (`tests/properties.rs`)
//! and the long-running fuzz target (`fuzz/fuzz_targets/aqm.rs`), in the manner of
//! s2n-quic's congestion-controller fuzz targets: random arrivals, departures and the
//! time between them go through a [`Qdisc`]; after each step the invariants hold.
//!
//! * every packet offered comes back exactly once: dequeued, or dropped with a cause;
//! * the backlog never exceeds the buffer limit;
//! * a drop probability, where the AQM has one, stays in [0, 1];
//! * the counters account for every packet (`Qdisc::conserved`), the drops counted by
//!   cause are the drops handed back with that cause, and the marks counted are the
//!   marks reported, one for each packet delivered set CE, only ever on ECN-capable
//!   ones (ECT or already CE); the counters by ECN codepoint are the codepoints
//!   offered and the codepoints that left.
//!
//! Parameters come from the registry ([`AqmSpec::KINDS`], [`AqmSpec::default_for`],
//! [`AqmSpec::from_kind`]), so an AQM added to the registry is covered without a line
//! here: [`mutate_params`] derives random parameter tables from a kind's defaults.

#![allow(dead_code)] // each includer uses a part

use std::collections::BTreeMap;

use aqm::{Admit, AqmSpec, Ctx, Duration, Ecn, Limit, QPacket, Qdisc, Rate, Time, Transport};
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A test packet: it counts the CE marks set on it.
#[derive(Clone, Debug)]
pub struct P {
    pub id: u64,
    pub size: u32,
    pub flow: u64,
    pub ecn: Ecn,
    pub ce_sets: u32,
    /// `set_ce` was called on a Not-ECT packet (a contract breach).
    pub ce_on_not_ect: bool,
}

impl QPacket for P {
    fn size_bytes(&self) -> u32 {
        self.size
    }
    fn flow_key(&self) -> u64 {
        self.flow
    }
    fn transport(&self) -> Transport {
        // flow 7 is a UDP flow (RED+Tail sends it to its drop-tail queue)
        if self.flow == 7 { Transport::Udp } else { Transport::Tcp }
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) {
        // CE again on a CE packet is allowed (Linux's INET_ECN_set_ce succeeds on it,
        // as DualPI2 does for an L4S packet already marked upstream)
        if self.ecn == Ecn::NotEct {
            self.ce_on_not_ect = true;
        }
        self.ecn = Ecn::Ce;
        self.ce_sets += 1;
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    /// time passes (µs), then a packet arrives; `ecn`: 0 not-ECT, 1 ECT(0), 2 ECT(1), 3 CE
    Arrive { gap_us: u32, size: u32, flow: u8, ecn: u8 },
    /// time passes, then the link takes a packet
    Depart { gap_us: u32 },
}

fn ecn_of(code: u8) -> Ecn {
    match code % 4 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect0,
        2 => Ecn::Ect1,
        _ => Ecn::Ce,
    }
}

/// What a sequence did: each packet's fate in the order they left, and the counts.
#[derive(Debug, PartialEq, Eq)]
pub struct Played {
    pub fate: Vec<(u64, &'static str)>,
    pub drops_by_cause: BTreeMap<&'static str, u64>,
    pub marks: u64,
}

macro_rules! check {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*));
        }
    };
}

fn leave(out: &mut [Option<P>], fate: &mut Vec<(u64, &'static str)>, p: P, how: &'static str) -> Result<(), String> {
    let id = p.id as usize;
    check!(out[id].is_none(), "packet {id} came back twice ({how}, earlier {:?})", fate.iter().find(|f| f.0 == p.id));
    fate.push((p.id, how));
    out[id] = Some(p);
    Ok(())
}

/// Play `ops` through a queue of `spec` with `limit`, then drain it; `Err` names the
/// first invariant broken.
pub fn play(spec: &AqmSpec, limit: Limit, ops: &[Op], seed: u64) -> Result<Played, String> {
    let mut q: Qdisc<P> = Qdisc::new(spec, limit);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let rate = Rate::from_mbps(10);
    let mut now = Time::ZERO;
    let mut drops = Vec::new();
    let mut fate: Vec<(u64, &'static str)> = Vec::new();
    let mut out: Vec<Option<P>> = Vec::new(); // by id: the packet as it left
    let mut by_cause: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut ect_in = Vec::new();
    let mut offered_by_ecn = [0u64; 4];
    // by id: the marks the queue reported for the packet (an admission marked, a
    // departure marked)
    let mut counted: Vec<u32> = Vec::new();
    for op in ops {
        let gap = match op {
            Op::Arrive { gap_us, .. } | Op::Depart { gap_us } => Duration::from_micros(*gap_us as u64),
        };
        let target = now + gap;
        // timers due on the way
        let mut last = None;
        while let Some(t) = q.next_timer() {
            if t > target {
                break;
            }
            check!(last.is_none_or(|l| t > l), "the timer does not move on: due at {t:?} again after firing then");
            last = Some(t);
            now = now.max(t);
            q.on_timer(&mut Ctx { now, rng: &mut rng, link_rate: rate });
        }
        now = target;
        let mut ctx = Ctx { now, rng: &mut rng, link_rate: rate };
        match *op {
            Op::Arrive { size, flow, ecn, .. } => {
                let e = ecn_of(ecn);
                let id = out.len() as u64;
                out.push(None);
                ect_in.push(e.is_ect());
                counted.push(0);
                offered_by_ecn[e.index()] += 1;
                let a = q.enqueue(P { id, size: size.max(1), flow: flow as u64, ecn: e, ce_sets: 0, ce_on_not_ect: false }, &mut ctx, &mut drops);
                if let Admit::Marked(_) = a {
                    check!(e != Ecn::NotEct, "packet {id} ({e:?}) marked: only ECN-capable packets are marked");
                    counted[id as usize] += 1;
                }
            }
            Op::Depart { .. } => {
                if let Some(d) = q.dequeue(&mut ctx, &mut drops) {
                    counted[d.pkt.id as usize] += d.marked.is_some() as u32;
                    leave(&mut out, &mut fate, d.pkt, "dequeued")?;
                }
            }
        }
        for d in drops.drain(..) {
            *by_cause.entry(d.cause.name()).or_default() += 1;
            leave(&mut out, &mut fate, d.pkt, d.cause.name())?;
        }
        let b = q.backlog();
        check!(limit.packets.is_none_or(|p| b.packets <= p), "backlog {b:?} over {limit:?}");
        check!(limit.bytes.is_none_or(|x| b.bytes <= x), "backlog {b:?} over {limit:?}");
        if let Some(p) = q.probe().drop_prob {
            check!((0.0..=1.0).contains(&p), "drop probability {p}");
        }
        check!(q.conserved(), "counters do not account for the packets: {:?}", q.stats);
    }
    // drain
    let mut idle = 0;
    loop {
        now += Duration::from_millis(1);
        let mut ctx = Ctx { now, rng: &mut rng, link_rate: rate };
        let d = q.dequeue(&mut ctx, &mut drops);
        for x in drops.drain(..) {
            *by_cause.entry(x.cause.name()).or_default() += 1;
            leave(&mut out, &mut fate, x.pkt, x.cause.name())?;
        }
        match d {
            Some(d) => {
                counted[d.pkt.id as usize] += d.marked.is_some() as u32;
                leave(&mut out, &mut fate, d.pkt, "dequeued")?
            }
            None if q.backlog().packets == 0 => break,
            None => {
                // a scheduler may hold packets back for a moment (none do today)
                idle += 1;
                check!(idle < 10_000, "dequeue returns nothing with {:?} queued", q.backlog());
            }
        }
    }
    let missing: Vec<usize> = out.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i).take(5).collect();
    check!(missing.is_empty(), "packets never came back: {missing:?}");
    check!(q.backlog().packets == 0 && q.backlog().bytes == 0, "backlog {:?} after draining", q.backlog());
    check!(q.conserved(), "counters do not account for the packets: {:?}", q.stats);
    // the counters by cause are the drops handed back with that cause
    for c in aqm::Cause::ALL {
        let counted = q.stats.drops[c.index()];
        let seen = by_cause.get(c.name()).copied().unwrap_or(0);
        check!(counted == seen, "{} drops counted {counted}, handed back {seen}", c.name());
    }
    check!(q.stats.dequeued == fate.iter().filter(|f| f.1 == "dequeued").count() as u64, "dequeued count {:?}", q.stats);
    // marks: the queue reports a mark for every packet it delivers set CE, at most one
    // per CE it set (DualPI2 may set CE twice in one pass, PI2 then the L4S step, and
    // reports one mark), and counts what it reports; only on ECN-capable packets. A
    // dropped packet may have been set CE unreported (COBALT: CoDel's mark, then
    // BLUE's drop, as Linux's cobalt_should_drop)
    let pkts: Vec<P> = out.into_iter().map(|p| p.expect("checked above")).collect();
    // the counters by codepoint: what was offered, and what left as it left
    let mut left_by_ecn = [0u64; 4];
    for f in fate.iter().filter(|f| f.1 == "dequeued") {
        left_by_ecn[pkts[f.0 as usize].ecn.index()] += 1;
    }
    check!(q.stats.ecn_arrived == offered_by_ecn, "arrivals by codepoint counted {:?}, offered {offered_by_ecn:?}", q.stats.ecn_arrived);
    check!(q.stats.ecn_dequeued == left_by_ecn, "departures by codepoint counted {:?}, left {left_by_ecn:?}", q.stats.ecn_dequeued);
    for p in &pkts {
        let c = counted[p.id as usize];
        let how = fate.iter().find(|f| f.0 == p.id).map_or("?", |f| f.1);
        let delivered_right = how != "dequeued" || (p.ce_sets > 0) == (c > 0);
        check!(delivered_right && c <= p.ce_sets, "packet {} ({how}): CE set {} times, {c} marks reported", p.id, p.ce_sets);
    }
    let reported: u64 = counted.iter().map(|&c| c as u64).sum();
    check!(reported == q.stats.marked(), "{reported} marks reported, {} counted ({:?})", q.stats.marked(), q.stats.marks);
    if let Some(p) = pkts.iter().find(|p| p.ce_on_not_ect) {
        return Err(format!("packet {} marked CE while Not-ECT (arrived ECT: {})", p.id, ect_in[p.id as usize]));
    }
    Ok(Played { fate, drops_by_cause: by_cause, marks: q.stats.marked() })
}

/// A small deterministic generator (SplitMix64) for [`mutate_params`].
pub struct Mix(pub u64);

impl Mix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const DURATIONS: &[&str] = &["0s", "1ns", "1us", "100us", "1ms", "2ms", "5ms", "20ms", "100ms", "1s", "30s", "100000s", "-1ms", "1.5ms", "5", "ms"];
const SIZES: &[&str] = &["0B", "1B", "40B", "1500B", "3000B", "2KB", "64KB", "1MB", "4294967296B", "1pkts", "3pkts", "100pkts", "0pkts", "1bdp", "0.5bdp", "x"];
const NUMBERS: &[f64] = &[0.0, -1.0, 1e-9, 0.001, 0.01, 0.1, 0.5, 0.99, 1.0, 1.5, 2.0, 10.0, 1000.0, 1e9, 1e300];
const INTEGERS: &[i64] = &[0, -1, 1, 2, 3, 4, 64, 1024, 65_536, 65_537, u32::MAX as i64, 1 << 32, i64::MAX];

fn random_scalar(m: &mut Mix) -> serde_json::Value {
    use serde_json::Value as J;
    match m.below(5) {
        0 => J::from(*m.pick(DURATIONS)),
        1 => J::from(*m.pick(SIZES)),
        2 => J::from(*m.pick(NUMBERS)),
        3 => J::from(*m.pick(INTEGERS)),
        _ => J::from(m.below(2) == 0),
    }
}

/// A random variation of a parameter table, from its defaults: each field kept, or
/// replaced by a value of its kind (a duration, a size, a number, a flag, from lists
/// that include zero, negatives, the tiny and the huge), or by anything at all;
/// absent fields (`null`) given a value; now and then a field removed or an unknown
/// one added. Many results are invalid on purpose: those must be refused with a
/// one-line error naming the field.
pub fn mutate_params(defaults: &serde_json::Value, m: &mut Mix, rate: u32) -> serde_json::Value {
    use serde_json::Value as J;
    let change = |m: &mut Mix| m.below(100) < rate as usize;
    match defaults {
        J::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, v) in o {
                if k == "kind" {
                    continue;
                }
                if change(m) && m.below(8) == 0 {
                    continue; // removed: its default
                }
                out.insert(k.clone(), mutate_params(v, m, rate));
            }
            if change(m) && m.below(8) == 0 {
                out.insert("no_such_parameter".into(), J::from(1));
            }
            J::Object(out)
        }
        J::Null if change(m) => match m.below(3) {
            0 => J::Object(Default::default()),
            _ => random_scalar(m),
        },
        J::String(s) if change(m) => {
            if m.below(6) == 0 {
                random_scalar(m)
            } else if s.ends_with('s') && !s.ends_with("pkts") {
                J::from(*m.pick(DURATIONS))
            } else if s.ends_with('B') || s.ends_with("pkts") || s.ends_with("bdp") {
                J::from(*m.pick(SIZES))
            } else {
                J::from(*m.pick(&["departure_rate", "timestamp", "interval", "bogus", ""]))
            }
        }
        J::Number(n) if change(m) => {
            if m.below(6) == 0 {
                random_scalar(m)
            } else if n.is_i64() || n.is_u64() {
                J::from(*m.pick(INTEGERS))
            } else {
                J::from(*m.pick(NUMBERS))
            }
        }
        J::Bool(b) if change(m) => J::from(if m.below(6) == 0 { !*b } else { m.below(2) == 0 }),
        other => other.clone(),
    }
}

/// A kind's parameters from the registry, varied by `seed`: `Ok` if the registry
/// accepts them, else its error (which must be one line).
pub fn random_spec(kind: &str, seed: u64, rate: u32) -> Result<AqmSpec, String> {
    let defaults = serde_json::to_value(AqmSpec::default_for(kind).expect("a registered kind")).expect("parameters serialize");
    let mut m = Mix(seed);
    let params = mutate_params(&defaults, &mut m, rate);
    AqmSpec::from_kind(kind, params).map_err(|e| e.to_string())
}

/// A limit from a small code: packets or bytes, tight or loose.
pub fn limit_of(code: u32) -> Limit {
    match code % 4 {
        0 => Limit::packets(1 + (code as u64 >> 2) % 64),
        1 => Limit::bytes(1500 + (code as u64 >> 2) % 60_000),
        2 => Limit { packets: Some(1 + (code as u64 >> 2) % 16), bytes: Some(3000 + (code as u64 >> 2) % 30_000) },
        _ => Limit::packets(1000),
    }
}
