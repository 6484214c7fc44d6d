//! Segment aggregation as Linux's TCP does it with GSO (or TSO) on the sending
//! device (`tcp.gso = "linux"`): the sender hands the device one skb of several
//! segments at a time, and the segments of one skb leave back to back. Linux's
//! `tcp_output.c`:
//!
//! - The application's data sits in the write queue in skbs of `size_goal` bytes
//!   (`tcp_xmit_size_goal`: the socket's `sk_gso_max_size`, 64 KB less
//!   `MAX_TCP_HEADER + 1`, bounded to half the largest window the peer has offered,
//!   `tcp_bound_to_half_wnd`) ([`size_goal`], [`WriteQueue`]).
//! - `tcp_write_xmit` takes the skb at the head of the queue and sends at most
//!   `max_segs` segments of it (`tcp_tso_segs`: the congestion control's own
//!   `tso_segs`, or `tcp_tso_autosize`, about 1 ms of the pacing rate, which Linux
//!   computes for every connection, paced or not; `tcp/pacing.rs`), at most half of
//!   cwnd and no more than cwnd leaves room for (`tcp_cwnd_test`, [`cwnd_quota`]),
//!   within the receiver's window (`tcp_mss_split_point`, [`split_point`]).
//! - Before it splits a skb to what the windows allow, `tcp_tso_should_defer`
//!   (John Heffner's "TSO Nagle", [`should_defer`]) may hold the skb back until the
//!   next ACK opens more: not in recovery, not when the last transmission is more
//!   than 1 ms old, not when a full skb (`max_segs`) or a third of the window
//!   (`tcp_tso_win_divisor` = 3) can go, and not when the next ACK is due later
//!   than min(1 ms, srtt/2) from now (the form of Linux 6.18, commit 295ce1eb36ae,
//!   "tcp: fix tcp_tso_should_defer() vs large RTT"). Linux sets no timer for a
//!   deferral: the next ACK (or the loss probe) sends.
//!
//! Through a bottleneck slower than the sender's link, one skb of n segments
//! arrives as a burst of n packets: at 100 Mb/s with a 20 ms RTT an unpaced
//! sender's skbs hold about 10 segments (1.2 ms of the link), where an ACK-clocked
//! sender that sends what each ACK releases sends 2 or 3.
//!
//! - PSH ([`push_flag`]): `__tcp_transmit_skb` forces PSH on every skb of more than
//!   one segment ("to expedite GRO flush at receiver"; not on one-segment skbs, which
//!   may be sent under heavy congestion), and the segmentation (`tcp_gso_segment`)
//!   leaves it on the skb's last segment only. The end of each application write
//!   (`tcp_push` at the end of `tcp_sendmsg_locked`, `tcp_mark_push`) marks the tail
//!   skb too; the next write clears that mark when it appends to the same unsent
//!   skb, so it reaches the wire only when the written data is sent to its end. A
//!   receiver with Linux's receive buffer ACKs a pushed segment at the read
//!   (`tcp/receiver.rs`).
//!
//! Not modelled: TCP small queues (`tcp_small_queue_check`: the bytes the host's
//! qdisc and device hold; the emulator's TUN and veth devices release them at once), Nagle's test on
//! a one-segment skb, FIN and `MSG_EOR` (a deferred tail skb waits for the next
//! ACK), the segments of a lost skb kept together on retransmission (each
//! retransmission is sent as the sender without GSO sends it).

use aqm::{Duration, Time};

/// `sk_gso_max_size` of a TCP socket on a device without BIG TCP
/// (`GSO_LEGACY_MAX_SIZE - (MAX_TCP_HEADER + 1)`, `sk_setup_caps`).
pub const SOCK_GSO_MAX_SIZE: u64 = 65_536 - 1 - 320;
/// `sysctl_tcp_tso_win_divisor`: a third of the window is worth sending at once.
pub const TSO_WIN_DIVISOR: u64 = 3;
/// How recent the last transmission must be for a deferral (`NSEC_PER_MSEC`).
const RECENT_WRITE: Duration = Duration::from_millis(1);
/// The latest the next ACK may be due for a deferral (`NSEC_PER_MSEC`), or half the srtt.
const ACK_WAIT: Duration = Duration::from_millis(1);

/// `tcp_xmit_size_goal`: segments per skb of the write queue, for `mss` bytes per
/// segment and `max_window` the largest window the peer has offered, in segments.
pub fn size_goal(mss: u32, max_window: u64) -> u64 {
    let mss = mss.max(1) as u64;
    let mut bytes = SOCK_GSO_MAX_SIZE;
    // tcp_bound_to_half_wnd (max_window > TCP_MSS_DEFAULT, 536 B, for any mss here)
    let cutoff = max_window.saturating_mul(mss) / 2;
    if cutoff > 0 && bytes > cutoff {
        bytes = cutoff;
    }
    (bytes / mss).max(1)
}

