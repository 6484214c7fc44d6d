//! Whole-simulation properties: determinism, packet conservation (and that its check
//! fires), and the independence of random streams.

use aqmsim::aqm::Time;
use aqmsim::{builtin, Scenario, Sim, SimError};

fn scenario(extra: &[&str]) -> Scenario {
    let mut o: Vec<String> = vec!["duration=\"20s\"".into()];
    o.extend(extra.iter().map(|s| s.to_string()));
    Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap()
}

fn run(sc: &Scenario) -> aqmsim::RunOutput {
    aqmsim::run(sc, &mut |_| true).unwrap()
}

#[test]
fn same_seed_same_run_bit_for_bit() {
    let sc = scenario(&[]);
    let a = run(&sc);
    let b = run(&sc);
    assert_eq!(a.events, b.events);
    assert_eq!(a.packets.time_ns, b.packets.time_ns);
    assert_eq!(a.packets.uid, b.packets.uid);
    assert_eq!(a.packets.sojourn_ns, b.packets.sojourn_ns);
    assert_eq!(a.flows.bytes_delivered, b.flows.bytes_delivered);
    assert_eq!(a.flow_series.cwnd.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), b.flow_series.cwnd.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    assert_eq!(a.conservation, b.conservation);
}

#[test]
fn another_seed_gives_another_run() {
    let a = run(&scenario(&[]));
    let b = run(&scenario(&["seed=2"]));
    assert_ne!(a.packets.time_ns, b.packets.time_ns);
    assert_ne!(a.flows.start_ns, b.flows.start_ns);
}

#[test]
fn conservation_holds_at_the_end_of_every_run() {
    for aqm in ["pie", "droptail"] {
        for delay in ["48ms", "248ms"] {
            let o = run(&scenario(&[&format!("bottleneck.aqm.kind=\"{aqm}\""), &format!("bottleneck.delay=\"{delay}\"")]));
            let c = o.conservation;
            assert!(c.holds(), "{aqm} {delay}: {c:?}");
            assert!(c.created > 10_000 && c.dropped > 0, "{c:?}");
            for l in &o.links {
                let s = l.stats;
                assert_eq!(s.arrivals, s.enqueued + s.drops.iter().sum::<u64>(), "{}", l.name);
            }
        }
    }
}

#[test]
fn the_conservation_check_fires_when_a_packet_is_lost_unaccounted() {
    let sc = scenario(&[]);
    let mut sim = Sim::new(&sc).unwrap();
    sim.run_until(Time::from_secs(5));
    assert!(sim.check_conservation().is_ok());
    assert!(sim.debug_lose_a_packet(), "some packet is propagating at 5 s");
    match sim.check_conservation() {
        Err(SimError::Conservation(msg)) => assert!(msg.contains("created"), "{msg}"),
        other => panic!("expected a conservation error, got {other:?}"),
    }
}

#[test]
fn adding_a_flow_group_leaves_the_others_start_times_alone() {
    let base = scenario(&[]);
    let a = run(&base);
    let text = format!(
        "{}\n[[flows]]\nname = \"extra\"\ncount = 3\nstart = {{ uniform = [\"0s\", \"5s\"] }}\n",
        builtin::get("madpie-proof").unwrap()
    );
    let mut sc = Scenario::from_toml(&text, &["duration=\"20s\"".into()]).unwrap();
    sc.seed = base.seed;
    let b = run(&sc);
    assert_eq!(&b.flows.start_ns[..10], &a.flows.start_ns[..]);
}

#[test]
fn flows_start_uniformly_in_the_given_interval() {
    let o = run(&scenario(&["flows.0.count=200"]));
    let s: Vec<f64> = o.flows.start_ns.iter().map(|&t| t as f64 / 1e9).collect();
    assert!(s.iter().all(|&t| (0.0..=1.0).contains(&t)));
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    assert!((mean - 0.5).abs() < 0.06, "{mean}");
}

