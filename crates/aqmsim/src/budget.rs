//! How much memory a run will take, from its resolved [`Scenario`] alone: the flow
//! count, the buffers and what is recorded. The front ends call [`estimate`] before a
//! run and refuse one that would not fit in the machine's memory, naming the part that
//! dominates and the setting that shrinks it (`record.packets = false`, fewer flows),
//! instead of letting the run allocate until the kernel kills it.
//!
//! The estimate is a sum of parts, each a count the scenario fixes (flows, sampling
//! intervals) or bounds (packets: what the bottleneck can carry, plus what
//! constant-rate sources send beyond it) times a cost per item. The costs were
//! measured: the simulator's peak heap with a counting allocator (`tests/budget.rs`
//! compares estimate and measurement on several scenarios), and the peak resident set
//! of whole `aqmlab run` processes, which also hold the records as Arrow tables while
//! they write the Parquet files (`tests/test_budget.py` in the Python suite). The
//! estimate is O(flow groups): ten million flows are priced in microseconds.
//!
//! Packet counts are upper-ish bounds: a TCP group is assumed to keep the bottleneck
//! busy for the whole run (a light load records fewer packets than estimated).

use aqm::{QueueLimit, Rate};
use serde::Serialize;

use crate::endpoint::downloads::{FilesSpec, WebSpec};
use crate::scenario::{resolve_limit, RateStep, Scenario, StartSpec, TrafficSpec};

/// The simulator's own cost of each item, in bytes (peak heap, measured; records are
/// columns that grow by doubling, so a column holds 1 to 2 times its rows: 1.5 here).
mod core_cost {
    /// The simulator without flows: links, queues, the event queue, histograms.
    pub const BASE: f64 = 300_000.0;
    /// A flow's sender, receiver, timers and table row.
    pub const FLOW: f64 = 3_600.0;
    /// A packet in a queue or on a wire.
    pub const QUEUED_PACKET: f64 = 160.0;
    /// Rows, by table (52, 102, 129, 33, 96 and 50 bytes of columns, times 1.5).
    pub const PACKET_ROW: f64 = 78.0;
    pub const FLOW_SERIES_ROW: f64 = 153.0;
    pub const LINK_SERIES_ROW: f64 = 194.0;
    pub const DATAGRAM_ROW: f64 = 50.0;
    pub const FLOW_TRACE_ROW: f64 = 144.0;
    pub const TRANSFER_ROW: f64 = 75.0;
}

