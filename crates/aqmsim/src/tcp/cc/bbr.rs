//! BBR v1 (Cardwell, Cheng, Gunn, Hassas Yeganeh & Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016) as Linux mainline's
//! `net/ipv4/tcp_bbr.c` runs it, in its fixed-point arithmetic. Each function below
//! names the `tcp_bbr.c` function it follows.
//!
//! BBR models the path from two measurements and sets both the pacing rate and cwnd
//! from the model on every ACK (`cong_control`), whatever the loss-recovery state:
//! - bottleneck bandwidth: the windowed maximum of the delivery-rate samples of
//!   `tcp_rate.c` ([`RateSample`]) over the last 10 packet-timed round trips
//!   (Kathleen Nichols' filter, `lib/win_minmax.c`), in packets per µs << 24;
//!   application-limited samples enter only when they raise it;
//! - round-trip propagation time: the minimum RTT over 10 s; when it expires,
//!   PROBE_RTT caps cwnd at 4 packets for at least 200 ms and one round.
//!
//! The modes (paper §"Startup, drain and probe"): STARTUP paces at 2/ln 2 times the
//! bandwidth, with cwnd at 2/ln 2 BDP, until the bandwidth has not grown by 25 % in 3
//! non-application-limited rounds (the pipe is full); DRAIN paces at ln 2/2 until
//! what is in flight falls to one BDP; PROBE_BW cycles the pacing gain through 5/4,
//! 3/4 and six phases of 1, each about one min RTT, from a random phase other than
//! 3/4, with cwnd at 2 BDP (`cwnd_gain`). cwnd also holds the ACK aggregation of the
//! last 5-10 rounds and three bursts' budget (`bbr_quantization_budget`).
//!
//! Loss: in the first round of recovery cwnd follows packet conservation (what is in
//! flight plus what was acked); after it, cwnd slow-starts back toward the target;
//! when recovery ends, the cwnd from before it comes back. Long-term bandwidth
//! (`lt_bw`): two consecutive intervals of 4-16 rounds with 20 % loss and the same
//! throughput (within 1/8 or 4 kb/s) mean a token-bucket policer; BBR then paces at
//! their average delivery rate, gain 1, for 48 rounds.
//!
//! Linux keeps `min_rtt_stamp` and `probe_rtt_done_stamp` in jiffies (ticks of
//! 1-10 ms); here they are exact times, so a PROBE_RTT here may end up to one tick
//! earlier than the kernel's. The ACK of a lone runt segment that Linux flags as
//! maybe-delayed (`FLAG_ACK_MAYBE_DELAYED`) is not flagged here (bulk flows send
//! full segments). Pacing at 1 % below the estimate (`bbr_pacing_margin_percent`);
//! Linux's sender paces BBR itself when no fq qdisc does (`SK_PACING_NEEDED`), and so
//! does the simulated sender (`tcp/pacing.rs`).

use aqm::Time;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CcParams, CongestionControl, Conn, RateSample, Window, INFINITE_SSTHRESH};
use crate::rng::{self, SimRng};
use crate::tcp::minmax::RunningMax;

/// Linux's BBR takes no parameters (the module's constants are compiled in).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BbrParams {}

impl CcParams for BbrParams {
    const TITLE: &'static str = "BBR v1 as Linux's tcp_bbr.c: bandwidth and min-RTT model, gain cycling, paces itself";
    const SOURCE: &'static str = "Cardwell, Cheng, Gunn, Hassas Yeganeh & Jacobson, \"BBR: Congestion-Based Congestion Control\", ACM Queue 2016; Linux net/ipv4/tcp_bbr.c";
    const DOC: &'static [(&'static str, &'static str)] = &[];
    const LINUX: Option<&'static str> = Some("bbr");
    type Algo = Bbr;
    fn build(&self) -> Bbr {
        Bbr::new()
    }
}

