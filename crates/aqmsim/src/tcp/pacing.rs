//! Pacing as Linux's TCP does it internally (no fq qdisc): every burst of segments
//! gets an earliest departure time (EDT, `tcp_wstamp_ns`), and the sender sends
//! nothing before it; a timer (`pacing_timer`, here the sender's `poll_at`) wakes it
//! up then.
//!
//! - The rate (`sk_pacing_rate`, bytes per second) is the congestion control's own
//!   (BBR sets it on every ACK) or Linux's default, `tcp_update_pacing_rate`
//!   (`tcp_input.c`): `mss x max(cwnd, packets_out) / srtt`, times
//!   `tcp_pacing_ss_ratio` (200 %) while cwnd is below half of ssthresh and
//!   `tcp_pacing_ca_ratio` (120 %) after, in Linux's integer arithmetic
//!   ([`default_rate`]). Linux computes this rate for every connection but paces a
//!   CUBIC or Reno flow only under the fq qdisc or when asked; here, with
//!   `tcp.pacing = true`.
//! - A burst is one TSO/GSO packet: `tcp_tso_autosize` sizes it to about 1 ms of the
//!   rate (`sk_pacing_shift` = 10), at least `min_tso_segs` (2, or the controller's:
//!   BBR takes 1 below 1.2 Mb/s) ([`burst_segments`]).
//! - After a burst of `bytes` of payload leaves at `now`, `tcp_update_skb_after_send`
//!   (`tcp_output.c`) moves the EDT on by `bytes / rate`, less up to half of that for
//!   the time the sender was late (its credit); the first 10 segments of a
//!   connection are not paced (as the original sch_fq) ([`Pacer::on_burst_sent`]).
//!   `tcp_pacing_check` holds the sender while the EDT is in the future
//!   ([`Pacer::wait`]).

use aqm::{Duration, Time};

