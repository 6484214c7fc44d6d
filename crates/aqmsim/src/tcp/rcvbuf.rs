//! Linux's receive buffer and the window it advertises (`receive_buffer = "linux"`),
//! as `tcp_input.c`, `tcp_output.c` and `tcp.c` of kernel 6.18 compute them for an
//! application that reads each segment as it arrives:
//!
//! - the buffer (`sk_rcvbuf`) starts at `tcp_rmem[1]` (128 KB) and grows by
//!   receive-buffer autotuning (`tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`; Dynamic
//!   Right-Sizing, Fisk & Feng 2001): once per receiver RTT, when the application read
//!   more than ever before in one RTT, to twice that, plus twice the growth over the
//!   previous maximum relative to it (so a sender in slow start may double its rate:
//!   "tcp: fix too slow tcp_rcvbuf_grow() action", in the 6.18 stable kernels), plus
//!   the out-of-order span, at most `tcp_rmem[2]` (32 MB); the window clamp follows;
//! - the window offered grows toward what the buffer allows only as data arrives:
//!   `rcv_ssthresh` (`tcp_grow_window`) gains two segments per full segment
//!   received while there is room, and every such segment is ACKed at once
//!   (`icsk_ack.quick |= 1`): while the buffer grows, so does the ACK rate;
//! - the window advertised (`__tcp_select_window`, `tcp_select_window`) is the free
//!   space, at most `rcv_ssthresh`, rounded up to the window scale (2^10 with a 32 MB
//!   buffer), never shrinking the right edge of the window already offered
//!   (RFC 9293 §3.8.6.2.2);
//! - the every-second-segment ACK waits for the read when the window would shrink
//!   (`__tcp_ack_snd_check`), and a read that lets the receiver offer at least twice
//!   the window left sends a window update (`tcp_cleanup_rbuf`, RFC 9293 §3.8.6.2.2's
//!   receiver-side silly window avoidance, RFC 1122 §4.2.3.3);
//! - the receiver's RTT (`rcv_rtt_est`, `tcp_rcv_rtt_update`): a lower sample is
//!   taken at once, a higher timestamp sample is averaged in with weight 1/8, a
//!   higher per-window sample (`tcp_rcv_rtt_measure`) is ignored.
//!
//! Units: windows in payload bytes, buffers in bytes of memory. Linux converts
//! one to the other with `scaling_ratio` (payload over `skb->truesize`, in 1/256):
//! 50 % until data arrives (`TCP_DEFAULT_SCALING_RATIO`), then the ratio of the
//! first full-sized segment (`tcp_measure_rcv_mss`), and the window clamp follows
//! it (`tcp_set_window_clamp`). The model takes 160/256 for that ratio: a 1448-byte
//! payload in about 2.3 KB of `truesize`, the ratio the kernel's ACKs on the
//! emulator's TUN device imply (docs/validation.md); Linux measures it per socket.
//! Not modelled: memory pressure, pruning, a slow application (the receive queue
//! is empty after every arrival).

use aqm::{Duration, Time};

/// `tcp_rmem[1]`: the initial receive buffer (bytes of memory).
pub const RMEM_DEFAULT: u64 = 131_072;
/// `tcp_rmem[2]`: the largest (Linux 6.18's default, 32 MB).
pub const RMEM_MAX: u64 = 33_554_432;
/// `net.core.rmem_max` (this machine's 4 MB): with `tcp_rmem[2]` it sets the
/// window scale (`tcp_select_initial_window`).
const CORE_RMEM_MAX: u64 = 4_194_304;
/// `TCP_INIT_CWND`: the first autotuning measure starts from ten segments.
const INIT_CWND: u64 = 10;
/// The largest unscaled window (`U16_MAX`): the SYN's window is not scaled.
const MAX_UNSCALED: u64 = 65_535;

/// `TCP_DEFAULT_SCALING_RATIO` (1/256): payload per byte of buffer before data.
const DEFAULT_RATIO: u64 = 128;
/// The ratio measured on the first full-sized segment (see above).
pub const DATA_RATIO: u64 = 160;

/// Buffer bytes to window bytes (`__tcp_win_from_space`).
fn win_from_space(ratio: u64, space: u64) -> u64 {
    (space * ratio) >> 8
}

/// Window bytes to buffer bytes (`__tcp_space_from_win`).
fn space_from_win(ratio: u64, win: u64) -> u64 {
    (win << 8) / ratio
}

