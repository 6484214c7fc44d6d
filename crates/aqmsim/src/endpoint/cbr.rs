//! `cbr`: constant-bit-rate UDP (Kuhn & Ros §IV-A's VoIP-like flows, Pan et al.'s
//! unresponsive floods). Datagram k leaves at `start + floor(k * size * 8 / rate)`,
//! computed from k each time so that the spacing is exact over any number of
//! datagrams (no accumulated rounding).
//!
//! The datagram and its receiving end ([`datagram`], [`check_datagrams`],
//! [`DatagramSink`]) are shared with the other UDP sources (`onoff`).

use aqm::{Bytes, Ecn, Rate, Time};
use serde::{Deserialize, Serialize};

use super::{AppEvent, Cx, Endpoint, FlowSetup, SendStep, TrafficKind};
use crate::packet::{Kind, Packet};
use crate::record::{FlowSeries, FlowTable, Recorder};

/// IPv4 (20 B) + UDP (8 B) headers of a CBR datagram.
pub const UDP_HEADER: u32 = 28;

/// Constant-bit-rate UDP: one datagram of `packet_size` bytes every
/// `packet_size * 8 / rate` seconds, exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CbrSpec {
    /// The sending rate, counting whole datagrams (IP + UDP headers included).
    pub rate: Rate,
    /// Bytes on the wire per datagram, headers included (Pan et al.'s lab: 1.5 KB).
    #[serde(default = "mtu")]
    pub packet_size: Bytes,
    /// Send datagrams ECN-capable (ECT(0)); an AQM then marks them instead of dropping.
    #[serde(default)]
    pub ecn: bool,
}

fn mtu() -> Bytes {
    Bytes(1500)
}

/// The checks of a UDP source's `rate` and `packet_size`.
pub fn check_datagrams(rate: Rate, packet_size: Bytes) -> Result<(), String> {
    if rate.bps() == 0 {
        return Err("rate: must be greater than zero".into());
    }
    if packet_size.0 <= UDP_HEADER as u64 || packet_size.0 > 65_535 {
        return Err(format!("packet_size: must be between 29B and 65535B (28 bytes are IPv4 + UDP headers), got {packet_size}"));
    }
    Ok(())
}

/// Datagram number `seq` of a flow: `size` bytes on the wire, IPv4 + UDP headers
/// included; ECT(0) with `ecn`.
pub fn datagram(flow: u32, seq: u64, size: u32, ecn: bool, now: Time) -> Packet {
    let mut p = Packet::new(0, flow, Kind::Udp, size, now);
    p.seq = seq;
    p.payload = size - UDP_HEADER;
    if ecn {
        p.set_ecn(Ecn::Ect0);
    }
    p
}

impl TrafficKind for CbrSpec {
    const FAMILY: &'static str = "datagrams";
    type Endpoint = Cbr;
    fn check(&self) -> Result<(), String> {
        check_datagrams(self.rate, self.packet_size)
    }
    fn datagrams(&self) -> Option<(u64, u32)> {
        Some((self.rate.bps(), self.packet_size.0 as u32))
    }
    fn build(&self, f: &FlowSetup<'_>) -> Cbr {
        Cbr::new(self.packet_size.0 as u32, self.rate.bps(), self.ecn, f.start, f.stop)
    }
}

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
    pub sink: DatagramSink,
    /// `send_time(sent) - start` in ns, kept by whole steps and remainders instead of
    /// a 128-bit division per datagram: with `a = size * 8e9` and `b = rate_bps`,
    /// floor((k + 1) a / b) = floor(k a / b) + floor(a / b) + carry, the carry 1 when
    /// the remainders (k a mod b) + (a mod b) reach b.
    offset_ns: u64,
    offset_rem: u64,
    step_ns: u64,
    step_rem: u64,
}

