//! Reno (Allman, Paxson & Blanton, RFC 5681), as Linux's `reno` congestion-control
//! module: slow start, then one segment per RTT (RFC 5681 §3.1), halving on loss
//! (eq. (4), FlightSize taken as cwnd as in `tcp_reno_ssthresh`). The window rules
//! are NewReno's; what makes Reno Reno is its recovery: without SACK the sender
//! ends fast recovery on the first ACK of new data (RFC 5681 §3.2 step 6), so a
//! second loss in the same window needs three new duplicate ACKs or a timeout,
//! where NewReno retransmits on the partial ACK (RFC 6582). The sender implements
//! that difference ([`CongestionControl::rfc5681_recovery`], without SACK); with SACK, recovery follows
//! RFC 6675 for every controller, as in Linux.

use aqm::Time;

use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, NewReno, Window};

/// Reno has no parameters of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenoParams {}

impl CcParams for RenoParams {
    const TITLE: &'static str = "Reno: NewReno's window; without SACK, fast recovery ends on the first new ACK";
    const SOURCE: &'static str = "Allman, Paxson & Blanton, RFC 5681 (Linux's reno module)";
    const DOC: &'static [(&'static str, &'static str)] = &[];
    const LINUX: Option<&'static str> = Some("reno");
    type Algo = Reno;
    fn build(&self) -> Reno {
        Reno::default()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Reno(NewReno);

impl CongestionControl for Reno {
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        self.0.on_ack(w, s)
    }
    fn on_congestion(&mut self, w: &Window, now: Time) -> f64 {
        self.0.on_congestion(w, now)
    }
    fn rfc5681_recovery(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_growth_and_reduction_are_newreno_s() {
        let s = AckSample { acked: 4, cwnd_limited: true, ..AckSample::default() };
        let (mut a, mut b) = (Reno::default(), NewReno);
        for start in [Window::new(10.0, 12.0), Window::new(30.0, 20.0)] {
            let (mut wa, mut wb) = (start, start);
            for _ in 0..50 {
                a.on_ack(&mut wa, &s);
                b.on_ack(&mut wb, &s);
            }
            assert_eq!(wa, wb);
            assert_eq!(a.on_congestion(&wa, Time::ZERO), (wa.cwnd / 2.0).floor());
        }
    }
}
