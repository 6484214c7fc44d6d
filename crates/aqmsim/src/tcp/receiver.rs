//! The TCP receiver: cumulative ACKs with SACK blocks (Mathis, Mahdavi, Floyd &
//! Romanow, RFC 2018) and D-SACK (Floyd, Mahdavi, Mathis & Podolsky, RFC 2883);
//! delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2) as Linux runs them: the
//! quick-ACK mode at the start and after an idle period longer than the RTO, the
//! adaptive delayed-ACK timeout (`ato`, 40 ms at least), an ACK for every second
//! full segment, SACK compression while holding out-of-order data
//! (`tcp_event_data_recv`, `__tcp_ack_snd_check`, `tcp_send_delayed_ack`); and an
//! advertised window of Linux's receive buffer with autotuning (`tcp/rcvbuf.rs`:
//! the window grows as data arrives, each segment that grows it is ACKed at once,
//! a read that opens the window far enough sends a window update, and a read that
//! empties the queue ACKs a pushed segment: one with PSH or a short one), or one
//! that never limits (`receive_buffer = "unlimited"`, the default).
//!
//! ECN feedback, as negotiated: RFC 3168 (ECE from a CE until the sender's CWR);
//! DCTCP's state machine (Alizadeh et al., RFC 8257 §3.2: ECE tells the CE state of
//! the latest segment, and a change of state is ACKed at once, after an ACK of what
//! came before it if one was delayed: Linux `dctcp_ece_ack_update`); or Accurate
//! ECN (RFC 9768: a count of CE-marked segments in the ACE field, and an immediate
//! ACK when the IP-ECN field changes or 6 marks wait, Linux
//! `tcp_ecn_received_counters`).

use aqm::{Duration, Time};

use super::jiffies;
use super::rcvbuf::RcvBuf;
use super::window::ReceiveWindow;
use super::{EcnMode, ReceiveBuffer, TcpConfig};
use crate::packet::{Kind, Packet, SackBlocks};

/// AccECN: ACK at once when this many CE marks wait to be echoed (RFC 9768
/// §3.2.2.5.2 allows at most 6; Linux `TCP_ACCECN_ACE_MAX_DELTA`), so the 3-bit
/// ACE field cannot wrap between two ACKs.
const ACE_MAX_DELTA: u32 = 6;

/// A window that never limits (Dynamic Right-Sizing keeps the advertised window
/// ahead of the sender; Fisk & Feng 2001).
pub const UNLIMITED_WINDOW: u64 = 1 << 40;

/// Linux `TCP_MAX_QUICKACKS`: segments ACKed at once in quick-ACK mode.
const MAX_QUICKACKS: u32 = 16;
/// Linux `TCP_DELACK_MAX`: the longest delayed-ACK timeout (`icsk_delack_max`).
const DELACK_MAX: Duration = Duration::from_millis(200);
/// Linux: `max_ato` = HZ / 2 outside interactive (ping-pong) mode.
const MAX_ATO: Duration = Duration::from_millis(500);
/// Linux `TCP_FASTRETRANS_THRESH`: duplicate ACKs sent at once before SACK compression.
const COMP_SACK_DUPACKS: u32 = 3;
/// Linux `tcp_comp_sack_nr` (44) and `tcp_comp_sack_delay_ns` (1 ms).
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY: Duration = Duration::from_millis(1);
/// Linux `TCP_TIMEOUT_INIT`: the RTO before any RTT sample.
const TIMEOUT_INIT: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub acks_sent: u64,
    pub ce_received: u64,
    /// ACKs that carried a D-SACK block.
    pub dsacks_sent: u64,
}