impl Cbr {
    pub fn new(size: u32, rate_bps: u64, ecn: bool, start: Time, stop: Time) -> Cbr {
        let a = size as u64 * 8_000_000_000;
        let (step_ns, step_rem) = (a / rate_bps, a % rate_bps);
        Cbr { size, rate_bps, ecn, start, stop, sent: 0, sink: DatagramSink::default(), offset_ns: 0, offset_rem: 0, step_ns, step_rem }
    }

    /// When datagram `k` leaves: exact to the nanosecond (floored) for every k.
    pub fn send_time(&self, k: u64) -> Time {
        let ns = k as u128 * self.size as u128 * 8 * 1_000_000_000 / self.rate_bps as u128;
        self.start + aqm::Duration::from_nanos(ns as u64)
    }

    /// The next datagram, and when the one after it is due (None: the source is done).
    pub fn emit(&mut self, flow: u32, now: Time) -> (Packet, Option<Time>) {
        let p = datagram(flow, self.sent, self.size, self.ecn, now);
        self.sent += 1;
        self.offset_ns += self.step_ns;
        self.offset_rem += self.step_rem;
        if self.offset_rem >= self.rate_bps {
            self.offset_rem -= self.rate_bps;
            self.offset_ns += 1;
        }
        let next = self.start + aqm::Duration::from_nanos(self.offset_ns);
        debug_assert_eq!(next, self.send_time(self.sent));
        (p, (next < self.stop).then_some(next))
    }

    /// The send event at `now`: the datagram, and the next send event's time.
    #[inline]
    fn step(&mut self, flow: u32, now: Time) -> SendStep {
        if now >= self.stop {
            return SendStep::Nothing;
        }
        let (p, next) = self.emit(flow, now);
        SendStep::Datagram(p, next)
    }
}

/// A send step through a hook's context (the flow's start).
pub(crate) fn step_in(step: SendStep, cx: &mut Cx<'_>) {
    if let SendStep::Datagram(p, next) = step {
        cx.out.push(p);
        if let Some(t) = next {
            cx.at.push((t, AppEvent::Send));
        }
    }
}

/// A UDP source and its sink (`cbr`, `onoff`): what they differ in. Their
/// [`Endpoint`] is this one: sends by the lean path ([`Endpoint::on_send`]), the
/// sink takes its datagrams the lean way ([`Endpoint::receive`]), no timers.
pub trait DatagramSource {
    /// The flow starts.
    fn begin(&mut self, cx: &mut Cx<'_>);
    /// The send event at `now`: the datagram due, and the next send event's time.
    fn step(&mut self, flow: u32, now: Time) -> SendStep;
    fn sink(&self) -> &DatagramSink;
    fn sink_mut(&mut self) -> &mut DatagramSink;
    /// Datagrams sent so far.
    fn sent(&self) -> u64;
}

impl<S: DatagramSource> Endpoint for S {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.begin(cx);
    }
    fn on_app(&mut self, ev: AppEvent, cx: &mut Cx<'_>) {
        if ev == AppEvent::Send {
            step_in(self.step(cx.flow, cx.now), cx);
        }
    }
    #[inline]
    fn on_send(&mut self, flow: u32, now: Time) -> SendStep {
        self.step(flow, now)
    }
    fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>) {
        self.sink_mut().on_packet(p, cx.now, cx.rec);
    }
    fn lean_receiver(&self) -> bool {
        true
    }
    #[inline]
    fn receive(&mut self, p: &Packet, now: Time, rec: &mut Recorder) {
        self.sink_mut().on_packet(p, now, rec);
    }
    fn sample(&self, r: &mut FlowSeries) {
        self.sink().sample(self.sent(), r);
    }
    fn finish(&self, t: &mut FlowTable) {
        self.sink().finish(self.sent(), t);
    }
}

impl DatagramSource for Cbr {
    fn begin(&mut self, cx: &mut Cx<'_>) {
        step_in(self.step(cx.flow, cx.now), cx);
    }
    #[inline]
    fn step(&mut self, flow: u32, now: Time) -> SendStep {
        Cbr::step(self, flow, now)
    }
    fn sink(&self) -> &DatagramSink {
        &self.sink
    }
    fn sink_mut(&mut self) -> &mut DatagramSink {
        &mut self.sink
    }
    fn sent(&self) -> u64 {
        self.sent
    }
}

