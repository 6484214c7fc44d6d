//! The TCP receiver: cumulative ACKs with SACK blocks (Mathis, Mahdavi, Floyd &
//! Romanow, RFC 2018), delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2) with Linux's
//! quick-ACK start, and an advertised window that does not limit by default.
//!
//! ECN feedback, as negotiated: RFC 3168 (ECE from a CE until the sender's CWR);
//! DCTCP's state machine (Alizadeh et al., RFC 8257 §3.2: ECE tells the CE state of
//! the latest segment, and a change of state is ACKed at once, after an ACK of what
//! came before it if one was delayed: Linux `dctcp_ece_ack_update`); or Accurate
//! ECN (RFC 9768: a count of CE-marked segments in the ACE field, and an immediate
//! ACK when the IP-ECN field changes or 6 marks wait, Linux
//! `tcp_ecn_received_counters`).

use aqm::Time;

use super::window::ReceiveWindow;
use super::{EcnMode, TcpConfig};
use crate::packet::{Kind, Packet, SackBlocks};

/// AccECN: ACK at once when this many CE marks wait to be echoed (RFC 9768
/// §3.2.2.5.2 allows at most 6; Linux `TCP_ACCECN_ACE_MAX_DELTA`), so the 3-bit
/// ACE field cannot wrap between two ACKs.
const ACE_MAX_DELTA: u32 = 6;

/// A window that never limits (Dynamic Right-Sizing keeps the advertised window
/// ahead of the sender; Fisk & Feng 2001).
pub const UNLIMITED_WINDOW: u64 = 1 << 40;

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub acks_sent: u64,
    pub ce_received: u64,
}

pub struct TcpReceiver {
    pub flow: u32,
    delayed_ack: bool,
    ack_every: u32,
    delack_timeout: aqm::Duration,
    quickack_left: u32,
    sack: bool,
    header: u32,
    /// The largest window to advertise (a fixed window, or unlimited).
    rwnd: u64,
    /// The window policy (tcp/window: DRS, Palermo).
    pub window: Box<dyn ReceiveWindow>,
    /// Right edge of the advertised window, in payload bytes: never moves left.
    right_edge: u64,
    /// The window in the latest ACK.
    pub last_rwnd: u64,
    /// Next segment expected.
    pub rcv_nxt: u64,
    /// Out-of-order data held, as sorted disjoint ranges.
    ooo: Vec<Range>,
    /// Segments that most recently arrived out of order, newest first (for the order
    /// of SACK blocks, RFC 2018 §4).
    recent: [Option<u64>; SackBlocks::MAX],
    unacked: u32,
    delack_deadline: Option<Time>,
    /// RFC 7323 §4.3: TS.Recent, the timestamp to echo on ACKs, and Last.ACK.sent,
    /// the cumulative ACK last sent.
    ts_recent: u64,
    last_ack_sent: u64,
    /// ECN negotiated (RFC 3168 §6.1.1).
    ecn: bool,
    /// The feedback: RFC 3168 or AccECN (RFC 9768), when `ecn`.
    mode: EcnMode,
    /// DCTCP's ECE state machine in place of RFC 3168's (RFC 8257 §3.2).
    dctcp: bool,
    /// Echo ECE on every ACK until a CWR arrives (RFC 3168 §6.1.3); under DCTCP,
    /// the CE state of the latest segment.
    ece: bool,
    /// AccECN: CE-marked segments received (r.cep, RFC 9768 §3.2.1), those not yet
    /// echoed, and the IP-ECN field of the latest segment.
    received_ce: u64,
    ce_pending: u32,
    prev_ecn: aqm::Ecn,
    /// The codepoint of its ACKs: ECN-capable under AccECN or with a controller that
    /// needs ECN (Linux sets ECT on every segment then), Not-ECT otherwise.
    ack_ecn: aqm::Ecn,
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Payload bytes of every new (not duplicate) segment, in order or not.
    pub bytes_received: u64,
    /// For finite transfers: segments expected in all, and when the last arrived.
    pub expect_segments: Option<u64>,
    pub completed_at: Option<Time>,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(flow: u32, cfg: &TcpConfig) -> TcpReceiver {
        TcpReceiver {
            flow,
            delayed_ack: cfg.delayed_ack,
            ack_every: cfg.ack_every,
            delack_timeout: cfg.delack_timeout,
            quickack_left: cfg.quickack,
            sack: cfg.sack,
            header: cfg.header.0 as u32,
            rwnd: cfg.receive_window.map_or(UNLIMITED_WINDOW, |w| w.0),
            window: cfg.receiver.build(cfg.mss.0),
            right_edge: 0,
            last_rwnd: cfg.receive_window.map_or(UNLIMITED_WINDOW, |w| w.0),
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: [None; SackBlocks::MAX],
            unacked: 0,
            delack_deadline: None,
            ts_recent: 0,
            last_ack_sent: 0,
            ecn: cfg.ecn_mode() != EcnMode::Off,
            mode: cfg.ecn_mode(),
            dctcp: cfg.ecn_mode() == EcnMode::Rfc3168 && cfg.cc.needs_ecn(),
            ece: false,
            received_ce: 0,
            ce_pending: 0,
            prev_ecn: aqm::Ecn::NotEct,
            ack_ecn: if cfg.ecn_mode() == EcnMode::AccEcn || (cfg.ecn_mode() == EcnMode::Rfc3168 && cfg.cc.needs_ecn()) { cfg.cc.ect() } else { aqm::Ecn::NotEct },
            bytes_delivered: 0,
            bytes_received: 0,
            expect_segments: None,
            completed_at: None,
            stats: ReceiverStats::default(),
        }
    }

