//! Whole-run digests of every scenario in `scenarios/`, pinned.
//!
//! Each case runs a scenario file to its end and hashes everything the run
//! produced (every record column, every counter, the resolved scenario) except the
//! wall time and the engine's event count, which measure the engine rather than
//! the run. A refactoring must leave every digest unchanged; a change of behaviour
//! (a fix, a new default) re-pins them in a commit of its own that says which moved
//! and why:
//!
//! ```sh
//! AQMLAB_BLESS_DIGESTS=1 cargo test --release -p aqmsim --test digests
//! ```
//!
//! rewrites `tests/digests.txt` (the event count is written beside each digest, for
//! information: an engine that does the same run with fewer events is welcome).
//! Variants per scenario: seeds 1, 2 and 3 with the scenario's own recording, and
//! seed 1 with summaries only (no packet or datagram rows), which runs the links'
//! fast paths.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const SEEDS: [u64; 3] = [1, 2, 3];
const SUMMARIES_ONLY: [&str; 2] = ["record.packets=false", "record.datagrams=false"];

struct Case {
    file: PathBuf,
    label: String,
    overrides: Vec<String>,
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let stem = f.file_stem().unwrap().to_str().unwrap().to_string();
        for seed in SEEDS {
            out.push(Case { file: f.clone(), label: format!("{stem} seed={seed}"), overrides: vec![format!("seed={seed}")] });
        }
        let mut o: Vec<String> = SUMMARIES_ONLY.iter().map(|s| s.to_string()).collect();
        o.push("seed=1".into());
        out.push(Case { file: f.clone(), label: format!("{stem} seed=1 summaries"), overrides: o });
    }
    out
}

/// (digest of the whole output: results, then the resolved scenario; events).
fn digest(c: &Case) -> (String, u64) {
    let text = std::fs::read_to_string(&c.file).unwrap();
    let sc = aqmsim::Scenario::from_toml_in(&text, &c.overrides, c.file.parent()).unwrap_or_else(|e| panic!("{}: {e}", c.label));
    let mut out = aqmsim::run(&sc, &mut |_| true).unwrap_or_else(|e| panic!("{}: {e}", c.label));
    let events = out.events;
    out.wall_seconds = 0.0;
    out.events = 0;
    let scenario = std::mem::take(&mut out.scenario_json);
    // Debug prints every float with enough digits to round-trip (and -0.0 apart
    // from 0.0), so equal text is equal bits, NaN payloads aside. The resolved
    // scenario is hashed apart, so that a change of its written form alone shows.
    let hex = |text: &str| Sha256::digest(text.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect::<String>();
    (format!("{}/{}", hex(&format!("{out:?}")), hex(&scenario)), events)
}

#[test]
fn every_scenario_runs_as_pinned() {
    let cases = cases();
    let pinned_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/digests.txt");
    // two threads: the cases are independent runs
    let results: Vec<(String, u64)> = std::thread::scope(|s| {
        type Half<'a> = Vec<(usize, &'a Case)>;
        let (a, b): (Half, Half) = cases.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let ha = s.spawn(move || a.into_iter().map(|(i, c)| (i, digest(c))).collect::<Vec<_>>());
        let hb = s.spawn(move || b.into_iter().map(|(i, c)| (i, digest(c))).collect::<Vec<_>>());
        let mut all: Vec<(usize, (String, u64))> = ha.join().unwrap();
        all.extend(hb.join().unwrap());
        all.sort_by_key(|x| x.0);
        all.into_iter().map(|x| x.1).collect()
    });
    let lines: Vec<String> = cases.iter().zip(&results).map(|(c, (d, ev))| format!("{}\t{d}\tevents={ev}", c.label)).collect();
    if std::env::var_os("AQMLAB_BLESS_DIGESTS").is_some() {
        let mut text = String::from("# scenario, variant\tdigest of the run's results / of its resolved scenario\tevents (for information)\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        std::fs::write(&pinned_path, text).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(&pinned_path).expect("tests/digests.txt (bless with AQMLAB_BLESS_DIGESTS=1)");
    let want: std::collections::BTreeMap<&str, &str> = pinned
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut it = l.split('\t');
            (it.next().unwrap(), it.next().unwrap_or(""))
        })
        .collect();
    let mut moved = Vec::new();
    for (c, (d, ev)) in cases.iter().zip(&results) {
        match want.get(c.label.as_str()) {
            Some(w) if *w == d => {}
            Some(w) => moved.push(format!("{}: pinned {w}, now {d} (events {ev})", c.label)),
            None => moved.push(format!("{}: not pinned (now {d})", c.label)),
        }
    }
    let labels: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.label.as_str()).collect();
    for k in want.keys().filter(|k| !labels.contains(*k)) {
        moved.push(format!("{k}: pinned, but no longer a case"));
    }
    assert!(moved.is_empty(), "{} of {} whole-run digests moved:\n{}", moved.len(), cases.len(), moved.join("\n"));
}
