//! The scenario schema: the one place it is declared (Python passes TOML or dicts
//! through and never re-declares it).
//!
//! Parsing is strict: unknown fields, malformed quantities, impossible values are
//! errors that name the field by its dotted path and the offending value, e.g.
//! `bottleneck.aqm.target: invalid duration "-5ms": must not be negative`.
//!
//! Tables tagged by `kind` (the AQM, a flow group's traffic) are split by hand before
//! serde sees them, so that errors inside them keep their field names.

use std::fmt;

use std::path::Path;

use aqm::{AqmSpec, Duration, QueueLimit, Rate};
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

mod spec;
pub mod topology;

pub use spec::*;

use crate::dist::TimeDist;
pub use crate::endpoint::downloads::Connection;
pub use crate::endpoint::TrafficSpec;
pub use topology::{Hops, LinkDecl, Side};
use crate::net::trace::LinkTrace;

/// The most flows a scenario may have: the simulator's events carry a flow index
/// in 28 bits (`sim.rs` checks that its packing agrees).
pub const MAX_FLOWS: u64 = (1 << 28) - 1;

/// A scenario error: the dotted path of the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    /// One line: control characters that came from the input (a key or value with a
    /// carriage return, a NUL) are written escaped, `\r`, `\u{0}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write_escaped(f, &self.path)?;
            f.write_str(": ")?;
        }
        write_escaped(f, &self.message)
    }
}

fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            fmt::Write::write_char(f, c)?;
        }
    }
    Ok(())
}
impl std::error::Error for ScenarioError {}

fn err(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError { path: path.into(), message: message.into() }
}

fn join(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty() || rest == ".") {
        (true, _) => rest.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) if rest.starts_with('[') => format!("{prefix}{rest}"),
        (false, false) => format!("{prefix}.{rest}"),
    }
}

/// Deserialize `v` as `T`, reporting errors with their path under `prefix`.
pub(crate) fn de_at<T: DeserializeOwned>(prefix: &str, v: toml::Value) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = join(prefix, &e.path().to_string());
        err(path, clean_message(&e.inner().to_string()))
    })
}

/// serde's messages name the field again ("unknown field `x`, expected ..."); keep
/// them, but drop the trailing location that the TOML deserializer may add.
fn clean_message(m: &str) -> String {
    m.lines().next().unwrap_or(m).trim().to_string()
}

fn take_table(v: toml::Value, path: &str) -> Result<toml::Table, ScenarioError> {
    match v {
        toml::Value::Table(t) => Ok(t),
        other => Err(err(path, format!("expected a table, got {}", other.type_str()))),
    }
}

fn take_kind(t: &mut toml::Table, path: &str, default: Option<&str>) -> Result<String, ScenarioError> {
    match t.remove("kind") {
        Some(toml::Value::String(s)) => Ok(s),
        Some(other) => Err(err(format!("{path}.kind"), format!("expected a string, got {}", other.type_str()))),
        None => default.map(str::to_string).ok_or_else(|| err(path, "missing field `kind`")),
    }
}

/// Turn a validation message of the form `field: problem` into a path under `prefix`.
fn validation_error(prefix: &str, msg: &str) -> ScenarioError {
    match msg.split_once(": ") {
        Some((field, rest)) if !field.is_empty() && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') => {
            err(join(prefix, field), rest)
        }
        _ => err(prefix, msg),
    }
}

fn parse_aqm(path: &str, v: Option<toml::Value>) -> Result<AqmSpec, ScenarioError> {
    let Some(v) = v else { return Ok(AqmSpec::default()) };
    let v = match v {
        // `aqm = "pie"`: the kind with its default parameters
        toml::Value::String(s) => toml::Value::Table(toml::Table::from_iter([("kind".to_string(), toml::Value::String(s))])),
        other => other,
    };
    let mut t = take_table(v, path)?;
    let kind = take_kind(&mut t, path, None)?;
    if AqmSpec::default_for(&kind).is_none() {
        let kinds: Vec<&str> = AqmSpec::KINDS.iter().map(|k| k.kind).collect();
        return Err(err(format!("{path}.kind"), format!("unknown AQM \"{kind}\", expected one of: {}", kinds.join(", "))));
    }
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(toml::Value::Table(t), &mut track);
    match AqmSpec::from_kind(&kind, de) {
        Ok(spec) => Ok(spec),
        Err(e) => {
            let inner = track.path().to_string();
            let msg = clean_message(&e.to_string());
            Err(if inner.is_empty() || inner == "." { validation_error(path, &msg) } else { err(join(path, &inner), msg) })
        }
    }
}

