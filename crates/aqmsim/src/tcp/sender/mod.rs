//! The TCP sender, as Linux's `tcp_input.c`, `tcp_output.c`, `tcp_recovery.c` and
//! `tcp_timer.c` run it:
//!
//! - loss detection by RACK-TLP (Cheng, Cardwell, Dukkipati & Jha, RFC 8985): a
//!   segment is lost once a segment sent after it has been delivered and the RTT of
//!   that one plus a reordering window has passed since it was sent; the window is
//!   0 in recovery or with DupThresh segments SACKed, min_rtt/4 otherwise (grown on
//!   D-SACKs), a timer waits it out; a tail loss probe 2 SRTT after the last send
//!   (Linux `tcp_recovery = 1`, `tcp_early_retrans = 3`). RFC 6675's DupThresh rule
//!   (Blanton, Allman, Wang, Jarvinen, Kojo & Nishida) remains selectable
//!   (`recovery = "rfc6675"`); without SACK, NewReno (RFC 6582);
//! - the state machine of `tcp_fastretrans_alert` (Open, Disorder, CWR, Recovery,
//!   Loss), proportional rate reduction (Mathis, Dukkipati & Cheng, RFC 6937) as
//!   `tcp_cwnd_reduction`;
//! - undo of spurious reductions: D-SACK (Floyd, Mahdavi, Mathis & Podolsky, RFC
//!   2883) proving every retransmission of an episode unneeded, the timestamp echo
//!   of the ACK predating the first retransmission (Eifel detection, Ludwig & Meyer,
//!   RFC 3522), and F-RTO after a timeout (Sarolahti, Kojo, Yamamoto & Hata, RFC 5682);
//! - the retransmission timer of `tcp_rtt_estimator` (see `rtt.rs`) on one timer
//!   for RTO, tail loss probe and RACK's reordering timeout, on Linux's clock tick;
//! - Linux's congestion-window validation (`tcp_cwnd_validate`, RFC 7661) and
//!   restart after idle (`tcp_cwnd_restart`, RFC 2861);
//! - pacing (`tcp/pacing.rs`), which gates the transmissions when configured or when
//!   the controller sets its own rate; a controller that sets cwnd itself (BBR) gets
//!   delivery-rate samples (`tcp/rate.rs`) and the sender leaves cwnd to it.
//!
//! Sequence numbers count segments. The scoreboard keeps one entry per outstanding
//! segment with Linux's flags and counters, from which the segments in flight follow:
//! `pipe = outstanding - sacked - lost + retransmitted` (`tcp_packets_in_flight`).
//!
//! This file holds the sender's state, its views and the packet entry point; the
//! rest is in:
//!
//! - `app.rs`: start, the handshake's SYN, the application's writes and close;
//!   congestion-window validation and restart after idle;
//! - `ack.rs`: ACK processing (`tcp_ack`), RTT samples, ECN and AccECN feedback;
//! - `scoreboard.rs`: loss marking, SACK and D-SACK tagging, reordering, RFC 6675
//!   loss detection;
//! - `rack.rs`: RACK-TLP (loss detection, reordering window and timer, loss probe);
//! - `recovery.rs`: the congestion states of `tcp_fastretrans_alert`, PRR, CWR;
//! - `undo.rs`: undo of spurious reductions (D-SACK, Eifel, F-RTO);
//! - `timer.rs`: the transmission timer and the retransmission timeout;
//! - `output.rs`: the send path (data packets, `tcp_write_xmit`, retransmissions,
//!   the pacing rate and burst size).

use std::collections::VecDeque;

use aqm::{Duration, Time};

pub use super::cc::CaState;
use super::cc::{AckSample, AnyCc, CongestionControl, Conn, Window, INFINITE_SSTHRESH};
use super::minmax::RunningMin;
use super::pacing::Pacer;
use super::rate::{RateState, TxInfo};
use super::rtt::RttEstimator;
use super::{EcnMode, Gso, TcpConfig};
use crate::packet::{Kind, Packet};
use crate::rng::SimRng;

mod ack;
mod app;
mod output;
mod rack;
mod recovery;
mod scoreboard;
mod timer;
mod undo;