/// The receive buffer of one connection (the fields are Linux's names).
#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `advmss` = `icsk_ack.rcv_mss`: full segments of this many payload bytes.
    mss: u64,
    /// `sk_rcvbuf` (bytes of memory), and `scaling_ratio` (1/256).
    rcvbuf: u64,
    ratio: u64,
    /// `window_clamp`, `rcv_ssthresh`, `rcv_wnd` (payload bytes).
    window_clamp: u64,
    pub rcv_ssthresh: u64,
    pub rcv_wnd: u64,
    /// `rcv_wup`: `rcv_nxt` (payload bytes) when `rcv_wnd` was advertised.
    rcv_wup: u64,
    /// `rcv_wscale`: windows are advertised in units of 2^wscale bytes.
    wscale: u32,
    /// `rcvq_space`: the most read in one receiver RTT so far, and the start of
    /// the current measure (bytes read, time).
    space: u64,
    space_seq: u64,
    space_time: Time,
    /// `rcv_rtt_est`: the receiver's RTT estimate (zero: none), and
    /// `tcp_rcv_rtt_measure`'s window measure (the edge to reach, since when).
    rtt: Duration,
    rtt_seq: u64,
    rtt_time: Option<Time>,
    /// Times `rcv_ssthresh` grew.
    pub grows: u64,
}

impl RcvBuf {
    /// A connection established at `now` with segments of `mss` payload bytes
    /// (`tcp_select_initial_window`, `tcp_init_buffer_space`).
    pub fn new(mss: u64, now: Time) -> RcvBuf {
        let mss = mss.max(1);
        let full = win_from_space(DEFAULT_RATIO, RMEM_DEFAULT);
        // tcp_select_initial_window: the space offered is a multiple of the MSS, and
        // the SYN's window is not scaled; the scale covers the largest buffer
        let mut rcv_wnd = if full > mss { full - full % mss } else { full };
        rcv_wnd = rcv_wnd.min(MAX_UNSCALED);
        let wscale = (63 - RMEM_MAX.max(CORE_RMEM_MAX).leading_zeros()).saturating_sub(15).min(14);
        // tcp_init_buffer_space with tcp_app_win = 31: one segment is reserved
        let mut window_clamp = full;
        if window_clamp > 2 * mss {
            window_clamp = (full - mss).max(2 * mss);
        }
        let rcv_ssthresh = rcv_wnd.min(window_clamp);
        RcvBuf {
            mss,
            rcvbuf: RMEM_DEFAULT,
            ratio: DEFAULT_RATIO,
            window_clamp,
            rcv_ssthresh,
            rcv_wnd,
            rcv_wup: 0,
            wscale,
            space: rcv_ssthresh.min(rcv_wnd).min(INIT_CWND * mss),
            space_seq: 0,
            space_time: now,
            rtt: Duration::ZERO,
            rtt_seq: 0,
            rtt_time: None,
            grows: 0,
        }
    }

    /// `tcp_measure_rcv_mss` on the first full-sized segment: the scaling ratio
    /// becomes the data's, and the clamp follows the buffer at it
    /// (`tcp_set_window_clamp`: a larger clamp lets `rcv_ssthresh` take up to the
    /// window already offered).
    pub fn measure_ratio(&mut self, len: u64) {
        if self.ratio == DATA_RATIO || len < self.mss {
            return;
        }
        self.ratio = DATA_RATIO;
        let clamp = win_from_space(self.ratio, self.rcvbuf);
        if clamp > self.window_clamp {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
        }
        self.window_clamp = clamp;
        self.space = self.space.min(clamp);
    }

    /// The receiver's RTT estimate, if it has one (`rcv_rtt_est.rtt_us`).
    pub fn rtt(&self) -> Option<Duration> {
        (!self.rtt.is_zero()).then_some(self.rtt)
    }

