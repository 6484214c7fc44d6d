//! Run a built-in scenario and print a few figures: `cargo run --release --example quick -- madpie-proof [KEY=VALUE ...]`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().cloned().unwrap_or_else(|| "madpie-proof".into());
    let text = aqmsim::builtin::get(&name).expect("built-in scenario");
    let sc = aqmsim::Scenario::from_toml(text, args.get(1..).unwrap_or(&[])).unwrap_or_else(|e| panic!("{e}"));
    let out = aqmsim::run(&sc, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let p = &out.packets;
    let mut soj: Vec<i64> = (0..p.len()).filter(|&i| p.event[i] == 1).map(|i| p.sojourn_ns[i]).collect();
    soj.sort();
    let q = |f: f64| if soj.is_empty() { f64::NAN } else { soj[((soj.len() - 1) as f64 * f) as usize] as f64 / 1e6 };
    let ls = &out.link_series;
    let util: Vec<f64> = (0..ls.time_ns.len()).filter(|&i| ls.link[i] == 0).map(|i| ls.busy_ns[i] as f64 / 1e8).collect();
    let mean_util = util.iter().sum::<f64>() / util.len() as f64;
    let st = &out.links[0].stats;
    println!("{name}: wall {:.3}s events {} ({:.1} M/s) rows {}", out.wall_seconds, out.events, out.events as f64 / out.wall_seconds / 1e6, p.len());
    println!("queue delay ms: p10 {:.1} p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}; mean util {:.3}", q(0.1), q(0.5), q(0.9), q(0.99), q(1.0), mean_util);
    println!("bottleneck: arrivals {} drops {:?} marks {:?}", st.arrivals, st.drops, st.marks);
    let f = &out.flows;
    for i in 0..f.flow.len() {
        println!("flow {i}: {:.2} Mbps retx {} rto {} rec {} srtt {:.0}ms", f.bytes_delivered[i] as f64 * 8.0 / (out.sim_ns as f64 / 1e9) / 1e6, f.retransmits[i], f.timeouts[i], f.recoveries[i], f.srtt_ns[i] as f64 / 1e6);
    }
    println!("{:?}", out.conservation);
}
