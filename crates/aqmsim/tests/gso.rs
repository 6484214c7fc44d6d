//! Linux's GSO skbs end to end (`tcp.gso = "linux"`, `tcp/tso.rs`): a sender and a
//! receiver on virtual time through a 100 Mb/s bottleneck, RTT 20 ms.

mod common;

use aqmsim::aqm::{Bytes, Duration, Time};
use aqmsim::tcp::{CcSpec, Gso, TcpConfig};

fn send_times(cfg: &TcpConfig, rate_bps: u64, one_way: Duration, end: Time) -> Vec<Time> {
    common::send_times(cfg, Some(rate_bps), one_way, end)
}

/// The sizes of the groups of segments sent at one instant, from `from` on.
fn bursts(sends: &[Time], from: Time) -> Vec<(Time, usize)> {
    let mut v: Vec<(Time, usize)> = Vec::new();
    for &t in sends.iter().filter(|&&t| t >= from) {
        match v.last_mut() {
            Some((at, k)) if *at == t => *k += 1,
            _ => v.push((t, 1)),
        }
    }
    v
}

fn cfg(gso: Gso) -> TcpConfig {
    // NewReno without loss, held by a 200-segment receive window (the BDP is 167
    // segments of 1500 B at 100 Mb/s and 20 ms): a steady ACK clock
    TcpConfig {
        cc: CcSpec::default_for("newreno").unwrap(),
        receive_window: Some(Bytes(200 * 1460)),
        gso,
        ..TcpConfig::default()
    }
}

#[test]
fn without_gso_each_ack_releases_two_segments() {
    let sends = send_times(&cfg(Gso::Off), 100_000_000, Duration::from_millis(10), Time::from_secs(3));
    let b = bursts(&sends, Time::from_secs(2));
    assert!(b.len() > 1000, "{}", b.len());
    assert!(b.iter().all(|&(_, k)| k <= 3), "{:?}", b.iter().map(|x| x.1).max());
}

#[test]
fn with_gso_the_sender_waits_about_a_millisecond_and_sends_one_skb() {
    let sends = send_times(&cfg(Gso::Linux), 100_000_000, Duration::from_millis(10), Time::from_secs(3));
    let b = bursts(&sends, Time::from_secs(2));
    // the same data per second as without GSO: the link stays full
    let segs: usize = b.iter().map(|x| x.1).sum();
    assert!((8_000..=8_400).contains(&segs), "{segs} segments in 1 s");
    // tcp_tso_should_defer holds the skb while the window opens by 2 segments per
    // ACK (an ACK every 240 µs: 2 x 1500 B at 100 Mb/s) until the last transmission
    // is more than 1 ms old: the fifth ACK (1.2 ms) sends 10 segments in one skb (the
    // pacing rate, 1.2 x max(cwnd, packets_out) / srtt with cwnd far above the
    // receiver's window, is above 64 KB per ms: max_segs is 44 and does not bind).
    // The write queue's skbs hold 44 segments (65215 B / 1460): after four sends of
    // 10, the rest of 4 is the middle of the queue and fits in what 2 ACKs open, so
    // it goes at once (480 µs).
    for w in b.windows(2) {
        let gap = w[1].0 - w[0].0;
        let want = if w[1].1 == 4 { Duration::from_micros(480) } else { Duration::from_micros(1200) };
        assert!(w[1].1 == 10 || w[1].1 == 4, "{:?}", w[1]);
        assert_eq!(gap, want, "between {:?} and {:?}", w[0], w[1]);
    }
    let fours = b.iter().filter(|x| x.1 == 4).count();
    let tens = b.iter().filter(|x| x.1 == 10).count();
    assert!(tens.abs_diff(4 * fours) <= 4, "{tens} skbs of 10, {fours} of 4");
}

#[test]
fn on_a_slow_link_every_ack_is_more_than_a_millisecond_after_the_last_send() {
    // 10 Mb/s, RTT 20 ms, a 40-segment receive window (the BDP is 17 segments): an
    // ACK every 2.4 ms (2 x 1500 B at 10 Mb/s), so when it comes the last
    // transmission is more than 1 ms old and tcp_tso_should_defer sends at once:
    // the 2 segments each ACK opens, as without GSO
    let c = TcpConfig { receive_window: Some(Bytes(40 * 1460)), ..cfg(Gso::Linux) };
    let sends = send_times(&c, 10_000_000, Duration::from_millis(10), Time::from_secs(4));
    let b = bursts(&sends, Time::from_secs(3));
    let segs: usize = b.iter().map(|x| x.1).sum();
    assert!((800..=840).contains(&segs), "{segs}");
    assert!(b.iter().all(|&(_, k)| k == 2), "{:?}", b.iter().map(|x| x.1).collect::<Vec<_>>());
    for w in b.windows(2) {
        assert_eq!(w[1].0 - w[0].0, Duration::from_micros(2400));
    }
}

/// Segments with PSH among the data segments sent from `from` on, and how many.
fn pushed(cfg: &TcpConfig, from: Time) -> (usize, usize) {
    let sent = common::data_sent(cfg, Some(10_000_000), Duration::from_millis(10), Time::from_secs(3));
    let late: Vec<_> = sent.iter().filter(|(t, _)| *t >= from).collect();
    (late.iter().filter(|(_, p)| p.flag(aqmsim::packet::Packet::PSH)).count(), late.len())
}

#[test]
fn with_gso_the_last_segment_of_each_skb_of_several_carries_psh() {
    // 10 Mb/s, RTT 20 ms, the ACK clock of a receiver that ACKs every second
    // segment: each ACK releases a two-segment skb (an ACK every 2.4 ms, more than
    // the 1 ms after which tcp_tso_should_defer never waits), and
    // __tcp_transmit_skb's PSH goes on its second segment: half the segments, as the
    // kernel's captures show for one flow (43 % with the odd three-segment skb)
    let (psh, all) = pushed(&cfg(Gso::Linux), Time::from_secs(2));
    assert!(all > 700, "{all}");
    assert!(psh * 100 >= all * 40 && psh * 100 <= all * 55, "{psh} of {all}");
    // without GSO every segment is its own skb: no PSH on a bulk sender's data
    let (psh, all) = pushed(&cfg(Gso::Off), Time::from_secs(2));
    assert!(all > 700, "{all}");
    assert_eq!(psh, 0);
}