pub struct TcpReceiver {
    pub flow: u32,
    delayed_ack: bool,
    ack_every: u32,
    /// Linux `TCP_ATO_MIN` / `TCP_DELACK_MIN` (40 ms).
    ato_min: Duration,
    /// Segments left to ACK at once (`icsk_ack.quick`), and its ceiling.
    quick: u32,
    max_quickacks: u32,
    /// The delayed-ACK timeout (`icsk_ack.ato`; `None` before the first data).
    ato: Option<Duration>,
    /// When data last arrived in order (`icsk_ack.lrcvtime`).
    lrcvtime: Time,
    /// An ACK is due now whatever the other rules (`ICSK_ACK_NOW`).
    ack_now: bool,
    /// `ICSK_ACK_PUSHED` and `ICSK_ACK_PUSHED2` (`tcp_measure_rcv_mss`): a full
    /// segment with PSH, or a short segment (two: PUSHED2), arrived since the last
    /// ACK; the read that empties the receive queue then ACKs (`tcp_cleanup_rbuf`).
    pushed: u8,
    sack: bool,
    dsack: bool,
    /// A D-SACK block for the next ACK (RFC 2883 §4: the duplicate's range).
    pending_dsack: Option<(u64, u64)>,
    sack_compression: bool,
    /// SACK compression (`tcp_comp_sack_*`): duplicate ACKs sent at once for the
    /// current `rcv_nxt`, ACKs held back since the last one sent.
    dup_ack_counter: u32,
    compressed_ack_rcv_nxt: u64,
    compressed_ack: u32,
    header: u32,
    /// Linux's clock tick: the delayed-ACK timer fires on it.
    tick: Duration,
    /// The receiver's own RTT estimate (a handshake's SYN-ACK to its ACK, or the
    /// path's two-way propagation delay without a handshake) and
    /// RTO (`srtt_us`, `icsk_rto`), and its receive-side RTT estimate from the
    /// timestamps echoed on data (`rcv_rtt_est`, 1/8 weight).
    srtt: Option<Duration>,
    rto: Duration,
    rto_min: Duration,
    rcv_rtt: Option<Duration>,
    last_tsecr: u64,
    synack_sent_at: Option<Time>,
    /// The connection opens with a handshake (`tcp.handshake`).
    handshake: bool,
    /// The largest window to advertise (a fixed window, or unlimited).
    rwnd: u64,
    /// The window policy (tcp/window: DRS, Palermo).
    pub window: Box<dyn ReceiveWindow>,
    /// Linux's receive buffer (`receive_buffer = "linux"`), made when the first
    /// segment arrives (`tcp_init_buffer_space` at establishment); the bytes that
    /// arrived in order and are not read yet (the application reads right after the
    /// ACK decision of each arrival).
    linux_buffer: bool,
    mss: u64,
    pub buf: Option<RcvBuf>,
    unread: u64,
    /// Right edge of the advertised window, in payload bytes: never moves left.
    right_edge: u64,
    /// The window in the latest ACK.
    pub last_rwnd: u64,
    /// Next segment expected.
    pub rcv_nxt: u64,
    /// Out-of-order data held, as sorted disjoint ranges.
    ooo: Vec<Range>,
    /// Their payload bytes (the sum of `ooo`'s, kept as they change).
    ofo_total: u64,
    /// Segments that most recently arrived out of order, newest first (for the order
    /// of SACK blocks, RFC 2018 §4).
    recent: [Option<u64>; SackBlocks::MAX],
    /// In-order segments received since the last ACK (`rcv_nxt - rcv_wup`).
    unacked: u32,
    /// The delayed ACK's expiry (`icsk_ack.timeout`, on a tick) and when the timer
    /// wheel runs it.
    delack_deadline: Option<Time>,
    delack_runs_at: Option<Time>,
    /// The SACK-compression timer.
    comp_deadline: Option<Time>,
    /// RFC 7323 §4.3: TS.Recent, the timestamp to echo on ACKs, and Last.ACK.sent,
    /// the cumulative ACK last sent.
    ts_recent: u64,
    last_ack_sent: u64,
    /// ECN negotiated (RFC 3168 §6.1.1).
    ecn: bool,
    /// The feedback: RFC 3168 or AccECN (RFC 9768), when `ecn`.
    mode: EcnMode,
    /// DCTCP's ECE state machine in place of RFC 3168's (RFC 8257 §3.2).
    dctcp: bool,
    /// Echo ECE on every ACK until a CWR arrives (RFC 3168 §6.1.3); under DCTCP,
    /// the CE state of the latest segment.
    ece: bool,
    /// ECT seen on a segment (Linux `TCP_ECN_SEEN`).
    ecn_seen: bool,
    /// AccECN: CE-marked segments received (r.cep, RFC 9768 §3.2.1), those not yet
    /// echoed, and the IP-ECN field of the latest segment.
    received_ce: u64,
    ce_pending: u32,
    prev_ecn: aqm::Ecn,
    /// The codepoint of its ACKs: ECN-capable under AccECN or with a controller that
    /// needs ECN (Linux sets ECT on every segment then), Not-ECT otherwise.
    ack_ecn: aqm::Ecn,
    /// DCTCP: the CE state of the latest segment (`ca->ce_state`); `ece` is then
    /// what the ACKs echo (`TCP_ECN_DEMAND_CWR`, set from it).
    dctcp_ce: bool,
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Payload bytes of every new (not duplicate) segment, in order or not.
    pub bytes_received: u64,
    /// For finite transfers: segments expected in all, and when the last arrived.
    pub expect_segments: Option<u64>,
    pub completed_at: Option<Time>,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(flow: u32, cfg: &TcpConfig) -> TcpReceiver {
        TcpReceiver {
            flow,
            delayed_ack: cfg.delayed_ack,
            ack_every: cfg.ack_every,
            ato_min: cfg.delack_timeout,
            quick: 0,
            max_quickacks: cfg.quickack,
            ato: None,
            lrcvtime: Time::ZERO,
            ack_now: false,
            pushed: 0,
            sack: cfg.sack,
            dsack: cfg.sack && cfg.dsack,
            pending_dsack: None,
            sack_compression: cfg.sack_compression,
            dup_ack_counter: 0,
            compressed_ack_rcv_nxt: 0,
            compressed_ack: 0,
            header: cfg.header.0 as u32,
            tick: cfg.tick,
            srtt: None,
            rto: TIMEOUT_INIT,
            rto_min: cfg.rto_min,
            rcv_rtt: None,
            last_tsecr: 0,
            synack_sent_at: None,
            handshake: cfg.handshake,
            rwnd: cfg.receive_window.map_or(UNLIMITED_WINDOW, |w| w.0),
            window: cfg.receiver.build(cfg.mss.0),
            linux_buffer: cfg.receive_buffer == ReceiveBuffer::Linux,
            mss: cfg.mss.0,
            buf: None,
            unread: 0,
            right_edge: 0,
            last_rwnd: cfg.receive_window.map_or(UNLIMITED_WINDOW, |w| w.0),
            rcv_nxt: 0,
            ooo: Vec::new(),
            ofo_total: 0,
            recent: [None; SackBlocks::MAX],
            unacked: 0,
            delack_deadline: None,
            delack_runs_at: None,
            comp_deadline: None,
            ts_recent: 0,
            last_ack_sent: 0,
            ecn: cfg.ecn_mode() != EcnMode::Off,
            mode: cfg.ecn_mode(),
            dctcp: cfg.ecn_mode() == EcnMode::Rfc3168 && cfg.cc.needs_ecn(),
            ece: false,
            ecn_seen: false,
            received_ce: 0,
            ce_pending: 0,
            prev_ecn: aqm::Ecn::NotEct,
            ack_ecn: if cfg.ecn_mode() == EcnMode::AccEcn || (cfg.ecn_mode() == EcnMode::Rfc3168 && cfg.cc.needs_ecn()) { cfg.cc.ect() } else { aqm::Ecn::NotEct },
            dctcp_ce: false,
            bytes_delivered: 0,
            bytes_received: 0,
            expect_segments: None,
            completed_at: None,
            stats: ReceiverStats::default(),
        }
    }

