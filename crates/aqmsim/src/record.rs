//! Columnar records of a run: packet events at the recorded links, per-interval link
//! and flow samples, and one row per flow at the end. Plain `Vec` columns, appended
//! to on the hot path and handed to Python (or any Arrow writer) as they are.

use aqm::{Duration, Time};
use serde::Serialize;

use crate::hist::LogHist;

/// Event codes in [`PacketLog::event`].
pub const EV_ENQUEUE: u8 = 0;
pub const EV_DEQUEUE: u8 = 1;
pub const EV_DROP: u8 = 2;
pub const EV_MARK: u8 = 3;
pub const EVENT_NAMES: [&str; 4] = ["enqueue", "dequeue", "drop", "mark"];
/// Cause codes in [`PacketLog::cause`]: 0 = none, then [`aqm::Cause`] + 1.
pub const CAUSE_NAMES: [&str; 4] = ["", "overflow", "random", "deterministic"];

#[derive(Default, Debug)]
pub struct PacketLog {
    pub time_ns: Vec<u64>,
    /// Index into [`RunOutput::logged_links`].
    pub link: Vec<u8>,
    pub flow: Vec<u32>,
    pub uid: Vec<u64>,
    /// [`crate::packet::Kind`] as u8.
    pub kind: Vec<u8>,
    pub size: Vec<u32>,
    pub event: Vec<u8>,
    pub cause: Vec<u8>,
    /// Time in the queue (dequeues, and drops from inside the queue); -1 otherwise.
    pub sojourn_ns: Vec<i64>,
    /// Queue backlog after the event.
    pub backlog_bytes: Vec<u64>,
    /// The AQM's own delay estimate at the event, -1 if it keeps none.
    pub aqm_delay_ns: Vec<i64>,
}

