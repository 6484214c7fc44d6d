//! How much memory a run will take, from its resolved [`Scenario`] alone: the flow
//! count, the links and their buffers, the AQMs' tables and what is recorded. The
//! front ends call [`estimate`] before a run and refuse one that would not fit in the
//! machine's memory, naming the part that dominates and the setting that shrinks it
//! (`record.packets = false`, fewer flows), instead of letting the run allocate until
//! the kernel kills it.
//!
//! The estimate is a sum of parts, each a count the scenario fixes (flows, link
//! sides, sampling intervals, an AQM's flow queues) or bounds (packets), times a cost
//! per item. Packets follow the topology, the dumbbell's or a `[[links]]` one: each
//! TCP group fills the narrowest side of its route for the whole run, groups sharing
//! a side share it (after what constant-rate groups send there), and the side that
//! limits a group holds a full buffer; every side holds its rate times its delay on
//! the wire. The costs were measured: the simulator's peak heap with a counting
//! allocator (`tests/budget.rs` compares estimate and measurement on scenarios where
//! each part dominates in turn), and the peak resident set of whole `aqmlab run`
//! processes, which also hold the records as Arrow tables while they write the
//! Parquet files (`tests/test_budget.py`, `scripts/calibrate_budget.py`). The
//! estimate is O(flow groups x route length): ten million flows are priced in
//! microseconds.
//!
//! Packet counts are upper-ish bounds: a TCP group is assumed to keep its route's
//! narrowest link busy for the whole run (a light load records fewer packets than
//! estimated).

use aqm::{AqmSpec, Duration, QueueLimit, Rate};
use serde::Serialize;

use crate::endpoint::downloads::{FilesSpec, WebSpec};
use crate::packet::Packet;
use crate::scenario::{resolve_limit, RateStep, Scenario, StartSpec, TrafficSpec};

/// The simulator's own cost of each item, in bytes (peak heap, measured; records are
/// columns that grow by doubling, so a column holds 1 to 2 times its rows: 1.5 here).
mod core_cost {
    /// The simulator without flows: links, queues, the event queue, histograms.
    pub const BASE: f64 = 100_000.0;
    /// A flow's sender, receiver, timers and table row (the sender's RACK, rate and
    /// pacing state included: 20,000 flows of 2 s measured 110.6 MB).
    pub const FLOW: f64 = 5_600.0;
    /// A packet in a queue: the packet in the queue's ring (which doubles as it
    /// grows), its sender's record of it, the drop lists of a full queue.
    pub const QUEUED_PACKET: f64 = 560.0;
    /// A packet on a wire: its event and its sender's record of it.
    pub const WIRE_PACKET: f64 = 300.0;
    /// Rows, by table (52, 102, 129, 33, 96 and 50 bytes of columns, times 1.5).
    pub const PACKET_ROW: f64 = 78.0;
    pub const FLOW_SERIES_ROW: f64 = 153.0;
    pub const LINK_SERIES_ROW: f64 = 194.0;
    pub const DATAGRAM_ROW: f64 = 50.0;
    pub const FLOW_TRACE_ROW: f64 = 144.0;
    pub const TRANSFER_ROW: f64 = 75.0;
    /// A link side (its queue, delay line and counters), without its AQM's tables.
    pub const LINK: f64 = 4_500.0;
    /// A streaming histogram: 7,424 buckets of 8 bytes (`crate::hist`), and its
    /// rows of non-empty buckets at the end.
    pub const HISTOGRAM: f64 = 70_000.0;
}

/// What a whole `aqmlab run` process adds: the Python interpreter with NumPy and
/// Arrow, and pandas with the report's code when a report follows (the base case of
/// `scripts/calibrate_budget.py`: 138 MB with the report, 91 MB without, which
/// imports no pandas), and per row the Arrow tables, metrics and Parquet buffers
/// built from the records (measured as peak resident set size, see the module doc).
mod process_cost {
    pub const BASE: f64 = 150e6;
    pub const FLOW: f64 = 200.0;
    pub const PACKET_ROW: f64 = 100.0;
    pub const FLOW_SERIES_ROW: f64 = 300.0;
    pub const LINK_SERIES_ROW: f64 = 400.0;
    pub const DATAGRAM_ROW: f64 = 60.0;
    pub const FLOW_TRACE_ROW: f64 = 150.0;
    pub const TRANSFER_ROW: f64 = 200.0;
    /// Its rows of non-empty buckets in histograms.parquet.
    pub const HISTOGRAM: f64 = 10_000.0;
}

