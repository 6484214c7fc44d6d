//! The handshake's third segment end to end (RFC 9293 §3.5; Linux
//! `tcp_rcv_synsent_state_process` sends it as a pure ACK): it crosses the forward
//! path as a header-only packet, is logged there as an `ack` (as the emulator logs the
//! kernel's), counts in the forward link's counters, and packets are conserved.

use aqmsim::{builtin, RunOutput, Scenario};

const FLOWS: usize = 4;

fn run(handshake: bool) -> RunOutput {
    let o: Vec<String> = vec![
        "bottleneck.rate=\"10Mbps\"".into(),
        "bottleneck.delay=\"8ms\"".into(),
        "bottleneck.aqm={kind=\"droptail\"}".into(),
        "duration=\"2s\"".into(),
        "seed=1".into(),
        "record.links=[\"bottleneck\",\"bottleneck_rev\"]".into(),
        format!("flows=[{{name=\"bulk\",kind=\"bulk\",count={FLOWS},tcp={{cc=\"cubic\",handshake={handshake},mss=\"1448B\",header=\"52B\"}}}}]"),
    ];
    let sc = Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap();
    aqmsim::run(&sc, &mut |_| true).unwrap()
}

/// Rows (index) of link `name`'s arrivals at its queue (enqueued or dropped).
fn arrivals(o: &RunOutput, name: &str) -> Vec<usize> {
    let l = o.logged_links.iter().position(|n| n == name).unwrap() as u8;
    let p = &o.packets;
    (0..p.len()).filter(|&i| p.link[i] == l && (p.event[i] == 0 || p.event[i] == 2)).collect()
}

#[test]
fn the_handshake_s_ack_crosses_the_forward_path_once_per_flow_before_the_data() {
    // kind codes: 0 data, 1 ack, 2 syn, 3 synack
    let o = run(true);
    let p = &o.packets;
    let fwd = arrivals(&o, "bottleneck");
    let rev = arrivals(&o, "bottleneck_rev");
    let acks: Vec<usize> = fwd.iter().copied().filter(|&i| p.kind[i] == 1).collect();
    assert_eq!(acks.len(), FLOWS, "one pure ACK per flow on the forward path");
    let mut flows: Vec<u32> = acks.iter().map(|&i| p.flow[i]).collect();
    flows.sort();
    assert_eq!(flows, (0..FLOWS as u32).collect::<Vec<_>>());
    for &i in &acks {
        assert_eq!(p.size[i], 52, "header only");
        let f = p.flow[i];
        // after the flow's SYN, before its first data segment (sent first, and on a
        // FIFO path it stays first)
        let syn = fwd.iter().find(|&&j| p.flow[j] == f && p.kind[j] == 2).unwrap();
        let data = fwd.iter().find(|&&j| p.flow[j] == f && p.kind[j] == 0).unwrap();
        assert!(p.time_ns[*syn] < p.time_ns[i] && p.time_ns[i] <= p.time_ns[*data], "flow {f}");
        assert!(p.uid[i] < p.uid[*data]);
        // and not on the reverse path: no row there has its uid
        assert!(!rev.iter().any(|&j| p.uid[j] == p.uid[i]));
    }
    // the forward link's counters include them: every arrival logged is counted
    let l = o.links.iter().find(|l| l.name == "bottleneck").unwrap();
    assert_eq!(l.stats.arrivals, fwd.len() as u64);
    let c = o.conservation;
    assert!(c.holds(), "{c:?}");

    // without a handshake: no ACK, no SYN on the forward path; one packet fewer per flow
    // is created before the data (SYN, SYN-ACK, ACK)
    let n = run(false);
    let fwd_n = arrivals(&n, "bottleneck");
    assert!(!fwd_n.iter().any(|&i| n.packets.kind[i] == 1 || n.packets.kind[i] == 2));
    assert!(n.conservation.holds(), "{:?}", n.conservation);
}