/// A congestion control that needs ECN or AccECN feedback (DCTCP, Prague: Linux's
/// `TCP_CONG_NEEDS_ECN`, `TCP_CONG_NEEDS_ACCECN`) gets it: `tcp.ecn` and `tcp.accecn`
/// are set in the resolved scenario, so that it says what runs; AccECN is a form of
/// ECN and sets `ecn` too. Saying `false` to what the congestion control needs is an
/// error naming the field.
fn ecn_for_cc(path: &str, tcp: &mut toml::Table) -> Result<(), ScenarioError> {
    let kind = match tcp.get("cc") {
        Some(toml::Value::String(k)) => Some(k.clone()),
        Some(toml::Value::Table(t)) => t.get("kind").and_then(|k| k.as_str()).map(str::to_string),
        _ => None,
    };
    let kind = kind.as_deref();
    let info = kind.and_then(|k| crate::tcp::CcSpec::KINDS.iter().find(|i| i.kind == k));
    let (needs_ecn, needs_accecn) = info.map_or((false, false), |i| (i.needs_ecn, i.needs_accecn));
    let (ecn, accecn) = (tcp.get("ecn").and_then(|v| v.as_bool()), tcp.get("accecn").and_then(|v| v.as_bool()));
    if needs_accecn {
        if accecn == Some(false) {
            let k = kind.unwrap_or_default();
            return Err(err(format!("{path}.accecn"), format!("{k} needs Accurate ECN feedback (RFC 9331 §4.2, RFC 9768), got false")));
        }
        tcp.insert("accecn".into(), toml::Value::Boolean(true));
    }
    if needs_ecn || accecn == Some(true) {
        if ecn == Some(false) {
            let why = match kind.filter(|_| needs_ecn) {
                Some(k) => format!("{k} needs ECN (it answers CE marks, RFC 8257 / RFC 9331), got false"),
                None => "accecn = true is ECN feedback: it needs ecn, got false".to_string(),
            };
            return Err(err(format!("{path}.ecn"), why));
        }
        tcp.insert("ecn".into(), toml::Value::Boolean(true));
    }
    Ok(())
}

/// The older form of CUBIC's parameters, `tcp.cubic = { ... }` beside `tcp.cc`, read
/// into today's `tcp.cc = { kind = "cubic", ... }` (its values win over the same
/// ones in `tcp.cc`, as an override of the old form should). Beside another
/// congestion control it is an error, unless it holds CUBIC's defaults (as every
/// `scenario.json` written by earlier versions does).
fn legacy_cubic_table(path: &str, tcp: &mut toml::Table) -> Result<(), ScenarioError> {
    let Some(legacy) = tcp.remove("cubic") else { return Ok(()) };
    let toml::Value::Table(legacy) = legacy else {
        return Err(err(format!("{path}.cubic"), format!("expected a table, got {}", legacy.type_str())));
    };
    let mut cc = match tcp.remove("cc") {
        None => toml::Table::from_iter([("kind".to_string(), toml::Value::String("cubic".into()))]),
        Some(toml::Value::String(k)) => toml::Table::from_iter([("kind".to_string(), toml::Value::String(k))]),
        Some(toml::Value::Table(t)) => t,
        Some(other) => return Err(err(format!("{path}.cc"), format!("expected a congestion control name or table, got {}", other.type_str()))),
    };
    let kind = cc.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
    // checked where it was written, so that an error names `tcp.cubic.<field>`
    let given: crate::tcp::CubicParams = de_at(&format!("{path}.cubic"), toml::Value::Table(legacy.clone()))?;
    if kind == "cubic" {
        cc.extend(legacy);
    } else if given != crate::tcp::CubicParams::default() {
        return Err(err(format!("{path}.cubic"), format!("CUBIC's parameters, but this group's congestion control is \"{kind}\"")));
    }
    tcp.insert("cc".into(), toml::Value::Table(cc));
    Ok(())
}

/// Check a `tcp.cc = { kind = "...", ... }` table's parameters against its kind,
/// so that an error names the field (`tcp.cc.alpha_to_one`): the congestion
/// control's own deserialization is tagged by `kind`, which hides the inner path.
fn cc_params_at(path: &str, tcp: &toml::Table) -> Result<(), ScenarioError> {
    let Some(toml::Value::Table(cc)) = tcp.get("cc") else { return Ok(()) };
    let Some(toml::Value::String(kind)) = cc.get("kind") else { return Ok(()) };
    let mut rest = cc.clone();
    rest.remove("kind");
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(toml::Value::Table(rest), &mut track);
    match crate::tcp::CcSpec::from_kind(kind, de) {
        Ok(_) => Ok(()),
        Err(e) => Err(err(join(path, &track.path().to_string()), clean_message(&e.to_string()))),
    }
}

