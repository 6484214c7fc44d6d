//! Applications on top of the transports: constant-bit-rate UDP sources and the
//! clients that download files over TCP. The simulator (`sim.rs`) owns the event
//! loop; these hold each application's state and say what happens next.
//!
//! - CBR (Kuhn & Ros §IV-A's VoIP-like flows, Pan et al.'s unresponsive UDP): datagram
//!   k leaves at `start + floor(k * size * 8 / rate)`, computed from k each time so
//!   that the spacing is exact over any number of datagrams (no accumulated
//!   rounding).
//! - Downloads (`files`, `web`, `transfer`): a client requests a file of a size drawn
//!   from the group's distribution, receives it, thinks for a time drawn from the
//!   think-time distribution, and requests the next (Kuhn & Ros §IV-A; Jou, Tan &
//!   Baras §II). The request reaches the server at once: as in ns-2's one-way TCP
//!   agents, the request's own trip on the return path is not simulated; the
//!   download time runs from the request (including the SYN / SYN-ACK exchange when
//!   `tcp.handshake` is on) to the delivery of the last byte at the client.

use aqm::{Ecn, Time};

use crate::dist::{SizeDist, TimeDist};
use crate::packet::{Kind, Packet};
use crate::rng::SimRng;
use crate::scenario::UDP_HEADER;

/// A constant-bit-rate UDP source and its sink.
#[derive(Debug)]
pub struct Cbr {
    /// Bytes on the wire per datagram.
    pub size: u32,
    pub rate_bps: u64,
    pub ecn: bool,
    pub start: Time,
    /// No datagram leaves at or after this time.
    pub stop: Time,
    /// Datagrams sent so far (the next one's number).
    pub sent: u64,
    pub received: u64,
    /// Bytes (whole datagrams) received.
    pub rx_bytes: u64,
}

impl Cbr {
    pub fn new(size: u32, rate_bps: u64, ecn: bool, start: Time, stop: Time) -> Cbr {
        Cbr { size, rate_bps, ecn, start, stop, sent: 0, received: 0, rx_bytes: 0 }
    }

    /// When datagram `k` leaves: exact to the nanosecond (floored) for every k.
    pub fn send_time(&self, k: u64) -> Time {
        let ns = k as u128 * self.size as u128 * 8 * 1_000_000_000 / self.rate_bps as u128;
        self.start + aqm::Duration::from_nanos(ns as u64)
    }

    /// The next datagram, and when the one after it is due (None: the source is done).
    pub fn emit(&mut self, flow: u32, now: Time) -> (Packet, Option<Time>) {
        let mut p = Packet::new(0, flow, Kind::Udp, self.size, now);
        p.seq = self.sent;
        p.payload = self.size - UDP_HEADER;
        if self.ecn {
            p.ecn = Ecn::Ect0;
        }
        self.sent += 1;
        let next = self.send_time(self.sent);
        (p, (next < self.stop).then_some(next))
    }
}

/// The download in progress.
#[derive(Clone, Copy, Debug)]
pub struct Current {
    /// Its row in the transfer log.
    pub row: usize,
    /// The sender's retransmission and timeout counters when it was requested.
    pub retx0: u64,
    pub rto0: u64,
}

/// A client that downloads files one after another (or a single transfer).
#[derive(Debug)]
pub struct Downloads {
    pub rng: SimRng,
    /// `transfer`: this one size, once.
    pub single: Option<u64>,
    pub persistent: bool,
    /// Requests made so far.
    pub requested: u32,
    pub completed: u32,
    pub current: Option<Current>,
    /// No request at or after this time.
    pub stop: Time,
}

impl Downloads {
    pub fn size(&mut self, sizes: Option<&SizeDist>) -> u64 {
        match (self.single, sizes) {
            (Some(s), _) => s,
            (None, Some(d)) => d.sample(&mut self.rng),
            (None, None) => unreachable!("downloads without sizes"),
        }
    }

    /// When the next request goes out after a download finished at `now` (None: no
    /// more requests).
    pub fn next_request(&mut self, now: Time, think: Option<&TimeDist>) -> Option<Time> {
        if self.single.is_some() {
            return None;
        }
        let at = now + think.expect("downloads without think time").sample(&mut self.rng);
        (at < self.stop).then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::Duration;

    #[test]
    fn cbr_spacing_is_exact_over_many_datagrams() {
        // Kuhn & Ros §IV-A: 218 B at 87 kbps, one datagram every 1744/87000 s =
        // 20.045977... ms. Datagram k leaves at floor(k * 1744e9 / 87000) ns.
        let mut c = Cbr::new(218, 87_000, false, Time::from_millis(500), Time::from_secs(100));
        let mut t = c.start;
        let mut times = vec![];
        loop {
            let (p, next) = c.emit(3, t);
            assert_eq!(p.size, 218);
            assert_eq!(p.payload, 190);
            assert_eq!(p.kind, Kind::Udp);
            times.push(t);
            match next {
                Some(n) => t = n,
                None => break,
            }
        }
        for (k, t) in times.iter().enumerate() {
            let want = 500_000_000u128 + k as u128 * 1_744_000_000_000 / 87_000;
            assert_eq!(t.as_nanos() as u128, want, "datagram {k}");
        }
        // 99.5 s of sending: floor(99.5 / 0.020045977) + 1 datagrams
        assert_eq!(times.len(), 4964);
        assert!(*times.last().unwrap() < Time::from_secs(100));
        // every gap is 20045977 or 20045978 ns
        for w in times.windows(2) {
            let g = (w[1] - w[0]).as_nanos();
            assert!(g == 20_045_977 || g == 20_045_978, "{g}");
        }
        let _ = Duration::ZERO;
    }

    #[test]
    fn cbr_6mbps_floods_send_500_datagrams_a_second() {
        // Pan et al.: 6 Mbps of 1500-byte datagrams is one every 2 ms exactly.
        let c = Cbr::new(1500, 6_000_000, false, Time::ZERO, Time::from_secs(10));
        assert_eq!(c.send_time(1), Time::from_millis(2));
        assert_eq!(c.send_time(500), Time::from_secs(1));
    }
}