use rack::Rack;

/// SACKed (`TCPCB_SACKED_ACKED`).
const SACKED: u8 = 1;
/// Marked lost (`TCPCB_LOST`).
const LOST: u8 = 2;
/// A retransmission in flight (`TCPCB_SACKED_RETRANS`).
const RETRANS: u8 = 4;
/// Retransmitted at least once (`TCPCB_EVER_RETRANS`).
const EVER_RETRANS: u8 = 8;

// What an ACK did (Linux's FLAG_* of tcp_input.c).
const F_WIN_UPDATE: u32 = 0x02;
const F_DATA_ACKED: u32 = 0x04;
const F_RETRANS_DATA_ACKED: u32 = 0x08;
const F_DATA_SACKED: u32 = 0x20;
const F_ECE: u32 = 0x40;
const F_LOST_RETRANS: u32 = 0x80;
const F_ORIG_SACK_ACKED: u32 = 0x200;
const F_SND_UNA_ADVANCED: u32 = 0x400;
const F_DSACKING_ACK: u32 = 0x800;
const F_SET_XMIT_TIMER: u32 = 0x1000;
const F_ACK_MAYBE_DELAYED: u32 = 0x10000;
const F_DSACK_TLP: u32 = 0x20000;
const F_NOT_DUP: u32 = F_WIN_UPDATE | F_DATA_ACKED;
const F_CA_ALERT: u32 = F_DATA_SACKED | F_ECE | F_DSACKING_ACK;
const F_FORWARD_PROGRESS: u32 = F_DATA_ACKED | F_DATA_SACKED;

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    /// When last (re)transmitted (`skb_mstamp`).
    sent_at: Time,
    /// snd_nxt when this segment was last retransmitted (RFC 6675 mode).
    retx_high: u64,
    flags: u8,
    /// Segments delivered when it was last sent (`tx.delivered`, for RACK's
    /// once-per-round D-SACK rule).
    delivered: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not started.
    Idle,
    SynSent,
    Established,
    /// Every byte of a finite transfer acknowledged.
    Done,
}

/// Which timer the one transmission timer runs (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    Rto,
    Probe,
    Reorder,
}

/// What to (re)transmit after an ACK (`REXMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rexmit {
    None,
    Lost,
    /// F-RTO step 2b: new data first.
    New,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    /// Retransmitted segments, tail loss probes of old data included (Linux
    /// `tcpi_total_retrans`).
    pub retransmits: u64,
    pub timeouts: u64,
    pub recoveries: u64,
    pub bytes_acked: u64,
    pub syn_retransmits: u64,
    /// Window reductions in response to ECN-Echo.
    pub ecn_reductions: u64,
    /// Tail loss probes sent (Linux `TCPLossProbes`).
    pub loss_probes: u64,
    /// Losses a tail loss probe repaired (`TCPLossProbeRecovery`).
    pub loss_probe_recoveries: u64,
    /// Segments the receiver reported duplicate with D-SACK (`tcpi_dsack_dups`).
    pub dsacks: u64,
    /// Window reductions undone as spurious (Linux's full, partial, D-SACK and loss
    /// undos).
    pub undos: u64,
    /// Retransmission timeouts found spurious by F-RTO (`TCPSpuriousRTOs`).
    pub spurious_rtos: u64,
    /// Retransmissions found lost in turn (`TCPLostRetransmit`).
    pub lost_retransmits: u64,
}

impl std::ops::Add for SenderStats {
    type Output = SenderStats;
    fn add(self, o: SenderStats) -> SenderStats {
        SenderStats {
            segments_sent: self.segments_sent + o.segments_sent,
            retransmits: self.retransmits + o.retransmits,
            timeouts: self.timeouts + o.timeouts,
            recoveries: self.recoveries + o.recoveries,
            bytes_acked: self.bytes_acked + o.bytes_acked,
            syn_retransmits: self.syn_retransmits + o.syn_retransmits,
            ecn_reductions: self.ecn_reductions + o.ecn_reductions,
            loss_probes: self.loss_probes + o.loss_probes,
            loss_probe_recoveries: self.loss_probe_recoveries + o.loss_probe_recoveries,
            dsacks: self.dsacks + o.dsacks,
            undos: self.undos + o.undos,
            spurious_rtos: self.spurious_rtos + o.spurious_rtos,
            lost_retransmits: self.lost_retransmits + o.lost_retransmits,
        }
    }
}