    /// `tcp_rcv_rtt_update` (kernel 6.16 on): a lower sample is taken at once; a
    /// higher one is averaged in with weight 1/8, unless it comes from the per-window
    /// measure (`win_dep`), which only ever lowers the estimate.
    fn rtt_update(&mut self, sample: Duration, win_dep: bool) {
        let m = sample.max(Duration::from_nanos(1));
        if self.rtt.is_zero() || m < self.rtt {
            self.rtt = m;
        } else if !win_dep {
            self.rtt = self.rtt - self.rtt.div_u64(8) + m.div_u64(8);
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: a segment of at least one MSS echoing a timestamp
    /// not seen before gives an RTT sample (`tcp_rtt_tsopt_us`).
    pub fn rtt_measure_ts(&mut self, sample: Duration, len: u64) {
        if len >= self.mss {
            self.rtt_update(sample, false);
        }
    }

    /// `tcp_rcv_rtt_measure` (from `tcp_event_data_recv`): the time to receive one
    /// window of data, a sample that only lowers the estimate.
    pub fn rtt_measure(&mut self, now: Time, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            self.rtt_update(now.saturating_since(t), true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_space` / `tcp_full_space` in window bytes, with `unread` payload bytes
    /// held (in order but not read yet, or out of order).
    fn free_space(&self, unread: u64) -> i64 {
        win_from_space(self.ratio, self.rcvbuf) as i64 - unread as i64
    }

    /// `tcp_grow_window` (from `tcp_event_data_recv`, for a segment of `len` payload
    /// bytes): while the window may grow (the clamp and the free space above
    /// `rcv_ssthresh`), it grows by two segments (`2 * advmss`; the segment's memory
    /// fits the buffer at the model's ratio), and the segment must be ACKed at once:
    /// returns true for `icsk_ack.quick |= 1`.
    pub fn grow_window(&mut self, len: u64, unread: u64) -> bool {
        let room = (self.window_clamp as i64).min(self.free_space(unread)) - self.rcv_ssthresh as i64;
        if room <= 0 || len < 128 {
            return false;
        }
        let incr = (2 * self.mss).max(2 * len);
        self.rcv_ssthresh += (room as u64).min(incr);
        self.grows += 1;
        true
    }

    /// `__tcp_select_window`: the window the receiver could offer now, and whether
    /// the free space fell below half the buffer (which ends quick-ACK mode:
    /// `icsk_ack.quick = 0`).
    pub fn select_window(&self, unread: u64) -> (u64, bool) {
        let mut mss = self.mss as i64;
        let allowed = win_from_space(self.ratio, self.rcvbuf) as i64;
        let full_space = (self.window_clamp as i64).min(allowed);
        if mss > full_space {
            mss = full_space;
            if mss <= 0 {
                return (0, false);
            }
        }
        let mut free = self.free_space(unread);
        let mut low = false;
        let unit = 1i64 << self.wscale;
        if free < full_space / 2 {
            low = true;
            free = free.div_euclid(unit) * unit;
            if free < allowed / 16 || free < mss {
                return (0, true);
            }
        }
        free = free.min(self.rcv_ssthresh as i64);
        // scaled windows are advertised rounded up to the scale (never to zero)
        let window = (free + unit - 1).div_euclid(unit) * unit;
        (window.max(0) as u64, low)
    }

    /// The window left of the one last advertised (`tcp_receive_window`).
    pub fn window_left(&self, rcv_nxt: u64) -> u64 {
        (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt)
    }

    /// `tcp_select_window`, when an ACK goes out: the new window, or the window
    /// left rounded up to the scale if that is larger (the right edge never moves
    /// left); it becomes `rcv_wnd`, counted from `rcv_nxt`.
    pub fn window_for_ack(&mut self, rcv_nxt: u64, unread: u64) -> (u64, bool) {
        let cur = self.window_left(rcv_nxt);
        let (mut new, low) = self.select_window(unread);
        if new < cur {
            let unit = 1u64 << self.wscale;
            new = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        (new, low)
    }

    /// The every-second-segment ACK of `__tcp_ack_snd_check` goes at once only if the
    /// window offered would not shrink (else `tcp_recvmsg` sends it after the read).
    pub fn ack_now_allowed(&self, unread: u64) -> bool {
        self.select_window(unread).0 >= self.rcv_wnd
    }

    /// `tcp_cleanup_rbuf`'s window update after a read: ACK when the receiver can now
    /// offer at least twice the window left, and that is at most half the clamp.
    pub fn window_update_due(&self, rcv_nxt: u64, unread: u64) -> bool {
        let now = self.window_left(rcv_nxt);
        if 2 * now > self.window_clamp {
            return false;
        }
        let (new, _) = self.select_window(unread);
        new > 0 && new >= 2 * now
    }

    /// `tcp_rcvbuf_grow(sk, newval)`: `rcvq_space.space` becomes `newval`; the
    /// buffer is sized for twice it ("DRS is always one RTT late"), plus twice the
    /// growth over the old value relative to it ("slow start: allow the sender to
    /// double its rate"), plus the span of out-of-order data, if that is larger than
    /// now; the clamp follows.
    fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let old = self.space.max(1);
        self.space = newval;
        let mut rcvwin = 2 * newval;
        rcvwin += 2 * (rcvwin as u128 * newval.saturating_sub(old) as u128 / old as u128) as u64;
        rcvwin += ooo_span;
        let rcvbuf = space_from_win(self.ratio, rcvwin).min(RMEM_MAX);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.ratio, rcvbuf);
        }
    }

    /// Out-of-order data arrived (`tcp_data_queue_ofo` calls
    /// `tcp_rcvbuf_grow(sk, tp->rcvq_space.space)`).
    pub fn on_ofo(&mut self, ooo_span: u64) {
        self.rcvbuf_grow(self.space, ooo_span);
    }

    /// `tcp_rcv_space_adjust`, after the application has read up to `copied` bytes
    /// (nothing left in the receive queue): once a receiver RTT has passed since the
    /// measure began, a new maximum read in it grows the buffer.
    pub fn space_adjust(&mut self, now: Time, copied: u64, ooo_span: u64) {
        if self.rtt.is_zero() || now.saturating_since(self.space_time) < self.rtt {
            return;
        }
        let c = copied - self.space_seq;
        if c > self.space {
            self.rcvbuf_grow(c, ooo_span);
        }
        self.space_seq = copied;
        self.space_time = now;
    }

    /// Linux `tcp_incr_quickack`'s count: half the window in segments, at least 2.
    pub fn quickacks(&self) -> u32 {
        let q = self.rcv_wnd / (2 * self.mss);
        if q == 0 {
            2
        } else {
            q.min(u32::MAX as u64) as u32
        }
    }

    /// The buffer (bytes of memory) and the clamp (payload bytes), for the tests.
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }
    pub fn window_clamp(&self) -> u64 {
        self.window_clamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initial_window_is_linuxs() {
        // tcp_rmem[1] = 128 KB at 50 %: 64 KB; a multiple of 1448 below 65535:
        // 45 segments = 65160; the clamp reserves one segment: 65536 - 1448 = 64088;
        // window scale: ilog2(32 MB) - 15 = 10
        let b = RcvBuf::new(1448, Time::ZERO);
        assert_eq!(b.rcv_wnd, 65_160);
        assert_eq!(b.window_clamp(), 64_088);
        assert_eq!(b.rcv_ssthresh, 64_088);
        assert_eq!(b.wscale, 10);
        assert_eq!(b.space, 14_480);
        // quick ACKs at the start: 65160 / 2896 = 22 (the receiver caps it at 16)
        assert_eq!(b.quickacks(), 22);
    }

    #[test]
    fn select_window_is_the_free_space_capped_by_rcv_ssthresh_and_rounded_up() {
        let b = RcvBuf::new(1448, Time::ZERO);
        // nothing held: rcv_ssthresh 64088, rounded up to 1024: 64512
        assert_eq!(b.select_window(0), (64_512, false));
        // 40,000 bytes held: free 25,536 < 32,044 (half of min(clamp, space)): rounded
        // down to 24,576 (already aligned for the rounding up), and quick-ACK mode ends
        assert_eq!(b.select_window(40_000), (24_576, true));
        // 62,000 held: 3,536 free, below 65536/16 = 4096: zero window
        assert_eq!(b.select_window(62_000), (0, true));
    }

    #[test]
    fn the_right_edge_never_moves_left() {
        let mut b = RcvBuf::new(1448, Time::ZERO);
        // the SYN offered 65,160: the first ACK's window (64,512 from rcv_ssthresh)
        // may not shrink it, so 65,160 rounded up to the scale: 65,536
        let (w, _) = b.window_for_ack(0, 0);
        assert_eq!(w, 65_536);
        // 20 segments arrive, 30,000 bytes unread: the new window is the 35,536 bytes
        // free rounded up to 35,840, below the 36,576 left (65,536 - 28,960): that,
        // rounded up to 36,864
        let (w2, _) = b.window_for_ack(28_960, 30_000);
        assert_eq!(w2, 36_864);
        assert_eq!(b.window_left(28_960), 36_864);
        // all read: 64,512 (rcv_ssthresh) from the new rcv_nxt, above the 36,864 left
        let (w3, _) = b.window_for_ack(28_960, 0);
        assert_eq!(w3, 64_512);
    }

    #[test]
    fn grow_window_adds_two_segments_while_there_is_room_and_asks_for_a_quick_ack() {
        let mut b = RcvBuf::new(1448, Time::ZERO);
        // rcv_ssthresh is at the clamp: no room, no quick ACK
        assert!(!b.grow_window(1448, 1448));
        // the application read 20 segments (28,960 bytes) in one receiver RTT, twice
        // the 14,480 before: rcvwin = 2 * 28960 + 2 * (57920 * 14480 / 14480) =
        // 173,760 window bytes, 347,520 of memory at 50 %; the clamp follows
        b.rtt_measure_ts(Duration::from_millis(20), 1448);
        b.space_adjust(Time::from_millis(25), 20 * 1448, 0);
        assert_eq!(b.rcvbuf(), 347_520);
        assert_eq!(b.window_clamp(), 173_760);
        // each full segment now grows rcv_ssthresh by 2896 up to min(clamp, free
        // space with one segment unread) = 172,312
        let mut quick = 0;
        while b.grow_window(1448, 1448) {
            quick += 1;
        }
        // (172312 - 64088) / 2896 = 37.4: 37 steps of 2896 and a last one of 1072
        assert_eq!(quick, 38);
        assert_eq!(b.rcv_ssthresh, 172_312);
    }

    #[test]
    fn the_data_ratio_moves_the_clamp() {
        // the first full segment: 160/256; the clamp is 128 KB at that ratio,
        // 81,920, and rcv_ssthresh takes up to the window offered (65,160)
        let mut b = RcvBuf::new(1448, Time::ZERO);
        b.measure_ratio(1448);
        assert_eq!(b.window_clamp(), 81_920);
        assert_eq!(b.rcv_ssthresh, 65_160);
        // room for (81920 - 1448 - 65160) / 2896 = 5.3: 6 quick ACKs
        let mut quick = 0;
        while b.grow_window(1448, 1448) {
            quick += 1;
        }
        assert_eq!((quick, b.rcv_ssthresh), (6, 80_472));
    }

    #[test]
    fn autotuning_grows_only_on_a_new_maximum_once_per_receiver_rtt() {
        let mut b = RcvBuf::new(1448, Time::ZERO);
        b.rtt_measure_ts(Duration::from_millis(20), 1448);
        // before one RTT has passed, nothing is measured
        b.space_adjust(Time::from_millis(10), 30 * 1448, 0);
        assert_eq!((b.space, b.rcvbuf()), (14_480, RMEM_DEFAULT));
        // 30 segments in the first 20 ms (43,440 bytes, 3 times the 14,480 before):
        // rcvwin = 86880 + 2 * (86880 * 28960 / 14480) = 434,400, 868,800 of memory
        b.space_adjust(Time::from_millis(20), 30 * 1448, 0);
        assert_eq!((b.space, b.rcvbuf()), (43_440, 868_800));
        // 20 segments in the next RTT: not a new maximum, the buffer stays
        b.space_adjust(Time::from_millis(40), 50 * 1448, 0);
        assert_eq!((b.space, b.rcvbuf()), (43_440, 868_800));
        // out-of-order data adds its span: 2 * 43440 + 500000 = 586,880 -> 1,173,760
        b.on_ofo(500_000);
        assert_eq!(b.rcvbuf(), 1_173_760);
        // at most tcp_rmem[2]
        b.space_adjust(Time::from_millis(60), 50 * 1448 + 20_000_000, 0);
        assert_eq!(b.rcvbuf(), RMEM_MAX);
    }

    #[test]
    fn the_receiver_rtt_takes_lower_samples_at_once_and_averages_higher_ones() {
        let mut b = RcvBuf::new(1448, Time::ZERO);
        assert_eq!(b.rtt(), None);
        b.rtt_measure_ts(Duration::from_millis(40), 1448);
        assert_eq!(b.rtt(), Some(Duration::from_millis(40)));
        b.rtt_measure_ts(Duration::from_millis(20), 1448);
        assert_eq!(b.rtt(), Some(Duration::from_millis(20)));
        // 28 ms: 20 - 2.5 + 3.5 = 21 ms
        b.rtt_measure_ts(Duration::from_millis(28), 1448);
        assert_eq!(b.rtt(), Some(Duration::from_millis(21)));
        // a short segment gives no sample
        b.rtt_measure_ts(Duration::from_millis(1), 100);
        assert_eq!(b.rtt(), Some(Duration::from_millis(21)));
        // the per-window measure never raises it
        b.rtt_measure(Time::from_millis(0), 0);
        b.rtt_measure(Time::from_millis(100), 70_000);
        assert_eq!(b.rtt(), Some(Duration::from_millis(21)));
    }

    #[test]
    fn a_read_that_doubles_the_window_left_sends_an_update() {
        let mut b = RcvBuf::new(1448, Time::ZERO);
        b.window_for_ack(0, 0); // 65,536 offered
        // 40 segments later (no ACK in between), 7,616 left: 2 * 7616 <= clamp and
        // the free window (64,512) is at least twice that
        assert!(b.window_update_due(40 * 1448, 0));
        // 10 segments later, 51,056 left: no
        assert!(!b.window_update_due(10 * 1448, 0));
    }
}