fn parse_group(path: &str, v: toml::Value) -> Result<FlowGroupSpec, ScenarioError> {
    let mut t = take_table(v, path)?;
    let kind = take_kind(&mut t, path, Some("bulk"))?;
    let mut common = toml::Table::new();
    for key in GROUP_COMMON_KEYS {
        if let Some(x) = t.remove(*key) {
            common.insert(key.to_string(), x);
        }
    }
    let common: GroupCommon = de_at(path, toml::Value::Table(common))?;
    if common.name.is_empty() {
        return Err(err(format!("{path}.name"), "must not be empty"));
    }
    if common.count == 0 {
        return Err(err(format!("{path}.count"), "must be at least 1, got 0"));
    }
    for (key, host) in [("sender_host", &common.path.sender_host), ("receiver_host", &common.path.receiver_host)] {
        if host.as_deref().is_some_and(|h| h.trim().is_empty()) {
            return Err(err(format!("{path}.path.{key}"), "must not be empty: a host name"));
        }
    }
    if common.path.flow_delay.as_ref().is_some_and(|d| d.max().is_none()) {
        return Err(err(format!("{path}.path.flow_delay"), "must be bounded: a fixed time or { uniform = [a, b] }"));
    }
    // `receiver = "palermo"` is shorthand for `receiver = { kind = "palermo" }`.
    if let Some(toml::Value::Table(tcp)) = t.get_mut("tcp") {
        if let Some(toml::Value::String(k)) = tcp.get("receiver") {
            let k = k.clone();
            tcp.insert("receiver".into(), toml::Value::Table(toml::Table::from_iter([("kind".to_string(), toml::Value::String(k))])));
        }
        legacy_cubic_table(&format!("{path}.tcp"), tcp)?;
        ecn_for_cc(&format!("{path}.tcp"), tcp)?;
        cc_params_at(&format!("{path}.tcp.cc"), tcp)?;
    }
    let traffic = TrafficSpec::parse(path, &kind, toml::Value::Table(t))?;
    if let Some(tcp) = traffic.tcp() {
        tcp.validate().map_err(|m| validation_error(&format!("{path}.tcp"), &m))?;
    }
    traffic.check().map_err(|m| validation_error(path, &m))?;
    Ok(FlowGroupSpec { common, traffic })
}

impl Scenario {
    /// Parse a scenario from TOML text, after applying `--set` overrides. Relative
    /// file names in it (link traces) are taken from the current directory.
    pub fn from_toml(text: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        Self::from_toml_in(text, overrides, None)
    }

    /// As [`Scenario::from_toml`], with relative file names taken from `base_dir`
    /// (the folder of the scenario file).
    pub fn from_toml_in(text: &str, overrides: &[String], base_dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let v: toml::Value = toml::from_str::<toml::Table>(text)
            .map(toml::Value::Table)
            .map_err(|e| err("", format!("not valid TOML: {}", clean_message(&e.to_string()))))?;
        Self::from_value(v, overrides, base_dir)
    }

    /// Parse a scenario from JSON text (the Python API's dicts).
    pub fn from_json(text: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        Self::from_json_in(text, overrides, None)
    }

    pub fn from_json_in(text: &str, overrides: &[String], base_dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let j: serde_json::Value = serde_json::from_str(text).map_err(|e| err("", format!("not valid JSON: {e}")))?;
        let v = json_to_toml(j, "")?;
        Self::from_value(v, overrides, base_dir)
    }