pub struct TcpSender {
    cfg: TcpConfig,
    pub flow: u32,
    pub state: State,
    pub ca_state: CaState,
    pub w: Window,
    cc: AnyCc,
    pub rtt: RttEstimator,
    /// Oldest unacknowledged segment.
    pub snd_una: u64,
    /// Next new segment.
    pub snd_nxt: u64,
    /// Segments the application has handed over (u64::MAX for bulk).
    app_segments: u64,
    /// Messages handed over and not yet acknowledged, as (end segment, payload of
    /// their last segment): each message starts in a new segment, so only a
    /// message's last segment may be short.
    msgs: VecDeque<(u64, u32)>,
    /// The newest timestamp seen on an ACK, echoed on data (RFC 7323 §4.3 TS.Recent):
    /// lets a receiver measure the RTT (ns, 0 = none yet).
    ts_recent: u64,
    /// Receiver's advertised window, in segments.
    rwnd_segments: u64,
    board: VecDeque<Seg>,
    sacked_out: u64,
    lost_out: u64,
    retrans_out: u64,
    /// Lost, not retransmitted, not SACKed: waiting for retransmission.
    lost_pending: u64,
    /// Without SACK: duplicate ACKs counted as SACKed segments (Linux keeps them in
    /// `sacked_out`; `tcp_add_reno_sack`).
    reno_sacked: u64,
    /// End of the highest SACKed segment (`tcp_highest_sack_seq`, FACK).
    highest_sacked: u64,
    /// The ranges the last ACK's SACK blocks covered, SACKed throughout
    /// (`recv_sack_cache`; empty ranges unused).
    sack_cache: [(u64, u64); crate::packet::SackBlocks::MAX],
    /// RFC 6675 mode: segments below this have been examined by the IsLost rule.
    lost_scan_from: u64,
    /// Lowest segment that may need a retransmission.
    retx_hint: u64,
    /// RFC 6675 mode: retransmissions in order (their retx_high is non-decreasing).
    retx_queue: VecDeque<(u64, u64)>,
    /// Segments by send time (Linux `tsorted_sent_queue`), for RACK: entries made
    /// stale by an ACK, a SACK or a later send are skipped and dropped.
    tsorted: VecDeque<(Time, u64)>,
    rack: Rack,
    /// Reordering degree estimate, in segments (`tp->reordering`), and reorderings seen.
    reordering: u64,
    reord_seen: u64,
    /// The end of the current recovery or reduction (`high_seq`).
    high_seq: u64,
    prior_cwnd: f64,
    /// ssthresh before the reduction, to restore on undo (0: undo not allowed).
    prior_ssthresh: f64,
    prr_delivered: u64,
    prr_out: u64,
    /// Oldest segment of the episode an undo may revert (`undo_marker`), and its
    /// retransmissions not yet proven spurious by D-SACK (`undo_retrans`; -1: none).
    undo_marker: Option<u64>,
    undo_retrans: i64,
    /// Send time of the episode's first retransmission (`retrans_stamp`).
    retrans_stamp: Option<Time>,
    /// The timestamp echoed by the ACK being processed (ns, 0 = none).
    ts_ecr: u64,
    /// F-RTO in progress after a timeout.
    frto: bool,
    /// A tail loss probe is out (`tlp_high_seq`: snd_nxt when sent), and it was a
    /// retransmission.
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// Consecutive timeouts without progress (`icsk_retransmits`).
    retransmits_in_row: u32,
    pending: Pending,
    timer_at: Time,
    /// New data went out and the RTO is to be rearmed at the end of the pass
    /// (`tcp_event_new_data_sent`, see `send_new`), and (debug builds) what the
    /// rearm would have set when the data went.
    rearm_due: bool,
    #[cfg(debug_assertions)]
    rearm_seen: Option<(Pending, Time)>,
    /// Congestion-window validation (`tcp_cwnd_validate`): limited by cwnd in the
    /// current window, the most outstanding in it, its end; the most used while not
    /// limited, and when cwnd was last fully used or changed.
    is_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    snd_cwnd_used: u64,
    snd_cwnd_stamp: Time,
    /// When data was last sent (`lsndtime`).
    last_send: Time,
    /// Segments delivered (acked or SACKed) so far (`tp->delivered`).
    delivered: u64,
    /// Pacing: on when configured or when the controller sets its own rate; the
    /// wake-up when the pacer holds data back.
    pacer: Pacer,
    pace_at: Option<Time>,
    /// The largest window the receiver has offered, in segments (`max_window`), for
    /// the write queue's skb size under `gso = "linux"`.
    max_window: u64,
    /// The controller sets cwnd from delivery-rate samples (BBR).
    rate_cc: bool,
    /// Delivery-rate estimation, with one entry per outstanding segment beside
    /// `board` (empty unless `rate_cc`).
    rate: RateState,
    rate_tx: VecDeque<TxInfo>,
    /// Segments marked lost so far (`tp->lost`).
    lost_total: u64,
    /// ECN negotiated for this connection (RFC 3168 §6.1.1).
    ecn_ok: bool,
    /// ... with Accurate ECN feedback (RFC 9768 §3.1).
    accecn: bool,
    /// The codepoint of its ECN-capable packets (ECT(1) for an L4S controller).
    ect: aqm::Ecn,
    /// Segments reported delivered CE-marked (Linux `delivered_ce`); under AccECN
    /// the ACE field echoes it modulo 8, offset by 5 (RFC 9768 §3.2.1).
    delivered_ce: u64,
    /// Set CWR on the next new data segment (RFC 3168 §6.1.2).
    send_cwr: bool,
    min_rtt_filter: Option<RunningMin>,
    min_rtt: Option<Duration>,
    last_rtt: Option<Duration>,
    syn_sent_at: Time,
    pub started_at: Option<Time>,
    pub finished_at: Option<Time>,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(flow: u32, cfg: &TcpConfig) -> TcpSender {
        TcpSender {
            flow,
            state: State::Idle,
            ca_state: CaState::Open,
            w: Window::new(cfg.initial_window as f64, INFINITE_SSTHRESH),
            cc: cfg.cc.build(),
            rtt: RttEstimator::new(cfg.rto_style, cfg.rto_initial, cfg.rto_min, cfg.rto_max).with_tick(cfg.tick),
            snd_una: 0,
            snd_nxt: 0,
            app_segments: 0,
            msgs: VecDeque::new(),
            ts_recent: 0,
            rwnd_segments: cfg.receive_window.map_or(u64::MAX, |w| w.0 / cfg.mss.0),
            board: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            lost_pending: 0,
            reno_sacked: 0,
            highest_sacked: 0,
            sack_cache: Default::default(),
            lost_scan_from: 0,
            retx_hint: 0,
            retx_queue: VecDeque::new(),
            tsorted: VecDeque::new(),
            rack: Rack::default(),
            reordering: cfg.dupthresh as u64,
            reord_seen: 0,
            high_seq: 0,
            prior_cwnd: 0.0,
            prior_ssthresh: 0.0,
            prr_delivered: 0,
            prr_out: 0,
            undo_marker: None,
            undo_retrans: -1,
            retrans_stamp: None,
            ts_ecr: 0,
            frto: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            retransmits_in_row: 0,
            pending: Pending::None,
            timer_at: Time::ZERO,
            rearm_due: false,
            #[cfg(debug_assertions)]
            rearm_seen: None,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: Time::ZERO,
            last_send: Time::ZERO,
            delivered: 0,
            pacer: Pacer::default(),
            pace_at: None,
            max_window: 0,
            rate_cc: false,
            rate: RateState::new(),
            rate_tx: VecDeque::new(),
            lost_total: 0,
            ecn_ok: false,
            accecn: false,
            ect: cfg.cc.ect(),
            delivered_ce: 0,
            send_cwr: false,
            min_rtt_filter: None,
            min_rtt: None,
            last_rtt: None,
            syn_sent_at: Time::ZERO,
            started_at: None,
            finished_at: None,
            stats: SenderStats::default(),
            cfg: cfg.clone(),
        }
        .with_cc_flags()
    }

