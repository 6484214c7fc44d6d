//! NewReno's congestion control (RFC 5681 §3.1; RFC 6582 for the recovery, which the
//! sender implements): slow start, then one segment per RTT, halving on loss, as
//! Linux's `reno` module computes it (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`):
//! cwnd a whole number of segments, one more per cwnd segments acked.

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
        // Linux tcp_reno_cong_avoid: slow start up to ssthresh (tcp_slow_start),
        // then RFC 5681 eq. (3) as tcp_cong_avoid_ai(cwnd): one segment per window.
        let Some(acked) = w.after_slow_start(s) else { return };
        if !w.in_slow_start() {
            let cwnd = w.cwnd as u32;
            w.cong_avoid_ai(cwnd, acked as u32);
        }
    }

    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        // RFC 5681 eq. (4) with FlightSize taken as cwnd, as Linux's tcp_reno_ssthresh
        // (integer halving, at least 2).
        ((w.cwnd as u64 >> 1).max(2)) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::Time;

    fn sample(acked: u32) -> AckSample {
        AckSample { acked, cwnd_limited: true, ..AckSample::default() }
    }

    #[test]
    fn slow_start_doubles_and_congestion_avoidance_adds_one_per_window() {
        let mut cc = NewReno;
        let mut w = Window::new(10.0, 20.0);
        cc.on_ack(&mut w, &sample(10));
        assert_eq!(w.cwnd, 20.0);
        // one window of ACKs (20 segments, one at a time) adds exactly one segment, on
        // the 20th (tcp_cong_avoid_ai: snd_cwnd_cnt reaches cwnd)
        for k in 1..=20 {
            cc.on_ack(&mut w, &sample(1));
            assert_eq!(w.cwnd, if k < 20 { 20.0 } else { 21.0 }, "ack {k}");
        }
        // a stretch ACK of 42 segments at cwnd 21: two more
        cc.on_ack(&mut w, &sample(42));
        assert_eq!(w.cwnd, 23.0);
    }

    #[test]
    fn loss_halves_with_a_floor_of_two() {
        let mut cc = NewReno;
        assert_eq!(cc.on_congestion(&Window::new(30.0, 1e9), Time::ZERO), 15.0);
        assert_eq!(cc.on_congestion(&Window::new(31.0, 1e9), Time::ZERO), 15.0);
        assert_eq!(cc.on_congestion(&Window::new(3.0, 1e9), Time::ZERO), 2.0);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = NewReno;
        let mut w = Window::new(10.0, 5.0);
        cc.on_ack(&mut w, &AckSample { cwnd_limited: false, ..sample(10) });
        assert_eq!(w.cwnd, 10.0);
    }
}