    pub fn from_value(mut v: toml::Value, overrides: &[String], base_dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        for o in overrides {
            crate::overrides::apply(&mut v, o)?;
        }
        let mut root = take_table(v, "")?;
        let flows_v = root.remove("flows");
        let links_v = root.remove("links");
        let access_given = root.contains_key("access");
        if links_v.is_some() && root.contains_key("bottleneck") {
            return Err(err("links", "a scenario is either the dumbbell of its [bottleneck] or the topology of its [[links]], not both"));
        }
        let record_links_given = matches!(root.get("record"), Some(toml::Value::Table(r)) if r.contains_key("links"));
        let (aqm_v, rev_aqm_v, trace_v) = match root.get_mut("bottleneck") {
            Some(toml::Value::Table(b)) => (b.remove("aqm"), b.remove("reverse_aqm"), b.remove("trace")),
            _ => (None, None, None),
        };
        let mut sc: Scenario = de_at("", toml::Value::Table(root))?;
        match (&mut sc.bottleneck, links_v) {
            (Some(_), Some(_)) => return Err(err("links", "a scenario is either the dumbbell of its [bottleneck] or the topology of its [[links]], not both")),
            (None, None) => return Err(err("bottleneck", "missing: a scenario needs a [bottleneck] (the dumbbell) or [[links]] (a topology)")),
            (None, Some(l)) => {
                if access_given {
                    return Err(err("access", "the dumbbell's access links: a topology of [[links]] declares every link itself"));
                }
                sc.links = topology::parse_links(l, base_dir)?;
            }
            (Some(b), None) => {
                sc.access.get_or_insert_with(AccessSpec::default);
                b.aqm = parse_aqm("bottleneck.aqm", aqm_v)?;
                b.reverse_aqm = parse_aqm("bottleneck.reverse_aqm", rev_aqm_v)?;
                if let Some(t) = trace_v {
                    let trace = LinkTrace::parse("bottleneck.trace", t, base_dir).map_err(|(path, m)| err(path, m))?;
                    if b.rate.bps() == 0 {
                        b.rate = trace.mean_rate();
                    }
                    b.trace = Some(trace);
                }
            }
        }
        let flows = match flows_v {
            Some(toml::Value::Array(a)) => a,
            Some(other) => return Err(err("flows", format!("expected an array of tables ([[flows]]), got {}", other.type_str()))),
            None => return Err(err("flows", "missing: a scenario needs at least one [[flows]] group")),
        };
        if flows.is_empty() {
            return Err(err("flows", "a scenario needs at least one [[flows]] group"));
        }
        for (i, f) in flows.into_iter().enumerate() {
            sc.flows.push(parse_group(&format!("flows[{i}]"), f)?);
        }
        if !sc.links.is_empty() && !record_links_given {
            // a topology records the packet events of the links with an AQM that its
            // groups' data crosses (the dumbbell's default, "bottleneck", in general)
            let mut logged = Vec::new();
            for (li, l) in sc.links.iter().enumerate() {
                for fwd in [true, false] {
                    let crossed = sc.flows.iter().enumerate().any(|(i, g)| {
                        let route = g.common.route.as_deref().unwrap_or(&[]);
                        topology::resolve_route(&format!("flows[{i}].route"), route, &sc.links).is_ok_and(|h| h.hops.contains(&(li, fwd)))
                    });
                    let (side, name) = l.side(fwd);
                    if crossed && side.aqm.kind() != "droptail" {
                        logged.push(name);
                    }
                }
            }
            sc.record.links = logged;
        }
        sc.validate()?;
        Ok(sc)
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        if self.duration.is_zero() {
            return Err(err("duration", "must be greater than zero"));
        }
        if let Some(b) = &self.bottleneck {
            self.validate_dumbbell(b)?;
        } else {
            self.validate_topology()?;
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, g) in self.flows.iter().enumerate() {
            if !names.insert(g.common.name.as_str()) {
                return Err(err(format!("flows[{i}].name"), format!("\"{}\" is used by another group; names must be unique", g.common.name)));
            }
            let latest = match g.common.start {
                StartSpec::At(t) => t,
                StartSpec::Uniform(_, b) => b,
            };
            if latest >= self.duration {
                return Err(err(format!("flows[{i}].start"), format!("{latest} is not before the end of the run ({})", self.duration)));
            }
            if let Some(stop) = g.common.stop {
                if stop <= latest {
                    return Err(err(format!("flows[{i}].stop"), format!("{stop} is not after the group's latest start ({latest})")));
                }
            }
        }
        self.validate_l4s_paths()?;
        let nflows: u64 = self.flows.iter().map(|g| g.common.count as u64).sum();
        if nflows > MAX_FLOWS {
            return Err(err("flows", format!("{nflows} flows are too many (at most {MAX_FLOWS})")));
        }
        for (i, sel) in self.record.flow_trace.iter().enumerate() {
            match sel {
                FlowSel::Id(id) if *id as u64 >= nflows => {
                    return Err(err(format!("record.flow_trace[{i}]"), format!("flow {id} does not exist (the scenario has {nflows} flows, numbered from 0)")));
                }
                FlowSel::Group(name) if !self.flows.iter().any(|g| &g.common.name == name) => {
                    return Err(err(format!("record.flow_trace[{i}]"), format!("no flow group is named \"{name}\"")));
                }
                _ => {}
            }
        }
        if self.record.interval.is_zero() {
            return Err(err("record.interval", "must be greater than zero"));
        }
        self.validate_pcap(nflows)?;
        for (name, d) in [("utilization_interval", self.metrics.utilization_interval), ("goodput_interval", self.metrics.goodput_interval)] {
            if d.is_zero() || d.as_nanos() % self.record.interval.as_nanos() != 0 {
                return Err(err(format!("metrics.{name}"), format!("{d} must be a positive multiple of record.interval ({})", self.record.interval)));
            }
        }
        if self.metrics.warmup >= self.duration {
            return Err(err("metrics.warmup", format!("{} is not before the end of the run ({}): no sample would be left for the headline figures", self.metrics.warmup, self.duration)));
        }
        Ok(())
    }

    /// An L4S sender (Prague: ECT(1), RFC 9331) needs an AQM on its data's path that
    /// marks: over a path where every queue drops, it runs as a loss-based Reno and
    /// the experiment is not what it says. (DCTCP over DropTail is allowed: the
    /// classic comparison of DCTCP papers.)
    fn validate_l4s_paths(&self) -> Result<(), ScenarioError> {
        let routes = self.routes();
        for (i, g) in self.flows.iter().enumerate() {
            let Some(cc) = g.traffic.tcp().map(|t| &t.cc).filter(|cc| cc.ect() == aqm::Ecn::Ect1) else { continue };
            let aqms: Vec<(String, &AqmSpec)> = match (&routes, &self.bottleneck) {
                (Some(r), _) => r[i].hops.iter().map(|&(l, fwd)| (if fwd { self.links[l].name.clone() } else { format!("{}_rev", self.links[l].name) }, if fwd { &self.links[l].fwd.aqm } else { &self.links[l].reverse.aqm })).collect(),
                (None, Some(b)) => vec![("bottleneck".to_string(), &b.aqm)],
                (None, None) => continue,
            };
            if !aqms.iter().any(|(_, a)| a.marks_ecn()) {
                let path: Vec<String> = aqms.iter().map(|(n, a)| format!("{n}: {}{}", a.kind(), if a.kind() == "droptail" { "" } else { " with ecn = false" })).collect();
                return Err(err(format!("flows[{i}].tcp.cc"), format!("{} needs an ECN path (RFC 9331 §4.3): no AQM on its route marks ECN ({})", cc.kind(), path.join(", "))));
            }
        }
        Ok(())
    }