/// One part of the estimate, with the setting that makes it smaller.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    /// What it is: "flows", "record.packets", "record.flow_series", ...
    pub name: &'static str,
    /// How many: flows, rows or packets.
    pub count: u64,
    /// Peak bytes of the whole run process for this part.
    pub bytes: u64,
    /// What to do to shrink it, naming the setting as a user writes it
    /// ("set record.packets = false", "use fewer flows (flows[i].count)").
    pub knob: &'static str,
}

/// The estimated memory of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    /// The simulator's peak heap, bytes.
    pub core_bytes: u64,
    /// The peak resident set of an `aqmlab run` process (the simulator, the Python
    /// front and the tables it writes), bytes.
    pub process_bytes: u64,
    /// The parts of `process_bytes` beyond the fixed base, largest first.
    pub parts: Vec<Part>,
    /// Packets through the bottleneck, both ways (a measure of the run's work).
    pub packets: u64,
}

impl Estimate {
    /// The part that dominates (the one to shrink), if any.
    pub fn largest(&self) -> Option<&Part> {
        self.parts.first()
    }
}

/// Bytes a link side can carry over the run: its rate (each step of a capacity
/// schedule for its span; a trace's mean rate) times the duration.
fn capacity_bytes(sc: &Scenario, rate: Rate, schedule: &[RateStep]) -> f64 {
    let end = sc.duration.as_secs_f64();
    let mut total = 0.0;
    let mut t = 0.0;
    let mut r = rate.bps() as f64;
    for step in schedule {
        let at = step.at.as_secs_f64().min(end);
        total += r * (at - t).max(0.0);
        t = at;
        r = step.rate.bps() as f64;
    }
    total += r * (end - t).max(0.0);
    total / 8.0
}

fn mean_start_s(s: &StartSpec) -> f64 {
    match *s {
        StartSpec::At(t) => t.as_secs_f64(),
        StartSpec::Uniform(a, b) => (a.as_secs_f64() + b.as_secs_f64()) / 2.0,
    }
}

/// Packets a buffer can hold, given the smallest packet that may fill it.
fn buffer_packets(q: QueueLimit, bdp: u64, smallest: f64) -> f64 {
    match resolve_limit("buffer", q, bdp) {
        Ok(l) => match (l.packets, l.bytes) {
            (Some(p), Some(b)) => (p as f64).min(b as f64 / smallest),
            (Some(p), None) => p as f64,
            (None, Some(b)) => b as f64 / smallest,
            (None, None) => f64::INFINITY,
        },
        Err(_) => 0.0,
    }
}

/// One direction of a link, as the estimate sees it.
struct Side {
    name: String,
    /// Bytes it can carry over the run.
    cap: f64,
    /// One-way delay, seconds.
    delay: f64,
    buffer: QueueLimit,
    /// The bandwidth-delay product its `bdp` buffers resolve against.
    bdp: u64,
    /// The heap its AQM allocates when built (flow queues, tables).
    aqm_bytes: f64,
    /// Sampled every `record.interval` (a row of `link_series` each).
    sampled: bool,
    /// Streaming histograms: its sojourn histogram, per flow group (`by_group`) and
    /// of the queueing delay at drops (`drop_delay`).
    monitored: bool,
    by_group: bool,
    drop_delay: bool,
}

/// What a flow group sends.
struct Group {
    /// Data packets (TCP: what its route lets through, plus retransmissions; CBR: what
    /// it sends) and ACKs, and their sizes in bytes.
    data: f64,
    acks: f64,
    size: f64,
    ack_size: f64,
    tcp: bool,
    /// Its route: (side index, carries the data (else the ACKs)).
    route: Vec<(usize, bool)>,
}

