//! The scoreboard: one entry per outstanding segment with Linux's flags, the
//! counters behind `pipe` kept in step, SACK processing (`tcp_sacktag_write_queue`
//! with `tcp_check_dsack`; RFC 2018, RFC 2883), reordering detection, and RFC
//! 6675's DupThresh loss detection (`recovery = "rfc6675"`).

use aqm::Time;

use crate::packet::Packet;
use crate::tcp::cc::CaState;
use crate::tcp::rate::RateSample;
use super::rack::Newest;
use super::{TcpSender, EVER_RETRANS, F_DATA_SACKED, F_DSACKING_ACK, F_DSACK_TLP, F_ORIG_SACK_ACKED, LOST, RETRANS, SACKED};

/// Linux `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u64 = 300;

/// What the SACK blocks of one ACK did (Linux `tcp_sacktag_state`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SackTag {
    pub(super) first_sackt: Option<Time>,
    pub(super) last_sackt: Option<Time>,
    /// Lowest sequence newly SACKed that shows reordering.
    pub(super) reord: u64,
    pub(super) delivered: u64,
    pub(super) flag: u32,
}

impl TcpSender {
    /// A segment leaves the lost/retransmitted accounting (it was SACKed or
    /// cumulatively acknowledged): keep the counters behind `pipe` in step.
    pub(super) fn release_loss_flags(&mut self, flags: u8) {
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
    pub(super) fn mark_lost(&mut self, seq: u64) {
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
    pub(super) fn check_sack_reordering(&mut self, low_seq: u64) {
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

    /// Linux `tcp_sacktag_write_queue`, with `tcp_check_dsack`.
    #[inline(never)]
    pub(super) fn sacktag(&mut self, a: &Packet, ack: u64, prior_snd_una: u64, now: Time, rs: &mut Newest, rate: &mut RateSample) -> SackTag {
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
        // Linux `recv_sack_cache`: the ranges the previous ACK's blocks covered are
        // SACKed throughout (a block's processing SACKs every segment in it, and only
        // the cumulative ACK takes a segment's SACKED flag away), so a block skips
        // them without a scan.
        let cache = std::mem::take(&mut self.sack_cache);
        let mut n_cached = 0;
        for (start, end) in blocks {
            let lo = start.max(self.snd_una).max(ack);
            let hi = end.min(self.snd_nxt);
            let mut seq = lo;
            if lo < hi && n_cached < self.sack_cache.len() {
                self.sack_cache[n_cached] = (lo, hi);
                n_cached += 1;
            }
            while seq < hi {
                if let Some(&(_, ce)) = cache.iter().find(|&&(cs, ce)| cs <= seq && seq < ce) {
                    let to = ce.min(hi);
                    debug_assert!(self.board.range((seq - self.snd_una) as usize..(to - self.snd_una) as usize).all(|s| s.flags & SACKED != 0));
                    seq = to;
                    continue;
                }
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
                        if seq < self.high_seq {
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

    // ---- RFC 6675 loss detection (recovery = "rfc6675") ---------------------------

    /// RFC 6675 §4 IsLost(): a segment is lost once DupThresh segments above it are
    /// SACKed. Everything un-SACKed below the DupThresh-th highest SACKed segment is
    /// therefore lost; segments below `lost_scan_from` have been marked already.
    pub(super) fn update_lost(&mut self) {
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
    pub(super) fn detect_lost_retransmissions(&mut self) {
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
}
