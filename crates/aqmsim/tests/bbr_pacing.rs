//! Pacing and BBR end to end: a sender and a receiver on virtual time for the
//! pacing gate, and whole simulations for BBR on the dumbbell (20 Mb/s,
//! base RTT 40 ms, DropTail of 2 BDP, as `aqmlab validate linux` runs it).

mod common;

use aqmsim::aqm::{Duration, Time};
use aqmsim::tcp::pacing;
use aqmsim::tcp::{CcSpec, ReceiveBuffer, TcpConfig};
use aqmsim::{builtin, RunOutput, Scenario};

fn send_times(cfg: &TcpConfig, one_way: Duration, end: Time) -> Vec<Time> {
    common::send_times(cfg, None, one_way, end)
}

/// The largest number of segments sent at one instant, from the `skip`-th on.
fn largest_burst(sends: &[Time], skip: usize) -> usize {
    let mut best = 0;
    let mut i = skip;
    while i < sends.len() {
        let j = sends[i..].iter().take_while(|&&t| t == sends[i]).count();
        best = best.max(j);
        i += j;
    }
    best
}

#[test]
fn an_unpaced_sender_sends_its_window_in_bursts_and_a_paced_one_spreads_it() {
    // NewReno: slow start without HyStart, whose ACK-train test Linux changes for a
    // paced sender (tcp_cubic.c: the threshold is the whole min RTT, not half)
    let end = Time::from_millis(400);
    // a receiver that never limits: Linux's receive buffer grows once per RTT and
    // trails a window that doubles on a path without a bottleneck by a few segments
    let reno = TcpConfig { cc: CcSpec::default_for("newreno").unwrap(), receive_buffer: ReceiveBuffer::Unlimited, ..TcpConfig::default() };
    let unpaced = send_times(&reno, Duration::from_millis(20), end);
    let paced = send_times(&TcpConfig { pacing: true, ..reno }, Duration::from_millis(20), end);
    // unpaced: the initial window at once, then ACK-clocked bursts that double in
    // slow start (no bottleneck spreads them)
    assert_eq!(unpaced.iter().filter(|&&t| t == Time::ZERO).count(), 10);
    assert!(largest_burst(&unpaced, 10) >= 10, "{}", largest_burst(&unpaced, 10));
    // paced: the first 10 segments go as they may (as sch_fq's), then bursts of about
    // a millisecond of the rate, never a window at once: at 2 x cwnd / srtt in slow
    // start that is 2 segments (min_tso_segs) while cwnd is below ~ 28 segments (1 ms
    // of 2 x 28 x 1460 B per 40 ms = 2 kB), later at most 64 KB (44 segments)
    let early: Vec<Time> = paced.iter().copied().filter(|&t| t < Time::from_millis(120)).collect();
    assert_eq!(largest_burst(&early, 10), 2);
    let burst = largest_burst(&paced, 10);
    assert!(burst <= 45 && 10 * burst < largest_burst(&unpaced, 10), "paced {burst}, unpaced {}", largest_burst(&unpaced, 10));
    // both are in slow start all along (no loss, no HyStart) and double their data
    // every round of 40 ms: pacing at twice cwnd per srtt spreads each round's data
    // over the round without slowing the growth (10, 20, 40, ... 5120 segments)
    let per_round = |sends: &[Time]| -> Vec<usize> { (0..10u64).map(|k| sends.iter().filter(|&&t| t >= Time::from_millis(40 * k) && t < Time::from_millis(40 * (k + 1))).count()).collect() };
    assert_eq!(per_round(&unpaced), (0..10).map(|k| 10 << k).collect::<Vec<usize>>());
    assert_eq!(per_round(&paced), per_round(&unpaced));
}

#[test]
fn paced_gaps_are_the_burst_over_the_rate_in_slow_start() {
    // one RTT of 100 ms, cwnd 10 after the first flight's ACKs: 2 x 10 x 1460 B per
    // 100 ms = 292 kB/s: a burst of 2 segments (2920 B) every 10 ms
    let rtt = Duration::from_millis(100);
    let cfg = TcpConfig { pacing: true, delayed_ack: false, ..TcpConfig::default() };
    let sends = send_times(&cfg, Duration::from_millis(50), Time::from_millis(150));
    // the initial window at t = 0, unpaced; at 100 ms the first ACKs release the rest
    assert_eq!(sends.iter().filter(|&&t| t == Time::ZERO).count(), 10);
    let second: Vec<Time> = sends.iter().copied().filter(|&t| t >= Time::from_millis(100)).collect();
    assert!(second.len() >= 6, "{second:?}");
    // bursts of 2, each the length of 2 segments at the rate Linux computes from the
    // cwnd and srtt of their moment: cwnd grows by one per ACK, so the rate grows too
    for pair in second.chunks(2).collect::<Vec<_>>().windows(2) {
        assert_eq!(pair[0].len(), 2);
        let gap = pair[1][0] - pair[0][0];
        assert!(gap > Duration::from_millis(3) && gap <= Duration::from_millis(10), "gap {gap}");
    }
    let r = pacing::default_rate(1460, 10, u64::MAX, 10, Some(rtt), 200, 120);
    assert_eq!(r, 292_000);
}