/// The link sides of the scenario and each group's route over them: the dumbbell's
/// bottleneck, its reverse and each group's four access links
/// ([`crate::net::topology`]), or both sides of every link of a topology.
fn sides(sc: &Scenario) -> (Vec<Side>, Vec<Vec<(usize, bool)>>) {
    let side = |name: String, cap: f64, delay: Duration, buffer: QueueLimit, bdp: u64, aqm: &AqmSpec| Side {
        name,
        cap,
        delay: delay.as_secs_f64(),
        buffer,
        bdp,
        aqm_bytes: aqm.built_bytes::<Packet>() as f64,
        sampled: false,
        monitored: false,
        by_group: false,
        drop_delay: false,
    };
    if let Some(b) = &sc.bottleneck {
        let bdp = sc.bdp_bytes();
        let mut fwd = side("bottleneck".into(), capacity_bytes(sc, b.rate, &b.schedule), b.delay, b.buffer, bdp, &b.aqm);
        let mut rev = side("bottleneck_rev".into(), capacity_bytes(sc, b.rev_rate(), &[]), b.rev_delay(), b.reverse_buffer.unwrap_or(b.buffer), bdp, &b.reverse_aqm);
        (fwd.sampled, fwd.monitored, fwd.by_group, fwd.drop_delay) = (true, true, true, true);
        (rev.sampled, rev.monitored) = (true, true);
        let mut sides = vec![fwd, rev];
        let a = sc.access();
        let access = capacity_bytes(sc, a.rate, &[]);
        let droptail = AqmSpec::default();
        let mut routes = Vec::with_capacity(sc.flows.len());
        for g in &sc.flows {
            let p = &g.common.path;
            let (snd, rcv) = (p.sender_delay.unwrap_or(a.delay), p.receiver_delay.unwrap_or(a.delay));
            let i = sides.len();
            for (suffix, delay) in [("up", snd), ("down", rcv), ("up_rev", rcv + p.return_delay.unwrap_or(Duration::ZERO)), ("down_rev", snd)] {
                sides.push(side(format!("{}.{suffix}", g.common.name), access, delay, a.buffer, bdp, &droptail));
            }
            routes.push(vec![(i, true), (i + 2, false), (0, true), (1, false), (i + 1, true), (i + 3, false)]);
        }
        return (sides, routes);
    }
    let hops: Vec<Vec<(usize, bool)>> = sc.routes().unwrap_or_default().into_iter().map(|h| h.hops).collect();
    // each link's bdp: its rate times the largest base RTT of the groups crossing it
    // (of all groups if none does), as Scenario::link_bdp_bytes
    let rtts: Vec<Duration> = (0..sc.flows.len()).map(|g| sc.base_rtt(g)).collect();
    let mut rtt: Vec<Option<Duration>> = vec![None; sc.links.len()];
    for (g, h) in hops.iter().enumerate() {
        for &(l, _) in h {
            rtt[l] = Some(rtt[l].map_or(rtts[g], |r| r.max(rtts[g])));
        }
    }
    let mut sides = Vec::new();
    for (i, l) in sc.links.iter().enumerate() {
        for fwd in [true, false] {
            let (s, name) = l.side(fwd);
            let bdp = s.rate.bytes_in(rtt[i].unwrap_or_else(|| rtts.iter().copied().max().unwrap_or(Duration::ZERO)));
            let mut x = side(name, capacity_bytes(sc, s.rate, &s.schedule), s.delay, s.buffer, bdp, &s.aqm);
            x.sampled = true;
            x.monitored = rtt[i].is_some();
            (x.by_group, x.drop_delay) = (x.monitored, x.monitored);
            sides.push(x);
        }
    }
    let index = |l: usize, fwd: bool| 2 * l + (!fwd) as usize;
    let routes = hops.iter().map(|h| h.iter().flat_map(|&(l, d)| [(index(l, d), true), (index(l, !d), false)]).collect()).collect();
    (sides, routes)
}