    pub fn poll_at(&self) -> Option<Time> {
        self.delack_deadline
    }

    pub fn on_packet(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        match p.kind {
            Kind::Syn => {
                let mut sa = Packet::new(0, self.flow, Kind::SynAck, self.header, now);
                // RFC 3168 §6.1.1: agree to ECN if asked and configured. RFC 9768
                // §3.1.1: an AccECN SYN (AE, CWR, ECE all set) gets an ACE that
                // echoes the SYN's IP-ECN field (Table 2: Not-ECT 0b010, ECT(1)
                // 0b011, ECT(0) 0b100, CE 0b110); otherwise ECE alone (0b001).
                if self.mode == EcnMode::AccEcn && p.ace() == 0b111 {
                    sa.set_ace(match p.ecn {
                        aqm::Ecn::NotEct => 0b010,
                        aqm::Ecn::Ect1 => 0b011,
                        aqm::Ecn::Ect0 => 0b100,
                        aqm::Ecn::Ce => 0b110,
                    });
                } else {
                    self.ecn = self.ecn && p.ece() && p.cwr();
                    self.mode = if self.ecn { EcnMode::Rfc3168 } else { EcnMode::Off };
                    sa.set_flag(Packet::ECE, self.ecn);
                }
                out.push(sa);
            }
            Kind::Data => self.on_data(p, now, out),
            _ => {}
        }
    }