    /// The link sides a link name may name: the dumbbell's two, or each link's two.
    pub fn link_sides(&self) -> Vec<String> {
        if self.bottleneck.is_some() {
            vec!["bottleneck".into(), "bottleneck_rev".into()]
        } else {
            self.links.iter().flat_map(|l| [l.name.clone(), format!("{}_rev", l.name)]).collect()
        }
    }

    /// The link sides `record.pcap` captures, in the order given (`true`: the
    /// recorded links).
    pub fn pcap_links(&self) -> Vec<String> {
        match &self.record.pcap {
            PcapSel::Off => Vec::new(),
            PcapSel::Recorded => self.record.links.clone(),
            PcapSel::Links(v) => v.clone(),
        }
    }

    fn validate_pcap(&self, nflows: u64) -> Result<(), ScenarioError> {
        let sides = self.link_sides();
        match &self.record.pcap {
            PcapSel::Off => return Ok(()),
            PcapSel::Recorded if self.record.links.is_empty() => {
                return Err(err("record.pcap", "true captures the recorded links (record.links), and there are none: name the links to capture"));
            }
            PcapSel::Recorded => {}
            PcapSel::Links(v) => {
                for (i, l) in v.iter().enumerate() {
                    if !sides.contains(l) {
                        let known = sides.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ");
                        return Err(err(format!("record.pcap[{i}]"), format!("no link side is named \"{l}\" (the links: {known})")));
                    }
                    if v[..i].contains(l) {
                        return Err(err(format!("record.pcap[{i}]"), format!("\"{l}\" is listed twice")));
                    }
                }
            }
        }
        crate::record::pcap::check_flows(nflows).map_err(|m| err("record.pcap", m))
    }

    fn validate_dumbbell(&self, b: &BottleneckSpec) -> Result<(), ScenarioError> {
        if b.rate.bps() == 0 {
            return Err(err("bottleneck.rate", "missing or zero: a bottleneck needs a rate (or a trace)"));
        }
        if b.reverse_rate.is_some_and(|r| r.bps() == 0) {
            return Err(err("bottleneck.reverse_rate", "must be greater than zero"));
        }
        if b.trace.is_some() && !b.schedule.is_empty() {
            return Err(err("bottleneck.schedule", "a trace-driven link has no rate schedule (the trace sets the capacity)"));
        }
        check_schedule("bottleneck.schedule", &b.schedule, self.duration)?;
        let access = self.access();
        if access.rate.bps() == 0 {
            return Err(err("access.rate", "must be greater than zero"));
        }
        check_buffer("bottleneck.buffer", b.buffer)?;
        if let Some(q) = b.reverse_buffer {
            check_buffer("bottleneck.reverse_buffer", q)?;
        }
        check_buffer("access.buffer", access.buffer)?;
        for (i, g) in self.flows.iter().enumerate() {
            if g.common.route.is_some() {
                return Err(err(format!("flows[{i}].route"), "a route names [[links]]: the dumbbell has none (give [[links]] instead of [bottleneck])"));
            }
        }
        for l in &self.record.links {
            if !["bottleneck", "bottleneck_rev"].contains(&l.as_str()) {
                return Err(err("record.links", format!("unknown link \"{l}\", expected \"bottleneck\" or \"bottleneck_rev\"")));
            }
        }
        Ok(())
    }

    fn validate_topology(&self) -> Result<(), ScenarioError> {
        for (i, l) in self.links.iter().enumerate() {
            check_schedule(&format!("links[{i}].schedule"), &l.fwd.schedule, self.duration)?;
            check_schedule(&format!("links[{i}].reverse.schedule"), &l.reverse.schedule, self.duration)?;
        }
        for (i, g) in self.flows.iter().enumerate() {
            let p = &g.common.path;
            for (key, given) in [("sender_delay", p.sender_delay.is_some()), ("receiver_delay", p.receiver_delay.is_some()), ("return_delay", p.return_delay.is_some())] {
                if given {
                    return Err(err(format!("flows[{i}].path.{key}"), "sets the dumbbell's access delays: with [[links]], give the delays on the links"));
                }
            }
            let Some(route) = &g.common.route else {
                return Err(err(format!("flows[{i}].route"), "missing: with [[links]], each group names the links its data crosses"));
            };
            topology::resolve_route(&format!("flows[{i}].route"), route, &self.links)?;
        }
        let names: Vec<String> = self.links.iter().flat_map(|l| [l.name.clone(), format!("{}_rev", l.name)]).collect();
        for (i, l) in self.record.links.iter().enumerate() {
            if !names.contains(l) {
                return Err(err(format!("record.links[{i}]"), format!("no link side is named \"{l}\" (each link NAME has the sides NAME and NAME_rev)")));
            }
        }
        Ok(())
    }

