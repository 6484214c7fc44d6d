//! The one transmission timer (Linux `icsk_pending`: RTO, tail loss probe or
//! RACK's reordering timeout) on Linux's clock tick, and the retransmission
//! timeout itself (`tcp_retransmit_timer`, `tcp_enter_loss`).

use aqm::{Duration, Time};

use crate::packet::Packet;
use crate::tcp::{jiffies, Recovery};
use crate::tcp::cc::{CaState, CongestionControl};
use super::{Pending, Rexmit, State, TcpSender, LOST, RETRANS, SACKED};

impl TcpSender {
    /// A timer `d` from `now` on Linux's clock (`inet_csk_reset_xmit_timer` on
    /// jiffies): it expires on the tick `ceil(d / tick)` ticks after the current one
    /// and the timer wheel runs it on a later tick (one later below 63 jiffies).
    fn timer_deadline(&self, now: Time, d: Duration) -> Time {
        jiffies::fires_at(now, d, self.cfg.tick)
    }

    pub(super) fn set_timer(&mut self, what: Pending, now: Time, d: Duration) {
        self.pending = what;
        self.timer_at = self.timer_deadline(now, d);
    }

    /// How far in the future the RTO of the oldest outstanding segment is
    /// (`tcp_rto_delta_us`).
    pub(super) fn rto_delta(&self, now: Time) -> i128 {
        let head = self.board.front().map_or(now, |s| s.sent_at);
        (head + self.rtt.rto()).as_nanos() as i128 - now.as_nanos() as i128
    }

    /// Linux `tcp_rearm_rto`: the RTO from now, or, replacing a probe or reordering
    /// timer, from the oldest segment's send time.
    pub(super) fn rearm_rto(&mut self, now: Time) {
        (self.pending, self.timer_at) = self.rearm_value(now);
    }

    /// The timer and deadline `rearm_rto` sets at `now` (the deadline unchanged when
    /// nothing is outstanding and no timer is left).
    pub(super) fn rearm_value(&self, now: Time) -> (Pending, Time) {
        if self.outstanding() == 0 {
            return (Pending::None, self.timer_at);
        }
        let mut rto = self.rtt.rto();
        if matches!(self.pending, Pending::Probe | Pending::Reorder) {
            rto = Duration::from_nanos(self.rto_delta(now).max(1) as u64);
        }
        (Pending::Rto, self.timer_deadline(now, rto))
    }

    /// Linux `tcp_set_xmit_timer`: a tail loss probe if one may go, else the RTO.
    pub(super) fn set_xmit_timer(&mut self, now: Time) {
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
}
