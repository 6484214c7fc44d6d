//! The send path (Linux `tcp_output.c`): data packets with their ECN codepoint,
//! new data within cwnd, the receiver's window and pacing (`tcp_write_xmit`),
//! retransmission of the lost segments (`tcp_xmit_retransmit_queue`), and the
//! pacing rate and burst size (`tcp/pacing.rs`).

use aqm::Time;

use crate::packet::{Kind, Packet};
use crate::tcp::Recovery;
use crate::tcp::cc::{CaState, CongestionControl};
use crate::tcp::{pacing, tso};
use super::{Pending, Rexmit, Seg, State, TcpSender, EVER_RETRANS, LOST, RETRANS, SACKED};

impl TcpSender {
    pub(super) fn payload(&self, seq: u64) -> u32 {
        if self.msgs.is_empty() {
            // a bulk transfer: every segment full (an empty deque's iterator is not free)
            return self.cfg.mss.0 as u32;
        }
        for &(end, last) in &self.msgs {
            if seq < end {
                return if seq + 1 == end { last } else { self.cfg.mss.0 as u32 };
            }
        }
        self.cfg.mss.0 as u32
    }

    /// The payload bytes of segments `from..to`.
    pub(super) fn payload_bytes(&self, from: u64, to: u64) -> u64 {
        if self.msgs.is_empty() {
            return (to - from) * self.cfg.mss.0;
        }
        (from..to).map(|seq| self.payload(seq) as u64).sum()
    }

