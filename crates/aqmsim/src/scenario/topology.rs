//! Topologies as data: `[[links]]` between named nodes, and each flow group's
//! `route`, the links its data crosses in order (its ACKs come back the same way).
//! Without `[[links]]` a scenario is the dumbbell of its `[bottleneck]`.
//!
//! ```toml
//! [[links]]
//! name = "b1"              # the forward side is "b1", the reverse side "b1_rev"
//! from = "r1"
//! to = "r2"
//! rate = "10Mbps"
//! delay = "10ms"
//! buffer = "1bdp"          # this side's rate x the largest base RTT of the groups crossing it
//! aqm = { kind = "pie" }
//! reverse = { aqm = "codel" }  # the reverse side's own settings (default: the same rate,
//!                              # delay and buffer, DropTail)
//!
//! [[flows]]
//! name = "long"
//! route = ["a1", "b1", "b2", "d1"]
//! ```
//!
//! A route may cross a link against its declared direction (it then uses the link's
//! reverse side); consecutive links must share a node, and no route may visit a
//! node twice or cross a link twice.

use aqm::{AqmSpec, Duration, QueueLimit, Rate};
use serde::{Deserialize, Serialize};

use super::{check_buffer, err, parse_aqm, take_table, RateStep, ScenarioError};
use crate::net::trace::LinkTrace;

/// One direction of a link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    pub rate: Rate,
    pub delay: Duration,
    pub buffer: QueueLimit,
    pub aqm: AqmSpec,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<RateStep>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<LinkTrace>,
}

/// A link between two nodes, both directions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkDecl {
    pub name: String,
    pub from: String,
    pub to: String,
    /// From `from` to `to`.
    #[serde(flatten)]
    pub fwd: Side,
    /// From `to` to `from`.
    pub reverse: Side,
}

/// The keys of a side, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SideIn {
    #[serde(default)]
    rate: Option<Rate>,
    #[serde(default)]
    delay: Option<Duration>,
    #[serde(default)]
    buffer: Option<QueueLimit>,
    #[serde(default)]
    schedule: Vec<RateStep>,
}

/// Take a string field out of a table.
fn take_str(t: &mut toml::Table, path: &str, key: &str) -> Result<String, ScenarioError> {
    match t.remove(key) {
        Some(toml::Value::String(s)) => Ok(s),
        Some(other) => Err(err(format!("{path}.{key}"), format!("expected a string, got {}", other.type_str()))),
        None => Err(err(path, format!("missing field `{key}`"))),
    }
}

/// Parse one side's table (without its `aqm` and `trace`, taken apart first).
fn side(path: &str, mut t: toml::Table, base: Option<&Side>, base_dir: Option<&std::path::Path>) -> Result<Side, ScenarioError> {
    let aqm = t.remove("aqm");
    let trace = t.remove("trace");
    let s: SideIn = super::de_at(path, toml::Value::Table(t))?;
    let trace = match trace {
        Some(v) => Some(LinkTrace::parse(&format!("{path}.trace"), v, base_dir).map_err(|(p, m)| err(p, m))?),
        None => None,
    };
    let rate = match (s.rate, &trace, base) {
        (Some(r), _, _) => r,
        (None, Some(t), _) => t.mean_rate(),
        (None, None, Some(b)) => b.rate,
        (None, None, None) => return Err(err(format!("{path}.rate"), "missing: a link needs a rate (or a trace)")),
    };
    let delay = match (s.delay, base) {
        (Some(d), _) => d,
        (None, Some(b)) => b.delay,
        (None, None) => return Err(err(format!("{path}.delay"), "missing: a link needs a delay")),
    };
    let buffer = match (s.buffer, base) {
        (Some(q), _) => q,
        (None, Some(b)) => b.buffer,
        (None, None) => return Err(err(format!("{path}.buffer"), "missing: a link needs a buffer")),
    };
    // the reverse side's AQM is DropTail unless given, as the dumbbell's
    let aqm = parse_aqm(&format!("{path}.aqm"), aqm)?;
    let sd = Side { rate, delay, buffer, aqm, schedule: s.schedule, trace };
    if sd.rate.bps() == 0 {
        return Err(err(format!("{path}.rate"), "must be greater than zero"));
    }
    if sd.trace.is_some() && !sd.schedule.is_empty() {
        return Err(err(format!("{path}.schedule"), "a trace-driven link has no rate schedule (the trace sets the capacity)"));
    }
    check_buffer(&format!("{path}.buffer"), sd.buffer)?;
    Ok(sd)
}

