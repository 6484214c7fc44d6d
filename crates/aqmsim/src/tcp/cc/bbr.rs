//! BBR (Cardwell, Cheng, Gunn, Hassas Yeganeh & Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 2016) as Linux's `tcp_bbr` runs it: through
//! `aqmlab emulate` only, on the real kernel. The simulator has no model of it yet
//! and refuses scenarios that ask for it ([`CcParams::SIMULATED`] is false), so
//! [`Unsimulated`] is never built.

use aqm::Time;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcParams, CongestionControl, Window};

/// The kernel's BBR takes no parameters from the scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BbrParams {}

impl CcParams for BbrParams {
    const TITLE: &'static str = "BBR v1, the Linux kernel's (aqmlab emulate only)";
    const SOURCE: &'static str = "Cardwell, Cheng, Gunn, Hassas Yeganeh & Jacobson, \"BBR: Congestion-Based Congestion Control\", ACM Queue 2016";
    const DOC: &'static [(&'static str, &'static str)] = &[];
    const LINUX: Option<&'static str> = Some("bbr");
    const SIMULATED: bool = false;
    type Algo = Unsimulated;
    fn build(&self) -> Unsimulated {
        Unsimulated
    }
}

/// The place of a congestion control the simulator does not model. The scenario
/// check refuses it before a sender is built, so none of its hooks ever runs.
#[derive(Clone, Debug, Default)]
pub struct Unsimulated;

impl CongestionControl for Unsimulated {
    fn on_ack(&mut self, _w: &mut Window, _s: &AckSample) {
        unreachable!("the scenario check refuses congestion controls the simulator does not model")
    }
    fn on_congestion(&mut self, _w: &Window, _now: Time) -> f64 {
        unreachable!("the scenario check refuses congestion controls the simulator does not model")
    }
}