/// The streaming histograms against the per-packet rows of the same run: the same
/// counts, every rank within the bucket error (1/256 of the value), the exact
/// extremes; and the same histograms with packet records off.
#[test]
fn histograms_agree_with_the_packet_rows() {
    let sc = Scenario::from_toml(
        builtin::get("madpie-mix").unwrap(),
        &["duration=\"30s\"".into(), "metrics.warmup=\"5s\"".into(), "record.links=[\"bottleneck\", \"bottleneck_rev\"]".into()],
    )
    .unwrap();
    let out = run(&sc);
    let p = &out.packets;
    let name = |i: usize| out.histograms[i].name.as_str();
    let find = |n: &str| out.histograms.iter().position(|h| h.name == n).unwrap_or_else(|| panic!("no histogram {n}"));
    let rows = |hi: usize| -> Vec<(u64, u64, u64)> {
        let b = &out.histogram_buckets;
        (0..b.hist.len()).filter(|&i| b.hist[i] as usize == hi).map(|i| (b.lo_ns[i], b.hi_ns[i], b.count[i])).collect()
    };
    // the value of rank r from the bucket rows: the midpoint of its bucket
    let at_rank = |hi: usize, r: u64| -> u64 {
        let mut seen = 0;
        for (lo, up, c) in rows(hi) {
            seen += c;
            if r < seen {
                return lo + (up - lo) / 2;
            }
        }
        panic!("rank {r} beyond {}", name(hi));
    };
    let check = |hi: usize, mut exact: Vec<u64>| {
        exact.sort();
        let h = &out.histograms[hi];
        assert_eq!(h.count, exact.len() as u64, "{}", h.name);
        assert!(!exact.is_empty(), "{}", h.name);
        assert_eq!(h.min_ns, Some(exact[0]));
        assert_eq!(h.max_ns, exact.last().copied());
        assert_eq!(h.sum_ns, exact.iter().sum::<u64>() as f64);
        for (r, &v) in exact.iter().enumerate() {
            let got = at_rank(hi, r as u64);
            assert!((got as f64 - v as f64).abs() <= v as f64 / 256.0, "{} rank {r}: {got} vs {v}", h.name);
        }
    };
    let warm = 5_000_000_000;
    let soj = |link: u8, flows: Option<&[u32]>| -> Vec<u64> {
        (0..p.len())
            .filter(|&i| p.link[i] == link && p.event[i] == 1 && p.time_ns[i] >= warm && flows.is_none_or(|f| f.contains(&p.flow[i])))
            .map(|i| p.sojourn_ns[i] as u64)
            .collect()
    };
    check(find("bottleneck.sojourn"), soj(0, None));
    check(find("bottleneck_rev.sojourn"), soj(1, None));
    for (gi, g) in sc.flows.iter().enumerate() {
        let ids: Vec<u32> = (0..out.flows.flow.len()).filter(|&i| out.flows.group[i] as usize == gi).map(|i| out.flows.flow[i]).collect();
        check(find(&format!("bottleneck.sojourn.{}", g.common.name)), soj(0, Some(&ids)));
    }
    // drops: all of the run, the backlog after the drop over the rate
    let rate = out.links[0].rate_bps as u128;
    for (c, cause) in ["overflow", "random", "deterministic"].iter().enumerate() {
        let d: Vec<u64> = (0..p.len())
            .filter(|&i| p.link[i] == 0 && p.event[i] == 2 && p.cause[i] as usize == c + 1)
            .map(|i| (p.backlog_bytes[i] as u128 * 8_000_000_000 / rate) as u64)
            .collect();
        let hi = find(&format!("bottleneck.drop_delay.{cause}"));
        if d.is_empty() {
            assert_eq!(out.histograms[hi].count, 0);
        } else {
            check(hi, d);
        }
    }
    // packet records do not change the simulation, so neither the histograms
    let mut off = sc.clone();
    off.record.packets = false;
    let o2 = run(&off);
    assert!(o2.packets.is_empty());
    assert_eq!(o2.histogram_buckets.count, out.histogram_buckets.count);
    assert_eq!(o2.histogram_buckets.lo_ns, out.histogram_buckets.lo_ns);
}

