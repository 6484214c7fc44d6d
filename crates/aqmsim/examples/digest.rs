//! Print a digest of a built-in scenario's whole output (everything but the wall
//! time): `cargo run --release -p aqmsim --example digest -- NAME [KEY=VALUE ...]`.
//! Two builds that print the same lines produced the same results, bit for bit
//! (floats are hashed through their bits).
use std::hash::{DefaultHasher, Hash, Hasher};

fn h<T: std::fmt::Debug>(x: &T) -> u64 {
    let mut s = DefaultHasher::new();
    format!("{x:?}").hash(&mut s);
    s.finish()
}

fn hf(v: &[f64]) -> u64 {
    let mut s = DefaultHasher::new();
    for x in v {
        x.to_bits().hash(&mut s);
    }
    s.finish()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().cloned().unwrap_or_else(|| "madpie-proof".into());
    let text = aqmsim::builtin::get(&name).expect("built-in scenario");
    let sc = aqmsim::Scenario::from_toml(text, args.get(1..).unwrap_or(&[])).unwrap_or_else(|e| panic!("{e}"));
    let out = aqmsim::run(&sc, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    println!("{name} {:?}", &args.get(1..).unwrap_or(&[]));
    println!("  events {} sim_ns {} seed {} rows {}", out.events, out.sim_ns, out.seed, out.packets.len());
    println!("  scenario {:016x}", h(&out.scenario_json));
    println!("  links {:016x} {:?}", h(&out.links), out.links.iter().map(|l| (&l.stats.arrivals, &l.stats.drops, &l.stats.marks)).collect::<Vec<_>>());
    println!("  groups {:016x} logged {:016x}", h(&out.groups), h(&out.logged_links));
    println!("  conservation {:?}", out.conservation);
    println!("  packets {:016x}", h(&out.packets));
    println!("  link_series {:016x} drop_prob {:016x}", h(&out.link_series), hf(&out.link_series.drop_prob));
    let fs = &out.flow_series;
    println!("  flow_series {:016x} cwnd {:016x} ssthresh {:016x}", h(fs), hf(&fs.cwnd), hf(&fs.ssthresh));
    println!("  flows {:016x}", h(&out.flows));
    println!("  flow_trace {:016x} cwnd {:016x}", h(&out.flow_trace), hf(&out.flow_trace.cwnd));
    println!("  transfers {:016x} datagrams {:016x}", h(&out.transfers), h(&out.datagrams));
    println!("  histograms {:016x} buckets {:016x}", h(&out.histograms), h(&out.histogram_buckets));
}