    /// Linux with GSO: the pacing rate is kept for every connection (it sizes the
    /// skbs), paced or not.
    fn gso(&self) -> bool {
        self.cfg.gso == Gso::Linux
    }

    fn with_cc_flags(mut self) -> TcpSender {
        self.rate_cc = self.cc.controls_cwnd();
        self
    }

    /// The congestion controller's own random stream.
    pub fn set_cc_rng(&mut self, rng: SimRng) {
        self.cc.set_rng(rng);
    }

    // ---- views --------------------------------------------------------------

    /// Segments in flight (RFC 6675 `pipe`; Linux `tcp_packets_in_flight`).
    pub fn pipe(&self) -> u64 {
        let out = self.snd_nxt - self.snd_una;
        (out + self.retrans_out).saturating_sub(self.sacked_out + self.reno_sacked + self.lost_out)
    }

    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// When this sender next needs to run: its transmission timer (RTO, tail loss
    /// probe or reordering timeout), or the end of a pacing gap.
    #[inline]
    pub fn poll_at(&self) -> Option<Time> {
        let t = (self.pending != Pending::None).then_some(self.timer_at);
        match (t, self.pace_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The pacing rate in bytes per second (0 when not pacing).
    pub fn pacing_rate(&self) -> u64 {
        if self.pacer.on {
            self.pacer.rate
        } else {
            0
        }
    }

    /// What a controller that sets cwnd itself (and CUBIC's idle shift) reads of the
    /// connection.
    fn conn(&self, now: Time) -> Conn {
        Conn {
            now,
            mss: self.cfg.mss.0 as u32,
            srtt: self.rtt.srtt(),
            min_rtt: self.min_rtt,
            in_flight: self.pipe(),
            delivered: self.delivered,
            lost: self.lost_total,
            delivered_mstamp: self.rate.delivered_mstamp,
            app_limited: self.rate.app_limited,
            ca_state: self.ca_state,
            wstamp: self.pacer.wstamp,
            lsndtime: self.last_send,
            tick: self.cfg.tick,
            delivered_ce: self.delivered_ce,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited(),
            packet_size: self.cfg.packet_size(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn last_rtt(&self) -> Option<Duration> {
        self.last_rtt
    }

    fn seg(&self, seq: u64) -> &Seg {
        &self.board[(seq - self.snd_una) as usize]
    }
    fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        let i = (seq - self.snd_una) as usize;
        &mut self.board[i]
    }

    fn cwnd_segments(&self) -> u64 {
        // floor(cwnd), at least one. `as u64` truncates toward zero and saturates (NaN
        // and negatives to 0), which equals `floor` for every value that gives a
        // non-zero result; it avoids a libm `floor` call per transmit check on
        // targets without SSE4.1.
        (self.w.cwnd as u64).max(1)
    }

    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// Linux `tcp_is_cwnd_limited`: limited by cwnd in the current window, or in slow
    /// start with less than half of cwnd unused.
    fn cwnd_limited(&self) -> bool {
        self.is_cwnd_limited || (self.w.in_slow_start() && self.w.cwnd < 2.0 * self.max_packets_out as f64)
    }

    /// Linux `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> f64 {
        if self.in_cwnd_reduction() {
            self.w.ssthresh
        } else {
            let c = self.w.cwnd as u64;
            self.w.ssthresh.max(((c >> 1) + (c >> 2)) as f64)
        }
    }

    /// The connection as the congestion control sees it.
    fn view(&self, now: Time) -> AckSample {
        AckSample {
            now,
            acked: 0,
            rtt: None,
            min_rtt: self.min_rtt,
            srtt: self.rtt.srtt(),
            cwnd_limited: self.cwnd_limited(),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            in_flight: self.pipe(),
            packets_out: self.outstanding(),
            ca_state: self.ca_state,
            mss: self.cfg.mss.0 as u32,
            initial_window: self.cfg.initial_window,
            tick: self.cfg.tick,
            ce: 0,
            ece: false,
        }
    }

    // ---- packets from the receiver (processed in ack.rs) ----------------------------

    /// An ACK or SYN-ACK for this connection.
    pub fn on_packet(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (State::SynSent, Kind::SynAck) => {
                self.ts_recent = p.sent_at.as_nanos();
                // RFC 3168 §6.1.1: ECN is on if the SYN-ACK says so; RFC 9768 §3.1.1 Table 2:
                // an ACE of 0b010 to 0b110 on the SYN-ACK accepts AccECN, 0b001
                // classic ECN.
                let mode = self.cfg.ecn_mode();
                self.accecn = mode == EcnMode::AccEcn && (2..=6).contains(&p.ace());
                self.ecn_ok = self.accecn || (mode != EcnMode::Off && p.ace() == 0b001);
                if self.stats.syn_retransmits == 0 {
                    let r = now - self.syn_sent_at;
                    self.rtt.sample(r, 0, 0);
                    self.note_rtt(r, now);
                } else {
                    // RFC 6298 §5.7
                    self.rtt.at_least(Duration::from_secs(3));
                }
                self.pending = Pending::None;
                self.established(now);
                self.send_handshake_ack(p, now, out);
                self.push(now, out, Rexmit::None);
            }
            (State::Established, Kind::Ack) => self.on_ack(p, now, out),
            _ => {}
        }
    }

    /// The handshake's third segment: RFC 9293 §3.5 (the active side, on the
    /// SYN-ACK, "sends an ACK segment"); Linux `tcp_rcv_synsent_state_process` sends
    /// it at once as a pure ACK (`tcp_send_ack`, unless a write is pending or the
    /// socket defers accept, neither of which a bulk sender does). It carries a
    /// timestamp echoing the SYN-ACK's (RFC 7323 §3), header bytes only, Not-ECT
    /// (RFC 3168 §6.1.4: pure ACKs are not ECN-capable); under AccECN its ACE
    /// feeds back the SYN-ACK's IP-ECN field (RFC 9768 §3.2.2.1, Table 3: Not-ECT
    /// 0b010, ECT(1) 0b011, ECT(0) 0b100, CE 0b110). The passive side takes its RTT
    /// sample on it (the receiver's `Kind::FwdAck`).
    fn send_handshake_ack(&self, synack: &Packet, now: Time, out: &mut Vec<Packet>) {
        let mut a = Packet::new(0, self.flow, Kind::FwdAck, self.cfg.header.0 as u32, now);
        a.ts_echo = self.ts_recent;
        if self.accecn {
            a.set_ace(match synack.ecn() {
                aqm::Ecn::NotEct => 0b010,
                aqm::Ecn::Ect1 => 0b011,
                aqm::Ecn::Ect0 => 0b100,
                aqm::Ecn::Ce => 0b110,
            });
        }
        out.push(a);
    }

    /// Internal consistency of the scoreboard counters (for tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut sacked, mut lost, mut retrans, mut pending) = (0, 0, 0, 0);
        for s in &self.board {
            if s.flags & SACKED != 0 {
                sacked += 1;
                if s.flags & LOST != 0 {
                    return Err("SACKed segment flagged lost".into());
                }
            }
            if s.flags & LOST != 0 {
                lost += 1;
                if s.flags & RETRANS == 0 {
                    pending += 1;
                }
            }
            if s.flags & RETRANS != 0 {
                retrans += 1;
            }
        }
        if self.board.len() as u64 != self.outstanding() {
            return Err(format!("board {} vs outstanding {}", self.board.len(), self.outstanding()));
        }
        if (sacked, lost, retrans, pending) != (self.sacked_out, self.lost_out, self.retrans_out, self.lost_pending) {
            return Err(format!(
                "counters (sacked, lost, retrans, pending) = ({}, {}, {}, {}) but board says ({sacked}, {lost}, {retrans}, {pending})",
                self.sacked_out, self.lost_out, self.retrans_out, self.lost_pending
            ));
        }
        Ok(())
    }
}