/// What a whole `aqmlab run` process adds: the Python interpreter with NumPy, Arrow
/// and pandas, and per row the Arrow tables, metrics and Parquet buffers built from
/// the records (measured as peak resident set size, see the module doc).
mod process_cost {
    pub const BASE: f64 = 200e6;
    pub const FLOW: f64 = 200.0;
    pub const PACKET_ROW: f64 = 100.0;
    pub const FLOW_SERIES_ROW: f64 = 300.0;
    pub const LINK_SERIES_ROW: f64 = 400.0;
    pub const DATAGRAM_ROW: f64 = 60.0;
    pub const FLOW_TRACE_ROW: f64 = 150.0;
    pub const TRANSFER_ROW: f64 = 200.0;
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
    buffer: QueueLimit,
    bdp: u64,
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

/// The link sides of the scenario (the dumbbell's bottleneck and its reverse, or both
/// sides of every link of a topology), and each group's route over them.
fn sides(sc: &Scenario) -> (Vec<Side>, Vec<Vec<(usize, bool)>>) {
    if let Some(b) = &sc.bottleneck {
        let sides = vec![
            Side { name: "bottleneck".into(), cap: capacity_bytes(sc, b.rate, &b.schedule), buffer: b.buffer, bdp: sc.bdp_bytes() },
            Side { name: "bottleneck_rev".into(), cap: capacity_bytes(sc, b.rev_rate(), &[]), buffer: b.reverse_buffer.unwrap_or(b.buffer), bdp: sc.bdp_bytes() },
        ];
        return (sides, vec![vec![(0, true), (1, false)]; sc.flows.len()]);
    }
    let mut sides = Vec::new();
    for (i, l) in sc.links.iter().enumerate() {
        for fwd in [true, false] {
            let (side, name) = l.side(fwd);
            sides.push(Side { name, cap: capacity_bytes(sc, side.rate, &side.schedule), buffer: side.buffer, bdp: sc.link_bdp_bytes(i, fwd) });
        }
    }
    let index = |l: usize, fwd: bool| 2 * l + (!fwd) as usize;
    let routes = sc
        .routes()
        .unwrap_or_default()
        .iter()
        .map(|h| h.hops.iter().flat_map(|&(l, d)| [(index(l, d), true), (index(l, !d), false)]).collect())
        .collect();
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
    let mut groups = Vec::new();
    let mut smallest: f64 = 1500.0; // the smallest data packet
    for (gi, g) in sc.flows.iter().enumerate() {
        let c = &g.common;
        let n = c.count as f64;
        flows += n;
        let stop = c.stop.map_or(dur, |s| s.as_secs_f64().min(dur));
        let active = (stop - mean_start_s(&c.start)).max(0.0);
        flow_samples += n * ((dur - mean_start_s(&c.start)).max(0.0) / interval).floor();
        let route = routes.get(gi).cloned().unwrap_or_default();
        if let Some((rate_bps, size)) = g.traffic.cbr() {
            let size = size.max(1) as f64;
            smallest = smallest.min(size);
            groups.push(Group { data: n * active * rate_bps as f64 / 8.0 / size, acks: 0.0, size, ack_size: size, tcp: false, route });
        } else if let Some(tcp) = g.traffic.tcp() {
            let size = (tcp.mss.0 + tcp.header.0).max(1) as f64;
            smallest = smallest.min(size);
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
    // TCP groups sharing a side share it: scale their data down to what the side
    // carries besides the constant-rate traffic (on the dumbbell: all of them share
    // the bottleneck; TCP takes what the CBR groups leave)
    for (si, side) in sides.iter().enumerate() {
        let crossing = |g: &Group| g.route.iter().any(|h| h.0 == si && h.1);
        let cbr: f64 = groups.iter().filter(|g| !g.tcp && crossing(g)).map(|g| g.data * g.size).sum();
        let tcp: f64 = groups.iter().filter(|g| g.tcp && crossing(g)).map(|g| g.data * g.size).sum();
        let room = (side.cap - cbr).max(0.0) * 1.05;
        if tcp > room && tcp > 0.0 {
            let k = room / tcp;
            for g in groups.iter_mut().filter(|g| g.tcp && g.route.iter().any(|h| h.0 == si && h.1)) {
                g.data *= k;
                g.acks *= k;
            }
        }
    }
    // each side: an event row for each arrival (enqueue or drop) and each departure
    let mut packet_rows = 0.0;
    let mut queued = 0.0;
    for (si, side) in sides.iter().enumerate() {
        let arrivals: f64 = groups.iter().map(|g| g.route.iter().filter(|h| h.0 == si).map(|h| if h.1 { g.data } else { g.acks }).sum::<f64>()).sum();
        // at most what the side can send of the smallest packets crossing it
        let small = groups
            .iter()
            .flat_map(|g| g.route.iter().filter(|h| h.0 == si).map(move |h| if h.1 { g.size } else { g.ack_size }))
            .fold(f64::INFINITY, f64::min);
        let departures = if small.is_finite() { arrivals.min(side.cap / small) } else { 0.0 };
        if sc.record.packets && sc.record.links.iter().any(|l| *l == side.name) {
            packet_rows += arrivals + departures;
        }
        // packets queued or on a wire: the buffer full of the smallest data packets,
        // at most what crosses it in the run
        queued += buffer_packets(side.buffer, side.bdp, smallest).min(arrivals + flows * 10.0);
    }
    let tcp_data: f64 = groups.iter().filter(|g| g.tcp).map(|g| g.data).sum();
    let cbr_packets: f64 = groups.iter().filter(|g| !g.tcp).map(|g| g.data).sum();
    let acks: f64 = groups.iter().map(|g| g.acks).sum();
    let flow_series_rows = if sc.record.flow_series { flow_samples } else { 0.0 };
    let link_series_rows = sides.len() as f64 * samples;
    let datagram_rows = if sc.record.datagrams { cbr_packets } else { 0.0 };
    // every ACK reaching a traced sender: the traced flows' share of the ACKs (a
    // quick ACK per segment at most)
    let traced = traced_flows(sc);
    let flow_trace_rows = if tcp_flows > 0.0 { tcp_data * (traced / tcp_flows).min(1.0) } else { 0.0 };

    let items: [(&'static str, f64, f64, f64, &'static str); 8] = [
        ("flows", flows, core_cost::FLOW, process_cost::FLOW, "use fewer flows (flows[i].count)"),
        ("record.packets", packet_rows, core_cost::PACKET_ROW, process_cost::PACKET_ROW, "set record.packets = false"),
        ("record.flow_series", flow_series_rows, core_cost::FLOW_SERIES_ROW, process_cost::FLOW_SERIES_ROW, "set record.flow_series = false"),
        ("record.datagrams", datagram_rows, core_cost::DATAGRAM_ROW, process_cost::DATAGRAM_ROW, "set record.datagrams = false"),
        ("record.flow_trace", flow_trace_rows, core_cost::FLOW_TRACE_ROW, process_cost::FLOW_TRACE_ROW, "trace fewer flows (record.flow_trace)"),
        ("transfers", transfers, core_cost::TRANSFER_ROW, process_cost::TRANSFER_ROW, "use fewer downloads (fewer flows, longer think times)"),
        ("timeseries", link_series_rows, core_cost::LINK_SERIES_ROW, process_cost::LINK_SERIES_ROW, "use a longer record.interval"),
        ("queue", queued, core_cost::QUEUED_PACKET, 0.0, "use smaller buffers"),
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