#[test]
fn bbr_paces_whatever_tcp_pacing_says() {
    let cfg = TcpConfig { cc: CcSpec::default_for("bbr").unwrap(), pacing: false, ..TcpConfig::default() };
    // 6 rounds of STARTUP on a path with no bottleneck (the rate doubles each round)
    let sends = send_times(&cfg, Duration::from_millis(20), Time::from_millis(240));
    // STARTUP paces at 2.89 x the bandwidth seen: after the first 10 segments, never
    // more than a burst of about 1 ms of the rate at once, where the unpaced sender
    // sends what each ACK releases
    let burst = largest_burst(&sends, 10);
    let unpaced = send_times(&TcpConfig::default(), Duration::from_millis(20), Time::from_millis(240));
    assert!(burst <= 45 && 10 * burst < largest_burst(&unpaced, 10), "paced {burst}, unpaced {}", largest_burst(&unpaced, 10));
    assert!(sends.len() > 150, "{}", sends.len());
}

#[test]
fn pacing_ratios_are_checked() {
    let e = TcpConfig { pacing_ss_ratio: 0, ..TcpConfig::default() }.validate().unwrap_err();
    assert!(e.starts_with("pacing_ss_ratio:") && e.contains("got 0"), "{e}");
    let e = TcpConfig { pacing_ca_ratio: 5000, ..TcpConfig::default() }.validate().unwrap_err();
    assert!(e.starts_with("pacing_ca_ratio:") && e.contains("5000"), "{e}");
}

// -- whole runs -----------------------------------------------------------------

/// The validation's dumbbell: `flows` bulk flows of `cc` over 20 Mb/s, base RTT 40 ms
/// (1 + 18 + 1 ms each way), DropTail of 2 BDP, for `secs`.
fn dumbbell(cc_groups: &[(&str, u32)], secs: u32, seed: u64) -> RunOutput {
    let groups: Vec<String> = cc_groups
        .iter()
        .map(|(cc, n)| format!("{{name=\"{cc}\",kind=\"bulk\",count={n},start={{uniform=[\"0s\",\"1s\"]}},tcp={{cc=\"{cc}\",handshake=true,mss=\"1448B\",header=\"52B\"}}}}"))
        .collect();
    let o: Vec<String> = vec![
        "bottleneck.rate=\"20Mbps\"".into(),
        "bottleneck.delay=\"18ms\"".into(),
        "bottleneck.buffer=\"2bdp\"".into(),
        "bottleneck.aqm={kind=\"droptail\"}".into(),
        format!("duration=\"{secs}s\""),
        format!("seed={seed}"),
        format!("flows=[{}]", groups.join(",")),
    ];
    let sc = Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap();
    aqmsim::run(&sc, &mut |_| true).unwrap()
}

/// Mean utilization of the bottleneck (link 0) from `from` on.
fn utilization(o: &RunOutput, from: Time) -> f64 {
    let ls = &o.link_series;
    let rows: Vec<usize> = (0..ls.time_ns.len()).filter(|&i| ls.link[i] == 0 && ls.time_ns[i] > from.as_nanos()).collect();
    rows.iter().map(|&i| ls.busy_ns[i] as f64).sum::<f64>() / (rows.len() as f64 * 1e8)
}

/// Quantile `q` of the bottleneck's queueing delay (ms) of packets that left it after `from`.
fn queue_delay_ms(o: &RunOutput, from: Time, q: f64) -> f64 {
    let p = &o.packets;
    let mut d: Vec<i64> = (0..p.len()).filter(|&i| p.link[i] == 0 && p.event[i] == 1 && p.time_ns[i] >= from.as_nanos()).map(|i| p.sojourn_ns[i]).collect();
    d.sort();
    d[((d.len() - 1) as f64 * q) as usize] as f64 / 1e6
}