    /// The receiver's own RTT estimate (Linux's passive side's `srtt_us`): the
    /// handshake's, or without one the path's ([`Self::assume_path_rtt`]). It caps
    /// the delayed-ACK timeout.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn poll_at(&self) -> Option<Time> {
        match (self.delack_runs_at, self.comp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A timer `d` from `now` on Linux's clock: the tick it expires on.
    fn timer_at(&self, now: Time, d: Duration) -> Time {
        jiffies::expiry(now, d, self.tick)
    }

    pub fn on_packet(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        match p.kind {
            Kind::Syn => {
                let mut sa = Packet::new(0, self.flow, Kind::SynAck, self.header, now);
                // RFC 3168 §6.1.1: agree to ECN if asked and configured. RFC 9768
                // §3.1.1: an AccECN SYN (AE, CWR, ECE all set) gets an ACE that
                // echoes the SYN's IP-ECN field (Table 2: Not-ECT 0b010, ECT(1)
                // 0b011, ECT(0) 0b100, CE 0b110); otherwise ECE alone (0b001).
                if self.mode == EcnMode::AccEcn && p.ace() == 0b111 {
                    sa.set_ace(match p.ecn() {
                        aqm::Ecn::NotEct => 0b010,
                        aqm::Ecn::Ect1 => 0b011,
                        aqm::Ecn::Ect0 => 0b100,
                        aqm::Ecn::Ce => 0b110,
                    });
                } else {
                    self.ecn = self.ecn && p.ece() && p.cwr();
                    self.mode = if self.ecn { EcnMode::Rfc3168 } else { EcnMode::Off };
                    sa.set_flag(Packet::ECE, self.ecn);
                }
                out.push(sa);
                self.synack_sent_at = Some(now);
            }
            Kind::FwdAck => self.on_handshake_ack(now),
            Kind::Data => self.on_data(p, now, out),
            _ => {}
        }
    }

    /// The handshake's RTT sample, taken once, on the handshake's ACK (RFC 9293
    /// §3.5: it moves the passive side from SYN-RECEIVED to ESTABLISHED) or, if
    /// that ACK was lost or came late, on the first data segment, which completes
    /// the handshake as well. Linux `tcp_synack_rtt_meas`: now minus the SYN-ACK's
    /// send time, through `tcp_ack_update_rtt` (so srtt = that sample and the RTO
    /// `srtt + max(4 * rttvar, rto_min)` with rttvar = srtt / 2, RFC 6298 §2.2);
    /// `TCP_TIMEOUT_INIT` stays the RTO before.
    fn take_synack_rtt(&mut self, now: Time) {
        if let Some(t) = self.synack_sent_at.take() {
            self.first_rtt_sample(now.saturating_since(t));
        }
    }

    /// The connection's first RTT sample `r` (`tcp_ack_update_rtt` with no
    /// estimate yet): srtt = r, rttvar = r / 2, RTO = r + max(4 * rttvar, rto_min).
    fn first_rtt_sample(&mut self, r: Duration) {
        self.srtt = Some(r);
        self.rto = r + (r + r).max(self.rto_min);
    }

    /// Without a handshake, the RTT sample a handshake on the empty path would have
    /// given: the flow's two-way propagation delay, as srtt and RTO as
    /// [`Self::take_synack_rtt`] sets them. The simulator's stand-in for what Linux
    /// always has (`tcp_synack_rtt_meas`): without it the receiver has no RTT
    /// estimate, and its delayed-ACK timeout is bounded only by `TCP_DELACK_MAX`
    /// instead of `max(srtt, TCP_DELACK_MIN)` (`tcp_send_delayed_ack`), so a lone
    /// segment's ACK can come later than the sender's loss probe. With a handshake
    /// it does nothing: the handshake measures.
    pub fn assume_path_rtt(&mut self, rtt: Duration) {
        if !self.handshake && self.srtt.is_none() {
            self.first_rtt_sample(rtt);
        }
    }

    /// The handshake's third segment (a pure ACK, [`Kind::FwdAck`]): the RTT
    /// sample, and the connection is established (Linux `tcp_rcv_state_process`
    /// in `TCP_SYN_RECV`: `tcp_init_transfer` sizes the receive buffer).
    fn on_handshake_ack(&mut self, now: Time) {
        self.take_synack_rtt(now);
        self.establish(now);
    }

    /// Linux `tcp_incr_quickack`: ACK the next segments at once.
    fn incr_quickack(&mut self, max: u32) {
        // with a receive buffer: half the window in segments (at least 2), as Linux
        let q = self.buf.as_ref().map_or(max, |b| b.quickacks().min(max)).min(self.max_quickacks);
        self.quick = self.quick.max(q);
    }

    /// Payload bytes held out of order.
    fn ofo_bytes(&self) -> u64 {
        debug_assert_eq!(self.ofo_total, self.ooo.iter().map(|r| r.bytes).sum::<u64>());
        self.ofo_total
    }

    /// The span from `rcv_nxt` to the end of the highest out-of-order data, in
    /// bytes (segments of `mss`).
    fn ofo_span(&self) -> u64 {
        self.ooo.last().map_or(0, |r| (r.end - self.rcv_nxt) * self.mss)
    }

    /// Linux's receive buffer, made at the connection's establishment (the
    /// handshake's ACK, else the first segment) for the autotuning's first measure.
    fn establish(&mut self, now: Time) {
        if self.linux_buffer && self.buf.is_none() {
            self.buf = Some(RcvBuf::new(self.mss, now));
        }
    }

    /// Linux `tcp_enter_quickack_mode`.
    fn enter_quickack_mode(&mut self, max: u32) {
        self.incr_quickack(max);
        self.ato = Some(self.ato_min);
    }

    /// Linux `tcp_event_data_recv`: the delayed-ACK engine learns the spacing of the
    /// data; after a gap longer than the RTO, ACK quickly again (the sender failed
    /// to restart its window).
    fn event_data_recv(&mut self, now: Time, len: u64, psh: bool) {
        if let Some(b) = self.buf.as_mut() {
            // tcp_measure_rcv_mss (the scaling ratio), tcp_rcv_rtt_measure
            b.measure_ratio(len);
            b.rtt_measure(now, self.bytes_delivered);
            self.measure_pushed(len, psh);
        }
        match self.ato {
            None => {
                // the first data: quick-ACK mode, ato = TCP_ATO_MIN
                self.incr_quickack(MAX_QUICKACKS);
                self.ato = Some(self.ato_min);
            }
            Some(ato) => {
                let m = now.saturating_since(self.lrcvtime);
                let half = self.ato_min.div_u64(2);
                if m <= half {
                    self.ato = Some(ato.div_u64(2) + half);
                } else if m < ato {
                    self.ato = Some((ato.div_u64(2) + m).min(self.rto));
                } else if m > self.rto {
                    self.incr_quickack(MAX_QUICKACKS);
                }
            }
        }
        self.lrcvtime = now;
        self.grow_window(len);
    }

    /// Linux `tcp_measure_rcv_mss`'s push flags: a full-sized segment with PSH
    /// (Cardwell, "tcp: fix delayed ACKs for MSS boundary condition", Linux 6.6)
    /// sets `ICSK_ACK_PUSHED`; a shorter one sets it too, and `ICSK_ACK_PUSHED2` if
    /// it was set already. Not modelled: Linux lowers its receive-MSS estimate
    /// (`rcv_mss`) after two short segments of the same length in a row, and the
    /// second then sets no flag.
    fn measure_pushed(&mut self, len: u64, psh: bool) {
        const PUSHED: u8 = 1;
        const PUSHED2: u8 = 2;
        if len >= self.mss {
            if psh {
                self.pushed |= PUSHED;
            }
        } else {
            if self.pushed & PUSHED != 0 {
                self.pushed |= PUSHED2;
            }
            self.pushed |= PUSHED;
        }
    }

    /// Linux `tcp_grow_window`: a segment that grows the window is ACKed at once,
    /// by `icsk_ack.quick |= 1`: a bitwise or, so that in quick-ACK mode (16 at the
    /// start) an even count gains one, and each growth keeps the mode one ACK longer.
    fn grow_window(&mut self, len: u64) {
        let unread = self.unread + self.ofo_bytes();
        if self.buf.as_mut().is_some_and(|b| b.grow_window(len, unread)) {
            self.quick |= 1;
        }
    }

    /// The application reads what arrived in order (`tcp_recvmsg`): the buffer's
    /// autotuning measures (`tcp_rcv_space_adjust`), then `tcp_cleanup_rbuf` ACKs if
    /// an every-second-segment ACK waited for the read, or if the receiver can now
    /// offer at least twice the window left (a window update).
    fn app_read(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.unread == 0 {
            return;
        }
        self.unread = 0;
        let (ofo, span) = (self.ofo_bytes(), self.ofo_span());
        let Some(b) = self.buf.as_mut() else { return };
        b.space_adjust(now, self.bytes_delivered, span);
        // an ACK is scheduled and more than one segment waits for it, or a pushed
        // segment arrived and the read emptied the queue (nothing held out of order)
        let waited = self.delack_deadline.is_some() && (self.unacked >= self.ack_every || (self.pushed != 0 && ofo == 0));
        if waited || b.window_update_due(self.bytes_delivered, ofo) {
            self.send_ack(now, out);
        }
    }

    /// Linux `__tcp_ecn_check_ce`, with DCTCP's `CA_EVENT_ECN_IS_CE` /
    /// `CA_EVENT_ECN_NO_CE` (`dctcp_ece_ack_update`, RFC 8257 §3.2): ECE tells the CE
    /// state of the latest segment, and a change is ACKed at once, after the delayed
    /// ACK of what came before it (with the old state) if one waits.
    fn ecn_check_ce(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        if !self.ecn {
            return;
        }
        if p.ecn() != aqm::Ecn::NotEct && self.dctcp {
            let ce = p.ecn() == aqm::Ecn::Ce;
            if ce != self.dctcp_ce {
                if self.delack_deadline.is_some() {
                    self.ece = self.dctcp_ce;
                    self.send_ack(now, out);
                }
                self.ack_now = true;
            }
            self.dctcp_ce = ce;
            self.ece = ce;
        }
        match p.ecn() {
            aqm::Ecn::NotEct => {
                // a Not-ECT segment after ECT ones is likely a retransmission
                if self.ecn_seen {
                    self.enter_quickack_mode(2);
                }
            }
            aqm::Ecn::Ce => {
                self.stats.ce_received += 1;
                if !self.ece && self.mode == EcnMode::Rfc3168 {
                    // better not delay the echo: the sender may have a small window
                    self.enter_quickack_mode(2);
                    self.ece = true;
                }
                self.ecn_seen = true;
            }
            _ => self.ecn_seen = true,
        }
    }

    fn on_data(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        self.stats.segments += 1;
        self.establish(now);
        let seq = p.seq;
        // the handshake's ACK was lost: this segment completes the handshake
        self.take_synack_rtt(now);
        if self.mode == EcnMode::Rfc3168 && p.cwr() {
            // RFC 3168 §6.1.3; Linux ACKs a segment with CWR at once
            // (`tcp_ecn_accept_cwr`; not under AccECN, whose CWR bit is part of ACE)
            self.ece = false;
            self.ack_now = true;
        }
        if self.mode == EcnMode::AccEcn {
            // RFC 9768 §3.2.2.5 (Linux `tcp_ecn_received_counters`): count CE-marked
            // segments; ACK at once on any change of the IP-ECN field, or when 6
            // marks wait to be echoed
            if p.ecn() == aqm::Ecn::Ce {
                self.received_ce += 1;
                self.ce_pending += 1;
            }
            if p.ecn() != self.prev_ecn {
                self.prev_ecn = p.ecn();
                self.ack_now = true;
            }
            self.ack_now |= self.ce_pending >= ACE_MAX_DELTA;
        }
        if p.ts_echo > 0 {
            let m = now.saturating_since(Time::from_nanos(p.ts_echo));
            // RFC 7323 §4.3 at the receiver (Linux `tcp_rcv_rtt_measure_ts`).
            self.window.on_rtt(now, m, self.bytes_received);
            if p.ts_echo != self.last_tsecr {
                // Linux tcp_rcv_rtt_measure_ts: the receive-side RTT from a new echo,
                // averaged with weight 1/8 (for SACK compression's delay)
                self.last_tsecr = p.ts_echo;
                if let Some(b) = self.buf.as_mut() {
                    b.rtt_measure_ts(m, p.payload as u64);
                }
                self.rcv_rtt = Some(match self.rcv_rtt {
                    None => m,
                    Some(r) => Duration::from_nanos(((7 * r.as_nanos() as u128 + m.as_nanos() as u128) / 8) as u64),
                });
            }
        }
        // RFC 7323 §4.3 (2): TS.Recent takes the segment's timestamp if the segment
        // starts at or before the edge last acknowledged: with delayed ACKs the
        // echo is the older segment's, past a hole it stays the last in-order one,
        // and the segment that fills a hole (a retransmission) has its own echoed.
        if seq <= self.last_ack_sent {
            self.ts_recent = self.ts_recent.max(p.sent_at.as_nanos());
        }
        if seq < self.rcv_nxt || self.holds(seq) {
            // A duplicate (Linux tcp_data_queue): report it with a D-SACK block
            // (RFC 2883) and ACK at once.
            self.stats.duplicates += 1;
            if self.dsack {
                self.pending_dsack = Some((seq, seq + 1));
            }
            if seq < self.rcv_nxt {
                self.enter_quickack_mode(MAX_QUICKACKS);
                self.send_ack(now, out);
            } else {
                self.ack_check(now, true, out);
            }
            return;
        }
        self.ecn_check_ce(p, now, out);
        self.bytes_received += p.payload as u64;
        self.window.on_data(now, self.bytes_received);
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.unacked += 1;
            self.bytes_delivered += p.payload as u64;
            self.unread += p.payload as u64;
            self.event_data_recv(now, p.payload as u64, p.flag(Packet::PSH));
            if let Some(first) = self.ooo.first() {
                if first.start == self.rcv_nxt {
                    self.rcv_nxt = first.end;
                    self.bytes_delivered += first.bytes;
                    self.unread += first.bytes;
                    self.ofo_total -= first.bytes;
                    self.ooo.remove(0);
                    // RFC 5681 §4.2: ACK at once when a segment fills the gap
                    // (Linux: once the out-of-order queue is empty; while data is
                    // still held, the new rcv_nxt is ACKed at once as a dup-ACK).
                    if self.ooo.is_empty() {
                        self.ack_now = true;
                    }
                }
            }
            self.check_complete(now);
            self.ack_check(now, true, out);
            self.app_read(now, out);
            return;
        }
        // Out of order: hold it; SACK it (at once for the first few, RFC 5681 §4.2).
        self.stats.out_of_order += 1;
        self.insert(seq, p.payload as u64);
        self.recent.rotate_right(1);
        self.recent[0] = Some(seq);
        if self.buf.is_some() {
            // Linux tcp_data_queue_ofo: the buffer grows for the out-of-order span
            // (tcp_rcvbuf_grow) and, with SACK, the window as for in-order data
            let span = self.ofo_span();
            if let Some(b) = self.buf.as_mut() {
                b.on_ofo(span);
            }
            if self.sack {
                self.grow_window(p.payload as u64);
            }
        }
        self.ack_check(now, true, out);
    }

