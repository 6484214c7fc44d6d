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

use std::collections::VecDeque;

use aqm::{Duration, Time};

pub use super::cc::CaState;
use super::cc::{AckSample, AnyCc, CongestionControl, Conn, Window, INFINITE_SSTHRESH};
use super::minmax::RunningMin;
use super::pacing::Pacer;
use super::rate::{RateSample, RateState, TxInfo};
use super::rtt::RttEstimator;
use super::{EcnMode, TcpConfig};
use crate::packet::{Kind, Packet};
use crate::rng::SimRng;

mod output;
mod rack;
mod recovery;
mod scoreboard;
mod undo;
mod timer;

use rack::{Newest, Rack};
use scoreboard::SackTag;

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

/// Linux `sysctl_tcp_min_rtt_wlen`: the minimum RTT is the least over 300 s.
const MIN_RTT_WINDOW: Duration = Duration::from_secs(300);

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
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: Time::ZERO,
            last_send: Time::ZERO,
            delivered: 0,
            pacer: Pacer::default(),
            pace_at: None,
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

    fn with_cc_flags(mut self) -> TcpSender {
        self.rate_cc = self.cc.controls_cwnd();
        self
    }

    /// The congestion controller's own random stream.
    pub fn set_cc_rng(&mut self, rng: SimRng) {
        self.cc.set_rng(rng);
    }

    // ---- the application ---------------------------------------------------

    /// Start the connection with `bytes` to send (`None`: unlimited, a bulk transfer).
    pub fn start(&mut self, now: Time, bytes: Option<u64>, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.state, State::Idle);
        self.started_at = Some(now);
        self.snd_cwnd_stamp = now;
        match bytes {
            None => self.app_segments = u64::MAX,
            Some(b) => self.push_message(b),
        }
        if self.cfg.handshake {
            self.state = State::SynSent;
            self.send_syn(now, out);
        } else {
            // Without a handshake, ECN is as configured (both ends share the setting).
            let mode = self.cfg.ecn_mode();
            (self.ecn_ok, self.accecn) = (mode != EcnMode::Off, mode == EcnMode::AccEcn);
            self.established(now);
            self.push(now, out, Rexmit::None);
        }
    }

    /// The connection is open: the congestion control starts (`tcp_init_transfer`),
    /// with the handshake's RTT if there was one.
    fn established(&mut self, now: Time) {
        self.state = State::Established;
        let c = self.conn(now);
        self.cc.on_init(&mut self.w, &c);
        // pacing if configured or asked for by the controller (`SK_PACING_NEEDED`)
        self.pacer.on = self.cfg.pacing || self.cc.pacing_rate().is_some();
        if self.pacer.on {
            self.update_pacing_rate();
        }
    }

    /// Segments needed for `bytes` of payload.
    pub fn segments_for(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.cfg.mss.0)
    }

    fn push_message(&mut self, bytes: u64) {
        let mss = self.cfg.mss.0;
        let b = bytes.max(1);
        let n = self.segments_for(b);
        let start = if self.app_segments == u64::MAX { self.snd_nxt } else { self.app_segments };
        self.app_segments = start + n;
        self.msgs.push_back((self.app_segments, (b - (n - 1) * mss) as u32));
    }

    /// The application writes `bytes` more on an open connection (HTTP/1.1: the next
    /// response on a persistent connection). After an idle period longer than the
    /// RTO, cwnd restarts (Linux `tcp_slow_start_after_idle_check`, RFC 2861).
    pub fn send_more(&mut self, now: Time, bytes: u64, out: &mut Vec<Packet>) {
        debug_assert!(self.app_segments != u64::MAX, "a bulk sender has unlimited data already");
        if self.rate_cc {
            // `tcp_rate_check_app_limited` on the application's write
            let (pipe, cwnd) = (self.pipe(), self.cwnd_segments());
            self.rate.check_app_limited(self.snd_nxt >= self.app_segments, pipe, cwnd, self.lost_out, self.retrans_out);
        }
        // Linux leaves a controller that sets cwnd itself alone
        // (`tcp_slow_start_after_idle_check`)
        if matches!(self.state, State::Established | State::Done) && self.cfg.slow_start_after_idle && self.outstanding() == 0 && !self.rate_cc {
            let idle = now.saturating_since(self.last_send);
            if idle > self.rtt.rto() {
                self.cwnd_restart(now, idle);
            }
        }
        self.push_message(bytes);
        if self.state == State::Done {
            self.state = State::Established;
            self.finished_at = None;
        }
        self.push(now, out, Rexmit::None);
    }

    /// Linux `tcp_cwnd_restart` (RFC 2861 §3): halve cwnd for every RTO of idle time,
    /// not below the initial window; ssthresh keeps at least 3/4 of the old cwnd.
    fn cwnd_restart(&mut self, now: Time, idle: Duration) {
        self.w.ssthresh = self.current_ssthresh();
        let restart = (self.cfg.initial_window as f64).min(self.w.cwnd);
        let mut cwnd = self.w.cwnd as u64;
        let rto = self.rtt.rto().as_nanos().max(1);
        let mut delta = idle.as_nanos() as i128;
        loop {
            delta -= rto as i128;
            if delta <= 0 || (cwnd as f64) <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = (cwnd as f64).max(restart);
        self.snd_cwnd_stamp = now;
        self.snd_cwnd_used = 0;
    }

    /// The application stops writing (a bulk flow leaves): what was sent is still
    /// delivered, then the sender is done.
    pub fn close(&mut self, now: Time) {
        if self.app_segments == u64::MAX {
            self.app_segments = self.snd_nxt;
            self.msgs.push_back((self.snd_nxt, self.cfg.mss.0 as u32));
        }
        if self.state == State::Established && self.snd_una >= self.app_segments {
            self.state = State::Done;
            self.finished_at = Some(now);
            self.pending = Pending::None;
            self.pace_at = None;
        }
    }

    /// Segments the application has handed over so far (u64::MAX: unlimited).
    pub fn app_segments(&self) -> u64 {
        self.app_segments
    }

    fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.syn_sent_at = now;
        let mut syn = Packet::new(0, self.flow, Kind::Syn, self.cfg.header.0 as u32, now);
        // RFC 3168 §6.1.1: an ECN-setup SYN carries ECE and CWR; RFC 9768 §3.1.1: an
        // AccECN-setup SYN all three of AE, CWR and ECE.
        match self.cfg.ecn_mode() {
            EcnMode::Off => {}
            EcnMode::Rfc3168 => syn.set_ace(0b011),
            EcnMode::AccEcn => syn.set_ace(0b111),
        }
        out.push(syn);
        let rto = self.rtt.rto();
        self.set_timer(Pending::Rto, now, rto);
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


    /// Linux `tcp_cwnd_validate` (RFC 7661): remember whether cwnd limited the current
    /// window; a window not fully used for an RTO shrinks toward what was used.
    fn cwnd_validate(&mut self, now: Time, is_cwnd_limited: bool) {
        let out = self.outstanding();
        if self.snd_una >= self.cwnd_usage_seq || is_cwnd_limited || (!self.is_cwnd_limited && out > self.max_packets_out) {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.cwnd_limited() {
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = now;
        } else {
            self.snd_cwnd_used = self.snd_cwnd_used.max(out);
            if self.cfg.slow_start_after_idle && now.saturating_since(self.snd_cwnd_stamp) >= self.rtt.rto() && !self.rate_cc {
                self.cwnd_application_limited(now);
            }
        }
    }

    /// Linux `tcp_cwnd_application_limited` (RFC 2861 §3): a window the sender did
    /// not fill for an RTO shrinks to the mean of itself and what was used.
    fn cwnd_application_limited(&mut self, now: Time) {
        if self.ca_state == CaState::Open {
            let used = self.snd_cwnd_used.max(self.cfg.initial_window as u64);
            if (used as f64) < self.w.cwnd {
                self.w.ssthresh = self.current_ssthresh();
                self.w.cwnd = ((self.w.cwnd as u64 + used) >> 1) as f64;
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = now;
    }

    // ---- ACK processing (Linux tcp_ack) -------------------------------------------

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
                self.push(now, out, Rexmit::None);
            }
            (State::Established, Kind::Ack) => self.on_ack(p, now, out),
            _ => {}
        }
    }

    /// A new RTT measurement for the congestion control and the minimum RTT
    /// (Linux `tcp_update_rtt_min`: the least over 300 s).
    fn note_rtt(&mut self, r: Duration, now: Time) {
        self.last_rtt = Some(r);
        let r = r.max(Duration::from_nanos(1));
        let f = self.min_rtt_filter.get_or_insert_with(|| RunningMin::new(now.as_nanos(), r.as_nanos() as f64));
        let m = f.update(MIN_RTT_WINDOW.as_nanos(), now.as_nanos(), r.as_nanos() as f64);
        self.min_rtt = Some(Duration::from_nanos(m as u64));
    }

    /// The segments this ACK reports CE-marked, and whether it signals congestion
    /// by ECN: RFC 3168 feedback counts every segment an ECE-carrying ACK delivers
    /// (Linux `tcp_count_delivered`); AccECN reads the ACE field's increase (RFC 9768
    /// §3.2.2.5, Linux `__tcp_accecn_process`), of an ACK that made progress.
    fn ecn_feedback(&mut self, a: &Packet, delivered: u64, progress: bool) -> (u32, bool) {
        if !self.ecn_ok {
            return (0, false);
        }
        if !self.accecn {
            let ce = if a.ece() { delivered } else { 0 };
            self.delivered_ce += ce;
            return (ce as u32, a.ece());
        }
        if !progress {
            return (0, false);
        }
        // The ACE field counts CE-marked segments from 5 (TCP_ACCECN_CEP_INIT_OFFSET),
        // modulo 8.
        let mut delta = (a.ace() as u64).wrapping_sub(5).wrapping_sub(self.delivered_ce) & 7;
        if delivered > 7 {
            // More than 7 segments delivered: the counter may have wrapped. Without
            // the AccECN option's byte counters, assume as many wraps as the count
            // allows (RFC 9768 Appendix A.2.1's safety, Linux's `safe_delta`).
            delta = delivered - ((delivered - delta) & 7);
        }
        self.delivered_ce += delta;
        (delta as u32, delta > 0)
    }

    fn on_ack(&mut self, a: &Packet, now: Time, out: &mut Vec<Packet>) {
        // RFC 7323: the ACK's timestamp is newer than any seen (Linux FLAG_TS_PROGRESS)
        let ts_progress = a.sent_at.as_nanos() > self.ts_recent;
        self.ts_recent = self.ts_recent.max(a.sent_at.as_nanos());
        self.ts_ecr = a.ts_echo;
        let ack = a.seq.min(self.snd_nxt);
        let prior_snd_una = self.snd_una;
        let prior_rwnd = self.rwnd_segments;
        let prior_packets = self.outstanding();
        let prior_delivered = self.delivered;
        let prior_lost = self.lost_total;
        let prior_sacked = self.sacked_out;
        let prior_fack = if self.cfg.sack { self.highest_sacked.max(self.snd_una) } else { self.snd_una };
        let mut rs = Newest::default();
        let mut rate = RateSample::default();
        let prior_in_flight = self.pipe();
        let mut rexmit = Rexmit::None;
        let mut flag = 0u32;
        if ack < prior_snd_una {
            return; // an old ACK (the path does not reorder)
        }
        self.rwnd_segments = match self.cfg.receive_window {
            None => a.rwnd / self.cfg.mss.0,
            Some(w) => (a.rwnd / self.cfg.mss.0).min(w.0 / self.cfg.mss.0),
        };
        if ack > prior_snd_una {
            flag |= F_SND_UNA_ADVANCED | F_WIN_UPDATE;
            self.retransmits_in_row = 0;
        } else if self.rwnd_segments != prior_rwnd {
            flag |= F_WIN_UPDATE;
        }
        if self.ecn_ok && !self.accecn && a.ece() {
            // RFC 3168 feedback (`tcp_ecn_rcv_ecn_echo`); AccECN's comes from the ACE
            // counter once the ACK's deliveries are counted (below)
            flag |= F_ECE;
        }

        // 1. SACK blocks (RFC 2018, RFC 2883)
        let mut st = SackTag { reord: self.snd_nxt, ..SackTag::default() };
        if self.cfg.sack && !a.sack.is_empty() {
            st = self.sacktag(a, ack, prior_snd_una, now, &mut rs, &mut rate);
            flag |= st.flag;
        }
        self.delivered += st.delivered;

        // 2. Cumulative ACK (tcp_clean_rtx_queue)
        let mut first_ackt: Option<Time> = None;
        let mut last_ackt: Option<Time> = None;
        let mut reord = self.snd_nxt;
        let mut pkts_acked = 0u64;
        let mut runt = false;
        if prior_packets > 0 && ack > self.snd_una {
            for seq in self.snd_una..ack {
                if self.rate_cc {
                    // the front entries (snd_una moves after the loop)
                    let s = self.board[0];
                    let mut tx = self.rate_tx.pop_front().expect("rate entry");
                    self.rate.on_delivered(&mut tx, s.sent_at, seq + 1, s.flags & EVER_RETRANS != 0, false, &mut rate);
                }
                let s = self.board.pop_front().expect("scoreboard entry");
                if s.flags & EVER_RETRANS != 0 {
                    flag |= F_RETRANS_DATA_ACKED;
                } else if s.flags & SACKED == 0 {
                    last_ackt = Some(s.sent_at);
                    first_ackt.get_or_insert(s.sent_at);
                    reord = reord.min(seq);
                    if seq < self.high_seq {
                        flag |= F_ORIG_SACK_ACKED;
                    }
                }
                if s.flags & SACKED != 0 {
                    self.sacked_out -= 1;
                } else if self.cfg.sack {
                    self.delivered += 1;
                    // Eifel (RFC 3522): a retransmission acked for its original is
                    // no RACK delivery time
                    let spurious = s.flags & EVER_RETRANS != 0 && self.ts_ecr > 0 && self.ts_ecr < s.sent_at.as_nanos();
                    if !spurious {
                        self.rack_advance(s.flags, seq + 1, s.sent_at, now);
                    }
                }
                self.release_loss_flags(s.flags);
                pkts_acked += 1;
                if s.flags & SACKED == 0 {
                    rs.note(s.sent_at, seq + 1, s.delivered);
                }
                let payload = self.payload(seq);
                runt = payload < self.cfg.mss.0 as u32;
                self.stats.bytes_acked += payload as u64;
                flag |= F_DATA_ACKED;
            }
            self.snd_una = ack;
            while self.msgs.front().is_some_and(|&(end, _)| end <= ack) {
                self.msgs.pop_front();
            }
            while self.tsorted.front().is_some_and(|&(_, seq)| seq < ack) {
                self.tsorted.pop_front();
            }
            self.retx_hint = self.retx_hint.max(ack);
        }
        // RTT samples (tcp_ack_update_rtt): the oldest newly acked segment sent once
        // (Karn), else the oldest newly SACKed one, else the timestamp echo of an
        // ACK of new data (RFC 7323 §4.1); the congestion control sees the newest.
        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
            if flag & F_RETRANS_DATA_ACKED == 0 {
                seq_rtt = Some(now.saturating_since(f));
                ca_rtt = Some(now.saturating_since(l));
                if pkts_acked == 1 && runt && prior_sacked == 0 && rs.prior_delivered + 1 == self.delivered && flag & F_CA_ALERT == 0 {
                    flag |= F_ACK_MAYBE_DELAYED;
                }
            }
        }
        let mut sack_rtt = None;
        if let (Some(f), Some(l)) = (st.first_sackt, st.last_sackt) {
            sack_rtt = Some(now.saturating_since(f));
            ca_rtt = Some(now.saturating_since(l));
        }
        let mut seq_rtt = seq_rtt.or(sack_rtt);
        if seq_rtt.is_none() && self.ts_ecr > 0 && flag & F_DATA_ACKED != 0 {
            let r = now.saturating_since(Time::from_nanos(self.ts_ecr));
            seq_rtt = Some(r);
            ca_rtt = Some(r);
        }
        let mut rtt_update = false;
        if let (Some(r), Some(c)) = (seq_rtt, ca_rtt) {
            if !(flag & F_ACK_MAYBE_DELAYED != 0 && self.min_rtt.is_some_and(|m| c > m)) {
                self.note_rtt(c, now);
            } else {
                self.last_rtt = Some(c);
            }
            self.rtt.sample(r, self.snd_una, self.snd_nxt);
            rtt_update = true;
        }
        if flag & F_DATA_ACKED != 0 {
            flag |= F_SET_XMIT_TIMER;
            if !self.cfg.sack {
                // Linux tcp_remove_reno_sacks: one ACK acked the hole, the rest ate
                // duplicate ACKs
                let d = pkts_acked.saturating_sub(self.reno_sacked).max(1);
                self.delivered += d;
                self.reno_sacked = self.reno_sacked.saturating_sub(pkts_acked.saturating_sub(1));
                if flag & F_RETRANS_DATA_ACKED != 0 {
                    flag &= !F_ORIG_SACK_ACKED;
                }
            } else if reord < prior_fack {
                self.check_sack_reordering(reord);
            }
        } else if let (Some(head), true, Some(sr)) = (self.board.front(), rtt_update, sack_rtt) {
            // do not re-arm the RTO from data sent after the oldest segment's last
            // transmission (else it could go on extending in recovery)
            if sr > now.saturating_since(head.sent_at) {
                flag |= F_SET_XMIT_TIMER;
            }
        }
        if flag & F_DATA_ACKED != 0 && a.ts_echo > 0 {
            // RFC 7323 TSval − TSecr: the forward one-way delay on the simulator's one
            // clock (plus any delayed-ACK hold); delay-based controllers (LEDBAT) use it.
            self.cc.on_delay(a.sent_at.saturating_since(Time::from_nanos(a.ts_echo)), now);
        }
        // the ACK's ECN feedback (Linux `tcp_accecn_process`, `tcp_count_delivered`)
        let delivered_so_far = self.delivered - prior_delivered;
        let (ce, ece) = self.ecn_feedback(a, delivered_so_far, delivered_so_far > 0 || ts_progress);
        if ece {
            flag |= F_ECE;
        }
        // the congestion control's per-ACK sample (pkts_acked), then `in_ack_event`
        let mut s = self.view(now);
        s.rtt = ca_rtt;
        s.acked = delivered_so_far as u32;
        (s.ce, s.ece) = (ce, ece);
        if prior_packets > 0 {
            self.cc.on_rtt(&mut self.w, &s);
        }
        self.cc.in_ack_event(&self.w, &s);

        self.rack_update_reo_wnd(rs.prior_delivered);
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(now, ack, flag);
        }

        // 3. The congestion state (tcp_ack_is_dubious -> tcp_fastretrans_alert)
        let mut delivered_extra = 0u64;
        let dupack_candidate = flag & (F_SND_UNA_ADVANCED | F_NOT_DUP | F_DSACKING_ACK) == 0 && prior_packets > 0;
        if flag & F_NOT_DUP == 0 || flag & F_CA_ALERT != 0 || self.ca_state != CaState::Open {
            let num_dupack = dupack_candidate as u64;
            self.fastretrans_alert(now, prior_snd_una, num_dupack, &mut flag, &mut rexmit, &mut delivered_extra);
        }
        self.delivered += delivered_extra;
        if flag & F_SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now);
        }

        // 4. The window (tcp_cong_control)
        let delivered = self.delivered - prior_delivered;
        let lost = self.lost_total - prior_lost;
        let mut s = self.view(now);
        s.acked = delivered as u32;
        s.rtt = ca_rtt;
        (s.ce, s.ece) = (ce, ece);
        if self.rate_cc {
            // a controller that sets cwnd itself does so now, in any state, from the
            // ACK's delivery-rate sample (`tcp_rate_gen`, then `cong_control`), and may
            // mark the connection application-limited
            self.rate.delivered = self.delivered;
            rate.prior_in_flight = prior_in_flight;
            rate.rtt = ca_rtt;
            rate.is_ack_delayed = flag & F_ACK_MAYBE_DELAYED != 0;
            rate.ece_delta = ce as u64;
            let min_rtt = self.min_rtt;
            self.rate.generate(now, delivered, lost, min_rtt, &mut rate);
            let mut c = self.conn(now);
            self.cc.cong_control(&mut self.w, &rate, &mut c);
            self.rate.app_limited = c.app_limited;
        } else if self.in_cwnd_reduction() {
            self.cwnd_reduction(delivered, lost, flag);
        } else {
            // Linux tcp_may_raise_cwnd: only on an ACK of new data (RFC 5681 §3.1),
            // or any progress once reordering is high
            let raise = if self.reordering > self.cfg.dupthresh as u64 { flag & F_FORWARD_PROGRESS != 0 } else { flag & F_DATA_ACKED != 0 };
            if raise && delivered > 0 {
                self.cc.on_ack(&mut self.w, &s);
                self.snd_cwnd_stamp = now;
            }
        }
        if self.pacer.on {
            self.update_pacing_rate();
        }

        if self.snd_una >= self.app_segments {
            self.state = State::Done;
            self.finished_at = Some(now);
            self.pending = Pending::None;
            self.pace_at = None;
            return;
        }
        self.push(now, out, rexmit);
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
