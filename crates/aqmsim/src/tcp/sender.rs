//! The TCP sender: scoreboard, SACK loss recovery (Blanton, Allman, Wang, Jarvinen,
//! Kojo & Nishida, RFC 6675), proportional rate reduction (Mathis, Dukkipati & Cheng,
//! RFC 6937), retransmission timer (RFC 6298), NewReno recovery without SACK
//! (RFC 6582), and the congestion controller's hooks.
//!
//! Sequence numbers count segments. The scoreboard keeps one entry per outstanding
//! segment with Linux-like flags, and counters from which RFC 6675's `pipe` follows:
//! `pipe = outstanding - sacked - lost + retransmitted` (Linux
//! `tcp_packets_in_flight`).
//!
//! Pacing (`tcp/pacing.rs`) gates the transmit loop when configured or when the
//! controller sets its own rate; a controller that sets cwnd itself (BBR) gets
//! delivery-rate samples (`tcp/rate.rs`) and the sender leaves cwnd to it.

use std::collections::VecDeque;

use aqm::{Duration, Time};

use super::cc::{AckSample, AnyCc, CongestionControl, Conn, Window, INFINITE_SSTHRESH};
use super::pacing::{self, Pacer};
use super::rate::{RateSample, RateState, TxInfo};
use super::rtt::RttEstimator;
use super::{EcnMode, TcpConfig};
use crate::packet::{Kind, Packet};
use crate::rng::SimRng;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted and not yet SACKed, acked, or declared lost again.
const RETRANS: u8 = 4;
const EVER_RETRANS: u8 = 8;

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    sent_at: Time,
    /// snd_nxt when this segment was last retransmitted.
    retx_high: u64,
    flags: u8,
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