    /// Linux `__tcp_ack_snd_check`: ACK now, or arm the delayed-ACK (or the SACK
    /// compression) timer.
    fn ack_check(&mut self, now: Time, ofo_possible: bool, out: &mut Vec<Packet>) {
        // More than one full segment unacknowledged, and (with a receive buffer)
        // the window offered would not shrink: else the ACK waits for the read.
        let mut every = self.unacked >= self.ack_every;
        if every {
            let unread = self.unread + self.ofo_bytes();
            if let Some(b) = self.buf.as_ref() {
                let (w, low) = b.select_window(unread);
                if low {
                    self.quick = 0; // __tcp_select_window ends quick-ACK mode
                }
                every = w >= b.rcv_wnd;
            }
        }
        if !self.delayed_ack
            || every
            || self.quick > 0
            || self.ack_now
        {
            self.send_ack(now, out);
            return;
        }
        if !ofo_possible || self.ooo.is_empty() {
            self.send_delayed_ack(now, out);
            return;
        }
        // Holding out-of-order data: the first duplicate ACKs for this rcv_nxt go at
        // once (fast retransmit needs them), then SACK compression
        if !self.sack || !self.sack_compression || self.compressed_ack >= COMP_SACK_NR {
            self.send_ack(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < COMP_SACK_DUPACKS {
            self.dup_ack_counter += 1;
            self.send_ack(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_deadline.is_none() {
            // 5 % of the RTT, at most 1 ms (an hrtimer: not on the tick)
            let rcv_rtt = match self.buf.as_ref() {
                Some(b) => b.rtt(),
                None => self.rcv_rtt,
            };
            let rtt = match (rcv_rtt, self.srtt) {
                (Some(r), Some(s)) => r.min(s),
                (r, s) => r.or(s).unwrap_or(Duration::ZERO),
            };
            self.comp_deadline = Some(now + rtt.div_u64(20).min(COMP_SACK_DELAY));
        }
    }

    /// Linux `tcp_send_delayed_ack`: the timeout is `ato`, bounded by the RTT (if
    /// known) and 200 ms; an earlier pending timeout stands, and one about to expire
    /// (within a quarter of the new timeout) sends the ACK now.
    fn send_delayed_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut ato = self.ato.unwrap_or(self.ato_min);
        if ato > self.ato_min {
            // with a pushed segment waiting, at most TCP_DELACK_MAX
            let mut max_ato = if self.pushed != 0 { DELACK_MAX } else { MAX_ATO };
            if let Some(srtt) = self.srtt {
                max_ato = max_ato.min(srtt.max(self.ato_min));
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(DELACK_MAX);
        let mut timeout = self.timer_at(now, ato);
        if let Some(d) = self.delack_deadline {
            if d <= self.timer_at(now, ato.div_u64(4)) {
                self.send_ack(now, out);
                return;
            }
            timeout = timeout.min(d);
        }
        // sk_reset_timer (mod_timer): the wheel runs the timer after its expiry; an
        // unchanged expiry keeps its bucket
        if self.delack_deadline != Some(timeout) || self.delack_runs_at.is_none() {
            self.delack_runs_at = Some(jiffies::runs_at(now, timeout, self.tick));
        }
        self.delack_deadline = Some(timeout);
    }

    /// The application expects more data on this connection, up to segment `end`
    /// (the next response on a persistent connection).
    pub fn expect_more(&mut self, end: u64) {
        self.expect_segments = Some(end);
        self.completed_at = None;
    }

    /// The window to advertise now, in bytes.
    fn advertise(&mut self) -> u64 {
        // A policy without a window of its own (DRS), or before its first measurement
        // (the sender's initial window limits then), offers the configured window; that
        // offer is not held to afterwards.
        let mut cap = self.rwnd;
        let unread = self.unread + self.ofo_bytes();
        if let Some(b) = self.buf.as_mut() {
            // Linux tcp_select_window: the buffer's window, never shrinking
            let (w, low) = b.window_for_ack(self.bytes_delivered, unread);
            if low {
                self.quick = 0;
            }
            cap = cap.min(w);
        }
        let Some(want) = self.window.window() else { return cap };
        let want = want.min(cap);
        // RFC 9293 §3.8.6.2.2: do not shrink the window (move its right edge left).
        let wnd = want.max(self.right_edge.saturating_sub(self.bytes_delivered));
        self.right_edge = self.bytes_delivered + wnd;
        wnd
    }

    fn check_complete(&mut self, now: Time) {
        if self.completed_at.is_none() && self.expect_segments.is_some_and(|n| self.rcv_nxt >= n) {
            self.completed_at = Some(now);
        }
    }

    fn find(&self, seq: u64) -> Result<usize, usize> {
        // index of the range containing seq, or where one starting at seq would go
        match self.ooo.binary_search_by(|r| r.start.cmp(&seq)) {
            Ok(i) => Ok(i),
            Err(i) if i > 0 && self.ooo[i - 1].end > seq => Ok(i - 1),
            Err(i) => Err(i),
        }
    }

    fn holds(&self, seq: u64) -> bool {
        self.find(seq).is_ok()
    }

    fn insert(&mut self, seq: u64, bytes: u64) {
        let i = match self.find(seq) {
            Ok(_) => return,
            Err(i) => i,
        };
        self.ofo_total += bytes;
        let joins_prev = i > 0 && self.ooo[i - 1].end == seq;
        let joins_next = i < self.ooo.len() && self.ooo[i].start == seq + 1;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = self.ooo.remove(i);
                let prev = &mut self.ooo[i - 1];
                prev.end = next.end;
                prev.bytes += bytes + next.bytes;
            }
            (true, false) => {
                let prev = &mut self.ooo[i - 1];
                prev.end += 1;
                prev.bytes += bytes;
            }
            (false, true) => {
                let next = &mut self.ooo[i];
                next.start = seq;
                next.bytes += bytes;
            }
            (false, false) => self.ooo.insert(i, Range { start: seq, end: seq + 1, bytes }),
        }
    }

    /// SACK blocks: a D-SACK block first if a duplicate just arrived (RFC 2883 §4),
    /// then the block holding the most recent arrival, then the blocks of earlier
    /// arrivals (RFC 2018 §4).
    fn sack_blocks(&mut self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        if !self.sack {
            return blocks;
        }
        if let Some((s, e)) = self.pending_dsack.take() {
            blocks.push(self.rcv_nxt, s, e);
            self.stats.dsacks_sent += 1;
        }
        if self.ooo.is_empty() {
            // nothing held above rcv_nxt: no more blocks (the usual case)
            return blocks;
        }
        let mut used: [Option<u64>; SackBlocks::MAX] = [None; SackBlocks::MAX];
        let mut nused = 0;
        for seq in self.recent.iter().flatten() {
            if *seq < self.rcv_nxt || blocks.len() == SackBlocks::MAX {
                continue;
            }
            if let Ok(i) = self.find(*seq) {
                let r = self.ooo[i];
                if used.iter().flatten().any(|&s| s == r.start) {
                    continue;
                }
                used[nused] = Some(r.start);
                nused += 1;
                blocks.push(self.rcv_nxt, r.start, r.end);
            }
        }
        // Fill remaining slots with the highest other ranges.
        for r in self.ooo.iter().rev() {
            if blocks.len() == SackBlocks::MAX {
                break;
            }
            if used.iter().flatten().any(|&s| s == r.start) {
                continue;
            }
            if nused < used.len() {
                used[nused] = Some(r.start);
                nused += 1;
            }
            blocks.push(self.rcv_nxt, r.start, r.end);
        }
        blocks
    }

    fn send_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut a = Packet::new(0, self.flow, Kind::Ack, self.header, now);
        a.seq = self.rcv_nxt;
        a.rwnd = self.advertise();
        self.last_rwnd = a.rwnd;
        a.sack = self.sack_blocks();
        if self.mode == EcnMode::AccEcn {
            // RFC 9768 §3.2.1: ACE = r.cep mod 8, r.cep starting at 5.
            a.set_ace(((self.received_ce + 5) & 7) as u8);
            self.ce_pending = 0;
        } else {
            a.set_flag(Packet::ECE, self.ece);
        }
        a.set_ecn(self.ack_ecn);
        // RFC 7323 §4.3 (3): TSecr = TS.Recent
        a.ts_echo = self.ts_recent;
        // Linux tcp_dec_quickack_mode: each ACK sent for arriving data uses one
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = Some(self.ato_min);
            }
        }
        self.last_ack_sent = self.rcv_nxt;
        out.push(a);
        self.unacked = 0;
        self.ack_now = false;
        self.pushed = 0;
        self.delack_deadline = None;
        self.delack_runs_at = None;
        self.comp_deadline = None;
        self.compressed_ack = 0;
        self.stats.acks_sent += 1;
    }