    /// A general topology's links and each group's resolved route (None for the dumbbell).
    pub fn routes(&self) -> Option<Vec<Hops>> {
        if self.links.is_empty() {
            return None;
        }
        Some(
            self.flows
                .iter()
                .enumerate()
                .map(|(i, g)| topology::resolve_route(&format!("flows[{i}].route"), g.common.route.as_deref().unwrap_or(&[]), &self.links).expect("validated route"))
                .collect(),
        )
    }

    /// The dumbbell's access links.
    pub fn access(&self) -> AccessSpec {
        self.access.clone().unwrap_or_default()
    }

    /// The dumbbell's bottleneck (None for a general topology).
    pub fn dumbbell(&self) -> Option<&BottleneckSpec> {
        self.bottleneck.as_ref()
    }

    /// One-way delays of a group's path, without the per-flow extra delay:
    /// (forward, return).
    pub fn path_delays(&self, group: usize) -> (Duration, Duration) {
        let p = &self.flows[group].common.path;
        let Some(b) = &self.bottleneck else {
            let h = topology::resolve_route("route", self.flows[group].common.route.as_deref().unwrap_or(&[]), &self.links).expect("validated route");
            let fwd = h.hops.iter().map(|&(l, d)| self.links[l].side(d).0.delay).fold(Duration::ZERO, |a, x| a + x);
            let rev = h.hops.iter().map(|&(l, d)| self.links[l].side(!d).0.delay).fold(Duration::ZERO, |a, x| a + x);
            return (fwd, rev);
        };
        let snd = p.sender_delay.unwrap_or(self.access().delay);
        let rcv = p.receiver_delay.unwrap_or(self.access().delay);
        let fwd = snd + b.delay + rcv;
        let rev = rcv + p.return_delay.unwrap_or(Duration::ZERO) + b.rev_delay() + snd;
        (fwd, rev)
    }

    /// Base (propagation-only) round-trip time of a flow group's path; with a
    /// per-flow delay, the largest a flow of the group can have.
    pub fn base_rtt(&self, group: usize) -> Duration {
        let (fwd, rev) = self.path_delays(group);
        let extra = self.flows[group].common.path.flow_delay.as_ref().and_then(TimeDist::max).unwrap_or(Duration::ZERO);
        fwd + rev + extra + extra
    }

    /// The two hosts of each group (sender, receiver) as ids: host names in order of
    /// first appearance, a group without names having two hosts of its own
    /// ("NAME.sender", "NAME.receiver"). What `QPacket::src_host` and `dst_host` give
    /// the AQMs: data from the sender host to the receiver host, ACKs back.
    pub fn host_ids(&self) -> Vec<[u16; 2]> {
        let mut names: Vec<String> = Vec::new();
        let mut id = |n: String| match names.iter().position(|x| *x == n) {
            Some(i) => i as u16,
            None => {
                names.push(n);
                (names.len() - 1) as u16
            }
        };
        self.flows
            .iter()
            .map(|g| {
                let p = &g.common.path;
                let s = id(p.sender_host.clone().unwrap_or_else(|| format!("{}.sender", g.common.name)));
                let r = id(p.receiver_host.clone().unwrap_or_else(|| format!("{}.receiver", g.common.name)));
                [s, r]
            })
            .collect()
    }

    /// Flow ids of each group, in order: group g's flows follow group g-1's.
    pub fn flow_ids(&self, group: usize) -> std::ops::Range<u32> {
        let first: u32 = self.flows[..group].iter().map(|g| g.common.count).sum();
        first..first + self.flows[group].common.count
    }

    /// The largest base RTT among the groups.
    fn max_base_rtt(&self) -> Duration {
        (0..self.flows.len()).map(|g| self.base_rtt(g)).max().unwrap_or(Duration::ZERO)
    }

    /// The bandwidth-delay product that the dumbbell's `bdp` buffers refer to: the
    /// bottleneck rate times the largest base RTT among the groups (MADPIE §V).
    pub fn bdp_bytes(&self) -> u64 {
        self.bottleneck.as_ref().map_or(0, |b| b.rate.bytes_in(self.max_base_rtt()))
    }