/// Linux's congestion states that matter here (`tcp_ca_state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery (RFC 6675 / RFC 6582), cwnd set by PRR.
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acked.
    Loss,
    /// Reducing after an ECN echo (RFC 3168 §6.1.2), cwnd set by PRR, no retransmission.
    Cwr,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub recoveries: u64,
    pub bytes_acked: u64,
    pub syn_retransmits: u64,
    /// Window reductions in response to ECN-Echo.
    pub ecn_reductions: u64,
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
    /// When data was last sent (for the restart after idle, RFC 5681 §4.1).
    last_send: Time,
    /// The newest timestamp seen on an ACK, echoed on data (RFC 7323 §4.3 TS.Recent):
    /// lets a receiver measure the RTT (ns, 0 = none yet).
    ts_recent: u64,
    /// Receiver's advertised window, in segments.
    rwnd_segments: u64,
    board: VecDeque<Seg>,
    sacked_out: u64,
    lost_out: u64,
    retrans_out: u64,
    /// Lost, not retransmitted, not SACKed: waiting for NextSeg rule 1.
    lost_pending: u64,
    /// Non-SACK mode: duplicate ACKs counted as SACKed segments (Linux `tcp_add_reno_sack`).
    reno_sacked: u64,
    dupacks: u32,
    highest_sacked: u64,
    /// Segments below this have been examined by the IsLost rule.
    lost_scan_from: u64,
    /// Lowest segment that may need a retransmission.
    retx_hint: u64,
    /// Retransmissions in order (their retx_high is non-decreasing).
    retx_queue: VecDeque<(u64, u64)>,
    recovery_point: u64,
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    cwnd_limited: bool,
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
    min_rtt: Option<Duration>,
    last_rtt: Option<Duration>,
    rto_deadline: Option<Time>,
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
            w: Window { cwnd: cfg.initial_window as f64, ssthresh: INFINITE_SSTHRESH },
            cc: cfg.cc.build(),
            rtt: RttEstimator::new(cfg.rto_style, cfg.rto_initial, cfg.rto_min, cfg.rto_max),
            snd_una: 0,
            snd_nxt: 0,
            app_segments: 0,
            msgs: VecDeque::new(),
            last_send: Time::ZERO,
            ts_recent: 0,
            rwnd_segments: cfg.receive_window.map_or(u64::MAX, |w| w.0 / cfg.mss.0),
            board: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            lost_pending: 0,
            reno_sacked: 0,
            dupacks: 0,
            highest_sacked: 0,
            lost_scan_from: 0,
            retx_hint: 0,
            retx_queue: VecDeque::new(),
            recovery_point: 0,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            cwnd_limited: false,
            ecn_ok: false,
            accecn: false,
            ect: cfg.cc.ect(),
            delivered_ce: 0,
            send_cwr: false,
            min_rtt: None,
            last_rtt: None,
            rto_deadline: None,
            pacer: Pacer::default(),
            pace_at: None,
            rate_cc: false,
            rate: RateState::new(),
            rate_tx: VecDeque::new(),
            lost_total: 0,
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

    /// The connection is open (Linux `tcp_init_transfer`): the controller starts,
    /// with the handshake's RTT if there was one, and pacing starts if configured
    /// or asked for by the controller (`SK_PACING_NEEDED`).
    fn established(&mut self, now: Time) {
        self.state = State::Established;
        let c = self.conn(now);
        self.cc.on_init(&mut self.w, &c);
        self.pacer.on = self.cfg.pacing || self.cc.pacing_rate().is_some();
        if self.pacer.on {
            self.update_pacing_rate();
        }
    }

    /// What a controller that sets cwnd itself reads of the connection.
    fn conn(&self, now: Time) -> Conn {
        Conn {
            now,
            mss: self.cfg.mss.0 as u32,
            srtt: self.rtt.srtt(),
            min_rtt: self.min_rtt,
            in_flight: self.pipe(),
            delivered: self.rate.delivered,
            lost: self.lost_total,
            delivered_mstamp: self.rate.delivered_mstamp,
            app_limited: self.rate.app_limited,
            ca_state: self.ca_state,
            wstamp: self.pacer.wstamp,
            delivered_ce: self.delivered_ce,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited,
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

    /// The pacing rate in bytes per second (0 when not pacing).
    pub fn pacing_rate(&self) -> u64 {
        if self.pacer.on {
            self.pacer.rate
        } else {
            0
        }
    }

    /// Start the connection with `bytes` to send (`None`: unlimited, a bulk transfer).
    pub fn start(&mut self, now: Time, bytes: Option<u64>, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.state, State::Idle);
        self.started_at = Some(now);
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
            self.transmit(now, out);
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
    /// RTO, the window restarts from at most the initial window (RFC 5681 §4.1,
    /// Linux `tcp_slow_start_after_idle`), if configured.
    pub fn send_more(&mut self, now: Time, bytes: u64, out: &mut Vec<Packet>) {
        debug_assert!(self.app_segments != u64::MAX, "a bulk sender has unlimited data already");
        let idle = self.snd_una == self.snd_nxt;
        // Linux leaves a controller that sets cwnd itself alone (`tcp_slow_start_after_idle_check`)
        if idle && self.cfg.slow_start_after_idle && !self.rate_cc && now.saturating_since(self.last_send) > self.rtt.rto() {
            self.w.cwnd = self.w.cwnd.min(self.cfg.initial_window as f64);
        }
        if self.rate_cc {
            // `tcp_rate_check_app_limited` on the application's write
            let (pipe, cwnd) = (self.pipe(), self.cwnd_segments());
            self.rate.check_app_limited(self.snd_nxt >= self.app_segments, pipe, cwnd, self.lost_out, self.retrans_out);
        }
        self.push_message(bytes);
        if self.state == State::Done {
            self.state = State::Established;
            self.finished_at = None;
        }
        self.transmit(now, out);
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
            self.rto_deadline = None;
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
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// RFC 6675 `pipe`: segments believed to be in the network.
    pub fn pipe(&self) -> u64 {
        let out = self.snd_nxt - self.snd_una;
        (out + self.retrans_out).saturating_sub(self.sacked_out + self.reno_sacked + self.lost_out)
    }

    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// When the sender next needs to run: its retransmission timer, or the end of a
    /// pacing gap.
    #[inline]
    pub fn poll_at(&self) -> Option<Time> {
        match (self.rto_deadline, self.pace_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
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
        self.last_send = now;
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

    fn cwnd_segments(&self) -> u64 {
        // floor(cwnd), at least one. `as u64` truncates toward zero and saturates (NaN
        // and negatives to 0), which equals `floor` for every value that gives a
        // non-zero result; it avoids a libm `floor` call per transmit check on
        // targets without SSE4.1.
        (self.w.cwnd as u64).max(1)
    }

    /// Send what the windows allow: lost segments first (RFC 6675 NextSeg rule 1),
    /// then new data (rule 2).
    fn transmit(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.transmit_paced(now, out, false);
    }

    /// `transmit`, with the pacing gate: a paced sender sends bursts (Linux's TSO
    /// packets) while the departure time has come, and otherwise waits for it
    /// (`tcp_pacing_check`). `unpaced_first`: the first segment leaves at once (the
    /// retransmission a timeout sends straight from its timer).
    fn transmit_paced(&mut self, now: Time, out: &mut Vec<Packet>, mut unpaced_first: bool) {
        self.pace_at = None;
        if self.state != State::Established {
            return;
        }
        // the window does not change while sending
        let cwnd = self.cwnd_segments();
        // the burst under way: segments it may still take, segments and payload
        // bytes sent, whether it retransmits
        let mut burst: Option<(u64, u64, u64, bool)> = None;
        loop {
            if self.pipe() >= cwnd {
                self.cwnd_limited = true;
                break;
            }
            let mut retx = None;
            if self.lost_pending > 0 {
                retx = self.next_lost();
                if retx.is_none() {
                    debug_assert!(false, "lost_pending out of sync");
                    self.lost_pending = 0;
                }
            }
            let window_end = self.snd_una.saturating_add(self.rwnd_segments);
            if retx.is_none() && !(self.snd_nxt < self.app_segments && self.snd_nxt < window_end) {
                self.cwnd_limited = false;
                break;
            }
            if self.pacer.on {
                if let Some((room, segs, bytes, was_retx)) = burst {
                    if room == 0 || was_retx != retx.is_some() {
                        self.pacer.on_burst_sent(now, segs, bytes);
                        burst = None;
                    }
                }
                if burst.is_none() {
                    if let Some(t) = self.pacer.wait(now).filter(|_| !unpaced_first) {
                        // held back by pacing, not by cwnd or the application
                        self.pace_at = Some(t);
                        break;
                    }
                    unpaced_first = false;
                    let min_tso = self.cc.min_tso_segs().unwrap_or(pacing::MIN_TSO_SEGS);
                    // Linux `tcp_tso_segs`: the controller's own burst size, or tcp_tso_autosize
                    let segs = self.cc.tso_segs().unwrap_or_else(|| pacing::burst_segments(self.pacer.rate, self.cfg.mss.0 as u32, self.min_rtt, min_tso));
                    burst = Some((segs, 0, 0, retx.is_some()));
                }
            }
            if self.pipe() == 0 {
                // Linux `tcp_event_data_sent`: the first segment with nothing in flight
                let c = self.conn(now);
                self.cc.on_tx_start(&mut self.w, &c);
            }
            match retx {
                Some(seq) => self.retransmit(seq, now, out),
                None => self.send_new(now, out),
            }
            if let Some((room, segs, bytes, _)) = burst.as_mut() {
                *room -= 1;
                *segs += 1;
                *bytes += out.last().map_or(0, |p| p.payload as u64);
            }
        }
        if let Some((_, segs, bytes, _)) = burst.filter(|b| b.1 > 0) {
            self.pacer.on_burst_sent(now, segs, bytes);
        }
        if self.rto_deadline.is_none() && self.snd_nxt > self.snd_una {
            // RFC 6298 §5.1: start the timer when data is sent and it is not running.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
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

    fn send_new(&mut self, now: Time, out: &mut Vec<Packet>) {
        let seq = self.snd_nxt;
        if self.rate_cc {
            let tx = self.rate.on_sent(now, self.outstanding());
            self.rate_tx.push_back(tx);
        }
        self.board.push_back(Seg { sent_at: now, retx_high: 0, flags: 0 });
        self.snd_nxt += 1;
        self.stats.segments_sent += 1;
        if matches!(self.ca_state, CaState::Recovery | CaState::Cwr) {
            self.prr_out += 1;
        }
        let p = self.data_packet(seq, now, false);
        out.push(p);
    }

    fn retransmit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        if self.rate_cc {
            let tx = self.rate.on_sent(now, self.outstanding());
            self.rate_tx[(seq - self.snd_una) as usize] = tx;
        }
        let high = self.snd_nxt;
        let s = self.seg_mut(seq);
        s.flags |= RETRANS | EVER_RETRANS;
        s.sent_at = now;
        s.retx_high = high;
        self.retrans_out += 1;
        self.lost_pending -= 1;
        self.retx_hint = seq + 1;
        self.retx_queue.push_back((seq, high));
        if seq == self.snd_una {
            // Linux `tcp_xmit_retransmit_queue`: retransmitting the head restarts the
            // timer, giving the retransmission a full RTO (RFC 6298 §5.1 would leave
            // the running timer alone).
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        self.stats.segments_sent += 1;
        self.stats.retransmits += 1;
        if self.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
        let p = self.data_packet(seq, now, true);
        out.push(p);
    }

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

    fn mark_lost(&mut self, seq: u64) {
        let s = self.seg_mut(seq);
        if s.flags & (LOST | SACKED) == 0 {
            s.flags |= LOST;
            let pending = s.flags & RETRANS == 0;
            self.lost_out += 1;
            self.lost_total += 1;
            if pending {
                self.lost_pending += 1;
                self.retx_hint = self.retx_hint.min(seq);
            }
        }
    }

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
    /// (as Linux's `tcp_mark_lost_retrans` in the kernels the seeds used, and RACK).
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
            let s = self.seg_mut(seq);
            s.flags &= !RETRANS;
            self.retrans_out -= 1;
            self.lost_total += 1;
            // still LOST: eligible for NextSeg rule 1 again
            self.lost_pending += 1;
            self.retx_hint = self.retx_hint.min(seq);
        }
    }

    fn enter_recovery(&mut self, now: Time) {
        // RFC 6675 §5 (4.1)-(4.2): RecoveryPoint = HighData; ssthresh from the
        // congestion controller; RFC 6937: RecoverFS = FlightSize. Coming from CWR
        // (already reducing after an ECN echo), Linux keeps the reduction under way.
        if self.ca_state == CaState::Cwr {
            self.recovery_point = self.snd_nxt;
            self.cc.set_state(&mut self.w, CaState::Recovery, now);
            self.ca_state = CaState::Recovery;
            self.stats.recoveries += 1;
            return;
        }
        self.w.ssthresh = self.cc.on_congestion(&self.w, now);
        self.cc.set_state(&mut self.w, CaState::Recovery, now);
        self.recovery_point = self.snd_nxt;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.recover_fs = self.outstanding().max(1);
        self.ca_state = CaState::Recovery;
        self.stats.recoveries += 1;
    }

    /// The end of a window reduction (CWR or recovery): back to Open, with cwnd =
    /// ssthresh (RFC 6937) unless the controller sets cwnd itself (Linux
    /// `tcp_end_cwnd_reduction` returns early for a `cong_control` controller).
    fn open(&mut self, now: Time) {
        if !self.rate_cc {
            self.w.cwnd = self.w.ssthresh;
        }
        self.cc.set_state(&mut self.w, CaState::Open, now);
        self.ca_state = CaState::Open;
    }

    /// RFC 6937 §3: proportional rate reduction with slow-start reduction bound.
    fn prr(&mut self, delivered: u64) {
        if self.rate_cc {
            return; // Linux `tcp_cong_control`: a `cong_control` controller sets cwnd
        }
        self.prr_delivered += delivered;
        let pipe = self.pipe() as f64;
        let ssthresh = self.w.ssthresh;
        let sndcnt = if pipe > ssthresh {
            ((self.prr_delivered as f64 * ssthresh / self.recover_fs as f64).ceil() - self.prr_out as f64).max(0.0)
        } else {
            let limit = (self.prr_delivered.saturating_sub(self.prr_out)).max(delivered) as f64 + 1.0;
            (ssthresh - pipe).min(limit).max(0.0)
        };
        // Linux: always allow the fast retransmit on entering recovery.
        let sndcnt = if self.prr_out == 0 { sndcnt.max(1.0) } else { sndcnt };
        self.w.cwnd = pipe + sndcnt.floor();
    }

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
                    self.rtt.sample(now - self.syn_sent_at);
                    self.note_rtt(now - self.syn_sent_at);
                } else {
                    // RFC 6298 §5.7
                    self.rtt.at_least(Duration::from_secs(3));
                }
                self.rto_deadline = None;
                self.established(now);
                self.transmit(now, out);
            }
            (State::Established, Kind::Ack) => self.on_ack(p, now, out),
            _ => {}
        }
    }

    fn note_rtt(&mut self, r: Duration) {
        self.last_rtt = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
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

    /// A segment the ACK delivered (SACKed or acked) gives its part of the rate
    /// sample (`tcp_rate_skb_delivered`).
    fn rate_delivered(&mut self, seq: u64, s: Seg, sacked: bool, rs: &mut RateSample) {
        let tx = &mut self.rate_tx[(seq - self.snd_una) as usize];
        self.rate.on_delivered(tx, s.sent_at, seq + 1, s.flags & (RETRANS | EVER_RETRANS) != 0, sacked, rs);
    }

    fn on_ack(&mut self, a: &Packet, now: Time, out: &mut Vec<Packet>) {
        // RFC 7323: the ACK's timestamp is newer than any seen (Linux FLAG_TS_PROGRESS)
        let ts_progress = a.sent_at.as_nanos() > self.ts_recent;
        self.ts_recent = self.ts_recent.max(a.sent_at.as_nanos());
        let mut rs = RateSample::default();
        let (prior_in_flight, lost_before) = (self.pipe(), self.lost_total);
        let ack = a.seq.min(self.snd_nxt);
        let prior_una = self.snd_una;
        let prior_rwnd = self.rwnd_segments;
        if self.cfg.receive_window.is_none() {
            self.rwnd_segments = a.rwnd / self.cfg.mss.0;
        } else {
            self.rwnd_segments = (a.rwnd / self.cfg.mss.0).min(self.cfg.receive_window.unwrap().0 / self.cfg.mss.0);
        }

        // 1. SACK blocks (RFC 2018 / RFC 6675 §4 Update()).
        let mut newly_sacked = 0u64;
        let mut sack_first_sent: Option<Time> = None;
        let mut newest_sent: Option<Time> = None;
        if self.cfg.sack {
            for (start, end) in a.sack.iter(a.seq) {
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
                    if self.rate_cc {
                        self.rate_delivered(seq, s, true, &mut rs);
                    }
                    self.release_loss_flags(s.flags);
                    if s.flags & EVER_RETRANS == 0 {
                        sack_first_sent = Some(sack_first_sent.map_or(s.sent_at, |t: Time| t.min(s.sent_at)));
                        newest_sent = Some(newest_sent.map_or(s.sent_at, |t: Time| t.max(s.sent_at)));
                    }
                    self.seg_mut(seq).flags = (s.flags | SACKED) & !(LOST | RETRANS);
                    self.sacked_out += 1;
                    newly_sacked += 1;
                    self.highest_sacked = self.highest_sacked.max(seq + 1);
                    seq += 1;
                }
            }
        }

        // 2. Cumulative ACK.
        let mut newly_acked_unsacked = 0u64;
        let mut first_sent: Option<Time> = None;
        let mut retrans_acked = false;
        if ack > self.snd_una {
            for seq in self.snd_una..ack {
                if self.rate_cc {
                    // the front entries (snd_una moves after the loop)
                    let s = self.board[0];
                    let mut tx = self.rate_tx.pop_front().expect("rate entry");
                    self.rate.on_delivered(&mut tx, s.sent_at, seq + 1, s.flags & (RETRANS | EVER_RETRANS) != 0, false, &mut rs);
                }
                let s = self.board.pop_front().expect("scoreboard entry");
                if s.flags & SACKED != 0 {
                    self.sacked_out -= 1;
                } else {
                    newly_acked_unsacked += 1;
                }
                self.release_loss_flags(s.flags);
                if s.flags & EVER_RETRANS != 0 {
                    retrans_acked = true;
                } else if s.flags & SACKED == 0 {
                    first_sent.get_or_insert(s.sent_at);
                    newest_sent = Some(newest_sent.map_or(s.sent_at, |t: Time| t.max(s.sent_at)));
                }
                self.stats.bytes_acked += self.payload(seq) as u64;
            }
            let newly = ack - self.snd_una;
            self.snd_una = ack;
            while self.msgs.front().is_some_and(|&(end, _)| end <= ack) {
                self.msgs.pop_front();
            }
            self.reno_sacked = self.reno_sacked.saturating_sub(newly);
            self.dupacks = 0;
        }
        let newly_acked = self.snd_una - prior_una;
        // RFC 6937 DeliveredData, in segments.
        let mut delivered = newly_acked_unsacked + newly_sacked;

        // 3. RTT (RFC 6298 §3 with Karn's rule: no sample from retransmitted data).
        let seq_rtt = match first_sent {
            Some(t) if !retrans_acked => Some(now - t),
            _ => sack_first_sent.map(|t| now - t),
        };
        // Failing that, the timestamp echoed by an ACK of new data (RFC 7323 §4.1;
        // Linux `tcp_ack_update_rtt`, timestamps on by default): it dates the segment
        // that advanced the edge, a retransmission included, so an RTT sample (and
        // the end of the timer's back-off, RFC 6298 §5.7) does not wait for data
        // sent once.
        let ts_rtt = match seq_rtt {
            None if newly_acked > 0 && a.ts_echo > 0 => Some(now.saturating_since(Time::from_nanos(a.ts_echo))),
            _ => None,
        };
        let seq_rtt = seq_rtt.or(ts_rtt);
        if let Some(r) = seq_rtt {
            self.rtt.sample(r);
        }
        let ca_rtt = newest_sent.map(|t| now - t).or(ts_rtt);
        if let Some(r) = ca_rtt {
            self.note_rtt(r);
        }

        // 4. Loss detection.
        if self.cfg.sack {
            self.update_lost();
            if self.retrans_out > 0 {
                self.detect_lost_retransmissions();
            }
        } else if newly_acked == 0 && ack == prior_una && self.outstanding() > 0 && self.rwnd_segments == prior_rwnd {
            // Non-SACK: a duplicate ACK (RFC 5681 §2) counts as one segment delivered.
            // After a timeout, only once new data went out beyond what was outstanding
            // at the timeout (Linux `tcp_process_loss`): before that, the duplicate
            // ACKs answer go-back-N retransmissions of segments the receiver already
            // holds, and must not clock out more of them.
            self.dupacks += 1;
            let counts = self.ca_state != CaState::Loss || self.snd_nxt > self.recovery_point;
            if counts && self.reno_sacked + 1 < self.outstanding() {
                self.reno_sacked += 1;
                delivered += 1;
            }
            if self.dupacks == self.cfg.dupthresh && self.ca_state == CaState::Open {
                self.mark_lost(self.snd_una);
            }
        }
        let reno = self.cc.rfc5681_recovery() && !self.cfg.sack;
        if !self.cfg.sack && !reno && self.ca_state == CaState::Recovery && newly_acked > 0 && self.snd_una < self.recovery_point {
            // RFC 6582 §3.2 (5): a partial ACK retransmits the next unacknowledged segment.
            self.mark_lost(self.snd_una);
        }

        // The ACK's delivery-rate sample (`tcp_rate_gen`), after its loss detection.
        if self.rate_cc {
            self.rate.delivered += delivered;
            rs.prior_in_flight = prior_in_flight;
            rs.rtt = ca_rtt;
            self.rate.generate(now, delivered, self.lost_total - lost_before, self.min_rtt, &mut rs);
        }

        // 5. Congestion state.
        let (ce, ece) = self.ecn_feedback(a, delivered, delivered > 0 || ts_progress);
        let sample = AckSample {
            now,
            acked: delivered as u32,
            rtt: ca_rtt,
            min_rtt: self.min_rtt,
            cwnd_limited: self.cwnd_limited,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            ce,
            ece,
        };
        if newly_acked > 0 && a.ts_echo > 0 {
            // RFC 7323 TSval − TSecr: the forward one-way delay on the simulator's one clock
            // (plus any delayed-ACK hold); delay-based controllers (LEDBAT) use it.
            self.cc.on_delay(a.sent_at.saturating_since(Time::from_nanos(a.ts_echo)), now);
        }
        self.cc.on_rtt(&mut self.w, &sample);
        self.cc.in_ack_event(&self.w, &sample);
        // RFC 5681 §3.1: cwnd grows only on an ACK that acknowledges new data (Linux
        // `tcp_may_raise_cwnd`: FLAG_DATA_ACKED), by what that ACK delivered, SACKed
        // segments included; an ACK that only SACKs or duplicates does not raise it.
        let raise = newly_acked > 0 && delivered > 0;
        match self.ca_state {
            CaState::Open => {
                if self.lost_out > 0 {
                    self.enter_recovery(now);
                    self.prr(delivered);
                } else if ece {
                    // RFC 3168 §6.1.2: reduce as for a loss, at most once per window of
                    // data (the CWR state lasts until snd_una passes what was sent),
                    // and tell the receiver with CWR (not under AccECN, whose
                    // receiver counts marks instead: RFC 9768 §3.2.2.1).
                    self.w.ssthresh = self.cc.on_ecn(&self.w, now);
                    self.recovery_point = self.snd_nxt;
                    self.prr_delivered = 0;
                    self.prr_out = 0;
                    self.recover_fs = self.outstanding().max(1);
                    self.cc.set_state(&mut self.w, CaState::Cwr, now);
                    self.ca_state = CaState::Cwr;
                    self.send_cwr = !self.accecn;
                    self.stats.ecn_reductions += 1;
                    self.prr(delivered);
                } else if raise && !self.rate_cc {
                    self.cc.on_ack(&mut self.w, &sample);
                }
            }
            CaState::Cwr => {
                if self.lost_out > 0 {
                    self.enter_recovery(now);
                    self.prr(delivered);
                } else if self.snd_una >= self.recovery_point {
                    self.open(now);
                } else {
                    self.prr(delivered);
                }
            }
            CaState::Recovery => {
                if reno && newly_acked > 0 {
                    // RFC 5681 §3.2 step 6 (Reno): the first ACK of new data, partial or
                    // not, ends fast recovery: cwnd deflates to ssthresh. Later holes
                    // wait for three new duplicate ACKs or the RTO.
                    self.open(now);
                    self.reno_sacked = 0;
                    self.dupacks = 0;
                    self.lost_scan_from = self.lost_scan_from.max(self.snd_una);
                } else if self.snd_una >= self.recovery_point {
                    // RFC 6937: on exit, cwnd = ssthresh.
                    self.open(now);
                    self.lost_scan_from = self.lost_scan_from.max(self.snd_una);
                } else {
                    self.prr(delivered);
                }
            }
            CaState::Loss => {
                if self.snd_una >= self.recovery_point {
                    self.cc.set_state(&mut self.w, CaState::Open, now);
                    self.ca_state = CaState::Open;
                }
                if raise && !self.rate_cc {
                    self.cc.on_ack(&mut self.w, &sample);
                }
            }
        }
        // A controller that sets cwnd itself does so now, in any state (Linux
        // `tcp_cong_control`), and may mark the connection application-limited.
        if self.rate_cc {
            rs.ece_delta = ce as u64;
            let mut c = self.conn(now);
            self.cc.cong_control(&mut self.w, &rs, &mut c);
            self.rate.app_limited = c.app_limited;
        }
        if self.pacer.on {
            self.update_pacing_rate();
        }

        // 6. Timer (RFC 6298 §5.2-5.3).
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
        } else if newly_acked > 0 {
            self.rto_deadline = Some(now + self.rtt.rto());
        }

        if self.snd_una >= self.app_segments {
            self.state = State::Done;
            self.finished_at = Some(now);
            self.rto_deadline = None;
            self.pace_at = None;
            return;
        }
        self.transmit(now, out);
    }

    /// Run the retransmission timer if it is due, and send what pacing held back.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.pace_at.is_some_and(|t| t <= now) {
            self.transmit(now, out);
        }
        match self.rto_deadline {
            Some(d) if d <= now => {}
            _ => return,
        }
        match self.state {
            State::SynSent => {
                self.stats.syn_retransmits += 1;
                self.rtt.back_off();
                self.send_syn(now, out);
            }
            State::Established => self.on_rto(now, out),
            _ => self.rto_deadline = None,
        }
    }

    /// RFC 6298 §5.4-5.6 and RFC 5681 §3.1 (Linux `tcp_enter_loss`): reduce ssthresh
    /// once per episode, collapse cwnd to one segment, consider every un-SACKed
    /// outstanding segment lost, back the timer off.
    fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.timeouts += 1;
        if self.ca_state == CaState::Open {
            self.w.ssthresh = self.cc.on_congestion(&self.w, now);
        }
        self.send_cwr = false;
        self.cc.on_timeout(&self.w, now);
        self.w.cwnd = 1.0;
        if self.ca_state != CaState::Loss {
            self.cc.set_state(&mut self.w, CaState::Loss, now);
        }
        self.retrans_out = 0;
        self.lost_out = 0;
        self.lost_pending = 0;
        for s in self.board.iter_mut() {
            // `tp->lost` counts what is newly lost and retransmissions lost again
            if s.flags & SACKED == 0 && (s.flags & LOST == 0 || s.flags & RETRANS != 0) {
                self.lost_total += 1;
            }
            s.flags &= !RETRANS;
            if s.flags & SACKED == 0 {
                s.flags |= LOST;
                self.lost_out += 1;
                self.lost_pending += 1;
            }
        }
        self.retx_queue.clear();
        self.retx_hint = self.snd_una;
        self.lost_scan_from = self.snd_nxt;
        self.reno_sacked = 0;
        self.dupacks = 0;
        self.ca_state = CaState::Loss;
        self.recovery_point = self.snd_nxt;
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
        if self.rate_cc {
            let c = self.conn(now);
            self.cc.on_enter_loss(&c);
        }
        // Linux's timer sends the retransmission straight away, paced or not
        self.transmit_paced(now, out, true);
    }

    /// Internal consistency of the scoreboard counters (for tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut sacked, mut lost, mut retrans, mut pending) = (0, 0, 0, 0);
        for s in &self.board {
            if s.flags & SACKED != 0 {
                sacked += 1;
                if s.flags & (LOST | RETRANS) != 0 {
                    return Err("SACKed segment flagged lost or in retransmission".into());
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