/// The memory a run of `sc` will take (see the module doc).
pub fn estimate(sc: &Scenario) -> Estimate {
    let dur = sc.duration.as_secs_f64();
    let interval = sc.record.interval.as_secs_f64().max(1e-9);
    let samples = (dur / interval).floor();
    let (sides, routes) = sides(sc);

    let mut flows = 0.0;
    let mut flow_samples = 0.0;
    let mut tcp_flows = 0.0;
    let mut transfers = 0.0;
    let mut groups = Vec::with_capacity(sc.flows.len());
    for (gi, g) in sc.flows.iter().enumerate() {
        let c = &g.common;
        let n = c.count as f64;
        flows += n;
        let stop = c.stop.map_or(dur, |s| s.as_secs_f64().min(dur));
        let active = (stop - mean_start_s(&c.start)).max(0.0);
        flow_samples += n * ((dur - mean_start_s(&c.start)).max(0.0) / interval).floor();
        let route = routes.get(gi).cloned().unwrap_or_default();
        if let Some((rate_bps, size)) = g.traffic.datagrams() {
            let size = size.max(1) as f64;
            groups.push(Group { data: n * active * rate_bps as f64 / 8.0 / size, acks: 0.0, size, ack_size: size, tcp: false, route });
        } else if let Some(tcp) = g.traffic.tcp() {
            let size = (tcp.mss.0 + tcp.header.0).max(1) as f64;
            tcp_flows += n;
            transfers += match &g.traffic {
                // repeated downloads: one at the start, then at most one per think time
                TrafficSpec::Files(FilesSpec(d)) | TrafficSpec::Web(WebSpec(d)) => n * (1.0 + active / d.think.mean().as_secs_f64().max(1e-3)),
                // a kind with sizes and no think time: one transfer per flow
                other if other.sizes().is_some() => n,
                _ => 0.0,
            };
            // TCP fills the narrowest side of its route for the whole run (a few
            // percent more for retransmissions); one ACK per two data packets
            let narrowest = route.iter().filter(|h| h.1).map(|h| sides[h.0].cap).fold(f64::INFINITY, f64::min);
            let data = if narrowest.is_finite() { narrowest / size * 1.05 } else { 0.0 };
            groups.push(Group { data, acks: data / 2.0, size, ack_size: tcp.header.0.max(1) as f64, tcp: true, route });
        }
    }
    // TCP groups sharing a side share it: each TCP group is scaled down by the
    // tightest of its sides, to what the side carries besides the constant-rate
    // traffic (on the dumbbell all groups share the bottleneck, and TCP takes what
    // the CBR groups leave)
    let mut cbr_bytes = vec![0.0; sides.len()];
    let mut tcp_bytes = vec![0.0; sides.len()];
    for g in &groups {
        for &(si, data) in g.route.iter().filter(|h| h.1) {
            debug_assert!(data);
            if g.tcp { tcp_bytes[si] += g.data * g.size } else { cbr_bytes[si] += g.data * g.size }
        }
    }
    let share: Vec<f64> = (0..sides.len())
        .map(|si| {
            let room = (sides[si].cap - cbr_bytes[si]).max(0.0) * 1.05;
            if tcp_bytes[si] > room { room / tcp_bytes[si] } else { 1.0 }
        })
        .collect();
    // the side that limits each TCP group keeps its buffer full: its tightest
    // shared side, else the first of its narrowest (a queue builds at the first of
    // equal links; the next ones receive the packets paced)
    let mut saturated = vec![false; sides.len()];
    for g in groups.iter_mut() {
        let data = || g.route.iter().filter(|h| h.1).map(|h| h.0);
        if !g.tcp {
            continue;
        }
        let k = data().map(|si| share[si]).fold(1.0, f64::min);
        let limit = if k < 1.0 { data().find(|&si| share[si] == k) } else { data().min_by(|&a, &b| sides[a].cap.total_cmp(&sides[b].cap)) };
        if let Some(si) = limit {
            saturated[si] = true;
        }
        g.data *= k;
        g.acks *= k;
    }
    for si in 0..sides.len() {
        saturated[si] |= sides[si].cap > 0.0 && cbr_bytes[si] >= sides[si].cap;
    }
    // per side: packets arriving, the smallest of them, the groups crossing
    let mut arrivals = vec![0.0; sides.len()];
    let mut small = vec![f64::INFINITY; sides.len()];
    let mut groups_crossing = vec![0.0; sides.len()];
    for g in &groups {
        for &(si, data) in &g.route {
            let (n, size) = if data { (g.data, g.size) } else { (g.acks, g.ack_size) };
            arrivals[si] += n;
            small[si] = small[si].min(size);
            groups_crossing[si] += if n > 0.0 { 1.0 } else { 0.0 };
        }
    }
    let mut packet_rows = 0.0;
    let mut queued = 0.0;
    let mut wire = 0.0;
    let mut hists = 0.0;
    let mut aqm_bytes = 0.0;
    let several_groups = sc.flows.len() > 1;
    for (si, side) in sides.iter().enumerate() {
        aqm_bytes += side.aqm_bytes;
        // an event row for each arrival (enqueue or drop) and each departure, at most
        // what the side can send of the smallest packets crossing it
        let departures = if small[si].is_finite() { arrivals[si].min(side.cap / small[si]) } else { 0.0 };
        if sc.record.packets && sc.record.links.contains(&side.name) {
            packet_rows += arrivals[si] + departures;
        }
        // a side that limits a group (or is offered more than it carries) keeps its
        // buffer full of the smallest packets crossing it; the others queue briefly;
        // packets on the wire are a side's departure rate times its delay
        let buffer = if small[si].is_finite() { buffer_packets(side.buffer, side.bdp, small[si]) } else { 0.0 };
        if saturated[si] {
            queued += buffer.min(arrivals[si]);
        }
        wire += if dur > 0.0 { departures / dur * side.delay } else { 0.0 };
        // histograms of 7,424 buckets, allocated at their first sample: the side's
        // own, one per group crossing it (one copied at the end with a single
        // group), one per drop cause where the queue overflows or its AQM drops
        if side.monitored && arrivals[si] > 0.0 {
            hists += 1.0;
            if side.by_group {
                hists += if several_groups { groups_crossing[si] } else { 1.0 };
            }
            if side.drop_delay && saturated[si] {
                hists += aqm::Cause::ALL.len() as f64;
            }
        }
    }
    let tcp_data: f64 = groups.iter().filter(|g| g.tcp).map(|g| g.data).sum();
    let cbr_packets: f64 = groups.iter().filter(|g| !g.tcp).map(|g| g.data).sum();
    let acks: f64 = groups.iter().map(|g| g.acks).sum();
    let flow_series_rows = if sc.record.flow_series { flow_samples } else { 0.0 };
    let link_series_rows = sides.iter().filter(|s| s.sampled).count() as f64 * samples;
    let datagram_rows = if sc.record.datagrams { cbr_packets } else { 0.0 };
    // every ACK reaching a traced sender: the traced flows' share of the ACKs (a
    // quick ACK per segment at most)
    let traced = traced_flows(sc);
    let flow_trace_rows = if tcp_flows > 0.0 { tcp_data * (traced / tcp_flows).min(1.0) } else { 0.0 };

    let items: [(&'static str, f64, f64, f64, &'static str); 12] = [
        ("flows", flows, core_cost::FLOW, process_cost::FLOW, "use fewer flows (flows[i].count)"),
        ("record.packets", packet_rows, core_cost::PACKET_ROW, process_cost::PACKET_ROW, "set record.packets = false"),
        ("record.flow_series", flow_series_rows, core_cost::FLOW_SERIES_ROW, process_cost::FLOW_SERIES_ROW, "set record.flow_series = false"),
        ("record.datagrams", datagram_rows, core_cost::DATAGRAM_ROW, process_cost::DATAGRAM_ROW, "set record.datagrams = false"),
        ("record.flow_trace", flow_trace_rows, core_cost::FLOW_TRACE_ROW, process_cost::FLOW_TRACE_ROW, "trace fewer flows (record.flow_trace)"),
        ("transfers", transfers, core_cost::TRANSFER_ROW, process_cost::TRANSFER_ROW, "use fewer downloads (fewer flows, longer think times)"),
        ("timeseries", link_series_rows, core_cost::LINK_SERIES_ROW, process_cost::LINK_SERIES_ROW, "use a longer record.interval"),
        ("queue", queued, core_cost::QUEUED_PACKET, 0.0, "use smaller buffers"),
        ("wire", wire, core_cost::WIRE_PACKET, 0.0, "use shorter delays or lower rates"),
        ("links", sides.len() as f64, core_cost::LINK, 0.0, "use fewer links or flow groups"),
        ("histograms", hists, core_cost::HISTOGRAM, process_cost::HISTOGRAM, "use fewer flow groups"),
        ("aqm", aqm_bytes, 1.0, 0.0, "use fewer flow queues (aqm.flows)"),
    ];
    let core = core_cost::BASE + items.iter().map(|(_, n, c, _, _)| n * c).sum::<f64>();
    let mut parts: Vec<Part> = items
        .iter()
        .filter(|(_, n, ..)| *n > 0.0)
        .map(|&(name, n, c, p, knob)| Part { name, count: n.round() as u64, bytes: sat(n * (c + p)), knob })
        .collect();
    parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(b.name)));
    let process = process_cost::BASE + core + items.iter().map(|(_, n, _, p, _)| n * p).sum::<f64>();
    Estimate { core_bytes: sat(core), process_bytes: sat(process), parts, packets: sat(tcp_data + cbr_packets + acks) }
}