    /// The bandwidth-delay product of link `l` of a topology: its rate in that
    /// direction times the largest base RTT of the groups crossing it (of all
    /// groups if none does).
    pub fn link_bdp_bytes(&self, l: usize, fwd: bool) -> u64 {
        let routes = self.routes().unwrap_or_default();
        let rtt = (0..self.flows.len()).filter(|&g| routes[g].hops.iter().any(|h| h.0 == l)).map(|g| self.base_rtt(g)).max().unwrap_or_else(|| self.max_base_rtt());
        self.links[l].side(fwd).0.rate.bytes_in(rtt)
    }

    /// A buffer limit in packets or bytes, with `bdp` resolved against the
    /// dumbbell's bandwidth-delay product.
    pub fn resolve_limit(&self, path: &str, q: QueueLimit) -> Result<aqm::Limit, ScenarioError> {
        resolve_limit(path, q, self.bdp_bytes())
    }

    /// The scenario with every default filled in, as JSON (written beside results).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("scenario serializes")
    }
}

/// A buffer limit in packets or bytes, with `bdp` resolved against `bdp` bytes.
pub fn resolve_limit(path: &str, q: QueueLimit, bdp: u64) -> Result<aqm::Limit, ScenarioError> {
    let limit = match q {
        QueueLimit::Packets(n) => aqm::Limit::packets(n),
        QueueLimit::Bytes(b) => aqm::Limit::bytes(b),
        QueueLimit::Bdp(x) => {
            let b = (x * bdp as f64).round() as u64;
            if b == 0 {
                return Err(err(path, format!("{q} resolves to 0 bytes (BDP = {bdp} B)")));
            }
            aqm::Limit::bytes(b)
        }
    };
    Ok(limit)
}

/// A rate schedule's steps are in time order, before the end, at positive rates.
fn check_schedule(path: &str, steps: &[RateStep], duration: Duration) -> Result<(), ScenarioError> {
    let mut last = None;
    for (i, step) in steps.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if step.rate.bps() == 0 {
            return Err(err(format!("{p}.rate"), "must be greater than zero"));
        }
        if last.is_some_and(|t| step.at <= t) {
            return Err(err(format!("{p}.at"), format!("{} is not after the previous step's time: steps must be in time order", step.at)));
        }
        if step.at >= duration {
            return Err(err(format!("{p}.at"), format!("{} is not before the end of the run ({duration})", step.at)));
        }
        last = Some(step.at);
    }
    Ok(())
}

fn check_buffer(path: &str, q: QueueLimit) -> Result<(), ScenarioError> {
    let zero = match q {
        QueueLimit::Packets(n) => n == 0,
        QueueLimit::Bytes(b) => b == 0,
        QueueLimit::Bdp(x) => x <= 0.0,
    };
    if zero {
        return Err(err(path, format!("buffer of zero (\"{q}\"): the queue must hold at least one packet")));
    }
    Ok(())
}

