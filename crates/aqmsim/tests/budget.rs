//! The memory estimate (`aqmsim::budget`) against the simulator's measured peak heap,
//! on scenarios where each part of the estimate dominates in turn: packet records,
//! flow samples, flows, datagram and download records, a full queue at 1 Gbps, the
//! links and histograms of many flow groups, an AQM's flow queues, topologies of
//! `[[links]]`. A counting allocator measures the peak. (The whole process, with the Python front's tables, is compared in the
//! Python suite, tests/test_budget.py.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use aqmsim::Scenario;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new > l.size() {
                grew(new - l.size());
            } else {
                CURRENT.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// (estimated core bytes, measured peak heap bytes, estimated and recorded packet
/// rows, the estimate's parts) of a run of the scenario `text` with `overrides`
fn measure(text: &str, overrides: &[&str]) -> (u64, u64, u64, u64, String) {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(text, &o).unwrap();
    let est = aqmsim::budget::estimate(&sc);
    let rows = est.parts.iter().find(|p| p.name == "record.packets").map_or(0, |p| p.count);
    let parts = est.parts.iter().map(|p| format!("{} {:.1}", p.name, p.bytes as f64 / 1e6)).collect::<Vec<_>>().join(", ");
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = aqmsim::run(&sc, &mut |_| true).unwrap();
    let peak = (PEAK.load(Relaxed) - base) as u64;
    let recorded = out.packets.len() as u64;
    drop(out);
    (est.core_bytes, peak, rows, recorded, parts)
}

/// A dumbbell with `groups` flow groups of one CUBIC flow each (a link side, its
/// histograms and four access links per group).
fn many_groups(groups: usize) -> String {
    let mut t = String::from(
        "name = \"groups\"\nduration = \"5s\"\n[bottleneck]\nrate = \"100Mbps\"\ndelay = \"20ms\"\nbuffer = \"1bdp\"\naqm = { kind = \"fq_codel\" }\n[record]\npackets = false\nflow_series = false\n",
    );
    for g in 0..groups {
        t.push_str(&format!("[[flows]]\nname = \"g{g}\"\ncount = 1\nstart = {{ uniform = [\"0s\", \"1s\"] }}\n"));
    }
    t
}

#[test]
fn the_estimate_is_within_a_factor_of_two_of_the_measured_peak_and_never_far_below() {
    // one test, so that the cases run one after another (the counter is global)
    let off = ["record.packets=false", "record.flow_series=false", "record.datagrams=false"];
    let b = |name: &str| aqmsim::builtin::get(name).unwrap().to_string();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("default scenario, 60 s", b("madpie-proof"), vec!["duration=\"60s\""]),
        ("packet records, 100 Mbps", b("madpie-proof"), vec!["duration=\"30s\"", "bottleneck.rate=\"100Mbps\"", "record.flow_series=false"]),
        ("flow samples, 300 flows", b("madpie-proof"), vec!["duration=\"60s\"", "flows.0.count=300", "record.packets=false"]),
        ("20,000 flows", b("madpie-proof"), [vec!["duration=\"2s\"", "flows.0.count=20000"], off.to_vec()].concat()),
        ("datagrams and downloads", b("madpie-mix"), vec!["duration=\"120s\"", "record.packets=false"]),
        ("1 Gbps, 1,000 flows, 3 s", b("gbps-1000-flows"), vec!["duration=\"3s\""]),
        ("a parking lot of [[links]]", b("parking-lot"), vec!["duration=\"30s\""]),
        ("AQMs in series", b("aqm-series"), vec!["duration=\"30s\""]),
        ("FQ-CoDel with 65,536 queues", b("madpie-proof"), [vec!["duration=\"5s\"", "bottleneck.aqm.kind=\"fq_codel\"", "bottleneck.aqm.flows=65536"], off.to_vec()].concat()),
        ("CAKE", b("madpie-proof"), [vec!["duration=\"5s\"", "bottleneck.aqm.kind=\"cake\""], off.to_vec()].concat()),
        ("300 flow groups", many_groups(300), vec![]),
    ];
    let mut report = Vec::new();
    for (what, text, o) in &cases {
        let (est, got, rows, recorded, parts) = measure(text, o);
        let ratio = est as f64 / got as f64;
        report.push(format!("{what}: estimate {:.1} MB, measured {:.1} MB, ratio {ratio:.2}; packet rows estimated {rows}, recorded {recorded} ({parts})", est as f64 / 1e6, got as f64 / 1e6));
        // small runs are mostly the fixed base: there the estimate may be a couple of
        // megabytes above the measurement
        assert!(ratio >= 0.8 && (ratio <= 2.0 || est < got + 2_000_000), "{}", report.join("\n"));
        if recorded > 0 {
            let r = rows as f64 / recorded as f64;
            assert!((0.9..=1.5).contains(&r), "{}", report.join("\n"));
        }
    }
    println!("{}", report.join("\n"));
}
