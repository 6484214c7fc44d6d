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
use super::pacing::{self, Pacer};
use super::rate::{RateSample, RateState, TxInfo};
use super::rtt::RttEstimator;
use super::{EcnMode, Recovery, TcpConfig};
use crate::packet::{Kind, Packet};
use crate::rng::SimRng;

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

/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
const TIMEOUT_INIT: Duration = Duration::from_secs(1);
/// Linux `TCP_TIMEOUT_MIN_US`: added to the reordering and probe timeouts.
const TIMEOUT_MIN: Duration = Duration::from_millis(2);
/// Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a grown reordering window persists.
const RACK_RECOVERY_THRESH: u8 = 16;
/// Linux `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u64 = 300;
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

/// RFC 8985 §6.2 step 2 / Linux `tcp_skb_sent_after`: a segment sent at `t1`
/// ending at `seq1` was sent after one sent at `t2` ending at `seq2` (the later
/// end breaks a tie of send times).
fn sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// Of the segments one ACK delivers, the most recently sent one's `delivered` at
/// its transmission (Linux `rs->prior_delivered`, from `tcp_rate_skb_delivered`).
#[derive(Clone, Copy, Debug, Default)]
struct Newest {
    sent_at: Option<Time>,
    end_seq: u64,
    prior_delivered: u64,
}

impl Newest {
    fn note(&mut self, sent_at: Time, end_seq: u64, delivered: u64) {
        if self.sent_at.is_none_or(|t| sent_after(sent_at, t, end_seq, self.end_seq)) {
            *self = Newest { sent_at: Some(sent_at), end_seq, prior_delivered: delivered };
        }
    }
}

/// RACK's state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Clone, Copy, Debug)]
struct Rack {
    /// Send time and end of the most recently sent segment delivered.
    xmit_ts: Time,
    end_seq: u64,
    /// RTT of that segment.
    rtt: Duration,
    /// New information since the last loss scan.
    advanced: bool,
    /// The reordering window, in quarters of the minimum RTT (grows on D-SACKs).
    reo_wnd_steps: u32,
    /// Recoveries the grown window persists.
    reo_wnd_persist: u8,
    /// A D-SACK arrived since the window last grew.
    dsack_seen: bool,
    /// `delivered` when the window last grew.
    last_delivered: u64,
}

impl Default for Rack {
    fn default() -> Self {
        Rack { xmit_ts: Time::ZERO, end_seq: 0, rtt: Duration::ZERO, advanced: false, reo_wnd_steps: 1, reo_wnd_persist: 0, dsack_seen: false, last_delivered: 0 }
    }
}

/// What the SACK blocks of one ACK did (Linux `tcp_sacktag_state`).
#[derive(Clone, Copy, Debug, Default)]
struct SackTag {
    first_sackt: Option<Time>,
    last_sackt: Option<Time>,
    /// Lowest sequence newly SACKed that shows reordering.
    reord: u64,
    delivered: u64,
    flag: u32,
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

    /// The controller's pacing rate, or Linux's `tcp_update_pacing_rate`.
    fn update_pacing_rate(&mut self) {
        self.pacer.rate = match self.cc.pacing_rate() {
            Some(r) => r,
            None => pacing::default_rate(self.cfg.mss.0 as u32, self.cwnd_segments(), self.w.ssthresh as u64, self.outstanding(), self.rtt.srtt(), self.cfg.pacing_ss_ratio, self.cfg.pacing_ca_ratio),
        };
    }

    /// The fewest segments of a paced burst (`min_tso_segs`).
    fn burst_segments(&self) -> u64 {
        // Linux `tcp_tso_segs`: the controller's own burst size, or tcp_tso_autosize
        if let Some(segs) = self.cc.tso_segs() {
            return segs;
        }
        let min_tso = self.cc.min_tso_segs().unwrap_or(pacing::MIN_TSO_SEGS);
        pacing::burst_segments(self.pacer.rate, self.cfg.mss.0 as u32, self.min_rtt, min_tso)
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

    // ---- timers ---------------------------------------------------------------

    /// A timer `d` from `now` on Linux's clock (`inet_csk_reset_xmit_timer` on
    /// jiffies): it fires on the tick `ceil(d / tick)` ticks after the current one.
    fn timer_deadline(&self, now: Time, d: Duration) -> Time {
        let g = self.cfg.tick.as_nanos();
        if g <= 1 {
            return now + d;
        }
        Time::from_nanos((now.as_nanos() / g + d.as_nanos().div_ceil(g)) * g)
    }

    fn set_timer(&mut self, what: Pending, now: Time, d: Duration) {
        self.pending = what;
        self.timer_at = self.timer_deadline(now, d);
    }

    /// How far in the future the RTO of the oldest outstanding segment is
    /// (`tcp_rto_delta_us`).
    fn rto_delta(&self, now: Time) -> i128 {
        let head = self.board.front().map_or(now, |s| s.sent_at);
        (head + self.rtt.rto()).as_nanos() as i128 - now.as_nanos() as i128
    }

    /// Linux `tcp_rearm_rto`: the RTO from now, or, replacing a probe or reordering
    /// timer, from the oldest segment's send time.
    fn rearm_rto(&mut self, now: Time) {
        if self.outstanding() == 0 {
            self.pending = Pending::None;
            return;
        }
        let mut rto = self.rtt.rto();
        if matches!(self.pending, Pending::Probe | Pending::Reorder) {
            rto = Duration::from_nanos(self.rto_delta(now).max(1) as u64);
        }
        self.set_timer(Pending::Rto, now, rto);
    }

    /// Linux `tcp_schedule_loss_probe` (RFC 8985 §7.2): a probe 2 SRTT after the
    /// last transmission (plus the delayed-ACK allowance of `rto_min` with one
    /// segment out, else 2 ms), not later than the RTO, in the Open and CWR states.
    fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if !self.cfg.tlp || !self.cfg.sack || self.outstanding() == 0 || !matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = match self.rtt.srtt() {
            Some(srtt) => srtt.checked_mul(2).unwrap_or(Duration::MAX) + if self.outstanding() == 1 { self.cfg.rto_min } else { TIMEOUT_MIN },
            None => TIMEOUT_INIT,
        };
        let rto_delta = if advancing_rto { self.rtt.rto().as_nanos() as i128 } else { self.rto_delta(now) };
        if rto_delta > 0 {
            timeout = timeout.min(Duration::from_nanos(rto_delta as u64));
        }
        self.set_timer(Pending::Probe, now, timeout);
        true
    }