impl PacketLog {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn push(&mut self, t: u64, link: u8, flow: u32, uid: u64, kind: u8, size: u32, event: u8, cause: u8, sojourn: i64, backlog: u64, aqm_delay: i64) {
        self.time_ns.push(t);
        self.link.push(link);
        self.flow.push(flow);
        self.uid.push(uid);
        self.kind.push(kind);
        self.size.push(size);
        self.event.push(event);
        self.cause.push(cause);
        self.sojourn_ns.push(sojourn);
        self.backlog_bytes.push(backlog);
        self.aqm_delay_ns.push(aqm_delay);
    }
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

/// One row per sampled link per interval; each row covers `(time - interval, time]`.
#[derive(Default, Debug)]
pub struct LinkSeries {
    pub time_ns: Vec<u64>,
    /// Index into [`RunOutput::links`].
    pub link: Vec<u8>,
    /// Capacity offered in the interval, averaged over it: the rate (time-weighted
    /// across scheduled changes), or full trace opportunities for a trace link.
    pub capacity_bps: Vec<u64>,
    /// Time spent transmitting (rate links; 0 for trace links).
    pub busy_ns: Vec<u64>,
    /// Trace links: delivery opportunities in the interval, and those that carried
    /// at least one byte (0 and 0 for rate links).
    pub opportunities: Vec<u64>,
    pub opportunities_used: Vec<u64>,
    pub tx_bytes: Vec<u64>,
    pub tx_packets: Vec<u64>,
    pub arrivals: Vec<u64>,
    pub drops_overflow: Vec<u64>,
    pub drops_random: Vec<u64>,
    pub drops_deterministic: Vec<u64>,
    pub marks: Vec<u64>,
    pub backlog_bytes: Vec<u64>,
    pub backlog_packets: Vec<u64>,
    /// The AQM's drop probability at the sample (NaN if it has none).
    pub drop_prob: Vec<f64>,
    /// The AQM's delay estimate (-1 if none).
    pub aqm_delay_ns: Vec<i64>,
}

/// One row per flow per interval (TCP fields are NaN / -1 / 0 for UDP flows).
#[derive(Default, Debug)]
pub struct FlowSeries {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub cwnd: Vec<f64>,
    pub ssthresh: Vec<f64>,
    /// Smoothed RTT (-1 before the first sample).
    pub srtt_ns: Vec<i64>,
    /// The latest RTT sample (-1 before the first).
    pub rtt_ns: Vec<i64>,
    pub rto_ns: Vec<u64>,
    /// RFC 6675 pipe: segments in flight.
    pub in_flight: Vec<u64>,
    /// Payload bytes delivered in order at the receiver, cumulative.
    pub delivered_bytes: Vec<u64>,
    /// Highest cumulatively acknowledged segment.
    pub snd_una: Vec<u64>,
    pub retransmits: Vec<u64>,
    /// 0 open, 1 recovery, 2 loss (after a timeout), 3 cwr (reducing after ECN-Echo).
    pub ca_state: Vec<u8>,
    /// The receiver's latest advertised window in bytes (-1: unlimited).
    pub rwnd: Vec<i64>,
    /// Palermo-like receivers' mode: 0 none (DRS receiver, UDP), 1 start-up,
    /// 2 steady, 3 DRS behaviour, 4 base-RTT probe.
    pub receiver_mode: Vec<u8>,
}

/// One row per ACK arriving at a traced sender (`record.flow_trace`): the
/// per-connection sequence, RTT and in-flight traces of Popovsky Figs. 2-4.
#[derive(Default, Debug)]
pub struct FlowTrace {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    /// The connection of the flow (downloads on new connections count up).
    pub conn: Vec<u32>,
    /// Payload bytes cumulatively acknowledged on this connection.
    pub acked_bytes: Vec<u64>,
    pub snd_una: Vec<u64>,
    pub snd_nxt: Vec<u64>,
    pub cwnd: Vec<f64>,
    /// RFC 6675 pipe (segments) after the ACK.
    pub in_flight: Vec<u64>,
    /// Segments sent and not cumulatively acknowledged.
    pub unacked: Vec<u64>,
    /// The RTT sample of this ACK, if it gave one (-1 otherwise).
    pub rtt_ns: Vec<i64>,
    pub srtt_ns: Vec<i64>,
    /// The window advertised in the ACK (-1: unlimited).
    pub rwnd: Vec<i64>,
}

/// One row per download or transfer (`transfers.parquet`).
#[derive(Default, Debug)]
pub struct TransferLog {
    pub flow: Vec<u32>,
    pub group: Vec<u16>,
    /// The download's number within its flow, from 0.
    pub index: Vec<u32>,
    pub conn: Vec<u32>,
    pub size_bytes: Vec<u64>,
    /// When the client asked for it (the connection's start when each download opens one).
    pub request_ns: Vec<u64>,
    /// When its last byte was delivered to the client (-1: not finished).
    pub end_ns: Vec<i64>,
    /// Retransmissions and timeouts of the sender while it ran (-1: not finished).
    pub retransmits: Vec<i64>,
    pub timeouts: Vec<i64>,
}

/// One row per UDP datagram received (`datagrams.parquet`).
#[derive(Default, Debug)]
pub struct DatagramLog {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    /// Datagram number within its flow, from 0.
    pub seq: Vec<u64>,
    pub size: Vec<u32>,
    /// Arrival time minus sending time.
    pub delay_ns: Vec<u64>,
    pub ce: Vec<bool>,
}

/// One row per flow at the end of the run.
#[derive(Default, Debug)]
pub struct FlowTable {
    pub flow: Vec<u32>,
    pub group: Vec<u16>,
    pub start_ns: Vec<u64>,
    /// When a finite transfer's last byte was delivered (-1: not finished or bulk).
    pub end_ns: Vec<i64>,
    pub bytes_delivered: Vec<u64>,
    pub segments_sent: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
    pub recoveries: Vec<u64>,
    pub ecn_reductions: Vec<u64>,
    /// Forward packets of this flow dropped anywhere; its ACKs dropped; CE marks.
    pub drops: Vec<u64>,
    pub ack_drops: Vec<u64>,
    pub marks: Vec<u64>,
    pub min_rtt_ns: Vec<i64>,
    pub srtt_ns: Vec<i64>,
    pub base_rtt_ns: Vec<u64>,
    /// Downloads or transfers completed (files, web, transfer).
    pub transfers: Vec<u32>,
    /// Palermo receivers: reverts to DRS and returns (0 for others).
    pub receiver_reverts: Vec<u32>,
    pub receiver_returns: Vec<u32>,
}

/// One histogram's identity and exact moments, for `meta["histograms"]`.
#[derive(Debug, Clone, Serialize)]
pub struct HistInfo {
    /// "LINK.sojourn", "LINK.sojourn.GROUP", "LINK.drop_delay.CAUSE" (the dumbbell's
    /// links are "bottleneck" and "bottleneck_rev").
    pub name: String,
    pub count: u64,
    /// Sum of the values (ns), as a float (exact below 2^53 ns).
    pub sum_ns: f64,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

/// The non-empty buckets of all histograms, one row each (`histograms.parquet`).
#[derive(Debug, Default)]
pub struct HistTable {
    /// Index into [`RunOutput::histograms`].
    pub hist: Vec<u16>,
    /// The bucket's values `[lo_ns, hi_ns)`.
    pub lo_ns: Vec<u64>,
    pub hi_ns: Vec<u64>,
    pub count: Vec<u64>,
}

/// Which links get streaming histograms: the queueing-delay distributions of the
/// headline figures in fixed memory (see [`crate::hist`] for the layout and its
/// error bound of 0.39 %), kept in every run whatever `record.packets` says.
#[derive(Clone, Debug)]
pub struct Monitor {
    pub link: u16,
    /// The link's name in the histograms' names.
    pub name: String,
    /// Also one sojourn histogram per flow group (kept with two groups or more;
    /// with one, the group's is the whole one).
    pub by_group: bool,
    /// The queueing delay when a drop happened, by cause: the backlog after the
    /// drop over the link rate (Kuhn & Ros Fig. 4); every drop of the run.
    pub drop_delay: bool,
}

/// Everything a run records, written to by the network and the endpoints as the
/// run goes: the columnar tables, the streaming histograms, the per-flow counters
/// and packet conservation.
#[derive(Debug, Default)]
pub struct Recorder {
    pub packets: PacketLog,
    pub link_series: LinkSeries,
    pub flow_series: FlowSeries,
    pub flow_trace: FlowTrace,
    pub transfers: TransferLog,
    pub datagrams: DatagramLog,
    /// One row per UDP datagram received (`record.datagrams`).
    pub record_datagrams: bool,
    pub cons: Conservation,
    /// Per flow: forward packets (data, SYN, datagrams) dropped anywhere, ACKs
    /// dropped, CE marks.
    pub flow_drops: Vec<u64>,
    pub flow_ack_drops: Vec<u64>,
    pub flow_marks: Vec<u64>,
    /// Per link: its index in the packet log, if its packet events are recorded.
    log: Vec<Option<u8>>,
    /// Per link: its sojourn histogram, the first of its per-group ones, the first
    /// of its three drop-delay ones (indices into `hists`).
    sojourn: Vec<Option<u16>>,
    by_group: Vec<Option<u16>>,
    drop_delay: Vec<Option<u16>>,
    groups: usize,
    flow_group: Vec<u16>,
    hists: Vec<(String, LogHist)>,
    /// Departures from this time on go into the sojourn histograms (`metrics.warmup`).
    hist_from: Time,
    end: Time,
}

/// A queue's own delay estimate for the packet log (-1: it keeps none).
#[inline]
fn probe_delay<P: aqm::QPacket>(q: &aqm::Qdisc<P>) -> i64 {
    q.probe().delay_estimate.map_or(-1, |d| d.as_nanos() as i64)
}

impl Recorder {
    /// A recorder for `nlinks` links, the flows' groups, the links whose packet
    /// events are logged (in log order) and the monitored ones (in histogram order).
    pub fn new(nlinks: usize, flow_group: Vec<u16>, groups: &[String], logged: &[u16], monitors: &[Monitor], hist_from: Time, end: Time) -> Recorder {
        let nflows = flow_group.len();
        let mut r = Recorder {
            flow_drops: vec![0; nflows],
            flow_ack_drops: vec![0; nflows],
            flow_marks: vec![0; nflows],
            log: vec![None; nlinks],
            sojourn: vec![None; nlinks],
            by_group: vec![None; nlinks],
            drop_delay: vec![None; nlinks],
            groups: groups.len(),
            flow_group,
            hist_from,
            end,
            ..Default::default()
        };
        for (i, &l) in logged.iter().enumerate() {
            r.log[l as usize] = Some(i as u8);
        }
        for m in monitors {
            r.sojourn[m.link as usize] = Some(r.hists.len() as u16);
            r.hists.push((format!("{}.sojourn", m.name), LogHist::default()));
            if m.by_group {
                r.by_group[m.link as usize] = Some(r.hists.len() as u16);
                for g in groups {
                    r.hists.push((format!("{}.sojourn.{g}", m.name), LogHist::default()));
                }
            }
        }
        for m in monitors.iter().filter(|m| m.drop_delay) {
            r.drop_delay[m.link as usize] = Some(r.hists.len() as u16);
            for c in aqm::Cause::ALL {
                r.hists.push((format!("{}.drop_delay.{}", m.name, c.name()), LogHist::default()));
            }
        }
        r
    }