/// Everything a run writes except its wall time and event count, as text (f64s print
/// in their shortest round-trip form, so equal text is equal bits).
fn outputs(mut o: aqmsim::RunOutput) -> String {
    o.wall_seconds = 0.0;
    o.events = 0;
    format!("{o:?}")
}

/// Eager DropTail links (link.rs) book a packet's passage at its arrival, or when it
/// enters the pipe that alone feeds the link, instead of event by event; and pipe
/// heads are kept apart from the event heap. With events at equal times in a fixed
/// order, both must give the same run as the plain event loop bit for bit: every
/// record, counter, histogram and sample. The cases drive the eager links through
/// queues and refusals (slow access links with small buffers, a reverse path that
/// drops ACKs, a DropTail bottleneck, byte-limited buffers), several groups feeding one
/// link, per-flow delay lines, a rate schedule, a trace bottleneck, a PIE or logged
/// reverse bottleneck between eager links, and samples every 10 ms.
#[test]
fn eager_droptail_links_give_the_event_driven_run_bit_for_bit() {
    let cases: &[(&str, &[&str])] = &[
        ("madpie-proof", &["duration=\"20s\""]),
        ("madpie-proof", &["duration=\"20s\"", "record.packets=false", "record.interval=\"10ms\""]),
        ("madpie-proof-droptail", &["duration=\"20s\"", "record.packets=false"]),
        ("madpie-proof-droptail", &["duration=\"20s\"", "record.packets=false", "access.rate=\"8Mbps\"", "access.buffer=\"20pkts\""]),
        (
            "madpie-proof",
            &["duration=\"20s\"", "bottleneck.reverse_rate=\"200kbps\"", "bottleneck.reverse_buffer=\"5pkts\"", "record.interval=\"10ms\""],
        ),
        ("madpie-rtt-mix", &["duration=\"20s\""]),
        ("madpie-rtt-mix", &["duration=\"20s\"", "record.packets=false", "access.rate=\"12Mbps\"", "access.buffer=\"8pkts\""]),
        ("jou-web-droptail", &["duration=\"160s\"", "record.packets=false"]),
        ("pie-lab-capacity", &["duration=\"60s\""]),
        ("madpie-proof", &["duration=\"20s\"", "bottleneck.trace={ms=[1,1,3,4,6,10]}", "access.rate=\"5Mbps\"", "access.buffer=\"30pkts\""]),
        ("palermo-mixed", &["duration=\"20s\""]),
        // byte-limited buffers; a PIE reverse bottleneck between eager links; a
        // logged reverse bottleneck (event by event) between eager links
        ("madpie-proof-droptail", &["duration=\"20s\"", "record.packets=false", "access.rate=\"8Mbps\"", "access.buffer=\"30KB\""]),
        ("madpie-proof", &["duration=\"20s\"", "bottleneck.reverse_aqm={kind=\"pie\"}", "bottleneck.reverse_rate=\"300kbps\""]),
        ("madpie-proof", &["duration=\"20s\"", "record.links=[\"bottleneck\",\"bottleneck_rev\"]"]),
    ];
    for (name, sets) in cases {
        let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let sc = Scenario::from_toml(builtin::get(name).unwrap(), &o).unwrap_or_else(|e| panic!("{name} {sets:?}: {e}"));
        let eager = Sim::new(&sc).unwrap().run(&mut |_| true).unwrap();
        let plain = Sim::new(&sc).unwrap().event_driven().run(&mut |_| true).unwrap();
        assert!(eager.events < plain.events, "{name} {sets:?}: {} events eager, {} event by event", eager.events, plain.events);
        let (a, b) = (outputs(eager), outputs(plain));
        if a != b {
            let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            let lo = at.saturating_sub(200);
            panic!("{name} {sets:?}: outputs differ at byte {at}:\n eager: …{}\n plain: …{}", &a[lo..(at + 200).min(a.len())], &b[lo..(at + 200).min(b.len())]);
        }
    }
}
