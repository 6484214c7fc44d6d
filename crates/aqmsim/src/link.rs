//! A unidirectional link: an egress queue run by an AQM, a transmitter that
//! serializes one packet at a time at the link rate, and a propagation pipe.
//!
//! Packets leave the pipe in the order they entered it (the delay is the same for
//! all), so only the pipe's head needs an event: the FIFO fast path that keeps the
//! event heap small.

use std::collections::VecDeque;

use aqm::{Duration, Limit, Qdisc, Rate, Time};

use crate::packet::Packet;
use crate::rng::SimRng;

pub struct Link {
    pub name: String,
    pub rate: Rate,
    pub delay: Duration,
    pub limit: Limit,
    pub qdisc: Qdisc<Packet>,
    pub rng: SimRng,
    /// Index in the packet log, if this link's packet events are recorded.
    pub log: Option<u8>,
    /// Index in the link time series, if sampled.
    pub sampled: bool,
    pub in_tx: Option<Packet>,
    pub tx_started: Time,
    tx_rem: u128,
    pub pipe: VecDeque<(Time, Packet)>,
    /// Time of the pending AQM timer event, if one is scheduled.
    pub aqm_timer_at: Option<Time>,
    /// Total time spent transmitting completed packets.
    pub busy_ns: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

impl Link {
    pub fn new(name: &str, rate: Rate, delay: Duration, limit: Limit, qdisc: Qdisc<Packet>, rng: SimRng) -> Link {
        Link {
            name: name.to_string(),
            rate,
            delay,
            limit,
            qdisc,
            rng,
            log: None,
            sampled: false,
            in_tx: None,
            tx_started: Time::ZERO,
            tx_rem: 0,
            pipe: VecDeque::new(),
            aqm_timer_at: None,
            busy_ns: 0,
            tx_bytes: 0,
            tx_packets: 0,
        }
    }

    /// Serialization time of `bytes`, exact over many packets: the fraction of a
    /// nanosecond left over is carried to the next packet.
    pub fn tx_duration(&mut self, bytes: u32) -> Duration {
        let num = bytes as u128 * 8 * 1_000_000_000 + self.tx_rem;
        let r = self.rate.bps() as u128;
        self.tx_rem = num % r;
        Duration::from_nanos((num / r) as u64)
    }

    /// Time spent transmitting up to `now`, counting the packet in progress.
    pub fn busy_until(&self, now: Time) -> u64 {
        self.busy_ns + if self.in_tx.is_some() { now.saturating_since(self.tx_started).as_nanos() } else { 0 }
    }

    /// Packets held by this link: queued, being serialized, or propagating.
    pub fn in_flight(&self) -> u64 {
        self.qdisc.backlog().packets + self.in_tx.is_some() as u64 + self.pipe.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::AqmSpec;

    #[test]
    fn serialization_is_exact_over_many_packets() {
        // 1500 B at 3 Mbps: 4 ms; 1000 B at 3 Mbps: 2.6667 ms. Three 1000 B packets
        // take exactly 8 ms in total.
        let mut l = Link::new("x", Rate::from_mbps(3), Duration::ZERO, Limit::packets(10), Qdisc::new(&AqmSpec::default(), Limit::packets(10)), crate::rng::stream(1, "x"));
        let total: u64 = (0..3).map(|_| l.tx_duration(1000).as_nanos()).sum();
        assert_eq!(total, 8_000_000);
        assert_eq!(l.tx_duration(1500), Duration::from_millis(4));
    }
}