    /// Is link `l`'s packet log on?
    pub fn logs(&self, l: u16) -> bool {
        self.log[l as usize].is_some()
    }

    /// A departure's time in a monitored queue, into its sojourn histograms. With
    /// one flow group the group's histogram is the whole one: it is copied at the
    /// end ([`Recorder::histograms`]) instead of kept twice.
    #[inline]
    fn sojourn(&mut self, l: u16, flow: u32, soj: u64) {
        if let Some(h) = self.sojourn[l as usize] {
            self.hists[h as usize].1.record(soj);
            if let (Some(g0), true) = (self.by_group[l as usize], self.groups > 1) {
                let g = self.flow_group[flow as usize] as usize;
                self.hists[g0 as usize + g].1.record(soj);
            }
        }
    }

    /// A packet admitted into link `l`'s queue at `t`: `p` is (flow, uid, kind, size).
    #[inline]
    pub fn enqueued<P: aqm::QPacket>(&mut self, l: u16, t: Time, p: (u32, u64, u8, u32), q: &aqm::Qdisc<P>, marked: Option<aqm::Cause>) {
        let (flow, uid, kind, size) = p;
        if let Some(log) = self.log[l as usize] {
            let backlog = q.backlog().bytes;
            self.packets.push(t.as_nanos(), log, flow, uid, kind, size, EV_ENQUEUE, 0, -1, backlog, -1);
            if let Some(c) = marked {
                self.packets.push(t.as_nanos(), log, flow, uid, kind, size, EV_MARK, c as u8 + 1, -1, backlog, probe_delay(q));
            }
        }
        if marked.is_some() {
            self.flow_marks[flow as usize] += 1;
        }
    }