    /// Send the delayed (or compressed) ACK if its timer is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.delack_runs_at.is_some_and(|d| d <= now) {
            // Linux tcp_delack_timer_handler: a delayed ACK that had to wait for the
            // timer inflates ato (up to the RTO)
            if let Some(ato) = self.ato {
                self.ato = Some(ato.checked_mul(2).unwrap_or(Duration::MAX).min(self.rto));
            }
            self.send_ack(now, out);
        } else if self.comp_deadline.is_some_and(|d| d <= now) {
            self.send_ack(now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64) -> Packet {
        let mut p = Packet::new(0, 0, Kind::Data, 1500, Time::ZERO);
        p.seq = seq;
        p.payload = 1460;
        p
    }

    fn rx(quickack: u32) -> TcpReceiver {
        // the delayed-ACK rules alone: no receive buffer (its window-growth ACKs are
        // tested below and in rcvbuf.rs)
        TcpReceiver::new(0, &TcpConfig { quickack, receive_buffer: ReceiveBuffer::Unlimited, ..TcpConfig::default() })
    }

    #[test]
    fn without_a_handshake_the_path_rtt_caps_the_delayed_ack_as_a_handshake_s_would() {
        // tcp_send_delayed_ack: an ato of 120 ms is bounded by max(srtt, 40 ms) when
        // the receiver has an RTT estimate, else only by TCP_DELACK_MAX (200 ms)
        let delack = |r: &mut TcpReceiver| {
            r.ato = Some(Duration::from_millis(120));
            r.delack_deadline = None;
            r.send_delayed_ack(Time::ZERO, &mut Vec::new());
            r.delack_deadline.unwrap().saturating_since(Time::ZERO)
        };
        let mut r = rx(0);
        assert_eq!(r.srtt(), None);
        assert_eq!(delack(&mut r), Duration::from_millis(120));
        r.assume_path_rtt(Duration::from_millis(20));
        assert_eq!(r.srtt(), Some(Duration::from_millis(20)));
        // the RTO as from a handshake's sample: 20 + max(2 * 20, 200) ms
        assert_eq!(r.rto, Duration::from_millis(220));
        assert_eq!(delack(&mut r), Duration::from_millis(40));
        // a long path: the cap is its RTT
        let mut r = rx(0);
        r.assume_path_rtt(Duration::from_millis(100));
        assert_eq!(delack(&mut r), Duration::from_millis(100));
        // with a handshake the handshake measures: the path's RTT is not taken
        let mut r = TcpReceiver::new(0, &TcpConfig { handshake: true, receive_buffer: ReceiveBuffer::Unlimited, ..TcpConfig::default() });
        r.assume_path_rtt(Duration::from_millis(20));
        assert_eq!(r.srtt(), None);
    }

    #[test]
    fn acks_echo_ts_recent_by_rfc7323_rules() {
        // RFC 7323 §4.3: TS.Recent takes a segment's timestamp when the segment
        // starts at or before the last ACK's edge
        let mut r = rx(0);
        let mut out = Vec::new();
        let sent = |seq: u64, ms: u64| {
            let mut p = data(seq);
            p.sent_at = Time::from_millis(ms);
            p
        };
        let echo = |out: &Vec<Packet>| out.last().unwrap().ts_echo / 1_000_000;
        // delayed ACK of 0 and 1: the older segment's time (0 is at the edge, 1 beyond it)
        r.on_packet(&sent(0, 10), Time::from_millis(60), &mut out);
        r.on_packet(&sent(1, 11), Time::from_millis(61), &mut out);
        assert_eq!((out.len(), echo(&out)), (1, 10));
        // 2 is lost; 3 and 4 arrive out of order: the echo stays 2's predecessor's...
        r.on_packet(&sent(3, 13), Time::from_millis(63), &mut out);
        r.on_packet(&sent(4, 14), Time::from_millis(64), &mut out);
        assert_eq!((out.len(), echo(&out)), (3, 10));
        // ...until the retransmission of 2, sent at 200 ms, fills the hole
        r.on_packet(&sent(2, 200), Time::from_millis(250), &mut out);
        assert_eq!((out.len(), out.last().unwrap().seq, echo(&out)), (4, 5, 200));
    }

    #[test]
    fn delayed_ack_every_second_segment_or_after_the_timer() {
        // ato 40 ms (TCP_ATO_MIN) on Linux's 4 ms tick: data at 1 ms -> expires on
        // jiffy 0 + 10 ticks (40 ms); the timer wheel runs it on the next tick, 44 ms
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::from_millis(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(r.poll_at(), Some(Time::from_millis(44)));
        r.on_packet(&data(1), Time::from_millis(2), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 2);
        // a third segment 1 ms later: ato = 40 / 2 + 20 = 40 ms again; expires on
        // jiffy 10 (40 ms), runs on jiffy 11 (44 ms)
        r.on_packet(&data(2), Time::from_millis(3), &mut out);
        r.on_timer(Time::from_millis(40), &mut out);
        assert_eq!(out.len(), 1, "not yet run at its expiry, 40 ms");
        r.on_timer(Time::from_millis(43), &mut out);
        assert_eq!(out.len(), 1, "not yet run at 43 ms");
        r.on_timer(Time::from_millis(44), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].seq, 3);
        // the timer had to fire: ato doubles (Linux inflates it, up to the RTO)
        assert_eq!(r.ato, Some(Duration::from_millis(80)));
    }

    #[test]
    fn a_linux_receive_buffer_acks_every_segment_that_grows_the_window() {
        // A reading application, full segments of 1448 B 1.2 ms apart (10 Mb/s), no
        // timestamps (so no autotuning). Linux: the first segment starts quick-ACK
        // mode (16) and measures the scaling ratio (160/256): the clamp becomes
        // 81,920 and the window may grow from 65,160 to 80,472 in 6 steps of two
        // segments (rcvbuf.rs); each step ORs 1 into the quick count, which keeps it
        // at 16: segments 0-21 are ACKed one by one, then every second one.
        let cfg = TcpConfig { mss: aqm::Bytes(1448), receive_buffer: ReceiveBuffer::Linux, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let mut acked_at = Vec::new();
        for s in 0..30u64 {
            let mut p = data(s);
            p.payload = 1448;
            let n = out.len();
            r.on_packet(&p, Time::from_micros(10_000 + 1_200 * s), &mut out);
            if out.len() > n {
                acked_at.push(s);
            }
        }
        let expect: Vec<u64> = (0..22).chain([23, 25, 27, 29]).collect();
        assert_eq!(acked_at, expect);
        assert_eq!(r.buf.as_ref().unwrap().rcv_ssthresh, 80_472);
        // the window advertised: rcv_ssthresh rounded up to the scale (1024)
        assert_eq!(out.last().unwrap().rwnd, 80_896);
        // without the buffer: the 16 quick ACKs, then every second segment
        let mut u = TcpReceiver::new(0, &TcpConfig { receive_buffer: ReceiveBuffer::Unlimited, ..cfg });
        let mut out = Vec::new();
        for s in 0..30u64 {
            u.on_packet(&data(s), Time::from_micros(10_000 + 1_200 * s), &mut out);
        }
        assert_eq!(out.len(), 16 + 7);
    }

    #[test]
    fn a_read_acks_a_pushed_segment_at_once() {
        // Linux tcp_measure_rcv_mss: a full segment with PSH, or a short one, sets
        // ICSK_ACK_PUSHED; tcp_cleanup_rbuf then ACKs when the read empties the queue,
        // where the every-second-segment rule would have delayed the ACK. Past the
        // start (segments 0-29 as above: quick ACKs, then every second one, the last
        // ACK for 29), 1448-B segments 1.2 ms apart:
        let cfg = TcpConfig { mss: aqm::Bytes(1448), receive_buffer: ReceiveBuffer::Linux, ..TcpConfig::default() };
        let seg = |s: u64, len: u32, psh: bool| {
            let mut p = data(s);
            p.payload = len;
            p.set_flag(Packet::PSH, psh);
            p
        };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let at = |s: u64| Time::from_micros(10_000 + 1_200 * s);
        for s in 0..30u64 {
            r.on_packet(&seg(s, 1448, false), at(s), &mut out);
        }
        assert_eq!(out.last().unwrap().seq, 30);
        let mut acked = |r: &mut TcpReceiver, s: u64, len: u32, psh: bool| {
            let n = out.len();
            r.on_packet(&seg(s, len, psh), at(s), &mut out);
            out.len() > n
        };
        // 30 without PSH waits for a second segment; 31 is that second
        assert!(!acked(&mut r, 30, 1448, false));
        assert!(acked(&mut r, 31, 1448, false));
        // 32 with PSH (the end of an application write): ACKed at once
        assert!(acked(&mut r, 32, 1448, true));
        // 33 without: delayed again (the flag went with the ACK); 34 pairs with it
        assert!(!acked(&mut r, 33, 1448, false));
        assert!(acked(&mut r, 34, 1448, false));
        // a short segment (the tail of a message) is pushed without PSH
        assert!(acked(&mut r, 35, 500, false));
        // without the receive buffer there is no read model: PSH changes nothing
        let mut u = TcpReceiver::new(0, &TcpConfig { receive_buffer: ReceiveBuffer::Unlimited, quickack: 0, ..cfg });
        let mut out = Vec::new();
        u.on_packet(&seg(0, 1448, true), at(0), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn ato_follows_the_spacing_of_the_data() {
        // Linux tcp_event_data_recv: segments 30 ms apart (between ato_min/2 and ato):
        // ato = ato / 2 + 30 ms = 50 ms; the delayed ACK expires 50 ms (a multiple of
        // the 4 ms tick) from the arrival's tick
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::from_millis(100), &mut out);
        r.on_packet(&data(1), Time::from_millis(101), &mut out);
        assert_eq!(out.len(), 1);
        r.on_packet(&data(2), Time::from_millis(131), &mut out);
        assert_eq!(r.ato, Some(Duration::from_millis(50)));
        // 131 ms is in tick 32 (128 ms); 50 ms is 13 ticks (52 ms): expires at 180
        // ms, and the timer wheel runs it one tick later, at 184 ms
        assert_eq!(r.poll_at(), Some(Time::from_millis(184)));
    }

    #[test]
    fn duplicates_are_reported_with_a_dsack_block() {
        // RFC 2883 §4: the first block of the ACK for a duplicate is the duplicate,
        // below the cumulative ACK; it is reported once.
        let mut r = rx(16);
        let mut out = Vec::new();
        for s in 0..4 {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        out.clear();
        r.on_packet(&data(1), Time::from_millis(1), &mut out);
        assert_eq!(out.len(), 1);
        let a = &out[0];
        assert_eq!(a.seq, 4);
        assert_eq!(a.sack.iter(a.seq).collect::<Vec<_>>(), vec![(1, 2)]);
        r.on_packet(&data(4), Time::from_millis(2), &mut out);
        assert!(out[1].sack.is_empty(), "reported once");
        assert_eq!(r.stats.dsacks_sent, 1);
        // a duplicate of held out-of-order data: D-SACK block first, then the SACK
        // block that holds it (RFC 2883 §4.2)
        let mut r = rx(16);
        let mut out = Vec::new();
        for s in [0, 2, 3, 2] {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        let a = out.last().unwrap();
        assert_eq!(a.sack.iter(a.seq).collect::<Vec<_>>(), vec![(2, 3), (2, 4)]);
    }

    #[test]
    fn quick_ack_mode_returns_after_an_idle_period_longer_than_the_rto() {
        // 16 quick ACKs at the start, then every second segment; after 1.5 s of
        // silence (longer than the receiver's 1 s RTO before any RTT sample), Linux
        // ACKs the next segments at once again (tcp_event_data_recv)
        let mut r = rx(16);
        let mut out = Vec::new();
        let mut t = 0;
        for s in 0..40 {
            t += 1;
            r.on_packet(&data(s), Time::from_millis(t), &mut out);
        }
        assert_eq!(out.len(), 16 + 12);
        out.clear();
        for s in 40..44 {
            r.on_packet(&data(s), Time::from_millis(1600 + s), &mut out);
        }
        assert_eq!(out.len(), 4, "every segment ACKed after the idle period");
    }

    #[test]
    fn sack_compression_holds_acks_after_the_first_three_dupacks() {
        // Linux __tcp_ack_snd_check: with data held out of order, the first three
        // duplicate ACKs for one rcv_nxt go at once; the next ones wait for a timer
        // of min(1 ms, rtt / 20) (or the 44th), and one ACK covers them
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::ZERO, &mut out);
        r.on_packet(&data(1), Time::ZERO, &mut out);
        out.clear();
        for s in 3..10 {
            r.on_packet(&data(s), Time::from_micros(100 * s), &mut out);
        }
        assert_eq!(out.len(), 3);
        // no RTT estimate: the timer is immediate (delay 0)
        assert_eq!(r.poll_at(), Some(Time::from_micros(600)));
        r.on_timer(Time::from_micros(600), &mut out);
        assert_eq!(out.len(), 4);
        let a = out.last().unwrap();
        assert_eq!(a.sack.iter(a.seq).next(), Some((3, 10)));
    }

    #[test]
    fn quickack_acks_the_first_segments_at_once() {
        let mut r = rx(2);
        let mut out = Vec::new();
        for s in 0..3 {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn out_of_order_segments_are_sacked_most_recent_first() {
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::ZERO, &mut out);
        r.on_packet(&data(1), Time::ZERO, &mut out); // ack 2
        out.clear();
        // lose 2, receive 3, 4; lose 5; receive 6
        for s in [3, 4, 6] {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(out.len(), 3, "each out-of-order segment ACKed at once");
        let last = out.last().unwrap();
        assert_eq!(last.seq, 2);
        let blocks: Vec<(u64, u64)> = last.sack.iter(last.seq).collect();
        assert_eq!(blocks, vec![(6, 7), (3, 5)]);
        // the retransmission of 2 fills the first gap: cumulative ACK jumps to 5
        out.clear();
        r.on_packet(&data(2), Time::ZERO, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 5);
        let blocks: Vec<(u64, u64)> = out[0].sack.iter(out[0].seq).collect();
        assert_eq!(blocks, vec![(6, 7)]);
        assert_eq!(r.bytes_delivered, 5 * 1460);
    }

    #[test]
    fn ranges_merge_from_both_sides() {
        let mut r = rx(0);
        let mut out = Vec::new();
        for s in [2, 4, 3] {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(r.ooo.len(), 1);
        assert_eq!((r.ooo[0].start, r.ooo[0].end, r.ooo[0].bytes), (2, 5, 3 * 1460));
        r.on_packet(&data(3), Time::ZERO, &mut out);
        assert_eq!(r.stats.duplicates, 1);
    }

    fn marked(seq: u64, ecn: aqm::Ecn) -> Packet {
        let mut p = data(seq);
        p.set_ecn(ecn);
        p
    }

    #[test]
    fn dctcp_echoes_the_latest_ce_state_and_acks_each_change_at_once() {
        // RFC 8257 §3.2 (Linux dctcp_ece_ack_update), delayed ACKs every 2 segments
        use crate::tcp::cc::{CcSpec, DctcpParams};
        let cfg = TcpConfig { cc: CcSpec::Dctcp(DctcpParams::default()), quickack: 0, receive_buffer: ReceiveBuffer::Unlimited, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let (ect, ce) = (aqm::Ecn::Ect0, aqm::Ecn::Ce);
        let acks = |out: &Vec<Packet>| out.iter().map(|a| (a.seq, a.ece())).collect::<Vec<_>>();
        r.on_packet(&marked(0, ect), Time::ZERO, &mut out);
        assert!(out.is_empty(), "delayed");
        // CE: the delayed ACK goes first with the old state, then this one with ECE
        r.on_packet(&marked(1, ce), Time::ZERO, &mut out);
        assert_eq!(acks(&out), vec![(1, false), (2, true)]);
        // CE again: no change, delayed ACKs resume, every ACK with ECE
        r.on_packet(&marked(2, ce), Time::ZERO, &mut out);
        r.on_packet(&marked(3, ce), Time::ZERO, &mut out);
        assert_eq!(acks(&out)[2..], [(4, true)]);
        // back to not CE: nothing delayed, so one immediate ACK without ECE; a CWR
        // from the sender does not clear the state (it is the CE state, not a latch)
        r.on_packet(&marked(4, ect), Time::ZERO, &mut out);
        assert_eq!(acks(&out)[3..], [(5, false)]);
        let mut cwr = marked(5, ce);
        cwr.set_flag(Packet::CWR, true);
        r.on_packet(&cwr, Time::ZERO, &mut out);
        assert_eq!(acks(&out)[4..], [(6, true)]);
        // ACKs of a DCTCP receiver are ECN-capable (Linux: the controller needs ECN)
        assert!(out.iter().all(|a| a.ecn() == ect));
    }

    #[test]
    fn accecn_counts_ce_segments_in_the_ace_field_and_acks_on_ecn_changes() {
        // RFC 9768 §3.2: ACE = (CE-marked segments + 5) mod 8; an immediate ACK when
        // the IP-ECN field changes (Linux), delayed ACKs otherwise
        let cfg = TcpConfig { accecn: true, ecn: true, quickack: 0, receive_buffer: ReceiveBuffer::Unlimited, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let (ect, ce) = (aqm::Ecn::Ect0, aqm::Ecn::Ce);
        let aces = |out: &Vec<Packet>| out.iter().map(|a| (a.seq, a.ace())).collect::<Vec<_>>();
        r.on_packet(&marked(0, ect), Time::ZERO, &mut out); // Not-ECT -> ECT(0): ACK now
        r.on_packet(&marked(1, ce), Time::ZERO, &mut out); // -> CE: ACK now
        r.on_packet(&marked(2, ce), Time::ZERO, &mut out); // delayed
        r.on_packet(&marked(3, ce), Time::ZERO, &mut out); // every 2nd: ACK
        assert_eq!(aces(&out), vec![(1, 5), (2, 6), (4, 0)], "three CE segments: 5 + 3 wraps to 0");
        r.on_packet(&marked(4, ect), Time::ZERO, &mut out); // -> ECT(0): ACK now
        assert_eq!(aces(&out)[3..], [(5, 0)]);
        assert_eq!(r.received_ce, 3);
    }

    #[test]
    fn completion_is_noted_when_the_last_segment_arrives() {
        let mut r = rx(16);
        r.expect_segments = Some(3);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::from_millis(1), &mut out);
        r.on_packet(&data(2), Time::from_millis(2), &mut out);
        assert_eq!(r.completed_at, None);
        r.on_packet(&data(1), Time::from_millis(3), &mut out);
        assert_eq!(r.completed_at, Some(Time::from_millis(3)));
    }
}
