//! Congestion controllers: one file each, behind a small trait whose hooks default
//! to doing nothing (the shape of smoltcp's `congestion` module), picked through the
//! closed enum [`AnyCc`].
//!
//! The window is counted in segments, as in Linux and RFC 9438, and kept as `f64`
//! so that per-ACK increments of a fraction of a segment accumulate exactly as the
//! RFC formulas say. The sender may transmit while `pipe < floor(cwnd)`.

pub mod cubic;
pub mod newreno;
pub mod reno;

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

pub use cubic::{Cubic, CubicParams};
pub use newreno::NewReno;
pub use reno::Reno;

/// "Infinite" slow-start threshold (Linux `TCP_INFINITE_SSTHRESH`).
pub const INFINITE_SSTHRESH: f64 = 1e9;

/// Congestion window and slow-start threshold, in segments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
    /// RFC 5681 §3.1 slow start with appropriate byte counting (RFC 3465, L = all
    /// acked data, as Linux's `tcp_slow_start`): grow by the segments acked, up to
    /// ssthresh. Returns the acked segments left over for congestion avoidance.
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        let room = (self.ssthresh - self.cwnd).max(0.0);
        let grow = acked.min(room);
        self.cwnd += grow;
        acked - grow
    }

    /// The shared first step of every controller's `on_ack`: no growth unless the
    /// sender is cwnd-limited; slow start takes what it can; returns the segments
    /// left for congestion avoidance, if any.
    pub fn after_slow_start(&mut self, s: &AckSample) -> Option<f64> {
        if !s.cwnd_limited {
            return None;
        }
        let mut acked = s.acked as f64;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
        }
        (acked > 0.0).then_some(acked)
    }
}

/// What an ACK tells the controller.
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    pub now: Time,
    /// Segments newly delivered by this ACK (cumulatively acked or SACKed).
    pub acked: u32,
    /// Round-trip time sample from this ACK, if it gave one.
    pub rtt: Option<Duration>,
    /// Smallest RTT seen on the connection.
    pub min_rtt: Option<Duration>,
    /// The sender was limited by cwnd (not by the application or the receiver), so
    /// growth is allowed (RFC 7661, Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// Highest cumulatively acked segment and next new segment, for round tracking.
    pub snd_una: u64,
    pub snd_nxt: u64,
}

pub trait CongestionControl {
    /// Grow the window on an ACK outside loss recovery.
    fn on_ack(&mut self, w: &mut Window, s: &AckSample);
    /// A loss (or ECN) congestion event: return the new ssthresh. The caller sets
    /// cwnd (through PRR during recovery, RFC 6937).
    fn on_congestion(&mut self, w: &Window, now: Time) -> f64;
    /// A retransmission timeout: the caller sets cwnd to one segment.
    fn on_timeout(&mut self, _w: &Window, _now: Time) {}
    /// Every RTT sample, in any state (HyStart watches delay in slow start).
    fn on_rtt(&mut self, _w: &mut Window, _s: &AckSample) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    #[default]
    Cubic,
    Newreno,
    /// Linux's `reno` module: NewReno's window growth; without SACK, RFC 5681 fast
    /// recovery (the first new ACK ends it) instead of RFC 6582's.
    Reno,
    /// Linux's BBR (Cardwell et al., "BBR: Congestion-Based Congestion Control",
    /// ACM Queue 2016), for `aqmlab emulate` only: the kernel runs it, the simulator
    /// has no model of it and refuses it ([`CcKind::simulated`]).
    Bbr,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Cubic => "cubic",
            CcKind::Newreno => "newreno",
            CcKind::Reno => "reno",
            CcKind::Bbr => "bbr",
        }
    }

    /// Whether the simulator has this congestion control (BBR runs only on the
    /// real Linux stack, through `aqmlab emulate`).
    pub fn simulated(self) -> bool {
        !matches!(self, CcKind::Bbr)
    }
}

#[derive(Clone, Debug)]
pub enum AnyCc {
    Cubic(Cubic),
    NewReno(NewReno),
    Reno(Reno),
}

impl AnyCc {
    pub fn new(kind: CcKind, cubic: &CubicParams) -> AnyCc {
        match kind {
            CcKind::Cubic => AnyCc::Cubic(Cubic::new(cubic.clone())),
            CcKind::Newreno => AnyCc::NewReno(NewReno::default()),
            CcKind::Reno => AnyCc::Reno(Reno::default()),
            CcKind::Bbr => panic!("BBR is not simulated: Sim::new refuses scenarios that ask for it"),
        }
    }
}

impl CongestionControl for AnyCc {
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        match self {
            AnyCc::Cubic(c) => c.on_ack(w, s),
            AnyCc::NewReno(c) => c.on_ack(w, s),
            AnyCc::Reno(c) => c.on_ack(w, s),
        }
    }
    fn on_congestion(&mut self, w: &Window, now: Time) -> f64 {
        match self {
            AnyCc::Cubic(c) => c.on_congestion(w, now),
            AnyCc::NewReno(c) => c.on_congestion(w, now),
            AnyCc::Reno(c) => c.on_congestion(w, now),
        }
    }
    fn on_timeout(&mut self, w: &Window, now: Time) {
        match self {
            AnyCc::Cubic(c) => c.on_timeout(w, now),
            AnyCc::NewReno(c) => c.on_timeout(w, now),
            AnyCc::Reno(c) => c.on_timeout(w, now),
        }
    }
    fn on_rtt(&mut self, w: &mut Window, s: &AckSample) {
        match self {
            AnyCc::Cubic(c) => c.on_rtt(w, s),
            AnyCc::NewReno(c) => c.on_rtt(w, s),
            AnyCc::Reno(c) => c.on_rtt(w, s),
        }
    }
}