#[test]
fn four_bbr_flows_fill_a_2bdp_droptail_bottleneck() {
    let o = dumbbell(&[("bbr", 4)], 20, 1);
    let u = utilization(&o, Time::from_secs(2));
    assert!(u >= 0.95, "utilization {u}");
    assert!(o.conservation.holds());
    // BBR v1's cwnd of 2 BDP per flow keeps a standing queue near the buffer (as the
    // kernel's: p50 76 ms of the 80 ms buffer); no flow starves, and the flows share
    // as unevenly as the kernel's do: Jain's index 0.936 ± 0.043 over the kernel's
    // runs of `validate linux` (seeds 1-3, 30 s), here at least its mean less two
    // standard deviations (one flow at 14 % and three at 29 % is 0.94)
    let b: Vec<f64> = o.flows.bytes_delivered.iter().map(|&x| x as f64).collect();
    let total: f64 = b.iter().sum();
    for (i, &x) in b.iter().enumerate() {
        assert!(x > 0.10 * total, "flow {i}: {x} of {total}");
    }
    let jain = total * total / (b.len() as f64 * b.iter().map(|x| x * x).sum::<f64>());
    assert!(jain >= 0.85, "Jain's index {jain}");
}

#[test]
fn one_bbr_flow_keeps_its_standing_queue_under_one_base_rtt() {
    let o = dumbbell(&[("bbr", 1)], 20, 1);
    // after STARTUP and DRAIN (the first second or so), the queue stays short: BBR
    // paces at the bandwidth it measured and caps in flight at 2 BDP
    let p50 = queue_delay_ms(&o, Time::from_secs(3), 0.5);
    let p95 = queue_delay_ms(&o, Time::from_secs(3), 0.95);
    assert!(p95 < 40.0, "p50 {p50} ms, p95 {p95} ms");
    assert!(p50 < 10.0, "p50 {p50} ms");
    assert!(utilization(&o, Time::from_secs(2)) >= 0.9);
    assert_eq!(o.flows.timeouts[0], 0);
}

#[test]
fn bbr_takes_the_larger_share_from_cubic_in_a_2bdp_droptail_buffer() {
    // BBR v1 ignores loss and keeps 2 BDP in flight; CUBIC backs off on each loss:
    // in buffers of a few BDP BBR wins (the kernel: 15.3 of 19.3 Mb/s to 2 BBR flows)
    let o = dumbbell(&[("bbr", 2), ("cubic", 2)], 30, 1);
    let by_group = |g: u16| -> u64 { (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == g).map(|i| o.flows.bytes_delivered[i]).sum() };
    let (bbr, cubic) = (by_group(0) as f64, by_group(1) as f64);
    assert!(bbr > 1.5 * cubic && cubic > 0.0, "bbr {bbr} cubic {cubic}");
}


#[test]
fn prague_paces_itself_in_bursts_of_a_quarter_millisecond() {
    // TCP Prague sets its own pacing rate (Linux `SK_PACING_NEEDED`), paced whatever
    // tcp.pacing says: mtu x cwnd / srtt, twice that early in slow start, in bursts of
    // at most 2^-12 s of that rate (`prague_burst_shift`), at least one segment
    let prague = TcpConfig { cc: CcSpec::default_for("prague").unwrap(), pacing: false, ..TcpConfig::default() };
    let end = Time::from_millis(200);
    let sends = send_times(&prague, Duration::from_millis(20), end);
    let unpaced = send_times(&TcpConfig { cc: CcSpec::default_for("newreno").unwrap(), ..TcpConfig::default() }, Duration::from_millis(20), end);
    // 5 rounds of 40 ms of slow start without marks: cwnd reaches 320 segments,
    // 2 x 320 x 1500 B per 40 ms = 24 MB/s, 16,000 segments/s: 3.9 per 2^-12 s, so a
    // burst is at most 3 segments; the unpaced sender lets out what each ACK releases
    let burst = largest_burst(&sends, 10);
    assert!((1..=3).contains(&burst), "paced {burst}");
    assert!(largest_burst(&unpaced, 10) >= 40, "unpaced {}", largest_burst(&unpaced, 10));
    // pacing at twice the window per RTT spreads each round over half of it without
    // slowing slow start much: the data per round nearly doubles (10, 20, 38, 76,
    // 152: Prague's cwnd follows its fractional window by one segment per ACK, so a
    // delayed ACK for 2 segments adds 2 to the window but 1 to cwnd at that moment)
    let per_round: Vec<usize> = (0..5u64).map(|k| sends.iter().filter(|&&t| t >= Time::from_millis(40 * k) && t < Time::from_millis(40 * (k + 1))).count()).collect();
    assert_eq!(per_round[..2], [10, 20]);
    assert!(per_round.windows(2).all(|w| 10 * w[1] >= 19 * w[0]), "{per_round:?}");
    // ... and within a round no instant sends more than the burst: the fifth round's
    // 160 segments leave at more than 50 distinct times
    let round5: std::collections::BTreeSet<Time> = sends.iter().copied().filter(|&t| t >= Time::from_millis(160)).collect();
    assert!(round5.len() > 50, "{}", round5.len());
}