/// Rates in packets per µs, scaled by 2^24 (`BW_SCALE`).
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains scaled by 2^8 (`BBR_SCALE`).
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;
const CYCLE_LEN: u32 = 8;
/// Window of the bandwidth filter, in rounds (`bbr_bw_rtts`).
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the min-RTT filter (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN_NS: u64 = 10_000_000_000;
/// Least time at 4 packets in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_MODE_NS: u64 = 200_000_000;
/// Below this pacing rate (bits/s), bursts of one segment (`bbr_min_tso_rate`).
const MIN_TSO_RATE: u64 = 1_200_000;
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln 2, the smallest gain that doubles the sending rate every round (`bbr_high_gain`).
const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// Its inverse, to drain STARTUP's queue in about one round (`bbr_drain_gain`).
const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
const CWND_GAIN: u64 = BBR_UNIT * 2;
/// The PROBE_BW gain cycle (`bbr_pacing_gain`).
const PACING_GAIN: [u64; CYCLE_LEN as usize] = [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// The cycle starts at a random one of this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
const CWND_MIN_TARGET: u64 = 4;
/// The pipe is full when the bandwidth grew less than 25 % (`bbr_full_bw_thresh`)
/// in 3 rounds (`bbr_full_bw_cnt`).
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
const LT_INTVL_MIN_RTTS: u32 = 4;
/// 50/256: a long-term interval is lossy above about 20 % loss.
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
/// 4 kb/s in bytes per second.
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `TCP_INIT_CWND`.
const INIT_CWND: u64 = 10;
/// The largest burst BBR budgets for (`GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER`).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `sk_pacing_shift`.
const PACING_SHIFT: u32 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The state of `struct bbr`.
#[derive(Clone, Debug)]
pub struct Bbr {
    /// Minimum RTT in the 10 s window, µs (`None`: no sample, Linux's `~0U`).
    min_rtt_us: Option<u64>,
    /// When it was taken.
    min_rtt_stamp: Time,
    /// When PROBE_RTT may end (`None`: not yet at 4 packets).
    probe_rtt_done_stamp: Option<Time>,
    /// Maximum recent delivery rate, packets per µs << 24, over `BW_RTTS` rounds.
    bw: RunningMax,
    /// Packet-timed rounds so far.
    rtt_cnt: u64,
    /// `delivered` at the end of the current round.
    next_rtt_delivered: u64,
    /// Start of the current gain-cycle phase.
    cycle_mstamp: Time,
    pub mode: Mode,
    /// The loss-recovery state on the previous ACK.
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    /// Long-term delivery rate, packets per µs << 24.
    lt_bw: u64,
    lt_last_delivered: u64,
    /// ms.
    lt_last_stamp: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: u32,
    has_seen_rtt: bool,
    /// cwnd before recovery or PROBE_RTT, restored after.
    prior_cwnd: u64,
    /// Bandwidth at the last 25 % growth (full-pipe detection).
    full_bw: u64,
    /// ACK aggregation: the epoch's start, packets (S)ACKed in it, the largest excess
    /// over the expected in two windows of 5 rounds.
    ack_epoch_mstamp: Time,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// `sk_pacing_rate`, bytes per second.
    pacing_rate: u64,
    /// `mss_cache`.
    mss: u64,
    /// The draw of the gain cycle's starting phase (Linux `get_random_u32_below`).
    rng: SimRng,
}

impl Default for Bbr {
    fn default() -> Self {
        Self::new()
    }
}

/// Linux's µs timestamps (`tcp_mstamp`).
fn us(t: Time) -> u64 {
    t.as_nanos() / 1000
}

impl Bbr {
    pub fn new() -> Bbr {
        Bbr {
            min_rtt_us: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            bw: RunningMax::new(0, 0.0),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: Time::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0, 0],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: 0,
            mss: 1460,
            rng: rng::stream(0, "bbr"),
        }
    }

    /// `bbr_max_bw`: the windowed maximum of the bandwidth samples.
    fn max_bw(&self) -> u64 {
        self.bw.get() as u64
    }

    /// `bbr_bw`: the bandwidth estimate, packets per µs << 24 (the long-term rate
    /// while a policer is suspected).
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// The bandwidth estimate in bits per second at `mss` payload bytes a packet.
    pub fn bw_bps(&self) -> f64 {
        self.bw() as f64 * self.mss as f64 * 8.0 * 1e6 / BW_UNIT as f64
    }

    /// The min RTT estimate, µs.
    pub fn min_rtt_us(&self) -> Option<u64> {
        self.min_rtt_us
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain as f64 / BBR_UNIT as f64
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: a rate in packets per µs << 24, times a gain, in
    /// bytes per second, 1 % below.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64) -> u64 {
        let mut r = rate as u128 * self.mss as u128;
        r *= gain as u128;
        r >>= BBR_SCALE;
        r *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (r >> BW_SCALE) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain x cwnd / srtt (srtt 1 ms without
    /// a sample).
    fn init_pacing_rate_from_rtt(&mut self, w: &Window, c: &Conn) {
        let rtt_us = match c.srtt {
            Some(r) => {
                self.has_seen_rtt = true;
                // Linux: srtt_us >> 3, at least 1
                (r.as_nanos() / 1000).max(1)
            }
            None => 1000,
        };
        let bw = (w.cwnd as u64) * BW_UNIT / rtt_us;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: pace at gain x bw; in STARTUP never lower the rate.
    fn set_pacing_rate(&mut self, w: &Window, c: &Conn, bw: u64, gain: u64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && c.srtt.is_some() {
            self.init_pacing_rate_from_rtt(w, c);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs`.
    fn min_tso(&self) -> u64 {
        if self.pacing_rate < MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: the segments of a burst at the pacing rate.
    fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(TSO_MAX_BYTES);
        (bytes / self.mss.max(1)).max(self.min_tso()).min(0x7f)
    }

    /// `bbr_save_cwnd`: the last good cwnd, restored after recovery or PROBE_RTT.
    fn save_cwnd(&mut self, w: &Window) {
        let cwnd = w.cwnd as u64;
        if !at_least_recovery(self.prev_ca_state) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw x min_rtt x gain) packets (the initial window before an
    /// RTT sample).
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt_us else {
            return INIT_CWND;
        };
        let w = bw as u128 * min_rtt as u128;
        (((w * gain as u128) >> BBR_SCALE) as u64).div_ceil(BW_UNIT)
    }

    /// `bbr_quantization_budget`: three bursts more, rounded up to even, and 2 more
    /// in the probing phase so that it gets above the BDP on small paths.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: the in-flight target at a gain.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next
    /// burst leaves at its departure time.
    fn packets_in_net_at_edt(&self, c: &Conn, inflight_now: u64) -> u64 {
        let edt = c.wstamp.max(c.now);
        let interval_us = edt.saturating_since(c.now).as_nanos() / 1000;
        let interval_delivered = ((self.bw() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += self.tso_segs_goal();
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`: cwnd for the ACK aggregation seen, at most 100 ms
    /// of the bandwidth.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN > 0 && self.full_bw_reached {
            let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
            ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
        } else {
            0
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round
    /// of recovery, the saved cwnd back when it ends. Returns (conserving, cwnd).
    fn set_cwnd_to_recover_or_restore(&mut self, rs: &RateSample, c: &Conn, cwnd: u64, acked: u64) -> (bool, u64) {
        let prev_state = self.prev_ca_state;
        let state = c.ca_state;
        let mut cwnd = cwnd;
        // an ACK of P packets releases at most 2P: first take off what was lost
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // the first round of recovery: packet conservation, from a round that
            // starts now, with the cwnd the application or bursts left unused cut
            self.packet_conservation = true;
            self.next_rtt_delivered = c.delivered;
            cwnd = c.in_flight + acked;
        } else if at_least_recovery(prev_state) && !at_least_recovery(state) {
            // leaving recovery: the cwnd saved on entering it
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (true, cwnd.max(c.in_flight + acked));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd`: slow-start toward the target (gain x BDP + aggregation +
    /// budget) from below, cut to it from above once the pipe is full; 4 packets in
    /// PROBE_RTT.
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, c: &Conn, acked: u64, bw: u64, gain: u64) {
        let mut cwnd = w.cwnd as u64;
        if acked > 0 {
            let (conserving, next) = self.set_cwnd_to_recover_or_restore(rs, c, cwnd, acked);
            cwnd = next;
            if !conserving {
                let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || c.delivered < INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        w.cwnd = cwnd as f64;
    }

    /// `bbr_is_next_cycle_phase`: a phase lasts a min RTT; the probing phase longer,
    /// until it has put gain x BDP in flight (or lost packets); the draining phase
    /// shorter, once in flight is down to the BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample, c: &Conn) -> bool {
        let is_full_length = us(c.delivered_mstamp).saturating_sub(us(self.cycle_mstamp)) > self.min_rtt_us.unwrap_or(u64::MAX >> 1);
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(c, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, c: &Conn) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = c.delivered_mstamp;
    }

    /// `bbr_reset_probe_bw_mode`: PROBE_BW from a random phase: index 7 - rand(7)
    /// then advanced, so any phase but the draining 3/4.
    fn reset_probe_bw_mode(&mut self, c: &Conn) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - rng::below(&mut self.rng, CYCLE_RAND) as u32;
        self.advance_cycle_phase(c);
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, c: &Conn) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(c);
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, c: &Conn) {
        self.lt_last_stamp = us(c.delivered_mstamp) / 1000;
        self.lt_last_delivered = c.delivered;
        self.lt_last_lost = c.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, c: &Conn) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(c);
    }

    /// `bbr_lt_bw_interval_done`: a second interval of about the same rate means a
    /// policer: use the average of the two.
    fn lt_bw_interval_done(&mut self, c: &Conn, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(c);
    }

    /// `bbr_lt_bw_sampling`: token-bucket policer detection, from the first loss on.
    fn lt_bw_sampling(&mut self, rs: &RateSample, c: &Conn) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(c);
                    self.reset_probe_bw_mode(c);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(c);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(c);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(c);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = c.lost.saturating_sub(self.lt_last_lost);
        let delivered = c.delivered.saturating_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t_ms = (us(c.delivered_mstamp) / 1000) as i64 - self.lt_last_stamp as i64;
        if t_ms < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t_ms as u64 * 1000);
        self.lt_bw_interval_done(c, bw);
    }

    /// `bbr_update_bw`: count rounds; fold the sample into the max filter.
    fn update_bw(&mut self, rs: &RateSample, c: &Conn) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        let interval_us = interval.as_nanos() / 1000;
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = c.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs, c);
        let bw = delivered * BW_UNIT / interval_us;
        // an application-limited sample only when it raises the estimate
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw as f64);
        }
    }

    /// `bbr_update_ack_aggregation`: the packets acked beyond what the bandwidth
    /// explains since the epoch started, the largest in the window.
    fn update_ack_aggregation(&mut self, rs: &RateSample, c: &Conn, w: &Window) {
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval.is_none_or(|i| i.as_nanos() < 1000) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us(c.delivered_mstamp).saturating_sub(us(self.ack_epoch_mstamp));
        let mut expected = self.bw() * epoch_us / BW_UNIT;
        // a new epoch when ACKs come slower than expected, or after very many
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = c.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(w.cwnd as u64);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_full_bw_reached`: 3 rounds without 25 % growth fill the pipe.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP ends in DRAIN, which ends when what will be in the
    /// network at the next departure is down to one BDP.
    fn check_drain(&mut self, w: &mut Window, c: &Conn) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT) as f64;
        }
        if self.mode == Mode::Drain && self.packets_in_net_at_edt(c, c.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT) {
            self.reset_probe_bw_mode(c);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, w: &mut Window, c: &Conn) {
        match self.probe_rtt_done_stamp {
            Some(done) if c.now > done => {}
            _ => return,
        }
        // wait a while before the next PROBE_RTT
        self.min_rtt_stamp = c.now;
        w.cwnd = w.cwnd.max(self.prior_cwnd as f64);
        self.reset_mode(c);
    }

    /// `bbr_update_min_rtt`: the 10 s min filter, and PROBE_RTT when it expires.
    fn update_min_rtt(&mut self, w: &mut Window, rs: &RateSample, c: &mut Conn) {
        let filter_expired = c.now.as_nanos() > self.min_rtt_stamp.as_nanos() + MIN_RTT_WIN_NS;
        if let Some(rtt) = rs.rtt {
            let rtt_us = rtt.as_nanos() / 1000;
            if self.min_rtt_us.is_none_or(|m| rtt_us <= m) || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = Some(rtt_us);
                self.min_rtt_stamp = c.now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // the low-rate samples of this mode do not lower the estimate
            c.app_limited = (c.delivered + c.in_flight).max(1);
            // at most 4 packets in flight for max(200 ms, one round)
            if self.probe_rtt_done_stamp.is_none() && c.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(c.now + aqm::Duration::from_nanos(PROBE_RTT_MODE_NS));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = c.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, c);
                }
            }
        }
        // the restart after idle ends with the first ACK of new data
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx as usize] }, CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

/// Linux's `state >= TCP_CA_Recovery` (Recovery or Loss).
fn at_least_recovery(s: CaState) -> bool {
    matches!(s, CaState::Recovery | CaState::Loss)
}

impl CongestionControl for Bbr {
    fn on_ack(&mut self, _w: &mut Window, _s: &AckSample) {
        // no cong_avoid: cong_control sets cwnd on every ACK
    }

    /// `bbr_ssthresh`: entering recovery (or CWR) saves cwnd; ssthresh stays.
    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        self.save_cwnd(w);
        w.ssthresh
    }

    /// `bbr_undo_cwnd`: a reduction found spurious restarts the full-pipe detection
    /// and the policer detection; cwnd stays as BBR set it.
    fn undo_cwnd(&mut self, w: &Window, _prior_cwnd: f64, c: &Conn) -> f64 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(c);
        w.cwnd
    }

    /// `bbr_set_state(TCP_CA_Loss)`: a timeout ends a round and restarts the
    /// full-pipe detection; it counts as a loss for the policer detection.
    fn on_enter_loss(&mut self, c: &Conn) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        let rs = RateSample { losses: 1, ..RateSample::default() };
        self.lt_bw_sampling(&rs, c);
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)`: restarting from idle while
    /// application-limited: pace at the estimate in PROBE_BW, or end PROBE_RTT.
    fn on_tx_start(&mut self, w: &mut Window, c: &Conn) {
        if c.app_limited == 0 {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = c.now;
        self.ack_epoch_acked = 0;
        match self.mode {
            Mode::ProbeBw => {
                let bw = self.bw();
                self.set_pacing_rate(w, c, bw, BBR_UNIT);
            }
            Mode::ProbeRtt => self.check_probe_rtt_done(w, c),
            _ => {}
        }
    }

    fn controls_cwnd(&self) -> bool {
        true
    }

    /// `bbr_main`: update the model (`bbr_update_model`), then set the pacing rate
    /// and cwnd from it.
    fn cong_control(&mut self, w: &mut Window, rs: &RateSample, c: &mut Conn) {
        self.mss = c.mss as u64;
        self.update_bw(rs, c);
        self.update_ack_aggregation(rs, c, w);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, c) {
            self.advance_cycle_phase(c);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(w, c);
        self.update_min_rtt(w, rs, c);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(w, c, bw, self.pacing_gain);
        self.set_cwnd(w, rs, c, rs.acked_sacked, bw, self.cwnd_gain);
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }

    fn min_tso_segs(&self) -> Option<u32> {
        Some(self.min_tso() as u32)
    }

    /// `bbr_init`.
    fn on_init(&mut self, w: &mut Window, c: &Conn) {
        self.mss = c.mss as u64;
        self.prior_cwnd = 0;
        w.ssthresh = INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = c.min_rtt.map(|d| d.as_nanos() / 1000);
        self.min_rtt_stamp = c.now;
        self.bw.reset(0, 0.0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(w, c);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = Time::ZERO;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(c);
        self.mode = Mode::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
        self.ack_epoch_mstamp = c.now;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0, 0];
    }

    fn set_rng(&mut self, rng: SimRng) {
        self.rng = rng;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::Duration;

    fn conn(now_ms: u64, delivered: u64, in_flight: u64) -> Conn {
        let now = Time::from_millis(now_ms);
        Conn {
            now,
            mss: 1448,
            srtt: Some(Duration::from_millis(40)),
            min_rtt: Some(Duration::from_millis(40)),
            in_flight,
            delivered,
            lost: 0,
            delivered_mstamp: now,
            app_limited: 0,
            ca_state: CaState::Open,
            wstamp: now,
            ..Conn::default()
        }
    }

    /// A sample of `delivered` packets over `interval_ms`, sent when `prior` had been
    /// delivered, acking `acked` packets, with an RTT of 40 ms.
    fn rs(delivered: u64, interval_ms: u64, prior: u64, acked: u64) -> RateSample {
        RateSample {
            delivered: Some(delivered),
            interval: Some(Duration::from_millis(interval_ms)),
            prior_delivered: prior,
            prior_mstamp: Some(Time::ZERO),
            acked_sacked: acked,
            rtt: Some(Duration::from_millis(40)),
            ..RateSample::default()
        }
    }

    fn started() -> (Bbr, Window) {
        let mut b = Bbr::new();
        let mut w = Window::new(10.0, INFINITE_SSTHRESH);
        b.on_init(&mut w, &conn(0, 0, 0));
        (b, w)
    }

    /// 1 packet per ms, in BBR's unit.
    const PKT_PER_MS: u64 = BW_UNIT / 1000;

    #[test]
    fn undo_keeps_cwnd_and_restarts_full_pipe_and_policer_detection() {
        // bbr_undo_cwnd: full_bw and its count reset, long-term sampling restarts from
        // the connection's counters now, cwnd is returned as it is (not prior_cwnd)
        let (mut b, mut w) = started();
        w.cwnd = 37.0;
        b.full_bw = 5 * PKT_PER_MS;
        b.full_bw_cnt = 2;
        b.lt_use_bw = true;
        b.lt_bw = 3 * PKT_PER_MS;
        let c = Conn { lost: 4, ..conn(1000, 500, 20) };
        assert_eq!(b.undo_cwnd(&w, 80.0, &c), 37.0);
        assert_eq!((b.full_bw, b.full_bw_cnt), (0, 0));
        assert!(!b.lt_use_bw && !b.lt_is_sampling);
        assert_eq!((b.lt_bw, b.lt_last_delivered, b.lt_last_lost), (0, 500, 4));
    }

    #[test]
    fn fixed_point_constants_and_rates_are_linux_s() {
        assert_eq!((HIGH_GAIN, DRAIN_GAIN, CWND_GAIN), (739, 88, 512));
        let (mut b, _) = started();
        // 1 packet of 1448 B per ms = 1,448,000 B/s, less 1 %: 1,433,520, in Linux's
        // order of operations (x mss, x gain >> 8, x 990000 >> 24): 1,433,501
        assert_eq!(b.rate_bytes_per_sec(PKT_PER_MS, BBR_UNIT), 1_433_501);
        // BDP at 1 packet/ms and 40 ms: 40 packets; at gain 2, 80 (rounded up)
        b.min_rtt_us = Some(40_000);
        assert_eq!(b.bdp(PKT_PER_MS, BBR_UNIT), 40);
        assert_eq!(b.bdp(PKT_PER_MS, CWND_GAIN), 80);
        // below 150 kB/s bursts of 1, else of 2 (1.43 MB/s >> 10 = 1400 B < 1 MSS)
        b.pacing_rate = 100_000;
        assert_eq!(b.tso_segs_goal(), 1);
        b.pacing_rate = 1_433_501;
        assert_eq!(b.tso_segs_goal(), 2);
        // budget: + 3 bursts of 2, rounded up to even; +2 more in the probing phase
        assert_eq!(b.inflight(PKT_PER_MS, CWND_GAIN), 86);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 0;
        assert_eq!(b.inflight(PKT_PER_MS, CWND_GAIN), 88);
        // no RTT sample yet: the initial window
        b.min_rtt_us = None;
        assert_eq!(b.bdp(PKT_PER_MS, CWND_GAIN), INIT_CWND);
    }

    #[test]
    fn the_initial_pacing_rate_is_high_gain_times_cwnd_over_srtt() {
        let (b, _) = started();
        // 10 packets per 40 ms = 0.25 packets per ms, x 2.89 x 1448 B x 0.99
        let bw = 10 * BW_UNIT / 40_000;
        assert_eq!(b.pacing_rate, b.rate_bytes_per_sec(bw, HIGH_GAIN));
        assert!((b.pacing_rate as f64 - 0.25e3 * 2.887 * 1448.0 * 0.99).abs() < 0.01 * b.pacing_rate as f64, "{}", b.pacing_rate);
        // without an RTT: a nominal 1 ms
        let mut b = Bbr::new();
        let mut w = Window::new(10.0, INFINITE_SSTHRESH);
        b.on_init(&mut w, &Conn { srtt: None, min_rtt: None, ..conn(0, 0, 0) });
        assert_eq!(b.pacing_rate, b.rate_bytes_per_sec(10 * BW_UNIT / 1000, HIGH_GAIN));
        assert!(!b.has_seen_rtt);
    }

    #[test]
    fn startup_ends_after_three_rounds_without_growth_then_drains_into_probe_bw() {
        let (mut b, mut w) = started();
        // rounds of 40 ms: 10, 20, 40, then the path is full at 50 packets a round
        let mut delivered = 0;
        let mut t = 0;
        let per_round = [10u64, 20, 40, 50, 50, 50];
        let mut modes = Vec::new();
        for &n in &per_round {
            let prior = delivered;
            t += 40;
            delivered += n;
            let mut c = conn(t, delivered, 2 * n);
            b.cong_control(&mut w, &rs(n, 40, prior, n), &mut c);
            assert!(b.round_start);
            modes.push((b.mode, b.full_bw_cnt));
        }
        // growth of 100 %, 100 %, 25 % resets the count; then 0 % three times
        assert_eq!(modes[..5].iter().map(|m| m.0).collect::<Vec<_>>(), vec![Mode::Startup; 5]);
        assert_eq!(modes.iter().map(|m| m.1).collect::<Vec<_>>(), vec![0, 0, 0, 0, 1, 2]);
        let mut c = conn(t + 40, delivered + 50, 100);
        b.cong_control(&mut w, &rs(50, 40, delivered, 50), &mut c);
        assert!(b.full_bw_reached);
        // in flight 100 is above one BDP (50 + budget 6): DRAIN at 1/2.89, cwnd gain kept
        assert_eq!(b.mode, Mode::Drain);
        assert_eq!((b.pacing_gain, b.cwnd_gain), (DRAIN_GAIN, HIGH_GAIN));
        assert_eq!(b.max_bw(), 50 * BW_UNIT / 40_000);
        // ssthresh = one BDP (50) + 3 bursts, rounded up to even, the bursts at the
        // rate of the time, STARTUP's 2.89 x 1.25 packets/ms = 5.2 MB/s: bursts of 3
        // (5 kB a ms); at DRAIN's rate now, bursts of 2
        assert_eq!(w.ssthresh, 60.0);
        assert_eq!(b.tso_segs_goal(), 2);
        delivered += 50;
        // once in flight falls to the BDP: PROBE_BW, at a phase other than 3/4
        let mut c = conn(t + 80, delivered + 50, 56);
        b.cong_control(&mut w, &rs(50, 40, delivered, 50), &mut c);
        assert_eq!(b.mode, Mode::ProbeBw);
        assert_ne!(b.cycle_idx, 1);
        assert_eq!(b.cwnd_gain, CWND_GAIN);
        assert_eq!(b.pacing_gain, PACING_GAIN[b.cycle_idx as usize]);
    }

    #[test]
    fn application_limited_samples_neither_lower_the_estimate_nor_fill_the_pipe() {
        let (mut b, mut w) = started();
        b.cong_control(&mut w, &rs(40, 40, 0, 10), &mut conn(40, 40, 10));
        assert_eq!(b.max_bw(), PKT_PER_MS);
        // app-limited and slower: ignored; app-limited and faster: taken
        let mut r = rs(20, 40, 40, 10);
        r.is_app_limited = true;
        b.cong_control(&mut w, &r, &mut conn(80, 60, 10));
        assert_eq!(b.max_bw(), PKT_PER_MS);
        let mut r = rs(80, 40, 60, 10);
        r.is_app_limited = true;
        b.cong_control(&mut w, &r, &mut conn(120, 140, 10));
        assert_eq!(b.max_bw(), 2 * PKT_PER_MS);
        // and rounds of app-limited samples never count toward a full pipe
        for k in 0..5 {
            let mut r = rs(80, 40, 140 + 80 * k, 10);
            r.is_app_limited = true;
            b.cong_control(&mut w, &r, &mut conn(160 + 40 * k, 220 + 80 * k, 10));
        }
        assert!(!b.full_bw_reached && b.mode == Mode::Startup);
    }

    #[test]
    fn the_bandwidth_filter_forgets_a_peak_after_ten_rounds() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        let mut delivered = 0;
        // one round at 2 packets/ms, then rounds at 1 packet/ms
        for k in 0..14u64 {
            let n = if k == 0 { 80 } else { 40 };
            let prior = delivered;
            delivered += n;
            b.cong_control(&mut w, &rs(n, 40, prior, n), &mut conn(40 * (k + 1), delivered, 40));
            let want = if b.rtt_cnt <= 1 + BW_RTTS { 2 * PKT_PER_MS } else { PKT_PER_MS };
            assert_eq!(b.max_bw(), want, "round {}", b.rtt_cnt);
        }
    }

    #[test]
    fn probe_bw_cycles_five_fourths_three_fourths_then_six_phases_of_one() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.full_bw = PKT_PER_MS;
        b.bw.reset(0, PKT_PER_MS as f64);
        b.min_rtt_us = Some(40_000);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 7;
        b.cycle_mstamp = Time::ZERO;
        let mut seen = Vec::new();
        let mut delivered = 1000;
        // one ACK every 41 ms (just over a min RTT), in flight at the BDP + 10, with
        // losses so that the 5/4 phase ends on time
        for k in 1..=9u64 {
            let prior = delivered;
            delivered += 41;
            let mut r = rs(41, 41, prior, 41);
            r.losses = 1;
            r.prior_in_flight = 50;
            let mut c = conn(41 * k, delivered, 50);
            c.lost = k;
            b.cong_control(&mut w, &r, &mut c);
            seen.push(b.pacing_gain);
        }
        let u = BBR_UNIT;
        assert_eq!(seen, vec![u * 5 / 4, u * 3 / 4, u, u, u, u, u, u, u * 5 / 4]);
    }

    #[test]
    fn the_draining_phase_ends_early_once_in_flight_is_down_to_the_bdp() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.bw.reset(0, PKT_PER_MS as f64);
        b.min_rtt_us = Some(40_000);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 1;
        b.pacing_gain = BBR_UNIT * 3 / 4;
        b.cycle_mstamp = Time::from_millis(100);
        // 10 ms into the phase, in flight 60 > BDP 40 + 6: stays
        let mut r = rs(10, 40, 0, 10);
        r.prior_in_flight = 60;
        b.cong_control(&mut w, &r, &mut conn(110, 500, 60));
        assert_eq!(b.cycle_idx, 1);
        // in flight 46 = one BDP with its budget: next phase
        r.prior_in_flight = 46;
        b.cong_control(&mut w, &r, &mut conn(120, 510, 46));
        assert_eq!(b.cycle_idx, 2);
    }

    #[test]
    fn probe_rtt_after_ten_seconds_holds_four_packets_for_200_ms_and_a_round() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.bw.reset(0, PKT_PER_MS as f64);
        w.cwnd = 100.0;
        // a larger RTT 10.001 s after the min: the filter expired
        let mut r = rs(40, 40, 960, 2);
        r.rtt = Some(Duration::from_millis(50));
        let mut c = conn(10_001, 1000, 100);
        b.cong_control(&mut w, &r, &mut c);
        assert_eq!(b.mode, Mode::ProbeRtt);
        assert_eq!(w.cwnd, 4.0);
        assert_eq!(b.prior_cwnd, 100);
        assert_eq!(b.min_rtt_us, Some(50_000), "an expired filter takes the new sample");
        assert_eq!(c.app_limited, 1100, "PROBE_RTT marks its samples application-limited");
        // in flight falls to 4 at 10.1 s: 200 ms from there, and a round
        let mut c = conn(10_100, 1100, 4);
        b.cong_control(&mut w, &rs(4, 40, 1096, 4), &mut c);
        assert_eq!(b.probe_rtt_done_stamp, Some(Time::from_millis(10_300)));
        // a round later but before 200 ms: still probing
        let mut c = conn(10_200, 1110, 4);
        b.cong_control(&mut w, &rs(4, 40, 1100, 4), &mut c);
        assert!(b.probe_rtt_round_done);
        assert_eq!((b.mode, w.cwnd), (Mode::ProbeRtt, 4.0));
        // past 200 ms: back to PROBE_BW with the saved cwnd, then the target
        let mut c = conn(10_301, 1120, 4);
        b.cong_control(&mut w, &rs(4, 40, 1105, 4), &mut c);
        assert_eq!(b.mode, Mode::ProbeBw);
        assert_eq!(b.min_rtt_stamp, Time::from_millis(10_301));
        let target = b.quantization_budget(b.bdp(b.bw(), CWND_GAIN) + b.ack_aggregation_cwnd());
        assert!(target < 100);
        assert_eq!(w.cwnd as u64, target, "100 restored, then cut to 2 BDP + aggregation + budget");
    }

    #[test]
    fn probe_rtt_never_starts_during_an_idle_restart() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        let c = Conn { app_limited: 5, ..conn(10_001, 1000, 0) };
        b.on_tx_start(&mut w, &c);
        assert!(b.idle_restart);
        // the filter has expired, but an ACK that delivers nothing new keeps the
        // restart: no PROBE_RTT
        b.cong_control(&mut w, &RateSample::default(), &mut conn(10_002, 1000, 1));
        assert_eq!(b.mode, Mode::ProbeBw);
        // the first that delivers new data ends the restart (after the check) ...
        let no_rtt = RateSample { rtt: None, ..rs(1, 40, 999, 1) };
        b.cong_control(&mut w, &no_rtt, &mut conn(10_003, 1001, 1));
        assert!(!b.idle_restart);
        assert_eq!(b.mode, Mode::ProbeBw);
        // ... and the next starts PROBE_RTT
        let no_rtt = RateSample { rtt: None, ..rs(1, 40, 1000, 1) };
        b.cong_control(&mut w, &no_rtt, &mut conn(10_004, 1002, 1));
        assert_eq!(b.mode, Mode::ProbeRtt);
    }

    #[test]
    fn recovery_conserves_packets_in_its_first_round_and_restores_cwnd_after() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 3;
        b.bw.reset(0, PKT_PER_MS as f64);
        b.min_rtt_us = Some(40_000);
        w.cwnd = 60.0;
        b.on_congestion(&w, Time::ZERO);
        assert_eq!(b.prior_cwnd, 60);
        // the first ACK in recovery: 3 lost, 2 delivered, 40 in flight: cwnd 42
        let mut c = Conn { ca_state: CaState::Recovery, ..conn(100, 500, 40) };
        let mut r = rs(2, 40, 480, 2);
        r.losses = 3;
        b.cong_control(&mut w, &r, &mut c);
        assert_eq!(w.cwnd, 42.0, "in flight + acked");
        assert!(b.packet_conservation);
        // still in the first round: cwnd never below in flight + acked
        let mut c = Conn { ca_state: CaState::Recovery, ..conn(110, 502, 44) };
        b.cong_control(&mut w, &rs(2, 40, 481, 2), &mut c);
        assert_eq!(w.cwnd, 46.0);
        // a round later (prior_delivered past the round's end): slow start toward the
        // target, 2 per ACK of 1 here only after losses are taken off
        let mut c = Conn { ca_state: CaState::Recovery, ..conn(150, 504, 40) };
        b.cong_control(&mut w, &rs(2, 40, 500, 2), &mut c);
        assert!(!b.packet_conservation);
        assert_eq!(w.cwnd, 48.0);
        // recovery over: the cwnd from before it (60), within the target (86)
        let mut c = conn(200, 506, 30);
        b.cong_control(&mut w, &rs(2, 40, 502, 2), &mut c);
        assert_eq!(w.cwnd, 62.0, "max(48, 60) + 2 acked, below the target");
    }

    #[test]
    fn a_timeout_restarts_the_full_pipe_detection() {
        let (mut b, _) = started();
        b.full_bw = 1234;
        b.on_enter_loss(&conn(100, 10, 0));
        assert_eq!((b.full_bw, b.round_start, b.prev_ca_state), (0, true, CaState::Loss));
    }

    #[test]
    fn a_policer_s_rate_is_found_from_two_lossy_intervals_of_the_same_rate() {
        let (mut b, mut w) = started();
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.min_rtt_us = Some(40_000);
        b.bw.reset(0, (2 * PKT_PER_MS) as f64);
        // 1 packet per ms delivered, 25 % of it lost, rounds of 40 ms
        let mut delivered = 100;
        let mut lost = 0;
        let mut t = 0;
        let mut used_at = None;
        for round in 1..=12u64 {
            let prior = delivered;
            t += 40;
            delivered += 40;
            lost += 10;
            let mut r = rs(40, 40, prior, 40);
            r.losses = 10;
            let mut c = conn(t, delivered, 40);
            c.lost = lost;
            b.cong_control(&mut w, &r, &mut c);
            if b.lt_use_bw && used_at.is_none() {
                used_at = Some(round);
            }
        }
        // sampling starts at the first loss (round 1); an interval takes 4 rounds with
        // over 50/256 of loss (rounds 1-4: 30 lost of 120 delivered, rounds 4-8: 40
        // of 160); the second at the same rate is the verdict
        assert_eq!(used_at, Some(8));
        assert_eq!(b.bw(), b.lt_bw);
        assert_eq!(b.lt_bw, PKT_PER_MS, "120 packets in 120 ms, then 160 in 160 ms");
        assert_eq!(b.pacing_gain, BBR_UNIT, "no probing while policed");
    }

    #[test]
    fn the_cycle_starts_at_a_random_phase_other_than_drain() {
        let mut seen = [0u32; 8];
        let mut b = Bbr::new();
        b.set_rng(rng::stream(7, "test"));
        for _ in 0..700 {
            b.reset_probe_bw_mode(&conn(0, 0, 0));
            seen[b.cycle_idx as usize] += 1;
        }
        // 7 - rand(7) is 1..7, advanced: 2..7 or 0, never 1 (the 3/4 phase)
        assert_eq!(seen[1], 0);
        assert!(seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 50), "{seen:?}");
    }
}
