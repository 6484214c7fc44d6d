//! Columnar records of a run: packet events at the recorded links, per-interval link
//! and flow samples, and one row per flow at the end. Plain `Vec` columns, appended
//! to on the hot path and handed to Python (or any Arrow writer) as they are.
//! Beside them, pluggable [`sink`]s get the packets that leave chosen links (the
//! libpcap writer, [`pcap`], is one).

pub mod pcap;
pub mod sink;

use aqm::{Duration, Time};
use serde::Serialize;

use crate::hist::LogHist;
pub use sink::{OutputFile, PacketSink};

/// Event codes in [`PacketLog::event`].
pub const EV_ENQUEUE: u8 = 0;
pub const EV_DEQUEUE: u8 = 1;
pub const EV_DROP: u8 = 2;
pub const EV_MARK: u8 = 3;
pub const EVENT_NAMES: [&str; 4] = ["enqueue", "dequeue", "drop", "mark"];
/// Cause codes in [`PacketLog::cause`]: 0 = none, then [`aqm::Cause`] + 1.
pub const CAUSE_NAMES: [&str; 4] = ["", "overflow", "random", "deterministic"];
/// [`FlowSeries::ca_state`] codes.
pub const CA_STATE_NAMES: [&str; 4] = ["open", "recovery", "loss", "cwr"];
/// [`FlowSeries::receiver_mode`] codes.
pub const RECEIVER_MODE_NAMES: [&str; 5] = ["", "startup", "steady", "drs", "probe"];

/// The fixed code tables of the columns that hold codes; the others (`links`,
/// `logged_links`, `groups`) are the run's own, in its metadata.
pub fn code_tables() -> Vec<(&'static str, Vec<&'static str>)> {
    use crate::packet::Kind;
    vec![
        ("kind", [Kind::Data, Kind::Ack, Kind::Syn, Kind::SynAck, Kind::Udp].iter().map(|k| k.name()).collect()),
        ("event", EVENT_NAMES.to_vec()),
        ("cause", CAUSE_NAMES.to_vec()),
        ("ca_state", CA_STATE_NAMES.to_vec()),
        ("receiver_mode", RECEIVER_MODE_NAMES.to_vec()),
        // the order of every per-codepoint counter (links' ecn_arrived / ecn_dequeued)
        ("ecn", aqm::Ecn::NAMES.to_vec()),
    ]
}

/// One column of a record table: its name, element type, the code table its values
/// index (if any) and its documentation.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ColumnInfo {
    pub name: &'static str,
    pub dtype: &'static str,
    pub codes: Option<&'static str>,
    pub doc: &'static str,
}

/// A column's values, handed over without copying.
#[derive(Debug)]
pub enum Column {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
}

macro_rules! column_from {
    ($($t:ty => $v:ident),*) => {
        $( impl From<Vec<$t>> for Column {
            fn from(v: Vec<$t>) -> Self {
                Column::$v(v)
            }
        } )*
    };
}
column_from!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, i64 => I64, f64 => F64, bool => Bool);