/// The receiving end of a UDP flow: what it received, its `datagrams` records (one
/// row per datagram with its one-way delay and CE mark), and the flow's columns of
/// the flow series and the flow table (no TCP state).
#[derive(Debug, Default)]
pub struct DatagramSink {
    pub received: u64,
    /// Bytes (whole datagrams) received.
    pub rx_bytes: u64,
}

impl DatagramSink {
    /// Datagram `p` arrives at `now`.
    #[inline]
    pub fn on_packet(&mut self, p: &Packet, now: Time, rec: &mut Recorder) {
        self.received += 1;
        self.rx_bytes += p.size as u64;
        if rec.record_datagrams {
            let r = &mut rec.datagrams;
            r.time_ns.push(now.as_nanos());
            r.flow.push(p.flow);
            r.seq.push(p.seq);
            r.size.push(p.size);
            r.delay_ns.push(now.saturating_since(p.sent_at).as_nanos());
            r.ce.push(p.ecn() == Ecn::Ce);
        }
    }
    /// The flow's row of the flow series, `sent` datagrams sent so far.
    pub fn sample(&self, sent: u64, r: &mut FlowSeries) {
        r.cwnd.push(f64::NAN);
        r.ssthresh.push(f64::NAN);
        r.srtt_ns.push(-1);
        r.rtt_ns.push(-1);
        r.rto_ns.push(0);
        r.in_flight.push(0);
        r.delivered_bytes.push(self.rx_bytes);
        r.snd_una.push(sent);
        r.retransmits.push(0);
        r.ca_state.push(0);
        r.rwnd.push(-1);
        r.receiver_mode.push(0);
    }
    /// The flow's row of the flow table, `sent` datagrams sent in all.
    pub fn finish(&self, sent: u64, t: &mut FlowTable) {
        t.end_ns.push(-1);
        t.bytes_delivered.push(self.rx_bytes);
        t.segments_sent.push(sent);
        for col in [
            &mut t.retransmits,
            &mut t.timeouts,
            &mut t.recoveries,
            &mut t.ecn_reductions,
            &mut t.loss_probes,
            &mut t.loss_probe_recoveries,
            &mut t.dsacks,
            &mut t.undos,
            &mut t.spurious_rtos,
            &mut t.lost_retransmits,
        ] {
            col.push(0);
        }
        t.min_rtt_ns.push(-1);
        t.srtt_ns.push(-1);
        t.transfers.push(0);
        t.receiver_reverts.push(0);
        t.receiver_returns.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn the_incremental_send_times_are_the_exact_ones_for_any_size_and_rate() {
        use proptest::prelude::*;
        proptest!(|(size in 29u32..=65_535, rate in 1u64..=100_000_000_000, n in 1usize..3_000)| {
            let mut c = Cbr::new(size, rate, false, Time::from_millis(3), Time::MAX);
            for k in 1..=n as u64 {
                let (_, next) = c.emit(0, Time::ZERO);
                // floor(k * size * 8e9 / rate), computed in 128 bits
                let want = 3_000_000u128 + k as u128 * size as u128 * 8_000_000_000 / rate as u128;
                prop_assert_eq!(next.map(|t| t.as_nanos() as u128), Some(want));
            }
        });
    }

    #[test]
    fn cbr_6mbps_floods_send_500_datagrams_a_second() {
        // Pan et al.: 6 Mbps of 1500-byte datagrams is one every 2 ms exactly.
        let c = Cbr::new(1500, 6_000_000, false, Time::ZERO, Time::from_secs(10));
        assert_eq!(c.send_time(1), Time::from_millis(2));
        assert_eq!(c.send_time(500), Time::from_secs(1));
    }
}
