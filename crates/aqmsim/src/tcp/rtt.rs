//! Round-trip time estimation and the retransmission timer (Paxson, Allman, Chu &
//! Sargent, RFC 6298), with Linux's 200 ms minimum in place of the RFC's 1 s.

use aqm::Duration;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RtoStyle {
    /// RFC 6298 §2: RTO = SRTT + max(G, 4 RTTVAR), then at least `rto_min`.
    Rfc6298,
    /// Linux `__tcp_set_rto`: RTO = SRTT + max(4 RTTVAR, rto_min), so the minimum
    /// applies to the variance term (a larger RTO on long paths). The default: the
    /// seeds' experiments ran Linux TCP.
    #[default]
    Linux,
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    style: RtoStyle,
    rto_min: Duration,
    rto_max: Duration,
    /// Clock granularity G (RFC 6298 §2): 1 ms, Linux's jiffy at HZ=1000.
    granularity: Duration,
    srtt: Option<Duration>,
    rttvar: Duration,
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
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            rto: initial,
            backoff: 0,
        }
    }

    /// RFC 6298 §2.2-2.3: fold in a measurement R.
    pub fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // §2.2: SRTT <- R, RTTVAR <- R/2
                self.srtt = Some(r);
                self.rttvar = r.div_u64(2);
            }
            Some(srtt) => {
                // §2.3: RTTVAR <- (1 - 1/4) RTTVAR + 1/4 |SRTT - R'|; SRTT <- (1 - 1/8) SRTT + 1/8 R'
                let err = if srtt > r { srtt - r } else { r - srtt };
                self.rttvar = Duration::from_nanos((3 * self.rttvar.as_nanos() + err.as_nanos()) / 4);
                self.srtt = Some(Duration::from_nanos((7 * srtt.as_nanos() + r.as_nanos()) / 8));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.backoff = 0;
        self.rto = self.computed_rto();
    }

    fn computed_rto(&self) -> Duration {
        let srtt = self.srtt.unwrap_or(Duration::ZERO);
        let var4 = Duration::from_nanos(4 * self.rttvar.as_nanos());
        let rto = match self.style {
            RtoStyle::Rfc6298 => (srtt + var4.max(self.granularity)).max(self.rto_min),
            RtoStyle::Linux => srtt + var4.max(self.rto_min),
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
        if self.srtt.is_none() {
            self.rto = self.rto.max(d);
        }
    }

    pub fn rto(&self) -> Duration {
        self.rto
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
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

    #[test]
    fn first_and_second_samples_follow_rfc6298() {
        let mut e = est(RtoStyle::Rfc6298);
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(Duration::from_millis(100));
        // SRTT 100, RTTVAR 50 -> RTO = 100 + 200 = 300 ms
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.sample(Duration::from_millis(180));
        // RTTVAR = 3/4*50 + 1/4*80 = 57.5; SRTT = 7/8*100 + 1/8*180 = 110; RTO = 110 + 230 = 340
        assert_eq!(e.rttvar(), Duration::from_micros(57_500));
        assert_eq!(e.srtt(), Some(Duration::from_millis(110)));
        assert_eq!(e.rto(), Duration::from_millis(340));
    }

    #[test]
    fn minimum_of_200ms_applies() {
        let mut e = est(RtoStyle::Rfc6298);
        for _ in 0..50 {
            e.sample(Duration::from_millis(10));
        }
        assert_eq!(e.rto(), Duration::from_millis(200));
        // Linux style: SRTT + max(4 RTTVAR, 200 ms) = 210 ms
        let mut e = est(RtoStyle::Linux);
        for _ in 0..50 {
            e.sample(Duration::from_millis(10));
        }
        assert!(e.rto() >= Duration::from_millis(210) && e.rto() < Duration::from_millis(211));
    }

    #[test]
    fn repeated_timeouts_back_off_exponentially_to_the_cap() {
        let mut e = est(RtoStyle::Rfc6298);
        e.sample(Duration::from_millis(100));
        let mut expect = Duration::from_millis(300);
        for _ in 0..12 {
            e.back_off();
            expect = (expect.checked_mul(2).unwrap()).min(Duration::from_secs(120));
            assert_eq!(e.rto(), expect);
        }
        assert_eq!(e.rto(), Duration::from_secs(120));
        // a fresh measurement resets the back-off (Karn: only from new data)
        e.sample(Duration::from_millis(100));
        assert_eq!(e.backoffs(), 0);
        assert!(e.rto() < Duration::from_secs(1));
    }
}
