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
