//! NewReno's congestion control (RFC 5681 §3.1; RFC 6582 for the recovery, which the
//! sender implements): slow start, then one segment per RTT, halving on loss.

use aqm::Time;

use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, Window};

/// NewReno has no parameters of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRenoParams {}

impl CcParams for NewRenoParams {
    const TITLE: &'static str = "NewReno: slow start, one segment per RTT, halving on loss; RFC 6582 recovery without SACK";
    const SOURCE: &'static str = "Allman, Paxson & Blanton, RFC 5681; Henderson, Floyd, Gurtov & Nishida, RFC 6582";
    const DOC: &'static [(&'static str, &'static str)] = &[];
    // Linux's `reno` module: NewReno's window; Linux recovers with SACK or RFC 6582.
    const LINUX: Option<&'static str> = Some("reno");
    type Algo = NewReno;
    fn build(&self) -> NewReno {
        NewReno
    }
}

#[derive(Clone, Debug, Default)]
pub struct NewReno;

impl CongestionControl for NewReno {
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        let Some(acked) = w.after_slow_start(s) else { return };
        if !w.in_slow_start() {
            // RFC 5681 eq. (3): cwnd += SMSS*SMSS/cwnd per ACK, i.e. 1/cwnd segments
            // per segment acked: one segment per window.
            w.cwnd += acked / w.cwnd;
        }
    }

    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        // RFC 5681 eq. (4) with FlightSize taken as cwnd, as Linux's tcp_reno_ssthresh.
        (w.cwnd / 2.0).max(2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::Time;

    fn sample(acked: u32) -> AckSample {
        AckSample { acked, ..AckSample::at(Time::ZERO) }
    }

    #[test]
    fn slow_start_doubles_and_congestion_avoidance_adds_one_per_window() {
        let mut cc = NewReno;
        let mut w = Window { cwnd: 10.0, ssthresh: 20.0 };
        cc.on_ack(&mut w, &sample(10));
        assert_eq!(w.cwnd, 20.0);
        // one window of ACKs (20 segments, one at a time) adds about one segment
        for _ in 0..20 {
            cc.on_ack(&mut w, &sample(1));
        }
        assert!((w.cwnd - 21.0).abs() < 0.03, "{}", w.cwnd);
    }

    #[test]
    fn loss_halves_with_a_floor_of_two() {
        let mut cc = NewReno;
        assert_eq!(cc.on_congestion(&Window { cwnd: 30.0, ssthresh: 1e9 }, Time::ZERO), 15.0);
        assert_eq!(cc.on_congestion(&Window { cwnd: 3.0, ssthresh: 1e9 }, Time::ZERO), 2.0);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = NewReno;
        let mut w = Window { cwnd: 10.0, ssthresh: 5.0 };
        cc.on_ack(&mut w, &AckSample { cwnd_limited: false, ..sample(10) });
        assert_eq!(w.cwnd, 10.0);
    }
}
