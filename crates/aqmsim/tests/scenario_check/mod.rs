//! What any scenario document must come to, shared by the property tests
//! (`tests/scenario_documents.rs`, in CI) and the cargo-fuzz targets
//! (`fuzz/fuzz_targets/scenario_*.rs`, for hours outside CI):
//!
//! * parsing never panics: the document is a scenario, or an error on one line;
//! * a scenario that parses round-trips through its resolved JSON (what a run folder
//!   keeps and `aqmlab run DIR` reads back) to the same scenario;
//! * the memory estimate (`aqmsim::budget`) is computed for it;
//! * one that is cheap enough runs to its end, or to the deadline, or to a one-line
//!   error, and never breaks packet conservation.
//!
//! Documents come from three sources, each with a generator here: built-in scenarios
//! mutated line by line, documents assembled from valid pieces, and random overrides.

#![allow(dead_code)] // each includer uses a part

use std::time::{Duration as WallDuration, Instant};

use aqmsim::{Scenario, SimError};

/// How a document ended.
#[derive(Debug)]
pub enum Outcome {
    /// Refused with this one-line message (at parsing, or when the run was built).
    Refused(String),
    /// Valid, but beyond the limits of a test case (memory or packets).
    TooBig,
    /// Ran to its end.
    Ran,
    /// Ran until the deadline.
    Stopped,
}

/// Limits of one case.
#[derive(Clone, Copy)]
pub struct Limits {
    /// The simulator's estimated peak heap.
    pub core_bytes: u64,
    /// Packets through the bottleneck.
    pub packets: u64,
    /// Wall time of a run.
    pub wall: WallDuration,
}

pub const CI: Limits = Limits { core_bytes: 64 << 20, packets: 150_000, wall: WallDuration::from_millis(300) };
pub const FUZZ: Limits = Limits { core_bytes: 256 << 20, packets: 2_000_000, wall: WallDuration::from_secs(2) };

fn one_line(what: &str, m: &str) -> Result<(), String> {
    if m.trim().is_empty() || m.contains('\n') || m.contains('\r') {
        return Err(format!("{what}: the error is not one non-empty line: {m:?}"));
    }
    Ok(())
}

/// Check one document (TOML text and `--set` overrides) against the properties above.
pub fn check(text: &str, overrides: &[String], limits: Limits) -> Result<Outcome, String> {
    let sc = match Scenario::from_toml(text, overrides) {
        Ok(sc) => sc,
        Err(e) => {
            let m = e.to_string();
            one_line("parsing", &m)?;
            return Ok(Outcome::Refused(m));
        }
    };
    check_scenario(&sc, limits)
}

pub fn check_scenario(sc: &Scenario, limits: Limits) -> Result<Outcome, String> {
    let json = sc.to_json();
    match Scenario::from_json(&json, &[]) {
        Ok(again) if &again == sc => {}
        Ok(again) => return Err(format!("the resolved scenario does not read back the same:\n{sc:?}\n{again:?}")),
        Err(e) => return Err(format!("the resolved scenario does not read back: {e}\n{json}")),
    }
    let est = aqmsim::budget::estimate(sc);
    if est.core_bytes > limits.core_bytes || est.packets > limits.packets {
        return Ok(Outcome::TooBig);
    }
    let deadline = Instant::now() + limits.wall;
    let mut stopped = false;
    match aqmsim::run(sc, &mut |_| {
        stopped = Instant::now() > deadline;
        !stopped
    }) {
        Ok(o) if o.conservation.holds() => Ok(Outcome::Ran),
        Ok(o) => Err(format!("conservation does not hold: {:?}", o.conservation)),
        Err(SimError::Interrupted) if stopped => Ok(Outcome::Stopped),
        Err(SimError::Scenario(e)) => {
            let m = e.to_string();
            one_line("building the run", &m)?;
            Ok(Outcome::Refused(m))
        }
        Err(e) => Err(format!("the run failed: {e}")),
    }
}

/// A small deterministic generator (SplitMix64) driving the mutations, so that the
/// proptest and libFuzzer inputs are just numbers and bytes.
pub struct Mix(pub u64);