    pub(super) fn data_packet(&mut self, seq: u64, now: Time, retx: bool) -> Packet {
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
            p.set_ecn(self.ect);
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
    pub(super) fn event_data_sent(&mut self, now: Time) {
        if self.pipe() == 0 {
            let c = self.conn(now);
            self.cc.on_tx_start(&mut self.w, &c);
        }
        self.last_send = now;
    }

    /// What to do after an ACK or a timer: retransmissions first (`tcp_xmit_recovery`,
    /// `tcp_xmit_retransmit_queue`), then new data (`tcp_data_snd_check`).
    pub(super) fn push(&mut self, now: Time, out: &mut Vec<Packet>, rexmit: Rexmit) {
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
    pub(super) fn write_xmit(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) -> u64 {
        if self.gso() {
            return self.write_xmit_gso(now, out, probe);
        }
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
            let bytes = self.send_run(n, now, out);
            if self.pacer.on {
                self.pacer.on_burst_sent(now, n, bytes);
            }
            sent += n;
            if probe {
                break;
            }
        }
        self.after_write_xmit(now, cwnd, sent, is_cwnd_limited, probe);
        sent
    }

    /// The end of `tcp_write_xmit`: congestion-window validation against the `cwnd`
    /// the pass started with, and one loss probe per tail loss episode.
    fn after_write_xmit(&mut self, now: Time, cwnd: u64, sent: u64, is_cwnd_limited: bool, probe: bool) {
        let is_cwnd_limited = is_cwnd_limited || self.pipe() >= cwnd;
        if sent > 0 || is_cwnd_limited {
            self.cwnd_validate(now, is_cwnd_limited);
        }
        let probed = sent > 0 && !probe && self.schedule_loss_probe(now, false);
        if std::mem::take(&mut self.rearm_due) && !probed {
            // what tcp_event_new_data_sent's rearm would have left (a loss probe
            // returns false at once, without touching the timer)
            #[cfg(debug_assertions)]
            debug_assert_eq!(self.rearm_seen.take(), Some(self.rearm_value(now)));
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_write_xmit` with GSO (`gso = "linux"`, `tcp/tso.rs`): one skb at a
    /// time from the head of the write queue, at most `tcp_tso_segs` segments, half
    /// of cwnd and what cwnd and the receiver's window leave (`tcp_cwnd_test`,
    /// `tcp_mss_split_point`); an skb of several segments may wait for the next ACK
    /// (`tcp_tso_should_defer`); a paced sender sends one skb per departure time.
    /// `probe` (`push_one = 2`): one skb, even when cwnd is full, never deferred.
    fn write_xmit_gso(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) -> u64 {
        let cwnd = self.cwnd_segments();
        let mss = self.cfg.mss.0 as u32;
        self.max_window = self.max_window.max(self.rwnd_segments);
        let goal = tso::size_goal(mss, self.max_window);
        let max_segs = self.burst_segments();
        let mut sent = 0;
        let mut is_cwnd_limited = false;
        loop {
            if self.snd_nxt >= self.app_segments {
                break;
            }
            if !probe {
                if let Some(t) = self.pacer.wait(now) {
                    self.pace_at = Some(t);
                    break;
                }
            }
            let skb = tso::WriteQueue::head(self.snd_nxt, self.app_segments, goal);
            let pipe = self.pipe();
            let mut quota = tso::cwnd_quota(cwnd, pipe);
            if quota == 0 {
                if probe {
                    quota = 1;
                } else {
                    break;
                }
            }
            // tcp_snd_wnd_test
            let window_end = self.snd_una.saturating_add(self.rwnd_segments);
            if self.snd_nxt >= window_end {
                break;
            }
            if skb.segs() > 1 && !probe {
                let check = tso::DeferCheck {
                    now,
                    recovering: matches!(self.ca_state, CaState::Recovery | CaState::Loss),
                    wstamp: self.pacer.wstamp,
                    cwnd,
                    in_flight: pipe,
                    send_win: window_end - self.snd_nxt,
                    snd_wnd: self.rwnd_segments,
                    mss,
                    skb_segs: skb.segs(),
                    skb_is_tail: skb.is_tail,
                    max_segs,
                    head_sent: (self.snd_una < self.snd_nxt).then(|| self.seg(self.snd_una).sent_at),
                    srtt: self.rtt.srtt(),
                };
                if let tso::Defer::Wait { cwnd_limited, .. } = tso::should_defer(&check) {
                    is_cwnd_limited |= cwnd_limited;
                    break;
                }
            }
            let n = tso::split_point(&skb, window_end - self.snd_nxt, quota.min(max_segs));
            let bytes = self.send_run(n, now, out);
            if tso::push_flag(n, self.snd_nxt == self.app_segments) {
                if let Some(p) = out.last_mut() {
                    p.set_flag(Packet::PSH, true);
                }
            }
            // __tcp_transmit_skb and tcp_update_skb_after_send: the departure time
            // (the send time when unpaced) moves on per skb
            self.pacer.on_burst_sent(now, n, bytes);
            sent += n;
            if probe {
                break;
            }
        }
        self.after_write_xmit(now, cwnd, sent, is_cwnd_limited, probe);
        sent
    }

    /// Send the next `n` new segments back to back; their payload bytes.
    fn send_run(&mut self, n: u64, now: Time, out: &mut Vec<Packet>) -> u64 {
        let bytes = self.payload_bytes(self.snd_nxt, self.snd_nxt + n);
        for _ in 0..n {
            let seq = self.snd_nxt;
            self.send_new(seq, now, out);
        }
        bytes
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
        // Linux tcp_event_new_data_sent: the RTO starts with the first segment out,
        // or replaces a loss probe. Rearmed at the end of the pass (`after_write_xmit`)
        // rather than here: nothing in between reads the timer or changes what the
        // rearm computes from (`now`, the oldest segment, the RTO, which timer is
        // pending), and the loss probe scheduled there usually replaces it.
        if prior_out == 0 || self.pending == Pending::Probe {
            #[cfg(debug_assertions)]
            if !self.rearm_due {
                self.rearm_seen = Some(self.rearm_value(now));
            }
            self.rearm_due = true;
        }
        let p = self.data_packet(seq, now, false);
        out.push(p);
    }

    /// What every retransmission of `seq` does, a tail loss probe's included (Linux
    /// `__tcp_retransmit_skb`): the rate sample's send state, the idle restart, the
    /// segment's send time, delivered count and EVER_RETRANS, its place in the
    /// time-sorted list, the counters. Returns the segment's flags before.
    pub(super) fn stamp_retransmission(&mut self, seq: u64, now: Time) -> u8 {
        let delivered = self.delivered;
        if self.rate_cc {
            let tx = self.rate.on_sent(now, self.outstanding());
            self.rate_tx[(seq - self.snd_una) as usize] = tx;
        }
        self.event_data_sent(now);
        if self.gso() && !self.pacer.on {
            // every transmission sets tcp_wstamp_ns (the paced sender's callers move it)
            self.pacer.wstamp = self.pacer.wstamp.max(now);
        }
        let s = self.seg_mut(seq);
        let was = s.flags;
        s.flags |= EVER_RETRANS;
        s.sent_at = now;
        s.delivered = delivered;
        self.tsorted.push_back((now, seq));
        self.stats.segments_sent += 1;
        self.stats.retransmits += 1;
        was
    }

    /// Linux `__tcp_retransmit_skb` and `tcp_retransmit_skb`: a retransmission in
    /// flight for recovery (RETRANS, counted in retrans_out and for undo).
    pub(super) fn retransmit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        let high = self.snd_nxt;
        let was = self.stamp_retransmission(seq, now);
        let s = self.seg_mut(seq);
        s.flags |= RETRANS;
        s.retx_high = high;
        if was & LOST != 0 && was & RETRANS == 0 {
            self.lost_pending -= 1;
        }
        if was & RETRANS == 0 {
            self.retrans_out += 1;
        }
        self.retx_hint = self.retx_hint.max(seq + 1);
        if self.cfg.recovery == Recovery::Rfc6675 {
            self.retx_queue.push_back((seq, high));
        }
        self.retrans_stamp.get_or_insert(now);
        self.undo_retrans = self.undo_retrans.max(0) + 1;
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
    pub(super) fn xmit_retransmit_queue(&mut self, now: Time, out: &mut Vec<Packet>) {
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

    /// The controller's pacing rate, or Linux's `tcp_update_pacing_rate`.
    pub(super) fn update_pacing_rate(&mut self) {
        self.pacer.rate = match self.cc.pacing_rate() {
            Some(r) => r,
            None => pacing::default_rate(self.cfg.mss.0 as u32, self.cwnd_segments(), self.w.ssthresh as u64, self.outstanding(), self.rtt.srtt(), self.cfg.pacing_ss_ratio, self.cfg.pacing_ca_ratio),
        };
    }

    /// The segments of a paced burst or GSO skb (`tcp_tso_segs`).
    fn burst_segments(&self) -> u64 {
        // Linux `tcp_tso_segs`: the controller's own burst size, or tcp_tso_autosize
        if let Some(segs) = self.cc.tso_segs() {
            return segs;
        }
        let min_tso = self.cc.min_tso_segs().unwrap_or(pacing::MIN_TSO_SEGS);
        pacing::burst_segments(self.pacer.rate, self.cfg.mss.0 as u32, self.min_rtt, min_tso)
    }
}
