//! RACK-TLP (Cheng, Cardwell, Dukkipati & Jha, RFC 8985; Linux `tcp_recovery.c`
//! and the tail loss probe of `tcp_output.c`): a segment is lost once a segment
//! sent after it has been delivered and the RTT of that one plus a reordering
//! window has passed since it was sent; a reordering timer waits the window out;
//! a tail loss probe 2 SRTT after the last send repairs a lost tail.

use aqm::{Duration, Time};

use crate::packet::Packet;
use crate::tcp::cc::CaState;
use super::{Pending, TcpSender, EVER_RETRANS, F_DATA_SACKED, F_DSACK_TLP, F_NOT_DUP, F_SND_UNA_ADVANCED, LOST, RETRANS, SACKED};

/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
const TIMEOUT_INIT: Duration = Duration::from_secs(1);

/// Linux `TCP_TIMEOUT_MIN_US`: added to the reordering and probe timeouts.
const TIMEOUT_MIN: Duration = Duration::from_millis(2);

/// Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a grown reordering window persists.
pub(super) const RACK_RECOVERY_THRESH: u8 = 16;

/// RFC 8985 §6.2 step 2 / Linux `tcp_skb_sent_after`: a segment sent at `t1`
/// ending at `seq1` was sent after one sent at `t2` ending at `seq2` (the later
/// end breaks a tie of send times).
fn sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// Of the segments one ACK delivers, the most recently sent one's `delivered` at
/// its transmission (Linux `rs->prior_delivered`, from `tcp_rate_skb_delivered`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Newest {
    sent_at: Option<Time>,
    end_seq: u64,
    pub(super) prior_delivered: u64,
}

impl Newest {
    pub(super) fn note(&mut self, sent_at: Time, end_seq: u64, delivered: u64) {
        if self.sent_at.is_none_or(|t| sent_after(sent_at, t, end_seq, self.end_seq)) {
            *self = Newest { sent_at: Some(sent_at), end_seq, prior_delivered: delivered };
        }
    }
}

/// RACK's state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Rack {
    /// Send time and end of the most recently sent segment delivered.
    xmit_ts: Time,
    end_seq: u64,
    /// RTT of that segment.
    rtt: Duration,
    /// New information since the last loss scan.
    pub(super) advanced: bool,
    /// The reordering window, in quarters of the minimum RTT (grows on D-SACKs).
    reo_wnd_steps: u32,
    /// Recoveries the grown window persists.
    pub(super) reo_wnd_persist: u8,
    /// A D-SACK arrived since the window last grew.
    pub(super) dsack_seen: bool,
    /// `delivered` when the window last grew.
    last_delivered: u64,
}

impl Default for Rack {
    fn default() -> Self {
        Rack { xmit_ts: Time::ZERO, end_seq: 0, rtt: Duration::ZERO, advanced: false, reo_wnd_steps: 1, reo_wnd_persist: 0, dsack_seen: false, last_delivered: 0 }
    }
}

impl TcpSender {
    /// RFC 8985 §6.2 step 2 / Linux `tcp_rack_advance`: a delivered segment sent at
    /// `xmit` and ending at `end_seq` updates RACK's most recent delivery.
    pub(super) fn rack_advance(&mut self, flags: u8, end_seq: u64, xmit: Time, now: Time) {
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
    pub(super) fn rack_remaining(&self, sent_at: Time, reo_wnd: Duration, now: Time) -> i128 {
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
    pub(super) fn rack_mark_lost(&mut self, now: Time) -> bool {
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
    pub(super) fn rack_update_reo_wnd(&mut self, prior_delivered: u64) {
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
    pub(super) fn reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
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

    /// Linux `tcp_schedule_loss_probe` (RFC 8985 §7.2): a probe 2 SRTT after the
    /// last transmission (plus the delayed-ACK allowance of `rto_min` with one
    /// segment out, else 2 ms), not later than the RTO, in the Open and CWR states.
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
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

    /// Linux `tcp_process_tlp_ack` (RFC 8985 §7.4): the end of a probe episode; a
    /// loss repaired by the probe still costs one reduction.
    pub(super) fn process_tlp_ack(&mut self, now: Time, ack: u64, flag: u32) {
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
    pub(super) fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
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
                self.stamp_retransmission(last, now);
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
}