/// Parse `[[links]]`.
pub(super) fn parse_links(v: toml::Value, base_dir: Option<&std::path::Path>) -> Result<Vec<LinkDecl>, ScenarioError> {
    let toml::Value::Array(a) = v else {
        return Err(err("links", format!("expected an array of tables ([[links]]), got {}", v.type_str())));
    };
    let mut out: Vec<LinkDecl> = Vec::new();
    for (i, x) in a.into_iter().enumerate() {
        let path = format!("links[{i}]");
        let mut t = take_table(x, &path)?;
        let rev = t.remove("reverse");
        let (name, from, to) = (take_str(&mut t, &path, "name")?, take_str(&mut t, &path, "from")?, take_str(&mut t, &path, "to")?);
        let fwd = side(&path, t, None, base_dir)?;
        let reverse = match rev {
            Some(r) => side(&format!("{path}.reverse"), take_table(r, &format!("{path}.reverse"))?, Some(&fwd), base_dir)?,
            None => Side { aqm: AqmSpec::default(), schedule: Vec::new(), trace: None, ..fwd.clone() },
        };
        if name.is_empty() || name.ends_with("_rev") || name.contains('.') {
            return Err(err(format!("{path}.name"), format!("\"{name}\" cannot name a link: names are non-empty, have no dot and do not end in _rev (the reverse side's suffix)")));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(err(format!("{path}.name"), format!("\"{name}\" names another link too; names must be unique")));
        }
        if from.is_empty() || to.is_empty() {
            return Err(err(format!("{path}.from"), "node names must be non-empty"));
        }
        if from == to {
            return Err(err(format!("{path}.to"), format!("\"{to}\" is also the link's `from`: a link joins two different nodes")));
        }
        out.push(LinkDecl { name, from, to, fwd, reverse });
    }
    if out.is_empty() {
        return Err(err("links", "a topology needs at least one link"));
    }
    Ok(out)
}

/// A route resolved: each hop's link and whether it is crossed in its declared
/// direction; the node the data starts at and ends at.
#[derive(Clone, Debug, PartialEq)]
pub struct Hops {
    pub hops: Vec<(usize, bool)>,
    pub src: String,
    pub dst: String,
}