/// The write queue's head skb: the application's data cut into skbs of `goal`
/// segments from the start of the stream (each `tcp_sendmsg` fills the tail skb to
/// `size_goal` before it starts another), the head split where a partial send left
/// it (`tso_fragment`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteQueue {
    /// First unsent segment (`snd_nxt`) and the segment after the head skb.
    pub start: u64,
    pub end: u64,
    /// No data queued after this skb (`skb == tcp_write_queue_tail`).
    pub is_tail: bool,
}

impl WriteQueue {
    /// The head skb for unsent data from `snd_nxt` to `app_end` (exclusive).
    pub fn head(snd_nxt: u64, app_end: u64, goal: u64) -> WriteQueue {
        let goal = goal.max(1);
        let boundary = (snd_nxt / goal).saturating_add(1).saturating_mul(goal);
        let end = boundary.min(app_end);
        WriteQueue { start: snd_nxt, end, is_tail: end == app_end }
    }
    /// Its segments (`tcp_skb_pcount`).
    pub fn segs(&self) -> u64 {
        self.end - self.start
    }
}

/// Linux `tcp_cwnd_test`: the segments cwnd lets one skb take, at most half of
/// cwnd ("at least 2 GSO packets in flight"), 0 when cwnd is full.
pub fn cwnd_quota(cwnd: u64, in_flight: u64) -> u64 {
    if in_flight >= cwnd {
        return 0;
    }
    (cwnd >> 1).max(1).min(cwnd - in_flight)
}

/// Linux `tcp_mss_split_point` for full-sized segments: the segments of the head
/// skb to send now, at most `max_segs`, within `window` segments of the receiver's
/// window from the skb's start.
pub fn split_point(skb: &WriteQueue, window: u64, max_segs: u64) -> u64 {
    let max_len = max_segs;
    if max_len <= window && !skb.is_tail {
        return max_len.min(skb.segs());
    }
    let needed = skb.segs().min(window);
    max_len.min(needed)
}

/// Whether the last segment of an skb of `segs` segments leaves with PSH:
/// `__tcp_transmit_skb` sets it on every skb of more than one segment, and an skb
/// that ends the data written so far (`at_write_end`) carries the mark `tcp_push`
/// left at the end of the write.
pub fn push_flag(segs: u64, at_write_end: bool) -> bool {
    segs > 1 || (segs == 1 && at_write_end)
}

/// What `tcp_tso_should_defer` reads.
#[derive(Clone, Copy, Debug)]
pub struct DeferCheck {
    pub now: Time,
    /// The connection is in Recovery or Loss (`icsk_ca_state >= TCP_CA_Recovery`).
    pub recovering: bool,
    /// Earliest departure time of the last transmission (`tcp_wstamp_ns`; for an
    /// unpaced sender the time it was sent).
    pub wstamp: Time,
    pub cwnd: u64,
    /// Segments in flight (`tcp_packets_in_flight`), below cwnd.
    pub in_flight: u64,
    /// Segments from the skb's start to the end of the receiver's window
    /// (`tcp_wnd_end - seq`), and the receiver's window (`snd_wnd`), in segments.
    pub send_win: u64,
    pub snd_wnd: u64,
    /// Payload bytes per segment (`mss_cache`).
    pub mss: u32,
    pub skb_segs: u64,
    pub skb_is_tail: bool,
    /// `tcp_tso_segs`.
    pub max_segs: u64,
    /// When the oldest unacknowledged skb was sent (`tcp_rtx_queue_head`), if any.
    pub head_sent: Option<Time>,
    pub srtt: Option<Duration>,
}

/// The verdict of `tcp_tso_should_defer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defer {
    /// Send (what the windows allow of) the skb now.
    SendNow,
    /// Hold it until the next ACK; `cwnd_limited` / `rwnd_limited`: the window held it.
    Wait { cwnd_limited: bool, rwnd_limited: bool },
}

