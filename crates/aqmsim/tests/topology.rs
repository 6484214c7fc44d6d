//! Topologies as data: the parking lot and two AQMs in series run with every
//! link accounted for; bad topologies are one-line errors naming the field; the
//! dumbbell written as `[[links]]` runs as the dumbbell.

use aqmsim::{builtin, RunOutput, Scenario};

fn run(sc: &Scenario) -> RunOutput {
    aqmsim::run(sc, &mut |_| true).unwrap()
}

fn goodput_mbps(o: &RunOutput, group: u16) -> Vec<f64> {
    let f = &o.flows;
    (0..f.flow.len()).filter(|&i| f.group[i] == group).map(|i| f.bytes_delivered[i] as f64 * 8.0 / (o.sim_ns as f64 / 1e9) / 1e6).collect()
}

#[test]
fn in_the_parking_lot_the_flows_crossing_both_bottlenecks_get_less() {
    let sc = Scenario::from_toml(builtin::get("parking-lot").unwrap(), &["duration=\"30s\"".into()]).unwrap();
    let o = run(&sc);
    let long: f64 = goodput_mbps(&o, 0).iter().sum::<f64>() / 4.0;
    let cross1: f64 = goodput_mbps(&o, 1).iter().sum::<f64>() / 4.0;
    let cross2: f64 = goodput_mbps(&o, 2).iter().sum::<f64>() / 4.0;
    assert!(long < 0.7 * cross1 && long < 0.7 * cross2, "long {long:.2}, cross {cross1:.2} / {cross2:.2} Mbps per flow");
    // each bottleneck carries the long flows and its cross flows: close to its 10 Mbps
    for b in ["b1", "b2"] {
        let l = o.links.iter().find(|l| l.name == b).unwrap();
        let sent = l.stats.bytes_dequeued as f64 * 8.0 / 30.0 / 1e6;
        assert!(sent > 9.0 && sent <= 10.01, "{b}: {sent:.2} Mbps");
        assert!(l.stats.drops[1] > 0, "{b}: PIE drops");
    }
    // every side of every link accounts for its packets
    assert!(o.conservation.holds(), "{:?}", o.conservation);
    assert_eq!(o.links.len(), 16, "8 links, two sides each");
    for l in &o.links {
        let s = l.stats;
        assert_eq!(s.arrivals, s.enqueued + s.drops.iter().sum::<u64>(), "{}", l.name);
        assert!(s.enqueued >= s.dequeued, "{}", l.name);
    }
    // the long flows' ACKs come back over b2_rev and b1_rev
    let rev = o.links.iter().find(|l| l.name == "b1_rev").unwrap();
    assert!(rev.stats.arrivals > 1000);
    // the AQM links' packet events are recorded by default, and every side is sampled
    assert_eq!(o.logged_links, vec!["b1", "b2"]);
    let sampled: std::collections::BTreeSet<u16> = o.link_series.link.iter().copied().collect();
    assert_eq!(sampled.len(), 16);
}

#[test]
fn two_aqms_in_series_both_act() {
    let sc = Scenario::from_toml(builtin::get("aqm-series").unwrap(), &["duration=\"30s\"".into()]).unwrap();
    let o = run(&sc);
    let lm = o.links.iter().find(|l| l.name == "lm").unwrap();
    let mr = o.links.iter().find(|l| l.name == "mr").unwrap();
    assert_eq!((lm.aqm.as_str(), mr.aqm.as_str()), ("pie", "codel"));
    assert!(lm.stats.drops[1] > 0, "PIE drops at random: {:?}", lm.stats);
    assert!(mr.stats.drops[2] > 0, "CoDel drops on its schedule: {:?}", mr.stats);
    let names: Vec<&str> = o.histograms.iter().map(|h| h.name.as_str()).collect();
    assert!(names.contains(&"lm.sojourn") && names.contains(&"mr.sojourn.a") && names.contains(&"mr.drop_delay.deterministic"), "{names:?}");
}