/// `sk_pacing_shift`: a burst holds about 2^-10 s (1 ms) of the pacing rate.
pub const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_min_tso_segs`.
pub const MIN_TSO_SEGS: u32 = 2;
/// `sk_gso_max_size` of a device without big TCP (`GSO_LEGACY_MAX_SIZE`).
pub const GSO_MAX_SIZE: u64 = 65_536;
/// `sysctl_tcp_tso_rtt_log`: on paths of small RTT a burst may take more
/// (`GSO_MAX_SIZE >> (min_rtt_us >> 9)` bytes more).
pub const TSO_RTT_LOG: u32 = 9;
/// Segments the connection sends before pacing starts (`tp->data_segs_out >= 10`).
pub const UNPACED_SEGMENTS: u64 = 10;

/// Linux `tcp_update_pacing_rate`, in bytes per second: `mss x max(cwnd, packets_out)`
/// per `srtt`, at `ss_ratio` % while `cwnd < ssthresh / 2` and at `ca_ratio` % after.
/// Linux keeps srtt in eighths of a microsecond and divides integers; without an RTT
/// sample it divides by nothing, which makes the rate so high that nothing waits.
pub fn default_rate(mss: u32, cwnd: u64, ssthresh: u64, packets_out: u64, srtt: Option<Duration>, ss_ratio: u32, ca_ratio: u32) -> u64 {
    // rate = mss * ((USEC_PER_SEC / 100) << 3) * ratio * segs / srtt_us(<<3)
    let ratio = if cwnd < ssthresh / 2 { ss_ratio } else { ca_ratio };
    let segs = cwnd.max(packets_out);
    // in u64 when nothing overflows (always, in practice), else in u128: the same
    // integers either way, without a u128 division's library call on every ACK
    let small = (mss as u64 * ((1_000_000 / 100) << 3)).checked_mul(ratio as u64).and_then(|r| r.checked_mul(segs));
    match (small, srtt.map(|d| d.as_nanos())) {
        (Some(rate), Some(ns)) if ns <= u64::MAX / 8 => rate / (ns * 8 / 1000).max(1),
        (Some(rate), None) => rate,
        _ => {
            let rate = mss as u128 * ((1_000_000u128 / 100) << 3) * ratio as u128 * segs as u128;
            let srtt8 = srtt.map_or(0, |d| (d.as_nanos() as u128 * 8 / 1000).max(1));
            let rate = rate.checked_div(srtt8).unwrap_or(rate);
            rate.min(u64::MAX as u128) as u64
        }
    }
}

/// Linux `tcp_tso_autosize`: the segments of one burst at `rate` bytes per second:
/// about 1 ms of it (plus up to 64 KB on paths with a min RTT under about 16 ms),
/// at most 64 KB, at least `min_tso_segs`.
pub fn burst_segments(rate: u64, mss: u32, min_rtt: Option<Duration>, min_tso_segs: u32) -> u64 {
    let mut bytes = rate >> PACING_SHIFT;
    let r = min_rtt.map_or(0, |d| d.as_nanos() / 1000) >> TSO_RTT_LOG;
    if r < 32 {
        bytes += GSO_MAX_SIZE >> r;
    }
    let bytes = bytes.min(GSO_MAX_SIZE);
    (bytes / mss.max(1) as u64).max(min_tso_segs as u64).max(1)
}

/// A sender's pacing state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    /// The sender paces (`sk_pacing_status != SK_PACING_NONE`).
    pub on: bool,
    /// `sk_pacing_rate`, bytes per second (0: none yet).
    pub rate: u64,
    /// Earliest departure time of the next burst (`tcp_wstamp_ns`).
    pub wstamp: Time,
    /// Data segments sent so far, retransmissions included (`tp->data_segs_out`).
    pub segs_out: u64,
}

impl Pacer {
    /// `tcp_pacing_check`: the time the sender must wait for, if it is paced and the
    /// next departure time is still ahead.
    #[inline]
    pub fn wait(&self, now: Time) -> Option<Time> {
        (self.on && self.wstamp > now).then_some(self.wstamp)
    }

    /// A burst of `segs` segments and `bytes` of payload left at `now` (Linux
    /// `__tcp_transmit_skb` then `tcp_update_skb_after_send`).
    pub fn on_burst_sent(&mut self, now: Time, segs: u64, bytes: u64) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        self.segs_out += segs;
        if self.on && self.rate > 0 && self.segs_out >= UNPACED_SEGMENTS {
            let len_ns = (bytes as u128 * 1_000_000_000 / self.rate as u128) as u64;
            // a sender woken late may catch up by up to half a gap (OS jitter)
            let credit = self.wstamp.saturating_since(prior).as_nanos();
            let len_ns = len_ns - (len_ns / 2).min(credit);
            self.wstamp += Duration::from_nanos(len_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn the_default_rate_is_twice_cwnd_per_srtt_in_slow_start_and_1_2_times_after() {
        // 10 segments of 1448 B per 40 ms = 362,000 B/s; in slow start (cwnd 10 <
        // ssthresh 100 / 2) twice that, in congestion avoidance 1.2 times
        assert_eq!(default_rate(1448, 10, 100, 0, Some(ms(40)), 200, 120), 724_000);
        assert_eq!(default_rate(1448, 10, 20, 0, Some(ms(40)), 200, 120), 434_400);
        // ssthresh / 2 rounds down as Linux's integer division: cwnd 10 vs 21 / 2 = 10
        assert_eq!(default_rate(1448, 10, 21, 0, Some(ms(40)), 200, 120), 434_400);
        // the segments outstanding count when they exceed cwnd (after a reduction)
        assert_eq!(default_rate(1448, 10, 20, 15, Some(ms(40)), 200, 120), 651_600);
        // srtt in eighths of a microsecond, integer division: 1460 x 10 x 1.2 / 33.3333 ms
        assert_eq!(default_rate(1460, 10, 10, 0, Some(Duration::from_nanos(33_333_333)), 200, 120), 525_601);
        // no RTT sample yet: no division, far above any link
        assert!(default_rate(1448, 10, 100, 0, None, 200, 120) > 10_000_000_000);
    }

    #[test]
    fn the_u64_path_gives_the_u128_result_and_large_products_saturate() {
        // the reference: Linux's formula in u128 throughout
        let wide = |mss: u32, segs: u64, ratio: u32, srtt: Option<Duration>| -> u64 {
            let rate = mss as u128 * 80_000 * ratio as u128 * segs as u128;
            let srtt8 = srtt.map_or(0, |d| (d.as_nanos() as u128 * 8 / 1000).max(1));
            rate.checked_div(srtt8).unwrap_or(rate).min(u64::MAX as u128) as u64
        };
        let srtts = [None, Some(Duration::from_nanos(1)), Some(Duration::from_nanos(124)), Some(Duration::from_nanos(33_333_333)), Some(Duration::from_secs(3)), Some(Duration::from_nanos(u64::MAX / 8 + 1)), Some(Duration::MAX)];
        for mss in [1u32, 536, 1448, 65_000] {
            for segs in [0u64, 1, 10, 1_000_000, 1 << 40, u64::MAX] {
                for ratio in [120u32, 200, u32::MAX] {
                    for srtt in srtts {
                        assert_eq!(default_rate(mss, segs, u64::MAX, 0, srtt, ratio, ratio), wide(mss, segs, ratio, srtt), "mss {mss} segs {segs} ratio {ratio} srtt {srtt:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn bursts_hold_a_millisecond_of_the_rate_and_at_least_min_tso_segs() {
        // 20 Mb/s = 2.5 MB/s: 2441 B per ms, one segment, so min_tso_segs (2)
        assert_eq!(burst_segments(2_500_000, 1448, Some(ms(40)), 2), 2);
        assert_eq!(burst_segments(2_500_000, 1448, Some(ms(40)), 1), 1);
        // 1 Gb/s = 125 MB/s: 122,070 B per ms, capped at 64 KB: 45 segments
        assert_eq!(burst_segments(125_000_000, 1448, Some(ms(40)), 2), 45);
        // a 1 ms path adds 64 KB >> 1 = 32 KB (22 segments) to the 1 ms budget
        assert_eq!(burst_segments(2_500_000, 1448, Some(ms(1)), 2), (2441 + 32_768) / 1448);
    }

    #[test]
    fn the_departure_time_advances_by_the_burst_over_the_rate_after_ten_segments() {
        let mut p = Pacer { on: true, rate: 1_448_000, ..Pacer::default() };
        let t0 = Time::from_millis(100);
        // the first 10 segments (5 bursts of 2) are not paced
        for _ in 0..4 {
            p.on_burst_sent(t0, 2, 2896);
            assert_eq!(p.wait(t0), None);
        }
        // the fifth burst brings data_segs_out to 10: paced, 2 ms at 1448 kB/s
        p.on_burst_sent(t0, 2, 2896);
        assert_eq!(p.wstamp, t0 + ms(2));
        assert_eq!(p.wait(t0), Some(t0 + ms(2)));
        assert_eq!(p.wait(t0 + ms(2)), None);
        // sent on time: the next gap is whole
        p.on_burst_sent(t0 + ms(2), 2, 2896);
        assert_eq!(p.wstamp, t0 + ms(4));
        // sent 1 ms late: the credit takes 1 ms off the next 2 ms gap
        p.on_burst_sent(t0 + ms(5), 2, 2896);
        assert_eq!(p.wstamp, t0 + ms(6));
        // sent after a long idle time: at most half the gap is forgiven
        p.on_burst_sent(t0 + ms(100), 2, 2896);
        assert_eq!(p.wstamp, t0 + ms(101));
    }

    #[test]
    fn an_unpaced_sender_never_waits() {
        let mut p = Pacer { on: false, rate: 1000, ..Pacer::default() };
        for k in 0..20 {
            p.on_burst_sent(Time::from_millis(k), 1, 1448);
        }
        assert_eq!(p.wait(Time::ZERO), None);
        assert_eq!(p.wstamp, Time::from_millis(19));
    }
}
