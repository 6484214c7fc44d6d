//! The congestion states of Linux `tcp_fastretrans_alert` (Open, Disorder, CWR,
//! Recovery, Loss) and their helpers: proportional rate reduction (Mathis,
//! Dukkipati & Cheng, RFC 6937) as `tcp_cwnd_reduction`, the ECN reduction (RFC
//! 3168 §6.1.2), NewReno without SACK (RFC 6582), and F-RTO in the Loss state
//! (RFC 5682).

use aqm::Time;

use crate::tcp::Recovery;
use crate::tcp::cc::{CaState, CongestionControl, INFINITE_SSTHRESH};
use super::{Rexmit, TcpSender, F_DATA_SACKED, F_ECE, F_LOST_RETRANS, F_ORIG_SACK_ACKED, F_SET_XMIT_TIMER, F_SND_UNA_ADVANCED, LOST};

impl TcpSender {
    /// Linux `tcp_set_ca_state`: the controller hears of the change first (`set_state`,
    /// before the state takes effect and before the sender touches cwnd).
    pub(super) fn set_ca_state(&mut self, to: CaState, now: Time) {
        if to != self.ca_state {
            self.cc.set_state(&mut self.w, to, now);
        }
        self.ca_state = to;
    }

    /// Linux `tcp_init_cwnd_reduction`; `ecn`: for an ECN echo (the CWR state), whose
    /// ssthresh a controller may set apart from a loss's (DCTCP).
    pub(super) fn init_cwnd_reduction(&mut self, now: Time, ecn: bool) {
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
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u64, newly_lost: u64, flag: u32) {
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
    pub(super) fn end_cwnd_reduction(&mut self, now: Time) {
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

    /// Linux `tcp_enter_recovery`.
    pub(super) fn enter_recovery(&mut self, now: Time, ece_ack: bool) {
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

    /// Linux `tcp_try_keep_open`: Open, or Disorder while something is SACKed, lost
    /// or retransmitted.
    pub(super) fn try_keep_open(&mut self, now: Time) {
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
    pub(super) fn fastretrans_alert(&mut self, now: Time, prior_snd_una: u64, num_dupack: u64, flag: &mut u32, rexmit: &mut Rexmit, delivered: &mut u64) {
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
                // held until something above high_seq is acked, for the CWR flag
                CaState::Cwr if self.snd_una != self.high_seq => {
                    self.end_cwnd_reduction(now);
                    self.set_ca_state(CaState::Open, now);
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
}
