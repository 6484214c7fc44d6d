//! Whole runs of the default scenario (Kuhn & Ros §III, PIE, RTT 500 ms), shortened
//! to 60 simulated seconds: `cargo bench -p aqmsim`. For the 300 s figures and the
//! events/packets per second, use `aqmlab bench`.

use criterion::{criterion_group, criterion_main, Criterion};

use aqmsim::{builtin, Scenario};

fn scenario(extra: &[&str]) -> Scenario {
    let mut o = vec!["duration=\"60s\"".to_string()];
    o.extend(extra.iter().map(|s| s.to_string()));
    Scenario::from_toml(builtin::get("madpie-proof").unwrap(), &o).unwrap()
}

fn whole_runs(c: &mut Criterion) {
    let mut g = c.benchmark_group("madpie-proof-60s");
    g.sample_size(10);
    for (name, extra) in [
        ("pie-rtt500", vec![]),
        ("pie-rtt500-no-packet-records", vec!["record.packets=false"]),
        ("droptail-rtt100", vec!["bottleneck.aqm.kind=\"droptail\"", "bottleneck.delay=\"48ms\""]),
    ] {
        let sc = scenario(&extra);
        g.bench_function(name, |b| b.iter(|| aqmsim::run(&sc, &mut |_| true).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, whole_runs);
criterion_main!(benches);
