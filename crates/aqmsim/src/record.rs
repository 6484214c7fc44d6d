//! Columnar records of a run: packet events at the recorded links, per-interval link
//! and flow samples, and one row per flow at the end. Plain `Vec` columns, appended
//! to on the hot path and handed to Python (or any Arrow writer) as they are.

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

/// Streaming histograms kept in every run, whatever `record.packets` says: the
/// queueing-delay distributions of the headline figures in fixed memory (see
/// [`crate::hist`] for the layout and its error bound of 0.39 %).
#[derive(Debug, Default)]
pub struct Histograms {
    /// Sojourn time (ns) of every packet dequeued from the bottleneck at or after
    /// `metrics.warmup`, as the `dequeue` rows of `packets.parquet`.
    pub bottleneck_sojourn: LogHist,
    /// The same per flow group.
    pub bottleneck_sojourn_by_group: Vec<LogHist>,
    /// The reverse bottleneck's (ACKs) from `metrics.warmup` on.
    pub bottleneck_rev_sojourn: LogHist,
    /// The queueing delay when a bottleneck drop happened, by cause (index with
    /// [`aqm::Cause::index`]): the backlog after the drop over the link rate, ns
    /// (Kuhn & Ros Fig. 4); every drop of the run.
    pub drop_delay: [LogHist; 3],
}

/// One histogram's identity and exact moments, for `meta["histograms"]`.
#[derive(Debug, Clone, Serialize)]
pub struct HistInfo {
    /// "bottleneck.sojourn", "bottleneck.sojourn.<group>", "bottleneck_rev.sojourn",
    /// "bottleneck.drop_delay.<cause>".
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

impl Histograms {
    /// Flatten into named moments and bucket rows.
    pub fn table(&self, group_names: &[String]) -> (Vec<HistInfo>, HistTable) {
        let mut named: Vec<(String, &LogHist)> = vec![("bottleneck.sojourn".into(), &self.bottleneck_sojourn)];
        for (g, h) in group_names.iter().zip(&self.bottleneck_sojourn_by_group) {
            named.push((format!("bottleneck.sojourn.{g}"), h));
        }
        named.push(("bottleneck_rev.sojourn".into(), &self.bottleneck_rev_sojourn));
        for c in aqm::Cause::ALL {
            named.push((format!("bottleneck.drop_delay.{}", c.name()), &self.drop_delay[c.index()]));
        }
        let mut info = Vec::new();
        let mut t = HistTable::default();
        for (i, (name, h)) in named.into_iter().enumerate() {
            info.push(HistInfo {
                name,
                count: h.count,
                sum_ns: h.sum as f64,
                min_ns: (h.count > 0).then_some(h.min),
                max_ns: (h.count > 0).then_some(h.max),
            });
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