/// A record table: its columns declared once, here, for the simulator, the
/// emulator and the Python side (which reads them through the binding).
pub trait Table {
    /// Its name in the raw records handed to Python.
    const NAME: &'static str;
    const COLUMNS: &'static [ColumnInfo];
    fn into_columns(self) -> Vec<(&'static str, Column)>;
}

/// Declare record tables: a struct of `Vec` columns, each with its docs, its
/// element type and, after `=`, the code table its values index.
macro_rules! tables {
    ($( $(#[doc = $sdoc:literal])* pub struct $name:ident ($tname:literal) { $( $(#[doc = $doc:literal])* $col:ident : $ty:ident $(= $codes:ident)? , )* } )*) => {
        $(
            $(#[doc = $sdoc])*
            #[derive(Default, Debug)]
            pub struct $name {
                $( $(#[doc = $doc])* pub $col: Vec<$ty>, )*
            }

            impl Table for $name {
                const NAME: &'static str = $tname;
                const COLUMNS: &'static [ColumnInfo] = &[
                    $( ColumnInfo {
                        name: stringify!($col),
                        dtype: stringify!($ty),
                        codes: { #[allow(unused_mut, unused_assignments)] let mut c: Option<&'static str> = None; $( c = Some(stringify!($codes)); )? c },
                        doc: concat!($($doc, "\n",)* ""),
                    }, )*
                ];
                fn into_columns(self) -> Vec<(&'static str, Column)> {
                    vec![ $( (stringify!($col), Column::from(self.$col)), )* ]
                }
            }
        )*

        /// Every record table's name and columns.
        pub fn schema() -> Vec<(&'static str, &'static [ColumnInfo])> {
            vec![ $( ($tname, <$name as Table>::COLUMNS), )* ]
        }
    };
}

tables! {
    /// One row per packet event on the recorded links (`packets.parquet`).
    pub struct PacketLog ("packets") {
        /// When the event happened (ns since the start).
        time_ns: u64,
        /// Index into [`RunOutput::logged_links`].
        link: u8 = logged_links,
        /// The packet's flow.
        flow: u32,
        /// The packet's number, unique in the run, in creation order.
        uid: u64,
        /// [`crate::packet::Kind`] as u8.
        kind: u8 = kind,
        /// Bytes on the wire.
        size: u32,
        /// Enqueue, dequeue, drop or mark ([`EVENT_NAMES`]).
        event: u8 = event,
        /// Why it was dropped or marked ([`CAUSE_NAMES`]; 0: neither).
        cause: u8 = cause,
        /// Time in the queue (dequeues, and drops from inside the queue); -1 otherwise.
        sojourn_ns: i64,
        /// Queue backlog after the event.
        backlog_bytes: u64,
        /// The AQM's own delay estimate at the event, -1 if it keeps none.
        aqm_delay_ns: i64,
    }
    /// One row per sampled link per interval; each row covers `(time - interval, time]`.
    pub struct LinkSeries ("link_series") {
        /// The end of the interval (ns).
        time_ns: u64,
        /// Index into [`RunOutput::links`].
        link: u16 = links,
        /// Capacity offered in the interval, averaged over it: the rate (time-weighted
        /// across scheduled changes), or full trace opportunities for a trace link.
        capacity_bps: u64,
        /// Time spent transmitting (rate links; 0 for trace links).
        busy_ns: u64,
        /// Trace links: delivery opportunities in the interval, and those that carried
        /// at least one byte (0 and 0 for rate links).
        opportunities: u64,
        /// Trace links: opportunities that carried at least one byte.
        opportunities_used: u64,
        /// Bytes whose transmission ended in the interval.
        tx_bytes: u64,
        /// Packets whose transmission ended in the interval.
        tx_packets: u64,
        /// Packets offered to the queue in the interval.
        arrivals: u64,
        /// Drops in the interval because the buffer was full.
        drops_overflow: u64,
        /// Drops in the interval by the AQM's probabilistic decision.
        drops_random: u64,
        /// Drops in the interval by a control law (MADPIE, CoDel).
        drops_deterministic: u64,
        /// CE marks in the interval.
        marks: u64,
        /// Bytes queued at the end of the interval.
        backlog_bytes: u64,
        /// Packets queued at the end of the interval.
        backlog_packets: u64,
        /// The AQM's drop probability at the sample (NaN if it has none).
        drop_prob: f64,
        /// The AQM's delay estimate (-1 if none).
        aqm_delay_ns: i64,
    }
    /// One row per flow per interval (TCP fields are NaN / -1 / 0 for UDP flows).
    pub struct FlowSeries ("flow_series") {
        /// The end of the interval (ns).
        time_ns: u64,
        /// The flow.
        flow: u32,
        /// Congestion window (segments; NaN for UDP).
        cwnd: f64,
        /// Slow-start threshold (segments; NaN while infinite or for UDP).
        ssthresh: f64,
        /// Smoothed RTT (-1 before the first sample).
        srtt_ns: i64,
        /// The latest RTT sample (-1 before the first).
        rtt_ns: i64,
        /// Retransmission timeout (0 for UDP).
        rto_ns: u64,
        /// RFC 6675 pipe: segments in flight.
        in_flight: u64,
        /// Payload bytes delivered in order at the receiver, cumulative.
        delivered_bytes: u64,
        /// Highest cumulatively acknowledged segment.
        snd_una: u64,
        /// Retransmissions so far.
        retransmits: u64,
        /// 0 open, 1 recovery, 2 loss (after a timeout), 3 cwr (reducing after ECN-Echo).
        ca_state: u8 = ca_state,
        /// The receiver's latest advertised window in bytes (-1: unlimited).
        rwnd: i64,
        /// Palermo-like receivers' mode: 0 none (DRS receiver, UDP), 1 start-up,
        /// 2 steady, 3 DRS behaviour, 4 base-RTT probe.
        receiver_mode: u8 = receiver_mode,
    }
/// One row per ACK arriving at a traced sender (`record.flow_trace`): the
    /// per-connection sequence, RTT and in-flight traces of Popovsky Figs. 2-4.
    pub struct FlowTrace ("flow_trace") {
        /// When the ACK arrived (ns).
        time_ns: u64,
        /// The flow.
        flow: u32,
        /// The connection of the flow (downloads on new connections count up).
        conn: u32,
        /// Payload bytes cumulatively acknowledged on this connection.
        acked_bytes: u64,
        /// Highest cumulatively acknowledged segment after the ACK.
        snd_una: u64,
        /// Next new segment to send.
        snd_nxt: u64,
        /// Congestion window (segments) after the ACK.
        cwnd: f64,
        /// RFC 6675 pipe (segments) after the ACK.
        in_flight: u64,
        /// Segments sent and not cumulatively acknowledged.
        unacked: u64,
        /// The RTT sample of this ACK, if it gave one (-1 otherwise).
        rtt_ns: i64,
        /// Smoothed RTT after the ACK (-1: none yet).
        srtt_ns: i64,
        /// The window advertised in the ACK (-1: unlimited).
        rwnd: i64,
    }
    /// One row per download or transfer (`transfers.parquet`).
    pub struct TransferLog ("transfers") {
        /// The client's flow.
        flow: u32,
        /// The flow's group.
        group: u16 = groups,
        /// The download's number within its flow, from 0.
        index: u32,
        /// The connection that carried it.
        conn: u32,
        /// The file's payload bytes.
        size_bytes: u64,
        /// When the client asked for it (the connection's start when each download opens one).
        request_ns: u64,
        /// When its last byte was delivered to the client (-1: not finished).
        end_ns: i64,
        /// Retransmissions and timeouts of the sender while it ran (-1: not finished).
        retransmits: i64,
        /// Retransmission timeouts while it ran (-1: not finished).
        timeouts: i64,
    }
    /// One row per UDP datagram received (`datagrams.parquet`).
    pub struct DatagramLog ("datagrams") {
        /// When it arrived (ns).
        time_ns: u64,
        /// The CBR flow.
        flow: u32,
        /// Datagram number within its flow, from 0.
        seq: u64,
        /// Bytes on the wire.
        size: u32,
        /// Arrival time minus sending time.
        delay_ns: u64,
        /// It arrived marked CE.
        ce: bool,
    }
    /// One row per flow at the end of the run.
    pub struct FlowTable ("flows") {
        /// The flow.
        flow: u32,
        /// Its group.
        group: u16 = groups,
        /// When it started (ns).
        start_ns: u64,
        /// When a finite transfer's last byte was delivered (-1: not finished or bulk).
        end_ns: i64,
        /// Payload bytes delivered to the receiving application.
        bytes_delivered: u64,
        /// Data segments (or datagrams) sent, retransmissions included.
        segments_sent: u64,
        /// Retransmitted segments.
        retransmits: u64,
        /// Retransmission timeouts.
        timeouts: u64,
        /// Fast recoveries entered.
        recoveries: u64,
        /// Window reductions on ECN-Echo.
        ecn_reductions: u64,
        /// Tail loss probes sent (Linux `TCPLossProbes`).
        loss_probes: u64,
        /// Losses a tail loss probe repaired (`TCPLossProbeRecovery`).
        loss_probe_recoveries: u64,
        /// Segments the receiver reported duplicate with D-SACK (`tcpi_dsack_dups`).
        dsacks: u64,
        /// Window reductions undone as spurious (Linux's `TCP*Undo` counters).
        undos: u64,
        /// Retransmission timeouts F-RTO found spurious (`TCPSpuriousRTOs`).
        spurious_rtos: u64,
        /// Retransmissions found lost in turn (`TCPLostRetransmit`).
        lost_retransmits: u64,
        /// Forward packets of this flow dropped anywhere; its ACKs dropped; CE marks.
        drops: u64,
        /// Its ACKs dropped anywhere.
        ack_drops: u64,
        /// Its packets marked CE.
        marks: u64,
        /// Forward packets (data, SYN, datagrams) sent Not-ECT.
        sent_not_ect: u64,
        /// Forward packets sent ECT(0).
        sent_ect0: u64,
        /// Forward packets sent ECT(1), the L4S identifier (RFC 9331 §2).
        sent_ect1: u64,
        /// Forward packets sent CE (none from this simulator's senders).
        sent_ce: u64,
        /// Forward packets that reached the receiving host Not-ECT.
        received_not_ect: u64,
        /// Forward packets that reached the receiving host ECT(0).
        received_ect0: u64,
        /// Forward packets that reached the receiving host ECT(1).
        received_ect1: u64,
        /// Forward packets that reached the receiving host CE (marked on the way).
        received_ce: u64,
        /// Smallest RTT sample (-1: none).
        min_rtt_ns: i64,
        /// Smoothed RTT at the end (-1: none).
        srtt_ns: i64,
        /// Propagation-only RTT of its path.
        base_rtt_ns: u64,
        /// Downloads or transfers completed (files, web, transfer).
        transfers: u32,
        /// Palermo receivers: reverts to DRS and returns (0 for others).
        receiver_reverts: u32,
        /// Palermo receivers: returns from DRS behaviour (0 for others).
        receiver_returns: u32,
    }
    /// The non-empty buckets of all histograms, one row each (`histograms.parquet`).
    pub struct HistTable ("histograms") {
        /// Index into [`RunOutput::histograms`].
        hist: u16 = histograms,
        /// The bucket's values `[lo_ns, hi_ns)`.
        lo_ns: u64,
        /// (see lo_ns).
        hi_ns: u64,
        /// Values in the bucket.
        count: u64,
    }
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
    /// Per flow: forward packets sent, and received at the receiving host, by ECN
    /// codepoint ([`aqm::Ecn::index`]).
    pub flow_ecn_sent: Vec<[u64; 4]>,
    pub flow_ecn_received: Vec<[u64; 4]>,
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
    /// Plugged-in consumers of the packets leaving chosen links.
    sinks: Sinks,
}

/// The recorder's sinks, and per link whether one of them wants its departures
/// (empty without sinks: a run without them tests one empty list per departure).
#[derive(Default)]
struct Sinks {
    all: Vec<Box<dyn PacketSink>>,
    wanted: Vec<bool>,
}

impl std::fmt::Debug for Sinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} sink(s)", self.all.len())
    }
}

/// What the recorder reads of a packet at a link: the simulator's
/// ([`crate::packet::Packet`]) and the emulator's real ones alike.
pub trait Logged {
    /// (flow, uid, kind code, bytes on the wire), as the packet log's columns hold them.
    fn logged(&self) -> (u32, u64, u8, u32);
    /// Its flow's forward traffic (data, SYN, datagram: a drop counts in the flow's
    /// `drops`), or the return traffic (its `ack_drops`).
    fn forward(&self) -> bool;
}

impl Logged for crate::packet::Packet {
    #[inline]
    fn logged(&self) -> (u32, u64, u8, u32) {
        (self.flow, self.uid, self.kind.code(), self.size)
    }
    #[inline]
    fn forward(&self) -> bool {
        self.kind.is_forward()
    }
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
            flow_ecn_sent: vec![[0; 4]; nflows],
            flow_ecn_received: vec![[0; 4]; nflows],
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

    /// A packet leaves its host: forward packets are counted by codepoint.
    #[inline]
    pub fn sent(&mut self, p: &crate::packet::Packet) {
        self.cons.created += 1;
        if p.kind.is_forward() {
            self.flow_ecn_sent[p.flow as usize][p.ecn().index()] += 1;
        }
    }

    /// A packet reaches its host: forward packets are counted by codepoint.
    #[inline]
    pub fn received(&mut self, p: &crate::packet::Packet) {
        self.cons.delivered += 1;
        if p.kind.is_forward() {
            self.flow_ecn_received[p.flow as usize][p.ecn().index()] += 1;
        }
    }

    /// Is link `l`'s packet log on?
    pub fn logs(&self, l: u16) -> bool {
        self.log[l as usize].is_some()
    }

    /// Plug in a sink: it gets the departures of its links ([`PacketSink::links`])
    /// from now on. Those links must not be eager (their packets must pass through
    /// the queue one by one), as logged links are not.
    pub fn add_sink(&mut self, s: Box<dyn PacketSink>) {
        for &l in s.links() {
            if self.sinks.wanted.len() <= l as usize {
                self.sinks.wanted.resize(l as usize + 1, false);
            }
            self.sinks.wanted[l as usize] = true;
        }
        self.sinks.all.push(s);
    }

    /// A packet leaves link `l`'s queue for its transmitter at `t`: to the sinks that
    /// want that link's departures.
    #[inline]
    pub fn sink_departure(&mut self, l: u16, t: Time, p: &crate::packet::Packet) {
        if self.sinks.wanted.get(l as usize).copied().unwrap_or(false) {
            self.sink_departure_slow(l, t, p);
        }
    }

    #[inline(never)]
    fn sink_departure_slow(&mut self, l: u16, t: Time, p: &crate::packet::Packet) {
        for s in &mut self.sinks.all {
            if s.links().contains(&l) {
                s.departure(l, t, p);
            }
        }
    }

    /// The run is over: each sink's files, given the rest of the run's output.
    pub fn finish_sinks(&mut self, run: &RunOutput) -> Vec<OutputFile> {
        std::mem::take(&mut self.sinks.all).into_iter().flat_map(|s| s.finish(run)).collect()
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
    pub fn dequeued<P: aqm::QPacket, L: Logged>(&mut self, l: u16, t: Time, p: &L, sojourn: Duration, q: &aqm::Qdisc<P>, marked: Option<aqm::Cause>) {
        let (flow, uid, kind, size) = p.logged();
        if t >= self.hist_from {
            self.sojourn(l, flow, sojourn.as_nanos());
        }
        if let Some(log) = self.log[l as usize] {
            let backlog = q.backlog().bytes;
            let soj = sojourn.as_nanos() as i64;
            self.packets.push(t.as_nanos(), log, flow, uid, kind, size, EV_DEQUEUE, 0, soj, backlog, -1);
            if let Some(c) = marked {
                self.packets.push(t.as_nanos(), log, flow, uid, kind, size, EV_MARK, c as u8 + 1, soj, backlog, probe_delay(q));
            }
        }
        if marked.is_some() {
            self.flow_marks[flow as usize] += 1;
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
    pub fn dropped<P: aqm::QPacket, L: Logged>(&mut self, l: u16, t: Time, p: &L, cause: aqm::Cause, sojourn: Option<Duration>, backlog: u64, rate_bps: u64, q: Option<&aqm::Qdisc<P>>) {
        let (flow, uid, kind, size) = p.logged();
        self.cons.dropped += 1;
        if let Some(h) = self.drop_delay[l as usize] {
            let x = (backlog as u128 * 8_000_000_000 / rate_bps.max(1) as u128) as u64;
            self.hists[h as usize + cause.index()].1.record(x);
        }
        if p.forward() {
            self.flow_drops[flow as usize] += 1;
        } else {
            self.flow_ack_drops[flow as usize] += 1;
        }
        if let Some(log) = self.log[l as usize] {
            let soj = sojourn.map_or(-1, |s| s.as_nanos() as i64);
            let d = q.map_or(-1, probe_delay);
            self.packets.push(t.as_nanos(), log, flow, uid, kind, size, EV_DROP, cause as u8 + 1, soj, backlog, d);
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
    /// The AQM's own figures at the end of the run, by sub-queue (DualPI2's L and C
    /// queues: coupled and step marks, classic and overload drops, sojourn totals).
    pub counters: Vec<aqm::Counter>,
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
    /// UDP sources (`cbr`, `onoff`): the mean offered rate and the datagram size.
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
    /// Files the run's sinks wrote (`record.pcap`'s captures), for the run folder.
    pub files: Vec<OutputFile>,
}

impl std::fmt::Debug for RunOutput {
    /// As `#[derive(Debug)]` would print it, except that `files` shows only when a
    /// sink wrote some: the whole-run digests (`tests/digests.rs`) hash this text, and
    /// a run without sinks keeps the digest it had before sinks existed. The
    /// destructuring lists every field, so a new one cannot be left out unnoticed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let RunOutput {
            scenario_json,
            seed,
            sim_ns,
            wall_seconds,
            events,
            links,
            logged_links,
            groups,
            conservation,
            packets,
            link_series,
            flow_series,
            flows,
            flow_trace,
            transfers,
            datagrams,
            histograms,
            histogram_buckets,
            files,
        } = self;
        let mut d = f.debug_struct("RunOutput");
        d.field("scenario_json", scenario_json)
            .field("seed", seed)
            .field("sim_ns", sim_ns)
            .field("wall_seconds", wall_seconds)
            .field("events", events)
            .field("links", links)
            .field("logged_links", logged_links)
            .field("groups", groups)
            .field("conservation", conservation)
            .field("packets", packets)
            .field("link_series", link_series)
            .field("flow_series", flow_series)
            .field("flows", flows)
            .field("flow_trace", flow_trace)
            .field("transfers", transfers)
            .field("datagrams", datagrams)
            .field("histograms", histograms)
            .field("histogram_buckets", histogram_buckets);
        if !files.is_empty() {
            d.field("files", files);
        }
        d.finish()
    }
}
