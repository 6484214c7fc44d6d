//! Undo of spurious window reductions (Linux `tcp_try_undo_*`): D-SACK (Floyd,
//! Mahdavi, Mathis & Podolsky, RFC 2883) proving every retransmission of an
//! episode unneeded, the timestamp echo of the ACK predating the first
//! retransmission (Eifel detection, Ludwig & Meyer, RFC 3522), and F-RTO after a
//! timeout (Sarolahti, Kojo, Yamamoto & Hata, RFC 5682).

use aqm::Time;

use crate::tcp::cc::{CaState, CongestionControl};
use super::rack::RACK_RECOVERY_THRESH;
use super::{TcpSender, EVER_RETRANS, LOST};

impl TcpSender {
    /// Linux `tcp_init_undo`: this episode's reduction may be undone while its
    /// retransmissions are not all proven needed.
    pub(super) fn init_undo(&mut self) {
        self.undo_marker = Some(self.snd_una);
        self.undo_retrans = if self.retrans_out > 0 { self.retrans_out as i64 } else { -1 };
    }

    /// Any retransmission still counts in this episode (Linux `tcp_any_retrans_done`).
    pub(super) fn any_retrans_done(&self) -> bool {
        self.retrans_out > 0 || self.board.front().is_some_and(|s| s.flags & EVER_RETRANS != 0)
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
    pub(super) fn try_undo_recovery(&mut self, now: Time) -> bool {
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
    pub(super) fn try_undo_dsack(&mut self, now: Time) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`: a timeout found spurious (by F-RTO, or by the
    /// undo rule).
    pub(super) fn try_undo_loss(&mut self, now: Time, frto_undo: bool) -> bool {
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
    pub(super) fn try_undo_partial(&mut self, now: Time, prior_snd_una: u64) -> bool {
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
}