/// Linux `tcp_tso_should_defer` (John Heffner's TSO deferral, Linux 6.18), in bytes
/// as Linux computes it, for an skb of more than one segment and cwnd above the
/// segments in flight.
pub fn should_defer(c: &DeferCheck) -> Defer {
    let mss = c.mss as u64;
    if c.recovering {
        return Defer::SendNow;
    }
    // defer only if the last write was recent (1 ms); wstamp may be in the future
    // for a paced sender
    if c.now.as_nanos() as i128 - c.wstamp.as_nanos() as i128 - RECENT_WRITE.as_nanos() as i128 > 0 {
        return Defer::SendNow;
    }
    debug_assert!(c.skb_segs > 1 && c.cwnd > c.in_flight);
    let send_win = c.send_win.saturating_mul(mss);
    let cong_win = c.cwnd.saturating_sub(c.in_flight).saturating_mul(mss);
    let limit = send_win.min(cong_win);
    let skb_len = c.skb_segs.saturating_mul(mss);
    // a full-sized TSO skb can go
    if limit >= c.max_segs.saturating_mul(mss) {
        return Defer::SendNow;
    }
    // the middle of the queue gets no more data: all of it can go
    if !c.skb_is_tail && limit >= skb_len {
        return Defer::SendNow;
    }
    // at least a third of the window is open
    let chunk = c.snd_wnd.saturating_mul(mss).min(c.cwnd.saturating_mul(mss)) / TSO_WIN_DIVISOR;
    if limit >= chunk {
        return Defer::SendNow;
    }
    let Some(head) = c.head_sent else {
        return Defer::SendNow;
    };
    // the next ACK is expected one srtt after the head was sent; if it comes later
    // than min(1 ms, srtt/2) from now, send (smooth ACK clocking)
    let srtt = c.srtt.map_or(0, |d| d.as_nanos()) as i128;
    let how_far = head.as_nanos() as i128 + srtt - c.now.as_nanos() as i128;
    let threshold = (srtt >> 1).min(ACK_WAIT.as_nanos() as i128);
    if how_far - threshold > 0 {
        return Defer::SendNow;
    }
    if cong_win < send_win {
        if cong_win <= skb_len {
            return Defer::Wait { cwnd_limited: true, rwnd_limited: false };
        }
    } else if send_win <= skb_len {
        return Defer::Wait { cwnd_limited: false, rwnd_limited: true };
    }
    // application-limited: a tail skb waits for more data (no FIN or EOR here)
    Defer::Wait { cwnd_limited: false, rwnd_limited: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::pacing::{burst_segments, default_rate};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }
    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    /// A sender in the middle of a bulk transfer at 100 Mb/s, RTT 20 ms: cwnd 170,
    /// 2 segments free (one delayed ACK's worth), skbs of 10, last write 0.3 ms ago,
    /// the head sent 19.5 ms ago (its ACK due in 0.5 ms).
    fn base() -> DeferCheck {
        let now = Time::from_millis(1000);
        DeferCheck {
            now,
            recovering: false,
            wstamp: now - us(300),
            cwnd: 170,
            in_flight: 168,
            send_win: u64::MAX,
            snd_wnd: u64::MAX,
            mss: 1460,
            skb_segs: 44,
            skb_is_tail: false,
            max_segs: 10,
            head_sent: Some(now - us(19_500)),
            srtt: Some(ms(20)),
        }
    }

    #[test]
    fn size_goal_is_64_kb_less_headers_or_half_the_peer_window() {
        // 65215 B / 1460 = 44 segments; / 1448 = 45
        assert_eq!(size_goal(1460, u64::MAX), 44);
        assert_eq!(size_goal(1448, u64::MAX), 45);
        // a 40-segment window: half of it, 20 segments
        assert_eq!(size_goal(1460, 40), 20);
        assert_eq!(size_goal(1460, 1), 1);
    }

    #[test]
    fn the_write_queue_is_cut_at_multiples_of_the_size_goal() {
        let q = WriteQueue::head(0, u64::MAX, 44);
        assert_eq!((q.start, q.end, q.is_tail, q.segs()), (0, 44, false, 44));
        // after 10 segments of it went: the rest of the first skb
        let q = WriteQueue::head(10, u64::MAX, 44);
        assert_eq!((q.end, q.segs()), (44, 34));
        // the application's data ends inside the skb: the tail
        let q = WriteQueue::head(50, 60, 44);
        assert_eq!((q.end, q.is_tail, q.segs()), (60, true, 10));
        let q = WriteQueue::head(50, 88, 44);
        assert_eq!((q.end, q.is_tail), (88, true));
        let q = WriteQueue::head(50, 89, 44);
        assert_eq!((q.end, q.is_tail), (88, false));
    }

    #[test]
    fn the_cwnd_quota_is_at_most_half_of_cwnd() {
        assert_eq!(cwnd_quota(10, 0), 5);
        assert_eq!(cwnd_quota(10, 7), 3);
        assert_eq!(cwnd_quota(10, 10), 0);
        assert_eq!(cwnd_quota(10, 12), 0);
        assert_eq!(cwnd_quota(1, 0), 1);
        assert_eq!(cwnd_quota(3, 0), 1);
    }

    #[test]
    fn psh_goes_on_skbs_of_several_segments_and_on_a_write_end() {
        assert!(push_flag(2, false));
        assert!(push_flag(9, false));
        assert!(!push_flag(1, false));
        assert!(push_flag(1, true));
        assert!(!push_flag(0, true));
    }

    #[test]
    fn the_split_point_takes_max_segs_within_the_window_and_the_skb() {
        let mid = WriteQueue { start: 10, end: 44, is_tail: false };
        assert_eq!(split_point(&mid, u64::MAX, 10), 10);
        // the receiver's window ends 4 segments in
        assert_eq!(split_point(&mid, 4, 10), 4);
        // the rest of an skb smaller than max_segs
        let rest = WriteQueue { start: 40, end: 44, is_tail: false };
        assert_eq!(split_point(&rest, u64::MAX, 10), 4);
        let tail = WriteQueue { start: 40, end: 43, is_tail: true };
        assert_eq!(split_point(&tail, u64::MAX, 10), 3);
    }

    #[test]
    fn unpaced_skbs_at_100_mbps_and_20_ms_hold_nine_segments() {
        // tcp_update_pacing_rate in congestion avoidance: 1.2 x 170 x 1460 B / 20 ms
        // = 14,892,000 B/s; tcp_tso_autosize: >> 10 = 14,542 B = 9 segments of 1460
        let rate = default_rate(1460, 170, 100, 0, Some(ms(20)), 200, 120);
        assert_eq!(rate, 14_892_000);
        assert_eq!(burst_segments(rate, 1460, Some(ms(20)), 2), 9);
        // half the window, 85 segments: 4 per skb
        let rate = default_rate(1460, 85, 50, 0, Some(ms(20)), 200, 120);
        assert_eq!(burst_segments(rate, 1460, Some(ms(20)), 2), 4);
        // 10 Mb/s-sized window (17 segments): 1 segment of rate, so min_tso_segs
        let rate = default_rate(1460, 17, 10, 0, Some(ms(20)), 200, 120);
        assert_eq!(burst_segments(rate, 1460, Some(ms(20)), 2), 2);
    }

    #[test]
    fn a_partial_skb_waits_for_the_next_ack_when_the_window_is_nearly_full() {
        // 2 free < 10 = max_segs, < 170/3; the next ACK due within 1 ms: wait,
        // limited by cwnd (2 segments <= the 44-segment skb)
        assert_eq!(should_defer(&base()), Defer::Wait { cwnd_limited: true, rwnd_limited: false });
    }

    #[test]
    fn a_full_skb_or_a_third_of_the_window_goes_at_once() {
        let c = DeferCheck { in_flight: 160, ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        let c = DeferCheck { in_flight: 161, ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        // cwnd 24: a third is 8 segments; 8 free (of max_segs 10) goes
        let c = DeferCheck { cwnd: 24, in_flight: 16, ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        let c = DeferCheck { cwnd: 24, in_flight: 17, ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        // the rest of a skb in the middle of the queue, if it all fits
        let c = DeferCheck { skb_segs: 2, ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        let c = DeferCheck { skb_segs: 3, ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
    }

    #[test]
    fn no_deferral_in_recovery_or_after_a_millisecond_without_sending() {
        let c = DeferCheck { recovering: true, ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        let now = base().now;
        let c = DeferCheck { wstamp: now - ms(1), ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        let c = DeferCheck { wstamp: now - ms(1) - Duration::from_nanos(1), ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        // a paced sender's departure time ahead of now
        let c = DeferCheck { wstamp: now + ms(2), ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
    }

    #[test]
    fn no_deferral_when_the_next_ack_is_more_than_min_1ms_half_srtt_away() {
        let now = base().now;
        // ACK due in exactly 1 ms: still waits; 1 ms + 1 ns: sends
        let c = DeferCheck { head_sent: Some(now - ms(19)), ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        let c = DeferCheck { head_sent: Some(now - ms(19) + Duration::from_nanos(1)), ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        // an ACK overdue (head older than srtt) waits
        let c = DeferCheck { head_sent: Some(now - ms(30)), ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        // srtt 1 ms: the threshold is half of it, 0.5 ms
        let c = DeferCheck { srtt: Some(ms(1)), head_sent: Some(now - us(400)), ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
        let c = DeferCheck { srtt: Some(ms(1)), head_sent: Some(now - us(500)), ..base() };
        assert!(matches!(should_defer(&c), Defer::Wait { .. }));
        // nothing in flight: send
        let c = DeferCheck { head_sent: None, ..base() };
        assert_eq!(should_defer(&c), Defer::SendNow);
    }

    #[test]
    fn the_receiver_window_or_the_application_can_be_what_holds_it() {
        // the receiver's window (3 segments) is below cwnd's room (5)
        let c = DeferCheck { in_flight: 165, send_win: 3, snd_wnd: 200, ..base() };
        assert_eq!(should_defer(&c), Defer::Wait { cwnd_limited: false, rwnd_limited: true });
        // a tail skb of 3 segments with room for 4: the application is what limits
        let c = DeferCheck { in_flight: 166, skb_segs: 3, skb_is_tail: true, ..base() };
        assert_eq!(should_defer(&c), Defer::Wait { cwnd_limited: false, rwnd_limited: false });
    }
}