/// The dumbbell of madpie-proof written as [[links]]: the same flows, the same
/// bottleneck, the same run (link names and the set of sampled links aside).
#[test]
fn the_dumbbell_written_as_links_runs_as_the_dumbbell() {
    let dumbbell = Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &["duration=\"30s\"".into()]).unwrap();
    let links = Scenario::from_toml(
        r#"
        name = "madpie-proof-as-links"
        duration = "30s"
        [[links]]
        name = "bottleneck"
        from = "r1"
        to = "r2"
        rate = "10Mbps"
        delay = "248ms"
        buffer = "1bdp"
        aqm = { kind = "pie", target = "20ms", tupdate = "30ms", max_burst = "100ms" }
        [[links]]
        name = "up"
        from = "snd"
        to = "r1"
        rate = "100Mbps"
        delay = "1ms"
        buffer = "1000pkts"
        [[links]]
        name = "down"
        from = "r2"
        to = "rcv"
        rate = "100Mbps"
        delay = "1ms"
        buffer = "1000pkts"
        [[flows]]
        name = "bulk"
        count = 10
        start = { uniform = ["0s", "1s"] }
        route = ["up", "bottleneck", "down"]
        tcp = { cc = "cubic", sack = true, initial_window = 10 }
        "#,
        &[],
    )
    .unwrap();
    let (a, b) = (run(&dumbbell), run(&links));
    assert_eq!(a.flows.bytes_delivered, b.flows.bytes_delivered);
    assert_eq!(a.flows.retransmits, b.flows.retransmits);
    assert_eq!(a.flows.base_rtt_ns, b.flows.base_rtt_ns);
    assert_eq!(a.links[0].stats, b.links[0].stats, "the bottleneck");
    assert_eq!(a.links[0].limit_bytes, b.links[0].limit_bytes, "1 BDP at the same RTT");
    let soj = |o: &RunOutput| -> Vec<i64> { (0..o.packets.len()).filter(|&i| o.packets.event[i] == 1).map(|i| o.packets.sojourn_ns[i]).collect() };
    assert_eq!(soj(&a), soj(&b));
}

fn topo_error(extra: &[&str]) -> String {
    let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let e = Scenario::from_toml(builtin::get("parking-lot").unwrap(), &o).unwrap_err().to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn bad_topologies_are_one_line_errors_naming_the_field() {
    let e = topo_error(&["flows.0.route=[\"al\", \"nope\", \"b2\", \"dl\"]"]);
    assert!(e.starts_with("flows[0].route[1]:") && e.contains("\"nope\""), "{e}");
    let e = topo_error(&["flows.0.route=[\"al\", \"b2\", \"dl\"]"]);
    assert!(e.starts_with("flows[0].route[1]:") && e.contains("does not connect"), "{e}");
    let e = topo_error(&["flows.1.route=[\"a1\", \"b1\", \"b1\"]"]);
    assert!(e.starts_with("flows[1].route[2]:") && e.contains("b1"), "{e}");
    let e = topo_error(&["flows.0.route=[\"al\", \"b1\", \"d1\", \"a1\"]"]);
    assert!(e.starts_with("flows[0].route[3]:"), "a loop back to r1: {e}");
    let e = topo_error(&["flows.0.route=[]"]);
    assert!(e.starts_with("flows[0].route:"), "{e}");
    let e = topo_error(&["links.0.aqm.kind=\"nosuch\""]);
    assert!(e.starts_with("links[0].aqm.kind:"), "{e}");
    let e = topo_error(&["links.1.to=\"r2\""]);
    assert!(e.starts_with("links[1].to:"), "{e}");
    let e = topo_error(&["links.1.name=\"b1\""]);
    assert!(e.starts_with("links[1].name:"), "{e}");
    let e = topo_error(&["record.links=[\"zz\"]"]);
    assert!(e.starts_with("record.links[0]:"), "{e}");
    let e = topo_error(&["flows.0.path.sender_delay=\"5ms\""]);
    assert!(e.starts_with("flows[0].path.sender_delay:"), "{e}");
    let e = topo_error(&["bottleneck.rate=\"10Mbps\""]);
    assert!(e.starts_with("links:"), "both forms at once: {e}");
    let e = topo_error(&["access.rate=\"10Mbps\""]);
    assert!(e.starts_with("access:"), "{e}");
    // a dumbbell group cannot have a route
    let o = vec!["flows.0.route=[\"x\"]".to_string()];
    let e = Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap_err().to_string();
    assert!(e.starts_with("flows[0].route:"), "{e}");
}