/// Resolve a group's route (link names, in order) against the links.
pub fn resolve_route(path: &str, route: &[String], links: &[LinkDecl]) -> Result<Hops, ScenarioError> {
    if route.is_empty() {
        return Err(err(path, "a route needs at least one link"));
    }
    let idx = |j: usize| -> Result<usize, ScenarioError> {
        links.iter().position(|l| l.name == route[j]).ok_or_else(|| {
            let names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
            err(format!("{path}[{j}]"), format!("no link is named \"{}\" (the links: {})", route[j], names.join(", ")))
        })
    };
    let first = &links[idx(0)?];
    // the first hop's direction: towards the node it shares with the second
    let mut at = match route.get(1) {
        None => first.from.clone(),
        Some(_) => {
            let second = &links[idx(1)?];
            let joins = |n: &str| n == second.from || n == second.to;
            match (joins(&first.from), joins(&first.to)) {
                (false, true) => first.from.clone(),
                (true, false) => first.to.clone(),
                (true, true) => return Err(err(format!("{path}[1]"), format!("\"{}\" joins the same two nodes as \"{}\": the route's direction is ambiguous", second.name, first.name))),
                (false, false) => {
                    return Err(err(
                        format!("{path}[1]"),
                        format!("\"{}\" ({} - {}) does not connect to \"{}\" ({} - {}): a route's consecutive links share a node", second.name, second.from, second.to, first.name, first.from, first.to),
                    ))
                }
            }
        }
    };
    let src = at.clone();
    let mut visited = vec![at.clone()];
    let mut hops: Vec<(usize, bool)> = Vec::new();
    for j in 0..route.len() {
        let li = idx(j)?;
        let l = &links[li];
        let (fwd, next) = if at == l.from {
            (true, l.to.clone())
        } else if at == l.to {
            (false, l.from.clone())
        } else {
            return Err(err(format!("{path}[{j}]"), format!("\"{}\" ({} - {}) does not start at {at}, where the route is after \"{}\": a route's consecutive links share a node", l.name, l.from, l.to, route[j - 1])));
        };
        if let Some(&(_, dir)) = hops.iter().find(|h| h.0 == li) {
            let how = if dir == fwd { "again" } else { "back, in the other direction" };
            return Err(err(format!("{path}[{j}]"), format!("the route crosses \"{}\" {how}: each link at most once", l.name)));
        }
        if visited.contains(&next) {
            return Err(err(format!("{path}[{j}]"), format!("the route comes back to node {next}: a route has no loop")));
        }
        visited.push(next.clone());
        hops.push((li, fwd));
        at = next;
    }
    Ok(Hops { hops, src, dst: at })
}

