//! A TCP flow: a sender on one host, a receiver on the other, over one connection
//! at a time. A flow that opens a new connection per download keeps the totals of
//! its earlier connections and discards what still arrives for them.

use aqm::{Duration, Time};

use super::{Cx, FlowSetup};
use crate::packet::Packet;
use crate::record::{FlowSeries, FlowTable};
use crate::tcp::sender::SenderStats;
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};

pub struct TcpFlow {
    pub snd: TcpSender,
    pub rcv: TcpReceiver,
    /// The current connection.
    pub conn: u32,
    /// Payload bytes delivered by the flow's earlier connections, and their
    /// senders' counters.
    delivered_before: u64,
    stats_before: SenderStats,
    min_rtt_before: Option<Duration>,
    /// The run's seed and the flow's stream name, for each connection's controller
    /// stream (BBR draws its gain cycle's starting phase from it).
    rng_name: Option<(u64, String)>,
    /// The flow's path RTT, given to each connection's receiver.
    path_rtt: Option<Duration>,
}

fn min_opt<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An advertised window for the records: -1 when it does not limit.
fn window_col(w: u64) -> i64 {
    if w >= crate::tcp::receiver::UNLIMITED_WINDOW { -1 } else { w as i64 }
}

impl TcpFlow {
    pub fn new(flow: u32, cfg: &TcpConfig) -> TcpFlow {
        TcpFlow { snd: TcpSender::new(flow, cfg), rcv: TcpReceiver::new(flow, cfg), conn: 0, delivered_before: 0, stats_before: SenderStats::default(), min_rtt_before: None, rng_name: None, path_rtt: None }
    }

    /// Give each connection's congestion controller its own random stream, named
    /// after the flow's group and index; and its receiver the flow's path RTT, which
    /// stands in for a handshake's RTT sample when there is no handshake
    /// ([`TcpReceiver::assume_path_rtt`]).
    pub fn seeded(mut self, f: &FlowSetup<'_>) -> TcpFlow {
        self.rng_name = Some((f.seed, format!("group.{}.flow.{}.cc", f.group, f.index)));
        self.seed_cc();
        self.path_rtt = Some(f.base_rtt);
        self.rcv.assume_path_rtt(f.base_rtt);
        self
    }

    fn seed_cc(&mut self) {
        if let Some((seed, name)) = &self.rng_name {
            self.snd.set_cc_rng(crate::rng::stream(*seed, &format!("{name}.conn.{}", self.conn)));
        }
    }

    /// Open a new connection: fresh state; what is left of the old one is discarded.
    pub fn reconnect(&mut self, flow: u32, cfg: &TcpConfig) {
        self.conn += 1;
        self.delivered_before += self.rcv.bytes_delivered;
        self.stats_before = self.stats_before + self.snd.stats;
        self.min_rtt_before = min_opt(self.min_rtt_before, self.snd.min_rtt());
        self.snd = TcpSender::new(flow, cfg);
        self.rcv = TcpReceiver::new(flow, cfg);
        if let Some(r) = self.path_rtt {
            self.rcv.assume_path_rtt(r);
        }
        self.seed_cc();
    }

    /// The sender's counters over all the flow's connections.
    pub fn stats(&self) -> SenderStats {
        self.stats_before + self.snd.stats
    }

    /// Payload bytes delivered over all the flow's connections.
    pub fn delivered(&self) -> u64 {
        self.delivered_before + self.rcv.bytes_delivered
    }

    /// A packet of this flow reached one of its hosts: data at the receiver, ACKs
    /// at the sender (recorded if the flow is traced).
    #[inline]
    pub fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>) {
        if p.kind.is_forward() {
            self.rcv.on_packet(p, cx.now, cx.out);
        } else {
            self.snd.on_packet(p, cx.now, cx.out);
            if cx.traced {
                self.trace_ack(p, cx);
            }
        }
    }

    fn trace_ack(&self, a: &Packet, cx: &mut Cx<'_>) {
        let s = &self.snd;
        let r = &mut cx.rec.flow_trace;
        r.time_ns.push(cx.now.as_nanos());
        r.flow.push(cx.flow);
        r.conn.push(self.conn);
        r.acked_bytes.push(s.stats.bytes_acked);
        r.snd_una.push(s.snd_una);
        r.snd_nxt.push(s.snd_nxt);
        r.cwnd.push(s.w.cwnd);
        r.in_flight.push(s.pipe());
        r.unacked.push(s.outstanding());
        r.rtt_ns.push(s.last_rtt().map_or(-1, |d| d.as_nanos() as i64));
        r.srtt_ns.push(s.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
        r.rwnd.push(window_col(a.rwnd));
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.snd.on_timer(now, out);
        self.rcv.on_timer(now, out);
    }

    #[inline]
    pub fn poll_at(&self) -> Option<Time> {
        min_opt(self.snd.poll_at(), self.rcv.poll_at())
    }

    pub fn sample(&self, r: &mut FlowSeries) {
        let s = &self.snd;
        r.cwnd.push(s.w.cwnd);
        r.ssthresh.push(if s.w.ssthresh >= crate::tcp::cc::INFINITE_SSTHRESH { f64::NAN } else { s.w.ssthresh });
        r.srtt_ns.push(s.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
        r.rtt_ns.push(s.last_rtt().map_or(-1, |d| d.as_nanos() as i64));
        r.rto_ns.push(s.rtt.rto().as_nanos());
        r.in_flight.push(s.pipe());
        r.delivered_bytes.push(self.delivered());
        r.snd_una.push(s.snd_una);
        r.retransmits.push(self.stats().retransmits);
        r.ca_state.push(s.ca_state.code());
        r.rwnd.push(window_col(self.rcv.last_rwnd));
        r.receiver_mode.push(self.rcv.window.mode_code());
    }

    /// The flow table's TCP columns; `end`: when a finite transfer ended.
    pub fn finish(&self, t: &mut FlowTable, end: Option<Time>, transfers: u32) {
        t.end_ns.push(end.map_or(-1, |x| x.as_nanos() as i64));
        t.bytes_delivered.push(self.delivered());
        let st = self.stats();
        t.segments_sent.push(st.segments_sent);
        t.retransmits.push(st.retransmits);
        t.timeouts.push(st.timeouts);
        t.recoveries.push(st.recoveries);
        t.ecn_reductions.push(st.ecn_reductions);
        t.loss_probes.push(st.loss_probes);
        t.loss_probe_recoveries.push(st.loss_probe_recoveries);
        t.dsacks.push(st.dsacks);
        t.undos.push(st.undos);
        t.spurious_rtos.push(st.spurious_rtos);
        t.lost_retransmits.push(st.lost_retransmits);
        t.min_rtt_ns.push(min_opt(self.min_rtt_before, self.snd.min_rtt()).map_or(-1, |d| d.as_nanos() as i64));
        t.srtt_ns.push(self.snd.rtt.srtt().map_or(-1, |d| d.as_nanos() as i64));
        t.transfers.push(transfers);
        t.receiver_reverts.push(self.rcv.window.reverts());
        t.receiver_returns.push(self.rcv.window.returns());
    }
}
