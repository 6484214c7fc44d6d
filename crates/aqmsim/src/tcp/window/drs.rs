//! Dynamic Right-Sizing (Fisk & Feng, "Dynamic right-sizing in TCP", 2001): the
//! receiver grows its advertised window to twice what arrived in a round trip, so the
//! window never limits the sender. Linux's receive-buffer autotuning
//! (`tcp_rcv_space_adjust`) does the same; the sender's congestion window is what
//! limits it. The simulator models that outcome: no window of its own.

use super::ReceiveWindow;

/// The DRS receiver: it never limits the sender.
#[derive(Clone, Copy, Debug, Default)]
pub struct Drs;

impl ReceiveWindow for Drs {
    fn window(&self) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::{Duration, Time};

    #[test]
    fn drs_never_sets_a_window() {
        let mut d = Drs;
        d.on_rtt(Time::from_nanos(1_000), Duration::from_millis(20), 1_000_000);
        d.on_data(Time::from_nanos(2_000), 2_000_000);
        assert_eq!(d.window(), None);
        assert_eq!(d.mode_code(), 0);
    }
}