impl Mix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<'a>(&mut self, xs: &'a [&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// Values a field may be given: valid ones of every type the schema uses, the
/// extremes, and nonsense.
pub const VALUES: &[&str] = &[
    "\"0s\"", "\"1ns\"", "\"1ms\"", "\"48ms\"", "\"2s\"", "\"300s\"", "\"1e9s\"", "\"-5ms\"", "\"18446744073709551615ns\"", "\"99999999999999999999s\"",
    "\"1bps\"", "\"1Mbps\"", "\"10Mbps\"", "\"1Gbps\"", "\"100Gbps\"", "\"0Mbps\"", "\"18446744073709551615bps\"", "\"10\"",
    "\"0B\"", "\"1B\"", "\"40B\"", "\"1500B\"", "\"64KB\"", "\"1pkts\"", "\"100pkts\"", "\"0pkts\"", "\"1bdp\"", "\"0.001bdp\"", "\"1e30bdp\"", "\"nanbdp\"",
    "0", "1", "-1", "2", "10", "1000", "100000", "4294967296", "9223372036854775807", "0.5", "1e300", "nan", "inf", "-inf",
    "true", "false", "\"\"", "\"x\"", "\"é\"", "[]", "{}", "[\"0s\", \"1s\"]", "[\"1s\", \"0s\"]", "{ uniform = [\"0s\", \"1s\"] }", "{ uniform = [\"0s\"] }",
    "{ exponential = \"1s\" }", "{ pareto = { scale = \"2KB\", shape = 1.3 } }", "{ pareto = { scale = \"0B\", shape = 0 } }", "[\"15KB\", \"44KB\"]",
    "\"pie\"", "\"codel\"", "\"fq_codel\"", "\"red\"", "\"ared\"", "\"ared_sliding\"", "\"madpie\"", "\"red_tail\"", "\"droptail\"", "\"blue\"",
    "{ kind = \"pie\", target = \"1ms\" }", "{ kind = \"codel\" }", "{ kind = \"red\", min_th = \"1pkts\", max_th = \"2pkts\" }",
    "\"bulk\"", "\"cbr\"", "\"files\"", "\"web\"", "\"transfer\"", "\"cubic\"", "\"newreno\"", "\"reno\"", "\"bbr\"", "\"vegas\"",
    "\"bottleneck\"", "\"bottleneck_rev\"", "[\"bottleneck\", \"bottleneck_rev\"]", "[0]", "[\"bulk\"]", "[{ at = \"1s\", rate = \"5Mbps\" }]",
    "{ kind = \"palermo\" }", "{ kind = \"drs\" }", "\"new\"", "\"persistent\"",
    "\"dualpi2\"", "\"fq_pie\"", "\"cobalt\"", "\"cake\"", "{ kind = \"cake\", bandwidth = \"2Mbps\" }", "{ kind = \"dualpi2\", coupling_factor = 0 }",
    // topologies: link and node names, routes, reverse sides
    "\"l0\"", "\"l1\"", "\"n0\"", "\"n1\"", "[\"l0\"]", "[\"l0\", \"l1\"]", "[\"l1\", \"l0\"]", "[\"l0\", \"l0\"]", "[\"l0\", \"l2\"]", "[\"zz\"]",
    "[\"b1\", \"b2\"]", "[\"al\", \"b1\", \"d1\"]", "[\"l0_rev\"]", "[\"b1\", \"b1_rev\"]", "{ aqm = \"codel\", rate = \"1Mbps\" }", "{ buffer = \"0pkts\" }",
    "[{ name = \"x\", from = \"a\", to = \"b\", rate = \"1Mbps\", delay = \"1ms\", buffer = \"10pkts\" }]",
];

/// Field paths to set: every part of the schema, and paths that do not exist.
pub const KEYS: &[&str] = &[
    "name", "duration", "seed", "description",
    "bottleneck.rate", "bottleneck.delay", "bottleneck.buffer", "bottleneck.aqm", "bottleneck.aqm.kind", "bottleneck.aqm.target",
    "bottleneck.aqm.tupdate", "bottleneck.aqm.interval", "bottleneck.aqm.min_th", "bottleneck.aqm.max_th", "bottleneck.aqm.flows",
    "bottleneck.aqm.quantum", "bottleneck.aqm.ecn", "bottleneck.aqm.pie.target", "bottleneck.aqm.ared.interval",
    "bottleneck.schedule", "bottleneck.reverse_rate", "bottleneck.reverse_delay", "bottleneck.reverse_buffer", "bottleneck.reverse_aqm",
    "bottleneck.reverse_aqm.kind", "bottleneck.trace",
    "access.rate", "access.delay", "access.buffer",
    "record.packets", "record.links", "record.interval", "record.flow_series", "record.flow_trace", "record.datagrams",
    "metrics.warmup", "metrics.utilization_interval", "metrics.goodput_interval",
    "flows.0.name", "flows.0.count", "flows.0.kind", "flows.0.start", "flows.0.stop", "flows.0.rate", "flows.0.packet_size",
    "flows.0.ecn", "flows.0.size", "flows.0.sizes", "flows.0.think", "flows.0.connection",
    "flows.0.path.sender_delay", "flows.0.path.receiver_delay", "flows.0.path.return_delay", "flows.0.path.flow_delay",
    "flows.0.tcp.cc", "flows.0.tcp.mss", "flows.0.tcp.header", "flows.0.tcp.initial_window", "flows.0.tcp.ecn", "flows.0.tcp.sack",
    "flows.0.tcp.handshake", "flows.0.tcp.delayed_ack", "flows.0.tcp.ack_every", "flows.0.tcp.dupthresh", "flows.0.tcp.rto_min",
    "flows.0.tcp.rto_max", "flows.0.tcp.rto_initial", "flows.0.tcp.receive_window", "flows.0.tcp.receiver", "flows.0.tcp.receiver.kind",
    "flows.0.tcp.quickack", "flows.0.tcp.delack_timeout", "flows.0.tcp.cubic.beta", "flows.0.tcp.cubic.c",
    "flows.1.count", "flows.1.kind", "flows.1.rate", "flows.9.count",
    "bottleneck.aqm.bandwidth", "bottleneck.aqm.coupling_factor", "bottleneck.aqm.overhead", "bottleneck.aqm.blue_increment",
    "flows.0.path.sender_host", "flows.0.path.receiver_host",
    // topologies of [[links]]
    "links", "links.0.name", "links.0.from", "links.0.to", "links.0.rate", "links.0.delay", "links.0.buffer", "links.0.aqm",
    "links.0.aqm.kind", "links.0.aqm.flows", "links.0.schedule", "links.0.reverse", "links.0.reverse.rate", "links.0.reverse.aqm",
    "links.0.reverse.buffer", "links.1.name", "links.1.to", "links.1.rate", "links.3.from", "links.9.rate",
    "flows.0.route", "flows.1.route", "flows.0.route.0",
    "", ".", "a..b", "flows.x.count", "flows.-1.count", "duration.x", "bottleneck.rate.x", "colour", "flows",
];

/// Lines inserted into documents (each a key with a value, or a table header).
const LINES: &[&str] = &[
    "[bottleneck]", "[access]", "[record]", "[metrics]", "[[flows]]", "[flows.tcp]", "[bottleneck.aqm]",
    "kind = \"cbr\"", "rate = \"5Mbps\"", "count = 3", "name = \"extra\"", "packets = false", "flow_series = false",
    "duration = \"2s\"", "aqm = \"codel\"", "buffer = \"10pkts\"", "start = \"0.5s\"", "stop = \"1s\"", "interval = \"10ms\"",
    "warmup = \"1s\"", "links = [\"bottleneck\", \"bottleneck_rev\"]", "flow_trace = [0]", "ecn = true", "cc = \"newreno\"",
    "[[links]]", "[links.reverse]", "from = \"r1\"", "to = \"r2\"", "route = [\"b1\"]", "route = [\"b2\", \"b1\"]", "name = \"b1\"",
];

/// A built-in scenario with a few random edits: lines deleted, duplicated, swapped,
/// values replaced, lines inserted, the text cut short; and a duration short enough to
/// run within a test case most of the time.
pub fn mutated_builtin(m: &mut Mix) -> String {
    let all = aqmsim::builtin::SCENARIOS;
    let (_, text) = all[m.below(all.len())];
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if m.below(3) > 0 {
        // run it short (the first line that sets the duration)
        if let Some(l) = lines.iter_mut().find(|l| l.trim_start().starts_with("duration")) {
            *l = format!("duration = \"{}\"", m.pick(&["1s", "2s", "5s"]));
        }
        // and a warm-up that ends before it
        if let Some(l) = lines.iter_mut().find(|l| l.trim_start().starts_with("warmup")) {
            *l = "warmup = \"0s\"".to_string();
        }
    }
    for _ in 0..1 + m.below(4) {
        let n = lines.len().max(1);
        let i = m.below(n);
        match m.below(7) {
            0 if !lines.is_empty() => {
                lines.remove(i);
            }
            1 if !lines.is_empty() => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 if lines.len() > 1 => {
                let j = m.below(lines.len());
                lines.swap(i, j);
            }
            3 | 4 if !lines.is_empty() => {
                if let Some((k, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{k}= {}", m.pick(VALUES));
                }
            }
            5 => lines.insert(i.min(lines.len()), m.pick(LINES).to_string()),
            _ => {
                let mut s = lines.join("\n");
                let mut cut = m.below(s.len() + 1);
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
                lines = s.lines().map(str::to_string).collect();
            }
        }
    }
    lines.join("\n")
}

/// A document assembled from valid pieces: a bottleneck with any registered AQM (or,
/// one time in three, a topology of [[links]]: a chain of one to four links with any
/// AQMs, each group routed over a stretch of it in either direction), one to three
/// groups of any traffic kind, optional recording settings.
pub fn assembled(m: &mut Mix) -> String {
    if m.below(3) == 0 {
        return assembled_topology(m);
    }
    let kinds: Vec<&str> = aqm::AqmSpec::KINDS.iter().map(|k| k.kind).collect();
    let mut s = format!(
        "name = \"gen\"\nduration = \"{}\"\nseed = {}\n[bottleneck]\nrate = \"{}\"\ndelay = \"{}\"\nbuffer = \"{}\"\naqm = {{ kind = \"{}\" }}\n",
        m.pick(&["1s", "2s", "3s"]),
        m.below(1000),
        m.pick(&["1Mbps", "5Mbps", "10Mbps", "50Mbps"]),
        m.pick(&["0ms", "1ms", "10ms", "48ms", "150ms"]),
        m.pick(&["1pkts", "5pkts", "100pkts", "1bdp", "0.25bdp", "64KB", "3000B"]),
        kinds[m.below(kinds.len())],
    );
    if m.below(3) == 0 {
        s += &format!("reverse_aqm = {{ kind = \"{}\" }}\n", kinds[m.below(kinds.len())]);
    }
    if m.below(4) == 0 {
        s += "schedule = [{ at = \"0.5s\", rate = \"2Mbps\" }]\n";
    }
    if m.below(2) == 0 {
        s += &format!(
            "[record]\npackets = {}\nflow_series = {}\nlinks = {}\ninterval = \"{}\"\n",
            m.below(2) == 0,
            m.below(2) == 0,
            m.pick(&["[\"bottleneck\"]", "[\"bottleneck\", \"bottleneck_rev\"]", "[]"]),
            m.pick(&["10ms", "100ms", "500ms"])
        );
    }
    for g in 0..1 + m.below(3) {
        let count = 1 + m.below(5);
        let start = m.pick(&["\"0s\"", "\"0.2s\"", "{ uniform = [\"0s\", \"0.5s\"] }"]);
        s += &format!("[[flows]]\nname = \"g{g}\"\ncount = {count}\nstart = {start}\n");
        match m.below(5) {
            0 => s += &format!("kind = \"cbr\"\nrate = \"{}\"\npacket_size = \"{}\"\necn = {}\n", m.pick(&["100kbps", "1Mbps", "20Mbps"]), m.pick(&["29B", "218B", "1500B"]), m.below(2) == 0),
            1 => s += &format!("kind = \"files\"\nthink = {{ exponential = \"{}\" }}\n", m.pick(&["10ms", "0.5s"])),
            2 => s += "kind = \"web\"\n",
            3 => s += &format!("kind = \"transfer\"\nsize = \"{}\"\n", m.pick(&["1B", "3KB", "1MB"])),
            _ => s += "kind = \"bulk\"\n",
        }
        if m.below(3) == 0 {
            s += &format!(
                "stop = \"{}\"\n",
                m.pick(&["0.9s", "1s"])
            );
        }
        if m.below(2) == 0 {
            s += &format!(
                "tcp = {{ cc = \"{}\", ecn = {}, sack = {}, handshake = {}, delayed_ack = {} }}\n",
                m.pick(&["cubic", "newreno", "reno"]),
                m.below(2) == 0,
                m.below(2) == 0,
                m.below(2) == 0,
                m.below(2) == 0
            );
        }
        if m.below(4) == 0 {
            s += "path = { sender_delay = \"5ms\", flow_delay = { uniform = [\"0ms\", \"20ms\"] } }\n";
        }
    }
    s
}

/// A chain of links n0 - n1 - ... with routes over stretches of it (see [`assembled`]).
fn assembled_topology(m: &mut Mix) -> String {
    let kinds: Vec<&str> = aqm::AqmSpec::KINDS.iter().map(|k| k.kind).collect();
    let links = 1 + m.below(4);
    let mut s = format!("name = \"gen-topology\"\nduration = \"{}\"\nseed = {}\n", m.pick(&["1s", "2s", "3s"]), m.below(1000));
    for l in 0..links {
        s += &format!(
            "[[links]]\nname = \"l{l}\"\nfrom = \"n{l}\"\nto = \"n{}\"\nrate = \"{}\"\ndelay = \"{}\"\nbuffer = \"{}\"\naqm = {{ kind = \"{}\" }}\n",
            l + 1,
            m.pick(&["1Mbps", "5Mbps", "10Mbps", "100Mbps"]),
            m.pick(&["0ms", "1ms", "10ms", "48ms"]),
            m.pick(&["1pkts", "5pkts", "100pkts", "1bdp", "0.25bdp", "64KB"]),
            kinds[m.below(kinds.len())],
        );
        if m.below(3) == 0 {
            s += &format!("reverse = {{ aqm = \"{}\", rate = \"{}\" }}\n", kinds[m.below(kinds.len())], m.pick(&["1Mbps", "10Mbps"]));
        }
    }
    if m.below(2) == 0 {
        let side = format!("\"l{}{}\"", m.below(links), m.pick(&["", "_rev"]));
        s += &format!("[record]\npackets = {}\nflow_series = {}\nlinks = [{side}]\n", m.below(2) == 0, m.below(2) == 0);
    }
    for g in 0..1 + m.below(3) {
        // a stretch of the chain, forward or backward
        let a = m.below(links);
        let b = a + m.below(links - a);
        let mut route: Vec<String> = (a..=b).map(|l| format!("\"l{l}\"")).collect();
        if m.below(2) == 0 {
            route.reverse();
        }
        s += &format!("[[flows]]\nname = \"g{g}\"\ncount = {}\nstart = {{ uniform = [\"0s\", \"0.5s\"] }}\nroute = [{}]\n", 1 + m.below(4), route.join(", "));
        match m.below(4) {
            0 => s += &format!("kind = \"cbr\"\nrate = \"{}\"\n", m.pick(&["100kbps", "1Mbps", "20Mbps"])),
            1 => s += "kind = \"web\"\n",
            _ => s += &format!("tcp = {{ cc = \"{}\", ecn = {} }}\n", m.pick(&["cubic", "newreno", "bbr"]), m.below(2) == 0),
        }
    }
    s
}

/// Fields with values of their own type (valid ones and edge cases), so that random
/// overrides also make scenarios that run.
const TYPED: &[(&str, &[&str])] = &[
    ("bottleneck.rate", &["\"1Mbps\"", "\"5Mbps\"", "\"50Mbps\"", "\"1bps\""]),
    ("bottleneck.delay", &["\"0ms\"", "\"1ms\"", "\"100ms\""]),
    ("bottleneck.buffer", &["\"1pkts\"", "\"20pkts\"", "\"0.5bdp\"", "\"3000B\""]),
    ("bottleneck.aqm.kind", &["\"pie\"", "\"codel\"", "\"fq_codel\"", "\"red\"", "\"ared\"", "\"dualpi2\"", "\"fq_pie\"", "\"cobalt\"", "\"cake\""]),
    ("bottleneck.reverse_aqm", &["\"codel\"", "\"cake\"", "\"dualpi2\""]),
    ("flows.0.count", &["1", "3", "40"]),
    ("flows.0.kind", &["\"bulk\"", "\"web\"", "\"files\""]),
    ("flows.0.tcp.cc", &["\"cubic\"", "\"newreno\"", "\"bbr\""]),
    ("flows.0.tcp.ecn", &["true", "false"]),
    ("flows.0.start", &["\"0s\"", "\"1s\"", "{ uniform = [\"0s\", \"1s\"] }"]),
    ("record.packets", &["true", "false"]),
    ("record.interval", &["\"1ms\"", "\"50ms\""]),
    ("access.rate", &["\"5Mbps\"", "\"1Gbps\""]),
];

/// `n` random `--set` assignments: a field with a value of its type, a schema path
/// with any value, or a bare value.
pub fn overrides(m: &mut Mix, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| match m.below(10) {
            0 => m.pick(VALUES).to_string(),
            1..=4 => {
                let (k, vs) = TYPED[m.below(TYPED.len())];
                format!("{k}={}", m.pick(vs))
            }
            _ => format!("{}={}", m.pick(KEYS), m.pick(VALUES)),
        })
        .collect()
}
