//! Linux's receive buffer end to end (`tcp.receive_buffer`, `tcp/rcvbuf.rs`): one
//! CUBIC flow, 10 Mb/s, base RTT 20 ms, DropTail of one BDP, the connection as
//! `aqmlab validate linux` aligns it with the kernel's (handshake, MSS 1448 B). The
//! kernel on this path (`aqmlab emulate`, docs/validation.md): 0.75 ACKs per data
//! segment in the first 0.3 s, HyStart's ACK-train test ends slow start at cwnd 30
//! (`TCPHystartTrainCwnd`) before any loss, 5 drops in the first 3 s.

use aqmsim::{builtin, RunOutput, Scenario};

fn one_flow(buffer: &str) -> RunOutput {
    let o: Vec<String> = vec![
        "bottleneck.rate=\"10Mbps\"".into(),
        "bottleneck.delay=\"8ms\"".into(),
        "bottleneck.buffer=\"1bdp\"".into(),
        "bottleneck.aqm={kind=\"droptail\"}".into(),
        "duration=\"3s\"".into(),
        "seed=1".into(),
        "record.links=[\"bottleneck\",\"bottleneck_rev\"]".into(),
        format!("flows=[{{name=\"bulk\",kind=\"bulk\",count=1,tcp={{cc=\"cubic\",handshake=true,mss=\"1448B\",header=\"52B\",receive_buffer=\"{buffer}\"}}}}]"),
    ];
    let sc = Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap();
    aqmsim::run(&sc, &mut |_| true).unwrap()
}

struct Start {
    /// ACKs per data segment in the first 0.3 s of data.
    acks_per_segment: f64,
    /// The first finite ssthresh, and the drops before the interval that shows it.
    exit_ssthresh: f64,
    drops_before_exit: usize,
}

fn start(o: &RunOutput) -> Start {
    let p = &o.packets;
    let fwd = o.logged_links.iter().position(|l| l == "bottleneck").unwrap() as u8;
    let rev = o.logged_links.iter().position(|l| l == "bottleneck_rev").unwrap() as u8;
    // arrivals: enqueued or dropped at the queue (event 0 or 2); kind 0 data, 1 ACK
    let arrivals = |link: u8, kind: u8| -> Vec<u64> {
        (0..p.len()).filter(|&i| p.link[i] == link && p.kind[i] == kind && (p.event[i] == 0 || p.event[i] == 2)).map(|i| p.time_ns[i]).collect()
    };
    let data = arrivals(fwd, 0);
    let acks = arrivals(rev, 1);
    let t0 = data[0];
    let within = |v: &[u64]| v.iter().filter(|&&t| t < t0 + 300_000_000).count();
    let fs = &o.flow_series;
    let i = (0..fs.time_ns.len()).find(|&i| fs.flow[i] == 0 && fs.ssthresh[i].is_finite()).unwrap();
    let drops_before_exit = (0..p.len()).filter(|&j| p.link[j] == fwd && p.event[j] == 2 && p.time_ns[j] <= fs.time_ns[i]).count();
    Start { acks_per_segment: within(&acks) as f64 / within(&data) as f64, exit_ssthresh: fs.ssthresh[i], drops_before_exit }
}

#[test]
fn a_linux_receive_buffer_lets_hystart_end_slow_start_before_a_loss_as_the_kernel() {
    let linux = start(&one_flow("linux"));
    // the window-growth ACKs: every segment ACKed in the first round trips' runs
    assert!((0.62..0.8).contains(&linux.acks_per_segment), "{}", linux.acks_per_segment);
    // HyStart's ACK train (ACKs at most 2 ms apart: one per segment at 1.2 ms) ends
    // slow start at the kernel's cwnd 30, with no drop before
    assert!((25.0..=35.0).contains(&linux.exit_ssthresh), "{}", linux.exit_ssthresh);
    assert_eq!(linux.drops_before_exit, 0);

    // without the buffer: an ACK every second segment (2.4 ms apart) breaks the
    // train; slow start ends at the overflow, dozens of drops later
    let unlimited = start(&one_flow("unlimited"));
    assert!(unlimited.acks_per_segment < 0.62, "{}", unlimited.acks_per_segment);
    assert!(unlimited.drops_before_exit > 10, "{}", unlimited.drops_before_exit);
}