    fn on_data(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        self.stats.segments += 1;
        let seq = p.seq;
        let mut ack_now = false;
        let ce = p.ecn == aqm::Ecn::Ce;
        if self.ecn {
            self.stats.ce_received += ce as u64;
            match self.mode {
                EcnMode::AccEcn => {
                    // RFC 9768 §3.2.2.5: change-triggered ACKs (on any change of the
                    // IP-ECN field, as Linux) and increment-triggered ones.
                    if ce {
                        self.received_ce += 1;
                        self.ce_pending += 1;
                    }
                    if p.ecn != self.prev_ecn {
                        self.prev_ecn = p.ecn;
                        ack_now = true;
                    }
                    ack_now |= self.ce_pending >= ACE_MAX_DELTA;
                }
                _ if self.dctcp => {
                    if ce != self.ece {
                        // RFC 8257 §3.2: the CE state changed. A delayed ACK is sent
                        // first, for the segments before this one and with the old
                        // state; this one is ACKed at once with the new.
                        if self.delack_deadline.is_some() {
                            self.send_ack(now, out);
                        }
                        ack_now = true;
                    }
                    self.ece = ce;
                }
                _ => {
                    if p.cwr() {
                        self.ece = false;
                    }
                    if ce {
                        // Linux enters quick-ACK mode on CE so the echo is not delayed.
                        ack_now = !self.ece;
                        self.ece = true;
                    }
                }
            }
        }
        if p.ts_echo > 0 {
            // RFC 7323 §4.3 at the receiver (Linux `tcp_rcv_rtt_measure_ts`).
            self.window.on_rtt(now, now.saturating_since(aqm::Time::from_nanos(p.ts_echo)), self.bytes_received);
        }
        // RFC 7323 §4.3 (2): TS.Recent takes the segment's timestamp if the segment
        // starts at or before the edge last acknowledged: with delayed ACKs the
        // echo is the older segment's, past a hole it stays the last in-order one,
        // and the segment that fills a hole (a retransmission) has its own echoed.
        if seq <= self.last_ack_sent {
            self.ts_recent = self.ts_recent.max(p.sent_at.as_nanos());
        }
        if seq < self.rcv_nxt || self.holds(seq) {
            // A duplicate: ACK at once so the sender learns what arrived.
            self.stats.duplicates += 1;
            self.send_ack(now, out);
            return;
        }
        self.bytes_received += p.payload as u64;
        self.window.on_data(now, self.bytes_received);
        if seq == self.rcv_nxt {
            let filled_gap = !self.ooo.is_empty();
            self.rcv_nxt += 1;
            self.bytes_delivered += p.payload as u64;
            if let Some(first) = self.ooo.first() {
                if first.start == self.rcv_nxt {
                    self.rcv_nxt = first.end;
                    self.bytes_delivered += first.bytes;
                    self.ooo.remove(0);
                }
            }
            self.check_complete(now);
            if filled_gap || !self.delayed_ack || ack_now {
                // RFC 5681 §4.2: ACK at once when a segment fills (part of) a gap.
                self.send_ack(now, out);
            } else if self.quickack_left > 0 {
                self.quickack_left -= 1;
                self.send_ack(now, out);
            } else {
                self.unacked += 1;
                if self.unacked >= self.ack_every {
                    self.send_ack(now, out);
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + self.delack_timeout);
                }
            }
            return;
        }
        // Out of order: hold it and send an immediate duplicate ACK with SACK.
        self.stats.out_of_order += 1;
        self.insert(seq, p.payload as u64);
        self.recent.rotate_right(1);
        self.recent[0] = Some(seq);
        self.send_ack(now, out);
    }

    /// The application expects more data on this connection, up to segment `end`
    /// (the next response on a persistent connection).
    pub fn expect_more(&mut self, end: u64) {
        self.expect_segments = Some(end);
        self.completed_at = None;
    }

    /// The window to advertise now, in bytes.
    fn advertise(&mut self) -> u64 {
        // A policy without a window of its own (DRS), or before its first measurement
        // (the sender's initial window limits then), offers the configured window; that
        // offer is not held to afterwards.
        let Some(want) = self.window.window() else { return self.rwnd };
        let want = want.min(self.rwnd);
        // RFC 9293 §3.8.6.2.2: do not shrink the window (move its right edge left).
        let wnd = want.max(self.right_edge.saturating_sub(self.bytes_delivered));
        self.right_edge = self.bytes_delivered + wnd;
        wnd
    }

    fn check_complete(&mut self, now: Time) {
        if self.completed_at.is_none() && self.expect_segments.is_some_and(|n| self.rcv_nxt >= n) {
            self.completed_at = Some(now);
        }
    }

    fn find(&self, seq: u64) -> Result<usize, usize> {
        // index of the range containing seq, or where one starting at seq would go
        match self.ooo.binary_search_by(|r| r.start.cmp(&seq)) {
            Ok(i) => Ok(i),
            Err(i) if i > 0 && self.ooo[i - 1].end > seq => Ok(i - 1),
            Err(i) => Err(i),
        }
    }

    fn holds(&self, seq: u64) -> bool {
        self.find(seq).is_ok()
    }

    fn insert(&mut self, seq: u64, bytes: u64) {
        let i = match self.find(seq) {
            Ok(_) => return,
            Err(i) => i,
        };
        let joins_prev = i > 0 && self.ooo[i - 1].end == seq;
        let joins_next = i < self.ooo.len() && self.ooo[i].start == seq + 1;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = self.ooo.remove(i);
                let prev = &mut self.ooo[i - 1];
                prev.end = next.end;
                prev.bytes += bytes + next.bytes;
            }
            (true, false) => {
                let prev = &mut self.ooo[i - 1];
                prev.end += 1;
                prev.bytes += bytes;
            }
            (false, true) => {
                let next = &mut self.ooo[i];
                next.start = seq;
                next.bytes += bytes;
            }
            (false, false) => self.ooo.insert(i, Range { start: seq, end: seq + 1, bytes }),
        }
    }

    /// SACK blocks: the block holding the most recent arrival first, then the blocks
    /// of earlier arrivals (RFC 2018 §4).
    fn sack_blocks(&self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        if !self.sack || self.ooo.is_empty() {
            // nothing held above rcv_nxt: no blocks (the usual case, checked first)
            return blocks;
        }
        let mut used: [Option<u64>; SackBlocks::MAX] = [None; SackBlocks::MAX];
        for seq in self.recent.iter().flatten() {
            if *seq < self.rcv_nxt {
                continue;
            }
            if let Ok(i) = self.find(*seq) {
                let r = self.ooo[i];
                if used.iter().flatten().any(|&s| s == r.start) {
                    continue;
                }
                used[blocks.len()] = Some(r.start);
                blocks.push(self.rcv_nxt, r.start, r.end);
            }
        }
        // Fill remaining slots with the highest other ranges.
        for r in self.ooo.iter().rev() {
            if blocks.len() == SackBlocks::MAX {
                break;
            }
            if used.iter().flatten().any(|&s| s == r.start) {
                continue;
            }
            used[blocks.len()] = Some(r.start);
            blocks.push(self.rcv_nxt, r.start, r.end);
        }
        blocks
    }

    fn send_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut a = Packet::new(0, self.flow, Kind::Ack, self.header, now);
        a.seq = self.rcv_nxt;
        a.rwnd = self.advertise();
        self.last_rwnd = a.rwnd;
        a.sack = self.sack_blocks();
        if self.mode == EcnMode::AccEcn {
            // RFC 9768 §3.2.1: ACE = r.cep mod 8, r.cep starting at 5.
            a.set_ace(((self.received_ce + 5) & 7) as u8);
            self.ce_pending = 0;
        } else {
            a.set_flag(Packet::ECE, self.ece);
        }
        a.ecn = self.ack_ecn;
        // RFC 7323 §4.3 (3): TSecr = TS.Recent
        a.ts_echo = self.ts_recent;
        self.last_ack_sent = self.rcv_nxt;
        out.push(a);
        self.unacked = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
    }

    /// Send the delayed ACK if its timer is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.delack_deadline.is_some_and(|d| d <= now) {
            self.send_ack(now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64) -> Packet {
        let mut p = Packet::new(0, 0, Kind::Data, 1500, Time::ZERO);
        p.seq = seq;
        p.payload = 1460;
        p
    }

    fn rx(quickack: u32) -> TcpReceiver {
        TcpReceiver::new(0, &TcpConfig { quickack, ..TcpConfig::default() })
    }

    #[test]
    fn acks_echo_ts_recent_by_rfc7323_rules() {
        // RFC 7323 §4.3: TS.Recent takes a segment's timestamp when the segment
        // starts at or before the last ACK's edge
        let mut r = rx(0);
        let mut out = Vec::new();
        let sent = |seq: u64, ms: u64| {
            let mut p = data(seq);
            p.sent_at = Time::from_millis(ms);
            p
        };
        let echo = |out: &Vec<Packet>| out.last().unwrap().ts_echo / 1_000_000;
        // delayed ACK of 0 and 1: the older segment's time (0 is at the edge, 1 beyond it)
        r.on_packet(&sent(0, 10), Time::from_millis(60), &mut out);
        r.on_packet(&sent(1, 11), Time::from_millis(61), &mut out);
        assert_eq!((out.len(), echo(&out)), (1, 10));
        // 2 is lost; 3 and 4 arrive out of order: the echo stays 2's predecessor's...
        r.on_packet(&sent(3, 13), Time::from_millis(63), &mut out);
        r.on_packet(&sent(4, 14), Time::from_millis(64), &mut out);
        assert_eq!((out.len(), echo(&out)), (3, 10));
        // ...until the retransmission of 2, sent at 200 ms, fills the hole
        r.on_packet(&sent(2, 200), Time::from_millis(250), &mut out);
        assert_eq!((out.len(), out.last().unwrap().seq, echo(&out)), (4, 5, 200));
    }

    #[test]
    fn delayed_ack_every_second_segment_or_after_the_timer() {
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::from_millis(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(r.poll_at(), Some(Time::from_millis(41)));
        r.on_packet(&data(1), Time::from_millis(2), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 2);
        r.on_packet(&data(2), Time::from_millis(3), &mut out);
        r.on_timer(Time::from_millis(42), &mut out);
        assert_eq!(out.len(), 1, "timer not yet due at 42 ms? it is due at 43 ms");
        r.on_timer(Time::from_millis(43), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].seq, 3);
    }

    #[test]
    fn quickack_acks_the_first_segments_at_once() {
        let mut r = rx(2);
        let mut out = Vec::new();
        for s in 0..3 {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn out_of_order_segments_are_sacked_most_recent_first() {
        let mut r = rx(0);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::ZERO, &mut out);
        r.on_packet(&data(1), Time::ZERO, &mut out); // ack 2
        out.clear();
        // lose 2, receive 3, 4; lose 5; receive 6
        for s in [3, 4, 6] {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(out.len(), 3, "each out-of-order segment ACKed at once");
        let last = out.last().unwrap();
        assert_eq!(last.seq, 2);
        let blocks: Vec<(u64, u64)> = last.sack.iter(last.seq).collect();
        assert_eq!(blocks, vec![(6, 7), (3, 5)]);
        // the retransmission of 2 fills the first gap: cumulative ACK jumps to 5
        out.clear();
        r.on_packet(&data(2), Time::ZERO, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 5);
        let blocks: Vec<(u64, u64)> = out[0].sack.iter(out[0].seq).collect();
        assert_eq!(blocks, vec![(6, 7)]);
        assert_eq!(r.bytes_delivered, 5 * 1460);
    }

    #[test]
    fn ranges_merge_from_both_sides() {
        let mut r = rx(0);
        let mut out = Vec::new();
        for s in [2, 4, 3] {
            r.on_packet(&data(s), Time::ZERO, &mut out);
        }
        assert_eq!(r.ooo.len(), 1);
        assert_eq!((r.ooo[0].start, r.ooo[0].end, r.ooo[0].bytes), (2, 5, 3 * 1460));
        r.on_packet(&data(3), Time::ZERO, &mut out);
        assert_eq!(r.stats.duplicates, 1);
    }

    fn marked(seq: u64, ecn: aqm::Ecn) -> Packet {
        let mut p = data(seq);
        p.ecn = ecn;
        p
    }

    #[test]
    fn dctcp_echoes_the_latest_ce_state_and_acks_each_change_at_once() {
        // RFC 8257 §3.2 (Linux dctcp_ece_ack_update), delayed ACKs every 2 segments
        use crate::tcp::cc::{CcSpec, DctcpParams};
        let cfg = TcpConfig { cc: CcSpec::Dctcp(DctcpParams::default()), quickack: 0, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let (ect, ce) = (aqm::Ecn::Ect0, aqm::Ecn::Ce);
        let acks = |out: &Vec<Packet>| out.iter().map(|a| (a.seq, a.ece())).collect::<Vec<_>>();
        r.on_packet(&marked(0, ect), Time::ZERO, &mut out);
        assert!(out.is_empty(), "delayed");
        // CE: the delayed ACK goes first with the old state, then this one with ECE
        r.on_packet(&marked(1, ce), Time::ZERO, &mut out);
        assert_eq!(acks(&out), vec![(1, false), (2, true)]);
        // CE again: no change, delayed ACKs resume, every ACK with ECE
        r.on_packet(&marked(2, ce), Time::ZERO, &mut out);
        r.on_packet(&marked(3, ce), Time::ZERO, &mut out);
        assert_eq!(acks(&out)[2..], [(4, true)]);
        // back to not CE: nothing delayed, so one immediate ACK without ECE; a CWR
        // from the sender does not clear the state (it is the CE state, not a latch)
        r.on_packet(&marked(4, ect), Time::ZERO, &mut out);
        assert_eq!(acks(&out)[3..], [(5, false)]);
        let mut cwr = marked(5, ce);
        cwr.set_flag(Packet::CWR, true);
        r.on_packet(&cwr, Time::ZERO, &mut out);
        assert_eq!(acks(&out)[4..], [(6, true)]);
        // ACKs of a DCTCP receiver are ECN-capable (Linux: the controller needs ECN)
        assert!(out.iter().all(|a| a.ecn == ect));
    }

    #[test]
    fn accecn_counts_ce_segments_in_the_ace_field_and_acks_on_ecn_changes() {
        // RFC 9768 §3.2: ACE = (CE-marked segments + 5) mod 8; an immediate ACK when
        // the IP-ECN field changes (Linux), delayed ACKs otherwise
        let cfg = TcpConfig { accecn: true, ecn: true, quickack: 0, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(0, &cfg);
        let mut out = Vec::new();
        let (ect, ce) = (aqm::Ecn::Ect0, aqm::Ecn::Ce);
        let aces = |out: &Vec<Packet>| out.iter().map(|a| (a.seq, a.ace())).collect::<Vec<_>>();
        r.on_packet(&marked(0, ect), Time::ZERO, &mut out); // Not-ECT -> ECT(0): ACK now
        r.on_packet(&marked(1, ce), Time::ZERO, &mut out); // -> CE: ACK now
        r.on_packet(&marked(2, ce), Time::ZERO, &mut out); // delayed
        r.on_packet(&marked(3, ce), Time::ZERO, &mut out); // every 2nd: ACK
        assert_eq!(aces(&out), vec![(1, 5), (2, 6), (4, 0)], "three CE segments: 5 + 3 wraps to 0");
        r.on_packet(&marked(4, ect), Time::ZERO, &mut out); // -> ECT(0): ACK now
        assert_eq!(aces(&out)[3..], [(5, 0)]);
        assert_eq!(r.received_ce, 3);
    }

    #[test]
    fn completion_is_noted_when_the_last_segment_arrives() {
        let mut r = rx(16);
        r.expect_segments = Some(3);
        let mut out = Vec::new();
        r.on_packet(&data(0), Time::from_millis(1), &mut out);
        r.on_packet(&data(2), Time::from_millis(2), &mut out);
        assert_eq!(r.completed_at, None);
        r.on_packet(&data(1), Time::from_millis(3), &mut out);
        assert_eq!(r.completed_at, Some(Time::from_millis(3)));
    }
}