    /// A packet handed to link `l`'s transmitter at `t` after `sojourn` in its queue.
    #[inline]
    pub fn dequeued<P: aqm::QPacket>(&mut self, l: u16, t: Time, p: &crate::packet::Packet, sojourn: Duration, q: &aqm::Qdisc<P>, marked: Option<aqm::Cause>) {
        if t >= self.hist_from {
            self.sojourn(l, p.flow, sojourn.as_nanos());
        }
        if let Some(log) = self.log[l as usize] {
            let backlog = q.backlog().bytes;
            let (soj, kind) = (sojourn.as_nanos() as i64, p.kind as u8);
            self.packets.push(t.as_nanos(), log, p.flow, p.uid, kind, p.size, EV_DEQUEUE, 0, soj, backlog, -1);
            if let Some(c) = marked {
                self.packets.push(t.as_nanos(), log, p.flow, p.uid, kind, p.size, EV_MARK, c as u8 + 1, soj, backlog, probe_delay(q));
            }
        }
        if marked.is_some() {
            self.flow_marks[p.flow as usize] += 1;
        }
    }

    /// A packet booked through eager link `l`: its transmission starts at `start`
    /// after `sojourn` in the queue.
    #[inline]
    pub fn booked(&mut self, l: u16, flow: u32, start: Time, sojourn: Duration) {
        if self.sojourn[l as usize].is_some() && start >= self.hist_from && start <= self.end {
            self.sojourn(l, flow, sojourn.as_nanos());
        }
    }