fn json_to_toml(j: serde_json::Value, path: &str) -> Result<toml::Value, ScenarioError> {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => return Err(err(path, "null is not allowed; leave the field out for its default")),
        J::Bool(b) => toml::Value::Boolean(b),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                toml::Value::Integer(i)
            } else {
                toml::Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        J::String(s) => toml::Value::String(s),
        J::Array(a) => toml::Value::Array(
            a.into_iter().enumerate().map(|(i, x)| json_to_toml(x, &format!("{path}[{i}]"))).collect::<Result<_, _>>()?,
        ),
        J::Object(o) => toml::Value::Table(
            o.into_iter()
                // a null member means "not given": the field takes its default
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| {
                    let p = join(path, &k);
                    json_to_toml(x, &p).map(|v| (k, v))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
        name = "t"
        duration = "10s"
        [bottleneck]
        rate = "10Mbps"
        delay = "48ms"
        buffer = "1bdp"
        aqm = { kind = "pie", target = "20ms", tupdate = "30ms" }
        [[flows]]
        name = "bulk"
        count = 10
        start = { uniform = ["0s", "1s"] }
    "#;

    fn parse(extra: &[&str]) -> Result<Scenario, ScenarioError> {
        let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(BASE, &o)
    }

    #[test]
    fn a_valid_scenario_parses_with_defaults() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.flows.len(), 1);
        assert_eq!(s.flows[0].common.count, 10);
        assert_eq!(s.access().delay, Duration::from_millis(1));
        match &s.dumbbell().unwrap().aqm {
            AqmSpec::Pie(p) => assert_eq!(p.target, Duration::from_millis(20)),
            other => panic!("{other:?}"),
        }
        // base RTT = 2 * (1 + 48 + 1) ms; BDP = 10 Mbps * 100 ms = 125000 B
        assert_eq!(s.base_rtt(0), Duration::from_millis(100));
        assert_eq!(s.bdp_bytes(), 125_000);
        assert_eq!(s.resolve_limit("b", s.dumbbell().unwrap().buffer).unwrap(), aqm::Limit::bytes(125_000));
    }

    fn error(extra: &[&str]) -> String {
        parse(extra).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_field_and_the_value() {
        let e = error(&["bottleneck.aqm.tarrget=\"5ms\""]);
        assert!(e.starts_with("bottleneck.aqm") && e.contains("tarrget"), "{e}");
        let e = error(&["bottleneck.rate=\"10\""]);
        assert!(e.starts_with("bottleneck.rate:") && e.contains("\"10\"") && e.contains("unit"), "{e}");
        let e = error(&["bottleneck.delay=\"-5ms\""]);
        assert!(e.starts_with("bottleneck.delay:") && e.contains("-5ms"), "{e}");
        let e = error(&["bottleneck.aqm.kind=\"nosuch\""]);
        assert!(e.starts_with("bottleneck.aqm.kind:") && e.contains("nosuch"), "{e}");
        let e = error(&["bottleneck.buffer=\"0pkts\""]);
        assert!(e.starts_with("bottleneck.buffer:") && e.contains("zero"), "{e}");
        let e = error(&["bottleneck.aqm.target=\"-1ms\""]);
        assert!(e.starts_with("bottleneck.aqm.target:"), "{e}");
        let e = error(&["bottleneck.aqm.alpha=-1.0"]);
        assert!(e.starts_with("bottleneck.aqm.alpha:"), "{e}");
        let e = error(&["flows.0.tcp.cc=\"vegas\""]);
        assert!(e.starts_with("flows[0].tcp.cc:") && e.contains("vegas"), "{e}");
        // a congestion control's parameter: the error names it, in either form
        let e = error(&["flows.0.tcp.cc={kind=\"cubic\",alpha_to_one=\"true\"}"]);
        assert!(e.starts_with("flows[0].tcp.cc.alpha_to_one:") && e.contains("\"true\""), "{e}");
        let e = error(&["flows.0.tcp.cubic.alpha_to_one=\"true\""]);
        assert!(e.starts_with("flows[0].tcp.cubic.alpha_to_one:") && e.contains("\"true\""), "{e}");
        let e = error(&["flows.0.tcp.cc={kind=\"cubic\",bogus=2}"]);
        assert!(e.starts_with("flows[0].tcp.cc") && e.contains("bogus"), "{e}");
        let e = error(&["flows.0.tcp.mss=\"0B\""]);
        assert!(e.starts_with("flows[0].tcp.mss:"), "{e}");
        let e = error(&["flows.0.count=0"]);
        assert!(e.starts_with("flows[0].count:"), "{e}");
        let e = error(&["colour=\"red\""]);
        assert!(e.contains("colour"), "{e}");
        let e = error(&["flows.0.kind=\"carrier_pigeon\""]);
        assert!(e.starts_with("flows[0].kind:"), "{e}");
        // a warm-up that leaves nothing of the run (it gave null headline figures)
        let e = error(&["metrics.warmup=\"10s\""]);
        assert!(e.starts_with("metrics.warmup: 10s is not before the end of the run (10s)"), "{e}");
        assert!(parse(&["metrics.warmup=\"9.9s\""]).is_ok());
    }

    #[test]
    fn errors_are_one_line_whatever_the_input_holds() {
        // found by fuzzing: a key with a carriage return or a NUL came back verbatim
        let e = Scenario::from_toml("\"a\\rb\\u0000\" = 1\n", &[]).unwrap_err().to_string();
        assert!(!e.chars().any(char::is_control) && e.contains("a\\rb\\u{0}"), "{e}");
        let e = parse(&["flows.0\r.count=3"]).unwrap_err().to_string();
        assert!(!e.chars().any(char::is_control), "{e}");
    }

    #[test]
    fn times_rates_and_sizes_beyond_any_run_are_refused() {
        // found by fuzzing: a delay of 2^64-1 ns was accepted, and adding a path's
        // delays overflowed the clock (a panic)
        let e = error(&["flows.0.path.sender_delay=\"18446744073709551615ns\""]);
        assert!(e.starts_with("flows[0].path.sender_delay: invalid duration \"18446744073709551615ns\": at most 10000000s"), "{e}");
        let e = error(&["bottleneck.rate=\"18446744073709551615bps\""]);
        assert!(e.starts_with("bottleneck.rate: invalid rate") && e.contains("at most 10Tbps"), "{e}");
        let e = error(&["flows.0.kind=\"transfer\"", "flows.0.size=\"18446744073709551615B\""]);
        assert!(e.starts_with("flows[0].size: invalid size") && e.contains("at most"), "{e}");
        assert!(parse(&["duration=\"10000000s\"", "bottleneck.delay=\"10000000s\""]).is_ok());
    }

    #[test]
    fn changing_the_aqm_kind_drops_the_old_parameters() {
        let s = parse(&["bottleneck.aqm.kind=\"droptail\""]).unwrap();
        assert_eq!(s.dumbbell().unwrap().aqm.kind(), "droptail");
    }

    #[test]
    fn resolved_scenario_round_trips_through_json() {
        let s = parse(&[]).unwrap();
        let again = Scenario::from_json(&s.to_json(), &[]).unwrap();
        assert_eq!(s, again);
    }
}