impl LinkDecl {
    /// The side crossed in direction `fwd`, and its name.
    pub fn side(&self, fwd: bool) -> (&Side, String) {
        if fwd { (&self.fwd, self.name.clone()) } else { (&self.reverse, format!("{}_rev", self.name)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(text: &str) -> Vec<LinkDecl> {
        let v: toml::Table = toml::from_str(text).unwrap();
        parse_links(v["links"].clone(), None).unwrap()
    }

    const LOT: &str = r#"
        links = [
          { name = "a1", from = "h1", to = "r1", rate = "100Mbps", delay = "1ms", buffer = "1000pkts" },
          { name = "b1", from = "r1", to = "r2", rate = "10Mbps", delay = "10ms", buffer = "1bdp", aqm = "pie" },
          { name = "b2", from = "r2", to = "r3", rate = "10Mbps", delay = "10ms", buffer = "1bdp", aqm = "pie", reverse = { aqm = "codel", rate = "5Mbps" } },
          { name = "d1", from = "r3", to = "h2", rate = "100Mbps", delay = "1ms", buffer = "1000pkts" },
        ]
    "#;

    fn r(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_route_is_resolved_hop_by_hop_in_either_direction() {
        let l = links(LOT);
        let h = resolve_route("flows[0].route", &r(&["a1", "b1", "b2", "d1"]), &l).unwrap();
        assert_eq!(h.hops, vec![(0, true), (1, true), (2, true), (3, true)]);
        assert_eq!((h.src.as_str(), h.dst.as_str()), ("h1", "h2"));
        // the other way round: every link against its direction
        let h = resolve_route("x", &r(&["d1", "b2", "b1", "a1"]), &l).unwrap();
        assert_eq!(h.hops, vec![(3, false), (2, false), (1, false), (0, false)]);
        assert_eq!((h.src.as_str(), h.dst.as_str()), ("h2", "h1"));
        // one link: its declared direction
        assert_eq!(resolve_route("x", &r(&["b2"]), &l).unwrap().hops, vec![(2, true)]);
    }

    #[test]
    fn the_reverse_side_takes_the_forward_settings_but_droptail_unless_given() {
        let l = links(LOT);
        assert_eq!(l[1].reverse.rate, Rate::from_mbps(10));
        assert_eq!(l[1].reverse.aqm.kind(), "droptail");
        assert_eq!(l[2].reverse.aqm.kind(), "codel");
        assert_eq!(l[2].reverse.rate, Rate::from_mbps(5));
        assert_eq!(l[2].reverse.delay, Duration::from_millis(10));
    }

    #[test]
    fn bad_routes_are_one_line_errors_naming_the_field() {
        let l = links(LOT);
        let e = resolve_route("flows[1].route", &r(&["a1", "zz"]), &l).unwrap_err();
        assert_eq!(e.path, "flows[1].route[1]");
        assert!(e.message.contains("\"zz\""), "{e}");
        let e = resolve_route("flows[1].route", &r(&["a1", "b2"]), &l).unwrap_err();
        assert_eq!(e.path, "flows[1].route[1]");
        assert!(e.message.contains("does not connect"), "{e}");
        let e = resolve_route("flows[1].route", &r(&["a1", "b1", "b1"]), &l).unwrap_err();
        assert_eq!(e.path, "flows[1].route[2]");
        assert!(e.message.contains("in the other direction") || e.message.contains("again"), "{e}");
        let e = resolve_route("flows[1].route", &r(&["a1", "b1", "b2", "d1", "b1"]), &l).unwrap_err();
        assert_eq!(e.path, "flows[1].route[4]");
        let e = resolve_route("flows[1].route", &r(&[]), &l).unwrap_err();
        assert_eq!(e.path, "flows[1].route");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn a_loop_back_to_a_node_is_refused() {
        let l = links(
            r#"links = [
              { name = "x", from = "a", to = "b", rate = "1Mbps", delay = "1ms", buffer = "10pkts" },
              { name = "y", from = "b", to = "c", rate = "1Mbps", delay = "1ms", buffer = "10pkts" },
              { name = "z", from = "c", to = "a", rate = "1Mbps", delay = "1ms", buffer = "10pkts" },
              { name = "w", from = "a", to = "d", rate = "1Mbps", delay = "1ms", buffer = "10pkts" },
            ]"#,
        );
        let e = resolve_route("flows[0].route", &r(&["x", "y", "z", "w"]), &l).unwrap_err();
        assert_eq!(e.path, "flows[0].route[2]");
        assert!(e.message.contains("node a"), "{e}");
    }

    #[test]
    fn bad_links_are_refused() {
        let bad = |t: &str| {
            let v: toml::Table = toml::from_str(t).unwrap();
            parse_links(v["links"].clone(), None).unwrap_err()
        };
        let e = bad(r#"links = [{ name = "x", from = "a", to = "a", rate = "1Mbps", delay = "1ms", buffer = "10pkts" }]"#);
        assert_eq!(e.path, "links[0].to");
        let e = bad(r#"links = [{ name = "x", from = "a", to = "b", delay = "1ms", buffer = "10pkts" }]"#);
        assert_eq!(e.path, "links[0].rate");
        let e = bad(r#"links = [{ name = "x", from = "a", to = "b", rate = "1Mbps", delay = "1ms", buffer = "10pkts", colour = 1 }]"#);
        assert!(e.to_string().contains("colour"), "{e}");
        let e = bad(r#"links = [{ name = "x", from = "a", to = "b", rate = "1Mbps", delay = "1ms", buffer = "10pkts", aqm = "nosuch" }]"#);
        assert_eq!(e.path, "links[0].aqm.kind");
        let e = bad(
            r#"links = [{ name = "x", from = "a", to = "b", rate = "1Mbps", delay = "1ms", buffer = "10pkts" },
                        { name = "x", from = "b", to = "c", rate = "1Mbps", delay = "1ms", buffer = "10pkts" }]"#,
        );
        assert_eq!(e.path, "links[1].name");
        let e = bad(r#"links = [{ name = "x", from = "a", to = "b", rate = "1Mbps", delay = "1ms", buffer = "10pkts", reverse = { buffer = "0pkts" } }]"#);
        assert_eq!(e.path, "links[0].reverse.buffer");
    }
}