    /// A packet dropped at link `l` at `t` for `cause` (after `sojourn` in the queue
    /// if dropped from inside it), leaving `backlog` bytes queued on a link of
    /// `rate_bps`; `q`, the queue, for the packet log's AQM estimate.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    pub fn dropped<P: aqm::QPacket>(&mut self, l: u16, t: Time, p: &crate::packet::Packet, cause: aqm::Cause, sojourn: Option<Duration>, backlog: u64, rate_bps: u64, q: Option<&aqm::Qdisc<P>>) {
        self.cons.dropped += 1;
        if let Some(h) = self.drop_delay[l as usize] {
            let x = (backlog as u128 * 8_000_000_000 / rate_bps.max(1) as u128) as u64;
            self.hists[h as usize + cause.index()].1.record(x);
        }
        if p.kind.is_forward() {
            self.flow_drops[p.flow as usize] += 1;
        } else {
            self.flow_ack_drops[p.flow as usize] += 1;
        }
        if let Some(log) = self.log[l as usize] {
            let soj = sojourn.map_or(-1, |s| s.as_nanos() as i64);
            let d = q.map_or(-1, probe_delay);
            self.packets.push(t.as_nanos(), log, p.flow, p.uid, p.kind as u8, p.size, EV_DROP, cause as u8 + 1, soj, backlog, d);
        }
    }

    /// The histograms' names and moments, and their buckets.
    pub fn histograms(&mut self) -> (Vec<HistInfo>, HistTable) {
        if self.groups == 1 {
            for l in 0..self.sojourn.len() {
                if let (Some(h), Some(g)) = (self.sojourn[l], self.by_group[l]) {
                    self.hists[g as usize].1 = self.hists[h as usize].1.clone();
                }
            }
        }
        let mut info = Vec::new();
        let mut t = HistTable::default();
        for (i, (name, h)) in self.hists.iter().enumerate() {
            info.push(HistInfo { name: name.clone(), count: h.count, sum_ns: h.sum as f64, min_ns: (h.count > 0).then_some(h.min), max_ns: (h.count > 0).then_some(h.max) });
            for (b, c) in h.nonzero() {
                let (lo, hi) = crate::hist::bounds(b);
                t.hist.push(i as u16);
                t.lo_ns.push(lo);
                t.hi_ns.push(hi);
                t.count.push(c);
            }
        }
        (info, t)
    }
}

/// Static description and final counters of a link.
#[derive(Debug, Clone, Serialize)]
pub struct LinkInfo {
    pub name: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub aqm: String,
    pub limit_packets: Option<u64>,
    pub limit_bytes: Option<u64>,
    pub stats: aqm::Stats,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupInfo {
    pub name: String,
    pub kind: String,
    pub count: u32,
    pub cc: Option<String>,
    pub receiver: Option<String>,
    pub base_rtt_ns: u64,
    /// The first flow id of the group (its flows are consecutive).
    pub first_flow: u32,
    /// Files and web: the distinct file sizes when the sizes come from a list.
    pub sizes: Option<Vec<u64>>,
    /// CBR: the sending rate and datagram size.
    pub rate_bps: Option<u64>,
    pub packet_size: Option<u32>,
}

/// Packet conservation, checked at the end of every run.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
pub struct Conservation {
    pub created: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
}

impl Conservation {
    pub fn holds(&self) -> bool {
        self.created == self.delivered + self.dropped + self.in_flight
    }
}

/// Everything a run produces.
#[derive(Debug)]
pub struct RunOutput {
    /// The scenario with all defaults, as JSON.
    pub scenario_json: String,
    pub seed: u64,
    pub sim_ns: u64,
    pub wall_seconds: f64,
    pub events: u64,
    pub links: Vec<LinkInfo>,
    /// Names of the links in [`PacketLog::link`] order.
    pub logged_links: Vec<String>,
    pub groups: Vec<GroupInfo>,
    pub conservation: Conservation,
    pub packets: PacketLog,
    pub link_series: LinkSeries,
    pub flow_series: FlowSeries,
    pub flows: FlowTable,
    pub flow_trace: FlowTrace,
    pub transfers: TransferLog,
    pub datagrams: DatagramLog,
    /// The streaming histograms' names and moments, and their buckets.
    pub histograms: Vec<HistInfo>,
    pub histogram_buckets: HistTable,
}
