//! ACK processing (Linux `tcp_ack`): SACK blocks, the cumulative ACK
//! (`tcp_clean_rtx_queue`), RTT samples, ECN feedback (RFC 3168, AccECN RFC 9768),
//! the congestion state and the window.

use aqm::{Duration, Time};

use crate::packet::Packet;
use crate::tcp::cc::{CaState, CongestionControl};
use crate::tcp::minmax::RunningMin;
use crate::tcp::rate::RateSample;
use super::rack::Newest;
use super::scoreboard::SackTag;
use super::{Pending, Rexmit, State, TcpSender, EVER_RETRANS, F_ACK_MAYBE_DELAYED, F_CA_ALERT, F_DATA_ACKED, F_DSACKING_ACK, F_ECE, F_FORWARD_PROGRESS, F_NOT_DUP, F_ORIG_SACK_ACKED, F_RETRANS_DATA_ACKED, F_SET_XMIT_TIMER, F_SND_UNA_ADVANCED, F_WIN_UPDATE, SACKED};

/// Linux `sysctl_tcp_min_rtt_wlen`: the minimum RTT is the least over 300 s.
const MIN_RTT_WINDOW: Duration = Duration::from_secs(300);

impl TcpSender {
    pub(super) fn on_ack(&mut self, a: &Packet, now: Time, out: &mut Vec<Packet>) {
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
            if self.rate_cc {
                // tcp_rate_skb_delivered for each acked segment, oldest first
                let n = (ack - self.snd_una) as usize;
                for (i, (s, mut tx)) in self.board.iter().zip(self.rate_tx.drain(..n)).enumerate() {
                    self.rate.on_delivered(&mut tx, s.sent_at, self.snd_una + i as u64 + 1, s.flags & EVER_RETRANS != 0, false, &mut rate);
                }
            }
            for seq in self.snd_una..ack {
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
                flag |= F_DATA_ACKED;
            }
            runt = self.payload(ack - 1) < self.cfg.mss.0 as u32;
            self.stats.bytes_acked += self.payload_bytes(self.snd_una, ack);
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
        if self.pacer.on || self.gso() {
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

    /// A new RTT measurement for the congestion control and the minimum RTT
    /// (Linux `tcp_update_rtt_min`: the least over 300 s).
    pub(super) fn note_rtt(&mut self, r: Duration, now: Time) {
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
}
