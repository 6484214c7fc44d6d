//! Round-trip time estimation and the retransmission timer: Linux's
//! `tcp_rtt_estimator` and `__tcp_set_rto` (the default), or Paxson, Allman, Chu &
//! Sargent, RFC 6298, with Linux's 200 ms minimum in place of the RFC's 1 s.

use aqm::Duration;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RtoStyle {
    /// RFC 6298 §2: RTO = SRTT + max(G, 4 RTTVAR), then at least `rto_min`.
    Rfc6298,
    /// Linux `tcp_rtt_estimator` and `__tcp_set_rto`: RTO = SRTT + RTTVAR, where
    /// RTTVAR (4 mean deviations, as the RFC's 4 RTTVAR) is the largest deviation seen
    /// in the last round trip, never below `rto_min`, and decays toward it by a
    /// quarter per round; a sample below SRTT moves the deviation with gain 1/32
    /// instead of 1/4 (Linux's variant of Eifel's rule); in whole clock ticks.
    #[default]
    Linux,
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    style: RtoStyle,
    rto_min: Duration,
    rto_max: Duration,
    /// Clock granularity: RFC 6298's G (1 ms), and Linux's tick, to which its RTO is
    /// rounded up (1/HZ).
    granularity: Duration,
    /// Linux: 8 SRTT, 4 mean deviations (`mdev_us`), the largest 4 mdev of the round
    /// (`mdev_max_us`), 4 RTTVAR (`rttvar_us`), in ns; `rtt_seq`, the segment whose
    /// ACK ends the round. RFC 6298: SRTT and RTTVAR (in `srtt8`/8 and `rttvar4`/4).
    srtt8: u64,
    mdev4: u64,
    mdev_max4: u64,
    rttvar4: u64,
    rtt_seq: u64,
    has_sample: bool,
    min_rtt: Option<Duration>,
    rto: Duration,
    /// Number of back-offs since the last valid RTT sample (RFC 6298 §5.5).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(style: RtoStyle, initial: Duration, rto_min: Duration, rto_max: Duration) -> Self {
        RttEstimator {
            style,
            rto_min,
            rto_max,
            granularity: Duration::from_millis(1),
            srtt8: 0,
            mdev4: 0,
            mdev_max4: 0,
            rttvar4: 0,
            rtt_seq: 0,
            has_sample: false,
            min_rtt: None,
            rto: initial,
            backoff: 0,
        }
    }

    /// Linux's clock tick (1/HZ), to which its RTO is rounded up.
    pub fn with_tick(mut self, tick: Duration) -> Self {
        if !tick.is_zero() {
            self.granularity = tick;
        }
        self
    }

    /// Fold in a measurement `r`, taken on an ACK that leaves `snd_una` the oldest
    /// unacknowledged segment with `snd_nxt` the next to send (Linux counts its
    /// rounds by them).
    pub fn sample(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        let m = r.as_nanos().max(1);
        match self.style {
            RtoStyle::Rfc6298 => {
                if !self.has_sample {
                    // §2.2: SRTT <- R, RTTVAR <- R/2
                    self.srtt8 = 8 * m;
                    self.rttvar4 = 2 * m;
                } else {
                    // §2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'
                    let srtt = self.srtt8 / 8;
                    let err = srtt.abs_diff(m);
                    let rttvar = (3 * (self.rttvar4 / 4) + err) / 4;
                    self.rttvar4 = 4 * rttvar;
                    self.srtt8 = 8 * ((7 * srtt + m) / 8);
                }
            }
            RtoStyle::Linux => self.linux_estimator(m as i64, snd_una, snd_nxt),
        }
        self.has_sample = true;
        self.min_rtt = Some(self.min_rtt.map_or(r, |x| x.min(r)));
        self.backoff = 0;
        self.rto = self.computed_rto();
    }

    /// Linux `tcp_rtt_estimator` (Jacobson, SIGCOMM '88, with Linux's changes), on
    /// the same scaled values: 8 SRTT, 4 mdev.
    fn linux_estimator(&mut self, mrtt: i64, snd_una: u64, snd_nxt: u64) {
        let rto_min = self.rto_min.as_nanos();
        let mut m = mrtt;
        if self.has_sample {
            m -= (self.srtt8 >> 3) as i64; // the error
            self.srtt8 = (self.srtt8 as i64 + m).max(1) as u64; // SRTT += error / 8
            if m < 0 {
                // a sample below SRTT: |error| - mdev, and if that is positive,
                // only an eighth of it (gain 1/32 instead of 1/4)
                m = -m - (self.mdev4 >> 2) as i64;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (self.mdev4 >> 2) as i64;
            }
            self.mdev4 = (self.mdev4 as i64 + m).max(0) as u64; // mdev = 3/4 mdev + 1/4 |error|
            if self.mdev4 > self.mdev_max4 {
                self.mdev_max4 = self.mdev4;
                self.rttvar4 = self.rttvar4.max(self.mdev_max4);
            }
            if snd_una > self.rtt_seq {
                // a round trip has passed: RTTVAR decays a quarter of the way toward
                // the round's largest deviation, which restarts at rto_min
                if self.mdev_max4 < self.rttvar4 {
                    self.rttvar4 -= (self.rttvar4 - self.mdev_max4) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max4 = rto_min;
            }
        } else {
            // the first measurement: SRTT = R, 4 mdev = 2 R (RTO = 3 R), RTTVAR at
            // least rto_min
            self.srtt8 = (mrtt as u64) << 3;
            self.mdev4 = (mrtt as u64) << 1;
            self.rttvar4 = self.mdev4.max(rto_min);
            self.mdev_max4 = self.rttvar4;
            self.rtt_seq = snd_nxt;
        }
    }

    fn computed_rto(&self) -> Duration {
        let srtt = self.srtt8 / 8;
        let rto = match self.style {
            // RFC 6298 (2.4): SRTT + max(G, 4 RTTVAR), then (2.4) at least the minimum
            RtoStyle::Rfc6298 => Duration::from_nanos(srtt + self.rttvar4.max(self.granularity.as_nanos())).max(self.rto_min),
            // Linux __tcp_set_rto: SRTT + RTTVAR, in whole ticks (usecs_to_jiffies)
            RtoStyle::Linux => {
                let g = self.granularity.as_nanos().max(1);
                Duration::from_nanos((srtt + self.rttvar4).div_ceil(g) * g)
            }
        };
        rto.min(self.rto_max)
    }

    /// RFC 6298 §5.5: double the RTO on expiry, up to the maximum.
    pub fn back_off(&mut self) {
        self.backoff += 1;
        self.rto = self.rto.checked_mul(2).unwrap_or(self.rto_max).min(self.rto_max);
    }

    /// RFC 6298 §5.7: after a timed-out SYN, data starts with an RTO of 3 s unless
    /// an RTT sample has been taken since.
    pub fn at_least(&mut self, d: Duration) {
        if !self.has_sample {
            self.rto = self.rto.max(d);
        }
    }

    pub fn rto(&self) -> Duration {
        self.rto
    }
    /// The RTO without back-off (Linux `icsk_rto` after the last sample).
    pub fn base_rto(&self) -> Duration {
        if self.has_sample {
            self.computed_rto()
        } else {
            self.rto
        }
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.has_sample.then(|| Duration::from_nanos(self.srtt8 / 8))
    }
    /// RTTVAR (RFC 6298), or Linux's mean deviation (`tcpi_rttvar`).
    pub fn rttvar(&self) -> Duration {
        match self.style {
            RtoStyle::Rfc6298 => Duration::from_nanos(self.rttvar4 / 4),
            RtoStyle::Linux => Duration::from_nanos(self.mdev4 / 4),
        }
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn backoffs(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(style: RtoStyle) -> RttEstimator {
        RttEstimator::new(style, Duration::from_secs(1), Duration::from_millis(200), Duration::from_secs(120))
    }

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn first_and_second_samples_follow_rfc6298() {
        let mut e = est(RtoStyle::Rfc6298);
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(ms(100), 1, 10);
        // SRTT 100, RTTVAR 50 -> RTO = 100 + 200 = 300 ms
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rto(), ms(300));
        e.sample(ms(180), 2, 10);
        // RTTVAR = 3/4*50 + 1/4*80 = 57.5; SRTT = 7/8*100 + 1/8*180 = 110; RTO = 110 + 230 = 340
        assert_eq!(e.rttvar(), Duration::from_micros(57_500));
        assert_eq!(e.srtt(), Some(ms(110)));
        assert_eq!(e.rto(), ms(340));
    }

    #[test]
    fn linux_estimator_by_hand() {
        // 1 ms ticks. First sample 100 ms: SRTT 100, 4 mdev 200 -> RTTVAR max(200,
        // 200) = 200: RTO 300 ms (3 R).
        let mut e = est(RtoStyle::Linux);
        e.sample(ms(100), 1, 10);
        assert_eq!((e.srtt(), e.rto()), (Some(ms(100)), ms(300)));
        // 180 ms within the round (snd_una 5 <= rtt_seq 10): error +80: SRTT 110;
        // 4 mdev = 200 + (80 - 50) = 230 > mdev_max 200: RTTVAR 230: RTO 340 ms
        e.sample(ms(180), 5, 20);
        assert_eq!((e.srtt(), e.rto()), (Some(ms(110)), ms(340)));
        // 60 ms, still in the round: error -50, |error| - mdev (57.5) < 0: 4 mdev =
        // 230 - 7.5 = 222.5; SRTT 103.75; RTTVAR stays 230: RTO 333.75 -> 334 ms
        e.sample(ms(60), 9, 20);
        assert_eq!(e.srtt(), Some(Duration::from_micros(103_750)));
        assert_eq!(e.rto(), ms(334));
        // a new round (snd_una 11 > rtt_seq 10): RTTVAR would decay a quarter of the
        // way to the round's largest 4 mdev, which is RTTVAR itself (230); mdev_max
        // restarts at 200 until snd_una passes 30. The sample 103.75 (= SRTT): 4 mdev
        // = 222.5 - 55.6 = 166.9; RTO still 103.75 + 230 -> 334 ms
        e.sample(Duration::from_micros(103_750), 11, 30);
        assert_eq!(e.rto(), ms(334));
        // the next round (snd_una 31 > 30): RTTVAR 230 -> 230 - (230 - 200) / 4 =
        // 222.5: RTO 326.25 -> 327 ms
        e.sample(Duration::from_micros(103_750), 31, 40);
        assert_eq!(e.rto(), ms(327));
    }

    #[test]
    fn linux_rto_never_below_srtt_plus_rto_min_and_rounds_up_to_ticks() {
        let mut e = est(RtoStyle::Linux).with_tick(ms(4));
        for k in 0..200 {
            e.sample(ms(10), k, k + 10);
        }
        // SRTT 10 ms + RTTVAR 200 ms (the floor): 210 ms, a multiple of 4 ms: 212
        assert_eq!(e.rto(), ms(212));
        let mut e = est(RtoStyle::Rfc6298);
        for k in 0..50 {
            e.sample(ms(10), k, k + 10);
        }
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn repeated_timeouts_back_off_exponentially_to_the_cap() {
        let mut e = est(RtoStyle::Rfc6298);
        e.sample(ms(100), 1, 2);
        let mut expect = ms(300);
        for _ in 0..12 {
            e.back_off();
            expect = (expect.checked_mul(2).unwrap()).min(Duration::from_secs(120));
            assert_eq!(e.rto(), expect);
        }
        assert_eq!(e.rto(), Duration::from_secs(120));
        // a fresh measurement resets the back-off (Karn: only from new data)
        e.sample(ms(100), 2, 3);
        assert_eq!(e.backoffs(), 0);
        assert!(e.rto() < Duration::from_secs(1));
    }
}