    /// Linux `tcp_set_xmit_timer`: a tail loss probe if one may go, else the RTO.
    fn set_xmit_timer(&mut self, now: Time) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// Run what is due: the end of a pacing gap, the transmission timer.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.pace_at.is_some_and(|t| t <= now) {
            self.pace_at = None;
            // Linux tcp_tsq_write: retransmit what is lost, then new data
            let rexmit = if self.lost_pending > 0 { Rexmit::Lost } else { Rexmit::None };
            self.push(now, out, rexmit);
        }
        if self.pending == Pending::None || self.timer_at > now {
            return;
        }
        let what = self.pending;
        // Linux clears icsk_pending for the RTO and the probe; the reordering
        // timeout's handler still sees it (its RTO then counts from the oldest send)
        if what != Pending::Reorder {
            self.pending = Pending::None;
        }
        match (self.state, what) {
            (State::SynSent, _) => {
                self.stats.syn_retransmits += 1;
                self.rtt.back_off();
                self.send_syn(now, out);
            }
            (State::Established, Pending::Rto) => self.on_rto(now, out),
            (State::Established, Pending::Probe) => self.send_loss_probe(now, out),
            (State::Established, Pending::Reorder) => self.reo_timeout(now, out),
            _ => {}
        }
    }


    // ---- transmission -----------------------------------------------------------

    fn payload(&self, seq: u64) -> u32 {
        for &(end, last) in &self.msgs {
            if seq < end {
                return if seq + 1 == end { last } else { self.cfg.mss.0 as u32 };
            }
        }
        self.cfg.mss.0 as u32
    }

    fn data_packet(&mut self, seq: u64, now: Time, retx: bool) -> Packet {
        let payload = self.payload(seq);
        let mut p = Packet::new(0, self.flow, Kind::Data, payload + self.cfg.header.0 as u32, now);
        p.seq = seq;
        p.payload = payload;
        p.set_flag(Packet::RETX, retx);
        p.ts_echo = self.ts_recent;
        // RFC 3168 §6.1.5: retransmissions are sent Not-ECT and without CWR, except
        // under AccECN (every segment ECN-capable, Linux `tcp_ecn_send`) or with a
        // controller that needs ECN (DCTCP, Prague: `tcp_ca_needs_ecn`).
        if self.ecn_ok && (!retx || self.accecn || self.cfg.cc.needs_ecn()) {
            p.ecn = self.ect;
        }
        // CWR on the next new segment after a reduction (RFC 3168 feedback only)
        if self.ecn_ok && !retx && !self.accecn && self.send_cwr {
            p.set_flag(Packet::CWR, true);
            self.send_cwr = false;
        }
        p
    }

    /// Linux `tcp_event_data_sent`: the first transmission with nothing in flight
    /// tells the congestion control (`CA_EVENT_TX_START`), after the idle time.
    fn event_data_sent(&mut self, now: Time) {
        if self.pipe() == 0 {
            let c = self.conn(now);
            self.cc.on_tx_start(&mut self.w, &c);
        }
        self.last_send = now;
    }

    /// What to do after an ACK or a timer: retransmissions first (`tcp_xmit_recovery`,
    /// `tcp_xmit_retransmit_queue`), then new data (`tcp_data_snd_check`).
    fn push(&mut self, now: Time, out: &mut Vec<Packet>, rexmit: Rexmit) {
        if self.state != State::Established {
            return;
        }
        match rexmit {
            Rexmit::None => {}
            Rexmit::Lost => self.xmit_retransmit_queue(now, out),
            Rexmit::New => {
                // F-RTO step 2b: new data; if none could go, conventional recovery
                self.write_xmit(now, out, false);
                if self.snd_nxt <= self.high_seq {
                    self.frto = false;
                    self.xmit_retransmit_queue(now, out);
                }
            }
        }
        self.write_xmit(now, out, false);
    }

    /// Linux `tcp_write_xmit`: new data while cwnd, the receiver's window, the
    /// application and pacing allow; a paced sender sends bursts of
    /// `burst_segments` at their departure times (`tcp_pacing_check`). `probe`: a
    /// tail loss probe, one segment whatever cwnd.
    fn write_xmit(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) -> u64 {
        let cwnd = self.cwnd_segments();
        let mut sent = 0;
        let mut is_cwnd_limited = false;
        loop {
            if !probe {
                if let Some(t) = self.pacer.wait(now) {
                    // held back by pacing, not by cwnd or the application
                    self.pace_at = Some(t);
                    break;
                }
            }
            let window_end = self.snd_una.saturating_add(self.rwnd_segments);
            let room_app = self.app_segments.min(window_end).saturating_sub(self.snd_nxt);
            if room_app == 0 {
                break;
            }
            let pipe = self.pipe();
            let room = if probe {
                1
            } else if pipe >= cwnd {
                is_cwnd_limited = true;
                break;
            } else {
                cwnd - pipe
            };
            let burst = if self.pacer.on { self.burst_segments() } else { u64::MAX };
            let n = room.min(room_app).min(burst);
            let mut bytes = 0;
            for _ in 0..n {
                let seq = self.snd_nxt;
                bytes += self.payload(seq) as u64;
                self.send_new(seq, now, out);
            }
            if self.pacer.on {
                self.pacer.on_burst_sent(now, n, bytes);
            }
            sent += n;
            if probe {
                break;
            }
        }
        is_cwnd_limited |= self.pipe() >= cwnd;
        if sent > 0 || is_cwnd_limited {
            self.cwnd_validate(now, is_cwnd_limited);
        }
        if sent > 0 && !probe {
            // one loss probe per tail loss episode
            self.schedule_loss_probe(now, false);
        }
        sent
    }

    fn send_new(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        let prior_out = self.outstanding();
        if self.rate_cc {
            let tx = self.rate.on_sent(now, prior_out);
            self.rate_tx.push_back(tx);
        }
        self.event_data_sent(now);
        self.board.push_back(Seg { sent_at: now, retx_high: 0, flags: 0, delivered: self.delivered });
        self.tsorted.push_back((now, seq));
        self.snd_nxt += 1;
        self.stats.segments_sent += 1;
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        // Linux tcp_event_new_data_sent: the RTO starts with the first segment out
        if prior_out == 0 || self.pending == Pending::Probe {
            self.rearm_rto(now);
        }
        let p = self.data_packet(seq, now, false);
        out.push(p);
    }

    /// Linux `__tcp_retransmit_skb` and `tcp_retransmit_skb`.
    fn retransmit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        let high = self.snd_nxt;
        let delivered = self.delivered;
        if self.rate_cc {
            let tx = self.rate.on_sent(now, self.outstanding());
            self.rate_tx[(seq - self.snd_una) as usize] = tx;
        }
        self.event_data_sent(now);
        let s = self.seg_mut(seq);
        let was = s.flags;
        s.flags |= RETRANS | EVER_RETRANS;
        s.sent_at = now;
        s.retx_high = high;
        s.delivered = delivered;
        if was & LOST != 0 && was & RETRANS == 0 {
            self.lost_pending -= 1;
        }
        if was & RETRANS == 0 {
            self.retrans_out += 1;
        }
        self.retx_hint = self.retx_hint.max(seq + 1);
        self.tsorted.push_back((now, seq));
        if self.cfg.recovery == Recovery::Rfc6675 {
            self.retx_queue.push_back((seq, high));
        }
        self.retrans_stamp.get_or_insert(now);
        self.undo_retrans = self.undo_retrans.max(0) + 1;
        self.stats.segments_sent += 1;
        self.stats.retransmits += 1;
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        let p = self.data_packet(seq, now, true);
        out.push(p);
    }

    fn next_lost(&mut self) -> Option<u64> {
        let mut seq = self.retx_hint.max(self.snd_una);
        while seq < self.snd_nxt {
            let f = self.seg(seq).flags;
            if f & LOST != 0 && f & (RETRANS | SACKED) == 0 {
                self.retx_hint = seq;
                return Some(seq);
            }
            seq += 1;
        }
        None
    }

    /// Linux `tcp_xmit_retransmit_queue`: retransmit the lost segments, oldest first,
    /// while cwnd and pacing allow (in bursts, as new data); retransmitting the
    /// oldest restarts the RTO.
    fn xmit_retransmit_queue(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.outstanding() == 0 {
            return;
        }
        let cwnd = self.cwnd_segments();
        let mut rearm = false;
        // the paced burst under way: segments it may still take, segments and bytes
        let mut burst: Option<(u64, u64, u64)> = None;
        while self.lost_pending > 0 {
            if self.pipe() >= cwnd {
                break;
            }
            if self.pacer.on {
                if let Some((0, segs, bytes)) = burst {
                    self.pacer.on_burst_sent(now, segs, bytes);
                    burst = None;
                }
                if burst.is_none() {
                    if let Some(t) = self.pacer.wait(now) {
                        self.pace_at = Some(t);
                        break;
                    }
                    burst = Some((self.burst_segments(), 0, 0));
                }
            }
            let Some(seq) = self.next_lost() else {
                debug_assert!(false, "lost_pending out of sync");
                self.lost_pending = 0;
                break;
            };
            if seq == self.snd_una && self.pending != Pending::Reorder {
                rearm = true;
            }
            self.retransmit(seq, now, out);
            if let Some((room, segs, bytes)) = burst.as_mut() {
                *room -= 1;
                *segs += 1;
                *bytes += self.payload(seq) as u64;
            }
        }
        if let Some((_, segs, bytes)) = burst.filter(|b| b.1 > 0) {
            self.pacer.on_burst_sent(now, segs, bytes);
        }
        if rearm {
            let rto = self.rtt.rto();
            self.set_timer(Pending::Rto, now, rto);
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

    // ---- the scoreboard -----------------------------------------------------------

    /// A segment leaves the lost/retransmitted accounting (it was SACKed or
    /// cumulatively acknowledged): keep the counters behind `pipe` in step.
    fn release_loss_flags(&mut self, flags: u8) {
        if flags & LOST != 0 {
            self.lost_out -= 1;
            if flags & RETRANS == 0 {
                self.lost_pending -= 1;
            }
        }
        if flags & RETRANS != 0 {
            self.retrans_out -= 1;
        }
    }

    /// Linux `tcp_mark_skb_lost`: a retransmission lost again goes back to the queue;
    /// a segment newly lost is counted.
    fn mark_lost(&mut self, seq: u64) {
        let s = self.seg_mut(seq);
        let f = s.flags;
        if f & SACKED != 0 {
            return;
        }
        if f & LOST != 0 {
            if f & RETRANS != 0 {
                s.flags &= !RETRANS;
                self.retrans_out -= 1;
                self.lost_pending += 1;
                self.lost_total += 1;
                self.stats.lost_retransmits += 1;
                self.retx_hint = self.retx_hint.min(seq);
            }
        } else {
            s.flags |= LOST;
            self.lost_out += 1;
            self.lost_total += 1;
            if f & RETRANS == 0 {
                self.lost_pending += 1;
                self.retx_hint = self.retx_hint.min(seq);
            }
        }
    }

    /// Linux `tcp_check_sack_reordering`: a segment below the highest SACKed one
    /// was delivered late without a retransmission.
    fn check_sack_reordering(&mut self, low_seq: u64) {
        let fack = self.highest_sacked.max(self.snd_una);
        if low_seq >= fack {
            return;
        }
        let metric = fack - low_seq;
        if metric > self.reordering {
            self.reordering = metric.min(MAX_REORDERING);
        }
        self.reord_seen += 1;
    }

    // ---- RACK (RFC 8985; Linux tcp_recovery.c) -----------------------------------

    /// RFC 8985 §6.2 step 2 / Linux `tcp_rack_advance`: a delivered segment sent at
    /// `xmit` and ending at `end_seq` updates RACK's most recent delivery.
    fn rack_advance(&mut self, flags: u8, end_seq: u64, xmit: Time, now: Time) {
        let rtt = now.saturating_since(xmit);
        // a retransmission delivered in less than the minimum RTT may be the
        // original's delivery: ambiguous, not used
        if flags & EVER_RETRANS != 0 && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        if sent_after(xmit, self.rack.xmit_ts, end_seq, self.rack.end_seq) {
            self.rack.xmit_ts = xmit;
            self.rack.end_seq = end_seq;
        }
    }

    /// RFC 8985 §6.2 step 4 / Linux `tcp_rack_reo_wnd`: no reordering window in
    /// recovery or once DupThresh segments are SACKed, unless reordering was seen;
    /// else a quarter of the minimum RTT per step, at most SRTT.
    fn rack_reo_wnd(&self) -> Duration {
        if self.reord_seen == 0 && (self.ca_state >= CaState::Recovery || self.sacked_out >= self.reordering) {
            return Duration::ZERO;
        }
        let min = self.min_rtt.unwrap_or(Duration::ZERO).div_u64(4).checked_mul(self.rack.reo_wnd_steps as u64).unwrap_or(Duration::MAX);
        min.min(self.rtt.srtt().unwrap_or(Duration::MAX))
    }

    /// Time left before a segment sent at `sent_at` counts as lost (Linux
    /// `tcp_rack_skb_timeout`, ns; not positive: lost).
    fn rack_remaining(&self, sent_at: Time, reo_wnd: Duration, now: Time) -> i128 {
        self.rack.rtt.as_nanos() as i128 + reo_wnd.as_nanos() as i128 - now.saturating_since(sent_at).as_nanos() as i128
    }

    /// A `tsorted` entry still describes a segment in flight awaiting its verdict.
    fn tsorted_live(&self, t: Time, seq: u64) -> bool {
        if seq < self.snd_una || seq >= self.snd_nxt {
            return false;
        }
        let s = self.seg(seq);
        s.sent_at == t && s.flags & SACKED == 0 && !(s.flags & LOST != 0 && s.flags & RETRANS == 0)
    }

    /// RFC 8985 §6.2 step 5 / Linux `tcp_rack_detect_loss`: mark lost every segment
    /// sent before the most recent delivery whose RTT plus the reordering window has
    /// passed; returns the longest wait left for the others.
    fn rack_detect_loss(&mut self, now: Time) -> Option<Duration> {
        let reo_wnd = self.rack_reo_wnd();
        let mut timeout: Option<i128> = None;
        let mut stale = 0;
        let mut i = 0;
        while i < self.tsorted.len() {
            let (t, seq) = self.tsorted[i];
            i += 1;
            if !self.tsorted_live(t, seq) {
                stale += 1;
                continue;
            }
            if !sent_after(self.rack.xmit_ts, t, self.rack.end_seq, seq + 1) {
                break;
            }
            let remaining = self.rack_remaining(t, reo_wnd, now);
            if remaining <= 0 {
                self.mark_lost(seq);
                stale += 1;
            } else {
                timeout = Some(timeout.map_or(remaining, |x| x.max(remaining)));
            }
        }
        // drop stale entries: at the front, and in the scanned part once many
        while self.tsorted.front().is_some_and(|&(t, seq)| !self.tsorted_live(t, seq)) {
            self.tsorted.pop_front();
        }
        if stale > 32 {
            let scanned = i.min(self.tsorted.len());
            let drained: Vec<(Time, u64)> = self.tsorted.drain(..scanned).collect();
            let keep: Vec<(Time, u64)> = drained.into_iter().filter(|&(t, seq)| self.tsorted_live(t, seq)).collect();
            for e in keep.into_iter().rev() {
                self.tsorted.push_front(e);
            }
        }
        timeout.map(|ns| Duration::from_nanos(ns as u64))
    }

    /// Linux `tcp_rack_mark_lost`: scan if RACK learned something; arm the
    /// reordering timer for the segments not yet due.
    fn rack_mark_lost(&mut self, now: Time) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        match self.rack_detect_loss(now) {
            Some(wait) => {
                self.set_timer(Pending::Reorder, now, wait + TIMEOUT_MIN);
                true
            }
            None => false,
        }
    }

    /// Linux `tcp_rack_update_reo_wnd` (RFC 8985 §6.2 step 4): a D-SACK in a round
    /// grows the reordering window by a quarter of the minimum RTT; it shrinks back
    /// after 16 recoveries without one.
    fn rack_update_reo_wnd(&mut self, prior_delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.rack.last_delivered {
            // no D-SACK counts twice within a round trip
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = (self.rack.reo_wnd_steps + 1).min(0xFF);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.delivered;
            self.rack.reo_wnd_persist = RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window has passed.
    fn reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        let prior_inflight = self.pipe();
        let prior_lost = self.lost_total;
        let wait = self.rack_detect_loss(now);
        if prior_inflight != self.pipe() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(now, false);
                if !self.rate_cc {
                    let lost = self.lost_total - prior_lost;
                    self.cwnd_reduction(1, lost, 0);
                }
            }
            self.xmit_retransmit_queue(now, out);
        }
        // segments still within their reordering window wait for the next ACK (or
        // the RTO, counted from the oldest segment's send time)
        let _ = wait;
        if self.pending != Pending::Rto {
            self.rearm_rto(now);
        }
    }

    // ---- RFC 6675 loss detection (recovery = "rfc6675") ---------------------------

    /// RFC 6675 §4 IsLost(): a segment is lost once DupThresh segments above it are
    /// SACKed. Everything un-SACKed below the DupThresh-th highest SACKed segment is
    /// therefore lost; segments below `lost_scan_from` have been marked already.
    fn update_lost(&mut self) {
        let floor = self.lost_scan_from.max(self.snd_una);
        if self.sacked_out < self.cfg.dupthresh as u64 || self.highest_sacked <= floor {
            return;
        }
        let mut count = 0;
        let mut s = self.highest_sacked;
        while s > floor {
            s -= 1;
            if self.seg(s).flags & SACKED != 0 {
                count += 1;
                if count == self.cfg.dupthresh {
                    break;
                }
            }
        }
        if count < self.cfg.dupthresh {
            return;
        }
        for q in floor..s {
            self.mark_lost(q);
        }
        self.lost_scan_from = s;
    }

    /// A retransmission is lost again once DupThresh segments sent after it are SACKed
    /// (as Linux's `tcp_mark_lost_retrans` did before RACK).
    fn detect_lost_retransmissions(&mut self) {
        while let Some(&(seq, high)) = self.retx_queue.front() {
            if seq < self.snd_una || self.seg(seq).flags & RETRANS == 0 {
                self.retx_queue.pop_front();
                continue;
            }
            if self.highest_sacked < high + self.cfg.dupthresh as u64 {
                break;
            }
            self.retx_queue.pop_front();
            self.mark_lost(seq);
        }
    }

    // ---- congestion states (Linux tcp_fastretrans_alert and its helpers) -----------

    /// Linux `tcp_set_ca_state`: the controller hears of the change first (`set_state`,
    /// before the state takes effect and before the sender touches cwnd).
    fn set_ca_state(&mut self, to: CaState, now: Time) {
        if to != self.ca_state {
            self.cc.set_state(&mut self.w, to, now);
        }
        self.ca_state = to;
    }

    /// Linux `tcp_init_cwnd_reduction`; `ecn`: for an ECN echo (the CWR state), whose
    /// ssthresh a controller may set apart from a loss's (DCTCP).
    fn init_cwnd_reduction(&mut self, now: Time, ecn: bool) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.w.cnt = 0;
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.w.ssthresh = if ecn { self.cc.on_ecn(&self.w, now) } else { self.cc.on_congestion(&self.w, now) };
        // RFC 3168 feedback only (an AccECN receiver counts marks instead, RFC 9768
        // §3.2.2.1; Linux `tcp_ecn_queue_cwr`)
        if self.ecn_ok && !self.accecn {
            self.send_cwr = true;
        }
    }

    /// Linux `tcp_cwnd_reduction` (RFC 6937 with the slow-start reduction bound):
    /// while more than ssthresh is in flight, send in proportion to what is
    /// delivered; below it, as much as delivered, plus one when the oldest segment
    /// was acked without new loss, up to ssthresh; the first ACK always allows the
    /// fast retransmission.
    fn cwnd_reduction(&mut self, newly_acked_sacked: u64, newly_lost: u64, flag: u32) {
        if newly_acked_sacked == 0 || self.prior_cwnd <= 0.0 {
            return;
        }
        self.prr_delivered += newly_acked_sacked;
        let pipe = self.pipe() as i64;
        let ssthresh = self.w.ssthresh as i64;
        let delta = ssthresh - pipe;
        let prior_cwnd = (self.prior_cwnd as u64).max(1);
        let mut sndcnt = if delta < 0 {
            let dividend = ssthresh as u64 * self.prr_delivered + prior_cwnd - 1;
            (dividend / prior_cwnd) as i64 - self.prr_out as i64
        } else {
            let mut n = (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if flag & F_SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.w.cwnd = (pipe + sndcnt.max(0)) as f64;
    }

    /// Linux `tcp_end_cwnd_reduction`: cwnd = ssthresh at the end of CWR or of a
    /// recovery that was not undone.
    fn end_cwnd_reduction(&mut self, now: Time) {
        // a controller that sets cwnd itself keeps it (Linux: cong_control set)
        if self.rate_cc {
            return;
        }
        if self.w.ssthresh < INFINITE_SSTHRESH && (self.ca_state == CaState::Cwr || self.undo_marker.is_some()) {
            self.w.cwnd = self.w.ssthresh;
            self.snd_cwnd_stamp = now;
        }
    }

    /// Linux `tcp_enter_cwr` (RFC 3168 §6.1.2): reduce once for an ECN echo; no
    /// undo, congestion is proven.
    fn enter_cwr(&mut self, now: Time) {
        self.prior_ssthresh = 0.0;
        if self.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.init_cwnd_reduction(now, true);
            self.set_ca_state(CaState::Cwr, now);
            self.stats.ecn_reductions += 1;
        }
    }

    /// Linux `tcp_init_undo`: this episode's reduction may be undone while its
    /// retransmissions are not all proven needed.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.snd_una);
        self.undo_retrans = if self.retrans_out > 0 { self.retrans_out as i64 } else { -1 };
    }

    /// Linux `tcp_enter_recovery`.
    fn enter_recovery(&mut self, now: Time, ece_ack: bool) {
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0.0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction(now, false);
        }
        self.set_ca_state(CaState::Recovery, now);
    }

    /// Any retransmission still counts in this episode (Linux `tcp_any_retrans_done`).
    fn any_retrans_done(&self) -> bool {
        self.retrans_out > 0 || self.board.front().is_some_and(|s| s.flags & EVER_RETRANS != 0)
    }

    /// Linux `tcp_try_keep_open`: Open, or Disorder while something is SACKed, lost
    /// or retransmitted.
    fn try_keep_open(&mut self, now: Time) {
        let state = if self.sacked_out + self.reno_sacked + self.lost_out > 0 || self.any_retrans_done() { CaState::Disorder } else { CaState::Open };
        if self.ca_state != state {
            self.set_ca_state(state, now);
            self.high_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_try_to_open`.
    fn try_to_open(&mut self, now: Time, flag: u32) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
        if flag & F_ECE != 0 {
            self.enter_cwr(now);
        }
        if self.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// Eifel detection (RFC 3522; Linux `tcp_packet_delayed`): the ACK echoes a
    /// timestamp from before the first retransmission, so an original was delivered.
    fn packet_delayed(&self) -> bool {
        self.retrans_stamp.is_some_and(|t| self.ts_ecr > 0 && self.ts_ecr < t.as_nanos())
    }

    /// Linux `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// Linux `tcp_undo_cwnd_reduction`: restore cwnd (the controller's undo) and
    /// ssthresh; with `unmark_loss`, no segment is lost any more.
    fn undo_cwnd_reduction(&mut self, now: Time, unmark_loss: bool) {
        if unmark_loss {
            for s in self.board.iter_mut() {
                s.flags &= !LOST;
            }
            self.lost_out = 0;
            self.lost_pending = 0;
        }
        if self.prior_ssthresh > 0.0 {
            // (BBR's undo_cwnd keeps cwnd as it is and restarts its full-pipe and
            // policer detection)
            let c = self.conn(now);
            self.w.cwnd = self.cc.undo_cwnd(&self.w, self.prior_cwnd, &c);
            if self.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.prior_ssthresh;
                self.send_cwr = false;
            }
        }
        self.snd_cwnd_stamp = now;
        self.undo_marker = None;
        self.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// Without SACK, hold the state until something above high_seq is acked (RFC
    /// 6582 §4; Linux `tcp_is_non_sack_preventing_reopen`).
    fn non_sack_preventing_reopen(&mut self) -> bool {
        if self.snd_una == self.high_seq && !self.cfg.sack {
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_recovery`: at the end of a recovery (or loss episode).
    fn try_undo_recovery(&mut self, now: Time) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(now, false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(CaState::Open, now);
        false
    }

    /// Linux `tcp_try_undo_dsack`: D-SACKs proved every retransmission spurious.
    fn try_undo_dsack(&mut self, now: Time) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`: a timeout found spurious (by F-RTO, or by the
    /// undo rule).
    fn try_undo_loss(&mut self, now: Time, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(now, true);
            if frto_undo {
                self.stats.spurious_rtos += 1;
            }
            self.retransmits_in_row = 0;
            if self.non_sack_preventing_reopen() {
                return true;
            }
            if frto_undo || self.cfg.sack {
                self.set_ca_state(CaState::Open, now);
            }
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK in recovery that Eifel shows
    /// triggered by an original.
    fn try_undo_partial(&mut self, now: Time, prior_snd_una: u64) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            self.check_sack_reordering(prior_snd_una);
            if self.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            self.undo_cwnd_reduction(now, true);
            self.try_keep_open(now);
        }
        false
    }

    /// Linux `tcp_add_reno_sack`: without SACK, a duplicate ACK stands for one
    /// segment delivered (at most outstanding less the holes).
    fn add_reno_sack(&mut self, num_dupack: u64, delivered: &mut u64) {
        if num_dupack == 0 {
            return;
        }
        let holes = self.lost_out.max(1).min(self.outstanding());
        let room = self.outstanding().saturating_sub(holes).saturating_sub(self.reno_sacked);
        let add = num_dupack.min(room);
        self.reno_sacked += add;
        *delivered += add;
    }

    /// Linux `tcp_newreno_mark_lost` (RFC 6582): DupThresh duplicate ACKs mark the
    /// oldest segment lost; in recovery, so does each partial ACK.
    fn newreno_mark_lost(&mut self, advanced: bool) {
        if self.outstanding() == 0 {
            return;
        }
        if (self.ca_state < CaState::Recovery && self.reno_sacked >= self.reordering) || (self.ca_state == CaState::Recovery && advanced) {
            let una = self.snd_una;
            if self.seg(una).flags & LOST == 0 {
                self.mark_lost(una);
            }
        }
    }

    /// Linux `tcp_identify_packet_loss`.
    fn identify_packet_loss(&mut self, now: Time, flag: &mut u32) {
        if self.outstanding() == 0 {
            return;
        }
        if !self.cfg.sack {
            self.newreno_mark_lost(*flag & F_SND_UNA_ADVANCED != 0);
            return;
        }
        let prior_retrans = self.retrans_out;
        match self.cfg.recovery {
            Recovery::Rack => {
                if self.rack_mark_lost(now) {
                    *flag &= !F_SET_XMIT_TIMER;
                }
            }
            Recovery::Rfc6675 => {
                self.update_lost();
                if self.retrans_out > 0 {
                    self.detect_lost_retransmissions();
                }
            }
        }
        if prior_retrans > self.retrans_out {
            *flag |= F_LOST_RETRANS;
        }
    }

    /// Linux `tcp_process_loss`: an ACK in the Loss state, with F-RTO (RFC 5682
    /// §3.1, the SACK-enhanced version).
    fn process_loss(&mut self, now: Time, flag: u32, num_dupack: u64, rexmit: &mut Rexmit, delivered: &mut u64) {
        let recovered = self.snd_una >= self.high_seq;
        if flag & F_SND_UNA_ADVANCED != 0 && self.try_undo_loss(now, false) {
            return;
        }
        if self.frto {
            // step 3b: the timeout was spurious if never-retransmitted data is acked
            if flag & F_ORIG_SACK_ACKED != 0 && self.try_undo_loss(now, true) {
                return;
            }
            if self.snd_nxt > self.high_seq {
                if flag & F_DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if flag & F_SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt;
                // step 2b: send new data (once cwnd is updated below); otherwise the
                // conventional recovery
                if self.snd_nxt < self.app_segments && self.snd_nxt < self.snd_una.saturating_add(self.rwnd_segments) {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // step 2a and 3a's first part
            self.try_undo_recovery(now);
            return;
        }
        if !self.cfg.sack {
            // a Reno duplicate ACK means new data of step 2b arrived
            if self.snd_nxt > self.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack, delivered);
            } else if flag & F_SND_UNA_ADVANCED != 0 {
                self.reno_sacked = 0;
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// Linux `tcp_fastretrans_alert`: the congestion state after an unusual ACK;
    /// sets `rexmit` when lost segments are to be retransmitted.
    fn fastretrans_alert(&mut self, now: Time, prior_snd_una: u64, num_dupack: u64, flag: &mut u32, rexmit: &mut Rexmit, delivered: &mut u64) {
        let ece_ack = *flag & F_ECE != 0;
        if ece_ack {
            self.prior_ssthresh = 0.0;
        }
        // Reno (RFC 5681 §3.2 step 6) without SACK: the first ACK of new data ends
        // fast recovery with cwnd = ssthresh; a second hole waits for three new
        // duplicate ACKs or the RTO.
        if self.cc.rfc5681_recovery() && !self.cfg.sack && self.ca_state == CaState::Recovery && *flag & F_SND_UNA_ADVANCED != 0 {
            self.w.cwnd = self.w.ssthresh;
            self.set_ca_state(CaState::Open, now);
            self.reno_sacked = 0;
            self.undo_marker = None;
            self.try_keep_open(now);
            return;
        }
        // D: leave a state whose episode is over
        if self.ca_state == CaState::Open {
            self.retrans_stamp = None;
        } else if self.snd_una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr => {
                    // held until something above high_seq is acked, for the CWR flag
                    if self.snd_una != self.high_seq {
                        self.end_cwnd_reduction(now);
                        self.set_ca_state(CaState::Open, now);
                    }
                }
                CaState::Recovery => {
                    if !self.cfg.sack {
                        self.reno_sacked = 0;
                    }
                    if self.try_undo_recovery(now) {
                        return;
                    }
                    self.end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        // E: the state's own work
        match self.ca_state {
            CaState::Recovery => {
                if *flag & F_SND_UNA_ADVANCED == 0 {
                    if !self.cfg.sack {
                        self.add_reno_sack(num_dupack, delivered);
                    }
                } else if self.try_undo_partial(now, prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack(now) {
                    self.try_keep_open(now);
                }
                self.identify_packet_loss(now, flag);
                if self.ca_state != CaState::Recovery {
                    if self.lost_out == 0 {
                        return;
                    }
                    // undone, but a loss is evident: a new recovery
                    self.enter_recovery(now, ece_ack);
                }
            }
            CaState::Loss => {
                self.process_loss(now, *flag, num_dupack, rexmit, delivered);
                self.identify_packet_loss(now, flag);
                if !(self.ca_state == CaState::Open || *flag & F_LOST_RETRANS != 0) {
                    return;
                }
                // undone, or retransmissions lost: as from the Open state
                if !self.alert_default(now, num_dupack, ece_ack, flag, delivered) {
                    return;
                }
            }
            _ => {
                if !self.alert_default(now, num_dupack, ece_ack, flag, delivered) {
                    return;
                }
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// The default branch of `tcp_fastretrans_alert` (Open, Disorder, CWR, and Loss
    /// once undone or with lost retransmissions): false if no loss is evident.
    fn alert_default(&mut self, now: Time, num_dupack: u64, ece_ack: bool, flag: &mut u32, delivered: &mut u64) -> bool {
        if !self.cfg.sack {
            if *flag & F_SND_UNA_ADVANCED != 0 {
                self.reno_sacked = 0;
            }
            self.add_reno_sack(num_dupack, delivered);
        }
        if self.ca_state <= CaState::Disorder {
            self.try_undo_dsack(now);
        }
        self.identify_packet_loss(now, flag);
        if self.lost_out == 0 {
            self.try_to_open(now, *flag);
            return false;
        }
        self.enter_recovery(now, ece_ack);
        true
    }

    /// Linux `tcp_process_tlp_ack` (RFC 8985 §7.4): the end of a probe episode; a
    /// loss repaired by the probe still costs one reduction.
    fn process_tlp_ack(&mut self, now: Time, ack: u64, flag: u32) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || flag & F_DSACK_TLP != 0 {
            // new data probed, or the D-SACK shows the original arrived too: no loss
            self.tlp_high_seq = None;
        } else if ack > high {
            self.init_cwnd_reduction(now, false);
            self.set_ca_state(CaState::Cwr, now);
            self.end_cwnd_reduction(now);
            self.try_keep_open(now);
            self.stats.loss_probe_recoveries += 1;
        } else if flag & (F_SND_UNA_ADVANCED | F_NOT_DUP | F_DATA_SACKED) == 0 {
            // a pure duplicate: the original and the probe both arrived
            self.tlp_high_seq = None;
        }
    }

    /// Linux `tcp_send_loss_probe` (RFC 8985 §7.3): new data if any may go (whatever
    /// cwnd), else the last segment again; one probe per episode.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tlp_high_seq.is_some() || self.outstanding() == 0 {
            self.rearm_rto(now);
            return;
        }
        self.tlp_retrans = false;
        let window_end = self.snd_una.saturating_add(self.rwnd_segments);
        let sent = if self.snd_nxt < self.app_segments && self.snd_nxt < window_end {
            self.write_xmit(now, out, true) > 0
        } else {
            let last = self.snd_nxt - 1;
            if self.seg(last).flags & SACKED != 0 {
                false
            } else {
                // Linux __tcp_retransmit_skb: the probe is a retransmission (counted,
                // EVER_RETRANS) but not one in flight for recovery (no SACKED_RETRANS,
                // no undo accounting)
                let delivered = self.delivered;
                if self.rate_cc {
                    let tx = self.rate.on_sent(now, self.outstanding());
                    self.rate_tx[(last - self.snd_una) as usize] = tx;
                }
                self.event_data_sent(now);
                let sg = self.seg_mut(last);
                sg.flags |= EVER_RETRANS;
                sg.sent_at = now;
                sg.delivered = delivered;
                self.tsorted.push_back((now, last));
                self.stats.segments_sent += 1;
                self.stats.retransmits += 1;
                let p = self.data_packet(last, now, true);
                if self.pacer.on {
                    // every transmission moves the departure time (tcp_update_skb_after_send)
                    self.pacer.on_burst_sent(now, 1, p.payload as u64);
                }
                out.push(p);
                self.tlp_retrans = true;
                true
            }
        };
        if sent {
            self.tlp_high_seq = Some(self.snd_nxt);
            self.stats.loss_probes += 1;
            self.pending = Pending::None; // the RTO restarts from now
        }
        self.rearm_rto(now);
    }

    /// Linux `tcp_retransmit_timer` and `tcp_enter_loss` (RFC 6298 §5.4-5.7; RFC 5681
    /// §3.1): every segment whose RACK timeout has passed (the oldest always) is
    /// lost; ssthresh is reduced once per episode; cwnd = in flight + 1; the oldest
    /// segment goes again; the RTO doubles; F-RTO starts.
    fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.outstanding() == 0 {
            return;
        }
        self.stats.timeouts += 1;
        let new_recovery = self.ca_state < CaState::Recovery;
        // tcp_timeout_mark_lost
        let head = self.snd_una;
        for seq in self.snd_una..self.snd_nxt {
            let s = *self.seg(seq);
            if s.flags & SACKED != 0 {
                continue;
            }
            if seq != head && self.cfg.recovery == Recovery::Rack && self.cfg.sack && self.rack_remaining(s.sent_at, Duration::ZERO, now) > 0 {
                continue; // recently sent: not lost yet
            }
            self.mark_lost(seq);
        }
        self.retx_hint = self.snd_una;
        self.lost_scan_from = self.snd_nxt;
        self.retx_queue.clear();
        if !self.cfg.sack {
            self.reno_sacked = 0;
        }
        if self.ca_state <= CaState::Disorder || self.high_seq <= self.snd_una || (self.ca_state == CaState::Loss && self.retransmits_in_row == 0) {
            self.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.w.cwnd;
            self.w.ssthresh = self.cc.on_congestion(&self.w, now);
            // `tcp_ca_event(CA_EVENT_LOSS)`, once per episode (Prague halves here)
            self.cc.on_loss_event(&self.w, now);
            self.init_undo();
        }
        self.w.cwnd = (self.pipe() + 1) as f64;
        self.w.cnt = 0;
        self.snd_cwnd_stamp = now;
        self.set_ca_state(CaState::Loss, now);
        let s = self.view(now);
        self.cc.on_timeout(&self.w, &s);
        let c = self.conn(now);
        self.cc.on_enter_loss(&c);
        self.high_seq = self.snd_nxt;
        if self.ecn_ok && !self.accecn {
            self.send_cwr = true;
        }
        self.frto = self.cfg.frto && (new_recovery || self.retransmits_in_row > 0);
        // retransmit the oldest segment (at once, paced or not), back off, restart
        // the timer
        if self.seg(head).flags & (LOST | RETRANS) == LOST {
            self.retransmit(head, now, out);
            if self.pacer.on {
                let bytes = self.payload(head) as u64;
                self.pacer.on_burst_sent(now, 1, bytes);
            }
        }
        self.retransmits_in_row += 1;
        self.rtt.back_off();
        let rto = self.rtt.rto();
        self.set_timer(Pending::Rto, now, rto);
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

    /// Linux `tcp_sacktag_write_queue`, with `tcp_check_dsack`.
    fn sacktag(&mut self, a: &Packet, ack: u64, prior_snd_una: u64, now: Time, rs: &mut Newest, rate: &mut RateSample) -> SackTag {
        let mut st = SackTag { reord: self.snd_nxt, ..SackTag::default() };
        let mut blocks = a.sack.iter(a.seq);
        let first = a.sack.first(a.seq);
        // RFC 2883 §4: a D-SACK block is the first, below the cumulative ACK or
        // inside the second block
        let mut dsack = None;
        if let Some((s0, e0)) = first {
            let second = a.sack.iter(a.seq).nth(1);
            if s0 < a.seq || second.is_some_and(|(s1, e1)| s0 >= s1 && e0 <= e1) {
                dsack = Some((s0, e0));
            }
        }
        if let Some((s0, e0)) = dsack {
            blocks.next();
            let dup = e0.saturating_sub(s0);
            if dup > 0 {
                self.stats.dsacks += dup;
                if self.tlp_high_seq == Some(e0) && dup == 1 {
                    st.flag |= F_DSACK_TLP;
                }
                // not caused by a retransmission of ours: dubious, ignored
                if self.stats.dsacks <= self.stats.retransmits {
                    if self.reord_seen > 0 && st.flag & F_DSACK_TLP == 0 {
                        self.rack.dsack_seen = true;
                    }
                    st.flag |= F_DSACKING_ACK;
                    // a spurious retransmission was delivered
                    st.delivered += dup;
                    // below snd_una: count it against the episode's retransmissions
                    if let Some(um) = self.undo_marker {
                        if self.undo_retrans > 0 && e0 <= prior_snd_una && e0 > um {
                            self.undo_retrans = (self.undo_retrans - dup as i64).max(0);
                        }
                    }
                    // above snd_una: a retransmission of a segment already SACKed
                    let (lo, hi) = (s0.max(self.snd_una).max(ack), e0.min(self.snd_nxt));
                    for seq in lo..hi {
                        let f = self.seg(seq).flags;
                        if f & EVER_RETRANS != 0 {
                            if let Some(um) = self.undo_marker {
                                if self.undo_retrans > 0 && seq + 1 > um {
                                    self.undo_retrans -= 1;
                                }
                            }
                            if f & SACKED != 0 && seq < st.reord {
                                st.reord = seq;
                            }
                        }
                        if f & RETRANS != 0 && f & LOST == 0 {
                            // the retransmission is no longer in flight
                            self.seg_mut(seq).flags &= !RETRANS;
                            self.retrans_out -= 1;
                        }
                    }
                }
            }
        }
        for (start, end) in blocks {
            let lo = start.max(self.snd_una).max(ack);
            let hi = end.min(self.snd_nxt);
            let mut seq = lo;
            while seq < hi {
                // Each ACK repeats its blocks: most of a block was SACKed by earlier
                // ACKs. Skip that part in one scan of the scoreboard.
                let (from, to) = ((seq - self.snd_una) as usize, (hi - self.snd_una) as usize);
                seq += self.board.range(from..to).take_while(|s| s.flags & SACKED != 0).count() as u64;
                if seq == hi {
                    break;
                }
                let s = *self.seg(seq);
                // tcp_sacktag_one
                self.rack_advance(s.flags, seq + 1, s.sent_at, now);
                if s.flags & RETRANS != 0 {
                    if s.flags & LOST != 0 {
                        self.lost_out -= 1;
                        self.retrans_out -= 1;
                    }
                    // (R without L: the retransmission is believed still in flight)
                } else {
                    if s.flags & EVER_RETRANS == 0 {
                        // a never-retransmitted segment SACKed in a hole: reordering
                        if seq < self.highest_sacked && seq < st.reord {
                            st.reord = seq;
                        }
                        if seq + 1 <= self.high_seq {
                            st.flag |= F_ORIG_SACK_ACKED;
                        }
                        st.first_sackt.get_or_insert(s.sent_at);
                        st.last_sackt = Some(s.sent_at);
                    }
                    if s.flags & LOST != 0 {
                        self.lost_out -= 1;
                        self.lost_pending -= 1;
                    }
                }
                let keep_retrans = s.flags & RETRANS != 0 && s.flags & LOST == 0;
                self.seg_mut(seq).flags = (s.flags | SACKED) & !LOST & if keep_retrans { !0 } else { !RETRANS };
                st.flag |= F_DATA_SACKED;
                self.sacked_out += 1;
                st.delivered += 1;
                rs.note(s.sent_at, seq + 1, s.delivered);
                if self.rate_cc {
                    let tx = &mut self.rate_tx[(seq - self.snd_una) as usize];
                    self.rate.on_delivered(tx, s.sent_at, seq + 1, s.flags & EVER_RETRANS != 0, true, rate);
                }
                self.highest_sacked = self.highest_sacked.max(seq + 1);
                seq += 1;
            }
        }
        if self.ca_state != CaState::Loss || self.undo_marker.is_some() {
            let r = st.reord;
            self.check_sack_reordering(r);
        }
        st
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