/// Flows named by `record.flow_trace` (ids, and whole groups by name).
fn traced_flows(sc: &Scenario) -> f64 {
    use crate::scenario::FlowSel;
    sc.record
        .flow_trace
        .iter()
        .map(|s| match s {
            FlowSel::Id(_) => 1.0,
            FlowSel::Group(name) => sc.flows.iter().filter(|g| &g.common.name == name).map(|g| g.common.count as f64).sum(),
        })
        .sum()
}

fn sat(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 { x.min(u64::MAX as f64) as u64 } else if x > 0.0 { u64::MAX } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(extra: &[&str]) -> Scenario {
        let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(crate::builtin::get("madpie-proof").unwrap(), &o).unwrap()
    }

    #[test]
    fn capacity_follows_the_rate_schedule() {
        // 10 Mbps for 10 s, then 20 Mbps for 10 s: 37.5 MB
        let s = sc(&["duration=\"20s\"", "bottleneck.schedule=[{at = \"10s\", rate = \"20Mbps\"}]"]);
        let b = s.bottleneck.as_ref().unwrap();
        assert_eq!(capacity_bytes(&s, b.rate, &b.schedule), 37_500_000.0);
    }

    #[test]
    fn packet_rows_are_two_per_packet_the_link_carries() {
        // 10 Mbps for 60 s, 1500-byte packets: 50,000 packets leave; 52,500 arrive
        // (+5 % retransmissions); a row for each arrival and each departure
        let e = estimate(&sc(&["duration=\"60s\""]));
        let p = e.parts.iter().find(|p| p.name == "record.packets").unwrap();
        assert_eq!(p.count, 102_500);
        // flow series: 10 flows starting in [0, 1] s, sampled every 100 ms
        let f = e.parts.iter().find(|p| p.name == "record.flow_series").unwrap();
        assert_eq!(f.count, 10 * 595);
    }

    fn rows(name: &str, o: &[&str]) -> u64 {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        let s = Scenario::from_toml(crate::builtin::get(name).unwrap(), &o).unwrap();
        estimate(&s).parts.iter().find(|p| p.name == "record.packets").map_or(0, |p| p.count)
    }

    #[test]
    fn groups_sharing_a_link_of_a_topology_share_its_capacity() {
        // parking lot, 60 s: b1 (10 Mbps) carries the long and the cross1 groups:
        // 50,000 packets of 1500 bytes leave, 52,500 arrive (+5 %)
        assert_eq!(rows("parking-lot", &["record.links=[\"b1\"]"]), 102_500);
        // the long group's access link carries its half of b1: 26,250 in and out
        assert_eq!(rows("parking-lot", &["record.links=[\"al\"]"]), 52_500);
        // its ACKs come back over al_rev: one per two data packets
        assert_eq!(rows("parking-lot", &["record.links=[\"al_rev\"]"]), 26_250);
    }

    #[test]
    fn the_full_buffer_is_the_limiting_link_s() {
        let queue = |o: &[&str]| {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            let s = Scenario::from_toml(crate::builtin::get("madpie-proof").unwrap(), &o).unwrap();
            estimate(&s).parts.iter().find(|p| p.name == "queue").map_or(0, |p| p.count)
        };
        // the bottleneck's 100 packets (its access links are faster)
        assert_eq!(queue(&["bottleneck.buffer=\"100pkts\""]), 100);
        // an access link as slow as the bottleneck comes first on the route: the
        // queue builds there, in its 1000 packets
        assert_eq!(queue(&["bottleneck.buffer=\"100pkts\"", "access.rate=\"10Mbps\""]), 1000);
    }

    #[test]
    fn an_aqm_s_flow_queues_are_counted() {
        let o = vec!["bottleneck.aqm.kind=\"fq_codel\"".to_string(), "bottleneck.aqm.flows=65536".to_string()];
        let s = Scenario::from_toml(crate::builtin::get("madpie-proof").unwrap(), &o).unwrap();
        let aqm = estimate(&s).parts.iter().find(|p| p.name == "aqm").map_or(0, |p| p.count);
        assert_eq!(aqm, s.bottleneck.as_ref().unwrap().aqm.built_bytes::<Packet>() as u64);
        assert!(aqm > 65_536 * 64, "{aqm}");
    }

    #[test]
    fn recording_options_remove_their_parts() {
        let all = estimate(&sc(&[]));
        let none = estimate(&sc(&["record.packets=false", "record.flow_series=false"]));
        assert!(none.process_bytes < all.process_bytes);
        assert!(none.parts.iter().all(|p| p.name != "record.packets" && p.name != "record.flow_series"));
    }

    #[test]
    fn ten_million_flows_are_priced_at_once_and_dominated_by_the_flows() {
        let s = sc(&["flows.0.count=10000000", "record.flow_series=false"]);
        let t = std::time::Instant::now();
        let e = estimate(&s);
        assert!(t.elapsed() < std::time::Duration::from_millis(10));
        assert!(e.process_bytes > 20_000_000_000, "{e:?}");
        assert_eq!(e.largest().unwrap().name, "flows");
    }
}
